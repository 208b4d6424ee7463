//! The kinds of layer a cache holds, and its groups of layers (CONTRACT.md, "Hybrid models").
//!
//! A hybrid model mixes full-attention layers with sliding-window layers (Gemma, gpt-oss). The
//! layers with one window (or all the full-attention layers) form a *group*; each group has its own
//! block table per sequence and, with prefix caching, its own keys, over the cache's one pool. What
//! differs between the kinds of layer is three rules, the methods of [`Kind`], and nothing else:
//!
//! - which positions `gather` shows ([`Kind::visible_from`]),
//! - which table entries a sequence lets go of while it lives ([`Kind::released_before`]),
//! - how many blocks of a prefix hit the group can serve ([`Kind::hit_blocks`]).
//!
//! [`FullAttention`] shows every position, releases nothing and needs every key of a hit; a
//! [`Window`] (window.rs holds its arithmetic) shows its window, releases what no window of its
//! layers reaches and needs only the keys of the last blocks of a hit (vLLM's FullAttentionManager
//! and SlidingWindowManager). Here too: the groups made from the constructor's `layer_windows`
//! ([`layer_windows`], [`make_groups`]) and the hit every group can serve ([`common_hit`]). The
//! cache (cache.rs) coordinates the groups: one capacity check over the one pool, the common hit,
//! the order `free` lets go of the groups' tables.
//! Without `layer_windows` a cache has one group, of every layer: the contract before hybrid models.

use std::fmt;

use crate::allocator::BlockId;
use crate::error::CacheError;
use crate::prefix::{NodeRef, PrefixIndex};
use crate::window::Window;

/// The rules that differ between kinds of layer; each kind has them all in its own `impl`.
pub trait Kind: fmt::Debug {
    /// The first position `gather` shows of a layer that holds `len` positions.
    fn visible_from(&self, len: usize) -> usize;

    /// How many first table entries are released once every layer of the group holds at least
    /// `shortest` positions (entries 0 .. the returned count).
    fn released_before(&self, shortest: usize, block_size: usize) -> usize;

    /// How many blocks of a hit this group can serve, the largest k <= `registered.len()` whose
    /// needed keys are registered (`registered[j]`: whether the key of block j is).
    fn hit_blocks(&self, registered: &[bool], block_size: usize) -> usize;
}

/// Full attention: a token attends to every position before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FullAttention;

impl Kind for FullAttention {
    /// Every position.
    fn visible_from(&self, _len: usize) -> usize {
        0
    }

    /// None, ever: every position stays needed.
    fn released_before(&self, _shortest: usize, _block_size: usize) -> usize {
        0
    }

    /// The run of registered keys from the first block: every block of a hit is read.
    fn hit_blocks(&self, registered: &[bool], _block_size: usize) -> usize {
        registered.iter().take_while(|&&r| r).count()
    }
}

impl Kind for Window {
    /// The window: the W - 1 positions before the next one.
    fn visible_from(&self, len: usize) -> usize {
        self.start(len)
    }

    /// The blocks wholly before the window of the group's shortest layer.
    fn released_before(&self, shortest: usize, block_size: usize) -> usize {
        self.released(shortest, block_size)
    }

    /// The largest k whose last ceil((W - 1) / B) keys are registered (all k when k is smaller).
    fn hit_blocks(&self, registered: &[bool], block_size: usize) -> usize {
        self.blocks_served(registered, block_size)
    }
}

/// A group of layers of one kind: its layers (indices into the cache's layers), its kind, and
/// with prefix caching its own keys (a key of one group never serves another).
#[derive(Debug)]
pub struct Group {
    pub layers: Vec<usize>,
    pub kind: Box<dyn Kind>,
    pub index: Option<PrefixIndex>,
}

/// One group for each distinct window in `windows` (one entry a layer, `None` for full
/// attention), numbered in the order of their first layers.
pub fn make_groups(windows: &[Option<Window>], block_size: usize, prefix_caching: bool) -> Vec<Group> {
    let mut distinct: Vec<Option<Window>> = Vec::new();
    for &window in windows {
        if !distinct.contains(&window) {
            distinct.push(window);
        }
    }
    distinct
        .into_iter()
        .map(|window| {
            let layers = (0..windows.len()).filter(|&i| windows[i] == window).collect();
            let kind: Box<dyn Kind> = match window {
                None => Box::new(FullAttention),
                Some(window) => Box::new(window),
            };
            Group { layers, kind, index: prefix_caching.then(|| PrefixIndex::new(block_size)) }
        })
        .collect()
}

/// The layers' windows as `layer_windows` gives them (CONTRACT.md, "Hybrid models"), checked
/// after `sliding_window` (`window`, already checked): both given is `InvalidArgument`, then a
/// count that is not one a layer, then each entry in order, `None` (full attention) or a window
/// of 2 .. 2^31 - 1.
pub fn layer_windows(
    given: &[Option<i64>],
    window: Option<Window>,
    n_layers: usize,
) -> Result<Vec<Option<Window>>, CacheError> {
    if window.is_some() {
        return Err(CacheError::InvalidArgument("sliding_window and layer_windows are both given".into()));
    }
    if given.len() != n_layers {
        return Err(CacheError::InvalidArgument(format!(
            "layer_windows has {} entries, one a layer is {n_layers}",
            given.len()
        )));
    }
    let check = |(i, &w): (usize, &Option<i64>)| -> Result<Option<Window>, CacheError> {
        let Some(w) = w else { return Ok(None) };
        let bad = || CacheError::InvalidArgument(format!("layer_windows[{i}] must be from 2 to 2^31 - 1, got {w}"));
        Window::new(w).map(Some).map_err(|_| bad())
    };
    given.iter().enumerate().map(check).collect()
}

/// The prompt's path in one group's tree of keys: each node, with the block registered under it.
pub type Path = Vec<(NodeRef, Option<BlockId>)>;

/// A group's keys; only a prefix cache asks.
pub fn index(group: &Group) -> &PrefixIndex {
    group.index.as_ref().expect("prefix caching: every group has its keys")
}

/// The blocks a hit serves: the largest k <= `most` that every group can serve (vLLM's fixed
/// point). Each group gives its largest k' <= k it can serve ([`Kind::hit_blocks`]
/// over its first k keys); k becomes the smallest of them, until every group serves k. Since k only
/// falls, and never below a k every group can serve, it ends at the largest such k (0 at worst).
pub fn common_hit(groups: &[Group], paths: &[Path], most: usize, bs: usize) -> usize {
    let mut k = most;
    loop {
        let mut common = k;
        for (group, path) in groups.iter().zip(paths) {
            let registered: Vec<bool> = path.iter().take(k).map(|&(_, block)| block.is_some()).collect();
            common = common.min(group.kind.hit_blocks(&registered, bs));
        }
        if common == k {
            return k;
        }
        k = common;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(size: i64) -> Option<Window> {
        Some(Window::new(size).unwrap())
    }

    #[test]
    fn a_group_a_window_in_the_order_of_first_layers() {
        let groups = make_groups(&[w(4), None, w(4), w(2), None], 2, true);
        let layers: Vec<&[usize]> = groups.iter().map(|g| &g.layers[..]).collect();
        assert_eq!(layers, [&[0, 2][..], &[1, 4], &[3]]);
        assert!(groups.iter().all(|g| g.index.is_some()));
        assert_eq!(make_groups(&[None, None], 2, false).len(), 1, "one kind of layer: one group, today's cache");
    }

    #[test]
    fn full_attention_shows_everything_and_releases_nothing() {
        assert_eq!((FullAttention.visible_from(9), FullAttention.released_before(9, 2)), (0, 0));
        assert_eq!(FullAttention.hit_blocks(&[true, true, false, true], 2), 2, "a run from the first block");
        let window = Window::new(3).unwrap(); // B = 2: need 1
        assert_eq!((window.visible_from(9), window.released_before(9, 2)), (7, 3));
        assert_eq!(window.hit_blocks(&[true, true, false, true], 2), 4, "the last key alone");
    }
}
