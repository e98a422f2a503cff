//! A TCP proxy that counts the connections it accepts: how many sockets a client used.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The connections a [`counting_proxy`] accepted so far.
#[derive(Clone)]
pub struct Accepted(Arc<AtomicUsize>);

impl Accepted {
    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A TCP proxy to `upstream` on a free loopback port.
pub async fn counting_proxy(upstream: SocketAddr) -> (SocketAddr, Accepted) {
    let listener = smol::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Accepted(Arc::new(AtomicUsize::new(0)));
    let counter = accepted.0.clone();
    smol::spawn(async move {
        while let Ok((down, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            let Ok(up) = smol::net::TcpStream::connect(upstream).await else {
                continue;
            };
            // Each direction ends by shutting down the write side it copied into, so that
            // either end sees the other close (and the server's shutdown does not wait for
            // its grace period).
            for (from, to) in [(down.clone(), up.clone()), (up, down)] {
                smol::spawn(async move {
                    let _ = futures_lite::io::copy(from, to.clone()).await;
                    let _ = to.shutdown(std::net::Shutdown::Write);
                })
                .detach();
            }
        }
    })
    .detach();
    (addr, accepted)
}
