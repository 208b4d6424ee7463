//! The block allocator: a reference count per block and a free pool that always hands
//! out the lowest-numbered free block.
//!
//! The contract pins "lowest free id first" so that a port's block tables can be compared
//! exactly with the reference's. A block is free exactly when its count is zero.
//!
//! Construction is O(1) in the number of blocks: ids at or above `fresh` have never been
//! handed out, and every id handed out and released since sits in a min-heap. All released
//! ids are below `fresh`, so the lowest free id is the heap's minimum if there is one,
//! else `fresh`. (A pool can have 2^31 - 1 blocks; building a free list of them up front
//! would cost gigabytes before the first append.)

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A block id. The contract asks for ids up to 2^31 - 1 (`block_table` is int32), so
/// never narrower than 32 bits.
pub type BlockId = u32;

/// Reference-counted ownership of block ids `0 .. num_blocks`.
#[derive(Debug)]
pub struct BlockAllocator {
    /// Holders of each block (live tables listing it). A count must never wrap: any number
    /// of live sequences can share one block, so 32 bits, never u8 or u16.
    refs: Vec<u32>,
    /// Ids that were handed out and released again, lowest on top.
    released: BinaryHeap<Reverse<BlockId>>,
    /// Every id at or above this one has never been handed out.
    fresh: usize,
}

impl BlockAllocator {
    /// An allocator of `num_blocks` free blocks. `vec![0; n]` is one zeroed allocation,
    /// which the OS hands over lazily: no page is touched until a block is counted.
    pub fn new(num_blocks: usize) -> Self {
        BlockAllocator { refs: vec![0; num_blocks], released: BinaryHeap::new(), fresh: 0 }
    }

    /// How many blocks no one holds.
    pub fn num_free(&self) -> usize {
        self.released.len() + (self.refs.len() - self.fresh)
    }

    /// Take the lowest-numbered free block, with one reference.
    ///
    /// The caller checks capacity first (an append checks all its blocks up front), so an
    /// empty pool here is a bug in the caller: it panics.
    pub fn allocate(&mut self) -> BlockId {
        let block = match self.released.pop() {
            Some(Reverse(block)) => block,
            None => {
                assert!(self.fresh < self.refs.len(), "allocate() on an empty pool");
                self.fresh += 1;
                (self.fresh - 1) as BlockId
            }
        };
        self.refs[block as usize] = 1;
        block
    }

    /// Whether more than one table holds the block (a write must copy it first).
    pub fn is_shared(&self, block: BlockId) -> bool {
        self.refs[block as usize] > 1
    }

    /// One more holder (a fork).
    pub fn incref(&mut self, block: BlockId) {
        self.refs[block as usize] += 1;
    }

    /// One holder fewer; the last holder's release returns the block to the pool.
    pub fn decref(&mut self, block: BlockId) {
        self.refs[block as usize] -= 1;
        if self.refs[block as usize] == 0 {
            self.released.push(Reverse(block));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_out_the_lowest_free_id() {
        let mut a = BlockAllocator::new(4);
        assert_eq!((a.allocate(), a.allocate(), a.allocate()), (0, 1, 2));
        a.decref(1);
        a.decref(0);
        assert_eq!(a.num_free(), 3);
        assert_eq!((a.allocate(), a.allocate(), a.allocate()), (0, 1, 3));
        assert_eq!(a.num_free(), 0);
    }

    #[test]
    fn a_shared_block_returns_with_its_last_holder() {
        let mut a = BlockAllocator::new(1);
        let b = a.allocate();
        a.incref(b);
        assert!(a.is_shared(b));
        a.decref(b);
        assert!(!a.is_shared(b));
        assert_eq!(a.num_free(), 0);
        a.decref(b);
        assert_eq!(a.num_free(), 1);
    }
}
