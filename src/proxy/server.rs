//! The connections: HTTP/1.1 (hyper) serving the router, with
//! - a deadline on the request head (`header_timeout`): a client that has sent part of a request
//!   and not the rest (slowloris) gets `408` and the connection closes; an idle keep-alive
//!   connection is closed silently;
//! - a limit on the request head (64 KiB, 100 headers): `431`;
//! - a bound on open connections (`max_connections`): more wait in the accept queue;
//! - graceful shutdown: when `shutdown` fires, no new connection is accepted, the open ones finish
//!   their request in flight (up to `shutdown_grace`) and close.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::nova;
use super::routes::router;
use super::state::Proxy;

/// The largest request head accepted (hyper's read buffer).
pub const MAX_HEAD: usize = 64 * 1024;
const MAX_HEADERS: usize = 100;

/// A stream that notes whether a request has begun and not been answered yet.
struct Watched {
    inner: TcpStream,
    mid_request: Arc<AtomicBool>,
}

impl AsyncRead for Watched {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.mid_request.store(true, Ordering::SeqCst);
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.mid_request.store(false, Ordering::SeqCst);
        }
        r
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Serves `proxy` on `listener` until `shutdown` fires, then drains.
pub async fn serve(listener: TcpListener, proxy: Arc<Proxy>, shutdown: CancellationToken) -> std::io::Result<()> {
    let cfg = proxy.cfg.clone();
    let app = router(proxy);
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(tokio::sync::Semaphore::new(cfg.max_connections.max(1)));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(cfg.header_timeout)
        .max_buf_size(MAX_HEAD * 2)
        .max_header_size(MAX_HEAD)
        .max_headers(MAX_HEADERS)
        .keep_alive(true);
    loop {
        let slot = tokio::select! {
            s = slots.clone().acquire_owned() => s.expect("the semaphore is never closed"),
            _ = shutdown.cancelled() => break,
        };
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.cancelled() => break,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // out of file descriptors and the like: wait, do not spin
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        // a second handle on the socket, to answer 408 after hyper gives up on a slow head
        let spare = stream.into_std().and_then(|s| s.try_clone().map(|c| (s, c)));
        let Ok((std_stream, spare)) = spare else { continue };
        let Ok(stream) = TcpStream::from_std(std_stream) else { continue };
        let mid_request = Arc::new(AtomicBool::new(false));
        let io = TokioIo::new(Watched { inner: stream, mid_request: mid_request.clone() });
        let svc = app.clone().map_request(move |mut req: hyper::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert::<SocketAddr>(peer);
            req
        });
        let conn = graceful.watch(http.serve_connection(io, TowerToHyperService::new(svc)));
        tokio::spawn(async move {
            let result = conn.await;
            if let Err(e) = result {
                if e.is_timeout() && mid_request.load(Ordering::SeqCst) {
                    tracing::info!(target: "bm2ironic::proxy::access", %peer, status = 408, "request head not received in time");
                    request_timeout(spare).await;
                } else {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
            }
            drop(slot);
        });
    }
    drop(listener);
    tracing::info!("proxy: shutting down, waiting for the requests in flight");
    tokio::select! {
        _ = graceful.shutdown() => tracing::info!("proxy: all connections closed"),
        _ = tokio::time::sleep(cfg.shutdown_grace) => tracing::warn!("proxy: connections still open after the grace period: closing them"),
    }
    Ok(())
}

/// Writes a 408 on the spare handle of a connection hyper has given up on, and closes it.
async fn request_timeout(spare: std::net::TcpStream) {
    let Ok(mut s) = TcpStream::from_std(spare) else { return };
    let body = nova::fault(408, "The request was not received in time.").to_string();
    let head = format!(
        "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        let _ = s.write_all(head.as_bytes()).await;
        let _ = s.write_all(body.as_bytes()).await;
        let _ = s.shutdown().await;
    })
    .await;
}
