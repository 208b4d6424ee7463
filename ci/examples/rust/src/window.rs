//! The sliding window (CONTRACT.md, "Sliding window (opt-in)"): the arithmetic of which
//! positions a layer still needs and which block indices no layer needs any more.
//!
//! The token at position p attends to positions p - W + 1 .. p. So once a layer holds n
//! positions, its next token needs only positions max(0, n - W + 1) .. n - 1: the layer's
//! window, which `gather` returns. A block index whose positions are all before the window of
//! the shortest layer is *released*: the sequence lets go of its block, and its table entry
//! becomes -1 (`None` here). Every rule of the window that is arithmetic is here, so that
//! cache.rs asks and never computes: [`Window::start`] (where a window starts),
//! [`Window::released`] (the released block indices), [`Window::blocks_needed`] and
//! [`Window::blocks_served`] (a prefix-cache hit).

use crate::error::CacheError;

/// The largest window: W is an `int32`, as block ids are.
pub const MAX_WINDOW: i64 = i32::MAX as i64;

/// A window of W positions: a token and the W - 1 positions before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    size: usize,
}

impl Window {
    /// A window of `size` positions, 2 .. 2^31 - 1 (a window of one position would be the
    /// token alone, with nothing cached to attend to); `InvalidArgument` outside.
    pub fn new(size: i64) -> Result<Window, CacheError> {
        if !(2..=MAX_WINDOW).contains(&size) {
            return Err(CacheError::InvalidArgument(format!("sliding_window must be from 2 to 2^31 - 1, got {size}")));
        }
        Ok(Window { size: size as usize })
    }

    /// W, the window's positions.
    pub fn size(self) -> usize {
        self.size
    }

    /// The first position of the window of a layer that holds `len` positions:
    /// max(0, len - W + 1). The window is `start(len) .. len`, at most W - 1 positions.
    pub fn start(self, len: usize) -> usize {
        len.saturating_sub(self.size - 1)
    }

    /// How many block indices, from the first, are released once the shortest layer holds
    /// `min_len` positions: index i is released when (i + 1) * B <= min_len - W + 1, that is
    /// when the whole block is before the start of that layer's window (a layer that lags
    /// keeps the blocks it still needs). Indices 0 .. the returned count are released.
    pub fn released(self, min_len: usize, block_size: usize) -> usize {
        self.start(min_len) / block_size
    }

    /// The blocks a prefix-cache hit must hold: those of the W - 1 positions before the first
    /// one it computes, ceil((W - 1) / B).
    pub fn blocks_needed(self, block_size: usize) -> usize {
        (self.size - 1).div_ceil(block_size)
    }

    /// How many blocks a hit serves, given the keys along the prompt (`registered[j]`: whether
    /// the key tokens[: (j + 1) B] is registered; the keys end before the last token): the
    /// largest k whose last `blocks_needed` keys, those ending at blocks k - need .. k - 1, are
    /// all registered; else, when there is no such k, the longest run of registered keys from
    /// the first block, as without the window.
    pub fn blocks_served(self, registered: &[bool], block_size: usize) -> usize {
        let need = self.blocks_needed(block_size);
        let (mut run, mut served) = (0, None);
        for (j, &is_registered) in registered.iter().enumerate() {
            run = if is_registered { run + 1 } else { 0 };
            if run >= need {
                served = Some(j + 1); // keys j + 1 - need ..= j: k = j + 1 works
            }
        }
        served.unwrap_or_else(|| registered.iter().take_while(|&&r| r).count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_from_2_to_2_pow_31_minus_1() {
        for bad in [i64::MIN, -1, 0, 1, MAX_WINDOW + 1, i64::MAX] {
            assert!(matches!(Window::new(bad), Err(CacheError::InvalidArgument(_))), "{bad}");
        }
        assert_eq!(Window::new(2).unwrap().size(), 2);
        assert_eq!(Window::new(MAX_WINDOW).unwrap().size(), (1 << 31) - 1);
    }

    #[test]
    fn the_window_is_the_last_w_minus_1_positions() {
        let w = Window::new(4).unwrap(); // a token attends to itself and the 3 before it
        let starts: Vec<usize> = (0..8).map(|n| w.start(n)).collect();
        assert_eq!(starts, [0, 0, 0, 0, 1, 2, 3, 4]);
        assert_eq!(Window::new(2).unwrap().start(5), 4, "W = 2: the previous position only");
    }

    #[test]
    fn a_block_is_released_once_wholly_before_the_window() {
        // W = 4, B = 2: index i is released when 2(i + 1) <= m - 3.
        let w = Window::new(4).unwrap();
        let released: Vec<usize> = (0..10).map(|m| w.released(m, 2)).collect();
        assert_eq!(released, [0, 0, 0, 0, 0, 1, 1, 2, 2, 3]);
        // B = 3, W = 2: index i is released when 3(i + 1) <= m - 1.
        let released: Vec<usize> = (0..8).map(|m| Window::new(2).unwrap().released(m, 3)).collect();
        assert_eq!(released, [0, 0, 0, 0, 1, 1, 1, 2]);
    }

    #[test]
    fn a_hit_needs_the_blocks_of_w_minus_1_positions() {
        let needs: Vec<usize> = [2, 3, 4, 5, 9].iter().map(|&w| Window::new(w).unwrap().blocks_needed(2)).collect();
        assert_eq!(needs, [1, 1, 2, 2, 4], "ceil((W - 1) / 2)");
        assert_eq!(Window::new(3).unwrap().blocks_needed(1), 2);
    }

    #[test]
    fn a_hit_serves_the_last_run_of_need_keys() {
        let w = Window::new(5).unwrap(); // B = 2: need = 2
        assert_eq!(w.blocks_served(&[true, true, true, true], 2), 4, "every key: all of them");
        assert_eq!(w.blocks_served(&[false, true, true, false, true], 2), 3, "the last run of two");
        assert_eq!(w.blocks_served(&[false, false, true, true], 2), 4, "the first keys are not needed");
        assert_eq!(w.blocks_served(&[true, false, true, false, true], 2), 1, "no run of two: the run from block 0");
        assert_eq!(w.blocks_served(&[false, true], 2), 0);
        assert_eq!(w.blocks_served(&[], 2), 0);
        let w = Window::new(3).unwrap(); // B = 2: need = 1
        assert_eq!(w.blocks_served(&[false, false, true, false], 2), 3, "one registered key is enough");
    }
}
