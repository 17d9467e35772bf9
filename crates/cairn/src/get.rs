//! `cairn get CID[/PATH] [-o OUT]`: fetch the DAG as a CAR from the gateway, verify every block,
//! that the path leads from the CID asked for to the target, and that the target's DAG is
//! complete, then unpack it.
//!
//! The server is not trusted: nothing is written until the whole CAR has verified. Names in the
//! DAG are checked before anything is created (no `/`, `..`, `.`, NUL or empty names), so an
//! adversarial DAG cannot write outside the destination.

use std::collections::HashSet;
use std::fs;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use cairn_car::{import_complete, CarLimits, CarReader};
use cairn_unixfs::dir::validate_name;
use cairn_unixfs::read::{self, Node};
use cairn_unixfs::{BlockBytes, BlockSink, BlockSource, Cid};
use tokio::io::AsyncWriteExt;

use crate::client::Connection;
use crate::spill::SpillStore;

pub async fn get(conn: &Connection, target: &str, output: Option<PathBuf>) -> Result<PathBuf> {
    let (root_text, path) = target.split_once('/').unwrap_or((target, ""));
    let root: Cid = root_text
        .parse()
        .with_context(|| format!("{root_text:?} is not a CID"))?;
    let names: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let destination =
        output.unwrap_or_else(|| PathBuf::from(names.last().map_or(root_text, String::as_str)));
    if fs::symlink_metadata(&destination).is_ok() {
        bail!(
            "{} already exists; refusing to overwrite it",
            destination.display()
        );
    }
    let mut url = reqwest::Url::parse(&conn.url).context("the upload host URL")?;
    url.path_segments_mut()
        .map_err(|()| anyhow::anyhow!("{} cannot take a path", conn.url))?
        .pop_if_empty()
        .push("ipfs")
        .push(root_text)
        .extend(&names);
    url.set_query(Some("format=car"));
    let mut response = conn
        .http
        .get(url)
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
    let at = destination.clone();
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || -> Result<()> {
        let mut blocks = SpillStore::new()?;
        let reader = CarReader::new(
            BufReader::new(fs::File::open(&car_path)?),
            CarLimits::default(),
        )?;
        if names.is_empty() {
            let got = import_complete(reader, &mut blocks, &mut |_| Ok(false))
                .context("the CAR does not verify")?;
            if got != root {
                bail!("the CAR is rooted at {got}, not at {root}");
            }
            return unpack(&root, &at, &mut blocks);
        }
        // A path's CAR holds the blocks along the path and the target's DAG, not the siblings:
        // verify each block, follow the path from the root, then check the target is whole.
        if reader.roots() != [root] {
            bail!("the CAR is not rooted at {root}");
        }
        for entry in reader {
            let (cid, block) = entry.context("the CAR does not verify")?;
            blocks.put_block(&cid, BlockBytes::new(&block))?;
        }
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let resolved = read::resolve(&root, &names, &mut blocks)
            .with_context(|| format!("following {path:?} from {root}"))?;
        let mut stack = vec![resolved.cid];
        let mut seen = HashSet::new();
        while let Some(cid) = stack.pop() {
            if !seen.insert(cid) {
                continue;
            }
            let block = blocks
                .get_block(&cid)?
                .with_context(|| format!("the CAR is missing block {cid}"))?;
            stack.extend(cairn_unixfs::dag::links(&cid, &block)?);
        }
        unpack(&resolved.cid, &at, &mut blocks)
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
