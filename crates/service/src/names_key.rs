//! The names key: what seals the secret keys of IPNS names in the metadata store
//! (ChaCha20-Poly1305), so that the database alone cannot sign (see [`crate::names`]).

use std::path::Path;

use base64::Engine;
use cairn_p2p::key::{private_file, Keypair};
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};

/// The key that seals names' secret keys in the metadata store: without it the database
/// alone cannot sign. Kept in the data directory, or given (`--names-key`) so that every
/// node of a deployment shares it.
pub struct NamesKey(LessSafeKey);

impl NamesKey {
    /// The key in `path` (32 bytes in base64), made there first if there is none.
    pub fn load_or_create(path: &Path) -> std::io::Result<Self> {
        let text = private_file(path, || {
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).map_err(std::io::Error::other)?;
            Ok(base64::engine::general_purpose::STANDARD
                .encode(key)
                .into_bytes())
        })?;
        Self::from_base64(&String::from_utf8_lossy(&text)).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        })
    }

    pub fn from_base64(text: &str) -> Result<Self, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|_| "the names key is not base64 (make one with `openssl rand -base64 32`)")?;
        let key = UnboundKey::new(&CHACHA20_POLY1305, &bytes)
            .map_err(|_| format!("the names key is {} bytes; it must be 32", bytes.len()))?;
        Ok(Self(LessSafeKey::new(key)))
    }

    /// A random nonce, then the sealed bytes and their tag.
    pub(crate) fn seal(&self, secret: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).expect("OS random source");
        let mut sealed = secret.to_vec();
        self.0
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::empty(),
                &mut sealed,
            )
            .expect("sealing a key in memory does not fail");
        [&nonce[..], &sealed].concat()
    }

    /// The key `sealed` holds, if this names key sealed it.
    pub(crate) fn open(&self, sealed: &[u8]) -> Option<Keypair> {
        if sealed.len() < NONCE_LEN {
            return None;
        }
        let (nonce, sealed) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut bytes = sealed.to_vec();
        let secret = self.0.open_in_place(nonce, Aad::empty(), &mut bytes).ok()?;
        Keypair::from_protobuf_encoding(secret).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_key_opens_with_its_names_key_and_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let sealer = NamesKey::load_or_create(&dir.path().join("names.key")).unwrap();
        let again = NamesKey::load_or_create(&dir.path().join("names.key")).unwrap();
        let key = Keypair::generate_ed25519();
        let sealed = sealer.seal(&key.to_protobuf_encoding().unwrap());
        assert_eq!(again.open(&sealed).unwrap().public(), key.public());
        let other = NamesKey::load_or_create(&dir.path().join("other.key")).unwrap();
        assert!(other.open(&sealed).is_none());
        let short = NamesKey::from_base64("c2hvcnQ=").err().unwrap();
        assert!(short.contains("32"), "{short}");
    }
}
