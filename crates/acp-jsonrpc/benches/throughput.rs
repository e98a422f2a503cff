//! Notifications per second through a connection, next to a raw loop that
//! only splits lines and parses them with serde_json.
//!
//! Run with `cargo bench -p acp-rs-jsonrpc --bench throughput`. Set
//! `THROUGHPUT_MESSAGES` to change the message count (default 200 000) and
//! `THROUGHPUT_ROUNDS` the number of rounds each variant's best is taken
//! from (default 5).
//!
//! Every variant sends the same ~170-byte `session/update` notifications and
//! decodes each one's params into the same typed struct, so the ratios show
//! what the connection costs over the bare minimum.

use std::hint::black_box;
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use acp_jsonrpc::memory;
use acp_jsonrpc::{Connection, ConnectionOptions, Handler, IncomingNotification};
use futures_lite::io::BufReader;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateParams<'a> {
    session_id: &'a str,
    #[serde(borrow)]
    update: Update<'a>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Update<'a> {
    session_update: &'a str,
    #[serde(borrow)]
    content: Content<'a>,
}

#[derive(Serialize, Deserialize)]
struct Content<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    text: &'a str,
}

fn params() -> UpdateParams<'static> {
    UpdateParams {
        session_id: "sess_1234",
        update: Update {
            session_update: "agent_message_chunk",
            content: Content {
                kind: "text",
                text: "Hello there",
            },
        },
    }
}

/// What the raw baseline parses: the whole line, typed.
#[derive(Deserialize)]
struct RawNotification<'a> {
    #[allow(dead_code)]
    jsonrpc: &'a str,
    method: &'a str,
    #[serde(borrow)]
    params: UpdateParams<'a>,
}

/// Counts notifications after decoding their params like the baseline.
struct Counting(Arc<AtomicUsize>);

impl Handler for Counting {
    async fn notification(&self, notification: IncomingNotification) {
        let params: UpdateParams<'_> = notification.params().expect("valid params");
        black_box(&params);
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

fn line() -> Vec<u8> {
    let mut line = Vec::new();
    let message = acp_jsonrpc::Notification::new("session/update", &params()).unwrap();
    acp_jsonrpc::Message::Notification(message).encode(&mut line);
    line
}

/// Sender and receiver connections on one thread, over an in-memory pipe.
fn connection_in_memory(n: usize) -> Duration {
    let (sender_end, receiver_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
    let seen = Arc::new(AtomicUsize::new(0));
    let (sender, sender_driver) = Connection::new(
        sender_end.reader,
        sender_end.writer,
        (),
        ConnectionOptions::default(),
    );
    let (_receiver, receiver_driver) = Connection::new(
        receiver_end.reader,
        receiver_end.writer,
        Counting(seen.clone()),
        ConnectionOptions::default(),
    );
    let params = params();
    let start = Instant::now();
    smol::block_on(async {
        let send = async {
            for _ in 0..n {
                sender.notify("session/update", &params).await.unwrap();
            }
            sender.close();
        };
        let ((sent, received), ()) = futures_lite::future::zip(
            futures_lite::future::zip(sender_driver, receiver_driver),
            send,
        )
        .await;
        sent.unwrap();
        received.unwrap();
    });
    let elapsed = start.elapsed();
    assert_eq!(seen.load(Ordering::Relaxed), n);
    elapsed
}

/// Sender and receiver connections on two threads, over a real OS pipe.
fn connection_os_pipe(n: usize) -> Duration {
    let (pipe_reader, pipe_writer) = std::io::pipe().unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let sender = std::thread::spawn(move || {
        // The sender's own input stays open (and silent) until it is done.
        let (_keep_open, silent) = memory::pipe(1);
        let writer = smol::Async::new(pipe_writer).unwrap();
        let (sender, driver) = Connection::new(
            BufReader::new(silent),
            writer,
            (),
            ConnectionOptions::default(),
        );
        let params = params();
        smol::block_on(async {
            let send = async {
                for _ in 0..n {
                    sender.notify("session/update", &params).await.unwrap();
                }
                sender.close();
            };
            let (sent, ()) = futures_lite::future::zip(driver, send).await;
            sent.unwrap();
        });
    });
    let reader = BufReader::with_capacity(64 * 1024, smol::Async::new(pipe_reader).unwrap());
    let (_receiver, driver) = Connection::new(
        reader,
        futures_lite::io::sink(),
        Counting(seen.clone()),
        ConnectionOptions::default(),
    );
    smol::block_on(driver).unwrap();
    sender.join().unwrap();
    let elapsed = start.elapsed();
    assert_eq!(seen.load(Ordering::Relaxed), n);
    elapsed
}

fn parse_lines(bytes: &[u8]) -> usize {
    let mut count = 0;
    for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let message: RawNotification<'_> = serde_json::from_slice(line).unwrap();
        black_box(&message.params);
        assert_eq!(message.method, "session/update");
        count += 1;
    }
    count
}

/// The floor: pre-serialized lines in memory, split and parsed.
fn raw_in_memory(n: usize) -> Duration {
    let line = line();
    let bytes = line.repeat(n);
    let start = Instant::now();
    let count = parse_lines(&bytes);
    let elapsed = start.elapsed();
    assert_eq!(count, n);
    elapsed
}

/// What any design that keeps params raw must do: parse the envelope with
/// the params as `RawValue`, copy them out, then parse them typed.
fn raw_two_step(n: usize) -> Duration {
    #[derive(Deserialize)]
    struct Envelope<'a> {
        #[allow(dead_code)]
        jsonrpc: &'a str,
        method: &'a str,
        #[serde(borrow)]
        params: &'a serde_json::value::RawValue,
    }
    let line = line();
    let bytes = line.repeat(n);
    let start = Instant::now();
    let mut count = 0;
    for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let envelope: Envelope<'_> = serde_json::from_slice(line).unwrap();
        assert_eq!(envelope.method, "session/update");
        let params = envelope.params.to_owned();
        let typed: UpdateParams<'_> = serde_json::from_str(params.get()).unwrap();
        black_box(&typed);
        count += 1;
    }
    let elapsed = start.elapsed();
    assert_eq!(count, n);
    elapsed
}

/// The floor for one thread doing both sides: serialize each message into
/// a buffer, then split and parse, like the in-memory connection run does.
fn raw_serialize_and_parse(n: usize) -> Duration {
    let params = params();
    let start = Instant::now();
    let mut bytes = Vec::with_capacity(64 * 1024);
    let mut count = 0;
    for i in 0..n {
        let message = RawOutgoing {
            jsonrpc: "2.0",
            method: "session/update",
            params: &params,
        };
        serde_json::to_writer(&mut bytes, &message).unwrap();
        bytes.push(b'\n');
        if bytes.len() >= 60 * 1024 || i + 1 == n {
            count += parse_lines(&bytes);
            bytes.clear();
        }
    }
    let elapsed = start.elapsed();
    assert_eq!(count, n);
    elapsed
}

#[derive(Serialize)]
struct RawOutgoing<'a> {
    jsonrpc: &'a str,
    method: &'a str,
    params: &'a UpdateParams<'a>,
}

/// The floor over a pipe: one thread writes pre-serialized lines with
/// blocking writes, the other reads, splits and parses them.
fn raw_os_pipe(n: usize) -> Duration {
    let (pipe_reader, mut pipe_writer) = std::io::pipe().unwrap();
    let line = line();
    let start = Instant::now();
    let writer = std::thread::spawn(move || {
        let mut batch = Vec::with_capacity(64 * 1024);
        for _ in 0..n {
            batch.extend_from_slice(&line);
            if batch.len() >= 60 * 1024 {
                pipe_writer.write_all(&batch).unwrap();
                batch.clear();
            }
        }
        pipe_writer.write_all(&batch).unwrap();
    });
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, pipe_reader);
    let mut buffer = Vec::new();
    let mut count = 0;
    loop {
        buffer.clear();
        if reader.read_until(b'\n', &mut buffer).unwrap() == 0 {
            break;
        }
        count += parse_lines(&buffer);
    }
    writer.join().unwrap();
    let elapsed = start.elapsed();
    assert_eq!(count, n);
    elapsed
}

/// Best of `rounds` runs (after one warm-up each), as messages per second.
/// The variants take turns within each round, so that a burst of load from
/// elsewhere on the machine hits them alike and best-of filters it out.
fn measure_all(n: usize, rounds: usize, variants: &[fn(usize) -> Duration]) -> Vec<f64> {
    for run in variants {
        run(n / 10);
    }
    let mut best = vec![Duration::MAX; variants.len()];
    for _ in 0..rounds {
        for (run, best) in variants.iter().zip(&mut best) {
            *best = (*best).min(run(n));
        }
    }
    best.iter().map(|d| n as f64 / d.as_secs_f64()).collect()
}

fn measure(n: usize, run: fn(usize) -> Duration) -> f64 {
    measure_all(n, 3, &[run])[0]
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not.
    let benchmarking = std::env::args().any(|arg| arg == "--bench");
    let n: usize = std::env::var("THROUGHPUT_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if benchmarking { 200_000 } else { 2_000 });

    // For profiling one variant: THROUGHPUT_ONLY=memory (or pipe).
    match std::env::var("THROUGHPUT_ONLY").as_deref() {
        Ok("memory") => return println!("{:.0} msgs/s", measure(n, connection_in_memory)),
        Ok("pipe") => return println!("{:.0} msgs/s", measure(n, connection_os_pipe)),
        _ => {}
    }

    println!(
        "{n} notifications of {} bytes each (line included)\n",
        line().len()
    );
    let rounds = std::env::var("THROUGHPUT_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let rates = measure_all(
        n,
        rounds,
        &[
            raw_in_memory,
            raw_serialize_and_parse,
            raw_os_pipe,
            raw_two_step,
            connection_in_memory,
            connection_os_pipe,
        ],
    );
    let [raw_memory, raw_both, raw_pipe, two_step, memory, pipe] = rates[..] else {
        unreachable!()
    };

    println!("{:<52} {:>10}  {:>8}", "variant", "msgs/s", "ratio");
    let row = |name: &str, rate: f64, baseline: Option<(&str, f64)>| match baseline {
        Some((label, base)) => {
            println!("{name:<52} {rate:>10.0}  {:>7.2}x of {label}", rate / base)
        }
        None => println!("{name:<52} {rate:>10.0}"),
    };
    row("[A] raw: split + parse, in memory", raw_memory, None);
    row(
        "[B] raw: serialize + split + parse, 1 thread",
        raw_both,
        None,
    );
    row("[C] raw: split + parse, OS pipe, 2 threads", raw_pipe, None);
    row(
        "[D] raw: envelope with RawValue, then params",
        two_step,
        Some(("A", raw_memory)),
    );
    row(
        "connection, in-memory pipe, 1 thread",
        memory,
        Some(("A", raw_memory)),
    );
    row("", memory, Some(("B", raw_both)));
    row(
        "connection, OS pipe, 2 threads",
        pipe,
        Some(("C", raw_pipe)),
    );
}
