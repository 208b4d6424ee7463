//! A paged decode attention over the exported page tables, as an engine calls its kernel
//! (CONTRACT.md, "Page tables for kernels": the decode order).
//!
//! One query token a sequence, `q` `[n, Hq, D]` (Hq a multiple of H, grouped-query heads: query head
//! hq reads kv head hq / (Hq / H)), over the pages `indices[indptr[i] .. indptr[i + 1]]` of a pool
//! `[pages, H, P, D]` (HND, float16 bits, `PagedKVCache::kv_pages`), the last page cut to
//! `last_page_len`. A float32 online softmax reads each position once, no gather of the sequence.
//! With a window W only the last min(kv_len, W - 1) exported positions count (the first page's
//! leading positions are masked, FlashInfer's `window_left`). The new token's own K and V, not yet
//! appended, are folded in by a log-sum-exp merge (FlashInfer's `merge_state`), so the append that
//! follows may release a block without the kernel ever needing it.

use crate::cache::PageTable;

/// A pool of pages in HND: `k` and `v` each `[pages, heads, page_size, d_head]`, float16 bits.
#[derive(Clone, Copy, Debug)]
pub struct Pages<'a> {
    pub k: &'a [u16],
    pub v: &'a [u16],
    pub heads: usize,
    pub page_size: usize,
    pub d_head: usize,
}

/// The running state of one query head's softmax: the largest score, the sum of exp(score - max),
/// and the V rows weighted by exp(score - max).
struct Softmax {
    max: f32,
    sum: f32,
    acc: Vec<f32>,
}

impl Softmax {
    fn new(d: usize) -> Self {
        Softmax { max: f32::NEG_INFINITY, sum: 0.0, acc: vec![0.0; d] }
    }

    /// Take in one position: its score and its V row.
    fn push(&mut self, score: f32, v: &[u16]) {
        let max = self.max.max(score);
        let (old, new) = ((self.max - max).exp(), (score - max).exp());
        self.sum = self.sum * old + new;
        for (a, &x) in self.acc.iter_mut().zip(v) {
            *a = *a * old + new * f16_to_f32(x);
        }
        self.max = max;
    }

    /// The output (acc / sum) and its log-sum-exp; no position: zeros and -inf.
    fn finish(self) -> (Vec<f32>, f32) {
        if self.sum == 0.0 {
            return (self.acc, f32::NEG_INFINITY);
        }
        let sum = self.sum;
        (self.acc.into_iter().map(|a| a / sum).collect(), self.max + sum.ln())
    }
}

/// FlashInfer's `merge_state`: two softmax outputs over disjoint positions, each with its
/// log-sum-exp, as one output over both.
pub fn merge_state(a: &[f32], lse_a: f32, b: &[f32], lse_b: f32) -> Vec<f32> {
    if lse_a == f32::NEG_INFINITY {
        return b.to_vec();
    }
    if lse_b == f32::NEG_INFINITY {
        return a.to_vec();
    }
    let max = lse_a.max(lse_b);
    let (wa, wb) = ((lse_a - max).exp(), (lse_b - max).exp());
    a.iter().zip(b).map(|(&x, &y)| (x * wa + y * wb) / (wa + wb)).collect()
}

/// Decode attention of `q` `[n, q_heads, D]` over the sequences' pages, the new tokens' own K and V
/// (`[n, H, D]` each, float16 bits) merged in when given; `window`: the layer's W. Returns `[n, q_heads, D]`.
pub fn decode(
    q: &[f32],
    q_heads: usize,
    pool: &Pages,
    table: &PageTable,
    new: Option<(&[u16], &[u16])>,
    window: Option<usize>,
    scale: f32,
) -> Vec<f32> {
    let (heads, p, d) = (pool.heads, pool.page_size, pool.d_head);
    let group = q_heads / heads;
    let n = table.last_page_len.len();
    let mut out = Vec::with_capacity(n * q_heads * d);
    for i in 0..n {
        let pages = &table.indices[table.indptr[i] as usize..table.indptr[i + 1] as usize];
        let kv_len = match pages.len() {
            0 => 0,
            count => (count - 1) * p + table.last_page_len[i] as usize,
        };
        let skip = window.map_or(0, |w| kv_len - kv_len.min(w - 1)); // the masked leading positions
        for hq in 0..q_heads {
            let h = hq / group;
            let query = &q[(i * q_heads + hq) * d..][..d];
            let mut state = Softmax::new(d);
            for pos in skip..kv_len {
                let row = ((pages[pos / p] as usize * heads + h) * p + pos % p) * d;
                state.push(score(query, &pool.k[row..row + d], scale), &pool.v[row..row + d]);
            }
            let (o, lse) = state.finish();
            let merged = match new {
                Some((k_new, v_new)) => {
                    let row = (i * heads + h) * d;
                    let (k, v) = (&k_new[row..row + d], &v_new[row..row + d]);
                    let v: Vec<f32> = v.iter().map(|&x| f16_to_f32(x)).collect();
                    merge_state(&o, lse, &v, score(query, k, scale))
                }
                None => o,
            };
            out.extend(merged);
        }
    }
    out
}

/// q . k * scale, in float32.
fn score(q: &[f32], k: &[u16], scale: f32) -> f32 {
    q.iter().zip(k).map(|(&a, &b)| a * f16_to_f32(b)).sum::<f32>() * scale
}

/// A float16 bit pattern's value as f32 (exact: every float16 is an f32).
pub fn f16_to_f32(bits: u16) -> f32 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let (exp, frac) = (i32::from(bits >> 10 & 0x1f), f32::from(bits & 0x3ff));
    match exp {
        0 => sign * frac * 2f32.powi(-24),
        0x1f if frac == 0.0 => sign * f32::INFINITY,
        0x1f => f32::NAN,
        _ => sign * (1.0 + frac / 1024.0) * 2f32.powi(exp - 15),
    }
}

#[cfg(test)]
mod tests;
