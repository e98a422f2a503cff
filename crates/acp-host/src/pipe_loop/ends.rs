//! The two ends of a pipe pair as async streams, and the state they share with the loop that
//! waits for them: which waker waits for which end, and whether trying the end again can be
//! skipped (the loop knows it is still empty, or full). Both loops use them: the one over two
//! pipes (`block_on`) and the one over a set of pairs (`PipeSet`).

use std::io;
use std::ops::Range;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use futures_lite::{AsyncBufRead, AsyncRead, AsyncWrite};

use super::epoll::Registration;

/// What the two-pipe loop reads at most while it sleeps in `read`, as the raw pair's reads do,
/// and the size of a [`BufPipeReader`]'s buffer: the two exchange buffers of this size.
pub const BUFFER_BYTES: usize = 64 * 1024;

/// The wakers waiting for the pipes, shared by the pipe ends and the loop.
pub(super) struct Interest {
    pub(super) readable: Option<Waker>,
    pub(super) writable: Option<Waker>,
    /// Cleared when a read returns `EAGAIN`, set when epoll reports the pipe readable: while
    /// clear, polling the reader costs no system call. Only cleared once a read found the pipe
    /// empty, so that any data after that is a new edge for the edge-triggered epoll.
    pub(super) may_read: bool,
    pub(super) may_write: bool,
    /// The last read emptied the pipe (it returned less than asked for).
    /// Writing after that usually means waiting for the peer's answer to what
    /// was written, so the next read skips straight to waiting instead of
    /// trying a read that would only return `EAGAIN`: one system call less
    /// per request/response round trip. A reader that does not write (a
    /// stream of notifications) keeps reading eagerly.
    pub(super) drained: bool,
    /// The read end is a pipe or socket watched by an edge-triggered epoll for as long as it
    /// lives (a pipe set's pair). A read that returns less than asked for emptied it, so any
    /// later data is a new edge: the reader waits for that edge instead of trying a read that
    /// would return `EAGAIN`, whatever it writes meanwhile and to whichever pipe (a conductor
    /// reads one pipe and writes another).
    pub(super) read_edges: bool,
    /// How many times the loop reported the read end readable: a short read clears `may_read`
    /// only if no report came since the read began (a report after it is for later data).
    pub(super) read_reports: u64,
    /// The loop reported the other end closed (`EPOLLHUP`). No edge comes after that, so
    /// neither a short read nor a write after one (`drained`) clears `may_read`: the next read
    /// returns what is left, then the end of input.
    pub(super) read_hung_up: bool,
    /// How the reader tries the read end without waiting.
    pub(super) read_mode: ReadMode,
    /// What the loop read while it slept in `read` ([`BUFFER_BYTES`] once allocated), given
    /// to the reader from `parked_at` to `parked_end` before it reads the pipe again: copied
    /// by a [`PipeReader`], taken whole (in exchange for its consumed buffer) by a
    /// [`BufPipeReader`].
    pub(super) parked: Vec<u8>,
    pub(super) parked_at: usize,
    pub(super) parked_end: usize,
    /// The loop's thread and the signal that interrupts its `read`, while it sleeps there. A
    /// waker signals while holding this lock and the loop clears it under the lock before it
    /// goes on, so a signal never reaches a thread that left (or another thread with its id).
    pub(super) reading: Option<(libc::pid_t, libc::c_int)>,
}

/// How the reader reads the read end without waiting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ReadMode {
    /// The read end stays blocking (so that the loop can sleep in `read` on it) and the reader
    /// reads with `preadv2(RWF_NOWAIT)`: a pipe, with its status flags.
    Blocking(libc::c_int),
    /// The read end is `O_NONBLOCK` and read with `read`: anything else, or a kernel whose
    /// pipes refuse `RWF_NOWAIT`. The loop then always waits in `epoll_wait`.
    NonBlocking,
}

impl Default for Interest {
    fn default() -> Self {
        Interest {
            readable: None,
            writable: None,
            may_read: true,
            may_write: true,
            drained: false,
            read_edges: false,
            read_reports: 0,
            read_hung_up: false,
            read_mode: ReadMode::NonBlocking,
            parked: Vec::new(),
            parked_at: 0,
            parked_end: 0,
            reading: None,
        }
    }
}

/// The read end.
pub struct PipeReader {
    /// Declared before `fd`, so dropped first: the descriptor leaves the loop's epoll set while
    /// it is still open (closing a duplicate would not remove it).
    pub(super) registration: Option<Registration>,
    pub(super) fd: OwnedFd,
    pub(super) interest: Arc<Mutex<Interest>>,
}

/// The write end. Closing it (or dropping it) closes the descriptor: the reader at the other
/// end sees end of input.
pub struct PipeWriter {
    /// Before `fd`, as in [`PipeReader`].
    pub(super) registration: Option<Registration>,
    pub(super) fd: Option<OwnedFd>,
    pub(super) interest: Arc<Mutex<Interest>>,
}

/// The read end as an [`AsyncBufRead`] (from [`PipeReader::buffered`]): its buffer is the one
/// the two-pipe loop reads into while it sleeps in `read`, taken by exchanging the two buffers
/// under the lock the reader takes anyway, so the bytes are not copied from one to the other
/// (the read end's [`AsyncRead`] copies them). What it keeps: two buffers of [`BUFFER_BYTES`],
/// its own and the loop's, which it exchanges (docs/limits.md).
pub struct BufPipeReader {
    reader: PipeReader,
    /// Holds the bytes from `held_at` to `held_end` not yet consumed; empty until the first
    /// read or exchange, then [`BUFFER_BYTES`] long.
    held: Vec<u8>,
    held_at: usize,
    held_end: usize,
}

impl std::fmt::Debug for BufPipeReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufPipeReader")
            .field("reader", &self.reader)
            .field("buffered", &(self.held_end - self.held_at))
            .finish_non_exhaustive()
    }
}

impl AsyncBufRead for BufPipeReader {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.held_at == this.held_end {
            let read =
                std::task::ready!(this.reader.read_into(cx, Target::Exchange(&mut this.held)))?;
            (this.held_at, this.held_end) = (read.start, read.end);
        }
        Poll::Ready(Ok(&this.held[this.held_at..this.held_end]))
    }

    fn consume(self: Pin<&mut Self>, amount: usize) {
        let this = self.get_mut();
        this.held_at = (this.held_at + amount).min(this.held_end);
    }
}

impl AsyncRead for BufPipeReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        // A read at least as large as the buffer, with nothing buffered, bypasses it, as
        // `BufReader`'s does.
        if self.held_at == self.held_end && buf.len() >= BUFFER_BYTES {
            return self
                .reader
                .read_into(cx, Target::Copy(buf))
                .map_ok(|read| read.len());
        }
        let held = std::task::ready!(self.as_mut().poll_fill_buf(cx))?;
        let n = held.len().min(buf.len());
        buf[..n].copy_from_slice(&held[..n]);
        self.consume(n);
        Poll::Ready(Ok(n))
    }
}

impl std::fmt::Debug for PipeReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipeReader")
            .field("fd", &self.fd)
            .field("in_a_set", &self.registration.is_some())
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for PipeWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipeWriter")
            .field("fd", &self.fd)
            .field("in_a_set", &self.registration.is_some())
            .finish_non_exhaustive()
    }
}

pub(super) fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor we own, with integer arguments.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub(super) fn is_pipe(fd: &OwnedFd) -> bool {
    file_type(fd) == Some(libc::S_IFIFO)
}

/// Whether a read from `fd` that returns less than asked for leaves it empty, as a pipe's or
/// a socket's does (a terminal's returns one line at a time).
pub(super) fn short_read_empties(fd: &OwnedFd) -> bool {
    matches!(file_type(fd), Some(libc::S_IFIFO | libc::S_IFSOCK))
}

fn file_type(fd: &OwnedFd) -> Option<libc::mode_t> {
    // SAFETY: fstat fills a struct we own.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        (libc::fstat(fd.as_raw_fd(), &mut stat) == 0).then_some(stat.st_mode & libc::S_IFMT)
    }
}

/// Reads what `fd` has without waiting: `EAGAIN` when it has nothing.
fn read_now(fd: RawFd, mode: ReadMode, buf: &mut [u8]) -> isize {
    match mode {
        ReadMode::Blocking(_) => {
            let iov = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            };
            // SAFETY: `iov` describes `buf`, valid for writes of its length; offset -1 reads
            // at the current position, as `read` does.
            unsafe { libc::preadv2(fd, &iov, 1, -1, libc::RWF_NOWAIT) }
        }
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
        ReadMode::NonBlocking => unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) },
    }
}

fn would_block(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::WouldBlock
}

impl AsyncRead for PipeReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut()
            .read_into(cx, Target::Copy(buf))
            .map_ok(|read| read.len())
    }
}

/// Where [`PipeReader::read_into`] puts what it reads: what the loop read while it slept is
/// copied into a plain buffer, and exchanged with a [`BufPipeReader`]'s.
enum Target<'a> {
    Copy(&'a mut [u8]),
    Exchange(&'a mut Vec<u8>),
}

impl PipeReader {
    /// This reader with a buffer of [`BUFFER_BYTES`] in front of it, which takes what the
    /// loop read while it slept in `read` by exchanging buffers with it instead of copying.
    pub fn buffered(self) -> BufPipeReader {
        BufPipeReader {
            reader: self,
            held: Vec::new(),
            held_at: 0,
            held_end: 0,
        }
    }

    /// What the loop read while it slept, else a read of the pipe without waiting (into the
    /// target's buffer), else `Pending` with the waker registered; where in the target's buffer
    /// the bytes are. One lock of the shared state when the reader has to wait.
    fn read_into(
        &mut self,
        cx: &mut Context<'_>,
        target: Target<'_>,
    ) -> Poll<io::Result<Range<usize>>> {
        let (mut mode, reports) = {
            let mut interest = self.interest.lock().unwrap();
            if interest.parked_at < interest.parked_end {
                let Interest {
                    parked,
                    parked_at,
                    parked_end,
                    ..
                } = &mut *interest;
                return Poll::Ready(Ok(match target {
                    Target::Copy(buf) => {
                        let n = buf.len().min(*parked_end - *parked_at);
                        buf[..n].copy_from_slice(&parked[*parked_at..*parked_at + n]);
                        *parked_at += n;
                        0..n
                    }
                    // The loop's buffer becomes the reader's, and the reader's (consumed) the
                    // one the loop reads into next time.
                    Target::Exchange(held) => {
                        std::mem::swap(held, parked);
                        let taken = *parked_at..*parked_end;
                        (*parked_at, *parked_end) = (0, 0);
                        taken
                    }
                }));
            }
            if !interest.may_read {
                interest.readable = Some(cx.waker().clone());
                return Poll::Pending;
            }
            (interest.read_mode, interest.read_reports)
        };
        let buf = match target {
            Target::Copy(buf) => buf,
            Target::Exchange(held) => {
                if held.len() < BUFFER_BYTES {
                    *held = vec![0; BUFFER_BYTES];
                }
                &mut held[..]
            }
        };
        loop {
            let n = read_now(self.fd.as_raw_fd(), mode, buf);
            if n >= 0 {
                let drained = (n as usize) < buf.len();
                let mut interest = self.interest.lock().unwrap();
                if !interest.read_edges {
                    interest.drained = drained;
                } else if drained
                    // End of input (0) is no edge to wait for: the next read returns it again.
                    && n > 0
                    && interest.read_reports == reports
                    && !interest.read_hung_up
                {
                    interest.may_read = false;
                }
                return Poll::Ready(Ok(0..n as usize));
            }
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if matches!(mode, ReadMode::Blocking(_)) && refuses_nowait(&error) {
                // An old kernel: the pipe becomes non-blocking and the loop waits in epoll.
                set_nonblocking(self.fd.as_raw_fd())?;
                mode = ReadMode::NonBlocking;
                self.interest.lock().unwrap().read_mode = mode;
                continue;
            }
            if !would_block(&error) {
                return Poll::Ready(Err(error));
            }
            let mut interest = self.interest.lock().unwrap();
            interest.may_read = false;
            interest.drained = false;
            interest.readable = Some(cx.waker().clone());
            return Poll::Pending;
        }
    }
}

/// `preadv2` or `RWF_NOWAIT` unknown to this kernel, or refused for this descriptor.
fn refuses_nowait(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EOPNOTSUPP | libc::ENOSYS | libc::EINVAL)
    )
}

impl Drop for PipeReader {
    fn drop(&mut self) {
        // The loop sleeps in `read` only for a reader that waits; this one never will again.
        self.interest.lock().unwrap().readable = None;
    }
}

impl AsyncWrite for PipeWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let Some(fd) = self.fd.as_ref().map(AsRawFd::as_raw_fd) else {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        };
        {
            let mut interest = self.interest.lock().unwrap();
            if !interest.may_write {
                interest.writable = Some(cx.waker().clone());
                return Poll::Pending;
            }
        }
        loop {
            // SAFETY: `buf` is valid for reads of `buf.len()` bytes.
            let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
            if n >= 0 {
                let mut interest = self.interest.lock().unwrap();
                if interest.drained && !interest.read_hung_up {
                    interest.drained = false;
                    interest.may_read = false;
                }
                return Poll::Ready(Ok(n as usize));
            }
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if !would_block(&error) {
                return Poll::Ready(Err(error));
            }
            let mut interest = self.interest.lock().unwrap();
            interest.may_write = false;
            interest.writable = Some(cx.waker().clone());
            return Poll::Pending;
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Nothing is buffered here: every write went to the pipe.
        Poll::Ready(Ok(()))
    }

    fn poll_close(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.registration = None;
        self.fd = None;
        Poll::Ready(Ok(()))
    }
}
