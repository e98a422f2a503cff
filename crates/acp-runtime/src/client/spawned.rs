//! Clients of an agent process: [`spawn`] for callers with their own executor, and
//! [`run_spawned`], which owns the calling thread and bounds the final flush; its body,
//! [`run_process`], is v2's `run_spawned` too.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};

use super::connect::connect;
use super::handle::AgentHandle;
use super::handler::Client;
use super::options::ClientOptions;
use crate::process::{AgentCommand, AgentProcess};

/// Spawns `command` and connects `client` to it over its stdin and stdout. Returns the handle,
/// the driver (poll it), and the process (shut it down with
/// [`AgentProcess::shutdown`]; dropping it kills the agent's whole process group).
pub fn spawn<C: Client>(
    client: C,
    command: AgentCommand,
    options: ClientOptions,
) -> Result<(
    AgentHandle,
    impl Future<Output = Result<(), acp_jsonrpc::ConnectionError>> + Send + use<C>,
    AgentProcess,
)> {
    let mut process = command
        .spawn()
        .map_err(|e| Error::Internal(e.to_string()))?;
    let (reader, writer) = process
        .take_stdio()
        .ok_or_else(|| Error::Internal("the agent's stdio was already taken".into()))?;
    let (agent, driver) = connect(client, reader, writer, options);
    watch_exit(&agent, &process);
    Ok((agent, driver, process))
}

/// Spawns `command`, connects `client` to it, runs `work` with the handle on the calling
/// thread, then closes the connection and shuts the agent down. Returns what `work` returned
/// and how the agent ended, or the first error: of the spawn, of `work` (an agent that died
/// under it is [`Error::AgentExited`](crate::Error::AgentExited), with its status and stderr), or of the shutdown.
///
/// It always returns: what is still queued for the agent when `work` is done gets the
/// command's [`shutdown_grace`](AgentCommand::shutdown_grace) to be written (an agent that
/// stopped reading its stdin cannot hold the run up), then the agent gets its staged shutdown
/// ([`AgentProcess::shutdown`]).
///
/// Unlike [`spawn`], this owns the thread for the whole run: on Linux the connection waits in
/// `epoll_wait(2)` on the agent's two pipes instead of in smol's reactor, so that a request/response
/// round trip costs a handful of system calls rather than a hand-off between threads (see
/// docs/performance-stdio.md). Elsewhere it runs on `smol::block_on`. Do not call it from inside an
/// async executor.
///
/// ```no_run
/// use acp_runtime::client::{self, AutoAllow, ClientOptions};
/// use acp_runtime::process::AgentCommand;
///
/// let (stop, exit) = client::run_spawned(AutoAllow, AgentCommand::new("my-agent"), ClientOptions::default(), |agent| async move {
///     agent.initialize().await?;
///     let session = agent.new_session("/tmp").await?;
///     session.prompt(vec!["hi".into()]).await?.end().await
/// })?;
/// println!("{:?}, agent {exit}", stop.stop_reason);
/// # Ok::<(), acp_runtime::Error>(())
/// ```
pub fn run_spawned<C: Client, T, F: Future<Output = Result<T>>>(
    client: C,
    command: AgentCommand,
    options: ClientOptions,
    work: impl FnOnce(AgentHandle) -> F,
) -> Result<(T, crate::process::AgentExit)> {
    run_process(
        command,
        |reader, writer, process| {
            let (agent, driver) = connect(client, reader, writer, options);
            watch_exit(&agent, process);
            (agent, driver)
        },
        |agent: &AgentHandle| agent.close(),
        work,
    )
}

/// The reading end of an agent's stdout as [`run_process`] hands it to its `connect`: on Linux
/// a pipe of [`acp_host::pipe_loop`], elsewhere the process's own reader.
#[cfg(target_os = "linux")]
pub(super) type AgentReader = acp_host::pipe_loop::BufPipeReader;
/// The writing end of an agent's stdin as [`run_process`] hands it to its `connect`.
#[cfg(target_os = "linux")]
pub(super) type AgentWriter = acp_host::pipe_loop::PipeWriter;
/// The reading end of an agent's stdout as [`run_process`] hands it to its `connect`.
#[cfg(not(target_os = "linux"))]
pub(super) type AgentReader = crate::process::AgentStdout;
/// The writing end of an agent's stdin as [`run_process`] hands it to its `connect`.
#[cfg(not(target_os = "linux"))]
pub(super) type AgentWriter = crate::process::AgentStdin;

/// The one body of every `run_spawned` (v1's here, v2's in `client::v2`): spawns `command`,
/// connects to it with `connect` (which gets the process, to watch its exit), runs `work` with
/// the handle beside the driver on the calling thread, closes the connection with `close` once
/// `work` is done, gives the final flush the command's shutdown grace, and shuts the agent down.
pub(super) fn run_process<H, D, T, F>(
    command: AgentCommand,
    connect: impl FnOnce(AgentReader, AgentWriter, &AgentProcess) -> (H, D),
    close: impl FnOnce(&H),
    work: impl FnOnce(H) -> F,
) -> Result<(T, crate::process::AgentExit)>
where
    H: Clone,
    D: Future<Output = Result<(), acp_jsonrpc::ConnectionError>>,
    F: Future<Output = Result<T>>,
{
    let mut process = command
        .spawn()
        .map_err(|e| Error::Internal(e.to_string()))?;
    #[cfg(target_os = "linux")]
    {
        let (stdout, stdin) = process
            .take_pipe_fds()
            .ok_or_else(|| Error::Internal("the agent's stdio was already taken".into()))?
            .map_err(|e| Error::Internal(format!("the agent's pipes: {e}")))?;
        let (pipes, reader, writer) = acp_host::pipe_loop::pipes(stdout, stdin)
            .map_err(|e| Error::Internal(e.to_string()))?;
        let (handle, driver) = connect(reader.buffered(), writer, &process);
        let run = async {
            let closed = WorkDone::default();
            let work = async {
                let output = work(handle.clone()).await;
                close(&handle);
                closed.mark();
                output
            };
            let driver = bounded_final_flush(driver, &closed, process.shutdown_grace());
            acp_host::pipe_loop::join_woken(driver, work).await.1
        };
        let output = acp_host::pipe_loop::block_on(&pipes, run)
            .map_err(|e| Error::Internal(e.to_string()))?;
        let exit = acp_host::pipe_loop::block_on(&pipes, process.shutdown())
            .map_err(|e| Error::Internal(e.to_string()))?;
        Ok((output?, exit))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let (reader, writer) = process
            .take_stdio()
            .ok_or_else(|| Error::Internal("the agent's stdio was already taken".into()))?;
        let (handle, driver) = connect(reader, writer, &process);
        smol::block_on(async {
            let closed = WorkDone::default();
            let work = async {
                let output = work(handle.clone()).await;
                close(&handle);
                closed.mark();
                output
            };
            let driver = bounded_final_flush(driver, &closed, process.shutdown_grace());
            let output = futures_lite::future::zip(driver, work).await.1;
            Ok((output?, process.shutdown().await))
        })
    }
}

/// The connection's driver, given up `grace` after the work is done. An agent that stopped
/// reading its stdin would otherwise keep the final flush, and so the whole run of
/// [`run_spawned`], waiting for ever; once given up, the connection is dropped (the agent sees
/// its stdin close) and the agent's staged shutdown begins.
async fn bounded_final_flush<D: Future<Output = Result<(), acp_jsonrpc::ConnectionError>>>(
    driver: D,
    done: &WorkDone,
    grace: std::time::Duration,
) -> Result<(), acp_jsonrpc::ConnectionError> {
    let mut driver = std::pin::pin!(driver);
    let mut deadline: Option<smol::Timer> = None;
    std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(result) = driver.as_mut().poll(cx) {
            return std::task::Poll::Ready(result);
        }
        if !done.is_marked(cx) {
            return std::task::Poll::Pending;
        }
        let timer = deadline.get_or_insert_with(|| smol::Timer::after(grace));
        Pin::new(timer).poll(cx).map(|_| Ok(()))
    })
    .await
}

/// Set once [`run_spawned`]'s work is done. Checked on every poll of the driver, so it costs
/// an atomic load there, where a channel or event listener cost a few hundred instructions per
/// message.
#[derive(Default)]
struct WorkDone {
    marked: AtomicBool,
    registered: AtomicBool,
    waker: Mutex<Option<std::task::Waker>>,
}

impl WorkDone {
    fn mark(&self) {
        self.marked.store(true, Ordering::Release);
        if let Some(waker) = self.waker.lock().unwrap().take() {
            waker.wake();
        }
    }

    /// Whether the work is done; if not, `cx` is woken when it is. Its waker is kept the first
    /// time only: the loops that poll the driver keep one waker for it.
    fn is_marked(&self, cx: &std::task::Context<'_>) -> bool {
        if self.marked.load(Ordering::Acquire) {
            return true;
        }
        if !self.registered.load(Ordering::Relaxed) {
            *self.waker.lock().unwrap() = Some(cx.waker().clone());
            self.registered.store(true, Ordering::Relaxed);
        }
        // Marked between the first look and the registration: its wake-up found no waker.
        self.marked.load(Ordering::Acquire)
    }
}

/// Fails pending calls with the agent's exit status and stderr tail once it exits, called by
/// the process's supervision thread when it records the exit (no thread of its own).
pub(super) fn watch_exit(agent: &AgentHandle, process: &AgentProcess) {
    agent.state.spawned.store(true, Ordering::Release);
    let watcher = agent.clone();
    process
        .on_exit(move |exit| watcher.agent_exited(exit.status.clone(), exit.stderr_tail.clone()));
}
