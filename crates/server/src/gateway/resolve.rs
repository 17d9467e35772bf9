//! The CID and path a request names, and where the path leads.

use cairn_unixfs::ipld::{self, Followed};
use cairn_unixfs::read::{ReadError, Resolved};
use cairn_unixfs::Cid;

use super::inline::{identity_digest_len, MAX_IDENTITY_BYTES};
use super::{blocking, Request, StoredReader};
use crate::error::ApiError;

/// The root CID and the path's names from the route's parameters. A path deeper than the
/// reader may walk is refused here, before any block is read.
pub fn parse(
    params: &[(String, String)],
    max_depth: usize,
) -> Result<(Cid, Vec<String>), ApiError> {
    let param = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let cid_text = param("cid").unwrap_or_default();
    let root: Cid = cid_text
        .parse()
        .map_err(|e| match identity_digest_len(cid_text) {
            Some(len) if len > MAX_IDENTITY_BYTES => ApiError::BadRequest(format!(
                "{cid_text:?} is an identity CID of {len} bytes; identity CIDs are limited to \
             {MAX_IDENTITY_BYTES} (IPIP-0512)"
            )),
            Some(len) => ApiError::BadRequest(format!(
                "{cid_text:?} is an identity CID of {len} bytes; this gateway reads identity CIDs \
             of up to 64 bytes"
            )),
            // Worded as other gateways word it, for tools that match it.
            None => ApiError::BadRequest(format!(
                "invalid path \"/ipfs/{cid_text}\": {cid_text:?} is not a CID: {e}"
            )),
        })?;
    Ok((root, path_names(params, max_depth)?))
}

/// The path's names from the route's parameters, refused past `max_depth`.
pub(super) fn path_names(
    params: &[(String, String)],
    max_depth: usize,
) -> Result<Vec<String>, ApiError> {
    let path: Vec<String> = (params.iter())
        .find(|(k, _)| k == "path")
        .map_or("", |(_, v)| v.as_str())
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    if path.len() > max_depth {
        return Err(ApiError::DagTooLarge(format!(
            "the path has {} segments; this gateway follows at most {max_depth}",
            path.len()
        )));
    }
    Ok(path)
}

/// Follow the request's path from its root; with the CID each name leads to, root first
/// (its logical roots, for `X-Ipfs-Roots`: a HAMT's shards on the way are not among them).
/// Through UnixFS a name is a directory's entry; through a block of another codec, names
/// are keys and indexes inside it until a link is met (a name inside the block leads to the
/// block itself).
pub(super) async fn resolve(
    reader: StoredReader,
    request: &Request,
) -> Result<(StoredReader, Resolved, Vec<Cid>), ApiError> {
    let (root, path) = (request.root, request.path.clone());
    let (reader, (resolved, roots)) = blocking(reader, move |reader| {
        // One step at a time, so what each name leads to is known; each step reads its
        // block again (from the reader's recent blocks, within the budget).
        let mut resolved = reader.resolve(&root, &[])?;
        let mut roots = vec![root];
        let mut depth = 0;
        while depth < path.len() {
            if !resolved.node.is_unixfs() {
                let block = reader.block(&resolved.cid)?;
                let names: Vec<&str> = path[depth..].iter().map(String::as_str).collect();
                let (link, names) = match ipld::follow(&resolved.cid, &block, &names)? {
                    Followed::Link { cid, names } => (cid, names),
                    Followed::Inside => {
                        return Err(ReadError::InsideBlock {
                            path: path.join("/"),
                            cid: resolved.cid,
                        })
                    }
                    Followed::Missing { at } => {
                        return Err(ReadError::NotFound {
                            path: path[..=depth + at].join("/"),
                        })
                    }
                };
                roots.extend(std::iter::repeat_n(resolved.cid, names - 1));
                roots.push(link);
                resolved.node = reader.node(&link)?.1;
                resolved.cid = link;
                resolved.path_blocks.push(link);
                depth += names;
                continue;
            }
            let step = reader
                .resolve(&resolved.cid, &[path[depth].as_str()])
                .map_err(|e| whole_path(e, &path[..=depth]))?;
            resolved
                .path_blocks
                .extend_from_slice(&step.path_blocks[1..]);
            (resolved.cid, resolved.node) = (step.cid, step.node);
            roots.push(step.cid);
            depth += 1;
        }
        Ok((resolved, roots))
    })
    .await
    // The whole path asked, so a browser's reader sees where the name is missing from.
    .map_err(|e| match e {
        ApiError::NotFound(why) => ApiError::NotFound(format!("{}: {why}", request.content_path)),
        e => e,
    })?;
    Ok((reader, resolved, roots))
}

/// A step's error, naming the path from the root rather than the step's one name.
fn whole_path(e: ReadError, path: &[String]) -> ReadError {
    match e {
        ReadError::NotFound { .. } => ReadError::NotFound {
            path: path.join("/"),
        },
        ReadError::NotADirectory { .. } => ReadError::NotADirectory {
            path: path[..path.len() - 1].join("/"),
        },
        e => e,
    }
}
