//! The zip-specific rules of `docs/archive-safety.md`, on zips written by the test
//! (patched byte by byte where a writer would refuse to produce the hostile form).

use std::io::{Cursor, Write};

mod support;

use cairn_archive::{ArchiveError, ArchiveFormat, Limits};
use cairn_unixfs::{DirectoryBuilder, MemoryBlocks, Profile};
use support::{extract, extract_with, import, refused};
use zip::write::SimpleFileOptions;
use zip::CompressionMethod;

enum Item<'a> {
    File(&'a str, &'a [u8]),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
}

fn zip_of(items: &[Item], method: CompressionMethod) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(method);
    for item in items {
        match item {
            Item::File(name, body) => {
                writer.start_file(*name, options).unwrap();
                writer.write_all(body).unwrap();
            }
            Item::Dir(name) => writer.add_directory(*name, options).unwrap(),
            Item::Symlink(name, target) => writer.add_symlink(*name, *target, options).unwrap(),
        }
    }
    writer.finish().unwrap().into_inner()
}

fn stored(items: &[Item]) -> Vec<u8> {
    zip_of(items, CompressionMethod::Stored)
}

/// Replace every occurrence of `from` (in local and central headers) with `to`.
fn patch(bytes: &mut [u8], from: &[u8], to: &[u8]) {
    assert_eq!(from.len(), to.len());
    let mut found = 0;
    for i in 0..=bytes.len() - from.len() {
        if &bytes[i..i + from.len()] == from {
            bytes[i..i + from.len()].copy_from_slice(to);
            found += 1;
        }
    }
    assert!(found >= 2, "expected the name in both headers");
}

#[test]
fn a_zip_tree_extracts_to_the_same_cid_as_building_it_directly() {
    let items = [
        Item::Dir("site/"),
        Item::File("site/index.html", b"<h1>hi</h1>"),
        Item::File("site/css/a.css", b"p{}"),
        Item::Dir("site/empty/"),
        Item::Symlink("site/home", "index.html"),
    ];
    let mut expected = DirectoryBuilder::new(&Profile::default());
    expected.add_directory("site").unwrap();
    expected
        .add_file("site/index.html", import(b"<h1>hi</h1>"))
        .unwrap();
    expected.add_file("site/css/a.css", import(b"p{}")).unwrap();
    expected.add_directory("site/empty").unwrap();
    expected.add_symlink("site/home", "index.html").unwrap();
    let expected = expected.finish(&mut MemoryBlocks::default()).unwrap();
    for method in [CompressionMethod::Stored, CompressionMethod::Deflated] {
        let bytes = zip_of(&items, method);
        assert_eq!(ArchiveFormat::detect(&bytes), Some(ArchiveFormat::Zip));
        assert_eq!(extract(&bytes).unwrap(), expected, "{method:?}");
    }
}

#[test]
fn zip_slip_in_each_form_is_refused() {
    for (name, reason) in [
        ("../evil.txt", ".."),
        ("a/../../evil.txt", ".."),
        ("/etc/passwd", "absolute"),
        ("C:/evil.txt", "drive letter"),
        ("a\\b.txt", "\\"),
        ("..\\evil.txt", "\\"),
    ] {
        refused(&stored(&[Item::File(name, b"x")]), name, reason);
    }
    refused(
        &stored(&[Item::Symlink("link", "../../etc/passwd")]),
        "link",
        "outside",
    );
}

#[test]
fn a9_encrypted_entries_are_refused_as_password_protected() {
    let mut bytes = stored(&[Item::File("secret.txt", b"hidden")]);
    // Set general-purpose bit 0 (encrypted) in the local and the central header.
    bytes[6] |= 1;
    let central = bytes.windows(4).position(|w| w == b"PK\x01\x02").unwrap();
    bytes[central + 8] |= 1;
    refused(&bytes, "secret.txt", "password-protected");
}

#[test]
fn a6_overlapping_entries_are_refused() {
    let mut bytes = stored(&[Item::File("a.txt", b"aaaa"), Item::File("b.txt", b"bbbb")]);
    // Point the second central entry at the first entry's local header.
    let centrals: Vec<usize> = bytes
        .windows(4)
        .enumerate()
        .filter(|(_, w)| *w == b"PK\x01\x02")
        .map(|(i, _)| i)
        .collect();
    let first_offset = bytes[centrals[0] + 42..centrals[0] + 46].to_vec();
    bytes[centrals[1] + 42..centrals[1] + 46].copy_from_slice(&first_offset);
    match extract(&bytes) {
        Err(ArchiveError::Entry { reason, .. }) => assert!(reason.contains("overlaps"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a6_a_zip_bomb_is_stopped_by_bytes_produced() {
    let zeros = vec![0u8; 8 << 20];
    let bytes = zip_of(&[Item::File("zeros", &zeros)], CompressionMethod::Deflated);
    let capped = Limits {
        max_total_bytes: 1 << 20,
        ..Limits::default()
    };
    match extract_with(&bytes, &capped) {
        Err(ArchiveError::TooLarge { entry, limit }) => {
            assert_eq!((entry.as_str(), limit), ("zeros", 1 << 20));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a7_duplicate_names_are_refused() {
    // Writers refuse duplicates, so the second name is renamed in its headers.
    let mut bytes = stored(&[Item::File("a.txt", b"1"), Item::File("b.txt", b"2")]);
    patch(&mut bytes, b"b.txt", b"a.txt");
    let error = extract(&bytes).unwrap_err().to_string();
    assert!(error.contains("duplicate"), "{error}");
    assert!(extract(&bytes).unwrap_err().is_invalid_archive());
}

#[test]
fn a8_names_without_utf8_are_decoded_as_cp437() {
    let mut bytes = stored(&[Item::File("caf_.txt", b"x")]);
    patch(&mut bytes, b"caf_.txt", b"caf\x82.txt");
    let root = extract(&bytes).unwrap();
    let mut expected = DirectoryBuilder::new(&Profile::default());
    expected.add_file("café.txt", import(b"x")).unwrap();
    assert_eq!(root, expected.finish(&mut MemoryBlocks::default()).unwrap());
}

#[test]
fn a10_a_corrupted_entry_fails_its_crc_and_a_cut_zip_is_refused() {
    let mut bytes = stored(&[Item::File("data.bin", b"0123456789abcdef")]);
    let at = bytes
        .windows(16)
        .position(|w| w == b"0123456789abcdef")
        .unwrap();
    bytes[at] ^= 1;
    assert!(extract(&bytes).is_err(), "{:?}", extract(&bytes));
    let whole = stored(&[Item::File("data.bin", b"0123456789abcdef")]);
    assert!(extract(&whole[..whole.len() - 10]).is_err());
}

/// A zip cut short (its end record lost in transfer) is refused in words its sender can act
/// on, both where it is recognised and where it is extracted: not the parser's "Could not find
/// EOCD".
#[test]
fn a_zip_cut_short_is_refused_saying_its_index_is_missing() {
    let whole = stored(&[
        Item::File("a.txt", b"some text"),
        Item::File("b.txt", b"more"),
    ]);
    let cut = &whole[..whole.len() - 30];

    let extracted = extract(cut).expect_err("a zip without its end record");
    let message = extracted.to_string();
    assert!(
        message.contains("end-of-central-directory record") && message.contains("cut short"),
        "{message}"
    );
    assert!(!message.contains("EOCD"), "{message}");

    let recognised = cairn_archive::recognise::recognise(ArchiveFormat::Zip, Cursor::new(cut));
    let said = format!("{:?}", recognised.unwrap());
    assert!(
        said.contains("cut short") && !said.contains("EOCD"),
        "{said}"
    );
}
