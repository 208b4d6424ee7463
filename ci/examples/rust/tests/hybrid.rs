//! Hybrid models (CONTRACT.md, "Hybrid models (opt-in)"), through the cache's public calls: one
//! table per group of layers with one window, one pool, one capacity check, release per group,
//! fork and free per group (group 0 first), the hit every group can serve, each layer's own window.
//!
//! Every expected value is the oracle's (`oracle.model.ModelKVCache`, the Python executable model
//! of the contract), never this port's: each test's comment gives the oracle calls it mirrors, with
//! the contract's pinned allocation (`LowestFree`), so block ids compare exactly. H = D = 1: a
//! position's K is one float16 bit pattern, its V that pattern + 100; `prefill` writes position p
//! of every layer as K = p + 1, one position at a time (a decode loop).

use paged_kv::{Allocation, CacheError, Chunk, Options, PagedKVCache, SeqId};

/// A cache of `n` blocks of `b` positions, one layer a window (`None`: full attention).
fn cache(n: i64, b: i64, windows: &[Option<i64>], prefix_caching: bool) -> PagedKVCache {
    let options = Options {
        prefix_caching,
        layer_windows: Some(windows.to_vec()),
        allocation: Allocation::LowestFree,
        ..Options::default()
    };
    PagedKVCache::with_options(n, b, windows.len() as i64, 1, 1, options).unwrap()
}

/// Append positions with K = `values` (V = K + 100) to `layer`.
fn append(c: &mut PagedKVCache, seq: SeqId, layer: i64, values: &[u16]) -> Result<(), CacheError> {
    let chunk = |vs: Vec<u16>| Chunk::new(vec![1, vs.len(), 1], vs).unwrap();
    c.append(seq, layer, &chunk(values.to_vec()), &chunk(values.iter().map(|v| v + 100).collect()))
}

/// Positions seq_len .. n - 1 of every layer of `seq`, one at a time, layer 0 first; K = p + 1.
fn prefill(c: &mut PagedKVCache, seq: SeqId, layers: i64, n: usize) {
    for p in c.seq_len(seq, 0).unwrap()..n {
        for layer in 0..layers {
            append(c, seq, layer, &[p as u16 + 1]).unwrap();
        }
    }
}

/// The table of the layer's group as the wire writes it: -1 for a released entry.
fn table(c: &PagedKVCache, seq: SeqId, layer: i64) -> Vec<i64> {
    c.block_table(seq, layer).unwrap().iter().map(|entry| entry.map_or(-1, i64::from)).collect()
}

/// The K values `gather` returns, after checking that V is K + 100.
fn gather(c: &PagedKVCache, seq: SeqId, layer: i64) -> Vec<u16> {
    let g = c.gather(seq, layer).unwrap();
    assert_eq!(g.v, g.k.iter().map(|k| k + 100).collect::<Vec<_>>(), "V is K + 100");
    g.k
}

/// (free, used, cached, evictions) of `stats()`.
fn stats(c: &PagedKVCache) -> (usize, usize, usize, u64) {
    let s = c.stats().unwrap();
    (s.free, s.used, s.cached, s.evictions)
}

#[test]
fn the_issue_example_holds_four_blocks_and_at_most_two() {
    // ModelKVCache(8, 2, 2, 1, 1, layer_windows=(None, 2)); 8 one-token appends to each layer.
    let mut c = cache(8, 2, &[None, Some(2)], false);
    c.add_seq(0, &[]).unwrap();
    prefill(&mut c, 0, 2, 8);
    assert_eq!(table(&c, 0, 0), [0, 2, 1, 3], "full attention keeps every block");
    assert_eq!(table(&c, 0, 1), [-1, -1, -1, 5], "the window W = 2 keeps one position: one block");
    assert_eq!(stats(&c), (3, 5, 0, 0));
    assert_eq!((gather(&c, 0, 0), gather(&c, 0, 1)), ((1..=8).collect::<Vec<u16>>(), vec![8]));
    assert_eq!((c.seq_len(0, 0).unwrap(), c.seq_len(0, 1).unwrap()), (8, 8));

    // Sequence 1's full-attention layer takes every free block (6 positions, 3 blocks).
    c.add_seq(1, &[]).unwrap();
    for t in 0..6 {
        append(&mut c, 1, 0, &[t + 1]).unwrap();
    }
    assert_eq!((table(&c, 1, 0), table(&c, 1, 1), stats(&c)), (vec![4, 6, 7], vec![], (0, 8, 0, 0)));

    // Appends that need a block are refused, and change neither group's table, length or stats.
    let every = |c: &PagedKVCache| [table(c, 0, 0), table(c, 0, 1), table(c, 1, 0), table(c, 1, 1)];
    let before = every(&c);
    for (seq, layer) in [(0, 0), (1, 1), (0, 1)] {
        let err = append(&mut c, seq, layer, &[9]).unwrap_err();
        assert!(matches!(err, CacheError::OutOfBlocks { .. }), "append({seq}, {layer}): {err:?}");
        assert_eq!((every(&c), stats(&c)), (before.clone(), (0, 8, 0, 0)), "after the refused append({seq}, {layer})");
    }
    let lens: Vec<usize> = [(0, 0), (0, 1), (1, 0), (1, 1)].iter().map(|&(s, l)| c.seq_len(s, l).unwrap()).collect();
    assert_eq!(lens, [8, 8, 6, 0]);
}

#[test]
fn the_hits_measured_on_vllm() {
    // ModelKVCache(30, 4, 2, 1, 1, prefix_caching=True, layer_windows=(None, 8)): vLLM 0.33.0's measured case.
    let mut c = cache(30, 4, &[None, Some(8)], true);
    let prompt: Vec<i64> = (0..14).collect();
    assert_eq!(c.add_seq(0, &prompt).unwrap(), 0);
    prefill(&mut c, 0, 2, 14);
    c.extend(0, &(14..20).collect::<Vec<i64>>()).unwrap();
    prefill(&mut c, 0, 2, 20);
    assert_eq!((table(&c, 0, 0), table(&c, 0, 1)), (vec![0, 2, 4, 6, 8], vec![-1, -1, -1, 7, 9]));
    assert_eq!(stats(&c), (20, 7, 3, 0), "the window's released blocks are cached");

    // A prompt sharing the 14 tokens is served 12: 3 blocks in each group, the window's first released.
    let second: Vec<i64> = (0..14).chain([99, 98]).collect();
    assert_eq!(c.add_seq(1, &second).unwrap(), 12);
    assert_eq!((table(&c, 1, 0), table(&c, 1, 1), stats(&c)), (vec![0, 2, 4], vec![-1, 3, 5], (20, 9, 1, 0)));
    c.free(0).unwrap();
    c.free(1).unwrap();
    assert_eq!(stats(&c), (20, 0, 10, 0));

    let third: Vec<i64> = (0..22).collect();
    assert_eq!(c.add_seq(2, &third).unwrap(), 20);
    prefill(&mut c, 2, 2, 22);
    assert_eq!((table(&c, 2, 0), table(&c, 2, 1)), (vec![0, 2, 4, 6, 8, 10], vec![-1, -1, -1, 7, 9, 11]));
    assert_eq!(stats(&c), (18, 9, 3, 0));
    c.free(2).unwrap();

    // A prompt sharing 18 of the 22 tokens is served 16: the window group's hit at block 4 needs blocks 2 and 3.
    let fourth: Vec<i64> = (0..18).chain(55..61).collect();
    assert_eq!(c.add_seq(3, &fourth).unwrap(), 16);
    assert_eq!((table(&c, 3, 0), table(&c, 3, 1), stats(&c)), (vec![0, 2, 4, 6], vec![-1, -1, 5, 7], (20, 6, 4, 0)));
    assert_eq!((gather(&c, 3, 0), gather(&c, 3, 1)), ((1..=16).collect(), (10..=16).collect()));
}

#[test]
fn free_lets_go_group_by_group_and_pressure_evicts_in_that_order() {
    // ModelKVCache(10, 2, 2, 1, 1, prefix_caching=True, layer_windows=(None, 16)); freeing=by-group.
    let mut c = cache(10, 2, &[None, Some(16)], true);
    let prompt = [1, 2, 3, 4, 5, 6, 7, 8, 9];
    c.add_seq(0, &prompt).unwrap();
    prefill(&mut c, 0, 2, 9);
    assert_eq!((table(&c, 0, 0), table(&c, 0, 1)), (vec![0, 2, 4, 6, 8], vec![1, 3, 5, 7, 9]));
    c.free(0).unwrap();
    // Cached in the order 6, 4, 2, 0 (full attention, tail first), then 7, 5, 3, 1; 8 and 9 (not full) are free.
    assert_eq!(stats(&c), (2, 0, 8, 0));
    c.add_seq(1, &[0; 6]).unwrap();
    prefill(&mut c, 1, 2, 6);
    assert_eq!((table(&c, 1, 0), table(&c, 1, 1)), (vec![8, 6, 2], vec![9, 4, 0]), "the free ones, then 6, 4, 2, 0");
    assert_eq!(stats(&c), (0, 6, 4, 4));
    assert_eq!(c.add_seq(2, &prompt).unwrap(), 0, "the full-attention chain is gone: no hit");
    assert_eq!((table(&c, 2, 0), table(&c, 2, 1), stats(&c)), (vec![], vec![], (0, 6, 4, 4)));
}

#[test]
fn a_hit_is_what_every_group_can_serve() {
    // ModelKVCache(12, 2, 2, 1, 1, prefix_caching=True, layer_windows=W), W = (None, 16) and (16, None): 9
    // positions of the full-attention layer, 4 of the windowed one, then freed; the same prompt again.
    for windows in [[None, Some(16)], [Some(16), None]] {
        let mut c = cache(12, 2, &windows, true);
        let (full, windowed) = if windows[0].is_none() { (0, 1) } else { (1, 0) };
        let prompt = [1, 2, 3, 4, 5, 6, 7, 8, 9];
        c.add_seq(0, &prompt).unwrap();
        for (layer, n) in [(full, 9), (windowed, 4)] {
            for p in 0..n {
                append(&mut c, 0, layer, &[p + 1]).unwrap();
            }
        }
        assert_eq!((table(&c, 0, full), table(&c, 0, windowed)), (vec![0, 1, 2, 3, 4], vec![5, 6]), "{windows:?}");
        c.free(0).unwrap();
        assert_eq!(stats(&c), (6, 0, 6, 0), "{windows:?}");
        assert_eq!(c.add_seq(1, &prompt).unwrap(), 4, "{windows:?}: the 2 blocks both groups have");
        assert_eq!((table(&c, 1, full), table(&c, 1, windowed)), (vec![0, 1], vec![5, 6]), "{windows:?}");
        assert_eq!((stats(&c), c.seq_len(1, 0).unwrap(), c.seq_len(1, 1).unwrap()), ((6, 4, 2, 0), 4, 4));
    }
}

#[test]
fn the_hit_is_the_fixed_point_of_the_groups_hits() {
    // ModelKVCache(12, 1, 2, 1, 1, prefix_caching=True, layer_windows=(None, 3)), B = 1, W = 3 (need 2). Seq 0
    // writes 6 positions of a 7-token prompt and is freed; seq 1 then takes `evict` blocks of its full layer.
    for (evict, served) in [(2, 6), (6, 0)] {
        let mut c = cache(12, 1, &[None, Some(3)], true);
        let prompt = [1, 2, 3, 4, 5, 6, 7];
        c.add_seq(0, &prompt).unwrap();
        prefill(&mut c, 0, 2, 6);
        assert_eq!((table(&c, 0, 0), table(&c, 0, 1)), (vec![0, 2, 4, 6, 8, 10], vec![-1, -1, -1, -1, 9, 11]));
        assert_eq!(stats(&c), (0, 8, 4, 0), "the window's 4 released blocks are cached, oldest first: 1, 3, 5, 7");
        c.free(0).unwrap();
        c.add_seq(1, &[9; 7]).unwrap();
        for p in 0..evict {
            append(&mut c, 1, 0, &[p as u16 + 1]).unwrap();
        }
        // Evicted, oldest first: 1, 3 (evict = 2); then 5, 7, 10, 8 (evict = 6), the full chain's last two.
        let hit = c.add_seq(2, &prompt).unwrap();
        assert_eq!(hit, served, "evict = {evict}");
        if evict == 2 {
            assert_eq!((table(&c, 2, 0), table(&c, 2, 1)), (vec![0, 2, 4, 6, 8, 10], vec![-1, -1, -1, -1, 9, 11]));
            assert_eq!(stats(&c), (0, 10, 2, 2));
        } else {
            // Full attention serves 4 blocks, the window 6; at 4 the window needs blocks 2 and 3, evicted: 0.
            assert_eq!((table(&c, 2, 0), table(&c, 2, 1), stats(&c)), (vec![], vec![], (0, 6, 6, 6)));
        }
        assert_eq!((c.seq_len(2, 0).unwrap(), c.seq_len(2, 1).unwrap()), (served, served));
    }
}

#[test]
fn fork_and_free_per_group_and_each_layer_gathers_its_own_window() {
    // ModelKVCache(6, 2, 3, 1, 1, layer_windows=(None, 3, None)): layers 0 and 2 are one group.
    let mut c = cache(6, 2, &[None, Some(3), None], false);
    c.add_seq(0, &[]).unwrap();
    prefill(&mut c, 0, 3, 5);
    assert_eq!((table(&c, 0, 0), table(&c, 0, 1), table(&c, 0, 2)), (vec![0, 2, 1], vec![-1, 3, 4], vec![0, 2, 1]));
    assert_eq!(stats(&c), (1, 5, 0, 0));
    c.fork(0, 1).unwrap();
    assert_eq!((table(&c, 1, 0), table(&c, 1, 1), stats(&c)), (vec![0, 2, 1], vec![-1, 3, 4], (1, 5, 0, 0)));
    // The child writes its windowed layer: copy on write of block 4, then the release of its entry 1.
    append(&mut c, 1, 1, &[50]).unwrap();
    assert_eq!((table(&c, 1, 1), table(&c, 0, 1), stats(&c)), (vec![-1, -1, 5], vec![-1, 3, 4], (0, 6, 0, 0)));
    assert_eq!(
        (gather(&c, 1, 0), gather(&c, 1, 1), gather(&c, 1, 2)),
        (vec![1, 2, 3, 4, 5], vec![5, 50], vec![1, 2, 3, 4, 5])
    );
    assert_eq!(gather(&c, 0, 1), [4, 5], "the parent's window is unchanged");
    // Its full-attention layer needs a copy of block 1: the pool is empty.
    assert!(matches!(append(&mut c, 1, 0, &[60]), Err(CacheError::OutOfBlocks { .. })));
    assert_eq!((table(&c, 1, 0), table(&c, 0, 0), stats(&c)), (vec![0, 2, 1], vec![0, 2, 1], (0, 6, 0, 0)));
    c.free(0).unwrap();
    assert_eq!(stats(&c), (2, 4, 0, 0));
    c.free(1).unwrap();
    assert_eq!(stats(&c), (6, 0, 0, 0));
}

#[test]
fn bad_layer_windows_get_the_contracts_errors_in_its_order() {
    // The oracle's ValueError for each (`invalid_argument` on the wire): both given, then the count, then each
    // entry; after the sizes and sliding_window's own check, before memory.
    let options = |sliding_window: Option<i64>, windows: &[Option<i64>]| Options {
        sliding_window,
        layer_windows: Some(windows.to_vec()),
        ..Options::default()
    };
    let message = |n: i64, l: i64, o: Options| match PagedKVCache::with_options(n, 2, l, 1, 1, o) {
        Err(CacheError::InvalidArgument(m)) => m,
        other => panic!("{other:?}"),
    };
    assert!(message(4, 2, options(None, &[None])).starts_with("layer_windows has 1 entries"));
    assert!(message(4, 2, options(None, &[None, Some(2), Some(2)])).starts_with("layer_windows has 3 entries"));
    assert!(message(4, 2, options(None, &[])).starts_with("layer_windows has 0 entries"));
    for bad in [1, 0, -3, 1 << 31] {
        assert!(message(4, 2, options(None, &[None, Some(bad)])).starts_with("layer_windows[1]"), "{bad}");
    }
    assert!(message(4, 2, options(None, &[Some(1), Some(0)])).starts_with("layer_windows[0]"), "entries in order");
    assert!(message(4, 2, options(Some(3), &[None, Some(3)])).contains("both given"));
    assert!(message(4, 2, options(Some(1), &[None, Some(3)])).starts_with("sliding_window"), "its own check first");
    assert!(message(4, 2, options(Some(3), &[None])).contains("both given"), "both given before the count");
    assert!(message(0, 2, options(None, &[None])).starts_with("num_blocks"), "the sizes first");
    // On a pool of 2^73 bytes (out_of_memory without a check), a bad entry or count is still the error.
    let huge = |o: Options| PagedKVCache::with_options(1 << 30, 1 << 40, 2, 1, 1, o).unwrap_err();
    assert!(
        matches!(huge(options(None, &[Some(1), None])), CacheError::InvalidArgument(m) if m.starts_with("layer_windows[0]"))
    );
    assert!(
        matches!(huge(options(None, &[None])), CacheError::InvalidArgument(m) if m.starts_with("layer_windows has 1"))
    );
    assert!(matches!(huge(options(None, &[None, Some(2)])), CacheError::OutOfMemory(_)), "a good one: memory");
}
