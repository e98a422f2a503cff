//! The floor under `rpc`: two processes playing request/response over pipes with no protocol
//! work at all, once with blocking reads (what the raw peers do) and once with non-blocking
//! pipes waited on by an edge-triggered `epoll_wait(2)` before each read (what any
//! readiness-based asynchronous runtime does, ours included). The difference is the kernel's
//! price of waiting on more than one thing, per round trip.
//!
//! `pipe-floor [ROUND_TRIPS]`, best run pinned: `taskset -c 0 pipe-floor 20000`.
//! Each request is the bench's `fs/read_text_file` line and each answer 1,100 bytes, as in
//! `rpc`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Instant;

const REQUEST: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"fs/read_text_file\",\"params\":{\"sessionId\":\"bench-session\",\"path\":\"/tmp/x\"}}\n";
const ANSWER_BYTES: usize = 1100;

fn main() -> io::Result<()> {
    let round_trips: usize = std::env::args()
        .nth(1)
        .map_or(Ok(20_000), |n| n.parse())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    for waiting in [Waiting::BlockingRead, Waiting::Epoll] {
        let per_round_trip = run(waiting, round_trips)?;
        println!("{waiting:?}: {per_round_trip:.2} µs per round trip");
    }
    Ok(())
}

#[derive(Clone, Copy, Debug)]
enum Waiting {
    BlockingRead,
    Epoll,
}

/// Microseconds per round trip.
fn run(waiting: Waiting, round_trips: usize) -> io::Result<f64> {
    let (request_read, request_write) = pipe()?;
    let (answer_read, answer_write) = pipe()?;
    // SAFETY: fork in a single-threaded program; the child only uses async-signal-safe calls
    // (read, write, epoll) and leaves with _exit.
    let child = unsafe { libc::fork() };
    if child == -1 {
        return Err(io::Error::last_os_error());
    }
    if child == 0 {
        drop((request_write, answer_read));
        let mut reader = Reader::new(request_read, waiting);
        let answer = vec![b'x'; ANSWER_BYTES];
        let mut buffer = vec![0; 65536];
        while reader.read(&mut buffer) > 0 {
            write_all(&answer_write, &answer);
        }
        // SAFETY: ends the child without running the parent's destructors.
        unsafe { libc::_exit(0) };
    }
    drop((request_read, answer_write));
    let mut reader = Reader::new(answer_read, waiting);
    let mut buffer = vec![0; 65536];
    let start = Instant::now();
    for _ in 0..round_trips {
        write_all(&request_write, REQUEST);
        let mut received = 0;
        while received < ANSWER_BYTES {
            received += reader.read(&mut buffer);
        }
    }
    let elapsed = start.elapsed();
    drop(request_write);
    // SAFETY: waits for our own child.
    unsafe { libc::waitpid(child, std::ptr::null_mut(), 0) };
    Ok(elapsed.as_secs_f64() * 1e6 / round_trips as f64)
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn write_all(fd: &OwnedFd, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is valid for reads of its length.
        let n = unsafe { libc::write(fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
        assert!(n > 0, "write: {}", io::Error::last_os_error());
        bytes = &bytes[n as usize..];
    }
}

struct Reader {
    fd: OwnedFd,
    epoll: Option<RawFd>,
}

impl Reader {
    fn new(fd: OwnedFd, waiting: Waiting) -> Self {
        let epoll = match waiting {
            Waiting::BlockingRead => None,
            Waiting::Epoll => {
                // SAFETY: plain system calls on descriptors we own, with valid arguments.
                unsafe {
                    let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
                    libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
                    let epoll = libc::epoll_create1(libc::EPOLL_CLOEXEC);
                    let mut event = libc::epoll_event {
                        events: (libc::EPOLLIN | libc::EPOLLET) as u32,
                        u64: 1,
                    };
                    libc::epoll_ctl(epoll, libc::EPOLL_CTL_ADD, fd.as_raw_fd(), &mut event);
                    Some(epoll)
                }
            }
        };
        Reader { fd, epoll }
    }

    /// Reads what is there, waiting first (in `read` itself, or in `epoll_wait`); 0 at end.
    fn read(&mut self, buffer: &mut [u8]) -> usize {
        loop {
            if let Some(epoll) = self.epoll {
                let mut events = [libc::epoll_event { events: 0, u64: 0 }; 4];
                // SAFETY: `events` holds 4 entries.
                unsafe { libc::epoll_wait(epoll, events.as_mut_ptr(), 4, -1) };
            }
            // SAFETY: `buffer` is valid for writes of its length.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    buffer.as_mut_ptr().cast(),
                    buffer.len(),
                )
            };
            if n >= 0 {
                return n as usize;
            }
            let error = io::Error::last_os_error();
            assert!(
                matches!(
                    error.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ),
                "read: {error}"
            );
        }
    }
}
