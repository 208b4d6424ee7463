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
//! `Window` (window.rs); `locate` (pool.rs) maps a position to its block and slot; here,
//! [`release_out_of_window`] lets go of the released blocks.
//!
//! Hybrid models (opt-in, `layer_windows`, one window or `None` a layer): the layers with one
//! window form a group (groups.rs, where each kind of layer's rules are), and each group has its
//! own table per sequence and its own keys, over the one pool. Without `layer_windows` there is one
//! group, of every layer. This file coordinates the groups: an append's one capacity check (an
//! append writes one layer, so one group's table takes blocks), the hit every group can serve
//! ([`crate::groups::common_hit`]), and the order `free` lets go of the groups' tables (group 0 first).
//!
//! The memory (the K and V pools, their layout, the copy on write) is `Pool` (pool.rs); the errors
//! are `CacheError` (error.rs); the page tables a kernel reads are cache/pages.rs; the unit tests are in
//! cache/tests.rs.

use std::collections::HashMap;

use crate::allocator::{Allocation, BlockAllocator, BlockId};
use crate::error::{invalid, CacheError};
use crate::groups::{self, common_hit, index, make_groups, Group, Path};
use crate::pool::{held, Chunk, Entry, Gathered, Pool};
use crate::prefix::{NodeRef, PrefixIndex, TokenId};
use crate::window::Window;

/// A sequence id: the whole `i64` range (ids that differ are different sequences).
pub type SeqId = i64;

/// The most blocks a cache has: block ids are the `int32` of the contract's `block_table`.
pub const MAX_BLOCKS: i64 = i32::MAX as i64;

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
    /// The pools are allocated zeroed ([`Pool::new`]): K and V need 4 * N * B * L * H * D bytes,
    /// `OutOfMemory` at 2^63 or more without trying, and when the allocator refuses.
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
        let pool = Pool::new(sizes)?; // the memory check: OutOfMemory after every argument's
        let [num_blocks, block_size, n_layers, ..] = sizes;
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
            pool,
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
        self.pool.release();
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
            if chunk.shape().len() != 3 {
                return Err(invalid(format!(
                    "{name} must be 3-D [n_kv_heads, T, d_head], got shape {:?}",
                    chunk.shape()
                )));
            }
        }
        if k.shape() != v.shape() {
            return Err(invalid(format!("k and v shapes differ: {:?} != {:?}", k.shape(), v.shape())));
        }
        let (heads, tokens, dims) = (k.shape()[0], k.shape()[1], k.shape()[2]);
        if heads != self.pool.n_kv_heads || dims != self.pool.d_head {
            let (h, d) = (self.pool.n_kv_heads, self.pool.d_head);
            return Err(invalid(format!("k and v must be [{h}, T, {d}] for this cache, got {:?}", k.shape())));
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

mod pages;
pub use pages::PageTable;

#[cfg(test)]
mod tests;
