//! The few CBOR items Cairn writes by hand, each of one fixed shape: the CAR header here, the
//! IPNI announce and IPNS records' data (`cairn-p2p`), a long identity CID's CAR (the gateway). Item heads in their shortest form, as DAG-CBOR requires.

use cairn_unixfs::Cid;

pub const MAJOR_UINT: u8 = 0;
pub const MAJOR_BYTES: u8 = 2;
pub const MAJOR_TEXT: u8 = 3;
pub const MAJOR_ARRAY: u8 = 4;
pub const MAJOR_MAP: u8 = 5;
pub const MAJOR_TAG: u8 = 6;
/// The tag of a CID (DAG-CBOR, and the announce's cbor-gen tuple alike).
pub const CID_TAG: u64 = 42;

/// An item's head: its major type and its value (a length, a count, a tag or an integer).
pub fn head(out: &mut Vec<u8>, major: u8, value: u64) {
    let major = major << 5;
    match value {
        0..=23 => out.push(major | value as u8),
        24..=0xff => out.extend_from_slice(&[major | 24, value as u8]),
        0x100..=0xffff => {
            out.push(major | 25);
            out.extend_from_slice(&(value as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(major | 26);
            out.extend_from_slice(&(value as u32).to_be_bytes());
        }
        _ => {
            out.push(major | 27);
            out.extend_from_slice(&value.to_be_bytes());
        }
    }
}

/// A byte string.
pub fn bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    head(out, MAJOR_BYTES, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A text string.
pub fn text(out: &mut Vec<u8>, text: &str) {
    head(out, MAJOR_TEXT, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
}

/// A CID: tag 42 over its binary form behind the identity multibase prefix 0x00.
pub fn cid(out: &mut Vec<u8>, cid: &Cid) {
    cid_bytes(out, &cid.to_bytes());
}

/// A CID given as its binary form (one the `Cid` type cannot hold: a long identity CID).
pub fn cid_bytes(out: &mut Vec<u8>, binary: &[u8]) {
    head(out, MAJOR_TAG, CID_TAG);
    head(out, MAJOR_BYTES, binary.len() as u64 + 1);
    out.push(0);
    out.extend_from_slice(binary);
}
