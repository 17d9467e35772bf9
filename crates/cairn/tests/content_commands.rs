//! `cairn cid` and `cairn car` on real trees on disk, checked against the shared vectors.

use cairn_harness::server;
use cairn_test_support::vectors;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cairn_car::{CarLimits, CarReader};
use cairn_unixfs::node::Node;
use vectors::{expand_dir, Content, SpecEntry};

fn vector(profile: &str, name: &str) -> serde_json::Value {
    let path = std::env::var_os("CAIRN_VECTORS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/vectors/vectors.json")
        });
    let all: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("vectors.json")).unwrap();
    all.into_iter()
        .find(|v| v["profile"] == profile && v["name"] == name)
        .unwrap_or_else(|| panic!("no vector {profile}/{name}"))
}

/// Write a directory vector's tree under `root`, as `ipfs add -r root` would see it.
fn materialize(spec: &serde_json::Value, root: &Path) {
    std::fs::create_dir_all(root).unwrap();
    for entry in expand_dir(spec) {
        match entry {
            SpecEntry::File { path, spec } => {
                let (mut content, size) = Content::of_spec(&spec);
                let mut bytes = vec![0; size as usize];
                content.fill(&mut bytes);
                let path = root.join(path);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, bytes).unwrap();
            }
            SpecEntry::Dir { path } => std::fs::create_dir_all(root.join(path)).unwrap(),
            SpecEntry::Symlink { path, target } => {
                let path = root.join(path);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::os::unix::fs::symlink(target, path).unwrap();
            }
        }
    }
}

fn cairn(args: &[&str]) -> Output {
    Command::new(cairn_harness::server::binary())
        .args(args)
        .output()
        .expect("run cairn")
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "cairn failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .trim()
        .to_owned()
}

#[test]
fn cid_of_a_tree_on_disk_matches_the_vectors_in_every_profile() {
    let temp = tempfile::tempdir().unwrap();
    for profile in ["unixfs-v1-2025", "kubo-cidv1-legacy", "unixfs-v0-2015"] {
        for name in ["dir_nested_unicode", "dir_symlinks"] {
            let v = vector(profile, name);
            let root = temp.path().join(profile).join(name);
            materialize(&v["spec"], &root);
            let cid = stdout(&cairn(&[
                "cid",
                root.to_str().unwrap(),
                "--profile",
                profile,
            ]));
            assert_eq!(cid, v["cid"].as_str().unwrap(), "{profile}/{name}");
        }
    }
}

#[test]
fn cid_of_a_single_file_is_the_file_root() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("hello.txt");
    std::fs::write(&path, "hello world").unwrap();
    let cid = stdout(&cairn(&["cid", path.to_str().unwrap()]));
    assert_eq!(
        cid,
        "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e"
    );
}

#[test]
fn car_holds_the_whole_dag_root_first_in_depth_first_order() {
    let temp = tempfile::tempdir().unwrap();
    let v = vector("unixfs-v1-2025", "dir_nested_unicode");
    let root_dir = temp.path().join("tree");
    materialize(&v["spec"], &root_dir);
    let car_path = temp.path().join("out.car");
    let printed = stdout(&cairn(&[
        "car",
        root_dir.to_str().unwrap(),
        "-o",
        car_path.to_str().unwrap(),
    ]));
    assert_eq!(printed, v["cid"].as_str().unwrap());

    let file = std::fs::File::open(&car_path).unwrap();
    let mut reader = CarReader::new(std::io::BufReader::new(file), CarLimits::default()).unwrap();
    assert_eq!(reader.roots().len(), 1);
    assert_eq!(reader.roots()[0].to_string(), printed);
    let blocks: Vec<_> = reader.by_ref().map(Result::unwrap).collect();
    assert_eq!(blocks[0].0.to_string(), printed, "root block comes first");

    // Depth-first pre-order: replaying the walk from the root gives exactly the CAR's order.
    let by_cid: std::collections::HashMap<_, _> = blocks.iter().cloned().collect();
    let mut expected = Vec::new();
    let mut seen = HashSet::new();
    let mut stack = vec![blocks[0].0];
    while let Some(cid) = stack.pop() {
        if seen.insert(cid) {
            expected.push(cid);
            let block = by_cid.get(&cid).expect("every linked block is in the CAR");
            let links = Node::decode(&cid, block.clone()).unwrap().links();
            stack.extend(links.into_iter().map(|(cid, _)| cid).rev());
        }
    }
    let order: Vec<_> = blocks.iter().map(|(cid, _)| *cid).collect();
    assert_eq!(order, expected);
}

#[test]
fn errors_are_one_line_with_the_cause_and_a_failure_status() {
    let missing = cairn(&["cid", "/nonexistent/cairn-test"]);
    assert_eq!(missing.status.code(), Some(1));
    let stderr = String::from_utf8(missing.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("/nonexistent/cairn-test") && stderr.contains("No such file"),
        "{stderr}"
    );

    let usage = cairn(&["cid", ".", "--profile", "v9"]);
    assert_eq!(usage.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&usage.stderr).contains("unixfs-v1-2025"));
}

/// The file path works on many files at once and maps large files in windows: whatever the
/// sizes (empty, one chunk, a chunk and a byte, across a mapping window), a tree's CID is the
/// one the engine computes from the same bytes in memory.
#[test]
fn cid_of_a_tree_of_every_file_size_matches_the_engine() {
    use cairn_unixfs::{DirectoryBuilder, FileImporter, Profile};

    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().join("tree");
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for i in 0..400 {
        files.push((
            format!("small/{}/f{i}", i % 7),
            server::content(i * 37 % 5000, i as u64),
        ));
    }
    for (name, len) in [
        ("chunk", 1 << 20),
        ("chunk-and-a-byte", (1 << 20) + 1),
        ("across-a-window", (65 << 20) + 3),
    ] {
        files.push((format!("large/{name}"), server::content(len, len as u64)));
    }
    let profile = Profile::default();
    let mut expected = DirectoryBuilder::new(&profile);
    for (path, bytes) in &files {
        let on_disk = root.join(path);
        std::fs::create_dir_all(on_disk.parent().unwrap()).unwrap();
        std::fs::write(&on_disk, bytes).unwrap();
        let mut importer = FileImporter::new(&profile, cairn_unixfs::DiscardBlocks);
        importer.push(bytes).unwrap();
        expected.add_file(path, importer.finish().unwrap()).unwrap();
    }
    std::fs::create_dir_all(root.join("empty")).unwrap();
    expected.add_directory("empty").unwrap();
    let expected = expected
        .finish(&mut cairn_unixfs::DiscardBlocks)
        .unwrap()
        .cid;

    let printed = stdout(&cairn(&["cid", root.to_str().unwrap()]));
    assert_eq!(printed, expected.to_string());
    let large = root.join("large/across-a-window");
    let mut importer = FileImporter::new(&profile, cairn_unixfs::DiscardBlocks);
    importer.push(&files.last().unwrap().1).unwrap();
    assert_eq!(
        stdout(&cairn(&["cid", large.to_str().unwrap()])),
        importer.finish().unwrap().cid.to_string()
    );
}

/// `-o` naming a device or a pipe writes the CAR into it; a temporary file renamed over it
/// would replace it (as root, `-o /dev/null` would replace `/dev/null`).
#[test]
fn car_into_a_pipe_writes_the_car_and_leaves_the_pipe() {
    let temp = tempfile::tempdir().unwrap();
    let v = vector("unixfs-v1-2025", "dir_nested_unicode");
    let root_dir = temp.path().join("tree");
    materialize(&v["spec"], &root_dir);
    let pipe = temp.path().join("pipe");
    assert!(Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .unwrap()
        .success());
    let reader = std::thread::spawn({
        let pipe = pipe.clone();
        move || std::fs::read(pipe).unwrap()
    });
    let printed = stdout(&cairn(&[
        "car",
        root_dir.to_str().unwrap(),
        "-o",
        pipe.to_str().unwrap(),
    ]));
    assert_eq!(printed, v["cid"].as_str().unwrap());
    let car = reader.join().unwrap();
    let mut reader = CarReader::new(&car[..], CarLimits::default()).unwrap();
    assert_eq!(reader.roots()[0].to_string(), printed);
    // Every block is read back and checked against its CID.
    assert!(reader.by_ref().map(Result::unwrap).count() > 1);
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&pipe)
        .unwrap()
        .file_type()
        .is_fifo());
}
