//! The routers' rules before the hand-over, one loop for the agent router (`initialize`) and
//! the proxy router (`proxy/initialize`): read lines until that request, answer what comes
//! before it, pick the side, and give the connection's reader back with the first line.

use acp_jsonrpc::{
    ConnectionError, Handoff, LineEvent, LineReader, Message, RequestId, Response, ResponseError,
    strip_byte_order_mark, write_message,
};
use futures_lite::{AsyncBufRead, AsyncWrite};

use super::downgrade;
use crate::rules::{self, ServedVersion as Side};

/// Which sides a router has.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sides {
    pub(super) v1: bool,
    pub(super) v2: bool,
}

/// The method that picks the version on an agent's connection.
pub(super) const INITIALIZE: &str = "initialize";

/// The router's rules before the hand-over, for an agent (`method` is `initialize`) or a proxy
/// (`proxy/initialize`): reads lines until a `method` request that a side of `sides` serves,
/// answering every line before it as [`Router::serve`](super::Router::serve) says, and gives
/// the side with the connection's reader, the first line handed back (rewritten when the
/// version or shape changes). `None` when the peer closed its output first.
pub(super) async fn first_initialize<R, W>(
    reader: R,
    writer: &mut W,
    method: &str,
    sides: Sides,
    max_line_length: usize,
) -> Result<Option<(Side, Handoff<R>)>, ConnectionError>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut lines = LineReader::with_max_line_length(reader, max_line_length);
    let (side, first) = loop {
        let line = match lines.read_line().await.map_err(ConnectionError::Read)? {
            None => return Ok(None),
            // A connection answers nothing to a line it did not keep: its id was not read.
            Some(LineEvent::TooLong { .. }) => continue,
            Some(LineEvent::Line(line)) => strip_byte_order_mark(line).unwrap_or(line),
        };
        if line.is_empty() {
            continue;
        }
        let answer = match Message::from_slice(line) {
            Err(error) => error.reply().cloned(),
            Ok(Message::Notification(_) | Message::Response(_)) => None,
            Ok(Message::Request(request)) if request.method != method => Some(refuse(
                request.id,
                ResponseError::invalid_request(format_args!(
                    "`{}` before `{method}`: the first request must be `{method}`",
                    acp_jsonrpc::excerpt(&request.method)
                )),
            )),
            Ok(Message::Request(request)) => match route(&request, sides) {
                // Unchanged: the line as the peer wrote it.
                Ok((side, None)) => break (side, line.to_vec()),
                Ok((side, Some(rewritten))) => break (side, rewritten),
                Err(error) => Some(refuse(request.id, error)),
            },
        };
        if let Some(answer) = answer {
            write_message(writer, &Message::Response(answer))
                .await
                .map_err(ConnectionError::Write)?;
        }
    };
    let (rest, partial) = lines.into_parts();
    Ok(Some((
        side,
        Handoff::new(vec![first], rest).with_partial(&partial),
    )))
}

fn refuse(id: RequestId, error: ResponseError) -> Response {
    Response {
        id,
        result: Err(error),
    }
}

/// The side for an `initialize` (or `proxy/initialize`: the same params), and the line to hand
/// it when the request must be rewritten for the chosen version (`None`: as sent).
fn route(
    request: &acp_jsonrpc::Request,
    sides: Sides,
) -> Result<(Side, Option<Vec<u8>>), ResponseError> {
    let params = request.params.as_deref().map_or("{}", |p| p.get());
    let requested = downgrade::requested_version(params, &request.method)?;
    let side = rules::select(requested, sides.v1, sides.v2)?;
    let params = match side {
        Side::V2 if requested > 2 => Some(downgrade::with_version(params, 2)?),
        Side::V1 if requested >= 2 => Some(downgrade::to_v1(params)?),
        _ => None,
    };
    let line = params.map(|params| {
        let rewritten = acp_jsonrpc::Request {
            id: request.id.clone(),
            method: request.method.clone(),
            params: Some(params),
        };
        Message::Request(rewritten).to_json().into_bytes()
    });
    Ok((side, line))
}
