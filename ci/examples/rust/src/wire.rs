//! The wire protocol, version 1 (docs/PROTOCOL.md): one request line in, one response line out.
//!
//! [`Driver::handle`] is the whole protocol: the stdin/stdout loop (src/bin/driver.rs) and the
//! transcript replayer (tests/vectors.rs) both call it, so the replayer needs no process.
//!
//! Every field is parsed before the cache is called, so a malformed request (`err protocol`)
//! never changes a cache. The cache's own checks answer everything else, as its error kinds.
//! The handshake announces the capabilities, `prefix_caching` (the option of `new`, and
//! token lists in `add_seq` and `extend`), `sliding_window` (the option `sliding_window=W`
//! of `new`; a released table entry travels as -1) and `hybrid` (the option
//! `layer_windows=X0,...,X(L-1)` of `new`, and a layer in `block_table`) and `page_tables` (the verbs
//! `page_table`, `slot_mapping` and `kv_pages`: what a kernel reads), then the port's profile
//! where it differs from the contract's defaults (docs/CONTRACT.md, "Profiles"): `allocation=any`, since free
//! blocks come off a stack.

use std::panic::{self, AssertUnwindSafe};

use crate::allocator::{Allocation, BlockId};
use crate::cache::{Options, PagedKVCache};
use crate::error::CacheError;
use crate::pool::{Chunk, Entry};

/// The implementation's name in the handshake's answer,
/// `ok 1 paged-rust prefix_caching sliding_window hybrid page_tables allocation=any`.
pub const NAME: &str = "paged-rust";

/// What the handshake announces after the name.
pub const CAPABILITIES: &str = "prefix_caching sliding_window hybrid page_tables";

/// Why a request was not answered `ok`.
enum Failure {
    /// The request itself is malformed: `err protocol MESSAGE`.
    Protocol(String),
    /// The cache refused the call: `err KIND MESSAGE`.
    Cache(CacheError),
}

impl From<CacheError> for Failure {
    fn from(e: CacheError) -> Self {
        Failure::Cache(e)
    }
}

fn protocol(message: impl Into<String>) -> Failure {
    Failure::Protocol(message.into())
}

/// The error kind a cache error crosses the wire as.
fn kind(e: &CacheError) -> &'static str {
    match e {
        CacheError::OutOfBlocks { .. } => "out_of_blocks",
        CacheError::UnknownSequence(_) => "unknown_sequence",
        CacheError::InvalidArgument(_) => "invalid_argument",
        CacheError::OutOfMemory(_) => "out_of_memory",
    }
}

/// One driver session: the handshake state and the caches it made, by handle (0, 1, 2, ...).
#[derive(Debug, Default)]
pub struct Driver {
    greeted: bool,
    /// How every cache of the session takes free blocks; announced at `hello`.
    allocation: Allocation,
    /// Closed caches stay here (with their memory released), so their handles stay known.
    caches: Vec<PagedKVCache>,
}

impl Driver {
    /// A session under the port's profile, `allocation=any`.
    pub fn new() -> Self {
        Self::default()
    }

    /// A session whose caches take free blocks as `allocation` says. `LowestFree` is the
    /// contract's default profile, so the handshake announces no profile setting.
    pub fn with_allocation(allocation: Allocation) -> Self {
        Driver { allocation, ..Self::default() }
    }

    /// The response line (without its `\n`) to one request line, and whether to quit now.
    ///
    /// A panic inside the port is caught and answered `err internal`, so one bad call does
    /// not end the session (the panic message still goes to stderr).
    pub fn handle(&mut self, line: &str) -> (String, bool) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let fields: Vec<&str> = line.split(' ').collect();
        let response = match panic::catch_unwind(AssertUnwindSafe(|| self.dispatch(&fields))) {
            Ok(Ok(results)) if results.is_empty() => "ok".to_string(),
            Ok(Ok(results)) => format!("ok {results}"),
            Ok(Err(Failure::Protocol(message))) => format!("err protocol {message}"),
            Ok(Err(Failure::Cache(e))) => format!("err {} {e}", kind(&e)),
            Err(_) => "err internal the driver panicked (its message is on stderr)".to_string(),
        };
        let quit = fields == ["quit"] && response == "ok";
        (response, quit)
    }

    /// The results after `ok` (possibly none), or why there are none.
    fn dispatch(&mut self, fields: &[&str]) -> Result<String, Failure> {
        let (verb, args) = (fields[0], &fields[1..]);
        if !self.greeted && verb != "hello" {
            return Err(protocol("the first request must be: hello 1"));
        }
        match (verb, args) {
            ("hello", _) if self.greeted => Err(protocol("hello was already answered: one handshake a session")),
            ("hello", [version]) => {
                if int(version)? != 1 {
                    return Err(protocol("unsupported version"));
                }
                self.greeted = true;
                Ok(match self.allocation {
                    Allocation::LowestFree => format!("1 {NAME} {CAPABILITIES}"),
                    other => format!("1 {NAME} {CAPABILITIES} allocation={}", other.profile_value()),
                })
            }
            ("quit", []) => Ok(String::new()),
            ("new", [n, b, l, h, d, words @ ..]) => {
                let (n, b, l, h, d) = (int(n)?, int(b)?, int(l)?, int(h)?, int(d)?);
                let options = new_options(words, self.allocation)?;
                let cache = PagedKVCache::with_options(n, b, l, h, d, options)?;
                self.caches.push(cache);
                Ok((self.caches.len() - 1).to_string())
            }
            ("add_seq", [c, s]) => Ok(self.cache(c)?.add_seq(int(s)?, &[])?.to_string()),
            ("add_seq", [c, s, tokens]) => {
                let tokens = ints(tokens)?;
                Ok(self.cache(c)?.add_seq(int(s)?, &tokens)?.to_string())
            }
            ("fork", [c, p, ch]) => {
                self.cache(c)?.fork(int(p)?, int(ch)?)?;
                Ok(String::new())
            }
            ("append", [c, s, layer, kshape, vshape, khex, vhex]) => {
                let (k, v) = (chunk(kshape, khex)?, chunk(vshape, vhex)?);
                self.cache(c)?.append(int(s)?, int(layer)?, &k, &v)?;
                Ok(String::new())
            }
            ("extend", [c, s, tokens]) => {
                let tokens = ints(tokens)?;
                self.cache(c)?.extend(int(s)?, &tokens)?;
                Ok(String::new())
            }
            ("gather", [c, s, layer]) => {
                let g = self.cache(c)?.gather(int(s)?, int(layer)?)?;
                Ok(format!("{} {} {}", g.len, hex(&g.k), hex(&g.v)))
            }
            ("seq_len", [c, s, layer]) => Ok(self.cache(c)?.seq_len(int(s)?, int(layer)?)?.to_string()),
            ("block_table", [c, s]) => Ok(list(&self.cache(c)?.block_table(int(s)?, 0)?)),
            ("block_table", [c, s, layer]) => Ok(list(&self.cache(c)?.block_table(int(s)?, int(layer)?)?)),
            ("page_table", [c, layer, p, ids]) => {
                let (layer, p, ids) = (int(layer)?, int(p)?, ints(ids)?);
                let t = self.cache(c)?.page_table(&ids, layer, p)?;
                Ok(format!("{} {} {}", numbers(&t.indptr), numbers(&t.indices), numbers(&t.last_page_len)))
            }
            ("slot_mapping", [c, s, layer, start, count]) => {
                let (s, layer, start, count) = (int(s)?, int(layer)?, int(start)?, int(count)?);
                Ok(numbers(&self.cache(c)?.slot_mapping(s, layer, start, count)?))
            }
            ("kv_pages", [c, layer, p, first, count]) => {
                let (layer, p, first, count) = (int(layer)?, int(p)?, int(first)?, int(count)?);
                let (k, v) = self.cache(c)?.kv_pages(layer, p, first, count)?;
                Ok(format!("{} {}", hex(&k), hex(&v)))
            }
            ("free", [c, s]) => {
                self.cache(c)?.free(int(s)?)?;
                Ok(String::new())
            }
            ("stats", [c]) => {
                let s = self.cache(c)?.stats()?;
                Ok(format!("free={} used={} cached={} evictions={}", s.free, s.used, s.cached, s.evictions))
            }
            ("num_free_blocks", [c]) => Ok(self.cache(c)?.num_free_blocks()?.to_string()),
            ("close", [c]) => {
                self.cache(c)?.close();
                Ok(String::new())
            }
            _ if VERBS.contains(&verb) => Err(protocol(format!("wrong number of fields for {verb}"))),
            _ => Err(protocol(format!("unknown request {verb:?}"))),
        }
    }

    /// The cache a handle names; a handle `new` never answered is a protocol error.
    fn cache(&mut self, handle: &str) -> Result<&mut PagedKVCache, Failure> {
        let h = int(handle)?;
        usize::try_from(h)
            .ok()
            .and_then(|i| self.caches.get_mut(i))
            .ok_or_else(|| protocol(format!("no cache has handle {h}")))
    }
}

const VERBS: [&str; 17] = [
    "hello",
    "quit",
    "new",
    "add_seq",
    "fork",
    "append",
    "extend",
    "gather",
    "seq_len",
    "block_table",
    "page_table",
    "slot_mapping",
    "kv_pages",
    "free",
    "stats",
    "num_free_blocks",
    "close",
];

// -- fields ------------------------------------------------------------------------------------

/// The options after `new N B L H D`: `prefix_caching`, `sliding_window=W` and
/// `layer_windows=X0,...`, in any order, each at most once; any other word, or one twice, is
/// malformed. W and each X must parse as an integer (an X may be `none`, a full-attention layer;
/// `-` is the empty list);
/// their ranges, the count of Xs and whether both options are given are the cache's to check
/// (`invalid_argument`, in the contract's order).
fn new_options(words: &[&str], allocation: Allocation) -> Result<Options, Failure> {
    let usage = || protocol("new N B L H D [prefix_caching] [sliding_window=W] [layer_windows=X0,X1,...]");
    let mut options = Options { allocation, ..Options::default() };
    for &word in words {
        match word.split_once('=') {
            None if word == "prefix_caching" && !options.prefix_caching => options.prefix_caching = true,
            Some(("sliding_window", w)) if options.sliding_window.is_none() => options.sliding_window = Some(int(w)?),
            Some(("layer_windows", "-")) if options.layer_windows.is_none() => options.layer_windows = Some(Vec::new()),
            Some(("layer_windows", xs)) if options.layer_windows.is_none() => {
                options.layer_windows = Some(xs.split(',').map(layer_window).collect::<Result<_, _>>()?);
            }
            _ => return Err(usage()),
        }
    }
    Ok(options)
}

/// One layer's window in `layer_windows=`: `none` (full attention) or an integer.
fn layer_window(text: &str) -> Result<Option<i64>, Failure> {
    match text {
        "none" => Ok(None),
        _ => int(text).map(Some),
    }
}

/// A decimal integer with an optional leading `-` that fits in an `i64`: no `+`, no spaces;
/// leading zeros are allowed (`007` is 7, `-0` is 0), as PROTOCOL.md says.
fn int(text: &str) -> Result<i64, Failure> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(protocol(format!("{text:?} is not a decimal integer")));
    }
    text.parse().map_err(|_| protocol(format!("{text} does not fit in 64 bits")))
}

/// A list of integers joined by `,` (token ids); `-` is the empty list.
fn ints(text: &str) -> Result<Vec<i64>, Failure> {
    if text == "-" {
        return Ok(Vec::new());
    }
    text.split(',').map(int).collect()
}

/// A shape: dimensions joined by `,`; `-` is the 0-D shape.
fn shape(text: &str) -> Result<Vec<usize>, Failure> {
    if text == "-" {
        return Ok(Vec::new());
    }
    let dim =
        |d: &str| usize::try_from(int(d)?).map_err(|_| protocol(format!("shape {text} has a negative dimension")));
    text.split(',').map(dim).collect()
}

/// float16 bit patterns, 4 hex digits each, most significant first; `-` is empty.
fn payload(text: &str) -> Result<Vec<u16>, Failure> {
    if text == "-" {
        return Ok(Vec::new());
    }
    let value = |quad: &[u8]| quad.iter().try_fold(0u16, |n, &b| Some(n << 4 | (b as char).to_digit(16)? as u16));
    match text.len() % 4 {
        0 => text.as_bytes().chunks(4).map(value).collect::<Option<_>>().ok_or_else(|| protocol("payload is not hex")),
        _ => Err(protocol(format!("payload has {} hex digits, not a multiple of 4", text.len()))),
    }
}

/// k or v: its shape, then a payload of exactly as many values as the shape's product.
fn chunk(shape_text: &str, hex_text: &str) -> Result<Chunk, Failure> {
    let (dims, data) = (shape(shape_text)?, payload(hex_text)?);
    let got = data.len();
    Chunk::new(dims, data)
        .ok_or_else(|| protocol(format!("payload has {got} values, not as many as shape {shape_text}")))
}

fn hex(values: &[u16]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    if values.is_empty() {
        return "-".to_string();
    }
    let mut out = String::with_capacity(4 * values.len());
    for &x in values {
        for shift in [12, 8, 4, 0] {
            out.push(DIGITS[usize::from(x >> shift & 0xf)] as char);
        }
    }
    out
}

/// Integers joined by `,`; `-` when there are none.
fn numbers<T: ToString>(values: &[T]) -> String {
    if values.is_empty() {
        return "-".to_string();
    }
    values.iter().map(T::to_string).collect::<Vec<_>>().join(",")
}

/// A block table: its ids joined by `,`, -1 for an entry the window released; `-` when empty.
fn list(table: &[Entry]) -> String {
    if table.is_empty() {
        return "-".to_string();
    }
    let id = |entry: &Entry| entry.map_or("-1".to_string(), |block: BlockId| block.to_string());
    table.iter().map(id).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests;
