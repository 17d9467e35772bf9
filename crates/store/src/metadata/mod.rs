//! The metadata store's capabilities, one trait per concern, so that each consumer sees only
//! what it uses. [`crate::MetadataStore`] is all of them; [`crate::sql::SqlStore`] implements
//! each once for both databases, and [`crate::suite`] holds every backend to them.
//!
//! - [`Accounts`]: accounts, their limits and usage, and the per-account rate buckets.
//! - [`Access`]: API keys and upload links: what may call, and with what limits.
//! - [`Uploads`]: uploads and pins as an account keeps them: recorded, committed with their content, changed, listed and deleted.
//! - [`OperationQueue`]: the durable queue of operations workers claim with a lease, and finish.
//! - [`BlockIndex`]: where each stored block is.
//! - [`TusRecords`]: TUS uploads' records and the leases that keep one writer per upload.
//! - [`EventLog`]: the event log, webhook endpoints and their deliveries.
//! - [`Names`]: IPNS names kept for accounts, and the records of others' names.
//! - [`GarbageCollection`]: the collector's lock, the index as it sees it, and applying what it found.
//! - [`Providing`]: what this node announces: the provide log and sweep progress, and its IPNI chain.
//! - [`Nodes`]: the service's live nodes, as they announce themselves.

mod access;
mod accounts;
mod blocks;
mod collection;
mod events;
mod names;
mod nodes;
mod providing;
mod queue;
mod tus;
mod uploads;

pub use access::Access;
pub use accounts::Accounts;
pub use blocks::BlockIndex;
pub use collection::GarbageCollection;
pub use events::EventLog;
pub use names::Names;
pub use nodes::Nodes;
pub use providing::Providing;
pub use queue::OperationQueue;
pub use tus::TusRecords;
pub use uploads::Uploads;
