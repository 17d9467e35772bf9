//! `cairn`: the command line. Content commands (`cid`, `car`) work offline, with the same
//! engine the server uses, so a CID computed here is the CID the service will return.

mod local;
mod spill;

use std::fs;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use cairn_car::{export_dfs, CarWriter};
use cairn_unixfs::{DiscardBlocks, Profile};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cairn", version, about = "Content upload service for IPFS")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the root CID of a file or directory (like `ipfs add -r --only-hash`).
    Cid {
        path: PathBuf,
        #[arg(long, default_value = "unixfs-v1-2025", value_parser = parse_profile)]
        profile: Profile,
    },
    /// Pack a file or directory into a CAR v1 file (root first, depth-first order).
    Car {
        path: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
        #[arg(long, default_value = "unixfs-v1-2025", value_parser = parse_profile)]
        profile: Profile,
    },
}

fn parse_profile(name: &str) -> Result<Profile, String> {
    name.parse()
        .map_err(|e: cairn_unixfs::profile::UnknownProfile| e.to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(1)
        }
    }
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Cid { path, profile } => {
            let root = local::import_path(&path, &profile, &mut DiscardBlocks)?;
            println!("{}", root.cid);
        }
        Command::Car {
            path,
            output,
            profile,
        } => {
            let root = write_car(&path, &output, &profile)?;
            println!("{root}");
        }
    }
    Ok(())
}

/// Import `path` into a spill store, then write the CAR next to `output` and rename it into
/// place, so a failed run never leaves a partial CAR under the requested name.
fn write_car(path: &Path, output: &Path, profile: &Profile) -> Result<cairn_unixfs::Cid> {
    let mut spill = spill::SpillStore::new().context("creating a temporary file")?;
    let root = local::import_path(path, profile, &mut spill)?.cid;
    let dir = match output.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let temp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("creating a file in {}", dir.display()))?;
    let mut car = CarWriter::new(BufWriter::new(temp), &[root])?;
    export_dfs(&root, &mut spill, &mut car)?;
    let temp = car
        .into_inner()
        .into_inner()
        .map_err(|e| e.into_error())
        .context("writing the CAR")?;
    temp.as_file().sync_all().context("writing the CAR")?;
    temp.persist(output)
        .with_context(|| format!("writing {}", output.display()))?;
    if let Ok(meta) = fs::metadata(output) {
        eprintln!("wrote {} ({} bytes)", output.display(), meta.len());
    }
    Ok(root)
}
