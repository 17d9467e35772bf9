//! Reading back with standard IPFS tooling, installed by this test from npm on first use:
//! `@helia/verified-fetch` with our gateway as its only gateway (it verifies every block it
//! gets), and `ipfs-car unpack` of our CAR responses. Both must give back exactly what was
//! uploaded.
//!
//! The packages are pinned by `tests/interop/package-lock.json` (see `interop/mod.rs`); undici
//! is held at 6.x there, as these tests were first run with it on Node 20.

mod interop;
use cairn_harness::server;

use cairn_test_support::tree;
use server::{cairn, start, terminate};

#[tokio::test]
async fn verified_fetch_and_ipfs_car_read_back_exactly_what_was_uploaded() {
    interop::clients();
    let work = tempfile::tempdir().unwrap();
    let server = start(&work.path().join("data"), &[]);

    let site = work.path().join("site");
    std::fs::create_dir_all(site.join("assets/empty")).unwrap();
    std::fs::write(site.join("index.html"), b"<h1>hello</h1>").unwrap();
    let big: Vec<u8> = (0..3_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect();
    std::fs::write(site.join("assets/big.bin"), &big).unwrap();
    std::fs::write(site.join("assets/naïve café.txt"), "unicode names").unwrap();
    let upload = cairn()
        .args(["upload"])
        .arg(&site)
        .env("CAIRN_URL", &server.upload)
        .env("CAIRN_ACCOUNT_URL", &server.account)
        .env("CAIRN_TOKEN", &server.token)
        .env("HOME", work.path())
        .output()
        .unwrap();
    assert!(
        upload.status.success(),
        "{}",
        String::from_utf8_lossy(&upload.stderr)
    );
    let cid = String::from_utf8(upload.stdout)
        .unwrap()
        .split('\t')
        .next()
        .unwrap()
        .to_owned();

    // @helia/verified-fetch: a multi-block file, a unicode path and a directory's index.html.
    for (path, expected) in [
        ("/assets/big.bin", big.clone()),
        ("/assets/naïve café.txt", b"unicode names".to_vec()),
        ("/", b"<h1>hello</h1>".to_vec()),
    ] {
        let out = work.path().join("fetched");
        let output = interop::script("verified_fetch.mjs")
            .args([&server.upload, &cid, path])
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "verified-fetch {path}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(std::fs::read(&out).unwrap(), expected, "{path}");
    }

    // ipfs-car unpack of the gateway's CAR rebuilds the tree exactly.
    let car = work.path().join("site.car");
    let bytes = reqwest::get(format!("{}/ipfs/{cid}?format=car", server.upload))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    std::fs::write(&car, &bytes).unwrap();
    let unpacked = work.path().join("unpacked");
    let output = interop::ipfs_car()
        .arg("unpack")
        .arg(&car)
        .arg("--output")
        .arg(&unpacked)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(tree(&unpacked), tree(&site));
    terminate(server);
}
