//! Keys, upload links and the changes an account makes to its uploads' names and key-values
//! (see [`crate::access`]).

use super::*;

use crate::access::{ApiKey, NewKey, NewLink, UploadLink, KEY_USE_RESOLUTION_MS};
use crate::model::{Account, ArchiveMode};
use crate::sql::rows::{account_from, key_from, link_from, now_ms};
use crate::sql::write_queue::Line;
use crate::sql::{Backend, SqlStore};
use crate::StoreError;

/// A key's columns beside its account's: each renamed `key_*` (see [`key_from`]).
const KEY_AND_ACCOUNT: &str = "SELECT accounts.*,
        tokens.id AS key_id, tokens.account_id AS key_account_id, tokens.name AS key_name,
        tokens.prefix AS key_prefix, tokens.scopes AS key_scopes,
        tokens.created_at AS key_created_at, tokens.expires_at AS key_expires_at,
        tokens.max_uses AS key_max_uses, tokens.uses AS key_uses,
        tokens.last_used_at AS key_last_used_at, tokens.origins AS key_origins,
        tokens.max_upload_bytes AS key_max_upload_bytes, tokens.revoked_at AS key_revoked_at
    FROM tokens JOIN accounts ON accounts.id = tokens.account_id
    WHERE tokens.hash = $1 AND tokens.revoked_at IS NULL";

/// A link that is live as far as revocation goes: neither it nor the key that made it is
/// revoked.
const LIVE_LINK: &str = "SELECT upload_links.* FROM upload_links
    JOIN tokens ON tokens.id = upload_links.created_by
    WHERE upload_links.revoked_at IS NULL AND tokens.revoked_at IS NULL";

impl<B: Backend> SqlStore<B> {}

#[async_trait]
impl<B: Backend> Access for SqlStore<B> {
    async fn create_key(
        &self,
        key: &NewKey,
        hash: &[u8; 32],
        prefix: &str,
    ) -> Result<ApiKey, StoreError> {
        let (scopes, origins) = (key.scopes.to_text(), key.origins.join("\n"));
        let row = B::query(
            "INSERT INTO tokens (account_id, prefix, hash, created_at, name, scopes, expires_at,
                max_uses, origins, max_upload_bytes)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
             RETURNING *",
        )
        .bind(key.account_id)
        .bind(prefix)
        .bind(&hash[..])
        .bind(now_ms())
        .bind(&key.name)
        .bind(scopes.as_str())
        .bind(key.expires_at_ms)
        .bind(key.max_uses.map(|n| n as i64))
        .bind(origins.as_str())
        .bind(key.max_upload_bytes.map(|n| n as i64))
        .fetch_one(&mut self.write_conn(Line::Requests).await?)
        .await?;
        key_from(&row, "")
    }

    async fn revoke_token(&self, prefix_or_id: &str) -> Result<ApiKey, StoreError> {
        let mut conn = self.write_conn(Line::Requests).await?;
        let rows = match prefix_or_id.parse::<i64>() {
            Ok(id) => B::query("SELECT * FROM tokens WHERE id = $1").bind(id),
            // Either string may be the longer one: a full token, or a few characters of one.
            // Exact comparisons, not LIKE, so `%` and `_` typed by an admin match literally.
            Err(_) => B::query(
                "SELECT * FROM tokens WHERE substr($1, 1, length(prefix)) = prefix
                    OR substr(prefix, 1, length($1)) = $1",
            )
            .bind(prefix_or_id),
        }
        .fetch_all(&mut conn)
        .await?;
        let token = match rows.as_slice() {
            [row] => key_from(row, "")?,
            [] => return Err(StoreError::NotFound(format!("token {prefix_or_id:?}"))),
            _ => {
                return Err(StoreError::Conflict(format!(
                    "more than one token matching {prefix_or_id:?}"
                )))
            }
        };
        B::query("UPDATE tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
            .bind(now_ms())
            .bind(token.id)
            .execute(&mut conn)
            .await?;
        Ok(ApiKey {
            revoked: true,
            ..token
        })
    }

    async fn key_for_token(
        &self,
        hash: &[u8; 32],
    ) -> Result<Option<(Account, ApiKey)>, StoreError> {
        let row = B::query(KEY_AND_ACCOUNT)
            .bind(&hash[..])
            .fetch_optional(&mut self.conn().await?)
            .await?;
        row.map(|row| Ok((account_from(&row), key_from(&row, "key_")?)))
            .transpose()
    }

    async fn list_keys(&self, account_id: i64) -> Result<Vec<ApiKey>, StoreError> {
        let rows = B::query(
            "SELECT * FROM tokens WHERE account_id = $1 AND revoked_at IS NULL ORDER BY id",
        )
        .bind(account_id)
        .fetch_all(&mut self.conn().await?)
        .await?;
        rows.iter().map(|row| key_from(row, "")).collect()
    }

    async fn revoke_key(&self, account_id: i64, id: i64) -> Result<Option<ApiKey>, StoreError> {
        let row = B::query(
            "UPDATE tokens SET revoked_at = $1
              WHERE id = $2 AND account_id = $3 AND revoked_at IS NULL
             RETURNING *",
        )
        .bind(now_ms())
        .bind(id)
        .bind(account_id)
        .fetch_optional(&mut self.write_conn(Line::Requests).await?)
        .await?;
        row.map(|row| key_from(&row, "")).transpose()
    }

    async fn key_seen(&self, id: i64, now_ms: i64) -> Result<(), StoreError> {
        B::query(
            "UPDATE tokens SET last_used_at = $1
              WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $3)",
        )
        .bind(now_ms)
        .bind(id)
        .bind(now_ms - KEY_USE_RESOLUTION_MS)
        .execute(&mut self.write_conn(Line::Requests).await?)
        .await?;
        Ok(())
    }

    async fn create_link(&self, link: &NewLink) -> Result<UploadLink, StoreError> {
        let (types, keyvalues) = (link.mime_types.join("\n"), link.keyvalues.to_json());
        let row = B::query(
            "INSERT INTO upload_links (id, hash, account_id, created_by, created_at, expires_at,
                max_bytes, mime_types, name, keyvalues, archive_mode, uploads)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
             RETURNING *",
        )
        .bind(&link.id)
        .bind(&link.hash[..])
        .bind(link.account_id)
        .bind(link.created_by)
        .bind(now_ms())
        .bind(link.expires_at_ms)
        .bind(link.max_bytes.map(|n| n as i64))
        .bind(types.as_str())
        .bind(link.name.as_deref())
        .bind(keyvalues.as_str())
        .bind(link.archive_mode.map(ArchiveMode::as_str))
        .bind(link.uploads as i64)
        .fetch_one(&mut self.write_conn(Line::Requests).await?)
        .await?;
        link_from(&row)
    }

    async fn link_for_secret(&self, hash: &[u8; 32]) -> Result<Option<UploadLink>, StoreError> {
        let row = B::query(&format!("{LIVE_LINK} AND upload_links.hash = $1"))
            .bind(&hash[..])
            .fetch_optional(&mut self.conn().await?)
            .await?;
        row.as_ref().map(link_from).transpose()
    }

    async fn link(&self, id: &str) -> Result<Option<UploadLink>, StoreError> {
        let row = B::query(&format!("{LIVE_LINK} AND upload_links.id = $1"))
            .bind(id)
            .fetch_optional(&mut self.conn().await?)
            .await?;
        row.as_ref().map(link_from).transpose()
    }

    async fn list_links(&self, account_id: i64) -> Result<Vec<UploadLink>, StoreError> {
        let rows = B::query(&format!(
            "{LIVE_LINK} AND upload_links.account_id = $1
             ORDER BY upload_links.created_at DESC, upload_links.id"
        ))
        .bind(account_id)
        .fetch_all(&mut self.conn().await?)
        .await?;
        rows.iter().map(link_from).collect()
    }

    async fn revoke_link(
        &self,
        account_id: i64,
        id: &str,
    ) -> Result<Option<UploadLink>, StoreError> {
        let row = B::query(
            "UPDATE upload_links SET revoked_at = $1
              WHERE id = $2 AND account_id = $3 AND revoked_at IS NULL
             RETURNING *",
        )
        .bind(now_ms())
        .bind(id)
        .bind(account_id)
        .fetch_optional(&mut self.write_conn(Line::Requests).await?)
        .await?;
        row.as_ref().map(link_from).transpose()
    }
}
