//! Blobs as objects in an S3-compatible bucket (`object_store`), for several stateless nodes.
//!
//! A blob is written as a multipart upload, which S3 keeps invisible until it is completed:
//! `commit` completes it, so a blob appears whole or not at all, and a completed upload is
//! durable by S3's own guarantee. While a blob is being written, a small marker object
//! `<prefix>/incomplete/<name>` holds the upload's id, so `remove_incomplete` can abort the
//! uploads of a node that died mid-write (S3 would otherwise keep their parts, and bill them).
//!
//! The `BlobStore` trait is synchronous (its callers are blocking threads). Each call runs on
//! a small runtime owned by the store and is waited for on the calling thread, which works
//! from any thread, async or not.

use std::fmt;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, PutPayload};

use crate::blobs::{BlobStore, BlobWriter, ReadSeek};

/// Above S3's 5 MiB minimum for every part but the last.
const PART_BYTES: usize = 8 << 20;
/// How much a reader fetches per request when read sequentially.
const READ_AHEAD: u64 = 4 << 20;
const INCOMPLETE: &str = "incomplete";

#[derive(Clone)]
pub struct S3Blobs {
    s3: Arc<AmazonS3>,
    prefix: String,
    runtime: Arc<OwnRuntime>,
}

/// The store's runtime, shut down without waiting when the last handle goes: a runtime dropped
/// normally inside another runtime's task panics.
struct OwnRuntime(Option<tokio::runtime::Runtime>);

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl fmt::Debug for S3Blobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "S3Blobs({})", self.prefix)
    }
}

fn to_io(e: object_store::Error) -> io::Error {
    match e {
        object_store::Error::NotFound { .. } => io::Error::new(io::ErrorKind::NotFound, e),
        other => io::Error::other(other),
    }
}

impl S3Blobs {
    /// `s3://BUCKET[/PREFIX][?endpoint=URL&region=R]`. Credentials come from the usual
    /// `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` environment. `sub` (`packs`, `staging`)
    /// separates the stores sharing one bucket.
    pub fn open(url: &str, sub: &str) -> io::Result<Self> {
        let invalid = |m: String| io::Error::new(io::ErrorKind::InvalidInput, m);
        let rest = url
            .strip_prefix("s3://")
            .ok_or_else(|| invalid(format!("{url:?} is not an s3:// URL")))?;
        let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (bucket, prefix) = location.split_once('/').unwrap_or((location, ""));
        if bucket.is_empty() {
            return Err(invalid(format!("{url:?} names no bucket")));
        }
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("endpoint", endpoint)) => {
                    builder = builder
                        .with_endpoint(endpoint)
                        .with_allow_http(endpoint.starts_with("http://"));
                }
                Some(("region", region)) => builder = builder.with_region(region),
                _ => return Err(invalid(format!("unknown option {pair:?} in {url:?}"))),
            }
        }
        let s3 = builder.build().map_err(|e| invalid(e.to_string()))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("cairn-s3")
            .enable_all()
            .build()?;
        let prefix = [prefix.trim_matches('/'), sub]
            .iter()
            .filter(|p| !p.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join("/");
        Ok(Self {
            s3: Arc::new(s3),
            prefix,
            runtime: Arc::new(OwnRuntime(Some(runtime))),
        })
    }

    /// Run `work` with the client on the store's runtime, and wait for it here.
    fn call<T, Work>(&self, work: impl FnOnce(Arc<AmazonS3>) -> Work) -> io::Result<T>
    where
        T: Send + 'static,
        Work: std::future::Future<Output = object_store::Result<T>> + Send + 'static,
    {
        let work = work(self.s3.clone());
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let runtime = self.runtime.0.as_ref().expect("present until dropped");
        runtime.spawn(async move {
            let _ = tx.send(work.await);
        });
        rx.recv()
            .map_err(|_| io::Error::other("the S3 runtime stopped"))?
            .map_err(to_io)
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
        Ok(ObjectPath::from(format!("{}/{name}", self.prefix)))
    }

    fn marker(&self, name: &str) -> ObjectPath {
        ObjectPath::from(format!("{}/{INCOMPLETE}/{name}", self.prefix))
    }

    fn size(&self, path: &ObjectPath) -> io::Result<u64> {
        let path = path.clone();
        Ok(self.call(|s3| async move { s3.head(&path).await })?.size)
    }

    /// The writer of `name` is gone for good: abort its upload `id` (already gone, completed
    /// or aborted by a lifecycle rule, is fine) and drop its marker.
    fn abandon(&self, name: &str, id: &str) -> io::Result<()> {
        let (path, id) = (self.path(name)?, id.to_owned());
        let _ = self.call(|s3| async move { s3.abort_multipart(&path, &id).await });
        self.drop_marker(name)
    }

    fn drop_marker(&self, name: &str) -> io::Result<()> {
        let marker = self.marker(name);
        self.call(|s3| async move { s3.delete(&marker).await })
    }
}

impl BlobStore for S3Blobs {
    fn create(&self, name: &str) -> io::Result<Box<dyn BlobWriter>> {
        let path = self.path(name)?;
        let target = path.clone();
        let upload_id = self.call(|s3| async move { s3.create_multipart(&target).await })?;
        let (marker, id) = (self.marker(name), upload_id.clone());
        self.call(|s3| async move { s3.put(&marker, PutPayload::from(id.into_bytes())).await })?;
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
        let path = self.path(name)?;
        let size = self.size(&path)?;
        Ok(Box::new(S3Reader {
            store: self.clone(),
            path,
            size,
            position: 0,
            window: Bytes::new(),
            window_start: 0,
        }))
    }

    fn read_range(&self, name: &str, offset: u64, length: u64) -> io::Result<Vec<u8>> {
        let path = self.path(name)?;
        let bytes =
            self.call(|s3| async move { s3.get_range(&path, offset..offset + length).await })?;
        Ok(bytes.to_vec())
    }

    fn delete(&self, name: &str) -> io::Result<()> {
        let path = self.path(name)?;
        match self.call(|s3| async move { s3.delete(&path).await }) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    fn list(&self) -> io::Result<Vec<String>> {
        let prefix = ObjectPath::from(self.prefix.clone());
        let objects = self.call(|s3| async move {
            s3.list_with_delimiter(Some(&prefix))
                .await
                .map(|listing| listing.objects)
        })?;
        let mut names: Vec<String> = objects
            .into_iter()
            .filter_map(|o| o.location.filename().map(str::to_owned))
            .collect();
        names.sort();
        Ok(names)
    }

    fn remove_incomplete(&self) -> io::Result<u64> {
        let prefix = ObjectPath::from(format!("{}/{INCOMPLETE}", self.prefix));
        let markers: Vec<_> =
            self.call(|s3| async move { s3.list(Some(&prefix)).try_collect::<Vec<_>>().await })?;
        let mut removed = 0;
        for marker in markers {
            let Some(name) = marker.location.filename().map(str::to_owned) else {
                continue;
            };
            let location = marker.location;
            let id = self.call(|s3| async move { s3.get(&location).await?.bytes().await })?;
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
            .call(|s3| async move { s3.complete_multipart(&path, &id, parts).await })?;
        self.done = true;
        self.store.drop_marker(&self.name)?;
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

/// Sequential reads in `READ_AHEAD` windows, one ranged GET each; seeks are free.
struct S3Reader {
    store: S3Blobs,
    path: ObjectPath,
    size: u64,
    position: u64,
    window: Bytes,
    window_start: u64,
}

impl Read for S3Reader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.position >= self.size || out.is_empty() {
            return Ok(0);
        }
        let in_window = self.position >= self.window_start
            && self.position < self.window_start + self.window.len() as u64;
        if !in_window {
            let end = (self.position + READ_AHEAD).min(self.size);
            let (path, start) = (self.path.clone(), self.position);
            self.window = self
                .store
                .call(|s3| async move { s3.get_range(&path, start..end).await })?;
            self.window_start = self.position;
        }
        let from = (self.position - self.window_start) as usize;
        let n = out.len().min(self.window.len() - from);
        out[..n].copy_from_slice(&self.window[from..from + n]);
        self.position += n as u64;
        Ok(n)
    }
}

impl Seek for S3Reader {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.size.checked_add_signed(d),
            SeekFrom::Current(d) => self.position.checked_add_signed(d),
        };
        self.position = target
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        Ok(self.position)
    }
}
