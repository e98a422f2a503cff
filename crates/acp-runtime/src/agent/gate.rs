//! The initialization gate both agent sides keep: `initialize` first, requests pipelined
//! behind it wait for it, a second one is refused; decided at each request's arrival.

use std::sync::Mutex;

use acp_jsonrpc::{Latch, ResponseError};

use crate::rules;

/// How `initialize` went on a connection; `T` is what a side keeps once it succeeded.
#[derive(Default)]
pub(crate) enum InitState<T> {
    #[default]
    NotStarted,
    Initializing(Latch),
    Ready(T),
}

/// What the gate decided for one request, at arrival.
pub(crate) enum Gate {
    /// This is the first `initialize`: run it, then set the latch.
    Initialize(Latch),
    Go,
    /// `initialize` is running: wait for it.
    WaitFor(Latch),
    Refuse(ResponseError),
}

/// Runs when the request arrives, before any later message is read, so that the order of
/// arrival decides (no race between `initialize` and what is pipelined behind it).
pub(crate) fn arrive<T>(init: &Mutex<InitState<T>>, method: &str) -> Gate {
    let mut init = init.lock().unwrap();
    match (&*init, method) {
        (InitState::NotStarted, "initialize") => {
            let latch = Latch::new();
            *init = InitState::Initializing(latch.clone());
            Gate::Initialize(latch)
        }
        (_, "initialize") => Gate::Refuse(rules::repeated_initialize()),
        (InitState::NotStarted, _) => Gate::Refuse(rules::not_initialized(format!(
            "`{method}` before `initialize`: the client must call `initialize` first"
        ))),
        (InitState::Initializing(latch), _) => Gate::WaitFor(latch.clone()),
        (InitState::Ready(_), _) => Gate::Go,
    }
}
