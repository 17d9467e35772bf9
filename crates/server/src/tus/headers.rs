//! Parsing TUS request headers (tus-resumable-upload-protocol 1.0.0), at the edge.

use axum::http::HeaderMap;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use md5::Md5;
use sha1::Sha1;
use sha2::{Digest, Sha256};

use crate::error::ApiError;

pub const TUS_VERSION: &str = "1.0.0";
pub const EXTENSIONS: &str =
    "creation,creation-with-upload,creation-defer-length,termination,checksum,expiration,concatenation";
pub const CHECKSUM_ALGORITHMS: &str = "sha1,sha256,md5";
pub const OFFSET_OCTET_STREAM: &str = "application/offset+octet-stream";

pub fn text<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, ApiError> {
    headers
        .get(name)
        .map(|v| {
            v.to_str()
                .map(str::trim)
                .map_err(|_| ApiError::BadRequest(format!("{name} is not valid text")))
        })
        .transpose()
}

/// A non-negative integer header (`Upload-Offset`, `Upload-Length`).
pub fn number(headers: &HeaderMap, name: &str) -> Result<Option<u64>, ApiError> {
    text(headers, name)?
        .map(|v| {
            // Digits only: "+1", "1.0" and "-1" are all malformed.
            if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
                return Err(ApiError::BadRequest(format!(
                    "{name} must be a non-negative integer"
                )));
            }
            v.parse()
                .map_err(|_| ApiError::BadRequest(format!("{name} is too large")))
        })
        .transpose()
}

/// `Upload-Length` at creation: as [`number`], but a length too large for 64 bits reads as
/// `u64::MAX`, over any `Tus-Max-Size`, so that it is refused as the protocol refuses a length
/// over the maximum (`413`, "Creation"), not as a malformed header.
pub fn upload_length(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let name = "upload-length";
    match number(headers, name) {
        Err(_)
            if text(headers, name)?
                .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit())) =>
        {
            Ok(Some(u64::MAX))
        }
        parsed => parsed,
    }
}

/// `Upload-Metadata`: comma-separated `key base64value` pairs; values may be empty.
pub fn metadata(raw: &str) -> Result<Vec<(String, Vec<u8>)>, ApiError> {
    let bad = |why: String| ApiError::BadRequest(format!("Upload-Metadata: {why}"));
    let mut pairs: Vec<(String, Vec<u8>)> = Vec::new();
    if raw.trim().is_empty() {
        return Ok(pairs);
    }
    for pair in raw.split(',') {
        let mut parts = pair.trim().splitn(2, ' ');
        let key = parts.next().unwrap_or_default();
        if key.is_empty() {
            return Err(bad("an empty key".into()));
        }
        let value = match parts.next().map(str::trim) {
            None | Some("") => Vec::new(),
            Some(encoded) => BASE64
                .decode(encoded)
                .map_err(|_| bad(format!("the value of {key:?} is not base64")))?,
        };
        if pairs.iter().any(|(k, _)| k == key) {
            return Err(bad(format!("the key {key:?} appears twice")));
        }
        pairs.push((key.to_owned(), value));
    }
    Ok(pairs)
}

/// The expected digest of a checksummed PATCH, and the hasher to check it with.
pub struct Checksum {
    pub algorithm: &'static str,
    expected: Vec<u8>,
    hasher: Hasher,
}

enum Hasher {
    Sha1(Sha1),
    Sha256(Sha256),
    Md5(Md5),
}

impl Checksum {
    /// `Upload-Checksum: <algorithm> <base64 digest>`.
    pub fn parse(value: &str) -> Result<Self, ApiError> {
        let (name, digest) = value.split_once(' ').ok_or_else(|| {
            ApiError::BadRequest("Upload-Checksum must be \"<algorithm> <base64 digest>\"".into())
        })?;
        let (algorithm, hasher) = match name {
            "sha1" => ("sha1", Hasher::Sha1(Sha1::new())),
            "sha256" => ("sha256", Hasher::Sha256(Sha256::new())),
            "md5" => ("md5", Hasher::Md5(Md5::new())),
            other => {
                return Err(ApiError::BadRequest(format!(
                    "checksum algorithm {other:?} is not supported (use {CHECKSUM_ALGORITHMS})"
                )))
            }
        };
        let expected = BASE64
            .decode(digest.trim())
            .map_err(|_| ApiError::BadRequest("the Upload-Checksum digest is not base64".into()))?;
        Ok(Self {
            algorithm,
            expected,
            hasher,
        })
    }

    pub fn update(&mut self, bytes: &[u8]) {
        match &mut self.hasher {
            Hasher::Sha1(h) => h.update(bytes),
            Hasher::Sha256(h) => h.update(bytes),
            Hasher::Md5(h) => h.update(bytes),
        }
    }

    pub fn matches(self) -> bool {
        let digest = match self.hasher {
            Hasher::Sha1(h) => h.finalize().to_vec(),
            Hasher::Sha256(h) => h.finalize().to_vec(),
            Hasher::Md5(h) => h.finalize().to_vec(),
        };
        digest == self.expected
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_pairs_follow_the_protocol() {
        let pairs =
            metadata("filename d29ybGRfZG9taW5hdGlvbl9wbGFuLnBkZg==,is_confidential").unwrap();
        assert_eq!(
            pairs[0],
            ("filename".into(), b"world_domination_plan.pdf".to_vec())
        );
        assert_eq!(pairs[1], ("is_confidential".into(), Vec::new()));
        assert!(metadata("").unwrap().is_empty());
        assert!(metadata("a !!!").is_err(), "bad base64");
        assert!(metadata("a YQ==,a Yg==").is_err(), "duplicate key");
        assert!(
            metadata(" YQ==").is_err() || metadata(",a YQ==").is_err(),
            "empty key"
        );
    }

    #[test]
    fn numbers_are_digits_only_and_checksums_name_their_algorithm() {
        let mut headers = HeaderMap::new();
        for (value, ok) in [
            ("0", true),
            ("123", true),
            ("-1", false),
            ("+1", false),
            ("1.5", false),
            ("", false),
        ] {
            headers.insert("upload-offset", value.parse().unwrap());
            assert_eq!(number(&headers, "upload-offset").is_ok(), ok, "{value:?}");
        }
        headers.insert("upload-length", "99999999999999999999".parse().unwrap());
        assert!(number(&headers, "upload-length").is_err());
        assert_eq!(upload_length(&headers).unwrap(), Some(u64::MAX));
        headers.insert("upload-length", "-1".parse().unwrap());
        assert!(upload_length(&headers).is_err());
        let mut sum = Checksum::parse("sha1 Kq5sNclPz7QV2+lfQIuc6R7oRu0=").unwrap();
        sum.update(b"hello world");
        assert!(sum.matches());
        assert!(Checksum::parse("crc32 AAAA").is_err());
        assert!(Checksum::parse("sha256").is_err());
    }
}
