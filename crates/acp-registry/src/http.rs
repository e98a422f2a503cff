//! Downloads: HTTPS (plain HTTP only to loopback), a size cap, a redirect limit, a timeout
//! for a stalled server and one for the whole transfer.

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use crate::error::Error;

/// How downloads behave. The defaults suit the registry and agents' release archives.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Follow at most this many redirects (default 10; release assets redirect once or twice).
    pub max_redirects: u32,
    /// Give up when the server sends nothing for this long, or takes this long to connect
    /// (default 30 s).
    pub stall_timeout: Duration,
    /// Give up on one download after this long in all (default 15 min: a large archive on a
    /// slow link).
    pub total_timeout: Duration,
    /// The largest registry document accepted (default 16 MiB; the real one is a few hundred KiB).
    pub max_registry_bytes: u64,
    /// The largest archive accepted (default 1 GiB).
    pub max_archive_bytes: u64,
    /// Trust only these certificate authorities (PEM) instead of the Mozilla roots: a private
    /// mirror's, or a test's (feature `tls`).
    pub root_certificates_pem: Option<Arc<Vec<u8>>>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            max_redirects: 10,
            stall_timeout: Duration::from_secs(30),
            total_timeout: Duration::from_secs(15 * 60),
            max_registry_bytes: 16 << 20,
            max_archive_bytes: 1 << 30,
            root_certificates_pem: None,
        }
    }
}

/// Whether `url` may be fetched: `https://`, or `http://` to a loopback address (a local
/// mirror, a test server). Plain HTTP beyond loopback would let anyone on the path replace
/// an agent's executable.
pub(crate) fn check_scheme(url: &str) -> Result<(), Error> {
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("https://") && cfg!(not(feature = "tls")) {
        return Err(Error::Download {
            url: url.to_owned(),
            reason: "https:// needs acp-rs-registry's `tls` feature, which this build lacks".into(),
        });
    }
    if lower.starts_with("https://") || (lower.starts_with("http://") && is_loopback(&lower)) {
        return Ok(());
    }
    Err(Error::Download {
        url: url.to_owned(),
        reason: "only https:// URLs are fetched (http:// only on loopback)".into(),
    })
}

/// Whether `url`'s host is a loopback name or address.
fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Fetches `url` into `sink`, refusing more than `max_bytes`; returns the byte count.
pub(crate) fn fetch(
    url: &str,
    options: &HttpOptions,
    max_bytes: u64,
    sink: &mut dyn Write,
) -> Result<u64, Error> {
    check_scheme(url)?;
    let failed = |reason: String| Error::Download {
        url: url.to_owned(),
        reason,
    };
    let agent = agent(url, options).map_err(|e| failed(e.to_string()))?;
    let mut response = agent
        .get(url)
        .call()
        .map_err(|e| failed(describe(e, options)))?;
    let mut reader = response.body_mut().with_config().limit(max_bytes).reader();
    let mut copied = 0u64;
    let mut buffer = vec![0; 64 * 1024];
    loop {
        let n = match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(failed(describe(ureq::Error::from(error), options))),
        };
        sink.write_all(&buffer[..n])
            .map_err(|e| failed(format!("cannot store it: {e}")))?;
        copied += n as u64;
    }
    Ok(copied)
}

fn agent(url: &str, options: &HttpOptions) -> Result<ureq::Agent, ureq::Error> {
    let mut config = ureq::Agent::config_builder();
    #[cfg(feature = "tls")]
    if let Some(pem) = &options.root_certificates_pem {
        use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};
        let certificates = ureq::tls::parse_pem(pem)
            .filter_map(|item| match item {
                Ok(PemItem::Certificate(certificate)) => Some(Ok(certificate)),
                Ok(_) => None,
                Err(error) => Some(Err(error)),
            })
            .collect::<Result<Vec<Certificate<'static>>, _>>()?;
        let roots = RootCerts::new_with_certs(&certificates);
        config = config.tls_config(TlsConfig::builder().root_certs(roots).build());
    }
    // A proxy from the environment (HTTPS_PROXY...) is used, except for loopback, which no
    // proxy can reach on our behalf.
    if is_loopback(url) {
        config = config.proxy(None);
    }
    let config = config
        // An https:// download never continues over plain HTTP after a redirect.
        .https_only(url.to_ascii_lowercase().starts_with("https://"))
        .max_redirects(options.max_redirects)
        .max_redirects_will_error(true)
        .timeout_connect(Some(options.stall_timeout))
        .timeout_recv_response(Some(options.stall_timeout))
        .timeout_per_read(Some(options.stall_timeout))
        .timeout_global(Some(options.total_timeout))
        .user_agent(concat!("acp-rs-registry/", env!("CARGO_PKG_VERSION")))
        .build();
    Ok(config.into())
}

/// ureq's error in the words of this crate's users.
fn describe(error: ureq::Error, options: &HttpOptions) -> String {
    match error {
        ureq::Error::StatusCode(status) => format!("the server answered HTTP {status}"),
        ureq::Error::TooManyRedirects => {
            format!("more than {} redirects", options.max_redirects)
        }
        ureq::Error::Timeout(ureq::Timeout::Global) => format!(
            "not finished after {} s",
            options.total_timeout.as_secs_f64()
        ),
        ureq::Error::Timeout(_) => format!(
            "the server sent nothing for {} s",
            options.stall_timeout.as_secs_f64()
        ),
        ureq::Error::BodyExceedsLimit(limit) => format!("larger than the {limit}-byte cap"),
        ureq::Error::RequireHttpsOnly(_) => "redirected to a plain http:// URL".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_only_on_loopback() {
        for fine in [
            "https://example.com/a",
            "http://127.0.0.1:8080/a",
            "http://LOCALHOST/a",
            "http://[::1]:80/a",
            "http://user@127.0.0.2/a",
        ] {
            assert!(check_scheme(fine).is_ok(), "{fine}");
        }
        for refused in [
            "http://example.com/a",
            "http://127.0.0.1.example.com/a",
            "http://example.com/127.0.0.1",
            "ftp://example.com/a",
            "file:///etc/passwd",
        ] {
            assert!(check_scheme(refused).is_err(), "{refused}");
        }
    }
}
