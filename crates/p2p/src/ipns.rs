//! IPNS names and records (ipfs/specs `src/ipns/ipns-record.md`): records signed for the
//! names Cairn keeps, and verified, in the spec's order, wherever one arrives (a PUT to the
//! router, the DHT) before anything reads it.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cairn_unixfs::Cid;
use libp2p::identity::{Keypair, PublicKey};
use libp2p::PeerId;

use crate::protobuf::{next_field, put_bytes, put_varint_field, Malformed, Value};

/// Records up to this size must be accepted; larger ones are refused (the spec allows it).
pub const MAX_RECORD_BYTES: usize = 10 * 1024;
/// The multicodec of a CID that names a public key.
const LIBP2P_KEY: u64 = 0x72;
const SIGNATURE_V2_PREFIX: &[u8] = b"ipns-signature:";
/// The only validity type there is: the record is valid until `validity`.
const EOL: u64 = 0;

/// An IPNS name: the hash of the public key that signs its records, written as a CIDv1 with
/// the `libp2p-key` codec in base36 (`k51...`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Name(PeerId);

impl Name {
    pub fn of(key: &PublicKey) -> Self {
        Self(key.to_peer_id())
    }

    /// The key records are kept under in the DHT: `/ipns/` and the name's multihash.
    pub fn routing_key(&self) -> Vec<u8> {
        [&b"/ipns/"[..], &self.0.to_bytes()].concat()
    }

    /// The name of a DHT key, if it is an IPNS one.
    pub fn from_routing_key(key: &[u8]) -> Option<Self> {
        let id = key.strip_prefix(b"/ipns/")?;
        PeerId::from_bytes(id).ok().map(Self)
    }

    /// The public key, when it is small enough to be inlined in the name (Ed25519).
    fn inlined_key(&self) -> Option<PublicKey> {
        let multihash = self.0.as_ref();
        // The identity multihash: its digest is the protobuf-encoded key itself.
        (multihash.code() == 0x00)
            .then(|| PublicKey::try_decode_protobuf(multihash.digest()).ok())
            .flatten()
    }

    fn cid(&self) -> Cid {
        let mut bytes = Vec::with_capacity(40);
        bytes.extend_from_slice(&[0x01, LIBP2P_KEY as u8]);
        bytes.extend_from_slice(&self.0.to_bytes());
        Cid::try_from(bytes).expect("a peer ID is a multihash")
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self
            .cid()
            .to_string_of_base(cid::multibase::Base::Base36Lower)
            .map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

impl FromStr for Name {
    type Err = String;

    /// A CID with the `libp2p-key` codec in any base, or a bare peer ID (`12D3Koo...`).
    fn from_str(text: &str) -> Result<Self, String> {
        if let Ok(peer) = PeerId::from_str(text) {
            return Ok(Self(peer));
        }
        let cid = Cid::try_from(text).map_err(|_| format!("{text:?} is not an IPNS name"))?;
        if cid.codec() != LIBP2P_KEY {
            return Err(format!(
                "{text:?} is a CID but not a name: its codec is 0x{:x}, not libp2p-key (0x72)",
                cid.codec()
            ));
        }
        PeerId::from_bytes(&cid.hash().to_bytes())
            .map(Self)
            .map_err(|_| format!("{text:?} does not hold a peer ID"))
    }
}

/// What a record says, once its signature is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// What the name points at: `/ipfs/{cid}`, or any content path.
    pub value: String,
    /// Which version: a resolver keeps the highest.
    pub sequence: u64,
    /// The record is not to be used after this.
    pub validity: SystemTime,
    /// How long a resolver may cache it.
    pub ttl: Duration,
}

/// Why a record was refused.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum RecordError {
    #[error("the record is {0} bytes; IPNS records are at most 10 KiB")]
    TooLarge(usize),
    #[error("the record is not an IPNS record: {0}")]
    Malformed(&'static str),
    #[error("the record has no V2 signature or no data (V1-only records are no longer valid)")]
    NotV2,
    #[error("the name does not hold its key and the record carries none")]
    NoPublicKey,
    #[error("the record's public key is not the name's")]
    WrongKey,
    #[error("the record's signature does not verify against the name's key")]
    BadSignature,
    #[error("the record's {0} differs from the one in its signed data")]
    Disagrees(&'static str),
    #[error("the record's validity type {0} is unknown (only 0, EOL, exists)")]
    UnknownValidityType(u64),
    #[error("the record expired at {0}")]
    Expired(String),
}

impl From<Malformed> for RecordError {
    fn from(Malformed(what): Malformed) -> Self {
        Self::Malformed(what)
    }
}

impl Record {
    /// The record, signed by `key`, as the protobuf that travels: V2 signature over the
    /// DAG-CBOR data, and the legacy V1 fields and signature that readers from before 2021
    /// still check.
    pub fn sign(&self, key: &Keypair) -> Vec<u8> {
        let validity = format_validity(self.validity);
        let ttl = self.ttl.as_nanos().min(u128::from(u64::MAX)) as u64;
        let data = signed_data(&self.value, &validity, self.sequence, ttl);
        let v2 = key
            .sign(&[SIGNATURE_V2_PREFIX, &data].concat())
            .expect("Ed25519 signing does not fail");
        let v1 = key
            .sign(&[self.value.as_bytes(), validity.as_bytes(), b"EOL"].concat())
            .expect("Ed25519 signing does not fail");
        let mut out = Vec::with_capacity(data.len() * 2 + 200);
        put_bytes(&mut out, 1, self.value.as_bytes());
        put_bytes(&mut out, 2, &v1);
        put_varint_field(&mut out, 3, EOL);
        put_bytes(&mut out, 4, validity.as_bytes());
        put_varint_field(&mut out, 5, self.sequence);
        put_varint_field(&mut out, 6, ttl);
        // The public key goes in the record only when the name cannot hold it (RSA).
        if Name::of(&key.public()).inlined_key().is_none() {
            put_bytes(&mut out, 7, &key.public().encode_protobuf());
        }
        put_bytes(&mut out, 8, &v2);
        put_bytes(&mut out, 9, &data);
        out
    }

    /// Check `bytes` as the record of `name` at `now`, step by step as the spec's "Record
    /// Verification" says, failing on the first error.
    pub fn verify(name: &Name, bytes: &[u8], now: SystemTime) -> Result<Self, RecordError> {
        if bytes.len() > MAX_RECORD_BYTES {
            return Err(RecordError::TooLarge(bytes.len()));
        }
        let entry = Entry::decode(bytes)?;
        let (Some(signature), Some(data)) = (entry.signature_v2, entry.data) else {
            return Err(RecordError::NotV2);
        };
        if signature.is_empty() || data.is_empty() {
            return Err(RecordError::NotV2);
        }
        let key = match entry.public_key {
            Some(encoded) => {
                let key = PublicKey::try_decode_protobuf(encoded)
                    .map_err(|_| RecordError::Malformed("its public key does not decode"))?;
                if Name::of(&key) != *name {
                    return Err(RecordError::WrongKey);
                }
                key
            }
            None => name.inlined_key().ok_or(RecordError::NoPublicKey)?,
        };
        let signed = SignedData::decode(data)?;
        if !key.verify(&[SIGNATURE_V2_PREFIX, data].concat(), signature) {
            return Err(RecordError::BadSignature);
        }
        if entry.signature_v1.is_some() || entry.value.is_some() {
            let agree = [
                ("value", entry.value.is_none_or(|v| v == signed.value)),
                (
                    "validity",
                    entry.validity.is_none_or(|v| v == signed.validity),
                ),
                (
                    "validity type",
                    entry
                        .validity_type
                        .is_none_or(|v| v == signed.validity_type),
                ),
                (
                    "sequence",
                    entry.sequence.is_none_or(|v| v == signed.sequence),
                ),
                ("TTL", entry.ttl.is_none_or(|v| v == signed.ttl)),
            ];
            if let Some((field, _)) = agree.iter().find(|(_, agrees)| !agrees) {
                return Err(RecordError::Disagrees(field));
            }
        }
        if signed.validity_type != EOL {
            return Err(RecordError::UnknownValidityType(signed.validity_type));
        }
        let text = std::str::from_utf8(signed.validity)
            .map_err(|_| RecordError::Malformed("its validity is not text"))?;
        let validity = parse_validity(text).ok_or(RecordError::Malformed(
            "its validity is not an RFC 3339 time",
        ))?;
        if validity <= now {
            return Err(RecordError::Expired(text.to_owned()));
        }
        let value = String::from_utf8(signed.value.to_vec())
            .map_err(|_| RecordError::Malformed("its value is not text"))?;
        Ok(Self {
            value,
            sequence: signed.sequence,
            validity,
            ttl: Duration::from_nanos(signed.ttl),
        })
    }

    /// Whether this record replaces `other` of the same name: a higher sequence, or the same
    /// sequence valid for longer (a republished record).
    pub fn supersedes(&self, other: &Record) -> bool {
        (self.sequence, self.validity) > (other.sequence, other.validity)
    }

    /// The CID the value points at and the path within it, for `/ipfs/{cid}[/path]`.
    pub fn target(&self) -> Option<(Cid, &str)> {
        let rest = self.value.strip_prefix("/ipfs/")?;
        let (cid, path) = rest.split_once('/').unwrap_or((rest, ""));
        Some((Cid::try_from(cid).ok()?, path))
    }
}

/// The protobuf's fields, borrowed.
#[derive(Default)]
struct Entry<'a> {
    value: Option<&'a [u8]>,
    signature_v1: Option<&'a [u8]>,
    validity_type: Option<u64>,
    validity: Option<&'a [u8]>,
    sequence: Option<u64>,
    ttl: Option<u64>,
    public_key: Option<&'a [u8]>,
    signature_v2: Option<&'a [u8]>,
    data: Option<&'a [u8]>,
}

impl<'a> Entry<'a> {
    fn decode(mut bytes: &'a [u8]) -> Result<Self, Malformed> {
        let mut entry = Entry::default();
        while let Some((field, value)) = next_field(&mut bytes)? {
            match (field, value) {
                (1, Value::Bytes(b)) => entry.value = Some(b),
                (2, Value::Bytes(b)) => entry.signature_v1 = Some(b),
                (3, Value::Varint(v)) => entry.validity_type = Some(v),
                (4, Value::Bytes(b)) => entry.validity = Some(b),
                (5, Value::Varint(v)) => entry.sequence = Some(v),
                (6, Value::Varint(v)) => entry.ttl = Some(v),
                (7, Value::Bytes(b)) => entry.public_key = Some(b),
                (8, Value::Bytes(b)) => entry.signature_v2 = Some(b),
                (9, Value::Bytes(b)) => entry.data = Some(b),
                (1..=9, _) => return Err(Malformed("a field of the wrong wire type")),
                _ => {}
            }
        }
        Ok(entry)
    }
}

/// The signed DAG-CBOR map: `Value`, `Validity`, `ValidityType`, `Sequence`, `TTL`.
struct SignedData<'a> {
    value: &'a [u8],
    validity: &'a [u8],
    validity_type: u64,
    sequence: u64,
    ttl: u64,
}

/// The DAG-CBOR map, its keys in DAG-CBOR's order (shorter first, then bytewise): any other
/// order is other bytes, and the signature would not verify elsewhere.
fn signed_data(value: &str, validity: &str, sequence: u64, ttl: u64) -> Vec<u8> {
    use cairn_car::cbor::{bytes, head, text, MAJOR_MAP, MAJOR_UINT};
    let mut out = Vec::with_capacity(value.len() + validity.len() + 64);
    head(&mut out, MAJOR_MAP, 5);
    text(&mut out, "TTL");
    head(&mut out, MAJOR_UINT, ttl);
    text(&mut out, "Value");
    bytes(&mut out, value.as_bytes());
    text(&mut out, "Sequence");
    head(&mut out, MAJOR_UINT, sequence);
    text(&mut out, "Validity");
    bytes(&mut out, validity.as_bytes());
    text(&mut out, "ValidityType");
    head(&mut out, MAJOR_UINT, EOL);
    out
}

impl<'a> SignedData<'a> {
    fn decode(mut data: &'a [u8]) -> Result<Self, RecordError> {
        let missing = RecordError::Malformed("its signed data lacks a field");
        let (major, entries) = cbor::take_head(&mut data)?;
        if major != cbor::MAP {
            return Err(RecordError::Malformed("its signed data is not a map"));
        }
        let (mut value, mut validity, mut validity_type, mut sequence, mut ttl) =
            (None, None, None, None, None);
        for _ in 0..entries {
            let key = cbor::take_text(&mut data)?;
            match key {
                b"Value" => value = Some(cbor::take_bytes(&mut data)?),
                b"Validity" => validity = Some(cbor::take_bytes(&mut data)?),
                b"ValidityType" => validity_type = Some(cbor::take_unsigned(&mut data)?),
                b"Sequence" => sequence = Some(cbor::take_unsigned(&mut data)?),
                b"TTL" => ttl = Some(cbor::take_unsigned(&mut data)?),
                // Other keys are the record's extensions: signed, kept, not read.
                _ => cbor::skip(&mut data, 0)?,
            }
        }
        if !data.is_empty() {
            return Err(RecordError::Malformed("bytes follow its signed data"));
        }
        Ok(Self {
            value: value.ok_or(missing.clone())?,
            validity: validity.ok_or(missing.clone())?,
            validity_type: validity_type.ok_or(missing.clone())?,
            sequence: sequence.ok_or(missing.clone())?,
            ttl: ttl.ok_or(missing)?,
        })
    }
}

/// RFC 3339 in UTC with nanoseconds, as boxo writes it.
fn format_validity(at: SystemTime) -> String {
    humantime::format_rfc3339_nanos(at).to_string()
}

/// RFC 3339, with `Z` or a numeric offset, and any number of fractional digits.
fn parse_validity(text: &str) -> Option<SystemTime> {
    let offset = text
        .len()
        .checked_sub(6)
        .and_then(|at| text.get(at..))
        .filter(|tail| matches!(tail.as_bytes()[0], b'+' | b'-') && tail.as_bytes()[3] == b':');
    let Some(offset) = offset else {
        return humantime::parse_rfc3339(text).ok();
    };
    let local = humantime::parse_rfc3339(&format!("{}Z", &text[..text.len() - 6])).ok()?;
    let hours: u64 = offset[1..3].parse().ok()?;
    let minutes: u64 = offset[4..6].parse().ok()?;
    let shift = Duration::from_secs(hours * 3600 + minutes * 60);
    // `+02:00` is two hours ahead of UTC: the UTC time is earlier.
    if offset.starts_with('+') {
        local.checked_sub(shift)
    } else {
        local.checked_add(shift)
    }
}

/// Seconds since the epoch, for storing a validity.
pub fn unix_ms(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Reading the little of CBOR an IPNS record's data needs: heads, text keys, byte strings and
/// unsigned integers, and skipping whatever else an extension put there (writing is
/// `cairn_car::cbor`'s).
mod cbor {
    use super::RecordError;
    use cairn_car::cbor::{
        MAJOR_ARRAY as ARRAY, MAJOR_BYTES as BYTES, MAJOR_TAG as TAG, MAJOR_TEXT as TEXT,
    };
    pub use cairn_car::cbor::{MAJOR_MAP as MAP, MAJOR_UINT as UNSIGNED};
    /// Nesting deeper than this in an extension is refused rather than recursed into.
    const MAX_DEPTH: usize = 16;

    fn malformed() -> RecordError {
        RecordError::Malformed("its signed data is not valid DAG-CBOR")
    }

    pub fn take_head(data: &mut &[u8]) -> Result<(u8, u64), RecordError> {
        let (&first, rest) = data.split_first().ok_or_else(malformed)?;
        let (major, info) = (first >> 5, first & 0x1f);
        let width = match info {
            0..=23 => 0,
            24 => 1,
            25 => 2,
            26 => 4,
            27 => 8,
            // Indefinite lengths and reserved values are not DAG-CBOR.
            _ => return Err(malformed()),
        };
        if rest.len() < width {
            return Err(malformed());
        }
        let argument = if width == 0 {
            u64::from(info)
        } else {
            rest[..width]
                .iter()
                .fold(0u64, |n, &byte| (n << 8) | u64::from(byte))
        };
        *data = &rest[width..];
        Ok((major, argument))
    }

    fn take_string<'a>(data: &mut &'a [u8], want: u8) -> Result<&'a [u8], RecordError> {
        let (major, len) = take_head(data)?;
        if major != want {
            return Err(malformed());
        }
        let len = usize::try_from(len).map_err(|_| malformed())?;
        if data.len() < len {
            return Err(malformed());
        }
        let (string, rest) = data.split_at(len);
        *data = rest;
        Ok(string)
    }

    pub fn take_text<'a>(data: &mut &'a [u8]) -> Result<&'a [u8], RecordError> {
        take_string(data, TEXT)
    }

    pub fn take_bytes<'a>(data: &mut &'a [u8]) -> Result<&'a [u8], RecordError> {
        take_string(data, BYTES)
    }

    pub fn take_unsigned(data: &mut &[u8]) -> Result<u64, RecordError> {
        match take_head(data)? {
            (UNSIGNED, n) => Ok(n),
            _ => Err(malformed()),
        }
    }

    /// Skip one item of any kind.
    pub fn skip(data: &mut &[u8], depth: usize) -> Result<(), RecordError> {
        if depth > MAX_DEPTH {
            return Err(malformed());
        }
        let before = *data;
        let (major, argument) = take_head(data)?;
        match major {
            BYTES | TEXT => {
                *data = before;
                take_string(data, major).map(|_| ())
            }
            ARRAY | MAP => {
                let items = if major == MAP {
                    argument.saturating_mul(2)
                } else {
                    argument
                };
                for _ in 0..items {
                    skip(data, depth + 1)?;
                }
                Ok(())
            }
            TAG => skip(data, depth + 1),
            // Integers, simple values and floats: the head was all of it.
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(sequence: u64) -> Record {
        Record {
            value: "/ipfs/bafkqaddwgevxmmraojswg33smq".into(),
            sequence,
            validity: SystemTime::now() + Duration::from_secs(3600),
            ttl: Duration::from_secs(300),
        }
    }

    #[test]
    fn a_signed_record_verifies_under_its_name_and_no_other() {
        let key = Keypair::generate_ed25519();
        let name = Name::of(&key.public());
        let bytes = record(3).sign(&key);
        let read = Record::verify(&name, &bytes, SystemTime::now()).unwrap();
        assert_eq!(read.value, "/ipfs/bafkqaddwgevxmmraojswg33smq");
        assert_eq!((read.sequence, read.ttl), (3, Duration::from_secs(300)));
        let other = Name::of(&Keypair::generate_ed25519().public());
        assert_eq!(
            Record::verify(&other, &bytes, SystemTime::now()),
            Err(RecordError::BadSignature)
        );
    }

    #[test]
    fn names_are_base36_cids_and_read_back_in_either_form() {
        let key = Keypair::generate_ed25519();
        let name = Name::of(&key.public());
        let text = name.to_string();
        assert!(text.starts_with("k51"), "{text}");
        assert_eq!(text.parse::<Name>().unwrap(), name);
        assert_eq!(
            key.public()
                .to_peer_id()
                .to_string()
                .parse::<Name>()
                .unwrap(),
            name
        );
        assert_eq!(Name::from_routing_key(&name.routing_key()), Some(name));
        let not_a_name = "bafkqaddwgevxmmraojswg33smq".parse::<Name>().unwrap_err();
        assert!(not_a_name.contains("not libp2p-key"), "{not_a_name}");
    }

    #[test]
    fn an_expired_or_tampered_record_is_refused() {
        let key = Keypair::generate_ed25519();
        let name = Name::of(&key.public());
        let bytes = record(1).sign(&key);
        let later = SystemTime::now() + Duration::from_secs(7200);
        assert!(matches!(
            Record::verify(&name, &bytes, later),
            Err(RecordError::Expired(_))
        ));
        // A legacy value that is not the signed one (protobuf keeps a field's last copy).
        let forged = {
            let mut out = bytes.clone();
            put_bytes(&mut out, 1, b"/ipfs/bafkqaaa");
            out
        };
        assert_eq!(
            Record::verify(&name, &forged, SystemTime::now()),
            Err(RecordError::Disagrees("value"))
        );
        let mut flipped = bytes;
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(Record::verify(&name, &flipped, SystemTime::now()).is_err());
        assert_eq!(
            Record::verify(&name, &vec![0; MAX_RECORD_BYTES + 1], SystemTime::now()),
            Err(RecordError::TooLarge(MAX_RECORD_BYTES + 1))
        );
    }

    #[test]
    fn validities_read_with_any_offset_and_precision() {
        let utc = parse_validity("2030-01-01T00:00:00Z").unwrap();
        assert_eq!(parse_validity("2030-01-01T02:00:00+02:00"), Some(utc));
        assert_eq!(
            parse_validity("2029-12-31T23:00:00.000000000-01:00"),
            Some(utc)
        );
        assert_eq!(parse_validity(&format_validity(utc)), Some(utc));
        assert!(parse_validity("tomorrow").is_none());
    }

    #[test]
    fn a_newer_sequence_or_a_longer_validity_supersedes() {
        let (old, new) = (record(1), record(2));
        assert!(new.supersedes(&old) && !old.supersedes(&new));
        let republished = Record {
            validity: old.validity + Duration::from_secs(60),
            ..old.clone()
        };
        assert!(republished.supersedes(&old));
    }
}
