//! IPNS names kept for accounts: a key made for each and kept sealed, records signed and
//! stored, put to the DHT, and republished well before they expire; and names resolved,
//! whoever keeps them.
//!
//! A record lives [`RECORD_LIFETIME`] and may be cached by resolvers for [`RECORD_TTL`], so a
//! site's next version shows within minutes. Any node re-signs the records about to expire
//! (the store's compare-and-set on the sequence picks one), and each node puts every name to
//! the DHT when it starts.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use cairn_p2p::ipns::{self, Name, Record};
use cairn_p2p::key::Keypair;
use cairn_store::names::{ForeignRecord, KeptName};
use cairn_store::{now_ms, StoreError};
use cairn_unixfs::Cid;

pub use crate::names_key::NamesKey;
use crate::{sleep_unless_stopped, Service};

/// How long a record is valid.
pub const RECORD_LIFETIME: Duration = Duration::from_secs(48 * 3600);
/// How long a resolver may cache a record: how late a site's next version may show.
pub const RECORD_TTL: Duration = Duration::from_secs(300);
/// A record is signed again once it has less than this left.
const REPUBLISH_WITHIN: Duration = Duration::from_secs(24 * 3600);
const REPUBLISH_EVERY: Duration = Duration::from_secs(600);
/// Names re-signed, or put to the DHT at start, per round.
const NAMES_PER_ROUND: u32 = 1000;
/// How long a lookup of a name kept elsewhere waits for the DHT.
const DHT_LOOKUP: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum NameError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Invalid(String),
    /// Another request changed the name between our read and our write.
    #[error("the name was changed by another request at the same time; send it again")]
    Raced,
    #[error("names are not enabled on this server (it has no names key)")]
    Disabled,
    #[error("the names key cannot open this name's key: was --names-key changed?")]
    Unsealable,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A name resolved: what its record says, and the record as it travels.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub record: Record,
    pub bytes: Vec<u8>,
}

/// A record for `value`, valid for [`RECORD_LIFETIME`] from now: its bytes and expiry.
fn signed(key: &Keypair, value: &str, sequence: u64) -> (Vec<u8>, SystemTime) {
    let validity = SystemTime::now() + RECORD_LIFETIME;
    let record = Record {
        value: value.to_owned(),
        sequence,
        validity,
        ttl: RECORD_TTL,
    };
    (record.sign(key), validity)
}

fn names_key(service: &Service) -> Result<&Arc<NamesKey>, NameError> {
    service.names_key.as_ref().ok_or(NameError::Disabled)
}

/// A new name for the account, pointing at `target`.
pub async fn create(
    service: &Service,
    account_id: i64,
    target: &Cid,
    label: Option<String>,
) -> Result<KeptName, NameError> {
    let sealer = names_key(service)?;
    if let Some(label) = &label {
        check_label(label)?;
    }
    let key = Keypair::generate_ed25519();
    let secret = key.to_protobuf_encoding().expect("an Ed25519 key encodes");
    let value = format!("/ipfs/{target}");
    let (record, validity) = signed(&key, &value, 0);
    let now = now_ms();
    let kept = service
        .store
        .create_name(&KeptName {
            name: Name::of(&key.public()).to_string(),
            account_id,
            label,
            sealed_key: sealer.seal(&secret),
            value,
            sequence: 0,
            record,
            expires_at_ms: ipns::unix_ms(validity),
            created_at_ms: now,
            updated_at_ms: now,
        })
        .await?;
    put_in_background(service, &kept);
    Ok(kept)
}

/// Point `kept` at `target`: the next sequence, signed, stored, and put to the DHT.
pub async fn point(service: &Service, kept: KeptName, target: &Cid) -> Result<KeptName, NameError> {
    let value = format!("/ipfs/{target}");
    let next = sign_again(service, kept, value, 1).await?;
    put_in_background(service, &next);
    Ok(next)
}

/// `kept` signed again with `value`, its sequence moved on by `step` (0 to republish), if
/// nobody changed it meanwhile.
async fn sign_again(
    service: &Service,
    kept: KeptName,
    value: String,
    step: u64,
) -> Result<KeptName, NameError> {
    let key = (names_key(service)?.open(&kept.sealed_key)).ok_or(NameError::Unsealable)?;
    let previous = kept.sequence;
    let sequence = previous.saturating_add(step);
    let (record, validity) = signed(&key, &value, sequence);
    let next = KeptName {
        value,
        sequence,
        record,
        expires_at_ms: ipns::unix_ms(validity),
        updated_at_ms: now_ms(),
        ..kept
    };
    if service.store.update_name(&next, previous).await? {
        Ok(next)
    } else {
        Err(NameError::Raced)
    }
}

/// Labels are how people and scripts name their names: short, and never a name itself.
fn check_label(label: &str) -> Result<(), NameError> {
    // `.` and `..` would be path steps in `/api/names/{label}`.
    let fine = !matches!(label, "" | "." | "..")
        && label.len() <= 64
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !fine {
        return Err(NameError::Invalid(format!(
            "a name's label is 1 to 64 letters, digits, '-', '_' or '.' (got {label:?})"
        )));
    }
    if label.parse::<Name>().is_ok() {
        return Err(NameError::Invalid(format!(
            "{label:?} is an IPNS name itself; a label must not be one"
        )));
    }
    Ok(())
}

/// The account's name `name_or_label`: its `k51...` form or its label.
pub async fn find(
    service: &Service,
    account_id: i64,
    name_or_label: &str,
) -> Result<KeptName, NameError> {
    let kept = match name_or_label.parse::<Name>() {
        Ok(name) => service.store.kept_name(&name.to_string()).await?,
        // No name has a label it could not have been given (nor is a NUL sent to the database).
        Err(_) if check_label(name_or_label).is_err() => None,
        Err(_) => {
            service
                .store
                .kept_name_by_label(account_id, name_or_label)
                .await?
        }
    };
    kept.filter(|kept| kept.account_id == account_id)
        .ok_or_else(|| NameError::NotFound(format!("no name {name_or_label:?} in this account")))
}

/// The newest valid record of `name`: this Cairn's own if it keeps the name, else the best
/// pushed to its router, else what the DHT holds.
pub async fn resolve(service: &Service, name: &Name) -> Result<Option<Resolved>, NameError> {
    let text = name.to_string();
    let now = SystemTime::now();
    let verified = |bytes: Vec<u8>| {
        Record::verify(name, &bytes, now)
            .ok()
            .map(|record| Resolved { record, bytes })
    };
    if let Some(kept) = service.store.kept_name(&text).await? {
        return Ok(verified(kept.record));
    }
    if let Some(found) = service.store.foreign_record(&text).await? {
        if let Some(resolved) = verified(found.record) {
            return Ok(Some(resolved));
        }
    }
    let Some(node) = &service.node else {
        return Ok(None);
    };
    let Ok(mut values) = node.get_record(name.routing_key()).await else {
        return Ok(None);
    };
    let mut best: Option<Resolved> = None;
    let deadline = tokio::time::Instant::now() + DHT_LOOKUP;
    while let Ok(Some(bytes)) = tokio::time::timeout_at(deadline, values.recv()).await {
        if let Some(found) = verified(bytes) {
            if best
                .as_ref()
                .is_none_or(|b| found.record.supersedes(&b.record))
            {
                best = Some(found);
            }
        }
    }
    if let Some(best) = &best {
        // Kept so the next resolve need not wait on the DHT.
        let _ = keep_foreign(service, name, best).await;
    }
    Ok(best)
}

/// A record pushed to the router (`PUT /routing/v1/ipns/{name}`): verified, and kept if it
/// is newer than the one kept. A name this Cairn keeps takes no record from outside.
pub async fn accept(service: &Service, name: &Name, bytes: Vec<u8>) -> Result<bool, NameError> {
    let record = Record::verify(name, &bytes, SystemTime::now())
        .map_err(|e| NameError::Invalid(e.to_string()))?;
    if service.store.kept_name(&name.to_string()).await?.is_some() {
        return Err(NameError::Invalid(
            "this name is kept here: point it through /api/names".into(),
        ));
    }
    let kept = keep_foreign(service, name, &Resolved { record, bytes }).await?;
    Ok(kept)
}

async fn keep_foreign(
    service: &Service,
    name: &Name,
    resolved: &Resolved,
) -> Result<bool, NameError> {
    Ok(service
        .store
        .put_foreign_record(&ForeignRecord {
            name: name.to_string(),
            record: resolved.bytes.clone(),
            sequence: resolved.record.sequence,
            expires_at_ms: ipns::unix_ms(resolved.record.validity),
        })
        .await?)
}

fn put_in_background(service: &Service, kept: &KeptName) {
    if let Some(node) = service.node.clone() {
        let kept = kept.clone();
        tokio::spawn(async move { put_to_dht(&node, &kept).await });
    }
}

async fn put_to_dht(node: &cairn_p2p::NodeHandle, kept: &KeptName) {
    let Ok(name) = kept.name.parse::<Name>() else {
        return;
    };
    let left = Duration::from_millis((kept.expires_at_ms - now_ms()).max(0) as u64);
    match node
        .put_record(
            name.routing_key(),
            kept.record.clone(),
            Instant::now() + left,
        )
        .await
    {
        Ok(peers) => tracing::debug!(name = %kept.name, peers, "put a name's record to the DHT"),
        Err(e) => tracing::debug!(name = %kept.name, error = %e, "putting a record failed"),
    }
}

/// Runs until the service stops: puts every name to the DHT once, then re-signs the records
/// about to expire, and forgets other names' records that have.
pub async fn republish(service: Service) {
    let stop = service.stop.subscribe();
    if service.names_key.is_none() {
        return;
    }
    if let Some(node) = &service.node {
        match service
            .store
            .names_expiring(i64::MAX, NAMES_PER_ROUND)
            .await
        {
            Ok(names) => {
                for kept in &names {
                    put_to_dht(node, kept).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "listing the names to put to the DHT failed"),
        }
    }
    loop {
        if let Err(e) = republish_round(&service).await {
            tracing::warn!(error = %e, "republishing names failed; trying again later");
        }
        if sleep_unless_stopped(&stop, REPUBLISH_EVERY).await {
            return;
        }
    }
}

async fn republish_round(service: &Service) -> Result<(), NameError> {
    let soon = now_ms() + REPUBLISH_WITHIN.as_millis() as i64;
    for kept in service.store.names_expiring(soon, NAMES_PER_ROUND).await? {
        let value = kept.value.clone();
        match sign_again(service, kept, value, 0).await {
            Ok(renewed) => {
                if let Some(node) = &service.node {
                    put_to_dht(node, &renewed).await;
                }
            }
            // Another node renewed it, or its owner pointed it elsewhere: done either way.
            Err(NameError::Raced) => {}
            Err(e) => tracing::warn!(error = %e, "a name could not be republished"),
        }
    }
    service.store.forget_foreign_records(now_ms()).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_store::{AccountLimits, Accounts, Names};

    use crate::ServiceConfig;

    /// A record with less than a day left is signed again, same sequence, valid two days
    /// more; one with more left is not touched.
    #[tokio::test]
    async fn a_record_near_its_end_is_signed_again_with_its_sequence() {
        let dir = tempfile::tempdir().unwrap();
        let (service, store) = Service::embedded(dir.path(), ServiceConfig::default())
            .await
            .unwrap();
        let account = store
            .create_account("names", AccountLimits::default())
            .await
            .unwrap();
        let cid: Cid = "bafkqaaa".parse().unwrap();
        let ending = create(&service, account.id, &cid, None).await.unwrap();
        let fresh = create(&service, account.id, &cid, None).await.unwrap();
        // As if made 47 hours ago: an hour left.
        let aged = KeptName {
            expires_at_ms: now_ms() + 3_600_000,
            ..ending.clone()
        };
        assert!(store.update_name(&aged, 0).await.unwrap());

        republish_round(&service).await.unwrap();
        let renewed = store.kept_name(&ending.name).await.unwrap().unwrap();
        let name: Name = ending.name.parse().unwrap();
        let record = Record::verify(&name, &renewed.record, SystemTime::now()).unwrap();
        assert_eq!((renewed.sequence, record.sequence), (0, 0));
        let two_days = SystemTime::now() + RECORD_LIFETIME - Duration::from_secs(60);
        assert!(record.validity > two_days, "{:?}", record.validity);
        assert_eq!(ipns::unix_ms(record.validity), renewed.expires_at_ms);
        let untouched = store.kept_name(&fresh.name).await.unwrap().unwrap();
        assert_eq!(untouched.record, fresh.record);
    }

    #[test]
    fn labels_are_short_plain_and_never_a_name() {
        assert!(check_label("my-site.v2").is_ok());
        for bad in ["", ".", "..", "has space", &"x".repeat(65)] {
            assert!(check_label(bad).is_err(), "{bad:?}");
        }
        let name = Name::of(&Keypair::generate_ed25519().public()).to_string();
        assert!(check_label(&name).is_err());
    }
}
