//! The two shapes that are nearly all of a v2 turn's `session/update`s, read without serde's
//! visitors: a text chunk
//! `{"sessionId":…,"update":{"sessionUpdate":"agent_message_chunk","messageId":…,"content":{"type":"text","text":…}}}`
//! (or `agent_thought_chunk`, `user_message_chunk`) and a state change
//! `{"sessionId":…,"update":{"sessionUpdate":"state_update","state":"running"}}` (or
//! `requires_action`, or `idle` with a plain `stopReason` or none), members in any order, with
//! any JSON whitespace.
//!
//! v1's `client/text_chunk.rs` is the same idea for v1's chunk, which has no `messageId`; both
//! read through the crate's one `shape_reader`. Through the generated `Deserialize` impls such
//! an update costs a struct visitor per layer and the tagged unions' buffering; this reader
//! builds the value in place.
//!
//! It only ever says yes or "not mine": any other member (`_meta`, `annotations`,
//! `background`, one a newer schema adds), a repeated member, another tag, state, stop reason or
//! content type, or a value of another JSON type returns `None`, and the generic decode, which
//! holds every rule (unknown members, lenient fields, unknown tags, errors), decides. Property
//! tests check that whatever this reader returns is what the generic decode returns.

use acp_types::v2::{
    ContentBlock, ContentChunk, IdleStateUpdate, IdleStateUpdateKind, IdleStateUpdateKindNone,
    MessageId, RequiresActionStateUpdate, RunningStateUpdate, SessionId, SessionUpdate,
    StateUpdate, TextContent, UpdateSessionNotification,
};

use crate::shape_reader::Reader;

/// The update if `params` is exactly one of the two shapes; `None` for anything else.
pub(super) fn decode(params: &str) -> Option<UpdateSessionNotification> {
    let mut reader = Reader::new(params);
    let mut session_id = None;
    let mut update = None;
    reader.object(&["sessionId", "update"], |reader, key| match key {
        0 => reader.string().map(|value| session_id = Some(value)),
        _ => session_update(reader).map(|value| update = Some(value)),
    })?;
    reader.end()?;
    Some(UpdateSessionNotification::new(
        SessionId(session_id?.into_owned()),
        update?,
    ))
}

/// The `sessionUpdate` tags this reader takes, in the order [`session_update`] matches them.
const TAGS: [&str; 4] = [
    "agent_message_chunk",
    "agent_thought_chunk",
    "user_message_chunk",
    "state_update",
];

const STATES: [&str; 3] = ["running", "requires_action", "idle"];

/// The stop reasons without members of their own (`error` carries a message: generic decode).
const STOP_REASONS: [&str; 5] = [
    "end_turn",
    "max_tokens",
    "max_turn_requests",
    "refusal",
    "cancelled",
];

/// The `update` member. A chunk's members and a state's are read in one pass (members come in
/// any order, the tag need not be first), then the tag says which of them must be there.
fn session_update(reader: &mut Reader<'_>) -> Option<SessionUpdate> {
    let mut tag = None;
    let mut message_id = None;
    let mut text = None;
    let mut state = None;
    let mut stop_reason = None;
    reader.object(
        &[
            "sessionUpdate",
            "messageId",
            "content",
            "state",
            "stopReason",
        ],
        |reader, key| match key {
            0 => reader.literal(&TAGS).map(|value| tag = Some(value)),
            1 => reader.string().map(|value| message_id = Some(value)),
            2 => reader.text_block().map(|value| text = Some(value)),
            3 => reader.literal(&STATES).map(|value| state = Some(value)),
            _ => reader
                .literal(&STOP_REASONS)
                .map(|value| stop_reason = Some(value)),
        },
    )?;
    if tag? == 3 {
        if message_id.is_some() || text.is_some() {
            return None;
        }
        return state_update(state?, stop_reason).map(SessionUpdate::StateUpdate);
    }
    if state.is_some() || stop_reason.is_some() {
        return None;
    }
    let chunk = ContentChunk::new(
        MessageId(message_id?.into_owned()),
        ContentBlock::Text(TextContent::new(text?.into_owned())),
    );
    Some(match tag? {
        0 => SessionUpdate::AgentMessageChunk(chunk),
        1 => SessionUpdate::AgentThoughtChunk(chunk),
        _ => SessionUpdate::UserMessageChunk(chunk),
    })
}

/// A `state_update`'s state; a stop reason belongs to `idle` only.
fn state_update(state: usize, stop_reason: Option<usize>) -> Option<StateUpdate> {
    Some(match (state, stop_reason) {
        (0, None) => StateUpdate::Running(RunningStateUpdate::new()),
        (1, None) => StateUpdate::RequiresAction(RequiresActionStateUpdate::new()),
        (2, None) => StateUpdate::Idle(IdleStateUpdate::new(IdleStateUpdateKindNone::new())),
        (2, Some(reason)) => StateUpdate::Idle(IdleStateUpdate::new(match reason {
            0 => IdleStateUpdateKind::EndTurn,
            1 => IdleStateUpdateKind::MaxTokens,
            2 => IdleStateUpdateKind::MaxTurnRequests,
            3 => IdleStateUpdateKind::Refusal,
            _ => IdleStateUpdateKind::Cancelled,
        })),
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
