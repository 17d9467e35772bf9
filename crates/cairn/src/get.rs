//! `cairn get CID [-o PATH]`: fetch the DAG as a CAR from the gateway, verify every block and
//! that the DAG is complete and rooted at the CID asked for, then unpack it.
//!
//! The server is not trusted: nothing is written until the whole CAR has verified. Names in the
//! DAG are checked before anything is created (no `/`, `..`, `.`, NUL or empty names), so an
//! adversarial DAG cannot write outside the destination.

use std::fs;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use cairn_car::{import_complete, CarLimits, CarReader};
use cairn_unixfs::dir::validate_name;
use cairn_unixfs::read::{self, Node};
use cairn_unixfs::{BlockSource, Cid};
use tokio::io::AsyncWriteExt;

use crate::client::Connection;
use crate::spill::SpillStore;

pub async fn get(conn: &Connection, cid: &str, output: Option<PathBuf>) -> Result<PathBuf> {
    let root: Cid = cid
        .parse()
        .with_context(|| format!("{cid:?} is not a CID"))?;
    let destination = output.unwrap_or_else(|| PathBuf::from(cid));
    if fs::symlink_metadata(&destination).is_ok() {
        bail!(
            "{} already exists; refusing to overwrite it",
            destination.display()
        );
    }
    let mut response = conn
        .http
        .get(format!("{}/ipfs/{root}?format=car", conn.url))
        .send()
        .await
        .context("fetching the CAR")?;
    if !response.status().is_success() {
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        bail!(
            "the gateway answered: {}",
            body["message"].as_str().unwrap_or("an error")
        );
    }
    let car = tempfile::NamedTempFile::new().context("creating a temporary file")?;
    let mut file = tokio::fs::File::create(car.path()).await?;
    while let Some(chunk) = response.chunk().await.context("receiving the CAR")? {
        file.write_all(&chunk).await?;
    }
    file.flush().await?;
    let car_path = car.path().to_owned();
    let target = destination.clone();
    tokio::task::spawn_blocking(move || -> Result<()> {
        let mut blocks = SpillStore::new()?;
        let reader = CarReader::new(
            BufReader::new(fs::File::open(&car_path)?),
            CarLimits::default(),
        )?;
        let got = import_complete(reader, &mut blocks, &mut |_| Ok(false))
            .context("the CAR does not verify")?;
        if got != root {
            bail!("the CAR is rooted at {got}, not at {root}");
        }
        unpack(&root, &target, &mut blocks)
    })
    .await??;
    Ok(destination)
}

fn unpack(cid: &Cid, at: &Path, blocks: &mut dyn BlockSource) -> Result<()> {
    let node = read::load(cid, blocks)?;
    match &node {
        Node::File { size, .. } => {
            let mut out =
                fs::File::create_new(at).with_context(|| format!("creating {}", at.display()))?;
            read::read_range(cid, 0..*size, blocks, &mut Vec::new(), &mut |bytes| {
                out.write_all(&bytes)
            })?;
        }
        Node::Symlink { target } => std::os::unix::fs::symlink(target, at)
            .with_context(|| format!("creating the link {}", at.display()))?,
        Node::Directory { .. } | Node::HamtShard { .. } => {
            fs::create_dir(at).with_context(|| format!("creating {}", at.display()))?;
            for entry in read::list(&node, blocks)? {
                if let Err(reason) = validate_name(&entry.name) {
                    bail!(
                        "the DAG has an entry named {:?} ({reason}); refusing it",
                        entry.name
                    );
                }
                unpack(&entry.cid, &at.join(&entry.name), blocks)?;
            }
        }
    }
    Ok(())
}
