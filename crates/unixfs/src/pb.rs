//! Node encodings: the UnixFS `Data` protobuf, and dag-pb nodes through `ipld-dagpb`.
//!
//! UnixFS spec: <https://specs.ipfs.tech/unixfs/>. The `Data` message is proto2 with
//! non-packed `blocksizes`, written in field order, exactly as boxo and js-ipfs-unixfs do;
//! any other byte layout would change every CID.

use bytes::Bytes;
use cid::Cid;
pub use ipld_dagpb::{PbLink, PbNode};

/// UnixFS node types (`Data.Type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataType {
    Raw = 0,
    Directory = 1,
    File = 2,
    Metadata = 3,
    Symlink = 4,
    HamtShard = 5,
}

impl DataType {
    fn from_code(code: u64) -> Option<Self> {
        Some(match code {
            0 => Self::Raw,
            1 => Self::Directory,
            2 => Self::File,
            3 => Self::Metadata,
            4 => Self::Symlink,
            5 => Self::HamtShard,
            _ => return None,
        })
    }
}

/// The UnixFS `Data` message carried in a dag-pb node's Data field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnixFsData<'a> {
    pub kind: DataType,
    pub data: Option<&'a [u8]>,
    pub filesize: Option<u64>,
    pub blocksizes: Vec<u64>,
    pub hash_type: Option<u64>,
    pub fanout: Option<u64>,
}

impl<'a> UnixFsData<'a> {
    pub fn new(kind: DataType) -> Self {
        Self {
            kind,
            data: None,
            filesize: None,
            blocksizes: Vec::new(),
            hash_type: None,
            fanout: None,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.data.map_or(0, <[u8]>::len));
        put_varint_field(&mut out, 1, self.kind as u64);
        if let Some(data) = self.data {
            put_key(&mut out, 2, WIRE_LEN);
            put_varint(&mut out, data.len() as u64);
            out.extend_from_slice(data);
        }
        if let Some(size) = self.filesize {
            put_varint_field(&mut out, 3, size);
        }
        for &size in &self.blocksizes {
            put_varint_field(&mut out, 4, size);
        }
        if let Some(code) = self.hash_type {
            put_varint_field(&mut out, 5, code);
        }
        if let Some(fanout) = self.fanout {
            put_varint_field(&mut out, 6, fanout);
        }
        out
    }

    /// Parse a `Data` message. Mode and mtime (fields 7, 8) are skipped: no profile writes them.
    pub fn decode(mut buf: &'a [u8]) -> Result<Self, DecodeError> {
        let mut msg = Self::new(DataType::Raw);
        let mut saw_type = false;
        while !buf.is_empty() {
            let key = take_varint(&mut buf)?;
            let (field, wire) = (key >> 3, key & 7);
            match (field, wire) {
                (1, WIRE_VARINT) => {
                    let code = take_varint(&mut buf)?;
                    msg.kind = DataType::from_code(code).ok_or(DecodeError::UnknownType(code))?;
                    saw_type = true;
                }
                (2, WIRE_LEN) => msg.data = Some(take_bytes(&mut buf)?),
                (3, WIRE_VARINT) => msg.filesize = Some(take_varint(&mut buf)?),
                (4, WIRE_VARINT) => msg.blocksizes.push(take_varint(&mut buf)?),
                (4, WIRE_LEN) => {
                    // Packed encoding: legal protobuf even though no importer writes it.
                    let mut packed = take_bytes(&mut buf)?;
                    while !packed.is_empty() {
                        msg.blocksizes.push(take_varint(&mut packed)?);
                    }
                }
                (5, WIRE_VARINT) => msg.hash_type = Some(take_varint(&mut buf)?),
                (6, WIRE_VARINT) => msg.fanout = Some(take_varint(&mut buf)?),
                (_, WIRE_VARINT) => {
                    take_varint(&mut buf)?;
                }
                (_, WIRE_LEN) => {
                    take_bytes(&mut buf)?;
                }
                (_, WIRE_FIXED32) => {
                    take_n(&mut buf, 4)?;
                }
                (_, WIRE_FIXED64) => {
                    take_n(&mut buf, 8)?;
                }
                _ => return Err(DecodeError::Malformed("unsupported protobuf wire type")),
            }
        }
        if !saw_type {
            return Err(DecodeError::Malformed("UnixFS Data without a Type"));
        }
        Ok(msg)
    }
}

/// A block that is not the UnixFS node it claims to be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("invalid dag-pb node: {0}")]
    DagPb(String),
    #[error("invalid UnixFS data: {0}")]
    Malformed(&'static str),
    #[error("unknown UnixFS node type {0}")]
    UnknownType(u64),
}

/// Encode a dag-pb node. Links must already be in their final order (`ipld-dagpb` sorts by
/// name stably, which leaves file links, all named "", as given).
pub fn encode_node(links: Vec<PbLink>, data: Vec<u8>) -> Vec<u8> {
    PbNode {
        links,
        data: Some(Bytes::from(data)),
    }
    .into_bytes()
}

/// A dag-pb link as the importer writes it: name always present (possibly empty) and Tsize set.
pub fn link(cid: Cid, name: impl Into<String>, tsize: u64) -> PbLink {
    PbLink {
        cid,
        name: Some(name.into()),
        size: Some(tsize),
    }
}

/// Decode a dag-pb block.
pub fn decode_node(block: &[u8]) -> Result<PbNode, DecodeError> {
    PbNode::from_bytes(Bytes::copy_from_slice(block)).map_err(|e| DecodeError::DagPb(e.to_string()))
}

/// Whether the dag-pb `block` links to nothing, from its top-level fields alone (its bytes need
/// not be decoded, nor read again, to walk below it): `Some(true)` for a node that is only Data
/// (a leaf of a CIDv0 file), `Some(false)` for one with a Links field, `None` when the fields
/// cannot be read. Links may come before or after Data (decoders take either), so every field
/// is looked at, skipping over the bytes of Data without touching them.
pub fn dag_pb_without_links(block: &crate::BlockBytes<'_>) -> Option<bool> {
    let varint_at = |at: &mut usize| -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = block.byte(*at)?;
            *at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    };
    let (len, mut at) = (block.len(), 0);
    while at < len {
        let key = varint_at(&mut at)?;
        match (key >> 3, key & 7) {
            (2, WIRE_LEN) => return Some(false),
            (1, WIRE_LEN) => {
                let data = usize::try_from(varint_at(&mut at)?).ok()?;
                at = at.checked_add(data).filter(|end| *end <= len)?;
            }
            _ => return None,
        }
    }
    Some(true)
}

const WIRE_VARINT: u64 = 0;
const WIRE_FIXED64: u64 = 1;
const WIRE_LEN: u64 = 2;
const WIRE_FIXED32: u64 = 5;

fn put_key(out: &mut Vec<u8>, field: u64, wire: u64) {
    put_varint(out, (field << 3) | wire);
}

fn put_varint_field(out: &mut Vec<u8>, field: u64, value: u64) {
    put_key(out, field, WIRE_VARINT);
    put_varint(out, value);
}

pub(crate) fn put_varint(out: &mut Vec<u8>, value: u64) {
    let (bytes, len) = varint(value);
    out.extend_from_slice(&bytes[..len]);
}

/// `value` as a protobuf varint: the bytes and how many of them are used.
pub(crate) fn varint(mut value: u64) -> ([u8; 10], usize) {
    let mut bytes = [0u8; 10];
    let mut len = 0;
    while value >= 0x80 {
        bytes[len] = (value as u8) | 0x80;
        value >>= 7;
        len += 1;
    }
    bytes[len] = value as u8;
    (bytes, len + 1)
}

/// Bytes a protobuf varint of `value` occupies.
pub fn varint_len(value: u64) -> u64 {
    (64 - (value | 1).leading_zeros() as u64).div_ceil(7)
}

fn take_varint(buf: &mut &[u8]) -> Result<u64, DecodeError> {
    let mut value = 0u64;
    for (i, &byte) in buf.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            *buf = &buf[i + 1..];
            return Ok(value);
        }
    }
    Err(DecodeError::Malformed("truncated or overlong varint"))
}

fn take_n<'a>(buf: &mut &'a [u8], n: usize) -> Result<&'a [u8], DecodeError> {
    if buf.len() < n {
        return Err(DecodeError::Malformed(
            "field runs past the end of the block",
        ));
    }
    let (head, tail) = buf.split_at(n);
    *buf = tail;
    Ok(head)
}

fn take_bytes<'a>(buf: &mut &'a [u8]) -> Result<&'a [u8], DecodeError> {
    let len = take_varint(buf)?;
    let len = usize::try_from(len).map_err(|_| DecodeError::Malformed("length overflows"))?;
    take_n(buf, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_without_links_is_told_from_its_fields_in_any_order_and_pieces() {
        let cid: Cid = "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"
            .parse()
            .unwrap();
        let leaf = encode_node(vec![], vec![7; 300]);
        let parent = encode_node(vec![link(cid, "", 300)], vec![8; 4]);
        let whole = |bytes: &[u8]| dag_pb_without_links(&crate::BlockBytes::new(bytes));
        assert_eq!(whole(&leaf), Some(true));
        assert_eq!(whole(&parent), Some(false));
        assert_eq!(whole(&[]), Some(true), "an empty node links to nothing");
        // Data before Links: decoders take it, so it must be seen.
        let links_start = parent.iter().position(|b| *b == 0x12).unwrap();
        let (links, data) = parent.split_at(links_start);
        let data_first: Vec<u8> = [data, links].concat();
        assert_eq!(whole(&data_first), Some(false));
        // In pieces, split inside the length and the data.
        let pieces = crate::BlockBytes::from_parts(&leaf[..2], &leaf[2..200], &leaf[200..]);
        assert_eq!(dag_pb_without_links(&pieces), Some(true));
        // Truncated, or a field dag-pb does not have: unknown.
        assert_eq!(whole(&leaf[..leaf.len() - 1]), None);
        assert_eq!(whole(&[0x18, 0x01]), None);
    }

    #[test]
    fn directory_data_is_the_four_bytes_every_importer_writes() {
        let data = UnixFsData::new(DataType::Directory).encode();
        assert_eq!(data, [0x08, 0x01]);
        let node = encode_node(vec![], data);
        assert_eq!(node, [0x0a, 0x02, 0x08, 0x01]);
    }

    #[test]
    fn data_round_trips_through_decode() {
        let mut msg = UnixFsData::new(DataType::File);
        msg.data = Some(b"abc");
        msg.filesize = Some(300);
        msg.blocksizes = vec![1 << 20, 7];
        let bytes = msg.encode();
        assert_eq!(UnixFsData::decode(&bytes).unwrap(), msg);
    }

    #[test]
    fn varint_len_matches_encoding() {
        for v in [0, 1, 127, 128, 16383, 16384, u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(varint_len(v), out.len() as u64, "{v}");
        }
    }
}
