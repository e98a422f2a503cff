//! A minimal HTTP/1.1 client for the Streamable HTTP tests: one request per TCP connection,
//! and SSE streams read event by event (chunked bodies decoded).

use std::net::SocketAddr;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use smol::net::TcpStream;

use super::within;

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {:?}", self.body))
    }
}

fn request_text(method: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut text = format!("{method} /acp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    if method == "POST" {
        text.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    text.push_str("\r\n");
    text.push_str(body);
    text
}

/// Sends one request and reads the whole answer (the server closes after it).
pub async fn send(
    addr: SocketAddr,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Response {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(request_text(method, headers, body).as_bytes())
        .await
        .unwrap();
    let mut raw = Vec::new();
    within("an HTTP answer", stream.read_to_end(&mut raw))
        .await
        .unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let (status, headers) = parse_head(head);
    Response {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// The status and the header lines of an answer's head.
fn parse_head(head: &str) -> (u16, Vec<(String, String)>) {
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap()[9..12].parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    (status, headers)
}

/// POSTs a JSON body.
pub async fn post(addr: SocketAddr, headers: &[(&str, &str)], body: &str) -> Response {
    let mut all = vec![("Content-Type", "application/json")];
    all.extend_from_slice(headers);
    send(addr, "POST", &all, body).await
}

/// An open SSE stream.
pub struct Sse {
    stream: TcpStream,
    raw: Vec<u8>,
    text: String,
    pub status: u16,
    pub headers: Vec<(String, String)>,
}

impl Sse {
    /// GETs a stream; `status` says whether it opened (200).
    pub async fn open(addr: SocketAddr, headers: &[(&str, &str)]) -> Sse {
        let mut all = vec![("Accept", "text/event-stream")];
        all.extend_from_slice(headers);
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(request_text("GET", &all, "").as_bytes())
            .await
            .unwrap();
        let mut sse = Sse {
            stream,
            raw: Vec::new(),
            text: String::new(),
            status: 0,
            headers: Vec::new(),
        };
        while !sse.raw.windows(4).any(|w| w == b"\r\n\r\n") {
            if !sse.fill().await {
                break;
            }
        }
        let end = sse.raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let head = String::from_utf8_lossy(&sse.raw[..end - 4]).into_owned();
        (sse.status, sse.headers) = parse_head(&head);
        sse.raw.drain(..end);
        sse
    }

    async fn fill(&mut self) -> bool {
        let mut buf = [0u8; 8192];
        let n = within("SSE bytes", self.stream.read(&mut buf))
            .await
            .unwrap_or(0);
        self.raw.extend_from_slice(&buf[..n]);
        n > 0
    }

    /// Decodes complete chunks into `text`; `false` at the last chunk.
    fn decode(&mut self) -> Option<bool> {
        let line_end = self.raw.windows(2).position(|w| w == b"\r\n")?;
        let size =
            usize::from_str_radix(std::str::from_utf8(&self.raw[..line_end]).ok()?, 16).ok()?;
        if self.raw.len() < line_end + 2 + size + 2 {
            return None;
        }
        let data = &self.raw[line_end + 2..line_end + 2 + size];
        self.text.push_str(std::str::from_utf8(data).unwrap());
        self.raw.drain(..line_end + 2 + size + 2);
        Some(size > 0)
    }

    /// The stream's text (chunks decoded, ids and comments kept) up to and including the
    /// first `needle`, taken out; `None` if the stream ends first.
    pub async fn text_until(&mut self, needle: &str) -> Option<String> {
        loop {
            if let Some(at) = self.text.find(needle) {
                return Some(self.text.drain(..at + needle.len()).collect());
            }
            match self.decode() {
                Some(true) => continue,
                Some(false) => return None,
                None => {
                    if !self.fill().await {
                        return None;
                    }
                }
            }
        }
    }

    /// Whether the stream ends cleanly (its last chunk) rather than being broken off.
    pub async fn ends_cleanly(&mut self) -> bool {
        loop {
            match self.decode() {
                Some(true) => continue,
                Some(false) => return true,
                None => {
                    if !self.fill().await {
                        return false;
                    }
                }
            }
        }
    }

    /// The next event's JSON, skipping comments; `None` when the stream ends.
    pub async fn next(&mut self) -> Option<serde_json::Value> {
        loop {
            if let Some(event) = take_event(&mut self.text) {
                return Some(event);
            }
            match self.decode() {
                Some(true) => continue,
                Some(false) => return None,
                None => {
                    if !self.fill().await {
                        return None;
                    }
                }
            }
        }
    }
}

/// Takes the first complete event's JSON out of decoded SSE `text`, skipping comments; `None`
/// until a whole event has arrived. Shared with the HTTP/2 client's streams.
pub fn take_event(text: &mut String) -> Option<serde_json::Value> {
    while let Some(end) = text.find("\n\n") {
        let event: String = text.drain(..end + 2).collect();
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .collect();
        if !data.is_empty() {
            return Some(serde_json::from_str(&data.join("\n")).unwrap());
        }
    }
    None
}
