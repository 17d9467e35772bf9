//! Rows into the model, the clock, and the one way a unique-key violation is recognised.

use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use sqlx::Row;

use crate::access::{ApiKey, UploadLink};
use crate::model::{
    Account, KeyValues, NodeRecord, Operation, OperationError, OperationStatus, TusConcat,
    TusUpload,
};
use crate::StoreError;

/// Milliseconds since the Unix epoch, as every timestamp column stores them; the clock that
/// callers pass to the store's time-taking methods (leases, rate buckets) too.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

pub(crate) fn unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.is_unique_violation())
}

/// The column types the model uses, read the same way from any backend's rows.
pub trait ModelRow {
    fn int(&self, column: &str) -> i64;
    fn maybe_int(&self, column: &str) -> Option<i64>;
    fn text(&self, column: &str) -> String;
    fn maybe_text(&self, column: &str) -> Option<String>;
    fn real(&self, column: &str) -> f64;
    fn blob(&self, column: &str) -> Vec<u8>;
}

macro_rules! model_row {
    ($row:ty) => {
        impl ModelRow for $row {
            fn int(&self, column: &str) -> i64 {
                self.get(column)
            }
            fn maybe_int(&self, column: &str) -> Option<i64> {
                self.get(column)
            }
            fn text(&self, column: &str) -> String {
                self.get(column)
            }
            fn maybe_text(&self, column: &str) -> Option<String> {
                self.get(column)
            }
            fn real(&self, column: &str) -> f64 {
                self.get(column)
            }
            fn blob(&self, column: &str) -> Vec<u8> {
                self.get(column)
            }
        }
    };
}
model_row!(sqlx::sqlite::SqliteRow);
model_row!(sqlx::postgres::PgRow);

pub(crate) fn account_from(row: &impl ModelRow) -> Account {
    Account {
        id: row.int("id"),
        name: row.text("name"),
        upload_limit: row.int("upload_limit") as u64,
        quota: row.maybe_int("quota").map(|q| q as u64),
        stored_bytes: row.int("stored_bytes") as u64,
        created_at_ms: row.int("created_at"),
    }
}

/// A key from a row of `tokens`, its columns named with `prefix` (`key_` where a query
/// reads an account's columns beside them).
pub(crate) fn key_from(row: &impl ModelRow, prefix: &str) -> Result<ApiKey, StoreError> {
    let column = |name: &str| format!("{prefix}{name}");
    let corrupt = |e: String| StoreError::Database(sqlx::Error::Decode(e.into()));
    Ok(ApiKey {
        id: row.int(&column("id")),
        account_id: row.int(&column("account_id")),
        name: row.text(&column("name")),
        prefix: row.text(&column("prefix")),
        scopes: row.text(&column("scopes")).parse().map_err(corrupt)?,
        created_at_ms: row.int(&column("created_at")),
        expires_at_ms: row.maybe_int(&column("expires_at")),
        max_uses: row.maybe_int(&column("max_uses")).map(|n| n as u64),
        uses: row.int(&column("uses")) as u64,
        last_used_at_ms: row.maybe_int(&column("last_used_at")),
        origins: lines(&row.text(&column("origins"))),
        max_upload_bytes: row.maybe_int(&column("max_upload_bytes")).map(|n| n as u64),
        revoked: row.maybe_int(&column("revoked_at")).is_some(),
    })
}

pub(crate) fn link_from(row: &impl ModelRow) -> Result<UploadLink, StoreError> {
    let corrupt = |e: String| StoreError::Database(sqlx::Error::Decode(e.into()));
    Ok(UploadLink {
        id: row.text("id"),
        account_id: row.int("account_id"),
        created_by: row.int("created_by"),
        created_at_ms: row.int("created_at"),
        expires_at_ms: row.int("expires_at"),
        max_bytes: row.maybe_int("max_bytes").map(|n| n as u64),
        mime_types: lines(&row.text("mime_types")),
        name: row.maybe_text("name"),
        keyvalues: KeyValues::from_stored(&row.text("keyvalues")).map_err(corrupt)?,
        archive_mode: row
            .maybe_text("archive_mode")
            .map(|mode| mode.parse())
            .transpose()
            .map_err(corrupt)?,
        uploads: row.int("uploads") as u64,
        uses: row.int("uses") as u64,
        revoked: row.maybe_int("revoked_at").is_some(),
    })
}

/// A list stored as lines of text (origins, media types, multiaddrs).
pub(crate) fn lines(text: &str) -> Vec<String> {
    text.split('\n')
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

pub(crate) fn operation_from(row: &impl ModelRow) -> Result<Operation, StoreError> {
    let corrupt = |e: String| StoreError::Database(sqlx::Error::Decode(e.into()));
    let code = row.maybe_text("error_code");
    Ok(Operation {
        id: row.int("id"),
        upload_id: row.text("upload_id"),
        account_id: row.int("account_id"),
        kind: row.text("kind").parse().map_err(corrupt)?,
        status: OperationStatus::from_str(&row.text("status")).map_err(corrupt)?,
        status_message: row.text("status_message"),
        progress_percent: row.real("progress"),
        cid: row.maybe_text("cid"),
        error: code.map(|code| OperationError {
            code,
            message: row.maybe_text("error_message").unwrap_or_default(),
        }),
        name: row.text("name"),
        size: row.int("size") as u64,
        mime_type: row.text("mime_type"),
        archive_mode: row
            .maybe_text("archive_mode")
            .map(|mode| mode.parse())
            .transpose()
            .map_err(corrupt)?,
        profile: row.text("profile"),
        created_at_ms: row.int("created_at"),
        updated_at_ms: row.int("updated_at"),
        completed_at_ms: row.maybe_int("completed_at"),
        dag_size: row.maybe_int("dag_size").map(|size| size as u64),
        deleted_at_ms: row.maybe_int("deleted_at"),
        origins: lines(&row.text("origins")),
        keyvalues: KeyValues::from_stored(&row.text("meta")).map_err(corrupt)?,
        key_id: row.maybe_int("key_id"),
        file_name: row.maybe_text("file_name"),
        stored_as: row
            .maybe_text("stored_as")
            .map(|kind| kind.parse())
            .transpose()
            .map_err(corrupt)?,
        archive_format: row.maybe_text("archive_format"),
        link_id: row.maybe_text("link_id"),
    })
}

pub(crate) fn tus_from(row: &impl ModelRow) -> Result<TusUpload, StoreError> {
    let corrupt = |e: String| StoreError::Database(sqlx::Error::Decode(e.into()));
    let parts = row.maybe_text("parts");
    let concat = match row.maybe_text("concat").as_deref() {
        None => TusConcat::None,
        Some("partial") => TusConcat::Partial,
        Some("final") => TusConcat::Final(
            parts
                .unwrap_or_default()
                .split(' ')
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect(),
        ),
        Some(other) => return Err(corrupt(format!("unknown concat {other:?}"))),
    };
    Ok(TusUpload {
        id: row.text("id"),
        account_id: row.int("account_id"),
        operation_id: row.maybe_int("operation_id"),
        length: row.maybe_int("length").map(|l| l as u64),
        metadata: row.text("metadata"),
        concat,
        state: row.text("state").parse().map_err(corrupt)?,
        created_at_ms: row.int("created_at"),
        expires_at_ms: row.int("expires_at"),
        link_id: row.maybe_text("link_id"),
    })
}

pub(crate) fn node_from(row: &impl ModelRow) -> NodeRecord {
    NodeRecord {
        peer_id: row.text("peer_id"),
        addrs: row.text("addrs").lines().map(str::to_owned).collect(),
        gateway: row.maybe_text("gateway"),
        seen_at_ms: row.int("seen_at"),
    }
}
