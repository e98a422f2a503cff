//! placeholder

pub mod host;
