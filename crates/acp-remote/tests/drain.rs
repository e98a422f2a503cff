//! A drain refuses what would start new work (a `session/prompt`, with `DRAINING_CODE`; a new
//! connection, with 503) while the turns already running finish.

mod common;

use std::time::Duration;

use acp_remote::{Connector, DRAINING_CODE, ServerOptions};
use acp_types::*;
use common::{Project, connect_client, serve, within};

#[test]
fn a_drain_refuses_new_prompts_and_connections_while_running_turns_finish() {
    smol::block_on(async {
        let (addr, handle, _task) = serve(ServerOptions::default());
        let project = Project::new("drain");
        let ws = format!("ws://{addr}/acp");
        let http = format!("http://{addr}/acp");

        // A turn running before the drain, over WebSocket.
        let (running, _d1) = connect_client(Connector::new(&ws)).await;
        within("initialize", running.initialize()).await.unwrap();
        let waiting = within("session/new", running.new_session(&project.0))
            .await
            .unwrap();
        let mut turn = within("session/prompt", waiting.prompt(vec!["wait".into()]))
            .await
            .unwrap();
        within("the first update", turn.next())
            .await
            .unwrap()
            .unwrap();

        // Sessions opened before the drain, on both transports.
        let mut idle = Vec::new();
        for url in [&ws, &http] {
            let (agent, driver) = connect_client(Connector::new(url)).await;
            within("initialize", agent.initialize()).await.unwrap();
            let session = within("session/new", agent.new_session(&project.0))
                .await
                .unwrap();
            idle.push((agent, driver, session));
        }

        let drained = smol::spawn({
            let handle = handle.clone();
            async move { handle.drain(Duration::from_secs(20)).await }
        });
        // The drain begins at once; its health answer says so.
        within("draining", async {
            while !common::raw_http(addr, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                .await
                .starts_with("HTTP/1.1 503")
            {
                smol::Timer::after(Duration::from_millis(10)).await;
            }
        })
        .await;

        for (_, _, session) in &idle {
            let refused = within("the refused prompt", async {
                match session.prompt(vec!["Summarize my notes".into()]).await {
                    Err(error) => error,
                    Ok(turn) => turn.end().await.unwrap_err(),
                }
            })
            .await;
            assert_eq!(
                refused.code().map(|c| c.0),
                Some(DRAINING_CODE),
                "{refused:?}"
            );
            assert!(refused.to_string().contains("draining"), "{refused}");
        }
        // Refused prompts are no turns: the connection goes on (a cancel, a second refusal).
        let (_, _, session) = &idle[0];
        let again = session.prompt(vec!["again".into()]).await;
        let again = match again {
            Err(error) => error,
            Ok(turn) => turn.end().await.unwrap_err(),
        };
        assert_eq!(again.code().map(|c| c.0), Some(DRAINING_CODE));

        // New connections are refused.
        for url in [&ws, &http] {
            let refused = within("a new connection", async {
                let connector = Connector::new(url);
                match connector.connect().await {
                    Err(error) => error.to_string(),
                    // Streamable HTTP opens with the `initialize` POST.
                    Ok(remote) => {
                        let (agent, driver) = acp_runtime::client::connect(
                            acp_runtime::client::AutoAllow,
                            remote.reader,
                            remote.writer,
                            Default::default(),
                        );
                        let _driver = smol::spawn(driver);
                        agent.initialize().await.unwrap_err().to_string()
                    }
                }
            })
            .await;
            assert!(refused.contains("503"), "{url}: {refused}");
        }

        // Every refusal counted by its reason: three prompts, two connections; the turn runs.
        #[cfg(feature = "metrics")]
        {
            let metrics =
                common::raw_http(addr, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await;
            assert!(
                metrics.contains("acp_remote_refusals_total{reason=\"draining\"} 5"),
                "{metrics}"
            );
            assert!(metrics.contains("acp_remote_turns_running 1"), "{metrics}");
            // The Streamable HTTP connection's sent answers are kept for its resumptions.
            let budget = |kind: &str, budget: &str| -> u64 {
                let name = format!("acp_remote_budget_{kind}_bytes{{budget=\"{budget}\"}} ");
                let at = metrics.find(&name).expect(&name) + name.len();
                metrics[at..].lines().next().unwrap().parse().unwrap()
            };
            assert!(budget("used", "sse_replay") > 0, "{metrics}");
            assert!(
                budget("used", "sse_replay") <= budget("limit", "sse_replay"),
                "{metrics}"
            );
            // The server's memory ceiling, whatever the handler (this one is `serve_agent`'s).
            assert_eq!(
                budget("limit", "memory_ceiling"),
                acp_remote::DEFAULT_MEMORY_CEILING as u64
            );
        }

        // The running turn was never disturbed: it finishes, and the drain with it.
        assert!(!drained.is_finished());
        within("session/cancel", waiting.cancel()).await.unwrap();
        let response = within("the end of the turn", turn.end()).await.unwrap();
        assert_eq!(response.stop_reason, StopReason::Cancelled);
        assert!(within("the drain", drained).await, "the drain timed out");
    });
}
