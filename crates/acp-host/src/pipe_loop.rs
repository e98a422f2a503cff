//! A reactor-free way to run connections over pipes on the calling thread.
//!
//! smol's `block_on` shares one I/O reactor with async-io's helper thread. When the connection's
//! thread is busy for a moment the helper takes the reactor, and from then on every wake-up of
//! the connection is a hand-off between the two threads (futex, `epoll_pwait`,
//! `timerfd_settime`); the reactor also re-arms each descriptor on every wait (`epoll_ctl`) and
//! tries every read before waiting: about 30 system calls per request/response round trip
//! instead of 4. For processes whose traffic is pipes, the loops here wait with `epoll_wait(2)`
//! on exactly those pipes (edge-triggered, each registered once) plus an eventfd for wake-ups
//! from other threads:
//!
//! - [`block_on`] over one pair ([`pipes`]): an agent, a client, a proxy. When the future waits
//!   for the read end alone, it sleeps in `read(2)` on the pipe itself instead, one system call
//!   per wake-up where `epoll_wait` and the read after it are two; another thread's wake-up
//!   then reaches it as a signal sent to the loop's thread. The signal is `SIGURG`, claimed only
//!   while its disposition is the default (an application with its own handler keeps it, and
//!   its loops wait in `epoll_wait`); `ACP_PIPE_LOOP_SIGNAL=off` in the environment turns the
//!   claim off, `ACP_PIPE_LOOP_SIGNAL=N` claims signal `N` instead. An application must not
//!   install its own handler for that signal while a loop runs.
//! - [`PipeSet::block_on`] over any number of pairs, added while it runs ([`PipeSet::add`]) and
//!   removed when dropped: a conductor, its own stdio and each component's.
//!
//! Everything else (timers, other async-io sources) keeps working: while no smol `block_on`
//! runs, async-io's helper thread drives the reactor and wakes the loop through the eventfd.

mod ends;
mod epoll;
mod join;
mod set;
mod wake_signal;
mod waker;

pub use ends::{BUFFER_BYTES, BufPipeReader, PipeReader, PipeWriter};
pub use join::join_woken;
pub use set::PipeSet;

use ends::{Interest, ReadMode, is_pipe, set_nonblocking};
use epoll::{Epoll, HUNG_UP};
use wake_signal::Slept;
use waker::{AWAKE, IN_EPOLL, IN_READ, LoopWaker};

use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::pin::pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// One read end and one write end, both non-blocking, waited on by [`block_on`].
pub struct Pipes {
    interest: Arc<Mutex<Interest>>,
    read_fd: RawFd,
    write_fd: RawFd,
}

impl std::fmt::Debug for Pipes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipes")
            .field("read_fd", &self.read_fd)
            .field("write_fd", &self.write_fd)
            .finish_non_exhaustive()
    }
}

/// Takes `reader` and `writer` for a loop run by [`block_on`]. The writer is made
/// non-blocking; the reader too unless it is a pipe, which stays blocking so that the loop can
/// sleep in `read` on it (its reads without waiting use `RWF_NOWAIT`).
pub fn pipes(reader: OwnedFd, writer: OwnedFd) -> io::Result<(Pipes, PipeReader, PipeWriter)> {
    let read_mode = if is_pipe(&reader) {
        ReadMode::Blocking(wake_signal::set_blocking(reader.as_raw_fd())?)
    } else {
        set_nonblocking(reader.as_raw_fd())?;
        ReadMode::NonBlocking
    };
    set_nonblocking(writer.as_raw_fd())?;
    let interest = Arc::new(Mutex::new(Interest {
        read_mode,
        ..Interest::default()
    }));
    let pipes = Pipes {
        interest: interest.clone(),
        read_fd: reader.as_raw_fd(),
        write_fd: writer.as_raw_fd(),
    };
    Ok((
        pipes,
        PipeReader {
            registration: None,
            fd: reader,
            interest: interest.clone(),
        },
        PipeWriter {
            registration: None,
            fd: Some(writer),
            interest,
        },
    ))
}

/// What an epoll event of [`block_on`] is about.
const EVENTFD: u64 = 0;
const READ_END: u64 = 1;
const WRITE_END: u64 = 2;

/// Runs `future` to completion on this thread, sleeping in `read(2)` on the read end while only
/// the reader waits, and otherwise in `epoll_wait(2)` on the pipes' descriptors and an eventfd,
/// instead of in a reactor. Wakers may be woken from any thread.
pub fn block_on<F: Future>(pipes: &Pipes, future: F) -> io::Result<F::Output> {
    let state = Arc::new(LoopWaker::new(Some(pipes.interest.clone()))?);
    let epoll = Epoll::new()?;
    epoll.watch(state.eventfd.as_raw_fd(), libc::EPOLLIN as u32, EVENTFD)?;
    let mut reader_sleep = ReadSleep::new(pipes);
    let waker = Waker::from(state.clone());
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    // The pipes are watched from the first time a reader or writer waits on them (the
    // descriptors are open then: the reader or writer holding them is alive). The read end
    // stays watched; the write end only while a writer waits, since it is rarely full.
    let mut read_watched = false;
    let mut write_watched = false;
    loop {
        state.woken.store(false, Ordering::SeqCst);
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return Ok(output);
        }
        if state.woken.load(Ordering::SeqCst) {
            continue;
        }
        let (want_read, want_write, read_sleep) = {
            let mut interest = pipes.interest.lock().unwrap();
            let (want_read, want_write) =
                (interest.readable.is_some(), interest.writable.is_some());
            let read_sleep = if want_read && !want_write {
                reader_sleep.prepare(pipes.read_fd, &mut interest)
            } else {
                None
            };
            (want_read, want_write, read_sleep)
        };
        if let Some(sleep) = read_sleep {
            reader_sleep.sleep(sleep, pipes, &state);
            continue;
        }
        let (mut read_ready, mut write_ready, mut read_hung_up) = (false, false, false);
        if want_read && !read_watched {
            read_watched = true;
            read_ready = epoll
                .watch(pipes.read_fd, libc::EPOLLIN as u32, READ_END)
                .is_err();
        }
        if want_write && !write_watched {
            write_watched = true;
            write_ready = epoll
                .watch(pipes.write_fd, libc::EPOLLOUT as u32, WRITE_END)
                .is_err();
        } else if !want_write && write_watched {
            write_watched = false;
            epoll.unwatch(pipes.write_fd);
        }
        if !read_ready && !write_ready {
            state.sleeping.store(IN_EPOLL, Ordering::SeqCst);
            // A wake-up between the poll of the future and here found `sleeping` false: check.
            let mut events = [libc::epoll_event { events: 0, u64: 0 }; 4];
            let ready = if state.woken.load(Ordering::SeqCst) {
                Ok(0)
            } else {
                epoll.wait(&mut events)
            };
            state.sleeping.store(AWAKE, Ordering::SeqCst);
            for event in &events[..ready?] {
                match event.u64 {
                    EVENTFD => state.drain_eventfd(),
                    READ_END => {
                        read_ready = true;
                        read_hung_up |= event.events & HUNG_UP != 0;
                    }
                    _ => write_ready = true,
                }
            }
        }
        let wake = {
            let mut interest = pipes.interest.lock().unwrap();
            if read_ready {
                // Data came after the read that found the pipe empty: a write must not make the
                // reader wait for another edge, which may never come.
                interest.drained = false;
                interest.may_read = true;
            }
            interest.read_hung_up |= read_hung_up;
            interest.may_write |= write_ready;
            [
                if read_ready {
                    interest.readable.take()
                } else {
                    None
                },
                if write_ready {
                    interest.writable.take()
                } else {
                    None
                },
            ]
        };
        for waker in wake.into_iter().flatten() {
            waker.wake();
        }
    }
}

/// What [`block_on`] needs to sleep in `read` on the read end: the signal that interrupts it
/// (none: it never sleeps there), its thread, and its own duplicate of the read end (opened at
/// the first sleep, closed when `block_on` returns), which the signal handler may touch even
/// if the future dropped the reader meanwhile.
struct ReadSleep {
    signal: Option<libc::c_int>,
    thread: libc::pid_t,
    fd: Option<OwnedFd>,
    /// Sleeps left in `epoll_wait` after another thread woke a sleep in `read`: a signal costs
    /// more than the eventfd (about 3 µs of CPU more per wake-up, docs/performance-stdio.md), so a
    /// loop that other threads wake often (files read on the blocking pool, say) waits in
    /// `epoll_wait` and tries `read` again only after [`EPOLL_TURNS_AFTER_SIGNAL`] sleeps.
    epoll_turns: u32,
}

/// See [`ReadSleep::epoll_turns`].
const EPOLL_TURNS_AFTER_SIGNAL: u32 = 64;

/// One sleep in `read`: the descriptor, its status flags, the buffer to read into.
struct Sleep {
    fd: RawFd,
    flags: libc::c_int,
    buffer: Vec<u8>,
}

impl ReadSleep {
    fn new(pipes: &Pipes) -> ReadSleep {
        let blocking = matches!(
            pipes.interest.lock().unwrap().read_mode,
            ReadMode::Blocking(_)
        );
        ReadSleep {
            signal: if blocking {
                wake_signal::claimed()
            } else {
                None
            },
            thread: wake_signal::this_thread(),
            fd: None,
            epoll_turns: 0,
        }
    }

    /// Called under the interest lock while only the reader waits: whether to sleep in
    /// `read`, and if so on which descriptor into which buffer, with the thread registered for
    /// wake-ups by signal. A reader that waits is alive (dropping it clears its waker under
    /// this lock), so its descriptor is open to duplicate.
    fn prepare(&mut self, read_fd: RawFd, interest: &mut Interest) -> Option<Sleep> {
        let signal = self.signal?;
        let ReadMode::Blocking(flags) = interest.read_mode else {
            return None;
        };
        if interest.parked_at < interest.parked_end {
            return None;
        }
        if self.epoll_turns > 0 {
            self.epoll_turns -= 1;
            return None;
        }
        let fd = match &self.fd {
            Some(fd) => fd.as_raw_fd(),
            None => {
                // SAFETY: duplicates the read end, open while its reader waits (see above).
                let raw = unsafe { libc::fcntl(read_fd, libc::F_DUPFD_CLOEXEC, 0) };
                if raw == -1 {
                    // Out of descriptors, say: this loop waits in `epoll_wait` from now on.
                    self.signal = None;
                    return None;
                }
                // SAFETY: the descriptor was just created and is owned by nothing else.
                let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) };
                self.fd.insert(fd).as_raw_fd()
            }
        };
        let mut buffer = std::mem::take(&mut interest.parked);
        if buffer.len() < BUFFER_BYTES {
            buffer = vec![0; BUFFER_BYTES];
        }
        interest.reading = Some((self.thread, signal));
        Some(Sleep { fd, flags, buffer })
    }

    /// Sleeps in `read` until data, end of input, an error or another thread's wake-up; hands
    /// what it read to the reader and wakes it.
    fn sleep(&mut self, sleep: Sleep, pipes: &Pipes, state: &LoopWaker) {
        let Sleep {
            fd,
            flags,
            mut buffer,
        } = sleep;
        state.sleeping.store(IN_READ, Ordering::SeqCst);
        // A wake-up between the poll of the future and here found the loop awake: checked
        // once the handler knows the descriptor (see `sleep_in_read`).
        let outcome = wake_signal::sleep_in_read(fd, flags, &mut buffer, || {
            state.woken.load(Ordering::SeqCst)
        });
        state.sleeping.store(AWAKE, Ordering::SeqCst);
        let read = match outcome {
            Ok(Slept::Read(n)) => Some(n),
            Ok(Slept::Interrupted) => {
                if state.woken.load(Ordering::SeqCst) {
                    self.epoll_turns = EPOLL_TURNS_AFTER_SIGNAL;
                }
                None
            }
            // The pipe no longer blocks (another process sharing it made it non-blocking):
            // sleeping in `read` would spin, so this loop waits in `epoll_wait` from now on.
            Ok(Slept::NotBlocking) => {
                self.signal = None;
                None
            }
            // The reader's next read meets the error again and reports it; this loop waits in
            // `epoll_wait` from now on.
            Err(_) => {
                self.signal = None;
                Some(0)
            }
        };
        let waker = {
            let mut interest = pipes.interest.lock().unwrap();
            interest.reading = None;
            if let Some(n) = read {
                interest.parked_at = 0;
                interest.parked_end = n;
                interest.may_read = true;
                interest.drained = n > 0 && n < buffer.len();
            }
            interest.parked = buffer;
            read.and_then(|_| interest.readable.take())
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}
