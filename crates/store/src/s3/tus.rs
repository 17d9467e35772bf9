//! The bytes of TUS uploads in a bucket, so that any node can take up an upload another began.
//!
//! An upload `id` is a few objects under `<prefix>/<id>/`:
//! - `state`, the manifest: the upload's multipart upload, its parts so far, and its *tail*;
//! - `tail-<random>`: the bytes after the last part. S3 wants every part but the last to be at
//!   least 5 MiB (ours are 8 MiB, growing for very large uploads: see `part_bytes`), so bytes
//!   that do not yet fill a part wait in a small object of their own, as durable as a part;
//! - `bytes`: the multipart upload's object, which exists once the upload is sealed.
//!
//! Rewriting `state` is the commit point of every change, since S3 replaces an object whole:
//! parts and tails are written first, then a new `state` names them. The offset is what `state`
//! adds up to. A crash before the rewrite leaves the old `state`, naming only objects that are
//! still there (a tail is deleted only once no `state` names it), so the offset never moves back
//! past an acknowledged byte. An atomic chunk rewrites `state` once, at the end, which makes it
//! all-or-nothing; any other chunk also commits after each part, so a long PATCH cut off by a
//! crash keeps its parts. Parts uploaded but never committed are overwritten by the next ones,
//! or dropped when the upload is completed.
//!
//! Every rewrite of `state` is conditional on the version the writer last saw (`If-Match`), so
//! a writer that lost the upload to another node without knowing it (a node paused past its
//! lease) fails instead of overwriting the other's commit.

use std::io;

use futures_util::TryStreamExt;
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, PutMode, PutPayload, UpdateVersion};

use super::{Bucket, MIN_PART_BYTES};
use crate::blobs::ReadSeek;
use crate::random::random_name;
use crate::tus_bytes::{check_id, Appender, TusBytes};

/// S3 numbers parts from 1 to 10,000.
const MAX_PARTS: usize = 10_000;
/// The first parts' size. Every 1,000 parts the size doubles, so a PATCH buffers 8 MiB until
/// 8 GB are stored, and the 10,000 parts S3 allows still reach 8 TB; no length needs to be
/// known in advance (lengths may be deferred).
const FIRST_PART_BYTES: usize = 8 << 20;
const PARTS_PER_SIZE: usize = 1_000;
const _: () = assert!(FIRST_PART_BYTES as u64 >= MIN_PART_BYTES);

/// How big part `index` (from 0) is, unless it is the last.
fn part_bytes(index: usize) -> usize {
    FIRST_PART_BYTES << (index / PARTS_PER_SIZE)
}
const MANIFEST_VERSION: &str = "cairn-tus 1";

#[derive(Clone, Debug)]
pub struct S3TusBytes {
    bucket: Bucket,
}

/// What an upload's bytes are: the contents of its `state` object.
#[derive(Clone, Debug, Default, PartialEq)]
struct Manifest {
    multipart: Option<String>,
    /// Each part's entity tag (needed to complete the upload) and length.
    parts: Vec<(String, u64)>,
    /// The tail object's name and length.
    tail: Option<(String, u64)>,
    /// The multipart upload is complete: `bytes` holds everything.
    sealed: bool,
    /// The entity tag of the `state` object this was read from or written as (not stored in
    /// it): the next write must replace exactly that version.
    etag: Option<String>,
}

impl Manifest {
    fn offset(&self) -> u64 {
        self.parts.iter().map(|(_, len)| len).sum::<u64>() + self.tail.as_ref().map_or(0, |t| t.1)
    }

    fn encode(&self) -> Vec<u8> {
        let mut text = format!("{MANIFEST_VERSION}\n");
        if let Some(id) = &self.multipart {
            text += &format!("multipart {id}\n");
        }
        for (etag, len) in &self.parts {
            text += &format!("part {len} {etag}\n");
        }
        if let Some((name, len)) = &self.tail {
            text += &format!("tail {len} {name}\n");
        }
        if self.sealed {
            text += "sealed\n";
        }
        text.into_bytes()
    }

    fn decode(bytes: &[u8]) -> io::Result<Self> {
        let corrupt = |why: &str| io::Error::other(format!("corrupt TUS state object: {why}"));
        let text = std::str::from_utf8(bytes).map_err(|_| corrupt("not UTF-8"))?;
        let mut lines = text.lines();
        if lines.next() != Some(MANIFEST_VERSION) {
            return Err(corrupt("unknown version"));
        }
        let number = |n: &str| n.parse::<u64>().map_err(|_| corrupt("bad number"));
        let mut manifest = Manifest::default();
        for line in lines {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            let (len, name) = value.split_once(' ').unwrap_or((value, ""));
            match key {
                "multipart" => manifest.multipart = Some(value.to_owned()),
                "part" => manifest.parts.push((name.to_owned(), number(len)?)),
                "tail" => manifest.tail = Some((name.to_owned(), number(len)?)),
                "sealed" => manifest.sealed = true,
                _ => return Err(corrupt(line)),
            }
        }
        Ok(manifest)
    }
}

impl S3TusBytes {
    /// See [`Bucket::open`] for the URL.
    pub fn open(url: &str) -> io::Result<Self> {
        Ok(Self {
            bucket: Bucket::open(url, "tus")?,
        })
    }

    fn object(&self, id: &str, name: &str) -> io::Result<ObjectPath> {
        check_id(id)?;
        Ok(self.bucket.object(&format!("{id}/{name}")))
    }

    fn load(&self, id: &str) -> io::Result<Manifest> {
        let path = self.object(id, "state")?;
        let (etag, bytes) = self.bucket.call(|s3| async move {
            let got = s3.get(&path).await?;
            let etag = got.meta.e_tag.clone();
            Ok((etag, got.bytes().await?))
        })?;
        let mut manifest = Manifest::decode(&bytes)?;
        manifest.etag = etag;
        Ok(manifest)
    }

    /// Replace `state` with `manifest`, on condition that `state` is still the version
    /// `manifest` was read from (`If-Match`): a writer that lost the upload to another node,
    /// unbeknown to itself, fails here instead of overwriting the other's commit.
    fn save(&self, id: &str, manifest: &mut Manifest) -> io::Result<()> {
        let path = self.object(id, "state")?;
        let payload = PutPayload::from(manifest.encode());
        let mode = match &manifest.etag {
            Some(etag) => PutMode::Update(UpdateVersion {
                e_tag: Some(etag.clone()),
                version: None,
            }),
            None => PutMode::Overwrite,
        };
        let written = self
            .bucket
            .call(|s3| async move { s3.put_opts(&path, payload, mode.into()).await })?;
        manifest.etag = written.e_tag;
        Ok(())
    }

    fn put(&self, path: ObjectPath, bytes: Vec<u8>) -> io::Result<()> {
        self.bucket
            .call(|s3| async move { s3.put(&path, PutPayload::from(bytes)).await })
            .map(drop)
    }

    /// Complete the multipart upload (the tail becomes its last part), so `bytes` holds the
    /// whole upload. Safe to repeat after a crash half-way.
    fn seal(&self, id: &str, mut manifest: Manifest) -> io::Result<()> {
        let target = self.object(id, "bytes")?;
        // Completed before a crash, but not yet recorded: the object is whole already.
        let completed = self.bucket.size(&target).ok() == Some(manifest.offset());
        let tail = match &manifest.tail {
            Some((name, _)) if !completed => self.bucket.get(&self.object(id, name)?)?.to_vec(),
            _ => Vec::new(),
        };
        match manifest.multipart.clone() {
            _ if completed => {}
            // Everything fits in the tail: one plain object.
            None => self.put(target, tail)?,
            Some(upload) => {
                let mut parts: Vec<PartId> = manifest
                    .parts
                    .iter()
                    .map(|(etag, _)| PartId {
                        content_id: etag.clone(),
                    })
                    .collect();
                if !tail.is_empty() || parts.is_empty() {
                    let (path, upload, index) = (target.clone(), upload.clone(), parts.len());
                    parts.push(self.bucket.call(|s3| async move {
                        s3.put_part(&path, &upload, index, PutPayload::from(tail))
                            .await
                    })?);
                }
                self.bucket.call(|s3| async move {
                    s3.complete_multipart(&target, &upload, parts).await
                })?;
            }
        }
        manifest.sealed = true;
        self.save(id, &mut manifest)?;
        if let Some((name, _)) = &manifest.tail {
            self.bucket.delete(&self.object(id, name)?)?;
        }
        Ok(())
    }
}

impl TusBytes for S3TusBytes {
    fn create(&self, id: &str) -> io::Result<()> {
        self.save(id, &mut Manifest::default())
    }

    fn offset(&self, id: &str) -> io::Result<u64> {
        Ok(self.load(id)?.offset())
    }

    fn appender(&self, id: &str, atomic: bool) -> io::Result<Box<dyn Appender>> {
        let committed = self.load(id)?;
        if committed.sealed {
            return Err(io::Error::other(format!("upload {id} is complete")));
        }
        // The tail's bytes start the next part.
        let buffer = match &committed.tail {
            Some((name, _)) => self.bucket.get(&self.object(id, name)?)?.to_vec(),
            None => Vec::new(),
        };
        Ok(Box::new(S3Appender {
            store: self.clone(),
            id: id.to_owned(),
            manifest: committed.clone(),
            committed,
            pending: Vec::new(),
            buffer,
            written: 0,
            atomic,
        }))
    }

    fn open_read(&self, id: &str) -> io::Result<Box<dyn ReadSeek>> {
        let manifest = self.load(id)?;
        if !manifest.sealed {
            self.seal(id, manifest)?;
        }
        Ok(Box::new(self.bucket.reader(self.object(id, "bytes")?)?))
    }

    fn remove(&self, id: &str) -> io::Result<()> {
        match self.load(id) {
            Ok(Manifest {
                multipart: Some(upload),
                sealed: false,
                ..
            }) => {
                let path = self.object(id, "bytes")?;
                // Already aborted (a repeated remove) is fine.
                let _ = self
                    .bucket
                    .call(|s3| async move { s3.abort_multipart(&path, &upload).await });
            }
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let prefix = self.object(id, "")?;
        let objects: Vec<_> = self
            .bucket
            .call(|s3| async move { s3.list(Some(&prefix)).try_collect::<Vec<_>>().await })?;
        // `state` last: until it goes, a repeated remove still finds the upload to abort.
        let (state, rest): (Vec<_>, Vec<_>) = objects
            .into_iter()
            .partition(|o| o.location.filename() == Some("state"));
        for object in rest.into_iter().chain(state) {
            self.bucket.delete(&object.location)?;
        }
        Ok(())
    }
}

struct S3Appender {
    store: S3TusBytes,
    id: String,
    /// The `state` this chunk started from.
    committed: Manifest,
    /// The `state` as this chunk has rewritten it so far.
    manifest: Manifest,
    /// Parts uploaded and not yet named by `state`.
    pending: Vec<(String, u64)>,
    /// The old tail, then new bytes, until they fill a part.
    buffer: Vec<u8>,
    written: u64,
    atomic: bool,
}

impl S3Appender {
    fn send_part(&mut self) -> io::Result<()> {
        let store = &self.store;
        let target = store.object(&self.id, "bytes")?;
        let upload = match &self.manifest.multipart {
            Some(upload) => upload.clone(),
            None => {
                let path = target.clone();
                let upload = store
                    .bucket
                    .call(|s3| async move { s3.create_multipart(&path).await })?;
                // Recorded at once, so a removal can abort it whatever happens next.
                self.manifest.multipart = Some(upload.clone());
                store.save(&self.id, &mut self.manifest)?;
                self.committed.multipart = Some(upload.clone());
                self.committed.etag = self.manifest.etag.clone();
                upload
            }
        };
        let index = self.manifest.parts.len() + self.pending.len();
        if index >= MAX_PARTS - 1 {
            return Err(io::Error::other("the upload has too many parts for S3"));
        }
        let bytes = std::mem::take(&mut self.buffer);
        let len = bytes.len() as u64;
        let part = store.bucket.call(|s3| async move {
            s3.put_part(&target, &upload, index, PutPayload::from(bytes))
                .await
        })?;
        self.pending.push((part.content_id, len));
        if !self.atomic {
            // The old tail is inside this part now: the new state names the part instead.
            self.manifest.parts.append(&mut self.pending);
            self.manifest.tail = None;
            store.save(&self.id, &mut self.manifest)?;
        }
        Ok(())
    }

    /// Delete the tail the committed state named, once no state names it any more.
    fn drop_old_tail(&self) -> io::Result<()> {
        match &self.committed.tail {
            Some(old) if self.manifest.tail.as_ref() != Some(old) => self
                .store
                .bucket
                .delete(&self.store.object(&self.id, &old.0)?),
            _ => Ok(()),
        }
    }
}

impl Appender for S3Appender {
    fn start(&self) -> u64 {
        self.committed.offset()
    }

    fn append(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let part_bytes = part_bytes(self.manifest.parts.len() + self.pending.len());
            let taken = bytes.len().min(part_bytes - self.buffer.len());
            self.buffer.extend_from_slice(&bytes[..taken]);
            self.written += taken as u64;
            bytes = &bytes[taken..];
            if self.buffer.len() == part_bytes {
                self.send_part()?;
            }
        }
        Ok(())
    }

    fn keep(mut self: Box<Self>) -> io::Result<u64> {
        if self.written == 0 {
            return Ok(self.committed.offset());
        }
        self.manifest.tail = if self.buffer.is_empty() {
            None
        } else {
            let name = format!("tail-{}", random_name());
            let tail = std::mem::take(&mut self.buffer);
            let len = tail.len() as u64;
            self.store.put(self.store.object(&self.id, &name)?, tail)?;
            Some((name, len))
        };
        self.manifest.parts.append(&mut self.pending);
        self.store.save(&self.id, &mut self.manifest)?;
        self.drop_old_tail()?;
        Ok(self.manifest.offset())
    }

    fn discard(self: Box<Self>) -> io::Result<u64> {
        if self.manifest.parts.len() > self.committed.parts.len() {
            // Parts this chunk committed are forgotten; the old tail is still there.
            let mut restored = self.committed.clone();
            restored.etag = self.manifest.etag.clone();
            self.store.save(&self.id, &mut restored)?;
        }
        Ok(self.committed.offset())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_round_trip_and_reject_what_they_do_not_know() {
        let manifest = Manifest {
            multipart: Some("upload/id=1".into()),
            parts: vec![("\"etag 1\"".into(), 8 << 20)],
            tail: Some(("tail-ab12".into(), 17)),
            sealed: true,
            etag: None,
        };
        assert_eq!(Manifest::decode(&manifest.encode()).unwrap(), manifest);
        assert_eq!(manifest.offset(), (8 << 20) + 17);
        assert!(Manifest::decode(b"cairn-tus 2\n").is_err());
        assert!(Manifest::decode(b"cairn-tus 1\npart x \"e\"\n").is_err());
        assert!(Manifest::decode(b"cairn-tus 1\nwhat\n").is_err());
    }

    #[test]
    fn parts_stay_small_until_the_upload_is_large_and_fit_s3s_limits() {
        assert_eq!(part_bytes(0), 8 << 20);
        assert_eq!(part_bytes(999), 8 << 20);
        assert_eq!(part_bytes(1000), 16 << 20);
        let reach: u64 = (0..MAX_PARTS - 1).map(|i| part_bytes(i) as u64).sum();
        assert!(reach > 8_000_000_000_000, "{reach}");
        // S3 parts are at most 5 GiB.
        assert!(part_bytes(MAX_PARTS - 1) <= 5 << 30);
    }
}
