//! An upload looked up for a request: the caller's, and still alive (an expiry the sweep has
//! not reached yet is applied here). What outlives requests (settling, completing, expiring,
//! the sweep) is `cairn_service::tus`.

use cairn_service::tus;
use cairn_store::model::{Account, TusState, TusUpload};
use cairn_store::now_ms;

use crate::error::ApiError;
use crate::state::AppState;

/// The upload, if it is the caller's and still alive: unknown is `404`, terminated or expired
/// is `410` (an expiry that the sweep has not reached yet is applied here). An upload whose
/// bytes are complete is not settled here unless it expired: HEAD and DELETE settle it, and a
/// PATCH at its length completes it as every last PATCH does. The record is read beside the
/// caller's credentials (see `UploadAccess`).
pub(super) async fn check_live(
    state: &AppState,
    account: &Account,
    id: &str,
    record: Option<TusUpload>,
) -> Result<TusUpload, ApiError> {
    // Another account's upload is as unknown as one that never was.
    let upload = record
        .filter(|upload| upload.account_id == account.id)
        .ok_or_else(|| ApiError::NotFound(format!("upload {id} not found")))?;
    match upload.state {
        TusState::Terminated => Err(ApiError::Gone(format!("upload {id} was terminated"))),
        TusState::Expired => Err(ApiError::Gone(format!("upload {id} expired"))),
        TusState::Receiving if upload.expires_at_ms < now_ms() => {
            // Complete bytes are never expired: they are processed instead.
            let upload = tus::settle(&state.service, upload).await?;
            if upload.state == TusState::Complete {
                return Ok(upload);
            }
            tus::expire(&state.service, &upload).await?;
            Err(ApiError::Gone(format!("upload {id} expired")))
        }
        _ => Ok(upload),
    }
}
