//! The agent's side of the seed-era model selection (feature `unstable-models`): offering
//! `models` in a session's answer, and `session/set_model`.
//!
//! The current schema's answers have no `models` member, so the agent does not put it there:
//! it offers the session's models to the runtime ([`ClientHandle::offer_models`] from
//! `new_session`, [`SessionClient::offer_models`] from `load_session` and the others), and the
//! runtime adds them to the answer it sends, records them in the session's registry entry, checks
//! every `session/set_model` against them before calling [`Agent::set_model`](super::Agent::set_model), and records the
//! new current model when that succeeds.

use acp_types::SessionId;
use acp_types::models::{ModelId, SessionModelState};

use super::session::{ClientHandle, SessionClient};
use super::state::AgentState;
use crate::error::{Error, Result};

/// The method this module answers, which the current schema's `ClientRequest` does not know.
pub(super) const METHOD: &str = "session/set_model";

impl ClientHandle {
    /// Offers `models` for the session `session_id` (feature `unstable-models`): call it from
    /// [`Agent::new_session`](super::Agent::new_session) with the id it is about to answer. The runtime adds them to the
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
