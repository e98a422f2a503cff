//! Ctrl-C: a SIGINT handler that counts into an atomic, and a future that waits for the count
//! to move by polling it on a short timer (simple, and async-signal-safe: the handler does
//! nothing but the atomic add).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

static INTERRUPTS: AtomicUsize = AtomicUsize::new(0);

#[cfg(unix)]
extern "C" fn on_interrupt(_signal: libc::c_int) {
    INTERRUPTS.fetch_add(1, Ordering::SeqCst);
}

/// Counts SIGINT instead of dying of it.
pub fn install() {
    #[cfg(unix)]
    // SAFETY: the handler only touches an atomic, which is async-signal-safe.
    unsafe {
        let handler: extern "C" fn(libc::c_int) = on_interrupt;
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
    }
}

/// Waits until more than `seen` interrupts were counted; returns the count.
pub async fn wait_for_interrupt(seen: usize) -> usize {
    loop {
        let count = INTERRUPTS.load(Ordering::SeqCst);
        if count > seen {
            return count;
        }
        smol::Timer::after(Duration::from_millis(50)).await;
    }
}

/// Whether the file descriptor is a terminal.
pub fn is_terminal(fd: i32) -> bool {
    #[cfg(unix)]
    // SAFETY: isatty only inspects the descriptor.
    unsafe {
        libc::isatty(fd) == 1
    }
    #[cfg(not(unix))]
    {
        let _ = fd;
        false
    }
}
