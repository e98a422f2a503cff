//! Test helpers: a loopback HTTP(S) server with scripted routes, and archive builders,
//! honest and hostile.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};

/// What the server answers on one path.
#[derive(Clone)]
pub enum Route {
    /// 200 with this body.
    Body(Vec<u8>),
    /// 200 with this body, after a pause (to make concurrent clients overlap).
    SlowBody(Vec<u8>, Duration),
    /// 302 to this location.
    Redirect(String),
    /// Reads the request, then answers nothing (until the client gives up).
    Stall,
}

/// A loopback server; `hits(path)` counts the requests for a path.
pub struct Server {
    pub base: String,
    routes: Arc<Mutex<HashMap<String, Route>>>,
    hits: Arc<Mutex<HashMap<String, usize>>>,
}

impl Server {
    /// Plain HTTP on 127.0.0.1.
    pub fn http(routes: impl IntoIterator<Item = (impl Into<String>, Route)>) -> Server {
        Server::start(routes, None)
    }

    /// HTTPS on 127.0.0.1 with acp-remote's test certificate (for `localhost`, 127.0.0.1).
    pub fn https(routes: impl IntoIterator<Item = (impl Into<String>, Route)>) -> Server {
        use rustls_pki_types::pem::PemObject;
        use rustls_pki_types::{CertificateDer, PrivateKeyDer};
        let certs = CertificateDer::pem_file_iter(tls_file("server.pem"))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_file(tls_file("server.key")).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        Server::start(routes, Some(Arc::new(config)))
    }

    fn start(
        routes: impl IntoIterator<Item = (impl Into<String>, Route)>,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let scheme = if tls.is_some() { "https" } else { "http" };
        let routes: Arc<Mutex<HashMap<String, Route>>> = Arc::new(Mutex::new(
            routes
                .into_iter()
                .map(|(path, route)| (path.into(), route))
                .collect(),
        ));
        let routes2 = routes.clone();
        let hits = Arc::new(Mutex::new(HashMap::new()));
        let hits2 = hits.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (routes, hits, tls) = (routes2.clone(), hits2.clone(), tls.clone());
                std::thread::spawn(move || match tls {
                    Some(config) => {
                        let connection = rustls::ServerConnection::new(config).unwrap();
                        let tls_stream = rustls::StreamOwned::new(connection, stream);
                        serve(tls_stream, &routes, &hits);
                    }
                    None => serve(stream, &routes, &hits),
                });
            }
        });
        Server {
            base: format!("{scheme}://127.0.0.1:{port}"),
            routes,
            hits,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Replaces what `path` answers.
    pub fn set(&self, path: &str, route: Route) {
        self.routes.lock().unwrap().insert(path.to_owned(), route);
    }

    pub fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}

fn serve(
    stream: impl Read + Write,
    routes: &Mutex<HashMap<String, Route>>,
    hits: &Mutex<HashMap<String, usize>>,
) {
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if header == "\r\n" {
                break;
            }
        }
        let path = request_line.split(' ').nth(1).unwrap_or("/").to_owned();
        *hits.lock().unwrap().entry(path.clone()).or_default() += 1;
        let stream = reader.get_mut();
        let route = routes.lock().unwrap().get(&path).cloned();
        let result = match route.as_ref() {
            Some(Route::Body(body)) => respond(stream, "200 OK", body, None),
            Some(Route::SlowBody(body, pause)) => {
                std::thread::sleep(*pause);
                respond(stream, "200 OK", body, None)
            }
            Some(Route::Redirect(to)) => respond(stream, "302 Found", b"", Some(to)),
            Some(Route::Stall) => {
                std::thread::sleep(Duration::from_secs(60));
                return;
            }
            None => respond(stream, "404 Not Found", b"", None),
        };
        if result.is_err() {
            return;
        }
    }
}

fn respond(
    stream: &mut impl Write,
    status: &str,
    body: &[u8],
    location: Option<&str>,
) -> std::io::Result<()> {
    let location = location.map_or(String::new(), |l| format!("Location: {l}\r\n"));
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\n{location}\r\n",
        body.len()
    )?;
    stream.write_all(body)?;
    stream.flush()
}

pub fn tls_file(name: &str) -> String {
    format!("{}/tests/tls/{name}", env!("CARGO_MANIFEST_DIR"))
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A small shell script standing in for an agent executable.
pub const AGENT_SCRIPT: &[u8] = b"#!/bin/sh\necho agent\n";

/// One tar entry: a file, a directory, a symlink or a hard link, with its raw name (no checks:
/// the hostile archives need names `tar::Builder` would refuse).
pub enum TarEntry<'a> {
    File(&'a str, &'a [u8], u32),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
    HardLink(&'a str, &'a str),
    Fifo(&'a str),
}

pub fn tar(entries: &[TarEntry<'_>]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for entry in entries {
        let mut header = tar::Header::new_old();
        let (name, kind, data, mode, link): (&str, tar::EntryType, &[u8], u32, Option<&str>) =
            match *entry {
                TarEntry::File(name, data, mode) => {
                    (name, tar::EntryType::Regular, data, mode, None)
                }
                TarEntry::Dir(name) => (name, tar::EntryType::Directory, b"", 0o755, None),
                TarEntry::Symlink(name, to) => {
                    (name, tar::EntryType::Symlink, b"", 0o777, Some(to))
                }
                TarEntry::HardLink(name, to) => (name, tar::EntryType::Link, b"", 0o644, Some(to)),
                TarEntry::Fifo(name) => (name, tar::EntryType::Fifo, b"", 0o644, None),
            };
        let old = header.as_old_mut();
        old.name[..name.len()].copy_from_slice(name.as_bytes());
        if let Some(link) = link {
            old.linkname[..link.len()].copy_from_slice(link.as_bytes());
        }
        header.set_entry_type(kind);
        header.set_mode(mode);
        header.set_size(data.len() as u64);
        header.set_cksum();
        builder.append(&header, data).unwrap();
    }
    builder.into_inner().unwrap()
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

pub fn bzip2(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// One zip entry.
pub enum ZipEntry<'a> {
    File(&'a str, &'a [u8], u32),
    Symlink(&'a str, &'a str),
}

pub fn zip(entries: &[ZipEntry<'_>]) -> Vec<u8> {
    use zip::write::SimpleFileOptions;
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for entry in entries {
        match *entry {
            ZipEntry::File(name, data, mode) => {
                let options = SimpleFileOptions::default()
                    .compression_method(zip::CompressionMethod::Deflated)
                    .unix_permissions(mode);
                writer.start_file(name, options).unwrap();
                writer.write_all(data).unwrap();
            }
            ZipEntry::Symlink(name, to) => {
                writer
                    .add_symlink(name, to, SimpleFileOptions::default())
                    .unwrap();
            }
        }
    }
    writer.finish().unwrap().into_inner()
}

/// A registry with one agent `id` whose linux-x86_64 (and every other platform's) binary is
/// `archive`, running `cmd`.
pub fn binary_registry(id: &str, archive: &str, cmd: &str, sha256: Option<&str>) -> String {
    let mut target = serde_json::json!({"archive": archive, "cmd": cmd, "args": ["--acp"]});
    if let Some(sha256) = sha256 {
        target["sha256"] = sha256.into();
    }
    let platforms: serde_json::Map<String, serde_json::Value> = acp_registry::Platform::ALL
        .iter()
        .map(|p| (p.as_str().to_owned(), target.clone()))
        .collect();
    serde_json::json!({"version": "1.0.0", "agents": [{
        "id": id, "name": id, "version": "1.0.0", "description": "test agent",
        "distribution": {"binary": platforms}
    }]})
    .to_string()
}
