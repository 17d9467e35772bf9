//! Builds the web page (`web/`) into the binary: writes `web_files.rs`, a table of every
//! file there and its bytes, for `src/web.rs`. No JavaScript build step: the files are
//! served as they are.

use std::path::Path;

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest).join("web");
    // A directory here means any change beneath it.
    println!("cargo:rerun-if-changed=web");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    let mut table = String::from("&[\n");
    for path in files {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("UTF-8 file names");
        table.push_str(&format!(
            "    ({name:?}, include_bytes!({:?})),\n",
            path.display()
        ));
    }
    table.push(']');
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(Path::new(&out).join("web_files.rs"), table).expect("write web_files.rs");
}
