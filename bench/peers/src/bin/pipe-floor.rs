//! The floor under `rpc`: two processes playing request/response over pipes with no protocol
//! work at all, waiting four ways: blocking reads (what the raw peers do, and our pipe loop
//! while only its reader waits); non-blocking pipes waited on by an edge-triggered
//! `epoll_wait(2)` before each read (what a readiness-based asynchronous runtime does); `poll(2)`
//! on the pipe and an eventfd; and io_uring, one `io_uring_enter` submitting the read and
//! waiting for it with an eventfd read in flight. The differences are the kernel's price of
//! waiting on more than one thing, per round trip.
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
    for waiting in [
        Waiting::BlockingRead,
        Waiting::Epoll,
        Waiting::Poll,
        Waiting::IoUring,
    ] {
        let per_round_trip = run(waiting, round_trips)?;
        println!("{waiting:?}: {per_round_trip:.2} µs per round trip");
    }
    Ok(())
}

#[derive(Clone, Copy, Debug)]
enum Waiting {
    BlockingRead,
    /// Edge-triggered `epoll_wait` on the pipe (and an idle eventfd), then `read`.
    Epoll,
    /// `poll(2)` on the pipe and an idle eventfd, then `read`.
    Poll,
    /// One `io_uring_enter` submitting the read and waiting for it, with a read of an idle
    /// eventfd kept in flight beside it (what lets another thread wake the waiter).
    IoUring,
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
    waiting: Waiting,
    epoll: RawFd,
    eventfd: RawFd,
    ring: Option<io_uring::IoUring>,
    eventfd_count: Box<u64>,
}

impl Reader {
    fn new(fd: OwnedFd, waiting: Waiting) -> Self {
        let mut reader = Reader {
            fd,
            waiting,
            epoll: -1,
            eventfd: -1,
            ring: None,
            eventfd_count: Box::new(0),
        };
        if matches!(waiting, Waiting::BlockingRead) {
            return reader;
        }
        let fd = reader.fd.as_raw_fd();
        // SAFETY: plain system calls on descriptors we own, with valid arguments.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
            reader.eventfd = libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK);
        }
        match waiting {
            Waiting::Epoll => {
                // SAFETY: as above.
                unsafe {
                    reader.epoll = libc::epoll_create1(libc::EPOLL_CLOEXEC);
                    for (watched, token) in [(fd, 1), (reader.eventfd, 0)] {
                        let mut event = libc::epoll_event {
                            events: (libc::EPOLLIN | libc::EPOLLET) as u32,
                            u64: token,
                        };
                        libc::epoll_ctl(reader.epoll, libc::EPOLL_CTL_ADD, watched, &mut event);
                    }
                }
            }
            Waiting::IoUring => {
                let mut ring = io_uring::IoUring::new(4).expect("io_uring_setup");
                let count: *mut u64 = &mut *reader.eventfd_count;
                let entry = io_uring::opcode::Read::new(
                    io_uring::types::Fd(reader.eventfd),
                    count.cast(),
                    8,
                )
                .build()
                .user_data(0);
                // SAFETY: the count outlives the ring (both live in the reader, the ring is
                // dropped first).
                unsafe { ring.submission().push(&entry).expect("room") };
                reader.ring = Some(ring);
            }
            _ => {}
        }
        reader
    }

    /// Reads what is there, waiting first (in `read` itself, in `epoll_wait`, in `poll` or in
    /// `io_uring_enter`); 0 at end.
    fn read(&mut self, buffer: &mut [u8]) -> usize {
        let fd = self.fd.as_raw_fd();
        loop {
            match self.waiting {
                Waiting::BlockingRead => {}
                Waiting::Epoll => {
                    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 4];
                    // SAFETY: `events` holds 4 entries.
                    unsafe { libc::epoll_wait(self.epoll, events.as_mut_ptr(), 4, -1) };
                }
                Waiting::Poll => {
                    let mut fds = [
                        libc::pollfd {
                            fd,
                            events: libc::POLLIN,
                            revents: 0,
                        },
                        libc::pollfd {
                            fd: self.eventfd,
                            events: libc::POLLIN,
                            revents: 0,
                        },
                    ];
                    // SAFETY: `fds` holds 2 entries.
                    unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
                }
                Waiting::IoUring => {
                    let ring = self.ring.as_mut().expect("ring");
                    let entry = io_uring::opcode::Read::new(
                        io_uring::types::Fd(fd),
                        buffer.as_mut_ptr(),
                        buffer.len() as u32,
                    )
                    .build()
                    .user_data(1);
                    // SAFETY: `buffer` outlives the read: we wait for its completion below.
                    unsafe { ring.submission().push(&entry).expect("room") };
                    loop {
                        ring.submit_and_wait(1).expect("io_uring_enter");
                        if let Some(done) = ring.completion().find(|c| c.user_data() == 1) {
                            assert!(done.result() >= 0, "read: {}", done.result());
                            return done.result() as usize;
                        }
                    }
                }
            }
            // SAFETY: `buffer` is valid for writes of its length.
            let n = unsafe { libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len()) };
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
