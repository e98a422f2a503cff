//! The client's side of the seed-era model selection (feature `unstable-models`): the
//! `models` a session's answer advertised, and `session/set_model`. Types from
//! [`acp_types::models`]; see the crate docs, "Models and config options", for how this maps
//! onto the config option of category `model` that replaced it.

use acp_types::models::{ModelId, SessionModelState, SessionModels, SetSessionModelRequest};

use super::session::Session;
use crate::error::Result;
use crate::rules;

impl Session {
    /// The models the session advertised (`models` in the answer that opened it, as agents of
    /// the seed-era schema send it), with the current one as set since with
    /// [`set_model`](Self::set_model). `None` when the answer had no `models` (or they do not
    /// decode).
    ///
    /// An agent that offers a config option of category `model` as well keeps both in step;
    /// prefer the config option ([`config_options`](Self::config_options)) when it is there.
    pub fn models(&self) -> Option<SessionModelState> {
        let decoded = {
            let answer = self.shared.answer.lock().unwrap();
            serde_json::from_str::<SessionModels>(answer.as_ref()?.get()).ok()?
        };
        let mut models = decoded.models?;
        if let Some(current) = self.shared.current_model.lock().unwrap().clone() {
            models.current_model_id = current;
        }
        Some(models)
    }

    /// Switches the session's model (`session/set_model`); the model must be one the session
    /// advertised in [`models`](Self::models), else this fails with
    /// [`Error::Invalid`](crate::Error::Invalid) and sends nothing. Records it as current.
    pub async fn set_model(&self, model_id: impl Into<ModelId>) -> Result<()> {
        let model = model_id.into();
        rules::model(self.id(), self.models().as_ref(), &model).map_err(rules::Breach::refused)?;
        self.agent
            .request(&SetSessionModelRequest::new(
                model.clone(),
                self.id().clone(),
            ))
            .await?;
        *self.shared.current_model.lock().unwrap() = Some(model);
        Ok(())
    }
}
