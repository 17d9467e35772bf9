//! The fuzz target of this crate, on stable and without cargo-fuzz: every input kept under
//! `fuzz/regressions/bitswap_message` replays through the very body the target runs
//! (`src/fuzz.rs`) without panicking, and so do the seeds, messages of every kind
//! in every version, which must also decode. With `CAIRN_FUZZ_CORPUS=DIR` set, the seeds are
//! written to `DIR/bitswap_message/` (what `scripts/fuzz` does before fuzzing).

use cairn_p2p::fuzz as bodies;
use cairn_test_support::fuzz_corpus as corpus;

use cairn_p2p::bitswap::message::{Message, Presence, Version, WantEntry, WantType};
use cairn_unixfs::block::{block_cid, DAG_PB, RAW};
use cairn_unixfs::CidVersion;

fn seeds() -> Vec<(&'static str, Message)> {
    let raw = |data: &[u8]| block_cid(CidVersion::V1, RAW, data);
    let leaf = cairn_unixfs::pb::encode_node(vec![], vec![8, 2, 18, 2, b'h', b'i', 24, 2]);
    let want = |cid, want_type, cancel| WantEntry {
        cid,
        priority: 3,
        cancel,
        want_type,
        send_dont_have: want_type == WantType::Have,
    };
    vec![
        (
            "wants",
            Message {
                wantlist: vec![
                    want(raw(b"a"), WantType::Block, false),
                    want(raw(b"b"), WantType::Have, false),
                    want(raw(b"c"), WantType::Block, true),
                ],
                full_wantlist: true,
                ..Message::default()
            },
        ),
        (
            "blocks",
            Message {
                blocks: vec![
                    (raw(b"hello"), b"hello".to_vec()),
                    (block_cid(CidVersion::V0, DAG_PB, &leaf), leaf.clone()),
                ],
                pending_bytes: 4096,
                ..Message::default()
            },
        ),
        (
            "presences",
            Message {
                presences: vec![(raw(b"x"), Presence::Have), (raw(b"y"), Presence::DontHave)],
                ..Message::default()
            },
        ),
    ]
}

#[test]
fn bitswap_message_regressions_and_seeds_decode_without_panicking() {
    for (name, input) in corpus::regressions("bitswap_message") {
        println!("{name}: {:?}", bodies::bitswap_message(&input));
    }
    for (label, message) in seeds() {
        for version in [Version::V100, Version::V110, Version::V120] {
            let input = message.encode(version);
            // Every message we write is one we read, in every version.
            bodies::bitswap_message(&input).unwrap();
            corpus::save_seed("bitswap_message", &format!("{label}-{version:?}"), &input);
        }
    }
}
