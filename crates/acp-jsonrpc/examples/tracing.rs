//! The `tracing` feature with `tracing-subscriber`'s formatter: every span and
//! event of a request, an error answer and a notification, on stderr.
//!
//! ```text
//! cargo run -p acp-rs-jsonrpc --features tracing --example tracing
//! ```

use acp_jsonrpc::{Connection, ConnectionOptions, Handler, IncomingRequest, Responder, memory};

struct Calculator;

impl Handler for Calculator {
    async fn request(&self, request: IncomingRequest, responder: Responder) {
        match request.method() {
            "add" => responder.respond(request.params::<[i64; 2]>().map(|[a, b]| a + b)),
            _ => responder.respond_error(request.method_not_found()),
        }
    }
}

fn main() {
    // DEBUG shows every message; WARN only errors, refused or dropped
    // messages and other problems. (With tracing-subscriber's `env-filter`
    // feature, `EnvFilter::from_default_env()` and `RUST_LOG=acp_jsonrpc=debug`
    // do the same.)
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();

    let (client_end, server_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
    let options = ConnectionOptions::default();
    let (client, client_driver) =
        Connection::new(client_end.reader, client_end.writer, (), options.clone());
    let (_server, server_driver) =
        Connection::new(server_end.reader, server_end.writer, Calculator, options);

    smol::block_on(async {
        let drivers = smol::future::zip(client_driver, server_driver);
        let calls = async {
            let sum: i64 = client.request("add", &[2, 3]).await?;
            println!("2 + 3 = {sum}");
            let error = client
                .request::<i64, _>("divide", &[1, 0])
                .await
                .unwrap_err();
            println!("divide: {error}");
            client.notify("note", &["hello"]).await?;
            client.close();
            Ok::<_, acp_jsonrpc::RequestError>(())
        };
        let ((client_end, server_end), calls) = smol::future::zip(drivers, calls).await;
        client_end.unwrap();
        server_end.unwrap();
        calls.unwrap();
    });
}
