//! Webhook deliveries: each node claims due deliveries from the durable queue in the metadata
//! store (a trigger queued them with their event, in the transaction that made the change),
//! signs each as the Standard Webhooks specification says and sends it, and records the
//! attempt. At least once: a node that dies holding a claim leaves it to another when the
//! lease runs out, and every attempt of one delivery carries the same `webhook-id`.
//!
//! Endpoints are checked twice: when made (the route calls [`check_url`]) and at every
//! connection, through a resolver that only hands out public addresses, so a name that later
//! resolves to a private address (DNS rebinding) reaches nothing.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use cairn_store::events::{Attempt, ClaimedDelivery, DeliveryStatus, Event};
use cairn_store::model::Operation;
use cairn_store::{now_ms, random_name};
use futures_util::future::join_all;
use reqwest::Url;

use crate::events::operations_of;
use crate::{sleep_unless_stopped, Service};

/// Turns an event and its upload or pin into the body sent (`{"type", "timestamp",
/// "data"}`, `data` the record the API answers with), which the HTTP crate knows how to
/// write.
pub type RenderEvent = Arc<dyn Fn(&Event, &Operation) -> serde_json::Value + Send + Sync>;

/// An endpoint has this long to answer.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// What a dispatcher claims at a time, sent concurrently.
const CLAIM: u32 = 64;
/// A claim's lease: longer than an attempt, so a live sender keeps it.
const LEASE: Duration = Duration::from_secs(20);
/// How often the queue is looked at when it was empty.
const IDLE: Duration = Duration::from_millis(500);
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

/// Send due deliveries until the service stops.
pub async fn deliver_webhooks(service: Service, render: RenderEvent, allow_private: bool) {
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
    let worker = format!("webhooks-{}", random_name());
    let stop = service.stop.subscribe();
    loop {
        let claimed = match service.store.claim_deliveries(&worker, LEASE, CLAIM).await {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::warn!(error = %e, "claiming webhook deliveries failed; retrying");
                Vec::new()
            }
        };
        if claimed.is_empty() {
            if sleep_unless_stopped(&stop, IDLE).await {
                return;
            }
            continue;
        }
        // Read together, sent together, recorded together: one read and one write for the
        // batch.
        let events = claimed.iter().map(|delivery| &delivery.event);
        let operations = operations_of(service.store.as_ref(), events).await;
        let attempted = join_all(claimed.iter().map(|delivery| {
            let operation = operations.get(&delivery.event.id);
            deliver(&client, &render, delivery, operation, allow_private)
        }))
        .await;
        let attempts: Vec<(&ClaimedDelivery, &Attempt)> = claimed
            .iter()
            .zip(&attempted)
            .filter_map(|(delivery, attempt)| Some((delivery, attempt.as_ref()?)))
            .collect();
        match service.store.record_attempts(&worker, &attempts).await {
            Ok(statuses) => {
                for ((delivery, attempt), status) in attempts.iter().zip(statuses) {
                    if status == DeliveryStatus::Failed {
                        tracing::warn!(
                            delivery = delivery.id,
                            url = %delivery.url,
                            error = attempt.error.as_deref().unwrap_or(""),
                            "a webhook delivery failed for good after 24 hours of retries"
                        );
                    }
                    tracing::debug!(
                        delivery = delivery.id,
                        event = delivery.event.kind.as_str(),
                        status = status.as_str(),
                        response = attempt.response_status,
                        error = attempt.error.as_deref().unwrap_or(""),
                        "webhook attempt"
                    );
                }
            }
            // Claims lapse: the deliveries are sent again (at least once, never lost).
            Err(e) => tracing::warn!(error = %e, "recording webhook attempts failed"),
        }
        // A batch that was not full took all that was due: let the next one gather for a
        // moment, so a steady trickle of events costs a few writes a second, not two each.
        if claimed.len() < CLAIM as usize && sleep_unless_stopped(&stop, GATHER).await {
            return;
        }
    }
}

/// One delivery's attempt; `None` when its event's operation could not be read (it is
/// claimed again once the lease lapses).
async fn deliver(
    client: &reqwest::Client,
    render: &RenderEvent,
    delivery: &ClaimedDelivery,
    operation: Option<&Operation>,
    allow_private: bool,
) -> Option<Attempt> {
    let Some(operation) = operation else {
        tracing::warn!(
            event = delivery.event.id,
            "an event's operation could not be read; it is sent again later"
        );
        return None;
    };
    let body = render(&delivery.event, operation).to_string();
    Some(send(client, delivery, &body, allow_private).await)
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
        let message_id = format!("msg_{}", delivery.id);
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
