//! Where a request says it was sent: its scheme and host, from `Host` or, behind a proxy the
//! deployment trusts, `X-Forwarded-Proto`/`X-Forwarded-Host`. Checked to be a plain host
//! before anything reflects it into a header (TUS `Location`, the gateway's redirects).

use axum::http::{header, HeaderMap};

use crate::error::ApiError;
use crate::state::ServerConfig;

pub struct RequestOrigin {
    /// `http` or `https`.
    pub scheme: &'static str,
    /// Host name and port as sent (`example.net`, `127.0.0.1:8080`, `[::1]:8080`).
    pub host: String,
}

/// A host name or address with its port (`example.net`, `127.0.0.1:8080`, `[::1]:8080`), in
/// the characters those take and no others: safe to reflect into a header or a URL.
pub fn is_plain_host(host: &str) -> bool {
    !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
}

impl RequestOrigin {
    pub fn of(config: &ServerConfig, headers: &HeaderMap) -> Result<Self, ApiError> {
        let forwarded = |name| {
            config
                .trust_forwarded_headers
                .then(|| headers.get(name).and_then(|v| v.to_str().ok()))
                .flatten()
        };
        let scheme = match forwarded("x-forwarded-proto") {
            Some("https") => "https",
            _ => "http",
        };
        let host = forwarded("x-forwarded-host")
            .or_else(|| headers.get(header::HOST).and_then(|v| v.to_str().ok()))
            .unwrap_or("localhost");
        if !is_plain_host(host) {
            return Err(ApiError::BadRequest(
                "the Host header is not a host name".into(),
            ));
        }
        Ok(Self {
            scheme,
            host: host.to_owned(),
        })
    }

    /// The host without its port, lower case (DNS names are case-insensitive).
    pub fn hostname(&self) -> String {
        self.split().0.to_ascii_lowercase()
    }

    /// `:PORT` when the request named one, else empty.
    pub fn port_suffix(&self) -> &str {
        self.split().1
    }

    fn split(&self) -> (&str, &str) {
        // An IPv6 literal has colons of its own: its port follows the `]`.
        let after_literal = self.host.rfind(']').map_or(0, |end| end + 1);
        match self.host[after_literal..].find(':') {
            Some(colon) => self.host.split_at(after_literal + colon),
            None => (&self.host, ""),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(host: &str) -> RequestOrigin {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, host.parse().unwrap());
        RequestOrigin::of(&ServerConfig::default(), &headers).unwrap()
    }

    #[test]
    fn hosts_split_into_name_and_port() {
        let cases = [
            ("example.net", "example.net", ""),
            ("127.0.0.1:8080", "127.0.0.1", ":8080"),
            ("[::1]:8080", "[::1]", ":8080"),
            ("[::1]", "[::1]", ""),
            ("Bafy.IPFS.localhost:80", "bafy.ipfs.localhost", ":80"),
        ];
        for (host, name, port) in cases {
            let origin = origin(host);
            assert_eq!(
                (origin.hostname().as_str(), origin.port_suffix()),
                (name, port)
            );
        }
    }

    #[test]
    fn a_host_that_is_not_a_host_name_is_refused() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "evil.net/path?x".parse().unwrap());
        assert!(RequestOrigin::of(&ServerConfig::default(), &headers).is_err());
    }
}
