//! [`AgentHandle`]: the client's handle on the agent, for the calls that concern the
//! connection. The calls that open a [`Session`](super::Session) are in `session.rs`.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use acp_jsonrpc::ConnectionHandle;
use acp_types::*;
use serde_json::value::RawValue;

use super::dropped::{DroppedUpdates, UnopenedUpdate};
use super::state::ClientState;
use super::subagents;
use crate::error::{Error, Result};
use crate::process::ExitStatus;
use crate::rules;

/// The client's handle on the agent. Cheap to clone, `Send` and `Sync`.
#[derive(Clone)]
pub struct AgentHandle {
    pub(super) rpc: ConnectionHandle,
    pub(super) state: Arc<ClientState>,
}

impl AgentHandle {
    /// Sends `initialize` with the options' capabilities. Fails with
    /// [`Error::UnsupportedProtocolVersion`](crate::Error::UnsupportedProtocolVersion) (and closes the connection) when the agent
    /// answers a version this runtime does not speak.
    pub async fn initialize(&self) -> Result<InitializeResponse> {
        let mut request = InitializeRequest::new(ProtocolVersion::LATEST);
        request.client_capabilities = self.state.options.capabilities.clone();
        request.client_info = self.state.options.info.clone();
        self.initialize_with(request).await
    }

    /// Sends this `initialize` request (for a client that sets every field itself).
    pub async fn initialize_with(&self, request: InitializeRequest) -> Result<InitializeResponse> {
        let response: InitializeResponse = self.call(&request).await?;
        if let Err(error) = rules::supported_version(response.protocol_version) {
            self.rpc.close();
            return Err(error);
        }
        *self.state.agent.lock().unwrap() = Some(response.clone());
        Ok(response)
    }

    /// The agent's `initialize` answer, once received.
    pub fn agent_info(&self) -> Option<InitializeResponse> {
        self.state.agent.lock().unwrap().clone()
    }

    /// The agent's capabilities, once `initialize` completed.
    pub fn capabilities(&self) -> Option<AgentCapabilities> {
        self.state
            .agent
            .lock()
            .unwrap()
            .as_ref()
            .map(|r| r.agent_capabilities.clone())
    }

    /// How many bytes of updates wait for the application, over every session and the ids
    /// not opened yet: never more than the budgets of
    /// [`ClientOptions::with_session_update_budget`](super::ClientOptions::with_session_update_budget) (per session, plus one larger update)
    /// and [`ClientOptions::with_unopened_update_budget`](super::ClientOptions::with_unopened_update_budget).
    pub fn buffered_update_bytes(&self) -> usize {
        let routes = self.state.routes.lock().unwrap();
        routes.early_bytes()
            + routes
                .known()
                .map(|(_, session)| session.updates.bytes())
                .sum::<usize>()
    }

    /// The underlying JSON-RPC connection.
    pub fn connection(&self) -> &ConnectionHandle {
        &self.rpc
    }

    /// Closes the connection: pending calls fail, the agent sees end of input.
    pub fn close(&self) {
        self.rpc.close();
    }

    /// Authenticates with one of the agent's advertised methods.
    pub async fn authenticate(
        &self,
        method_id: impl Into<AuthMethodId>,
    ) -> Result<AuthenticateResponse> {
        let method_id = method_id.into();
        let advertised = self.initialized("authenticate")?.auth_methods;
        // A method of a type this schema does not know (codex-acp's `env_var`, say) is
        // accepted by its id: forward compatibility applies to our own checks too. A
        // `terminal` method is run as a command by the client, never passed to `authenticate`.
        let advertised = advertised.iter().find_map(|m| match m {
            AuthMethod::Agent(a) => (a.id == method_id).then_some(true),
            AuthMethod::Terminal(t) => (t.id == method_id).then_some(false),
            AuthMethod::Unknown(raw) => (raw.get("id").and_then(|id| id.as_str())
                == Some(method_id.as_str()))
            .then_some(true),
            _ => None,
        });
        match advertised {
            Some(true) => {}
            Some(false) => {
                return Err(Error::Invalid(format!(
                    "the auth method `{method_id}` is a terminal method: run its command instead of calling `authenticate`"
                )));
            }
            None => {
                return Err(Error::Invalid(format!(
                    "the agent did not advertise the auth method `{method_id}`"
                )));
            }
        }
        self.request(&AuthenticateRequest::new(method_id)).await
    }

    /// Lists the agent's sessions (needs `sessionCapabilities.list`).
    pub async fn list_sessions(
        &self,
        request: ListSessionsRequest,
    ) -> Result<ListSessionsResponse> {
        self.request(&request).await
    }

    /// Lists every session the agent knows (in `cwd` when given), following `nextCursor`
    /// from page to page (needs `sessionCapabilities.list`). An agent that hands out a cursor
    /// it already gave makes this fail instead of loop.
    pub async fn list_all_sessions(&self, cwd: Option<&Path>) -> Result<Vec<SessionInfo>> {
        let mut request = ListSessionsRequest::new();
        request.cwd = cwd.map(|cwd| cwd.to_string_lossy().into_owned());
        let mut sessions = Vec::new();
        let mut seen = std::collections::HashSet::new();
        loop {
            let page = self.request(&request).await?;
            sessions.extend(page.sessions);
            match page.next_cursor {
                None => return Ok(sessions),
                Some(cursor) if !seen.insert(cursor.clone()) => {
                    return Err(Error::Internal(format!(
                        "session/list handed out the cursor `{cursor}` twice"
                    )));
                }
                Some(cursor) => request.cursor = Some(cursor),
            }
        }
    }

    /// Deletes a stored session (needs `sessionCapabilities.delete`).
    pub async fn delete_session(&self, session_id: impl Into<SessionId>) -> Result<()> {
        let id = session_id.into();
        self.request(&DeleteSessionRequest::new(id.clone())).await?;
        self.forget_session(&id);
        Ok(())
    }

    /// Logs out (needs `auth.logout`).
    pub async fn logout(&self) -> Result<()> {
        self.request(&LogoutRequest::new()).await?;
        Ok(())
    }

    /// Calls any agent method, typed, after checking that the agent advertised it.
    pub async fn request<R: Request + ClientToAgent>(&self, params: &R) -> Result<R::Response> {
        self.check_agent_method(R::METHOD)?;
        self.call(params).await
    }

    /// [`request`](Self::request), keeping the answer as the agent sent it beside its typed
    /// form: for the answers that open a session, whose fields a newer (or older) agent may
    /// shape beyond this schema.
    pub(super) async fn request_keeping_answer<R: Request + ClientToAgent>(
        &self,
        params: &R,
    ) -> Result<(R::Response, Box<RawValue>)> {
        self.check_agent_method(R::METHOD)?;
        let answer = match self
            .rpc
            .request_raw(
                R::METHOD,
                Some(
                    &serde_json::value::to_raw_value(params)
                        .map_err(|e| Error::Internal(format!("params do not encode: {e}")))?,
                ),
            )
            .await
        {
            Ok(answer) => answer,
            Err(e) => return Err(self.closed_error(e.into()).await),
        };
        let typed = serde_json::from_str(answer.get()).map_err(Error::Decode)?;
        Ok((typed, answer))
    }

    /// Sends any notification to the agent.
    pub async fn notify<N: Notification + ClientToAgent>(&self, params: &N) -> Result<()> {
        self.initialized(N::METHOD)?;
        match self.rpc.notify(N::METHOD, params).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.closed_error(e.into()).await),
        }
    }

    /// Calls an extension method (its name must start with `_`).
    pub async fn ext_method(&self, method: &str, params: &RawValue) -> Result<Box<RawValue>> {
        rules::extension_method(method).map_err(rules::Breach::refused)?;
        match self.rpc.request_raw(method, Some(params)).await {
            Ok(result) => Ok(result),
            Err(e) => Err(self.closed_error(e.into()).await),
        }
    }

    pub(super) async fn call<R: Request>(&self, params: &R) -> Result<R::Response> {
        match self.rpc.request(R::METHOD, params).await {
            Ok(MethodResult(response)) => Ok(response),
            Err(e) => Err(self.closed_error(e.into()).await),
        }
    }

    /// A closed connection caused by the agent's exit says why. The connection can see the
    /// agent's stdout close a moment before the exit status is known, so wait briefly for it.
    pub(super) async fn closed_error(&self, error: Error) -> Error {
        if !matches!(error, Error::ConnectionClosed) || !self.state.spawned.load(Ordering::Acquire)
        {
            return error;
        }
        let recorded = self.state.exit_recorded.clone();
        futures_lite::future::or(recorded.wait(), async {
            smol::Timer::after(std::time::Duration::from_secs(2)).await;
        })
        .await;
        match &*self.state.exit.lock().unwrap() {
            Some((status, tail)) => Error::AgentExited {
                status: status.clone(),
                stderr_tail: tail.clone(),
            },
            None => error,
        }
    }

    pub(super) fn agent_exited(&self, status: ExitStatus, stderr_tail: String) {
        *self.state.exit.lock().unwrap() = Some((status, stderr_tail));
        self.state.exit_recorded.set();
        self.rpc.close();
    }

    /// Refuses, before anything is sent, a call of a method the agent did not advertise.
    pub(super) fn check_agent_method(&self, method: &str) -> Result<()> {
        let caps = self.initialized(method)?.agent_capabilities;
        rules::agent_method(method, &caps).map_err(rules::Breach::refused)
    }

    pub(super) fn initialized(&self, method: &str) -> Result<InitializeResponse> {
        self.agent_info()
            .ok_or_else(|| Error::NotInitialized(method.to_owned()))
    }

    /// Forgets a session and its subagents (their streams end once what waits is taken) and
    /// releases their terminals.
    pub(super) fn forget_session(&self, id: &SessionId) {
        let session = self.state.routes.lock().unwrap().get(id).cloned();
        match session {
            Some(session) => subagents::forget_tree(&self.state, &session),
            None => {
                if let Some(terminals) = &self.state.options.terminals {
                    terminals.release_session(id.as_str());
                }
            }
        }
    }

    /// Takes the reports of updates the runtime dropped where no session's stream can say
    /// so: updates for session ids this client neither opened nor follows, past the
    /// unopened-session bounds ([`ClientOptions::with_unopened_update_budget`](super::ClientOptions::with_unopened_update_budget)).
    /// Every other drop is met in its session's stream. At most
    /// [`DROP_REPORTS_KEPT`](super::DROP_REPORTS_KEPT) reports wait (one per id and reason,
    /// then merged), so taking them now and then, after each update say, loses nothing.
    ///
    /// ```no_run
    /// # fn show(agent: &acp_runtime::client::AgentHandle) {
    /// for report in agent.take_dropped_updates() {
    ///     eprintln!("[updates dropped] {report}");
    /// }
    /// # }
    /// ```
    pub fn take_dropped_updates(&self) -> Vec<DroppedUpdates> {
        self.state.dropped.take()
    }

    /// Takes the updates kept for session ids this client neither opened nor follows, in
    /// the order they arrived: what an agent sent for a session before answering the call
    /// that opens it (taking them means that session will not get them), or under an id it
    /// never opened nor announced. Up to
    /// [`ClientOptions::with_unopened_update_budget`](super::ClientOptions::with_unopened_update_budget)
    /// (1 MiB, 16 ids) wait; an application that opens no more sessions shows them with this.
    ///
    /// ```no_run
    /// # fn show(agent: &acp_runtime::client::AgentHandle) {
    /// for unopened in agent.take_unopened_updates() {
    ///     eprintln!("[session {}, not opened] {:?}", unopened.session_id, unopened.update);
    /// }
    /// # }
    /// ```
    pub fn take_unopened_updates(&self) -> Vec<UnopenedUpdate> {
        let taken = self.state.routes.lock().unwrap().take_early();
        taken
            .into_iter()
            .map(|(session_id, update)| UnopenedUpdate {
                session_id,
                update: update.map(|notification| notification.update),
            })
            .collect()
    }
}

impl std::fmt::Debug for AgentHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentHandle")
            .field("initialized", &self.state.agent.lock().unwrap().is_some())
            .field("closed", &self.rpc.is_closed())
            .finish()
    }
}
