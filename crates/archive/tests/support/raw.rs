//! Archives written byte by byte, so a test can say anything an old or hostile writer might:
//! any name bytes, type flag, pax or GNU header, sparse map, zip flag, mode or extra field.

use tar::{GnuExtSparseHeader, Header};

/// A tar stream, member by member.
#[derive(Default)]
pub struct Tar(Vec<u8>);

impl Tar {
    /// A ustar member of type `kind`: `name` and `link` raw (each at most 100 bytes), then
    /// `data`.
    pub fn member(self, kind: u8, name: &[u8], link: &[u8], data: &[u8]) -> Self {
        self.with_header(Header::new_ustar(), kind, name, link, data)
    }

    pub fn file(self, name: &str, data: &[u8]) -> Self {
        self.member(b'0', name.as_bytes(), b"", data)
    }

    pub fn dir(self, name: &str) -> Self {
        self.member(b'5', name.as_bytes(), b"", b"")
    }

    /// A member with no magic, as v7 tar wrote them.
    pub fn v7(self, kind: u8, name: &[u8], data: &[u8]) -> Self {
        self.with_header(Header::new_old(), kind, name, b"", data)
    }

    /// A pax header (`x` for the next member, `g` for all that follow) of `records`.
    pub fn pax(self, kind: u8, records: &[(&str, &[u8])]) -> Self {
        let mut data = Vec::new();
        for (keyword, value) in records {
            let rest = keyword.len() + value.len() + 3; // " ", "=", "\n"
            let mut len = rest + 1;
            while len != rest + len.to_string().len() {
                len = rest + len.to_string().len();
            }
            data.extend_from_slice(format!("{len} {keyword}=").as_bytes());
            data.extend_from_slice(value);
            data.push(b'\n');
        }
        self.member(kind, b"./PaxHeaders/x", b"", &data)
    }

    /// A GNU long name (`L`) or long link target (`K`) for the next member.
    pub fn gnu_long(self, kind: u8, value: &[u8]) -> Self {
        let mut data = value.to_vec();
        data.push(0);
        self.with_header(Header::new_gnu(), kind, b"././@LongLink", b"", &data)
    }

    /// An old GNU sparse member (`S`): `segments` (offset, length) of a file of `real_size`
    /// bytes, their data stored back to back; past four segments the map continues in
    /// extension blocks.
    pub fn gnu_sparse(
        mut self,
        name: &str,
        real_size: u64,
        segments: &[(u64, u64)],
        data: &[u8],
    ) -> Self {
        let mut header = Header::new_gnu();
        let (first, rest) = segments.split_at(segments.len().min(4));
        let gnu = header.as_gnu_mut().unwrap();
        for (slot, (offset, len)) in gnu.sparse.iter_mut().zip(first) {
            slot.set_offset(*offset);
            slot.set_length(*len);
        }
        gnu.set_real_size(real_size);
        gnu.set_is_extended(!rest.is_empty());
        self = self.header_only(header, b'S', name.as_bytes(), b"", data.len() as u64);
        let chunks: Vec<&[(u64, u64)]> = rest.chunks(21).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            let mut ext = GnuExtSparseHeader::new();
            for (slot, (offset, len)) in ext.sparse_mut().iter_mut().zip(*chunk) {
                slot.set_offset(*offset);
                slot.set_length(*len);
            }
            ext.set_is_extended(i + 1 < chunks.len());
            self.0.extend_from_slice(ext.as_bytes());
        }
        self.data(data)
    }

    /// The archive with its end-of-archive blocks.
    pub fn end(mut self) -> Vec<u8> {
        self.0.resize(self.0.len() + 1024, 0);
        self.0
    }

    /// The archive as a writer cut off at a member boundary leaves it.
    pub fn unterminated(self) -> Vec<u8> {
        self.0
    }

    /// A ustar header whose size field says `size`, whatever data follows.
    pub fn header(self, kind: u8, name: &[u8], size: u64) -> Self {
        self.header_only(Header::new_ustar(), kind, name, b"", size)
    }

    /// Data after a header, padded to its block.
    pub fn data(mut self, data: &[u8]) -> Self {
        self.0.extend_from_slice(data);
        self.0.resize(self.0.len().div_ceil(512) * 512, 0);
        self
    }

    fn with_header(self, header: Header, kind: u8, name: &[u8], link: &[u8], data: &[u8]) -> Self {
        self.header_only(header, kind, name, link, data.len() as u64)
            .data(data)
    }

    fn header_only(
        mut self,
        mut header: Header,
        kind: u8,
        name: &[u8],
        link: &[u8],
        size: u64,
    ) -> Self {
        header.set_size(size);
        header.set_mode(0o644);
        let old = header.as_old_mut();
        // Written raw: the `tar` crate would write `0` for a v7 `\0`.
        old.linkflag = [kind];
        old.name = [0; 100];
        old.name[..name.len()].copy_from_slice(name);
        old.linkname = [0; 100];
        old.linkname[..link.len()].copy_from_slice(link);
        header.set_cksum();
        self.0.extend_from_slice(header.as_bytes());
        self
    }
}

/// One stored zip entry, every field the test's to choose.
pub struct ZipEntry<'a> {
    pub name: &'a [u8],
    pub data: &'a [u8],
    pub flags: u16,
    /// Unix mode, kept in the high half of the external attributes (made on Unix).
    pub unix_mode: Option<u32>,
    pub extra: Vec<u8>,
}

impl<'a> ZipEntry<'a> {
    pub fn new(name: &'a [u8], data: &'a [u8]) -> Self {
        Self {
            name,
            data,
            flags: 0,
            unix_mode: None,
            extra: Vec::new(),
        }
    }

    /// Info-ZIP's Unicode Path extra field (0x7075): `name` for a header name of
    /// `header_name` (the field is used only when its CRC matches the header's name).
    pub fn unicode_path(mut self, header_name: &[u8], name: &str) -> Self {
        let mut field = vec![1];
        field.extend_from_slice(&crc32(header_name).to_le_bytes());
        field.extend_from_slice(name.as_bytes());
        self.extra.extend_from_slice(&0x7075u16.to_le_bytes());
        self.extra
            .extend_from_slice(&(field.len() as u16).to_le_bytes());
        self.extra.extend_from_slice(&field);
        self
    }
}

/// A zip of stored entries, with local headers, a central directory and its end record.
pub fn zip(entries: &[ZipEntry]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for entry in entries {
        let offset = out.len() as u32;
        let crc = crc32(entry.data);
        let size = entry.data.len() as u32;
        let common = |sig: &[u8], out: &mut Vec<u8>, central: bool| {
            out.extend_from_slice(sig);
            if central {
                // Made by: Unix (3), version 3.0; or MS-DOS when there is no mode.
                let system = if entry.unix_mode.is_some() { 3u8 } else { 0 };
                out.extend_from_slice(&[30, system]);
            }
            out.extend_from_slice(&20u16.to_le_bytes());
            out.extend_from_slice(&entry.flags.to_le_bytes());
            out.extend_from_slice(&0u16.to_le_bytes()); // stored
            out.extend_from_slice(&[0, 0, 0x21, 0]); // time, date
            out.extend_from_slice(&crc.to_le_bytes());
            out.extend_from_slice(&size.to_le_bytes());
            out.extend_from_slice(&size.to_le_bytes());
            out.extend_from_slice(&(entry.name.len() as u16).to_le_bytes());
            out.extend_from_slice(&(entry.extra.len() as u16).to_le_bytes());
        };
        common(b"PK\x03\x04", &mut out, false);
        out.extend_from_slice(entry.name);
        out.extend_from_slice(&entry.extra);
        out.extend_from_slice(entry.data);
        common(b"PK\x01\x02", &mut central, true);
        central.extend_from_slice(&[0; 6]); // comment length, disk, internal attributes
        let external = entry.unix_mode.map_or(0, |m| m << 16);
        central.extend_from_slice(&external.to_le_bytes());
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(entry.name);
        central.extend_from_slice(&entry.extra);
    }
    let central_offset = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(b"PK\x05\x06");
    out.extend_from_slice(&[0; 4]);
    let count = entries.len() as u16;
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&central_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = flate2::Crc::new();
    crc.update(bytes);
    crc.sum()
}
