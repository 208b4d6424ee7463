//! The block allocator: a reference count per block, a free pool, and, with prefix caching,
//! the cached blocks in the order they became cached.
//!
//! The free pool is this port's profile (docs/CONTRACT.md, "Profiles"): `allocation=any`, a `Vec` used as a
//! stack (a release pushes, an allocation pops), so the block released last is taken first, as
//! in vLLM or nano-vllm. The contract's pinned default, `allocation=lowest-free` (a min-heap,
//! the lowest free id first), is kept behind [`Allocation::LowestFree`], so that the port can
//! also be compared with the reference's tables exactly. Either way a free block is taken
//! before a cached one (`reuse=free-first`); when none is free, the block that became cached
//! longest ago is evicted and taken.
//!
//! Construction is O(1) in the number of blocks: ids at or above `fresh` have never been
//! handed out, and every id handed out and released since sits in the free pool; `fresh` is
//! taken only when the pool is empty. (All released ids are below `fresh`, so with the heap
//! the lowest free id is its minimum if there is one, else `fresh`.) A pool can have
//! 2^31 - 1 blocks; building a free list of them up front would cost gigabytes before the
//! first append.
//!
//! Invariants (as paged/allocator.py's): every block with no holder is in exactly one of the
//! free pool and `cached`; no block with a holder is in either. A caller that would break them
//! (allocate with nothing to take, incref of a block with no holder, acquire of a free block,
//! unshare of a block that is not shared, decref of a block with no holder) is a bug in the
//! caller: it panics, naming it.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};

/// A block id. The contract asks for ids up to 2^31 - 1 (`block_table` is int32), so
/// never narrower than 32 bits.
pub type BlockId = u32;

/// Which free block an allocation takes: the profile's `allocation` option (docs/CONTRACT.md, "Profiles").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Allocation {
    /// `allocation=any`, this port's: the block released last (a stack).
    #[default]
    Any,
    /// `allocation=lowest-free`, CONTRACT.md's pinned policy: the lowest-numbered free block.
    LowestFree,
}

impl Allocation {
    /// The option's value as a profile writes it.
    pub fn profile_value(self) -> &'static str {
        match self {
            Allocation::Any => "any",
            Allocation::LowestFree => "lowest-free",
        }
    }
}

/// Ids handed out and released again with no key: a stack, or a min-heap (lowest on top).
#[derive(Debug)]
enum FreePool {
    Stack(Vec<BlockId>),
    Lowest(BinaryHeap<Reverse<BlockId>>),
}

impl FreePool {
    fn len(&self) -> usize {
        match self {
            FreePool::Stack(stack) => stack.len(),
            FreePool::Lowest(heap) => heap.len(),
        }
    }

    fn pop(&mut self) -> Option<BlockId> {
        match self {
            FreePool::Stack(stack) => stack.pop(),
            FreePool::Lowest(heap) => heap.pop().map(|Reverse(block)| block),
        }
    }

    fn push(&mut self, block: BlockId) {
        match self {
            FreePool::Stack(stack) => stack.push(block),
            FreePool::Lowest(heap) => heap.push(Reverse(block)),
        }
    }
}

/// Reference-counted ownership of block ids `0 .. num_blocks`.
#[derive(Debug)]
pub struct BlockAllocator {
    /// Holders of each block (live tables listing it). A count must never wrap: any number
    /// of live sequences can share one block, so 32 bits, never u8 or u16.
    refs: Vec<u32>,
    /// Ids that were handed out and released again with no key.
    released: FreePool,
    /// Every id at or above this one has never been handed out.
    fresh: usize,
    /// Prefix caching: the blocks with no holder that keep their key, by when they became
    /// cached (oldest first), and when each did.
    cached: BTreeMap<u64, BlockId>,
    cached_since: HashMap<BlockId, u64>,
    /// Releases to `cached` so far: the next one's place in the order.
    clock: u64,
    /// Cached blocks `allocate` has taken since the allocator was made.
    evictions: u64,
}

impl BlockAllocator {
    /// An allocator of `num_blocks` free blocks. `vec![0; n]` is one zeroed allocation,
    /// which the OS hands over lazily: no page is touched until a block is counted.
    pub fn new(num_blocks: usize, allocation: Allocation) -> Self {
        let released = match allocation {
            Allocation::Any => FreePool::Stack(Vec::new()),
            Allocation::LowestFree => FreePool::Lowest(BinaryHeap::new()),
        };
        BlockAllocator {
            refs: vec![0; num_blocks],
            released,
            fresh: 0,
            cached: BTreeMap::new(),
            cached_since: HashMap::new(),
            clock: 0,
            evictions: 0,
        }
    }

    /// The blocks an allocation can take: free and cached.
    pub fn num_free(&self) -> usize {
        self.released.len() + (self.refs.len() - self.fresh) + self.cached.len()
    }

    pub fn num_cached(&self) -> usize {
        self.cached.len()
    }

    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// Take a free block (the one released last, or with `LowestFree` the lowest-numbered),
    /// else evict the oldest cached one; it gets one holder. Returns the block and whether it
    /// was evicted (then its key must go).
    ///
    /// The caller checks `num_free` first (an append checks all its blocks up front), so
    /// nothing to take here is a bug in the caller: it panics.
    pub fn allocate(&mut self) -> (BlockId, bool) {
        let (block, evicted) = if let Some(block) = self.released.pop() {
            (block, false)
        } else if self.fresh < self.refs.len() {
            self.fresh += 1;
            ((self.fresh - 1) as BlockId, false)
        } else if let Some((_, block)) = self.cached.pop_first() {
            self.cached_since.remove(&block);
            self.evictions += 1;
            (block, true)
        } else {
            panic!("allocate() with no free block and none cached: the caller must check num_free first");
        };
        assert_eq!(self.refs[block as usize], 0, "free block {block} has holders: the counts are corrupt");
        self.refs[block as usize] = 1;
        (block, evicted)
    }

    /// Whether more than one table holds the block (a write must copy it first).
    pub fn is_shared(&self, block: BlockId) -> bool {
        self.refs[block as usize] > 1
    }

    /// One more holder of a block that already has one (a fork).
    pub fn incref(&mut self, block: BlockId) {
        assert!(self.refs[block as usize] > 0, "incref({block}): block {block} is free or cached");
        self.refs[block as usize] += 1;
    }

    /// One more holder of a registered block (a prefix-cache hit): a cached one leaves the
    /// eviction order.
    pub fn acquire(&mut self, block: BlockId) {
        if self.refs[block as usize] == 0 {
            let since = self.cached_since.remove(&block).expect("acquire() of a free block, not a cached one");
            self.cached.remove(&since);
        }
        self.refs[block as usize] += 1;
    }

    /// Copy on write moved one holder of a shared block to a copy: one holder fewer, never
    /// the last.
    pub fn unshare(&mut self, block: BlockId) {
        assert!(self.refs[block as usize] > 1, "unshare({block}): block {block} is not shared");
        self.refs[block as usize] -= 1;
    }

    /// Drop one holder. The last holder's release returns the block to the free pool or,
    /// with `keep` (it has a key), makes it cached, newest in the eviction order.
    pub fn decref(&mut self, block: BlockId, keep: bool) {
        let count = self.refs[block as usize];
        assert!(count > 0, "decref({block}): block {block} has no holder (released more often than taken)");
        self.refs[block as usize] = count - 1;
        if count == 1 {
            if keep {
                self.cached.insert(self.clock, block);
                self.cached_since.insert(block, self.clock);
                self.clock += 1;
            } else {
                self.released.push(block);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(a: &mut BlockAllocator) -> BlockId {
        a.allocate().0
    }

    #[test]
    fn lowest_free_hands_out_the_lowest_free_id() {
        let mut a = BlockAllocator::new(4, Allocation::LowestFree);
        assert_eq!((take(&mut a), take(&mut a), take(&mut a)), (0, 1, 2));
        a.decref(1, false);
        a.decref(0, false);
        assert_eq!(a.num_free(), 3);
        assert_eq!((take(&mut a), take(&mut a), take(&mut a)), (0, 1, 3));
        assert_eq!(a.num_free(), 0);
    }

    #[test]
    fn the_stack_hands_out_the_block_released_last() {
        let mut a = BlockAllocator::new(4, Allocation::Any);
        assert_eq!((take(&mut a), take(&mut a), take(&mut a)), (0, 1, 2), "fresh ids in order");
        a.decref(0, false);
        a.decref(2, false);
        assert_eq!(a.num_free(), 3);
        assert_eq!((take(&mut a), take(&mut a), take(&mut a)), (2, 0, 3), "released last first, then fresh");
        assert_eq!(a.num_free(), 0);
    }

    #[test]
    fn a_shared_block_returns_with_its_last_holder() {
        let mut a = BlockAllocator::new(1, Allocation::Any);
        let b = take(&mut a);
        a.incref(b);
        assert!(a.is_shared(b));
        a.decref(b, false);
        assert!(!a.is_shared(b));
        assert_eq!(a.num_free(), 0);
        a.decref(b, false);
        assert_eq!(a.num_free(), 1);
    }

    #[test]
    fn free_blocks_first_then_the_block_cached_longest_ago() {
        let mut a = BlockAllocator::new(4, Allocation::Any);
        let blocks: Vec<BlockId> = (0..4).map(|_| take(&mut a)).collect();
        for &b in &blocks[..3] {
            a.decref(b, true); // cached in the order 0, 1, 2
        }
        a.decref(3, false);
        a.acquire(0); // a hit takes 0 out of the order; released again, it goes last
        a.decref(0, true);
        assert_eq!((a.num_free(), a.num_cached()), (4, 3));
        let order: Vec<(BlockId, bool)> = (0..4).map(|_| a.allocate()).collect();
        assert_eq!(order, [(3, false), (1, true), (2, true), (0, true)]);
        assert_eq!(a.evictions(), 3);
    }
}
