//! Whether bytes that begin like an archive are one, decided before any entry is extracted
//! (`docs/contract.md`, "What counts as an archive").
//!
//! Magic numbers only say how a stream begins: one random file in 65,536 begins like gzip, and
//! every Word document, e-book and Java archive is a zip. So a format found in the head is
//! confirmed here, reading no more than it needs: a tar's first header; a compressed stream's
//! first block, which must hold a tar; a 7z's start header and its length; a zip's central
//! directory, where a document or package declares itself by an entry its format requires.

use std::io::{self, Read, Seek, SeekFrom};

use crate::tar::checksum_ok;
use crate::ArchiveFormat;

/// What a compressed stream may take of its input to yield a tar's first header: bzip2 emits
/// nothing before a whole block (up to 900 kB, a little more compressed) is decoded.
const MAX_COMPRESSED_HEAD: u64 = 4 << 20;
/// A tar with no entries is zero blocks: up to a record of them (what GNU tar writes).
const EMPTY_TAR_MAX: usize = 10_240;
const BLOCK: usize = 512;
/// Longest `mimetype` entry read (ODF and EPUB name their media type in it).
const MAX_MIMETYPE_ENTRY: u64 = 256;

/// What bytes that begin like an archive of some format turned out to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recognised {
    /// A complete archive of this format: extract it.
    Archive(ArchiveFormat),
    /// A zip that declares itself a document or package: one file.
    Document(Document),
    /// A sound stream of this compression that holds no tar (`dump.sql.gz`): one file.
    Compressed(ArchiveFormat),
    /// Bytes that only begin like the format; the reason, for a client that said they are.
    NotArchive(String),
}

/// A document or package built on zip, as its content declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    /// What it is, as a sentence names it ("an Office Open XML document").
    pub what: &'static str,
    /// Its media type, where the content names or implies one.
    pub media_type: Option<String>,
}

/// Confirm the `format` that `input`'s head suggested, from the start of `input`. An error is
/// a failure to read `input` itself; whatever is wrong with its bytes is a [`Recognised`].
pub fn recognise(format: ArchiveFormat, mut input: impl Read + Seek) -> io::Result<Recognised> {
    input.seek(SeekFrom::Start(0))?;
    match format {
        ArchiveFormat::Zip => Ok(zip_contents(input)),
        ArchiveFormat::SevenZ => seven_z_complete(input),
        ArchiveFormat::Tar => Ok(match begins_with_tar(input)? {
            true => Recognised::Archive(format),
            false => Recognised::NotArchive("its first tar header fails its checksum".into()),
        }),
        compressed => {
            let mut failed = None;
            let watched = Watched {
                inner: (&mut input).take(MAX_COMPRESSED_HEAD),
                failed: &mut failed,
            };
            let begins = compressed.decoder(watched).and_then(begins_with_tar);
            Ok(match (begins, failed) {
                (Ok(true), _) => Recognised::Archive(format),
                (Ok(false), _) => Recognised::Compressed(format),
                (Err(_), Some(underlying)) => return Err(underlying),
                (Err(e), None) => {
                    Recognised::NotArchive(format!("not a valid {} stream: {e}", compressed.name()))
                }
            })
        }
    }
}

/// A tar begins with a header whose checksum holds, or is empty (zero blocks, then the end);
/// a stream cut or corrupt after its first block still begins like one (a broken archive,
/// refused when it is extracted).
fn begins_with_tar(stream: impl Read) -> io::Result<bool> {
    let mut head = Vec::with_capacity(EMPTY_TAR_MAX + 1);
    let read = stream.take(EMPTY_TAR_MAX as u64 + 1).read_to_end(&mut head);
    if let Err(e) = read {
        if head.len() < BLOCK {
            return Err(e);
        }
    }
    let first: Option<&[u8; BLOCK]> = head.get(..BLOCK).and_then(|b| b.try_into().ok());
    let empty = head.len() >= 2 * BLOCK && head.len() <= EMPTY_TAR_MAX;
    Ok(first.is_some_and(checksum_ok) || (empty && head.iter().all(|b| *b == 0)))
}

/// Keeps the error of the reader under a decoder, which the decoder's own errors are not.
struct Watched<'a, R> {
    inner: R,
    failed: &'a mut Option<io::Error>,
}

impl<R: Read> Read for Watched<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).inspect_err(|e| {
            *self.failed = Some(io::Error::new(e.kind(), e.to_string()));
        })
    }
}

/// A 7z archive's start header is checked by its CRC, and names where the archive's header
/// lies: a file that ends before it is cut short.
fn seven_z_complete(mut input: impl Read + Seek) -> io::Result<Recognised> {
    let mut start = [0u8; 32];
    match input.read_exact(&mut start) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            return Ok(Recognised::NotArchive(
                "shorter than a 7z start header".into(),
            ))
        }
        Err(e) => return Err(e),
    }
    let recorded = u32::from_le_bytes([start[8], start[9], start[10], start[11]]);
    if crc32fast::hash(&start[12..32]) != recorded {
        return Ok(Recognised::NotArchive(
            "the 7z start header fails its CRC".into(),
        ));
    }
    let number = |at: usize| u64::from_le_bytes(start[at..at + 8].try_into().unwrap_or([0; 8]));
    let (offset, size) = (number(12), number(20));
    let len = input.seek(SeekFrom::End(0))?;
    let needed = offset.checked_add(size).and_then(|n| n.checked_add(32));
    if needed.is_none_or(|needed| needed > len) {
        return Ok(Recognised::NotArchive(format!(
            "the 7z archive is cut short: its header lies past its {len} bytes"
        )));
    }
    Ok(Recognised::Archive(ArchiveFormat::SevenZ))
}

/// A zip whose central directory reads is an archive, unless an entry its format requires
/// says it is a document or package.
fn zip_contents(input: impl Read + Seek) -> Recognised {
    let mut archive = match zip::ZipArchive::new(input) {
        Ok(archive) => archive,
        Err(e) => {
            let why = crate::zip::unreadable(&e);
            return Recognised::NotArchive(format!("not a readable zip archive: {why}"));
        }
    };
    let names: Vec<String> = (archive.file_names_raw())
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .collect();
    match declared_document(&names) {
        Some(mut document) => {
            if document.media_type.is_none() && names.iter().any(|n| n == "mimetype") {
                document.media_type = mimetype_entry(&mut archive);
            }
            Recognised::Document(document)
        }
        None => Recognised::Archive(ArchiveFormat::Zip),
    }
}

/// The document a zip's entry names declare, by the entries each format requires.
fn declared_document(names: &[String]) -> Option<Document> {
    let has = |wanted: &str| names.iter().any(|n| n.eq_ignore_ascii_case(wanted));
    let has_prefix = |prefix: &str| names.iter().any(|n| n.starts_with(prefix));
    let document = |what, media_type: Option<&str>| {
        Some(Document {
            what,
            media_type: media_type.map(str::to_owned),
        })
    };
    // ODF and EPUB: a `mimetype` entry naming the media type (the first entry, stored).
    if has("mimetype") {
        let what = if has("META-INF/container.xml") {
            "an EPUB e-book"
        } else {
            "an OpenDocument file"
        };
        return document(what, None);
    }
    // OOXML (and the OPC packages built like it: NuGet, VSIX, 3MF, XPS).
    if has("[Content_Types].xml") {
        let media_type = if has_prefix("word/") {
            Some("application/vnd.openxmlformats-officedocument.wordprocessingml.document")
        } else if has_prefix("xl/") {
            Some("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
        } else if has_prefix("ppt/") {
            Some("application/vnd.openxmlformats-officedocument.presentationml.presentation")
        } else {
            None
        };
        return document("an Office Open XML document or package", media_type);
    }
    if has("AndroidManifest.xml") || has("base/manifest/AndroidManifest.xml") {
        return document(
            "an Android package",
            Some("application/vnd.android.package-archive"),
        );
    }
    // JAR and what is built on it (WAR, EAR, signed XPIs); a wheel's metadata directory.
    if has("META-INF/MANIFEST.MF") {
        return document("a Java archive", Some("application/java-archive"));
    }
    let wheel = names.iter().any(|n| {
        n.split_once('/')
            .is_some_and(|(top, rest)| top.ends_with(".dist-info") && rest == "WHEEL")
    });
    if wheel {
        return document("a Python wheel", None);
    }
    None
}

/// The media type an ODF or EPUB `mimetype` entry holds, if it holds one.
fn mimetype_entry<R: Read + Seek>(archive: &mut zip::ZipArchive<R>) -> Option<String> {
    let entry = archive.by_name("mimetype").ok()?;
    let mut text = String::new();
    entry
        .take(MAX_MIMETYPE_ENTRY)
        .read_to_string(&mut text)
        .ok()?;
    let text = text.trim();
    let well_formed = text.split_once('/').is_some_and(|(kind, sub)| {
        let token = |s: &str| {
            !s.is_empty() && (s.bytes()).all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        };
        token(kind) && token(sub)
    });
    well_formed.then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use std::io::{Cursor, Write};

    use super::*;

    fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, bytes) in entries {
            out.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            out.write_all(bytes).unwrap();
        }
        out.finish().unwrap().into_inner()
    }

    fn recognised(format: ArchiveFormat, bytes: &[u8]) -> Recognised {
        recognise(format, Cursor::new(bytes)).unwrap()
    }

    fn tar_of(name: &str, content: &[u8]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_ustar();
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, name, content).unwrap();
        builder.into_inner().unwrap()
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut out = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        out.write_all(bytes).unwrap();
        out.finish().unwrap()
    }

    #[test]
    fn a_zip_of_files_is_an_archive_and_a_declared_document_is_not() {
        let site = zip_of(&[("index.html", b"<h1>hi</h1>"), ("a/b.css", b"p{}")]);
        assert_eq!(
            recognised(ArchiveFormat::Zip, &site),
            Recognised::Archive(ArchiveFormat::Zip)
        );
        let odt = zip_of(&[
            ("mimetype", b"application/vnd.oasis.opendocument.text"),
            ("content.xml", b"<x/>"),
        ]);
        assert_eq!(
            recognised(ArchiveFormat::Zip, &odt),
            Recognised::Document(Document {
                what: "an OpenDocument file",
                media_type: Some("application/vnd.oasis.opendocument.text".into()),
            })
        );
        let docx = zip_of(&[
            ("[Content_Types].xml", b"<Types/>"),
            ("word/document.xml", b""),
        ]);
        let Recognised::Document(document) = recognised(ArchiveFormat::Zip, &docx) else {
            panic!("a docx is a document");
        };
        assert!(document
            .media_type
            .unwrap()
            .ends_with("wordprocessingml.document"));
        for declares in [
            "META-INF/MANIFEST.MF",
            "AndroidManifest.xml",
            "demo-1.0.dist-info/WHEEL",
        ] {
            let zip = zip_of(&[(declares, b"x"), ("other", b"y")]);
            assert!(
                matches!(
                    recognised(ArchiveFormat::Zip, &zip),
                    Recognised::Document(_)
                ),
                "{declares}"
            );
        }
    }

    #[test]
    fn bytes_that_only_begin_like_an_archive_are_not_one() {
        let mut lookalike = b"PK\x03\x04".to_vec();
        lookalike.extend((0..4000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8));
        assert!(matches!(
            recognised(ArchiveFormat::Zip, &lookalike),
            Recognised::NotArchive(_)
        ));
        lookalike[..2].copy_from_slice(&[0x1f, 0x8b]);
        assert!(matches!(
            recognised(ArchiveFormat::Gzip, &lookalike),
            Recognised::NotArchive(_)
        ));
        let mut seven = b"7z\xbc\xaf\x27\x1c".to_vec();
        seven.extend_from_slice(&[0; 40]);
        assert!(matches!(
            recognised(ArchiveFormat::SevenZ, &seven),
            Recognised::NotArchive(_)
        ));
    }

    #[test]
    fn a_compressed_stream_is_an_archive_only_when_it_holds_a_tar() {
        let tar = tar_of("hello.txt", b"hello");
        assert_eq!(
            recognised(ArchiveFormat::Gzip, &gzip(&tar)),
            Recognised::Archive(ArchiveFormat::Gzip)
        );
        let dump = b"INSERT INTO t VALUES (1);\n".repeat(1000);
        assert_eq!(
            recognised(ArchiveFormat::Gzip, &gzip(&dump)),
            Recognised::Compressed(ArchiveFormat::Gzip)
        );
        // `tar -czf x.tgz -T /dev/null`: an empty archive is still one.
        assert_eq!(
            recognised(ArchiveFormat::Gzip, &gzip(&[0; 10_240])),
            Recognised::Archive(ArchiveFormat::Gzip)
        );
        // A disk image that begins with zeros is not an empty archive.
        let mut image = vec![0u8; 40_000];
        image[30_000] = 1;
        assert_eq!(
            recognised(ArchiveFormat::Gzip, &gzip(&image)),
            Recognised::Compressed(ArchiveFormat::Gzip)
        );
        let cut = gzip(&tar);
        assert!(matches!(
            recognised(ArchiveFormat::Gzip, &cut[..12]),
            Recognised::NotArchive(_)
        ));
    }

    #[test]
    fn a_tar_is_known_by_its_first_header() {
        let tar = tar_of("a.txt", b"a");
        assert_eq!(
            recognised(ArchiveFormat::Tar, &tar),
            Recognised::Archive(ArchiveFormat::Tar)
        );
        let mut forged = vec![7u8; 1024];
        forged[257..262].copy_from_slice(b"ustar");
        assert!(matches!(
            recognised(ArchiveFormat::Tar, &forged),
            Recognised::NotArchive(_)
        ));
    }
}
