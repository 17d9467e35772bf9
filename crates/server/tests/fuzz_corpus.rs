//! The fuzz targets of this crate's request parsers, on stable and without cargo-fuzz: every
//! input kept under `fuzz/regressions/{tus_headers,gateway_path,pin_query,multipart}` replays
//! through the very bodies the targets run (`src/fuzz.rs`) without panicking, and
//! so do the seeds: requests as clients send them (each parsed as it deserves), and a few
//! refusals. With `CAIRN_FUZZ_CORPUS=DIR` set, the seeds are written to `DIR/<target>/` (what
//! `scripts/fuzz` does before fuzzing).

use cairn_server::fuzz as bodies;
use cairn_test_support::fuzz_corpus as corpus;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use cairn_archive::ArchiveFormat;
use cairn_server::gateway::Format;
use cairn_service::detect::{ContentKind, FirstLook};
use cairn_unixfs::block::{block_cid, DAG_PB, RAW};
use cairn_unixfs::{Cid, CidVersion};
use sha2::Digest;

const TARGETS: [&str; 4] = ["tus_headers", "gateway_path", "pin_query", "multipart"];

#[test]
fn server_regressions_replay_without_panicking() {
    for target in TARGETS {
        for (name, input) in corpus::regressions(target) {
            match target {
                "tus_headers" => println!("{name}: {:?}", bodies::tus_headers(&input)),
                "gateway_path" => println!("{name}: {:?}", bodies::gateway_path(&input)),
                "pin_query" => println!("{name}: {:?}", bodies::pin_query(&input)),
                _ => println!("{name}: {:?}", bodies::multipart(&input)),
            }
        }
    }
}

fn lines(fields: &[&str]) -> Vec<u8> {
    fields.join("\n").into_bytes()
}

#[test]
fn tus_header_seeds_parse_as_they_deserve() {
    let body = b"hello world";
    let sha1 = BASE64.encode(sha1::Sha1::digest(body));
    let sha256 = BASE64.encode(sha2::Sha256::digest(body));
    let md5 = BASE64.encode(md5::Md5::digest(body));
    let body = "hello world";
    // (label, fields, headers parsed: numbers, metadata pairs, a final concat, a checksum).
    let seeds = [
        (
            "create",
            lines(&[
                "filename d29ybGQudHh0,filetype dGV4dC9wbGFpbg==,is_confidential",
                "",
                "",
                "",
                "11",
            ]),
            4,
        ),
        (
            "concat-final",
            lines(&[
                "",
                "final;/api/upload/tus/a1b2 https://up.example/api/upload/tus/c3d4",
                "",
                "",
                "",
            ]),
            1,
        ),
        ("concat-partial", lines(&["", "partial", "", "", "0"]), 1),
        (
            "patch-sha1",
            lines(&["", "", &format!("sha1 {sha1}"), "000", "", body]),
            2,
        ),
        (
            "patch-sha256",
            lines(&["", "", &format!("sha256 {sha256}"), "5", "11", body]),
            3,
        ),
        (
            "patch-md5",
            lines(&["", "", &format!("md5 {md5}"), "0", "", body]),
            2,
        ),
        (
            "refused",
            lines(&["a !!!,a YQ==", "final;", "crc32 AAAA", "-1", "+1", body]),
            0,
        ),
        (
            "too-large",
            lines(&["", "", "", "18446744073709551616", "", ""]),
            0,
        ),
    ];
    for (label, input, parsed) in seeds {
        assert_eq!(bodies::tus_headers(&input).unwrap(), parsed, "{label}");
        corpus::save_seed("tus_headers", label, &input);
    }
}

fn gateway_input(size: u64, fields: &[&str]) -> Vec<u8> {
    [&size.to_le_bytes()[..], &lines(fields)].concat()
}

#[test]
fn gateway_seeds_parse_as_they_deserve() {
    let v1 = block_cid(CidVersion::V1, RAW, b"fuzz").to_string();
    let v0 = block_cid(CidVersion::V0, DAG_PB, b"fuzz").to_string();
    let label = cairn_server::gateway::subdomain::dns_label(&v0.parse().unwrap()).unwrap();
    // sha2-512: a CID too long for a DNS label.
    let long = Cid::new_v1(
        0x55,
        cid::multihash::Multihash::wrap(0x13, &[7u8; 64]).unwrap(),
    )
    .to_string();
    let car_accept = "application/vnd.ipld.car; version=1; order=dfs; dups=y";
    let seeds = [
        (
            "car",
            gateway_input(
                1000,
                &[
                    &v1,
                    "dir/file.txt",
                    &format!(
                        "/ipfs/{v1}/dir/file.txt?format=car&dag-scope=entity&entity-bytes=0:99"
                    ),
                    car_accept,
                    "",
                    "localhost:8080",
                    "0:99",
                ],
            ),
            Some(Format::Car),
        ),
        (
            "raw",
            gateway_input(
                5,
                &[
                    &v0,
                    "",
                    &format!("/ipfs/{v0}"),
                    "application/vnd.ipld.raw",
                    "bytes=-3",
                    "",
                    "-2:*",
                ],
            ),
            Some(Format::Raw),
        ),
        (
            "plain-browser",
            gateway_input(
                1 << 20,
                &[
                    &v0,
                    "a/b/index.html",
                    &format!("/ipfs/{v0}/a/b/index.html?filename=x.html&download=true"),
                    "text/html,application/xhtml+xml",
                    "bytes=100-199",
                    "127.0.0.1:8080",
                    "",
                ],
            ),
            Some(Format::Plain),
        ),
        (
            "content-origin",
            gateway_input(
                0,
                &[
                    &v1,
                    "",
                    "/style.css?x=1",
                    "*/*",
                    "bytes=0-",
                    &format!("{label}.ipfs.localhost:8080"),
                    "",
                ],
            ),
            Some(Format::Plain),
        ),
        (
            "long-cid",
            gateway_input(
                10,
                &[
                    &long,
                    "a",
                    &format!("/ipfs/{long}/a?format=raw"),
                    "",
                    "",
                    "",
                    "",
                ],
            ),
            Some(Format::Raw),
        ),
        (
            "refused",
            gateway_input(
                10,
                &[
                    "not-a-cid",
                    "a/b/c/d/e/f/g/h/i",
                    "/ipfs/x?format=tar",
                    "",
                    "bytes=20-30",
                    "",
                    "x:y",
                ],
            ),
            None,
        ),
    ];
    for (label, input, format) in seeds {
        assert_eq!(bodies::gateway_path(&input).ok(), format, "{label}");
        corpus::save_seed("gateway_path", label, &input);
    }
}

#[test]
fn pin_seeds_parse_as_they_deserve() {
    let v1 = block_cid(CidVersion::V1, RAW, b"fuzz").to_string();
    let v0 = block_cid(CidVersion::V0, DAG_PB, b"fuzz").to_string();
    let pin = format!(
        r#"{{"cid":"{v0}","name":"site","origins":["/ip4/192.0.2.1/tcp/4001","/dns4/example.net/udp/4001/quic-v1"],"meta":{{"app":"fuzz"}}}}"#
    );
    let seeds = [
        (
            "full",
            lines(&[
                &format!(
                    "cid={v1},{v0}&name=site&match=ipartial&status=queued,pinned\
                     &before=2026-11-24T10:00:00Z&after=2020-01-01T00:00:00.250%2B02:00\
                     &limit=5&meta=%7B%22app%22%3A%22fuzz%22%7D"
                ),
                "2026-11-24T12:00:00+02:00",
                &pin,
            ]),
            3,
        ),
        (
            "plain",
            lines(&["", "2026-11-24T10:00:00Z", &format!(r#"{{"cid":"{v1}"}}"#)]),
            3,
        ),
        (
            "refused",
            lines(&[
                "limit=0&status=lost&match=fuzzy&before=yesterday",
                "2026-11-24T10:00:00+2:00",
                r#"{"cid":"nope","origins":"x"}"#,
            ]),
            0,
        ),
    ];
    for (label, input, parsed) in seeds {
        assert_eq!(bodies::pin_query(&input).unwrap(), parsed, "{label}");
        corpus::save_seed("pin_query", label, &input);
    }
}

/// A multipart body of `parts` (name, file name, content).
fn form(boundary: &str, parts: &[(&str, Option<&str>, &[u8])]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, file_name, content) in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        let disposition = match file_name {
            Some(file) => format!("form-data; name=\"{name}\"; filename=\"{file}\""),
            None => format!("form-data; name=\"{name}\""),
        };
        body.extend_from_slice(format!("Content-Disposition: {disposition}\r\n\r\n").as_bytes());
        body.extend_from_slice(content);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    body
}

#[test]
fn multipart_seeds_read_as_they_deserve() {
    let mut tar = vec![0u8; 1024];
    tar[..5].copy_from_slice(b"a.txt");
    tar[257..262].copy_from_slice(b"ustar");
    // The header's checksum: its bytes summed, the checksum field counted as spaces.
    tar[148..156].fill(b' ');
    let sum: u32 = tar[..512].iter().map(|b| u32::from(*b)).sum();
    tar[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
    let car = cairn_car::header(&[block_cid(CidVersion::V1, RAW, b"x")]);
    let long: Vec<u8> = (0..700u32).map(|i| (i % 251) as u8).collect();
    let b = "X-BOUNDARY";
    // (label, chunk size, limit, body, the file's content and kind, the name; None: refused).
    type Expected<'a> = Option<(&'a [u8], FirstLook, Option<&'a str>)>;
    let seeds: [(&str, u8, u16, Vec<u8>, Expected); 6] = [
        (
            "name-and-file",
            7,
            1000,
            form(
                b,
                &[
                    ("name", None, b"my upload"),
                    ("file", Some("a.txt"), b"hello"),
                ],
            ),
            Some((
                b"hello",
                FirstLook::Is(ContentKind::File),
                Some("my upload"),
            )),
        ),
        (
            "long-file-extra-parts",
            13,
            1000,
            form(
                b,
                &[
                    ("file", Some("data.bin"), &long),
                    ("other", None, b"ignored"),
                    ("file", Some("second.bin"), b"ignored too"),
                ],
            ),
            Some((&long, FirstLook::Is(ContentKind::File), None)),
        ),
        (
            "tar",
            63,
            2000,
            form(b, &[("file", Some("a.tar"), &tar)]),
            Some((&tar, FirstLook::MayBeArchive(ArchiveFormat::Tar), None)),
        ),
        (
            "car",
            1,
            1000,
            form(b, &[("file", None, &car), ("name", None, b"a car")]),
            Some((&car, FirstLook::Is(ContentKind::Car), Some("a car"))),
        ),
        (
            "over-the-limit",
            20,
            600,
            form(b, &[("file", Some("data.bin"), &long)]),
            None,
        ),
        (
            "cut-off",
            5,
            1000,
            form(b, &[("file", Some("a.txt"), b"hello")])[..40].to_vec(),
            None,
        ),
    ];
    for (label, chunk, limit, body, expected) in seeds {
        let input = bodies::multipart_input(chunk - 1, limit, b, &body);
        let read = bodies::multipart(&input);
        match expected {
            Some((content, kind, name)) => {
                let form = read.unwrap_or_else(|e| panic!("{label}: {e}"));
                let file = form.file.expect("a file part");
                assert_eq!(file.content, content, "{label}");
                assert_eq!(file.look, Ok(kind), "{label}");
                assert_eq!(form.name.as_deref(), name, "{label}");
            }
            None => assert!(read.is_err(), "{label}: {read:?}"),
        }
        corpus::save_seed("multipart", label, &input);
    }
}
