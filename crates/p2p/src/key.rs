//! The node's identity: an Ed25519 key made on first start and kept in the data directory,
//! readable by its owner only. Every node of a deployment has its own (its own peer id).
//! [`private_file`] keeps any other secret the same way (the names key).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

pub use libp2p::identity::Keypair;

/// The key at `path`, or a new one written there (mode 0600, durably) if there is none.
pub fn load_or_create(path: &Path) -> io::Result<Keypair> {
    let bytes = private_file(path, || {
        Keypair::generate_ed25519()
            .to_protobuf_encoding()
            .map_err(|e| io::Error::other(e.to_string()))
    })?;
    Keypair::from_protobuf_encoding(&bytes).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is not a libp2p key: {e}", path.display()),
        )
    })
}

/// The secret at `path`, or `make`'s, written there first (mode 0600, durably) if there is
/// none. A secret readable by others is used, with a warning.
pub fn private_file(
    path: &Path,
    make: impl FnOnce() -> io::Result<Vec<u8>>,
) -> io::Result<Vec<u8>> {
    match fs::read(path) {
        Ok(bytes) => {
            let mode = fs::metadata(path)?.permissions().mode();
            if mode & 0o077 != 0 {
                tracing::warn!(path = %path.display(), "a secret key file is readable by others");
            }
            Ok(bytes)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let bytes = make()?;
            // A data directory on shared stores may hold nothing else yet.
            if let Some(dir) = path.parent() {
                fs::create_dir_all(dir)?;
            }
            // Written whole or not at all: a temporary file, synced, then renamed.
            let temporary = path.with_extension("tmp");
            let mut file = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&temporary)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
            fs::rename(&temporary, path)?;
            if let Some(dir) = path.parent() {
                File::open(dir)?.sync_all()?;
            }
            Ok(bytes)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_made_once_kept_private_and_read_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("node.key");
        let first = load_or_create(&path).unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let again = load_or_create(&path).unwrap();
        assert_eq!(first.public().to_peer_id(), again.public().to_peer_id());
        assert!(first.public().try_into_ed25519().is_ok());

        fs::write(&path, b"not a key").unwrap();
        assert!(load_or_create(&path).is_err());
    }
}
