//! What a collection did, as `cairn gc --json` prints it and `/metrics` counts it.

/// What a collection did (or, on a dry run, would do).
#[derive(Clone, Debug, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GcReport {
    pub dry_run: bool,
    pub live_roots: u64,
    pub live_blocks: u64,
    pub dead_blocks: u64,
    pub dead_bytes: u64,
    pub packs_deleted: u64,
    pub packs_compacted: u64,
    /// Live bytes copied into the compacted pack.
    pub bytes_copied: u64,
    /// Pack bytes deleted, less the compacted pack's size.
    pub bytes_reclaimed: u64,
    /// Blocks of live DAGs not in the index (the DAG was damaged before; `cairn fsck` lists
    /// them).
    pub missing_blocks: u64,
    pub seconds: f64,
}
