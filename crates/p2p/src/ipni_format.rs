//! IPNI, the network indexers (cid.contact and others) that find providers for the big IPFS
//! services: the advertisement chain's formats, byte for byte as go-libipni and
//! index-provider write and check them.
//!
//! - Advertisements and entry chunks are dag-json blocks (CIDv1, codec 0x0129, sha2-256); an
//!   indexer hashes each one it downloads.
//! - An advertisement is signed with the provider's key in a libp2p signed envelope, over a
//!   sha2-256 of its fields (the context id is not signed: go-libipni's choice).
//! - The chain's head is signed on its own: the head CID's bytes and the topic.
//! - An announce tells an indexer the head moved: a CBOR tuple, PUT to `/announce`.
//!
//! Everything here is a pure function of its inputs; publishing is the server's.

use base64::engine::general_purpose::STANDARD_NO_PAD;
use base64::Engine;
use cairn_car::cbor;
use cairn_unixfs::block::{block_cid, cid_from_digest, RAW};
use cairn_unixfs::{Cid, CidVersion};
use libp2p::core::SignedEnvelope;
use libp2p::identity::{Keypair, SigningError};
use libp2p::{Multiaddr, PeerId};
use sha2::{Digest, Sha256};

/// The codec of every block of the chain.
pub const DAG_JSON: u64 = 0x0129;
/// The topic index-provider signs heads with (go-libipni does not check it).
pub const TOPIC: &str = "/indexer/ingest/mainnet";
/// Multihashes per entry chunk: index-provider's default.
pub const ENTRIES_PER_CHUNK: usize = 16384;
/// How content is retrieved: Bitswap (0x0900, no payload), then the trustless gateway over HTTP
/// (0x0920 and an empty payload), each code a varint, in code order. (go-libipni's
/// `metadata.HTTPV1()` is another code that encodes to nothing: not this.)
pub const METADATA_BITSWAP_AND_HTTP: &[u8] = &[0x80, 0x12, 0xa0, 0x12, 0x00];
/// Bitswap alone, for a provider with no gateway address to offer.
pub const METADATA_BITSWAP: &[u8] = &[0x80, 0x12];
/// The longest context id an indexer accepts.
pub const MAX_CONTEXT_ID: usize = 64;

const SIGNATURE_DOMAIN: &str = "indexer";
const SIGNATURE_PAYLOAD_TYPE: &[u8] = b"/indexer/ingest/adSignature";

/// A block of the chain: an advertisement or an entry chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainBlock {
    pub cid: Cid,
    pub bytes: Vec<u8>,
}

impl ChainBlock {
    fn new(bytes: Vec<u8>) -> Self {
        ChainBlock {
            cid: block_cid(CidVersion::V1, DAG_JSON, &bytes),
            bytes,
        }
    }
}

/// The entries of an advertisement that lists none (a removal): the raw CID of sha2-256 of
/// nothing, cut to 16 bytes, `bafkreehdwdcefgh4dqkjv67uzcmw7oje`.
pub fn no_entries() -> Cid {
    cid_from_digest(CidVersion::V1, RAW, &Sha256::digest([])[..16])
}

/// The entry chunks listing `multihashes`, [`ENTRIES_PER_CHUNK`] to a chunk, each linking the
/// one before; returns them in that order and the CID an advertisement names, the last's
/// ([`no_entries`] when there are none).
pub fn entry_chunks(multihashes: &[Vec<u8>]) -> (Vec<ChainBlock>, Cid) {
    let mut chunks: Vec<ChainBlock> = Vec::new();
    for entries in multihashes.chunks(ENTRIES_PER_CHUNK) {
        let mut json = String::from("{\"Entries\":[");
        for (i, multihash) in entries.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            push_bytes(&mut json, multihash);
        }
        json.push(']');
        if let Some(previous) = chunks.last() {
            json.push_str(",\"Next\":");
            push_link(&mut json, &previous.cid);
        }
        json.push('}');
        chunks.push(ChainBlock::new(json.into_bytes()));
    }
    let head = chunks.last().map_or_else(no_entries, |chunk| chunk.cid);
    (chunks, head)
}

/// An advertisement: the provider says it has `entries` under `context_id` (or, `is_rm`,
/// no longer has what it advertised under that context).
#[derive(Clone, Debug)]
pub struct Advertisement {
    pub previous: Option<Cid>,
    pub provider: PeerId,
    /// Where the provider is reached, as multiaddr strings.
    pub addresses: Vec<String>,
    pub entries: Cid,
    pub context_id: Vec<u8>,
    pub metadata: Vec<u8>,
    pub is_rm: bool,
}

impl Advertisement {
    /// The advertisement as dag-json, signed with `key` (the provider's own: indexers take
    /// an advertisement signed by anyone else only from publishers they allow).
    pub fn sign(&self, key: &Keypair) -> Result<ChainBlock, SigningError> {
        let envelope = SignedEnvelope::new(
            key,
            SIGNATURE_DOMAIN.to_string(),
            SIGNATURE_PAYLOAD_TYPE.to_vec(),
            self.signed_payload(),
        )?;
        let signature = envelope.into_protobuf_encoding();
        // Keys in byte order, as dag-json requires; absent optional fields left out.
        let mut json = String::from("{\"Addresses\":[");
        for (i, address) in self.addresses.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            push_string(&mut json, address);
        }
        json.push_str("],\"ContextID\":");
        push_bytes(&mut json, &self.context_id);
        json.push_str(",\"Entries\":");
        push_link(&mut json, &self.entries);
        json.push_str(",\"IsRm\":");
        json.push_str(if self.is_rm { "true" } else { "false" });
        json.push_str(",\"Metadata\":");
        push_bytes(&mut json, &self.metadata);
        if let Some(previous) = &self.previous {
            json.push_str(",\"PreviousID\":");
            push_link(&mut json, previous);
        }
        json.push_str(",\"Provider\":");
        push_string(&mut json, &self.provider.to_base58());
        json.push_str(",\"Signature\":");
        push_bytes(&mut json, &signature);
        json.push('}');
        Ok(ChainBlock::new(json.into_bytes()))
    }

    /// What the envelope carries: the sha2-256 multihash of the previous advertisement's and
    /// the entries' CIDs, the provider, its addresses, the metadata and the removal flag.
    fn signed_payload(&self) -> Vec<u8> {
        let mut hasher = Sha256::new();
        if let Some(previous) = &self.previous {
            hasher.update(previous.to_bytes());
        }
        hasher.update(self.entries.to_bytes());
        hasher.update(self.provider.to_base58());
        for address in &self.addresses {
            hasher.update(address);
        }
        hasher.update(&self.metadata);
        hasher.update([u8::from(self.is_rm)]);
        let mut payload = vec![0x12, 0x20];
        payload.extend_from_slice(&hasher.finalize());
        payload
    }
}

/// The chain's head as `GET /ipni/v1/ad/head` answers it: dag-json `{head, pubkey, sig,
/// topic}`, `sig` by `key` over the head CID's bytes and the topic.
pub fn signed_head(head: &Cid, key: &Keypair) -> Result<Vec<u8>, SigningError> {
    let mut signed = head.to_bytes();
    signed.extend_from_slice(TOPIC.as_bytes());
    let signature = key.sign(&signed)?;
    let mut json = String::from("{\"head\":");
    push_link(&mut json, head);
    json.push_str(",\"pubkey\":");
    push_bytes(&mut json, &key.public().encode_protobuf());
    json.push_str(",\"sig\":");
    push_bytes(&mut json, &signature);
    json.push_str(",\"topic\":");
    push_string(&mut json, TOPIC);
    json.push('}');
    Ok(json.into_bytes())
}

/// The announce an indexer takes at `PUT /announce` (`application/octet-stream`): the CBOR
/// tuple `[cid, addrs, extraData]`, the CID as tag 42 (a byte string led by a zero byte),
/// each address the binary multiaddr of where the chain is served, ending in `/p2p/{id}`.
pub fn announce_message(head: &Cid, addrs: &[Multiaddr]) -> Vec<u8> {
    let mut message = Vec::new();
    cbor::head(&mut message, cbor::MAJOR_ARRAY, 3);
    cbor::cid(&mut message, head);
    cbor::head(&mut message, cbor::MAJOR_ARRAY, addrs.len() as u64);
    for addr in addrs {
        cbor::bytes(&mut message, &addr.to_vec());
    }
    cbor::bytes(&mut message, &[]);
    message
}

/// dag-json bytes: `{"/":{"bytes":"<base64, standard alphabet, no padding>"}}`.
fn push_bytes(json: &mut String, bytes: &[u8]) {
    json.push_str("{\"/\":{\"bytes\":\"");
    STANDARD_NO_PAD.encode_string(bytes, json);
    json.push_str("\"}}");
}

/// dag-json link: `{"/":"<CID, base32 for v1>"}`.
fn push_link(json: &mut String, cid: &Cid) {
    json.push_str("{\"/\":\"");
    json.push_str(&cid.to_string());
    json.push_str("\"}");
}

/// A JSON string escaped as go-ipld-prime's writer does: quotes, backslashes and control
/// characters only (`/` and non-ASCII as they are).
fn push_string(json: &mut String, text: &str) {
    json.push('"');
    for c in text.chars() {
        match c {
            '"' => json.push_str("\\\""),
            '\\' => json.push_str("\\\\"),
            '\n' => json.push_str("\\n"),
            '\r' => json.push_str("\\r"),
            '\t' => json.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                json.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => json.push(c),
        }
    }
    json.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key of the reference advertisement: Ed25519 from a seed of 32 bytes 0x07.
    fn reference_key() -> Keypair {
        Keypair::ed25519_from_bytes([7u8; 32]).unwrap()
    }

    /// An advertisement made by npm `@web3-storage/ipni` 3.0.0 and `@ipld/dag-json` (whose
    /// signing and key order follow go-libipni's), from the same key and fields: ours must be
    /// the same bytes, so the same CID.
    #[test]
    fn an_advertisement_is_byte_for_byte_what_the_reference_library_makes() {
        let key = reference_key();
        let ad = Advertisement {
            previous: None,
            provider: key.public().to_peer_id(),
            addresses: vec!["/dns4/example.org/tcp/443/https".into()],
            entries: "baguqeera4vd5tybgxaub4elwag6v7yhswhflfyopogr7r32b7dpt5mqfmmoq"
                .parse()
                .unwrap(),
            context_id: vec![1, 2, 3],
            metadata: vec![0xa0, 0x12, 0x00],
            is_rm: false,
        };
        let block = ad.sign(&key).unwrap();
        let expected = concat!(
            r#"{"Addresses":["/dns4/example.org/tcp/443/https"],"ContextID":{"/":{"bytes":"AQID"}},"#,
            r#""Entries":{"/":"baguqeera4vd5tybgxaub4elwag6v7yhswhflfyopogr7r32b7dpt5mqfmmoq"},"#,
            r#""IsRm":false,"Metadata":{"/":{"bytes":"oBIA"}},"#,
            r#""Provider":"12D3KooWRawPbxPtP1eZaJpumGnyWX2DcUyd3RQnydr3eAto4Az7","#,
            r#""Signature":{"/":{"bytes":"CiQIARIg6kpsY+KcUgq+9VB7Ey7F+ZVHdq6+vnuSQh7qaRRG0iwSGy9pbmRleGVyL2luZ2VzdC9hZFNpZ25hdHVyZRoiEiDkZii7IE/urKWdp24MoP1R0Pcv1otcfN49BK7RcNw8yipAjRsjKYXIvzAxxIUWBeLIwRgnF+ZIMPnMKb7S11cAvkQ4+dqxxUsO/GSLuuH/nA1vVXiV3aUboKVUiIlPt17hAw"}}}"#,
        );
        assert_eq!(String::from_utf8(block.bytes).unwrap(), expected);
        assert_eq!(
            block.cid.to_string(),
            "baguqeerarizundzto56ja6vahj3lym5seohd7fca2bpoejimzjq3gubwcina"
        );
    }

    #[test]
    fn the_signature_covers_the_removal_flag_and_verifies_with_the_providers_key() {
        let key = reference_key();
        let ad = |is_rm| Advertisement {
            previous: Some(no_entries()),
            provider: key.public().to_peer_id(),
            addresses: vec![],
            entries: no_entries(),
            context_id: vec![9],
            metadata: vec![],
            is_rm,
        };
        let (kept, removed) = (ad(false), ad(true));
        assert_ne!(kept.signed_payload(), removed.signed_payload());
        let block = removed.sign(&key).unwrap();
        let text = String::from_utf8(block.bytes).unwrap();
        let signature = text
            .split("\"Signature\":{\"/\":{\"bytes\":\"")
            .nth(1)
            .unwrap();
        let signature = STANDARD_NO_PAD
            .decode(signature.trim_end_matches("\"}}}"))
            .unwrap();
        let envelope = SignedEnvelope::from_protobuf_encoding(&signature).unwrap();
        let (payload, signer) = envelope
            .payload_and_signing_key(SIGNATURE_DOMAIN.into(), SIGNATURE_PAYLOAD_TYPE)
            .unwrap();
        assert_eq!(payload, removed.signed_payload());
        assert_eq!(signer.to_peer_id(), key.public().to_peer_id());
        assert!(text.contains("\"IsRm\":true"));
        assert!(text.contains("\"PreviousID\":{\"/\":\"bafkreehdwdcefgh4dqkjv67uzcmw7oje\"}"));
    }

    #[test]
    fn no_entries_is_the_cid_indexers_know() {
        assert_eq!(
            no_entries().to_string(),
            "bafkreehdwdcefgh4dqkjv67uzcmw7oje"
        );
        assert_eq!(entry_chunks(&[]), (vec![], no_entries()));
    }

    #[test]
    fn entries_are_chunked_each_chunk_linking_the_one_before() {
        let multihashes: Vec<Vec<u8>> = (0..ENTRIES_PER_CHUNK as u32 * 2 + 1)
            .map(|i| {
                let mut mh = vec![0x12, 0x20];
                mh.extend_from_slice(&Sha256::digest(i.to_be_bytes()));
                mh
            })
            .collect();
        let (chunks, head) = entry_chunks(&multihashes);
        assert_eq!(chunks.len(), 3);
        assert_eq!(head, chunks[2].cid);
        let text = |i: usize| String::from_utf8(chunks[i].bytes.clone()).unwrap();
        assert!(!text(0).contains("Next"));
        assert!(text(1).ends_with(&format!(",\"Next\":{{\"/\":\"{}\"}}}}", chunks[0].cid)));
        assert!(text(2).ends_with(&format!(",\"Next\":{{\"/\":\"{}\"}}}}", chunks[1].cid)));
        assert_eq!(text(2).matches("bytes").count(), 1);
        assert_eq!(text(0).matches("bytes").count(), ENTRIES_PER_CHUNK);
        assert_eq!(chunks[0].cid.codec(), DAG_JSON);
    }

    #[test]
    fn the_head_is_signed_over_its_cid_and_topic() {
        let key = reference_key();
        let head = no_entries();
        let json = String::from_utf8(signed_head(&head, &key).unwrap()).unwrap();
        assert!(json.starts_with("{\"head\":{\"/\":\"bafkreehdwdcefgh4dqkjv67uzcmw7oje\"},\"pubkey\":{\"/\":{\"bytes\":\"CAESI"));
        assert!(json.ends_with(",\"topic\":\"/indexer/ingest/mainnet\"}"));
        let sig = json.split("\"sig\":{\"/\":{\"bytes\":\"").nth(1).unwrap();
        let sig = STANDARD_NO_PAD
            .decode(sig.split('"').next().unwrap())
            .unwrap();
        let mut signed = head.to_bytes();
        signed.extend_from_slice(TOPIC.as_bytes());
        assert!(key.public().verify(&signed, &sig));
    }

    #[test]
    fn an_announce_is_the_cbor_tuple_indexers_decode() {
        let head = no_entries();
        let addr: Multiaddr = "/ip4/127.0.0.1/tcp/8080/http".parse().unwrap();
        let message = announce_message(&head, std::slice::from_ref(&addr));
        let cid = head.to_bytes();
        let mut expected = vec![0x83, 0xd8, 0x2a, 0x40 | (cid.len() as u8 + 1), 0x00];
        expected.extend_from_slice(&cid);
        expected.push(0x81);
        expected.push(0x40 | addr.to_vec().len() as u8);
        expected.extend_from_slice(&addr.to_vec());
        expected.push(0x40);
        assert_eq!(message, expected);
    }

    #[test]
    fn strings_are_escaped_as_go_ipld_prime_does() {
        let mut json = String::new();
        push_string(&mut json, "a\"b\\c/d\u{1}é\n");
        assert_eq!(json, "\"a\\\"b\\\\c/d\\u0001é\\n\"");
    }
}
