//! Who may do what: API keys (an account's credentials, each limited to scopes, an expiry, a
//! number of uploads, browser origins and an upload size) and upload links (a capability for
//! a few uploads, for browsers that must never hold a key). The HTTP crate decides which
//! scope a route needs; what a key or a link is, and how it is stored, is here.

use std::fmt;
use std::str::FromStr;

use crate::model::{ArchiveMode, KeyValues};

/// What a key may do. `All` is every scope, and what every token made before scopes became.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Send uploads (POST, TUS), read the upload limit and the operations the key began,
    /// rename and tag uploads, make upload links.
    Upload,
    /// List and read uploads, pins, operations, the limit and usage.
    Read,
    /// Delete uploads, remove pins.
    Delete,
    /// Create and replace pins.
    Pins,
    /// Manage keys and upload links.
    Keys,
    /// Create, point and delete IPNS names.
    Names,
    All,
}

impl Scope {
    pub const EACH: [Self; 7] = [
        Self::Upload,
        Self::Read,
        Self::Delete,
        Self::Pins,
        Self::Keys,
        Self::Names,
        Self::All,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Upload => "upload",
            Self::Read => "read",
            Self::Delete => "delete",
            Self::Pins => "pins",
            Self::Keys => "keys",
            Self::Names => "names",
            Self::All => "all",
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scope {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::EACH
            .into_iter()
            .find(|scope| scope.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown scope {s:?}: the scopes are upload, read, delete, pins, keys, names and all"
                )
            })
    }
}

/// A key's set of scopes.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct Scopes(u8);

impl Scopes {
    pub const ALL: Self = Self(1 << Scope::All as u8);

    pub fn of(scopes: impl IntoIterator<Item = Scope>) -> Self {
        Self(scopes.into_iter().fold(0, |bits, scope| bits | scope.bit()))
    }

    /// Whether these scopes allow what `scope` allows (`all` allows everything).
    pub fn allow(self, scope: Scope) -> bool {
        self.0 & (scope.bit() | Scope::All.bit()) != 0
    }

    /// Whether every scope of `other` is allowed here: a key may only give what it has.
    pub fn cover(self, other: Self) -> bool {
        self.allow(Scope::All) || other.0 & !self.0 == 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::EACH
            .into_iter()
            .filter(move |scope| self.0 & scope.bit() != 0)
    }

    /// As stored and as the API writes them: names joined by commas.
    pub fn to_text(self) -> String {
        self.iter().map(Scope::as_str).collect::<Vec<_>>().join(",")
    }
}

impl fmt::Debug for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}

impl FromStr for Scopes {
    type Err = String;

    /// Comma-separated names, at least one.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let scopes = s
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(str::parse)
            .collect::<Result<Vec<Scope>, _>>()?;
        if scopes.is_empty() {
            return Err("a key needs at least one scope".into());
        }
        Ok(Self::of(scopes))
    }
}

/// A key as stored and listed: never its secret, which is shown once, at creation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiKey {
    pub id: i64,
    pub account_id: i64,
    pub name: String,
    /// The first characters of the secret, enough to recognise and revoke it.
    pub prefix: String,
    pub scopes: Scopes,
    pub created_at_ms: i64,
    pub expires_at_ms: Option<i64>,
    /// Uploads the key may begin; `None` is unlimited.
    pub max_uses: Option<u64>,
    /// Uploads it has begun.
    pub uses: u64,
    /// When it was last accepted, to the minute (see `KEY_USE_RESOLUTION_MS`).
    pub last_used_at_ms: Option<i64>,
    /// The browser origins it may be used from; empty is anywhere.
    pub origins: Vec<String>,
    /// The largest upload it may send; `None` is the account's limits alone.
    pub max_upload_bytes: Option<u64>,
    pub revoked: bool,
}

impl ApiKey {
    pub fn expired(&self, now_ms: i64) -> bool {
        self.expires_at_ms.is_some_and(|at| at <= now_ms)
    }
}

/// How often a key's `last_used_at` is written: a key used by every request of a busy app
/// would otherwise be a write per request.
pub const KEY_USE_RESOLUTION_MS: i64 = 60_000;

/// A key to create (its secret is made by [`crate::tokens::generate`]).
#[derive(Clone, Debug, Default)]
pub struct NewKey {
    pub account_id: i64,
    pub name: String,
    pub scopes: Scopes,
    pub expires_at_ms: Option<i64>,
    pub max_uses: Option<u64>,
    pub origins: Vec<String>,
    pub max_upload_bytes: Option<u64>,
}

impl NewKey {
    /// A key that can do everything its account can, with no limit of its own: what
    /// `cairn token create` and `cairn account create` make.
    pub fn all(account_id: i64) -> Self {
        Self {
            account_id,
            scopes: Scopes::ALL,
            ..Self::default()
        }
    }
}

/// An upload link: whoever holds its URL may send its uploads to the account, within its
/// limits, without any other credential.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UploadLink {
    /// Public: how the account lists and revokes it (the URL carries the secret instead).
    pub id: String,
    pub account_id: i64,
    /// The key that made it: revoking that key ends its links too.
    pub created_by: i64,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,
    pub max_bytes: Option<u64>,
    /// Media types its uploads may have (`image/*` matches any image); empty is any.
    pub mime_types: Vec<String>,
    pub name: Option<String>,
    pub keyvalues: KeyValues,
    pub archive_mode: Option<ArchiveMode>,
    /// Uploads it allows, and those begun.
    pub uploads: u64,
    pub uses: u64,
    pub revoked: bool,
}

impl UploadLink {
    pub fn expired(&self, now_ms: i64) -> bool {
        self.expires_at_ms <= now_ms
    }

    /// Whether an upload of `mime_type` may be sent through it.
    pub fn accepts_type(&self, mime_type: &str) -> bool {
        let essence = mime_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        self.mime_types.is_empty()
            || self.mime_types.iter().any(|allowed| {
                let allowed = allowed.to_ascii_lowercase();
                match allowed.strip_suffix("/*") {
                    Some(kind) => essence.split_once('/').is_some_and(|(top, _)| top == kind),
                    None => allowed == essence,
                }
            })
    }
}

/// A link to create; `hash` is its secret's (see [`crate::tokens`]).
#[derive(Clone, Debug)]
pub struct NewLink {
    pub id: String,
    pub hash: [u8; 32],
    pub account_id: i64,
    pub created_by: i64,
    pub expires_at_ms: i64,
    pub max_bytes: Option<u64>,
    pub mime_types: Vec<String>,
    pub name: Option<String>,
    pub keyvalues: KeyValues,
    pub archive_mode: Option<ArchiveMode>,
    pub uploads: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_read_back_and_all_covers_every_scope() {
        let scopes: Scopes = "upload, read".parse().unwrap();
        assert_eq!(scopes.to_text(), "upload,read");
        assert!(scopes.allow(Scope::Upload) && !scopes.allow(Scope::Delete));
        assert!(Scope::EACH.iter().all(|s| Scopes::ALL.allow(*s)));
        assert!(scopes.cover("read".parse().unwrap()));
        assert!(!scopes.cover("read,keys".parse().unwrap()));
        assert!(!scopes.cover(Scopes::ALL));
        assert!(Scopes::ALL.cover(scopes));
        assert!("".parse::<Scopes>().is_err());
        assert!("upload,admin"
            .parse::<Scopes>()
            .unwrap_err()
            .contains("admin"));
    }

    #[test]
    fn a_link_accepts_the_types_it_names() {
        let link = UploadLink {
            id: "l".into(),
            account_id: 1,
            created_by: 1,
            created_at_ms: 0,
            expires_at_ms: 1,
            max_bytes: None,
            mime_types: vec!["image/*".into(), "application/pdf".into()],
            name: None,
            keyvalues: KeyValues::default(),
            archive_mode: None,
            uploads: 1,
            uses: 0,
            revoked: false,
        };
        assert!(link.accepts_type("image/png"));
        assert!(link.accepts_type("Application/PDF; charset=binary"));
        assert!(!link.accepts_type("text/html"));
        assert!(!link.accepts_type("imagex/png"));
    }
}
