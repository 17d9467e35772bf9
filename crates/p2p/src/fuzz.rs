//! Fuzz bodies for `cairn-p2p`: what one fuzz input does. Shared by the
//! fuzz target (`fuzz/fuzz_targets/bitswap_message.rs`) and the stable replay test
//! (`crates/p2p/tests/fuzz_corpus.rs`), so a regression input replays the very same code.
//! A panic (or a broken assertion) is the bug.

use crate::bitswap::message::{Message, Version};

/// `bitswap_message`: the bytes of one frame from a peer. Decodes them; a message that
/// decodes must survive being written again in 1.2.0 (the version that carries every field)
/// and read back unchanged, and be writable in the older two.
pub fn bitswap_message(input: &[u8]) -> Result<usize, String> {
    let message = Message::decode(input).map_err(|e| e.to_string())?;
    let again = Message::decode(&message.encode(Version::V120))
        .map_err(|e| format!("our own 1.2.0 encoding does not decode: {e}"))?;
    assert_eq!(again, message, "1.2.0 round trip");
    for version in [Version::V100, Version::V110] {
        Message::decode(&message.encode(version))
            .map_err(|e| format!("our own {version:?} encoding does not decode: {e}"))?;
    }
    Ok(message.wantlist.len() + message.blocks.len() + message.presences.len())
}
