//! Where the two databases' SQL differs, side by side, each difference with why. The queries
//! and the schema are written once and take these words from here.

use sqlx::error::BoxDynError;
use sqlx::postgres::PgArguments;
use sqlx::sqlite::SqliteArguments;
use sqlx::Arguments;

use crate::model::NameMatch;

/// Which database a statement is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// A column type (or table option) of the schema that the databases spell differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    /// An `id` numbered by the database.
    Id,
    /// A 64-bit integer.
    Int,
    /// A 64-bit float.
    Real,
    /// Bytes.
    Blob,
    /// After the block index's table: how it is stored.
    KeyedByPrimaryKey,
}

impl Dialect {
    /// Starts a transaction that will write. SQLite: `BEGIN IMMEDIATE` takes the write lock up
    /// front, because a deferred transaction that reads and then writes fails with
    /// `SQLITE_BUSY` (which the busy timeout does not retry) when another connection committed
    /// in between. PostgreSQL: a plain `BEGIN`; the rows a decision reads are locked with
    /// [`Self::for_update`].
    pub const fn begin_write(self) -> &'static str {
        match self {
            Self::Sqlite => "BEGIN IMMEDIATE",
            Self::Postgres => "BEGIN",
        }
    }

    /// Appended to a `SELECT` whose rows a write transaction decides on. PostgreSQL locks them,
    /// so a concurrent commit on another node waits and then sees this one's effect (two nodes
    /// cannot both spend an account's remaining quota). SQLite has no row locks and needs
    /// none: `BEGIN IMMEDIATE` already holds the database's one write lock.
    pub const fn for_update(self) -> &'static str {
        match self {
            Self::Sqlite => "",
            Self::Postgres => " FOR UPDATE",
        }
    }

    /// What every commit keeping a root runs first to hold the collector off. PostgreSQL: a
    /// shared lock on the collector's row lets commits run together but not while the
    /// collector applies a collection (which takes the row `FOR UPDATE`), and the collector
    /// waits for them. SQLite: nothing, as its one writer already keeps them apart (and a
    /// statement would be one more round trip while holding that writer).
    pub const fn hold_off_collector(self) -> Option<&'static str> {
        match self {
            Self::Sqlite => None,
            Self::Postgres => Some("SELECT id FROM collector WHERE id = 1 FOR SHARE"),
        }
    }

    /// Appended to the queue's choice of the next operation. PostgreSQL: `FOR UPDATE SKIP
    /// LOCKED`, so nodes claiming at once neither wait on nor take the same row. SQLite:
    /// nothing, as its single writer makes the claiming `UPDATE` atomic.
    pub const fn skip_locked(self) -> &'static str {
        match self {
            Self::Sqlite => "",
            Self::Postgres => " FOR UPDATE SKIP LOCKED",
        }
    }

    /// The larger and the smaller of two values: SQLite's scalar `MAX` and `MIN` are
    /// PostgreSQL's `GREATEST` and `LEAST` (in each, the other names are aggregates).
    pub const fn greatest_least(self) -> (&'static str, &'static str) {
        match self {
            Self::Sqlite => ("MAX", "MIN"),
            Self::Postgres => ("GREATEST", "LEAST"),
        }
    }

    /// How many multihashes one block lookup binds: SQLite binds one parameter each and limits
    /// their number per statement; PostgreSQL binds the batch as one array.
    pub const fn lookup_batch(self) -> usize {
        match self {
            Self::Sqlite => 500,
            Self::Postgres => 1000,
        }
    }

    /// `multihash` in a batch of `len`, bound by [`BindMultihashes`] from `$1`. SQLite has no
    /// arrays; PostgreSQL's array gives one statement for every batch size.
    pub fn multihash_in(self, len: usize) -> String {
        match self {
            Self::Sqlite => format!("IN ({})", super::parameters(1, len)),
            Self::Postgres => "= ANY($1)".to_owned(),
        }
    }

    /// `name` matches the parameter `p` as the Pinning Service API's `match` says. Substrings
    /// are found with `instr` (SQLite) or `strpos` (PostgreSQL), not `LIKE`, whose `%` and `_`
    /// in a user's text would be wildcards, and which SQLite folds case for. `LOWER` folds
    /// ASCII only in SQLite, all of Unicode in PostgreSQL.
    pub fn name_matches(self, how: NameMatch, p: &str) -> String {
        let find = match self {
            Self::Sqlite => "instr",
            Self::Postgres => "strpos",
        };
        match how {
            NameMatch::Exact => format!("name = {p}"),
            NameMatch::IExact => format!("LOWER(name) = LOWER({p})"),
            NameMatch::Partial => format!("{find}(name, {p}) > 0"),
            NameMatch::IPartial => format!("{find}(LOWER(name), LOWER({p})) > 0"),
        }
    }

    /// The pin's `meta` (a JSON object as text) has the value `v` at the key `k`: SQLite reads
    /// it with `json_each`, PostgreSQL as `jsonb`. A key is a parameter, never spliced into a
    /// JSON path.
    pub fn meta_has(self, k: &str, v: &str) -> String {
        match self {
            Self::Sqlite => format!(
                "EXISTS (SELECT 1 FROM json_each(meta) WHERE json_each.key = {k} \
                 AND json_each.type = 'text' AND json_each.value = {v})"
            ),
            Self::Postgres => format!("(meta::jsonb ->> {k}) = {v}"),
        }
    }

    /// The schema's words for `column`.
    pub const fn column(self, column: Column) -> &'static str {
        match (self, column) {
            // AUTOINCREMENT: an id is never reused, even after the newest row is deleted.
            (Self::Sqlite, Column::Id) => "INTEGER PRIMARY KEY AUTOINCREMENT",
            (Self::Postgres, Column::Id) => "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
            // SQLite's INTEGER is 64-bit; PostgreSQL's is 32.
            (Self::Sqlite, Column::Int) => "INTEGER",
            (Self::Postgres, Column::Int) => "BIGINT",
            (Self::Sqlite, Column::Real) => "REAL",
            (Self::Postgres, Column::Real) => "DOUBLE PRECISION",
            (Self::Sqlite, Column::Blob) => "BLOB",
            (Self::Postgres, Column::Blob) => "BYTEA",
            // SQLite stores the block index by its key alone, without a second rowid b-tree.
            (Self::Sqlite, Column::KeyedByPrimaryKey) => " WITHOUT ROWID",
            (Self::Postgres, Column::KeyedByPrimaryKey) => "",
        }
    }
}

/// Binds a batch of multihashes as [`Dialect::multihash_in`] spells it.
pub trait BindMultihashes<'q> {
    fn multihashes(&mut self, batch: &'q [Vec<u8>]) -> Result<(), BoxDynError>;
}

impl<'q> BindMultihashes<'q> for SqliteArguments<'q> {
    fn multihashes(&mut self, batch: &'q [Vec<u8>]) -> Result<(), BoxDynError> {
        batch.iter().try_for_each(|m| self.add(m.as_slice()))
    }
}

impl<'q> BindMultihashes<'q> for PgArguments {
    fn multihashes(&mut self, batch: &'q [Vec<u8>]) -> Result<(), BoxDynError> {
        self.add(batch)
    }
}
