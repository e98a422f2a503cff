//! TLS, with the `tls` feature: a certificate for the server ([`TlsServerConfig`]), trust
//! roots for clients ([`TlsClientConfig`]). rustls with the ring provider.

#[cfg(feature = "tls")]
pub use imp::{TlsClientConfig, TlsServerConfig};

/// What a client connects with: never anything without the `tls` feature.
#[cfg(not(feature = "tls"))]
#[derive(Debug, Clone)]
pub(crate) enum ClientTls {}

#[cfg(feature = "tls")]
pub(crate) type ClientTls = TlsClientConfig;

#[cfg(feature = "tls")]
mod imp {
    use std::io;
    use std::path::Path;
    use std::sync::Arc;

    use futures_rustls::rustls::{self, ClientConfig, RootCertStore, ServerConfig};
    use futures_rustls::{TlsAcceptor, TlsConnector};
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    use smol::net::TcpStream;

    fn provider() -> Arc<rustls::crypto::CryptoProvider> {
        // Explicit, so that another crate enabling a second provider cannot make the choice
        // ambiguous.
        Arc::new(rustls::crypto::ring::default_provider())
    }

    fn invalid(error: impl std::fmt::Display) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, error.to_string())
    }

    fn certificates(path: &Path) -> io::Result<Vec<CertificateDer<'static>>> {
        let certs = CertificateDer::pem_file_iter(path)
            .map_err(invalid)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(invalid)?;
        if certs.is_empty() {
            return Err(invalid(format!("no certificate in {}", path.display())));
        }
        Ok(certs)
    }

    /// A server's certificate: the server then speaks `wss://` and `https://` only.
    ///
    /// ```no_run
    /// use acp_remote::{ServerOptions, TlsServerConfig};
    ///
    /// let tls = TlsServerConfig::from_pem_files("cert.pem", "key.pem")?;
    /// let options = ServerOptions::default().with_tls(tls);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[derive(Clone)]
    pub struct TlsServerConfig(Arc<ServerConfig>);

    impl std::fmt::Debug for TlsServerConfig {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("TlsServerConfig")
        }
    }

    impl TlsServerConfig {
        /// A certificate chain (PEM, leaf first) and its private key (PEM: PKCS#8, PKCS#1
        /// or SEC1). With the `http2` feature, ALPN offers `h2` and `http/1.1`.
        pub fn from_pem_files(
            cert_chain: impl AsRef<Path>,
            key: impl AsRef<Path>,
        ) -> io::Result<Self> {
            let certs = certificates(cert_chain.as_ref())?;
            let key = PrivateKeyDer::from_pem_file(key.as_ref()).map_err(invalid)?;
            let config = ServerConfig::builder_with_provider(provider())
                .with_safe_default_protocol_versions()
                .map_err(invalid)?
                .with_no_client_auth()
                .with_single_cert(certs, key)
                .map_err(invalid)?;
            // Browsers and HTTP/2 clients pick `h2` here; WebSocket clients and HTTP/1.1
            // ones `http/1.1` (or offer nothing, which is HTTP/1.1 too).
            #[cfg(feature = "http2")]
            let config = {
                let mut config = config;
                config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
                config
            };
            Ok(TlsServerConfig(Arc::new(config)))
        }

        /// A rustls configuration of your own (client certificates, other providers). Its
        /// ALPN list decides which clients get HTTP/2 (`h2`, with the `http2` feature).
        pub fn from_rustls(config: Arc<ServerConfig>) -> Self {
            TlsServerConfig(config)
        }

        pub(crate) async fn accept(
            &self,
            tcp: TcpStream,
        ) -> io::Result<futures_rustls::server::TlsStream<TcpStream>> {
            TlsAcceptor::from(self.0.clone()).accept(tcp).await
        }
    }

    /// Whom a client trusts for `wss://` and `https://` URLs: the Mozilla roots by default.
    ///
    /// ```no_run
    /// use acp_remote::{Connector, TlsClientConfig};
    ///
    /// // A server with a certificate from your own authority:
    /// let tls = TlsClientConfig::with_root_pem_file("my-ca.pem")?;
    /// let connector = Connector::new("wss://agent.internal:8765/acp").with_tls(tls);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[derive(Clone)]
    pub struct TlsClientConfig(Arc<ClientConfig>);

    impl std::fmt::Debug for TlsClientConfig {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("TlsClientConfig")
        }
    }

    impl TlsClientConfig {
        /// Trusts the Mozilla roots (webpki-roots).
        pub fn mozilla_roots() -> Self {
            let roots = RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            };
            Self::with_roots(roots).expect("the ring provider supports its default versions")
        }

        /// Trusts only the certificates of a PEM file (your own authority).
        pub fn with_root_pem_file(path: impl AsRef<Path>) -> io::Result<Self> {
            let mut roots = RootCertStore::empty();
            for cert in certificates(path.as_ref())? {
                roots.add(cert).map_err(invalid)?;
            }
            Self::with_roots(roots)
        }

        fn with_roots(roots: RootCertStore) -> io::Result<Self> {
            let config = ClientConfig::builder_with_provider(provider())
                .with_safe_default_protocol_versions()
                .map_err(invalid)?
                .with_root_certificates(roots)
                .with_no_client_auth();
            Ok(TlsClientConfig(Arc::new(config)))
        }

        /// A rustls configuration of your own (client certificates, other providers).
        pub fn from_rustls(config: Arc<ClientConfig>) -> Self {
            TlsClientConfig(config)
        }

        /// The same trust, offering `h2` then `http/1.1` by ALPN: for the first connection of
        /// an `https://` client, which speaks HTTP/2 only if the server picks it. WebSocket
        /// and HTTP/1.1 connections offer nothing (HTTP/1.1 for every server).
        #[cfg(feature = "http2")]
        pub(crate) fn offering_h2(&self) -> Self {
            let mut config = (*self.0).clone();
            config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            TlsClientConfig(Arc::new(config))
        }

        pub(crate) async fn connect(
            &self,
            host: &str,
            tcp: TcpStream,
        ) -> io::Result<futures_rustls::client::TlsStream<TcpStream>> {
            let name = ServerName::try_from(host.to_owned()).map_err(invalid)?;
            TlsConnector::from(self.0.clone()).connect(name, tcp).await
        }
    }
}
