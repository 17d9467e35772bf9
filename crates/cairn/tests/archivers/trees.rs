//! The source trees the archivers pack: what a website's repository holds (nested directories,
//! hidden files, an empty file, UTF-8 names, a file of several chunks, a hard link), in the
//! variants each tool can represent.

use std::fs;
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::symlink;
use std::path::Path;

/// How long the names are. v7 tars hold paths of 99 bytes at most; ustar splits a longer path
/// at a `/` (prefix and name fields) but no component may pass 100 bytes; the others have GNU
/// long names or pax `path`/`linkpath`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Names {
    Short,
    LongPaths,
    Long,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tree {
    pub names: Names,
    /// A symlink to a file, one to a directory, and with long names one whose target passes
    /// 100 bytes. Tools that follow symlinks get a tree without them.
    pub symlinks: bool,
    /// An empty directory and an empty nested one (zips without directory entries, and git,
    /// cannot hold them).
    pub empty_dirs: bool,
    /// A 6 MiB file that is mostly holes, for the sparse formats.
    pub sparse: bool,
    /// Only names that CP437 can spell (no Japanese one), for zips written in that encoding.
    pub cp437: bool,
}

/// A file name component longer than a tar header's 100-byte name field.
const LONG_NAME: &str = "a-page-whose-name-is-much-longer-than-the-hundred-bytes-a-v7-or-ustar-\
                         tar-header-has-room-for-so-gnu-tar-and-pax-need-extensions-to-hold.html";
/// A path longer than 100 bytes, of short components.
const LONG_PATH: &str = "deep/directories-nested-in-a-repository/one-inside-the-other/\
                         until-the-path-is-longer-than-a-header/page.html";

/// Content of `len` bytes from `seed`, compressible about 2:1 like real assets, so the
/// compressors stay quick.
pub fn content(len: usize, seed: u64) -> Vec<u8> {
    let mut stream = cairn_test_support::xorshift::XorShift64::new(seed);
    (0..len)
        .map(|_| b"abcdefghijklmnop"[(stream.next_u64() % 16) as usize])
        .collect()
}

impl Tree {
    pub const FULL: Tree = Tree {
        names: Names::Long,
        symlinks: true,
        empty_dirs: true,
        sparse: false,
        cp437: false,
    };

    pub fn with_names(self, names: Names) -> Self {
        Self { names, ..self }
    }

    pub fn without_symlinks(self) -> Self {
        Self {
            symlinks: false,
            ..self
        }
    }

    pub fn without_empty_dirs(self) -> Self {
        Self {
            empty_dirs: false,
            ..self
        }
    }

    pub fn in_cp437(self) -> Self {
        Self {
            cp437: true,
            ..self
        }
    }

    pub fn with_sparse(self) -> Self {
        Self {
            sparse: true,
            ..self
        }
    }

    /// Write the tree at `root` (which must not exist).
    pub fn write(&self, root: &Path) {
        let file = |path: &str, bytes: &[u8]| {
            let path = root.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, bytes).unwrap();
        };
        fs::create_dir_all(root).unwrap();
        file("index.html", b"<!doctype html><h1>Cairn</h1>\n");
        file(".hidden", b"dotfiles are kept\n");
        file(
            ".well-known/security.txt",
            b"Contact: mailto:security@example.org\n",
        );
        file("assets/css/site.css", b"body { margin: 0 }\n");
        file("assets/js/app.js", b"console.log('hi');\n");
        // Three chunks of the default profile.
        file("assets/img/photo.bin", &content(2_600_000, 7));
        file("empty.txt", b"");
        file("notes/naïve café.txt", "déjà vu\n".as_bytes());
        if !self.cp437 {
            file("notes/日本語.md", "# 見出し\n".as_bytes());
        }
        // A hard link: tar tools write it as a link to the first name; others store a copy.
        fs::hard_link(root.join("index.html"), root.join("copy-of-index.html")).unwrap();
        if self.names != Names::Short {
            file(LONG_PATH, b"deep\n");
        }
        if self.names == Names::Long {
            file(&format!("pages/{LONG_NAME}"), b"long\n");
        }
        if self.empty_dirs {
            fs::create_dir_all(root.join("empty")).unwrap();
            fs::create_dir_all(root.join("assets/fonts")).unwrap();
        }
        if self.symlinks {
            symlink("../../index.html", root.join("assets/css/home.html")).unwrap();
            symlink("assets", root.join("latest")).unwrap();
            if self.names == Names::Long {
                symlink(
                    format!("../../../pages/{LONG_NAME}"),
                    root.join("deep/directories-nested-in-a-repository/one-inside-the-other/link"),
                )
                .unwrap();
            }
        }
        if self.sparse {
            let mut disk = fs::File::create(root.join("disk.img")).unwrap();
            disk.set_len(6 << 20).unwrap();
            for (at, seed) in [(1 << 20, 1), (4 << 20, 2)] {
                disk.seek(SeekFrom::Start(at)).unwrap();
                disk.write_all(&content(64 << 10, seed)).unwrap();
            }
        }
    }
}
