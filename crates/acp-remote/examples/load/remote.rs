//! `load --url URL --pid PID`: what a server in another process (ours, started with `load
//! --serve`, or another implementation's) holds per connection, read from its `/proc` status.

use super::servers::status_kib;

/// The server's RSS before the run's connections open.
pub struct ServerRss {
    pid: u32,
    start_kib: u64,
}

/// What the server held with every connection of the run open.
pub struct ServerMemory {
    pid: u32,
    start_kib: u64,
    open_kib: u64,
    peak_kib: u64,
}

impl ServerRss {
    /// Samples `pid`'s RSS now, before any connection of the run opens.
    pub fn start(pid: u32) -> ServerRss {
        ServerRss {
            pid,
            start_kib: status_kib(pid, "VmRSS:"),
        }
    }

    /// Samples it again, every connection open and every turn done; also its peak RSS.
    pub fn sample(self) -> ServerMemory {
        ServerMemory {
            pid: self.pid,
            start_kib: self.start_kib,
            open_kib: status_kib(self.pid, "VmRSS:"),
            peak_kib: status_kib(self.pid, "VmHWM:"),
        }
    }
}

impl ServerMemory {
    /// Prints the RSS growth per connection over `n` connections.
    pub fn print(&self, n: usize) {
        println!(
            "server (pid {}): RSS {:.1} MiB before, {:.1} MiB with every connection open \
             (peak {:.1} MiB): {:.0} KiB per connection",
            self.pid,
            self.start_kib as f64 / 1024.0,
            self.open_kib as f64 / 1024.0,
            self.peak_kib as f64 / 1024.0,
            self.open_kib.saturating_sub(self.start_kib) as f64 / n.max(1) as f64,
        );
    }
}
