//! The live view's HTTP/1.1 server, by hand on std's threads: loopback only, a random port,
//! two GET routes (`/` the page, `/events` the server-sent events) behind a random token in
//! the query, `403` without it. Small on purpose (ARCHITECTURE.md says why not hyper).

use std::io::{BufWriter, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::feed::{Feed, Next};

/// The largest request head read; a longer one is answered `431`.
const MAX_HEAD: usize = 8 * 1024;
/// How many connections are served at once; more are answered `503`.
const MAX_CONNECTIONS: usize = 32;
/// How long a request head may take to arrive.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How often an idle event stream sends a comment, which finds viewers that went away.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A running server.
pub struct Server {
    addr: SocketAddr,
    token: String,
    stop: Arc<AtomicBool>,
    active: Arc<AtomicUsize>,
    accept: Option<JoinHandle<()>>,
}

/// Serves `page` and `feed` on `127.0.0.1`, on a port the system picks.
pub fn serve(feed: Arc<Feed>, page: String, token: String) -> std::io::Result<Server> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let addr = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let active = Arc::new(AtomicUsize::new(0));
    let shared = Arc::new(Shared {
        feed,
        page,
        token: token.clone(),
        stop: stop.clone(),
    });
    let accept = {
        let (stop, active) = (stop.clone(), active.clone());
        std::thread::Builder::new()
            .name("acp-trace-view".to_owned())
            .spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    if active.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                        active.fetch_sub(1, Ordering::SeqCst);
                        let _ = respond(&stream, 503, "text/plain", b"too many viewers\n");
                        continue;
                    }
                    let (shared, done) = (shared.clone(), active.clone());
                    let spawned = std::thread::Builder::new()
                        .name("acp-trace-viewer".to_owned())
                        .spawn(move || {
                            serve_one(&shared, stream);
                            done.fetch_sub(1, Ordering::SeqCst);
                        });
                    if spawned.is_err() {
                        active.fetch_sub(1, Ordering::SeqCst);
                    }
                }
            })?
    };
    Ok(Server {
        addr,
        token,
        stop,
        active,
        accept: Some(accept),
    })
}

impl Server {
    /// The page's URL, token included.
    pub fn url(&self) -> String {
        format!("http://{}/?token={}", self.addr, self.token)
    }

    /// Stops accepting, then waits up to `grace` for the open streams to send their last
    /// rows and the end (the feed must have ended).
    pub fn finish(&mut self, grace: Duration) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then sees `stop`.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        let deadline = Instant::now() + grace;
        while self.active.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

struct Shared {
    feed: Arc<Feed>,
    page: String,
    token: String,
    stop: Arc<AtomicBool>,
}

/// A request's line and the one header that matters here.
#[derive(Debug, PartialEq)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub token: Option<String>,
    pub last_event_id: Option<usize>,
}

fn serve_one(shared: &Shared, mut stream: TcpStream) {
    let _ = stream.set_read_timeout(Some(HEAD_TIMEOUT));
    let head = match read_head(&mut stream) {
        Ok(head) => head,
        Err(status) => {
            let _ = respond(&stream, status, "text/plain", b"bad request\n");
            return;
        }
    };
    let Some(request) = parse_head(&head) else {
        let _ = respond(&stream, 400, "text/plain", b"bad request\n");
        return;
    };
    let authorized = request
        .token
        .as_deref()
        .is_some_and(|t| constant_time_eq(t.as_bytes(), shared.token.as_bytes()));
    if !authorized {
        let _ = respond(
            &stream,
            403,
            "text/plain",
            b"forbidden: the URL's token is missing or wrong\n",
        );
        return;
    }
    if request.method != "GET" {
        let _ = respond(&stream, 405, "text/plain", b"GET only\n");
        return;
    }
    match request.path.as_str() {
        "/" => {
            let _ = respond(
                &stream,
                200,
                "text/html; charset=utf-8",
                shared.page.as_bytes(),
            );
        }
        "/events" => events(shared, stream, request.last_event_id.unwrap_or(0)),
        _ => {
            let _ = respond(&stream, 404, "text/plain", b"not found\n");
        }
    }
}

/// Reads up to the blank line that ends the head; `Err` is the status to answer.
fn read_head(stream: &mut TcpStream) -> Result<String, u16> {
    let mut head = Vec::with_capacity(1024);
    let mut buffer = [0u8; 1024];
    loop {
        let n = stream.read(&mut buffer).map_err(|_| 408u16)?;
        if n == 0 {
            return Err(400);
        }
        head.extend_from_slice(&buffer[..n]);
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            head.truncate(end);
            return String::from_utf8(head).map_err(|_| 400);
        }
        if head.len() > MAX_HEAD {
            return Err(431);
        }
    }
}

/// The request line's method and target (path, `token` query parameter) and `Last-Event-ID`.
pub fn parse_head(head: &str) -> Option<Request> {
    let mut lines = head.split("\r\n");
    let mut parts = lines.next()?.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if !version.starts_with("HTTP/1.") || parts.next().is_some() {
        return None;
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let token = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
        .map(str::to_owned);
    let last_event_id = lines.find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("last-event-id")
            .then(|| value.trim().parse().ok())
            .flatten()
    });
    Some(Request {
        method: method.to_owned(),
        path: path.to_owned(),
        token,
        last_event_id,
    })
}

fn respond(
    mut stream: &TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

/// The event stream: every row from `cursor` on, in events of at most a mebibyte (`id` is the
/// next row, so that a reconnecting `EventSource` resumes where it was), then `end`.
fn events(shared: &Shared, stream: TcpStream, mut cursor: usize) {
    // A viewer that stops reading is given up, not waited for.
    let _ = stream.set_write_timeout(Some(Duration::from_secs(30)));
    let mut out = BufWriter::new(stream);
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nConnection: close\r\n\r\nretry: 1000\n\n";
    if out
        .write_all(head.as_bytes())
        .and_then(|()| out.flush())
        .is_err()
    {
        return;
    }
    loop {
        let written = match shared.feed.next(cursor, KEEP_ALIVE) {
            Next::Rows { missed, json, next } => {
                cursor = next;
                let gap = if missed > 0 {
                    format!("event: gap\ndata: {missed}\n\n")
                } else {
                    String::new()
                };
                write!(out, "{gap}id: {next}\ndata: {json}\n\n")
            }
            Next::Idle if shared.stop.load(Ordering::SeqCst) => return,
            Next::Idle => out.write_all(b": still here\n\n"),
            Next::Ended => {
                let _ = out.write_all(b"event: end\ndata: end\n\n");
                let _ = out.flush();
                return;
            }
        };
        if written.and_then(|()| out.flush()).is_err() {
            return;
        }
    }
}

/// Compares two secrets in time that does not depend on where they differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads() {
        let request =
            parse_head("GET /events?x=1&token=abc HTTP/1.1\r\nHost: h\r\nlast-event-id: 42")
                .unwrap();
        assert_eq!(
            request,
            Request {
                method: "GET".into(),
                path: "/events".into(),
                token: Some("abc".into()),
                last_event_id: Some(42),
            }
        );
        assert_eq!(parse_head("GET / HTTP/1.1").unwrap().token, None);
        assert!(parse_head("GET /").is_none());
        assert!(parse_head("GET / SPDY/3").is_none());
    }
}
