//! A TCP connection in the clear, or under TLS (the `tls` feature).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_io::{AsyncRead, AsyncWrite};
use smol::net::TcpStream;

/// A TCP connection, in the clear or under TLS.
#[derive(Debug)]
pub(crate) enum NetStream {
    /// In the clear.
    Plain(TcpStream),
    /// Accepted by a server with a certificate.
    #[cfg(feature = "tls")]
    ServerTls(Box<futures_rustls::server::TlsStream<TcpStream>>),
    /// Opened by a client to a `wss://` or `https://` URL.
    #[cfg(feature = "tls")]
    ClientTls(Box<futures_rustls::client::TlsStream<TcpStream>>),
}

impl NetStream {
    /// Connects to `host:port`, under TLS when `tls` says so.
    pub(crate) async fn connect(
        host: &str,
        port: u16,
        tls: Option<&crate::tls::ClientTls>,
    ) -> io::Result<NetStream> {
        let tcp = TcpStream::connect((host, port)).await?;
        let _ = tcp.set_nodelay(true);
        match tls {
            None => Ok(NetStream::Plain(tcp)),
            #[cfg(feature = "tls")]
            Some(tls) => Ok(NetStream::ClientTls(Box::new(
                tls.connect(host, tcp).await?,
            ))),
            #[cfg(not(feature = "tls"))]
            Some(never) => match *never {},
        }
    }
}

#[cfg(feature = "http2")]
impl NetStream {
    /// Whether the connection is under TLS.
    pub(crate) fn is_tls(&self) -> bool {
        !matches!(self, NetStream::Plain(_))
    }

    /// Whether the TLS handshake chose HTTP/2 (ALPN `h2`).
    pub(crate) fn negotiated_h2(&self) -> bool {
        match self {
            NetStream::Plain(_) => false,
            #[cfg(feature = "tls")]
            NetStream::ServerTls(tls) => tls.get_ref().1.alpn_protocol() == Some(b"h2"),
            #[cfg(feature = "tls")]
            NetStream::ClientTls(tls) => tls.get_ref().1.alpn_protocol() == Some(b"h2"),
        }
    }
}

macro_rules! each {
    ($self:expr, $s:ident => $e:expr) => {
        match $self.get_mut() {
            NetStream::Plain($s) => $e,
            #[cfg(feature = "tls")]
            NetStream::ServerTls($s) => $e,
            #[cfg(feature = "tls")]
            NetStream::ClientTls($s) => $e,
        }
    };
}

impl AsyncRead for NetStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        each!(self, s => Pin::new(s).poll_read(cx, buf))
    }
}

impl AsyncWrite for NetStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        each!(self, s => Pin::new(s).poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        each!(self, s => Pin::new(s).poll_write_vectored(cx, bufs))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self, s => Pin::new(s).poll_flush(cx))
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self, s => Pin::new(s).poll_close(cx))
    }
}
