//! The CID and path a request names, and where the path leads.

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
            None => ApiError::BadRequest(format!("{cid_text:?} is not a CID: {e}")),
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
pub(super) async fn resolve(
    reader: StoredReader,
    request: &Request,
) -> Result<(StoredReader, Resolved, Vec<Cid>), ApiError> {
    let (root, path) = (request.root, request.path.clone());
    let (reader, (resolved, roots)) = blocking(reader, move |reader| {
        // One name at a time, so what each name leads to is known; each step reads its
        // directory's block again (from the reader's recent blocks, within the budget).
        let mut resolved = reader.resolve(&root, &[])?;
        let mut roots = vec![root];
        for (depth, name) in path.iter().enumerate() {
            let step = reader
                .resolve(&resolved.cid, &[name.as_str()])
                .map_err(|e| whole_path(e, &path[..=depth]))?;
            resolved
                .path_blocks
                .extend_from_slice(&step.path_blocks[1..]);
            (resolved.cid, resolved.node) = (step.cid, step.node);
            roots.push(step.cid);
        }
        Ok((resolved, roots))
    })
    .await?;
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
