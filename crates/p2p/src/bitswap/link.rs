//! This node's stream to one peer, for everything it sends the peer (answers and wants): a
//! task owns the stream, opened on the first message with the newest protocol the peer
//! speaks, reopened once if it breaks, and closed after a while with nothing to send.

use std::time::Duration;

use libp2p::PeerId;
use tokio::sync::{mpsc, OwnedSemaphorePermit};

use super::message::{self, Message, Version};
use super::{Bitswap, PROTOCOLS};

/// A link with nothing to send for this long closes (a new one opens when needed).
const IDLE: Duration = Duration::from_secs(60);

#[derive(Clone)]
pub(super) struct Link {
    messages: mpsc::Sender<Outgoing>,
}

/// A message to send, with the share of the answer budget it holds until it is written.
struct Outgoing {
    message: Message,
    _budget: Option<OwnedSemaphorePermit>,
}

impl Link {
    /// `preferred` is the version the peer itself spoke to us, if it did.
    pub(super) fn spawn(bitswap: Bitswap, peer: PeerId, preferred: Option<Version>) -> Self {
        let (messages, receiver) = mpsc::channel(16);
        tokio::spawn(run(bitswap, peer, preferred, receiver));
        Self { messages }
    }

    /// Queue a message; false if the link has stopped (the peer is gone).
    pub(super) async fn send(
        &self,
        message: Message,
        budget: Option<OwnedSemaphorePermit>,
    ) -> bool {
        let outgoing = Outgoing {
            message,
            _budget: budget,
        };
        self.messages.send(outgoing).await.is_ok()
    }
}

async fn run(
    bitswap: Bitswap,
    peer: PeerId,
    preferred: Option<Version>,
    mut messages: mpsc::Receiver<Outgoing>,
) {
    let mut stream: Option<(libp2p::Stream, Version)> = None;
    while let Ok(Some(Outgoing { message, .. })) = tokio::time::timeout(IDLE, messages.recv()).await
    {
        for _attempt in 0..2 {
            if stream.is_none() {
                stream = open(&bitswap, peer, preferred).await;
            }
            let Some((out, version)) = stream.as_mut() else {
                break;
            };
            match message::write_frame(out, &message.encode(*version)).await {
                Ok(()) => break,
                Err(e) => {
                    tracing::debug!(%peer, error = %e, "a Bitswap stream broke; reopening");
                    stream = None;
                }
            }
        }
    }
    if let Ok(mut links) = bitswap.inner.links.lock() {
        links.remove(&peer);
    }
}

/// A stream to `peer` on the newest Bitswap it speaks (the one it spoke to us, first).
async fn open(
    bitswap: &Bitswap,
    peer: PeerId,
    preferred: Option<Version>,
) -> Option<(libp2p::Stream, Version)> {
    let mut control = bitswap.control()?;
    let mut order: Vec<_> = PROTOCOLS.to_vec();
    order.sort_by_key(|(_, v)| Some(*v) != preferred);
    for (protocol, version) in order {
        match control.open_stream(peer, protocol.clone()).await {
            Ok(stream) => return Some((stream, version)),
            Err(libp2p_stream::OpenStreamError::UnsupportedProtocol(_)) => continue,
            Err(e) => {
                tracing::debug!(%peer, error = %e, "cannot open a Bitswap stream");
                return None;
            }
        }
    }
    tracing::debug!(%peer, "the peer speaks no Bitswap version");
    None
}
