//! The `cairn` binary as a user meets it: `serve` with zero configuration, the token it prints,
//! admin commands on a live data directory, and a clean stop on SIGTERM, under load too.

use cairn_harness::server;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use server::{
    admin, cairn, cid_of, content, finished_operation, operation, post_upload, stalled_patch,
    start, tar_of, terminate, tus_create, tus_offset, tus_patch,
};

#[tokio::test]
async fn serve_with_zero_configuration_then_upload_administer_and_stop() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let running = start(&data_dir, &[]);
    assert!(
        running.token.starts_with("cairn_"),
        "first start prints a token"
    );

    let client = reqwest::Client::new();
    let (_, body) = post_upload(&running, &running.token, "a.txt", b"hello world".to_vec()).await;
    assert_eq!(
        body["cid"],
        "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e"
    );

    // Admin commands work while the server runs on the same data directory.
    let created = admin(
        &[
            "account",
            "create",
            "bob",
            "--upload-limit",
            "1234",
            "--json",
        ],
        &data_dir,
    );
    let created: serde_json::Value = serde_json::from_slice(&created).unwrap();
    assert_eq!(created["name"], "bob");
    let bob_token = created["token"].as_str().unwrap().to_owned();
    let limit =
        server::get_json(&format!("{}/api/upload-limit", running.account), &bob_token).await;
    assert_eq!(limit["limit"], 1234);

    admin(&["token", "revoke", &bob_token[..16]], &data_dir);
    let status = client
        .get(format!("{}/api/upload-limit", running.account))
        .bearer_auth(&bob_token)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, reqwest::StatusCode::UNAUTHORIZED);

    let (status, rest) = terminate(running);
    assert!(status.success(), "{status:?}");
    assert_eq!(rest.last().map(String::as_str), Some("stopped"));

    // A second start keeps the data and does not print a new token.
    let again = start(&data_dir, &[]);
    assert!(again.token.is_empty());
    terminate(again);
}

#[test]
fn a_taken_port_is_one_line_and_a_failure_status() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let output = cairn()
        .args([
            "serve",
            "--listen",
            &addr,
            "--account-listen",
            "127.0.0.1:0",
            "--data-dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    let errors: Vec<_> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains(&addr) && errors[0].contains("in use"),
        "{stderr}"
    );
}

/// Every file under `dir` and its size, but the database's (which SQLite opens with files
/// of its own beside it).
fn files_under(dir: &std::path::Path) -> Vec<(String, u64)> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                pending.push(entry.path());
            } else if !entry.file_name().to_string_lossy().starts_with("cairn.db") {
                files.push((entry.path().display().to_string(), meta.len()));
            }
        }
    }
    files.sort();
    files
}

/// A data directory a newer Cairn wrote is refused in one line, before anything in it is
/// changed (the start's sweep of leftovers included).
#[test]
fn a_data_directory_of_a_newer_release_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let running = start(&data, &[]);
    assert!(terminate(running).0.success());
    // A leftover the start's sweep would delete, and the schema of a later release.
    std::fs::write(data.join("packs").join("left-over.tmp"), b"half a pack").unwrap();
    let user_version = |set: &str| {
        let script = format!(
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); {set}\
             print(c.execute('PRAGMA user_version').fetchone()[0]); c.commit()"
        );
        let output = std::process::Command::new("python3")
            .args(["-c", &script])
            .arg(data.join("cairn.db"))
            .output()
            .unwrap();
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    };
    assert_eq!(
        user_version("c.execute('PRAGMA user_version = 999'); "),
        "999"
    );
    let before = files_under(&data);

    let mut serve = cairn()
        .args(server::serve_args(&data))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = serve.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            serve.kill().unwrap();
            panic!("serve started on a newer release's data directory");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(1));
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut serve.stderr.take().unwrap(), &mut stderr).unwrap();
    let errors: Vec<_> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains("newer Cairn") && errors[0].contains("999"),
        "{stderr}"
    );
    assert_eq!(
        files_under(&data),
        before,
        "nothing in the directory changed"
    );
    assert_eq!(user_version(""), "999", "nor in the database");
}

/// `curl`'s view of a request: the HTTP version it spoke and the status.
fn curl_version(args: &[&str], url: &str) -> String {
    let output = std::process::Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_version} %{http_code}",
        ])
        .args(args)
        .arg(url)
        .output()
        .unwrap();
    String::from_utf8(output.stdout).unwrap()
}

/// Both hosts speak HTTP/2: over TLS (`--tls-cert`, `--tls-key`) by ALPN, HTTP/1.1 still for
/// a client that asks for it; in cleartext to a client with prior knowledge (h2c, what a
/// proxy in front speaks). An upload and its read-back go over HTTP/2 with TLS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_hosts_speak_http2_with_tls_and_in_cleartext() {
    let dir = tempfile::tempdir().unwrap();
    let ca = cairn_test_support::tls::TestCa::make(dir.path());
    let (cert, key) = (&ca.cert, &ca.key);
    let (cert_text, key_text) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let running = start(
        &dir.path().join("tls"),
        &["--tls-cert", cert_text, "--tls-key", key_text],
    );
    assert!(running.upload.starts_with("https://"), "{}", running.upload);
    let trusted = ["--cacert", ca.authority.to_str().unwrap()];
    // The document on the upload host, the page on the account host.
    let urls = |running: &server::Running| {
        [
            format!("{}/api/openapi.json", running.upload),
            format!("{}/", running.account),
        ]
    };
    for url in urls(&running) {
        assert_eq!(
            curl_version(&[&trusted[..], &["--http2"]].concat(), &url),
            "2 200"
        );
        assert_eq!(
            curl_version(&[&trusted[..], &["--http1.1"]].concat(), &url),
            "1.1 200"
        );
    }

    let authority = std::fs::read(&ca.authority).unwrap();
    let authority = reqwest::Certificate::from_pem(&authority).unwrap();
    let http = reqwest::Client::builder()
        .add_root_certificate(authority)
        .build()
        .unwrap();
    let body = content(300_000, 5);
    let part = reqwest::multipart::Part::bytes(body.clone()).file_name("over-tls.bin");
    let uploaded = http
        .post(format!("{}/api/upload", running.upload))
        .bearer_auth(&running.token)
        .multipart(reqwest::multipart::Form::new().part("file", part))
        .send()
        .await
        .unwrap();
    assert_eq!(uploaded.version(), reqwest::Version::HTTP_2);
    let record: serde_json::Value = uploaded.json().await.unwrap();
    assert_eq!(record["cid"], cid_of(&body));
    let back = http
        .get(format!(
            "{}/ipfs/{}",
            running.upload,
            record["cid"].as_str().unwrap()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(back.version(), reqwest::Version::HTTP_2);
    assert_eq!(back.bytes().await.unwrap(), body);
    // A client that does not trust the certificate is refused by its own TLS, not served.
    assert!(
        curl_version(&[], &format!("{}/api/openapi.json", running.upload)).starts_with("0 000")
    );
    terminate(running);

    // Cleartext: HTTP/1.1 as before, HTTP/2 to a client that starts with its preface.
    let running = start(&dir.path().join("plain"), &[]);
    for url in urls(&running) {
        assert_eq!(curl_version(&["--http2-prior-knowledge"], &url), "2 200");
        assert_eq!(curl_version(&[], &url), "1.1 200");
    }
    terminate(running);

    // Half a pair is an error that says so.
    let output = cairn()
        .args(server::serve_args(&dir.path().join("half")))
        .args(["--tls-cert", cert_text])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--tls-key"));
}

/// Beside another IPFS node, which holds port 4001 as IPFS Desktop and Kubo do: the
/// zero-configuration start takes free ports and says so in one line, with no warning; an
/// address the user chose that is taken is an error naming it, the cause and the flag.
#[test]
fn beside_another_ipfs_node_the_default_start_takes_free_ports() {
    const NAME: &str = "beside_another_ipfs_node_the_default_start_takes_free_ports";
    cairn_test_support::netns::isolated(NAME, || {
        let _tcp = std::net::TcpListener::bind("127.0.0.1:4001").unwrap();
        let _udp = std::net::UdpSocket::bind("127.0.0.1:4001").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let serve = |p2p_listen: Option<&str>| {
            let mut command = cairn();
            command
                .env_remove("CAIRN_P2P_LISTEN")
                .env_remove("RUST_LOG")
                .args(server::serve_args(dir.path()));
            if let Some(listen) = p2p_listen {
                command.args(["--p2p-listen", listen]);
            }
            command
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };

        let mut child = serve(None);
        let mut stdout = Vec::new();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        while stdout
            .iter()
            .filter(|l: &&String| l.starts_with("p2p listening on"))
            .count()
            < 2
        {
            stdout.push(lines.next().expect("serve goes on").unwrap());
        }
        std::thread::sleep(Duration::from_secs(2));
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        assert!(child.wait().unwrap().success());
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        let said: Vec<&String> = stdout.iter().filter(|l| l.contains("4001")).collect();
        assert_eq!(said.len(), 1, "{stdout:#?}");
        assert!(
            said[0].contains("is taken") && said[0].contains("--p2p-listen"),
            "{said:?}"
        );
        let listening: Vec<&String> = stdout
            .iter()
            .filter(|l| l.starts_with("p2p listening on /ip4/127.0.0.1/"))
            .collect();
        assert_eq!(
            listening.len(),
            2,
            "TCP and QUIC, on free ports: {stdout:#?}"
        );
        assert!(
            !stderr.contains("WARN") && !stderr.contains("ERROR"),
            "a default start warns of nothing:\n{stderr}"
        );

        let output = serve(Some("/ip4/127.0.0.1/udp/4001/quic-v1"))
            .wait_with_output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1));
        let stderr = String::from_utf8(output.stderr).unwrap();
        let errors: Vec<_> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{stderr}");
        for needed in ["/ip4/127.0.0.1/udp/4001/quic-v1", "in use", "--p2p-listen"] {
            assert!(errors[0].contains(needed), "{needed}: {stderr}");
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_keeps_every_acknowledged_byte_and_leaves_nothing_claimed() {
    use tokio::io::AsyncReadExt;
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let args = ["--workers", "1", "--worker-lease-seconds", "1"];
    let running = start(&data_dir, &args);
    let token = running.token.clone();
    let http = reqwest::Client::new();

    // A TUS upload whose client sent 2 MiB of 6 and then stalled.
    let whole = content(6 << 20, 1);
    let (path, _) = tus_create(&http, &running.upload, &token, whole.len()).await;
    let mut stalled =
        stalled_patch(&running, &path, &token, 0, whole.len(), &whole[..2 << 20]).await;
    // Time for the server to read what was sent (a HEAD would pre-empt the PATCH).
    tokio::time::sleep(Duration::from_millis(500)).await;
    // An archive waiting for a worker, and POSTs in flight when the signal comes.
    let files: Vec<Vec<u8>> = (0..4).map(|i| content(2 << 20, 10 + i)).collect();
    let archive = tar_of(&[
        ("a.bin", &files[0]),
        ("b.bin", &files[1]),
        ("c.bin", &files[2]),
        ("d.bin", &files[3]),
    ]);
    let (status, queued) = post_upload(&running, &token, "four.tar", archive).await;
    assert_eq!(status, 200, "{queued}");
    let archive_op = queued["operationId"].to_string();
    let posts: Vec<_> = (0..8)
        .map(|i| {
            let (url, token) = (format!("{}/api/upload", running.upload), token.clone());
            let bytes = content(1 << 20, 100 + i);
            tokio::spawn(async move {
                let part = reqwest::multipart::Part::bytes(bytes.clone()).file_name("f.bin");
                let sent = reqwest::Client::new()
                    .post(url)
                    .bearer_auth(token)
                    .multipart(reqwest::multipart::Form::new().part("file", part))
                    .send()
                    .await;
                // Acknowledged: a 200 with its CID. Anything else (cut, 503) was never promised.
                let cid = match sent {
                    Ok(reply) if reply.status() == 200 => {
                        let body: serde_json::Value = reply.json().await.unwrap();
                        Some(body["cid"].as_str().unwrap().to_owned())
                    }
                    _ => None,
                };
                (cid, bytes)
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(20)).await;

    let stopping = std::time::Instant::now();
    let mut running = running;
    let pid = running.child.id().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    // The stalled PATCH is answered at once: 503, its bytes kept.
    let mut reply = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stalled.read_to_end(&mut reply)).await;
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 503"), "{reply}");
    assert!(
        reply.contains("\"unavailable\"") && reply.contains("kept"),
        "{reply}"
    );
    let status = running.child.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(
        stopping.elapsed() < cairn_server::listen::SHUTDOWN_GRACE,
        "the stop waited {:?}",
        stopping.elapsed()
    );
    let mut acknowledged = Vec::new();
    for post in posts {
        if let (Some(cid), bytes) = post.await.unwrap() {
            acknowledged.push((cid, bytes));
        }
    }

    // After a restart: every acknowledged POST reads back, the TUS upload resumes from the
    // 2 MiB it kept, and the archive is extracted (no claim was left behind).
    let restarted = start(&data_dir, &args);
    for (cid, bytes) in &acknowledged {
        let back = http
            .get(format!("{}/ipfs/{cid}", restarted.upload))
            .send()
            .await
            .unwrap();
        assert_eq!(back.status(), 200);
        assert!(back.bytes().await.unwrap() == bytes[..], "{cid} changed");
    }
    let url = format!("{}{path}", restarted.upload);
    assert_eq!(tus_offset(&http, &url, &token).await, 2 << 20);
    let end = tus_patch(&http, &url, &token, 2 << 20, whole[2 << 20..].to_vec()).await;
    assert_eq!(end, whole.len() as u64);
    let id = path.rsplit('/').next().unwrap();
    let op = finished_operation(&restarted, &token, id).await;
    assert_eq!(op["cid"], cid_of(&whole), "{op}");
    let op = finished_operation(&restarted, &token, &archive_op).await;
    assert_eq!(op["status"], "completed", "{op}");
    terminate(restarted);
}

#[tokio::test]
async fn sigkill_during_extraction_then_restart_completes_with_the_right_cid() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let args = ["--workers", "1", "--worker-lease-seconds", "1"];
    let mut running = start(&data_dir, &args);
    let token = running.token.clone();

    // 40 MB of incompressible files in a bzip2 tar: about a second of extraction.
    let files: Vec<(String, Vec<u8>)> = (0..10)
        .map(|i| (format!("data/part-{i}.bin"), content(4 << 20, i + 1)))
        .collect();
    let mut builder = tar::Builder::new(bzip2::write::BzEncoder::new(
        Vec::new(),
        bzip2::Compression::fast(),
    ));
    for (path, body) in &files {
        let mut header = tar::Header::new_ustar();
        header.set_size(body.len() as u64);
        header.set_mode(0o644);
        header.set_path(path).unwrap();
        header.set_cksum();
        builder.append(&header, &body[..]).unwrap();
    }
    let archive = builder.into_inner().unwrap().finish().unwrap();
    let (_, body) = post_upload(&running, &token, "data.tar.bz2", archive).await;
    let id = body["operationId"].as_i64().expect("an operation id");

    // Kill -9 as soon as a worker is extracting.
    let mut status = String::new();
    for _ in 0..5000 {
        status = operation(&running, &token, &id.to_string()).await["status"]
            .as_str()
            .unwrap()
            .to_owned();
        if status != "pending" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    assert_eq!(status, "processing");
    running.child.kill().unwrap();
    running.child.wait().unwrap();

    let restarted = start(&data_dir, &args);
    assert_eq!(
        operation(&restarted, &token, &id.to_string()).await["status"],
        "processing",
        "the kill interrupted the extraction"
    );
    let op = finished_operation(&restarted, &token, &id.to_string()).await;
    assert_eq!(op["status"], "completed", "{op}");
    assert_eq!(op["progressPercent"], 100.0);

    let profile = cairn_unixfs::Profile::default();
    let mut expected = cairn_unixfs::DirectoryBuilder::new(&profile);
    for (path, body) in &files {
        let mut importer = cairn_unixfs::FileImporter::new(&profile, cairn_unixfs::DiscardBlocks);
        importer.push(body).unwrap();
        expected.add_file(path, importer.finish().unwrap()).unwrap();
    }
    let expected = expected.finish(&mut cairn_unixfs::DiscardBlocks).unwrap();
    assert_eq!(op["cid"], expected.cid.to_string());

    // No half-written pack survives, and the staged archive is gone.
    let packs: Vec<String> = std::fs::read_dir(data_dir.join("packs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(packs.iter().all(|p| !p.starts_with("tmp-")), "{packs:?}");
    let staged = std::fs::read_dir(data_dir.join("staging")).unwrap().count();
    assert_eq!(staged, 0);
    terminate(restarted);
}

#[test]
fn the_config_file_is_read_under_the_flags_and_its_typos_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let from_file = dir.path().join("from-file");
    let config = dir.path().join("cairn.toml");
    std::fs::write(
        &config,
        format!(
            "data-dir = {:?}\nlisten = \"127.0.0.1:1\"\nworkers = 1\n",
            from_file.to_str().unwrap()
        ),
    )
    .unwrap();
    // The file names the data directory; the flags override its (unusable) listen address.
    let mut child = cairn()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--account-listen",
            "127.0.0.1:0",
        ])
        .arg("--config")
        .arg(&config)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(
        first.starts_with("upload host listening on http://127.0.0.1:"),
        "{first}"
    );
    assert!(
        !first.ends_with(":1"),
        "the flag wins over the file: {first}"
    );
    assert!(
        from_file.join("cairn.db").exists(),
        "the file's data-dir is used"
    );
    child.kill().unwrap();
    child.wait().unwrap();

    std::fs::write(&config, "listn = \"127.0.0.1:0\"\n").unwrap();
    let output = cairn()
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("listn"), "{stderr}");
}

#[test]
fn a_restart_removes_what_interrupted_uploads_left_behind() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    assert!(terminate(start(&data, &[])).0.success());
    // What a crash can leave: a staged archive whose operation was never recorded, a pack no
    // metadata references, and half-written files of both.
    let leftovers = [
        "staging/0123456789abcdef",
        "staging/tmp-0123456789abcdef",
        "packs/fedcba9876543210.car",
        "packs/tmp-fedcba9876543210.car",
    ];
    for leftover in leftovers {
        std::fs::write(data.join(leftover), b"left behind").unwrap();
    }
    assert!(terminate(start(&data, &[])).0.success());
    for leftover in leftovers {
        assert!(!data.join(leftover).exists(), "{leftover} was removed");
    }
}

#[tokio::test]
async fn the_largest_tus_upload_is_a_setting() {
    let dir = tempfile::tempdir().unwrap();
    let running = start(&dir.path().join("data"), &["--tus-max-size", "1000"]);
    let endpoint = format!("{}/api/upload/tus", running.upload);
    let client = reqwest::Client::new();
    let options = client
        .request(reqwest::Method::OPTIONS, &endpoint)
        .send()
        .await
        .unwrap();
    assert_eq!(options.headers()["tus-max-size"], "1000");
    let refused = client
        .post(&endpoint)
        .bearer_auth(&running.token)
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Length", "1001")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 413);
    let error: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(error["error"], "payload_too_large", "{error}");
    assert!(terminate(running).0.success());
}
