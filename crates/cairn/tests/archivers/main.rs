//! Archives as the tools people use write them, made in the test run by those very tools (GNU
//! tar, bsdtar, Info-ZIP, 7-Zip, git archive, Python, npm's tar and archiver; installed on first
//! use by `archivers/tools.rs`), must extract to exactly the CID that `cairn cid` gives for the
//! tree they hold: for `-C dir .` the directory itself, for `dir/` a directory holding `dir`,
//! for git archive the committed tree. Every case goes through the archive crate directly; a
//! representative few also through the real server, by `POST /api/upload`, by TUS and by
//! `cairn upload`, which must agree. Archives the same tools make unsafe are refused as
//! `invalid_archive`, the message naming the entry and the rule.

use cairn_harness::server;

mod tools;
mod trees;

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use cairn_archive::extract::SourceStats;
use cairn_archive::{ArchiveFormat, Extractor, Limits};
use cairn_unixfs::{DiscardBlocks, Profile};
use server::{cairn, finished_operation, post_upload, start, terminate, tus_upload, Running};
use tools::{tools, Tools};
use trees::{Names, Tree};

/// Where the archive's tree sits in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// `tar -C site .`: the entries are the directory's contents (often under `./`).
    Contents,
    /// `tar site/`: one top-level directory holding them.
    Wrapped,
}

/// One archiver invocation.
struct Case {
    name: &'static str,
    tree: Tree,
    layout: Layout,
    /// The archive's file name: some tools choose the format by its extension.
    file: &'static str,
    make: fn(&Job) -> Vec<Command>,
}

/// Where a case runs: `src/site` holds the tree, `out` is the archive to write.
struct Job<'a> {
    src: PathBuf,
    out: PathBuf,
    tools: &'a Tools,
}

impl Job<'_> {
    fn site(&self) -> PathBuf {
        self.src.join("site")
    }

    /// `program args...` in `dir`.
    fn run_in(&self, dir: &Path, program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Command {
        let mut command = Command::new(program);
        command.args(args).current_dir(dir);
        command
    }

    /// `tar ARGS -f OUT -C site .`
    fn tar_contents(&self, args: &[&str]) -> Vec<Command> {
        let mut tar = self.run_in(&self.src, "tar", args);
        tar.arg("-f").arg(&self.out).args(["-C", "site", "."]);
        vec![tar]
    }

    /// `tar ARGS -f OUT site/`
    fn tar_wrapped(&self, args: &[&str]) -> Vec<Command> {
        let mut tar = self.run_in(&self.src, "tar", args);
        tar.arg("-f").arg(&self.out).arg("site/");
        vec![tar]
    }

    fn bsdtar(&self, args: &[&str]) -> Vec<Command> {
        let mut bsdtar = self.run_in(&self.src, "bsdtar", args);
        bsdtar.arg("-f").arg(&self.out).args(["-C", "site", "."]);
        vec![bsdtar]
    }

    /// Info-ZIP in the site: `zip -q ARGS OUT .`
    fn zip(&self, args: &[&str]) -> Vec<Command> {
        let mut zip = self.run_in(&self.site(), "zip", &[&["-q"], args].concat());
        zip.arg(&self.out).arg(".");
        vec![zip]
    }

    /// 7-Zip in the site: `7z a ARGS OUT .`
    fn seven_zip(&self, args: &[&str]) -> Vec<Command> {
        let mut seven = self.run_in(&self.site(), &self.tools.seven_zip, &["a", "-bd", "-bso0"]);
        seven.args(args).arg(&self.out).arg(".");
        vec![seven]
    }

    /// Commit the site (with a git directory beside `src`, so the trees stay as they were),
    /// then `git archive ARGS -o OUT HEAD`.
    fn git_archive(&self, args: &[&str]) -> Vec<Command> {
        let beside = self.src.parent().unwrap();
        let git = |args: &[&str]| {
            let mut git = self.run_in(&self.site(), "git", args);
            git.env("GIT_DIR", beside.join("repo.git"))
                .env("GIT_WORK_TREE", self.site())
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("HOME", beside)
                .env("GIT_AUTHOR_NAME", "Cairn")
                .env("GIT_AUTHOR_EMAIL", "cairn@example.org")
                .env("GIT_COMMITTER_NAME", "Cairn")
                .env("GIT_COMMITTER_EMAIL", "cairn@example.org");
            git
        };
        let mut archive = git(&[&["archive"], args].concat());
        archive.arg("-o").arg(&self.out).arg("HEAD");
        vec![
            git(&["init", "-q"]),
            git(&["add", "-A"]),
            git(&["commit", "-q", "-m", "site"]),
            archive,
        ]
    }

    /// `shutil.make_archive(OUT without its extension, FORMAT, site)`
    fn make_archive(&self, format: &str) -> Vec<Command> {
        let name = self.out.file_name().unwrap().to_str().unwrap();
        let base = name.split('.').next().unwrap();
        let mut python = self.run_in(&self.src, "python3", &["-c"]);
        python
            .arg("import shutil, sys; shutil.make_archive(sys.argv[1], sys.argv[2], sys.argv[3])")
            .arg(self.out.with_file_name(base))
            .arg(format)
            .arg(self.site());
        vec![python]
    }

    /// `node pack.mjs KIND OUT site`: npm's tar or archiver.
    fn node(&self, kind: &str) -> Vec<Command> {
        let npm = &self.tools.npm;
        let mut node = self.run_in(&npm.dir, &npm.node, &["pack.mjs", kind]);
        node.arg(&self.out).arg(self.site());
        vec![node]
    }
}

fn cases() -> Vec<Case> {
    use Layout::{Contents, Wrapped};
    let full = Tree::FULL;
    let no_links = full.without_symlinks();
    let case = |name, tree, layout, file, make| Case {
        name,
        tree,
        layout,
        file,
        make,
    };
    vec![
        // GNU tar, in each of its formats, both ways round.
        case(
            "gnu tar --format=gnu -C site .",
            full,
            Contents,
            "a.tar",
            |j| j.tar_contents(&["--format=gnu", "-c"]),
        ),
        case("gnu tar --format=gnu site/", full, Wrapped, "a.tar", |j| {
            j.tar_wrapped(&["--format=gnu", "-c"])
        }),
        case(
            "gnu tar --format=posix -C site .",
            full,
            Contents,
            "a.tar",
            |j| j.tar_contents(&["--format=posix", "-c"]),
        ),
        case(
            "gnu tar --format=posix site/",
            full,
            Wrapped,
            "a.tar",
            |j| j.tar_wrapped(&["--format=posix", "-c"]),
        ),
        case(
            "gnu tar --format=ustar -C site .",
            full.with_names(Names::LongPaths),
            Contents,
            "a.tar",
            |j| j.tar_contents(&["--format=ustar", "-c"]),
        ),
        case(
            "gnu tar --format=ustar site/",
            full.with_names(Names::LongPaths),
            Wrapped,
            "a.tar",
            |j| j.tar_wrapped(&["--format=ustar", "-c"]),
        ),
        case(
            "gnu tar --format=v7 -C site .",
            full.with_names(Names::Short),
            Contents,
            "a.tar",
            |j| j.tar_contents(&["--format=v7", "-c"]),
        ),
        case(
            "gnu tar --format=v7 site/",
            full.with_names(Names::Short),
            Wrapped,
            "a.tar",
            |j| j.tar_wrapped(&["--format=v7", "-c"]),
        ),
        // Compressed, as CI pipelines publish websites.
        case("gnu tar czf -C site .", full, Contents, "a.tgz", |j| {
            j.tar_contents(&["-cz"])
        }),
        case("gnu tar cjf -C site .", full, Contents, "a.tar.bz2", |j| {
            j.tar_contents(&["-cj"])
        }),
        case("gnu tar cJf -C site .", full, Contents, "a.tar.xz", |j| {
            j.tar_contents(&["-cJ"])
        }),
        case(
            "gnu tar --zstd -C site .",
            full,
            Contents,
            "a.tar.zst",
            |j| j.tar_contents(&["--zstd", "-c"]),
        ),
        case("gnu tar czf site/", full, Wrapped, "a.tgz", |j| {
            j.tar_wrapped(&["-cz"])
        }),
        // Sparse files, in GNU's old encoding and in the three pax ones.
        case(
            "gnu tar --sparse --format=gnu",
            full.with_sparse(),
            Contents,
            "a.tar",
            |j| j.tar_contents(&["--format=gnu", "--sparse", "--hole-detection=raw", "-c"]),
        ),
        case(
            "gnu tar --sparse --format=posix (pax sparse 1.0)",
            full.with_sparse(),
            Contents,
            "a.tar",
            |j| j.tar_contents(&["--format=posix", "--sparse", "--hole-detection=raw", "-c"]),
        ),
        case(
            "gnu tar --sparse --format=posix --sparse-version=0.1",
            full.with_sparse(),
            Contents,
            "a.tar",
            |j| {
                j.tar_contents(&[
                    "--format=posix",
                    "--sparse",
                    "--sparse-version=0.1",
                    "--hole-detection=raw",
                    "-c",
                ])
            },
        ),
        case(
            "gnu tar --sparse --format=posix --sparse-version=0.0",
            full.with_sparse(),
            Contents,
            "a.tar",
            |j| {
                j.tar_contents(&[
                    "--format=posix",
                    "--sparse",
                    "--sparse-version=0.0",
                    "--hole-detection=raw",
                    "-c",
                ])
            },
        ),
        // bsdtar (libarchive): pax tars, and zips.
        case("bsdtar -C site .", full, Contents, "a.tar", |j| {
            j.bsdtar(&["-c"])
        }),
        case("bsdtar -z -C site .", full, Contents, "a.tgz", |j| {
            j.bsdtar(&["-cz"])
        }),
        case(
            "bsdtar --format zip -C site .",
            full,
            Contents,
            "a.zip",
            |j| j.bsdtar(&["-c", "--format", "zip"]),
        ),
        // Names in CP437 without the UTF-8 flag, as Windows tools write them.
        case(
            "bsdtar --format zip hdrcharset=CP437",
            full.in_cp437(),
            Contents,
            "a.zip",
            |j| j.bsdtar(&["-c", "--format", "zip", "--options", "zip:hdrcharset=CP437"]),
        ),
        // Info-ZIP.
        case("zip -r", no_links, Contents, "a.zip", |j| j.zip(&["-r"])),
        case("zip -ry", full, Contents, "a.zip", |j| j.zip(&["-r", "-y"])),
        case(
            "zip -rD (no directory entries)",
            no_links.without_empty_dirs(),
            Contents,
            "a.zip",
            |j| j.zip(&["-r", "-D"]),
        ),
        case("zip -ry -fz (zip64)", full, Contents, "a.zip", |j| {
            j.zip(&["-r", "-y", "-fz"])
        }),
        case(
            "zip -r -fd (data descriptors)",
            no_links,
            Contents,
            "a.zip",
            |j| j.zip(&["-r", "-fd"]),
        ),
        // Into a pipe, zip cannot seek back: it writes data descriptors.
        case(
            "zip -r - | cat (streamed)",
            no_links,
            Contents,
            "a.zip",
            |j| {
                let mut zip = j.run_in(&j.site(), "sh", &["-c", "zip -q -r - . | cat >\"$0\""]);
                zip.arg(&j.out);
                vec![zip]
            },
        ),
        case("zip -ry -0 (stored)", full, Contents, "a.zip", |j| {
            j.zip(&["-r", "-y", "-0"])
        }),
        case("zip -ry -Z bzip2", full, Contents, "a.zip", |j| {
            j.zip(&["-r", "-y", "-Z", "bzip2"])
        }),
        case("zip -ry site", full, Wrapped, "a.zip", |j| {
            let mut zip = j.run_in(&j.src, "zip", &["-q", "-r", "-y"]);
            zip.arg(&j.out).arg("site");
            vec![zip]
        }),
        // 7-Zip: LZMA2, solid and not.
        case("7z a -snl (solid)", full, Contents, "a.7z", |j| {
            j.seven_zip(&["-snl", "-ms=on"])
        }),
        case(
            "7z a -ms=off (not solid)",
            no_links,
            Contents,
            "a.7z",
            |j| j.seven_zip(&["-ms=off"]),
        ),
        case("7z a -snl site", full, Wrapped, "a.7z", |j| {
            let mut seven = j.run_in(&j.src, &j.tools.seven_zip, &["a", "-bd", "-bso0", "-snl"]);
            seven.arg(&j.out).arg("site");
            vec![seven]
        }),
        // git archive: the committed tree (git keeps no empty directories).
        case(
            "git archive --format=tar",
            full.without_empty_dirs(),
            Contents,
            "a.tar",
            |j| j.git_archive(&["--format=tar"]),
        ),
        case(
            "git archive --format=tar.gz",
            full.without_empty_dirs(),
            Contents,
            "a.tar.gz",
            |j| j.git_archive(&["--format=tar.gz"]),
        ),
        case(
            "git archive --format=zip",
            full.without_empty_dirs(),
            Contents,
            "a.zip",
            |j| j.git_archive(&["--format=zip"]),
        ),
        case(
            "git archive --format=tar.gz --prefix=site/",
            full.without_empty_dirs(),
            Wrapped,
            "a.tar.gz",
            |j| j.git_archive(&["--format=tar.gz", "--prefix=site/"]),
        ),
        // Python.
        case(
            "shutil.make_archive gztar",
            full,
            Contents,
            "a.tar.gz",
            |j| j.make_archive("gztar"),
        ),
        case(
            "shutil.make_archive bztar",
            full,
            Contents,
            "a.tar.bz2",
            |j| j.make_archive("bztar"),
        ),
        case(
            "shutil.make_archive xztar",
            full,
            Contents,
            "a.tar.xz",
            |j| j.make_archive("xztar"),
        ),
        case(
            "shutil.make_archive zip",
            no_links,
            Contents,
            "a.zip",
            |j| j.make_archive("zip"),
        ),
        case("tarfile PAX_FORMAT site", full, Wrapped, "a.tar", |j| {
            let mut python = j.run_in(&j.src, "python3", &["-c"]);
            python
                .arg(
                    "import sys, tarfile\n\
                     with tarfile.open(sys.argv[1], 'w', format=tarfile.PAX_FORMAT) as t:\n    \
                     t.add('site')",
                )
                .arg(&j.out);
            vec![python]
        }),
        // npm.
        case("npm tar (gzip) .", full, Contents, "a.tgz", |j| {
            j.node("tgz")
        }),
        case("npm tar .", full, Contents, "a.tar", |j| j.node("tar")),
        case("npm archiver zip", full, Contents, "a.zip", |j| {
            j.node("archiver-zip")
        }),
        case("npm archiver tar (gzip)", full, Contents, "a.tgz", |j| {
            j.node("archiver-tgz")
        }),
    ]
}

/// A case's source tree and archive, made in `dir`; returns the archive and the CID the tree
/// it holds has by `cairn cid`.
fn prepare(case: &Case, dir: &Path) -> Result<(PathBuf, String), String> {
    let job = Job {
        src: dir.join("src"),
        out: dir.join(case.file),
        tools: tools(),
    };
    case.tree.write(&job.site());
    for mut command in (case.make)(&job) {
        let output = command
            .output()
            .map_err(|e| format!("running {command:?}: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "{command:?} failed:\n{}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    let expected = match case.layout {
        Layout::Contents => job.site(),
        // `src` holds `site` and nothing else.
        Layout::Wrapped => job.src.clone(),
    };
    Ok((job.out, cid_of_tree(&expected)))
}

/// What `cairn cid` prints for `path`.
fn cid_of_tree(path: &Path) -> String {
    let output = cairn().arg("cid").arg(path).output().unwrap();
    assert!(
        output.status.success(),
        "cairn cid {}: {}",
        path.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// Extract `archive` through the archive crate, as the server's workers do.
fn extract(archive: &Path) -> Result<String, String> {
    let mut head = Vec::new();
    File::open(archive)
        .and_then(|f| f.take(512).read_to_end(&mut head))
        .map_err(|e| e.to_string())?;
    let format = ArchiveFormat::detect(&head).ok_or("the format is not recognised")?;
    let profile = Profile::default();
    let limits = Limits::default();
    let mut sink = DiscardBlocks;
    let mut progress = |_| Ok(());
    let extractor = Extractor::new(
        &profile,
        &limits,
        &mut sink,
        SourceStats::default(),
        &mut progress,
    );
    let input = std::io::BufReader::new(File::open(archive).map_err(|e| e.to_string())?);
    cairn_archive::extract(format, input, extractor)
        .map(|root| root.cid.to_string())
        .map_err(|e| e.to_string())
}

#[test]
fn every_archiver_s_output_extracts_to_the_cid_of_the_tree_it_holds() {
    tools();
    let started = Instant::now();
    let cases = cases();
    let work = tempfile::tempdir().unwrap();
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    // Two at a time: the machine has two cores, and most tools use one.
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                while let Some(case) = cases.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let dir = work.path().join(case.name.replace(['/', ' '], "_"));
                    let outcome = prepare(case, &dir).and_then(|(archive, expected)| {
                        let got = extract(&archive)?;
                        if got == expected {
                            Ok(())
                        } else {
                            Err(format!("extracted to {got}, but the tree is {expected}"))
                        }
                    });
                    if let Err(e) = outcome {
                        failures.lock().unwrap().push(format!("{}: {e}", case.name));
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    eprintln!(
        "{} archiver cases in {:.1} s",
        cases.len(),
        started.elapsed().as_secs_f64()
    );
}

/// Upload `archive` by `POST /api/upload` and return its finished operation.
async fn post(server: &Running, archive: &Path) -> serde_json::Value {
    let bytes = std::fs::read(archive).unwrap();
    let name = archive.file_name().unwrap().to_string_lossy().into_owned();
    let (_, body) = post_upload(server, &server.token, &name, bytes).await;
    let id = body["operationId"].as_i64().expect("an operation id");
    finished_operation(server, &server.token, &id.to_string()).await
}

/// Upload `archive` by TUS, as a plain HTTP exchange (create, then one PATCH), and return its
/// finished operation.
async fn tus(server: &Running, archive: &Path) -> serde_json::Value {
    let bytes = std::fs::read(archive).unwrap();
    let name = archive.file_name().unwrap().to_string_lossy().into_owned();
    let client = reqwest::Client::new();
    let location = tus_upload(&client, &server.upload, &server.token, &name, bytes).await;
    let id = location.rsplit('/').next().unwrap();
    finished_operation(server, &server.token, id).await
}

/// Upload `archive` with `cairn upload --wait` and return the CID it prints.
fn cairn_upload(server: &Running, home: &Path, archive: &Path) -> String {
    let args = ["upload", "--wait", archive.to_str().unwrap()];
    let stdout = server::client(server, &server.token, home, &args);
    stdout.split('\t').next().unwrap().to_owned()
}

fn completed_cid(op: &serde_json::Value) -> String {
    assert_eq!(op["status"], "completed", "{op}");
    op["cid"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_server_gives_the_same_cid_by_post_tus_and_cairn_upload() {
    let representative = [
        "gnu tar czf -C site .",
        "gnu tar --format=v7 -C site .",
        "gnu tar --sparse --format=posix (pax sparse 1.0)",
        "git archive --format=tar.gz",
        "bsdtar --format zip -C site .",
        "zip -r -fd (data descriptors)",
        "7z a -snl (solid)",
        "shutil.make_archive gztar",
        "npm archiver zip",
    ];
    let cases = cases();
    let work = tempfile::tempdir().unwrap();
    let prepared: Vec<(&str, PathBuf, String)> = representative
        .iter()
        .map(|name| {
            let case = cases.iter().find(|c| c.name == *name).unwrap();
            let dir = work.path().join(name.replace(['/', ' '], "_"));
            let (archive, expected) = prepare(case, &dir).unwrap();
            (*name, archive, expected)
        })
        .collect();
    let server = start(&work.path().join("data"), &[]);
    let home = work.path().join("home");
    for (name, archive, expected) in &prepared {
        assert_eq!(
            &completed_cid(&post(&server, archive).await),
            expected,
            "{name} by POST"
        );
        assert_eq!(
            &completed_cid(&tus(&server, archive).await),
            expected,
            "{name} by TUS"
        );
        let uploaded = tokio::task::block_in_place(|| cairn_upload(&server, &home, archive));
        assert_eq!(&uploaded, expected, "{name} by cairn upload");
    }
    terminate(server);
}

/// Unsafe archives the same tools write on request fail their operation with
/// `invalid_archive`, naming the entry and the rule.
#[tokio::test(flavor = "multi_thread")]
async fn unsafe_archives_from_real_tools_are_refused_naming_entry_and_rule() {
    tools();
    let work = tempfile::tempdir().unwrap();
    let outside = work.path().join("outside.txt");
    std::fs::write(&outside, b"not yours").unwrap();
    let site = work.path().join("site");
    std::fs::create_dir(&site).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", site.join("passwd")).unwrap();
    let tar = |args: &[&str], out: &str| {
        let status = Command::new("tar")
            .args(args)
            .arg("-f")
            .arg(work.path().join(out))
            .arg("-C")
            .arg(work.path())
            .args(["site"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        work.path().join(out)
    };
    // GNU tar keeps an absolute name with -P (A1); a symlink out of the tree as it is (A2).
    let mut absolute = Command::new("tar");
    absolute
        .args(["-P", "-czf"])
        .arg(work.path().join("absolute.tgz"))
        .arg(&outside);
    assert!(absolute.status().unwrap().success());
    let cases = [
        (
            work.path().join("absolute.tgz"),
            outside.display().to_string(),
            "absolute",
        ),
        (
            tar(&["-c"], "link.tar"),
            "site/passwd".to_owned(),
            "symlink target \"/etc/passwd\" is absolute",
        ),
    ];
    let server = start(&work.path().join("data"), &[]);
    for (archive, entry, rule) in &cases {
        for op in [post(&server, archive).await, tus(&server, archive).await] {
            assert_eq!(op["status"], "failed", "{op}");
            assert_eq!(op["error"]["error"], "invalid_archive", "{op}");
            let message = op["error"]["message"].as_str().unwrap();
            assert!(
                message.contains(&format!("{entry:?}")) && message.contains(rule),
                "{message}"
            );
        }
    }
    terminate(server);
}
