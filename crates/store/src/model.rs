//! The records the service keeps: accounts, keys and links, uploads and their operations.

use std::fmt;
use std::str::FromStr;

use std::collections::BTreeMap;

/// Default largest single `POST /api/upload`: 100 MB as the interface document says (104857600).
pub const DEFAULT_UPLOAD_LIMIT: u64 = 104_857_600;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    pub id: i64,
    pub name: String,
    /// Largest single POST upload, in bytes.
    pub upload_limit: u64,
    /// Stored-bytes quota; `None` is unlimited.
    pub quota: Option<u64>,
    /// What the quota counts: the DAG size of each distinct root the account keeps (through
    /// its live uploads and pins), once per root. Content other accounts keep too is charged
    /// to each of them, though its blocks are stored once.
    pub stored_bytes: u64,
    pub created_at_ms: i64,
}

impl Account {
    /// Bytes that may still be stored before the quota is reached.
    pub fn remaining_quota(&self) -> Option<u64> {
        self.quota.map(|q| q.saturating_sub(self.stored_bytes))
    }
}

/// `pending -> processing -> completed | failed`; never moves back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperationStatus {
    Pending,
    Processing,
    Completed,
    Failed,
}

impl OperationStatus {
    pub const ALL: [Self; 4] = [
        Self::Pending,
        Self::Processing,
        Self::Completed,
        Self::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Processing => "processing",
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed)
    }
}

impl fmt::Display for OperationStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for OperationStatus {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "pending" => Self::Pending,
            "processing" => Self::Processing,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            other => return Err(format!("unknown operation status {other:?}")),
        })
    }
}

/// What an operation does with its upload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperationKind {
    /// A POST upload (plain file, preserved archive, or archive to extract).
    Upload,
    /// A TUS upload.
    TusUpload,
    /// A CAR file imported as-is.
    CarImport,
    /// A pin by CID (Pinning Service API): the DAG is fetched from the network.
    Pin,
}

impl OperationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Upload => "upload",
            Self::TusUpload => "tus_upload",
            Self::CarImport => "car_import",
            Self::Pin => "pin",
        }
    }
}

impl FromStr for OperationKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "upload" => Self::Upload,
            "tus_upload" => Self::TusUpload,
            "car_import" => Self::CarImport,
            "pin" => Self::Pin,
            other => return Err(format!("unknown operation kind {other:?}")),
        })
    }
}

/// Every error code the service answers with (`docs/contract.md`, "Errors"), in requests and
/// in failed operations alike: named once, here. Which HTTP status each goes with is the HTTP
/// crate's (`error.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    BadRequest,
    Unauthorized,
    InvalidToken,
    TokenExpired,
    OriginNotAllowed,
    UsesExhausted,
    InvalidLink,
    LinkExpired,
    LinkUsed,
    NotFound,
    MethodNotAllowed,
    NotAcceptable,
    Forbidden,
    Conflict,
    Gone,
    PreconditionFailed,
    UnsupportedMediaType,
    Locked,
    ChecksumMismatch,
    RangeNotSatisfiable,
    PayloadTooLarge,
    UriTooLong,
    HeadersTooLarge,
    InvalidArchive,
    QuotaExceeded,
    InvalidDag,
    DagTooLarge,
    InsufficientStorage,
    RateLimited,
    Internal,
    Unavailable,
    BadGateway,
    NotImplemented,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BadRequest => "bad_request",
            Self::Unauthorized => "unauthorized",
            Self::InvalidToken => "invalid_token",
            Self::TokenExpired => "token_expired",
            Self::OriginNotAllowed => "origin_not_allowed",
            Self::UsesExhausted => "uses_exhausted",
            Self::InvalidLink => "invalid_link",
            Self::LinkExpired => "link_expired",
            Self::LinkUsed => "link_used",
            Self::NotFound => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::NotAcceptable => "not_acceptable",
            Self::Forbidden => "forbidden",
            Self::Conflict => "conflict",
            Self::Gone => "gone",
            Self::PreconditionFailed => "precondition_failed",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::Locked => "locked",
            Self::ChecksumMismatch => "checksum_mismatch",
            Self::RangeNotSatisfiable => "range_not_satisfiable",
            Self::PayloadTooLarge => "payload_too_large",
            Self::UriTooLong => "uri_too_long",
            Self::HeadersTooLarge => "headers_too_large",
            Self::InvalidArchive => "invalid_archive",
            Self::QuotaExceeded => "quota_exceeded",
            Self::InvalidDag => "invalid_dag",
            Self::DagTooLarge => "dag_too_large",
            Self::InsufficientStorage => "insufficient_storage",
            Self::RateLimited => "rate_limited",
            Self::Internal => "internal",
            Self::Unavailable => "unavailable",
            Self::BadGateway => "bad_gateway",
            Self::NotImplemented => "not_implemented",
        }
    }
}

/// A failure as clients see it: a stable code and a human message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperationError {
    pub code: String,
    pub message: String,
}

impl OperationError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code: code.as_str().to_owned(),
            message: message.into(),
        }
    }
}

/// How an archive upload is stored (`archive_mode`): extracted into the directory of its
/// contents, or kept whole as the file it is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ArchiveMode {
    #[default]
    Extract,
    Preserve,
}

impl ArchiveMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Extract => "extract",
            Self::Preserve => "preserve",
        }
    }
}

impl FromStr for ArchiveMode {
    type Err = String;

    /// `convert` is what existing clients send for extract (`docs/contract.md`, "Upload
    /// result").
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "extract" | "convert" => Ok(Self::Extract),
            "preserve" => Ok(Self::Preserve),
            other => Err(format!(
                "archive_mode must be extract or preserve, not {other:?}"
            )),
        }
    }
}

/// What an upload's bytes are stored as, once they were looked at (`docs/contract.md`, "What
/// counts as an archive").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoredAs {
    /// One UnixFS file of its bytes.
    File,
    /// The directory of an archive's entries.
    Archive,
    /// A CAR's blocks, as they are.
    Car,
}

impl StoredAs {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::File => "file",
            Self::Archive => "archive",
            Self::Car => "car",
        }
    }
}

impl FromStr for StoredAs {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "file" => Self::File,
            "archive" => Self::Archive,
            "car" => Self::Car,
            other => return Err(format!("unknown content kind {other:?}")),
        })
    }
}

/// What an upload was found to be: how it is stored, an archive's format, its media type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Content {
    pub stored_as: StoredAs,
    /// For an archive, its format as records name it (`zip`, `tar.gz`, `7z`, ...).
    pub archive_format: Option<String>,
    pub media_type: String,
}

/// An upload and the operation that processes it (one each: they are created together).
#[derive(Clone, Debug, PartialEq)]
pub struct Operation {
    pub id: i64,
    pub upload_id: String,
    pub account_id: i64,
    pub kind: OperationKind,
    pub status: OperationStatus,
    pub status_message: String,
    pub progress_percent: f64,
    pub cid: Option<String>,
    pub error: Option<OperationError>,
    pub name: String,
    pub size: u64,
    pub mime_type: String,
    /// How an archive is stored; `None` for what is not an archive.
    pub archive_mode: Option<ArchiveMode>,
    pub profile: String,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    pub completed_at_ms: Option<i64>,
    /// Bytes of the DAG kept (its distinct blocks), once completed: what the quota counts.
    pub dag_size: Option<u64>,
    /// When its owner deleted it; a deleted upload or pin is no longer listed or kept.
    pub deleted_at_ms: Option<i64>,
    /// A pin's `origins` (multiaddrs to fetch from first); empty for uploads.
    pub origins: Vec<String>,
    /// What it is tagged with (a pin's `meta`), to be found again.
    pub keyvalues: KeyValues,
    /// The key that began it (`None` for one begun by a link, or before keys had ids here).
    pub key_id: Option<i64>,
    /// The upload link it was sent through.
    pub link_id: Option<String>,
    /// The file name the uploader sent (a multipart part's, TUS `filename`), which detection
    /// reads.
    pub file_name: Option<String>,
    /// How its bytes are stored, once they were looked at (a TUS upload's when processed).
    pub stored_as: Option<StoredAs>,
    /// An archive's format (`zip`, `tar.gz`, ...), once found.
    pub archive_format: Option<String>,
}

/// A completed DAG as it is committed: its root and its size (the distinct blocks' bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredDag {
    pub cid: String,
    pub size: u64,
}

/// A pin by CID to record (Pinning Service API `Pin`), queued for a worker to fetch.
#[derive(Clone, Debug)]
pub struct NewPin {
    /// The pin's `requestid`.
    pub request_id: String,
    pub account_id: i64,
    pub cid: String,
    pub name: String,
    pub origins: Vec<String>,
    /// The pin's `meta`.
    pub keyvalues: KeyValues,
    pub key_id: Option<i64>,
}

/// What an account keeps (uploads and pins), as `GET /api/uploads` and `GET /pins` filter it.
/// Newest first; every condition set must hold.
#[derive(Clone, Debug, Default)]
pub struct KeptFilter {
    /// Any of these root CIDs.
    pub cids: Vec<String>,
    pub name: Option<(String, NameMatch)>,
    /// Any of these statuses (all when empty).
    pub statuses: Vec<OperationStatus>,
    pub created_before_ms: Option<i64>,
    pub created_after_ms: Option<i64>,
    /// Each key has this value in its key-values (a pin's `meta`).
    pub keyvalues: Vec<(String, String)>,
    /// Only what has a root CID (the Pinning Service API lists pins, which always have one).
    pub with_cid: bool,
    /// Uploads only, not pins by CID.
    pub uploads_only: bool,
    /// Only the uploads sent through this upload link.
    pub link_id: Option<String>,
    /// Strictly older than this (the cursor of the previous page).
    pub cursor: Option<KeptKey>,
    pub limit: u32,
}

/// A place in the newest-first order of what an account keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeptKey {
    pub created_at_ms: i64,
    pub id: i64,
}

/// How `name` is matched (the Pinning Service API's `match`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NameMatch {
    #[default]
    Exact,
    IExact,
    Partial,
    IPartial,
}

impl FromStr for NameMatch {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "exact" => Self::Exact,
            "iexact" => Self::IExact,
            "partial" => Self::Partial,
            "ipartial" => Self::IPartial,
            other => {
                return Err(format!(
                    "unknown match {other:?}: one of exact, iexact, partial, ipartial"
                ))
            }
        })
    }
}

/// A new upload to record with its operation.
#[derive(Clone, Debug)]
pub struct NewUpload {
    pub upload_id: String,
    pub account_id: i64,
    pub kind: OperationKind,
    pub name: String,
    pub size: u64,
    pub mime_type: String,
    /// How an archive is stored; `None` for what is not an archive.
    pub archive_mode: Option<ArchiveMode>,
    pub profile: String,
    pub keyvalues: KeyValues,
    /// The key that began it.
    pub key_id: Option<i64>,
    /// The upload link it was sent through.
    pub link_id: Option<String>,
    /// The file name the uploader sent, for detection when its bytes are processed later.
    pub file_name: Option<String>,
    /// What it was found to be, when that is known as it is recorded (a POST's); its
    /// `media_type` then replaces `mime_type`.
    pub content: Option<Content>,
}

/// How an operation is addressed: by integer id or by the id of its upload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OperationRef {
    Id(i64),
    UploadId(String),
}

impl OperationRef {
    /// An all-digit path segment is an operation id; anything else an upload id.
    pub fn parse(segment: &str) -> Self {
        match segment.parse::<i64>() {
            Ok(id) if !segment.starts_with('+') => Self::Id(id),
            _ => Self::UploadId(segment.to_owned()),
        }
    }
}

/// Filters of the operation list, newest first.
#[derive(Clone, Debug, Default)]
pub struct OperationFilter {
    pub status: Option<OperationStatus>,
    pub cid: Option<String>,
    /// Only operations with an id below this (the cursor of the previous page).
    pub before_id: Option<i64>,
    /// Only the operations this key began.
    pub key_id: Option<i64>,
    pub limit: u32,
}

/// Where a block's bytes are: a pack and a byte range in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockLocation {
    pub pack: String,
    pub offset: u64,
    pub length: u64,
    /// A dag-pb block recorded as linking to nothing (a CIDv0 file's leaf), so a walk that
    /// needs only names need not read it; `false` also where it was not recorded (blocks
    /// stored before it was).
    pub without_links: bool,
}

/// A block index entry, with the size of the pack that holds it: the collector's view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexedBlock {
    pub multihash: Vec<u8>,
    pub location: BlockLocation,
    pub pack_size: u64,
}

/// What one collection changes in the block index, in one transaction.
#[derive(Clone, Debug, Default)]
pub struct Collection {
    /// Blocks no live root reaches: their index entries are removed.
    pub dead: Vec<Vec<u8>>,
    /// Live blocks copied out of mostly dead packs into a new pack: their entries move to it.
    pub compacted: Option<Compaction>,
    /// Packs that hold no indexed block once the rest is applied: their rows are removed and
    /// their names kept in `dead_packs` until the blobs are deleted.
    pub emptied: Vec<String>,
}

/// A new pack of live blocks; `sources[i]` is the pack `pack.blocks[i]` was copied from.
#[derive(Clone, Debug)]
pub struct Compaction {
    pub pack: SealedPack,
    pub sources: Vec<String>,
}

/// How applying a [`Collection`] went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Collected {
    /// Applied; these packs are no longer referenced and their blobs can be deleted.
    Applied { packs_removed: Vec<String> },
    /// Nothing applied: these roots were kept since the collector's walk began and it has not
    /// walked them. It walks them and tries again.
    NewRoots(Vec<String>),
}

/// The part a TUS upload plays in concatenation (TUS `concatenation` extension).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TusConcat {
    /// An ordinary upload.
    None,
    /// A part of a later final upload; never processed on its own.
    Partial,
    /// Made of these partial uploads, in order.
    Final(Vec<String>),
}

/// Where a TUS upload stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TusState {
    Receiving,
    Complete,
    Terminated,
    Expired,
}

impl TusState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Receiving => "receiving",
            Self::Complete => "complete",
            Self::Terminated => "terminated",
            Self::Expired => "expired",
        }
    }
}

impl FromStr for TusState {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "receiving" => Self::Receiving,
            "complete" => Self::Complete,
            "terminated" => Self::Terminated,
            "expired" => Self::Expired,
            other => return Err(format!("unknown TUS state {other:?}")),
        })
    }
}

/// A TUS upload's record. Its offset is not here: it is the durable length of its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TusUpload {
    pub id: String,
    pub account_id: i64,
    /// The operation that processes it; `None` for partial uploads.
    pub operation_id: Option<i64>,
    /// `None` while the length is deferred.
    pub length: Option<u64>,
    /// `Upload-Metadata` exactly as received, echoed by HEAD.
    pub metadata: String,
    pub concat: TusConcat,
    pub state: TusState,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,
    /// The upload link it was created through: its PATCHes need no other credential.
    pub link_id: Option<String>,
}

/// A TUS upload to create; `upload` describes its operation (absent for partial uploads).
#[derive(Clone, Debug)]
pub struct NewTusUpload {
    pub id: String,
    pub account_id: i64,
    pub length: Option<u64>,
    pub metadata: String,
    pub concat: TusConcat,
    pub expires_at_ms: i64,
    pub link_id: Option<String>,
    pub upload: Option<NewUpload>,
}

/// The answer to a request for an upload's lease (one writer per TUS upload, across nodes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseAttempt {
    Taken,
    /// Another holder's lease runs until then (milliseconds since the epoch).
    Held {
        until_ms: i64,
    },
}

/// A running IPFS node of this service, as it announces itself to the others that share the
/// metadata store: delegated routing names every live node as a provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRecord {
    pub peer_id: String,
    /// Its libp2p multiaddrs (with no `/p2p/` suffix).
    pub addrs: Vec<String>,
    /// Its trustless gateway as a multiaddr (`/dns/host/tcp/443/tls/http`), if it has one.
    pub gateway: Option<String>,
    /// When it last said it was alive (milliseconds since the epoch).
    pub seen_at_ms: i64,
}

/// A place in a log of roots, in time order and then by operation: the provide log (roots as
/// their uploads completed) or the deletion log (roots as their uploads were deleted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LogPlace {
    /// When the entry was made: the upload's completion, or its deletion.
    pub at_ms: i64,
    pub operation_id: i64,
}

/// How far one node has provided (announced to the DHT) what is stored, kept in the metadata
/// store so that a restart resumes where it stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProvideProgress {
    /// Every root completed up to here has been provided.
    pub through: LogPlace,
    /// Where the reprovide cycle is; `None` before its first pass.
    pub pass: Option<SweepPass>,
}

/// One pass of the reprovide cycle, which provides everything again region by region along
/// the DHT's keyspace, each region at its time in the interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepPass {
    /// When the pass began: the keyspace's region at position `p` falls due
    /// `p / 2^64` of the interval after it.
    pub began_at_ms: i64,
    /// The keys before this position along the keyspace (the first 64 bits of a key's place)
    /// have been provided in this pass.
    pub reached: u64,
}

/// One node's IPNI advertisement chain, as far as it has been published.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IpniChain {
    /// The newest advertisement's CID; `None` before the first.
    pub head: Option<String>,
    /// Every root completed up to here in the provide log has been advertised (or skipped).
    pub completed_through: LogPlace,
    /// Every deletion up to here (its `deleted_at` and operation id, in a [`LogPlace`]) has been
    /// considered for a removal advertisement.
    pub deleted_through: LogPlace,
}

/// What one publication of a node's IPNI chain writes, all at once: new blocks, the head they
/// lead to, and the roots advertised and withdrawn by them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IpniPublication {
    /// Advertisements and entry chunks, by CID.
    pub blocks: Vec<(String, Vec<u8>)>,
    pub chain: IpniChain,
    pub advertised: Vec<String>,
    pub withdrawn: Vec<String>,
}

/// A block written to a pack: its multihash and where its bytes are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedBlock {
    pub multihash: Vec<u8>,
    pub offset: u64,
    pub length: u64,
    /// A dag-pb block that links to nothing (see [`BlockLocation::without_links`]).
    pub without_links: bool,
}

/// A durable, named pack and what it holds.
#[derive(Clone, Debug)]
pub struct SealedPack {
    pub name: String,
    pub size: u64,
    pub blocks: Vec<PackedBlock>,
}

impl SealedPack {
    pub fn stored_bytes(&self) -> u64 {
        self.blocks.iter().map(|b| b.length).sum()
    }
}

/// What a sealed pack writer leaves: the new pack, when any block was new, and the blocks of
/// the DAG that storage already had. A commit checks those are still stored: the collector may
/// have removed one after the writer was told it was there (see `ARCHITECTURE.md`, "Garbage
/// collection").
#[derive(Clone, Debug, Default)]
pub struct Packed {
    pub pack: Option<SealedPack>,
    pub reused: Vec<Vec<u8>>,
}

/// The key-values an upload or pin is tagged with, to be found again: a few short strings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyValues(BTreeMap<String, String>);

impl KeyValues {
    pub const MAX_PAIRS: usize = 16;
    pub const MAX_KEY_BYTES: usize = 64;
    pub const MAX_VALUE_BYTES: usize = 256;

    /// Pairs within the limits, or what is over one.
    pub fn new(pairs: BTreeMap<String, String>) -> Result<Self, String> {
        if pairs.len() > Self::MAX_PAIRS {
            return Err(format!(
                "{} key-values; at most {} are kept",
                pairs.len(),
                Self::MAX_PAIRS
            ));
        }
        for (key, value) in &pairs {
            if key.is_empty() || key.len() > Self::MAX_KEY_BYTES {
                return Err(format!(
                    "the key {key:?} must be 1 to {} bytes",
                    Self::MAX_KEY_BYTES
                ));
            }
            if value.len() > Self::MAX_VALUE_BYTES {
                return Err(format!(
                    "the value of {key:?} is {} bytes; at most {} are kept",
                    value.len(),
                    Self::MAX_VALUE_BYTES
                ));
            }
        }
        Ok(Self(pairs))
    }

    /// Key-values as stored, whatever limits applied when they were written: an earlier
    /// release let a pin's `meta` hold up to 16 KiB, and an upgrade must not make its record
    /// unreadable. (Changing them applies today's limits to the result.)
    pub fn from_stored(text: &str) -> Result<Self, String> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("key-values are not JSON: {e}"))?;
        let serde_json::Value::Object(object) = value else {
            return Err("key-values are not a JSON object".into());
        };
        Ok(Self(
            object
                .into_iter()
                .filter_map(|(key, value)| match value {
                    serde_json::Value::String(value) => Some((key, value)),
                    _ => None,
                })
                .collect(),
        ))
    }

    /// A JSON object of strings, as the API and the stored column write them.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("key-values are not JSON: {e}"))?;
        Self::from_value(value)
    }

    pub fn from_value(value: serde_json::Value) -> Result<Self, String> {
        let serde_json::Value::Object(object) = value else {
            return Err("key-values must be a JSON object of strings".into());
        };
        let pairs = object
            .into_iter()
            .map(|(key, value)| match value {
                serde_json::Value::String(value) => Ok((key, value)),
                other => Err(format!(
                    "the key-value {key:?} is {other}; values must be strings"
                )),
            })
            .collect::<Result<_, _>>()?;
        Self::new(pairs)
    }

    /// These pairs with `changes` applied: a string sets a key, `None` removes it.
    pub fn merged(&self, changes: BTreeMap<String, Option<String>>) -> Result<Self, String> {
        let mut pairs = self.0.clone();
        for (key, value) in changes {
            match value {
                Some(value) => pairs.insert(key, value),
                None => pairs.remove(&key),
            };
        }
        Self::new(pairs)
    }

    pub fn to_json(&self) -> String {
        serde_json::Value::from(self).to_string()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

impl From<&KeyValues> for serde_json::Value {
    fn from(keyvalues: &KeyValues) -> Self {
        Self::Object(
            keyvalues
                .0
                .iter()
                .map(|(k, v)| (k.clone(), Self::String(v.clone())))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_values_keep_their_limits() {
        let ok = KeyValues::from_json(r#"{"user": "42", "kind": "avatar"}"#).unwrap();
        assert_eq!(ok.iter().count(), 2);
        assert_eq!(KeyValues::from_json(&ok.to_json()).unwrap(), ok);
        let many: serde_json::Map<_, _> = (0..17)
            .map(|i| (format!("k{i}"), serde_json::Value::from("v")))
            .collect();
        assert!(KeyValues::from_value(many.into())
            .unwrap_err()
            .contains("16"));
        let long_key = format!(r#"{{"{}": "v"}}"#, "k".repeat(65));
        assert!(KeyValues::from_json(&long_key).unwrap_err().contains("64"));
        let long_value = format!(r#"{{"k": "{}"}}"#, "v".repeat(257));
        assert!(KeyValues::from_json(&long_value)
            .unwrap_err()
            .contains("256"));
        assert!(KeyValues::from_json(r#"{"n": 1}"#).is_err());
        assert!(KeyValues::from_json("[]").is_err());
        let big = format!(r#"{{"note": "{}"}}"#, "x".repeat(1000));
        assert!(KeyValues::from_json(&big).is_err());
        assert_eq!(KeyValues::from_stored(&big).unwrap().iter().count(), 1);
        let changes = [
            ("kind".to_owned(), None),
            ("size".into(), Some("xl".into())),
        ];
        let merged = ok.merged(changes.into_iter().collect()).unwrap();
        assert_eq!(merged.to_json(), r#"{"size":"xl","user":"42"}"#);
    }
}
