//! A session with its subagents, read as one tree: [`TreeUpdate`] from
//! [`PromptTurn::next_in_tree`] and [`Session::next_in_tree`], each naming its session, in the
//! order the updates arrived; and what a session knows of its place among subagents
//! ([`Session::subagent`], [`Session::subagents`], [`AgentHandle::session`]).

use acp_types::*;

use super::family::Subagent;
use super::handle::AgentHandle;
use super::session::{PromptTurn, Session};
use super::subagents::{self, TreePopped};
use crate::error::Result;

/// An update of a session or of one of its subagents, from [`PromptTurn::next_in_tree`] and
/// [`Session::next_in_tree`].
#[derive(Debug)]
#[non_exhaustive]
pub struct TreeUpdate {
    /// Whose update it is: the session read, or a subagent of it at any depth
    /// ([`Session::subagent`] says whose child, with its title and state).
    pub session: Session,
    /// The update, or what stands in its place in that session's stream
    /// ([`Error::UpdatesDropped`](crate::Error::UpdatesDropped),
    /// [`Error::InvalidUpdate`](crate::Error::InvalidUpdate),
    /// [`Error::SubagentNotFollowed`](crate::Error::SubagentNotFollowed)).
    pub update: Result<SessionUpdate>,
}

impl Session {
    /// The session this one is a subagent of; `None` for a session the application opened.
    pub fn parent_id(&self) -> Option<SessionId> {
        let subagent = self.shared.family.subagent.as_ref()?;
        Some(subagent.lock().unwrap().parent.clone())
    }

    /// What the parent said of this subagent (title, description, state, capabilities), as
    /// of the updates routed so far; `None` for a session the application opened.
    pub fn subagent(&self) -> Option<Subagent> {
        let subagent = self.shared.family.subagent.as_ref()?;
        Some(subagent.lock().unwrap().clone())
    }

    /// The subagents announced on this session and followed, in the order they were
    /// announced (their own subagents are theirs: [`subagents`](Self::subagents) of each).
    pub fn subagents(&self) -> Vec<Session> {
        let children = self.shared.family.children.lock().unwrap().clone();
        children
            .into_iter()
            .map(|shared| Session {
                agent: self.agent.clone(),
                shared,
            })
            .collect()
    }

    /// The next update of this session or of any of its subagents (at any depth), in the
    /// order they arrived, waiting for one; `None` once every one of these sessions is over
    /// (the connection ended, or the session was closed) and every update was taken.
    ///
    /// ```no_run
    /// # async fn show(session: acp_runtime::client::Session) {
    /// while let Some(item) = session.next_in_tree().await {
    ///     let indent = item.session.subagent().map_or(0, |s| s.depth);
    ///     println!("{:indent$}{:?}", "", item.update, indent = indent * 2);
    /// }
    /// # }
    /// ```
    pub async fn next_in_tree(&self) -> Option<TreeUpdate> {
        loop {
            if let Ok(item) = self.try_pop_tree() {
                return item;
            }
            // Listen, then look again: a push between the two is not missed.
            let listener = self.shared.updates.ready().listen();
            match self.try_pop_tree() {
                Ok(item) => return item,
                Err(()) => listener.await,
            }
        }
    }

    /// An update of this session or of its subagents that already arrived (the one that
    /// arrived first), without waiting.
    pub fn try_next_in_tree(&self) -> Option<TreeUpdate> {
        self.try_pop_tree().ok().flatten()
    }

    /// `Ok(None)` when the tree is over, `Err(())` when nothing waits yet.
    fn try_pop_tree(&self) -> std::result::Result<Option<TreeUpdate>, ()> {
        match subagents::try_pop_tree(&self.shared) {
            TreePopped::Entry(shared, update) => Ok(Some(TreeUpdate {
                session: Session {
                    agent: self.agent.clone(),
                    shared,
                },
                update: update.map(|notification| notification.update),
            })),
            TreePopped::Closed => Ok(None),
            TreePopped::Empty => Err(()),
        }
    }
}

impl PromptTurn {
    /// The next update of the turn's session or of any of its subagents (at any depth), in
    /// the order they arrived; `None` once the turn has ended and every update sent before
    /// the end was returned. Each [`TreeUpdate`] names its session: a subagent's says whose
    /// child it is, with its title and state ([`Session::subagent`]).
    ///
    /// ```no_run
    /// # async fn run(session: acp_runtime::client::Session) -> acp_runtime::Result<()> {
    /// let mut turn = session.prompt(vec!["Research this in parallel".into()]).await?;
    /// while let Some(item) = turn.next_in_tree().await {
    ///     match item.session.subagent() {
    ///         Some(child) => println!("[{}] {:?}", child.title.unwrap_or_default(), item.update),
    ///         None => println!("{:?}", item.update),
    ///     }
    /// }
    /// println!("{:?}", turn.end().await?.stop_reason);
    /// # Ok(()) }
    /// ```
    ///
    /// Reading with [`next`](Self::next) instead takes the session's own updates only; its
    /// subagents' then wait in their queues ([`Session::next_update`] of each, from
    /// [`Session::subagents`]), within their budgets.
    pub async fn next_in_tree(&mut self) -> Option<TreeUpdate> {
        if let Ok(item) = self.session.try_pop_tree() {
            return item;
        }
        let response = self.response.as_mut()?;
        enum Next {
            // Boxed: an update is several times the size of a response.
            Update(Option<Box<TreeUpdate>>),
            End(Result<PromptResponse>),
        }
        let session = &self.session;
        let next = futures_lite::future::or(
            async { Next::Update(session.next_in_tree().await.map(Box::new)) },
            async { Next::End(response.as_mut().await) },
        )
        .await;
        match next {
            Next::Update(Some(item)) => Some(*item),
            Next::Update(None) => {
                let response = self.response.as_mut()?;
                let end = response.as_mut().await;
                self.finish(end);
                None
            }
            Next::End(end) => {
                self.finish(end);
                // Every update sent before the response is already queued.
                self.session.try_next_in_tree()
            }
        }
    }
}

impl AgentHandle {
    /// A session this connection knows by its id: one the application opened, or a subagent
    /// it follows.
    pub fn session(&self, id: &SessionId) -> Option<Session> {
        let shared = self.state.routes.lock().unwrap().get(id)?.clone();
        Some(Session {
            agent: self.clone(),
            shared,
        })
    }

    /// How many subagents the connection follows now (at most
    /// [`ClientOptions::with_max_subagents`](super::ClientOptions::with_max_subagents)).
    pub fn subagent_count(&self) -> usize {
        subagents::followed(&self.state).0
    }

    /// How many bytes of updates wait in the queues of every followed subagent (at most
    /// [`ClientOptions::with_subagent_update_budget`](super::ClientOptions::with_subagent_update_budget),
    /// plus one larger update).
    pub fn buffered_subagent_bytes(&self) -> usize {
        subagents::followed(&self.state).1
    }
}
