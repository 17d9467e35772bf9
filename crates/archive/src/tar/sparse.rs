//! Sparse tar entries (A5): the map of where a file's data lies, read from any of GNU tar's
//! encodings, and a reader that expands the stored data to the whole file, holes as zeros.
//!
//! - old GNU (`S` entries): the map is in the header and the extension blocks after it;
//! - pax 0.0 and 0.1: the map is in the pax header (`GNU.sparse.offset`/`numbytes` pairs, or
//!   `GNU.sparse.map`);
//! - pax 1.0 (`GNUSparseFile.N/` names, what `tar --sparse --format=posix` writes): the map is
//!   decimal lines at the start of the entry's data, padded to a 512-byte block.
//!
//! Every map is checked before any byte is produced: segments in order, not overlapping, inside
//! the real size, and adding up to exactly the bytes the archive stores. Maps are bounded
//! ([`MAX_SEGMENTS`]); the expanded bytes are counted by the [`Extractor`](crate::Extractor)
//! as they are produced, like any other content.

use std::io::{self, Read};

use tar::GnuSparseHeader;

/// Most segments a map may have (16 bytes each in memory).
pub const MAX_SEGMENTS: usize = 100_000;

/// Bytes `len` of the file at `offset` are stored in the archive; the rest is holes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub offset: u64,
    pub len: u64,
}

/// A checked sparse map.
#[derive(Debug, PartialEq, Eq)]
pub struct SparseMap {
    segments: Vec<Segment>,
    real_size: u64,
}

impl SparseMap {
    /// Check `segments` against the file's `real_size` and the `stored` bytes that follow in
    /// the archive.
    pub fn new(segments: Vec<Segment>, real_size: u64, stored: u64) -> Result<Self, String> {
        if segments.len() > MAX_SEGMENTS {
            return Err(format!(
                "the sparse map has more than {MAX_SEGMENTS} segments"
            ));
        }
        let mut end = 0u64;
        let mut data = 0u64;
        for segment in &segments {
            if segment.offset < end {
                return Err("the sparse map's segments overlap or are out of order".into());
            }
            end = segment
                .offset
                .checked_add(segment.len)
                .filter(|e| *e <= real_size)
                .ok_or("a sparse segment ends past the file's size")?;
            data += segment.len;
        }
        if data != stored {
            return Err(format!(
                "the sparse map describes {data} bytes of data but the entry stores {stored}"
            ));
        }
        Ok(Self {
            segments,
            real_size,
        })
    }

    pub fn real_size(&self) -> u64 {
        self.real_size
    }
}

/// Add the used slots of an old GNU sparse header (or extension block) to `segments`.
pub fn push_gnu_slots(
    slots: &[GnuSparseHeader],
    segments: &mut Vec<Segment>,
) -> Result<(), String> {
    for slot in slots.iter().filter(|s| !s.is_empty()) {
        if segments.len() == MAX_SEGMENTS {
            return Err(format!(
                "the sparse map has more than {MAX_SEGMENTS} segments"
            ));
        }
        let field = |r: io::Result<u64>| r.map_err(|e| format!("a sparse map field: {e}"));
        segments.push(Segment {
            offset: field(slot.offset())?,
            len: field(slot.length())?,
        });
    }
    Ok(())
}

/// The map of a pax 0.1 header: `GNU.sparse.map=offset,len,offset,len,...`.
pub fn parse_pax_0_1(map: &[u8]) -> Result<Vec<Segment>, String> {
    if map.is_empty() {
        return Ok(Vec::new());
    }
    let numbers = map
        .split(|&b| b == b',')
        .map(parse_decimal)
        .collect::<Result<Vec<u64>, String>>()?;
    pairs(&numbers)
}

/// Pair up `offset, len, offset, len, ...`.
pub fn pairs(numbers: &[u64]) -> Result<Vec<Segment>, String> {
    if !numbers.len().is_multiple_of(2) {
        return Err("the sparse map has an offset without a length".into());
    }
    if numbers.len() / 2 > MAX_SEGMENTS {
        return Err(format!(
            "the sparse map has more than {MAX_SEGMENTS} segments"
        ));
    }
    Ok(numbers
        .chunks_exact(2)
        .map(|p| Segment {
            offset: p[0],
            len: p[1],
        })
        .collect())
}

/// The map at the start of a pax 1.0 entry's data: a count, then an offset and a length per
/// segment, each a decimal line, the whole padded with zeros to a 512-byte block. `data` is
/// left at the first byte after the map.
pub fn read_pax_1_0(data: &mut impl Read) -> io::Result<Vec<Segment>> {
    let invalid = |message: String| io::Error::new(io::ErrorKind::InvalidData, message);
    let mut block = [0u8; 512];
    let mut numbers: Vec<u64> = Vec::new();
    let mut wanted = None;
    let mut digits = String::new();
    while wanted != Some(numbers.len()) {
        data.read_exact(&mut block).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => invalid("the sparse map is cut short".into()),
            _ => e,
        })?;
        for &byte in &block {
            match byte {
                b'0'..=b'9' if digits.len() < 20 => digits.push(byte as char),
                b'\n' if !digits.is_empty() => {
                    let number = parse_decimal(digits.as_bytes()).map_err(invalid)?;
                    digits.clear();
                    match wanted {
                        None => {
                            let count = usize::try_from(number)
                                .ok()
                                .filter(|c| *c <= MAX_SEGMENTS)
                                .ok_or_else(|| {
                                    invalid(format!(
                                        "the sparse map has more than {MAX_SEGMENTS} segments"
                                    ))
                                })?;
                            wanted = Some(2 * count);
                        }
                        Some(_) => numbers.push(number),
                    }
                    if wanted == Some(numbers.len()) {
                        // The rest of the block is padding.
                        break;
                    }
                }
                _ => return Err(invalid("the sparse map is malformed".into())),
            }
        }
    }
    pairs(&numbers).map_err(invalid)
}

fn parse_decimal(digits: &[u8]) -> Result<u64, String> {
    std::str::from_utf8(digits)
        .ok()
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|d| d.parse().ok())
        .ok_or_else(|| "a sparse map number is malformed".to_owned())
}

/// Expands a sparse entry's stored data (`inner`) to the whole file.
pub struct SparseReader<R> {
    inner: R,
    map: SparseMap,
    position: u64,
    next: usize,
}

impl<R> SparseReader<R> {
    pub fn new(inner: R, map: SparseMap) -> Self {
        Self {
            inner,
            map,
            position: 0,
            next: 0,
        }
    }
}

impl<R: Read> Read for SparseReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let cap = |n: u64| buf.len().min(usize::try_from(n).unwrap_or(usize::MAX));
        loop {
            if self.position >= self.map.real_size || buf.is_empty() {
                return Ok(0);
            }
            let hole_end = match self.map.segments.get(self.next) {
                Some(s) if self.position >= s.offset + s.len => {
                    self.next += 1;
                    continue;
                }
                Some(s) if self.position >= s.offset => {
                    let n = cap(s.offset + s.len - self.position);
                    // A cut archive ends the file here; the caller sees it short (A10).
                    let n = self.inner.read(&mut buf[..n])?;
                    self.position += n as u64;
                    return Ok(n);
                }
                Some(s) => s.offset,
                None => self.map.real_size,
            };
            let n = cap(hole_end - self.position);
            buf[..n].fill(0);
            self.position += n as u64;
            return Ok(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(offset: u64, len: u64) -> Segment {
        Segment { offset, len }
    }

    fn expand(stored: &[u8], segments: Vec<Segment>, real_size: u64) -> Vec<u8> {
        let map = SparseMap::new(segments, real_size, stored.len() as u64).unwrap();
        let mut out = Vec::new();
        SparseReader::new(stored, map)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn holes_become_zeros_around_and_between_the_data() {
        let out = expand(b"abcd", vec![seg(2, 1), seg(5, 3), seg(10, 0)], 10);
        assert_eq!(out, b"\0\0a\0\0bcd\0\0");
        assert_eq!(expand(b"", vec![], 4), b"\0\0\0\0");
        assert_eq!(expand(b"xy", vec![seg(0, 2)], 2), b"xy");
    }

    #[test]
    fn maps_that_lie_are_refused() {
        for (segments, real, stored, reason) in [
            (vec![seg(4, 2), seg(0, 2)], 10, 4, "overlap"),
            (vec![seg(0, 4), seg(2, 2)], 10, 6, "overlap"),
            (vec![seg(8, 4)], 10, 4, "past the file's size"),
            (vec![seg(u64::MAX, 2)], u64::MAX, 2, "past the file's size"),
            (vec![seg(0, 2)], 10, 4, "describes 2 bytes"),
        ] {
            let error = SparseMap::new(segments, real, stored).unwrap_err();
            assert!(error.contains(reason), "{error}");
        }
        let many = vec![seg(0, 0); MAX_SEGMENTS + 1];
        assert!(SparseMap::new(many, 1, 0)
            .unwrap_err()
            .contains("more than"));
    }

    #[test]
    fn a_cut_data_area_ends_the_file_early() {
        let map = SparseMap::new(vec![seg(0, 4)], 8, 4).unwrap();
        let mut out = Vec::new();
        SparseReader::new(&b"ab"[..], map)
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, b"ab");
    }

    #[test]
    fn the_pax_1_0_map_is_read_from_whole_blocks() {
        let mut data = b"2\n2998272\n4096\n5242880\n0\n".to_vec();
        data.resize(512, 0);
        data.extend_from_slice(b"rest");
        let mut reader = &data[..];
        let segments = read_pax_1_0(&mut reader).unwrap();
        assert_eq!(segments, [seg(2998272, 4096), seg(5242880, 0)]);
        assert_eq!(reader, b"rest");

        // A map longer than one block continues in the next.
        let mut long = format!("{}\n", 60).into_bytes();
        for i in 0..60u64 {
            long.extend_from_slice(format!("{}\n{}\n", i * 1000, 10).as_bytes());
        }
        long.resize(long.len().div_ceil(512) * 512, 0);
        assert!(long.len() > 512);
        let mut reader = &long[..];
        assert_eq!(read_pax_1_0(&mut reader).unwrap().len(), 60);
        assert!(reader.is_empty());

        for (bad, reason) in [
            (&b"1\n0\n"[..], "cut short"),
            (b"x\n", "malformed"),
            (b"99999999999\n", "more than"),
            (b"1\n123456789012345678901\n1\n", "malformed"),
        ] {
            let mut block = bad.to_vec();
            if bad != b"1\n0\n" {
                block.resize(512, 0);
            }
            let error = read_pax_1_0(&mut &block[..]).unwrap_err().to_string();
            assert!(error.contains(reason), "{bad:?}: {error}");
        }
    }

    #[test]
    fn the_pax_0_1_map_is_pairs() {
        assert_eq!(
            parse_pax_0_1(b"0,10,20,5").unwrap(),
            [seg(0, 10), seg(20, 5)]
        );
        assert!(parse_pax_0_1(b"0,10,20").is_err());
        assert!(parse_pax_0_1(b"0,-1").is_err());
    }
}
