//! Per-account, per-endpoint rate limits: a token bucket for each (account, endpoint).
//!
//! Checked right after authentication, before any body is read. Over the limit the answer is
//! `429 rate_limited` with `Retry-After` and the IETF `RateLimit`/`RateLimit-Policy` headers
//! (draft-ietf-httpapi-ratelimit-headers). Buckets live in memory: on several nodes each node
//! limits on its own, which bounds the total at `nodes x rate`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::ApiError;

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
    buckets: Mutex<HashMap<(i64, Endpoint), Bucket>>,
}

/// The details a 429 response carries.
#[derive(Debug, Clone)]
pub struct Exceeded {
    pub endpoint: &'static str,
    pub quota: u32,
    pub window_secs: u64,
    pub retry_after_secs: u64,
}

impl RateLimiter {
    pub fn new(limits: RateLimits) -> Self {
        Self {
            limits,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Take one request from the account's bucket for `endpoint`.
    pub fn check(&self, account_id: i64, endpoint: Endpoint) -> Result<(), ApiError> {
        self.check_at(account_id, endpoint, Instant::now())
    }

    fn check_at(&self, account_id: i64, endpoint: Endpoint, now: Instant) -> Result<(), ApiError> {
        let policy = self.limits.policy(endpoint);
        let per_second = f64::from(policy.quota) / policy.window.as_secs_f64();
        // A poisoned lock only means another request panicked mid-update; the map is still sane.
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
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
        let wait = (1.0 - bucket.tokens) / per_second;
        Err(ApiError::RateLimited(Exceeded {
            endpoint: endpoint.name(),
            quota: policy.quota,
            window_secs: policy.window.as_secs(),
            retry_after_secs: wait.ceil().max(1.0) as u64,
        }))
    }
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
        let limiter = RateLimiter::new(limits);
        let start = Instant::now();
        for _ in 0..3 {
            limiter.check_at(1, Endpoint::Upload, start).unwrap();
        }
        match limiter.check_at(1, Endpoint::Upload, start) {
            Err(ApiError::RateLimited(e)) => {
                assert_eq!((e.quota, e.window_secs, e.retry_after_secs), (3, 30, 10));
            }
            other => panic!("{other:?}"),
        }
        // Other accounts and other endpoints have their own buckets.
        limiter.check_at(2, Endpoint::Upload, start).unwrap();
        limiter.check_at(1, Endpoint::Operations, start).unwrap();
        // One token is back after a third of the window.
        let later = start + Duration::from_secs(10);
        limiter.check_at(1, Endpoint::Upload, later).unwrap();
        assert!(limiter.check_at(1, Endpoint::Upload, later).is_err());
    }
}
