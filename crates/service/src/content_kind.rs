//! What an upload is, decided from its first bytes (magic numbers), never from its name alone.

pub use cairn_archive::ArchiveFormat;
use cairn_car::{CarLimits, CarReader};

/// Bytes of the upload examined before deciding (tar's magic sits at offset 257).
pub const HEAD_BYTES: usize = 512;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContentKind {
    Car,
    Archive(ArchiveFormat),
    Plain,
}

impl ContentKind {
    /// What an upload starting with `head` (its first [`HEAD_BYTES`], or all of a shorter
    /// one) is.
    pub fn of(head: &[u8]) -> Self {
        if let Some(format) = ArchiveFormat::detect(head) {
            return Self::Archive(format);
        }
        // A CAR starts with a small varint-prefixed DAG-CBOR map naming its roots and version.
        let limits = CarLimits {
            max_header_bytes: HEAD_BYTES as u64,
            ..CarLimits::default()
        };
        if matches!(head.first(), Some(1..=0x7f)) && CarReader::new(head, limits).is_ok() {
            return Self::Car;
        }
        Self::Plain
    }
}

/// The media type: from the content's magic bytes, else the file name, else octet-stream.
pub fn mime_type(head: &[u8], file_name: Option<&str>) -> String {
    if let Some(kind) = infer::get(head) {
        return kind.mime_type().to_owned();
    }
    if ContentKind::of(head) == ContentKind::Car {
        return "application/vnd.ipld.car".to_owned();
    }
    file_name
        .and_then(|n| mime_guess::from_path(n).first_raw())
        .unwrap_or("application/octet-stream")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_apart_by_content() {
        assert_eq!(
            ContentKind::of(b"PK\x03\x04rest"),
            ContentKind::Archive(ArchiveFormat::Zip)
        );
        assert_eq!(
            ContentKind::of(&[0x1f, 0x8b, 8, 0]),
            ContentKind::Archive(ArchiveFormat::Gzip)
        );
        let mut tar = vec![0u8; 512];
        tar[257..262].copy_from_slice(b"ustar");
        assert_eq!(
            ContentKind::of(&tar),
            ContentKind::Archive(ArchiveFormat::Tar)
        );
        let car = cairn_car::header(&[cairn_unixfs::block::block_cid(
            cairn_unixfs::CidVersion::V1,
            cairn_unixfs::block::RAW,
            b"x",
        )]);
        assert_eq!(ContentKind::of(&car), ContentKind::Car);
        assert_eq!(ContentKind::of(b"hello world"), ContentKind::Plain);
        assert_eq!(ContentKind::of(b""), ContentKind::Plain);
    }

    #[test]
    fn mime_type_prefers_content_over_name() {
        assert_eq!(
            mime_type(b"\x89PNG\r\n\x1a\n....", Some("x.txt")),
            "image/png"
        );
        assert_eq!(mime_type(b"plain", Some("notes.txt")), "text/plain");
        assert_eq!(mime_type(b"plain", None), "application/octet-stream");
    }
}
