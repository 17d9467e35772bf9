//! Packing a local file or tree into a CAR v1, root first in DFS order (`cairn car`, and
//! `cairn upload` of a directory).

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use cairn_car::{export_dfs, CarWriter};
use cairn_unixfs::{Cid, Profile};

use crate::{local, spill};

/// Import `path` into a spill store, then write the CAR next to `output` and rename it into
/// place, so a failed run never leaves a partial CAR under the requested name (a device or a
/// pipe is written directly).
pub fn write_car(path: &Path, output: &Path, profile: &Profile) -> Result<Cid> {
    let mut spill = spill::SpillStore::new().context("creating a temporary file")?;
    let root = local::import_path(path, profile, &mut spill)?.cid;
    if fs::metadata(output).is_ok_and(|meta| !meta.is_file() && !meta.is_dir()) {
        // A device or a pipe (`-o /dev/null`, `-o /dev/stdout`): write to it; renaming a
        // temporary file over it would replace the device.
        let file = fs::OpenOptions::new()
            .write(true)
            .open(output)
            .with_context(|| format!("opening {}", output.display()))?;
        export_car(&root, &mut spill, file)
            .with_context(|| format!("writing {}", output.display()))?;
        return Ok(root);
    }
    let dir = match output.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let temp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("creating a file in {}", dir.display()))?;
    let temp = export_car(&root, &mut spill, temp).context("writing the CAR")?;
    temp.as_file().sync_all().context("writing the CAR")?;
    temp.persist(output)
        .with_context(|| format!("writing {}", output.display()))?;
    if let Ok(meta) = fs::metadata(output) {
        tracing::debug!(path = %output.display(), bytes = meta.len(), "CAR written");
    }
    Ok(root)
}

/// The CAR of `root`, from the spill store, into `out`, flushed; returns `out`.
fn export_car<W: Write>(root: &Cid, spill: &mut spill::SpillStore, out: W) -> Result<W> {
    let mut car = CarWriter::new(BufWriter::new(out), &[*root])?;
    export_dfs(root, spill, &mut car)?;
    Ok(car.into_inner().into_inner().map_err(|e| e.into_error())?)
}
