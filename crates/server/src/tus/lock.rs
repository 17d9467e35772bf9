//! One writer per TUS upload, with pre-emption of a stalled holder, as tusd does.
//!
//! A request that finds the upload held asks the holder to stop (it saves what it received and
//! lets go) and waits a moment for the release; only a holder that does not let go in time
//! makes the newcomer answer `423 locked`.
//!
//! A lone node keeps its locks in memory, where the hand-over is immediate. Nodes that share a
//! metadata store hold *leases* there instead: a holder renews its lease every
//! [`Leases::renew_every`] and learns at each renewal whether it was asked to stop. A node that
//! dies stops renewing, so its leases run out and another node takes its uploads over.

use cairn_store::TusRecords;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cairn_store::model::LeaseAttempt;
use cairn_store::now_ms;
use cairn_store::random_name;
use tokio::sync::watch;

use crate::error::ApiError;

/// How long a newcomer waits for a pre-empted holder that is still alive to let go.
const PREEMPT_WAIT: Duration = Duration::from_secs(2);
/// How often a newcomer looks again at a lease held elsewhere.
const LEASE_POLL: Duration = Duration::from_millis(100);

pub enum Locks {
    InProcess(Arc<InProcess>),
    Leased(Leases),
}

/// Held while a request works on an upload; released when dropped.
pub struct Lock {
    signal: watch::Receiver<Signal>,
    _held: Held,
}

/// What the holder of a lock is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Signal {
    Hold,
    /// Another request wants the upload: save what arrived and let go.
    Stop,
    /// The lease ran out (this node could not renew it): another node may be writing, so
    /// write nothing more.
    Lost,
}

impl Lock {
    /// Resolves when another request asks this one to stop, or the lease is lost.
    pub async fn preempted(&mut self) {
        let _ = self.signal.wait_for(|s| *s != Signal::Hold).await;
    }

    pub fn lost(&self) -> bool {
        *self.signal.borrow() == Signal::Lost
    }
}

enum Held {
    InProcess {
        locks: Arc<InProcess>,
        id: String,
        holder: Holder,
    },
    Leased {
        renewer: tokio::task::JoinHandle<()>,
        store: Arc<dyn TusRecords>,
        id: String,
        holder: String,
    },
}

impl Drop for Held {
    fn drop(&mut self) {
        match self {
            Held::InProcess { locks, id, holder } => {
                let mut held = locks.held.lock().unwrap_or_else(|e| e.into_inner());
                if held
                    .get(id.as_str())
                    .is_some_and(|h| Arc::ptr_eq(&h.released, &holder.released))
                {
                    held.remove(id.as_str());
                }
                drop(held);
                holder.released.send_replace(true);
            }
            Held::Leased {
                renewer,
                store,
                id,
                holder,
            } => {
                renewer.abort();
                let (store, id, holder) =
                    (store.clone(), std::mem::take(id), std::mem::take(holder));
                // Without a runtime (shutting down) the lease simply runs out.
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(async move {
                        if let Err(e) = store.release_upload_lease(&id, &holder).await {
                            tracing::warn!(upload = %id, error = %e, "releasing an upload lease failed; it will run out");
                        }
                    });
                }
            }
        }
    }
}

impl Locks {
    pub fn in_process() -> Self {
        Self::InProcess(Arc::default())
    }

    /// Leases in `store` lasting `lease`, for nodes that share it.
    pub fn leased(store: Arc<dyn TusRecords>, lease: Duration) -> Self {
        Self::Leased(Leases {
            store,
            lease,
            node: random_name(),
        })
    }

    pub async fn acquire(&self, id: &str) -> Result<Lock, ApiError> {
        match self {
            Locks::InProcess(locks) => locks.acquire(id).await,
            Locks::Leased(leases) => leases.acquire(id).await,
        }
    }
}

#[derive(Default)]
pub struct InProcess {
    held: Mutex<HashMap<String, Holder>>,
}

#[derive(Clone)]
struct Holder {
    /// Set to ask the holder to stop.
    stop: Arc<watch::Sender<Signal>>,
    /// Set when the holder lets go.
    released: Arc<watch::Sender<bool>>,
}

impl InProcess {
    async fn acquire(self: &Arc<Self>, id: &str) -> Result<Lock, ApiError> {
        let mut asked_once = false;
        loop {
            let current = {
                let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
                match held.get(id) {
                    Some(holder) => holder.clone(),
                    None => {
                        let (stop_tx, signal) = watch::channel(Signal::Hold);
                        let holder = Holder {
                            stop: Arc::new(stop_tx),
                            released: Arc::new(watch::channel(false).0),
                        };
                        held.insert(id.to_owned(), holder.clone());
                        return Ok(Lock {
                            signal,
                            _held: Held::InProcess {
                                locks: self.clone(),
                                id: id.to_owned(),
                                holder,
                            },
                        });
                    }
                }
            };
            if asked_once {
                return Err(busy());
            }
            asked_once = true;
            current.stop.send_replace(Signal::Stop);
            let mut released = current.released.subscribe();
            let _ = tokio::time::timeout(PREEMPT_WAIT, released.wait_for(|r| *r)).await;
        }
    }
}

fn busy() -> ApiError {
    ApiError::Locked("the upload is busy with another request that did not let go".into())
}

pub struct Leases {
    store: Arc<dyn TusRecords>,
    lease: Duration,
    /// Names this node in its holders, for whoever reads the table.
    node: String,
}

impl Leases {
    /// Often enough that a dozen renewals fit in one lease, and a request to stop is seen soon.
    fn renew_every(&self) -> Duration {
        self.lease / 12
    }

    async fn acquire(&self, id: &str) -> Result<Lock, ApiError> {
        let holder = format!("{}-{}", self.node, random_name());
        let started = Instant::now();
        let mut first_seen: Option<i64> = None;
        loop {
            let now = now_ms();
            let until = now + self.lease.as_millis() as i64;
            match self
                .store
                .take_upload_lease(id, &holder, now, until)
                .await?
            {
                LeaseAttempt::Taken => break,
                LeaseAttempt::Held { until_ms } => {
                    let first = match first_seen {
                        Some(first) => first,
                        None => {
                            self.store.ask_upload_holder_to_stop(id).await?;
                            *first_seen.insert(until_ms)
                        }
                    };
                    // A holder that keeps renewing is alive: it gets `PREEMPT_WAIT` to let go.
                    // One that does not renew has died: its lease runs out within `lease`.
                    let alive = until_ms > first;
                    if (alive && started.elapsed() >= PREEMPT_WAIT)
                        || started.elapsed() >= PREEMPT_WAIT + self.lease
                    {
                        return Err(busy());
                    }
                    tokio::time::sleep(LEASE_POLL).await;
                }
            }
        }
        let (signal_tx, signal) = watch::channel(Signal::Hold);
        let renewer = tokio::spawn({
            let (store, id, holder) = (self.store.clone(), id.to_owned(), holder.clone());
            let (lease, every) = (self.lease, self.renew_every());
            async move {
                loop {
                    tokio::time::sleep(every).await;
                    let until = now_ms() + lease.as_millis() as i64;
                    match store.renew_upload_lease(&id, &holder, until).await {
                        Ok(Some(false)) => {}
                        // Asked to stop: keep the lease until the holder has let go.
                        Ok(Some(true)) => {
                            signal_tx.send_replace(Signal::Stop);
                        }
                        Ok(None) => {
                            tracing::warn!(upload = %id, "lost the upload's lease");
                            signal_tx.send_replace(Signal::Lost);
                            return;
                        }
                        Err(e) => {
                            tracing::warn!(upload = %id, error = %e, "renewing an upload lease failed")
                        }
                    }
                }
            }
        });
        Ok(Lock {
            signal,
            _held: Held::Leased {
                renewer,
                store: self.store.clone(),
                id: id.to_owned(),
                holder,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What every locker must do, run against each: `newcomer` is the locker a second request
    /// uses (another node's, for leases).
    async fn one_writer_with_preemption(holder_side: &Locks, newcomer: &Locks) {
        let mut first = holder_side.acquire("u").await.unwrap();
        // A cooperative holder: stops when asked.
        let holder = tokio::spawn(async move {
            first.preempted().await;
            drop(first);
        });
        let started = Instant::now();
        let second = newcomer
            .acquire("u")
            .await
            .expect("pre-empted the first holder");
        assert!(started.elapsed() < PREEMPT_WAIT, "{:?}", started.elapsed());
        holder.await.unwrap();

        // A holder that never lets go: the newcomer gives up with 423 after the wait.
        let started = Instant::now();
        let refused = holder_side.acquire("u").await;
        assert!(matches!(refused, Err(ApiError::Locked(_))));
        assert!(started.elapsed() >= PREEMPT_WAIT);
        assert!(!second.lost());
        drop(second);
        let _again = newcomer.acquire("u").await.expect("free once let go");
        let _other = holder_side
            .acquire("other")
            .await
            .expect("another upload is not held up");
    }

    #[tokio::test]
    async fn in_process_locks_keep_one_writer_with_preemption() {
        let locks = Locks::in_process();
        one_writer_with_preemption(&locks, &locks).await;
    }

    async fn sqlite() -> (tempfile::TempDir, Arc<dyn cairn_store::MetadataStore>) {
        let dir = tempfile::tempdir().unwrap();
        let store = cairn_store::sqlite::SqliteStore::open(&dir.path().join("meta.db"))
            .await
            .unwrap();
        (dir, Arc::new(store))
    }

    #[tokio::test]
    async fn leases_keep_one_writer_across_nodes_and_outlive_a_dead_holder() {
        let (_dir, store) = sqlite().await;
        let lease = Duration::from_millis(1200);
        let (node_a, node_b) = (
            Locks::leased(store.clone(), lease),
            Locks::leased(store.clone(), lease),
        );
        one_writer_with_preemption(&node_a, &node_b).await;

        // A node that died holding a lease: nobody renews it, so it runs out and is taken.
        let until = now_ms() + 1000;
        let dead = store.take_upload_lease("v", "dead", now_ms(), until).await;
        assert_eq!(dead.unwrap(), LeaseAttempt::Taken);
        node_b
            .acquire("v")
            .await
            .expect("the dead holder's lease ran out");
        assert!(now_ms() >= until);

        // A holder whose lease was taken (its node could not renew in time) is told it lost it.
        let mut paused = node_a.acquire("x").await.unwrap();
        let holder = match &paused._held {
            Held::Leased { holder, .. } => holder.clone(),
            Held::InProcess { .. } => unreachable!(),
        };
        store.release_upload_lease("x", &holder).await.unwrap();
        store
            .take_upload_lease("x", "usurper", now_ms(), now_ms() + 60_000)
            .await
            .unwrap();
        paused.preempted().await;
        assert!(paused.lost());
    }
}
