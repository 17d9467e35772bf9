//! 7z under the archive-safety rules, on archives the test writes with `sevenz-rust2`.

mod support;

use std::io::Cursor;

use cairn_archive::{ArchiveError, ArchiveFormat};
use cairn_unixfs::{DirectoryBuilder, MemoryBlocks, Profile};
use sevenz_rust2::encoder_options::AesEncoderOptions;
use sevenz_rust2::{ArchiveEntry, ArchiveWriter, EncoderMethod};
use support::{extract, import, refused};

enum Item<'a> {
    File(&'a str, &'a [u8]),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
}

fn seven_z(items: &[Item], password: Option<&str>) -> Vec<u8> {
    let mut writer = ArchiveWriter::new(Cursor::new(Vec::new())).unwrap();
    if let Some(password) = password {
        writer.set_content_methods(vec![
            AesEncoderOptions::new(password.into()).into(),
            EncoderMethod::LZMA2.into(),
        ]);
    }
    for item in items {
        match item {
            Item::File(name, body) => {
                writer
                    .push_archive_entry(ArchiveEntry::new_file(name), Some(*body))
                    .unwrap();
            }
            Item::Dir(name) => {
                writer
                    .push_archive_entry::<&[u8]>(ArchiveEntry::new_directory(name), None)
                    .unwrap();
            }
            Item::Symlink(name, target) => {
                let mut entry = ArchiveEntry::new_file(name);
                // 7-Zip's Unix extension: the mode in the high half of the attributes.
                entry.has_windows_attributes = true;
                entry.windows_attributes = 0x8000 | (0o120777 << 16);
                writer
                    .push_archive_entry(entry, Some(target.as_bytes()))
                    .unwrap();
            }
        }
    }
    writer.finish().unwrap().into_inner()
}

#[test]
fn a_7z_tree_extracts_to_the_same_cid_as_building_it_directly() {
    let bytes = seven_z(
        &[
            Item::Dir("site"),
            Item::File("site/index.html", b"<h1>hi</h1>"),
            Item::File("site/css/a.css", b"p{}"),
            Item::File("site/empty.txt", b""),
            Item::Symlink("site/home", "index.html"),
        ],
        None,
    );
    assert_eq!(ArchiveFormat::detect(&bytes), Some(ArchiveFormat::SevenZ));
    let mut expected = DirectoryBuilder::new(&Profile::default());
    expected.add_directory("site").unwrap();
    expected
        .add_file("site/index.html", import(b"<h1>hi</h1>"))
        .unwrap();
    expected.add_file("site/css/a.css", import(b"p{}")).unwrap();
    expected.add_file("site/empty.txt", import(b"")).unwrap();
    expected.add_symlink("site/home", "index.html").unwrap();
    let expected = expected.finish(&mut MemoryBlocks::default()).unwrap();
    assert_eq!(extract(&bytes).unwrap(), expected);
}

#[test]
fn names_and_links_that_escape_are_refused() {
    refused(
        &seven_z(&[Item::File("../evil", b"x")], None),
        "../evil",
        "..",
    );
    refused(
        &seven_z(&[Item::Symlink("l", "/etc/passwd")], None),
        "l",
        "absolute",
    );
}

#[test]
fn a9_an_encrypted_7z_is_refused_as_password_protected() {
    let bytes = seven_z(&[Item::File("secret.txt", b"hidden")], Some("hunter2"));
    match extract(&bytes) {
        Err(ArchiveError::Archive(message)) => {
            assert!(message.contains("password-protected"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a7_duplicates_and_a10_corruption_are_refused() {
    refused(
        &seven_z(&[Item::File("a", b"1"), Item::File("a", b"2")], None),
        "a",
        "appears twice",
    );
    let whole = seven_z(&[Item::File("data.bin", &[5u8; 10_000])], None);
    assert!(extract(&whole[..whole.len() / 2]).is_err());
    let mut flipped = whole.clone();
    flipped[40] ^= 0xff;
    assert!(extract(&flipped).is_err());
}
