//! The sliding window (CONTRACT.md, "Sliding window (opt-in)"), rule by rule, through the
//! cache's public calls. Every expectation is worked out by hand from the contract (the
//! comments show the arithmetic), with the contract's pinned allocation (`LowestFree`), so
//! that block ids compare exactly. H = D = 1 throughout: a position's K is one value, and its
//! V is that value plus 100.

use paged_kv::{Allocation, CacheError, Chunk, Options, PagedKVCache, SeqId};

/// A cache of `n` blocks of `b` positions, `l` layers of one head of one value, window `w`.
fn cache(n: i64, b: i64, l: i64, w: i64, prefix_caching: bool) -> PagedKVCache {
    let options =
        Options { prefix_caching, sliding_window: Some(w), allocation: Allocation::LowestFree, ..Options::default() };
    PagedKVCache::with_options(n, b, l, 1, 1, options).unwrap()
}

/// Append positions with K = `values` (V = K + 100) to `layer`.
fn append(c: &mut PagedKVCache, seq: SeqId, layer: i64, values: &[u16]) -> Result<(), CacheError> {
    let chunk = |vs: Vec<u16>| Chunk::new(vec![1, vs.len(), 1], vs).unwrap();
    c.append(seq, layer, &chunk(values.to_vec()), &chunk(values.iter().map(|v| v + 100).collect()))
}

/// The K values `gather` returns, after checking that V is K + 100 and the length matches.
fn window(c: &PagedKVCache, seq: SeqId, layer: i64) -> Vec<u16> {
    let g = c.gather(seq, layer).unwrap();
    assert_eq!(g.v, g.k.iter().map(|k| k + 100).collect::<Vec<_>>(), "V is K + 100");
    assert_eq!(g.len, g.k.len());
    g.k
}

/// The table as the wire writes it: -1 for a released entry.
fn table(c: &PagedKVCache, seq: SeqId) -> Vec<i64> {
    c.block_table(seq, 0).unwrap().iter().map(|entry| entry.map_or(-1, i64::from)).collect()
}

/// (free, used, cached) of `stats()`.
fn stats(c: &PagedKVCache) -> (usize, usize, usize) {
    let s = c.stats().unwrap();
    (s.free, s.used, s.cached)
}

#[test]
fn gather_returns_the_last_w_minus_1_positions_and_seq_len_all() {
    // W = 3: after n positions the window is positions max(0, n - 2) .. n - 1.
    let mut c = cache(8, 2, 1, 3, false);
    c.add_seq(0, &[]).unwrap();
    let windows: [&[u16]; 5] = [&[1], &[1, 2], &[2, 3], &[3, 4], &[4, 5]];
    for (n, want) in windows.iter().enumerate() {
        append(&mut c, 0, 0, &[n as u16 + 1]).unwrap();
        assert_eq!((c.seq_len(0, 0).unwrap(), window(&c, 0, 0)), (n + 1, want.to_vec()), "after {} positions", n + 1);
    }
    // One chunk of five: the same window.
    c.add_seq(1, &[]).unwrap();
    append(&mut c, 1, 0, &[1, 2, 3, 4, 5]).unwrap();
    assert_eq!(window(&c, 1, 0), [4, 5]);
}

#[test]
fn blocks_before_the_window_are_released_and_read_as_minus_1() {
    // W = 3, B = 2, a pool of 4. Index i is released when 2(i + 1) <= n - 2.
    let mut c = cache(4, 2, 1, 3, false);
    c.add_seq(0, &[]).unwrap();
    let tables: [&[i64]; 6] = [
        &[0],         // n = 1
        &[0],         // n = 2
        &[0, 1],      // n = 3: window 1 .. 2 still reads block 0
        &[-1, 1],     // n = 4: 2 <= 2, index 0 released, block 0 free
        &[-1, 1, 0],  // n = 5: index 2 takes the lowest free block, 0
        &[-1, -1, 0], // n = 6: 4 <= 4, index 1 released
    ];
    let pools = [(3, 1), (3, 1), (2, 2), (3, 1), (2, 2), (3, 1)];
    for n in 0..6 {
        append(&mut c, 0, 0, &[n as u16 + 1]).unwrap();
        assert_eq!(table(&c, 0), tables[n], "after {} positions", n + 1);
        let (free, used, cached) = stats(&c);
        assert_eq!(((free, used), cached), (pools[n], 0), "after {} positions", n + 1);
        assert_eq!(c.num_free_blocks().unwrap(), free);
    }
    // Positions stay absolute: position 4 is slot 0 of entry 2 (block 0, reused), position 5 slot 1.
    assert_eq!(window(&c, 0, 0), [5, 6]);
}

#[test]
fn the_shortest_layer_decides_what_is_released() {
    // W = 2, B = 1, two layers: index i is released when i + 1 <= min(lens) - 1.
    let mut c = cache(4, 1, 2, 2, false);
    c.add_seq(0, &[]).unwrap();
    append(&mut c, 0, 0, &[1, 2, 3]).unwrap();
    assert_eq!(table(&c, 0), [0, 1, 2], "layer 1 holds nothing yet: it still needs every block");
    assert_eq!((window(&c, 0, 0), window(&c, 0, 1)), (vec![3], vec![]));
    append(&mut c, 0, 1, &[11, 12]).unwrap();
    assert_eq!(table(&c, 0), [-1, 1, 2], "min(lens) = 2: index 0 released");
    assert_eq!((window(&c, 0, 0), window(&c, 0, 1)), (vec![3], vec![12]), "each layer its own window");
    assert_eq!(stats(&c), (2, 2, 0));
}

#[test]
fn what_an_append_releases_comes_back_too_late_for_it() {
    // W = 2, B = 1, a pool of 2.
    let mut c = cache(2, 1, 1, 2, false);
    c.add_seq(0, &[]).unwrap();
    append(&mut c, 0, 0, &[1]).unwrap();
    append(&mut c, 0, 0, &[2]).unwrap();
    assert_eq!((table(&c, 0), stats(&c)), (vec![-1, 1], (1, 1, 0)));
    // Positions 2 and 3 need two new blocks; one is free. Block 1 would be released at the
    // end (position 1 leaves the window), too late: OutOfBlocks, and nothing changes.
    let err = append(&mut c, 0, 0, &[3, 4]).unwrap_err();
    assert_eq!(err, CacheError::OutOfBlocks { needed: 2, free: 1 });
    assert_eq!((table(&c, 0), stats(&c), c.seq_len(0, 0).unwrap()), (vec![-1, 1], (1, 1, 0), 2));
    assert_eq!(window(&c, 0, 0), [2]);
    // One position fits: it takes block 0, then lets go of block 1.
    append(&mut c, 0, 0, &[3]).unwrap();
    assert_eq!((table(&c, 0), stats(&c), window(&c, 0, 0)), (vec![-1, -1, 0], (1, 1, 0), vec![3]));
}

#[test]
fn fork_copies_released_entries_and_free_skips_them() {
    // W = 2, B = 1, a pool of 4: after three positions the table is [-1, -1, 2].
    let mut c = cache(4, 1, 1, 2, false);
    c.add_seq(0, &[]).unwrap();
    append(&mut c, 0, 0, &[1, 2, 3]).unwrap();
    assert_eq!((table(&c, 0), stats(&c)), (vec![-1, -1, 2], (3, 1, 0)));
    c.fork(0, 1).unwrap();
    assert_eq!((table(&c, 1), stats(&c)), (vec![-1, -1, 2], (3, 1, 0)), "a holder more of block 2, nothing allocated");
    // The child's next position goes to a new index: block 0; then index 2 (block 2) is released
    // by the child only, and the parent keeps it.
    append(&mut c, 1, 0, &[4]).unwrap();
    assert_eq!((table(&c, 1), table(&c, 0), stats(&c)), (vec![-1, -1, -1, 0], vec![-1, -1, 2], (2, 2, 0)));
    assert_eq!((window(&c, 1, 0), window(&c, 0, 0)), (vec![4], vec![3]));
    c.free(0).unwrap();
    assert_eq!(stats(&c), (3, 1, 0));
    c.free(1).unwrap();
    assert_eq!(stats(&c), (4, 0, 0));
}

#[test]
fn a_shared_block_in_the_window_is_copied_on_write() {
    // W = 3, B = 2: the parent holds positions 0 .. 2 in [0, 1]; the child writes position 3
    // into shared block 1, which is copied to block 2 first; then index 0 is released by the
    // child (2 <= 4 - 2), and the parent keeps block 0.
    let mut c = cache(4, 2, 1, 3, false);
    c.add_seq(0, &[]).unwrap();
    append(&mut c, 0, 0, &[1, 2, 3]).unwrap();
    c.fork(0, 1).unwrap();
    append(&mut c, 1, 0, &[4]).unwrap();
    assert_eq!((table(&c, 1), table(&c, 0), stats(&c)), (vec![-1, 2], vec![0, 1], (1, 3, 0)));
    assert_eq!((window(&c, 1, 0), window(&c, 0, 0)), (vec![3, 4], vec![2, 3]));
}

#[test]
fn released_registered_blocks_are_cached_highest_index_first() {
    // W = 2, B = 1, a pool of 4, prefix caching. One append of three positions fills and
    // registers blocks 0, 1, 2, then releases index 1, then index 0: both are cached, block 1
    // first, so block 1 is the first evicted.
    let mut c = cache(4, 1, 1, 2, true);
    c.add_seq(0, &[1, 2, 3, 4, 5]).unwrap();
    append(&mut c, 0, 0, &[1, 2, 3]).unwrap();
    assert_eq!((table(&c, 0), stats(&c)), (vec![-1, -1, 2], (1, 1, 2)));
    // Two new blocks for sequence 1: the free block 3, then the oldest cached, block 1.
    c.add_seq(1, &[9, 9, 9]).unwrap();
    append(&mut c, 1, 0, &[7, 8]).unwrap();
    assert_eq!(table(&c, 1), [-1, 1], "block 3 taken, then block 1 evicted; then index 0 (block 3) released");
    assert_eq!((stats(&c), c.stats().unwrap().evictions), ((0, 2, 2), 1));
}

#[test]
fn a_hit_takes_the_blocks_of_the_served_window_only() {
    // As above: key [1] names cached block 0, [1, 2] was evicted, [1, 2, 3] names block 2, which
    // sequence 0 holds. W = 2, B = 1: need = ceil(1 / 1) = 1, k_max = (4 - 1) // 1 = 3.
    let mut c = cache(4, 1, 1, 2, true);
    c.add_seq(0, &[1, 2, 3, 4, 5]).unwrap();
    append(&mut c, 0, 0, &[1, 2, 3]).unwrap();
    c.add_seq(1, &[9, 9, 9]).unwrap();
    append(&mut c, 1, 0, &[7, 8]).unwrap();
    // The largest k whose one needed key, tokens[:k], is registered: k = 3 (block 2). Without
    // the window the run from block 0 would stop at 1.
    assert_eq!(c.add_seq(2, &[1, 2, 3, 4]).unwrap(), 3);
    assert_eq!((table(&c, 2), c.seq_len(2, 0).unwrap(), window(&c, 2, 0)), (vec![-1, -1, 2], 3, vec![3]));
    assert_eq!(stats(&c), (0, 2, 2), "block 2 gains a holder; cached block 0 is not taken");
    // Freeing every holder of block 2 caches it; a prompt of [1, 2, 3, 4, 5] then serves 3 again
    // (k = 4 would need key [1, 2, 3, 4], never registered).
    c.free(0).unwrap();
    c.free(2).unwrap();
    assert_eq!(stats(&c), (0, 1, 3));
    assert_eq!(c.add_seq(3, &[1, 2, 3, 4, 5]).unwrap(), 3);
    assert_eq!((table(&c, 3), stats(&c)), (vec![-1, -1, 2], (0, 2, 2)), "a cached block taken out of the cache");
}

#[test]
fn a_hit_needs_ceil_w_minus_1_over_b_keys() {
    // W = 3, B = 2: need = ceil(2 / 2) = 1 (ceil(W / B) would be 2). Sequence 0 registers keys
    // [1, 2] (block 0) and [1, 2, 3, 4] (block 1); block 0 is released and cached at n = 4
    // (2 <= 4 - 2), then evicted by sequence 1.
    let mut c = cache(3, 2, 1, 3, true);
    c.add_seq(0, &[1, 2, 3, 4, 5]).unwrap();
    append(&mut c, 0, 0, &[1, 2, 3, 4]).unwrap();
    assert_eq!((table(&c, 0), stats(&c)), (vec![-1, 1], (1, 1, 1)));
    c.add_seq(1, &[8, 8, 8, 8, 8]).unwrap();
    append(&mut c, 1, 0, &[5, 6, 7]).unwrap(); // blocks 2, then block 0 evicted
    assert_eq!((table(&c, 1), c.stats().unwrap().evictions), (vec![2, 0], 1));
    // k_max = (5 - 1) // 2 = 2; key [1, 2] is gone, key [1, 2, 3, 4] (block 1) is registered:
    // k = 2 serves 4 positions from one block. The table is k - need = 1 entry of -1, then block 1.
    assert_eq!(c.add_seq(2, &[1, 2, 3, 4, 9]).unwrap(), 4);
    assert_eq!((table(&c, 2), window(&c, 2, 0)), (vec![-1, 1], vec![3, 4]));
}

#[test]
fn with_no_run_of_need_keys_a_hit_is_the_run_from_the_first_block() {
    // W = 5, B = 1: need = 4. Keys [1] .. [1, 2, 3] are registered and held; a prompt of
    // [1, 2, 3, 4, 5] has no run of 4 (k_max = 4, key [1, 2, 3, 4] never registered), so it
    // takes the run from block 0: 3 blocks, none released (released(3) = 0).
    let mut c = cache(8, 1, 1, 5, true);
    c.add_seq(0, &[1, 2, 3, 4]).unwrap();
    append(&mut c, 0, 0, &[1, 2, 3]).unwrap();
    assert_eq!(table(&c, 0), [0, 1, 2]);
    assert_eq!(c.add_seq(1, &[1, 2, 3, 4, 5]).unwrap(), 3);
    assert_eq!((table(&c, 1), window(&c, 1, 0)), (vec![0, 1, 2], vec![1, 2, 3]));
}

#[test]
fn the_window_is_checked_after_the_sizes_and_before_memory() {
    let options = |w| Options { sliding_window: Some(w), ..Options::default() };
    let message = |r: Result<PagedKVCache, CacheError>| match r.unwrap_err() {
        CacheError::InvalidArgument(m) => m,
        other => format!("{other:?}"),
    };
    for w in [i64::MIN, 0, 1, (1 << 31), i64::MAX] {
        assert!(message(PagedKVCache::with_options(4, 2, 1, 1, 1, options(w))).starts_with("sliding_window"), "{w}");
    }
    assert!(message(PagedKVCache::with_options(0, 2, 1, 1, 1, options(1))).starts_with("num_blocks"), "sizes first");
    assert!(
        message(PagedKVCache::with_options(1, 1 << 61, 1, 1, 1, options(1))).starts_with("sliding_window"),
        "before memory"
    );
    assert!(PagedKVCache::with_options(4, 2, 1, 1, 1, options(2)).is_ok());
    // The largest window: nothing is ever released, gather returns everything.
    let mut c = cache(4, 1, 1, (1 << 31) - 1, false);
    c.add_seq(0, &[]).unwrap();
    append(&mut c, 0, 0, &[1, 2, 3]).unwrap();
    assert_eq!((table(&c, 0), window(&c, 0, 0)), (vec![0, 1, 2], vec![1, 2, 3]));
}
