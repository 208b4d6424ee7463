//! The cache's unit tests: the seed's worked example, the reference's error order, prefix
//! caching's registration, and the contract's integer ranges (each fails if that quantity is
//! narrowed). In a file of their own so that cache.rs reads as the port, top to bottom.

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
