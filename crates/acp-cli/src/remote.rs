//! Remote agents: an agent "command" that is one `ws://`, `wss://`, `http://` or `https://`
//! URL is reached through `acp_remote::Connector` instead of being started.

use std::future::Future;
use std::path::Path;

use acp_jsonrpc::ErrorCode;
use acp_remote::{ConnectError, Connector};
use acp_runtime::Error;
use acp_runtime::client::{AgentHandle, Client, ClientOptions};

/// The environment variable read for the bearer token when `--token` is not given.
pub const TOKEN_ENV: &str = "ACP_TOKEN";

/// The URL, when the agent command is exactly one argument that is a remote agent's URL.
pub fn url(agent: &[String]) -> Option<&str> {
    match agent {
        [one]
            if ["ws://", "wss://", "http://", "https://"]
                .iter()
                .any(|scheme| one.len() > scheme.len() && starts_with_ignore_case(one, scheme)) =>
        {
            Some(one)
        }
        _ => None,
    }
}

fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

/// The connector for `url`: the token from `--token` or else `ACP_TOKEN`, the authority of
/// `--ca`. The error (an unreadable `--ca`) is a local one.
pub fn connector(url: &str, token: Option<String>, ca: Option<&Path>) -> Result<Connector, String> {
    let mut connector = Connector::new(url);
    // An empty ACP_TOKEN counts as unset: shells leave exported empty variables behind.
    let token = token.or_else(|| std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty()));
    if let Some(token) = token {
        connector = connector.with_bearer_token(token);
    }
    match ca {
        Some(ca) => with_ca(connector, ca),
        None => Ok(connector),
    }
}

/// Connects `client` to the remote agent. The error is the message to print: the agent
/// cannot be reached (exit status 5).
pub async fn connect<C: Client>(
    connector: &Connector,
    client: C,
    options: ClientOptions,
) -> Result<
    (
        AgentHandle,
        impl Future<Output = Result<(), acp_jsonrpc::ConnectionError>> + Send + use<C>,
    ),
    String,
> {
    connector
        .connect_client(client, options)
        .await
        .map_err(|error| {
            let status = match &error {
                ConnectError::Refused { status, .. } => Some(*status),
                _ => None,
            };
            unreachable_message(connector.url(), &error.to_string(), status)
        })
}

#[cfg(feature = "tls")]
fn with_ca(connector: Connector, ca: &Path) -> Result<Connector, String> {
    let tls = acp_remote::TlsClientConfig::with_root_pem_file(ca)
        .map_err(|error| format!("--ca {}: {error}", ca.display()))?;
    Ok(connector.with_tls(tls))
}

#[cfg(not(feature = "tls"))]
fn with_ca(_: Connector, _: &Path) -> Result<Connector, String> {
    Err("--ca: this acp was built without TLS (the `tls` feature)".into())
}

/// Over Streamable HTTP the connection opens with the `initialize` POST, so a server that
/// cannot be reached or refuses shows up as the local error answer the connector makes for a
/// refused POST (`-32603`, `HTTP <status>: <body>`, status 0 for a network failure). Returns
/// the message to print for such an error.
pub fn initialize_unreachable(url: &str, error: &Error) -> Option<String> {
    let Error::Rpc(error) = error else {
        return None;
    };
    if !starts_with_ignore_case(url, "http") {
        return None;
    }
    if error.code != ErrorCode::INTERNAL_ERROR {
        return None;
    }
    let rest = error.message.strip_prefix("HTTP ")?;
    let (status, text) = rest.split_once(':')?;
    let status: u16 = status.parse().ok()?;
    Some(match status {
        0 => unreachable_message(url, text.trim(), None),
        status => unreachable_message(
            url,
            &format!(
                "the server refused the connection: {status} {}",
                text.trim()
            ),
            Some(status),
        ),
    })
}

/// What to print when `url` could not be reached (or refused the connection) for `why`.
#[cfg(feature = "unstable-protocol-v2")]
pub fn unreachable(url: &str, why: &str) -> String {
    unreachable_message(url, why, None)
}

fn unreachable_message(url: &str, why: &str, status: Option<u16>) -> String {
    let hint = match status {
        Some(401) => format!(" (a missing or wrong token: --token, or {TOKEN_ENV})"),
        Some(403) => " (the server does not allow this client's Origin)".into(),
        Some(503) => " (the server is full or shutting down; try again later)".into(),
        _ => String::new(),
    };
    format!("cannot reach the agent at {url}: {}{hint}", why.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_one_argument_with_a_remote_scheme_is_a_url() {
        assert_eq!(url(&agent(&["ws://h:1/acp"])), Some("ws://h:1/acp"));
        assert_eq!(url(&agent(&["HTTPS://h/acp"])), Some("HTTPS://h/acp"));
        assert_eq!(url(&agent(&["ws://h/acp", "x"])), None);
        assert_eq!(url(&agent(&["my-agent"])), None);
        assert_eq!(url(&agent(&["http://"])), None);
        assert_eq!(url(&agent(&[])), None);
    }

    #[test]
    fn refused_initialize_posts_are_unreachable() {
        let refused = Error::Rpc(acp_jsonrpc::ResponseError::new(
            ErrorCode::INTERNAL_ERROR,
            "HTTP 401: unauthorized",
        ));
        let message = initialize_unreachable("http://h/acp", &refused).unwrap();
        assert!(message.contains("401 unauthorized"), "{message}");
        assert!(message.contains("ACP_TOKEN"), "{message}");
        let network = Error::Rpc(acp_jsonrpc::ResponseError::new(
            ErrorCode::INTERNAL_ERROR,
            "HTTP 0: Connection refused (os error 111)",
        ));
        let message = initialize_unreachable("http://h/acp", &network).unwrap();
        assert_eq!(
            message,
            "cannot reach the agent at http://h/acp: Connection refused (os error 111)"
        );
        let agent_error = Error::Rpc(acp_jsonrpc::ResponseError::new(
            ErrorCode::INTERNAL_ERROR,
            "database down",
        ));
        assert_eq!(initialize_unreachable("http://h/acp", &agent_error), None);
    }
}
