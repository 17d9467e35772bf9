//! One writer per TUS upload, with pre-emption of a stalled holder, as tusd does.
//!
//! A request that finds the upload held asks the holder to stop (it saves what it received and
//! lets go) and waits a moment for the release; only a holder that does not let go in time
//! makes the newcomer answer `423 locked`. The locks live in this process: several nodes need
//! a shared locker (issue 6).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use crate::error::ApiError;

/// How long a newcomer waits for a pre-empted holder to let go.
const PREEMPT_WAIT: Duration = Duration::from_secs(2);

#[derive(Default)]
pub struct Locks {
    held: Mutex<HashMap<String, Holder>>,
}

#[derive(Clone)]
struct Holder {
    /// Set to ask the holder to stop.
    stop: Arc<watch::Sender<bool>>,
    /// Set when the holder lets go.
    released: Arc<watch::Sender<bool>>,
}

/// Held while a request works on an upload; released when dropped.
pub struct Lock {
    locks: Arc<Locks>,
    id: String,
    holder: Holder,
    stop: watch::Receiver<bool>,
}

impl Lock {
    /// Resolves when another request asks this one to stop.
    pub async fn preempted(&mut self) {
        let _ = self.stop.wait_for(|stop| *stop).await;
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let mut held = self.locks.held.lock().unwrap_or_else(|e| e.into_inner());
        if held
            .get(&self.id)
            .is_some_and(|h| Arc::ptr_eq(&h.released, &self.holder.released))
        {
            held.remove(&self.id);
        }
        drop(held);
        self.holder.released.send_replace(true);
    }
}

impl Locks {
    pub async fn acquire(self: &Arc<Self>, id: &str) -> Result<Lock, ApiError> {
        let mut asked_once = false;
        loop {
            let current = {
                let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
                match held.get(id) {
                    Some(holder) => holder.clone(),
                    None => {
                        let (stop_tx, stop_rx) = watch::channel(false);
                        let holder = Holder {
                            stop: Arc::new(stop_tx),
                            released: Arc::new(watch::channel(false).0),
                        };
                        held.insert(id.to_owned(), holder.clone());
                        return Ok(Lock {
                            locks: self.clone(),
                            id: id.to_owned(),
                            holder,
                            stop: stop_rx,
                        });
                    }
                }
            };
            if asked_once {
                return Err(ApiError::Locked(
                    "the upload is busy with another request that did not let go".into(),
                ));
            }
            asked_once = true;
            current.stop.send_replace(true);
            let mut released = current.released.subscribe();
            let _ = tokio::time::timeout(PREEMPT_WAIT, released.wait_for(|r| *r)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_newcomer_preempts_a_holder_that_lets_go_and_is_refused_by_one_that_does_not() {
        let locks = Arc::new(Locks::default());
        let mut first = locks.acquire("u").await.unwrap();
        // A cooperative holder: stops when asked.
        let holder = tokio::spawn(async move {
            first.preempted().await;
            drop(first);
        });
        let second = locks
            .acquire("u")
            .await
            .expect("pre-empted the first holder");
        holder.await.unwrap();

        // A holder that never lets go: the newcomer gives up with 423 after the wait.
        let started = tokio::time::Instant::now();
        let refused = locks.acquire("u").await;
        assert!(matches!(refused, Err(ApiError::Locked(_))));
        assert!(started.elapsed() >= PREEMPT_WAIT);
        drop(second);
        locks.acquire("u").await.unwrap();
        locks.acquire("other").await.unwrap();
    }
}
