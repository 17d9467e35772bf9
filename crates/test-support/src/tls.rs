//! A test certificate authority and a server certificate it signed for `localhost` and
//! `127.0.0.1`, made with the `openssl` command: what a client trusts (`--cacert`,
//! `SSL_CERT_FILE`, `NODE_EXTRA_CA_CERTS`) to reach a Cairn serving TLS.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct TestCa {
    /// The authority's certificate (PEM), for clients to trust.
    pub authority: PathBuf,
    /// The server's certificate chain and key (PEM), for `--tls-cert` and `--tls-key`.
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl TestCa {
    /// Make the authority and the server's certificate in `dir`, valid for a day.
    pub fn make(dir: &Path) -> Self {
        let file = |name: &str| dir.join(name);
        let p256 = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        openssl(
            &[
                &["req", "-x509"][..],
                &p256,
                &["-days", "1", "-subj", "/CN=cairn test CA"],
            ]
            .concat(),
            &[("-keyout", file("ca.key")), ("-out", file("ca.pem"))],
        );
        openssl(
            &[&["req"][..], &p256, &["-subj", "/CN=localhost"]].concat(),
            &[("-keyout", file("key.pem")), ("-out", file("server.csr"))],
        );
        std::fs::write(
            file("server.ext"),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
             keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
        )
        .expect("write the extensions");
        openssl(
            &["x509", "-req", "-days", "1", "-CAcreateserial"],
            &[
                ("-in", file("server.csr")),
                ("-CA", file("ca.pem")),
                ("-CAkey", file("ca.key")),
                ("-extfile", file("server.ext")),
                ("-out", file("cert.pem")),
            ],
        );
        Self {
            authority: file("ca.pem"),
            cert: file("cert.pem"),
            key: file("key.pem"),
        }
    }
}

fn openssl(args: &[&str], files: &[(&str, PathBuf)]) {
    let mut command = Command::new("openssl");
    command.args(args);
    for (flag, path) in files {
        command.arg(flag).arg(path);
    }
    let output = command.output().expect("run openssl");
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}
