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

    /// A number in a cursor this server issued: 1 to 18 digits (an id or a time in
    /// milliseconds, as written), nothing else, so that `openapi.yaml` can say exactly which
    /// cursors are taken.
    pub fn cursor_number(text: &str) -> Option<i64> {
        let digits = (1..=18).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit());
        digits.then(|| text.parse().ok()).flatten()
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

/// A JSON request body that must be an object, as every route's is documented: serde reads
/// a struct from an array too (`[null, null]` as its fields in order), which no client means.
/// Taken as `Json<Object<T>>`, so that axum's rejections (and their messages) stay as they are.
pub struct Object<T>(pub T);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for Fields<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        (deserializer.deserialize_map(Fields(std::marker::PhantomData))).map(Object)
    }
}

/// An RFC 3339 time as clients send it (`Z` or an offset, with or without fractions of a
/// second; `T` and `Z` in either case, as RFC 3339 section 5.6 allows, or a space for the
/// `T`, as its note there permits), in milliseconds since the epoch: negative before 1970,
/// so that a filter `after=1960-01-01T00:00:00Z` is read as written. Years 0000 to 9999, as
/// the grammar's four digits write them; a second of 60 (a leap second) is read as 59.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let text = text.trim().as_bytes();
    let digits = |at: usize, len: usize| -> Option<i64> {
        let field = text.get(at..at + len)?;
        field
            .iter()
            .all(u8::is_ascii_digit)
            .then(|| (field.iter()).fold(0, |n, digit| n * 10 + i64::from(digit - b'0')))
    };
    let (year, month, day) = (digits(0, 4)?, digits(5, 2)?, digits(8, 2)?);
    let (hour, minute, second) = (digits(11, 2)?, digits(14, 2)?, digits(17, 2)?);
    let separators = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if separators.iter().any(|&(at, byte)| text[at] != byte)
        || !matches!(text[10], b'T' | b't' | b' ')
        || !(1..=12).contains(&month)
        || !(1..=days_in_month(year, month)).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    let mut millis = 0;
    if let Some(fraction) = rest.strip_prefix(b".") {
        let len = fraction.iter().take_while(|b| b.is_ascii_digit()).count();
        if len == 0 {
            return None;
        }
        // Milliseconds, truncated: the precision the API keeps times in.
        millis = (fraction[..len].iter().take(3).chain(b"00"))
            .take(3)
            .fold(0, |n, digit| n * 10 + i64::from(digit - b'0'));
        rest = &fraction[len..];
    }
    let offset_minutes = match rest {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let number = |a: &u8, b: &u8| {
                (a.is_ascii_digit() && b.is_ascii_digit())
                    .then(|| i64::from(a - b'0') * 10 + i64::from(b - b'0'))
            };
            let (hours, minutes) = (number(h1, h2)?, number(m1, m2)?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            let minutes = hours * 60 + minutes;
            if *sign == b'+' {
                minutes
            } else {
                -minutes
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second.min(59) - offset_minutes * 60;
    Some(seconds * 1000 + millis)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
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
        assert_eq!(parse_rfc3339("2026-11-24t10:00:00z"), Some(ms));
        assert_eq!(parse_rfc3339("2026-11-24 10:00:00.25Z"), Some(ms + 250));
        assert_eq!(
            parse_rfc3339("2026-11-24T10:00:00.123456789Z"),
            Some(ms + 123)
        );
        // Before the epoch, and at the ends of the four-digit years.
        assert_eq!(parse_rfc3339("1969-12-31T23:59:59Z"), Some(-1000));
        assert_eq!(
            parse_rfc3339("1960-02-29T00:00:00Z"),
            Some(-310_521_600_000)
        );
        assert_eq!(
            parse_rfc3339("0001-01-01T00:00:00Z"),
            Some(-62_135_596_800_000)
        );
        assert_eq!(
            parse_rfc3339("9999-12-31T23:59:59-23:59"),
            Some(253_402_387_139_000)
        );
        for bad in [
            "",
            "yesterday",
            "2026-11-24",
            "2026-11-24T10:00:00+2:00",
            "2026-11-24T10:00:00",
            "2026-11-24T10:00:00.Z",
            "2026-02-29T10:00:00Z",
            "2026-11-31T10:00:00Z",
            "2026-11-24T24:00:00Z",
            "2026-11-24T10:00:00+24:00",
            "2026-11-24X10:00:00Z",
            "+026-11-24T10:00:00Z",
            "2026-11-24T10:00:00Zjunk",
            "2026-11-24T10:00:00.5x",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad:?}");
        }
    }
}
