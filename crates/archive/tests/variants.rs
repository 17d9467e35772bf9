//! The variants of `docs/archive-safety.md` that the per-format safety tests leave out,
//! each in the formats that can carry it: zip and 7z names, links, modes and encodings, the
//! root entry in zip and 7z, compressed tars corrupted mid-stream, nested archives, and empty
//! archives.

mod support;
use support::raw;

use std::io::{Cursor, Write};

use cairn_archive::{ArchiveError, Limits};
use cairn_unixfs::{DirectoryBuilder, Link, MemoryBlocks, Profile};
use raw::{zip, Tar, ZipEntry};
use sevenz_rust2::{ArchiveEntry, ArchiveWriter};
use support::{extract, extract_with, import, refused};

const S_IFREG: u32 = 0o100644;
const S_IFLNK: u32 = 0o120777;

fn tree(build: impl FnOnce(&mut DirectoryBuilder)) -> Link {
    let mut dir = DirectoryBuilder::new(&Profile::default());
    build(&mut dir);
    dir.finish(&mut MemoryBlocks::default()).unwrap()
}

fn empty_directory() -> Link {
    tree(|_| {})
}

/// One 7z entry: name, Unix mode, content (`None` for a directory).
type SevenZItem<'a> = (&'a str, Option<u32>, Option<&'a [u8]>);

fn seven_z(items: &[SevenZItem]) -> Vec<u8> {
    let mut writer = ArchiveWriter::new(Cursor::new(Vec::new())).unwrap();
    for (name, mode, content) in items {
        let mut entry = match content {
            Some(_) => ArchiveEntry::new_file(name),
            None => ArchiveEntry::new_directory(name),
        };
        if let Some(mode) = mode {
            // 7-Zip's Unix extension: the mode in the high half of the attributes.
            entry.has_windows_attributes = true;
            entry.windows_attributes = 0x8000 | (mode << 16);
        }
        writer.push_archive_entry(entry, *content).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

#[test]
fn a1_zip_and_7z_names_that_escape_are_refused() {
    for (name, reason) in [
        (&b"\\evil.txt"[..], "absolute"),
        (b"a\0b.txt", "NUL"),
        (b"/abs/evil.txt", "absolute"),
    ] {
        let name_text = String::from_utf8_lossy(name).into_owned();
        refused(&zip(&[ZipEntry::new(name, b"x")]), &name_text, reason);
    }
    for (name, reason) in [
        ("/etc/passwd", "absolute"),
        ("C:/evil", "drive letter"),
        ("a/../../evil", ".."),
    ] {
        refused(&seven_z(&[(name, None, Some(b"x"))]), name, reason);
    }
}

#[test]
fn the_root_entry_of_a_zip_is_skipped_as_bsdtar_writes_it() {
    let bytes = zip(&[
        ZipEntry::new(b"./", b""),
        ZipEntry::new(b"./index.html", b"hi"),
    ]);
    let expected = tree(|d| d.add_file("index.html", import(b"hi")).unwrap());
    assert_eq!(extract(&bytes).unwrap(), expected);
    refused(&zip(&[ZipEntry::new(b".", b"x")]), ".", "archive root");
}

#[test]
fn a2_zip_and_7z_symlinks_that_leave_the_tree_are_refused() {
    for (target, reason) in [("/etc/passwd", "absolute"), ("sub/", "slash")] {
        let mut link = ZipEntry::new(b"link", target.as_bytes());
        link.unix_mode = Some(S_IFLNK);
        refused(&zip(&[link]), "link", reason);
    }
    refused(
        &seven_z(&[("a/link", Some(S_IFLNK), Some(b"../../x"))]),
        "a/link",
        "outside",
    );
}

#[test]
fn a4_zip_and_7z_devices_fifos_and_sockets_are_refused() {
    for mode in [0o010644, 0o020644, 0o060644, 0o140755] {
        let mut special = ZipEntry::new(b"dev", b"");
        special.unix_mode = Some(mode);
        refused(&zip(&[special]), "dev", "device files");
        refused(
            &seven_z(&[("dev", Some(mode), Some(b""))]),
            "dev",
            "device files",
        );
    }
    // A regular file's mode is just that.
    let mut file = ZipEntry::new(b"f", b"x");
    file.unix_mode = Some(S_IFREG);
    assert_eq!(
        extract(&zip(&[file])).unwrap(),
        tree(|d| d.add_file("f", import(b"x")).unwrap())
    );
}

#[test]
fn a6_a_7z_bomb_is_stopped_by_bytes_produced_and_nested_archives_stay_files() {
    let zeros = vec![0u8; 4 << 20];
    let capped = Limits {
        max_total_bytes: 1 << 20,
        ..Limits::default()
    };
    match extract_with(&seven_z(&[("zeros", None, Some(&zeros))]), &capped) {
        Err(ArchiveError::TooLarge { entry, limit }) => {
            assert_eq!((entry.as_str(), limit), ("zeros", 1 << 20))
        }
        other => panic!("{other:?}"),
    }
    // An archive inside an archive is a file like any other: never expanded.
    let inner = Tar::default().file("inner.txt", b"inside").end();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&inner).unwrap();
    let inner = gz.finish().unwrap();
    let expected = tree(|d| d.add_file("site.tar.gz", import(&inner)).unwrap());
    for outer in [
        Tar::default().file("site.tar.gz", &inner).end(),
        zip(&[ZipEntry::new(b"site.tar.gz", &inner)]),
        seven_z(&[("site.tar.gz", None, Some(&inner))]),
    ] {
        assert_eq!(extract(&outer).unwrap(), expected);
    }
}

#[test]
fn a8_zip_names_the_utf8_flag_or_the_unicode_path_field_vouches_for() {
    const UTF8: u16 = 1 << 11;
    // Flagged as UTF-8 but not: refused, never guessed.
    let mut flagged = ZipEntry::new(b"caf\x82.txt", b"x");
    flagged.flags = UTF8;
    refused(
        &zip(&[flagged]),
        "caf\u{fffd}.txt",
        "flagged as UTF-8 but is not valid UTF-8",
    );
    // Flagged and valid: kept byte for byte.
    let mut valid = ZipEntry::new("café.txt".as_bytes(), b"x");
    valid.flags = UTF8;
    assert_eq!(
        extract(&zip(&[valid])).unwrap(),
        tree(|d| d.add_file("café.txt", import(b"x")).unwrap())
    );
    // The Unicode Path field names the entry when its CRC matches the header's name, even
    // where the header's name uses `\` as old .NET writers did...
    let header = b"docs\\caf\x82.txt";
    let unicode = ZipEntry::new(header, b"x").unicode_path(header, "docs/café.txt");
    assert_eq!(
        extract(&zip(&[unicode])).unwrap(),
        tree(|d| d.add_file("docs/café.txt", import(b"x")).unwrap())
    );
    // ...and is ignored when it does not, so the header's `\` is refused, naming the entry.
    let stale = ZipEntry::new(header, b"x").unicode_path(b"another name", "docs/café.txt");
    refused(&zip(&[stale]), "docs\\café.txt", "\\ as a separator");
}

#[test]
fn a9_an_aes_encrypted_zip_entry_is_refused_as_password_protected() {
    // WinZip AES: method 99 and the AE-x extra field (version 2, "AE", AES-256, deflate),
    // with the encrypted flag set.
    let mut entry = ZipEntry::new(b"secret.txt", b"not really encrypted");
    entry.flags = 1;
    entry.extra = vec![0x01, 0x99, 7, 0, 2, 0, b'A', b'E', 3, 8, 0];
    let mut bytes = zip(&[entry]);
    for at in [
        8,
        bytes.windows(4).position(|w| w == b"PK\x01\x02").unwrap() + 10,
    ] {
        bytes[at..at + 2].copy_from_slice(&99u16.to_le_bytes());
    }
    match extract(&bytes) {
        Err(e) => assert!(e.to_string().contains("password-protected"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a10_compressed_tars_corrupted_mid_stream_are_refused() {
    let tar = Tar::default()
        .file(
            "a.bin",
            &(0..200_000u32)
                .map(|i| (i * 7 % 251) as u8)
                .collect::<Vec<_>>(),
        )
        .end();
    let compressed = [
        {
            let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
            e.write_all(&tar).unwrap();
            e.finish().unwrap()
        },
        {
            let mut e = liblzma::write::XzEncoder::new(Vec::new(), 1);
            e.write_all(&tar).unwrap();
            e.finish().unwrap()
        },
        ruzstd::encoding::compress_to_vec(&tar[..], ruzstd::encoding::CompressionLevel::Fastest),
        {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(&tar).unwrap();
            e.finish().unwrap()
        },
    ];
    for bytes in compressed {
        extract(&bytes).unwrap();
        let mut flipped = bytes.clone();
        let middle = flipped.len() / 2;
        flipped[middle] ^= 0x55;
        let error = extract(&flipped).expect_err("a flipped byte");
        assert!(error.is_invalid_archive(), "{error}");
    }
}

#[test]
fn a11_empty_zips_and_7zs_are_the_empty_directory_and_empty_directories_are_kept() {
    assert_eq!(extract(&zip(&[])).unwrap(), empty_directory());
    assert_eq!(extract(&seven_z(&[])).unwrap(), empty_directory());
    let with_dirs = seven_z(&[("empty", None, None), ("a/b", None, None)]);
    let expected = tree(|d| {
        d.add_directory("empty").unwrap();
        d.add_directory("a/b").unwrap();
    });
    assert_eq!(extract(&with_dirs).unwrap(), expected);
}
