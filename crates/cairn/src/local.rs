//! Importing a local file or directory tree, as `ipfs add -r --only-hash` does.
//!
//! Every entry is walked; symlinks are stored as symlinks (never followed), empty directories
//! are kept, and hidden files are included (a website's `.well-known` must survive). Special
//! files (devices, FIFOs, sockets) have no UnixFS form and are refused by name.

use std::fs::{self, File};
use std::io::{self, Read};
use std::num::NonZeroUsize;
use std::path::Path;

use anyhow::{bail, Context, Result};
use cairn_unixfs::{BlockSink, DirectoryBuilder, FileImporter, Link, Profile};

/// Import `path` (a file, a directory or a symlink) and return its root.
pub fn import_path(path: &Path, profile: &Profile, sink: &mut dyn BlockSink) -> Result<Link> {
    let meta = fs::symlink_metadata(path).with_context(|| format!("reading {}", path.display()))?;
    if meta.is_dir() {
        let mut dir = DirectoryBuilder::new(profile);
        add_children(path, "", profile, &mut dir, sink)?;
        let root = dir
            .finish(sink)
            .with_context(|| format!("building directory {}", path.display()))?;
        return Ok(root);
    }
    if meta.file_type().is_symlink() {
        return Ok(cairn_unixfs::dir::write_symlink(
            profile,
            &link_target(path)?,
            sink,
        )?);
    }
    if meta.is_file() {
        return Ok(import_file(path, profile, sink)?.into());
    }
    bail!(
        "{}: not a regular file, directory or symlink",
        path.display()
    )
}

fn add_children(
    dir_path: &Path,
    prefix: &str,
    profile: &Profile,
    dir: &mut DirectoryBuilder,
    sink: &mut dyn BlockSink,
) -> Result<()> {
    let entries =
        fs::read_dir(dir_path).with_context(|| format!("listing {}", dir_path.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("listing {}", dir_path.display()))?;
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            bail!("{}: the name is not valid UTF-8", path.display());
        };
        let entry_path = format!("{prefix}{name}");
        let kind = entry
            .file_type()
            .with_context(|| format!("reading {}", path.display()))?;
        if kind.is_dir() {
            dir.add_directory(&entry_path)?;
            add_children(&path, &format!("{entry_path}/"), profile, dir, sink)?;
        } else if kind.is_symlink() {
            dir.add_symlink(&entry_path, &link_target(&path)?)?;
        } else if kind.is_file() {
            dir.add_file(&entry_path, import_file(&path, profile, sink)?)?;
        } else {
            bail!(
                "{}: not a regular file, directory or symlink",
                path.display()
            );
        }
    }
    Ok(())
}

fn link_target(path: &Path) -> Result<String> {
    let target = fs::read_link(path).with_context(|| format!("reading link {}", path.display()))?;
    target
        .into_os_string()
        .into_string()
        .map_err(|_| anyhow::anyhow!("{}: the link target is not valid UTF-8", path.display()))
}

fn import_file(
    path: &Path,
    profile: &Profile,
    sink: &mut dyn BlockSink,
) -> Result<cairn_unixfs::ImportedFile> {
    let mut file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let threads = std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN);
    let mut importer = FileImporter::with_threads(profile, sink, threads);
    let mut buf = vec![0u8; 4 << 20];
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        importer.push(&buf[..n])?;
    }
    Ok(importer.finish()?)
}
