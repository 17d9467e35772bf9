//! Account host: `GET /api/usage` (scope `read`), what the account stores and used in a
//! calendar month (UTC): the current one, or `?period=YYYY-MM`.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::Json;
use cairn_store::now_ms;
use serde::Deserialize;
use serde_json::{json, Value};

use super::rfc3339;
use crate::auth::{need, Caller};
use crate::error::ApiError;
use crate::rate_limit::Endpoint;
use crate::state::AppState;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageParams {
    period: Option<String>,
}

pub async fn usage(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::Read>,
    params: Result<Query<UsageParams>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    state.limiter.check(account.id, Endpoint::Account).await?;
    let Query(params) = params.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let month = match params.period {
        Some(period) => Month::parse(&period).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "period {period:?} is not a month written YYYY-MM (such as 2026-11)"
            ))
        })?,
        None => Month::of(now_ms()),
    };
    let (start, end) = month.bounds_ms();
    let used = state
        .service
        .store
        .usage(account.id, start, end, &month.to_string())
        .await?;
    Ok(Json(json!({
        "storedBytes": account.stored_bytes,
        "quota": account.quota,
        "uploads": used.uploads,
        "pins": used.pins,
        "uploadedBytes": used.uploaded_bytes,
        "servedBytes": used.served_bytes,
        "period": {"month": month.to_string(), "start": rfc3339(start), "end": rfc3339(end)},
    })))
}

/// A calendar month, UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Month {
    year: i64,
    month: u32,
}

const DAY_MS: i64 = 24 * 3600 * 1000;

impl Month {
    /// The month `ms` (milliseconds since the epoch) falls in.
    pub fn of(ms: i64) -> Self {
        let (year, month, _) = civil_from_days(ms.div_euclid(DAY_MS));
        Self { year, month }
    }

    pub fn parse(text: &str) -> Option<Self> {
        let (year, month) = text.split_once('-')?;
        if year.len() != 4 || month.len() != 2 {
            return None;
        }
        let (year, month) = (year.parse().ok()?, month.parse().ok()?);
        ((1970..=9999).contains(&year) && (1..=12).contains(&month)).then_some(Self { year, month })
    }

    /// Its first millisecond, and the first of the next month.
    pub fn bounds_ms(self) -> (i64, i64) {
        let next = if self.month == 12 {
            (self.year + 1, 1)
        } else {
            (self.year, self.month + 1)
        };
        (
            days_from_civil(self.year, self.month, 1) * DAY_MS,
            days_from_civil(next.0, next.1, 1) * DAY_MS,
        )
    }
}

impl std::fmt::Display for Month {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}-{:02}", self.year, self.month)
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (i64::from(month) + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date of a day counted since 1970-01-01 (the inverse of [`days_from_civil`]).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_are_calendar_months() {
        let november = Month::parse("2026-11").unwrap();
        let (start, end) = november.bounds_ms();
        assert_eq!(rfc3339(start), "2026-11-01T00:00:00.000Z");
        assert_eq!(rfc3339(end), "2026-12-01T00:00:00.000Z");
        assert_eq!(Month::of(start), november);
        assert_eq!(Month::of(end - 1), november);
        let (_, end) = Month::parse("2024-12").unwrap().bounds_ms();
        assert_eq!(rfc3339(end), "2025-01-01T00:00:00.000Z");
        let (start, end) = Month::parse("2024-02").unwrap().bounds_ms();
        assert_eq!((end - start) / DAY_MS, 29);
        for wrong in ["2026-13", "2026-1", "26-11", "2026/11", "2026-00", ""] {
            assert_eq!(Month::parse(wrong), None, "{wrong}");
        }
    }
}
