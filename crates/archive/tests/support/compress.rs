//! A tar in each compression the extractor reads, for the tests that need one.

use std::io::Write;

use cairn_archive::ArchiveFormat;

/// `tar` as `format` (a plain tar as it is).
pub fn compress(format: ArchiveFormat, tar: &[u8]) -> Vec<u8> {
    match format {
        ArchiveFormat::Tar => tar.to_vec(),
        ArchiveFormat::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(tar).unwrap();
            e.finish().unwrap()
        }
        ArchiveFormat::Bzip2 => {
            let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
            e.write_all(tar).unwrap();
            e.finish().unwrap()
        }
        ArchiveFormat::Xz => {
            let mut e = liblzma::write::XzEncoder::new(Vec::new(), 1);
            e.write_all(tar).unwrap();
            e.finish().unwrap()
        }
        ArchiveFormat::Zstd => {
            ruzstd::encoding::compress_to_vec(tar, ruzstd::encoding::CompressionLevel::Fastest)
        }
        other => panic!("not a tar format: {other:?}"),
    }
}
