//! Serving a router on a listener, with the protections a public server needs that
//! `axum::serve` does not expose: a timeout for reading request headers (slowloris, F5), and a
//! graceful shutdown that lets in-flight requests finish.
//!
//! HTTP/1.1 only: protocol auto-detection would wait for a client's first bytes before any
//! header timeout starts, so a silent connection could be held open forever. Cleartext HTTP/2
//! is rare among upload clients; TLS (and HTTP/2 with it) belongs to the proxy in front.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

/// Serve `app` until `shutdown` resolves, then wait for open requests to finish.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    header_timeout: Duration,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        // A client that does not finish its headers in time is disconnected.
        .header_read_timeout(header_timeout);
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // Out of file descriptors and the like: keep serving the connections we have.
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let service = TowerToHyperService::new(app.clone());
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // Errors here are the client's (reset, timeout, malformed request).
            let _ = connection.await;
        });
    }
    graceful.shutdown().await;
    Ok(())
}
