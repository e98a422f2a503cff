//! The envelope of a notification, a request or a response a router forwards, found without validating
//! what it only copies: the members it routes on (`jsonrpc`, `method`, and the `method` and `params` of a
//! message carried in the params, as `proxy/successor` carries one) are read exactly, every
//! other value is only skipped (a string to its closing quote past its escapes; a container
//! to its matching bracket), and no byte it only copies is checked for UTF-8 or JSON. A hop
//! that forwards such a line unread leaves malformed params to the peer that finally decodes
//! them (docs/limits.md, "What a router forwards unread").
//!
//! It accepts only what the validating scan would read as a plain notification if the params
//! were valid: one object, whitespace around it, the members `jsonrpc` (exactly `"2.0"`),
//! `method` (a string without escapes) and `params`, each once, and no other. Anything else
//! (an `id`, `result` or `error`, another member, an escape in a key) is `None`, and the line
//! is decoded (and answered) as before: a malformed envelope is never forwarded.
//!
//! A response is read the same way ([`response`]): `{"jsonrpc":"2.0","id":N,"result":…}` in
//! that spelling, with `N` a request id of ours (a non-negative integer), its result skipped;
//! and a request ([`request`]): `{"jsonrpc":"2.0","id":N,"method":"…","params":…}`, its id and
//! method read exactly, its params skipped as a notification's are.

mod blocks;
mod known;

use serde_json::value::RawValue;

use super::raw::borrowed_raw;
use super::read::skip_ws;
use super::unchecked::UncheckedJson;
use super::write::short_and_plain;

pub(crate) use known::KnownMethods;

/// What a router needs of a notification line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ForwardScan<'a> {
    pub(crate) method: &'a str,
    /// `None` when absent; `null` kept.
    pub(crate) params: Option<UncheckedJson<'a>>,
    /// The message the params carry, when the usual spelling found it on the way (`None`
    /// says nothing: [`carried_in`] walks the params when asked).
    pub(crate) inner: Option<CarriedMessage<'a>>,
}

/// A message carried in a notification's params (`{"method":…,"params":…}`, as ACP's
/// `proxy/successor` carries one), as the forwarding path finds it: its method read, its
/// params unread ([`RawNotification::carried`](crate::RawNotification::carried)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CarriedMessage<'a> {
    pub(crate) method: &'a str,
    pub(crate) params: Option<UncheckedJson<'a>>,
}

impl<'a> CarriedMessage<'a> {
    /// The carried message's method.
    pub fn method(&self) -> &'a str {
        self.method
    }

    /// The carried message's params, unread; `None` when absent (`null` is kept).
    pub fn params(&self) -> Option<UncheckedJson<'a>> {
        self.params
    }
}

/// The start of a notification as this crate (and most writers) spell one.
const USUAL_HEAD: &[u8] = br#"{"jsonrpc":"2.0","method":""#;

/// Reads `line` as a notification a router may forward unread (see the module docs), or
/// `None` when it is anything else or unusual. Its method (and, in the usual spelling, the
/// carried one) is taken as text from the methods `known` remembers when it is one of them.
pub(crate) fn notification<'a>(line: &'a [u8], known: &'a KnownMethods) -> Option<ForwardScan<'a>> {
    // The usual spelling first: most lines a router forwards are in it, and no request or
    // response is.
    if let Some(found) = usual_notification(line, known) {
        return Some(found);
    }
    // A request or a response as this crate (and most writers) spell one, `id` second: not a
    // notification, known without walking the line (the validating decode reads it next).
    if starts_with_id(line) {
        return None;
    }
    let mut jsonrpc = None;
    let mut method = None;
    let mut params = None;
    let start = skip_ws(line, 0);
    let end = object(line, start, |key, at| {
        let slot = match key {
            b"jsonrpc" => &mut jsonrpc,
            b"method" => &mut method,
            b"params" => &mut params,
            // Not a notification (`id`, `result`, `error`), or a member no message of ours
            // has, whose key would go unchecked: the validating decode reads it.
            _ => return None,
        };
        let end = skip_value(line, at)?;
        slot.replace(&line[at..end]).is_none().then_some(end)
    })?;
    if skip_ws(line, end) != line.len() || jsonrpc != Some(br#""2.0""#.as_slice()) {
        return None;
    }
    Some(ForwardScan {
        method: known.text(plain_bytes(method?)?)?,
        params: params.map(UncheckedJson::on_line),
        inner: None,
    })
}

/// The usual spelling, `{"jsonrpc":"2.0","method":"…","params":…}` with no space, read
/// without walking its members one by one: what the general walk reads of it, or `None` (the
/// walk then decides) for any other spelling. Params spelled `{"method":"…","params":…}` give
/// their carried message in the same pass.
#[inline(always)]
fn usual_notification<'a>(line: &'a [u8], known: &'a KnownMethods) -> Option<ForwardScan<'a>> {
    let (method, params_at) = usual_string_then_params(line, USUAL_HEAD)?;
    usual_params(line, USUAL_HEAD.len(), method, params_at, known)
}

/// The rest of a message in the usual spelling once its method (quotes included, not yet
/// read, its text starting at `method_at`) and where its params start are known: the params
/// up to the closing `}` that ends the line, and a message they carry when spelled
/// `{"method":"…","params":…}`. The params keep the line's span from the method on, so that
/// a hop forwarding them under the same method copies that span whole.
#[inline(always)]
fn usual_params<'a>(
    line: &'a [u8],
    method_at: usize,
    method: &'a [u8],
    params_at: usize,
    known: &'a KnownMethods,
) -> Option<ForwardScan<'a>> {
    let method = plain_bytes(method)?;
    let (end, inner) = match usual_carried(line, params_at) {
        Some((end, carried_method, params)) => {
            let carried = CarriedMessage {
                method: known.text(plain_bytes(carried_method)?)?,
                params: Some(params),
            };
            (end, Some(carried))
        }
        None => (skip_value(line, params_at)?, None),
    };
    let method = known.text(method)?;
    if line.get(end..)? != b"}" {
        return None;
    }
    Some(ForwardScan {
        method,
        params: Some(UncheckedJson::on_line_after_method(
            &line[method_at..end],
            method.len(),
        )),
        inner,
    })
}

/// After `head` (which ends with a string's opening quote) at the start of `bytes`: that
/// string, quotes included, when no backslash comes before its closing quote and
/// `,"params":` follows it, and where the params start.
#[inline(always)]
fn usual_string_then_params<'a>(bytes: &'a [u8], head: &[u8]) -> Option<(&'a [u8], usize)> {
    const PARAMS: &[u8] = br#","params":"#;
    let rest = bytes.strip_prefix(head)?;
    let close = head.len() + next_quote_or_backslash(rest, 0)?;
    if bytes[close] != b'"' || bytes.get(close + 1..close + 1 + PARAMS.len())? != PARAMS {
        return None;
    }
    Some((&bytes[head.len() - 1..close + 1], close + 1 + PARAMS.len()))
}

/// The params at `at` spelled `{"method":"…","params":…}`: past them, the carried method as
/// written (quotes included, read by the caller) and the carried params, as [`carried`] finds
/// them.
#[inline(always)]
fn usual_carried(line: &[u8], at: usize) -> Option<(usize, &[u8], UncheckedJson<'_>)> {
    const HEAD: &[u8] = br#"{"method":""#;
    let object = line.get(at..)?;
    let (method, params_at) = usual_string_then_params(object, HEAD)?;
    let end = skip_value(object, params_at)?;
    if object.get(end) != Some(&b'}') {
        return None;
    }
    // The method between its quotes, then the params: read as plain by the caller, or the
    // whole line is declined.
    let params = UncheckedJson::on_line_after_method(&object[HEAD.len()..end], method.len() - 2);
    Some((at + end + 1, method, params))
}

/// The message carried in a forwarded notification's params, found when asked
/// ([`RawNotification::carried`](crate::RawNotification::carried)): only a router that opens
/// envelopes walks the params' members, any other notification is skipped whole.
pub(crate) fn carried_in(params: UncheckedJson<'_>) -> Option<CarriedMessage<'_>> {
    let bytes = params.as_bytes();
    let (end, carried) = carried(bytes, 0)?;
    (end == bytes.len()).then_some(carried?)
}

/// The message carried in `params` (`{"method":…,"params":…}`, as ACP's `proxy/successor`
/// carries one): its method and its params (`None` when absent; `null` is kept), found by the
/// forwarding path's non-validating walk, which is exact here because a `RawValue` is valid
/// JSON already (the line's decode validated it; it is not read a second time).
///
/// `None` wherever serde_json could read the object otherwise than this walk or must word an
/// error: not an object, no `method`, a `method` with an escape or not a string, a member
/// twice, an escaped key. Its other members are skipped, as serde_json ignores them.
///
/// ```
/// use acp_jsonrpc::json::carried_message;
/// use serde_json::value::RawValue;
///
/// let params = RawValue::from_string(
///     r#"{"method":"session/prompt","params":{"prompt":[]},"_meta":{}}"#.to_owned(),
/// )
/// .unwrap();
/// let (method, inner) = carried_message(&params).unwrap();
/// assert_eq!((method, inner.unwrap().get()), ("session/prompt", r#"{"prompt":[]}"#));
/// ```
pub fn carried_message(params: &RawValue) -> Option<(&str, Option<&RawValue>)> {
    let text = params.get();
    let bytes = text.as_bytes();
    let start = skip_ws(bytes, 0);
    let (end, carried) = carried(bytes, start)?;
    if skip_ws(bytes, end) != bytes.len() {
        return None;
    }
    let carried = carried?;
    let inner = match carried.params {
        Some(inner) => {
            // A slice of `text` whose ends are ASCII delimiters of a value inside valid JSON:
            // valid JSON itself, taken as `str` without checking its UTF-8 again.
            let at = inner.as_bytes().as_ptr() as usize - bytes.as_ptr() as usize;
            Some(borrowed_raw(text.get(at..at + inner.as_bytes().len())?)?)
        }
        None => None,
    };
    Some((carried.method, inner))
}

/// The object at `at` read as a carried message: past its end, and its method and params
/// when it has a plain `method`, neither member twice and no escaped key.
fn carried(bytes: &[u8], at: usize) -> Option<(usize, Option<CarriedMessage<'_>>)> {
    let mut method = None;
    let mut params = None;
    // A member twice, or a key with an escape (which may spell `method`): serde_json would
    // read the carried message otherwise than this scan, so it is not offered.
    let mut unsure = false;
    let end = object(bytes, at, |key, at| {
        let end = skip_value(bytes, at)?;
        let slot = match key {
            b"method" => &mut method,
            b"params" => &mut params,
            _ => {
                // Inline: keys are short, and `contains` calls `memchr`, which costs more here
                // (measured: 10 % of the conductor's scan).
                #[expect(clippy::manual_contains)]
                let escaped = key.iter().any(|&byte| byte == b'\\');
                unsure |= escaped;
                return Some(end);
            }
        };
        unsure |= slot.replace(&bytes[at..end]).is_some();
        Some(end)
    })?;
    let carried = match method {
        Some(method) if !unsure => plain_string(method).map(|method| CarriedMessage {
            method,
            params: params.map(UncheckedJson::on_line),
        }),
        _ => None,
    };
    Some((end, carried))
}

/// Walks the object at `at` (its `{`): for each member, `value` gets the key's bytes as
/// written (escapes not decoded) and where the value starts, and returns where it ends.
/// Returns past the closing `}`.
#[inline(always)]
fn object(
    bytes: &[u8],
    at: usize,
    mut value: impl FnMut(&[u8], usize) -> Option<usize>,
) -> Option<usize> {
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    let mut i = skip_ws(bytes, at + 1);
    if bytes.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    loop {
        if bytes.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = skip_string(bytes, i)?;
        let key = &bytes[i + 1..key_end - 1];
        i = skip_ws(bytes, key_end);
        if bytes.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(bytes, value(key, skip_ws(bytes, i + 1))?);
        match bytes.get(i) {
            Some(b',') => i = skip_ws(bytes, i + 1),
            Some(b'}') => return Some(i + 1),
            _ => return None,
        }
    }
}

/// The text of a JSON string without escapes or control characters, as UTF-8.
fn plain_string(raw: &[u8]) -> Option<&str> {
    std::str::from_utf8(plain_bytes(raw)?).ok()
}

/// The bytes of a JSON string without escapes or control characters, its quotes removed.
#[inline(always)]
fn plain_bytes(raw: &[u8]) -> Option<&[u8]> {
    let inner = raw.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    // Most methods are short: the writer's word-at-a-time test, else a byte loop.
    let plain = short_and_plain(inner)
        || inner.len() > 16 && !inner.iter().any(|&byte| byte < 0x20 || byte == b'\\');
    plain.then_some(inner)
}

/// Past the string whose opening quote is at `i`: the next quote not escaped.
#[inline(always)]
fn skip_string(bytes: &[u8], i: usize) -> Option<usize> {
    let mut i = i + 1;
    loop {
        i = next_quote_or_backslash(bytes, i)?;
        if bytes[i] == b'"' {
            return Some(i + 1);
        }
        // The escaped byte, whatever it is: `\"` does not end the string.
        i += 2;
    }
}

/// The first `"` or `\` at or after `i`, eight bytes per step, inlined: most strings of a
/// message are short (keys, tags, ids), and a call to a general search (`memchr`) or to the
/// writer's, which also stops at control characters, costs more than the search itself.
#[inline(always)]
fn next_quote_or_backslash(bytes: &[u8], mut i: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    while let Some(word) = bytes.get(i..i + 8) {
        let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        // A zero byte in either: the has-zero-byte test, exact for the lowest one, which is
        // the one taken.
        let found =
            (quote.wrapping_sub(ONES) & !quote | backslash.wrapping_sub(ONES) & !backslash) & HIGHS;
        if found != 0 {
            return Some(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    let at = bytes
        .get(i..)?
        .iter()
        .position(|&byte| byte == b'"' || byte == b'\\')?;
    Some(i + at)
}

/// Past the value at `i`, unread: a string past its closing quote, an object or array past
/// its matching bracket (brackets matched by kind, up to 64 deep; [`blocks`]), anything else
/// up to the next `,`, `}`, `]` or whitespace.
fn skip_value(bytes: &[u8], mut i: usize) -> Option<usize> {
    match bytes.get(i)? {
        b'"' => skip_string(bytes, i),
        b'{' | b'[' => blocks::skip_container(bytes, i),
        b',' | b'}' | b']' | b':' => None,
        _ => {
            let start = i;
            while let Some(byte) = bytes.get(i) {
                if matches!(byte, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n') {
                    break;
                }
                i += 1;
            }
            (i > start).then_some(i)
        }
    }
}

/// What a router needs of a response line: the id of the request it answers, and the result,
/// unread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ForwardResponse<'a> {
    pub(crate) id: i64,
    pub(crate) result: UncheckedJson<'a>,
}

/// What a router needs of a request line: its id, and the rest as of a notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ForwardRequest<'a> {
    pub(crate) id: i64,
    pub(crate) scan: ForwardScan<'a>,
}

/// Reads `line` as a request whose params a router may forward unread:
/// `{"jsonrpc":"2.0","id":N,"method":"…","params":…}` with nothing between the tokens and
/// nothing after the `}`, `N` read as [`response`] reads it, the method plain (no escape or
/// control character, valid UTF-8) and the params skipped as a notification's are. Anything
/// else (no params, another member, another order or spelling, a string id) is `None`, and the
/// line is decoded (and answered) as before.
pub(crate) fn request<'a>(line: &'a [u8], known: &'a KnownMethods) -> Option<ForwardRequest<'a>> {
    let (id, after_id) = response_id(line)?;
    let (method, params_at) = usual_string_then_params(&line[after_id..], METHOD_HEAD)?;
    let method_at = after_id + METHOD_HEAD.len();
    let scan = usual_params(line, method_at, method, after_id + params_at, known)?;
    Some(ForwardRequest { id, scan })
}

/// A request's method after its id, up to the method's opening quote.
const METHOD_HEAD: &[u8] = br#","method":""#;

/// The id of a line that starts as a request does (`{"jsonrpc":"2.0","id":N,"method":"`),
/// whatever follows: for a request the validating decode refuses as a whole (its params are
/// not valid JSON or UTF-8), so that its `-32700` answers that id, and the router that
/// forwarded it unread can hand the answer back to whoever asked.
pub(crate) fn malformed_request_id(line: &[u8]) -> Option<i64> {
    let (id, after_id) = response_id(line)?;
    line.get(after_id..)?.starts_with(METHOD_HEAD).then_some(id)
}

/// The start of a response (and of a request) as this crate and most writers spell one.
const RESPONSE_HEAD: &[u8] = br#"{"jsonrpc":"2.0","id":"#;

/// Reads `line` as a response to one of our requests whose result a router may forward unread:
/// `{"jsonrpc":"2.0","id":N,"result":…}` with nothing between the tokens, `N` an integer the
/// validating decode reads as the same id (digits, no sign, no leading zero, within `i64`),
/// the result skipped as [`skip_value`] does, whitespace only after the closing `}`. Anything
/// else (an `error`, another member, another order or spelling) is `None`, and the line is
/// decoded as before.
pub(crate) fn response(line: &[u8]) -> Option<ForwardResponse<'_>> {
    const RESULT: &[u8] = br#","result":"#;
    let (id, after_id) = response_id(line)?;
    let at = after_id + RESULT.len();
    if line.get(after_id..at)? != RESULT {
        return None;
    }
    let end = skip_value(line, at)?;
    if line.get(end) != Some(&b'}') || skip_ws(line, end + 1) != line.len() {
        return None;
    }
    Some(ForwardResponse {
        id,
        result: UncheckedJson::on_line(&line[at..end]),
    })
}

/// The id of a line that starts as a response to one of our requests does
/// (`{"jsonrpc":"2.0","id":N,"result":` or `…,"error":`), whatever follows: for a response
/// the validating decode refuses as a whole (its result is not valid JSON), so that the
/// request waiting for it fails instead of waiting forever.
pub(crate) fn malformed_response_id(line: &[u8]) -> Option<i64> {
    let (id, after_id) = response_id(line)?;
    let rest = line.get(after_id..)?;
    (rest.starts_with(br#","result":"#) || rest.starts_with(br#","error":"#)).then_some(id)
}

/// Whether `line` starts as a response or a request does in the usual spelling (`id`
/// second), which [`response`] and [`request`] read and [`notification`] declines.
#[inline(always)]
pub(crate) fn starts_with_id(line: &[u8]) -> bool {
    line.starts_with(RESPONSE_HEAD)
}

/// After [`RESPONSE_HEAD`]: an id as this crate writes its own (a non-negative integer, as
/// serde_json reads it: no leading zero, within `i64`), and where it ends.
#[inline(always)]
fn response_id(line: &[u8]) -> Option<(i64, usize)> {
    let digits = line.strip_prefix(RESPONSE_HEAD)?;
    let length = digits
        .iter()
        .take_while(|byte| byte.is_ascii_digit())
        .count();
    if length == 0 || length > 1 && digits[0] == b'0' {
        return None;
    }
    let mut id: i64 = 0;
    for &digit in &digits[..length] {
        id = id.checked_mul(10)?.checked_add(i64::from(digit - b'0'))?;
    }
    Some((id, RESPONSE_HEAD.len() + length))
}

#[cfg(test)]
#[path = "forward/tests.rs"]
mod tests;

#[cfg(test)]
#[path = "forward/response_tests.rs"]
mod response_tests;

#[cfg(test)]
#[path = "forward/request_tests.rs"]
mod request_tests;
