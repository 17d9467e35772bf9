//! The client commands: `upload`, `status`, `ls`, `usage` (and the connection the others use).
//!
//! Files go by POST when within the account's upload limit (read from `/api/upload-limit`),
//! otherwise by TUS in chunks, and an interrupted TUS upload resumes when the same command
//! runs again (its URL is remembered in the state directory). Directories are packed locally
//! into a CAR with the same engine the server runs, so their CID is known before the upload,
//! and the server's answer is checked against it. `--publish NAME` then points an IPNS name
//! at the upload (`Connection::point_name`, in `names.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use anyhow::{anyhow, bail, Context, Result};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use bytes::Bytes;
use cairn_unixfs::Profile;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncSeekExt};

/// A mistake in how the command was called (exit status 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Where the service is and who we are: flags, else the environment, else the config file.
#[derive(Args, Clone)]
pub struct ConnectionArgs {
    /// Upload host [default: http://127.0.0.1:8080].
    #[arg(long, env = "CAIRN_URL")]
    url: Option<String>,
    /// Account host [default: http://127.0.0.1:8081].
    #[arg(long, env = "CAIRN_ACCOUNT_URL")]
    account_url: Option<String>,
    /// API token.
    #[arg(long, env = "CAIRN_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// TOML file with url, account-url and token [default: ~/.config/cairn/client.toml].
    #[arg(long, env = "CAIRN_CLIENT_CONFIG")]
    client_config: Option<PathBuf>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct ClientFile {
    url: Option<String>,
    account_url: Option<String>,
    token: Option<String>,
}

pub struct Connection {
    pub url: String,
    pub account_url: String,
    token: Option<String>,
    pub http: reqwest::Client,
}

fn home_dir(var: &str, fallback: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(fallback)))
}

impl ConnectionArgs {
    pub fn connect(self) -> Result<Connection> {
        let path = self.client_config.clone().or_else(|| {
            home_dir("XDG_CONFIG_HOME", ".config").map(|d| d.join("cairn/client.toml"))
        });
        let file: ClientFile = match &path {
            Some(path) if path.exists() => toml::from_str(
                &std::fs::read_to_string(path)
                    .with_context(|| format!("reading {}", path.display()))?,
            )
            .with_context(|| format!("client config {}", path.display()))?,
            _ => ClientFile::default(),
        };
        let trim = |u: String| u.trim_end_matches('/').to_owned();
        Ok(Connection {
            url: trim(
                self.url
                    .or(file.url)
                    .unwrap_or_else(|| "http://127.0.0.1:8080".into()),
            ),
            account_url: trim(
                self.account_url
                    .or(file.account_url)
                    .unwrap_or_else(|| "http://127.0.0.1:8081".into()),
            ),
            token: self.token.or(file.token),
            http: reqwest::Client::new(),
        })
    }
}

impl Connection {
    fn token(&self) -> Result<&str> {
        self.token.as_deref().ok_or_else(|| {
            anyhow!(UsageError(
                "no API token: pass --token, set CAIRN_TOKEN, or put token in the client config"
                    .into()
            ))
        })
    }

    pub(crate) fn authed(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::RequestBuilder> {
        Ok(request.bearer_auth(self.token()?))
    }

    /// A JSON answer, or the server's JSON error as a readable failure.
    async fn json(&self, response: reqwest::Response) -> Result<Value> {
        let status = response.status();
        let body: Value = match response.json().await {
            Ok(body) => body,
            Err(_) if status.is_success() => bail!("the server's answer ({status}) is not JSON"),
            Err(_) => Value::Null,
        };
        if !status.is_success() {
            // The contract's shape, or the Pinning Service API's (`{"error": {"reason",
            // "details"}}`).
            let error = &body["error"];
            let code = error
                .as_str()
                .or(error["reason"].as_str())
                .unwrap_or("error");
            let message = body["message"]
                .as_str()
                .or(error["details"].as_str())
                .unwrap_or("");
            bail!("the server answered {status} ({code}): {message}");
        }
        Ok(body)
    }

    /// Send `request` with the token; its JSON answer (`null` for an empty one), or the
    /// server's error. `what` names the request in a connection failure.
    pub async fn send(&self, request: reqwest::RequestBuilder, what: &str) -> Result<Value> {
        let response = (self.authed(request)?.send().await).map_err(|e| no_answer(e, what))?;
        let empty = response.status() == reqwest::StatusCode::NO_CONTENT
            || response.content_length() == Some(0);
        if response.status().is_success() && empty {
            return Ok(Value::Null);
        }
        self.json(response).await
    }

    pub async fn upload_limit(&self) -> Result<u64> {
        let request = self
            .http
            .get(format!("{}/api/upload-limit", self.account_url));
        let body = self.send(request, "asking for the upload limit").await?;
        body["limit"]
            .as_u64()
            .context("the upload limit is not a number")
    }

    pub async fn operation(&self, id: &str) -> Result<Value> {
        let request = self.http.get(format!("{}/api/operations/{id}", self.url));
        self.send(request, "asking for the operation").await
    }
}

/// A request that got no answer, said so that the user can act: where nothing answered and how
/// to point the client elsewhere, for a connection refused or unresolved.
fn no_answer(error: reqwest::Error, what: &str) -> anyhow::Error {
    let hint = match error.url() {
        Some(url) if error.is_connect() => format!(
            "nothing answers at {}: is `cairn serve` running there? The client finds the upload \
             host from --url or CAIRN_URL and the account host from --account-url or \
             CAIRN_ACCOUNT_URL (defaults http://127.0.0.1:8080 and :8081)",
            url.origin().ascii_serialization()
        ),
        _ => return anyhow::Error::new(error).context(what.to_owned()),
    };
    anyhow::Error::new(error)
        .context(hint)
        .context(what.to_owned())
}

/// A progress bar on stderr (bytes, rate, ETA). indicatif draws nothing when stderr is not a
/// terminal, and leaves the last state on screen when the bar is done or dropped.
struct Progress(ProgressBar);

impl Progress {
    fn new(total: u64, start_at: u64) -> Self {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{wide_bar} {decimal_bytes}/{decimal_total_bytes}  {decimal_bytes_per_sec}  ETA {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        // A resumed upload starts part way; its rate counts only what this run sends.
        bar.set_position(start_at);
        bar.reset_eta();
        Self(bar)
    }

    fn add(&mut self, bytes: u64) {
        self.0.inc(bytes);
    }

    fn finish(&self) {
        self.0.finish();
    }
}

/// What one uploaded path gave.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Uploaded {
    path: String,
    operation_id: Option<i64>,
    upload_id: Option<String>,
    status: String,
    cid: Option<String>,
    error: Option<Value>,
    /// The name's new record, with `--publish`.
    #[serde(skip_serializing_if = "Option::is_none")]
    published: Option<Value>,
}

pub struct UploadOptions {
    pub archive_mode: Option<String>,
    /// What each upload is tagged with (`--kv`).
    pub keyvalues: BTreeMap<String, String>,
    pub wait: bool,
    pub json: bool,
    pub profile: Profile,
    pub chunk_size: usize,
    /// The name to point at the upload (`--publish`).
    pub publish: Option<String>,
}

/// `cairn upload PATH...`; returns whether every upload succeeded.
pub async fn upload(conn: &Connection, paths: &[PathBuf], options: &UploadOptions) -> Result<bool> {
    if let Some(name) = &options.publish {
        if paths.len() != 1 {
            return Err(anyhow!(UsageError(
                "--publish points one name at one upload: give one path".into()
            )));
        }
        // Before any byte is sent: a mistyped name fails now, not after a long upload.
        conn.require_name(name).await?;
    }
    let limit = conn.upload_limit().await?;
    let mut all_ok = true;
    for path in paths {
        let mut result = upload_one(conn, path, limit, options)
            .await
            .with_context(|| format!("uploading {}", path.display()))?;
        // A name needs the CID, which an archive or a TUS upload has once its operation ends.
        let wait = options.wait || options.publish.is_some();
        if wait && !matches!(result.status.as_str(), "completed" | "failed") {
            let id = result
                .operation_id
                .map(|id| id.to_string())
                .or(result.upload_id.clone())
                .context("the server gave no operation to wait for")?;
            let op = conn.wait(&id).await?;
            result.status = op["status"].as_str().unwrap_or_default().to_owned();
            result.cid = op["cid"].as_str().map(str::to_owned);
            result.error = Some(op["error"].clone()).filter(|e| !e.is_null());
        }
        all_ok &= result.status != "failed";
        if let Some(name) = &options.publish {
            result.published = publish(conn, name, &result).await?;
        }
        if options.json {
            println!("{}", serde_json::to_string(&result)?);
        } else {
            let what = result.cid.as_deref().unwrap_or(result.status.as_str());
            let operation = result
                .operation_id
                .map(|i| format!(" (operation {i})"))
                .unwrap_or_default();
            println!("{what}\t{}{operation}", result.path);
            if let Some(error) = &result.error {
                eprintln!(
                    "error: {}: {}",
                    result.path,
                    error["message"].as_str().unwrap_or("failed")
                );
            }
            match (&result.published, &options.publish) {
                (Some(record), _) => eprintln!(
                    "published {} ({}): {}, sequence {}",
                    record["name"].as_str().unwrap_or_default(),
                    record["label"].as_str().unwrap_or("no label"),
                    record["value"].as_str().unwrap_or_default(),
                    record["sequence"],
                ),
                (None, Some(name)) => eprintln!("{name} left as it was: the upload failed"),
                (None, None) => {}
            }
        }
    }
    Ok(all_ok)
}

/// `--publish NAME`: the name pointed at a completed upload's CID (its new record); a failed
/// upload leaves it as it was.
async fn publish(conn: &Connection, name: &str, result: &Uploaded) -> Result<Option<Value>> {
    if result.status == "failed" {
        return Ok(None);
    }
    let cid = result
        .cid
        .as_deref()
        .context("the upload completed with no CID to publish")?;
    let record = conn.point_name(name, cid).await.with_context(|| {
        format!(
            "{} is uploaded as {cid}, but pointing {name} at it failed \
             (`cairn name publish {name} {cid}` tries again)",
            result.path
        )
    })?;
    Ok(Some(record))
}

async fn upload_one(
    conn: &Connection,
    path: &Path,
    limit: u64,
    options: &UploadOptions,
) -> Result<Uploaded> {
    let meta = tokio::fs::symlink_metadata(path)
        .await
        .with_context(|| format!("reading {}", path.display()))?;
    if meta.is_dir() {
        // Pack locally: the CID is known before the upload, and the server verifies the CAR.
        let car = tempfile::NamedTempFile::new().context("creating a temporary CAR")?;
        let (dir, car_path, profile) = (
            path.to_owned(),
            car.path().to_owned(),
            options.profile.clone(),
        );
        let local = tokio::task::spawn_blocking(move || {
            crate::local_car::write_car(&dir, &car_path, &profile)
        })
        .await??
        .to_string();
        let mut result =
            send_file(conn, car.path(), &file_name(path), limit, None, options).await?;
        result.path = path.display().to_string();
        if let Some(cid) = &result.cid {
            if *cid != local {
                bail!("the server computed {cid}, but the directory's CID is {local}");
            }
        }
        return Ok(result);
    }
    send_file(
        conn,
        path,
        &file_name(path),
        limit,
        options.archive_mode.as_deref(),
        options,
    )
    .await
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "upload".into())
}

async fn send_file(
    conn: &Connection,
    path: &Path,
    name: &str,
    limit: u64,
    archive_mode: Option<&str>,
    options: &UploadOptions,
) -> Result<Uploaded> {
    let size = tokio::fs::metadata(path).await?.len();
    if size <= limit {
        post(conn, path, name, size, archive_mode, options).await
    } else {
        tus(conn, path, name, size, archive_mode, options).await
    }
}

async fn post(
    conn: &Connection,
    path: &Path,
    name: &str,
    size: u64,
    archive_mode: Option<&str>,
    options: &UploadOptions,
) -> Result<Uploaded> {
    let file = tokio::fs::File::open(path).await?;
    let mut progress = Progress::new(size, 0);
    let stream = futures_util::stream::unfold(
        (file, vec![0u8; 1 << 20]),
        |(mut file, mut buf)| async move {
            match file.read(&mut buf).await {
                Ok(0) => None,
                Ok(n) => Some((
                    Ok::<_, std::io::Error>(Bytes::copy_from_slice(&buf[..n])),
                    (file, buf),
                )),
                Err(e) => Some((Err(e), (file, buf))),
            }
        },
    );
    let stream = futures_util::StreamExt::inspect(stream, move |chunk| {
        if let Ok(chunk) = chunk {
            progress.add(chunk.len() as u64);
        }
    });
    let part =
        reqwest::multipart::Part::stream_with_length(reqwest::Body::wrap_stream(stream), size)
            .file_name(name.to_owned());
    let mut query = vec![("cid_profile", options.profile.name.to_owned())];
    if let Some(mode) = archive_mode {
        query.push(("archive_mode", mode.to_owned()));
    }
    let mut form = reqwest::multipart::Form::new();
    if !options.keyvalues.is_empty() {
        form = form.text("keyvalues", serde_json::to_string(&options.keyvalues)?);
    }
    let response = conn
        .authed(conn.http.post(format!("{}/api/upload", conn.url)))?
        .query(&query)
        .multipart(form.part("file", part))
        .send()
        .await
        .map_err(|e| no_answer(e, "sending the upload"))?;
    Progress::new(0, 0).finish();
    let path = path.display().to_string();
    // A broken archive is refused at once (`invalid_archive`): the upload failed, as an
    // operation that fails does (exit status 1), where other errors are the request's.
    if response.status() == reqwest::StatusCode::UNPROCESSABLE_ENTITY {
        let body: Value = response.json().await.unwrap_or(Value::Null);
        let error = Some(body).filter(|body| !body.is_null());
        return Ok(Uploaded {
            path,
            operation_id: None,
            upload_id: None,
            status: "failed".into(),
            cid: None,
            error,
            published: None,
        });
    }
    let body = conn.json(response).await?;
    Ok(Uploaded {
        path,
        operation_id: body["operationId"].as_i64(),
        upload_id: body["id"].as_str().map(str::to_owned),
        status: body["status"].as_str().unwrap_or_default().to_owned(),
        cid: body["cid"].as_str().map(str::to_owned),
        error: None,
        published: None,
    })
}

/// Remembered TUS uploads, so that running the same command again resumes.
#[derive(Serialize, Deserialize, Default)]
struct TusState {
    uploads: BTreeMap<String, RememberedUpload>,
}

#[derive(Serialize, Deserialize, Clone)]
struct RememberedUpload {
    url: String,
    operation_id: Option<i64>,
}

fn state_path() -> Option<PathBuf> {
    home_dir("XDG_STATE_HOME", ".local/state").map(|d| d.join("cairn/tus-uploads.json"))
}

fn load_state() -> TusState {
    state_path()
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn save_state(state: &TusState) -> Result<()> {
    let Some(path) = state_path() else {
        return Ok(());
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let temp = path.with_extension("tmp");
    std::fs::write(&temp, serde_json::to_vec_pretty(state)?)?;
    std::fs::rename(temp, path)?;
    Ok(())
}

async fn tus(
    conn: &Connection,
    path: &Path,
    name: &str,
    size: u64,
    archive_mode: Option<&str>,
    options: &UploadOptions,
) -> Result<Uploaded> {
    let endpoint = format!("{}/api/upload/tus", conn.url);
    let meta = tokio::fs::metadata(path).await?;
    let modified = meta
        .modified()
        .ok()
        .and_then(|m| m.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let absolute = std::fs::canonicalize(path)?;
    // A changed file (size or time) never resumes the old bytes.
    let key = format!("{}|{size}|{modified}|{endpoint}", absolute.display());
    let mut state = load_state();

    let mut resumed = None;
    if let Some(known) = state.uploads.get(&key).cloned() {
        let head = conn
            .authed(conn.http.head(&known.url))?
            .header("Tus-Resumable", "1.0.0")
            .send()
            .await?;
        if head.status().is_success() {
            let offset: u64 = head
                .headers()
                .get("upload-offset")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            resumed = Some((known, offset));
        }
    }
    let (upload, mut offset) = match resumed {
        Some((upload, offset)) => {
            eprintln!("resuming {} at byte {offset} of {size}", path.display());
            (upload, offset)
        }
        None => {
            let mut metadata = vec![format!("filename {}", BASE64.encode(name))];
            metadata.push(format!(
                "cid_profile {}",
                BASE64.encode(options.profile.name)
            ));
            if let Some(mode) = archive_mode {
                metadata.push(format!("archive_mode {}", BASE64.encode(mode)));
            }
            if !options.keyvalues.is_empty() {
                let json = serde_json::to_string(&options.keyvalues)?;
                metadata.push(format!("keyvalues {}", BASE64.encode(json)));
            }
            let created = conn
                .authed(conn.http.post(&endpoint))?
                .header("Tus-Resumable", "1.0.0")
                .header("Upload-Length", size.to_string())
                .header("Upload-Metadata", metadata.join(","))
                .send()
                .await
                .map_err(|e| no_answer(e, "creating the TUS upload"))?;
            if created.status() != reqwest::StatusCode::CREATED {
                conn.json(created).await?;
                bail!("the server did not create the upload");
            }
            let header = |name: &str| created.headers().get(name).and_then(|v| v.to_str().ok());
            let upload = RememberedUpload {
                url: header("location")
                    .context("no Location in the answer")?
                    .to_owned(),
                operation_id: header("cairn-operation-id").and_then(|v| v.parse().ok()),
            };
            state.uploads.insert(key.clone(), upload.clone());
            save_state(&state)?;
            (upload, 0)
        }
    };

    let mut file = tokio::fs::File::open(path).await?;
    let mut progress = Progress::new(size, offset);
    let mut buf = vec![0u8; options.chunk_size];
    while offset < size {
        file.seek(std::io::SeekFrom::Start(offset)).await?;
        let len = (size - offset).min(buf.len() as u64) as usize;
        file.read_exact(&mut buf[..len]).await?;
        let reply = conn
            .authed(conn.http.patch(&upload.url))?
            .header("Tus-Resumable", "1.0.0")
            .header("Content-Type", "application/offset+octet-stream")
            .header("Upload-Offset", offset.to_string())
            .body(buf[..len].to_vec())
            .send()
            .await
            .map_err(|e| no_answer(e, "sending a chunk"))?;
        if reply.status() != reqwest::StatusCode::NO_CONTENT {
            conn.json(reply).await?;
            bail!("the server refused a chunk");
        }
        offset = reply
            .headers()
            .get("upload-offset")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .context("no Upload-Offset in the answer")?;
        progress.add(len as u64);
    }
    progress.finish();
    state = load_state();
    state.uploads.remove(&key);
    save_state(&state)?;
    Ok(Uploaded {
        path: path.display().to_string(),
        operation_id: upload.operation_id,
        upload_id: upload.url.rsplit('/').next().map(str::to_owned),
        status: "pending".into(),
        cid: None,
        error: None,
        published: None,
    })
}

/// `cairn status ID`; returns whether the operation has not failed.
pub async fn status(conn: &Connection, id: &str, json: bool) -> Result<bool> {
    let op = conn.operation(id).await?;
    if json {
        println!("{op}");
    } else {
        println!("status: {}", op["status"].as_str().unwrap_or("?"));
        println!("progress: {}%", op["progressPercent"]);
        if let Some(cid) = op["cid"].as_str() {
            println!("cid: {cid}");
        }
        if let Some(message) = op["error"]["message"].as_str() {
            println!("error: {message}");
        }
    }
    Ok(op["status"] != "failed")
}

/// `cairn ls CID[/path]`.
pub async fn ls(conn: &Connection, target: &str, json: bool) -> Result<()> {
    let url = format!("{}/ipfs/{}/", conn.url, target.trim_end_matches('/'));
    let response = conn
        .http
        .get(url)
        .header("Accept", "application/json")
        .send()
        .await
        .map_err(|e| no_answer(e, "listing"))?;
    let listing = conn.json(response).await?;
    if json {
        println!("{listing}");
        return Ok(());
    }
    for entry in listing["entries"].as_array().into_iter().flatten() {
        println!(
            "{}\t{}\t{}",
            entry["cid"].as_str().unwrap_or_default(),
            entry["size"],
            entry["name"].as_str().unwrap_or_default()
        );
    }
    Ok(())
}

/// `cairn usage [--period YYYY-MM]`: what the account keeps, and what it uploaded and was
/// served in a calendar month (this one by default).
pub async fn usage(conn: &Connection, period: Option<&str>, json: bool) -> Result<()> {
    let mut request = conn.http.get(format!("{}/api/usage", conn.account_url));
    if let Some(period) = period {
        request = request.query(&[("period", period)]);
    }
    let usage = conn.send(request, "asking for the usage").await?;
    if json {
        println!("{usage}");
        return Ok(());
    }
    let bytes = |v: &Value| indicatif::DecimalBytes(v.as_u64().unwrap_or(0)).to_string();
    let quota = match usage["quota"].as_u64() {
        Some(_) => format!("of {}", bytes(&usage["quota"])),
        None => "(no quota)".to_owned(),
    };
    println!(
        "period: {} to {}",
        usage["period"]["start"].as_str().unwrap_or("?"),
        usage["period"]["end"].as_str().unwrap_or("?")
    );
    println!("stored: {} {quota}", bytes(&usage["storedBytes"]));
    println!("uploads: {}", usage["uploads"]);
    println!("pins: {}", usage["pins"]);
    println!("uploaded: {}", bytes(&usage["uploadedBytes"]));
    println!("served: {}", bytes(&usage["servedBytes"]));
    Ok(())
}
