//! `acp --trace-view`: one connection's live view, its loopback server (`http.rs`) and the
//! [`Observer`] that feeds its rows (`feed.rs`).

use std::sync::Arc;
use std::time::Duration;

use acp_jsonrpc::Observer;

use super::feed::Feed;
use super::http::{self, Server};
use super::page::{Header, render};
use acp_jsonrpc::transcript::Direction;

/// Feeds a connection's lines to the live view; install it as the client connection's
/// observer (what it reads came from the agent).
pub struct FeedObserver(Arc<Feed>);

impl Observer for FeedObserver {
    fn incoming(&self, line: &[u8]) {
        self.0.push(Direction::AgentToClient, line);
    }

    fn outgoing(&self, line: &[u8]) {
        self.0.push(Direction::ClientToAgent, line);
    }
}

/// The live view of one connection: its loopback server and its feed. Dropping it ends the
/// view: viewers get the rest of the rows and the end, for at most [`FINISH_GRACE`].
pub struct LiveView {
    feed: Arc<Feed>,
    server: Server,
}

/// How long the end of a session waits for the viewers to receive the last rows.
pub const FINISH_GRACE: Duration = Duration::from_secs(2);

impl LiveView {
    /// Serves the live view of a client connection on a random loopback port.
    pub fn start(title: &str) -> std::io::Result<LiveView> {
        let feed = Arc::new(Feed::new());
        let token = acp_remote::secret_token();
        let header = Header {
            title: title.to_owned(),
            lanes: super::lane_names(1),
            notes: Vec::new(),
            events: Some(format!("/events?token={token}")),
        };
        let page = render(&header, &[]);
        let server = http::serve(feed.clone(), page, token)?;
        Ok(LiveView { feed, server })
    }

    /// The page's URL, token included.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// The observer that feeds this view.
    pub fn observer(&self) -> FeedObserver {
        FeedObserver(self.feed.clone())
    }
}

impl Drop for LiveView {
    fn drop(&mut self) {
        self.feed.end();
        self.server.finish(FINISH_GRACE);
    }
}
