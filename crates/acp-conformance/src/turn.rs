//! Driving one prompt turn on the raw wire, optionally cancelling it at a chosen moment.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::client::RpcError;
use crate::wire::{Conn, Event, Events, is_turn_content, received, sent};

/// When, during the turn, the checker acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// Never: the turn runs to its end.
    Never,
    /// At the first `session/update` or agent request of the turn.
    FirstActivity,
    /// When the agent asks for permission (held until the action has been sent).
    Permission,
}

/// What the checker does at the trigger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Sends `session/cancel`; from then on permission requests are answered `cancelled`.
    SessionCancel,
    /// Sends `$/cancel_request` naming the prompt request.
    CancelRequest,
    /// Sends a `session/close` request for the session. Permission requests are still
    /// answered as usual, so that only closing can end the turn as cancelled.
    CloseSession,
}

/// What happened during a turn.
#[derive(Clone, Debug)]
pub(crate) struct TurnResult {
    /// The `session/prompt` request as sent.
    pub sent: String,
    /// Its response, unless none came in time.
    pub response: Option<Result<Value, RpcError>>,
    /// The response line.
    pub response_raw: Option<String>,
    /// Everything the agent sent before the response.
    pub before: Events,
    /// Everything it sent during the grace period after the response.
    pub after: Events,
    /// The line sent at the trigger, if the trigger came.
    pub acted: Option<String>,
    /// How many events of `before` had been kept when the checker acted.
    pub acted_at: usize,
    /// The id of the request sent at the trigger, when the action is a request.
    pub acted_id: Option<Value>,
    /// Evidence of the trigger: what the agent sent, the action, our answers after it.
    pub trail: Vec<String>,
    /// Whether the agent waited, after the action was sent, for an answer of ours before it
    /// responded: then it must have read the action before finishing its turn.
    pub witnessed: bool,
    /// Whether the agent's output ended during the turn.
    pub eof: bool,
    /// Why the checker ended the agent during the turn (its time limit, a flood), if it did.
    pub ended: Option<String>,
}

impl TurnResult {
    /// The stop reason of a successful response.
    pub fn stop_reason(&self) -> Option<&str> {
        match &self.response {
            Some(Ok(result)) => result.get("stopReason").and_then(Value::as_str),
            _ => None,
        }
    }

    /// Whether the turn ended with a valid stop reason.
    pub fn completed(&self) -> bool {
        self.stop_reason().is_some_and(is_stop_reason)
    }

    /// Turn-content updates for `session` that arrived after the response.
    pub fn late_updates(&self, session: &str) -> Vec<String> {
        crate::wire::received_lines(
            self.after
                .iter()
                .filter(|e| {
                    e.session_update()
                        .is_some_and(|(s, kind)| s == session && is_turn_content(kind))
                })
                .filter_map(Event::raw),
        )
    }

    /// Answers to the action (a notification): responses after it with an id the checker
    /// never sent, and response-shaped lines without an id, with whether each came before
    /// the turn's response.
    pub fn answers_to_action(&self) -> Vec<(bool, &Event)> {
        if self.acted.is_none() {
            return Vec::new();
        }
        let is_answer = |e: &&Event| {
            matches!(
                e,
                Event::Response { ours: false, .. } | Event::Idless { .. }
            )
        };
        self.before
            .iter()
            .skip(self.acted_at)
            .filter(is_answer)
            .map(|e| (true, e))
            .chain(self.after.iter().filter(is_answer).map(|e| (false, e)))
            .collect()
    }

    /// The response to the request sent at the trigger, with its line, if it came.
    pub fn acted_response(&self) -> Option<(&Result<Value, RpcError>, &str)> {
        let acted_id = self.acted_id.as_ref()?;
        self.before.iter().chain(&self.after).find_map(|e| match e {
            Event::Response {
                id, result, raw, ..
            } if id == acted_id => Some((result, raw.as_str())),
            _ => None,
        })
    }

    /// The agent's requests during the turn and after it: (method, raw line).
    pub fn agent_requests(&self) -> impl Iterator<Item = (&str, &str)> {
        self.before
            .iter()
            .chain(&self.after)
            .filter_map(|e| match e {
                Event::Request { method, raw, .. } => Some((method.as_str(), raw.as_str())),
                _ => None,
            })
    }

    /// Evidence: the prompt, the action, and the response (or its absence).
    pub fn evidence(&self) -> Vec<String> {
        let mut e = vec![crate::wire::sent(&self.sent)];
        e.extend(self.trail.iter().cloned());
        match (&self.response_raw, &self.ended) {
            (Some(raw), _) => e.push(crate::wire::received(raw)),
            (None, Some(why)) => e.push(format!("(no response: {why})")),
            (None, None) if self.eof => {
                e.push("(the agent's output ended before a response)".to_owned())
            }
            (None, None) => e.push("(no response in time)".to_owned()),
        }
        e.extend(self.before.note());
        e.extend(
            self.after
                .note()
                .map(|n| format!("after the response: {n}")),
        );
        e
    }

    /// A short description of how the turn ended, for reasons.
    pub fn outcome(&self) -> String {
        match &self.response {
            Some(Ok(result)) => match result.get("stopReason") {
                Some(reason) => format!("stop reason {reason}"),
                None => format!("a result without stopReason: {result}"),
            },
            Some(Err(error)) => format!("{error}"),
            None if self.ended.is_some() => {
                format!("no response: {}", self.ended.as_deref().unwrap_or_default())
            }
            None if self.eof => "no response (the agent's output ended)".to_owned(),
            None => "no response in time".to_owned(),
        }
    }
}

/// The five stop reasons of protocol version 1.
pub(crate) fn is_stop_reason(reason: &str) -> bool {
    matches!(
        reason,
        "end_turn" | "max_tokens" | "max_turn_requests" | "refusal" | "cancelled"
    )
}

/// A prompt of one text block.
pub(crate) fn text_prompt(text: &str) -> Value {
    json!([{ "type": "text", "text": text }])
}

/// Sends `session/prompt` with `prompt` and follows the turn to its response (and a grace
/// period after it), answering the agent's requests as the fake client does, and performing
/// `action` at `trigger`.
pub(crate) fn run_turn(
    conn: &mut Conn,
    session: &str,
    prompt: Value,
    trigger: Trigger,
    action: Action,
    timeout: Duration,
) -> TurnResult {
    let (id, prompt_line) = conn.request(
        "session/prompt",
        json!({ "sessionId": session, "prompt": prompt }),
    );
    let deadline = Instant::now() + timeout;
    let mut result = TurnResult {
        sent: prompt_line,
        response: None,
        response_raw: None,
        before: Events::default(),
        after: Events::default(),
        acted: None,
        acted_at: 0,
        acted_id: None,
        trail: Vec::new(),
        witnessed: false,
        eof: false,
        ended: None,
    };
    let act = |conn: &mut Conn, acted_id: &mut Option<Value>| match action {
        Action::SessionCancel => conn.notify("session/cancel", json!({ "sessionId": session })),
        Action::CancelRequest => conn.notify("$/cancel_request", json!({ "requestId": id })),
        Action::CloseSession => {
            let (close_id, line) = conn.request("session/close", json!({ "sessionId": session }));
            *acted_id = Some(close_id);
            line
        }
    };
    loop {
        let event = conn.next_event(deadline);
        match &event {
            Event::Response {
                id: rid,
                result: r,
                raw,
                ..
            } if *rid == id => {
                result.response = Some(r.clone());
                result.response_raw = Some(raw.clone());
                result.before.push(event);
                break;
            }
            Event::Request {
                id: rid,
                method,
                params,
                raw,
            } => {
                let fire = result.acted.is_none()
                    && match trigger {
                        Trigger::Never => false,
                        Trigger::FirstActivity => true,
                        Trigger::Permission => method == "session/request_permission",
                    };
                if fire {
                    result.acted_at = result.before.len();
                    let line = act(conn, &mut result.acted_id);
                    result.trail.push(received(raw));
                    result.trail.push(sent(&line));
                    result.acted = Some(line);
                }
                if result.acted.is_some() {
                    result.witnessed = true;
                    let answer = if action == Action::SessionCancel
                        && method == "session/request_permission"
                    {
                        conn.respond(rid, Ok(json!({ "outcome": { "outcome": "cancelled" } })))
                    } else {
                        conn.answer(rid, method, params)
                    };
                    if result.trail.len() < 8 {
                        if !fire {
                            result.trail.push(received(raw));
                        }
                        result.trail.push(sent(&answer));
                    }
                } else {
                    conn.answer(rid, method, params);
                }
            }
            Event::Notification { raw, .. }
                if trigger == Trigger::FirstActivity
                    && result.acted.is_none()
                    && event.session_update().is_some() =>
            {
                result.acted_at = result.before.len();
                let line = act(conn, &mut result.acted_id);
                result.trail.push(received(raw));
                result.trail.push(sent(&line));
                result.acted = Some(line);
            }
            Event::Eof => {
                result.eof = true;
                break;
            }
            Event::Timeout => {
                conn.expire("the end of the turn", timeout);
                break;
            }
            _ => {}
        }
        result.before.push(event);
    }
    result.ended = conn.ended().map(str::to_owned);
    if result.response.is_some() {
        if action == Action::SessionCancel && result.acted.is_some() {
            conn.client.permission = crate::client::Permission::Cancelled;
        }
        result.after = conn.listen(conn.grace);
        conn.client.permission = crate::client::Permission::Allow;
    }
    result
}
