//! Webhook deliveries, from the durable event log in the metadata store. One dispatcher at a
//! time (a lease) follows the log from its cursor: it sends each new event to the endpoints
//! subscribed, signed as the Standard Webhooks specification says, then writes each delivery
//! with its first attempt and moves the cursor, in one transaction. A delivery whose first
//! attempt failed is retried from its row by any node that claims it when due. At least once:
//! a dispatcher that dies before its write leaves the events to the next (when its lease runs
//! out), and every attempt of one event carries the same `webhook-id`.
//!
//! Endpoints are checked twice: when made (the route calls [`check_url`]) and at every
//! connection, through a resolver that only hands out public addresses, so a name that later
//! resolves to a private address (DNS rebinding) reaches nothing.

use cairn_store::EventLog;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use cairn_store::events::{Attempt, ClaimedDelivery, DeliveryStatus};
use cairn_store::{now_ms, random_name};
use futures_util::future::BoxFuture;
use futures_util::stream::FuturesUnordered;
use futures_util::{FutureExt, StreamExt};
use reqwest::Url;

use crate::events::operations_of;
use crate::{sleep_unless_stopped, Service};

/// An endpoint has this long to answer.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// What a dispatcher claims at a time, sent concurrently.
const CLAIM: u32 = 64;
/// A claim's lease: longer than an attempt, so a live sender keeps it.
const LEASE: Duration = Duration::from_secs(20);
/// How often the queue is looked at when it was empty.
const IDLE: Duration = Duration::from_millis(500);
/// How long a batch waits for its sends before recording those that ended: the rest are
/// recorded when they end, so an endpoint slow to answer holds up nobody else's deliveries.
const BATCH_WAIT: Duration = Duration::from_secs(2);
/// How often the dispatch cursor is moved past events no endpoint hears of.
const PASS_UNHEARD_EVERY: Duration = Duration::from_secs(60);
/// How long deliveries gather after a batch that was not full.
const GATHER: Duration = Duration::from_millis(250);
/// The bytes of an endpoint's answer read (the rest is not waited for).
const RESPONSE_READ: usize = 4096;

/// A new endpoint's signing secret: `whsec_` and 24 random bytes in base64, the form every
/// Standard Webhooks library takes.
pub fn new_secret() -> String {
    let mut key = [0u8; 24];
    // The OS random source failing is not recoverable in any useful way.
    getrandom::fill(&mut key).expect("OS random source");
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(key)
    )
}

/// Whether an address is one anybody on the internet could reach: not loopback, private,
/// link-local (cloud metadata services live there), shared, unspecified, multicast or
/// reserved.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || a >= 240
                || (a == 100 && (64..128).contains(&b)))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || first == 0x2001 && v6.segments()[1] == 0x0db8)
        }
    }
}

/// A URL's host as a resolver takes it: an IPv6 literal without its brackets.
fn host_of(url: &Url) -> Option<&str> {
    let host = url.host_str()?;
    Some(host.trim_start_matches('[').trim_end_matches(']'))
}

/// An endpoint's URL, checked: http or https, a host, and (unless `allow_private`) only
/// public addresses for it. The error says which rule it broke.
pub async fn check_url(url: &str, allow_private: bool) -> Result<Url, String> {
    let parsed = Url::parse(url).map_err(|e| format!("url: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "url: the scheme must be http or https, not {:?}",
            parsed.scheme()
        ));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("url: credentials in the URL are not allowed".into());
    }
    let host = host_of(&parsed).ok_or("url: it names no host")?.to_owned();
    if allow_private {
        return Ok(parsed);
    }
    let port = parsed.port_or_known_default().unwrap_or(443);
    let addresses: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|e| format!("url: {host} does not resolve: {e}"))?
        .collect();
    if let Some(refused) = addresses.iter().find(|a| !is_public(a.ip())) {
        return Err(format!(
            "url: {host} resolves to {}, a loopback, private, link-local or otherwise \
             non-public address; webhooks are sent only to public addresses (the server's \
             --webhook-allow-private true lifts this)",
            refused.ip()
        ));
    }
    Ok(parsed)
}

/// Resolves names as the system does, keeping only public addresses (unless private ones are
/// allowed): the check made when the endpoint was created, made again at every connection.
struct PublicOnly {
    allow_private: bool,
}

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow_private = self.allow_private;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|a| allow_private || is_public(a.ip()))
                .collect();
            if found.is_empty() {
                return Err(format!("{host} resolves to no public address").into());
            }
            Ok(Box::new(found.into_iter()) as reqwest::dns::Addrs)
        }) as Pin<Box<dyn Future<Output = _> + Send>>
    }
}

/// Send deliveries until the service stops: each event's first attempts as the event log
/// brings them (one dispatcher at a time), and the retries that fall due (any node).
pub async fn deliver_webhooks(service: Service) {
    let allow_private = service.config.webhook_allow_private;
    let client = match reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(ATTEMPT_TIMEOUT)
        .connect_timeout(ATTEMPT_TIMEOUT)
        .user_agent(concat!("cairn/", env!("CARGO_PKG_VERSION"), " (webhooks)"))
        .dns_resolver(Arc::new(PublicOnly { allow_private }))
        .build()
    {
        Ok(client) => client,
        Err(e) => {
            tracing::error!(error = %e, "the webhook client could not be built; no webhooks");
            return;
        }
    };
    let mut sender = Sender {
        service,
        client,
        allow_private,
        worker: format!("webhooks-{}", random_name()),
        passed: Instant::now(),
    };
    let stop = sender.service.stop.subscribe();
    loop {
        let first = sender.send_first_attempts().await;
        let retried = sender.send_retries().await;
        let pause = if first.deliveries + retried.deliveries == 0 {
            IDLE
        } else if !first.full && !retried.full {
            // Batches that were not full took all there was: let the next ones gather for a
            // moment, so a steady trickle of events costs a few writes a second, not one each.
            // (A full batch of new events may hold fewer than CLAIM deliveries: it leaves its
            // last event whole for the next.)
            GATHER
        } else {
            continue;
        };
        if sleep_unless_stopped(&stop, pause).await {
            return;
        }
    }
}

/// What sends deliveries, and records what came of them.
struct Sender {
    service: Service,
    client: reqwest::Client,
    allow_private: bool,
    /// Names this dispatcher in the leases it takes.
    worker: String,
    /// When the cursor was last moved past events no endpoint hears of.
    passed: Instant,
}

impl Sender {
    /// The first attempts of the events the dispatch cursor has not passed, when this node
    /// holds the dispatch lease.
    async fn send_first_attempts(&mut self) -> Sent {
        let store = &self.service.store;
        let new = match store.take_new_deliveries(&self.worker, LEASE, CLAIM).await {
            Ok(new) => new,
            Err(e) => {
                tracing::warn!(error = %e, "reading new webhook deliveries failed; retrying");
                return Sent::default();
            }
        };
        if new.deliveries.is_empty() {
            // Events nobody hears of: passed now and then, not at every look (a write each),
            // so that the log behind the cursor can be forgotten.
            if new.through > new.after && self.passed.elapsed() >= PASS_UNHEARD_EVERY {
                self.passed = Instant::now();
                if let Err(e) = store
                    .record_first_attempts(&self.worker, LEASE, &new, &[])
                    .await
                {
                    tracing::warn!(error = %e, "moving the webhook dispatch cursor failed");
                }
            }
            return Sent::default();
        }
        let sent = Sent {
            deliveries: new.deliveries.len(),
            full: new.full,
        };
        let (ended, still_sending) = self.attempt(&new.deliveries).await;
        let attempts: Vec<_> = new
            .deliveries
            .iter()
            .zip(ended.iter().map(Option::as_ref))
            .collect();
        match store
            .record_first_attempts(&self.worker, LEASE, &new, &attempts)
            .await
        {
            Ok(Some(ids)) => {
                log_outcomes(attempts.iter().filter_map(|(d, a)| Some((*d, (*a)?))));
                let mut deliveries = new.deliveries;
                for (delivery, id) in deliveries.iter_mut().zip(ids) {
                    delivery.id = Some(id);
                }
                self.record_when_sent(deliveries, still_sending);
            }
            // Sent again by whoever holds the cursor now: at least once, never lost.
            Ok(None) => tracing::warn!("the webhook dispatch lease was lost while sending"),
            Err(e) => tracing::warn!(error = %e, "recording webhook attempts failed"),
        }
        sent
    }

    /// Deliveries due again (their first attempt failed), claimed by this node.
    async fn send_retries(&self) -> Sent {
        let store = &self.service.store;
        let claimed = match store.claim_deliveries(&self.worker, LEASE, CLAIM).await {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::warn!(error = %e, "claiming webhook deliveries failed; retrying");
                return Sent::default();
            }
        };
        let sent = Sent {
            deliveries: claimed.len(),
            full: claimed.len() == CLAIM as usize,
        };
        if claimed.is_empty() {
            return sent;
        }
        let (ended, still_sending) = self.attempt(&claimed).await;
        let attempts: Vec<_> = claimed
            .iter()
            .zip(&ended)
            .filter_map(|(delivery, attempt)| Some((delivery, attempt.as_ref()?)))
            .collect();
        record_attempts(store.as_ref(), &self.worker, &attempts).await;
        self.record_when_sent(claimed, still_sending);
        sent
    }

    /// One attempt at each delivery, all at once (their events' uploads and pins read in one
    /// query). Returns the attempts that ended within [`BATCH_WAIT`], by index, and the sends
    /// still under way.
    async fn attempt(&self, deliveries: &[ClaimedDelivery]) -> (Vec<Option<Attempt>>, Sending) {
        let events = deliveries.iter().map(|delivery| &delivery.event);
        let operations = operations_of(self.service.store.as_ref(), events).await;
        let mut sending: Sending = deliveries
            .iter()
            .enumerate()
            .map(|(index, delivery)| {
                let body = operations.get(&delivery.event.id).map(|operation| {
                    crate::records::event_body(&delivery.event, operation).to_string()
                });
                let (client, delivery) = (self.client.clone(), delivery.clone());
                let allow_private = self.allow_private;
                async move {
                    let attempt = match body {
                        Some(body) => send(&client, &delivery, &body, allow_private).await,
                        // Recorded as a failed attempt: retried in 5 s, like any other.
                        None => Attempt {
                            at_ms: now_ms(),
                            duration_ms: 0,
                            response_status: None,
                            error: Some("the event's upload or pin could not be read".into()),
                        },
                    };
                    (index, attempt)
                }
                .boxed()
            })
            .collect();
        let mut ended = vec![None; deliveries.len()];
        let waited = tokio::time::sleep(BATCH_WAIT);
        tokio::pin!(waited);
        loop {
            tokio::select! {
                next = sending.next() => match next {
                    Some((index, attempt)) => ended[index] = Some(attempt),
                    None => break,
                },
                () = &mut waited => break,
            }
        }
        (ended, sending)
    }

    /// Records the attempts of `sending` (indices into `deliveries`, which have their rows,
    /// claimed by this node) once they end, in one write.
    fn record_when_sent(&self, deliveries: Vec<ClaimedDelivery>, sending: Sending) {
        if sending.is_empty() {
            return;
        }
        let (store, worker) = (self.service.store.clone(), self.worker.clone());
        tokio::spawn(async move {
            let ended: Vec<(usize, Attempt)> = sending.collect().await;
            let attempts: Vec<_> = ended
                .iter()
                .map(|(index, attempt)| (&deliveries[*index], attempt))
                .collect();
            record_attempts(store.as_ref(), &worker, &attempts).await;
        });
    }
}

/// What one look at the queue sent: how many deliveries, and whether it stopped at its limit
/// (then the next look comes at once).
#[derive(Clone, Copy, Default)]
struct Sent {
    deliveries: usize,
    full: bool,
}

/// Sends under way, each with its delivery's index in the batch.
type Sending = FuturesUnordered<BoxFuture<'static, (usize, Attempt)>>;

async fn record_attempts(
    store: &dyn EventLog,
    worker: &str,
    attempts: &[(&ClaimedDelivery, &Attempt)],
) {
    match store.record_attempts(worker, attempts).await {
        Ok(_) => log_outcomes(attempts.iter().copied()),
        // Claims lapse: the deliveries are sent again (at least once, never lost).
        Err(e) => tracing::warn!(error = %e, "recording webhook attempts failed"),
    }
}

fn log_outcomes<'a>(attempts: impl Iterator<Item = (&'a ClaimedDelivery, &'a Attempt)>) {
    for (delivery, attempt) in attempts {
        let status = delivery.status_after(attempt);
        if status == DeliveryStatus::Failed {
            tracing::warn!(
                event = delivery.event.id,
                url = %delivery.url,
                error = attempt.error.as_deref().unwrap_or(""),
                "a webhook delivery failed for good after 24 hours of retries"
            );
        }
        tracing::debug!(
            event = delivery.event.id,
            webhook = delivery.webhook_id,
            kind = delivery.event.kind.as_str(),
            status = status.as_str(),
            response = attempt.response_status,
            error = attempt.error.as_deref().unwrap_or(""),
            "webhook attempt"
        );
    }
}

/// One signed POST, and what came of it.
async fn send(
    client: &reqwest::Client,
    delivery: &ClaimedDelivery,
    body: &str,
    allow_private: bool,
) -> Attempt {
    let at_ms = now_ms();
    let started = Instant::now();
    let outcome = async {
        let url = Url::parse(&delivery.url).map_err(|e| format!("url: {e}"))?;
        // A literal address never reaches the resolver.
        if let Some(ip) = host_of(&url).and_then(|host| host.parse::<IpAddr>().ok()) {
            if !allow_private && !is_public(ip) {
                return Err(format!("{ip} is not a public address"));
            }
        }
        let message_id = delivery.message_id();
        let timestamp = at_ms / 1000;
        let signature = standardwebhooks::Webhook::new(&delivery.secret)
            .and_then(|hook| hook.sign(&message_id, timestamp, body.as_bytes()))
            .map_err(|e| format!("signing: {e}"))?;
        let mut response = client
            .post(url)
            .header("content-type", "application/json")
            .header(standardwebhooks::HEADER_WEBHOOK_ID, &message_id)
            .header(
                standardwebhooks::HEADER_WEBHOOK_TIMESTAMP,
                timestamp.to_string(),
            )
            .header(standardwebhooks::HEADER_WEBHOOK_SIGNATURE, signature)
            .body(body.to_owned())
            .send()
            .await
            .map_err(describe)?;
        let status = response.status().as_u16();
        // Read a little of the answer, so the connection ends cleanly, and no more.
        let mut read = 0;
        while read < RESPONSE_READ {
            match response.chunk().await {
                Ok(Some(chunk)) => read += chunk.len(),
                _ => break,
            }
        }
        Ok(status)
    }
    .await;
    let duration_ms = started.elapsed().as_millis() as i64;
    match outcome {
        Ok(status) => Attempt {
            at_ms,
            duration_ms,
            response_status: Some(status),
            error: (!(200..300).contains(&status))
                .then(|| format!("the endpoint answered {status}, not a 2xx")),
        },
        Err(error) => Attempt {
            at_ms,
            duration_ms,
            response_status: None,
            error: Some(error),
        },
    }
}

fn describe(e: reqwest::Error) -> String {
    use std::error::Error;
    let mut text = if e.is_timeout() {
        format!("no answer within {} s", ATTEMPT_TIMEOUT.as_secs())
    } else if e.is_connect() {
        "the connection failed".to_owned()
    } else {
        "the request failed".to_owned()
    };
    let mut source = e.source();
    while let Some(cause) = source {
        text = format!("{text}: {cause}");
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in ["1.1.1.1", "93.184.216.34", "2606:4700:4700::1111"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[tokio::test]
    async fn urls_are_refused_with_the_rule_they_break() {
        let refused = |url: &'static str| async move { check_url(url, false).await.unwrap_err() };
        assert!(refused("ftp://example.com/")
            .await
            .contains("http or https"));
        assert!(refused("http://127.0.0.1:9/hook")
            .await
            .contains("127.0.0.1"));
        assert!(refused("http://[::1]/hook").await.contains("::1"));
        assert!(refused("http://localhost/hook")
            .await
            .contains("non-public"));
        assert!(refused("http://u:p@1.1.1.1/").await.contains("credentials"));
        assert!(refused("not a url").await.starts_with("url:"));
        assert!(check_url("http://127.0.0.1:9/hook", true).await.is_ok());
        assert!(check_url("https://1.1.1.1/hook", false).await.is_ok());
    }

    #[test]
    fn a_secret_is_what_standard_webhooks_libraries_take() {
        let secret = new_secret();
        assert!(secret.starts_with("whsec_"));
        let hook = standardwebhooks::Webhook::new(&secret).unwrap();
        let signed = hook.sign("msg_1", 1_700_000_000, b"{}").unwrap();
        assert!(signed.starts_with("v1,"));
    }
}
