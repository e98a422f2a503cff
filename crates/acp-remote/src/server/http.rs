//! A request's head as the server's policy and hooks read it ([`RequestHead`], filled from
//! hyper's request for either HTTP version), connection ids, and the one answer written by
//! hand: the 503 to a socket over the limit, sent without reading its request.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io;

use futures_lite::{AsyncWrite, AsyncWriteExt};

/// The head of an HTTP request (request line and headers), as the server's authentication
/// hook sees it.
///
/// ```
/// let head = acp_remote::RequestHead::new("GET", "/acp")
///     .with_header("Authorization", "Bearer s3cret");
/// assert_eq!(head.bearer_token(), Some("s3cret"));
/// assert_eq!(head.header("authorization"), Some("Bearer s3cret"));
/// ```
#[derive(Debug, Clone)]
pub struct RequestHead {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
}

impl RequestHead {
    /// A head with no headers (for tests of authentication hooks).
    pub fn new(method: impl Into<String>, target: impl Into<String>) -> Self {
        RequestHead {
            method: method.into(),
            target: target.into(),
            headers: Vec::new(),
        }
    }

    /// Adds a header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The method, e.g. `GET`.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The request target as sent, query included.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The target without its query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// The first header of that name (case-insensitive). Values that are not UTF-8 are not
    /// kept.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every value of the headers called `name` (case-insensitive), in order.
    pub(crate) fn headers_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The first of `names` (lowercase) that appears more than once with differing values.
    pub(crate) fn repeated_header(&self, names: &[&'static str]) -> Option<&'static str> {
        names.iter().copied().find(|name| {
            let mut values = self
                .headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.trim());
            values
                .next()
                .is_some_and(|first| values.any(|other| other != first))
        })
    }

    /// Whether a comma-separated header holds `token` (case-insensitive), as `Connection:
    /// keep-alive, Upgrade` holds `upgrade`.
    pub fn header_has_token(&self, name: &str, token: &str) -> bool {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .flat_map(|(_, v)| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }

    /// The token of an `Authorization: Bearer <token>` header.
    pub fn bearer_token(&self) -> Option<&str> {
        let value = self.header("authorization")?.trim();
        let (scheme, token) = value.split_once(' ')?;
        scheme
            .eq_ignore_ascii_case("bearer")
            .then(|| token.trim())
            .filter(|t| !t.is_empty())
    }
}

/// Writes a complete text answer and flushes it; the connection is closed after it.
pub(crate) async fn respond<S: AsyncWrite + Unpin>(
    stream: &mut S,
    status: u16,
    headers: &[(&str, &str)],
    body: &str,
) -> io::Result<()> {
    if status == 101 {
        let mut out = format!("HTTP/1.1 {status} {}\r\n", reason(status));
        for (name, value) in headers {
            out.push_str(&format!("{name}: {value}\r\n"));
        }
        out.push_str("\r\n");
        stream.write_all(out.as_bytes()).await?;
        return stream.flush().await;
    }
    let content_type = "text/plain; charset=utf-8";
    respond_with(
        stream,
        status,
        headers,
        content_type,
        body.as_bytes(),
        false,
    )
    .await
}

/// Writes a complete answer with a body of `content_type` (none when empty) and flushes it.
pub(crate) async fn respond_with<S: AsyncWrite + Unpin>(
    stream: &mut S,
    status: u16,
    headers: &[(&str, &str)],
    content_type: &str,
    body: &[u8],
    keep_alive: bool,
) -> io::Result<()> {
    let mut out = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() {
        out.push_str(&format!("Content-Type: {content_type}\r\n"));
    }
    // A 204 has no body, and so no length (RFC 9110, 8.6).
    if status != 204 {
        out.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    if !keep_alive {
        out.push_str("Connection: close\r\n");
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    stream.write_all(&bytes).await?;
    stream.flush().await
}

fn reason(status: u16) -> &'static str {
    match status {
        101 => "Switching Protocols",
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        406 => "Not Acceptable",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        426 => "Upgrade Required",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// 128 bits nobody can guess, as two words.
///
/// Drawn from std's `RandomState`, whose SipHash keys come from the operating system's random
/// source; a keyed SipHash of a counter is unpredictable without the keys, and this avoids a
/// dependency on a random-number crate for sixteen bytes per connection.
fn unguessable_words() -> (u64, u64) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let word = |salt: u64| {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(n);
        hasher.write_u64(salt);
        hasher.finish()
    };
    (word(1), word(2))
}

/// A secret of 128 bits nobody can guess, as 32 hexadecimal digits: for a token in a URL that
/// only its owner may open (the server's connection ids are drawn the same way).
///
/// ```
/// let token = acp_remote::secret_token();
/// assert_eq!(token.len(), 32);
/// assert_ne!(token, acp_remote::secret_token());
/// ```
pub fn secret_token() -> String {
    let (hi, lo) = unguessable_words();
    format!("{hi:016x}{lo:016x}")
}

/// A new connection id: 128 bits nobody can guess ([`secret_token`]'s), shaped as a UUID
/// (version 4 layout), after `<instance>.` when the server names its instance (so that a
/// balancer routes the connection's requests without remembering where it went). `instance`
/// is an [`InstanceName`](crate::InstanceName)'s text, checked when it was made.
pub(crate) fn connection_id(instance: Option<&str>) -> String {
    let uuid = uuid_shaped_token();
    match instance {
        Some(instance) => format!("{instance}.{uuid}"),
        None => uuid,
    }
}

fn uuid_shaped_token() -> String {
    let (hi, lo) = unguessable_words();
    let hi = (hi & !0xF000) | 0x4000;
    let lo = (lo & !(0b11 << 62)) | (0b10 << 62);
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xFFFF,
        hi & 0xFFFF,
        lo >> 48,
        lo & 0xFFFF_FFFF_FFFF
    )
}

/// Compares two secrets in time that does not depend on where they differ.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_ids_are_uuid_shaped_and_distinct() {
        let a = connection_id(None);
        let b = connection_id(None);
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        let c = connection_id(Some("eu-1"));
        assert_eq!((&c[..5], c.len()), ("eu-1.", 41));
    }

    #[test]
    fn header_tokens_are_read_from_lists() {
        let head = RequestHead::new("GET", "/acp?x=1")
            .with_header("Host", "a")
            .with_header("Connection", "keep-alive, Upgrade");
        assert_eq!(head.path(), "/acp");
        assert!(head.header_has_token("connection", "upgrade"));
        assert!(!head.header_has_token("connection", "close"));
    }

    #[test]
    fn bearer_tokens() {
        let head = RequestHead::new("GET", "/").with_header("Authorization", "basic abc");
        assert_eq!(head.bearer_token(), None);
        let head = RequestHead::new("GET", "/").with_header("Authorization", "bearer  t ");
        assert_eq!(head.bearer_token(), Some("t"));
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
