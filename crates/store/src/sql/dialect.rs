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

    /// Starts a transaction that only reads, and reads one snapshot throughout (a page and
    /// its count that agree). SQLite: a deferred `BEGIN`, whose first read fixes what the
    /// whole transaction sees in WAL mode. PostgreSQL: `REPEATABLE READ`, as its default
    /// takes a new snapshot for every statement.
    pub const fn begin_snapshot(self) -> &'static str {
        match self {
            Self::Sqlite => "BEGIN",
            Self::Postgres => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
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
            Self::Sqlite => format!("IN ({})", parameters(1, len)),
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

    /// The triggers that keep `kept_counts` (one row per account, a column per status) equal
    /// to what it counts: the live operations that have a root. Every insert, change of
    /// status, root or deletion, and delete moves the counts in the same transaction, so no
    /// code path that writes operations can forget them. One row per account: a change takes
    /// one row lock in PostgreSQL, so two changes cannot wait on each other's rows in opposite
    /// orders. An operation never changes account. SQLite: a trigger per event, its body
    /// inline. PostgreSQL: one PL/pgSQL function the three triggers call. A statement that
    /// changes many of one account's rows in one transaction updates its count row once per
    /// row, and PostgreSQL keeps each version until the end: a migration that rewrites
    /// statuses in bulk should rebuild the counts instead (as the step that made them does).
    pub fn kept_counts_triggers(self) -> String {
        const STATUSES: [&str; 4] = ["pending", "processing", "completed", "failed"];
        // 1 when `row` (NEW or OLD) is counted under `status`, else 0.
        let counted = |row: &str, status: &str| {
            let test = format!(
                "({row}.status = '{status}' AND {row}.cid IS NOT NULL AND {row}.deleted_at IS NULL)"
            );
            match self {
                Self::Sqlite => test,
                Self::Postgres => format!("{test}::int"),
            }
        };
        // Adds each status's `delta` to `account`'s row, making it when it is missing.
        let add = |account: &str, delta: &dyn Fn(&str) -> String| {
            let deltas: Vec<String> = STATUSES.iter().map(|s| delta(s)).collect();
            let sets: Vec<String> = STATUSES
                .iter()
                .map(|s| format!("{s} = kept_counts.{s} + excluded.{s}"))
                .collect();
            format!(
                "INSERT INTO kept_counts (account_id, {}) VALUES ({account}, {})
                 ON CONFLICT (account_id) DO UPDATE SET {};",
                STATUSES.join(", "),
                deltas.join(", "),
                sets.join(", ")
            )
        };
        let inserted = add("NEW.account_id", &|s| counted("NEW", s));
        let changed = add("NEW.account_id", &|s| {
            format!("{} - {}", counted("NEW", s), counted("OLD", s))
        });
        let deleted = add("OLD.account_id", &|s| format!("0 - {}", counted("OLD", s)));
        let new_is_counted = "NEW.cid IS NOT NULL AND NEW.deleted_at IS NULL";
        let old_is_counted = "OLD.cid IS NOT NULL AND OLD.deleted_at IS NULL";
        let moved = "OLD.status <> NEW.status OR (OLD.cid IS NULL) <> (NEW.cid IS NULL)
             OR (OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL)";
        match self {
            Self::Sqlite => format!(
                "CREATE TRIGGER kept_counts_insert AFTER INSERT ON operations
                 WHEN {new_is_counted} BEGIN {inserted} END;
                 CREATE TRIGGER kept_counts_update AFTER UPDATE OF status, cid, deleted_at
                 ON operations WHEN {moved} BEGIN {changed} END;
                 CREATE TRIGGER kept_counts_delete AFTER DELETE ON operations
                 WHEN {old_is_counted} BEGIN {deleted} END;"
            ),
            Self::Postgres => format!(
                "CREATE FUNCTION kept_counts_follow() RETURNS trigger LANGUAGE plpgsql AS $$
                 BEGIN
                     IF TG_OP = 'INSERT' THEN {inserted}
                     ELSIF TG_OP = 'UPDATE' THEN {changed}
                     ELSE {deleted}
                     END IF;
                     RETURN NULL;
                 END $$;
                 CREATE TRIGGER kept_counts_insert AFTER INSERT ON operations
                 FOR EACH ROW WHEN ({new_is_counted}) EXECUTE FUNCTION kept_counts_follow();
                 CREATE TRIGGER kept_counts_update AFTER UPDATE OF status, cid, deleted_at
                 ON operations FOR EACH ROW WHEN ({moved}) EXECUTE FUNCTION kept_counts_follow();
                 CREATE TRIGGER kept_counts_delete AFTER DELETE ON operations
                 FOR EACH ROW WHEN ({old_is_counted}) EXECUTE FUNCTION kept_counts_follow();"
            ),
        }
    }

    /// The triggers that keep `keyvalues` (one row per key-value of each live upload or pin)
    /// equal to the `meta` of the operations (a JSON object of strings, as text) and whether
    /// they have a root, and the rows of those stored before. As with `kept_counts`, no code
    /// path that writes operations can forget them; an operation without key-values costs
    /// nothing.
    pub fn keyvalues_triggers(self) -> String {
        let columns = "account_id, k, v, created_at, operation_id, rooted";
        // What changes a row's key-values: an operation without any is left alone.
        let changed = "(OLD.meta <> '{}' OR NEW.meta <> '{}') AND (OLD.meta <> NEW.meta
            OR (OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL)
            OR (OLD.cid IS NULL) <> (NEW.cid IS NULL))";
        match self {
            Self::Sqlite => {
                let pairs = |row: &str| {
                    format!(
                        "INSERT INTO keyvalues ({columns})
                         SELECT {row}.account_id, key, value, {row}.created_at, {row}.id,
                                {row}.cid IS NOT NULL
                           FROM json_each({row}.meta) WHERE type = 'text'"
                    )
                };
                let (new, existing) = (pairs("NEW"), pairs("o"));
                let existing = existing.replace(
                    "FROM json_each(o.meta)",
                    "FROM operations o, json_each(o.meta)",
                );
                format!(
                    "CREATE TRIGGER keyvalues_insert AFTER INSERT ON operations
                     WHEN NEW.deleted_at IS NULL AND NEW.meta <> '{{}}' BEGIN {new}; END;
                     CREATE TRIGGER keyvalues_update AFTER UPDATE OF meta, deleted_at, cid
                     ON operations WHEN {changed}
                     BEGIN
                         DELETE FROM keyvalues WHERE operation_id = OLD.id;
                         {new} AND NEW.deleted_at IS NULL;
                     END;
                     CREATE TRIGGER keyvalues_delete AFTER DELETE ON operations
                     WHEN OLD.meta <> '{{}}' BEGIN DELETE FROM keyvalues WHERE operation_id = OLD.id; END;
                     {existing} AND o.deleted_at IS NULL AND o.meta <> '{{}}';"
                )
            }
            Self::Postgres => format!(
                "CREATE FUNCTION keyvalues_follow() RETURNS trigger LANGUAGE plpgsql AS $$
                 BEGIN
                     IF TG_OP <> 'INSERT' THEN
                         DELETE FROM keyvalues WHERE operation_id = OLD.id;
                     END IF;
                     IF TG_OP <> 'DELETE' AND NEW.deleted_at IS NULL THEN
                         INSERT INTO keyvalues ({columns})
                         SELECT NEW.account_id, e.key, e.value #>> '{{}}', NEW.created_at, NEW.id,
                                (NEW.cid IS NOT NULL)::int
                           FROM jsonb_each(NEW.meta::jsonb) e
                          WHERE jsonb_typeof(e.value) = 'string';
                     END IF;
                     RETURN NULL;
                 END $$;
                 CREATE TRIGGER keyvalues_insert AFTER INSERT ON operations
                 FOR EACH ROW WHEN (NEW.meta <> '{{}}') EXECUTE FUNCTION keyvalues_follow();
                 CREATE TRIGGER keyvalues_update AFTER UPDATE OF meta, deleted_at, cid
                 ON operations FOR EACH ROW WHEN ({changed}) EXECUTE FUNCTION keyvalues_follow();
                 CREATE TRIGGER keyvalues_delete AFTER DELETE ON operations
                 FOR EACH ROW WHEN (OLD.meta <> '{{}}') EXECUTE FUNCTION keyvalues_follow();
                 INSERT INTO keyvalues ({columns})
                 SELECT o.account_id, e.key, e.value #>> '{{}}', o.created_at, o.id,
                        (o.cid IS NOT NULL)::int
                   FROM operations o, jsonb_each(o.meta::jsonb) e
                  WHERE o.deleted_at IS NULL AND o.meta <> '{{}}'
                    AND jsonb_typeof(e.value) = 'string';"
            ),
        }
    }

    /// The triggers that write `events` when an operation reaches `completed` or `failed`
    /// (inserted so or changed to it) or is deleted, in the transaction that made the change.
    /// PostgreSQL assigns ids before commit, so two transactions could commit their events out
    /// of id order and a reader following ids (a stream, the webhook dispatcher) would skip the
    /// later-committed lower one: a transaction-scoped advisory lock makes events commit in id
    /// order (SQLite has one writer, so they do already).
    pub fn events_triggers(self) -> String {
        // Beside `postgres.rs`'s migration and collector locks (0x6361_6972_6e00 and 01).
        const EVENTS_LOCK: i64 = 0x6361_6972_6e02;
        let kind_type = |row: &str| {
            format!(
                "CASE WHEN {row}.kind = 'pin'
                      THEN CASE {row}.status WHEN 'completed' THEN 'pin.pinned' ELSE 'pin.failed' END
                      ELSE 'upload.' || {row}.status END"
            )
        };
        let finished = kind_type("NEW");
        let removed = "CASE WHEN NEW.kind = 'pin' THEN 'pin.removed' ELSE 'upload.deleted' END";
        let event = |kind: &str, at: &str| {
            format!(
                "INSERT INTO events (account_id, type, operation_id, created_at)
                 VALUES (NEW.account_id, {kind}, NEW.id, {at});"
            )
        };
        let (finished, removed) = (
            event(&finished, "NEW.updated_at"),
            event(removed, "NEW.deleted_at"),
        );
        let now_finished = "NEW.status IN ('completed', 'failed')";
        let became_finished = "NEW.status <> OLD.status AND NEW.status IN ('completed', 'failed')";
        let became_deleted = "OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL";
        match self {
            Self::Sqlite => format!(
                "CREATE TRIGGER events_finished_insert AFTER INSERT ON operations
                 WHEN {now_finished} BEGIN {finished} END;
                 CREATE TRIGGER events_finished_update AFTER UPDATE OF status ON operations
                 WHEN {became_finished} BEGIN {finished} END;
                 CREATE TRIGGER events_deleted AFTER UPDATE OF deleted_at ON operations
                 WHEN {became_deleted} BEGIN {removed} END;"
            ),
            Self::Postgres => format!(
                "CREATE FUNCTION events_follow() RETURNS trigger LANGUAGE plpgsql AS $$
                 BEGIN
                     PERFORM pg_advisory_xact_lock({EVENTS_LOCK});
                     IF TG_OP = 'INSERT' OR ({became_finished}) THEN {finished}
                     END IF;
                     IF TG_OP = 'UPDATE' AND {became_deleted} THEN {removed}
                     END IF;
                     RETURN NULL;
                 END $$;
                 CREATE TRIGGER events_finished_insert AFTER INSERT ON operations
                 FOR EACH ROW WHEN ({now_finished}) EXECUTE FUNCTION events_follow();
                 CREATE TRIGGER events_changed AFTER UPDATE OF status, deleted_at ON operations
                 FOR EACH ROW WHEN (({became_finished}) OR ({became_deleted}))
                 EXECUTE FUNCTION events_follow();"
            ),
        }
    }

    /// Drops the trigger that queued a delivery row for each event (schema steps before the
    /// dispatch cursor made it; a database made since never had it).
    pub const fn drop_webhooks_trigger(self) -> &'static str {
        match self {
            Self::Sqlite => "DROP TRIGGER IF EXISTS events_to_webhooks;",
            Self::Postgres => {
                "DROP TRIGGER IF EXISTS events_to_webhooks ON events;
                 DROP FUNCTION IF EXISTS events_to_webhooks();"
            }
        }
    }

    /// Where a query over what an account keeps reads, when it filters by name, which is read
    /// row by row. SQLite: `NOT INDEXED` reads the table in order; left to
    /// itself it walks an index of the account's rows and reads each row at random, 3.7 times
    /// slower at a million. PostgreSQL's planner scans the table already.
    pub const fn operations_read_whole(self) -> &'static str {
        match self {
            Self::Sqlite => "operations NOT INDEXED",
            Self::Postgres => "operations",
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

/// Rows written by one multi-row `INSERT`, at most [`ROW_PARAMETERS`] parameters in all: each
/// statement is a round trip while holding SQLite's writer, so many rows go in one.
pub(crate) const ROW_PARAMETERS: usize = 2500;

/// `($1, $2), ($3, $4), ...`: the `VALUES` of `rows` rows of `columns` parameters each, well
/// under both databases' limits on parameters (SQLite's 32,766, PostgreSQL's 65,535).
pub(crate) fn values_rows(rows: usize, columns: usize) -> String {
    let rows: Vec<String> = (0..rows)
        .map(|row| format!("({})", parameters(columns * row + 1, columns)))
        .collect();
    rows.join(", ")
}

/// `$first, $first+1, ...`: `len` values bound one by one (an `IN` list, a row of `VALUES`).
pub(crate) fn parameters(first: usize, len: usize) -> String {
    let list: Vec<String> = (first..first + len).map(|i| format!("${i}")).collect();
    list.join(", ")
}
