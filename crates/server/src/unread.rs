//! What a handler left unread of a request body, read and thrown away after an error.
//!
//! A client still sending a body when the answer comes (a `507` halfway through a TUS PATCH, a
//! `401` before any of it) writes into a connection the server closes with its bytes unread;
//! the kernel then resets it, and the client meets a broken pipe instead of the answer. Reading
//! the rest first, within bounds, lets it finish sending and read the error.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use futures_util::StreamExt;
use hyper::body::{Body as _, Frame, SizeHint};

/// At most this much is read after an error; beyond it the connection is closed as before.
const DRAIN_AT_MOST: usize = 64 << 20;
/// And for at most this long, so a slow sender holds nothing for longer.
const DRAIN_FOR: Duration = Duration::from_secs(5);

/// Where a body handed to a handler comes back if the handler drops it before its end.
#[derive(Clone, Default)]
pub(crate) struct Unread(Arc<Mutex<Option<Body>>>);

impl Unread {
    /// `body`, wrapped so that what the handler does not read comes back here. A client that
    /// asked `Expect: 100-continue` sends nothing until the body is first read: if the handler
    /// never read it, there is nothing to drain, and reading would only make it send.
    pub(crate) fn watch(&self, body: Body, expects_continue: bool) -> Body {
        Body::new(Returning {
            body: Some(body),
            read: !expects_continue,
            unread: self.clone(),
        })
    }

    /// Read and discard what the handler left, within the bounds above.
    pub(crate) async fn drain(self) {
        let Some(body) = self.0.lock().expect("unread body lock").take() else {
            return;
        };
        let mut stream = body.into_data_stream();
        let _ = tokio::time::timeout(DRAIN_FOR, async {
            let mut read = 0;
            while let Some(Ok(chunk)) = stream.next().await {
                read += chunk.len();
                if read >= DRAIN_AT_MOST {
                    break;
                }
            }
        })
        .await;
    }
}

struct Returning {
    body: Option<Body>,
    /// The client may have sent some of it.
    read: bool,
    unread: Unread,
}

impl hyper::body::Body for Returning {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        self.read = true;
        match self.body.as_mut() {
            Some(body) => Pin::new(body).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.as_ref().is_none_or(|body| body.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.body
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), |body| body.size_hint())
    }
}

impl Drop for Returning {
    fn drop(&mut self) {
        let left = self
            .body
            .take()
            .filter(|body| self.read && !body.is_end_stream());
        if let Some(body) = left {
            *self.unread.0.lock().expect("unread body lock") = Some(body);
        }
    }
}
