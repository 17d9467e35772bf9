//! `?format=tar` and `Accept: application/x-tar` (path gateway spec, "TAR", IPIP-0288): a
//! UnixFS file, directory or symlink as a tar stream, streamed as its blocks are read and
//! verified, within the request's read budget (depth, blocks, bytes).
//!
//! The top entry is named by the CID the path resolved to; a directory's entries follow it
//! depth-first, each named by its path below it, cleaned as `path.Join` cleans (`a/../b` is
//! `b`). A name that would leave the top entry (a link named `..`) is refused, as the IPIP's
//! security section asks: `422` when it comes before the first 64 KiB are sent, else the
//! stream is cut; a client never gets a tar that unpacks outside its target.
//! Output is deterministic: every entry has mtime 0, owner 0, mode 0644 (files) or 0755
//! (directories), since UnixFS 1.0 keeps none of them; names and sizes too long for ustar go
//! in pax records.

use axum::body::Body;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use cairn_unixfs::node::NodeError;
use cairn_unixfs::read::{Node, ReadError, Resolved};
use cairn_unixfs::Cid;

use super::{content_disposition, streamed, Request, Sender, StoredReader};
use crate::error::ApiError;

const BLOCK: usize = 512;
/// What a tar header's name and link name fields hold; longer goes in a pax record.
const NAME_BYTES: usize = 100;
/// The largest size a ustar header's 11 octal digits hold; larger goes in a pax record.
const USTAR_MAX_SIZE: u64 = 0o77777777777;
/// Headers and padding are gathered into writes of about this many bytes.
const GATHER: usize = 64 << 10;

/// The kinds of entry a UnixFS DAG makes.
#[derive(Clone, Copy)]
enum Kind {
    File,
    Directory,
    Symlink,
}

impl Kind {
    fn flag(self) -> u8 {
        match self {
            Self::File => b'0',
            Self::Symlink => b'2',
            Self::Directory => b'5',
        }
    }

    fn mode(self) -> &'static [u8] {
        match self {
            Self::Directory => b"0000755\0",
            _ => b"0000644\0",
        }
    }
}

/// The tar of what `resolved` is.
pub(super) async fn tar(
    reader: StoredReader,
    resolved: Resolved,
    request: &Request,
) -> Result<Response, ApiError> {
    let cid = resolved.cid;
    let top = cid.to_string();
    let name = (request.query.filename.clone()).unwrap_or_else(|| format!("{top}.tar"));
    let body: Body = streamed(reader, move |reader, sender| {
        let mut out = Out {
            sender,
            buf: BytesMut::with_capacity(GATHER),
        };
        write_tree(reader, &mut out, top, cid, resolved.node)?;
        // The end of an archive: two zero blocks.
        out.put(&[0; 2 * BLOCK])?;
        out.flush().map_err(ReadError::Io)
    })
    .await?;
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-tar"),
    );
    // Weak: the bytes are this server's rendering of the DAG, not the DAG itself (path
    // gateway spec, `Etag`).
    if let Ok(etag) = HeaderValue::from_str(&format!("W/\"{cid}.x-tar\"")) {
        headers.insert(header::ETAG, etag);
    }
    headers.insert(
        header::CONTENT_DISPOSITION,
        content_disposition("attachment", &name),
    );
    Ok(response)
}

/// Where the tar's bytes go: small pieces gathered, a file's content sent as it is read.
struct Out<'a> {
    sender: &'a Sender,
    buf: BytesMut,
}

impl Out<'_> {
    fn put(&mut self, bytes: &[u8]) -> Result<(), ReadError> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= GATHER {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.sender.send(self.buf.split().freeze())
    }

    fn content(&mut self, bytes: Bytes) -> std::io::Result<()> {
        self.flush()?;
        self.sender.send(bytes)
    }
}

/// Every entry of the DAG under `cid` (named `top`), depth-first in link order, with an
/// explicit stack: its depth is the request's to bound, not the thread's.
fn write_tree(
    reader: &mut StoredReader,
    out: &mut Out<'_>,
    top: String,
    cid: Cid,
    node: Node,
) -> Result<(), ReadError> {
    let max_depth = reader.limits().max_depth;
    let mut stack = vec![(top.clone(), cid, Some(node), 0usize)];
    while let Some((name, cid, node, depth)) = stack.pop() {
        if depth > max_depth {
            return Err(ReadError::TooDeep { limit: max_depth });
        }
        let node = match node {
            Some(node) => node,
            None => reader.node(&cid)?.1,
        };
        match &node {
            Node::File { size, .. } => {
                header(out, &name, Kind::File, *size, "")?;
                reader.read_range(&cid, 0..*size, &mut |_, _| Ok(()), &mut |bytes| {
                    out.content(bytes)
                })?;
                let padding = (BLOCK - (*size as usize % BLOCK)) % BLOCK;
                out.put(&[0; BLOCK][..padding])?;
            }
            Node::Symlink { target } => header(out, &name, Kind::Symlink, 0, target)?,
            Node::Ipld { codec, .. } => {
                return Err(ReadError::not_unixfs(&cid, *codec, "tar entries"))
            }
            Node::Directory { .. } | Node::HamtShard { .. } => {
                header(out, &format!("{name}/"), Kind::Directory, 0, "")?;
                let entries = reader.list(&node)?;
                for entry in entries.into_iter().rev() {
                    let path = within(&top, &format!("{name}/{}", entry.name))
                        .ok_or_else(|| outside_root(&cid, &entry.name, &top))?;
                    stack.push((path, entry.cid, None, depth + 1));
                }
            }
        }
    }
    Ok(())
}

/// `path` cleaned as Go's `path.Clean` cleans it, if it is still `top` or under it.
fn within(top: &str, path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    let cleaned = parts.join("/");
    let inside = cleaned == top || cleaned.starts_with(&format!("{top}/"));
    (inside && !cleaned.contains('\0')).then_some(cleaned)
}

/// The directory `cid` names an entry that would unpack outside the tar's root: the DAG's
/// fault (the IPIP's security section), said before any byte is sent when it comes early.
fn outside_root(cid: &Cid, name: &str, top: &str) -> ReadError {
    NodeError::Invalid {
        cid: *cid,
        reason: format!(
            "its entry {name:?} is outside the tar's root {top}: relative UnixFS paths outside \
             the root are not allowed (ask for format=car instead)"
        ),
    }
    .into()
}

/// A ustar header for one entry, after a pax record when its name, link or size needs one.
fn header(
    out: &mut Out<'_>,
    name: &str,
    kind: Kind,
    size: u64,
    link: &str,
) -> Result<(), ReadError> {
    let mut records = Vec::new();
    if name.len() > NAME_BYTES {
        records.extend(pax_record("path", name));
    }
    if link.len() > NAME_BYTES {
        records.extend(pax_record("linkpath", link));
    }
    if size > USTAR_MAX_SIZE {
        records.extend(pax_record("size", &size.to_string()));
    }
    if !records.is_empty() {
        let pax_name = format!("PaxHeaders/{}", &name[name.len().saturating_sub(80)..]);
        out.put(&ustar(
            &pax_name,
            b'x',
            b"0000644\0",
            records.len() as u64,
            "",
        ))?;
        out.put(&records)?;
        out.put(&[0; BLOCK][..(BLOCK - records.len() % BLOCK) % BLOCK])?;
    }
    out.put(&ustar(
        name,
        kind.flag(),
        kind.mode(),
        size.min(USTAR_MAX_SIZE),
        link,
    ))
}

/// One pax record, `LEN key=value\n`, whose length counts its own digits.
fn pax_record(key: &str, value: &str) -> Vec<u8> {
    let rest = key.len() + value.len() + 3; // " ", "=" and "\n"
    let mut len = rest + 1;
    while len != rest + len.to_string().len() {
        len = rest + len.to_string().len();
    }
    format!("{len} {key}={value}\n").into_bytes()
}

/// A 512-byte ustar header (names cut to their fields; the pax record before it holds them
/// whole).
fn ustar(name: &str, flag: u8, mode: &[u8], size: u64, link: &str) -> [u8; BLOCK] {
    let mut block = [0u8; BLOCK];
    let put = |block: &mut [u8; BLOCK], at: usize, len: usize, bytes: &[u8]| {
        let n = bytes.len().min(len);
        block[at..at + n].copy_from_slice(&bytes[..n]);
    };
    put(&mut block, 0, NAME_BYTES, name.as_bytes());
    put(&mut block, 100, 8, mode);
    put(&mut block, 108, 8, b"0000000\0");
    put(&mut block, 116, 8, b"0000000\0");
    put(&mut block, 124, 12, format!("{size:011o}\0").as_bytes());
    put(&mut block, 136, 12, b"00000000000\0");
    block[156] = flag;
    put(&mut block, 157, NAME_BYTES, link.as_bytes());
    put(&mut block, 257, 8, b"ustar\x0000");
    // The checksum: the header's bytes summed, its own field counted as spaces.
    block[148..156].fill(b' ');
    let sum: u32 = block.iter().map(|b| u32::from(*b)).sum();
    put(&mut block, 148, 8, format!("{sum:06o}\0 ").as_bytes());
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cleaned_and_kept_under_the_root() {
        assert_eq!(within("bafy", "bafy/a/../b").unwrap(), "bafy/b");
        assert_eq!(
            within("bafy", "bafy/foobar/directory/../file").unwrap(),
            "bafy/foobar/file"
        );
        assert!(within("bafy", "bafy/../foo").is_none());
        assert!(within("bafy", "bafy/a/../../x").is_none());
        assert!(within("bafy", "bafy/a\0b").is_none());
    }

    #[test]
    fn pax_records_count_their_own_length() {
        for value in ["x", &"y".repeat(93), &"z".repeat(994)] {
            let record = pax_record("path", value);
            let (len, _) = std::str::from_utf8(&record)
                .unwrap()
                .split_once(' ')
                .unwrap();
            assert_eq!(len.parse::<usize>().unwrap(), record.len(), "{value:?}");
        }
    }

    #[test]
    fn headers_read_back_with_the_tar_crate() {
        let block = ustar("bafy/a.txt", b'0', b"0000644\0", 5, "");
        let parsed = tar::Header::from_byte_slice(&block);
        let mut blank = block;
        blank[148..156].fill(b' ');
        let sum: u32 = blank.iter().map(|b| u32::from(*b)).sum();
        assert_eq!(parsed.cksum().unwrap(), sum);
        assert_eq!(parsed.path().unwrap().to_str(), Some("bafy/a.txt"));
        assert_eq!(parsed.size().unwrap(), 5);
        assert_eq!(parsed.entry_type(), tar::EntryType::Regular);
    }
}
