//! Prefix caching's index: which block holds the K and V of each whole prefix of token ids.
//!
//! A full block's key is the token ids of every position up to its end, the whole prefix
//! (CONTRACT.md, "Prefix caching"). The keys are kept as a tree of prefixes, as in
//! paged/prefix.py: a node is one block's worth of tokens below the node of the prefix before
//! it, so a lookup or a registration costs one hash-map lookup of B tokens per block, whatever
//! the cache holds. The maps' keys are the tokens themselves (`Vec<TokenId>`): the hash finds a
//! bucket and `==` on the token ids decides, so a hash collision never makes a false hit.
//!
//! The nodes live in one `Vec` (slot 0 is the root) and refer to each other by slot. A pruned
//! node's slot is reused, so what a sequence remembers is a [`NodeRef`]: the slot and the
//! generation it had; a pruned slot's generation moves on, so an old reference reads as dead
//! (Python's `node.dead`).
//!
//! Invariants: a node is in its parent's `children` exactly while it has a block or a child
//! (`drop` prunes the rest), so every node on the path to a registered node is in the tree;
//! `node_of[b]` is the slot whose `block` is b, for every registered block b, and no other.

use std::collections::HashMap;

use crate::allocator::BlockId;

/// A token id: any integer >= 0 the wire can carry (`i64`), never narrowed.
pub type TokenId = u64;

/// A node as a sequence remembers it: its slot, and the slot's generation at the time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeRef {
    slot: usize,
    generation: u64,
}

/// One prefix: `tokens` (a block's worth) below `parent`, and the block registered under it.
#[derive(Debug)]
struct Node {
    parent: Option<usize>,
    tokens: Vec<TokenId>,
    children: HashMap<Vec<TokenId>, usize>,
    block: Option<BlockId>,
    /// Moves on each time the slot's node is pruned.
    generation: u64,
}

/// Registered keys, as a tree of prefixes from the root (the empty prefix).
#[derive(Debug)]
pub struct PrefixIndex {
    block_size: usize,
    nodes: Vec<Node>,
    /// Slots of pruned nodes, for the next nodes made.
    vacant: Vec<usize>,
    node_of: HashMap<BlockId, usize>,
}

const ROOT: usize = 0;

impl PrefixIndex {
    pub fn new(block_size: usize) -> Self {
        let root = Node { parent: None, tokens: Vec::new(), children: HashMap::new(), block: None, generation: 0 };
        PrefixIndex { block_size, nodes: vec![root], vacant: Vec::new(), node_of: HashMap::new() }
    }

    /// The empty prefix; it is never pruned.
    pub fn root(&self) -> NodeRef {
        NodeRef { slot: ROOT, generation: 0 }
    }

    /// Pruned from the tree since the reference was taken (its key was evicted): a sequence
    /// that remembers it makes its path again.
    pub fn is_dead(&self, node: NodeRef) -> bool {
        self.nodes[node.slot].generation != node.generation
    }

    /// The block registered under the node's key, if any.
    pub fn block(&self, node: NodeRef) -> Option<BlockId> {
        self.nodes[node.slot].block
    }

    pub fn is_registered(&self, block: BlockId) -> bool {
        self.node_of.contains_key(&block)
    }

    /// The nodes of the keys tokens[..B], tokens[..2B], ... that end before the last token (its
    /// logits are always computed), as far as the tree holds them, each with the block
    /// registered under it, if any. A key the tree does not hold has no registered key below
    /// it (a node stays in the tree only while it has a block or a child), so the walk stops.
    pub fn walk(&self, tokens: &[TokenId]) -> Vec<(NodeRef, Option<BlockId>)> {
        let (bs, mut node, mut path) = (self.block_size, ROOT, Vec::new());
        while (path.len() + 1) * bs <= tokens.len().saturating_sub(1) {
            let Some(&child) = self.nodes[node].children.get(&tokens[path.len() * bs..(path.len() + 1) * bs]) else {
                break;
            };
            path.push((self.reference(child), self.nodes[child].block));
            node = child;
        }
        path
    }

    /// The nodes of the longest run of registered keys tokens[..B], tokens[..2B], ... that end
    /// before the last token: a hit without the window.
    pub fn hit(&self, tokens: &[TokenId]) -> Vec<NodeRef> {
        self.walk(tokens).into_iter().map_while(|(node, block)| block.map(|_| node)).collect()
    }

    /// The node of prefix `parent` + `tokens`, made if the tree has none yet.
    pub fn child(&mut self, parent: NodeRef, tokens: &[TokenId]) -> NodeRef {
        if let Some(&slot) = self.nodes[parent.slot].children.get(tokens) {
            return self.reference(slot);
        }
        let node = Node {
            parent: Some(parent.slot),
            tokens: tokens.to_vec(),
            children: HashMap::new(),
            block: None,
            generation: 0,
        };
        let slot = match self.vacant.pop() {
            Some(slot) => {
                let generation = self.nodes[slot].generation;
                self.nodes[slot] = Node { generation, ..node };
                slot
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        };
        self.nodes[parent.slot].children.insert(tokens.to_vec(), slot);
        self.reference(slot)
    }

    /// The nodes of prefixes tokens[..B] .. tokens[..blocks * B], made where missing.
    pub fn path(&mut self, tokens: &[TokenId], blocks: usize) -> Vec<NodeRef> {
        let (bs, mut node, mut nodes) = (self.block_size, self.root(), Vec::with_capacity(blocks));
        for i in 0..blocks {
            node = self.child(node, &tokens[i * bs..(i + 1) * bs]);
            nodes.push(node);
        }
        nodes
    }

    /// Register `block` under the key `node` names, unless a block is registered there already
    /// (then `block` stays unregistered: a key names one block).
    pub fn register(&mut self, node: NodeRef, block: BlockId) {
        let entry = &mut self.nodes[node.slot];
        if entry.block.is_none() {
            entry.block = Some(block);
            self.node_of.insert(block, node.slot);
        }
    }

    /// An evicted block's key goes; nodes left with no block and no child leave the tree.
    pub fn drop(&mut self, block: BlockId) {
        let mut slot = self.node_of.remove(&block).expect("drop() of a block that is not registered");
        self.nodes[slot].block = None;
        while let Some(parent) = self.nodes[slot].parent {
            let node = &mut self.nodes[slot];
            if node.block.is_some() || !node.children.is_empty() {
                break;
            }
            let tokens = std::mem::take(&mut node.tokens);
            node.parent = None;
            node.generation += 1; // every NodeRef to it is dead now
            self.vacant.push(slot);
            self.nodes[parent].children.remove(&tokens);
            slot = parent;
        }
    }

    fn reference(&self, slot: usize) -> NodeRef {
        NodeRef { slot, generation: self.nodes[slot].generation }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hit_is_a_run_of_whole_prefixes_before_the_last_token() {
        let mut index = PrefixIndex::new(2);
        let nodes = index.path(&[1, 2, 3, 4], 2);
        index.register(nodes[0], 7);
        index.register(nodes[1], 8);
        assert_eq!(index.hit(&[1, 2, 3, 4]).len(), 1, "the last token is always computed");
        assert_eq!(index.hit(&[1, 2, 3, 4, 5]), nodes);
        assert_eq!(index.hit(&[3, 4, 3, 4, 5]), vec![], "the same block after another prefix is another key");
        assert_eq!(index.hit(&[]), vec![]);
        index.register(nodes[0], 9);
        assert!(!index.is_registered(9), "a key names one block");
    }

    #[test]
    fn drop_prunes_what_leads_nowhere_and_old_references_die() {
        let mut index = PrefixIndex::new(1);
        let nodes = index.path(&[1, 2], 2);
        index.register(nodes[0], 0);
        index.register(nodes[1], 1);
        index.drop(0);
        assert!(!index.is_dead(nodes[0]), "it still leads to a registered key");
        assert_eq!(index.hit(&[1, 2, 3]), vec![], "nothing is served without the first key");
        index.drop(1);
        assert!(index.is_dead(nodes[0]) && index.is_dead(nodes[1]));
        let again = index.path(&[5, 6], 2);
        assert!(again.iter().all(|n| !index.is_dead(*n)) && index.is_dead(nodes[1]), "slots reused, old refs dead");
    }
}
