//! Where the chain's `initialize` is: which component has been sent its `initialize` (or
//! `proxy/initialize`) and not answered it yet. When the client's `initialize` is not
//! answered within the conductor's initialize timeout, the deepest such component is the
//! one that holds it up: every component before it has passed the request on, and every
//! one after it has answered (or was never reached).

use std::sync::Mutex;

/// A component's part in the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    NotReached,
    Waiting,
    Answered,
}

/// The handshake's progress, one step per component plus one for the conductor's own
/// successor (proxy mode), reached through the client.
#[derive(Debug)]
pub(crate) struct Handshake {
    steps: Mutex<Vec<Step>>,
}

/// Who holds up the handshake.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Holdup {
    /// Component `index`.
    Component(usize),
    /// The conductor's successor, through the client (proxy mode).
    Successor,
    /// Nobody known to be waiting (the request has not reached a component yet).
    Unknown,
}

impl Handshake {
    pub(crate) fn new(components: usize) -> Self {
        Handshake {
            steps: Mutex::new(vec![Step::NotReached; components + 1]),
        }
    }

    /// `initialize` was sent to component `hop` (`None`: the successor through the client).
    pub(crate) fn sent(&self, hop: Option<usize>) {
        self.set(hop, Step::Waiting);
    }

    /// Component `hop` answered its `initialize`.
    pub(crate) fn answered(&self, hop: Option<usize>) {
        self.set(hop, Step::Answered);
    }

    fn set(&self, hop: Option<usize>, step: Step) {
        let mut steps = lock(&self.steps);
        let last = steps.len() - 1;
        let slot = hop.map_or(last, |hop| hop.min(last));
        // A second `initialize` (allowed, though odd) does not undo the first one's answer.
        if steps[slot] != Step::Answered {
            steps[slot] = step;
        }
    }

    /// The deepest component still waiting to answer.
    pub(crate) fn holdup(&self) -> Holdup {
        let steps = lock(&self.steps);
        let last = steps.len() - 1;
        match steps.iter().rposition(|step| *step == Step::Waiting) {
            Some(index) if index == last => Holdup::Successor,
            Some(index) => Holdup::Component(index),
            None => Holdup::Unknown,
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every critical section is a store or a scan: nothing is left half done by a panic.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deepest_component_waiting_holds_up_the_handshake() {
        let handshake = Handshake::new(3);
        assert_eq!(handshake.holdup(), Holdup::Unknown);
        handshake.sent(Some(0));
        assert_eq!(handshake.holdup(), Holdup::Component(0));
        handshake.sent(Some(1));
        handshake.sent(Some(2));
        assert_eq!(handshake.holdup(), Holdup::Component(2));
        // The agent answered; proxy 1 has its successor's answer and must answer now.
        handshake.answered(Some(2));
        assert_eq!(handshake.holdup(), Holdup::Component(1));
        handshake.sent(Some(2));
        assert_eq!(handshake.holdup(), Holdup::Component(1));
        handshake.sent(None);
        assert_eq!(handshake.holdup(), Holdup::Successor);
    }
}
