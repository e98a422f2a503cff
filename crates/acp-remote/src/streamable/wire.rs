//! HTTP/1.1 for the Streamable HTTP client: requests, answers (Content-Length, chunked, or
//! until close), and a kept-alive socket for the POSTs. Only the bytes: which headers a
//! request carries is decided by `client.rs`, for HTTP/2 (`h2.rs`) as well.

use std::io;
use std::time::{Duration, Instant};

use futures_lite::{AsyncReadExt, AsyncWriteExt};

use crate::net::NetStream;

/// Where and how to reach the server.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub(crate) host: String,
    pub(crate) port: u16,
    /// `host:port` as the `Host` header says it.
    pub(crate) authority: String,
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) max_message_size: usize,
    pub(crate) tls: Option<crate::tls::ClientTls>,
    /// h2c on `http://` URLs: the server is known to speak HTTP/2 in the clear.
    #[cfg(feature = "http2")]
    pub(crate) http2_prior_knowledge: bool,
}

/// A kept-alive socket is reused only this soon after its last answer: well within the idle
/// timeouts of servers (ours 10 s, Node's 5 s), so that a request never meets a socket the
/// server is closing.
const REUSE_WITHIN: Duration = Duration::from_secs(2);

/// An answer to a POST or DELETE.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn request_head(
    endpoint: &Endpoint,
    method: &str,
    headers: &[(String, String)],
    len: usize,
    keep_alive: bool,
) -> String {
    let connection = if keep_alive { "keep-alive" } else { "close" };
    let mut head = format!(
        "{method} {} HTTP/1.1\r\nHost: {}\r\nConnection: {connection}\r\n",
        endpoint.path, endpoint.authority
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if method == "POST" {
        head.push_str(&format!("Content-Length: {len}\r\n"));
    }
    head.push_str("\r\n");
    head
}

/// Sends POSTs and DELETEs one after the other, on one kept-alive socket while the server
/// keeps it (TLS handshakes included, a socket per request would cost the most).
#[derive(Default)]
pub(crate) struct Poster {
    socket: Option<(NetStream, Instant)>,
}

impl Poster {
    /// Keeps `socket` (just connected) for the next request.
    #[cfg(feature = "http2")]
    pub(crate) fn keep(&mut self, socket: NetStream) {
        self.socket = Some((socket, Instant::now()));
    }

    /// Sends one request; the whole answer. A reused socket the server closed before
    /// answering is replaced once by a fresh one (the request was not taken: nothing was
    /// answered).
    pub(crate) async fn send(
        &mut self,
        endpoint: &Endpoint,
        method: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> io::Result<Answer> {
        let reused = self
            .socket
            .take()
            .filter(|(_, last)| last.elapsed() < REUSE_WITHIN)
            .map(|(socket, _)| socket);
        if let Some(socket) = reused {
            match exchange(socket, endpoint, method, headers, body).await {
                Ok((answer, kept)) => {
                    self.socket = kept.map(|s| (s, Instant::now()));
                    return Ok(answer);
                }
                Err(Exchange::NotAnswered) => {}
                Err(Exchange::Failed(error)) => return Err(error),
            }
        }
        let socket =
            NetStream::connect(&endpoint.host, endpoint.port, endpoint.tls.as_ref()).await?;
        match exchange(socket, endpoint, method, headers, body).await {
            Ok((answer, kept)) => {
                self.socket = kept.map(|s| (s, Instant::now()));
                Ok(answer)
            }
            Err(Exchange::NotAnswered) => Err(io::ErrorKind::ConnectionAborted.into()),
            Err(Exchange::Failed(error)) => Err(error),
        }
    }
}

enum Exchange {
    /// The socket failed before any byte of an answer: the request was not taken.
    NotAnswered,
    Failed(io::Error),
}

/// One request and its answer on `socket`; the socket back if it may carry another.
async fn exchange(
    mut socket: NetStream,
    endpoint: &Endpoint,
    method: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<(Answer, Option<NetStream>), Exchange> {
    let mut request = request_head(endpoint, method, headers, body.len(), true).into_bytes();
    request.extend_from_slice(body);
    if socket.write_all(&request).await.is_err() || socket.flush().await.is_err() {
        return Err(Exchange::NotAnswered);
    }
    let (status, answer_headers, mut reader) = match read_response_head(&mut socket).await {
        Ok(head) => head,
        Err(error) if error.kind() == io::ErrorKind::ConnectionAborted => {
            return Err(Exchange::NotAnswered);
        }
        Err(error) => return Err(Exchange::Failed(error)),
    };
    let mut body = Vec::new();
    while let Some(data) = reader.next(&mut socket).await {
        body.extend_from_slice(&data);
        if body.len() > endpoint.max_message_size {
            return Err(Exchange::Failed(io::Error::new(
                io::ErrorKind::InvalidData,
                "answer too large",
            )));
        }
    }
    let answer = Answer {
        status,
        headers: answer_headers,
        body,
    };
    let close = answer
        .header("connection")
        .is_some_and(|c| c.to_ascii_lowercase().contains("close"));
    let kept = (reader.complete() && !close).then_some(socket);
    Ok((answer, kept))
}

/// Opens a GET; returns the socket, the status, the headers and the body's reader.
pub(crate) async fn open_get(
    endpoint: &Endpoint,
    headers: &[(String, String)],
) -> io::Result<(NetStream, u16, Vec<(String, String)>, Body)> {
    let mut stream =
        NetStream::connect(&endpoint.host, endpoint.port, endpoint.tls.as_ref()).await?;
    let request = request_head(endpoint, "GET", headers, 0, false);
    stream.write_all(request.as_bytes()).await?;
    stream.flush().await?;
    let (status, headers, body) = read_response_head(&mut stream).await?;
    Ok((stream, status, headers, body))
}

async fn read_response_head(
    stream: &mut NetStream,
) -> io::Result<(u16, Vec<(String, String)>, Body)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut response = httparse::Response::new(&mut headers);
        match response.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                let status = response.code.unwrap_or(0);
                let headers: Vec<(String, String)> = response
                    .headers
                    .iter()
                    .filter_map(|h| {
                        Some((
                            h.name.to_owned(),
                            std::str::from_utf8(h.value).ok()?.to_owned(),
                        ))
                    })
                    .collect();
                let find = |name: &str| {
                    headers
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case(name))
                        .map(|(_, v)| v.trim().to_ascii_lowercase())
                };
                let kind = if find("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
                    BodyKind::Chunked
                } else if let Some(len) = find("content-length").and_then(|l| l.parse().ok()) {
                    BodyKind::Length(len)
                } else {
                    BodyKind::UntilClose
                };
                let body = Body {
                    buf: buf.split_off(len),
                    kind,
                    done: false,
                    failed: false,
                };
                return Ok((status, headers, body));
            }
            Ok(httparse::Status::Partial) if buf.len() < 64 * 1024 => {}
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "bad HTTP answer",
                ));
            }
        }
        let n = match stream.read(&mut chunk).await {
            Ok(0) | Err(_) if buf.is_empty() => return Err(io::ErrorKind::ConnectionAborted.into()),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => n,
            Err(error) => return Err(error),
        };
        buf.extend_from_slice(&chunk[..n]);
    }
}

pub(crate) enum BodyKind {
    Chunked,
    Length(usize),
    UntilClose,
}

/// A response body, decoded as it arrives.
pub(crate) struct Body {
    buf: Vec<u8>,
    kind: BodyKind,
    done: bool,
    /// Ended by a failure of the socket, or an invalid chunk.
    failed: bool,
}

impl Body {
    /// Whether the body ended by its own framing (a length, a last chunk), leaving the socket
    /// fit for another request.
    fn complete(&self) -> bool {
        self.done && !matches!(self.kind, BodyKind::UntilClose) && !self.failed
    }

    /// The next piece of the body; `None` at its end (or when the socket fails).
    pub(crate) async fn next(&mut self, stream: &mut NetStream) -> Option<Vec<u8>> {
        loop {
            if self.done {
                return None;
            }
            match &mut self.kind {
                BodyKind::Length(left) => {
                    if *left == 0 {
                        self.done = true;
                        return None;
                    }
                    if !self.buf.is_empty() {
                        let n = self.buf.len().min(*left);
                        *left -= n;
                        let rest = self.buf.split_off(n);
                        return Some(std::mem::replace(&mut self.buf, rest));
                    }
                }
                BodyKind::UntilClose => {
                    if !self.buf.is_empty() {
                        return Some(std::mem::take(&mut self.buf));
                    }
                }
                BodyKind::Chunked => {
                    if let Some(line_end) = self.buf.windows(2).position(|w| w == b"\r\n") {
                        let size = std::str::from_utf8(&self.buf[..line_end])
                            .ok()
                            .and_then(|s| {
                                usize::from_str_radix(s.split(';').next()?.trim(), 16).ok()
                            });
                        let Some(size) = size else {
                            self.done = true;
                            self.failed = true;
                            return None;
                        };
                        if size == 0 {
                            // The last chunk, then the (empty) trailer section: wait for its
                            // end, so that a kept-alive socket starts clean.
                            if self.buf[line_end..].windows(4).any(|w| w == b"\r\n\r\n") {
                                self.done = true;
                                return None;
                            }
                        } else if self.buf.len() >= line_end + 2 + size + 2 {
                            let data = self.buf[line_end + 2..line_end + 2 + size].to_vec();
                            self.buf.drain(..line_end + 2 + size + 2);
                            return Some(data);
                        }
                    }
                }
            }
            let mut chunk = [0u8; 16 * 1024];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => {
                    self.done = true;
                    self.failed = !matches!(self.kind, BodyKind::UntilClose);
                    return None;
                }
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }
}
