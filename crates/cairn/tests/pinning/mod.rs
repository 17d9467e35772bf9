//! The official compliance tool of the IPFS Pinning Service API, npm
//! `@ipfs-shipyard/pinning-service-compliance` ([`TOOL`]), run against a server, its report
//! read back as a [`Report`].
//!
//! Installed on first use, offline-safe, into `<target tmp>/pinning-compliance`
//! (`package.json`, `package-lock.json`; `npm ci --ignore-scripts`: its `kubo` dependency's
//! install script downloads a Kubo binary, which the checks never use), on Node 22 from PyPI
//! (`cairn_test_support::node`; not 23 or newer, see [`node::NODE_22`]), and again only when the
//! lock changes.
//!
//! The tool checks response shapes against the spec's OpenAPI file, which it fetches from
//! GitHub (`specLocation` in `dist/src/utils/constants.js`). When it cannot load the file
//! (offline, or on a Node it does not run on), every check with a schema (four of the nine)
//! is left out of the run and of its totals. So the installer points `specLocation` at
//! `ipfs-pinning-service.yaml` (version 1.0.0, copied beside this file), and
//! [`run_compliance`] fails when the tool says it could not load it.
//!
//! The tool's exit status is always 0. What it found is in two reports under its
//! `dist/docs/`, named after the host: `<host>.json` (`total`, `passed`, `failed`,
//! `success`: counted in checks) and `<host>.md` (each check and each HTTP call it made: the
//! expectations, the request, the response, schema mismatches, errors). [`run_compliance`]
//! reads both. Runs in one test binary take turns: the reports' paths are fixed.
//!
//! The nine checks ([`CHECKS`]), in the order the tool runs them (`dist/src/index.js`),
//! each one first-class API call plus the calls that depend on it. Requests go one a second.
//!
//! | check function | title in the report | what it does |
//! |---|---|---|
//! | `checkEmptyBearerToken` | Request with no authentication token | `GET /pins` without a token: 401, a `Failure` |
//! | `checkInvalidBearerToken` | Request with invalid token | `GET /pins` with a wrong token: 401, a `Failure` |
//! | `addPin` | Pins post of CID '…' | `POST /pins`: a `PinStatus`, not `failed` |
//! | `deleteNewPin` | Can create and then delete a new pin | `POST /pins` (202), then `DELETE /pins/{requestid}` (202) |
//! | `getAllPins` | List pin objects (GET /pins) in all states | `GET /pins?status=…`: 200, a `PinResults` |
//! | `replacePin` | Can create and replace a pin's CID | `POST /pins`, `POST /pins/{requestid}` with a new CID: new requestid; old one 404, new one 200 |
//! | `matchPin` | Can create a pin with name='…' | a named pin found by `name` with `match` `exact`, `iexact`, `partial`, `ipartial` (count 1) |
//! | `testPagination` | Pagination: Get all pins, … | up to 15 pins, a first page of 10 (the default `limit`) with `count` above it, a second page (`before`) with none of the first's |
//! | `deleteAllPins` | Can delete all pins created during compliance checks | deletes every pin it made (paging with `before`), then `count` is back to where it started |

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use cairn_test_support::node;

/// The tool's npm package and version (as pinned by `package.json` and the lock).
pub const TOOL: &str = "@ipfs-shipyard/pinning-service-compliance@1.8.1";
/// How many checks the tool runs (see the module docs); each counts once in the totals.
pub const CHECKS: usize = 9;
/// How many of them validate a response against the spec's schemas.
pub const SCHEMA_CHECKS: usize = 4;
/// The title of the expectation a schema adds to a call.
const SCHEMA_EXPECTATION: &str = "Response object matches api spec schema";
/// The OpenAPI file the tool validates against, beside this file.
const SPEC: &str = "ipfs-pinning-service.yaml";
/// A run is about 40 requests, one a second; each request times out after a minute.
const RUN_LIMIT: Duration = Duration::from_secs(600);

fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pinning")
}

/// The installed tool.
struct Install {
    node: PathBuf,
    /// Its package directory: `dist/` holds its code and the reports.
    package: PathBuf,
    /// The copy of [`SPEC`] it reads.
    spec: PathBuf,
}

fn install() -> &'static Install {
    static INSTALL: OnceLock<Install> = OnceLock::new();
    INSTALL.get_or_init(|| {
        let installed = node::npm_ci(
            &node::NODE_22,
            "pinning-compliance",
            &sources(),
            &[SPEC],
            &["--ignore-scripts"],
        );
        let install = Install {
            node: installed.node,
            package: installed
                .dir
                .join("node_modules/@ipfs-shipyard/pinning-service-compliance"),
            spec: installed.dir.join(SPEC),
        };
        point_at_local_spec(&install.package, &install.spec);
        install
    })
}

/// Rewrite the tool's `specLocation` constant to name `spec` (a file path, which the tool's
/// OpenAPI parser reads as well as a URL). Idempotent; fails if the constant is gone.
fn point_at_local_spec(package: &Path, spec: &Path) {
    let constants = package.join("dist/src/utils/constants.js");
    let source = std::fs::read_to_string(&constants)
        .unwrap_or_else(|e| panic!("read {}: {e}", constants.display()));
    const DECLARATION: &str = "const specLocation = ";
    let declarations: Vec<usize> = source
        .lines()
        .enumerate()
        .filter(|(_, line)| line.trim_start().starts_with(DECLARATION))
        .map(|(at, _)| at)
        .collect();
    let [at] = declarations[..] else {
        panic!(
            "{} declares `{DECLARATION}` {} times, not once: {TOOL} no longer names the \
             spec's location there; find where it loads `ipfs-pinning-service.yaml` and point \
             it at {}",
            constants.display(),
            declarations.len(),
            spec.display()
        );
    };
    let literal = serde_json::to_string(&spec.display().to_string()).expect("a JSON string");
    let wanted = format!("{DECLARATION}{literal};");
    let mut lines: Vec<&str> = source.lines().collect();
    if lines[at] == wanted {
        return;
    }
    // Replacing one line is right only for a declaration on one line.
    assert!(
        lines[at].trim_end().ends_with(';'),
        "{}: `{}` goes on past its line: {TOOL} changed; patch it by hand and update this",
        constants.display(),
        lines[at]
    );
    lines[at] = &wanted;
    let patched = lines.join("\n") + "\n";
    let partial = constants.with_extension("js.partial");
    std::fs::write(&partial, patched).expect("write the patched constants.js");
    std::fs::rename(&partial, &constants).expect("put the patched constants.js in place");
}

/// What the tool found: the totals of `<host>.json` and the checks of `<host>.md`.
#[derive(Debug)]
pub struct Report {
    pub total: usize,
    pub passed: usize,
    pub failed: usize,
    pub success: bool,
    /// In the order they ran.
    pub checks: Vec<Check>,
    /// Checks the tool could not run at all (it logs why, and leaves them out of the totals).
    pub not_run: Vec<String>,
    /// The Markdown report, for everything else (headers, whole bodies, stack traces).
    pub markdown: PathBuf,
    pub took: Duration,
}

/// One of the [`CHECKS`].
#[derive(Debug)]
pub struct Check {
    /// As the tool names it (with the CIDs and names it made up).
    pub title: String,
    pub passed: bool,
    /// Every expectation of the check, its dependent calls' included, in the tool's order.
    pub expectations: Vec<Expectation>,
    /// The check's first-class call, then those that depended on it.
    pub calls: Vec<Call>,
}

#[derive(Debug)]
pub struct Expectation {
    pub title: String,
    pub passed: bool,
}

/// An HTTP call the tool made, as its Markdown report shows it.
#[derive(Debug, Default)]
pub struct Call {
    pub title: String,
    pub passed: bool,
    /// `METHOD URL`.
    pub request: String,
    /// `STATUS TEXT` (`0 No response received` when there was none).
    pub response: String,
    pub body: String,
    /// What in the response the spec's schema refused.
    pub schema_mismatches: Vec<String>,
    /// The first line of each error the tool met (its report has the stack traces).
    pub errors: Vec<String>,
}

impl Report {
    /// Every check ran and passed.
    pub fn all_passed(&self) -> bool {
        self.success
            && self.failed == 0
            && self.total == CHECKS
            && self.checks.iter().all(|check| check.passed)
    }

    /// How many responses were validated against the spec's schemas.
    pub fn schema_validations(&self) -> usize {
        schema_validations(&self.checks)
    }
}

fn schema_validations(checks: &[Check]) -> usize {
    checks
        .iter()
        .flat_map(|check| &check.expectations)
        .filter(|expectation| expectation.title == SCHEMA_EXPECTATION)
        .count()
}

/// Run the tool against the Pinning Service API at `upload_url` (the service's base URL: the
/// tool appends `/pins`) with `token`. Fails the test if the tool did not run, did not load
/// the spec, or wrote no report; what it found about the service is the [`Report`].
pub fn run_compliance(upload_url: &str, token: &str) -> Report {
    let Install {
        node,
        package,
        spec,
    } = install();
    // The reports' paths depend on the host only.
    static ONE_RUN_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_RUN_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());

    let host = reqwest::Url::parse(upload_url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("{upload_url} is not a URL with a host"));
    let docs = package.join("dist/docs");
    match std::fs::remove_dir_all(&docs) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => panic!("remove the last run's reports in {}: {e}", docs.display()),
    }
    let stdout_path = package.join("run.stdout");
    let stderr_path = package.join("run.stderr");
    let file = |path: &Path| {
        std::fs::File::create(path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()))
    };

    let started = Instant::now();
    let mut child = Command::new(node)
        .arg("dist/src/index.js")
        .arg("-s")
        .arg(upload_url)
        .arg(token)
        .current_dir(package)
        .stdin(Stdio::null())
        .stdout(file(&stdout_path))
        .stderr(file(&stderr_path))
        .spawn()
        .unwrap_or_else(|e| panic!("start {TOOL}: {e}"));
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the compliance tool") {
            break status;
        }
        if started.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{TOOL} still ran after {RUN_LIMIT:?}; its output:\n{}",
                output(&stdout_path, &stderr_path)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let took = started.elapsed();
    let stdout = strip_ansi(&std::fs::read_to_string(&stdout_path).unwrap_or_default());

    let tool_failed = |what: String| {
        format!(
            "{TOOL} {what} (exit status {status}); its output:\n{}",
            output(&stdout_path, &stderr_path)
        )
    };
    assert!(
        !stdout.contains("Could not get joi schema"),
        "{}",
        tool_failed(format!(
            "could not load the spec from {}, so it skipped the checks with a schema",
            spec.display()
        ))
    );
    let json_path = docs.join(format!("{host}.json"));
    let json = std::fs::read_to_string(&json_path).unwrap_or_else(|_| {
        panic!(
            "{}",
            tool_failed(format!("wrote no {}", json_path.display()))
        )
    });
    #[derive(serde::Deserialize)]
    struct Totals {
        total: usize,
        passed: usize,
        failed: usize,
        success: bool,
    }
    let totals: Totals = serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("{}: {e}:\n{json}", json_path.display()));
    let markdown = docs.join(format!("{host}.md"));
    let checks = match std::fs::read_to_string(&markdown) {
        Ok(text) => parse_markdown(&text),
        // No check ran to its end (the tool writes an entry as each call finishes).
        Err(_) if totals.total == 0 => Vec::new(),
        Err(e) => panic!("read {}: {e}", markdown.display()),
    };
    assert_eq!(
        checks.len(),
        totals.total,
        "{} lists {} checks, {} counts {}: the harness no longer reads the tool's reports right",
        markdown.display(),
        checks.len(),
        json_path.display(),
        totals.total
    );
    let report_schema_validations = schema_validations(&checks);
    assert!(
        checks.len() < CHECKS || report_schema_validations == SCHEMA_CHECKS,
        "{}",
        tool_failed(format!(
            "ran all {CHECKS} checks but validated {report_schema_validations} responses \
             against the spec, not {SCHEMA_CHECKS}"
        ))
    );
    // A check function that threw is logged, never reported.
    let not_run = stdout
        .lines()
        .filter(|line| line.contains("Problem running compliance check"))
        .map(|line| line.split("] : ").last().unwrap_or(line).trim().to_owned())
        .collect();
    Report {
        total: totals.total,
        passed: totals.passed,
        failed: totals.failed,
        success: totals.success,
        checks,
        not_run,
        markdown,
        took,
    }
}

/// The tool's stdout and stderr, for a failure message.
fn output(stdout: &Path, stderr: &Path) -> String {
    let read = |path: &Path| strip_ansi(&std::fs::read_to_string(path).unwrap_or_default());
    format!(
        "--- stdout ({}):\n{}\n--- stderr ({}):\n{}",
        stdout.display(),
        read(stdout),
        stderr.display(),
        read(stderr)
    )
}

/// Without terminal colour sequences (`ESC [ … m`), which the tool's logger adds.
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // Up to and including the final byte of the sequence (a letter).
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The tool's icons (`Icons` in `dist/src/utils/constants.js`).
const PASS: &str = "\u{1f7e2}";
const FAIL: &str = "\u{274c}";
const ERROR: &str = "\u{26a0}\u{fe0f}";

/// The checks in the tool's Markdown report (`dist/src/output/`: `getHeader.js`,
/// `getReportEntry.js`). It has a summary listing the first-class calls (the checks) with 🟢
/// or ❌, then one `## TITLE - 🟢 SUCCESS` (or `❌ FAILED`) entry per call, each written when
/// the call's expectations have run: a check's dependent calls come before the check itself
/// (which then lists their expectations among its own), and checks run one after another.
fn parse_markdown(text: &str) -> Vec<Check> {
    #[derive(PartialEq)]
    enum Part {
        Summary,
        Expectations,
        Errors,
        SchemaMismatches,
        Request,
        Response,
        ResponseBody,
        Other,
    }
    let mut summary: Vec<String> = Vec::new();
    let mut entries: Vec<(Call, Vec<Expectation>)> = Vec::new();
    let mut part = Part::Other;
    let mut in_response = false;
    let mut fence: Option<Vec<String>> = None;
    for line in text.lines() {
        // Code blocks hold requests and responses, whose bodies may hold anything.
        if line.starts_with("```") {
            match fence.take() {
                None => fence = Some(Vec::new()),
                Some(content) => {
                    if let Some((call, _)) = entries.last_mut() {
                        match part {
                            Part::Request => call.request = content.join("\n"),
                            Part::Response => call.response = content.join("\n"),
                            Part::ResponseBody => call.body = content.join("\n"),
                            _ => {}
                        }
                    }
                    part = Part::Other;
                }
            }
            continue;
        }
        if let Some(content) = fence.as_mut() {
            content.push(line.to_owned());
            continue;
        }
        if let Some(heading) = line.strip_prefix("## ") {
            if heading.starts_with("Summary (") {
                part = Part::Summary;
            } else {
                let (title, outcome) = heading.rsplit_once(" - ").unwrap_or((heading, ""));
                let call = Call {
                    title: title.to_owned(),
                    passed: outcome.starts_with(PASS),
                    ..Call::default()
                };
                entries.push((call, Vec::new()));
                part = Part::Other;
                in_response = false;
            }
            continue;
        }
        if line.starts_with('#') {
            part = match line.trim_end() {
                l if l.starts_with("### Expectations") => Part::Expectations,
                "### Errors during run" => Part::Errors,
                l if l.starts_with("#### Response object doesn't match") => Part::SchemaMismatches,
                "#### Request" => {
                    in_response = false;
                    Part::Request
                }
                "#### Response" => {
                    in_response = true;
                    Part::Response
                }
                "##### Body" if in_response => Part::ResponseBody,
                _ => Part::Other,
            };
            continue;
        }
        let item = line.trim();
        let Some((call, expectations)) = entries.last_mut() else {
            if part == Part::Summary {
                if let Some(title) = summary_title(item) {
                    summary.push(title);
                }
            }
            continue;
        };
        match part {
            Part::Expectations => {
                for (icon, suffix, passed) in
                    [(PASS, " (success)", true), (FAIL, " (failure)", false)]
                {
                    if let Some(title) = item
                        .strip_prefix(icon)
                        .and_then(|rest| rest.strip_suffix(suffix))
                    {
                        expectations.push(Expectation {
                            title: title.trim().to_owned(),
                            passed,
                        });
                    }
                }
            }
            Part::Errors => {
                if let Some(error) = item.strip_prefix(ERROR) {
                    call.errors.push(error.trim().to_owned());
                }
            }
            Part::SchemaMismatches => {
                if let Some(mismatch) = item.strip_prefix("* ") {
                    call.schema_mismatches.push(mismatch.to_owned());
                }
            }
            _ => {}
        }
    }

    // Each check's entry comes after those of the calls that depended on it.
    let mut checks = Vec::new();
    let mut dependents = Vec::new();
    let mut titles = summary.into_iter().peekable();
    for (call, expectations) in entries {
        if titles.peek() == Some(&call.title) {
            titles.next();
            let passed = call.passed;
            let title = call.title.clone();
            let mut calls = vec![call];
            calls.append(&mut dependents);
            checks.push(Check {
                title,
                passed,
                expectations,
                calls,
            });
        } else {
            dependents.push(call);
        }
    }
    checks
}

/// A summary line, `🟢 [TITLE](#anchor)` or `❌ …`: its title.
fn summary_title(item: &str) -> Option<String> {
    let link = item
        .strip_prefix(PASS)
        .or_else(|| item.strip_prefix(FAIL))?
        .trim()
        .strip_prefix('[')?;
    let end = link.rfind("](#")?;
    Some(link[..end].to_owned())
}

/// A call's request and response on one line, the body shortened: `POST /pins → 404 Not
/// Found: {…}`.
fn exchange(call: &Call) -> String {
    // The path is what tells calls apart; every call goes to the same server.
    let request = match call.request.split_once("://") {
        Some((method_and_scheme, rest)) => {
            let method = method_and_scheme.split(' ').next().unwrap_or("");
            let path = rest.find('/').map_or("/", |at| &rest[at..]);
            format!("{method} {path}")
        }
        None => call.request.clone(),
    };
    let body: String = call.body.split_whitespace().collect::<Vec<_>>().join(" ");
    const SHOWN: usize = 300;
    let body = match body.char_indices().nth(SHOWN) {
        Some((at, _)) => format!("{}…", &body[..at]),
        None => body,
    };
    if body.is_empty() {
        format!("{request} → {}", call.response)
    } else {
        format!("{request} → {}: {body}", call.response)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{TOOL}: {} of {} checks passed, {} failed (of the {CHECKS} it has; success: {}); \
             {} responses validated against the spec's schemas; took {:.0?}",
            self.passed,
            self.total,
            self.failed,
            self.success,
            self.schema_validations(),
            self.took
        )?;
        for not_run in &self.not_run {
            writeln!(f, "NOT RUN: {not_run}")?;
        }
        for check in self.checks.iter().filter(|check| !check.passed) {
            writeln!(f, "\nFAILED: {}", check.title)?;
            // Calls made alike expect alike: each expectation once, with how often it failed.
            let mut failed: Vec<(&str, usize)> = Vec::new();
            for expectation in check.expectations.iter().filter(|e| !e.passed) {
                match failed
                    .iter_mut()
                    .find(|(title, _)| *title == expectation.title)
                {
                    Some((_, times)) => *times += 1,
                    None => failed.push((&expectation.title, 1)),
                }
            }
            for (title, times) in failed {
                match times {
                    1 => writeln!(f, "  expected: {title}")?,
                    n => writeln!(f, "  expected: {title} (failed {n} times)")?,
                }
            }
            // The calls that failed, each kind of exchange once (pagination makes 15 pins).
            let mut shown: Vec<(String, &Call, usize)> = Vec::new();
            for call in check.calls.iter().filter(|call| !call.passed) {
                let line = exchange(call);
                match shown.iter_mut().find(|(seen, ..)| *seen == line) {
                    Some((_, _, repeats)) => *repeats += 1,
                    None => shown.push((line, call, 0)),
                }
            }
            for (line, call, repeats) in shown {
                let more = match repeats {
                    0 => String::new(),
                    n => format!(" (and {n} more like it)"),
                };
                writeln!(f, "  call: {}{more}", call.title)?;
                writeln!(f, "    {line}")?;
                for mismatch in &call.schema_mismatches {
                    writeln!(f, "    schema: {mismatch}")?;
                }
            }
            let mut errors: Vec<&String> = Vec::new();
            for error in check.calls.iter().flat_map(|call| &call.errors) {
                if !errors.contains(&error) {
                    errors.push(error);
                }
            }
            for error in errors {
                writeln!(f, "  error: {error}")?;
            }
        }
        write!(f, "\nthe tool's full report: {}", self.markdown.display())
    }
}
