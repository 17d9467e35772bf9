//! pax extended headers (POSIX.1-2001): `x` records describe the next entry, `g` records every
//! entry after them. Neither is an entry of its own (A1).
//!
//! Of the keywords, only those that change what an entry *is* are kept: `path`, `linkpath` and
//! `size` (and, from `x` headers, GNU tar's `GNU.sparse.*`). Times, owners, modes and extended
//! attributes have no place in a UnixFS directory and are ignored, as the format allows.

/// The records of one pax header, in order.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Records(Vec<(String, Vec<u8>)>);

impl Records {
    /// Parse `"<length> <keyword>=<value>\n"` records, `length` counting the whole record. A
    /// value may hold any byte, newlines included: the length, not the newline, ends it.
    pub fn parse(data: &[u8]) -> Result<Self, String> {
        let mut records = Vec::new();
        let mut rest = data;
        // Some writers pad the header's data with NULs.
        while rest.first().is_some_and(|b| *b != 0) {
            let space = rest
                .iter()
                .take(20)
                .position(|b| *b == b' ')
                .ok_or("a pax record does not start with its length")?;
            let len = std::str::from_utf8(&rest[..space])
                .ok()
                .filter(|d| d.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|d| d.parse::<usize>().ok())
                .filter(|len| *len > space + 1 && *len <= rest.len() && rest[len - 1] == b'\n')
                .ok_or("a pax record's length does not match the record")?;
            let record = &rest[space + 1..len - 1];
            let equals = record
                .iter()
                .position(|b| *b == b'=')
                .ok_or("a pax record has no '='")?;
            let keyword =
                std::str::from_utf8(&record[..equals]).map_err(|_| "a pax keyword is not UTF-8")?;
            records.push((keyword.to_owned(), record[equals + 1..].to_vec()));
            rest = &rest[len..];
        }
        if rest.iter().any(|b| *b != 0) {
            return Err("a pax header has bytes after its NUL padding".into());
        }
        Ok(Self(records))
    }

    /// The last value of `keyword` (a later record overrides an earlier one).
    pub fn get(&self, keyword: &str) -> Option<&[u8]> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == keyword)
            .map(|(_, v)| v.as_slice())
    }

    /// Every value of `keyword`, in order.
    pub fn all<'a>(&'a self, keyword: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.0
            .iter()
            .filter(move |(k, _)| k == keyword)
            .map(|(_, v)| v.as_slice())
    }

    pub fn has_prefix(&self, prefix: &str) -> bool {
        self.0.iter().any(|(k, _)| k.starts_with(prefix))
    }
}

/// The keywords that change an entry, as the `g` headers so far set them.
#[derive(Debug, Default)]
pub struct Globals {
    path: Option<Vec<u8>>,
    linkpath: Option<Vec<u8>>,
    size: Option<Vec<u8>>,
}

impl Globals {
    /// Apply a `g` header: a value replaces the previous one, an empty value removes it.
    pub fn apply(&mut self, records: &Records) {
        for (keyword, slot) in [
            ("path", &mut self.path),
            ("linkpath", &mut self.linkpath),
            ("size", &mut self.size),
        ] {
            if let Some(value) = records.get(keyword) {
                *slot = (!value.is_empty()).then(|| value.to_vec());
            }
        }
    }

    /// The value in force for the next entry: its own `x` header's, else the global one. An
    /// empty `x` value means the header block's own field.
    pub fn effective<'a>(&'a self, local: Option<&'a Records>, keyword: &str) -> Option<&'a [u8]> {
        if let Some(value) = local.and_then(|l| l.get(keyword)) {
            return (!value.is_empty()).then_some(value);
        }
        match keyword {
            "path" => self.path.as_deref(),
            "linkpath" => self.linkpath.as_deref(),
            "size" => self.size.as_deref(),
            _ => None,
        }
    }
}

/// A pax decimal number (`size`, and GNU's sparse keywords).
pub fn number(value: &[u8], keyword: &str) -> Result<u64, String> {
    std::str::from_utf8(value)
        .ok()
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|d| d.parse().ok())
        .ok_or_else(|| format!("the pax {keyword} is not a number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_delimited_by_their_length_not_by_newlines() {
        let records = Records::parse(b"30 mtime=1795430724.135461832\n16 path=a\nb.txt\n").unwrap();
        assert_eq!(records.get("path"), Some(&b"a\nb.txt"[..]));
        assert_eq!(records.get("mtime"), Some(&b"1795430724.135461832"[..]));
        // Padding with NULs is allowed; anything after it is not.
        assert!(Records::parse(b"9 path=a\n\0\0\0").is_ok());
        assert!(Records::parse(b"9 path=a\n\0\0x").is_err());
        for bad in [
            &b"9 path=a"[..],
            b"11 path=a\n",
            b"8 path=a\n",
            b"x path=a\n",
            b"9 patha\n\n",
            b"-9 path=a\n",
        ] {
            assert!(Records::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn local_values_override_globals_and_empty_values_remove_them() {
        let mut globals = Globals::default();
        globals.apply(
            &Records::parse(b"13 path=glob\n52 comment=b7f3a4b1dbfcb0ba0a3a1ee4c0d1e0a2c2c2c4c5\n")
                .unwrap(),
        );
        assert_eq!(globals.effective(None, "path"), Some(&b"glob"[..]));
        let local = Records::parse(b"14 path=local\n").unwrap();
        assert_eq!(globals.effective(Some(&local), "path"), Some(&b"local"[..]));
        let empty = Records::parse(b"8 path=\n").unwrap();
        assert_eq!(globals.effective(Some(&empty), "path"), None);
        globals.apply(&empty);
        assert_eq!(globals.effective(None, "path"), None);
        assert_eq!(globals.effective(None, "comment"), None);
    }
}
