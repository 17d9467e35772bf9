//! Bitswap messages (`message.proto` of boxo's bitswap, all three versions) and their framing
//! on a stream: each message is an unsigned-varint length, then the protobuf.
//!
//! ```text
//! message Message {
//!   message Wantlist {
//!     enum WantType { Block = 0; Have = 1; }
//!     message Entry { bytes block = 1; int32 priority = 2; bool cancel = 3;
//!                     WantType wantType = 4; bool sendDontHave = 5; }
//!     repeated Entry entries = 1; bool full = 2;
//!   }
//!   message Block { bytes prefix = 1; bytes data = 2; }
//!   enum BlockPresenceType { Have = 0; DontHave = 1; }
//!   message BlockPresence { bytes cid = 1; BlockPresenceType type = 2; }
//!   Wantlist wantlist = 1;
//!   repeated bytes blocks = 2;            // 1.0.0: the block data; the CID is CIDv0
//!   repeated Block payload = 3;           // 1.1.0 and 1.2.0
//!   repeated BlockPresence blockPresences = 4;   // 1.2.0
//!   int32 pendingBytes = 5;
//! }
//! ```
//!
//! Decoding is strict about what it must understand and skips unknown fields, as protobuf
//! wants; sizes are bounded by the caller's limit on the frame.

use std::io;

use crate::protobuf::{
    bytes_field_len, next_field, put_bytes, put_bytes_header, put_varint, put_varint_field,
    take_varint, Malformed, Value,
};
use cairn_unixfs::block::{block_cid, DAG_PB, SHA2_256};
use cairn_unixfs::{Cid, CidVersion};
use futures::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// What a wantlist entry asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WantType {
    Block,
    Have,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WantEntry {
    pub cid: Cid,
    pub priority: i32,
    pub cancel: bool,
    pub want_type: WantType,
    pub send_dont_have: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presence {
    Have,
    DontHave,
}

/// One Bitswap message. Blocks are `(cid, data)`; the CID is rebuilt from the prefix (or, in
/// 1.0.0, is the CIDv0 of the data) and is not yet checked against the data: the receiver
/// verifies every block against the CID it wanted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    pub wantlist: Vec<WantEntry>,
    pub full_wantlist: bool,
    pub blocks: Vec<(Cid, Vec<u8>)>,
    pub presences: Vec<(Cid, Presence)>,
    pub pending_bytes: i32,
}

/// Why bytes are not a Bitswap message.
#[derive(Debug, thiserror::Error)]
pub enum MessageError {
    #[error("the message is {len} bytes; the limit is {limit}")]
    TooLarge { len: u64, limit: u64 },
    #[error("malformed Bitswap message: {0}")]
    Malformed(&'static str),
    #[error("malformed CID in a Bitswap message: {0}")]
    Cid(String),
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl From<Malformed> for MessageError {
    fn from(Malformed(what): Malformed) -> Self {
        Self::Malformed(what)
    }
}

/// Which protocol version a message is written for: what fields carry blocks, and whether
/// presences may be sent at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Version {
    V100,
    V110,
    V120,
}

impl Message {
    pub fn is_empty(&self) -> bool {
        self.wantlist.is_empty()
            && !self.full_wantlist
            && self.blocks.is_empty()
            && self.presences.is_empty()
    }

    /// Bytes of the encoded message, about: for batching blocks under a frame limit.
    pub fn approximate_size(&self) -> usize {
        self.blocks.iter().map(|(_, d)| d.len() + 48).sum::<usize>()
            + self.presences.len() * 48
            + self.wantlist.len() * 48
    }

    pub fn encode(&self, version: Version) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.approximate_size() + 16);
        if !self.wantlist.is_empty() || self.full_wantlist {
            let mut wantlist = Vec::new();
            for entry in &self.wantlist {
                let mut e = Vec::new();
                put_bytes(&mut e, 1, &entry.cid.to_bytes());
                put_varint_field(&mut e, 2, entry.priority as i64 as u64);
                if entry.cancel {
                    put_varint_field(&mut e, 3, 1);
                }
                if entry.want_type == WantType::Have && version == Version::V120 {
                    put_varint_field(&mut e, 4, 1);
                }
                if entry.send_dont_have && version == Version::V120 {
                    put_varint_field(&mut e, 5, 1);
                }
                put_bytes(&mut wantlist, 1, &e);
            }
            if self.full_wantlist {
                put_varint_field(&mut wantlist, 2, 1);
            }
            put_bytes(&mut out, 1, &wantlist);
        }
        for (cid, data) in &self.blocks {
            if version == Version::V100 {
                put_bytes(&mut out, 2, data);
            } else {
                // Written in place: the block's bytes are copied once.
                let prefix = cid_prefix(cid);
                let len = bytes_field_len(1, prefix.len()) + bytes_field_len(2, data.len());
                put_bytes_header(&mut out, 3, len);
                put_bytes(&mut out, 1, &prefix);
                put_bytes(&mut out, 2, data);
            }
        }
        if version == Version::V120 {
            for (cid, presence) in &self.presences {
                let mut p = Vec::new();
                put_bytes(&mut p, 1, &cid.to_bytes());
                if *presence == Presence::DontHave {
                    put_varint_field(&mut p, 2, 1);
                }
                put_bytes(&mut out, 4, &p);
            }
        }
        if self.pending_bytes != 0 {
            put_varint_field(&mut out, 5, self.pending_bytes as i64 as u64);
        }
        out
    }

    pub fn decode(mut bytes: &[u8]) -> Result<Self, MessageError> {
        let mut message = Message::default();
        while let Some((field, value)) = next_field(&mut bytes)? {
            match (field, value) {
                (1, Value::Bytes(mut wantlist)) => {
                    while let Some((field, value)) = next_field(&mut wantlist)? {
                        match (field, value) {
                            (1, Value::Bytes(entry)) => message.wantlist.push(decode_entry(entry)?),
                            (2, Value::Varint(full)) => message.full_wantlist = full != 0,
                            _ => {}
                        }
                    }
                }
                (2, Value::Bytes(data)) => {
                    // Bitswap 1.0.0: blocks are CIDv0 (dag-pb, sha2-256).
                    let cid = block_cid(CidVersion::V0, DAG_PB, data);
                    message.blocks.push((cid, data.to_vec()));
                }
                (3, Value::Bytes(mut block)) => {
                    let (mut prefix, mut data) = (None, None);
                    while let Some((field, value)) = next_field(&mut block)? {
                        match (field, value) {
                            (1, Value::Bytes(p)) => prefix = Some(p),
                            (2, Value::Bytes(d)) => data = Some(d),
                            _ => {}
                        }
                    }
                    let prefix = prefix.ok_or(MessageError::Malformed("a block has no prefix"))?;
                    let data = data.unwrap_or_default();
                    message
                        .blocks
                        .push((cid_from_prefix(prefix, data)?, data.to_vec()));
                }
                (4, Value::Bytes(mut presence)) => {
                    let (mut cid, mut kind) = (None, Presence::Have);
                    while let Some((field, value)) = next_field(&mut presence)? {
                        match (field, value) {
                            (1, Value::Bytes(c)) => cid = Some(parse_cid(c)?),
                            (2, Value::Varint(1)) => kind = Presence::DontHave,
                            _ => {}
                        }
                    }
                    let cid = cid.ok_or(MessageError::Malformed("a presence has no CID"))?;
                    message.presences.push((cid, kind));
                }
                (5, Value::Varint(pending)) => message.pending_bytes = pending as i32,
                _ => {}
            }
        }
        Ok(message)
    }
}

fn decode_entry(mut bytes: &[u8]) -> Result<WantEntry, MessageError> {
    let mut entry = WantEntry {
        cid: Cid::default(),
        priority: 1,
        cancel: false,
        want_type: WantType::Block,
        send_dont_have: false,
    };
    let mut cid = None;
    while let Some((field, value)) = next_field(&mut bytes)? {
        match (field, value) {
            (1, Value::Bytes(c)) => cid = Some(parse_cid(c)?),
            (2, Value::Varint(p)) => entry.priority = p as i32,
            (3, Value::Varint(c)) => entry.cancel = c != 0,
            (4, Value::Varint(1)) => entry.want_type = WantType::Have,
            (5, Value::Varint(s)) => entry.send_dont_have = s != 0,
            _ => {}
        }
    }
    entry.cid = cid.ok_or(MessageError::Malformed("a wantlist entry has no CID"))?;
    Ok(entry)
}

/// The longest CID accepted (boxo's limit): a longer one is not a CID a peer could have.
const MAX_CID_BYTES: usize = 168;

fn parse_cid(bytes: &[u8]) -> Result<Cid, MessageError> {
    if bytes.len() > MAX_CID_BYTES {
        return Err(MessageError::Malformed("a CID is longer than 168 bytes"));
    }
    Cid::try_from(bytes).map_err(|e| MessageError::Cid(e.to_string()))
}

/// A CID's prefix: version, codec, multihash code and digest length, as varints.
fn cid_prefix(cid: &Cid) -> Vec<u8> {
    let mut out = Vec::with_capacity(8);
    for value in [
        cid.version() as u64,
        cid.codec(),
        cid.hash().code(),
        u64::from(cid.hash().size()),
    ] {
        put_varint(&mut out, value);
    }
    out
}

/// The CID of `data` under `prefix`. Only sha2-256 is supported: every block Cairn stores
/// and serves is hashed with it.
fn cid_from_prefix(mut prefix: &[u8], data: &[u8]) -> Result<Cid, MessageError> {
    let mut next = || take_varint(&mut prefix).ok_or(MessageError::Malformed("a block prefix"));
    let (version, codec, code, len) = (next()?, next()?, next()?, next()?);
    if code != SHA2_256 || len != 32 {
        return Err(MessageError::Cid(format!(
            "multihash {code:#x} of {len} bytes is not supported (sha2-256 only)"
        )));
    }
    let version = match version {
        0 if codec == DAG_PB => CidVersion::V0,
        1 => CidVersion::V1,
        v => {
            return Err(MessageError::Cid(format!(
                "CID version {v} with codec {codec:#x}"
            )))
        }
    };
    Ok(block_cid(version, codec, data))
}

/// Read one length-prefixed message of at most `limit` bytes; `None` at a clean end of stream.
pub async fn read_frame<R: AsyncRead + Unpin>(
    stream: &mut R,
    limit: usize,
) -> Result<Option<Vec<u8>>, MessageError> {
    let mut len = 0u64;
    for i in 0..10 {
        let mut byte = [0u8; 1];
        if stream.read(&mut byte).await? == 0 {
            return if i == 0 {
                Ok(None)
            } else {
                Err(io::Error::from(io::ErrorKind::UnexpectedEof).into())
            };
        }
        len |= u64::from(byte[0] & 0x7f) << (7 * i);
        if byte[0] & 0x80 == 0 {
            if len > limit as u64 {
                return Err(MessageError::TooLarge {
                    len,
                    limit: limit as u64,
                });
            }
            let mut frame = vec![0u8; len as usize];
            stream.read_exact(&mut frame).await?;
            return Ok(Some(frame));
        }
    }
    Err(MessageError::Malformed("the length prefix is not a varint"))
}

/// Write one message, length-prefixed, and flush it. The prefix goes out with the message's
/// first [`HEAD`] bytes: written alone, it was a muxer frame, a Noise message and a socket
/// write of its own.
pub async fn write_frame<W: AsyncWrite + Unpin>(stream: &mut W, frame: &[u8]) -> io::Result<()> {
    const HEAD: usize = 16 * 1024;
    let (head, rest) = frame.split_at(frame.len().min(HEAD));
    let mut first = Vec::with_capacity(10 + head.len());
    put_varint(&mut first, frame.len() as u64);
    first.extend_from_slice(head);
    stream.write_all(&first).await?;
    stream.write_all(rest).await?;
    stream.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_test_support::noise::noise;
    use cairn_unixfs::block::RAW;

    fn cid(data: &[u8]) -> Cid {
        block_cid(CidVersion::V1, RAW, data)
    }

    #[test]
    fn every_field_round_trips_in_1_2_0() {
        let message = Message {
            wantlist: vec![
                WantEntry {
                    cid: cid(b"a"),
                    priority: 7,
                    cancel: false,
                    want_type: WantType::Have,
                    send_dont_have: true,
                },
                WantEntry {
                    cid: cid(b"b"),
                    priority: -1,
                    cancel: true,
                    want_type: WantType::Block,
                    send_dont_have: false,
                },
            ],
            full_wantlist: true,
            blocks: vec![(cid(b"hello"), b"hello".to_vec())],
            presences: vec![(cid(b"x"), Presence::Have), (cid(b"y"), Presence::DontHave)],
            pending_bytes: 12,
        };
        let back = Message::decode(&message.encode(Version::V120)).unwrap();
        assert_eq!(back, message);
    }

    #[test]
    fn version_1_0_0_sends_bare_blocks_and_no_presences() {
        let data = cairn_unixfs::pb::encode_node(vec![], vec![8, 1]);
        let v0 = block_cid(CidVersion::V0, DAG_PB, &data);
        let message = Message {
            blocks: vec![(v0, data.clone())],
            presences: vec![(v0, Presence::Have)],
            ..Message::default()
        };
        let back = Message::decode(&message.encode(Version::V100)).unwrap();
        assert_eq!(back.blocks, vec![(v0, data)]);
        assert!(back.presences.is_empty());
    }

    #[test]
    fn garbage_and_oversized_cids_are_errors_not_panics() {
        for bytes in [
            &[0x0a, 0xff][..],
            &[0xff; 11][..],
            &[0x0b][..],
            &[0x22, 0x03, 0x0a, 0x01, 0x00][..],
        ] {
            assert!(Message::decode(bytes).is_err(), "{bytes:?}");
        }
        let mut entry = Vec::new();
        put_bytes(&mut entry, 1, &[1u8; 200]);
        let mut wantlist = Vec::new();
        put_bytes(&mut wantlist, 1, &entry);
        let mut message = Vec::new();
        put_bytes(&mut message, 1, &wantlist);
        assert!(Message::decode(&message).is_err());
    }

    #[tokio::test]
    async fn blocks_larger_than_a_frames_head_come_back_whole() {
        let (big, small) = (noise(300 * 1024, 1), noise(200, 2));
        let message = Message {
            blocks: vec![(cid(&big), big.clone()), (cid(&small), small.clone())],
            ..Message::default()
        };
        for version in [Version::V110, Version::V120] {
            let mut framed = Vec::new();
            write_frame(&mut framed, &message.encode(version))
                .await
                .unwrap();
            let frame = read_frame(&mut &framed[..], 1 << 20).await.unwrap();
            let back = Message::decode(&frame.unwrap()).unwrap();
            assert_eq!(back.blocks, message.blocks, "{version:?}");
        }
    }

    #[tokio::test]
    async fn frames_over_the_limit_are_refused_before_they_are_read() {
        let mut framed = Vec::new();
        write_frame(&mut framed, &[7u8; 100]).await.unwrap();
        let mut reader = &framed[..];
        assert_eq!(
            read_frame(&mut reader, 100).await.unwrap(),
            Some(vec![7u8; 100])
        );
        assert!(read_frame(&mut reader, 100).await.unwrap().is_none());
        let mut reader = &framed[..];
        assert!(matches!(
            read_frame(&mut reader, 99).await,
            Err(MessageError::TooLarge { len: 100, .. })
        ));
    }
}
