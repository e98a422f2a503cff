//! Subagents on the client side. A session announced by a `subagent_update` (schema 1.20) is
//! followed: the connection registers it with its parent, and its updates (which the agent
//! sends under the child's own session id, with no load or subscription) wait in a queue of
//! its own. The application reads it as a session of its own or, with its parent, as one tree
//! in the order the updates arrived (`session_tree.rs`).
//!
//! Bounds: a connection follows at most [`ClientOptions::with_max_subagents`] subagents at
//! once (64), over every depth. Each subagent's queue has the session budget of any session,
//! and all of them share one more ([`ClientOptions::with_subagent_update_budget`], 16 MiB), so
//! an agent cannot multiply what the client keeps by starting children. At the count, a
//! subagent that is idle and fully read is retired to make room (and followed again when it
//! speaks); without one, a subagent announced past the count is not followed: the application
//! meets
//! [`Error::SubagentNotFollowed`](crate::Error::SubagentNotFollowed) in the parent's stream
//! right after the announcement, and again where the child's updates were dropped.
//!
//! [`ClientOptions::with_max_subagents`]: super::ClientOptions::with_max_subagents
//! [`ClientOptions::with_subagent_update_budget`]: super::ClientOptions::with_subagent_update_budget

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use acp_types::*;

use super::family::{Family, Retired, Subagent};
use super::state::{ClientState, SessionShared};
use super::updates::{Popped, Routes, UpdateQueue};
use crate::error::Result;
use crate::rules;
use acp_host::fs::FsRoots;
use acp_jsonrpc::Latch;

/// How many subagents not followed a connection remembers (to tell their updates on the
/// session they were announced on); the updates of any further one are handled as those of
/// an id never opened ([`AgentHandle::take_dropped_updates`](super::AgentHandle::take_dropped_updates)).
pub const UNFOLLOWED_REMEMBERED: usize = 256;

/// Remembers that `id`, announced on a subagent not followed, is not followed either: its
/// updates are told on `told_on`, where its parent's are.
pub(super) fn unfollow(state: &ClientState, id: SessionId, told_on: &Arc<SessionShared>) {
    let mut routes = state.routes.lock().unwrap();
    if routes.get(&id).is_none() {
        routes.unfollow(id, told_on.clone(), UNFOLLOWED_REMEMBERED);
    }
}

/// What a `subagent_update` did.
pub(super) enum Announced {
    /// Registered a new subagent, or patched one.
    Followed,
    /// The subagent is not followed (`limit` are): the parent's stream says so after the
    /// announcement.
    NotFollowed(usize),
    /// Nothing to tell (a subagent already not followed, or an id that is not a child of
    /// this parent).
    Nothing,
}

/// Applies a `subagent_update` that arrived on `parent`, before it is queued there: a new
/// child is registered first, so that a reader who meets the announcement finds the child.
pub(super) fn announce(
    state: &ClientState,
    parent: &Arc<SessionShared>,
    update: &SubagentUpdate,
) -> Announced {
    let id = &update.session_id;
    let mut routes = state.routes.lock().unwrap();
    if let Some(known) = routes.get(id) {
        // Later updates patch the child; they never move it to another parent.
        if let Some(subagent) = &known.family.subagent {
            let mut subagent = subagent.lock().unwrap();
            if subagent.parent == parent.id {
                subagent.patch(update);
                return Announced::Followed;
            }
        }
        return Announced::Nothing;
    }
    if routes.is_unfollowed(id) {
        return Announced::Nothing;
    }
    let limit = state.options.max_subagents;
    if state.subagents.count.load(Ordering::Acquire) >= limit && !retire_one(state, &mut routes) {
        routes.unfollow(id.clone(), parent.clone(), UNFOLLOWED_REMEMBERED);
        return Announced::NotFollowed(limit);
    }
    // A retired child announced again is the same child: what its parent said of it stays.
    let retired = state.subagents.retired.lock().unwrap().remove(id);
    let (mut subagent, roots, cwd) = match retired {
        Some(retired) if Arc::ptr_eq(&retired.parent, parent) => {
            (retired.subagent, retired.roots, retired.cwd)
        }
        _ => {
            let depth = parent
                .family
                .subagent
                .as_ref()
                .map_or(0, |s| s.lock().unwrap().depth)
                + 1;
            let subagent = Subagent {
                parent: parent.id.clone(),
                depth,
                title: None,
                description: None,
                state: None,
                capabilities: None,
            };
            let (roots, cwd) = placement(state, parent, update);
            (subagent, roots, cwd)
        }
    };
    subagent.patch(update);
    follow(state, &mut routes, parent, id.clone(), subagent, roots, cwd);
    Announced::Followed
}

/// Registers the subagent `id` of `parent` and counts it.
fn follow(
    state: &ClientState,
    routes: &mut Routes<Arc<SessionShared>>,
    parent: &Arc<SessionShared>,
    id: SessionId,
    subagent: Subagent,
    roots: FsRoots,
    cwd: PathBuf,
) {
    let queue = UpdateQueue::subagent(
        id.clone(),
        state.options.session_update_budget,
        state.subagents.pool.clone(),
        parent.updates.ready().clone(),
    );
    let family = Family::subagent(subagent);
    let child = SessionShared::new(&state.options, id.clone(), roots, cwd, queue, family);
    routes.open(id, child.clone(), &child.updates, |u| child.track(u));
    state.subagents.count.fetch_add(1, Ordering::AcqRel);
    parent.family.children.lock().unwrap().push(child);
}

/// Makes room for one more subagent by retiring one that nothing more is expected of: idle,
/// every update taken, no subagent of its own followed. Its stream ends (what a holder of its
/// session meets), and it is followed again, as it was, if an update comes for it. `false`
/// when none is idle and drained.
fn retire_one(state: &ClientState, routes: &mut Routes<Arc<SessionShared>>) -> bool {
    let retirable = |node: &Arc<SessionShared>| {
        let Some(subagent) = &node.family.subagent else {
            return false;
        };
        matches!(subagent.lock().unwrap().state, Some(StateUpdate::Idle(_)))
            && node.updates.head().is_none()
            && node.family.children.lock().unwrap().is_empty()
    };
    let Some(node) = routes
        .known()
        .map(|(_, s)| s)
        .find(|s| retirable(s))
        .cloned()
    else {
        return false;
    };
    routes.remove(&node.id);
    state.subagents.count.fetch_sub(1, Ordering::AcqRel);
    node.updates.close();
    let subagent = node
        .family
        .subagent
        .as_ref()
        .unwrap()
        .lock()
        .unwrap()
        .clone();
    if let Some(parent) = routes.get(&subagent.parent).cloned() {
        parent
            .family
            .children
            .lock()
            .unwrap()
            .retain(|child| !Arc::ptr_eq(child, &node));
        let mut retired = state.subagents.retired.lock().unwrap();
        if retired.len() < UNFOLLOWED_REMEMBERED {
            let (roots, cwd) = (node.roots.clone(), node.cwd.clone());
            retired.insert(
                node.id.clone(),
                Retired {
                    parent,
                    subagent,
                    roots,
                    cwd,
                },
            );
            state.subagents.any_retired.store(true, Ordering::Release);
        }
    }
    if let Some(terminals) = &state.options.terminals {
        terminals.release_session(node.id.as_str());
    }
    true
}

/// Before an update for `id` is routed: a retired subagent is followed again (retiring
/// another if need be), or, without room, told not followed on its parent. Inlined up to the
/// flag that nearly every update stops at (it runs on every `session/update`).
#[inline]
pub(super) fn follow_again(
    state: &ClientState,
    routes: &mut Routes<Arc<SessionShared>>,
    id: &SessionId,
) {
    if state.subagents.any_retired.load(Ordering::Acquire) {
        follow_retired(state, routes, id);
    }
}

/// [`follow_again`] once some subagent was retired.
fn follow_retired(state: &ClientState, routes: &mut Routes<Arc<SessionShared>>, id: &SessionId) {
    if routes.get(id).is_some() {
        return;
    }
    let Some(retired) = state.subagents.retired.lock().unwrap().remove(id) else {
        return;
    };
    if routes.get(&retired.parent.id).is_none() {
        return;
    }
    let limit = state.options.max_subagents;
    if state.subagents.count.load(Ordering::Acquire) >= limit && !retire_one(state, routes) {
        routes.unfollow(id.clone(), retired.parent.clone(), UNFOLLOWED_REMEMBERED);
        let seq = routes.seq();
        retired
            .parent
            .updates
            .record_unfollowed(id, limit, None, seq);
        return;
    }
    let Retired {
        parent,
        subagent,
        roots,
        cwd,
    } = retired;
    follow(state, routes, &parent, id.clone(), subagent, roots, cwd);
}

/// Where the agent placed the child: the announced `cwd` and additional directories when
/// they are absolute, else the parent's.
fn placement(
    state: &ClientState,
    parent: &SessionShared,
    update: &SubagentUpdate,
) -> (FsRoots, PathBuf) {
    let Patch::Set(cwd) = &update.cwd else {
        return (parent.roots.clone(), parent.cwd.clone());
    };
    let additional = match &update.additional_directories {
        Patch::Set(dirs) => dirs.as_slice(),
        _ => &[],
    };
    if rules::absolute_cwd(cwd, additional).is_err() {
        return (parent.roots.clone(), parent.cwd.clone());
    }
    let roots = if state.options.fs_unrestricted {
        FsRoots::unrestricted()
    } else {
        FsRoots::session(cwd, additional.iter().map(PathBuf::from))
    };
    (roots, PathBuf::from(cwd))
}

/// `root` and its subagents at every depth, parents before their children.
fn tree(root: &Arc<SessionShared>) -> Vec<Arc<SessionShared>> {
    let mut nodes = vec![root.clone()];
    let mut at = 0;
    while at < nodes.len() {
        let children = nodes[at].family.children.lock().unwrap().clone();
        nodes.extend(children);
        at += 1;
    }
    nodes
}

/// Forgets `root` and its subagents: their routes, their queues (closed: what waits is still
/// delivered) and their terminals.
pub(super) fn forget_tree(state: &ClientState, root: &Arc<SessionShared>) {
    let nodes = tree(root);
    let mut routes = state.routes.lock().unwrap();
    for node in &nodes {
        if routes.remove(&node.id).is_some() && node.family.subagent.is_some() {
            state.subagents.count.fetch_sub(1, Ordering::AcqRel);
        }
    }
    let in_tree = |parent: &Arc<SessionShared>| nodes.iter().any(|n| Arc::ptr_eq(n, parent));
    routes.forget_unfollowed(in_tree);
    drop(routes);
    (state.subagents.retired.lock().unwrap()).retain(|_, retired| !in_tree(&retired.parent));
    for node in &nodes {
        node.updates.close();
        if let Some(terminals) = &state.options.terminals {
            terminals.release_session(node.id.as_str());
        }
    }
}

/// Sets the cancellation of `root`'s subagents (the turn's work includes theirs): their
/// pending permission requests are answered `cancelled` and their unfinished tool calls
/// marked so.
pub(super) fn cancel_subagents(root: &Arc<SessionShared>) {
    for node in tree(root).into_iter().skip(1) {
        node.cancel.lock().unwrap().set();
        node.tool_calls.lock().unwrap().cancel_unfinished();
    }
}

/// A new turn of `root`: its subagents' cancellation starts afresh too.
pub(super) fn renew_cancellation(root: &Arc<SessionShared>) {
    for node in tree(root).into_iter().skip(1) {
        *node.cancel.lock().unwrap() = Latch::new();
    }
}

/// What [`try_pop_tree`] found.
pub(super) enum TreePopped {
    /// The update still boxed, as the queue holds it.
    Entry(Arc<SessionShared>, Result<Box<SessionNotification>>),
    Empty,
    Closed,
}

/// The entry that arrived first among `root`'s and its subagents' queues.
pub(super) fn try_pop_tree(root: &Arc<SessionShared>) -> TreePopped {
    let nodes = tree(root);
    let first = nodes
        .iter()
        .filter_map(|node| Some((node.updates.head()?, node)))
        .min_by_key(|(seq, _)| *seq);
    if let Some((_, node)) = first
        && let Popped::Entry(entry) = node.updates.try_pop()
    {
        return TreePopped::Entry(node.clone(), entry);
    }
    if nodes.iter().all(|node| node.updates.is_done()) {
        TreePopped::Closed
    } else {
        TreePopped::Empty
    }
}

/// Refuses `method` for a subagent, whose parent drives it: only `session/cancel`, and only
/// when the parent advertised `cancel` for it, is sent for a child.
pub(super) fn check_method(session: &SessionShared, method: &str) -> Result<()> {
    let Some(subagent) = &session.family.subagent else {
        return Ok(());
    };
    let cancel = subagent
        .lock()
        .unwrap()
        .capabilities
        .as_ref()
        .is_some_and(|c| c.cancel.is_some());
    rules::subagent_method(method, &session.id, cancel).map_err(rules::Breach::refused)
}

/// The subagents the connection follows, and the bytes waiting in their queues.
pub(super) fn followed(state: &ClientState) -> (usize, usize) {
    (
        state.subagents.count.load(Ordering::Acquire),
        state.subagents.pool.bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ClientOptions;
    use crate::client::family::Followed;
    use crate::client::updates::Arrived;
    use proptest::prelude::*;

    fn node(
        id: &str,
        ready: Option<&Arc<SessionShared>>,
        pool: &Followed<SessionShared>,
    ) -> Arc<SessionShared> {
        let options = ClientOptions::default();
        let queue = match ready {
            None => UpdateQueue::new(id.into(), 1 << 20),
            Some(parent) => UpdateQueue::subagent(
                id.into(),
                1 << 20,
                pool.pool.clone(),
                parent.updates.ready().clone(),
            ),
        };
        let roots = FsRoots::unrestricted();
        let family = Family::default();
        SessionShared::new(&options, id.into(), roots, "/".into(), queue, family)
    }

    fn update(session: &str) -> Arrived {
        Arrived::Update(Box::new(SessionNotification::new(
            session,
            SessionUpdate::agent_message_chunk(ContentBlock::text("x")),
        )))
    }

    proptest! {
        /// However the updates of a session and its subagents (three levels) interleave, and
        /// whenever they are taken, the tree yields them in the order they were routed, each
        /// exactly once.
        #[test]
        fn a_tree_yields_its_updates_in_arrival_order(
            steps in proptest::collection::vec((0usize..4, any::<bool>()), 1..200)
        ) {
            let followed = Followed::new(1 << 30);
            let root = node("root", None, &followed);
            let child = node("child", Some(&root), &followed);
            let other = node("other", Some(&root), &followed);
            let grandchild = node("grandchild", Some(&root), &followed);
            child.family.children.lock().unwrap().push(grandchild.clone());
            root.family.children.lock().unwrap().extend([child.clone(), other.clone()]);
            let nodes = [&root, &child, &other, &grandchild];
            let (mut pushed, mut taken) = (Vec::new(), Vec::new());
            for (seq, (at, pop)) in steps.into_iter().enumerate() {
                let node = nodes[at];
                assert!(node.updates.push(update(node.id.as_str()), 10, seq as u64));
                pushed.push(node.id.to_string());
                if pop && let TreePopped::Entry(from, _) = try_pop_tree(&root) {
                    taken.push(from.id.to_string());
                }
            }
            while let TreePopped::Entry(from, _) = try_pop_tree(&root) {
                taken.push(from.id.to_string());
            }
            prop_assert_eq!(taken, pushed);
            for node in nodes {
                node.updates.close();
            }
            prop_assert!(matches!(try_pop_tree(&root), TreePopped::Closed));
        }
    }
}
