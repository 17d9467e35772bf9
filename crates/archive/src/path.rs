//! Entry names and symlink targets, checked against the archive-safety rules
//! (`docs/archive-safety.md` A1, A2, A8). Nothing is ever written to the host filesystem;
//! "escape" means leaving the root of the DAG.

use crate::Limits;

/// A normalised entry path: `/`-separated, relative, no `.`/`..`/empty components.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArchivePath(String);

impl ArchivePath {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn components(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }
}

/// Which separator conventions an archive format has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRules {
    /// tar: `/` only; a `\` is an ordinary name character.
    Tar,
    /// zip: `/` only, and a `\` is refused (A1), because Windows tools write it as a separator.
    Zip,
}

/// Normalise an entry name (A1): leading `./` and repeated `/` are dropped, a trailing `/` marks
/// a directory; anything that is absolute, has a drive letter, contains NUL or `..` is refused
/// with the reason. `None` is the archive root itself (`./`, `.`, `./.`), which `tar -C dir .`,
/// bsdtar and Python's `shutil.make_archive` write as a directory entry: the caller skips it.
pub fn normalise(
    name: &str,
    rules: NameRules,
    limits: &Limits,
) -> Result<Option<ArchivePath>, String> {
    if name.contains('\0') {
        return Err("the name contains NUL".into());
    }
    if name.starts_with('/') || name.starts_with('\\') {
        return Err("the name is an absolute path".into());
    }
    let bytes = name.as_bytes();
    if bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic() {
        return Err("the name starts with a drive letter".into());
    }
    if rules == NameRules::Zip && name.contains('\\') {
        return Err("the name uses \\ as a separator".into());
    }
    if name.len() > limits.max_path_bytes {
        return Err(format!(
            "the name is longer than {} bytes",
            limits.max_path_bytes
        ));
    }
    let mut parts = Vec::new();
    for part in name.split('/') {
        match part {
            "" | "." => continue,
            ".." => return Err("the name climbs out of the archive root (..)".into()),
            _ if part.len() > limits.max_name_bytes => {
                return Err(format!(
                    "a path component is longer than {} bytes",
                    limits.max_name_bytes
                ))
            }
            _ => parts.push(part),
        }
    }
    if parts.is_empty() {
        return if name.is_empty() {
            Err("the name is empty".into())
        } else {
            Ok(None)
        };
    }
    if parts.len() > limits.max_depth {
        return Err(format!(
            "the path is deeper than {} levels",
            limits.max_depth
        ));
    }
    Ok(Some(ArchivePath(parts.join("/"))))
}

/// Check a symlink target (A2): relative, without trailing slash, and resolving inside the tree
/// from the link's own directory.
pub fn check_link_target(link: &ArchivePath, target: &str) -> Result<(), String> {
    if target.is_empty() {
        return Err("the symlink target is empty".into());
    }
    if target.contains('\0') {
        return Err("the symlink target contains NUL".into());
    }
    if target.starts_with('/') || target.starts_with('\\') {
        return Err(format!("the symlink target {target:?} is absolute"));
    }
    if target.ends_with('/') {
        return Err(format!("the symlink target {target:?} ends with a slash"));
    }
    let mut depth = link.components().count() - 1;
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." if depth == 0 => {
                return Err(format!(
                    "the symlink target {target:?} points outside the archive"
                ))
            }
            ".." => depth -= 1,
            _ => depth += 1,
        }
    }
    Ok(())
}

/// Decode a zip name that lacks the UTF-8 flag and is not valid UTF-8, as CP437 (A8).
pub fn decode_cp437(bytes: &[u8]) -> String {
    const HIGH: [char; 128] = [
        'Ç', 'ü', 'é', 'â', 'ä', 'à', 'å', 'ç', 'ê', 'ë', 'è', 'ï', 'î', 'ì', 'Ä', 'Å', 'É', 'æ',
        'Æ', 'ô', 'ö', 'ò', 'û', 'ù', 'ÿ', 'Ö', 'Ü', '¢', '£', '¥', '₧', 'ƒ', 'á', 'í', 'ó', 'ú',
        'ñ', 'Ñ', 'ª', 'º', '¿', '⌐', '¬', '½', '¼', '¡', '«', '»', '░', '▒', '▓', '│', '┤', '╡',
        '╢', '╖', '╕', '╣', '║', '╗', '╝', '╜', '╛', '┐', '└', '┴', '┬', '├', '─', '┼', '╞', '╟',
        '╚', '╔', '╩', '╦', '╠', '═', '╬', '╧', '╨', '╤', '╥', '╙', '╘', '╒', '╓', '╫', '╪', '┘',
        '┌', '█', '▄', '▌', '▐', '▀', 'α', 'ß', 'Γ', 'π', 'Σ', 'σ', 'µ', 'τ', 'Φ', 'Θ', 'Ω', 'δ',
        '∞', 'φ', 'ε', '∩', '≡', '±', '≥', '≤', '⌠', '⌡', '÷', '≈', '°', '∙', '·', '√', 'ⁿ', '²',
        '■', '\u{a0}',
    ];
    bytes
        .iter()
        .map(|&b| {
            if b < 0x80 {
                b as char
            } else {
                HIGH[(b - 0x80) as usize]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(name: &str) -> String {
        normalise(name, NameRules::Zip, &Limits::default())
            .unwrap()
            .unwrap()
            .as_str()
            .to_owned()
    }

    fn refused(name: &str, rules: NameRules) -> String {
        normalise(name, rules, &Limits::default()).unwrap_err()
    }

    #[test]
    fn leading_dot_slash_and_repeated_slashes_are_normalised() {
        assert_eq!(ok("./a//b/./c"), "a/b/c");
        assert_eq!(ok("dir/"), "dir");
        assert_eq!(ok("naïve café.txt"), "naïve café.txt");
    }

    #[test]
    fn every_escaping_form_is_refused_with_its_reason() {
        for (name, reason) in [
            ("../x", ".."),
            ("a/../../x", ".."),
            ("a/..", ".."),
            ("/etc/passwd", "absolute"),
            ("\\x", "absolute"),
            ("C:/x", "drive letter"),
            ("c:x", "drive letter"),
            ("a\0b", "NUL"),
            ("", "empty"),
        ] {
            let got = refused(name, NameRules::Tar);
            assert!(got.contains(reason), "{name:?}: {got}");
        }
        assert!(refused("a\\b", NameRules::Zip).contains("\\"));
        assert!(normalise("a\\b", NameRules::Tar, &Limits::default()).is_ok());
    }

    #[test]
    fn the_root_itself_is_recognised_not_refused() {
        for name in ["./", ".", "./.", ".//", "./././"] {
            for rules in [NameRules::Tar, NameRules::Zip] {
                assert_eq!(
                    normalise(name, rules, &Limits::default()),
                    Ok(None),
                    "{name:?}"
                );
            }
        }
    }

    #[test]
    fn depth_and_length_limits_apply() {
        let limits = Limits {
            max_depth: 3,
            max_name_bytes: 5,
            ..Limits::default()
        };
        assert!(normalise("a/b/c/d", NameRules::Tar, &limits)
            .unwrap_err()
            .contains("deeper"));
        assert!(normalise("abcdef", NameRules::Tar, &limits)
            .unwrap_err()
            .contains("longer"));
    }

    #[test]
    fn symlinks_must_stay_inside_the_tree() {
        let link = |p: &str| {
            normalise(p, NameRules::Tar, &Limits::default())
                .unwrap()
                .unwrap()
        };
        assert!(check_link_target(&link("a/l"), "b").is_ok());
        assert!(check_link_target(&link("a/b/l"), "../c").is_ok());
        assert!(check_link_target(&link("a/l"), "../x").is_ok());
        for (at, target) in [
            ("l", "/etc/passwd"),
            ("l", "../x"),
            ("a/l", "../../x"),
            ("l", "a/../../x"),
            ("l", "sub/"),
            ("l", ""),
        ] {
            assert!(
                check_link_target(&link(at), target).is_err(),
                "{at} -> {target}"
            );
        }
    }

    #[test]
    fn cp437_names_decode() {
        assert_eq!(decode_cp437(b"caf\x82.txt"), "café.txt");
        assert_eq!(decode_cp437(b"\x8e"), "Ä");
    }
}
