//! `load --servers S`: S `acp-bridge serve` processes behind HAProxy, with the recipe of
//! docs/deploy.md (interop/loadbalancer.sh runs the same recipe as a test).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The HAProxy configuration of docs/deploy.md on loopback, shared with
/// interop/loadbalancer.sh (its placeholders are listed at its top).
const HAPROXY: &str = include_str!("haproxy.cfg");

pub struct Fleet {
    bridges: Vec<Child>,
    haproxy: Child,
    /// The bridges' RSS once started, in KiB.
    started_kib: Vec<u64>,
    /// HAProxy's RSS once started, in KiB.
    haproxy_started_kib: u64,
    lb: u16,
    dir: PathBuf,
    /// The argument that tells the agent processes apart from the bridges' other children.
    agent_arg: String,
}

/// What the servers held with every connection open.
pub struct Memory {
    servers: usize,
    /// The bridges' RSS growth since they started, all together, in KiB.
    bridges_kib: u64,
    /// The agent processes' private memory, all together, in KiB, and how many there were.
    agents_kib: u64,
    agents: usize,
    /// HAProxy's RSS growth since it started, in KiB.
    haproxy_kib: u64,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// `GET /healthz` answered 200.
fn healthy(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200")
}

/// Waits for `port` to be healthy; kills `started` (and panics) if it is not within 20 s.
fn wait_healthy(port: u16, what: &str, started: &mut [Child]) {
    let start = Instant::now();
    while !healthy(port) {
        if start.elapsed() > Duration::from_secs(20) {
            for child in started.iter_mut() {
                let _ = child.kill();
                let _ = child.wait();
            }
            panic!("{what} did not start");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// `Private_Clean` + `Private_Dirty` of a process, in KiB.
fn private_kib(pid: u32) -> u64 {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    rollup
        .lines()
        .filter(|l| l.starts_with("Private_Clean:") || l.starts_with("Private_Dirty:"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

/// The children of `parent`.
fn children(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // The fields after the command's closing parenthesis: state, ppid, ...
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                == Some(parent)
        })
        .collect()
}

impl Fleet {
    /// Starts `servers` bridges, each allowing `clients` connections and running this example
    /// as the agent (`agent_arg chunks`), and HAProxy before them.
    pub fn start(servers: usize, clients: usize, chunks: usize, agent_arg: &str) -> Fleet {
        let me = std::env::current_exe().expect("this example's path");
        let bridge = me
            .parent()
            .and_then(|examples| examples.parent())
            .map(|profile| profile.join("acp-bridge"))
            .expect("the target directory");
        assert!(
            bridge.exists(),
            "{} is missing: cargo build --release -p acp-rs-remote --bin acp-bridge",
            bridge.display()
        );
        let dir = std::env::temp_dir().join(format!("acp-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let mut bridges = Vec::new();
        let mut lines = String::new();
        for i in 0..servers {
            let port = free_port();
            let child = Command::new(&bridge)
                .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
                .args(["--max-connections", &clients.to_string()])
                .args(["--instance", &format!("s{i}")])
                .args(["--drain-timeout", "5", "--"])
                .arg(&me)
                .args([agent_arg, &chunks.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("acp-bridge serve");
            bridges.push(child);
            wait_healthy(port, "acp-bridge serve", &mut bridges);
            lines.push_str(&format!(
                "    server s{i} 127.0.0.1:{port}\n    use-server s{i} if {{ req.hdr(acp-connection-id) -m beg s{i}. }}\n"
            ));
        }
        let started_kib = bridges
            .iter()
            .map(|b| status_kib(b.id(), "VmRSS:"))
            .collect();
        let lb = free_port();
        let config = HAPROXY
            .replace("@LB@", &lb.to_string())
            // Two descriptors per connection, within a default hard limit of 20000.
            .replace("@MAXCONN@", "8000")
            .replace("@CHECK_INTER@", "2s")
            .replace("@SERVERS@\n", &lines);
        let path = dir.join("haproxy.cfg");
        std::fs::write(&path, config).expect("the HAProxy configuration");
        let log = std::fs::File::create(dir.join("haproxy.log")).expect("HAProxy's log");
        let haproxy = Command::new("haproxy")
            .arg("-f")
            .arg(&path)
            .arg("-db")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("haproxy (apt-get install -y haproxy)");
        bridges.push(haproxy);
        let what = format!("haproxy (see {})", dir.join("haproxy.log").display());
        wait_healthy(lb, &what, &mut bridges);
        let haproxy = bridges.pop().expect("HAProxy");
        let haproxy_started_kib = status_kib(haproxy.id(), "VmRSS:");
        Fleet {
            haproxy_started_kib,
            bridges,
            haproxy,
            started_kib,
            lb,
            dir,
            agent_arg: agent_arg.to_owned(),
        }
    }

    pub fn url(&self, mode: &str) -> String {
        let scheme = if mode == "ws" { "ws" } else { "http" };
        format!("{scheme}://127.0.0.1:{}/acp", self.lb)
    }

    pub fn memory(&self) -> Memory {
        let mut memory = Memory {
            servers: self.bridges.len(),
            bridges_kib: 0,
            agents_kib: 0,
            agents: 0,
            haproxy_kib: status_kib(self.haproxy.id(), "VmRSS:")
                .saturating_sub(self.haproxy_started_kib),
        };
        for (bridge, start) in self.bridges.iter().zip(&self.started_kib) {
            memory.bridges_kib += status_kib(bridge.id(), "VmHWM:").saturating_sub(*start);
            for agent in children(bridge.id()) {
                let cmdline = std::fs::read(format!("/proc/{agent}/cmdline")).unwrap_or_default();
                if !String::from_utf8_lossy(&cmdline).contains(&self.agent_arg) {
                    continue;
                }
                memory.agents_kib += private_kib(agent);
                memory.agents += 1;
            }
        }
        memory
    }

    /// Drains the bridges (SIGTERM: their agents see their stdin close) and stops HAProxy.
    pub fn stop(mut self) {
        for bridge in &self.bridges {
            // SAFETY: kill(2) on a child we started and have not reaped.
            unsafe { libc::kill(bridge.id() as i32, libc::SIGTERM) };
        }
        let deadline = Instant::now() + Duration::from_secs(15);
        for bridge in &mut self.bridges {
            while bridge.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = bridge.kill();
            let _ = bridge.wait();
        }
        let _ = self.haproxy.kill();
        let _ = self.haproxy.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Memory {
    pub fn print(&self, n: usize) {
        let per = |kib: u64| kib as f64 / n.max(1) as f64;
        println!(
            "servers: {} acp-bridge behind HAProxy; bridges grew {:.1} MiB in all ({:.0} KiB \
             per connection); {} agent processes, {:.0} KiB private each; HAProxy grew {:.1} MiB \
             ({:.0} KiB per connection); server side per connection: {:.0} KiB",
            self.servers,
            self.bridges_kib as f64 / 1024.0,
            per(self.bridges_kib),
            self.agents,
            self.agents_kib as f64 / self.agents.max(1) as f64,
            self.haproxy_kib as f64 / 1024.0,
            per(self.haproxy_kib),
            per(self.bridges_kib + self.agents_kib + self.haproxy_kib),
        );
    }
}
