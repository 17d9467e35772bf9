//! Garbage collection's cost: `gc::collect` (what `cairn gc` runs) after deleting 10% of
//! 10,000 stored uploads, for two upload sizes side by side on the embedded store. The same
//! number of uploads makes the same index; the larger size stores 16 times the bytes. The goal
//! (issue 16): time and I/O grow with the dead bytes and the index, not with all the bytes
//! stored.
//!
//! Uploads are imported with the default profile and committed through the store (not HTTP:
//! the collection is what is measured). I/O is this process's `rchar`/`wchar` from
//! `/proc/self/io` around the collection: every byte read or written through the kernel,
//! page cache included.
//!
//! Run: `cargo bench -p cairn-server --bench gc` (`GC_UPLOADS=N` for another count).

use cairn_test_support::noise;
mod support;
use support::stored;

use std::sync::Arc;
use std::time::Instant;

use cairn_service::gc;
use cairn_store::MetadataStore;
use noise::noise;
use stored::{embedded_store, store_file};

const SIZES: [usize; 2] = [16 << 10, 256 << 10];
const DELETED_EVERY: usize = 10;

fn uploads() -> usize {
    std::env::var("GC_UPLOADS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000)
}

/// Bytes this process has read and written through the kernel so far.
fn io_so_far() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (field("rchar:"), field("wchar:"))
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

struct Row {
    size: usize,
    stored: u64,
    blocks: u64,
    report: gc::GcReport,
    read: u64,
    written: u64,
    after: u64,
}

async fn measure(size: usize, count: usize) -> Row {
    let dir = tempfile::tempdir().unwrap();
    let (store, packs, account_id) = embedded_store(dir.path()).await;
    let store: Arc<dyn MetadataStore> = store;
    let started = Instant::now();
    for i in 0..count {
        let bytes = noise(size, (size * count + i) as u64);
        store_file(store.as_ref(), &packs, account_id, &format!("u{i}"), &bytes).await;
    }
    for i in (0..count).step_by(DELETED_EVERY) {
        store
            .delete_kept(account_id, &format!("u{i}"))
            .await
            .unwrap();
    }
    eprintln!(
        "{count} uploads of {size} bytes stored and 10% deleted in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let stored = dir_bytes(&dir.path().join("packs"));
    let mut blocks = 0;
    let mut after = Vec::new();
    loop {
        let page = store.indexed_blocks(&after, 10_000).await.unwrap();
        let Some(last) = page.last() else { break };
        after = last.multihash.clone();
        blocks += page.len() as u64;
    }
    let (read_before, written_before) = io_so_far();
    let report = gc::collect(store.clone(), packs, false).await.unwrap();
    let (read_after, written_after) = io_so_far();
    Row {
        size,
        stored,
        blocks,
        report,
        read: read_after - read_before,
        written: written_after - written_before,
        after: dir_bytes(&dir.path().join("packs")),
    }
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let count = uploads();
    let mut rows = Vec::new();
    for size in SIZES {
        rows.push(measure(size, count).await);
    }
    println!(
        "\n`cairn gc` after deleting 10% of {count} uploads (embedded store, default profile)\n"
    );
    let header: Vec<String> = rows
        .iter()
        .map(|r| format!("{} KiB uploads", r.size >> 10))
        .collect();
    println!("| | {} | ratio |", header.join(" | "));
    println!("|---|{}---|", "---|".repeat(rows.len()));
    let line = |name: &str, values: Vec<f64>, show: &dyn Fn(f64) -> String| {
        let ratio = values[1] / values[0].max(f64::MIN_POSITIVE);
        let shown: Vec<String> = values.iter().map(|v| show(*v)).collect();
        println!("| {name} | {} | {ratio:.2} |", shown.join(" | "));
    };
    let bytes = |v: f64| mb(v as u64);
    let plain = |v: f64| format!("{v:.0}");
    line(
        "pack bytes stored",
        rows.iter().map(|r| r.stored as f64).collect(),
        &bytes,
    );
    line(
        "index entries",
        rows.iter().map(|r| r.blocks as f64).collect(),
        &plain,
    );
    line(
        "dead bytes",
        rows.iter().map(|r| r.report.dead_bytes as f64).collect(),
        &bytes,
    );
    line(
        "collection time",
        rows.iter().map(|r| r.report.seconds).collect(),
        &|v| format!("{v:.2} s"),
    );
    line(
        "bytes read",
        rows.iter().map(|r| r.read as f64).collect(),
        &bytes,
    );
    line(
        "bytes written",
        rows.iter().map(|r| r.written as f64).collect(),
        &bytes,
    );
    line(
        "bytes reclaimed",
        rows.iter()
            .map(|r| r.report.bytes_reclaimed as f64)
            .collect(),
        &bytes,
    );
    line(
        "packs deleted",
        rows.iter().map(|r| r.report.packs_deleted as f64).collect(),
        &plain,
    );
    line(
        "pack bytes after",
        rows.iter().map(|r| r.after as f64).collect(),
        &bytes,
    );
    for row in &rows {
        assert!(row.after < row.stored, "the collection reclaimed nothing");
    }
}
