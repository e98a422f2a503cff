//! Hand-written conveniences on generated types.
