//! Identity CIDs longer than the CID type holds: 65 to 128 bytes of inline data, which
//! IPIP-0512 allows. Their block is their digest, so nothing is read from the store; they are
//! answered here, as the rest of the gateway answers a short one: the block (`raw`, or the
//! codec asked for when it is the CID's), a CAR of the root alone (identity blocks are never
//! in a CAR), or, for the raw codec, the bytes as a file.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use super::car::RAW_TYPE;
use super::{file, Format, IMMUTABLE};
use crate::error::ApiError;

/// The largest identity CID digest (inline data) anyone may use (IPIP-0512).
pub(super) const MAX_IDENTITY_BYTES: u64 = 128;
const RAW: u64 = 0x55;

/// A long identity CID, as sent, and what it holds.
pub(super) struct Inline {
    text: String,
    bytes: Vec<u8>,
    codec: u64,
    data: Bytes,
}

impl Inline {
    /// `text` when it is a CIDv1 whose identity digest is longer than 64 bytes (shorter ones
    /// are ordinary CIDs) and at most [`MAX_IDENTITY_BYTES`].
    pub(super) fn parse(text: &str) -> Option<Self> {
        let (_, bytes) = cid::multibase::decode(text).ok()?;
        let (codec, len, data) = identity_parts(&bytes)?;
        let fits = (65..=MAX_IDENTITY_BYTES).contains(&len) && data.len() as u64 == len;
        let data = Bytes::copy_from_slice(data);
        fits.then(|| Self {
            text: text.to_owned(),
            codec,
            data,
            bytes,
        })
    }

    pub(super) fn respond(
        self,
        format: Format,
        path: &[String],
        headers: &HeaderMap,
        uri: &Uri,
    ) -> Result<Response, ApiError> {
        if !path.is_empty() {
            return Err(ApiError::BadRequest(format!(
                "{} holds its data inline, a block with no links: it has no path {:?}",
                self.text,
                path.join("/")
            )));
        }
        let (media_type, body) = match format {
            Format::Raw => (RAW_TYPE.to_owned(), self.data.clone()),
            Format::Car => (
                "application/vnd.ipld.car; version=1; order=dfs; dups=n".to_owned(),
                Bytes::from(self.car()),
            ),
            Format::Codec(codec) if codec.code == self.codec => {
                (codec.media_type.to_owned(), self.data.clone())
            }
            Format::Codec(codec) => {
                return Err(ApiError::NotAcceptable(format!(
                    "{} is not a {} block; blocks are not converted between codecs: ask for \
                     format=raw or car",
                    self.text, codec.name
                )))
            }
            Format::Plain if self.codec == RAW => {
                let kind = if std::str::from_utf8(&self.data).is_ok() {
                    "text/plain; charset=utf-8"
                } else {
                    "application/octet-stream"
                };
                (kind.to_owned(), self.data.clone())
            }
            Format::Plain => {
                return Err(ApiError::NotAcceptable(format!(
                    "{} is inline data in codec 0x{:x}: ask for format=raw or car",
                    self.text, self.codec
                )))
            }
            Format::Tar => {
                return Err(ApiError::NotAcceptable(format!(
                    "{} is inline data, not a UnixFS DAG with a tar of its own: ask for \
                     format=raw or car",
                    self.text
                )))
            }
        };
        let range = file::byte_range(headers, body.len() as u64)?;
        let total = body.len();
        let (status, body) = match &range {
            Some(range) => (
                StatusCode::PARTIAL_CONTENT,
                body.slice(range.start as usize..range.end as usize),
            ),
            None => (StatusCode::OK, body),
        };
        let mut response = (status, body).into_response();
        let out = response.headers_mut();
        let text = |value: &str| HeaderValue::from_str(value).map_err(ApiError::internal);
        out.insert(header::CONTENT_TYPE, text(&media_type)?);
        out.insert(header::ETAG, text(&format!("\"{}\"", self.text))?);
        out.insert(header::CACHE_CONTROL, HeaderValue::from_static(IMMUTABLE));
        out.insert(
            "x-content-type-options",
            HeaderValue::from_static("nosniff"),
        );
        out.insert("x-ipfs-path", text(uri.path())?);
        out.insert("x-ipfs-roots", text(&self.text)?);
        if let Some(range) = range {
            let bounds = format!("bytes {}-{}/{total}", range.start, range.end - 1);
            out.insert(header::CONTENT_RANGE, text(&bounds)?);
        }
        Ok(response)
    }

    /// A CAR v1 whose header names this CID as its root, and no block.
    fn car(&self) -> Vec<u8> {
        use cairn_car::cbor::{cid_bytes, head, text, MAJOR_ARRAY, MAJOR_MAP, MAJOR_UINT};
        // DAG-CBOR `{"roots": [CID], "version": 1}`, keys in DAG-CBOR's order.
        let mut header = Vec::with_capacity(self.bytes.len() + 24);
        head(&mut header, MAJOR_MAP, 2);
        text(&mut header, "roots");
        head(&mut header, MAJOR_ARRAY, 1);
        cid_bytes(&mut header, &self.bytes);
        text(&mut header, "version");
        head(&mut header, MAJOR_UINT, 1);
        let mut car = Vec::with_capacity(header.len() + 2);
        let mut length = unsigned_varint::encode::u64_buffer();
        car.extend_from_slice(unsigned_varint::encode::u64(
            header.len() as u64,
            &mut length,
        ));
        car.extend_from_slice(&header);
        car
    }
}

/// The digest length of a CIDv1 whose multihash is the identity, however long it is (for
/// saying what an identity CID the `Cid` type refused is).
pub(super) fn identity_digest_len(text: &str) -> Option<u64> {
    let (_, bytes) = cid::multibase::decode(text).ok()?;
    identity_parts(&bytes).map(|(_, len, _)| len)
}

/// A binary CIDv1 with the identity multihash: its codec, the digest length it declares, and
/// the bytes after that length.
fn identity_parts(bytes: &[u8]) -> Option<(u64, u64, &[u8])> {
    let varint = |bytes| unsigned_varint::decode::u64(bytes).ok();
    let (version, rest) = varint(bytes)?;
    let (codec, rest) = varint(rest)?;
    let (hash, rest) = varint(rest)?;
    let (len, data) = varint(rest)?;
    (version == 1 && hash == cairn_unixfs::block::IDENTITY).then_some((codec, len, data))
}
