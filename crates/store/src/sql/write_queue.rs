//! Whose turn it is to write, where the database has one writer (SQLite).
//!
//! Writers wait in two lines, each first come first served: the operations queue's own steps
//! (claiming, progress, finishing) go before requests. Under load every request that writes
//! waits behind all the others; an operation's steps waited there too, several times per
//! operation, so two workers finished 2 to 3 operations a second while hundreds queued (the
//! load test, BENCHMARKS.md). There are only as many operation writers as workers, so going
//! first costs a request at most that many turns.
//!
//! A turn is held for as long as its holder has the write connection (`writer.rs`), so the
//! turns alone keep writers apart.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

/// Which line a writer waits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    /// A step of the operations queue: a worker, or a user waiting on it, is held up by it.
    Operations,
    /// Everything else.
    Requests,
}

#[derive(Default)]
pub struct WriteQueue {
    state: Mutex<Lines>,
}

#[derive(Default)]
struct Lines {
    taken: bool,
    operations: VecDeque<oneshot::Sender<Turn>>,
    requests: VecDeque<oneshot::Sender<Turn>>,
}

/// The turn to write; passed on to the next in line when dropped.
pub struct Turn {
    turns: Option<Arc<WriteQueue>>,
}

impl WriteQueue {
    pub async fn take(self: &Arc<Self>, line: Line) -> Turn {
        let waiting = {
            let mut lines = self.state.lock().expect("write turns");
            if !lines.taken {
                lines.taken = true;
                return Turn {
                    turns: Some(self.clone()),
                };
            }
            let (tx, rx) = oneshot::channel();
            match line {
                Line::Operations => lines.operations.push_back(tx),
                Line::Requests => lines.requests.push_back(tx),
            }
            rx
        };
        // A waiter dropped before its turn came is skipped; one dropped after drops the turn
        // inside the channel, which passes it on.
        waiting
            .await
            .expect("a turn is handed on, never dropped unsent")
    }

    fn hand_on(self: &Arc<Self>) {
        loop {
            let next = {
                let mut lines = self.state.lock().expect("write turns");
                match lines.operations.pop_front() {
                    Some(next) => next,
                    None => match lines.requests.pop_front() {
                        Some(next) => next,
                        None => {
                            lines.taken = false;
                            return;
                        }
                    },
                }
            };
            let turn = Turn {
                turns: Some(self.clone()),
            };
            match next.send(turn) {
                Ok(()) => return,
                // Its waiter is gone: disarm the turn and offer it to the next.
                Err(mut unwanted) => unwanted.turns = None,
            }
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if let Some(turns) = self.turns.take() {
            turns.hand_on();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn operations_go_first_and_each_line_keeps_its_order() {
        let turns = Arc::new(WriteQueue::default());
        let held = turns.take(Line::Requests).await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiting = Vec::new();
        for (name, line) in [
            ("request 1", Line::Requests),
            ("operation 1", Line::Operations),
            ("request 2", Line::Requests),
            ("operation 2", Line::Operations),
        ] {
            let (turns, order) = (turns.clone(), order.clone());
            waiting.push(tokio::spawn(async move {
                let _turn = turns.take(line).await;
                order.lock().unwrap().push(name);
            }));
            // Each is in its line before the next comes.
            tokio::task::yield_now().await;
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        drop(held);
        for task in waiting {
            task.await.unwrap();
        }
        assert_eq!(
            *order.lock().unwrap(),
            ["operation 1", "operation 2", "request 1", "request 2"]
        );
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_does_not_keep_the_turn() {
        let turns = Arc::new(WriteQueue::default());
        let held = turns.take(Line::Requests).await;
        let gave_up = tokio::time::timeout(
            std::time::Duration::from_millis(10),
            turns.take(Line::Operations),
        )
        .await;
        assert!(gave_up.is_err());
        drop(held);
        let next = tokio::time::timeout(
            std::time::Duration::from_secs(1),
            turns.take(Line::Requests),
        )
        .await;
        assert!(next.is_ok(), "the turn was lost with the waiter that left");
    }
}
