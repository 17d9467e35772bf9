//! The fuzz target of this crate, on stable and without cargo-fuzz: every input kept under
//! `fuzz/regressions/archive_extract` replays through the very body the target runs
//! (`src/fuzz.rs`) without panicking, and so do the seeds: small archives of every
//! format (tar, and tar in gzip, bzip2, xz and zstd; zip stored, deflated and bzip2; 7z copied
//! and LZMA2), written as their tools write them and byte by byte for the rarer headers (pax,
//! GNU long names, sparse maps, v7), each extracted or refused as it deserves. With
//! `CAIRN_FUZZ_CORPUS=DIR` set, the seeds are written to `DIR/archive_extract/` (what
//! `scripts/fuzz` does before fuzzing).

mod support;
use support::compress;
use support::raw;

use cairn_archive::fuzz as bodies;
use cairn_test_support::fuzz_corpus as corpus;

use std::io::{Cursor, Write};

use cairn_archive::ArchiveFormat;
use compress::compress;
use raw::{zip, Tar, ZipEntry};
use sevenz_rust2::{ArchiveEntry, ArchiveWriter, EncoderMethod};

/// A tree with every kind of tar member: directories, files (one of several chunks), a
/// symlink, a hard link, a pax path, a GNU long name, an old GNU sparse file.
fn tar_tree() -> Vec<u8> {
    let long_name = format!("dir/{}", "n".repeat(40));
    Tar::default()
        .dir("dir/")
        .file("dir/a.txt", b"hello, archive")
        .file("dir/big.bin", &[7u8; 10_000])
        .member(b'2', b"dir/link", b"a.txt", b"")
        .member(b'1', b"dir/hard", b"dir/a.txt", b"")
        .pax(b'x', &[("path", b"dir/from-pax.txt")])
        .file("ignored-name", b"pax named me")
        .gnu_long(b'L', long_name.as_bytes())
        .file("short", b"long named")
        .gnu_sparse("dir/sparse", 3000, &[(0, 5), (2000, 4)], b"startstop")
        .v7(0, b"old.txt", b"v7 member")
        .end()
}

/// A zip written by the `zip` crate, compressed by `method`.
fn zip_of(method: zip::CompressionMethod) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(method);
    writer.add_directory("site/", options).unwrap();
    writer.start_file("site/index.html", options).unwrap();
    writer.write_all(b"<h1>hi</h1>").unwrap();
    writer.start_file("site/big.bin", options).unwrap();
    writer.write_all(&[3u8; 10_000]).unwrap();
    writer
        .add_symlink("site/home", "index.html", options)
        .unwrap();
    writer.finish().unwrap().into_inner()
}

/// A 7z of a directory, two files and a symlink, its content coded by `method`.
fn seven_z(method: EncoderMethod) -> Vec<u8> {
    let mut writer = ArchiveWriter::new(Cursor::new(Vec::new())).unwrap();
    writer.set_content_methods(vec![method.into()]);
    writer
        .push_archive_entry::<&[u8]>(ArchiveEntry::new_directory("site"), None)
        .unwrap();
    for (name, body) in [
        ("site/index.html", &b"<h1>hi</h1>"[..]),
        ("site/big.bin", &[5u8; 10_000][..]),
    ] {
        writer
            .push_archive_entry(ArchiveEntry::new_file(name), Some(body))
            .unwrap();
    }
    let mut link = ArchiveEntry::new_file("site/home");
    // 7-Zip's Unix extension: the mode in the high half of the attributes.
    link.has_windows_attributes = true;
    link.windows_attributes = 0x8000 | (0o120777 << 16);
    writer
        .push_archive_entry(link, Some(&b"index.html"[..]))
        .unwrap();
    writer.finish().unwrap().into_inner()
}

/// (name, archive, whether it extracts): valid archives of every format, and a few refusals
/// near the limits.
fn seeds() -> Vec<(String, Vec<u8>, bool)> {
    let tar = tar_tree();
    let mut seeds = vec![("tar".to_owned(), tar.clone(), true)];
    for format in [
        ArchiveFormat::Gzip,
        ArchiveFormat::Bzip2,
        ArchiveFormat::Xz,
        ArchiveFormat::Zstd,
    ] {
        seeds.push((format!("tar-{format:?}"), compress(format, &tar), true));
    }
    let zip_entries = [
        ZipEntry::new(b"dir/", b""),
        ZipEntry::new(b"dir/a.txt", b"stored by hand"),
        ZipEntry {
            unix_mode: Some(0o120777),
            ..ZipEntry::new(b"dir/link", b"a.txt")
        },
        ZipEntry::new(b"caf\x82.txt", b"a CP437 name").unicode_path(b"caf\x82.txt", "café.txt"),
    ];
    seeds.push(("zip-raw".into(), zip(&zip_entries), true));
    for method in [
        zip::CompressionMethod::Stored,
        zip::CompressionMethod::Deflated,
        zip::CompressionMethod::Bzip2,
    ] {
        seeds.push((format!("zip-{method:?}"), zip_of(method), true));
    }
    seeds.push(("7z-copy".into(), seven_z(EncoderMethod::COPY), true));
    seeds.push(("7z-lzma2".into(), seven_z(EncoderMethod::LZMA2), true));
    // Over the limits: too many entries, more content than the cap, a name too deep.
    let mut many = Tar::default();
    for i in 0..=bodies::LIMITS.max_entries {
        many = many.file(&format!("f{i}"), b"");
    }
    seeds.push(("tar-too-many-entries".into(), many.end(), false));
    let big = vec![0u8; bodies::LIMITS.max_total_bytes as usize + 1];
    let bomb = compress(
        ArchiveFormat::Gzip,
        &Tar::default().file("zeros", &big).end(),
    );
    seeds.push(("tar-gzip-too-large".into(), bomb, false));
    let deep = ["d"; bodies::LIMITS.max_depth + 1].join("/");
    seeds.push((
        "tar-too-deep".into(),
        Tar::default().file(&deep, b"").end(),
        false,
    ));
    seeds
}

#[test]
fn archive_regressions_replay_without_panicking() {
    for (name, input) in corpus::regressions("archive_extract") {
        println!("{name}: {:?}", bodies::archive_extract(&input));
    }
}

#[test]
fn seed_archives_extract_or_are_refused_as_they_deserve() {
    for (label, archive, valid) in seeds() {
        let extracted = bodies::archive_extract(&archive);
        assert_eq!(extracted.is_ok(), valid, "{label}: {extracted:?}");
        corpus::save_seed("archive_extract", &label, &archive);
    }
}
