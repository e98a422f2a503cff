//! The session lifecycle methods a client may call when advertised: `session/load`,
//! `session/list`, `session/resume`, `session/close` and `session/delete`, each with the bugs
//! that get it wrong.

use serde_json::{Value, json};

use super::{Agent, error, no_such_session, reply, session_id, update};

impl Agent {
    /// Why a `systemPrompt` on a session request is refused: this agent advertises `{}`,
    /// append only (`system-prompt-any-mode` takes any mode, `system-prompt-refused` none).
    pub(super) fn system_prompt_refusal(&self, params: &Value) -> Option<String> {
        let prompt = params.get("systemPrompt").filter(|p| !p.is_null())?;
        if self.bug("system-prompt-refused") {
            return Some("system prompts are not taken today".to_owned());
        }
        match prompt.get("mode").and_then(Value::as_str) {
            Some("append") => None,
            _ if self.bug("system-prompt-any-mode") => None,
            mode => Some(format!(
                "Invalid params: system prompt mode {mode:?} is not supported"
            )),
        }
    }

    pub(super) fn list_sessions(&mut self, id: &Value, params: &Value) {
        let filter = params.get("cwd").and_then(Value::as_str);
        let mut ids: Vec<&String> = self.sessions.keys().collect();
        ids.sort();
        let sessions: Vec<Value> = ids
            .into_iter()
            .map(|sid| (sid, &self.sessions[sid]))
            .filter(|(_, s)| !s.deleted || self.bug("delete-keeps-listing"))
            .filter(|(_, s)| self.bug("list-ignores-cwd") || filter.is_none_or(|cwd| s.cwd == cwd))
            .map(|(sid, s)| json!({ "sessionId": sid, "cwd": s.cwd }))
            .collect();
        reply(id, json!({ "sessions": sessions }));
    }

    pub(super) fn resume_session(&mut self, id: &Value, params: &Value) {
        let session = session_id(params).to_owned();
        let Some(stored) = self.sessions.get(&session).filter(|s| !s.deleted) else {
            return no_such_session(id);
        };
        if self.bug("resume-replays") {
            for entry in &stored.history {
                update(&session, entry.clone());
            }
        }
        reply(id, json!({}));
    }

    pub(super) fn close_session(&mut self, id: &Value, params: &Value) {
        let session = session_id(params);
        if !self.sessions.contains_key(session) {
            return no_such_session(id);
        }
        if self.bug("close-fails") {
            return error(id, -32603, "sessions cannot be closed");
        }
        if self.turn.as_ref().is_some_and(|t| t.session == session) && !self.bug("close-keeps-turn")
        {
            let turn = self.turn.take().expect("checked");
            self.pending.clear();
            reply(&turn.prompt_id, json!({ "stopReason": "cancelled" }));
        }
        self.sessions.remove(session);
        reply(id, json!({}));
    }

    pub(super) fn delete_session(&mut self, id: &Value, params: &Value) {
        let session = session_id(params);
        let refuse_unknown = self.bug("delete-unknown-error");
        match self.sessions.get_mut(session) {
            Some(stored) => stored.deleted = true,
            None if refuse_unknown => {
                return no_such_session(id);
            }
            None => {}
        }
        reply(id, json!({}));
    }

    pub(super) fn load_session(&mut self, id: &Value, params: &Value) {
        let session = session_id(params).to_owned();
        let Some(stored) = self.sessions.get(&session) else {
            return no_such_session(id);
        };
        let history = stored.history.clone();
        let replay = || {
            for entry in &history {
                update(&session, entry.clone());
            }
        };
        if self.bug("no-replay") {
            reply(id, json!({}));
        } else if self.bug("replay-after-load") {
            reply(id, json!({}));
            replay();
        } else {
            replay();
            reply(id, json!({}));
        }
    }
}
