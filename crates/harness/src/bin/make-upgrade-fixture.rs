//! Writes one upgrade fixture with an earlier release's binary (see `cairn_harness::upgrades`);
//! `scripts/make-upgrade-fixtures` builds each release and runs this once per schema.
//!
//! Usage: make-upgrade-fixture BINARY SCHEMA COMMIT OUT_DIR

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [binary, schema, commit, out] = &args[..] else {
        eprintln!("usage: make-upgrade-fixture BINARY SCHEMA COMMIT OUT_DIR");
        return ExitCode::from(2);
    };
    let Ok(schema) = schema.parse() else {
        eprintln!("make-upgrade-fixture: SCHEMA must be a number, not {schema:?}");
        return ExitCode::from(2);
    };
    let out = PathBuf::from(out);
    cairn_harness::upgrades::make_fixture(&PathBuf::from(binary), schema, commit, &out);
    println!("{}", out.display());
    ExitCode::SUCCESS
}
