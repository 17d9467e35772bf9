//! Blobs as objects: each blob is written as a multipart upload, which S3 keeps invisible until
//! it is completed. `commit` completes it, so a blob appears whole or not at all, and a
//! completed upload is durable by S3's own guarantee. While a blob is being written, a small
//! marker object `<prefix>/incomplete/<name>` holds the upload's id, so `remove_incomplete` can
//! abort the uploads of a node that died mid-write (S3 would otherwise keep their parts, and
//! bill them).

use std::io::{self, Write};
use std::time::Duration;

use futures_util::TryStreamExt;
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, PutPayload};

use super::Bucket;
use crate::blobs::{age, BlobStore, BlobWriter, ReadSeek};

/// Above S3's 5 MiB minimum for every part but the last.
const PART_BYTES: usize = 8 << 20;
const _: () = assert!(PART_BYTES as u64 >= super::MIN_PART_BYTES);
const INCOMPLETE: &str = "incomplete";

#[derive(Clone, Debug)]
pub struct S3Blobs {
    bucket: Bucket,
}

impl S3Blobs {
    /// See [`Bucket::open`] for the URL.
    pub fn open(url: &str, sub: &str) -> io::Result<Self> {
        Ok(Self {
            bucket: Bucket::open(url, sub)?,
        })
    }

    /// See [`Bucket::check`].
    pub fn check(&self) -> io::Result<()> {
        self.bucket.check()
    }

    fn path(&self, name: &str) -> io::Result<ObjectPath> {
        let valid = !name.is_empty()
            && !name.starts_with('.')
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
        if !valid || name.starts_with("tmp-") {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad blob name {name:?}"),
            ));
        }
        Ok(self.bucket.object(name))
    }

    fn marker(&self, name: &str) -> ObjectPath {
        self.bucket.object(&format!("{INCOMPLETE}/{name}"))
    }

    /// The writer of `name` is gone for good: abort its upload `id` (already gone, completed
    /// or aborted by a lifecycle rule, is fine) and drop its marker.
    fn abandon(&self, name: &str, id: &str) -> io::Result<()> {
        let (path, id) = (self.path(name)?, id.to_owned());
        let _ = self
            .bucket
            .call(|s3| async move { s3.abort_multipart(&path, &id).await });
        self.bucket.delete(&self.marker(name))
    }
}

impl BlobStore for S3Blobs {
    fn create(&self, name: &str) -> io::Result<Box<dyn BlobWriter>> {
        let path = self.path(name)?;
        let target = path.clone();
        let upload_id = self
            .bucket
            .call(|s3| async move { s3.create_multipart(&target).await })?;
        let (marker, id) = (self.marker(name), upload_id.clone());
        self.bucket
            .call(|s3| async move { s3.put(&marker, PutPayload::from(id.into_bytes())).await })?;
        Ok(Box::new(S3BlobWriter {
            store: self.clone(),
            name: name.to_owned(),
            path,
            upload_id,
            parts: Vec::new(),
            buffer: Vec::with_capacity(PART_BYTES),
            bytes: 0,
            done: false,
        }))
    }

    fn open(&self, name: &str) -> io::Result<Box<dyn ReadSeek>> {
        Ok(Box::new(self.bucket.reader(self.path(name)?)?))
    }

    fn read_range(&self, name: &str, offset: u64, length: u64) -> io::Result<Vec<u8>> {
        let path = self.path(name)?;
        let bytes = self
            .bucket
            .call(|s3| async move { s3.get_range(&path, offset..offset + length).await })?;
        Ok(bytes.to_vec())
    }

    fn batch_bytes(&self) -> u64 {
        16 << 20
    }

    /// One request for neighbouring ranges (`object_store` merges ranges less than 1 MiB
    /// apart, and fetches what is left in parallel).
    fn read_ranges(&self, name: &str, ranges: &[(u64, u64)]) -> io::Result<Vec<Vec<u8>>> {
        let path = self.path(name)?;
        let ranges: Vec<_> = ranges
            .iter()
            .map(|&(offset, length)| offset..offset + length)
            .collect();
        let parts = self
            .bucket
            .call(|s3| async move { s3.get_ranges(&path, &ranges).await })?;
        Ok(parts.into_iter().map(|part| part.to_vec()).collect())
    }

    fn delete(&self, name: &str) -> io::Result<()> {
        self.bucket.delete(&self.path(name)?)
    }

    fn list(&self, older_than: Duration) -> io::Result<Vec<String>> {
        let prefix = ObjectPath::from(self.bucket.prefix.clone());
        let objects = self.bucket.call(|s3| async move {
            s3.list_with_delimiter(Some(&prefix))
                .await
                .map(|listing| listing.objects)
        })?;
        let mut names: Vec<String> = objects
            .into_iter()
            .filter(|o| age(o.last_modified.into()) >= older_than)
            .filter_map(|o| o.location.filename().map(str::to_owned))
            .collect();
        names.sort();
        Ok(names)
    }

    fn remove_incomplete(&self, older_than: Duration) -> io::Result<u64> {
        let prefix = self.bucket.object(INCOMPLETE);
        let markers: Vec<_> = self
            .bucket
            .call(|s3| async move { s3.list(Some(&prefix)).try_collect::<Vec<_>>().await })?;
        let mut removed = 0;
        for marker in markers {
            if age(marker.last_modified.into()) < older_than {
                continue;
            }
            let Some(name) = marker.location.filename().map(str::to_owned) else {
                continue;
            };
            let id = self.bucket.get(&marker.location)?;
            self.abandon(&name, &String::from_utf8_lossy(&id))?;
            removed += 1;
        }
        Ok(removed)
    }
}

struct S3BlobWriter {
    store: S3Blobs,
    name: String,
    path: ObjectPath,
    upload_id: String,
    parts: Vec<PartId>,
    buffer: Vec<u8>,
    bytes: u64,
    done: bool,
}

impl S3BlobWriter {
    fn send_part(&mut self) -> io::Result<()> {
        let data = PutPayload::from(std::mem::replace(
            &mut self.buffer,
            Vec::with_capacity(PART_BYTES),
        ));
        let (path, id, index) = (self.path.clone(), self.upload_id.clone(), self.parts.len());
        let part = self
            .store
            .bucket
            .call(|s3| async move { s3.put_part(&path, &id, index, data).await })?;
        self.parts.push(part);
        Ok(())
    }
}

impl Write for S3BlobWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let room = PART_BYTES - self.buffer.len();
        let taken = data.len().min(room);
        self.buffer.extend_from_slice(&data[..taken]);
        self.bytes += taken as u64;
        if self.buffer.len() == PART_BYTES {
            self.send_part()?;
        }
        Ok(taken)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl BlobWriter for S3BlobWriter {
    fn commit(mut self: Box<Self>) -> io::Result<u64> {
        if !self.buffer.is_empty() || self.parts.is_empty() {
            self.send_part()?;
        }
        let (path, id, parts) = (
            self.path.clone(),
            self.upload_id.clone(),
            std::mem::take(&mut self.parts),
        );
        self.store
            .bucket
            .call(|s3| async move { s3.complete_multipart(&path, &id, parts).await })?;
        self.done = true;
        self.store.bucket.delete(&self.store.marker(&self.name))?;
        Ok(self.bytes)
    }
}

impl Drop for S3BlobWriter {
    /// Abandoned before commit: abort the upload so nothing, not even its parts, remains.
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let _ = self.store.abandon(&self.name, &self.upload_id);
    }
}
