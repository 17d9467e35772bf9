//! Reproduces every CID in `shared/vectors/vectors.json`, for every profile.
//!
//! The vectors were computed by two independent JavaScript importers and, for CIDv0, by Kubo
//! itself. A missing vectors file fails the test: it is never skipped. Every block produced is
//! also checked against the UnixFS rules the reader and the CAR importer enforce, so those
//! rules never refuse a DAG that real importers make.

use cairn_test_support::vectors as inputs;

use std::collections::HashMap;
use std::io;
use std::num::NonZeroUsize;
use std::path::PathBuf;

use cairn_unixfs::block::RAW;
use cairn_unixfs::node::{ChildRule, Node, NodeKind};
use cairn_unixfs::{BlockBytes, BlockSink, Cid, DirectoryBuilder, FileImporter, Profile};
use inputs::{expand_dir, for_each_piece, hex, Content, SpecEntry};
use sha2::{Digest, Sha256};

fn vectors() -> Vec<serde_json::Value> {
    let path = std::env::var_os("CAIRN_VECTORS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/vectors/vectors.json")
        });
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {} (set CAIRN_VECTORS): {e}", path.display()));
    serde_json::from_str(&text).expect("vectors.json is JSON")
}

/// Decodes every block as the reader would, and checks every link against what its parent
/// says of it once the import is done (children come before parents).
#[derive(Default)]
struct RuleCheck {
    kinds: HashMap<Cid, NodeKind>,
    rules: Vec<(Cid, ChildRule)>,
}

impl BlockSink for RuleCheck {
    fn put_block(&mut self, cid: &Cid, block: BlockBytes<'_>) -> io::Result<()> {
        // A raw leaf is a file of its own bytes: nothing to decode.
        let kind = if cid.codec() == RAW {
            NodeKind::File {
                size: block.len() as u64,
            }
        } else {
            let node = Node::decode(cid, block.to_vec()).map_err(io::Error::other)?;
            self.rules
                .extend(node.links().into_iter().filter_map(|(c, r)| Some((c, r?))));
            node.kind()
        };
        self.kinds.insert(*cid, kind);
        Ok(())
    }
}

impl RuleCheck {
    fn assert_all_kept(&self) {
        for (child, rule) in &self.rules {
            rule.check(child, self.kinds[child]).unwrap();
        }
    }
}

fn threads() -> NonZeroUsize {
    std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN)
}

/// Stream a file spec through the importer in 1 MiB pieces; never holds the whole file.
fn import_spec(profile: &Profile, spec: &serde_json::Value) -> cairn_unixfs::ImportedFile {
    let (mut content, size) = Content::of_spec(spec);
    let mut check = RuleCheck::default();
    let mut importer = FileImporter::with_threads(profile, &mut check, threads());
    for_each_piece(&mut content, size, 1 << 20, |piece| {
        importer.push(piece).unwrap()
    });
    let imported = importer.finish().unwrap();
    check.assert_all_kept();
    imported
}

fn content_sha256(spec: &serde_json::Value) -> String {
    let (mut content, size) = Content::of_spec(spec);
    let mut hasher = Sha256::new();
    for_each_piece(&mut content, size, 1 << 20, |piece| hasher.update(piece));
    hex(&hasher.finalize())
}

fn import_dir(profile: &Profile, spec: &serde_json::Value) -> String {
    let mut dir = DirectoryBuilder::new(profile);
    for entry in expand_dir(spec) {
        match entry {
            SpecEntry::File { path, spec } => dir.add_file(&path, import_spec(profile, &spec)),
            SpecEntry::Dir { path } => dir.add_directory(&path),
            SpecEntry::Symlink { path, target } => dir.add_symlink(&path, &target),
        }
        .unwrap();
    }
    let mut check = RuleCheck::default();
    let cid = dir.finish(&mut check).unwrap().cid;
    check.assert_all_kept();
    cid.to_string()
}

fn check_profile(name: &str) {
    let profile: Profile = name.parse().unwrap();
    let vectors: Vec<_> = vectors()
        .into_iter()
        .filter(|v| v["profile"] == name)
        .collect();
    assert!(
        vectors.len() >= 20,
        "expected the {name} vectors, found {}",
        vectors.len()
    );
    let mut failures = Vec::new();
    for v in &vectors {
        let expected = v["cid"].as_str().unwrap();
        let got = match v["kind"].as_str() {
            Some("file") => import_spec(&profile, &v["spec"]).cid.to_string(),
            Some("dir") => import_dir(&profile, &v["spec"]),
            other => panic!("unknown vector kind {other:?}"),
        };
        if got != expected {
            // Tell a generator bug from an importer bug.
            let content = match v["content_sha256"].as_str() {
                Some(want) if content_sha256(&v["spec"]) != want => "content differs too",
                Some(_) => "content matches",
                None => "directory",
            };
            failures.push(format!(
                "{}: got {got}, want {expected} ({content})",
                v["name"]
            ));
        }
    }
    assert!(failures.is_empty(), "{name}:\n{}", failures.join("\n"));
    eprintln!("{name}: {} vectors reproduced", vectors.len());
}

#[test]
fn unixfs_v1_2025_vectors() {
    check_profile("unixfs-v1-2025");
}

#[test]
fn kubo_cidv1_legacy_vectors() {
    check_profile("kubo-cidv1-legacy");
}

#[test]
fn unixfs_v0_2015_vectors() {
    check_profile("unixfs-v0-2015");
}

#[test]
fn generators_match_the_published_check_values() {
    assert_eq!(
        hex(&inputs::xorshift(16, 1)),
        "41208240000000004114010c06410010"
    );
    assert_eq!(
        hex(&inputs::xorshift(16, u64::MAX)),
        "c01f803f00000000ffeffe03febfff0f"
    );
    assert_eq!(
        content_sha256(&serde_json::json!({"size": 1_000_003, "seed": 12345})),
        "7cfbe14e94b9384f6f1ad2ac1bf02a0d9a37b2dac58b83be7d33778db9efc445"
    );
    let mut first = [0u8; 16];
    Content::of_spec(&serde_json::json!({"size": 16, "chacha_seed": "chunk-v0-seed"}))
        .0
        .fill(&mut first);
    assert_eq!(hex(&first), "4a07e1b7e7b2f73a70419a292c87be55");
}
