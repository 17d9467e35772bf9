//! One module per resource; `app.rs` merges their routers.

pub mod account;
pub mod events;
pub mod ipni;
pub mod keys;
pub mod links;
pub mod names;
pub mod node;
pub mod operations;
pub mod pins;
pub mod routing;
pub mod upload;
pub mod uploads;
pub mod usage;
pub mod webhooks;

use cairn_store::model::{KeyValues, NameMatch};

use crate::error::ApiError;

/// Largest page any list gives (operations, uploads, pins).
pub const MAX_PAGE: u32 = 1000;

/// The filters the lists share, read from their query strings, each refused with a `400`
/// that names it.
pub mod query {
    use super::*;

    /// `limit`: 1 to [`MAX_PAGE`], else `default`.
    pub fn limit(text: Option<&str>, default: u32) -> Result<u32, ApiError> {
        let Some(text) = text else {
            return Ok(default);
        };
        text.parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_PAGE).contains(n))
            .ok_or_else(|| {
                ApiError::BadRequest(format!(
                    "limit {text:?} must be a whole number from 1 to {MAX_PAGE}"
                ))
            })
    }

    /// `name` and how it is matched (`match`, `exact` by default).
    pub fn name(
        name: Option<String>,
        how: Option<&str>,
    ) -> Result<Option<(String, NameMatch)>, ApiError> {
        let how = how
            .map(str::parse::<NameMatch>)
            .transpose()
            .map_err(ApiError::BadRequest)?
            .unwrap_or_default();
        Ok(name.map(|name| (name, how)))
    }

    /// A time parameter (`before`, `after`): RFC 3339, in milliseconds since the epoch.
    pub fn time(param: &str, value: Option<&str>) -> Result<Option<i64>, ApiError> {
        value
            .map(|v| {
                parse_rfc3339(v).ok_or_else(|| {
                    ApiError::BadRequest(format!("{param} {v:?} is not an RFC 3339 time"))
                })
            })
            .transpose()
    }

    /// A CID as this service writes it (CIDv0 stays CIDv0; CIDv1 in base32), so a CID given
    /// in another base finds what is stored.
    pub fn cid(text: &str) -> Result<String, ApiError> {
        cairn_unixfs::Cid::try_from(text)
            .map(|cid| cid.to_string())
            .map_err(|e| ApiError::BadRequest(format!("{text:?} is not a CID: {e}")))
    }

    /// The `kv=key:value` parameters (split at the first `:`), each of which must hold.
    pub fn keyvalues(pairs: &[(String, String)]) -> Result<Vec<(String, String)>, ApiError> {
        let filters: Vec<(String, String)> = pairs
            .iter()
            .filter(|(name, _)| name == "kv")
            .map(|(_, pair)| {
                pair.split_once(':')
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .ok_or_else(|| ApiError::BadRequest(format!("kv {pair:?} must be key:value")))
            })
            .collect::<Result<_, _>>()?;
        if filters.len() > KeyValues::MAX_PAIRS {
            return Err(ApiError::BadRequest(format!(
                "{} kv filters; an upload has at most {}",
                filters.len(),
                KeyValues::MAX_PAIRS
            )));
        }
        Ok(filters)
    }

    /// A comma-separated list (`status`, `cid`), each item read by `item`; empty when absent.
    pub fn list<T>(
        text: Option<&str>,
        item: impl Fn(&str) -> Result<T, ApiError>,
    ) -> Result<Vec<T>, ApiError> {
        text.map_or(Ok(Vec::new()), |text| {
            text.split(',').map(|s| item(s.trim())).collect()
        })
    }
}

pub use cairn_service::records::rfc3339;

/// An RFC 3339 time as clients send it (`Z` or an offset, with or without fractions of a
/// second), in milliseconds since the epoch.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let text = text.trim();
    // humantime reads UTC (`Z`) only: move an offset into the value first.
    let split = text
        .len()
        .checked_sub(6)
        .and_then(|at| Some((text.get(..at)?, text.get(at..)?)));
    let (utc, offset_secs) = match split {
        Some((time, offset)) if offset.len() == 6 && offset.as_bytes()[3] == b':' => {
            let sign = match offset.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let hours: i64 = offset[1..3].parse().ok()?;
            let minutes: i64 = offset[4..6].parse().ok()?;
            (format!("{time}Z"), sign * (hours * 60 + minutes) * 60)
        }
        _ => (text.replace('z', "Z"), 0),
    };
    let time = humantime::parse_rfc3339_weak(&utc).ok()?;
    let ms = time.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis() as i64;
    Some(ms - offset_secs * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_read_back_in_any_offset() {
        let ms = parse_rfc3339("2026-11-24T10:00:00Z").unwrap();
        assert_eq!(rfc3339(ms), "2026-11-24T10:00:00.000Z");
        assert_eq!(parse_rfc3339("2026-11-24T10:00:00.250Z"), Some(ms + 250));
        assert_eq!(parse_rfc3339("2026-11-24T12:00:00+02:00"), Some(ms));
        assert_eq!(parse_rfc3339("2026-11-24T09:30:00-00:30"), Some(ms));
        for bad in ["", "yesterday", "2026-11-24", "2026-11-24T10:00:00+2:00"] {
            assert_eq!(parse_rfc3339(bad), None, "{bad:?}");
        }
    }
}
