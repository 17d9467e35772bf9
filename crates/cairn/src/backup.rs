//! `cairn backup DEST`, `cairn backup --verify DEST` and `cairn restore SRC --data-dir DIR`:
//! a consistent copy of the embedded store, taken while `cairn serve` runs and uploads go on.
//!
//! What a backup holds, and why it is consistent:
//!
//! 1. `cairn.db`: one snapshot of the database (`VACUUM INTO`, on a reading connection of its
//!    own: writers go on; see `cairn_store::sql::snapshot`).
//! 2. `packs/`: exactly the packs *that copy's* block index references, read from the copy.
//!    A committed pack is never modified (`cairn_store::packs`), and a pack is durable before
//!    the commit that references it, so each is whole. Packs written after the snapshot are
//!    not referenced by it and not needed.
//! 3. `staging/` and `tus/`: the bytes the copy's unfinished operations and open TUS uploads
//!    still need (one finished since the snapshot may have deleted them: then restoring
//!    processes it again, and it fails as gone).
//! 4. `node.key` and `names.key`, their modes kept: without the names key, the names' sealed
//!    keys in the database cannot sign.
//! 5. `manifest.json`, written last (a backup without one is incomplete): each file's size,
//!    sha2-256 and mode, and the database's schema step.
//!
//! Packs and the collector: garbage collection is the only thing that deletes a referenced
//! pack (it removes it from the index, then deletes it). The backup holds the collector's lock
//! (`MetadataStore::lock_collector`, the one `cairn gc` and every node take) from before the
//! snapshot until the last pack is copied, so every pack the snapshot references stays
//! referenced, and on disk, meanwhile. Retrying from a fresh snapshot instead would never end
//! on a store collecting faster than it is copied; holding the lock only delays a collection.

use cairn_store::GarbageCollection;
use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use cairn_store::sql::snapshot::{copy_hashed, file_sha256, CopiedFile, SnapshotContents};
use cairn_store::sqlite::SqliteStore;
use serde::{Deserialize, Serialize};

const MANIFEST: &str = "manifest.json";
const FORMAT: &str = "cairn-backup";
const FORMAT_VERSION: u32 = 1;
const DATABASE: &str = "cairn.db";
const NODE_KEY: &str = "node.key";
const NAMES_KEY: &str = "names.key";

/// `DEST/manifest.json`.
#[derive(Serialize, Deserialize, Debug)]
pub struct Manifest {
    /// Always `cairn-backup`.
    format: String,
    version: u32,
    /// The database's schema step (`PRAGMA user_version`): a Cairn that knows fewer steps
    /// refuses the restored database.
    schema_version: u64,
    created_at_ms: i64,
    files: Vec<FileEntry>,
}

#[derive(Serialize, Deserialize, Debug)]
struct FileEntry {
    /// Relative to the backup's directory (and to the data directory it restores into).
    path: String,
    size: u64,
    /// Hex.
    sha256: String,
    /// Unix permission bits, kept on restore (the keys are `0600`).
    mode: u32,
}

/// What `cairn backup` copies from.
pub struct Source {
    pub data_dir: PathBuf,
    /// The names key (`serve --names-key`) [default: DATA_DIR/names.key].
    pub names_key: Option<PathBuf>,
}

/// Back the embedded store in `source` up into `dest` (new, or an empty directory).
pub async fn backup(source: &Source, dest: &Path, json: bool) -> Result<()> {
    let data_dir = &source.data_dir;
    let database = data_dir.join(DATABASE);
    if !database.is_file() {
        bail!("{} holds no Cairn database", data_dir.display());
    }
    make_empty_dir(dest)?;
    let store = SqliteStore::open(&database)
        .await
        .with_context(|| format!("opening the database in {}", data_dir.display()))?;
    let _collector = hold_collector(&store).await?;
    let contents = store
        .snapshot_into(&dest.join(DATABASE))
        .await
        .context("copying the database")?;
    let names_key = (source.names_key.clone()).unwrap_or_else(|| data_dir.join(NAMES_KEY));
    let (data_dir, dest_dir) = (data_dir.clone(), dest.to_owned());
    let snapshot = contents.clone();
    let files = tokio::task::spawn_blocking(move || {
        copy_files(&data_dir, &names_key, &dest_dir, &snapshot)
    })
    .await??;
    let manifest = Manifest {
        format: FORMAT.to_owned(),
        version: FORMAT_VERSION,
        schema_version: contents.schema_version,
        created_at_ms: cairn_store::now_ms(),
        files,
    };
    write_manifest(dest, &manifest)?;
    let bytes: u64 = manifest.files.iter().map(|f| f.size).sum();
    if json {
        let summary = serde_json::json!({
            "path": dest.display().to_string(),
            "files": manifest.files.len(),
            "packs": contents.packs.len(),
            "bytes": bytes,
            "schemaVersion": contents.schema_version,
        });
        println!("{summary}");
    } else {
        println!(
            "backed up {} packs, {} files, {bytes} bytes (schema step {}) to {}",
            contents.packs.len(),
            manifest.files.len(),
            contents.schema_version,
            dest.display()
        );
    }
    Ok(())
}

/// The collector's lock, waiting for a collection that is running to finish.
async fn hold_collector(store: &SqliteStore) -> Result<cairn_store::CollectorLock> {
    let mut said = false;
    loop {
        if let Some(lock) = store.lock_collector().await? {
            return Ok(lock);
        }
        if !said {
            eprintln!("waiting for the garbage collection that is running to finish");
            said = true;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Copy what the snapshot references, and the keys, into `dest`: their manifest entries
/// (the database's first).
fn copy_files(
    data_dir: &Path,
    names_key: &Path,
    dest: &Path,
    snapshot: &SnapshotContents,
) -> Result<Vec<FileEntry>> {
    let mut files = vec![entry_of(dest, DATABASE)?];
    for sub in ["packs", "staging", "tus"] {
        create_private_dir(&dest.join(sub))?;
    }
    for (name, size) in &snapshot.packs {
        let path = format!("packs/{name}");
        let copied = copy_hashed(&data_dir.join(&path), &dest.join(&path), None)
            .with_context(|| format!("copying {}", data_dir.join(&path).display()))?;
        if copied.size != *size {
            bail!(
                "{} is {} bytes; the database says {size}",
                data_dir.join(&path).display(),
                copied.size
            );
        }
        files.push(entry(copied, path));
    }
    for id in &snapshot.unfinished_uploads {
        let path = format!("staging/{id}");
        // Staged bytes are a blob, never changed: whole, or deleted once processed.
        if let Some(copied) = copy_if_present(&data_dir.join(&path), &dest.join(&path), None)? {
            files.push(entry(copied, path));
        }
    }
    let tus: BTreeSet<&String> = (snapshot.open_tus_uploads.iter())
        .chain(&snapshot.unfinished_uploads)
        .collect();
    for id in tus {
        let path = format!("tus/{id}");
        let source = data_dir.join(&path);
        let Some(kept) = tus_kept_length(&source)? else {
            continue;
        };
        if let Some(copied) = copy_if_present(&source, &dest.join(&path), Some(kept))? {
            files.push(entry(copied, path));
        }
    }
    for (source, name) in [
        (data_dir.join(NODE_KEY), NODE_KEY),
        (names_key.to_owned(), NAMES_KEY),
    ] {
        match copy_if_present(&source, &dest.join(name), None)? {
            Some(copied) => files.push(entry(copied, name.to_owned())),
            None if name == NAMES_KEY && snapshot.live_names > 0 => bail!(
                "the database keeps {} IPNS names, whose keys only the names key {} opens, \
                 and it is not there (give --names-key as to `cairn serve`)",
                snapshot.live_names,
                source.display()
            ),
            None => {}
        }
    }
    sync_dir(dest)?;
    for sub in ["packs", "staging", "tus"] {
        sync_dir(&dest.join(sub))?;
    }
    Ok(files)
}

/// How many bytes of the TUS upload at `path` are kept whole (`None`: it is gone). Its file
/// only grows, except that an atomic chunk (marked by `PATH.chunk`, holding where it started)
/// is cut back if it fails: so bytes from where a marker says a chunk began are left out.
/// The marker is read before and after the length, so a chunk begun while the length was
/// read is seen by one of them. (A whole chunk begun and ended between the two reads, a few
/// microseconds, is kept, as a crash at that moment would keep it.)
fn tus_kept_length(path: &Path) -> Result<Option<u64>> {
    let marker = || -> Option<u64> {
        let mut name = path.as_os_str().to_owned();
        name.push(".chunk");
        fs::read_to_string(PathBuf::from(name))
            .ok()
            .and_then(|text| text.trim().parse().ok())
    };
    let before = marker();
    let length = match fs::metadata(path) {
        Ok(meta) => meta.len(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let after = marker();
    Ok(Some(
        [Some(length), before, after]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(length),
    ))
}

fn entry(copied: CopiedFile, path: String) -> FileEntry {
    FileEntry {
        path,
        size: copied.size,
        sha256: hex(&copied.sha256),
        mode: copied.mode,
    }
}

fn copy_if_present(from: &Path, to: &Path, limit: Option<u64>) -> Result<Option<CopiedFile>> {
    match copy_hashed(from, to, limit) {
        Ok(copied) => Ok(Some(copied)),
        Err(e) if e.kind() == io::ErrorKind::NotFound && !to.exists() => Ok(None),
        Err(e) => Err(e).with_context(|| format!("copying {}", from.display())),
    }
}

/// The manifest entry of a file already in `dir`.
fn entry_of(dir: &Path, path: &str) -> Result<FileEntry> {
    let full = dir.join(path);
    let (size, sha256) =
        file_sha256(&full).with_context(|| format!("reading {}", full.display()))?;
    let mode = fs::metadata(&full)?.permissions().mode() & 0o777;
    Ok(FileEntry {
        path: path.to_owned(),
        size,
        sha256: hex(&sha256),
        mode,
    })
}

/// Temp file, sync, rename, sync the directory: the manifest is there whole, or not at all.
fn write_manifest(dest: &Path, manifest: &Manifest) -> Result<()> {
    let temp = dest.join(format!("{MANIFEST}.tmp"));
    let mut file = File::create(&temp)?;
    serde_json::to_writer_pretty(&mut file, manifest)?;
    file.write_all(b"\n")?;
    file.sync_all()?;
    fs::rename(&temp, dest.join(MANIFEST))?;
    sync_dir(dest)?;
    Ok(())
}

/// A backup that does not verify: the first file found different from its manifest.
#[derive(Debug, thiserror::Error)]
pub enum Mismatch {
    #[error("{0}: no manifest.json (not a backup, or one that did not finish)")]
    NoManifest(String),
    #[error("{path}: {why}")]
    File { path: String, why: String },
}

/// Re-hash every file the manifest of the backup `dir` lists: the manifest, or the first
/// mismatch.
pub fn check(dir: &Path) -> Result<std::result::Result<Manifest, Mismatch>> {
    let manifest_path = dir.join(MANIFEST);
    let text = match fs::read(&manifest_path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Err(Mismatch::NoManifest(dir.display().to_string())));
        }
        Err(e) => return Err(e).with_context(|| format!("reading {}", manifest_path.display())),
    };
    let bad = |path: &Path, why: String| {
        Ok(Err(Mismatch::File {
            path: path.display().to_string(),
            why,
        }))
    };
    let manifest: Manifest = match serde_json::from_slice(&text) {
        Ok(manifest) => manifest,
        Err(e) => return bad(&manifest_path, format!("not a backup manifest: {e}")),
    };
    if manifest.format != FORMAT || manifest.version != FORMAT_VERSION {
        return bad(
            &manifest_path,
            format!(
                "a {} version {} manifest; this Cairn reads {FORMAT} version {FORMAT_VERSION}",
                manifest.format, manifest.version
            ),
        );
    }
    if !manifest.files.iter().any(|f| f.path == DATABASE) {
        return bad(&manifest_path, format!("lists no {DATABASE}"));
    }
    for file in &manifest.files {
        if !is_plain_relative(&file.path) {
            return bad(&manifest_path, format!("names the path {:?}", file.path));
        }
        let path = dir.join(&file.path);
        let (size, sha256) = match file_sha256(&path) {
            Ok(found) => found,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return bad(&path, "missing".to_owned());
            }
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        if size != file.size {
            return bad(
                &path,
                format!("{size} bytes; the manifest says {}", file.size),
            );
        }
        if hex(&sha256) != file.sha256 {
            return bad(&path, "its sha2-256 is not the manifest's".to_owned());
        }
    }
    Ok(Ok(manifest))
}

/// `cairn backup --verify DIR`: whether it verifies (the mismatch said on stderr).
pub fn verify(dir: &Path, json: bool) -> Result<bool> {
    let outcome = check(dir)?;
    if json {
        let report = match &outcome {
            Ok(manifest) => serde_json::json!({
                "ok": true,
                "files": manifest.files.len(),
                "bytes": manifest.files.iter().map(|f| f.size).sum::<u64>(),
                "schemaVersion": manifest.schema_version,
            }),
            Err(mismatch) => serde_json::json!({"ok": false, "problem": mismatch.to_string()}),
        };
        println!("{report}");
    }
    match outcome {
        Ok(manifest) => {
            if !json {
                let bytes: u64 = manifest.files.iter().map(|f| f.size).sum();
                println!(
                    "{}: {} files, {bytes} bytes, as the manifest says",
                    dir.display(),
                    manifest.files.len()
                );
            }
            Ok(true)
        }
        Err(mismatch) => {
            eprintln!("backup does not verify: {mismatch}");
            Ok(false)
        }
    }
}

/// `cairn restore SRC --data-dir DIR`: the verified backup `src` becomes the data directory
/// `data_dir`, which must be new or empty. Written beside it first and renamed into place,
/// so an interrupted restore leaves no half data directory.
pub fn restore(src: &Path, data_dir: &Path) -> Result<()> {
    if dir_has_entries(data_dir)? {
        bail!(
            "{} is not empty: restore into a new or empty data directory",
            data_dir.display()
        );
    }
    let manifest = match check(src)? {
        Ok(manifest) => manifest,
        Err(mismatch) => bail!("the backup does not verify, nothing restored: {mismatch}"),
    };
    let parent = match data_dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = data_dir
        .file_name()
        .context("--data-dir names no directory")?;
    let mut staging_name = name.to_owned();
    staging_name.push(format!(".restoring-{}", cairn_store::random_name()));
    let staging = parent.join(staging_name);
    let result = restore_into(src, &manifest, &staging).and_then(|()| {
        if data_dir.exists() {
            // Empty (checked above): rename(2) replaces an empty directory.
            fs::remove_dir(data_dir)?;
        }
        fs::rename(&staging, data_dir)?;
        sync_dir(&parent)?;
        Ok(())
    });
    if result.is_err() {
        let _ = fs::remove_dir_all(&staging);
    }
    result.with_context(|| format!("restoring into {}", data_dir.display()))?;
    println!(
        "restored {} files (schema step {}) into {}",
        manifest.files.len(),
        manifest.schema_version,
        data_dir.display()
    );
    Ok(())
}

fn restore_into(src: &Path, manifest: &Manifest, dir: &Path) -> Result<()> {
    create_private_dir(dir)?;
    let mut dirs = BTreeSet::from([dir.to_owned()]);
    for file in &manifest.files {
        let to = dir.join(&file.path);
        if let Some(parent) = to.parent() {
            if dirs.insert(parent.to_owned()) {
                fs::create_dir_all(parent)?;
            }
        }
        let copied = copy_hashed(&src.join(&file.path), &to, None)?;
        // Verified a moment ago, but read again: it must not have changed since.
        if copied.size != file.size || hex(&copied.sha256) != file.sha256 {
            bail!(
                "{} changed while it was restored",
                src.join(&file.path).display()
            );
        }
        fs::set_permissions(&to, fs::Permissions::from_mode(file.mode))?;
    }
    // The directories a running server writes into, present even when the backup had none.
    for sub in ["packs", "staging", "tus"] {
        if dirs.insert(dir.join(sub)) {
            fs::create_dir_all(dir.join(sub))?;
        }
    }
    for d in dirs.iter().rev() {
        sync_dir(d)?;
    }
    Ok(())
}

/// A new directory, or an existing empty one; refused otherwise.
fn make_empty_dir(dir: &Path) -> Result<()> {
    if dir_has_entries(dir)? {
        bail!(
            "{} is not empty: back up into a new or empty directory",
            dir.display()
        );
    }
    create_private_dir(dir)
}

/// The backup holds the keys: only its owner reads it.
fn create_private_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    Ok(())
}

fn dir_has_entries(dir: &Path) -> Result<bool> {
    match fs::read_dir(dir) {
        Ok(mut entries) => Ok(entries.next().is_some()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("reading {}", dir.display())),
    }
}

/// Only `name` or `dir/name`: never absolute, never `..`.
fn is_plain_relative(path: &str) -> bool {
    let path = Path::new(path);
    path.components().count() > 0 && path.components().all(|c| matches!(c, Component::Normal(_)))
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
