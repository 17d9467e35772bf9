//! Every rule of `docs/archive-safety.md`, on archives these tests build themselves.
//! Headers are written byte by byte where the `tar` crate would refuse a hostile name.

mod support;
use support::compress;

use cairn_archive::{ArchiveError, ArchiveFormat, Limits};
use cairn_unixfs::{DirectoryBuilder, MemoryBlocks, Profile};
use compress::compress;
use support::{extract, extract_with, import, refused};

/// One tar entry: name bytes, type, content (or link target for links).
struct Entry<'a> {
    name: &'a [u8],
    kind: u8,
    body: &'a [u8],
}

fn file<'a>(name: &'a str, body: &'a [u8]) -> Entry<'a> {
    Entry {
        name: name.as_bytes(),
        kind: b'0',
        body,
    }
}
fn dir(name: &str) -> Entry<'_> {
    Entry {
        name: name.as_bytes(),
        kind: b'5',
        body: b"",
    }
}
fn symlink<'a>(name: &'a str, target: &'a str) -> Entry<'a> {
    Entry {
        name: name.as_bytes(),
        kind: b'2',
        body: target.as_bytes(),
    }
}
fn hardlink<'a>(name: &'a str, target: &'a str) -> Entry<'a> {
    Entry {
        name: name.as_bytes(),
        kind: b'1',
        body: target.as_bytes(),
    }
}

/// A ustar archive with the names written raw (no validation), so hostile names survive.
fn tar_of(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        let mut header = ::tar::Header::new_ustar();
        let is_link = matches!(e.kind, b'1' | b'2');
        header.set_size(if is_link { 0 } else { e.body.len() as u64 });
        header.set_mode(0o644);
        header.set_entry_type(::tar::EntryType::new(e.kind));
        let old = header.as_old_mut();
        old.name = [0; 100];
        old.name[..e.name.len()].copy_from_slice(e.name);
        if is_link {
            old.linkname = [0; 100];
            old.linkname[..e.body.len()].copy_from_slice(e.body);
        }
        header.set_cksum();
        out.extend_from_slice(header.as_bytes());
        if !is_link {
            out.extend_from_slice(e.body);
            out.resize(out.len().div_ceil(512) * 512, 0);
        }
    }
    out.resize(out.len() + 1024, 0);
    out
}

const TAR_FORMATS: [ArchiveFormat; 5] = [
    ArchiveFormat::Tar,
    ArchiveFormat::Gzip,
    ArchiveFormat::Bzip2,
    ArchiveFormat::Xz,
    ArchiveFormat::Zstd,
];

#[test]
fn a_tree_extracts_to_the_same_cid_as_building_it_directly_in_every_compression() {
    let tar = tar_of(&[
        dir("site/"),
        file("./site/index.html", b"<h1>hi</h1>"),
        file("site//css/style.css", b"body{}"),
        dir("site/empty/"),
        symlink("site/home", "index.html"),
        symlink("site/css/up", "../index.html"),
        hardlink("site/copy.html", "site/index.html"),
    ]);
    let mut expected = DirectoryBuilder::new(&Profile::default());
    expected.add_directory("site").unwrap();
    expected
        .add_file("site/index.html", import(b"<h1>hi</h1>"))
        .unwrap();
    expected
        .add_file("site/css/style.css", import(b"body{}"))
        .unwrap();
    expected.add_directory("site/empty").unwrap();
    expected.add_symlink("site/home", "index.html").unwrap();
    expected
        .add_symlink("site/css/up", "../index.html")
        .unwrap();
    expected
        .add_file("site/copy.html", import(b"<h1>hi</h1>"))
        .unwrap();
    let expected = expected.finish(&mut MemoryBlocks::default()).unwrap();
    for format in TAR_FORMATS {
        let root = extract(&compress(format, &tar)).unwrap_or_else(|e| panic!("{format:?}: {e}"));
        assert_eq!(root, expected, "{format:?}");
    }
}

#[test]
fn a1_names_that_escape_or_cannot_be_represented_are_refused() {
    for (name, reason) in [
        ("../evil", ".."),
        ("a/../../evil", ".."),
        ("/etc/passwd", "absolute"),
        ("C:/evil", "drive letter"),
        ("./", "archive root"),
    ] {
        refused(&tar_of(&[file(name, b"x")]), name, reason);
    }
}

#[test]
fn a2_symlinks_that_leave_the_tree_are_refused() {
    for target in ["/etc/passwd", "../x", "a/../../x", "sub/"] {
        refused(
            &tar_of(&[symlink("link", target)]),
            "link",
            "symlink target",
        );
    }
    refused(
        &tar_of(&[symlink("a/link", "../../x")]),
        "a/link",
        "outside",
    );
    // Climbing within the tree is fine.
    extract(&tar_of(&[symlink("a/link", "a/../../x")])).unwrap();
}

#[test]
fn a3_hard_links_only_to_earlier_regular_files() {
    refused(
        &tar_of(&[hardlink("l", "later"), file("later", b"x")]),
        "l",
        "not an earlier regular file",
    );
    refused(
        &tar_of(&[file("f", b"x"), hardlink("l", "/etc/passwd")]),
        "l",
        "absolute",
    );
    refused(
        &tar_of(&[dir("d/"), hardlink("l", "d")]),
        "l",
        "not an earlier regular file",
    );
}

#[test]
fn a4_devices_and_fifos_are_refused() {
    for kind in [b'3', b'4', b'6'] {
        let entry = Entry {
            name: b"dev",
            kind,
            body: b"",
        };
        refused(&tar_of(&[entry]), "dev", "device files");
    }
}

#[test]
fn a6_bombs_are_stopped_by_bytes_produced_ratio_and_entry_count() {
    let zeros = vec![0u8; 8 << 20];
    let tar = tar_of(&[file("big", &zeros)]);
    let gz = compress(ArchiveFormat::Gzip, &tar);
    let capped = Limits {
        max_total_bytes: 1 << 20,
        ..Limits::default()
    };
    match extract_with(&gz, &capped) {
        Err(ArchiveError::TooLarge { entry, limit }) => {
            assert_eq!((entry.as_str(), limit), ("big", 1 << 20));
        }
        other => panic!("{other:?}"),
    }
    let ratio = Limits {
        max_ratio: 50,
        ratio_after_bytes: 1 << 20,
        ..Limits::default()
    };
    match extract_with(&gz, &ratio) {
        Err(ArchiveError::Entry { reason, .. }) => assert!(reason.contains("bomb"), "{reason}"),
        other => panic!("{other:?}"),
    }
    // The same archive is fine under the defaults: 8 MiB of zeros is no bomb.
    extract(&gz).unwrap();

    // A million empty entries: refused once the entry limit is passed, without reading on.
    let mut builder = ::tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    for i in 0..1_000_000u32 {
        let mut header = ::tar::Header::new_ustar();
        header.set_size(0);
        header.set_entry_type(::tar::EntryType::Regular);
        header.set_path(format!("{i}")).unwrap();
        header.set_cksum();
        builder.append(&header, &[][..]).unwrap();
    }
    let million = builder.into_inner().unwrap().finish().unwrap();
    match extract(&million) {
        Err(ArchiveError::Entry { reason, .. }) => {
            assert!(reason.contains("more than 100000 entries"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a7_duplicate_paths_are_refused() {
    refused(
        &tar_of(&[file("a", b"1"), file("a", b"2")]),
        "a",
        "appears twice",
    );
    refused(
        &tar_of(&[file("a", b"1"), file("a/b", b"2")]),
        "a/b",
        "both a file and a directory",
    );
    refused(
        &tar_of(&[dir("a/"), file("a", b"2")]),
        "a",
        "both a file and a directory",
    );
}

#[test]
fn a8_names_that_are_not_utf8_are_refused_and_utf8_is_kept_byte_for_byte() {
    let entry = Entry {
        name: b"caf\xe9",
        kind: b'0',
        body: b"x",
    };
    match extract(&tar_of(&[entry])) {
        Err(ArchiveError::Entry { reason, .. }) => assert!(reason.contains("UTF-8")),
        other => panic!("{other:?}"),
    }
    // NFC and NFD spellings of "é" are different names, kept apart.
    let root = extract(&tar_of(&[
        file("caf\u{e9}", b"1"),
        file("cafe\u{301}", b"2"),
    ]))
    .unwrap();
    let mut expected = DirectoryBuilder::new(&Profile::default());
    expected.add_file("caf\u{e9}", import(b"1")).unwrap();
    expected.add_file("cafe\u{301}", import(b"2")).unwrap();
    assert_eq!(root, expected.finish(&mut MemoryBlocks::default()).unwrap());
}

#[test]
fn a10_truncated_or_corrupted_streams_are_refused() {
    let tar = tar_of(&[file("a.txt", &[7u8; 70_000]), file("b.txt", b"tail")]);
    for format in TAR_FORMATS {
        let whole = compress(format, &tar);
        // Cut inside the first entry's content (plain tar has nothing else to catch it).
        let half = &whole[..whole.len() / 2];
        assert!(extract(half).is_err(), "{format:?} cut in half");
        // Cut in the compressed stream's trailer: caught by the decoder's own checks.
        if format != ArchiveFormat::Tar {
            let cut = &whole[..whole.len() - 4];
            assert!(extract(cut).is_err(), "{format:?} cut by 4 bytes");
        }
    }
    let cut = &tar[..700];
    match extract(cut) {
        Err(ArchiveError::Entry { entry, reason }) => {
            assert_eq!(entry, "a.txt");
            assert!(reason.contains("truncated"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // A flipped byte in the gzip CRC trailer.
    let mut gz = compress(ArchiveFormat::Gzip, &tar);
    let crc = gz.len() - 6;
    gz[crc] ^= 0xff;
    assert!(
        matches!(extract(&gz), Err(ArchiveError::Archive(_))),
        "{:?}",
        extract(&gz)
    );
    // A flipped byte in a tar header breaks its checksum.
    let mut bad = tar.clone();
    bad[10] ^= 1;
    assert!(extract(&bad).is_err());
}

#[test]
fn a11_empty_archives_and_empty_directories_are_kept() {
    let empty = extract(&tar_of(&[])).unwrap();
    assert_eq!(
        empty.cid.to_string(),
        "bafybeiczsscdsbs7ffqz55asqdf3smv6klcw3gofszvwlyarci47bgf354"
    );
    let with_dir = extract(&tar_of(&[dir("only/")])).unwrap();
    assert_ne!(with_dir, empty);
}
