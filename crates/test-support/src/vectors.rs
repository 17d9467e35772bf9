//! Deterministic inputs shared by the tests and the benchmark: the generators of
//! `shared/vectors/README.md` section 1, and the expansion of its directory specs.

use chacha20::cipher::{KeyIvInit, StreamCipher};
use sha2::{Digest, Sha256};

/// The xorshift64 stream of the vectors: `state = seed | 1`, stepped before each 8-byte emit.
pub use crate::xorshift::XorShift64;

/// `size` bytes of the vectors' xorshift stream for `seed`.
pub fn xorshift(size: usize, seed: u64) -> Vec<u8> {
    let mut out = vec![0; size];
    XorShift64::new(seed).fill(&mut out);
    out
}

/// Kubo's deterministic reader: ChaCha20 keystream, key = sha256(seed), zero nonce, counter 0.
pub fn chacha_stream(seed: &str) -> chacha20::ChaCha20 {
    let key: [u8; 32] = Sha256::digest(seed.as_bytes()).into();
    chacha20::ChaCha20::new(&key.into(), &[0u8; 12].into())
}

/// A source of file content: pieces of a generator, without holding the whole file.
pub enum Content {
    XorShift(XorShift64),
    ChaCha(Box<chacha20::ChaCha20>),
    Bytes(Vec<u8>),
}

impl Content {
    /// The content of a vector file spec: `{size, seed}`, `{size, chacha_seed}` or `{text}`.
    pub fn of_spec(spec: &serde_json::Value) -> (Self, u64) {
        if let Some(text) = spec["text"].as_str() {
            return (Self::Bytes(text.as_bytes().to_vec()), text.len() as u64);
        }
        let size = spec["size"].as_u64().expect("file spec has a size");
        if let Some(seed) = spec["chacha_seed"].as_str() {
            return (Self::ChaCha(Box::new(chacha_stream(seed))), size);
        }
        let seed = spec["seed"].as_u64().expect("file spec has a seed");
        (Self::XorShift(XorShift64::new(seed)), size)
    }

    /// The next `out.len()` bytes.
    pub fn fill(&mut self, out: &mut [u8]) {
        match self {
            Self::XorShift(g) => g.fill(out),
            Self::ChaCha(c) => {
                out.fill(0);
                c.apply_keystream(out);
            }
            Self::Bytes(bytes) => {
                out.copy_from_slice(&bytes[..out.len()]);
                bytes.drain(..out.len());
            }
        }
    }
}

/// Feed `size` bytes of `content` to `each` in pieces of `piece` bytes, never holding the whole stream.
pub fn for_each_piece(content: &mut Content, size: u64, piece: usize, mut each: impl FnMut(&[u8])) {
    let mut buf = vec![0u8; piece];
    let mut left = size;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        content.fill(&mut buf[..n]);
        each(&buf[..n]);
        left -= n as u64;
    }
}

/// One entry of an expanded directory spec.
pub enum SpecEntry {
    File {
        path: String,
        spec: serde_json::Value,
    },
    Dir {
        path: String,
    },
    Symlink {
        path: String,
        target: String,
    },
}

/// Expand `{entries, series}` exactly as `shared/vectors/gen.mjs` `expandDir` does.
pub fn expand_dir(spec: &serde_json::Value) -> Vec<SpecEntry> {
    let mut out = Vec::new();
    for e in spec["entries"].as_array().into_iter().flatten() {
        let path = e["path"].as_str().expect("entry path").to_owned();
        out.push(match e["type"].as_str() {
            Some("dir") => SpecEntry::Dir { path },
            Some("symlink") => SpecEntry::Symlink {
                path,
                target: e["target"].as_str().expect("symlink target").to_owned(),
            },
            _ => SpecEntry::File {
                path,
                spec: e.clone(),
            },
        });
    }
    for s in spec["series"].as_array().into_iter().flatten() {
        let str_of = |k: &str| s[k].as_str().unwrap_or_default().to_owned();
        let num = |k: &str| s[k].as_u64().unwrap_or_else(|| panic!("series field {k}"));
        let dir = str_of("dir");
        match s["type"].as_str() {
            Some("numbered") => {
                let digits = num("digits") as usize;
                for i in 0..num("count") {
                    let n = num("start") + i;
                    out.push(SpecEntry::File {
                        path: format!("{dir}{}{n:0digits$}{}", str_of("prefix"), str_of("suffix")),
                        spec: serde_json::json!({"size": num("size"), "seed": num("seed_base") + i}),
                    });
                }
            }
            Some("kubo-names") => {
                let alphabet: Vec<char> = str_of("alphabet").chars().collect();
                let (count, name_len, last_len) =
                    (num("count"), num("name_len"), num("last_name_len"));
                let mut stream = chacha_stream(&str_of("chacha_seed"));
                for i in 0..count {
                    let len = if i == count - 1 { last_len } else { name_len };
                    let mut raw = vec![0u8; len as usize];
                    stream.apply_keystream(&mut raw);
                    let name: String = raw
                        .iter()
                        .map(|b| alphabet[*b as usize % alphabet.len()])
                        .collect();
                    out.push(SpecEntry::File {
                        path: format!("{dir}{name}"),
                        spec: serde_json::json!({"text": str_of("content")}),
                    });
                }
            }
            other => panic!("unknown series type {other:?}"),
        }
    }
    out
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
