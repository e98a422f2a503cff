//! The process supervisor: a helper process that kills every process group this crate
//! started once this process is gone, however it went (a clean exit, a panic, Ctrl-C,
//! SIGTERM, SIGHUP, or SIGKILL, which no handler can intercept).
//!
//! # How
//!
//! At the first spawn of an agent or terminal command (or at [`start`]) this process
//! `fork`s, without `exec`, a small child. The child keeps a single descriptor, its end of a
//! Unix socket pair, and blocks reading it. This process keeps the other end
//! (close-on-exec, so that no command inherits it) and writes fixed-size records to it:
//! "watch group N" right after a group is spawned, "forget group N" once this crate has
//! killed that group itself and before it reaps the group's leader. When every copy of this
//! process's end is closed, which the kernel does when this process dies, the child's read
//! returns end-of-file: it sends SIGKILL to every group still watched and exits.
//!
//! Between `fork` and its exit the child runs only system calls (no allocation, no locks,
//! no panics): the other threads of this process do not exist in it, and any lock one of
//! them held stays locked there forever.
//!
//! The child:
//! - closes every other descriptor first (`close_range(2)`, or one `close` per possible
//!   descriptor where that is missing), so it never holds an agent's pipes or this
//!   process's stdout open;
//! - ignores every signal that can be ignored and moves to a process group of its own, so
//!   that Ctrl-C in a terminal, `kill -TERM -<pgid>` or `pkill <name>` aimed at this process
//!   does not take the supervisor down with it and leave the commands behind; only SIGKILL
//!   ends it early;
//! - on Linux, names itself `acp-supervisor` (in `ps`) and unmaps the anonymous memory it
//!   inherited (heap, other threads' stacks), so that it does not keep a copy of pages
//!   this process modifies later; it then holds a few hundred KiB;
//! - remembers up to [`MAX_WATCHED`] groups at a time; groups beyond that are not covered.
//!
//! There is one supervisor per process, a child of it (it shows in `ps` as a child of the
//! client); it lives as long as this process and exits right after it. If this process
//! outlives it (someone sent it SIGKILL), it is reaped at the next record, the failure is
//! reported once on stderr, and spawning continues without it, as when the `fork` fails.
//!
//! # Why not `PR_SET_PDEATHSIG`
//!
//! Linux's parent-death signal fires when the *thread* that spawned a child exits, not the
//! process. Agents and terminal commands are spawned from whatever thread calls
//! [`AgentCommand::spawn`](crate::process::AgentCommand::spawn) or
//! [`TerminalHost::create`](crate::terminal::TerminalHost::create), often a thread of an
//! executor or of smol's blocking pool, which ends when idle: the agent would be killed in
//! the middle of a session. So it is not used, neither on the commands nor on the
//! supervisor itself.
//!
//! # Limits
//!
//! - Groups are killed a moment after this process died. A group whose leader had already
//!   exited and whose other members are gone is skipped only if it was forgotten; a group
//!   still watched at that point is signalled by id, and the id could in theory have been
//!   reused in the moment between the death of this process (which makes its unreaped
//!   leaders reapable by init) and the kill.
//! - Records are written with a blocking write: a supervisor stopped with SIGSTOP, once the
//!   socket buffer (thousands of records) is full, blocks spawning until it resumes.
//! - The child starts as a copy of this process. Start it early with [`start`] in a large
//!   program; outside Linux the copy keeps every page this process changes afterwards.
#![cfg(unix)]

use std::io::{self, Read as _, Write as _};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// How many process groups the supervisor can remember at a time.
pub(crate) const MAX_WATCHED: usize = 4096;

/// One record: the operation, then the group id, both native-endian `i32`.
const RECORD: usize = 8;
const WATCH: i32 = 1;
const FORGET: i32 = 2;

enum State {
    NotStarted,
    Running {
        socket: OwnedFd,
        pid: libc::pid_t,
    },
    /// Could not start, or died: spawning goes on without it.
    Unavailable,
}

static STATE: Mutex<State> = Mutex::new(State::NotStarted);

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts the supervisor if it is not running yet and returns its process id.
///
/// Called by every spawn; a program may call it early (before it grows large) through
/// [`crate::process::start_supervisor`].
pub(crate) fn start() -> io::Result<u32> {
    let mut state = state();
    ensure_started(&mut state);
    match &*state {
        State::Running { pid, .. } => Ok(pid.unsigned_abs()),
        _ => Err(io::Error::other(
            "the process supervisor could not be started or has died",
        )),
    }
}

/// The supervisor's process id while it runs.
pub(crate) fn id() -> Option<u32> {
    match &*state() {
        State::Running { pid, .. } => Some(pid.unsigned_abs()),
        _ => None,
    }
}

/// Has the group killed if this process dies; call right after spawning its leader.
pub(crate) fn watch(pgid: libc::pid_t) {
    send(WATCH, pgid);
}

/// Stops watching the group. Call after killing the group and before reaping its leader,
/// so that its id cannot have been reused by then.
pub(crate) fn forget(pgid: libc::pid_t) {
    send(FORGET, pgid);
}

fn send(operation: i32, pgid: libc::pid_t) {
    // Group ids 0 and 1 would make kill(-pgid) reach far more than one group.
    if pgid <= 1 {
        return;
    }
    let mut state = state();
    if operation == WATCH {
        ensure_started(&mut state);
    }
    let State::Running { socket, pid } = &*state else {
        return;
    };
    let mut record = [0; RECORD];
    record[..4].copy_from_slice(&operation.to_ne_bytes());
    record[4..].copy_from_slice(&pgid.to_ne_bytes());
    if let Err(error) = write_record(socket.as_raw_fd(), &record) {
        let pid = *pid;
        // It is gone (only SIGKILL ends it early): reap it if it has exited.
        // SAFETY: waitpid on our own child, with a valid status pointer.
        unsafe { libc::waitpid(pid, &mut 0, libc::WNOHANG) };
        *state = State::Unavailable;
        report(&format!(
            "the process supervisor (pid {pid}) is gone ({error})"
        ));
    }
}

fn write_record(socket: RawFd, record: &[u8; RECORD]) -> io::Result<()> {
    let mut written = 0;
    while written < RECORD {
        let rest = &record[written..];
        // SAFETY: `rest` is valid for reads of its length. MSG_NOSIGNAL: a dead supervisor
        // is an error here, not a SIGPIPE for the whole process.
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let result =
            unsafe { libc::send(socket, rest.as_ptr().cast(), rest.len(), libc::MSG_NOSIGNAL) };
        // SAFETY: as above. Rust programs ignore SIGPIPE by default.
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let result = unsafe { libc::write(socket, rest.as_ptr().cast(), rest.len()) };
        if result < 0 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        written += result.unsigned_abs();
    }
    Ok(())
}

/// Reports, once per process, that processes may outlive this one.
fn report(reason: &str) {
    let _ = writeln!(
        io::stderr(),
        "acp-host: {reason}; agents and terminal commands started from now on will not be \
         killed if this process dies without shutting them down"
    );
}

fn ensure_started(state: &mut State) {
    if !matches!(state, State::NotStarted) {
        return;
    }
    *state = match fork_supervisor() {
        Ok(running) => running,
        Err(error) => {
            report(&format!("could not start the process supervisor ({error})"));
            State::Unavailable
        }
    };
}

fn fork_supervisor() -> io::Result<State> {
    // Both ends are close-on-exec: commands spawned later never inherit this process's end.
    let (ours, theirs) = UnixStream::pair()?;
    let fallback_limit = descriptor_limit();
    let socket = theirs.as_raw_fd();
    // Signals stay blocked across the fork, so that none reaches the child before it has
    // ignored them: a Ctrl-C sent to the whole process group right after the fork would
    // otherwise end the supervisor before it ignores SIGINT, and nothing would clean up.
    let blocked = BlockedSignals::all();
    // SAFETY: the child runs `supervise` only, which makes system calls and never returns
    // (see the module docs); the parent carries on as usual.
    let pid = match unsafe { libc::fork() } {
        -1 => return Err(io::Error::last_os_error()),
        // SAFETY: in the child right after fork, as `supervise` requires.
        0 => unsafe { supervise(socket, fallback_limit) },
        pid => pid,
    };
    drop(blocked);
    drop(theirs);
    // The child says when it has ignored signals, left this process group and named itself:
    // until then a signal to the group, or a look at its name, would find it half made.
    let mut ready = [0u8; 1];
    (&ours).read_exact(&mut ready)?;
    Ok(State::Running {
        socket: ours.into(),
        pid,
    })
}

/// Every signal blocked for the calling thread while it lives; the previous mask afterwards.
struct BlockedSignals(libc::sigset_t);

impl BlockedSignals {
    fn all() -> Self {
        // SAFETY: the sets are plain values, initialised by sigfillset / pthread_sigmask.
        unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut previous: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut previous);
            BlockedSignals(previous)
        }
    }
}

impl Drop for BlockedSignals {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved by `all`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut()) };
    }
}

/// How far to close descriptors one by one where `close_range` is missing.
fn descriptor_limit() -> libc::c_int {
    // SAFETY: sysconf has no memory-safety preconditions.
    let limit = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) };
    libc::c_int::try_from(limit)
        .unwrap_or(libc::c_int::MAX)
        .clamp(1024, 1 << 20)
}

/// The supervisor's whole life.
///
/// # Safety
///
/// Call only in the child right after `fork`: it closes every descriptor but `socket`,
/// unmaps memory it does not use, and exits the process.
unsafe fn supervise(socket: RawFd, fallback_limit: libc::c_int) -> ! {
    // Everything it uses lives here, on this stack, allocated before any memory is unmapped.
    let mut groups = [0 as libc::pid_t; MAX_WATCHED];
    let mut count = 0usize;
    let mut record = [0u8; RECORD];

    for signal in 1..=64 {
        let disposition = match signal {
            // A fault must still end it rather than loop.
            libc::SIGSEGV
            | libc::SIGBUS
            | libc::SIGILL
            | libc::SIGFPE
            | libc::SIGTRAP
            | libc::SIGSYS
            | libc::SIGABRT => libc::SIG_DFL,
            _ => libc::SIG_IGN,
        };
        // SAFETY: plain dispositions, no handler; SIGKILL, SIGSTOP and the signals the C
        // library reserves are refused, which is fine.
        unsafe { libc::signal(signal, disposition) };
    }
    // SAFETY: system calls on this process only. The mask the parent blocked everything with
    // is emptied once the dispositions are set: an ignored signal that arrived meanwhile is
    // discarded.
    unsafe {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::setpgid(0, 0);
        sys::close_all_except(socket, fallback_limit);
        sys::name_and_shrink();
    }
    // The parent waits for this byte (see `fork_supervisor`).
    loop {
        // SAFETY: writes one byte from a valid buffer.
        let wrote = unsafe { sys::write(socket, [1u8].as_ptr(), 1) };
        if wrote >= 0 || !sys::interrupted() {
            break;
        }
    }

    let mut filled = 0;
    loop {
        // One record per read, straight into place: nothing to move around afterwards.
        // SAFETY: `record[filled..]` is valid for writes of `RECORD - filled` bytes.
        let read = unsafe { sys::read(socket, record.as_mut_ptr().add(filled), RECORD - filled) };
        if read == 0 {
            break;
        }
        if read < 0 {
            if sys::interrupted() {
                continue;
            }
            break;
        }
        filled += read.unsigned_abs();
        if filled < RECORD {
            continue;
        }
        filled = 0;
        let operation = i32::from_ne_bytes([record[0], record[1], record[2], record[3]]);
        let pgid = libc::pid_t::from_ne_bytes([record[4], record[5], record[6], record[7]]);
        if pgid <= 1 {
            continue;
        }
        if operation == WATCH {
            if let Some(slot) = groups.get_mut(count) {
                *slot = pgid;
                count += 1;
            }
        } else if operation == FORGET {
            let mut index = 0;
            while index < count {
                if groups[index] == pgid {
                    count -= 1;
                    groups[index] = groups[count];
                    break;
                }
                index += 1;
            }
        }
    }
    let mut index = 0;
    while index < count {
        // SAFETY: sends a signal; no memory is involved.
        unsafe { sys::kill(-groups[index], libc::SIGKILL) };
        index += 1;
    }
    // SAFETY: ends this process without running any of the parent's exit handlers.
    unsafe { sys::exit() }
}

/// The system calls of the supervisor. On Linux they go through `syscall(2)` directly: the
/// C library's wrappers may consult its own data, which the supervisor unmaps.
#[cfg(any(target_os = "linux", target_os = "android"))]
mod sys {
    use std::os::fd::RawFd;

    pub(super) unsafe fn read(fd: RawFd, buffer: *mut u8, length: usize) -> isize {
        // SAFETY: the caller provides a buffer valid for `length` bytes.
        unsafe { libc::syscall(libc::SYS_read, fd, buffer, length) as isize }
    }

    pub(super) unsafe fn write(fd: RawFd, buffer: *const u8, length: usize) -> isize {
        // SAFETY: the caller provides a buffer valid for `length` bytes.
        unsafe { libc::syscall(libc::SYS_write, fd, buffer, length) as isize }
    }

    pub(super) unsafe fn kill(pid: libc::pid_t, signal: libc::c_int) {
        // SAFETY: sends a signal.
        unsafe { libc::syscall(libc::SYS_kill, pid, signal) };
    }

    pub(super) unsafe fn exit() -> ! {
        loop {
            // SAFETY: ends the process.
            unsafe { libc::syscall(libc::SYS_exit_group, 0) };
        }
    }

    pub(super) fn interrupted() -> bool {
        // SAFETY: reads this thread's errno, which the supervisor keeps mapped.
        unsafe { *libc::__errno_location() == libc::EINTR }
    }

    pub(super) unsafe fn close_all_except(keep: RawFd, fallback_limit: libc::c_int) {
        let keep = keep.unsigned_abs();
        // SAFETY: closing descriptors has no memory-safety preconditions.
        let below =
            keep == 0 || unsafe { libc::syscall(libc::SYS_close_range, 0u32, keep - 1, 0u32) } == 0;
        // SAFETY: as above.
        let above = unsafe { libc::syscall(libc::SYS_close_range, keep + 1, u32::MAX, 0u32) } == 0;
        if !(below && above) {
            // Before Linux 5.9.
            for fd in 0..fallback_limit {
                if fd.unsigned_abs() != keep {
                    // SAFETY: as above.
                    unsafe { libc::syscall(libc::SYS_close, fd) };
                }
            }
        }
    }

    /// Names the process for `ps` and unmaps the private anonymous memory inherited from the
    /// parent (heap, other threads' stacks), keeping this thread's stack and its thread
    /// control block. Without this, every page the parent writes after the fork would stay
    /// behind in the supervisor as the old copy.
    pub(super) unsafe fn name_and_shrink() {
        // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
        unsafe {
            libc::syscall(
                libc::SYS_prctl,
                libc::PR_SET_NAME,
                c"acp-supervisor".as_ptr(),
            )
        };

        let marker = 0u8;
        let keep = [
            &raw const marker as usize,
            // SAFETY: both only read the thread pointer.
            unsafe { libc::__errno_location() } as usize,
            unsafe { libc::pthread_self() } as usize,
        ];
        // A few passes: each unmaps what one reading of the map found room for.
        for _ in 0..16 {
            let mut ranges = [(0usize, 0usize); 256];
            let found = collect_anonymous(&keep, &mut ranges);
            let mut index = 0;
            while index < found && index < ranges.len() {
                let (start, end) = ranges[index];
                // SAFETY: these pages belong to nothing this process still uses (see above).
                unsafe { libc::syscall(libc::SYS_munmap, start, end - start) };
                index += 1;
            }
            if found < ranges.len() {
                break;
            }
        }
    }

    /// Reads /proc/self/maps byte by byte through a state machine (no line buffer to move
    /// around) and fills `ranges` with the private anonymous writable mappings that contain
    /// none of `keep`. Returns how many it found, at most `ranges.len()`.
    fn collect_anonymous(keep: &[usize; 3], ranges: &mut [(usize, usize); 256]) -> usize {
        // SAFETY: opens a file read-only; the path is NUL-terminated.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat,
                libc::AT_FDCWD,
                c"/proc/self/maps".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return 0;
        }
        let mut line = MapsLine::new();
        let mut found = 0;
        let mut chunk = [0u8; 4096];
        'reading: loop {
            // SAFETY: `chunk` is valid for writes of its length.
            let read =
                unsafe { libc::syscall(libc::SYS_read, fd, chunk.as_mut_ptr(), chunk.len()) };
            if read <= 0 {
                break;
            }
            for &byte in chunk.iter().take(read.unsigned_abs() as usize) {
                if byte != b'\n' {
                    line.push(byte);
                    continue;
                }
                if line.is_anonymous_private_writable()
                    && !keep.iter().any(|&address| line.contains(address))
                    && let Some(slot) = ranges.get_mut(found)
                {
                    *slot = (line.start, line.end);
                    found += 1;
                    if found == ranges.len() {
                        break 'reading;
                    }
                }
                line = MapsLine::new();
            }
        }
        // SAFETY: closes the descriptor opened above.
        unsafe { libc::syscall(libc::SYS_close, fd) };
        found
    }

    /// "start-end perms offset dev inode   path", one byte at a time.
    struct MapsLine {
        field: u8,
        start: usize,
        end: usize,
        perms: [u8; 4],
        perms_len: usize,
        inode: u64,
        path_first: u8,
    }

    impl MapsLine {
        fn new() -> Self {
            Self {
                field: 0,
                start: 0,
                end: 0,
                perms: [0; 4],
                perms_len: 0,
                inode: 0,
                path_first: 0,
            }
        }

        fn push(&mut self, byte: u8) {
            let hex = match byte {
                b'0'..=b'9' => Some(byte - b'0'),
                b'a'..=b'f' => Some(byte - b'a' + 10),
                _ => None,
            };
            match (self.field, byte) {
                (0, b'-') => self.field = 1,
                (0, _) => self.start = accumulate(self.start, 16, hex),
                (1..=5, b' ') => self.field += 1,
                (1, _) => self.end = accumulate(self.end, 16, hex),
                (2, _) => {
                    if let Some(slot) = self.perms.get_mut(self.perms_len) {
                        *slot = byte;
                        self.perms_len += 1;
                    }
                }
                (5, _) => self.inode = accumulate(self.inode as usize, 10, hex) as u64,
                (6, b' ') => {}
                (6, _) => {
                    self.path_first = byte;
                    self.field = 7;
                }
                _ => {}
            }
        }

        /// The heap, thread stacks, anonymous `mmap`s (named `[anon:...]` or not); not
        /// file mappings, shared memory, or the kernel's `[vdso]`/`[vvar]`.
        fn is_anonymous_private_writable(&self) -> bool {
            self.field >= 5
                && self.end > self.start
                && self.perms == *b"rw-p"
                && self.inode == 0
                && (self.path_first == 0 || self.path_first == b'[')
        }

        fn contains(&self, address: usize) -> bool {
            self.start <= address && address < self.end
        }
    }

    fn accumulate(value: usize, radix: usize, digit: Option<u8>) -> usize {
        match digit {
            Some(digit) => value.wrapping_mul(radix).wrapping_add(usize::from(digit)),
            None => value,
        }
    }
}

/// The system calls of the supervisor elsewhere: the C library's wrappers, and no unmapping.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
mod sys {
    use std::os::fd::RawFd;

    pub(super) unsafe fn read(fd: RawFd, buffer: *mut u8, length: usize) -> isize {
        // SAFETY: the caller provides a buffer valid for `length` bytes.
        unsafe { libc::read(fd, buffer.cast(), length) }
    }

    pub(super) unsafe fn write(fd: RawFd, buffer: *const u8, length: usize) -> isize {
        // SAFETY: the caller provides a buffer valid for `length` bytes.
        unsafe { libc::write(fd, buffer.cast(), length) }
    }

    pub(super) unsafe fn kill(pid: libc::pid_t, signal: libc::c_int) {
        // SAFETY: sends a signal.
        unsafe { libc::kill(pid, signal) };
    }

    pub(super) unsafe fn exit() -> ! {
        // SAFETY: ends the process without exit handlers.
        unsafe { libc::_exit(0) }
    }

    pub(super) fn interrupted() -> bool {
        std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
    }

    pub(super) unsafe fn close_all_except(keep: RawFd, fallback_limit: libc::c_int) {
        for fd in 0..fallback_limit {
            if fd != keep {
                // SAFETY: closing descriptors has no memory-safety preconditions.
                unsafe { libc::close(fd) };
            }
        }
    }

    pub(super) unsafe fn name_and_shrink() {}
}
