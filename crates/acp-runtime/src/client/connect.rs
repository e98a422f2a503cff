//! [`connect`]: a client connection over any reader and writer.

use std::future::Future;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use acp_jsonrpc::Connection;
use futures_lite::{AsyncBufRead, AsyncWrite};

use super::dispatch::ClientDispatch;
use super::dropped::DropReports;
use super::family::Followed;
use super::handle::AgentHandle;
use super::handler::Client;
use super::options::ClientOptions;
use super::state::{ClientState, Opening, ReleaseTerminalsWhenDone};
use super::updates::Routes;
use acp_jsonrpc::Latch;

/// Connects `client` to an agent over a reader and a writer. Returns the handle to the agent
/// and the connection's driver, which must be polled (on any executor) for anything to happen;
/// its error converts into [`crate::Error`], so `driver.await?` works.
pub fn connect<C: Client, R, W>(
    client: C,
    reader: R,
    writer: W,
    options: ClientOptions,
) -> (
    AgentHandle,
    impl Future<Output = Result<(), acp_jsonrpc::ConnectionError>> + Send + use<C, R, W>,
)
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let state = Arc::new(ClientState {
        options: options.clone(),
        agent: Mutex::new(None),
        routes: Mutex::new(Routes::new(options.unopened_update_budget)),
        opening: Mutex::new(Opening::new()),
        exit: Mutex::new(None),
        exit_recorded: Latch::new(),
        spawned: AtomicBool::new(false),
        subagents: Followed::new(options.subagent_update_budget),
        dropped: DropReports::default(),
    });
    let dispatch = ClientDispatch {
        client: Arc::new(client),
        state: state.clone(),
    };
    let (rpc, driver) = Connection::new(reader, writer, dispatch, options.connection);
    let guard = ReleaseTerminalsWhenDone(state.clone());
    let driver = async move {
        // Dropped when the connection ends or the driver is dropped: either way, no terminal
        // process outlives the connection.
        let _guard = guard;
        driver.await
    };
    (AgentHandle { rpc, state }, driver)
}
