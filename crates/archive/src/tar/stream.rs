//! A tar stream, member by member: header blocks and their checksums, the headers that only
//! describe the next member (GNU long names and link targets `L`/`K`, pax `x`, and pax globals
//! `g`), sizes, sparse maps, and the data. Every allocation is bounded, whatever the headers
//! claim; the `tar` crate's reader is not used because it reads a long name or a pax header
//! whole into memory however large, and knows neither pax sparse files nor pax globals.

use std::io::{self, Read};

use tar::{GnuExtSparseHeader, Header};

use super::pax::{self, Globals, Records};
use super::sparse::{self, Segment, SparseMap, SparseReader};
use crate::extract::{check_ratio, Extractor, SourceStats};
use crate::{ArchiveError, Limits};

const BLOCK: u64 = 512;

/// Largest GNU long name, long link or pax header accepted. Names are far shorter
/// (`Limits::max_path_bytes`); pax headers also carry times and extended attributes.
pub const MAX_METADATA_BYTES: u64 = 1 << 20;

/// What a member is, from its type flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Directory,
    Symlink,
    HardLink,
    /// Character and block devices and FIFOs (A4).
    Special,
    Unsupported(u8),
}

impl Kind {
    fn of(flag: u8, name: &[u8]) -> Self {
        match flag {
            b'0' | b'7' | b'S' => Kind::File,
            // Pre-POSIX tars mark a directory by its trailing slash alone.
            0 if name.ends_with(b"/") => Kind::Directory,
            0 => Kind::File,
            b'5' => Kind::Directory,
            b'2' => Kind::Symlink,
            b'1' => Kind::HardLink,
            b'3' | b'4' | b'6' => Kind::Special,
            other => Kind::Unsupported(other),
        }
    }
}

/// One member, its metadata headers applied.
pub struct Member {
    /// The name as the archive spells it: pax `path` (or GNU's sparse name), else the GNU long
    /// name, else the header's own fields.
    pub name: Vec<u8>,
    /// The link target of links, by the same precedence.
    pub link: Option<Vec<u8>>,
    pub kind: Kind,
    /// The file's size; for a sparse file, once expanded.
    pub size: u64,
    sparse: Option<Sparse>,
}

enum Sparse {
    /// The map came with the headers (old GNU, pax 0.0 and 0.1).
    Map(SparseMap),
    /// pax 1.0: the map starts the data.
    InData { real_size: u64 },
}

pub struct TarStream<R> {
    inner: R,
    source: SourceStats,
    limits: Limits,
    /// Bytes read from the decompressed stream, for messages.
    offset: u64,
    /// The current member's name, for messages.
    current: String,
    /// Data of the current member not yet read, and the padding after it.
    data_left: u64,
    padding: u64,
    globals: Globals,
}

impl<R: Read> TarStream<R> {
    pub fn new(inner: R, source: SourceStats, limits: Limits) -> Self {
        Self {
            inner,
            source,
            limits,
            offset: 0,
            current: String::new(),
            data_left: 0,
            padding: 0,
            globals: Globals::default(),
        }
    }

    /// The next member, or `None` at the end-of-archive block. What the previous member left
    /// unread is skipped first. Global headers count as entries (A6).
    pub fn next_member(
        &mut self,
        extractor: &mut Extractor<'_>,
    ) -> Result<Option<Member>, ArchiveError> {
        self.skip(self.data_left + self.padding)?;
        (self.data_left, self.padding) = (0, 0);
        let mut long_name = None;
        let mut long_link = None;
        let mut local = None;
        loop {
            let at = self.offset;
            let Some(block) = self.read_block()? else {
                return Err(ArchiveError::Archive(
                    "the tar archive ends without its end-of-archive block: it is truncated".into(),
                ));
            };
            if block.iter().all(|b| *b == 0) {
                if long_name.is_some() || long_link.is_some() || local.is_some() {
                    return Err(ArchiveError::Archive(
                        "the tar archive ends after a header describing an entry that never comes"
                            .into(),
                    ));
                }
                return Ok(None);
            }
            if !checksum_ok(&block) {
                return Err(ArchiveError::Archive(format!(
                    "the tar header at byte {at} fails its checksum: the archive is corrupted"
                )));
            }
            let header = Header::from_byte_slice(&block);
            let header_name = String::from_utf8_lossy(&header.path_bytes()).into_owned();
            // The raw byte: the `tar` crate reads a v7 `\0` as `0`.
            let flag = block[156];
            if !matches!(flag, b'L' | b'K' | b'x' | b'X' | b'g') {
                return self
                    .member(header, flag, long_name, long_link, local.as_ref())
                    .map(Some);
            }
            let size = header_size(header, &header_name)?;
            let data = self.read_metadata(size, &header_name)?;
            let invalid = |reason: String| ArchiveError::entry(&header_name, reason);
            match flag {
                b'L' => set_once(&mut long_name, trim_nuls(data), &header_name)?,
                b'K' => set_once(&mut long_link, trim_nuls(data), &header_name)?,
                b'g' => {
                    extractor.count_entry(&header_name)?;
                    self.globals.apply(&Records::parse(&data).map_err(invalid)?);
                }
                // `X`: Solaris' name for `x`.
                _ => set_once(
                    &mut local,
                    Records::parse(&data).map_err(invalid)?,
                    &header_name,
                )?,
            }
        }
    }

    fn member(
        &mut self,
        header: &Header,
        flag: u8,
        long_name: Option<Vec<u8>>,
        long_link: Option<Vec<u8>>,
        local: Option<&Records>,
    ) -> Result<Member, ArchiveError> {
        let sparse_records = local.filter(|l| l.has_prefix("GNU.sparse."));
        let name = match (
            sparse_records.and_then(|l| l.get("GNU.sparse.name")),
            self.globals.effective(local, "path"),
        ) {
            (Some(path), _) | (None, Some(path)) => path.to_vec(),
            (None, None) => long_name.unwrap_or_else(|| header.path_bytes().into_owned()),
        };
        let current = String::from_utf8_lossy(&name).into_owned();
        let invalid = |reason: String| ArchiveError::entry(&current, reason);
        let link = match self.globals.effective(local, "linkpath") {
            Some(path) => Some(path.to_vec()),
            None => long_link.or_else(|| header.link_name_bytes().map(|l| l.into_owned())),
        };
        // A pax size overrides the header's field, which need not even parse then.
        let stored = match self.globals.effective(local, "size") {
            Some(size) => pax::number(size, "size").map_err(invalid)?,
            None => header_size(header, &current)?,
        };
        let padding = stored
            .checked_next_multiple_of(BLOCK)
            .ok_or_else(|| invalid("the size field is out of range".into()))?
            - stored;
        let kind = Kind::of(flag, &name);
        let sparse = if flag == b'S' {
            Some(Sparse::Map(self.gnu_sparse_map(header, stored, &current)?))
        } else if let Some(records) = sparse_records {
            if kind != Kind::File {
                return Err(invalid(
                    "a sparse map on an entry that is not a file".into(),
                ));
            }
            Some(pax_sparse(records, stored).map_err(invalid)?)
        } else {
            None
        };
        let size = match &sparse {
            None => stored,
            Some(Sparse::Map(map)) => map.real_size(),
            Some(Sparse::InData { real_size }) => *real_size,
        };
        (self.current, self.data_left, self.padding) = (current, stored, padding);
        Ok(Member {
            name,
            link,
            kind,
            size,
            sparse,
        })
    }

    /// The map of an old GNU sparse entry: in its header, continued in extension blocks.
    fn gnu_sparse_map(
        &mut self,
        header: &Header,
        stored: u64,
        name: &str,
    ) -> Result<SparseMap, ArchiveError> {
        let invalid = |reason: String| ArchiveError::entry(name, reason);
        let gnu = header
            .as_gnu()
            .ok_or_else(|| invalid("a GNU sparse entry without a GNU header".into()))?;
        let mut segments: Vec<Segment> = Vec::new();
        sparse::push_gnu_slots(&gnu.sparse, &mut segments).map_err(invalid)?;
        let mut extended = gnu.is_extended();
        while extended {
            let block = self
                .read_block()?
                .ok_or_else(|| invalid("the sparse map is cut short".into()))?;
            let mut ext = GnuExtSparseHeader::new();
            ext.as_mut_bytes().copy_from_slice(&block);
            sparse::push_gnu_slots(ext.sparse(), &mut segments).map_err(invalid)?;
            extended = ext.is_extended();
        }
        let real_size = gnu
            .real_size()
            .map_err(|e| invalid(format!("unreadable real size: {e}")))?;
        SparseMap::new(segments, real_size, stored).map_err(invalid)
    }

    /// The data of the member `next_member` returned, expanded if it is sparse.
    pub fn content(&mut self, member: &mut Member) -> Result<Content<'_, R>, ArchiveError> {
        match member.sparse.take() {
            None => Ok(Content::Plain(Data { stream: self })),
            Some(Sparse::Map(map)) => Ok(Content::Sparse(SparseReader::new(
                Data { stream: self },
                map,
            ))),
            Some(Sparse::InData { real_size }) => {
                let source = self.source.clone();
                let name = self.current.clone();
                let mut data = Data { stream: self };
                let segments =
                    sparse::read_pax_1_0(&mut data).map_err(|e| source.classify_entry(e, &name))?;
                let stored = data.stream.data_left;
                let map = SparseMap::new(segments, real_size, stored)
                    .map_err(|reason| ArchiveError::entry(&name, reason))?;
                Ok(Content::Sparse(SparseReader::new(data, map)))
            }
        }
    }

    /// Read the decoder to its end: that is when a gzip CRC or an xz check is verified, and a
    /// cut stream noticed (A10).
    pub fn finish(mut self) -> Result<(), ArchiveError> {
        self.current = "(after the end of the archive)".into();
        self.discard(u64::MAX)?;
        Ok(())
    }
    /// One header block; `None` at the very end of the stream.
    fn read_block(&mut self) -> Result<Option<[u8; BLOCK as usize]>, ArchiveError> {
        let mut block = [0u8; BLOCK as usize];
        let mut filled = 0;
        while filled < block.len() {
            match self.inner.read(&mut block[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.source.classify(e, "reading the tar archive")),
            }
        }
        self.offset += filled as u64;
        match filled {
            0 => Ok(None),
            512 => Ok(Some(block)),
            _ => Err(ArchiveError::Archive(
                "the tar archive is cut inside a header: it is truncated".into(),
            )),
        }
    }

    /// The data of a metadata header, bounded, and the padding after it.
    fn read_metadata(&mut self, size: u64, header_name: &str) -> Result<Vec<u8>, ArchiveError> {
        if size > MAX_METADATA_BYTES {
            return Err(ArchiveError::entry(
                header_name,
                format!(
                    "a long-name or pax header of {size} bytes (more than {MAX_METADATA_BYTES} \
                     are not accepted)"
                ),
            ));
        }
        let mut data = Vec::with_capacity(size as usize);
        (&mut self.inner)
            .take(size)
            .read_to_end(&mut data)
            .map_err(|e| self.source.classify(e, "reading the tar archive"))?;
        self.offset += data.len() as u64;
        self.current = header_name.to_owned();
        if (data.len() as u64) < size {
            return Err(self.truncated());
        }
        self.skip(size.next_multiple_of(BLOCK) - size)?;
        Ok(data)
    }

    fn skip(&mut self, n: u64) -> Result<(), ArchiveError> {
        if self.discard(n)? < n {
            return Err(self.truncated());
        }
        Ok(())
    }

    /// Read and drop up to `n` bytes; how many there were. Bytes no entry keeps still count
    /// towards the expansion ratio (A6), so a bomb cannot hide in padding, in a directory's
    /// data or after the end-of-archive block.
    fn discard(&mut self, n: u64) -> Result<u64, ArchiveError> {
        let mut buf = [0u8; 64 << 10];
        let mut done = 0;
        while done < n {
            let want = buf
                .len()
                .min(usize::try_from(n - done).unwrap_or(usize::MAX));
            let got = match self.inner.read(&mut buf[..want]) {
                Ok(0) => break,
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.source.classify(e, "reading the tar archive")),
            };
            done += got as u64;
            self.offset += got as u64;
            check_ratio(
                &self.limits,
                self.offset,
                self.source.consumed(),
                &self.current,
            )?;
        }
        Ok(done)
    }

    fn truncated(&self) -> ArchiveError {
        ArchiveError::entry(&self.current, "the archive is cut inside this entry")
    }
}

/// A member's data as stored, ending where the member ends.
pub struct Data<'a, R> {
    stream: &'a mut TarStream<R>,
}

impl<R: Read> Read for Data<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = buf
            .len()
            .min(usize::try_from(self.stream.data_left).unwrap_or(usize::MAX));
        if want == 0 {
            return Ok(0);
        }
        let n = self.stream.inner.read(&mut buf[..want])?;
        self.stream.data_left -= n as u64;
        self.stream.offset += n as u64;
        Ok(n)
    }
}

/// A member's content: its data, or a sparse file's data expanded.
pub enum Content<'a, R> {
    Plain(Data<'a, R>),
    Sparse(SparseReader<Data<'a, R>>),
}

impl<R: Read> Read for Content<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Content::Plain(data) => data.read(buf),
            Content::Sparse(sparse) => sparse.read(buf),
        }
    }
}

/// The sparse layout GNU tar's pax keywords describe (`GNU.sparse.*`, versions 0.0, 0.1, 1.0).
fn pax_sparse(records: &Records, stored: u64) -> Result<Sparse, String> {
    let number = |keyword: &str| {
        let value = records
            .get(keyword)
            .ok_or_else(|| format!("the sparse entry has no {keyword}"))?;
        pax::number(value, keyword)
    };
    match (
        records.get("GNU.sparse.major"),
        records.get("GNU.sparse.minor"),
    ) {
        (Some(b"1"), Some(b"0")) => Ok(Sparse::InData {
            real_size: number("GNU.sparse.realsize")?,
        }),
        (None, None) => {
            let real_size = number("GNU.sparse.size")?;
            let segments = match records.get("GNU.sparse.map") {
                Some(map) => sparse::parse_pax_0_1(map)?,
                None => {
                    // 0.0: an offset record, then a numbytes record, per segment.
                    let offsets: Vec<&[u8]> = records.all("GNU.sparse.offset").collect();
                    let lengths: Vec<&[u8]> = records.all("GNU.sparse.numbytes").collect();
                    if offsets.len() != lengths.len() {
                        return Err("the sparse map has an offset without a length".into());
                    }
                    let numbers = offsets
                        .iter()
                        .zip(&lengths)
                        .flat_map(|(o, l)| [*o, *l])
                        .map(|n| pax::number(n, "sparse map"))
                        .collect::<Result<Vec<u64>, String>>()?;
                    sparse::pairs(&numbers)?
                }
            };
            if records.get("GNU.sparse.numblocks").is_some()
                && number("GNU.sparse.numblocks")? != segments.len() as u64
            {
                return Err("the sparse map's block count does not match its blocks".into());
            }
            Ok(Sparse::Map(SparseMap::new(segments, real_size, stored)?))
        }
        _ => Err("unsupported GNU sparse format version".into()),
    }
}

fn header_size(header: &Header, name: &str) -> Result<u64, ArchiveError> {
    header
        .entry_size()
        .map_err(|e| ArchiveError::entry(name, format!("unreadable size field: {e}")))
}

fn set_once<T>(slot: &mut Option<T>, value: T, header_name: &str) -> Result<(), ArchiveError> {
    if slot.is_some() {
        // Two would leave the entry's name or target to whichever a reader keeps.
        return Err(ArchiveError::entry(
            header_name,
            "two headers of one kind describe the same entry",
        ));
    }
    *slot = Some(value);
    Ok(())
}

fn trim_nuls(mut data: Vec<u8>) -> Vec<u8> {
    while data.last() == Some(&0) {
        data.pop();
    }
    data
}

/// A header block's checksum: the sum of its bytes with the checksum field read as spaces,
/// unsigned as POSIX says, or signed as some historical tars wrote it.
pub fn checksum_ok(block: &[u8; BLOCK as usize]) -> bool {
    let Ok(recorded) = Header::from_byte_slice(block).cksum() else {
        return false;
    };
    let byte = |(i, b): (usize, &u8)| if (148..156).contains(&i) { b' ' } else { *b };
    let unsigned: i64 = block.iter().enumerate().map(|p| i64::from(byte(p))).sum();
    let signed: i64 = block
        .iter()
        .enumerate()
        .map(|p| i64::from(byte(p) as i8))
        .sum();
    i64::from(recorded) == unsigned || i64::from(recorded) == signed
}
