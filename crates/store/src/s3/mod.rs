//! Content in an S3-compatible bucket (`object_store`), for several stateless nodes:
//! [`S3Blobs`] for packs and staged uploads, [`S3TusBytes`] for the bytes of TUS uploads.
//!
//! The traits they implement are synchronous (their callers are blocking threads). Each call
//! runs on a small runtime owned by the [`Bucket`] and is waited for on the calling thread,
//! which works from any thread, async or not.

mod blobs;
mod tus;

use std::fmt;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as ObjectPath;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, RetryConfig};

use crate::Unavailable;
pub use blobs::S3Blobs;
pub use tus::S3TusBytes;

/// Every part of a multipart upload but the last must be at least this big (S3's rule).
const MIN_PART_BYTES: u64 = 5 << 20;
/// How much a reader fetches per request when read sequentially.
const READ_AHEAD: u64 = 4 << 20;

/// One bucket (and prefix) and the runtime its calls run on.
#[derive(Clone)]
pub struct Bucket {
    s3: Arc<AmazonS3>,
    /// Where this store's objects live: the URL's prefix, then the store's own name.
    prefix: String,
    runtime: Arc<OwnRuntime>,
}

/// The bucket's runtime, shut down without waiting when the last handle goes: a runtime dropped
/// normally inside another runtime's task panics.
struct OwnRuntime(Option<tokio::runtime::Runtime>);

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl fmt::Debug for Bucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bucket({})", self.prefix)
    }
}

/// How long a request to the bucket is retried (5xx answers, resets, timeouts), with
/// exponential backoff from 100 ms, before the caller is told the bucket is unavailable: long
/// enough to ride out a restart or a burst of throttling, short enough that a client waiting
/// on an upload hears `503` in seconds rather than minutes (object_store's default is 3).
const RETRY_FOR: Duration = Duration::from_secs(10);
/// A request that has sent or received nothing for this long is given up (and retried).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

fn to_io(e: object_store::Error) -> io::Error {
    match e {
        object_store::Error::NotFound { .. } => io::Error::new(io::ErrorKind::NotFound, e),
        // A conditional write lost to another writer.
        object_store::Error::Precondition { .. } => io::Error::new(io::ErrorKind::ResourceBusy, e),
        // What the retries could not get through: errors, resets, stalls.
        object_store::Error::Generic { .. } => io::Error::other(Unavailable(first_line(&e))),
        other => io::Error::other(other),
    }
}

/// The first line only: S3 errors carry whole XML documents.
fn first_line(e: &impl std::fmt::Display) -> String {
    e.to_string().lines().next().unwrap_or_default().to_owned()
}

impl Bucket {
    /// `s3://BUCKET[/PREFIX][?endpoint=URL&region=R]`. Credentials come from the usual
    /// `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` environment. `sub` (`packs`, `staging`,
    /// `tus`) separates the stores sharing one bucket.
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
        let retry = RetryConfig {
            backoff: BackoffConfig::default(),
            max_retries: 8,
            retry_timeout: RETRY_FOR,
        };
        let mut builder = AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .with_retry(retry)
            .with_client_options(ClientOptions::new().with_timeout(REQUEST_TIMEOUT));
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

    /// One request that needs the bucket and the credentials, so that a start can say at once,
    /// in one line, what is wrong: the bucket is missing, no credentials were found, or the
    /// endpoint does not answer.
    pub fn check(&self) -> io::Result<()> {
        let prefix = ObjectPath::from(self.prefix.clone());
        let result = self.call_raw(|s3| async move { s3.list_with_delimiter(Some(&prefix)).await });
        let Err(e) = result.and_then(|r| r.map_err(|e| io::Error::other(e.to_string()))) else {
            return Ok(());
        };
        let text = e.to_string();
        let why = if text.contains("NoSuchBucket") {
            "the bucket does not exist".to_owned()
        } else if text.contains("169.254.169.254") {
            // object_store falls back to the cloud's instance metadata service.
            "no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY".to_owned()
        } else if text.contains("InvalidAccessKeyId") || text.contains("SignatureDoesNotMatch") {
            "the credentials were refused (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)".to_owned()
        } else {
            first_line(&text)
        };
        Err(io::Error::new(e.kind(), why))
    }

    /// Run `work` with the client on the bucket's runtime, and wait for it here.
    fn call<T, Work>(&self, work: impl FnOnce(Arc<AmazonS3>) -> Work) -> io::Result<T>
    where
        T: Send + 'static,
        Work: std::future::Future<Output = object_store::Result<T>> + Send + 'static,
    {
        self.call_raw(work)?.map_err(to_io)
    }

    /// `call`, with object_store's own error (whole, for `check` to read).
    fn call_raw<T, Work>(
        &self,
        work: impl FnOnce(Arc<AmazonS3>) -> Work,
    ) -> io::Result<object_store::Result<T>>
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
            .map_err(|_| io::Error::other("the S3 runtime stopped"))
    }

    /// The object `name` under this store's prefix (`name` may hold `/`).
    fn object(&self, name: &str) -> ObjectPath {
        ObjectPath::from(format!("{}/{name}", self.prefix))
    }

    fn size(&self, path: &ObjectPath) -> io::Result<u64> {
        let path = path.clone();
        Ok(self.call(|s3| async move { s3.head(&path).await })?.size)
    }

    fn get(&self, path: &ObjectPath) -> io::Result<Bytes> {
        let path = path.clone();
        self.call(|s3| async move { s3.get(&path).await?.bytes().await })
    }

    /// Delete an object; already gone is fine.
    fn delete(&self, path: &ObjectPath) -> io::Result<()> {
        let path = path.clone();
        match self.call(|s3| async move { s3.delete(&path).await }) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    /// A reader of the object at `path`.
    fn reader(&self, path: ObjectPath) -> io::Result<S3Reader> {
        let size = self.size(&path)?;
        Ok(S3Reader {
            bucket: self.clone(),
            path,
            size,
            position: 0,
            window: Bytes::new(),
            window_start: 0,
        })
    }
}

/// Sequential reads in `READ_AHEAD` windows, one ranged GET each; seeks are free.
struct S3Reader {
    bucket: Bucket,
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
                .bucket
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
