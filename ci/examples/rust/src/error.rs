//! `CacheError`: the ways a call of the cache can fail, each a kind on the wire.
//!
//! In a module of its own so that every module that checks an argument (cache.rs, groups.rs,
//! window.rs) depends on the error, and none on the cache: the port's modules form no cycle.

use std::fmt;

/// The ways a call can fail; each crosses the wire as its kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheError {
    /// An append needs more blocks (copies plus new ones) than it can take: free, plus cached.
    OutOfBlocks { needed: usize, free: usize },
    /// A sequence id (`SeqId`) that is not live: never added, or freed.
    UnknownSequence(i64),
    /// Reused ids, layers out of range, bad shapes, T = 0, sizes below 1 (or `num_blocks` past
    /// 2^31 - 1), calls after close.
    InvalidArgument(String),
    /// The constructor's pools need this many bytes (None: more than a `u64` counts), and the
    /// memory is not to be had.
    OutOfMemory(Option<u64>),
}

impl fmt::Display for CacheError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CacheError::OutOfBlocks { needed, free } => write!(f, "the append needs {needed} blocks, {free} free"),
            CacheError::UnknownSequence(id) => write!(f, "sequence {id} is not live"),
            CacheError::InvalidArgument(message) => f.write_str(message),
            CacheError::OutOfMemory(Some(bytes)) => write!(f, "the pools need {bytes} bytes, which cannot be allocated"),
            CacheError::OutOfMemory(None) => f.write_str("the pools need 2^64 bytes or more"),
        }
    }
}

impl std::error::Error for CacheError {}

/// `InvalidArgument` with this message: the cache's most common error.
pub(crate) fn invalid(message: impl Into<String>) -> CacheError {
    CacheError::InvalidArgument(message.into())
}
