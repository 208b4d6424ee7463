//! The memory: one K pool and one V pool of float16 bits, what an append hands in ([`Chunk`]),
//! what `gather` hands back ([`Gathered`]), and where a position lives ([`locate`]).
//!
//! Apart from the cache's rules (cache.rs) because it is the one part of the port about layout,
//! not the contract: the part an engine has its own kernels' pools for. No contract check is
//! here; the cache makes them all before it calls in.

use std::alloc::{self, Layout};

use crate::allocator::BlockId;
use crate::error::CacheError;

/// `n` zeroed float16 bit patterns, or `OutOfMemory` when the allocator refuses them.
///
/// `alloc_zeroed` is what `vec![0; n]` calls (the OS maps the pages lazily, so a huge, mostly
/// unused pool costs address space, not memory), but a refusal comes back as a null pointer
/// instead of aborting the process, so that the driver answers `out_of_memory` and goes on.
/// (`Vec::try_reserve_exact` then `resize` would write every page.)
fn zeroed(n: usize, bytes: u64) -> Result<Vec<u16>, CacheError> {
    let layout = Layout::array::<u16>(n).map_err(|_| CacheError::OutOfMemory(Some(bytes)))?;
    if layout.size() == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: the layout's size is not zero. A non-null pointer from `alloc_zeroed` is an
    // allocation by the global allocator with the layout of `[u16; n]`, every value a valid
    // (zero) `u16`: exactly what `Vec::from_raw_parts` takes ownership of, length and capacity n.
    unsafe {
        let ptr = alloc::alloc_zeroed(layout).cast::<u16>();
        if ptr.is_null() {
            return Err(CacheError::OutOfMemory(Some(bytes)));
        }
        Ok(Vec::from_raw_parts(ptr, n, n))
    }
}

/// k or v as handed to `append`: a shape of any rank (the cache checks that it is
/// `[H, T, D]`) and its float16 bit patterns in C order (head, position, dimension).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    shape: Vec<usize>,
    data: Vec<u16>,
}

impl Chunk {
    /// `None` unless `data` holds exactly as many values as the shape's product (1 when 0-D).
    pub fn new(shape: Vec<usize>, data: Vec<u16>) -> Option<Chunk> {
        let count = shape.iter().try_fold(1usize, |n, &dim| n.checked_mul(dim))?;
        (count == data.len()).then_some(Chunk { shape, data })
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
}

/// What `gather` returns: K and V, each `[H, len, D]` in C order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gathered {
    pub len: usize,
    pub k: Vec<u16>,
    pub v: Vec<u16>,
}

/// The memory: one K pool and one V pool of float16 bits, each laid out `[L][N * B][H][D]`.
///
/// Row `block * B + slot` of a layer is one position: its H * D values are contiguous, so a
/// block of one layer is a contiguous `[B][H][D]` slab (vLLM's flash-attention layout) and a
/// copy on write is one `copy_within` per layer. All index arithmetic is `usize`: a pool of
/// 257 blocks of 2^24 positions already has row numbers past `u32::MAX`.
#[derive(Debug)]
pub(crate) struct Pool {
    pub(crate) num_blocks: usize,
    pub(crate) block_size: usize,
    pub(crate) n_layers: usize,
    pub(crate) n_kv_heads: usize,
    pub(crate) d_head: usize,
    k: Vec<u16>,
    v: Vec<u16>,
}

impl Pool {
    /// Both pools, zeroed, for the sizes N, B, L, H, D (each at least 1): K and V need
    /// 4 * N * B * L * H * D bytes, `OutOfMemory` at 2^63 or more without trying, and when the
    /// allocator refuses ([`zeroed`]).
    pub(crate) fn new(sizes: [usize; 5]) -> Result<Pool, CacheError> {
        // Values a pool, and bytes both pools: 2 bytes a value, 2 pools.
        let values = sizes.iter().try_fold(1u64, |n, &s| n.checked_mul(s as u64));
        let bytes = values.and_then(|n| n.checked_mul(4));
        let (Some(values), Some(bytes)) = (values, bytes.filter(|&b| b < 1 << 63)) else {
            return Err(CacheError::OutOfMemory(bytes));
        };
        let values = usize::try_from(values).map_err(|_| CacheError::OutOfMemory(Some(bytes)))?;
        let [num_blocks, block_size, n_layers, n_kv_heads, d_head] = sizes;
        let (k, v) = (zeroed(values, bytes)?, zeroed(values, bytes)?);
        Ok(Pool { num_blocks, block_size, n_layers, n_kv_heads, d_head, k, v })
    }

    /// Let go of both pools' memory (`close`).
    pub(crate) fn release(&mut self) {
        self.k = Vec::new();
        self.v = Vec::new();
    }

    /// The flat position index of slot `slot` of block `block`: its row among a layer's N * B.
    fn row(&self, block: BlockId, slot: usize) -> usize {
        block as usize * self.block_size + slot
    }

    /// Where the D values of `head` at row `row` of `layer` start, in either pool.
    fn offset(&self, layer: usize, row: usize, head: usize) -> usize {
        ((layer * self.num_blocks * self.block_size + row) * self.n_kv_heads + head) * self.d_head
    }

    /// Copy on write: every layer's K and V of block `from` into block `to`.
    pub(crate) fn copy_block(&mut self, from: BlockId, to: BlockId) {
        let width = self.block_size * self.n_kv_heads * self.d_head;
        for layer in 0..self.n_layers {
            let (src, dst) = (self.offset(layer, self.row(from, 0), 0), self.offset(layer, self.row(to, 0), 0));
            self.k.copy_within(src..src + width, dst);
            self.v.copy_within(src..src + width, dst);
        }
    }

    /// Store k, v `[H, T, D]` at positions start .. start+T-1 of `layer`; the table already
    /// holds a private block for every one of them.
    pub(crate) fn write(&mut self, table: &[Entry], layer: usize, start: usize, k: &Chunk, v: &Chunk) {
        let (bs, d, tokens) = (self.block_size, self.d_head, k.shape[1]);
        for t in 0..tokens {
            let (block, slot) = locate(table, start + t, bs);
            let row = self.row(block, slot);
            for h in 0..self.n_kv_heads {
                let src = (h * tokens + t) * d;
                let dst = self.offset(layer, row, h);
                self.k[dst..dst + d].copy_from_slice(&k.data[src..src + d]);
                self.v[dst..dst + d].copy_from_slice(&v.data[src..src + d]);
            }
        }
    }

    /// New K and V arrays `[H, len, D]` of positions `first` .. `first + len - 1` of `layer`.
    pub(crate) fn read(&self, table: &[Entry], layer: usize, first: usize, len: usize) -> Gathered {
        let (bs, d) = (self.block_size, self.d_head);
        let mut k = vec![0u16; self.n_kv_heads * len * d];
        let mut v = vec![0u16; self.n_kv_heads * len * d];
        for (i, pos) in (first..first + len).enumerate() {
            let (block, slot) = locate(table, pos, bs);
            let row = self.row(block, slot);
            for h in 0..self.n_kv_heads {
                let src = self.offset(layer, row, h);
                let dst = (h * len + i) * d;
                k[dst..dst + d].copy_from_slice(&self.k[src..src + d]);
                v[dst..dst + d].copy_from_slice(&self.v[src..src + d]);
            }
        }
        Gathered { len, k, v }
    }

    /// Pages `first` .. `first + count - 1` of `layer`'s K and V, pages of `p` positions, each array
    /// `[count, H, p, D]` (HND, a kernel's layout): page g is slots (g % r) * p .. of block g / r, r = B / p.
    /// A copy: rows here are `[B][H][D]` a block (NHD), so a page's head is not contiguous.
    pub(crate) fn pages_hnd(&self, layer: usize, p: usize, first: usize, count: usize) -> (Vec<u16>, Vec<u16>) {
        let (heads, d, per_block) = (self.n_kv_heads, self.d_head, self.block_size / p);
        let mut k = vec![0u16; count * heads * p * d];
        let mut v = vec![0u16; count * heads * p * d];
        for (i, page) in (first..first + count).enumerate() {
            let block = (page / per_block) as BlockId;
            for slot in 0..p {
                let row = self.row(block, page % per_block * p + slot);
                for h in 0..heads {
                    let (src, dst) = (self.offset(layer, row, h), ((i * heads + h) * p + slot) * d);
                    k[dst..dst + d].copy_from_slice(&self.k[src..src + d]);
                    v[dst..dst + d].copy_from_slice(&self.v[src..src + d]);
                }
            }
        }
        (k, v)
    }
}

/// A block table's entry: a block, or `None` once the sliding window released it (-1 in
/// `block_table` on the wire). Without the window every entry is a block.
pub type Entry = Option<BlockId>;

/// Where position `pos` lives: slot `pos % B` of the block of table entry `pos / B`. Every read
/// and write finds its positions here. Neither ever reaches a released entry: a write starts
/// at its layer's length and a read at its window's start, both past every released block.
pub(crate) fn locate(table: &[Entry], pos: usize, block_size: usize) -> (BlockId, usize) {
    (held(table, pos / block_size), pos % block_size)
}

/// The block of table entry `i`, which the caller knows the window has not released.
pub(crate) fn held(table: &[Entry], i: usize) -> BlockId {
    table[i].expect("a released entry is read, written, copied or registered")
}
