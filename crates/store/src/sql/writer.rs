//! Where writes go, and the connection a write holds while it writes.
//!
//! PostgreSQL locks rows, so writers take connections from the shared pool and run side by
//! side. SQLite has one writer at a time: its writes go through one connection of their own,
//! handed from writer to writer in the order [`write_queue`](super::write_queue) gives. Not through a
//! pool: sqlx's pool pings a connection when it is given back (in a task it spawns) and when
//! it is taken, and its transactions check that `BEGIN IMMEDIATE` began one with a third
//! round trip; each is a hand-off to SQLite's thread and back, in series with every write,
//! while every other writer waits.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex};

use sqlx::pool::PoolConnection;
use sqlx::{Pool, TransactionManager};

use super::backend::{Backend, Conn};
use super::group_commit::GroupSync;
use super::write_queue::{Line, Turn, WriteQueue};

/// Where a store's writes go.
pub(super) enum Writer<B: Backend> {
    /// PostgreSQL: the shared pool.
    Pool(Pool<B>),
    /// SQLite: its one writing connection.
    Sole(Arc<Sole<B>>),
}

/// SQLite's writing connection, and who may use it next.
pub(super) struct Sole<B: Backend> {
    turns: Arc<WriteQueue>,
    /// Its commits are made durable in groups, off the writer (`group_commit.rs`).
    sync: Arc<GroupSync>,
    /// The connection while no one holds it; `None` once the store is closed.
    idle: Mutex<Option<Idle<B>>>,
}

struct Idle<B: Backend> {
    conn: B::Connection,
    /// A transaction was left open (its writer failed or was cancelled before the end): it is
    /// rolled back before the next write.
    unfinished: bool,
}

impl<B: Backend> Sole<B> {
    pub(super) fn new(conn: B::Connection, sync: Arc<GroupSync>) -> Self {
        Self {
            turns: Default::default(),
            sync,
            idle: Mutex::new(Some(Idle {
                conn,
                unfinished: false,
            })),
        }
    }

    /// The connection, once it is `line`'s turn.
    async fn hold(self: &Arc<Self>, line: Line) -> Result<SoleHeld<B>, sqlx::Error> {
        let turn = self.turns.take(line).await;
        let idle = self.idle.lock().expect("the writer's slot").take();
        let Some(Idle { conn, unfinished }) = idle else {
            return Err(sqlx::Error::PoolClosed);
        };
        // Held from here on: if the rollback fails, or this writer is cancelled during it, the
        // connection goes back still marked unfinished.
        let mut held = SoleHeld {
            conn: Some(conn),
            unfinished,
            sole: self.clone(),
            _turn: turn,
        };
        if held.unfinished {
            roll_back::<B>(&mut held).await?;
            held.unfinished = false;
        }
        Ok(held)
    }

    /// Waits for the writer in progress, then closes the connection; later writes fail.
    pub(super) async fn close(self: &Arc<Self>) {
        let _turn = self.turns.take(Line::Operations).await;
        let idle = self.idle.lock().expect("the writer's slot").take();
        if let Some(Idle { conn, .. }) = idle {
            let _ = sqlx::Connection::close(conn).await;
        }
    }
}

/// Roll back the transaction a writer left open, and make sure none is: a transaction
/// begins only where none is open.
async fn roll_back<B: Backend>(conn: &mut B::Connection) -> Result<(), sqlx::Error> {
    // Fails harmlessly where SQLite rolled back by itself (a COMMIT that found the disk full).
    let _ = B::query("ROLLBACK").execute_bare(conn).await;
    B::query(B::DIALECT.begin_write())
        .execute_bare(conn)
        .await?;
    B::query("COMMIT").execute_bare(conn).await?;
    Ok(())
}

/// The sole connection, held; given back, then the turn passed on, when dropped.
pub(super) struct SoleHeld<B: Backend> {
    conn: Option<B::Connection>,
    /// Goes back with the connection (see [`Idle::unfinished`]).
    unfinished: bool,
    sole: Arc<Sole<B>>,
    _turn: Turn,
}

impl<B: Backend> Deref for SoleHeld<B> {
    type Target = B::Connection;
    fn deref(&self) -> &B::Connection {
        self.conn.as_ref().expect("held until dropped")
    }
}

impl<B: Backend> DerefMut for SoleHeld<B> {
    fn deref_mut(&mut self) -> &mut B::Connection {
        self.conn.as_mut().expect("held until dropped")
    }
}

impl<B: Backend> Drop for SoleHeld<B> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            *self.sole.idle.lock().unwrap_or_else(|e| e.into_inner()) = Some(Idle {
                conn,
                unfinished: self.unfinished,
            });
        }
        // `_turn` is dropped after this: the next writer finds the connection back.
    }
}

/// The writer's connection while a write holds it.
pub(super) enum Held<B: Backend> {
    Pooled(PoolConnection<B>),
    Sole(SoleHeld<B>),
}

impl<B: Backend> Held<B> {
    /// Where what this connection commits becomes durable, if not when the commit returns.
    fn group_sync(&self) -> Option<Arc<GroupSync>> {
        match self {
            Held::Pooled(_) => None,
            Held::Sole(held) => Some(held.sole.sync.clone()),
        }
    }
}

impl<B: Backend> Deref for Held<B> {
    type Target = B::Connection;
    fn deref(&self) -> &B::Connection {
        match self {
            Held::Pooled(conn) => conn,
            Held::Sole(held) => held,
        }
    }
}

impl<B: Backend> DerefMut for Held<B> {
    fn deref_mut(&mut self) -> &mut B::Connection {
        match self {
            Held::Pooled(conn) => conn,
            Held::Sole(held) => held,
        }
    }
}

impl<B: Backend> Clone for Writer<B> {
    fn clone(&self) -> Self {
        match self {
            Writer::Pool(pool) => Writer::Pool(pool.clone()),
            Writer::Sole(sole) => Writer::Sole(sole.clone()),
        }
    }
}

impl<B: Backend> Writer<B> {
    /// The connection, once it is `line`'s turn; [`WriteTx::begin`] begins a transaction on it.
    pub(super) async fn hold(&self, line: Line) -> Result<Held<B>, sqlx::Error> {
        match self {
            Writer::Pool(pool) => Ok(Held::Pooled(pool.acquire().await?)),
            Writer::Sole(sole) => Ok(Held::Sole(sole.hold(line).await?)),
        }
    }

    /// The connection for statements that write, each its own transaction.
    pub(super) async fn conn(&self, line: Line) -> Result<WriteConn<B>, sqlx::Error> {
        Ok(WriteConn {
            held: self.hold(line).await?,
        })
    }

    /// A transaction that writes.
    pub(super) async fn begin(&self, line: Line) -> Result<WriteTx<B>, sqlx::Error> {
        WriteTx::begin(self.hold(line).await?).await
    }

    pub(super) async fn close(&self) {
        match self {
            Writer::Pool(pool) => pool.close().await,
            Writer::Sole(sole) => sole.close().await,
        }
    }
}

/// The writer's connection, each statement its own transaction. A statement waits for its
/// sync while it still holds the connection.
pub struct WriteConn<B: Backend> {
    held: Held<B>,
}

/// A transaction on the writer's connection, rolled back if dropped before
/// [`WriteTx::commit`].
pub struct WriteTx<B: Backend> {
    held: Held<B>,
    /// Not yet committed (a `COMMIT` that failed leaves it open).
    open: bool,
}

impl<B: Backend> WriteTx<B> {
    /// A transaction on the connection `held`.
    pub(super) async fn begin(held: Held<B>) -> Result<Self, sqlx::Error> {
        // Open from before its `BEGIN` is sent: dropped from here on, by an error or a
        // cancelled request, it is rolled back.
        let mut tx = WriteTx { held, open: true };
        let begin = B::DIALECT.begin_write();
        match &mut tx.held {
            Held::Pooled(conn) => B::TransactionManager::begin(conn, Some(begin.into())).await?,
            // A plain statement: sqlx's transaction bookkeeping costs round trips, and this
            // connection is never shared, so `open` is all the bookkeeping it needs.
            Held::Sole(sole) => {
                B::query(begin).execute_bare(sole).await?;
            }
        }
        Ok(tx)
    }

    /// Commits, and returns once the commit is on stable storage.
    pub async fn commit(mut self) -> Result<(), sqlx::Error> {
        match &mut self.held {
            Held::Pooled(conn) => B::TransactionManager::commit(conn).await?,
            Held::Sole(sole) => {
                B::query("COMMIT").execute_bare(sole).await?;
            }
        }
        self.open = false;
        let sync = self.held.group_sync();
        // Give the connection back before waiting for the sync, so the next writer goes on.
        drop(self);
        super::group_commit::durable(sync).await
    }
}

impl<B: Backend> Drop for WriteTx<B> {
    fn drop(&mut self) {
        if !self.open {
            return;
        }
        match &mut self.held {
            // Sent with the connection's next use, as sqlx's own transactions do.
            Held::Pooled(conn) => B::TransactionManager::start_rollback(conn),
            // Rolled back by the next writer, before its own work.
            Held::Sole(sole) => sole.unfinished = true,
        }
    }
}

/// Both run their statements on the connection they hold.
macro_rules! deref_to_held {
    ($($holder:ident),*) => {$(
        impl<B: Backend> Deref for $holder<B> {
            type Target = B::Connection;
            fn deref(&self) -> &B::Connection {
                &self.held
            }
        }

        impl<B: Backend> DerefMut for $holder<B> {
            fn deref_mut(&mut self) -> &mut B::Connection {
                &mut self.held
            }
        }
    )*};
}

deref_to_held!(WriteConn, WriteTx);

impl<B: Backend> Conn<B> for WriteConn<B> {
    fn group_sync(&self) -> Option<Arc<GroupSync>> {
        self.held.group_sync()
    }
}

impl<B: Backend> Conn<B> for WriteTx<B> {}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::task::{Context, Waker};

    use sqlx::Sqlite;

    use super::super::sqlite::SqliteStore;
    use super::super::Backend;
    use super::*;

    async fn open(dir: &tempfile::TempDir) -> SqliteStore {
        SqliteStore::open(&dir.path().join("cairn.db"))
            .await
            .unwrap()
    }

    async fn pack_names(store: &SqliteStore) -> Vec<String> {
        let rows = Sqlite::query("SELECT name FROM packs ORDER BY name")
            .fetch_all(&mut store.conn().await.unwrap())
            .await
            .unwrap();
        rows.iter()
            .map(|row| sqlx::Row::get::<String, _>(row, "name"))
            .collect()
    }

    #[tokio::test]
    async fn a_write_dropped_before_its_commit_leaves_nothing_and_the_next_writes_go_on() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir).await;
        let insert =
            |name| format!("INSERT INTO packs (name, size, created_at) VALUES ('{name}', 1, 0)");

        // Failed or cancelled part-way: dropped with its transaction open.
        let dropped = insert("dropped");
        let mut tx = store.write(Line::Requests).await.unwrap();
        Sqlite::query(&dropped).execute(&mut tx).await.unwrap();
        drop(tx);

        // The next writer, in a transaction and alone, each commits.
        let in_tx = insert("in a transaction");
        let mut tx = store.write(Line::Requests).await.unwrap();
        Sqlite::query(&in_tx).execute(&mut tx).await.unwrap();
        tx.commit().await.unwrap();
        let dropped_again = insert("dropped again");
        let mut tx = store.write(Line::Operations).await.unwrap();
        Sqlite::query(&dropped_again)
            .execute(&mut tx)
            .await
            .unwrap();
        drop(tx);
        let alone = insert("alone");
        let mut conn = store.write_conn(Line::Requests).await.unwrap();
        Sqlite::query(&alone).execute(&mut conn).await.unwrap();
        drop(conn);

        assert_eq!(pack_names(&store).await, ["alone", "in a transaction"]);

        // And what they committed is in the database file for another process.
        store.close().await;
        assert_eq!(
            pack_names(&open(&dir).await).await,
            ["alone", "in a transaction"]
        );
    }

    #[tokio::test]
    async fn a_writer_cancelled_while_it_rolls_back_leaves_the_connection_for_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir).await;
        let tx = store.write(Line::Requests).await.unwrap();
        drop(tx);
        // Polled once: it takes the connection and starts rolling the last transaction back,
        // then its request goes away.
        {
            let mut write = std::pin::pin!(store.write(Line::Requests));
            let mut context = Context::from_waker(Waker::noop());
            assert!(write.as_mut().poll(&mut context).is_pending(), "part-way");
        }
        let mut tx = store
            .write(Line::Requests)
            .await
            .expect("the connection is back");
        Sqlite::query("INSERT INTO packs (name, size, created_at) VALUES ('after', 1, 0)")
            .execute(&mut tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        assert_eq!(pack_names(&store).await, ["after"]);
    }
}
