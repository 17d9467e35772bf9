//! Serving a router on a listener, with the protections a public server needs that
//! `axum::serve` does not expose: a timeout for reading request headers (slowloris, F5), and a
//! graceful shutdown that lets in-flight requests finish; and JSON bodies on the errors hyper
//! answers by itself (`JsonParseErrors`).
//!
//! HTTP/1.1 and HTTP/2: with TLS (`--tls-cert`, [`crate::tls`]) as ALPN chooses, and in
//! cleartext as the client's first bytes say (HTTP/2's preface: h2c "prior knowledge", what a
//! proxy in front speaks). Both waits, the TLS handshake and the first bytes, are within the
//! header timeout, so a silent connection is closed as a slow HTTP/1.1 one is.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::http::StatusCode;
use axum::Router;
use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt;

use crate::error::ApiError;

/// How long open requests get to finish once the server is asked to stop. A TUS body stops at
/// once, keeping its bytes; a POST or a download still running after this is cut, and nothing
/// it sent was acknowledged (a restart removes what it left behind).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(20);

/// Requests one HTTP/2 connection may have open at once.
const HTTP2_STREAMS: u32 = 128;

/// What every connection must begin with to be HTTP/2 without TLS (RFC 9113 §3.4).
const HTTP2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Serve `app` until `shutdown` resolves, then wait for open requests to finish, for
/// [`SHUTDOWN_GRACE`] at most. With `tls`, every connection is TLS.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    header_timeout: Duration,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let tls = tls.map(tokio_rustls::TlsAcceptor::from);
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
        // A response goes out in several writes (the head, then the body as it is read);
        // with Nagle's algorithm each later small write waited for the client's delayed ACK,
        // 40 ms on Linux, on about one keep-alive request in ten (`scripts/bench-names`).
        let _ = stream.set_nodelay(true);
        let connection = Connection {
            app: app.clone(),
            header_timeout,
            watcher: graceful.watcher(),
        };
        let tls = tls.clone();
        // Errors here are the client's (reset, timeout, malformed request, bad handshake).
        tokio::spawn(async move {
            match tls {
                Some(tls) => {
                    let handshake = tokio::time::timeout(header_timeout, tls.accept(stream));
                    if let Ok(Ok(stream)) = handshake.await {
                        let http2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
                        connection.serve(stream, http2).await;
                    }
                }
                None => {
                    if let Some(http2) = begins_http2(&stream, header_timeout).await {
                        connection.serve(stream, http2).await;
                    }
                }
            }
        });
    }
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("requests still open after {SHUTDOWN_GRACE:?} were cut");
    }
    Ok(())
}

/// Whether a cleartext connection speaks HTTP/2 (it opens with the preface), from its first
/// bytes, looked at without taking them; `None` if it sends none in time.
async fn begins_http2(stream: &TcpStream, within: Duration) -> Option<bool> {
    let mut first = [0; HTTP2_PREFACE.len()];
    let looked = tokio::time::timeout(within, async {
        loop {
            let n = stream.peek(&mut first).await?;
            // Decided as soon as the bytes differ from the preface, or it is whole.
            if n == 0 || first[..n] != HTTP2_PREFACE[..n] {
                return io::Result::Ok(false);
            }
            if n == HTTP2_PREFACE.len() {
                return Ok(true);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    looked.await.ok()?.ok()
}

/// An HTTP/2 request names its host in the `:authority` pseudo-header, which hyper puts in
/// the URI, not in `Host`: copied there, so that everything that reads the host (content
/// origins, the subdomain redirect, CORS) sees the same over either version.
fn host_from_authority<B>(mut request: axum::http::Request<B>) -> axum::http::Request<B> {
    if !request.headers().contains_key(axum::http::header::HOST) {
        let host = (request.uri().authority())
            .and_then(|authority| axum::http::HeaderValue::from_str(authority.as_str()).ok());
        if let Some(host) = host {
            request.headers_mut().insert(axum::http::header::HOST, host);
        }
    }
    request
}

/// One accepted connection, to be served over HTTP/1.1 or HTTP/2.
struct Connection {
    app: Router,
    header_timeout: Duration,
    watcher: Watcher,
}

impl Connection {
    async fn serve<I>(self, io: I, http2: bool)
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let service = TowerToHyperService::new(self.app.map_request(host_from_authority));
        if http2 {
            let mut builder = http2::Builder::new(TokioExecutor::new());
            builder
                .timer(TokioTimer::new())
                .max_concurrent_streams(HTTP2_STREAMS)
                // A peer that stops answering pings is gone.
                .keep_alive_interval(Some(Duration::from_secs(30)))
                .keep_alive_timeout(self.header_timeout);
            let connection = builder.serve_connection(TokioIo::new(io), service);
            let _ = self.watcher.watch(connection).await;
        } else {
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                // A client that does not finish its headers in time is disconnected.
                .header_read_timeout(self.header_timeout);
            let io = TokioIo::new(JsonParseErrors::new(io));
            let connection = builder.serve_connection(io, service);
            let _ = self.watcher.watch(connection).await;
        }
    }
}

/// A connection whose automatic error responses carry the contract's JSON body.
///
/// hyper answers some requests before any handler sees them: `400` for a request it cannot
/// parse, `414` for a URI over 64 KiB, `431` for headers over its buffer; it writes those
/// with an empty body and closes the connection, and offers no hook to change them. They are
/// recognised here as they are written (a response head with one of those statuses and no
/// `Content-Type`: every response of ours has one, see `app::json_errors`) and replaced with
/// the same status and a JSON body.
struct JsonParseErrors<I> {
    inner: I,
    /// A replacement response still being written, and how much of it is out.
    pending: Option<(Vec<u8>, usize)>,
}

impl<I> JsonParseErrors<I> {
    fn new(inner: I) -> Self {
        Self {
            inner,
            pending: None,
        }
    }
}

/// The replacement for `buf` if it starts with one of hyper's automatic error responses.
fn json_parse_error(buf: &[u8]) -> Option<Vec<u8>> {
    let status = match buf.get(..13)? {
        b"HTTP/1.1 400 " => StatusCode::BAD_REQUEST,
        b"HTTP/1.1 414 " => StatusCode::URI_TOO_LONG,
        b"HTTP/1.1 431 " => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        _ => return None,
    };
    let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    if head.contains("\r\ncontent-type:") {
        return None;
    }
    let message = match status {
        StatusCode::URI_TOO_LONG => "the request URI is longer than this server accepts (64 KiB)",
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => {
            "the request headers are larger than this server accepts"
        }
        _ => "the request is not valid HTTP/1.1",
    };
    let error = ApiError::for_status(status, message.to_owned());
    let (_, code) = error.status_and_code();
    let body =
        serde_json::json!({"error": code.as_str(), "message": error.to_string()}).to_string();
    let reason = status.canonical_reason().unwrap_or("");
    let mut out = format!(
        "HTTP/1.1 {} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        status.as_u16(),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&buf[head_end..]);
    Some(out)
}

impl<I: AsyncWrite + Unpin> JsonParseErrors<I> {
    /// Write out what is pending; ready once nothing is.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((bytes, written)) = &mut self.pending {
            if *written == bytes.len() {
                self.pending = None;
                break;
            }
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        Poll::Ready(Ok(()))
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for JsonParseErrors<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for JsonParseErrors<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        ready!(self.poll_pending(cx))?;
        if let Some(replacement) = json_parse_error(buf) {
            // Taken whole: it goes out before anything written after it.
            self.pending = Some((replacement, 0));
            let _ = self.poll_pending(cx)?;
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    /// Vectored writes keep hyper from copying bodies into one buffer; its automatic
    /// responses come as a head alone, in the first slice.
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        ready!(self.poll_pending(cx))?;
        let first = bufs.iter().position(|b| !b.is_empty()).unwrap_or(0);
        if let Some(mut replacement) = bufs.get(first).and_then(|b| json_parse_error(b)) {
            for buf in &bufs[first + 1..] {
                replacement.extend_from_slice(buf);
            }
            self.pending = Some((replacement, 0));
            let _ = self.poll_pending(cx)?;
            return Poll::Ready(Ok(bufs.iter().map(|b| b.len()).sum()));
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hypers_automatic_errors_get_a_json_body_and_ours_are_left_alone() {
        let automatic = b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let fixed = String::from_utf8(json_parse_error(automatic).unwrap()).unwrap();
        let (head, body) = fixed.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{head}");
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(json["error"], "uri_too_long");

        let ours = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n\r\n{}";
        assert!(json_parse_error(ours).is_none());
        assert!(json_parse_error(b"HTTP/1.1 200 OK\r\n\r\n").is_none());
    }
}
