//! The protobuf wire format, as much of it as Cairn reads and writes by hand (Bitswap
//! messages, IPNS records): fields are read in any order and unknown ones skipped.

use cairn_unixfs::pb::varint_len;

/// What was wrong with the bytes, for the caller's error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Malformed(pub(crate) &'static str);

pub(crate) enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Other,
}

pub(crate) fn next_field<'a>(bytes: &mut &'a [u8]) -> Result<Option<(u64, Value<'a>)>, Malformed> {
    if bytes.is_empty() {
        return Ok(None);
    }
    let key = take_varint(bytes).ok_or(Malformed("a field key"))?;
    let value = match key & 7 {
        0 => Value::Varint(take_varint(bytes).ok_or(Malformed("a varint"))?),
        1 => {
            take(bytes, 8)?;
            Value::Other
        }
        2 => {
            let len = take_varint(bytes).ok_or(Malformed("a length"))?;
            Value::Bytes(take(bytes, len)?)
        }
        5 => {
            take(bytes, 4)?;
            Value::Other
        }
        _ => return Err(Malformed("an unknown wire type")),
    };
    Ok(Some((key >> 3, value)))
}

pub(crate) fn take<'a>(bytes: &mut &'a [u8], len: u64) -> Result<&'a [u8], Malformed> {
    let len = usize::try_from(len).map_err(|_| Malformed("a length"))?;
    if bytes.len() < len {
        return Err(Malformed("a field runs past the end"));
    }
    let (head, tail) = bytes.split_at(len);
    *bytes = tail;
    Ok(head)
}

pub(crate) fn take_varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (i, &byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            *bytes = &bytes[i + 1..];
            return Some(value);
        }
    }
    None
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

pub(crate) fn put_varint_field(out: &mut Vec<u8>, field: u64, value: u64) {
    put_varint(out, field << 3);
    put_varint(out, value);
}

pub(crate) fn put_bytes(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    put_bytes_header(out, field, bytes.len());
    out.extend_from_slice(bytes);
}

/// The key and length of a bytes field whose `len` bytes the caller writes next (a nested
/// message written in place rather than built apart and copied).
pub(crate) fn put_bytes_header(out: &mut Vec<u8>, field: u64, len: usize) {
    put_varint(out, (field << 3) | 2);
    put_varint(out, len as u64);
}

/// The encoded size of a bytes field of `len` bytes.
pub(crate) fn bytes_field_len(field: u64, len: usize) -> usize {
    (varint_len((field << 3) | 2) + varint_len(len as u64)) as usize + len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bytes_fields_size_is_what_writing_it_takes() {
        for len in [0, 1, 127, 128, 16_383, 16_384, 300 * 1024, 1 << 21] {
            for field in [1, 3, 15, 16] {
                let mut out = Vec::new();
                put_bytes(&mut out, field, &vec![0; len]);
                assert_eq!(
                    bytes_field_len(field, len),
                    out.len(),
                    "field {field}, {len} bytes"
                );
            }
        }
    }
}
