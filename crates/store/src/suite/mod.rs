//! The conformance suite every [`MetadataStore`] backend must pass: one body, run against
//! SQLite and PostgreSQL. It panics on the first violation.
//!
//! One file per capability of [`crate::metadata`], one function per part of its contract, each
//! reading top to bottom as the behaviour it pins down; [`run`] calls them in an order that
//! keeps each one's records out of the others' counts.

use cairn_unixfs::{FileImporter, Profile};

use crate::access::{ApiKey, NewKey, NewLink};
use crate::model::KeyValues;
use crate::model::Packed;
use crate::model::{
    KeptFilter, KeptKey, NameMatch, NewPin, NewUpload, OperationFilter, OperationKind,
    OperationRef, OperationStatus, StoredDag,
};
use crate::packs::Packs;
use crate::{tokens, AccountLimits, MetadataStore, Spent, StoreError};

mod access;
mod collection;
mod events;
mod names;
mod nodes;
mod providing;
mod queue;
mod tus;
mod uploads;

use access::*;
use collection::*;
use events::*;
use names::*;
use nodes::*;
use providing::*;
use queue::*;
use tus::*;
use uploads::*;

/// A root as a test names it, for records whose blocks the test does not need.
fn root(cid: &str, size: u64) -> StoredDag {
    StoredDag {
        cid: cid.to_owned(),
        size,
    }
}

fn upload(id: &str, account_id: i64) -> NewUpload {
    NewUpload {
        upload_id: id.to_owned(),
        account_id,
        kind: OperationKind::Upload,
        name: format!("{id}.bin"),
        size: 3000,
        mime_type: "application/octet-stream".to_owned(),
        archive_mode: None,
        profile: Profile::default().name.to_owned(),
        keyvalues: KeyValues::default(),
        key_id: None,
        link_id: None,
        file_name: None,
        content: None,
    }
}

/// A key of `account_id` with every scope, as `cairn token create` makes.
async fn add_token(store: &dyn MetadataStore, account_id: i64, token: &tokens::NewToken) -> ApiKey {
    store
        .create_key(&NewKey::all(account_id), &token.hash, &token.prefix)
        .await
        .unwrap()
}

/// The account a live token belongs to.
async fn account_of(store: &dyn MetadataStore, token: &[u8; 32]) -> Option<String> {
    let found = store.key_for_token(token).await.unwrap();
    found.map(|(account, _)| account.name)
}

/// Store `content` into a new pack, skipping blocks the store already has.
pub async fn pack_content(
    store: &dyn MetadataStore,
    packs: &Packs,
    content: &[u8],
) -> (StoredDag, Packed) {
    // The suite stores small contents: look the known blocks up first, then write synchronously.
    let profile = Profile {
        chunk_size: 1000,
        ..Profile::default()
    };
    let mut probe = cairn_unixfs::MemoryBlocks::default();
    let mut importer = FileImporter::new(&profile, &mut probe);
    importer.push(content).unwrap();
    let root = importer.finish().unwrap();
    let asked: Vec<Vec<u8>> = probe.iter().map(|(cid, _)| cid.hash().to_bytes()).collect();
    let known = store.stored_blocks(&asked).await.unwrap();
    for multihash in &asked {
        assert_eq!(
            known.contains(multihash),
            store.has_block(multihash).await.unwrap(),
            "a batch's answer and a block's own agree"
        );
    }
    let mut writer = packs
        .writer(Box::new(move |asked: &[Vec<u8>]| {
            Ok(asked
                .iter()
                .filter(|mh| known.contains(*mh))
                .cloned()
                .collect())
        }))
        .unwrap();
    let mut importer = FileImporter::new(&profile, &mut writer);
    importer.push(content).unwrap();
    importer.finish().unwrap();
    let dag = StoredDag {
        cid: root.cid.to_string(),
        size: writer.dag_bytes(),
    };
    (dag, writer.seal().unwrap())
}

pub async fn run(store: &dyn MetadataStore, packs: &Packs) {
    accounts_and_tokens(store).await;
    uploads_dedup_and_quota(store, packs).await;
    deletes_and_commits_of_one_account_at_once_all_succeed(store, packs).await;
    commits_at_once_that_break_a_limit_fail_alone(store, packs).await;
    a_page_and_its_count_agree_while_uploads_complete_and_go(store).await;
    operations_are_private_and_listed_newest_first(store, packs).await;
    the_queue_hands_each_operation_to_one_worker_and_recovers_expired_claims(store, packs).await;
    tus_uploads_become_claimable_only_when_complete(store).await;
    an_upload_lease_has_one_holder_who_can_be_asked_to_stop(store).await;
    rate_buckets_refill_over_time_and_are_kept_apart(store).await;
    nodes_are_named_while_they_announce_themselves(store).await;
    the_provide_log_lists_completed_roots_in_completion_order(store).await;
    each_nodes_ipni_chain_is_its_own_and_published_whole(store).await;
    collections_never_remove_a_block_a_commit_reused(store, packs).await;
    // Last: it leaves pins queued, which the queue's checks above would claim.
    uploads_and_pins_are_listed_filtered_and_deleted(store, packs).await;
    // After every count of operations: it leaves uploads queued and deleted.
    keys_links_and_keyvalues(store).await;
    events_follow_operations_and_deliveries_follow_events(store).await;
    names_move_forward_only_and_foreign_records_keep_the_best(store).await;
}

/// Two nodes on one database: operations queued on either are claimed by exactly one worker,
/// however the claims interleave.
pub async fn run_two_nodes(a: &dyn MetadataStore, b: &dyn MetadataStore) {
    let account = a
        .create_account("two-nodes", AccountLimits::default())
        .await
        .unwrap();
    let mut queued = std::collections::BTreeSet::new();
    for i in 0..40 {
        let node = if i % 2 == 0 { a } else { b };
        let op = node
            .record_upload(upload(&format!("two-nodes-{i}"), account.id), None)
            .await
            .unwrap();
        queued.insert(op.id);
    }
    let lease = std::time::Duration::from_secs(60);
    let (from_a, from_b) =
        tokio::join!(claim_all("node-a", a, lease), claim_all("node-b", b, lease));
    let mut claimed: Vec<i64> = from_a.iter().chain(&from_b).copied().collect();
    claimed.sort_unstable();
    let unique: std::collections::BTreeSet<i64> = claimed.iter().copied().collect();
    assert_eq!(
        claimed.len(),
        unique.len(),
        "an operation was claimed twice"
    );
    assert_eq!(unique, queued, "every queued operation is claimed");
}
