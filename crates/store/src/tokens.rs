//! Secrets: API keys' tokens (`cairn_` followed by 32 random bytes in hex) and upload links'
//! (`cairnlink_` and the same). Only the sha2-256 of a secret is stored, so a leaked database
//! does not leak working credentials.

use sha2::{Digest, Sha256};

pub const TOKEN_PREFIX: &str = "cairn_";
pub const LINK_PREFIX: &str = "cairnlink_";
/// Characters of a token kept in clear to recognise it (`cairn_` + 8 hex digits).
const SHOWN: usize = TOKEN_PREFIX.len() + 8;

/// A freshly generated token: the secret (shown once), its hash and its display prefix.
pub struct NewToken {
    pub secret: String,
    pub hash: [u8; 32],
    pub prefix: String,
}

/// A key's token.
pub fn generate() -> NewToken {
    generate_with(TOKEN_PREFIX)
}

/// An upload link's secret (its `prefix` is not shown: a link is named by its id).
pub fn generate_link() -> NewToken {
    generate_with(LINK_PREFIX)
}

fn generate_with(kind: &str) -> NewToken {
    let mut bytes = [0u8; 32];
    // The OS random source failing is not recoverable in any useful way.
    getrandom::fill(&mut bytes).expect("OS random source");
    let secret = format!(
        "{kind}{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    NewToken {
        hash: hash(&secret),
        prefix: secret[..SHOWN].to_owned(),
        secret,
    }
}

/// The stored form of a token. Lookups go by this hash through a unique index, so the secret is
/// never compared byte by byte, and timing reveals nothing an attacker could steer.
pub fn hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Whether a string has the shape of a token at all (cheap rejection before any lookup).
pub fn well_formed(token: &str) -> bool {
    well_formed_with(TOKEN_PREFIX, token)
}

/// Whether a string has the shape of an upload link's secret.
pub fn well_formed_link(secret: &str) -> bool {
    well_formed_with(LINK_PREFIX, secret)
}

fn well_formed_with(kind: &str, secret: &str) -> bool {
    secret
        .strip_prefix(kind)
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_are_well_formed_distinct_and_hash_consistently() {
        let a = generate();
        let b = generate();
        assert!(well_formed(&a.secret));
        assert_ne!(a.secret, b.secret);
        assert_eq!(hash(&a.secret), a.hash);
        assert!(a.secret.starts_with(&a.prefix));
        assert!(!well_formed("cairn_xyz"));
        assert!(!well_formed(&a.secret[1..]));
        let link = generate_link();
        assert!(well_formed_link(&link.secret) && !well_formed(&link.secret));
        assert!(!well_formed_link(&a.secret));
    }
}
