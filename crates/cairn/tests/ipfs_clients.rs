//! Reading back with standard IPFS tooling, installed by this test from npm on first use:
//! `@helia/verified-fetch` with our gateway as its only gateway (it verifies every block it
//! gets), and `ipfs-car unpack` of our CAR responses. Both must give back exactly what was
//! uploaded.
//!
//! The packages are pinned in `tests/interop/package.json`; undici is held at 6.x there
//! because 7.x needs Node 22, and this machine has Node 20.

mod server;

use std::path::{Path, PathBuf};
use std::process::Command;

use server::{cairn, start, terminate};

fn tools() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("interop-ipfs");
    std::fs::create_dir_all(&dir).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop");
    for file in ["package.json", "verified_fetch.mjs"] {
        std::fs::copy(source.join(file), dir.join(file)).unwrap();
    }
    if !dir.join("node_modules/@helia/verified-fetch").exists()
        || !dir.join("node_modules/.bin/ipfs-car").exists()
    {
        let output = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .output()
            .expect("npm");
        assert!(
            output.status.success(),
            "npm install: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    dir
}

/// Files and directories under `dir` with their bytes, for comparison.
fn tree(dir: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            let name = path.strip_prefix(dir).unwrap().display().to_string();
            if path.is_dir() {
                out.push((name, None));
                stack.push(path);
            } else {
                out.push((name, Some(std::fs::read(&path).unwrap())));
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn verified_fetch_and_ipfs_car_read_back_exactly_what_was_uploaded() {
    let tools = tools();
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
        let output = Command::new("node")
            .arg(tools.join("verified_fetch.mjs"))
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
    let output = Command::new(tools.join("node_modules/.bin/ipfs-car"))
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
