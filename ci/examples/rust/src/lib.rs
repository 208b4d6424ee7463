//! A Rust port of the paged KV cache (CONTRACT.md), with a driver for the wire protocol
//! (docs/PROTOCOL.md) so that the Python verification suite can check it.
//!
//! - [`allocator`]: reference counts, the free stack (or lowest free id), the cached blocks' eviction order.
//! - [`attention`]: a paged decode over the exported page tables, as an engine calls its kernel.
//! - [`cache`]: `PagedKVCache`, the contract's calls over float16 bit patterns, and the page tables a kernel reads.
//! - [`error`]: `CacheError`, the ways a call can fail (every module that checks depends on it, none on the cache).
//! - [`groups`]: the kinds of layer (full attention, sliding window) and the groups of a hybrid model.
//! - [`pool`]: the memory: the K and V pools' layout, the chunks in and out, where a position lives.
//! - [`prefix`]: prefix caching's keys, a tree of block-sized prefixes of token ids.
//! - [`wire`]: the protocol: one request line in, one response line out.
//! - [`window`]: the sliding window's arithmetic: where a window starts, which blocks are released.
//!
//! Standard library only, so that it builds offline and reads as a template for ports.

pub mod allocator;
pub mod attention;
pub mod cache;
pub mod error;
pub mod groups;
pub mod pool;
pub mod prefix;
pub mod window;
pub mod wire;

pub use allocator::{Allocation, BlockAllocator, BlockId};
pub use cache::{Options, PageTable, PagedKVCache, SeqId, Stats};
pub use error::CacheError;
pub use pool::{Chunk, Entry, Gathered};
pub use prefix::{PrefixIndex, TokenId};
pub use window::Window;
pub use wire::Driver;
