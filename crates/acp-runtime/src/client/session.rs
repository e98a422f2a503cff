//! A session on the agent ([`Session`]) and its prompt turns ([`PromptTurn`]).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use acp_types::*;

use crate::error::{Error, Result};

use super::family::Family;
use super::handle::AgentHandle;
use super::state::SessionShared;
use super::subagents;
use super::tool_calls::ToolCallState;
use super::updates::{Popped, UpdateQueue};
use crate::rules::{self, SessionSetup};
use acp_host::fs::FsRoots;
use acp_jsonrpc::Latch;

/// The modes and config options an answer advertised.
type Advertised = (Option<SessionModeState>, Option<Vec<SessionConfigOption>>);

/// What an answer that created a session says.
pub(super) struct Opened {
    pub(super) method: &'static str,
    pub(super) id: SessionId,
    pub(super) modes: Option<SessionModeState>,
    pub(super) config_options: Option<Vec<SessionConfigOption>>,
    pub(super) answer: Box<serde_json::value::RawValue>,
}

/// The calls that open a [`Session`].
impl AgentHandle {
    /// Creates a session in `cwd` (absolute) without MCP servers.
    pub async fn new_session(&self, cwd: impl AsRef<Path>) -> Result<Session> {
        let cwd = cwd.as_ref().to_string_lossy().into_owned();
        self.new_session_with(NewSessionRequest::new(cwd, Vec::<McpServer>::new()))
            .await
    }

    /// Creates a session from a full request.
    ///
    /// The agent may use the session as soon as it has answered: requests it sends for the
    /// session before this call has returned (a file read right behind the answer, say) wait
    /// for the session to be registered instead of being refused as unknown.
    ///
    /// A system prompt (`request.system_prompt`) is sent only when the agent advertised
    /// `sessionCapabilities.systemPrompt`, and `override` mode only when it advertised
    /// `mode.override`; otherwise this fails with [`Error::NotAdvertised`] and sends nothing
    /// ([`system_prompt_modes`](Self::system_prompt_modes) says what the agent takes).
    ///
    /// ```no_run
    /// # async fn run(agent: acp_runtime::client::AgentHandle) -> acp_runtime::Result<()> {
    /// use acp_runtime::prelude::*;
    ///
    /// let prompt = SystemPrompt::new(SystemPromptMode::Append, vec!["Answer in French.".into()]);
    /// let request = NewSessionRequest::new("/work/project", Vec::<McpServer>::new())
    ///     .with_system_prompt(prompt);
    /// let session = agent.new_session_with(request).await?;
    /// # Ok(()) }
    /// ```
    pub async fn new_session_with(&self, request: NewSessionRequest) -> Result<Session> {
        self.check_session_setup(&request)?;
        let opening = self.state.begin_opening();
        let (response, answer): (NewSessionResponse, _) =
            self.request_keeping_answer(&request).await?;
        let opened = Opened {
            method: "session/new",
            id: response.session_id.clone(),
            modes: response.modes,
            config_options: response.config_options,
            answer,
        };
        let dirs = request.additional_directories.as_deref();
        let session = self.opened(opened, &request.cwd, dirs);
        drop(opening);
        Ok(session)
    }

    /// Loads a stored session (needs `loadSession`). The replayed history is waiting in
    /// [`Session::next_update`] when this returns.
    pub async fn load_session(
        &self,
        request: LoadSessionRequest,
    ) -> Result<(Session, LoadSessionResponse)> {
        self.check_session_setup(&request)?;
        let (cwd, dirs) = (&request.cwd, request.additional_directories.as_deref());
        self.reopen(&request, &request.session_id, cwd, dirs, |r| {
            (r.modes.clone(), r.config_options.clone())
        })
        .await
    }

    /// Resumes a stored session (needs `sessionCapabilities.resume`).
    pub async fn resume_session(
        &self,
        request: ResumeSessionRequest,
    ) -> Result<(Session, ResumeSessionResponse)> {
        self.check_session_setup(&request)?;
        let (cwd, dirs) = (&request.cwd, request.additional_directories.as_deref());
        self.reopen(&request, &request.session_id, cwd, dirs, |r| {
            (r.modes.clone(), r.config_options.clone())
        })
        .await
    }

    /// Sends `session/load` or `session/resume` with the session registered first, so that
    /// the updates sent before the answer (a replay) land in it.
    async fn reopen<R: Request + ClientToAgent>(
        &self,
        request: &R,
        id: &SessionId,
        cwd: &str,
        additional: Option<&[String]>,
        advertised: impl FnOnce(&R::Response) -> Advertised,
    ) -> Result<(Session, R::Response)> {
        let session = self.open_session(id.clone(), cwd, additional, None, None);
        let (response, answer) = self.request_keeping_answer(request).await?;
        let (modes, config_options) = advertised(&response);
        self.check_offered(R::METHOD, config_options.as_deref());
        *session.shared.modes.lock().unwrap() = modes;
        *session.shared.config_options.lock().unwrap() = config_options;
        *session.shared.answer.lock().unwrap() = Some(answer);
        Ok((session, response))
    }

    /// The session an answer of `session/new` or `session/fork` opened.
    pub(super) fn opened(
        &self,
        opened: Opened,
        cwd: &str,
        additional: Option<&[String]>,
    ) -> Session {
        self.check_offered(opened.method, opened.config_options.as_deref());
        let session = self.open_session(
            opened.id,
            cwd,
            additional,
            opened.modes,
            opened.config_options,
        );
        *session.shared.answer.lock().unwrap() = Some(opened.answer);
        session
    }

    /// A session's answer that offers what this client cannot take is still taken (lenient
    /// in what we accept), and reported.
    pub(super) fn check_offered(&self, method: &str, options: Option<&[SessionConfigOption]>) {
        let client = &self.state.options.capabilities;
        if let Err(breach) = rules::offered_config_options(options, client) {
            self.rpc.report(acp_jsonrpc::Problem::PeerBrokeRule {
                method: method.to_owned(),
                rule: breach.to_string(),
            });
        }
    }

    /// The rules on a setup request (`session/new`, `load`, `resume`, `fork`) before it is
    /// sent: an absolute `cwd`, MCP transports and a system prompt the agent advertised.
    pub(super) fn check_session_setup(
        &self,
        request: &impl SessionSetup<McpServer = McpServer, SystemPrompt = SystemPrompt>,
    ) -> Result<()> {
        let (cwd, additional) = (request.cwd(), request.additional_directories());
        rules::absolute_cwd(cwd, additional).map_err(rules::Breach::refused)?;
        let caps = self.initialized("session/new")?.agent_capabilities;
        rules::mcp_servers(request.mcp_servers(), &caps).map_err(rules::Breach::refused)?;
        rules::system_prompt(request.system_prompt(), &caps).map_err(rules::Breach::refused)?;
        #[cfg(feature = "unstable-session-options")]
        self.check_initial_options(request.config_options())?;
        Ok(())
    }

    /// The system prompt modes the agent takes on `session/new`, `load`, `resume` (and
    /// `fork`): none when it did not advertise `sessionCapabilities.systemPrompt` (or before
    /// `initialize`), else `append`, and `override` when it advertised `mode.override`.
    pub fn system_prompt_modes(&self) -> Vec<SystemPromptMode> {
        let Ok(caps) = self.initialized("session/new") else {
            return Vec::new();
        };
        let Some(advertised) = caps.agent_capabilities.session_capabilities.system_prompt else {
            return Vec::new();
        };
        let mut modes = vec![SystemPromptMode::Append];
        if advertised.mode.and_then(|m| m.r#override).is_some() {
            modes.push(SystemPromptMode::Override);
        }
        modes
    }

    pub(super) fn open_session(
        &self,
        id: SessionId,
        cwd: &str,
        additional: Option<&[String]>,
        modes: Option<SessionModeState>,
        config_options: Option<Vec<SessionConfigOption>>,
    ) -> Session {
        let roots = if self.state.options.fs_unrestricted {
            FsRoots::unrestricted()
        } else {
            FsRoots::session(
                cwd,
                additional.unwrap_or_default().iter().map(PathBuf::from),
            )
        };
        let queue = UpdateQueue::new(id.clone(), self.state.options.session_update_budget);
        let shared = SessionShared::new(
            &self.state.options,
            id.clone(),
            roots,
            PathBuf::from(cwd),
            queue,
            Family::default(),
        );
        *shared.modes.lock().unwrap() = modes;
        *shared.config_options.lock().unwrap() = config_options;
        // Under the routes lock, so that no update slips between taking the early ones and
        // registering the session.
        let mut routes = self.state.routes.lock().unwrap();
        routes.open(id, shared.clone(), &shared.updates, |update| {
            shared.track(update)
        });
        drop(routes);
        Session {
            agent: self.clone(),
            shared,
        }
    }
}

/// A session on the agent: prompt turns, cancellation, modes and config options, and the
/// updates that arrive outside turns.
///
/// A subagent the agent announced (a `subagent_update`) is a `Session` too, found with
/// [`Session::subagents`] or [`AgentHandle::session`]: its updates, tool calls, modes and
/// config options are its own, and [`Session::subagent`] says whose child it is. Its parent
/// drives it: [`prompt`](Self::prompt), [`set_mode`](Self::set_mode),
/// [`set_config_option`](Self::set_config_option) and [`close`](Self::close) are refused
/// for it without sending, and [`cancel`](Self::cancel) is sent only when the parent
/// advertised `cancel` for it.
#[derive(Clone)]
pub struct Session {
    pub(super) agent: AgentHandle,
    pub(super) shared: Arc<SessionShared>,
}

impl Session {
    /// The session's id.
    pub fn id(&self) -> &SessionId {
        &self.shared.id
    }

    /// The session's working directory.
    pub fn cwd(&self) -> &Path {
        &self.shared.cwd
    }

    /// The modes the session advertised, with the current one.
    pub fn modes(&self) -> Option<SessionModeState> {
        self.shared.modes.lock().unwrap().clone()
    }

    /// The config options the session advertised, with their current values.
    pub fn config_options(&self) -> Option<Vec<SessionConfigOption>> {
        self.shared.config_options.lock().unwrap().clone()
    }

    /// The answer that opened the session (`session/new`, `load`, `resume` or `fork`), as the
    /// agent sent it: fields this schema does not know (an older agent's `models`, say) are
    /// there too. `None` until the answer came.
    pub fn answer(&self) -> Option<Box<serde_json::value::RawValue>> {
        self.shared.answer.lock().unwrap().clone()
    }

    /// The `_meta` of the answer that opened the session.
    pub fn meta(&self) -> Option<Meta> {
        let answer = self.shared.answer.lock().unwrap();
        #[derive(serde::Deserialize)]
        struct WithMeta {
            #[serde(rename = "_meta")]
            meta: Option<Meta>,
        }
        serde_json::from_str::<WithMeta>(answer.as_ref()?.get())
            .ok()?
            .meta
    }

    /// What the client knows of a tool call of this session. `None` for an id never reported,
    /// and for one forgotten: a session remembers its calls within a count and a byte budget
    /// ([`ClientOptions::with_max_tool_calls`](super::ClientOptions::with_max_tool_calls),
    /// [`with_tool_call_budget`](super::ClientOptions::with_tool_call_budget)), forgetting
    /// the finished calls reported longest ago first, then the unfinished ones.
    pub fn tool_call(&self, id: &ToolCallId) -> Option<ToolCallState> {
        self.shared.tool_calls.lock().unwrap().get(id)
    }

    /// What the session's memory of its tool calls costs, in bytes: at most
    /// [`ClientOptions::with_tool_call_budget`](super::ClientOptions::with_tool_call_budget).
    pub fn tool_call_bytes(&self) -> usize {
        self.shared.tool_calls.lock().unwrap().bytes()
    }

    /// Sends a prompt. At most one turn runs at a time; content types the agent did not
    /// advertise are refused without sending.
    pub async fn prompt(&self, prompt: Vec<ContentBlock>) -> Result<PromptTurn> {
        self.prompt_with(PromptRequest::new(self.shared.id.clone(), prompt))
            .await
    }

    /// Sends a prompt from a full request.
    pub async fn prompt_with(&self, request: PromptRequest) -> Result<PromptTurn> {
        subagents::check_method(&self.shared, "session/prompt")?;
        let caps = self.agent.initialized("session/prompt")?.agent_capabilities;
        rules::prompt_content(&request.prompt, &caps.prompt_capabilities)
            .map_err(rules::Breach::refused)?;
        if self.shared.turn_active.swap(true, Ordering::AcqRel) {
            return Err(Error::Invalid(format!(
                "session `{}` already has a prompt in flight; wait for its end or cancel it",
                self.shared.id
            )));
        }
        *self.shared.cancel.lock().unwrap() = Latch::new();
        subagents::renew_cancellation(&self.shared);
        let raw = serde_json::value::to_raw_value(&request)
            .map_err(|e| Error::Internal(e.to_string()))?;
        let agent = self.agent.clone();
        let mut response: ResponseFuture = Box::pin(async move {
            let result = match agent.rpc.request_raw("session/prompt", Some(&raw)).await {
                Ok(result) => result,
                Err(e) => return Err(agent.closed_error(e.into()).await),
            };
            decode_response::<PromptResponse>(result.get()).map_err(Error::Decode)
        });
        // Send the prompt now, not when the turn is first polled: a `cancel` right after
        // `prompt` must find the prompt on its way.
        if let Some(end) = futures_lite::future::poll_once(&mut response).await {
            return Ok(PromptTurn {
                session: self.clone(),
                response: None,
                end: Some(end),
            }
            .ended());
        }
        Ok(PromptTurn {
            session: self.clone(),
            response: Some(response),
            end: None,
        })
    }

    /// Cancels the running turn: sends `session/cancel`, answers the session's pending
    /// permission requests with `cancelled`, and marks its unfinished tool calls cancelled.
    /// The turn then ends with `cancelled`. The session's subagents' pending permission
    /// requests and unfinished tool calls are part of the turn's work and are cancelled too
    /// (without a message of their own: the agent stops them with their parent).
    ///
    /// On a subagent, this is sent only when its parent advertised `cancel` for it
    /// ([`Subagent::capabilities`](super::Subagent::capabilities)); else it fails with
    /// [`Error::Invalid`] and sends nothing.
    pub async fn cancel(&self) -> Result<()> {
        subagents::check_method(&self.shared, "session/cancel")?;
        self.shared.cancel.lock().unwrap().set();
        self.shared.tool_calls.lock().unwrap().cancel_unfinished();
        subagents::cancel_subagents(&self.shared);
        self.agent
            .notify(&CancelNotification::new(self.shared.id.clone()))
            .await
    }

    /// Switches mode; the mode must be one the session advertised.
    pub async fn set_mode(&self, mode: impl Into<SessionModeId>) -> Result<()> {
        subagents::check_method(&self.shared, "session/set_mode")?;
        let mode = mode.into();
        rules::mode(self.id(), self.modes().as_ref(), &mode).map_err(rules::Breach::refused)?;
        self.agent
            .request(&SetSessionModeRequest::new(
                self.shared.id.clone(),
                mode.clone(),
            ))
            .await?;
        if let Some(modes) = self.shared.modes.lock().unwrap().as_mut() {
            modes.current_mode_id = mode;
        }
        Ok(())
    }

    /// Sets a config option to a value the session offers for it (a value id as a string,
    /// or a `bool` for a boolean option); returns (and records) the full new state.
    ///
    /// ```no_run
    /// # async fn example(session: acp_runtime::client::Session) -> acp_runtime::Result<()> {
    /// session.set_config_option("model", "fast").await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_config_option(
        &self,
        config_id: impl Into<SessionConfigId>,
        value: impl Into<SetSessionConfigOptionRequestKind>,
    ) -> Result<Vec<SessionConfigOption>> {
        subagents::check_method(&self.shared, "session/set_config_option")?;
        let request =
            SetSessionConfigOptionRequest::new(self.shared.id.clone(), config_id, value.into());
        let client = &self.agent.state.options.capabilities;
        rules::config_value(
            self.id(),
            self.config_options().as_deref(),
            &request,
            client,
        )
        .map_err(rules::Breach::refused)?;
        let response = self.agent.request(&request).await?;
        *self.shared.config_options.lock().unwrap() = Some(response.config_options.clone());
        Ok(response.config_options)
    }

    /// The next update that arrived outside a turn (or was left over by one), waiting for it;
    /// `None` once the connection is over (or the session closed) and every update was taken.
    ///
    /// [`Error::UpdatesDropped`](crate::Error::UpdatesDropped) stands where updates were dropped because the session's
    /// budget was full (see [`ClientOptions::with_session_update_budget`](super::ClientOptions::with_session_update_budget)); the stream goes on
    /// after it.
    /// [`Error::InvalidUpdate`](crate::Error::InvalidUpdate) carries an update that does not decode, raw.
    pub async fn next_update(&self) -> Option<Result<SessionUpdate>> {
        let entry = self.shared.updates.pop().await?;
        Some(entry.map(|notification| notification.update))
    }

    /// An update that already arrived, without waiting.
    pub fn try_next_update(&self) -> Option<Result<SessionUpdate>> {
        match self.shared.updates.try_pop() {
            Popped::Entry(entry) => Some(entry.map(|notification| notification.update)),
            Popped::Empty | Popped::Closed => None,
        }
    }

    /// How many bytes of updates wait in this session for the application (see
    /// [`ClientOptions::with_session_update_budget`](super::ClientOptions::with_session_update_budget)).
    pub fn buffered_update_bytes(&self) -> usize {
        self.shared.updates.bytes()
    }

    /// Closes the session (needs `sessionCapabilities.close`) and releases its terminals; its
    /// subagents are forgotten with it (their streams end once what waits is taken).
    pub async fn close(&self) -> Result<()> {
        subagents::check_method(&self.shared, "session/close")?;
        self.agent
            .request(&CloseSessionRequest::new(self.shared.id.clone()))
            .await?;
        self.agent.forget_session(&self.shared.id);
        Ok(())
    }
}

type ResponseFuture = Pin<Box<dyn Future<Output = Result<PromptResponse>> + Send>>;

/// A running prompt turn: [`next`](PromptTurn::next) yields its updates in order, then
/// [`end`](PromptTurn::end) gives the stop reason.
///
/// Reading the updates is optional: the connection never waits for them. A session keeps
/// what is not read up to its budget ([`ClientOptions::with_session_update_budget`](super::ClientOptions::with_session_update_budget)) and
/// records what it had to drop, and `end` skips what is left.
///
/// Dropping it before the end does not cancel the turn (use [`Session::cancel`](super::Session::cancel)); the turn's
/// remaining updates stay in the session ([`Session::next_update`](super::Session::next_update)).
pub struct PromptTurn {
    pub(super) session: Session,
    pub(super) response: Option<ResponseFuture>,
    end: Option<Result<PromptResponse>>,
}

impl PromptTurn {
    /// The session of this turn.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The next update of the turn, or `None` once the turn has ended and every update sent
    /// before the end was returned.
    ///
    /// [`Error::UpdatesDropped`](crate::Error::UpdatesDropped) stands where updates were dropped because the session's
    /// budget was full; the turn goes on after it.
    /// [`Error::InvalidUpdate`](crate::Error::InvalidUpdate) carries, as the agent sent it, an update that does not decode
    /// (for example a `null` where a number belongs); the turn goes on after it too.
    pub async fn next(&mut self) -> Option<Result<SessionUpdate>> {
        let updates = &self.session.shared.updates;
        if let Popped::Entry(entry) = updates.try_pop() {
            return Some(entry.map(|notification| notification.update));
        }
        let response = self.response.as_mut()?;
        enum Next {
            Update(Option<Result<Box<SessionNotification>>>),
            End(Result<PromptResponse>),
        }
        let next = futures_lite::future::or(async { Next::Update(updates.pop().await) }, async {
            Next::End(response.as_mut().await)
        })
        .await;
        let entry = match next {
            Next::Update(Some(entry)) => entry,
            Next::Update(None) => {
                // The connection is over and every update was taken: the response resolves
                // too (with the reason the connection ended if it never came).
                let end = response.as_mut().await;
                self.finish(end);
                return None;
            }
            Next::End(end) => {
                self.finish(end);
                // Every update sent before the response is already queued: the connection
                // hands notifications over before any later response.
                match self.session.shared.updates.try_pop() {
                    Popped::Entry(entry) => entry,
                    Popped::Empty | Popped::Closed => return None,
                }
            }
        };
        Some(entry.map(|notification| notification.update))
    }

    /// A turn whose response came with the first poll: free the session at once.
    fn ended(self) -> Self {
        self.session
            .shared
            .turn_active
            .store(false, Ordering::Release);
        self
    }

    pub(super) fn finish(&mut self, end: Result<PromptResponse>) {
        self.response = None;
        self.session
            .shared
            .turn_active
            .store(false, Ordering::Release);
        self.end = Some(end);
    }

    /// Waits for the end of the turn and returns its response, skipping the updates not yet
    /// taken with [`next`](Self::next) (those of this turn, and any left from before it): the
    /// caller asked for the outcome, not the stream. Tool call states and modes still follow
    /// them ([`Session::tool_call`](super::Session::tool_call)). To keep the updates, read them with `next` first, or drop
    /// the turn instead (they then stay for [`Session::next_update`](super::Session::next_update)).
    pub async fn end(mut self) -> Result<PromptResponse> {
        while self.next().await.is_some() {}
        self.end.take().expect("the turn has ended")
    }
}

impl Drop for PromptTurn {
    fn drop(&mut self) {
        if let Some(response) = self.response.take() {
            // Keep the request alive (dropping it would cancel the turn at the agent) and free
            // the session for the next turn when it ends.
            let shared = self.session.shared.clone();
            smol::spawn(async move {
                let _ = response.await;
                shared.turn_active.store(false, Ordering::Release);
            })
            .detach();
        }
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.shared.id)
            .field("cwd", &self.shared.cwd)
            .field(
                "turn_active",
                &self.shared.turn_active.load(Ordering::Relaxed),
            )
            .finish()
    }
}

impl std::fmt::Debug for PromptTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptTurn")
            .field("session", &self.session.shared.id)
            .field("ended", &self.response.is_none())
            .finish()
    }
}
