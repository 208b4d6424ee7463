//! The page tables a kernel reads (CONTRACT.md, "Page tables for kernels"): what an engine
//! builds from its block tables for FlashInfer-style kernels, exported by the cache itself.
//!
//! - [`PagedKVCache::page_table`]: `(indptr, indices, last_page_len)` for a batch of sequences and one
//!   layer, pages of P positions (P divides B; manager block b is kernel pages b * (B / P) ..).
//!   A sequence's pages are those of the positions `gather` shows: from the page of the first shown
//!   position to the page of its layer's last one, so a window's released entries never appear.
//! - [`PagedKVCache::slot_mapping`]: where an append writes positions start .. start + count - 1,
//!   `block * B + slot` (-1 for a position whose entry the window released).
//! - [`PagedKVCache::kv_pages`]: pages of the layer's K and V pool in HND, `[pages, H, P, D]`: a copy,
//!   since this port's pool is laid out `[N * B][H][D]` a layer (pool.rs).
//!
//! Errors in the contract's order, nothing changed: closed, then the ids (each in turn: not live,
//! then repeated), then the layer, then the page size, then the call's own ranges.

use super::{PagedKVCache, SeqId};
use crate::error::{invalid, CacheError};

/// What `page_table` exports, FlashInfer's three int32 arrays for a batch of n sequences.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageTable {
    /// n + 1 offsets into `indices`: sequence i's pages are `indices[indptr[i] .. indptr[i + 1]]`.
    pub indptr: Vec<i32>,
    /// Kernel page numbers, each sequence's in position order.
    pub indices: Vec<i32>,
    /// Positions of each sequence's last page, 1 ..= P; 0 only for a sequence with no page.
    pub last_page_len: Vec<i32>,
}

impl PagedKVCache {
    /// The pages of `layer` holding each sequence's shown positions, pages of `page_size` positions.
    pub fn page_table(&self, seq_ids: &[SeqId], layer: i64, page_size: i64) -> Result<PageTable, CacheError> {
        self.check_open()?;
        for (i, id) in seq_ids.iter().enumerate() {
            self.live(*id)?;
            if seq_ids[..i].contains(id) {
                return Err(invalid(format!("sequence {id} is given twice")));
            }
        }
        let layer = self.layer(layer)?;
        let p = self.page_size(page_size)?;
        let per_block = self.pool.block_size / p;
        let g = self.group_of[layer];
        let mut out = PageTable { indptr: vec![0], ..PageTable::default() };
        for id in seq_ids {
            let seq = &self.seqs[id];
            let (len, table) = (seq.lens[layer], &seq.tables[g]);
            let first = self.groups[g].kind.visible_from(len);
            if first < len {
                for q in first / p..=(len - 1) / p {
                    let block = table[q / per_block].expect("a shown position's block is held");
                    out.indices.push((block as usize * per_block + q % per_block) as i32);
                }
                out.last_page_len.push((len - (len - 1) / p * p) as i32);
            } else {
                out.last_page_len.push(0);
            }
            out.indptr.push(out.indices.len() as i32);
        }
        Ok(out)
    }

    /// The flat slots `block * B + slot` of positions start .. start + count - 1 of the layer; -1 for a
    /// position whose table entry the window released.
    pub fn slot_mapping(&self, seq_id: SeqId, layer: i64, start: i64, count: i64) -> Result<Vec<i64>, CacheError> {
        let seq = self.live(seq_id)?;
        let layer = self.layer(layer)?;
        let len = seq.lens[layer];
        let (first, count) = match (usize::try_from(start), usize::try_from(count)) {
            (Ok(first), Ok(count)) if first.checked_add(count).is_some_and(|end| end <= len) => (first, count),
            _ => return Err(invalid(format!("positions {start} .. {start} + {count} - 1 are not of layer {layer}'s {len}"))),
        };
        let (bs, table) = (self.pool.block_size, &seq.tables[self.group_of[layer]]);
        let slot = |pos: usize| table[pos / bs].map_or(-1, |block| (block as usize * bs + pos % bs) as i64);
        Ok((first..first + count).map(slot).collect())
    }

    /// Pages `first` .. `first + count - 1` of the layer's K and V pools, pages of `page_size`
    /// positions, each `[count, H, P, D]` in C order (HND); page g is slots (g % r) * P .. of block g / r.
    pub fn kv_pages(&self, layer: i64, page_size: i64, first: i64, count: i64) -> Result<(Vec<u16>, Vec<u16>), CacheError> {
        self.check_open()?;
        let layer = self.layer(layer)?;
        let p = self.page_size(page_size)?;
        let pages = self.pool.num_blocks * (self.pool.block_size / p);
        let (first, count) = match (usize::try_from(first), usize::try_from(count)) {
            (Ok(first), Ok(count)) if first.checked_add(count).is_some_and(|end| end <= pages) => (first, count),
            _ => return Err(invalid(format!("pages {first} .. {first} + {count} - 1 are not of the pool's {pages}"))),
        };
        Ok(self.pool.pages_hnd(layer, p, first, count))
    }

    /// A page size P: at least 1 and a divisor of B.
    fn page_size(&self, page_size: i64) -> Result<usize, CacheError> {
        let bs = self.pool.block_size;
        match usize::try_from(page_size) {
            Ok(p) if p >= 1 && bs % p == 0 => Ok(p),
            _ => Err(invalid(format!("page_size must divide block_size {bs}, got {page_size}"))),
        }
    }
}
