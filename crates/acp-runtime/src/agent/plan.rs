//! Plans and subagents on the agent's [`SessionClient`]: the updates a client must opt into
//! (`plan` for `plan_update` and `plan_removed`, `subagents` for `subagent_update` and session
//! messages; the rule is `rules::session_update`), and [`set_plan`](SessionClient::set_plan),
//! which sends what the client advertised it takes.

use std::future::Future;

use acp_types::*;

use super::session::SessionClient;
use crate::error::{Error, Result};

impl SessionClient {
    /// Sends one plan the way this client takes it: `plan_update` when it advertised `plan`,
    /// else the old `plan` update, which every client takes.
    ///
    /// The old update has a single plan per session, so for such a client the runtime keeps
    /// the entries of every plan id sent so far and sends them together, in the order the
    /// ids first came (a plan sent again keeps its place). A markdown plan becomes one entry,
    /// its whole text, priority `medium` and status `pending`; its `path` is not shown.
    /// A plan kind this schema does not know fails with [`Error::Invalid`] for such a client
    /// (nothing sent).
    ///
    /// ```no_run
    /// # async fn run(turn: acp_runtime::agent::Turn) -> acp_runtime::Result<()> {
    /// use acp_runtime::prelude::*;
    ///
    /// let steps = vec![PlanEntry::new("Read notes.txt", PlanEntryPriority::High, PlanEntryStatus::Pending)];
    /// turn.set_plan(PlanItems::new("main", steps)).await?;
    /// turn.set_plan(PlanMarkdown::new("review", "1. Check the diff")).await?;
    /// turn.remove_plan("review").await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_plan(&self, plan: impl Into<PlanUpdateContent>) -> Result<()> {
        let plan = plan.into();
        if self.client_takes_plan_updates() {
            return self.plan_update(PlanUpdate::new(plan)).await;
        }
        let (id, entries) = match plan {
            PlanUpdateContent::Items(items) => (items.plan_id, items.entries),
            PlanUpdateContent::Markdown(markdown) => (
                markdown.plan_id,
                vec![PlanEntry::new(
                    markdown.content,
                    PlanEntryPriority::Medium,
                    PlanEntryStatus::Pending,
                )],
            ),
            other => {
                return Err(Error::Invalid(format!(
                    "the plan {} cannot be sent as the old `plan` update, and the client did not advertise `plan`",
                    serde_json::to_string(&other).unwrap_or_default()
                )));
            }
        };
        let all = self.merge_plans(|plans| {
            match plans.iter_mut().find(|(known, _)| *known == id) {
                Some((_, known)) => *known = entries.clone(),
                None => plans.push((id.clone(), entries.clone())),
            }
            true
        });
        self.plan(all.unwrap_or(entries)).await
    }

    /// Removes one plan the way this client takes it: `plan_removed` when it advertised
    /// `plan`, else the old `plan` update with the entries of the plans left (see
    /// [`set_plan`](Self::set_plan)); nothing when the plan is not known.
    pub async fn remove_plan(&self, plan_id: impl Into<PlanId>) -> Result<()> {
        let plan_id = plan_id.into();
        if self.client_takes_plan_updates() {
            return self.plan_removed(PlanRemoved::new(plan_id)).await;
        }
        let left = self.merge_plans(|plans| {
            let before = plans.len();
            plans.retain(|(known, _)| *known != plan_id);
            plans.len() != before
        });
        match left {
            Some(entries) => self.plan(entries).await,
            None => Ok(()),
        }
    }

    /// Changes the session's record of its plans with `change`; when it says something
    /// changed, the entries of every plan, in order.
    fn merge_plans(
        &self,
        change: impl FnOnce(&mut Vec<(PlanId, Vec<PlanEntry>)>) -> bool,
    ) -> Option<Vec<PlanEntry>> {
        self.client
            .state
            .with_session(self.id(), |entry| {
                Ok(change(&mut entry.plans).then(|| {
                    entry
                        .plans
                        .iter()
                        .flat_map(|(_, entries)| entries.iter().cloned())
                        .collect()
                }))
            })
            .ok()
            .flatten()
    }

    fn client_takes_plan_updates(&self) -> bool {
        self.client
            .state
            .negotiated(|n| n.client_capabilities.plan.is_some())
            .unwrap_or(false)
    }

    /// Replaces one plan by its id. The client must advertise `plan`, else this fails with
    /// [`Error::NotAdvertised`] and sends nothing; [`set_plan`](Self::set_plan) sends the old
    /// `plan` update to such a client instead.
    pub fn plan_update(
        &self,
        update: PlanUpdate,
    ) -> impl Future<Output = Result<()>> + Send + use<> {
        self.update(SessionUpdate::PlanUpdate(update))
    }

    /// Removes one plan by its id (client capability `plan`, like
    /// [`plan_update`](Self::plan_update); [`remove_plan`](Self::remove_plan) for any client).
    pub fn plan_removed(
        &self,
        removed: PlanRemoved,
    ) -> impl Future<Output = Result<()>> + Send + use<> {
        self.update(SessionUpdate::PlanRemoved(removed))
    }

    /// Announces or updates a child session owned by this one (client capability
    /// `subagents`, else [`Error::NotAdvertised`] and nothing sent). Its fields are patches:
    /// omitted keeps the client's value, cleared sets it to `null`.
    pub fn subagent_update(
        &self,
        update: SubagentUpdate,
    ) -> impl Future<Output = Result<()>> + Send + use<> {
        self.update(SessionUpdate::SubagentUpdate(update))
    }

    /// Records a message sent to or received from another session (client capability
    /// `subagents`).
    pub fn session_message(
        &self,
        message: SessionMessage,
    ) -> impl Future<Output = Result<()>> + Send + use<> {
        self.update(SessionUpdate::SessionMessage(message))
    }

    /// Appends one content block to a session message (client capability `subagents`).
    pub fn session_message_chunk(
        &self,
        chunk: SessionMessageChunk,
    ) -> impl Future<Output = Result<()>> + Send + use<> {
        self.update(SessionUpdate::SessionMessageChunk(chunk))
    }
}
