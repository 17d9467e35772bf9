//! A temporary block store: blocks appended to an unnamed temp file, indexed in memory.
//!
//! A CAR's header names the root, which is known only after the import, and the CAR should list
//! blocks root-first (DFS), the reverse of the order an importer produces them. So `cairn car`
//! imports into a spill file first, then walks the DAG from the root into the CAR. The index
//! holds one entry per distinct block (about 100 bytes), not the content.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;

use cairn_unixfs::{BlockBytes, BlockSink, BlockSource, Cid};

pub struct SpillStore {
    file: BufWriter<File>,
    index: HashMap<Cid, (u64, usize)>,
    end: u64,
}

impl SpillStore {
    /// A store in an unnamed file under the system temp directory, removed when dropped.
    pub fn new() -> io::Result<Self> {
        Ok(Self {
            file: BufWriter::with_capacity(1 << 20, tempfile::tempfile()?),
            index: HashMap::new(),
            end: 0,
        })
    }
}

impl BlockSink for SpillStore {
    fn put_block(&mut self, cid: &Cid, block: BlockBytes<'_>) -> io::Result<()> {
        if self.index.contains_key(cid) {
            return Ok(());
        }
        block.write_to(&mut self.file)?;
        self.index.insert(*cid, (self.end, block.len()));
        self.end += block.len() as u64;
        Ok(())
    }
}

impl BlockSource for SpillStore {
    fn get_block(&mut self, cid: &Cid) -> io::Result<Option<Vec<u8>>> {
        let Some(&(offset, len)) = self.index.get(cid) else {
            return Ok(None);
        };
        self.file.flush()?;
        let mut block = vec![0; len];
        self.file.get_ref().read_exact_at(&mut block, offset)?;
        Ok(Some(block))
    }
}
