//! This process's stdin and stdout as async streams.
//!
//! The `serve_stdio` functions (agents, proxies, the router) run on acp-host's pipe loop when
//! both are pipes or sockets (Linux; `pipes`, `run_on_pipes`). [`stdio`], for any executor,
//! registers pipes and sockets with smol's reactor and reads them on the calling thread, without
//! a hand-off to a helper thread per read; anything else (a terminal, a file) goes through
//! smol's blocking thread pool.

use futures_lite::io::BufReader;
use futures_lite::{AsyncBufRead, AsyncRead, AsyncWrite};
use std::io;

/// Buffer size of the stdin reader: large enough that a burst of small messages costs one
/// read system call, and a 64 KiB message a few.
pub(crate) const READ_BUFFER: usize = 64 * 1024;

/// How a connection served on stdio ended, as `serve_stdio` reports it: a client that went
/// away (its end of our stdout closed while we were writing, a broken pipe) ended the
/// connection as closing our stdin does, so it is a clean end, not a failure an exit status
/// should report (a client closing both ends while an update is on its way is ordinary).
pub(crate) fn ended(result: Result<(), acp_jsonrpc::ConnectionError>) -> io::Result<()> {
    match result {
        Ok(()) => Ok(()),
        Err(acp_jsonrpc::ConnectionError::Write(error))
            if error.kind() == io::ErrorKind::BrokenPipe =>
        {
            Ok(())
        }
        Err(error) => Err(io::Error::other(error)),
    }
}

type Reader = Box<dyn AsyncRead + Unpin + Send>;
type Writer = Box<dyn AsyncWrite + Unpin + Send>;

/// Stdin (buffered) and stdout of this process.
pub fn stdio() -> io::Result<(
    impl AsyncBufRead + Unpin + Send + 'static,
    impl AsyncWrite + Unpin + Send + 'static,
)> {
    Ok((BufReader::with_capacity(READ_BUFFER, stdin()?), stdout()?))
}

#[cfg(unix)]
fn stdin() -> io::Result<Reader> {
    use std::os::fd::AsFd;
    let fd = io::stdin().as_fd().try_clone_to_owned()?;
    let file = std::fs::File::from(fd);
    if is_pipe_or_socket(&file) {
        Ok(Box::new(smol::Async::new(file)?))
    } else {
        Ok(Box::new(smol::Unblock::new(io::stdin())))
    }
}

#[cfg(unix)]
fn stdout() -> io::Result<Writer> {
    use std::os::fd::AsFd;
    let fd = io::stdout().as_fd().try_clone_to_owned()?;
    let file = std::fs::File::from(fd);
    if is_pipe_or_socket(&file) {
        Ok(Box::new(smol::Async::new(file)?))
    } else {
        Ok(Box::new(smol::Unblock::new(io::stdout())))
    }
}

#[cfg(unix)]
fn is_pipe_or_socket(file: &std::fs::File) -> bool {
    use std::os::unix::fs::FileTypeExt;
    file.metadata()
        .is_ok_and(|m| m.file_type().is_fifo() || m.file_type().is_socket())
}

#[cfg(not(unix))]
fn stdin() -> io::Result<Reader> {
    Ok(Box::new(smol::Unblock::new(io::stdin())))
}

#[cfg(not(unix))]
fn stdout() -> io::Result<Writer> {
    Ok(Box::new(smol::Unblock::new(io::stdout())))
}

/// Stdin (buffered) and stdout on [`acp_host::pipe_loop`] when both are pipes or sockets (how
/// an editor runs an agent and a conductor runs a proxy), `None` otherwise: every message is a
/// wake-up, and the loop waits on exactly these two on the calling thread. Run the connection
/// with [`run_on_pipes`].
#[cfg(target_os = "linux")]
pub(crate) fn pipes() -> io::Result<
    Option<(
        acp_host::pipe_loop::Pipes,
        BufReader<acp_host::pipe_loop::PipeReader>,
        acp_host::pipe_loop::PipeWriter,
    )>,
> {
    let Some((stdin, stdout)) = pipe_fds()? else {
        return Ok(None);
    };
    let (pipes, reader, writer) = acp_host::pipe_loop::pipes(stdin, stdout)?;
    Ok(Some((
        pipes,
        BufReader::with_capacity(READ_BUFFER, reader),
        writer,
    )))
}

/// Stdin and stdout, duplicated, when both are pipes or sockets; `None` otherwise. [`pipes`]
/// puts them on the two-pipe loop, the conductor on its `PipeSet`.
#[cfg(target_os = "linux")]
pub(crate) fn pipe_fds() -> io::Result<Option<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)>> {
    use std::os::fd::AsFd;
    let stdin = io::stdin().as_fd().try_clone_to_owned()?;
    let stdout = io::stdout().as_fd().try_clone_to_owned()?;
    let both = is_pipe_or_socket(&std::fs::File::from(stdin.try_clone()?))
        && is_pipe_or_socket(&std::fs::File::from(stdout.try_clone()?));
    Ok(both.then_some((stdin, stdout)))
}

/// Runs a connection's `driver` over [`pipes`] on the calling thread; how it ended, as
/// [`ended`] reports it.
#[cfg(target_os = "linux")]
pub(crate) fn run_on_pipes(
    pipes: &acp_host::pipe_loop::Pipes,
    driver: impl std::future::Future<Output = Result<(), acp_jsonrpc::ConnectionError>>,
) -> io::Result<()> {
    ended(acp_host::pipe_loop::block_on(pipes, driver)?)
}
