//! The paged decode against a plain dense attention over `gather` and the new token, step by step
//! through the decode order: page_table, kv_pages, decode, then the append (which may release a block).

use super::*;
use crate::cache::{Options, PagedKVCache};
use crate::pool::Chunk;

const H: usize = 2; // kv heads
const HQ: usize = 4; // query heads: two a kv head
const D: usize = 4;
const B: usize = 4;
const W: usize = 6; // layer 1's window

/// A seeded stream of float16 bit patterns of magnitude 2^-5 .. 2 (exact in f32, far from overflow).
struct Bits(u64);

impl Bits {
    fn next(&mut self) -> u16 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let r = (self.0 >> 33) as u16;
        (r & 0x8000) | ((10 + r % 6) << 10) | (r >> 4 & 0x3ff)
    }

    fn take(&mut self, n: usize) -> Vec<u16> {
        (0..n).map(|_| self.next()).collect()
    }
}

/// Dense attention of one query head in f64 over K and V `[H, len, D]` (gather's layout) and the new
/// token's row: two passes, max first.
fn dense(query: &[f32], k: &[u16], v: &[u16], len: usize, h: usize, new: (&[u16], &[u16]), scale: f64) -> Vec<f64> {
    let f = |x: u16| f64::from(f16_to_f32(x));
    let dot = |row: &[u16]| query.iter().zip(row).map(|(&a, &b)| f64::from(a) * f(b)).sum::<f64>() * scale;
    let mut rows: Vec<(&[u16], &[u16])> = (0..len).map(|t| (&k[(h * len + t) * D..][..D], &v[(h * len + t) * D..][..D])).collect();
    rows.push(new);
    let scores: Vec<f64> = rows.iter().map(|(k, _)| dot(k)).collect();
    let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
    let total: f64 = weights.iter().sum();
    (0..D).map(|j| rows.iter().zip(&weights).map(|((_, v), w)| w * f(v[j])).sum::<f64>() / total).collect()
}

/// Every page of the pool that no sequence's exported pages name set to NaN: a decode that reads one
/// position outside its pages turns its output into NaN.
fn poisoned(mut pool: Vec<u16>, held: &[i32], page_values: usize) -> Vec<u16> {
    for (page, values) in pool.chunks_mut(page_values).enumerate() {
        if !held.contains(&(page as i32)) {
            values.fill(0x7e00);
        }
    }
    pool
}

#[test]
fn paged_decode_matches_dense_attention_over_gather_and_the_new_token() {
    // Layer 0 full attention, layer 1 a window of 6 (B = 4: its release happens at lengths where
    // n + 1 - W + 1 is a multiple of B, the decode order's boundary). Two sequences, one a fork.
    let options = Options { layer_windows: Some(vec![None, Some(W as i64)]), ..Options::default() };
    let mut cache = PagedKVCache::with_options(64, B as i64, 2, H as i64, D as i64, options).unwrap();
    let mut bits = Bits(7);
    cache.add_seq(0, &[]).unwrap();
    for layer in 0..2 {
        let (k, v) = (bits.take(H * 5 * D), bits.take(H * 5 * D));
        cache.append(0, layer, &Chunk::new(vec![H, 5, D], k).unwrap(), &Chunk::new(vec![H, 5, D], v).unwrap()).unwrap();
    }
    cache.fork(0, 1).unwrap();
    let scale = 1.0 / (D as f32).sqrt();
    // Tolerance: every output is a convex combination of V values below 2 in magnitude; the f32 online
    // softmax rounds each of its at most 3 operations a position (rescale, exp, multiply-add) by 2^-24
    // relative, over at most 40 positions and the merge: (40 + 2) * 3 * 2^-24 * 2 < 1.6e-5; 1e-4 bounds it.
    let tolerance = 1e-4;
    for step in 0..14 {
        for layer in 0..2i64 {
            for page_size in [1, 2, 4] {
                let table = cache.page_table(&[0, 1], layer, page_size).unwrap();
                let p = page_size as usize;
                let pages = 64 * B / p;
                let (k, v) = cache.kv_pages(layer, page_size, 0, pages as i64).unwrap();
                let (k, v) = (poisoned(k, &table.indices, H * p * D), poisoned(v, &table.indices, H * p * D));
                let pool = Pages { k: &k, v: &v, heads: H, page_size: p, d_head: D };
                let q: Vec<f32> = bits.take(2 * HQ * D).into_iter().map(f16_to_f32).collect();
                let (k_new, v_new) = (bits.take(2 * H * D), bits.take(2 * H * D));
                let window = (layer == 1).then_some(W);
                let got = decode(&q, HQ, &pool, &table, Some((&k_new, &v_new)), window, scale);
                for (i, seq) in [0i64, 1].into_iter().enumerate() {
                    let g = cache.gather(seq, layer).unwrap();
                    for hq in 0..HQ {
                        let h = hq / (HQ / H);
                        let new = (&k_new[(i * H + h) * D..][..D], &v_new[(i * H + h) * D..][..D]);
                        let want = dense(&q[(i * HQ + hq) * D..][..D], &g.k, &g.v, g.len, h, new, f64::from(scale));
                        for (j, w) in want.iter().enumerate() {
                            let o = f64::from(got[(i * HQ + hq) * D + j]);
                            assert!(
                                (o - w).abs() <= tolerance,
                                "out[{i}, {hq}, {j}]={o}, but should be {w} [step {step}, layer {layer}, P = {p}]"
                            );
                        }
                    }
                }
            }
            // The append after the kernel: sequence 0 one token, sequence 1 one (its first is a copy on write).
            for seq in [0, 1] {
                let (k, v) = (bits.take(H * D), bits.take(H * D));
                cache.append(seq, layer, &Chunk::new(vec![H, 1, D], k).unwrap(), &Chunk::new(vec![H, 1, D], v).unwrap()).unwrap();
            }
        }
    }
}

#[test]
fn merge_state_is_the_softmax_over_both_parts() {
    // One position each side, scores 0 and ln 3: weights 1/4 and 3/4.
    let merged = merge_state(&[1.0, 0.0], 0.0, &[0.0, 1.0], 3f32.ln());
    assert!((merged[0] - 0.25).abs() < 1e-6 && (merged[1] - 0.75).abs() < 1e-6, "{merged:?}");
    assert_eq!(merge_state(&[0.0], f32::NEG_INFINITY, &[2.0], 1.0), vec![2.0], "no page: the new token alone");
}

#[test]
fn float16_bits_read_exactly() {
    assert_eq!(f16_to_f32(0x3c00), 1.0);
    assert_eq!(f16_to_f32(0xc000), -2.0);
    assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
    assert_eq!(f16_to_f32(0x7bff), 65504.0);
    assert_eq!(f16_to_f32(0xfc00), f32::NEG_INFINITY);
    assert!(f16_to_f32(0x7e00).is_nan());
}
