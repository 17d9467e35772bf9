//! The tar extensions real archivers write (pax `x` and `g` headers, GNU long names and link
//! targets, sparse files in GNU's four encodings, v7 headers without magic, `./` root entries)
//! are read as their writers mean them, and each one's hostile forms are refused under
//! `docs/archive-safety.md`. Archives are written byte by byte (`support/raw.rs`).

mod support;
use support::raw;

use cairn_archive::{ArchiveError, ArchiveFormat, Limits};
use cairn_unixfs::{DirectoryBuilder, Link, MemoryBlocks, Profile};
use raw::Tar;
use support::{extract, extract_with, import, refused};

/// The directory `build` makes, as the archive's tree should be.
fn tree(build: impl FnOnce(&mut DirectoryBuilder)) -> Link {
    let mut dir = DirectoryBuilder::new(&Profile::default());
    build(&mut dir);
    dir.finish(&mut MemoryBlocks::default()).unwrap()
}

fn refused_with(bytes: &[u8], limits: &Limits, entry: &str, reason: &str) {
    match extract_with(bytes, limits) {
        Err(ArchiveError::Entry {
            entry: e,
            reason: r,
        }) => {
            assert_eq!(e, entry, "{r}");
            assert!(r.contains(reason), "{entry}: {r}");
        }
        other => panic!("{entry}: expected a refusal, got {other:?}"),
    }
}

const LONG: &str = "a-name-longer-than-the-hundred-bytes-of-a-tar-header-name-field-which-is-\
                    why-pax-and-gnu-tar-have-extensions.html";

#[test]
fn pax_headers_are_applied_and_never_entries() {
    let bytes = Tar::default()
        // What git archive writes first.
        .pax(
            b'g',
            &[("comment", b"4b825dc642cb6eb9a060e54bf8d69288fbee4904")],
        )
        .pax(b'x', &[("path", LONG.as_bytes()), ("mtime", b"1.5")])
        .file("truncated-name", b"long")
        .pax(b'x', &[("linkpath", format!("../{LONG}").as_bytes())])
        .member(b'2', b"dir/link", b"ignored", b"")
        // A size record overrides the header's field (how files over 8 GiB are written).
        .pax(b'x', &[("size", b"5")])
        .header(b'0', b"sized", 0)
        .data(b"12345")
        .end();
    let expected = tree(|d| {
        d.add_file(LONG, import(b"long")).unwrap();
        d.add_symlink("dir/link", &format!("../{LONG}")).unwrap();
        d.add_file("sized", import(b"12345")).unwrap();
    });
    assert_eq!(extract(&bytes).unwrap(), expected);
}

#[test]
fn global_headers_apply_to_every_following_entry_until_removed() {
    let bytes = Tar::default()
        .pax(b'g', &[("linkpath", b"target")])
        .member(b'2', b"one", b"", b"")
        .member(b'2', b"two", b"", b"")
        .pax(b'g', &[("linkpath", b"")])
        .member(b'2', b"three", b"own", b"")
        .file("target", b"t")
        .end();
    let expected = tree(|d| {
        d.add_symlink("one", "target").unwrap();
        d.add_symlink("two", "target").unwrap();
        d.add_symlink("three", "own").unwrap();
        d.add_file("target", import(b"t")).unwrap();
    });
    assert_eq!(extract(&bytes).unwrap(), expected);
}

#[test]
fn gnu_long_names_and_link_targets_are_applied() {
    let bytes = Tar::default()
        .gnu_long(b'L', format!("pages/{LONG}").as_bytes())
        .file("pages/truncated", b"long")
        .gnu_long(b'L', b"pages/a-link-with-a-long-name-too")
        .gnu_long(b'K', LONG.as_bytes())
        .member(b'2', b"x", b"x", b"")
        .gnu_long(b'K', format!("pages/{LONG}").as_bytes())
        .member(b'1', b"copy", b"x", b"")
        .end();
    let expected = tree(|d| {
        d.add_file(&format!("pages/{LONG}"), import(b"long"))
            .unwrap();
        d.add_symlink("pages/a-link-with-a-long-name-too", LONG)
            .unwrap();
        d.add_file("copy", import(b"long")).unwrap();
    });
    assert_eq!(extract(&bytes).unwrap(), expected);
}

#[test]
fn the_root_entry_is_skipped_in_every_spelling() {
    let expected = tree(|d| {
        d.add_file("index.html", import(b"hi")).unwrap();
        d.add_directory("empty").unwrap();
    });
    for root in ["./", ".", "./.", ".//"] {
        let bytes = Tar::default()
            .dir(root)
            .file("./index.html", b"hi")
            .dir("./empty/")
            .end();
        assert_eq!(extract(&bytes).unwrap(), expected, "{root:?}");
        // A pax path may name the root too.
        let bytes = Tar::default()
            .pax(b'x', &[("path", root.as_bytes())])
            .dir("PaxHeaders.0/x")
            .file("index.html", b"hi")
            .dir("empty")
            .end();
        assert_eq!(extract(&bytes).unwrap(), expected, "pax {root:?}");
    }
    // The root is a directory: anything else by that name is refused.
    refused(
        &Tar::default().member(b'2', b"./", b"x", b"").end(),
        "./",
        "archive root",
    );
    refused(
        &Tar::default()
            .file("f", b"x")
            .member(b'1', b".", b"f", b"")
            .end(),
        ".",
        "archive root",
    );
    refused(
        &Tar::default()
            .file("f", b"x")
            .member(b'1', b"l", b"./", b"")
            .end(),
        "l",
        "archive root",
    );
}

#[test]
fn v7_tars_are_recognised_by_their_header_checksum() {
    let bytes = Tar::default()
        .v7(0, b"site/", b"")
        .v7(0, "site/café.txt".as_bytes(), b"bonjour")
        .end();
    assert_eq!(ArchiveFormat::detect(&bytes), Some(ArchiveFormat::Tar));
    assert!(bytes[257..262].iter().all(|b| *b == 0), "no magic");
    // A v7 `\0` entry whose name ends in `/` is a directory.
    let expected = tree(|d| {
        d.add_directory("site").unwrap();
        d.add_file("site/café.txt", import(b"bonjour")).unwrap();
    });
    assert_eq!(extract(&bytes).unwrap(), expected);

    // Some historical tars summed the header as signed bytes: accepted too.
    let mut signed = Tar::default()
        .v7(0, "café.txt".as_bytes(), b"bonjour")
        .end();
    let sum: i64 = signed[..512]
        .iter()
        .enumerate()
        .map(|(i, b)| match i {
            148..156 => 32,
            _ => i64::from(*b as i8),
        })
        .sum();
    signed[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    assert_eq!(ArchiveFormat::detect(&signed), Some(ArchiveFormat::Tar));
    let expected = tree(|d| d.add_file("café.txt", import(b"bonjour")).unwrap());
    assert_eq!(extract(&signed).unwrap(), expected);

    // Anything else without magic is not a tar.
    assert_eq!(ArchiveFormat::detect(&[b'x'; 512]), None);
    assert_eq!(ArchiveFormat::detect(&[0; 1024]), None);
    let mut text = b"just some text that happens to be 512 bytes long ".repeat(11);
    text.truncate(512);
    assert_eq!(ArchiveFormat::detect(&text), None);
}

/// The 200 KiB file the sparse tests store: data at 0, 100 KiB and the end, holes between.
fn sparse_content() -> (Vec<u8>, Vec<(u64, u64)>, Vec<u8>) {
    let segments = vec![(0u64, 512u64), (100 << 10, 1024), ((200 << 10) - 512, 512)];
    let mut full = vec![0u8; 200 << 10];
    let mut stored = Vec::new();
    for (i, (offset, len)) in segments.iter().enumerate() {
        let data: Vec<u8> = (0..*len).map(|j| (j as u8) ^ (i as u8 * 37)).collect();
        full[*offset as usize..(*offset + *len) as usize].copy_from_slice(&data);
        stored.extend_from_slice(&data);
    }
    (full, segments, stored)
}

#[test]
fn sparse_files_expand_in_gnu_s_four_encodings() {
    let (full, segments, stored) = sparse_content();
    let real = full.len() as u64;
    let expected = tree(|d| d.add_file("disk.img", import(&full)).unwrap());
    let map_1_0 = |segments: &[(u64, u64)]| {
        let mut map = format!("{}\n", segments.len());
        for (offset, len) in segments {
            map.push_str(&format!("{offset}\n{len}\n"));
        }
        let mut map = map.into_bytes();
        map.resize(map.len().div_ceil(512) * 512, 0);
        map
    };
    let real_text = real.to_string();
    let map_0_1 = segments
        .iter()
        .map(|(o, l)| format!("{o},{l}"))
        .collect::<Vec<_>>()
        .join(",");
    let mut pax_0_0: Vec<(&str, Vec<u8>)> = vec![
        ("GNU.sparse.size", real_text.clone().into_bytes()),
        ("GNU.sparse.numblocks", b"3".to_vec()),
    ];
    for (offset, len) in &segments {
        pax_0_0.push(("GNU.sparse.offset", offset.to_string().into_bytes()));
        pax_0_0.push(("GNU.sparse.numbytes", len.to_string().into_bytes()));
    }
    let pax_0_0: Vec<(&str, &[u8])> = pax_0_0.iter().map(|(k, v)| (*k, &v[..])).collect();
    let in_data = [map_1_0(&segments), stored.clone()].concat();
    let archives = [
        (
            "old GNU",
            Tar::default()
                .gnu_sparse("./disk.img", real, &segments, &stored)
                .end(),
        ),
        (
            "pax 0.0",
            Tar::default()
                .pax(b'x', &pax_0_0)
                .file("./disk.img", &stored)
                .end(),
        ),
        (
            "pax 0.1",
            Tar::default()
                .pax(
                    b'x',
                    &[
                        ("GNU.sparse.size", real_text.as_bytes()),
                        ("GNU.sparse.numblocks", b"3"),
                        ("GNU.sparse.name", b"./disk.img"),
                        ("GNU.sparse.map", map_0_1.as_bytes()),
                    ],
                )
                .file("./GNUSparseFile.7/disk.img", &stored)
                .end(),
        ),
        (
            "pax 1.0",
            Tar::default()
                .pax(
                    b'x',
                    &[
                        ("GNU.sparse.major", b"1"),
                        ("GNU.sparse.minor", b"0"),
                        ("GNU.sparse.name", b"./disk.img"),
                        ("GNU.sparse.realsize", real_text.as_bytes()),
                    ],
                )
                .file("./GNUSparseFile.7/disk.img", &in_data)
                .end(),
        ),
    ];
    for (encoding, bytes) in &archives {
        assert_eq!(extract(bytes).unwrap(), expected, "{encoding}");
    }

    // A map long enough for GNU's extension blocks (4 in the header, 21 per block).
    let many: Vec<(u64, u64)> = (0..60).map(|i| (i * 4096, 512)).collect();
    let data: Vec<u8> = (0..60 * 512).map(|i| (i % 251) as u8).collect();
    let mut full = vec![0u8; 60 * 4096];
    for (i, (offset, _)) in many.iter().enumerate() {
        full[*offset as usize..*offset as usize + 512].copy_from_slice(&data[i * 512..][..512]);
    }
    let bytes = Tar::default()
        .gnu_sparse("many", full.len() as u64, &many, &data)
        .end();
    let expected = tree(|d| d.add_file("many", import(&full)).unwrap());
    assert_eq!(extract(&bytes).unwrap(), expected);

    // A hard link to a sparse file reuses the expanded content.
    let bytes = Tar::default()
        .gnu_sparse("disk.img", real, &segments, &stored)
        .member(b'1', b"copy.img", b"disk.img", b"")
        .end();
    let (full, _, _) = sparse_content();
    let expected = tree(|d| {
        d.add_file("disk.img", import(&full)).unwrap();
        d.add_file("copy.img", import(&full)).unwrap();
    });
    assert_eq!(extract(&bytes).unwrap(), expected);
}

#[test]
fn a1_names_from_pax_and_gnu_headers_are_checked_like_any_other() {
    for (name, reason) in [
        ("../evil", ".."),
        ("/etc/passwd", "absolute"),
        ("C:/evil", "drive letter"),
        ("a\0b", "NUL"),
    ] {
        let bytes = Tar::default()
            .pax(b'x', &[("path", name.as_bytes())])
            .file("innocent", b"x")
            .end();
        refused(&bytes, name, reason);
        // The same name set globally reaches the next entry.
        let bytes = Tar::default()
            .pax(b'g', &[("path", name.as_bytes())])
            .file("innocent", b"x")
            .end();
        refused(&bytes, name, reason);
    }
    for (long, reason) in [
        ("../evil", ".."),
        ("/etc/passwd", "absolute"),
        ("a\0b", "NUL"),
    ] {
        let bytes = Tar::default()
            .gnu_long(b'L', long.as_bytes())
            .file("innocent", b"x")
            .end();
        refused(&bytes, long, reason);
    }
    refused(
        &Tar::default().member(b'0', b"\\evil", b"", b"x").end(),
        "\\evil",
        "absolute",
    );
}

#[test]
fn a2_link_targets_from_pax_and_gnu_headers_are_checked() {
    let bytes = Tar::default()
        .pax(b'x', &[("linkpath", b"/etc/passwd")])
        .member(b'2', b"link", b"fine", b"")
        .end();
    refused(&bytes, "link", "absolute");
    let bytes = Tar::default()
        .gnu_long(b'K', b"../../etc/passwd")
        .member(b'2', b"a/link", b"fine", b"")
        .end();
    refused(&bytes, "a/link", "outside");
}

#[test]
fn a3_hard_links_only_to_earlier_regular_files_whatever_spells_the_target() {
    refused(
        &Tar::default()
            .member(b'2', b"sym", b"target", b"")
            .member(b'1', b"hard", b"sym", b"")
            .file("target", b"x")
            .end(),
        "hard",
        "not an earlier regular file",
    );
    refused(
        &Tar::default()
            .gnu_long(b'K', b"later")
            .member(b'1', b"hard", b"", b"")
            .file("later", b"x")
            .end(),
        "hard",
        "not an earlier regular file",
    );
}

#[test]
fn a5_sparse_files_count_their_expanded_size() {
    let capped = Limits {
        max_total_bytes: 1 << 20,
        ..Limits::default()
    };
    // A terabyte of holes is refused from its header, before any of it is produced.
    let bytes = Tar::default()
        .gnu_sparse("huge", 1 << 40, &[(0, 512)], &[7; 512])
        .end();
    match extract_with(&bytes, &capped) {
        Err(ArchiveError::TooLarge { entry, limit }) => {
            assert_eq!((entry.as_str(), limit), ("huge", 1 << 20))
        }
        other => panic!("{other:?}"),
    }
    let mut map = b"1\n0\n512\n".to_vec();
    map.resize(512, 0);
    let bytes = Tar::default()
        .pax(
            b'x',
            &[
                ("GNU.sparse.major", b"1"),
                ("GNU.sparse.minor", b"0"),
                ("GNU.sparse.name", b"huge"),
                ("GNU.sparse.realsize", b"1099511627776"),
            ],
        )
        .file("GNUSparseFile.1/huge", &[map, vec![7; 512]].concat())
        .end();
    match extract_with(&bytes, &capped) {
        Err(ArchiveError::TooLarge { entry, .. }) => assert_eq!(entry, "huge"),
        other => panic!("{other:?}"),
    }
    // Within the cap, the holes produced still count towards the expansion ratio.
    let ratio = Limits {
        max_ratio: 50,
        ratio_after_bytes: 1 << 20,
        ..Limits::default()
    };
    let bytes = Tar::default()
        .gnu_sparse("holes", 64 << 20, &[(0, 512)], &[7; 512])
        .end();
    refused_with(&bytes, &ratio, "holes", "decompression bomb");
}

#[test]
fn a5_sparse_maps_that_lie_are_refused_naming_the_entry() {
    for (segments, stored, reason) in [
        (vec![(1024, 512), (0, 512)], 1024, "overlap"),
        (vec![(4096, 512)], 512, "past the file's size"),
        (vec![(0, 512)], 1024, "describes 512 bytes"),
    ] {
        let bytes = Tar::default()
            .gnu_sparse("disk.img", 4096, &segments, &vec![1; stored])
            .end();
        refused(&bytes, "disk.img", reason);
    }
    let pax_1_0 = |map: &[u8], data: &[u8]| {
        let mut map = map.to_vec();
        map.resize(map.len().div_ceil(512).max(1) * 512, 0);
        Tar::default()
            .pax(
                b'x',
                &[
                    ("GNU.sparse.major", b"1"),
                    ("GNU.sparse.minor", b"0"),
                    ("GNU.sparse.name", b"disk.img"),
                    ("GNU.sparse.realsize", b"4096"),
                ],
            )
            .file("GNUSparseFile.1/disk.img", &[map, data.to_vec()].concat())
            .end()
    };
    for (map, reason) in [
        (&b"1\n0\n1024\n"[..], "describes 1024 bytes"),
        (b"2\n512\n512\n0\n512\n", "overlap"),
        (b"200000\n", "more than 100000 segments"),
        (b"1\n0\nx\n", "malformed"),
    ] {
        refused(&pax_1_0(map, &[1; 512]), "disk.img", reason);
    }
    let bytes = Tar::default()
        .pax(
            b'x',
            &[
                ("GNU.sparse.major", b"2"),
                ("GNU.sparse.minor", b"0"),
                ("GNU.sparse.name", b"disk.img"),
            ],
        )
        .file("GNUSparseFile.1/disk.img", b"")
        .end();
    refused(&bytes, "disk.img", "unsupported GNU sparse format");
}

#[test]
fn a6_metadata_headers_are_bounded() {
    let huge = vec![b'a'; 2 << 20];
    refused(
        &Tar::default().gnu_long(b'L', &huge).file("x", b"").end(),
        "././@LongLink",
        "more than 1048576",
    );
    refused(
        &Tar::default()
            .pax(b'x', &[("comment", &huge)])
            .file("x", b"")
            .end(),
        "./PaxHeaders/x",
        "more than 1048576",
    );
    // Global headers add nothing to the tree but still count as entries.
    let limits = Limits {
        max_entries: 10,
        ..Limits::default()
    };
    let mut flood = Tar::default();
    for _ in 0..20 {
        flood = flood.pax(b'g', &[("comment", b"x")]);
    }
    refused_with(
        &flood.end(),
        &limits,
        "./PaxHeaders/x",
        "more than 10 entries",
    );
    // Depth and name length hold for names from pax headers.
    let deep = Limits {
        max_depth: 3,
        ..Limits::default()
    };
    let bytes = Tar::default()
        .pax(b'x', &[("path", b"a/b/c/d")])
        .file("x", b"")
        .end();
    refused_with(&bytes, &deep, "a/b/c/d", "deeper than 3");
    let long = "n".repeat(300);
    let bytes = Tar::default()
        .pax(b'x', &[("path", long.as_bytes())])
        .file("x", b"")
        .end();
    refused(&bytes, &long, "longer than 255");
}

#[test]
fn a6_a_bomb_cannot_hide_in_bytes_no_entry_keeps() {
    let ratio = Limits {
        max_ratio: 50,
        ratio_after_bytes: 1 << 20,
        ..Limits::default()
    };
    let zeros = vec![0u8; 16 << 20];
    let gzip = |tar: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut e, tar).unwrap();
        e.finish().unwrap()
    };
    // A directory's data is skipped, not kept.
    let in_a_directory = Tar::default()
        .header(b'5', b"dir/", zeros.len() as u64)
        .data(&zeros)
        .end();
    refused_with(&gzip(&in_a_directory), &ratio, "dir/", "decompression bomb");
    // What follows the end-of-archive block is read (for the decoder's checks), not kept.
    let after_the_end = [Tar::default().file("a", b"1").end(), zeros].concat();
    refused_with(
        &gzip(&after_the_end),
        &ratio,
        "(after the end of the archive)",
        "decompression bomb",
    );
}

#[test]
fn a8_names_from_pax_headers_must_be_utf8() {
    let bytes = Tar::default()
        .pax(b'x', &[("hdrcharset", b"BINARY"), ("path", b"caf\xe9")])
        .file("x", b"")
        .end();
    refused(&bytes, "caf\u{fffd}", "not valid UTF-8");
}

#[test]
fn a10_cut_or_malformed_extension_headers_are_refused() {
    let whole = Tar::default().file("a", b"1").file("b", b"2");
    // Cut at a member boundary: only the missing end-of-archive block tells.
    match extract(&whole.unterminated()) {
        Err(ArchiveError::Archive(message)) => {
            assert!(message.contains("truncated"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    let bytes = Tar::default()
        .pax(b'x', &[("path", b"name")])
        .unterminated();
    assert!(extract(&bytes[..bytes.len() - 512]).is_err());
    // A header describing an entry that never comes.
    match extract(&Tar::default().pax(b'x', &[("path", b"a")]).end()) {
        Err(ArchiveError::Archive(message)) => {
            assert!(message.contains("never comes"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    // Two of one kind for one entry leave its name to whichever a reader keeps.
    let bytes = Tar::default()
        .gnu_long(b'L', b"one")
        .gnu_long(b'L', b"two")
        .file("x", b"")
        .end();
    refused(&bytes, "././@LongLink", "two headers");
    // A record whose length lies.
    let mut bytes = Tar::default()
        .pax(b'x', &[("path", b"name")])
        .file("x", b"")
        .end();
    let at = bytes.windows(7).position(|w| w == b"13 path").unwrap();
    bytes[at..at + 2].copy_from_slice(b"14");
    refused(&bytes, "./PaxHeaders/x", "length");
    // Sparse data cut short leaves the file short.
    let (_, segments, stored) = sparse_content();
    let bytes = Tar::default()
        .gnu_sparse("disk.img", 200 << 10, &segments, &stored)
        .unterminated();
    match extract(&bytes[..bytes.len() - 1024]) {
        Err(ArchiveError::Entry { entry, reason }) => {
            assert_eq!(entry, "disk.img");
            assert!(reason.contains("truncated"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}
