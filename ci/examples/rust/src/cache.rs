//! `PagedKVCache`: fixed-size float16 blocks, a block table per sequence, copy on write.
//!
//! The behaviour is CONTRACT.md's, call by call, and the checks run in the Python
//! reference's order (paged/cache.py, paged/checks.py): closed first, then the sequence id,
//! then the layer, then k and v, then the declared tokens, then capacity (CONTRACT.md, "Which
//! error wins"). Every error is returned before anything changes.
//!
//! Values are float16 bit patterns (`u16`): the caller has already rounded them, so the
//! cache only moves bits, and NaN payloads and -0.0 come back as they went in.
//!
//! The public calls take integers as the contract's callers give them (`i64`, negatives
//! included), so that every contract check lives here and nowhere else.
//!
//! Prefix caching (opt-in, `prefix_caching`): a full block keeps its K and V under its key
//! after its last holder lets go, and a later prompt with the same prefix takes it; the keys
//! live in `PrefixIndex` (prefix.rs), the cached blocks in `BlockAllocator`.
//!
//! Sliding window (opt-in, `sliding_window`): `gather` returns a layer's last W - 1
//! positions, and at the end of every append the sequence lets go of the blocks no layer's
//! window reaches; their table entries become `None` (-1 on the wire). The arithmetic is in
//! `Window` (window.rs); here, [`locate`] maps a position to its block and slot, and
//! [`release_out_of_window`] lets go of the released blocks.
//!
//! Hybrid models (opt-in, `layer_windows`, one window or `None` a layer): the layers with one
//! window form a group (groups.rs, where each kind of layer's rules are), and each group has its
//! own table per sequence and its own keys, over the one pool. Without `layer_windows` there is one
//! group, of every layer. This file coordinates the groups: an append's one capacity check (an
//! append writes one layer, so one group's table takes blocks), the hit every group can serve
//! ([`crate::groups::common_hit`]), and the order `free` lets go of the groups' tables (group 0 first).

use std::alloc::{self, Layout};
use std::collections::HashMap;
use std::fmt;

use crate::allocator::{Allocation, BlockAllocator, BlockId};
use crate::groups::{self, common_hit, index, make_groups, Group, Path};
use crate::prefix::{NodeRef, PrefixIndex, TokenId};
use crate::window::Window;

/// A sequence id: the whole `i64` range (ids that differ are different sequences).
pub type SeqId = i64;

/// The ways a call can fail; each crosses the wire as its kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheError {
    /// An append needs more blocks (copies plus new ones) than it can take: free, plus cached.
    OutOfBlocks { needed: usize, free: usize },
    /// A sequence id that is not live: never added, or freed.
    UnknownSequence(SeqId),
    /// Reused ids, layers out of range, bad shapes, T = 0, sizes below 1 (or `num_blocks` past
    /// 2^31 - 1), calls after close.
    InvalidArgument(String),
    /// The constructor's pools need this many bytes (None: more than a `u64` counts), and the
    /// memory is not to be had.
    OutOfMemory(Option<u64>),
}

impl fmt::Display for CacheError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CacheError::OutOfBlocks { needed, free } => write!(f, "the append needs {needed} blocks, {free} free"),
            CacheError::UnknownSequence(id) => write!(f, "sequence {id} is not live"),
            CacheError::InvalidArgument(message) => f.write_str(message),
            CacheError::OutOfMemory(Some(bytes)) => write!(f, "the pools need {bytes} bytes, which cannot be allocated"),
            CacheError::OutOfMemory(None) => f.write_str("the pools need 2^64 bytes or more"),
        }
    }
}

impl std::error::Error for CacheError {}

fn invalid(message: impl Into<String>) -> CacheError {
    CacheError::InvalidArgument(message.into())
}

/// The most blocks a cache has: block ids are the `int32` of the contract's `block_table`.
pub const MAX_BLOCKS: i64 = i32::MAX as i64;

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

/// Block counts; `free + used + cached == num_blocks`: free (no holder, no key), used (a
/// holder), cached (no holder, a key; always 0 without prefix caching), and the cached blocks
/// evicted since the cache was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    pub free: usize,
    pub used: usize,
    pub cached: usize,
    pub evictions: u64,
}

/// The memory: one K pool and one V pool of float16 bits, each laid out `[L][N * B][H][D]`.
///
/// Row `block * B + slot` of a layer is one position: its H * D values are contiguous, so a
/// block of one layer is a contiguous `[B][H][D]` slab (vLLM's flash-attention layout) and a
/// copy on write is one `copy_within` per layer. All index arithmetic is `usize`: a pool of
/// 257 blocks of 2^24 positions already has row numbers past `u32::MAX`.
#[derive(Debug)]
struct Pool {
    num_blocks: usize,
    block_size: usize,
    n_layers: usize,
    n_kv_heads: usize,
    d_head: usize,
    k: Vec<u16>,
    v: Vec<u16>,
}

impl Pool {
    /// The flat position index of slot `slot` of block `block`: its row among a layer's N * B.
    fn row(&self, block: BlockId, slot: usize) -> usize {
        block as usize * self.block_size + slot
    }

    /// Where the D values of `head` at row `row` of `layer` start, in either pool.
    fn offset(&self, layer: usize, row: usize, head: usize) -> usize {
        ((layer * self.num_blocks * self.block_size + row) * self.n_kv_heads + head) * self.d_head
    }

    /// Copy on write: every layer's K and V of block `from` into block `to`.
    fn copy_block(&mut self, from: BlockId, to: BlockId) {
        let width = self.block_size * self.n_kv_heads * self.d_head;
        for layer in 0..self.n_layers {
            let (src, dst) = (self.offset(layer, self.row(from, 0), 0), self.offset(layer, self.row(to, 0), 0));
            self.k.copy_within(src..src + width, dst);
            self.v.copy_within(src..src + width, dst);
        }
    }

    /// Store k, v `[H, T, D]` at positions start .. start+T-1 of `layer`; the table already
    /// holds a private block for every one of them.
    fn write(&mut self, table: &[Entry], layer: usize, start: usize, k: &Chunk, v: &Chunk) {
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
    fn read(&self, table: &[Entry], layer: usize, first: usize, len: usize) -> Gathered {
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
}

/// A block table's entry: a block, or `None` once the sliding window released it (-1 in
/// `block_table` on the wire). Without the window every entry is a block.
pub type Entry = Option<BlockId>;

/// Where position `pos` lives: slot `pos % B` of the block of table entry `pos / B`. Every read
/// and write finds its positions here. Neither ever reaches a released entry: a write starts
/// at its layer's length and a read at its window's start, both past every released block.
fn locate(table: &[Entry], pos: usize, block_size: usize) -> (BlockId, usize) {
    (held(table, pos / block_size), pos % block_size)
}

/// The block of table entry `i`, which the caller knows the window has not released.
fn held(table: &[Entry], i: usize) -> BlockId {
    table[i].expect("a released entry is read, written, copied or registered")
}

/// A live sequence: one block table per group (position p of a layer is in slot p % B of entry
/// p / B of its group's table) and one length per layer; with prefix caching, the token ids it
/// has declared and, per group, the prefix nodes of its full blocks (one per full block, in
/// order, released ones included). A group's table holds exactly ceil(max length of the group's
/// layers / B) entries; with a window, its released entries are `None`.
#[derive(Clone, Debug)]
struct Seq {
    tables: Vec<Vec<Entry>>,
    lens: Vec<usize>,
    tokens: Vec<TokenId>,
    nodes: Vec<Vec<NodeRef>>,
}

/// The constructor's options beyond the geometry; the default is none of them, under this
/// port's profile (`allocation=any`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// CONTRACT.md's prefix caching.
    pub prefix_caching: bool,
    /// CONTRACT.md's sliding window of W positions, 2 .. 2^31 - 1 (`None`: off), every layer's.
    pub sliding_window: Option<i64>,
    /// CONTRACT.md's hybrid models: each layer's window, `None` for full attention (`None`: off).
    pub layer_windows: Option<Vec<Option<i64>>>,
    /// Which free block an allocation takes.
    pub allocation: Allocation,
}

/// A paged float16 KV cache; see CONTRACT.md for what every call does.
///
/// With prefix caching, a block of group g is registered (has a key in the group's index) only
/// once every layer of group g of a sequence filled it, and is never written again; a registered
/// block with no holder is cached. `seq.nodes[g][i]` is the prefix node of full block i of group g
/// (`seq.nodes[g].len()` is min(lens of the group's layers) / B), and an append never runs past
/// `seq.tokens`. Off, no group has an index and none of it runs. A block is in the tables of one
/// group at a time.
#[derive(Debug)]
pub struct PagedKVCache {
    pool: Pool,
    groups: Vec<Group>,
    /// Layer -> the index of its group.
    group_of: Vec<usize>,
    prefix_caching: bool,
    alloc: BlockAllocator,
    seqs: HashMap<SeqId, Seq>,
    closed: bool,
}

impl PagedKVCache {
    /// A cache of `num_blocks` blocks of `block_size` positions, each holding `n_layers`
    /// layers of `n_kv_heads` heads of `d_head` float16 values, K and V; `prefix_caching`
    /// turns on CONTRACT.md's prefix caching. Free blocks are taken as this port's profile
    /// says, `allocation=any` (the block released last).
    pub fn new(
        num_blocks: i64,
        block_size: i64,
        n_layers: i64,
        n_kv_heads: i64,
        d_head: i64,
        prefix_caching: bool,
    ) -> Result<Self, CacheError> {
        Self::with_allocation(num_blocks, block_size, n_layers, n_kv_heads, d_head, prefix_caching, Allocation::Any)
    }

    /// As [`PagedKVCache::new`], with free blocks taken as `allocation` says:
    /// `Allocation::LowestFree` gives the reference's tables exactly.
    pub fn with_allocation(
        num_blocks: i64,
        block_size: i64,
        n_layers: i64,
        n_kv_heads: i64,
        d_head: i64,
        prefix_caching: bool,
        allocation: Allocation,
    ) -> Result<Self, CacheError> {
        let options = Options { prefix_caching, allocation, ..Options::default() };
        Self::with_options(num_blocks, block_size, n_layers, n_kv_heads, d_head, options)
    }

    /// A cache with every option of [`Options`]: prefix caching, the sliding window, the
    /// layers' windows, the allocation profile.
    ///
    /// The sizes are checked argument by argument (each at least 1, `num_blocks` at most
    /// 2^31 - 1), then the window (2 .. 2^31 - 1), then the layers' windows ([`layer_windows`]).
    /// The pools are allocated zeroed ([`zeroed`]):
    /// K and V need 4 * N * B * L * H * D bytes, `OutOfMemory` at 2^63 or more without trying,
    /// and when the allocator refuses.
    pub fn with_options(
        num_blocks: i64,
        block_size: i64,
        n_layers: i64,
        n_kv_heads: i64,
        d_head: i64,
        options: Options,
    ) -> Result<Self, CacheError> {
        let Options { prefix_caching, sliding_window, layer_windows, allocation } = options;
        let size = |value: i64, what: &str| -> Result<usize, CacheError> {
            if value < 1 {
                return Err(invalid(format!("{what} must be at least 1, got {value}")));
            }
            if what == "num_blocks" && value > MAX_BLOCKS {
                return Err(invalid(format!("num_blocks must be at most 2^31 - 1 (block ids are int32), got {value}")));
            }
            usize::try_from(value).map_err(|_| CacheError::OutOfMemory(u64::try_from(value).ok()))
        };
        let sizes = [
            size(num_blocks, "num_blocks")?,
            size(block_size, "block_size")?,
            size(n_layers, "n_layers")?,
            size(n_kv_heads, "n_kv_heads")?,
            size(d_head, "d_head")?,
        ];
        let window = sliding_window.map(Window::new).transpose()?;
        let given = layer_windows.map(|given| groups::layer_windows(&given, window, sizes[2])).transpose()?;
        // Values a pool, and bytes both pools: 2 bytes a value, 2 pools.
        let values = sizes.iter().try_fold(1u64, |n, &s| n.checked_mul(s as u64));
        let bytes = values.and_then(|n| n.checked_mul(4));
        let (Some(values), Some(bytes)) = (values, bytes.filter(|&b| b < 1 << 63)) else {
            return Err(CacheError::OutOfMemory(bytes));
        };
        let values = usize::try_from(values).map_err(|_| CacheError::OutOfMemory(Some(bytes)))?;
        let [num_blocks, block_size, n_layers, n_kv_heads, d_head] = sizes;
        let (k, v) = (zeroed(values, bytes)?, zeroed(values, bytes)?);
        // Every layer's window: as given, or `sliding_window`'s (None: full attention). Made after
        // the memory check: L is bounded by the pool's size only then.
        let windows = given.unwrap_or_else(|| vec![window; n_layers]);
        let groups = make_groups(&windows, block_size, prefix_caching);
        let mut group_of = vec![0; n_layers];
        for (g, group) in groups.iter().enumerate() {
            for &layer in &group.layers {
                group_of[layer] = g;
            }
        }
        Ok(PagedKVCache {
            pool: Pool { num_blocks, block_size, n_layers, n_kv_heads, d_head, k, v },
            groups,
            group_of,
            prefix_caching,
            alloc: BlockAllocator::new(num_blocks, allocation),
            seqs: HashMap::new(),
            closed: false,
        })
    }

    // -- lifecycle -------------------------------------------------------------------------

    /// Release the pools. A second close does nothing; every other call afterwards is
    /// `InvalidArgument`.
    pub fn close(&mut self) {
        self.closed = true;
        self.pool.k = Vec::new();
        self.pool.v = Vec::new();
        self.groups = Vec::new();
        self.alloc = BlockAllocator::new(0, Allocation::Any);
        self.seqs = HashMap::new();
    }

    // -- sequences -------------------------------------------------------------------------

    /// Start a new sequence whose prompt has these token ids; return the positions served
    /// from the cache.
    ///
    /// With prefix caching, the prompt is served k full blocks (ending before its last token)
    /// for the largest k that every group can serve ([`common_hit`]); each group's table is then
    /// filled for that k as its kind says: full attention, the k blocks; a window, only the
    /// blocks of the served positions' window, the entries before them released (`None`). Each
    /// block taken gains a holder, and every layer's length is k * B. Off, the tokens are
    /// checked and nothing is served.
    pub fn add_seq(&mut self, seq_id: SeqId, tokens: &[i64]) -> Result<usize, CacheError> {
        self.check_open()?;
        if self.seqs.contains_key(&seq_id) {
            return Err(invalid(format!("sequence {seq_id} is already live")));
        }
        let ids = as_tokens(tokens)?;
        let (n_layers, n_groups) = (self.pool.n_layers, self.groups.len());
        if !self.prefix_caching {
            let tables = vec![Vec::new(); n_groups];
            let empty = Seq { tables, lens: vec![0; n_layers], tokens: Vec::new(), nodes: vec![Vec::new(); n_groups] };
            self.seqs.insert(seq_id, empty);
            return Ok(0);
        }
        let bs = self.pool.block_size;
        let paths: Vec<Path> = self.groups.iter().map(|group| index(group).walk(&ids)).collect();
        let blocks = common_hit(&self.groups, &paths, (ids.len().saturating_sub(1)) / bs, bs);
        let served = blocks * bs;
        let (mut tables, mut nodes) = (Vec::with_capacity(n_groups), Vec::with_capacity(n_groups));
        for (group, path) in self.groups.iter().zip(&paths) {
            let released = group.kind.released_before(served, bs);
            let mut table = Vec::with_capacity(blocks);
            for (i, &(_, block)) in path[..blocks].iter().enumerate() {
                if i < released {
                    table.push(None);
                    continue;
                }
                let block = block.expect("a hit serves registered keys");
                self.alloc.acquire(block);
                table.push(Some(block));
            }
            tables.push(table);
            nodes.push(path[..blocks].iter().map(|&(node, _)| node).collect());
        }
        self.seqs.insert(seq_id, Seq { tables, lens: vec![served; n_layers], tokens: ids, nodes });
        Ok(served)
    }

    /// Declare the token ids of the sequence's next positions (a decode step declares its
    /// one token).
    pub fn extend(&mut self, seq_id: SeqId, tokens: &[i64]) -> Result<(), CacheError> {
        self.live(seq_id)?;
        let ids = as_tokens(tokens)?;
        if self.prefix_caching {
            self.seqs.get_mut(&seq_id).expect("checked live above").tokens.extend(ids);
        }
        Ok(())
    }

    /// Give `child` the parent's tables and lengths (and declared tokens), released entries
    /// included; every block gains a holder, none is allocated.
    pub fn fork(&mut self, parent: SeqId, child: SeqId) -> Result<(), CacheError> {
        let copy = self.live(parent)?.clone();
        if self.seqs.contains_key(&child) {
            return Err(invalid(format!("sequence {child} is already live")));
        }
        for &block in copy.tables.iter().flatten().flatten() {
            self.alloc.incref(block);
        }
        self.seqs.insert(child, copy);
        Ok(())
    }

    /// Drop the sequence, letting go of each group's table in turn, group 0 first, each from its
    /// last entry to its first (the profile's `freeing=by-group`, vLLM's order): each block whose
    /// last holder it was returns to the pool, or, when it has a key, becomes cached. Released
    /// entries hold no block (`flatten` skips them).
    pub fn free(&mut self, seq_id: SeqId) -> Result<(), CacheError> {
        self.check_open()?;
        let seq = self.seqs.remove(&seq_id).ok_or(CacheError::UnknownSequence(seq_id))?;
        for table in &seq.tables {
            for &block in table.iter().rev().flatten() {
                let_go(&mut self.alloc, &self.groups, block);
            }
        }
        Ok(())
    }

    // -- data ------------------------------------------------------------------------------

    /// Store k, v `[H, T, D]` at positions seq_len .. seq_len+T-1 of `layer`.
    ///
    /// Checks the arguments, then the capacity (copies plus new blocks, all in the table of the
    /// layer's group, counted once against the one pool) before changing anything: it succeeds
    /// whole or fails with the cache as it was. With a window, it ends by letting go of the
    /// group's blocks no window of its layers reaches any more: too late to serve this append,
    /// which counted its blocks without them.
    pub fn append(&mut self, seq_id: SeqId, layer: i64, k: &Chunk, v: &Chunk) -> Result<(), CacheError> {
        self.live(seq_id)?;
        let layer = self.layer(layer)?;
        let tokens = self.chunk_tokens(k, v)?;
        let seq = self.seqs.get_mut(&seq_id).expect("checked live above");
        let (bs, start) = (self.pool.block_size, seq.lens[layer]);
        if self.prefix_caching && start + tokens > seq.tokens.len() {
            return Err(invalid(format!(
                "positions {start} .. {} of layer {layer} need declared token ids; sequence {seq_id} has declared {} \
                 (add_seq's tokens, then extend)",
                start + tokens - 1,
                seq.tokens.len()
            )));
        }
        let g = self.group_of[layer]; // the layer's group: its table takes the blocks
        let table = &mut seq.tables[g];
        // The chunk touches block indices first ..= last of the table.
        let (first, last) = (start / bs, (start + tokens - 1) / bs);

        // Capacity, up front: a copy of each shared block it touches, a new block for each
        // index past the end of the table.
        let shared: Vec<usize> =
            (first..table.len().min(last + 1)).filter(|&i| self.alloc.is_shared(held(table, i))).collect();
        let needed = shared.len() + (last + 1).saturating_sub(table.len());
        if needed > self.alloc.num_free() {
            return Err(CacheError::OutOfBlocks { needed, free: self.alloc.num_free() });
        }

        // Take the blocks in position order: copies (inside the table), then new blocks.
        for i in shared {
            let (old, copy) = (held(table, i), take(&mut self.alloc, &mut self.groups));
            self.pool.copy_block(old, copy);
            self.alloc.unshare(old);
            table[i] = Some(copy);
        }
        while table.len() <= last {
            table.push(Some(take(&mut self.alloc, &mut self.groups)));
        }
        self.pool.write(table, layer, start, k, v);
        seq.lens[layer] = start + tokens;
        // The group's shortest layer decides what is full (registration) and what is released.
        let group = &mut self.groups[g];
        let shortest = group.layers.iter().map(|&l| seq.lens[l]).min().expect("a group has a layer");
        let released = group.kind.released_before(shortest, bs);
        if let Some(index) = &mut group.index {
            let full = shortest / bs;
            register(index, &mut seq.nodes[g], &seq.tokens, &seq.tables[g], full, bs);
        }
        release_out_of_window(&mut seq.tables[g], released, &mut self.alloc, &self.groups);
        Ok(())
    }

    /// New K and V arrays `[H, seq_len, D]` of the layer (`len` 0 when it has no positions);
    /// in a windowed layer, of the layer's own window only: its last W - 1 positions at most.
    pub fn gather(&self, seq_id: SeqId, layer: i64) -> Result<Gathered, CacheError> {
        let seq = self.live(seq_id)?;
        let layer = self.layer(layer)?;
        let g = self.group_of[layer];
        let len = seq.lens[layer];
        let first = self.groups[g].kind.visible_from(len);
        Ok(self.pool.read(&seq.tables[g], layer, first, len - first))
    }

    // -- inspection ------------------------------------------------------------------------

    /// A copy of the block ids of the table of the layer's group, in position order; `None`
    /// for an entry a window released (-1 on the wire). With one group, every layer names the
    /// same table.
    pub fn block_table(&self, seq_id: SeqId, layer: i64) -> Result<Vec<Entry>, CacheError> {
        let seq = self.live(seq_id)?;
        Ok(seq.tables[self.group_of[self.layer(layer)?]].clone())
    }

    /// The number of positions `layer` of the sequence holds.
    pub fn seq_len(&self, seq_id: SeqId, layer: i64) -> Result<usize, CacheError> {
        let seq = self.live(seq_id)?;
        Ok(seq.lens[self.layer(layer)?])
    }

    pub fn stats(&self) -> Result<Stats, CacheError> {
        self.check_open()?;
        let (takeable, cached) = (self.alloc.num_free(), self.alloc.num_cached());
        Ok(Stats {
            free: takeable - cached,
            used: self.pool.num_blocks - takeable,
            cached,
            evictions: self.alloc.evictions(),
        })
    }

    /// The blocks an append can take: free and cached (`stats().free` without prefix caching).
    pub fn num_free_blocks(&self) -> Result<usize, CacheError> {
        self.check_open()?;
        Ok(self.alloc.num_free())
    }

    // -- checks, in the reference's order ----------------------------------------------------

    fn check_open(&self) -> Result<(), CacheError> {
        if self.closed {
            return Err(invalid("the cache is closed"));
        }
        Ok(())
    }

    /// The live sequence `seq_id` (the closed check comes first).
    fn live(&self, seq_id: SeqId) -> Result<&Seq, CacheError> {
        self.check_open()?;
        self.seqs.get(&seq_id).ok_or(CacheError::UnknownSequence(seq_id))
    }

    /// A layer in 0 .. L-1 (negative layers are out of range too).
    fn layer(&self, layer: i64) -> Result<usize, CacheError> {
        let n = self.pool.n_layers;
        match usize::try_from(layer) {
            Ok(li) if li < n => Ok(li),
            _ => Err(invalid(format!("layer {layer} is outside 0 .. {}", n - 1))),
        }
    }

    /// T, when k and v are both `[H, T, D]` of this cache with T >= 1; k is checked before v.
    fn chunk_tokens(&self, k: &Chunk, v: &Chunk) -> Result<usize, CacheError> {
        for (name, chunk) in [("k", k), ("v", v)] {
            if chunk.shape.len() != 3 {
                return Err(invalid(format!(
                    "{name} must be 3-D [n_kv_heads, T, d_head], got shape {:?}",
                    chunk.shape
                )));
            }
        }
        if k.shape != v.shape {
            return Err(invalid(format!("k and v shapes differ: {:?} != {:?}", k.shape, v.shape)));
        }
        let (heads, tokens, dims) = (k.shape[0], k.shape[1], k.shape[2]);
        if heads != self.pool.n_kv_heads || dims != self.pool.d_head {
            let (h, d) = (self.pool.n_kv_heads, self.pool.d_head);
            return Err(invalid(format!("k and v must be [{h}, T, {d}] for this cache, got {:?}", k.shape)));
        }
        if tokens == 0 {
            return Err(invalid("an append needs at least one position (T = 0)"));
        }
        Ok(tokens)
    }
}

/// Token ids: integers >= 0.
fn as_tokens(tokens: &[i64]) -> Result<Vec<TokenId>, CacheError> {
    match tokens.iter().min() {
        Some(&lowest) if lowest < 0 => Err(invalid(format!("token ids must be at least 0, got {lowest}"))),
        _ => Ok(tokens.iter().map(|&t| t as TokenId).collect()),
    }
}

/// Take a block for an append: the allocator's choice; an evicted block's key goes with it,
/// from the group it was registered in.
fn take(alloc: &mut BlockAllocator, groups: &mut [Group]) -> BlockId {
    let (block, evicted) = alloc.allocate();
    if evicted {
        let mut indexes = groups.iter_mut().filter_map(|group| group.index.as_mut());
        let index = indexes.find(|index| index.is_registered(block));
        index.expect("only a registered block is cached").drop(block);
    }
    block
}

/// Let go of one holder of `block` (`free`, or the window's release): its last holder's
/// release makes it free or, registered (in its group), cached.
fn let_go(alloc: &mut BlockAllocator, groups: &[Group], block: BlockId) {
    let registered = groups.iter().filter_map(|group| group.index.as_ref()).any(|index| index.is_registered(block));
    alloc.decref(block, registered);
}

/// The window's release at the end of an append (after its write and its registration): let go
/// of the group's table entries 0 .. `released` (what [`crate::groups::Kind::released_before`]
/// counts from the group's shortest layer; 0 for full attention), from the highest index to the
/// lowest as `free` does; each entry becomes `None`. Entries released before are `None` already.
fn release_out_of_window(table: &mut [Entry], released: usize, alloc: &mut BlockAllocator, groups: &[Group]) {
    for entry in table[..released].iter_mut().rev() {
        if let Some(block) = entry.take() {
            let_go(alloc, groups, block);
        }
    }
}

/// Register the blocks of one group an append made full (from `nodes.len()`, the full blocks
/// before it, to `full`) under their keys in the group's index, the whole prefix of token ids,
/// unless a key already names a block.
fn register(
    index: &mut PrefixIndex,
    nodes: &mut Vec<NodeRef>,
    tokens: &[TokenId],
    table: &[Entry],
    full: usize,
    bs: usize,
) {
    for i in nodes.len()..full {
        let mut parent = if i > 0 { nodes[i - 1] } else { index.root() };
        if index.is_dead(parent) {
            // pruned since (its key was evicted): the path is made again
            *nodes = index.path(tokens, i);
            parent = nodes[i - 1];
        }
        let node = index.child(parent, &tokens[i * bs..(i + 1) * bs]);
        nodes.push(node);
        index.register(node, held(table, i));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk of one position `[1, 1, D]` of one head.
    fn one(values: &[u16]) -> Chunk {
        Chunk::new(vec![1, 1, values.len()], values.to_vec()).unwrap()
    }

    /// A chunk `[1, T, 1]` holding the given values.
    fn column(values: Vec<u16>) -> Chunk {
        Chunk::new(vec![1, values.len(), 1], values).unwrap()
    }

    /// The sequence's table as the wire writes it: -1 for a released entry.
    fn ids(c: &PagedKVCache, seq: SeqId) -> Vec<i64> {
        c.block_table(seq, 0).unwrap().iter().map(|entry| entry.map_or(-1, i64::from)).collect()
    }

    fn counts(c: &PagedKVCache) -> (usize, usize) {
        let s = c.stats().unwrap();
        (s.free, s.used)
    }

    // float16 bits of t + 0.5 and of -t, for t = 0 .. 5: the seed's token t has K = [t + 0.5, -t].
    const HALF: [u16; 6] = [0x3800, 0x3e00, 0x4100, 0x4300, 0x4480, 0x4580];
    const NEG: [u16; 6] = [0x8000, 0xbc00, 0xc000, 0xc200, 0xc400, 0xc500];

    fn token(t: usize) -> (Chunk, Chunk) {
        let k = [HALF[t], NEG[t]];
        (one(&k), one(&[k[0] ^ 0x8000, k[1] ^ 0x8000])) // V = -K: flip the sign bits
    }

    #[test]
    fn the_seeds_worked_example() {
        // B = 2, one layer, one head, D = 2, a pool of 4.
        let mut c = PagedKVCache::new(4, 2, 1, 1, 2, false).unwrap();
        c.add_seq(0, &[]).unwrap();
        let tables: [&[i64]; 5] = [&[0], &[0], &[0, 1], &[0, 1], &[0, 1, 2]];
        let pool = [(3, 1), (3, 1), (2, 2), (2, 2), (1, 3)];
        for t in 0..5 {
            let (k, v) = token(t);
            c.append(0, 0, &k, &v).unwrap();
            assert_eq!(c.seq_len(0, 0).unwrap(), t + 1);
            assert_eq!(ids(&c, 0), tables[t]);
            assert_eq!(counts(&c), pool[t]);
        }
        let g = c.gather(0, 0).unwrap();
        let first_dims: Vec<u16> = g.k.iter().step_by(2).copied().collect();
        assert_eq!((g.len, &first_dims[..]), (5, &HALF[..5]));
        assert_eq!(g.v.iter().zip(&g.k).filter(|(v, k)| **v != **k ^ 0x8000).count(), 0);

        // A fork shares b0, b1, b2 and allocates nothing; the child's sixth token goes into
        // b2 slot 1, so b2 is copied first, to the lowest free block, 3.
        c.fork(0, 1).unwrap();
        assert_eq!((ids(&c, 1), counts(&c)), (vec![0, 1, 2], (1, 3)));
        let (k, v) = token(5);
        c.append(1, 0, &k, &v).unwrap();
        assert_eq!((ids(&c, 1), ids(&c, 0)), (vec![0, 1, 3], vec![0, 1, 2]));
        assert_eq!(counts(&c), (0, 4));
        assert_eq!(c.gather(0, 0).unwrap(), g, "the parent's view is unchanged");
        let child = c.gather(1, 0).unwrap();
        assert_eq!((child.len, &child.k[..10], &child.k[10..]), (6, &g.k[..], &[HALF[5], NEG[5]][..]));

        // Freeing both returns every block.
        c.free(0).unwrap();
        assert_eq!(counts(&c), (1, 3));
        c.free(1).unwrap();
        assert_eq!(counts(&c), (4, 0));
    }

    #[test]
    fn gather_keeps_head_position_dimension_order() {
        // H = 2, D = 3, B = 2: chunks of 3 then 2 positions, values 0, 1, 2, ... in C order.
        let mut c = PagedKVCache::new(4, 2, 1, 2, 3, false).unwrap();
        c.add_seq(0, &[]).unwrap();
        let chunk =
            |t: usize, base: u16| Chunk::new(vec![2, t, 3], (0..6 * t as u16).map(|x| base + x).collect()).unwrap();
        c.append(0, 0, &chunk(3, 0), &chunk(3, 100)).unwrap();
        c.append(0, 0, &chunk(2, 18), &chunk(2, 118)).unwrap();
        let g = c.gather(0, 0).unwrap();
        // Head h, position p, dimension i: the first chunk holds p < 3, the second p >= 3.
        let at = |h: u16, p: u16, i: u16| if p < 3 { (h * 3 + p) * 3 + i } else { 18 + (h * 2 + p - 3) * 3 + i };
        let want: Vec<u16> = (0..2).flat_map(|h| (0..5).flat_map(move |p| (0..3).map(move |i| at(h, p, i)))).collect();
        assert_eq!((g.len, &g.k), (5, &want));
        assert_eq!(g.v, want.iter().map(|x| x + 100).collect::<Vec<_>>());
    }

    #[test]
    fn layers_keep_their_own_lengths() {
        let mut c = PagedKVCache::new(4, 2, 2, 1, 1, false).unwrap();
        c.add_seq(0, &[]).unwrap();
        c.append(0, 0, &column(vec![1, 2, 3]), &column(vec![4, 5, 6])).unwrap();
        assert_eq!((c.seq_len(0, 0).unwrap(), c.seq_len(0, 1).unwrap()), (3, 0));
        assert_eq!(c.gather(0, 1).unwrap(), Gathered { len: 0, k: vec![], v: vec![] });
        c.append(0, 1, &column(vec![7]), &column(vec![8])).unwrap();
        assert_eq!(ids(&c, 0), vec![0, 1], "the longest layer sizes the table");
        assert_eq!(c.gather(0, 1).unwrap(), Gathered { len: 1, k: vec![7], v: vec![8] });
    }

    #[test]
    fn out_of_blocks_changes_nothing() {
        let mut c = PagedKVCache::new(2, 1, 1, 1, 1, false).unwrap();
        c.add_seq(0, &[]).unwrap();
        c.append(0, 0, &column(vec![1]), &column(vec![1])).unwrap();
        let err = c.append(0, 0, &column(vec![2, 3]), &column(vec![2, 3])).unwrap_err();
        assert_eq!(err, CacheError::OutOfBlocks { needed: 2, free: 1 });
        assert_eq!((c.seq_len(0, 0).unwrap(), ids(&c, 0), counts(&c)), (1, vec![0], (1, 1)));
    }

    #[test]
    fn errors_come_in_the_references_order() {
        let mut c = PagedKVCache::new(4, 2, 1, 2, 3, false).unwrap();
        c.add_seq(0, &[]).unwrap();
        let good = Chunk::new(vec![2, 1, 3], vec![0; 6]).unwrap();
        let flat = Chunk::new(vec![6], vec![0; 6]).unwrap();
        let empty = Chunk::new(vec![2, 0, 3], vec![]).unwrap();
        let kind = |r: Result<(), CacheError>| match r.unwrap_err() {
            CacheError::InvalidArgument(m) => m,
            other => format!("{other:?}"),
        };
        assert_eq!(kind(c.append(9, 5, &flat, &flat)), "UnknownSequence(9)", "sequence before layer");
        assert!(kind(c.append(0, -1, &flat, &flat)).starts_with("layer -1"), "layer before shapes");
        assert!(kind(c.append(0, 0, &flat, &good)).starts_with("k must be 3-D"));
        assert!(kind(c.append(0, 0, &good, &flat)).starts_with("v must be 3-D"));
        assert!(kind(c.append(0, 0, &good, &empty)).starts_with("k and v shapes differ"));
        assert!(kind(c.append(0, 0, &empty, &empty)).starts_with("an append needs"));
        assert!(kind(c.add_seq(0, &[]).map(|_| ())).contains("already live"));
        assert_eq!(kind(c.fork(7, 0)), "UnknownSequence(7)", "the parent before the child");
        assert!(kind(c.fork(0, 0)).contains("already live"));
        assert_eq!(PagedKVCache::new(1, 1, 0, 1, 1, false).unwrap_err(), invalid("n_layers must be at least 1, got 0"));
        let too_many = PagedKVCache::new(MAX_BLOCKS + 1, 1, 1, 1, 1, false).unwrap_err();
        assert!(matches!(too_many, CacheError::InvalidArgument(m) if m.contains("at most 2^31 - 1")));
        assert_eq!(PagedKVCache::new(MAX_BLOCKS + 1, 0, 1, 1, 1, false).unwrap_err().to_string(),
                   format!("num_blocks must be at most 2^31 - 1 (block ids are int32), got {}", MAX_BLOCKS + 1),
                   "argument by argument: num_blocks before block_size");
        // K and V of 2^63 bytes or more (here 2^63 exactly, then past 2^64) are refused without trying;
        // 2^60 bytes are tried, and no machine maps them.
        assert_eq!(PagedKVCache::new(1, 1 << 61, 1, 1, 1, false).unwrap_err(), CacheError::OutOfMemory(Some(1 << 63)));
        assert_eq!(PagedKVCache::new(MAX_BLOCKS, 1 << 40, 1 << 40, 1, 1, false).unwrap_err(), CacheError::OutOfMemory(None));
        assert_eq!(PagedKVCache::new(1 << 30, 1 << 28, 1, 1, 1, false).unwrap_err(), CacheError::OutOfMemory(Some(1 << 60)));
        assert_eq!(PagedKVCache::new(1, 1 << 61, 0, 1, 1, false).unwrap_err(), invalid("n_layers must be at least 1, got 0"),
                   "sizes before memory");
        c.close();
        c.close();
        assert_eq!(kind(c.append(9, 5, &flat, &flat)), "the cache is closed", "closed before everything");
        assert!(c.stats().is_err() && c.num_free_blocks().is_err() && c.block_table(0, 0).is_err());
    }

    #[test]
    fn prefix_caching_registers_full_blocks_and_serves_them() {
        // B = 2, two layers, a pool of 3: a block is registered when its last layer fills it.
        let mut c = PagedKVCache::new(3, 2, 2, 1, 1, true).unwrap();
        assert_eq!(c.add_seq(0, &[7, 8, 9]).unwrap(), 0);
        c.append(0, 0, &column(vec![1, 2, 3]), &column(vec![4, 5, 6])).unwrap();
        c.fork(0, 1).unwrap();
        c.free(1).unwrap();
        assert_eq!(c.stats().unwrap().cached, 0, "layer 1 has not filled block 0: nothing is registered");
        c.append(0, 1, &column(vec![1, 2]), &column(vec![4, 5])).unwrap();
        let err = c.append(0, 1, &column(vec![3, 4]), &column(vec![6, 7])).unwrap_err();
        assert!(matches!(err, CacheError::InvalidArgument(m) if m.contains("declared")), "past the declared tokens");
        c.free(0).unwrap();
        let s = c.stats().unwrap();
        assert_eq!((s.free, s.used, s.cached, s.evictions), (2, 0, 1, 0));
        assert_eq!(c.add_seq(1, &[7, 8]).unwrap(), 0, "the last prompt token is always computed");
        assert_eq!(c.add_seq(2, &[7, 8, 9]).unwrap(), 2);
        assert_eq!((ids(&c, 2), c.seq_len(2, 1).unwrap()), (vec![0], 2));
        assert_eq!(c.gather(2, 1).unwrap(), Gathered { len: 2, k: vec![1, 2], v: vec![4, 5] });
        assert!(c.add_seq(3, &[1, -1]).is_err() && c.extend(2, &[-5]).is_err());
    }

    // -- the contract's integer ranges: each test fails if that quantity is narrowed ---------

    #[test]
    fn a_layer_longer_than_u16() {
        let n = 70_000;
        let mut c = PagedKVCache::new(1, n as i64, 1, 1, 1, false).unwrap();
        c.add_seq(0, &[]).unwrap();
        let values: Vec<u16> = (0..n).map(|i| i as u16).collect();
        c.append(0, 0, &column(values.clone()), &column(values.clone())).unwrap();
        assert_eq!(c.seq_len(0, 0).unwrap(), n);
        assert_eq!(c.gather(0, 0).unwrap().k, values);
    }

    #[test]
    fn block_ids_past_u16() {
        let n = 65_537;
        let mut c = PagedKVCache::new(70_000, 1, 1, 1, 1, false).unwrap();
        c.add_seq(0, &[]).unwrap();
        let values: Vec<u16> = (0..n).map(|i| (i % 65_521) as u16).collect();
        c.append(0, 0, &column(values.clone()), &column(values.clone())).unwrap();
        assert_eq!(ids(&c, 0), (0..n as i64).collect::<Vec<_>>());
        assert_eq!(c.gather(0, 0).unwrap().k, values);
    }

    #[test]
    fn reference_counts_past_u8() {
        let mut c = PagedKVCache::new(1, 1, 1, 1, 1, false).unwrap();
        c.add_seq(0, &[]).unwrap();
        c.append(0, 0, &column(vec![1]), &column(vec![1])).unwrap();
        for child in 1..=256 {
            c.fork(0, child).unwrap(); // 257 holders of block 0
        }
        for seq in 0..256 {
            c.free(seq).unwrap();
        }
        assert_eq!(c.num_free_blocks().unwrap(), 0, "sequence 256 still holds the block");
    }

    #[test]
    fn flat_position_index_past_u32() {
        // 257 blocks of 2^24 positions: block 256 starts at row 2^32. 8 GiB of address space
        // per pool, of which a few pages are touched.
        let mut c = PagedKVCache::new(257, 1 << 24, 1, 1, 1, false).unwrap();
        for s in 0..257 {
            c.add_seq(s, &[]).unwrap();
            c.append(s, 0, &column(vec![s as u16 + 1]), &column(vec![s as u16 + 1])).unwrap();
        }
        assert_eq!(ids(&c, 256), vec![256]);
        for s in [0, 1, 255, 256] {
            assert_eq!(c.gather(s, 0).unwrap().k, vec![s as u16 + 1]);
        }
    }

    #[test]
    fn token_ids_past_u16() {
        // 65,537 and 1 agree in their low 16 bits: different tokens, so nothing is served.
        let mut c = PagedKVCache::new(4, 1, 1, 1, 1, true).unwrap();
        c.add_seq(0, &[65_537, 5]).unwrap();
        c.append(0, 0, &column(vec![1]), &column(vec![1])).unwrap();
        assert_eq!(c.add_seq(1, &[1, 5]).unwrap(), 0);
        assert_eq!(c.add_seq(2, &[65_537, 6]).unwrap(), 1);
        assert_eq!(c.add_seq(3, &[i64::MAX, 5]).unwrap(), 0);
    }

    #[test]
    fn sequence_ids_use_all_64_bits() {
        let mut c = PagedKVCache::new(4, 1, 1, 1, 1, false).unwrap();
        let ids = [0, 1 << 32, i64::MIN, i64::MAX];
        for (i, &s) in ids.iter().enumerate() {
            c.add_seq(s, &[]).unwrap();
            c.append(s, 0, &column(vec![i as u16]), &column(vec![i as u16])).unwrap();
        }
        for (i, &s) in ids.iter().enumerate() {
            assert_eq!(c.gather(s, 0).unwrap().k, vec![i as u16]);
        }
    }
}
