//! Blocks of the IPLD codecs beyond UnixFS's, as far as their links: a DAG of any codec this
//! service keeps (dag-cbor, dag-json, dag-jose, json, cbor) can then be checked complete,
//! walked, collected and served like a UnixFS one. Nothing here converts between codecs.
//!
//! - dag-cbor and dag-jose (a dag-cbor encoding of JOSE objects): a link is tag 42 around a
//!   byte string holding `0x00` and a CID. The scan is iterative and bounded by the block.
//! - dag-json: a link is a map whose only key is `"/"` with a string value (`{"/": "bafy..."}`);
//!   `{"/": {"bytes": ...}}` is bytes, not a link.
//! - json, cbor: plain data; their blocks link to nothing, whatever they hold.
//!
//! Such a block is decoded as a `Node::Ipld`; a path goes through it by [`follow`].

use cid::Cid;

use crate::block::{DAG_PB, RAW};

pub const DAG_CBOR: u64 = 0x71;
pub const DAG_JSON: u64 = 0x0129;
pub const DAG_JOSE: u64 = 0x85;
pub const JSON: u64 = 0x0200;
pub const CBOR: u64 = 0x51;

/// CBOR's tag for a CID (the dag-cbor spec).
const CID_TAG: u64 = 42;
/// Nesting a CBOR scan follows at most (the stack of containers still open).
const MAX_NESTING: usize = 4096;

/// The codecs a block may be in here, by name (for messages).
pub fn codec_name(codec: u64) -> Option<&'static str> {
    Some(match codec {
        DAG_PB => "dag-pb",
        RAW => "raw",
        DAG_CBOR => "dag-cbor",
        DAG_JSON => "dag-json",
        DAG_JOSE => "dag-jose",
        JSON => "json",
        CBOR => "cbor",
        _ => return None,
    })
}

/// Why a block of another codec than UnixFS's cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IpldError {
    #[error(
        "block {cid} uses codec {codec:#x}; the codecs kept here are dag-pb, raw, dag-cbor, \
         dag-json, dag-jose, json and cbor"
    )]
    UnsupportedCodec { cid: Cid, codec: u64 },
    /// Not well formed in the codec its CID names.
    #[error("block {cid} is not valid {}: {reason}", codec_name(cid.codec()).unwrap_or("IPLD"))]
    Invalid { cid: Cid, reason: String },
}

/// The links of `block` (of `cid`, in a codec other than dag-pb and raw), which must be well
/// formed in its codec.
pub fn links(cid: &Cid, block: &[u8]) -> Result<Vec<Cid>, IpldError> {
    let links = match cid.codec() {
        DAG_CBOR | DAG_JOSE => cbor_links(block),
        DAG_JSON => json_links(block),
        // Plain data: checked as well formed, and linking to nothing.
        JSON => serde_json::from_slice::<serde_json::Value>(block)
            .map(|_| Vec::new())
            .map_err(|e| e.to_string()),
        CBOR => scan(block, 0, &mut Vec::new(), false).and_then(|end| whole(block, end)),
        codec => return Err(IpldError::UnsupportedCodec { cid: *cid, codec }),
    };
    links.map_err(|reason| not_valid(cid, reason))
}

/// A block that is not well formed in the codec its CID names.
fn not_valid(cid: &Cid, reason: String) -> IpldError {
    IpldError::Invalid { cid: *cid, reason }
}

/// Where a path inside a block leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Followed {
    /// To a link, after the first `names` names of the path.
    Link { cid: Cid, names: usize },
    /// Every name was found, and the last is a value inside the block, not a link.
    Inside,
    /// The name at this index of the path is not there (or what holds it is no map or list).
    Missing { at: usize },
}

/// Follow `path` through the maps and lists inside `block` (of `cid`): map keys by name,
/// list items by index, until a link is met. Only dag-cbor, dag-jose and dag-json have links;
/// in json and cbor a path only ever ends inside the block.
pub fn follow(cid: &Cid, block: &[u8], path: &[&str]) -> Result<Followed, IpldError> {
    let followed = match cid.codec() {
        DAG_CBOR | DAG_JOSE => cbor_follow(block, path, true),
        CBOR => cbor_follow(block, path, false),
        DAG_JSON => json_follow(block, path, true),
        JSON => json_follow(block, path, false),
        codec => return Err(IpldError::UnsupportedCodec { cid: *cid, codec }),
    };
    followed.map_err(|reason| not_valid(cid, reason))
}

fn json_follow(block: &[u8], path: &[&str], with_links: bool) -> Result<Followed, String> {
    let mut value: serde_json::Value = serde_json::from_slice(block).map_err(|e| e.to_string())?;
    for (at, name) in path.iter().enumerate() {
        let next = match &mut value {
            serde_json::Value::Object(map) => map.remove(*name),
            serde_json::Value::Array(items) => match name.parse::<usize>() {
                Ok(index) if index < items.len() => Some(items.swap_remove(index)),
                _ => None,
            },
            _ => None,
        };
        let Some(next) = next else {
            return Ok(Followed::Missing { at });
        };
        if with_links {
            if let Some(cid) = json_link(&next)? {
                return Ok(Followed::Link { cid, names: at + 1 });
            }
        }
        value = next;
    }
    Ok(Followed::Inside)
}

/// The CID a dag-json value is a link to: `{"/": "cid"}`.
fn json_link(value: &serde_json::Value) -> Result<Option<Cid>, String> {
    match value {
        serde_json::Value::Object(map) if map.len() == 1 => match map.get("/") {
            Some(serde_json::Value::String(text)) => Cid::try_from(text.as_str())
                .map(Some)
                .map_err(|e| format!("{text:?} marks a link but is not a CID: {e}")),
            _ => Ok(None),
        },
        _ => Ok(None),
    }
}

fn cbor_follow(block: &[u8], path: &[&str], with_links: bool) -> Result<Followed, String> {
    // The whole block is checked first: a path is never followed through broken bytes.
    whole(block, scan(block, 0, &mut Vec::new(), with_links)?)?;
    let mut at = 0usize;
    for (index, name) in path.iter().enumerate() {
        let mut pos = at;
        let (major, len) = head(block, &mut pos)?;
        let found = match major {
            5 => {
                let mut found = None;
                for _ in 0..len {
                    let key_at = pos;
                    let (key_major, key_len) = head(block, &mut pos)?;
                    let value_at = scan(block, key_at, &mut Vec::new(), with_links)?;
                    let key = block.get(pos..value_at).unwrap_or_default();
                    if key_major == 3
                        && usize::try_from(key_len).ok() == Some(key.len())
                        && key == name.as_bytes()
                    {
                        found = Some(value_at);
                        break;
                    }
                    pos = scan(block, value_at, &mut Vec::new(), with_links)?;
                }
                found
            }
            4 => match name.parse::<u64>() {
                Ok(wanted) if wanted < len => {
                    for _ in 0..wanted {
                        pos = scan(block, pos, &mut Vec::new(), with_links)?;
                    }
                    Some(pos)
                }
                _ => None,
            },
            _ => None,
        };
        let Some(value_at) = found else {
            return Ok(Followed::Missing { at: index });
        };
        if with_links {
            let mut links = Vec::new();
            let mut pos = value_at;
            if head(block, &mut pos)? == (6, CID_TAG) {
                scan(block, value_at, &mut links, true)?;
                if let [cid] = links[..] {
                    return Ok(Followed::Link {
                        cid,
                        names: index + 1,
                    });
                }
            }
        }
        at = value_at;
    }
    Ok(Followed::Inside)
}

fn whole(block: &[u8], end: usize) -> Result<Vec<Cid>, String> {
    if end == block.len() {
        Ok(Vec::new())
    } else {
        Err(format!("{} bytes follow the item", block.len() - end))
    }
}

/// The CIDs tag 42 marks in a CBOR item (the whole of `bytes`, which must be one item).
pub fn cbor_links(bytes: &[u8]) -> Result<Vec<Cid>, String> {
    let mut links = Vec::new();
    let end = scan(bytes, 0, &mut links, true)?;
    whole(bytes, end)?;
    Ok(links)
}

/// Read the one CBOR item at `start`, iteratively, adding the CIDs tag 42 marks in it to
/// `links` when `with_links` (dag-cbor; in plain CBOR a tag is just a tag); where it ends.
fn scan(
    bytes: &[u8],
    start: usize,
    links: &mut Vec<Cid>,
    with_links: bool,
) -> Result<usize, String> {
    let mut at = start;
    // Items still to read in each open container (the item itself is one).
    let mut open: Vec<u64> = vec![1];
    // A tag 42 was read: the next item is its CID.
    let mut cid_next = false;
    while let Some(left) = open.last_mut() {
        if *left == 0 {
            open.pop();
            continue;
        }
        *left -= 1;
        let (major, value) = head(bytes, &mut at)?;
        if cid_next && major != 2 {
            return Err("tag 42 does not hold a byte string".into());
        }
        match major {
            // Integers and simple values, floats: the head is the whole item.
            0 | 1 | 7 => {}
            2 | 3 => {
                let len = usize::try_from(value).map_err(|_| "a string too long")?;
                let end = at.checked_add(len).filter(|end| *end <= bytes.len());
                let end = end.ok_or("a string runs past the block")?;
                if cid_next {
                    let cid = (bytes[at..end].split_first())
                        .filter(|(prefix, _)| **prefix == 0)
                        .and_then(|(_, cid)| Cid::try_from(cid).ok())
                        .ok_or("tag 42 holds no CID")?;
                    links.push(cid);
                    cid_next = false;
                }
                at = end;
            }
            4 | 5 => {
                let items = if major == 5 {
                    value.checked_mul(2)
                } else {
                    Some(value)
                };
                let items = items.ok_or("a map too long")?;
                // Every item takes at least a byte.
                if items > (bytes.len() - at) as u64 {
                    return Err("a container holds more items than the block has bytes".into());
                }
                if open.len() >= MAX_NESTING {
                    return Err(format!("containers nest deeper than {MAX_NESTING}"));
                }
                open.push(items);
            }
            6 => {
                cid_next = with_links && value == CID_TAG;
                // The tagged item follows, in the same container.
                match open.last_mut() {
                    Some(left) => *left += 1,
                    None => return Err("a tag with nothing after it".into()),
                }
            }
            _ => unreachable!("a major type has three bits"),
        }
    }
    Ok(at)
}

/// A CBOR item's head at `at`: its major type and its argument. Indefinite lengths are not
/// dag-cbor, and are refused.
fn head(bytes: &[u8], at: &mut usize) -> Result<(u8, u64), String> {
    let first = *bytes.get(*at).ok_or("the block ends inside an item")?;
    *at += 1;
    let (major, info) = (first >> 5, first & 0x1f);
    let extra = match info {
        0..=23 => return Ok((major, u64::from(info))),
        24 => 1,
        25 => 2,
        26 => 4,
        27 => 8,
        31 => return Err("an indefinite length, which dag-cbor does not allow".into()),
        _ => return Err(format!("reserved additional information {info}")),
    };
    let arg = bytes
        .get(*at..*at + extra)
        .ok_or("the block ends inside an item's head")?;
    *at += extra;
    Ok((major, arg.iter().fold(0u64, |n, b| n << 8 | u64::from(*b))))
}

/// The links of a dag-json block: every `{"/": "cid"}`.
pub fn json_links(bytes: &[u8]) -> Result<Vec<Cid>, String> {
    // serde_json refuses nesting past 128 levels itself.
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let mut links = Vec::new();
    let mut stack = vec![&value];
    while let Some(value) = stack.pop() {
        match value {
            serde_json::Value::Object(map) => {
                if let (1, Some(serde_json::Value::String(text))) = (map.len(), map.get("/")) {
                    let cid = Cid::try_from(text.as_str())
                        .map_err(|e| format!("{text:?} marks a link but is not a CID: {e}"))?;
                    links.push(cid);
                    continue;
                }
                stack.extend(map.values().rev());
            }
            serde_json::Value::Array(items) => stack.extend(items.iter().rev()),
            _ => {}
        }
    }
    Ok(links)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::block_cid;
    use crate::CidVersion;

    fn raw(bytes: &[u8]) -> Cid {
        block_cid(CidVersion::V1, RAW, bytes)
    }

    /// `{"a": [1, 42(cid)], "b": 42(cid)}` as dag-cbor.
    fn cbor_with(first: &Cid, second: &Cid) -> Vec<u8> {
        let tagged = |cid: &Cid| {
            let bytes = [&[0u8][..], &cid.to_bytes()].concat();
            let mut out = vec![0xd8, 42, 0x58, bytes.len() as u8];
            out.extend(bytes);
            out
        };
        let mut out = vec![0xa2, 0x61, b'a', 0x82, 0x01];
        out.extend(tagged(first));
        out.extend([0x61, b'b']);
        out.extend(tagged(second));
        out
    }

    #[test]
    fn dag_cbor_links_are_the_cids_tag_42_holds() {
        let (a, b) = (raw(b"a"), raw(b"b"));
        assert_eq!(cbor_links(&cbor_with(&a, &b)).unwrap(), [a, b]);
        // "this is not a link" under "hello": no links.
        let mut plain = vec![0xa1, 0x65];
        plain.extend(b"hello");
        plain.push(0x72);
        plain.extend(b"this is not a link");
        assert!(cbor_links(&plain).unwrap().is_empty());
    }

    #[test]
    fn broken_cbor_is_refused() {
        let (a, b) = (raw(b"a"), raw(b"b"));
        let whole = cbor_with(&a, &b);
        assert!(cbor_links(&whole[..whole.len() - 3]).is_err(), "cut short");
        assert!(
            cbor_links(&[0x9f, 0x01, 0xff]).is_err(),
            "indefinite length"
        );
        assert!(
            cbor_links(&[0xd8, 42, 0x01]).is_err(),
            "tag 42 on an integer"
        );
        assert!(cbor_links(&[0x01, 0x02]).is_err(), "two items");
        // A huge array header over a few bytes is refused before anything is allocated.
        assert!(cbor_links(&[0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).is_err());
        let deep = vec![0x81; 10_000];
        assert!(cbor_links(&deep).is_err());
    }

    #[test]
    fn dag_json_links_are_slash_maps_of_strings() {
        let (a, b) = (raw(b"a"), raw(b"b"));
        let json = format!(
            r#"{{"foo":{{"link":{{"/":"{a}"}},"list":[{{"/":"{b}"}}]}},"bytes":{{"/":{{"bytes":"AA"}}}}}}"#
        );
        assert_eq!(json_links(json.as_bytes()).unwrap(), [a, b]);
        assert!(json_links(br#"{"/":"not a cid"}"#).is_err());
        assert!(json_links(b"{").is_err());
    }

    #[test]
    fn blocks_of_other_codecs_are_known_by_their_links() {
        let a = raw(b"a");
        let cid = Cid::new_v1(DAG_CBOR, *a.hash());
        assert_eq!(links(&cid, &cbor_with(&a, &a)).unwrap(), [a, a]);
        let json = Cid::new_v1(JSON, *a.hash());
        assert_eq!(links(&json, b"{}").unwrap(), []);
        let broken = links(&json, b"{").unwrap_err().to_string();
        assert!(broken.contains("is not valid json"), "{broken}");
        let unknown = Cid::new_v1(0x300, *a.hash());
        assert!(matches!(
            links(&unknown, b"x"),
            Err(IpldError::UnsupportedCodec { codec: 0x300, .. })
        ));
    }

    #[test]
    fn paths_follow_map_keys_and_list_items_to_a_link() {
        let (a, b) = (raw(b"a"), raw(b"b"));
        let cbor = Cid::new_v1(DAG_CBOR, *a.hash());
        let block = cbor_with(&a, &b);
        let path = |path: &[&str]| follow(&cbor, &block, path).unwrap();
        assert_eq!(path(&["b"]), Followed::Link { cid: b, names: 1 });
        assert_eq!(path(&["a", "1"]), Followed::Link { cid: a, names: 2 });
        assert_eq!(
            path(&["a", "1", "more"]),
            Followed::Link { cid: a, names: 2 }
        );
        assert_eq!(path(&["a"]), Followed::Inside);
        assert_eq!(path(&["a", "0"]), Followed::Inside);
        assert_eq!(path(&["c"]), Followed::Missing { at: 0 });
        assert_eq!(path(&["a", "0", "x"]), Followed::Missing { at: 2 });

        let json = Cid::new_v1(DAG_JSON, *a.hash());
        let text = format!(r#"{{"foo":{{"link":{{"/":"{a}"}},"n":[1,{{"/":"{b}"}}]}}}}"#);
        let path = |path: &[&str]| follow(&json, text.as_bytes(), path).unwrap();
        assert_eq!(
            path(&["foo", "link", "bar"]),
            Followed::Link { cid: a, names: 2 }
        );
        assert_eq!(
            path(&["foo", "n", "1"]),
            Followed::Link { cid: b, names: 3 }
        );
        assert_eq!(path(&["foo"]), Followed::Inside);
        assert_eq!(path(&["foo", "nope"]), Followed::Missing { at: 1 });
    }
}
