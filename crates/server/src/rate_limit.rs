//! Per-account, per-endpoint rate limits: a token bucket for each (account, endpoint).
//!
//! Checked right after authentication, before any body is read. Over the limit the answer is
//! `429 rate_limited` with `Retry-After` and the IETF `RateLimit`/`RateLimit-Policy` headers
//! (draft-ietf-httpapi-ratelimit-headers). A lone node keeps its buckets in memory; nodes that
//! share a metadata store keep them there, so an account's rate is counted across all nodes.

use cairn_store::Accounts;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cairn_store::now_ms;

use crate::error::{ApiError, RateLimitExceeded};

/// Endpoint classes, each with its own policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endpoint {
    Upload,
    Operations,
    Account,
}

impl Endpoint {
    pub fn name(self) -> &'static str {
        match self {
            Self::Upload => "upload",
            Self::Operations => "operations",
            Self::Account => "account",
        }
    }
}

/// `quota` requests per `window`, allowing a burst of the whole quota.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    pub quota: u32,
    pub window: Duration,
}

#[derive(Clone, Debug)]
pub struct RateLimits {
    pub upload: Policy,
    pub operations: Policy,
    pub account: Policy,
}

impl Default for RateLimits {
    fn default() -> Self {
        let minute = Duration::from_secs(60);
        Self {
            upload: Policy {
                quota: 120,
                window: minute,
            },
            operations: Policy {
                quota: 1200,
                window: minute,
            },
            account: Policy {
                quota: 600,
                window: minute,
            },
        }
    }
}

impl RateLimits {
    fn policy(&self, endpoint: Endpoint) -> Policy {
        match endpoint {
            Endpoint::Upload => self.upload,
            Endpoint::Operations => self.operations,
            Endpoint::Account => self.account,
        }
    }
}

struct Bucket {
    tokens: f64,
    refilled: Instant,
}

pub struct RateLimiter {
    limits: RateLimits,
    buckets: Buckets,
}

enum Buckets {
    InMemory(InMemory),
    Shared(Arc<dyn Accounts>),
}

#[derive(Default)]
struct InMemory(Mutex<HashMap<(i64, Endpoint), Bucket>>);

impl RateLimiter {
    /// Buckets in this process.
    pub fn new(limits: RateLimits) -> Self {
        Self {
            limits,
            buckets: Buckets::InMemory(InMemory::default()),
        }
    }

    /// Buckets in the metadata store that several nodes share.
    pub fn shared(limits: RateLimits, store: Arc<dyn Accounts>) -> Self {
        Self {
            limits,
            buckets: Buckets::Shared(store),
        }
    }

    /// Take one request from the account's bucket for `endpoint`.
    pub async fn check(&self, account_id: i64, endpoint: Endpoint) -> Result<(), ApiError> {
        let policy = self.limits.policy(endpoint);
        let store = match &self.buckets {
            Buckets::InMemory(buckets) => {
                return buckets.take(account_id, endpoint, policy, Instant::now())
            }
            Buckets::Shared(store) => store,
        };
        let per_ms = f64::from(policy.quota) / policy.window.as_millis() as f64;
        let (granted, left) = store
            .take_rate_token(account_id, endpoint.name(), policy.quota, per_ms, now_ms())
            .await?;
        if granted {
            return Ok(());
        }
        Err(exceeded(endpoint, policy, left))
    }
}

impl InMemory {
    fn take(
        &self,
        account_id: i64,
        endpoint: Endpoint,
        policy: Policy,
        now: Instant,
    ) -> Result<(), ApiError> {
        let per_second = f64::from(policy.quota) / policy.window.as_secs_f64();
        // A poisoned lock only means another request panicked mid-update; the map is still sane.
        let mut buckets = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let bucket = buckets.entry((account_id, endpoint)).or_insert(Bucket {
            tokens: f64::from(policy.quota),
            refilled: now,
        });
        let elapsed = now.saturating_duration_since(bucket.refilled).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * per_second).min(f64::from(policy.quota));
        bucket.refilled = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        Err(exceeded(endpoint, policy, bucket.tokens))
    }
}

/// The 429 for a bucket holding `tokens` (less than one).
fn exceeded(endpoint: Endpoint, policy: Policy, tokens: f64) -> ApiError {
    let per_second = f64::from(policy.quota) / policy.window.as_secs_f64();
    let wait = (1.0 - tokens) / per_second;
    ApiError::RateLimited(RateLimitExceeded {
        endpoint: endpoint.name(),
        quota: policy.quota,
        window_secs: policy.window.as_secs(),
        retry_after_secs: wait.ceil().max(1.0) as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_allowed_then_refused_until_tokens_refill_per_account() {
        let limits = RateLimits {
            upload: Policy {
                quota: 3,
                window: Duration::from_secs(30),
            },
            ..RateLimits::default()
        };
        let buckets = InMemory::default();
        let take =
            |account, endpoint, now| buckets.take(account, endpoint, limits.policy(endpoint), now);
        let start = Instant::now();
        for _ in 0..3 {
            take(1, Endpoint::Upload, start).unwrap();
        }
        match take(1, Endpoint::Upload, start) {
            Err(ApiError::RateLimited(e)) => {
                assert_eq!((e.quota, e.window_secs, e.retry_after_secs), (3, 30, 10));
            }
            other => panic!("{other:?}"),
        }
        // Other accounts and other endpoints have their own buckets.
        take(2, Endpoint::Upload, start).unwrap();
        take(1, Endpoint::Operations, start).unwrap();
        // One token is back after a third of the window.
        let later = start + Duration::from_secs(10);
        take(1, Endpoint::Upload, later).unwrap();
        assert!(take(1, Endpoint::Upload, later).is_err());
    }

    #[tokio::test]
    async fn shared_buckets_count_an_account_across_nodes() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn cairn_store::MetadataStore> = Arc::new(
            cairn_store::sqlite::SqliteStore::open(&dir.path().join("meta.db"))
                .await
                .unwrap(),
        );
        let limits = RateLimits {
            upload: Policy {
                quota: 3,
                window: Duration::from_secs(60),
            },
            ..RateLimits::default()
        };
        let nodes = [
            RateLimiter::shared(limits.clone(), store.clone()),
            RateLimiter::shared(limits, store),
        ];
        for i in 0..3 {
            nodes[i % 2].check(1, Endpoint::Upload).await.unwrap();
        }
        for node in &nodes {
            match node.check(1, Endpoint::Upload).await {
                Err(ApiError::RateLimited(e)) => assert!(e.retry_after_secs <= 20, "{e:?}"),
                other => panic!("the fourth upload on either node is refused: {other:?}"),
            }
        }
        nodes[1].check(2, Endpoint::Upload).await.unwrap();
    }
}
