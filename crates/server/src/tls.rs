//! TLS for both hosts (`--tls-cert FILE --tls-key FILE`): rustls, offering HTTP/2 and then
//! HTTP/1.1 by ALPN, as Kubo's and Helia's HTTP retrieval, browsers and curl expect of a
//! trustless gateway (its spec asks for HTTP/2).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read the TLS certificate {}: {reason}", path.display())]
    Certificate { path: PathBuf, reason: String },
    #[error("cannot read the TLS key {}: {reason}", path.display())]
    Key { path: PathBuf, reason: String },
    #[error("the TLS certificate and key cannot be used together: {0}")]
    Config(#[from] rustls::Error),
}

/// The server's TLS settings from a PEM certificate chain (the server's certificate first)
/// and its PEM private key.
pub fn load(certificate: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let chain = CertificateDer::pem_file_iter(certificate)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| TlsError::Certificate {
            path: certificate.to_owned(),
            reason: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(TlsError::Certificate {
            path: certificate.to_owned(),
            reason: "it holds no PEM certificate".into(),
        });
    }
    let private_key = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::Key {
        path: key.to_owned(),
        reason: e.to_string(),
    })?;
    // Named, not the process default: more than one provider is compiled in (QUIC's).
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, private_key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
