//! The agent's side of schema 1.20's unstable items, each behind its cargo feature:
//! `session/options` and initial config options (`unstable-session-options`), the cursors it
//! announces and forks at (`unstable-session-cursors`), prompt suggestions
//! (`unstable-prompt-suggestions`), and the turn's token usage (`unstable-end-turn-usage`).
//! The rules themselves are in `rules::unstable`.

use acp_types::*;

use super::dispatch::AgentDispatch;
use super::handler::Agent;
use super::session::ClientHandle;
#[cfg(any(
    feature = "unstable-session-cursors",
    feature = "unstable-prompt-suggestions"
))]
use super::session::SessionClient;
#[cfg(feature = "unstable-session-cursors")]
use super::state::AnnouncedCursor;
#[cfg(feature = "unstable-session-options")]
use crate::error::Error;
#[cfg(any(
    feature = "unstable-session-options",
    feature = "unstable-session-cursors",
    feature = "unstable-prompt-suggestions"
))]
use crate::error::Result;
#[cfg(feature = "unstable-session-options")]
use crate::reply::{Reply, raw};
use crate::rules::{self, Breach};

impl ClientHandle {
    /// The unstable part of the check before an update is sent (see
    /// [`rules::unstable::session_update`]); a `cursor_update` that keeps its cursor's rule is
    /// recorded, so that `session/fork` at the cursor can be checked.
    pub(super) fn unstable_update(
        &self,
        session_id: &SessionId,
        update: &SessionUpdate,
    ) -> std::result::Result<(), Breach> {
        self.state
            .negotiated(|n| {
                rules::unstable::session_update(
                    update,
                    &n.client_capabilities,
                    &n.agent_capabilities.prompt_capabilities,
                )
            })
            .unwrap_or(Ok(()))?;
        // Only the cursors are recorded per session.
        #[cfg(not(feature = "unstable-session-cursors"))]
        let _ = session_id;
        #[cfg(feature = "unstable-session-cursors")]
        if let SessionUpdate::CursorUpdate(cursor) = update {
            let mut sessions = self.state.sessions.lock().unwrap();
            let Some(entry) = sessions.get_mut(session_id) else {
                // A session the runtime does not know: its cursors cannot be forked at here,
                // but the anchor rule still holds.
                return rules::unstable::cursor_update(None, cursor);
            };
            let known = entry.cursors.get(&cursor.cursor_id);
            rules::unstable::cursor_update(known.map(|c| &c.anchor), cursor)?;
            let fork = |was: bool| match &cursor.capabilities {
                Patch::Unchanged => was,
                Patch::Clear => false,
                Patch::Set(capabilities) => capabilities.fork.is_some(),
            };
            match entry.cursors.get_mut(&cursor.cursor_id) {
                Some(known) => known.fork = fork(known.fork),
                None => {
                    let anchor = cursor.anchor.clone().expect("checked by the rule");
                    let announced = AnnouncedCursor {
                        anchor,
                        fork: fork(false),
                    };
                    entry.cursors.insert(cursor.cursor_id.clone(), announced);
                }
            }
        }
        Ok(())
    }
}

#[cfg(feature = "unstable-session-cursors")]
impl SessionClient {
    /// Announces a cursor of this session, or changes what it offers (a `cursor_update`,
    /// feature `unstable-session-cursors`; needs the client's `session.cursors`, else
    /// [`Error::NotAdvertised`] and nothing is sent).
    ///
    /// The first update of a cursor must carry its `anchor`, and the anchor never changes: an
    /// update that breaks this fails with [`Error::Invalid`] and sends nothing. The runtime
    /// keeps the cursors it sent, and answers `-32602` to a `session/fork` at a cursor this
    /// session did not announce or that does not offer `capabilities.fork`, before
    /// `Agent::fork_session` runs (feature `unstable-session-fork`).
    ///
    /// ```no_run
    /// # use acp_runtime::prelude::*;
    /// # async fn example(session: acp_runtime::agent::SessionClient) -> acp_runtime::Result<()> {
    /// let anchor = CursorMessageAnchor::new("m1", CursorAnchorPosition::After);
    /// let mut cursor = CursorUpdate::new("c1");
    /// cursor.anchor = Some(CursorAnchor::AgentMessage(anchor));
    /// cursor.capabilities = Patch::Set(CursorCapabilities::new().with_fork(CursorForkCapabilities::new()));
    /// session.cursor_update(cursor).await?;
    /// # Ok(()) }
    /// ```
    pub fn cursor_update(
        &self,
        update: CursorUpdate,
    ) -> impl std::future::Future<Output = Result<()>> + Send + use<> {
        self.update(SessionUpdate::CursorUpdate(update))
    }

    /// Whether this session announced `cursor` and it offers `capabilities.fork` now (`None`
    /// for a cursor not announced on this connection).
    pub fn cursor_can_fork(&self, cursor: &CursorId) -> Option<bool> {
        self.client
            .state
            .read_session(&self.id, |entry| entry.cursors.get(cursor).map(|c| c.fork))
            .flatten()
    }
}

#[cfg(feature = "unstable-prompt-suggestions")]
impl SessionClient {
    /// Replaces the prompts suggested to the user (a `prompt_suggestions_update`, feature
    /// `unstable-prompt-suggestions`; an empty list withdraws them). Needs the client's
    /// `session.promptSuggestions`, and content it takes there: `text` and `resource_link`
    /// always, images, audio and embedded resources when both the client's
    /// `session.promptSuggestions` and this agent's `promptCapabilities` take them. A
    /// suggestion of blank text only is refused too. A refused update fails with
    /// [`Error::NotAdvertised`] or [`Error::Invalid`] and sends nothing.
    ///
    /// Suggestions are not history: [`SessionClient::replay`] skips them.
    ///
    /// ```no_run
    /// # use acp_runtime::prelude::*;
    /// # async fn example(session: acp_runtime::agent::SessionClient) -> acp_runtime::Result<()> {
    /// session
    ///     .prompt_suggestions(vec![PromptSuggestion::new(vec!["Run the tests".into()])])
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn prompt_suggestions(
        &self,
        suggestions: Vec<PromptSuggestion>,
    ) -> impl std::future::Future<Output = Result<()>> + Send + use<> {
        self.update(SessionUpdate::PromptSuggestionsUpdate(
            PromptSuggestionsUpdate::new(suggestions),
        ))
    }
}

impl<A: Agent> AgentDispatch<A> {
    /// `session/options`: checked, then answered by the agent with no session registered and
    /// no session handle to send updates with.
    #[cfg(feature = "unstable-session-options")]
    pub(super) async fn session_options(
        &self,
        request: SessionOptionsRequest,
        client: &ClientHandle,
        caps: &AgentCapabilities,
        client_caps: &ClientCapabilities,
    ) -> Result<Reply> {
        rules::unstable::session_options(&request, caps).map_err(|b| b.answer("agent"))?;
        let response = self.agent.session_options(request, client).await?;
        rules::offered_config_options(response.config_options.as_deref(), client_caps)
            .map_err(|breach| Error::internal(format!("the agent answered {breach}")))?;
        raw(response)
    }

    /// `session/fork` at a cursor: one this agent announced on the source session and that
    /// offers `capabilities.fork`, else `-32602` before the agent runs.
    #[cfg(all(
        feature = "unstable-session-cursors",
        feature = "unstable-session-fork"
    ))]
    pub(super) fn check_fork_cursor(&self, request: &ForkSessionRequest) -> Result<()> {
        let Some(cursor) = &request.cursor_id else {
            return Ok(());
        };
        let forkable = self
            .state
            .read_session(&request.session_id, |entry| {
                entry.cursors.get(cursor).map(|c| c.fork)
            })
            .flatten();
        rules::unstable::fork_cursor(&request.session_id, cursor, forkable)
            .map_err(|b| b.answer("agent"))
    }
}
