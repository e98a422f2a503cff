//! What the client knows of a session's place among subagents: [`Subagent`], what the parent
//! said of a child (its `subagent_update`s applied as the patches they are), and [`Family`],
//! a session's link to its parent and its own subagents; [`Followed`], the connection's count
//! of them.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex};

use acp_types::*;

use super::updates::Pool;
use crate::session_map::SessionMap;
use acp_host::fs::FsRoots;

/// Default of [`ClientOptions::with_max_subagents`](super::ClientOptions::with_max_subagents).
pub const DEFAULT_MAX_SUBAGENTS: usize = 64;

/// Default of [`ClientOptions::with_subagent_update_budget`](super::ClientOptions::with_subagent_update_budget).
pub const DEFAULT_SUBAGENT_UPDATE_BUDGET: usize = 16 * 1024 * 1024;

/// The most bytes of a subagent's title or description that [`Subagent`] keeps (cut at a
/// character boundary); the `subagent_update` itself reaches the application whole.
pub const MAX_SUBAGENT_TEXT_BYTES: usize = 4096;

/// What the parent said of a subagent so far: the `subagent_update`s applied as the patches
/// they are. From [`Session::subagent`](super::Session::subagent).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Subagent {
    /// The session it was announced on.
    pub parent: SessionId,
    /// 1 for a subagent of a session the application opened, 2 for its subagents, ...
    pub depth: usize,
    /// The parent's title for it (at most [`MAX_SUBAGENT_TEXT_BYTES`]).
    pub title: Option<String>,
    /// The parent's description of it (at most [`MAX_SUBAGENT_TEXT_BYTES`]).
    pub description: Option<String>,
    /// Its current state (`running`, `idle`...), if the agent reported one.
    pub state: Option<StateUpdate>,
    /// What the client may do to it (only `cancel` is defined).
    pub capabilities: Option<SubagentSessionCapabilities>,
}

impl Subagent {
    pub(super) fn patch(&mut self, update: &SubagentUpdate) {
        update.title.clone().apply_to(&mut self.title);
        update.description.clone().apply_to(&mut self.description);
        update.state.clone().apply_to(&mut self.state);
        update.capabilities.clone().apply_to(&mut self.capabilities);
        for text in [&mut self.title, &mut self.description]
            .into_iter()
            .flatten()
        {
            cut(text, MAX_SUBAGENT_TEXT_BYTES);
        }
    }
}

fn cut(text: &mut String, max: usize) {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}

/// A session's place among subagents: what it is a subagent of, and its own subagents.
pub(super) struct Family<N> {
    /// `None` for a session the application opened.
    pub(super) subagent: Option<Mutex<Subagent>>,
    pub(super) children: Mutex<Vec<Arc<N>>>,
}

impl<N> Default for Family<N> {
    fn default() -> Self {
        Family {
            subagent: None,
            children: Mutex::default(),
        }
    }
}

impl<N> Family<N> {
    /// The family of a new subagent.
    pub(super) fn subagent(subagent: Subagent) -> Self {
        Family {
            subagent: Some(Mutex::new(subagent)),
            children: Mutex::default(),
        }
    }
}

/// The connection's count of subagents followed, the budget their queues share, and the
/// subagents retired to make room.
pub(super) struct Followed<N> {
    pub(super) count: AtomicUsize,
    pub(super) pool: Arc<Pool>,
    /// Subagents forgotten to make room for new ones (idle, every update taken, no children
    /// followed), by id: followed again, as they were, when an update comes for one.
    pub(super) retired: Mutex<SessionMap<Retired<N>>>,
    /// Whether anything was ever retired: until then, routing never looks.
    pub(super) any_retired: AtomicBool,
}

/// What is kept of a retired subagent to follow it again.
pub(super) struct Retired<N> {
    pub(super) parent: Arc<N>,
    pub(super) subagent: Subagent,
    pub(super) roots: FsRoots,
    pub(super) cwd: PathBuf,
}

impl<N> Followed<N> {
    pub(super) fn new(budget: usize) -> Self {
        Followed {
            count: AtomicUsize::new(0),
            pool: Arc::new(Pool::new(budget)),
            retired: Mutex::default(),
            any_retired: AtomicBool::new(false),
        }
    }
}
