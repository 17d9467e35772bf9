//! The [`Backend`] trait (everything that differs between the two databases, named in one
//! place), the values the store binds, and `Statement`, a query either backend runs.

use std::ops::DerefMut;
use std::sync::Arc;

use sqlx::error::BoxDynError;
use sqlx::pool::PoolConnection;
use sqlx::{Arguments, Database, Encode, Executor, IntoArguments, Pool, Transaction, Type};

use super::dialect::{BindMultihashes, Dialect};
use super::group_commit::{durable, GroupSync};
use super::rows::ModelRow;
use crate::{CollectorLock, StoreError};

/// One database's side of the store, as the shared queries see it: its dialect and its sqlx
/// types. Connection setup and migrations are each backend's own (`sqlite.rs`, `postgres.rs`).
pub trait Backend:
    Database<Row: ModelRow, Connection: RunOn<Self>, QueryResult: RowsAffected>
{
    /// A statement's arguments.
    type Args<'q>: Bind<'q> + BindMultihashes<'q> + IntoArguments<'q, Self>;
    const DIALECT: Dialect;

    /// The garbage collector's lock (see [`crate::MetadataStore::lock_collector`]).
    fn lock_collector(
        pool: &Pool<Self>,
    ) -> impl std::future::Future<Output = Result<Option<CollectorLock>, StoreError>> + Send;

    fn query(sql: &str) -> Statement<'_, Self> {
        Statement {
            sql,
            args: Ok(Self::Args::default()),
        }
    }
}

/// A connection as sqlx's executor. sqlx implements `Executor` for each database's connection
/// separately, and generic code could only ask for it with a higher-ranked bound that every
/// caller would have to repeat; each connection type simply returns itself.
pub trait RunOn<DB: Database> {
    fn exec(&mut self) -> impl Executor<'_, Database = DB>;
}

/// How many rows a statement changed (each database's result type has its own method).
pub trait RowsAffected {
    fn rows_affected(&self) -> u64;
}

macro_rules! sqlx_types {
    ($($db:ty: $conn:ty, $result:ty;)*) => {$(
        impl RunOn<$db> for $conn {
            fn exec(&mut self) -> impl Executor<'_, Database = $db> {
                self
            }
        }
        impl RowsAffected for $result {
            fn rows_affected(&self) -> u64 {
                <$result>::rows_affected(self)
            }
        }
    )*};
}

sqlx_types! {
    sqlx::Sqlite: sqlx::SqliteConnection, sqlx::sqlite::SqliteQueryResult;
    sqlx::Postgres: sqlx::PgConnection, sqlx::postgres::PgQueryResult;
}

/// The values the store binds, for any backend's arguments.
pub trait Bind<'q>: Arguments<'q> {
    fn int(&mut self, value: Option<i64>) -> Result<(), BoxDynError>;
    fn real(&mut self, value: f64) -> Result<(), BoxDynError>;
    fn text(&mut self, value: Option<&'q str>) -> Result<(), BoxDynError>;
    fn blob(&mut self, value: &'q [u8]) -> Result<(), BoxDynError>;
}

impl<'q, A> Bind<'q> for A
where
    A: Arguments<'q>,
    Option<i64>: Encode<'q, A::Database> + Type<A::Database>,
    f64: Encode<'q, A::Database> + Type<A::Database>,
    Option<&'q str>: Encode<'q, A::Database> + Type<A::Database>,
    &'q [u8]: Encode<'q, A::Database> + Type<A::Database>,
{
    fn int(&mut self, value: Option<i64>) -> Result<(), BoxDynError> {
        self.add(value)
    }
    fn real(&mut self, value: f64) -> Result<(), BoxDynError> {
        self.add(value)
    }
    fn text(&mut self, value: Option<&'q str>) -> Result<(), BoxDynError> {
        self.add(value)
    }
    fn blob(&mut self, value: &'q [u8]) -> Result<(), BoxDynError> {
        self.add(value)
    }
}

/// A value a statement binds.
pub trait Param<'q> {
    fn push(self, args: &mut impl Bind<'q>) -> Result<(), BoxDynError>;
}

macro_rules! params {
    ($($ty:ty => |$v:ident| $method:ident($e:expr);)*) => {$(
        impl<'q> Param<'q> for $ty {
            fn push(self, args: &mut impl Bind<'q>) -> Result<(), BoxDynError> {
                let $v = self;
                args.$method($e)
            }
        }
    )*};
}

params! {
    i64 => |v| int(Some(v));
    Option<i64> => |v| int(v);
    f64 => |v| real(v);
    &'q str => |v| text(Some(v));
    &'q String => |v| text(Some(v.as_str()));
    Option<&'q str> => |v| text(v);
    &'q [u8] => |v| blob(v);
    &'q Vec<u8> => |v| blob(v.as_slice());
}

/// A connection to run a statement on: from the pool, or a transaction.
pub trait Conn<B: Backend>: DerefMut<Target = B::Connection> + Send {
    /// Where a statement run here becomes durable once it returns: the SQLite writer's
    /// connection outside a transaction, where each statement commits alone. A transaction
    /// is durable when its commit returns; other connections only read, or sync themselves.
    fn group_sync(&self) -> Option<Arc<GroupSync>> {
        None
    }
}

impl<B: Backend> Conn<B> for PoolConnection<B> {}

impl<B: Backend> Conn<B> for Transaction<'_, B> {}

/// A query and its arguments; a value that does not encode fails the query when it runs.
pub struct Statement<'q, B: Backend> {
    sql: &'q str,
    args: Result<B::Args<'q>, BoxDynError>,
}

impl<'q, B: Backend> Statement<'q, B> {
    pub fn bind(self, value: impl Param<'q>) -> Self {
        self.push(|args| value.push(args))
    }

    /// Binds a batch of multihashes, as [`Dialect::multihash_in`] spells the condition.
    pub fn bind_multihashes(self, batch: &'q [Vec<u8>]) -> Self {
        self.push(|args| args.multihashes(batch))
    }

    fn push(mut self, add: impl FnOnce(&mut B::Args<'q>) -> Result<(), BoxDynError>) -> Self {
        if let Ok(args) = &mut self.args {
            if let Err(e) = add(args) {
                self.args = Err(e);
            }
        }
        self
    }

    fn query(self) -> Result<sqlx::query::Query<'q, B, B::Args<'q>>, sqlx::Error> {
        Ok(sqlx::query_with(
            self.sql,
            self.args.map_err(sqlx::Error::Encode)?,
        ))
    }

    /// Runs it; how many rows it changed.
    pub async fn execute(self, conn: &mut impl Conn<B>) -> Result<u64, sqlx::Error> {
        let changed = self.execute_bare(conn).await?;
        durable(conn.group_sync()).await?;
        Ok(changed)
    }

    /// Runs it on the connection itself, with no wait for durability (the writer's own
    /// `BEGIN` and `COMMIT`).
    pub(super) async fn execute_bare(self, conn: &mut B::Connection) -> Result<u64, sqlx::Error> {
        Ok(self.query()?.execute(conn.exec()).await?.rows_affected())
    }

    pub async fn fetch_one(self, conn: &mut impl Conn<B>) -> Result<B::Row, sqlx::Error> {
        let row = self.query()?.fetch_one((**conn).exec()).await?;
        durable(conn.group_sync()).await?;
        Ok(row)
    }

    pub async fn fetch_optional(
        self,
        conn: &mut impl Conn<B>,
    ) -> Result<Option<B::Row>, sqlx::Error> {
        let row = self.query()?.fetch_optional((**conn).exec()).await?;
        durable(conn.group_sync()).await?;
        Ok(row)
    }

    pub async fn fetch_all(self, conn: &mut impl Conn<B>) -> Result<Vec<B::Row>, sqlx::Error> {
        let rows = self.query()?.fetch_all((**conn).exec()).await?;
        durable(conn.group_sync()).await?;
        Ok(rows)
    }
}
