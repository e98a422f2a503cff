//! The agent's side of the seed-era model selection (feature `unstable-models`): offering
//! `models` in a session's answer, and `session/set_model`.
//!
//! The current schema's answers have no `models` member, so the agent does not put it there:
//! it offers the session's models to the runtime ([`ClientHandle::offer_models`] from
//! `new_session`, [`SessionClient::offer_models`] from `load_session` and the others), and the
//! runtime adds them to the answer it sends, records them in the session's registry entry, checks
//! every `session/set_model` against them before calling [`Agent::set_model`], and records the
//! new current model when that succeeds.

use std::collections::HashMap;
use std::sync::Mutex;

use acp_types::SessionId;
use acp_types::models::{ModelId, SessionModelState, SetSessionModelRequest};
use serde_json::value::RawValue;

use super::dispatch::AgentDispatch;
use super::handler::Agent;
use super::session::{ClientHandle, SessionClient};
use super::state::AgentState;
use crate::error::{Error, Result};
use crate::reply::{Reply, raw};
use crate::rules;

/// The method this module answers, which the current schema's `ClientRequest` does not know.
pub(super) const METHOD: &str = "session/set_model";

/// The models offered for each session, by id (kept beside the registry: `new_session` offers
/// them before its session is registered).
pub(super) type Offered = Mutex<HashMap<SessionId, SessionModelState>>;

impl ClientHandle {
    /// Offers `models` for the session `session_id` (feature `unstable-models`): call it from
    /// [`Agent::new_session`] with the id it is about to answer. The runtime adds them to the
    /// session's answer as the seed-era `models` member and checks `session/set_model` against
    /// them. Offering again replaces them (as a later `session/load` answer would).
    pub fn offer_models(&self, session_id: impl Into<SessionId>, models: SessionModelState) {
        self.state
            .models
            .lock()
            .unwrap()
            .insert(session_id.into(), models);
    }
}

impl SessionClient {
    /// Offers `models` for this session (see [`ClientHandle::offer_models`]): from
    /// `load_session`, `resume_session` or `fork_session` (for the new session's id, through
    /// [`client`](Self::client)).
    pub fn offer_models(&self, models: SessionModelState) {
        self.client.offer_models(self.id.clone(), models);
    }

    /// The models offered for this session, with the current one as set since.
    pub fn models(&self) -> Option<SessionModelState> {
        self.client
            .state
            .models
            .lock()
            .unwrap()
            .get(&self.id)
            .cloned()
    }

    /// The session's current model, if it offered models.
    pub fn current_model_id(&self) -> Option<ModelId> {
        self.models().map(|m| m.current_model_id)
    }
}

/// `response` with the models offered for `id` as its `models` member; unchanged (but as a
/// JSON value) when none were offered.
pub(super) fn with_models<T: serde::Serialize>(
    state: &AgentState,
    id: &SessionId,
    response: T,
) -> Result<serde_json::Value> {
    let offered = state.models.lock().unwrap().get(id).cloned();
    let mut value = serde_json::to_value(&response)
        .map_err(|e| Error::internal(format!("the answer does not encode: {e}")))?;
    if let (Some(models), Some(object)) = (offered, value.as_object_mut()) {
        let models = serde_json::to_value(models)
            .map_err(|e| Error::internal(format!("the models do not encode: {e}")))?;
        object.insert("models".to_owned(), models);
    }
    Ok(value)
}

impl<A: Agent> AgentDispatch<A> {
    /// `session/set_model`: decoded here (the current schema does not know it), checked against
    /// the models the session offered, then handed to the agent.
    pub(super) async fn set_model(&self, params: Option<&RawValue>) -> Result<Reply> {
        let text = params.map_or("{}", RawValue::get);
        let request: SetSessionModelRequest = serde_json::from_str(text)
            .map_err(|e| Error::invalid_params(format!("invalid params for `{METHOD}`: {e}")))?;
        let id = request.session_id.clone();
        // The session must be known; its models are the ones it offered.
        self.state.with_session(&id, |_| Ok(()))?;
        let offered = self.state.models.lock().unwrap().get(&id).cloned();
        rules::model(&id, offered.as_ref(), &request.model_id).map_err(|b| b.answer("agent"))?;
        let model = request.model_id.clone();
        let response = self.agent.set_model(request, self.session(&id)).await?;
        if let Some(models) = self.state.models.lock().unwrap().get_mut(&id) {
            models.current_model_id = model;
        }
        raw(response)
    }
}
