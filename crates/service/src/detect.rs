//! What an upload is: a CAR, an archive to extract, or one file (`docs/contract.md`, "What
//! counts as an archive"). Decided here for every way in (POST, TUS, upload links, the CLI,
//! which sends through them), before any byte is extracted.
//!
//! An upload is unpacked only when it is an archive in both senses: its bytes are a complete
//! archive of a supported format ([`cairn_archive::recognise`]), and nothing says it is
//! something else: neither its name (a `.docx`, a `.jar`) nor its content (a zip that declares
//! itself a document). Bytes that only begin like an archive are a file, unless the name says
//! archive: then they are refused, as the client said they were one. A name that says archive
//! is also the one way to unpack a document (`report.zip`): the uploader's word wins.
//!
//! Detection is in two steps so that a POST streams what it can: [`Detection::first_look`]
//! decides from the head and the name alone, which settles everything but bytes that begin like
//! an archive; those [`Detection::decide`] settles from the whole upload, reading no more of it
//! than the format needs.

use std::io::{self, Read, Seek};

use cairn_archive::recognise::{recognise, Recognised};
pub use cairn_archive::ArchiveFormat;
use cairn_car::{CarLimits, CarReader};
use cairn_store::model::{ArchiveMode, Content, StoredAs};

/// Bytes of the upload examined by the first look: a tar's header is 512, and the media type
/// of an Office document shows in its first entries.
pub const HEAD_BYTES: usize = 8 << 10;

/// Extensions of the formats built on zip that are documents or packages, not archives to
/// unpack: Office Open XML and OPC packages, OpenDocument, e-books, Java, Android and Apple
/// packages, browser and editor extensions, Python and .NET packages, and the zip-based
/// formats `file(1)`, Apache Tika and `infer` list.
const DOCUMENT_EXTENSIONS: &[&str] = &[
    // Office Open XML (ECMA-376), with macro-enabled and template variants.
    "docx",
    "docm",
    "dotx",
    "dotm",
    "xlsx",
    "xlsm",
    "xltx",
    "xltm",
    "xlsb",
    "xlam",
    "pptx",
    "pptm",
    "potx",
    "potm",
    "ppsx",
    "ppsm",
    "ppam",
    "sldx",
    "sldm",
    "vsdx",
    "vsdm",
    "thmx",
    // OpenDocument (ISO/IEC 26300) and its templates.
    "odt",
    "ods",
    "odp",
    "odg",
    "odf",
    "odc",
    "odb",
    "odm",
    "ott",
    "ots",
    "otp",
    "otg",
    "oxt",
    // E-books, comics, XPS.
    "epub",
    "cbz",
    "xps",
    "oxps",
    // Java, Android, Apple, Windows and browser packages.
    "jar",
    "war",
    "ear",
    "aar",
    "apk",
    "apks",
    "aab",
    "xapk",
    "ipa",
    "appx",
    "appxbundle",
    "msix",
    "msixbundle",
    "xpi",
    "crx",
    // Language and editor packages.
    "whl",
    "egg",
    "nupkg",
    "snupkg",
    "vsix",
    // Zip-based formats of other applications.
    "kmz",
    "3mf",
    "sketch",
    "usdz",
    "ora",
    "kra",
    "idml",
    "pages",
    "numbers",
    "key",
    "xmind",
    "sb3",
    "mxl",
    "gdz",
];

/// Endings that name an archive: a file so named that is not one is refused.
const ARCHIVE_ENDINGS: &[&str] = &[
    ".zip", ".tar", ".tgz", ".tar.gz", ".tbz", ".tbz2", ".tar.bz2", ".txz", ".tar.xz", ".tzst",
    ".tar.zst", ".7z",
];

/// What an upload is stored as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContentKind {
    /// One UnixFS file of its bytes, untouched.
    File,
    /// The directory its entries make.
    Archive(ArchiveFormat),
    /// Its blocks, as they are.
    Car,
}

impl ContentKind {
    /// As records and metrics name it.
    pub fn name(self) -> &'static str {
        match self {
            Self::File => "file",
            Self::Archive(_) => "archive",
            Self::Car => "car",
        }
    }
}

/// What a file name says an upload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameSays {
    Archive,
    /// A document or package built on zip (`report.docx`, `app.jar`).
    Document,
    Nothing,
}

impl NameSays {
    pub fn of(name: Option<&str>) -> Self {
        let Some(name) = name.map(str::to_ascii_lowercase) else {
            return Self::Nothing;
        };
        if ARCHIVE_ENDINGS.iter().any(|ending| name.ends_with(ending)) {
            return Self::Archive;
        }
        let extension = name.rsplit_once('.').map(|(_, extension)| extension);
        if extension.is_some_and(|e| DOCUMENT_EXTENSIONS.contains(&e)) {
            return Self::Document;
        }
        Self::Nothing
    }
}

/// How an upload is to be detected: its file name, and how it asked archives to be stored.
#[derive(Clone, Debug)]
pub struct Detection {
    name: Option<String>,
    says: NameSays,
    mode: ArchiveMode,
    /// `archive_mode=extract` was sent outright: the upload promises an archive.
    outright: bool,
}

/// The first look's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FirstLook {
    Is(ContentKind),
    /// Begins like an archive of this format: [`Detection::decide`] settles it.
    MayBeArchive(ArchiveFormat),
}

/// What an upload was found to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Detected {
    pub kind: ContentKind,
    /// Its media type, as the bytes bear it out (see [`media_type`]).
    pub media_type: String,
}

impl Detected {
    /// As the upload's record keeps it.
    pub fn content(&self) -> Content {
        let (stored_as, archive_format) = match self.kind {
            ContentKind::File => (StoredAs::File, None),
            ContentKind::Archive(format) => (StoredAs::Archive, Some(format.archive_name())),
            ContentKind::Car => (StoredAs::Car, None),
        };
        Content {
            stored_as,
            archive_format: archive_format.map(str::to_owned),
            media_type: self.media_type.clone(),
        }
    }
}

/// Why an upload is refused before anything is stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Named as an archive, and not one (`invalid_archive`).
    InvalidArchive(String),
    /// `archive_mode=extract` was asked for what is not an archive (`bad_request`).
    NotAnArchive(String),
}

impl Detection {
    /// `outright` says `archive_mode` was sent rather than defaulted.
    pub fn new(name: Option<&str>, mode: ArchiveMode, outright: bool) -> Self {
        Self {
            name: name.map(str::to_owned),
            says: NameSays::of(name),
            mode,
            outright: outright && mode == ArchiveMode::Extract,
        }
    }

    /// From the head (the first [`HEAD_BYTES`], or all of a shorter upload) and the name.
    pub fn first_look(&self, head: &[u8]) -> Result<FirstLook, Refused> {
        // A CAR is known by its content whatever it is called or asked.
        if is_car(head) {
            return Ok(FirstLook::Is(ContentKind::Car));
        }
        if self.mode == ArchiveMode::Preserve {
            return Ok(FirstLook::Is(ContentKind::File));
        }
        if self.says == NameSays::Document {
            if self.outright {
                return Err(Refused::NotAnArchive(format!(
                    "archive_mode=extract was asked for, but {} is named as a document or \
                     package, which is stored as one file; to unpack it, name it .zip",
                    self.display_name()
                )));
            }
            return Ok(FirstLook::Is(ContentKind::File));
        }
        if let Some(format) = ArchiveFormat::detect(head) {
            return Ok(FirstLook::MayBeArchive(format));
        }
        self.not_an_archive("its bytes begin like none of the archive formats supported")
            .map(FirstLook::Is)
    }

    /// Settle an upload that begins like `format`, from the whole of it.
    pub fn decide(
        &self,
        format: ArchiveFormat,
        head: &[u8],
        upload: impl Read + Seek,
    ) -> io::Result<Result<Detected, Refused>> {
        let detected = match recognise(format, upload)? {
            Recognised::Archive(format) => self.detected(ContentKind::Archive(format), head),
            // A name that says archive is the uploader's word over what the content declares.
            Recognised::Document(_) if self.says == NameSays::Archive => {
                self.detected(ContentKind::Archive(format), head)
            }
            Recognised::Document(document) if self.outright => {
                return Ok(Err(Refused::NotAnArchive(format!(
                    "archive_mode=extract was asked for, but {} is {}, which is stored as one \
                     file; to unpack it anyway, name it .zip",
                    self.display_name(),
                    document.what
                ))))
            }
            Recognised::Document(document) => Detected {
                kind: ContentKind::File,
                media_type: (document.media_type)
                    .unwrap_or_else(|| media_type(head, self.name.as_deref())),
            },
            Recognised::Compressed(format) => {
                let reason = format!("a {} stream that holds no tar archive", format.name());
                match self.not_an_archive(&reason) {
                    Ok(kind) => self.detected(kind, head),
                    Err(refused) => return Ok(Err(refused)),
                }
            }
            // Its magic numbers say a format it is not: they name no type of it.
            Recognised::NotArchive(reason) => match self.not_an_archive(&reason) {
                Ok(kind) => Detected {
                    kind,
                    media_type: "application/octet-stream".to_owned(),
                },
                Err(refused) => return Ok(Err(refused)),
            },
        };
        Ok(Ok(detected))
    }

    /// First look and decision at once, for an upload whose bytes are all at hand.
    pub fn detect(
        &self,
        head: &[u8],
        upload: impl Read + Seek,
    ) -> io::Result<Result<Detected, Refused>> {
        match self.first_look(head) {
            Ok(FirstLook::Is(kind)) => Ok(Ok(self.detected(kind, head))),
            Ok(FirstLook::MayBeArchive(format)) => self.decide(format, head, upload),
            Err(refused) => Ok(Err(refused)),
        }
    }

    /// What the upload is once its bytes were found to be no archive.
    fn not_an_archive(&self, reason: &str) -> Result<ContentKind, Refused> {
        if self.says == NameSays::Archive {
            return Err(Refused::InvalidArchive(format!(
                "{} is named as an archive, but it is not one: {reason}",
                self.display_name()
            )));
        }
        if self.outright {
            return Err(Refused::NotAnArchive(format!(
                "archive_mode=extract was asked for, but the file is not a recognised archive \
                 (zip, 7z, tar, tar.gz, tar.bz2, tar.xz or tar.zst): {reason}"
            )));
        }
        Ok(ContentKind::File)
    }

    pub fn detected(&self, kind: ContentKind, head: &[u8]) -> Detected {
        Detected {
            kind,
            media_type: match kind {
                ContentKind::Car => "application/vnd.ipld.car".to_owned(),
                _ => media_type(head, self.name.as_deref()),
            },
        }
    }

    fn display_name(&self) -> String {
        match &self.name {
            Some(name) => format!("{name:?}"),
            None => "the file".to_owned(),
        }
    }
}

/// A CAR starts with a small varint-prefixed DAG-CBOR map naming its roots and version.
fn is_car(head: &[u8]) -> bool {
    let limits = CarLimits {
        max_header_bytes: HEAD_BYTES as u64,
        ..CarLimits::default()
    };
    matches!(head.first(), Some(1..=0x7f)) && CarReader::new(head, limits).is_ok()
}

/// The media type the bytes bear out: what their magic numbers say (a zip-based document's
/// own, by its name, rather than `application/zip`); else what the name says, unless the name
/// says a type whose magic numbers the bytes lack (a text file named `.png`); else
/// `text/plain` for UTF-8 text, else `application/octet-stream`. An upload link's `mimeTypes`
/// are held against this, never against a label the client chose.
pub fn media_type(head: &[u8], name: Option<&str>) -> String {
    let by_name = name.and_then(|n| mime_guess::from_path(n).first_raw());
    if let Some(kind) = infer::get(head) {
        let zip_document = NameSays::of(name) == NameSays::Document;
        return match by_name {
            Some(named) if zip_document && kind.mime_type() == "application/zip" => named,
            _ => kind.mime_type(),
        }
        .to_owned();
    }
    if let Some(named) = by_name.filter(|named| !infer::is_mime_supported(named)) {
        return named.to_owned();
    }
    let text = match std::str::from_utf8(head) {
        Ok(text) => !text.contains('\0'),
        // A character cut by the end of the head is still text.
        Err(e) => e.error_len().is_none() && !head[..e.valid_up_to()].contains(&0),
    };
    if text && !head.is_empty() {
        return "text/plain".to_owned();
    }
    "application/octet-stream".to_owned()
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    fn default_mode(name: Option<&str>) -> Detection {
        Detection::new(name, ArchiveMode::Extract, false)
    }

    fn look(name: Option<&str>, head: &[u8]) -> Result<FirstLook, Refused> {
        default_mode(name).first_look(head)
    }

    #[test]
    fn names_say_archive_document_or_nothing() {
        for (name, says) in [
            ("site.zip", NameSays::Archive),
            ("Backup.TAR.GZ", NameSays::Archive),
            ("x.tgz", NameSays::Archive),
            ("photos.7z", NameSays::Archive),
            ("report.docx", NameSays::Document),
            ("Book.EPUB", NameSays::Document),
            ("app.jar", NameSays::Document),
            ("pkg-1.0-py3-none-any.whl", NameSays::Document),
            ("dump.sql.gz", NameSays::Nothing),
            ("file", NameSays::Nothing),
            ("notes.txt", NameSays::Nothing),
        ] {
            assert_eq!(NameSays::of(Some(name)), says, "{name}");
        }
        assert_eq!(NameSays::of(None), NameSays::Nothing);
    }

    #[test]
    fn the_first_look_settles_all_but_what_begins_like_an_archive() {
        let zip_head = b"PK\x03\x04rest";
        assert_eq!(
            look(Some("site.zip"), zip_head),
            Ok(FirstLook::MayBeArchive(ArchiveFormat::Zip))
        );
        assert_eq!(
            look(Some("report.docx"), zip_head),
            Ok(FirstLook::Is(ContentKind::File))
        );
        assert_eq!(
            look(Some("notes.txt"), b"hello"),
            Ok(FirstLook::Is(ContentKind::File))
        );
        assert!(matches!(
            look(Some("site.zip"), b"hello"),
            Err(Refused::InvalidArchive(_))
        ));
        let preserve = Detection::new(Some("site.zip"), ArchiveMode::Preserve, true);
        assert_eq!(
            preserve.first_look(zip_head),
            Ok(FirstLook::Is(ContentKind::File))
        );
        let outright = Detection::new(Some("report.docx"), ArchiveMode::Extract, true);
        assert!(matches!(
            outright.first_look(zip_head),
            Err(Refused::NotAnArchive(_))
        ));
        let outright = Detection::new(None, ArchiveMode::Extract, true);
        assert!(matches!(
            outright.first_look(b"plain words"),
            Err(Refused::NotAnArchive(_))
        ));
        let car = cairn_car::header(&[cairn_unixfs::block::block_cid(
            cairn_unixfs::CidVersion::V1,
            cairn_unixfs::block::RAW,
            b"x",
        )]);
        assert_eq!(
            look(Some("report.docx"), &car),
            Ok(FirstLook::Is(ContentKind::Car))
        );
        assert_eq!(look(None, b""), Ok(FirstLook::Is(ContentKind::File)));
    }

    #[test]
    fn a_lookalike_is_a_file_unless_its_name_says_archive() {
        let mut lookalike = vec![0x1f, 0x8b];
        lookalike.extend((0..3000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8));
        let detect = |name| {
            default_mode(name)
                .detect(&lookalike, Cursor::new(&lookalike))
                .unwrap()
        };
        assert_eq!(detect(Some("blob.bin")).unwrap().kind, ContentKind::File);
        assert_eq!(detect(None).unwrap().kind, ContentKind::File);
        let Err(Refused::InvalidArchive(message)) = detect(Some("backup.tar.gz")) else {
            panic!("a .tar.gz that is no gzip is refused");
        };
        assert!(
            message.contains("\"backup.tar.gz\" is named as an archive"),
            "{message}"
        );
    }

    #[test]
    fn media_types_come_from_the_bytes() {
        assert_eq!(
            media_type(b"\x89PNG\r\n\x1a\n....", Some("x.txt")),
            "image/png"
        );
        assert_eq!(media_type(b"plain", Some("notes.txt")), "text/plain");
        assert_eq!(media_type(b"a,b\n1,2\n", Some("data.csv")), "text/csv");
        // A name that says a type with magic numbers the bytes lack is not believed.
        assert_eq!(media_type(b"just text", Some("photo.png")), "text/plain");
        assert_eq!(
            media_type(&[0, 1, 2, 0xff], Some("photo.png")),
            "application/octet-stream"
        );
        assert_eq!(media_type(b"plain", None), "text/plain");
        assert_eq!(media_type(b"", None), "application/octet-stream");
        assert_eq!(
            media_type(b"PK\x03\x04....", Some("report.docx")),
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
        );
        assert_eq!(
            media_type(b"PK\x03\x04....", Some("site.zip")),
            "application/zip"
        );
    }
}
