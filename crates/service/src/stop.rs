//! How the background tasks stop: at a safe point between rounds, once the process is asked
//! to.

use std::time::Duration;

use tokio::sync::watch;

/// Sleep for `duration`, as a background task does between rounds; `true` if `stop` came
/// first.
pub async fn sleep_unless_stopped(stop: &watch::Receiver<bool>, duration: Duration) -> bool {
    let mut stop = stop.clone();
    let stopped = tokio::select! {
        _ = stop.wait_for(|stop| *stop) => true,
        () = tokio::time::sleep(duration) => false,
    };
    stopped || *stop.borrow()
}
