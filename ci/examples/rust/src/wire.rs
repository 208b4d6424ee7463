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
//! `layer_windows=X0,...,X(L-1)` of `new`, and a layer in `block_table`), then the port's profile
//! where it differs from the contract's defaults (docs/CONTRACT.md, "Profiles"): `allocation=any`, since free
//! blocks come off a stack.

use std::panic::{self, AssertUnwindSafe};

use crate::allocator::{Allocation, BlockId};
use crate::cache::{Options, PagedKVCache};
use crate::error::CacheError;
use crate::pool::{Chunk, Entry};

/// The implementation's name in the handshake's answer,
/// `ok 1 paged-rust prefix_caching sliding_window hybrid allocation=any`.
pub const NAME: &str = "paged-rust";

/// What the handshake announces after the name.
pub const CAPABILITIES: &str = "prefix_caching sliding_window hybrid";

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

const VERBS: [&str; 14] = [
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

/// A block table: its ids joined by `,`, -1 for an entry the window released; `-` when empty.
fn list(table: &[Entry]) -> String {
    if table.is_empty() {
        return "-".to_string();
    }
    let id = |entry: &Entry| entry.map_or("-1".to_string(), |block: BlockId| block.to_string());
    table.iter().map(id).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Send each `> request`, compare with the `< response` after it, exactly (lowest-free ids:
    /// PROTOCOL.md's transcripts are the reference's).
    fn replay(transcript: &str) {
        let mut driver = Driver::with_allocation(Allocation::LowestFree);
        let mut lines = transcript.lines().map(str::trim).filter(|l| !l.is_empty());
        while let Some(request) = lines.next() {
            let expected = lines.next().and_then(|l| l.strip_prefix("< ")).expect("a response line");
            let (got, _) = driver.handle(request.strip_prefix("> ").expect("a request line"));
            assert_eq!(got, expected, "request: {request}");
        }
    }

    #[test]
    fn the_worked_transcript_of_protocol_md() {
        replay(
            "> hello 1
            < ok 1 paged-rust prefix_caching sliding_window hybrid
            > new 4 2 1 1 2
            < ok 0
            > add_seq 0 0
            < ok 0
            > append 0 0 0 1,1,2 1,1,2 38000000 b8008000
            < ok
            > append 0 0 0 1,1,2 1,1,2 3e00bc00 be003c00
            < ok
            > append 0 0 0 1,1,2 1,1,2 4100c000 c1004000
            < ok
            > block_table 0 0
            < ok 0,1
            > stats 0
            < ok free=2 used=2 cached=0 evictions=0
            > gather 0 0 0
            < ok 3 380000003e00bc004100c000 b8008000be003c00c1004000
            > fork 0 0 1
            < ok
            > append 0 1 0 1,1,2 1,1,2 4300c200 c3004200
            < ok
            > block_table 0 1
            < ok 0,2
            > seq_len 0 1 0
            < ok 4
            > append 0 0 5 1,1,2 1,1,2 4300c200 c3004200
            < err invalid_argument layer 5 is outside 0 .. 0
            > gather 0 7 0
            < err unknown_sequence sequence 7 is not live
            > append 0 0 0 1,0,2 1,0,2 - -
            < err invalid_argument an append needs at least one position (T = 0)
            > new 0 2 1 1 2
            < err invalid_argument num_blocks must be at least 1, got 0
            > close 0
            < ok
            > stats 0
            < err invalid_argument the cache is closed
            > quit
            < ok",
        );
    }

    #[test]
    fn the_prefix_caching_transcript_of_protocol_md() {
        replay(
            "> hello 1
            < ok 1 paged-rust prefix_caching sliding_window hybrid
            > new 4 2 1 1 1 prefix_caching
            < ok 0
            > add_seq 0 0 7,8,9
            < ok 0
            > append 0 0 0 1,3,1 1,3,1 3c0040004200 bc00c000c200
            < ok
            > free 0 0
            < ok
            > stats 0
            < ok free=3 used=0 cached=1 evictions=0
            > add_seq 0 1 7,8,9,10
            < ok 2
            > block_table 0 1
            < ok 0
            > extend 0 1 11
            < ok
            > append 0 1 0 1,3,1 1,3,1 440045004600 c400c500c600
            < ok
            > append 0 1 0 1,1,1 1,1,1 4700 c700
            < err invalid_argument positions 5 .. 5 of layer 0 need declared token ids; sequence 1 has declared 5 (add_seq's tokens, then extend)",
        );
    }

    #[test]
    fn a_sliding_window_transcript() {
        // W = 2, B = 1, one layer, one head, D = 1: after two positions, position 0 is out of
        // every window, its block goes back to the pool and its entry reads -1.
        replay(
            "> hello 1
            < ok 1 paged-rust prefix_caching sliding_window hybrid
            > new 2 1 1 1 1 sliding_window=2
            < ok 0
            > add_seq 0 0
            < ok 0
            > append 0 0 0 1,2,1 1,2,1 3c004000 bc00c000
            < ok
            > block_table 0 0
            < ok -1,1
            > gather 0 0 0
            < ok 1 4000 c000
            > seq_len 0 0 0
            < ok 2
            > stats 0
            < ok free=1 used=1 cached=0 evictions=0
            > append 0 0 0 1,2,1 1,2,1 42004400 c200c400
            < err out_of_blocks the append needs 2 blocks, 1 free
            > fork 0 0 1
            < ok
            > block_table 0 1
            < ok -1,1
            > new 4 2 1 1 1 sliding_window=3 prefix_caching
            < ok 1
            > new 4 2 1 1 1 prefix_caching sliding_window=0002
            < ok 2
            > new 4 2 1 1 1 sliding_window=1
            < err invalid_argument sliding_window must be from 2 to 2^31 - 1, got 1
            > new 4 2 1 1 1 sliding_window=2147483648
            < err invalid_argument sliding_window must be from 2 to 2^31 - 1, got 2147483648
            > new 0 2 1 1 1 sliding_window=1
            < err invalid_argument num_blocks must be at least 1, got 0
            > new 4 2 1 1 1 sliding_window=2147483647
            < ok 3",
        );
    }

    #[test]
    fn a_hybrid_transcript() {
        // PagedKVCache(8, 2, 2, 1, 1, layer_windows=(None, 2)) after 3 positions of each layer; the oracle's answers.
        // block_table names a group by a layer of it (layer 0 without one); bad layer windows are the cache's errors.
        replay(
            "> hello 1
            < ok 1 paged-rust prefix_caching sliding_window hybrid
            > new 8 2 2 1 1 layer_windows=none,2
            < ok 0
            > add_seq 0 0
            < ok 0
            > append 0 0 0 1,3,1 1,3,1 3c0040004200 bc00c000c200
            < ok
            > append 0 0 1 1,3,1 1,3,1 3c0040004200 bc00c000c200
            < ok
            > block_table 0 0 0
            < ok 0,1
            > block_table 0 0 1
            < ok -1,3
            > block_table 0 0
            < ok 0,1
            > gather 0 0 1
            < ok 1 4200 c200
            > block_table 0 0 2
            < err invalid_argument layer 2 is outside 0 .. 1
            > block_table 0 5 2
            < err unknown_sequence sequence 5 is not live
            > new 8 2 2 1 1 prefix_caching layer_windows=4,none
            < ok 1
            > new 8 2 2 1 1 layer_windows=none
            < err invalid_argument layer_windows has 1 entries, one a layer is 2
            > new 8 2 2 1 1 layer_windows=none,1
            < err invalid_argument layer_windows[1] must be from 2 to 2^31 - 1, got 1
            > new 8 2 2 1 1 sliding_window=2 layer_windows=none,2
            < err invalid_argument sliding_window and layer_windows are both given
            > new 8 2 2 1 1 sliding_window=1 layer_windows=none,2
            < err invalid_argument sliding_window must be from 2 to 2^31 - 1, got 1
            > new 0 2 2 1 1 layer_windows=1
            < err invalid_argument num_blocks must be at least 1, got 0
            > new 8 2 2 1 1 layer_windows=-
            < err invalid_argument layer_windows has 0 entries, one a layer is 2",
        );
        let mut d = Driver::new();
        d.handle("hello 1");
        for bad in [
            "new 8 2 2 1 1 layer_windows=",
            "new 8 2 2 1 1 layer_windows=none,",
            "new 8 2 2 1 1 layer_windows=None,2",
            "new 8 2 2 1 1 layer_windows=none,+2",
            "new 8 2 2 1 1 layer_windows=none,2 layer_windows=none,2",
            "new 8 2 2 1 1 layer_windows",
            "block_table 0 0 0 0",
        ] {
            assert!(d.handle(bad).0.starts_with("err protocol "), "{bad:?}");
        }
    }

    #[test]
    fn malformed_requests_are_protocol_errors() {
        let mut d = Driver::new();
        let mut ask = |line: &str| d.handle(line).0;
        assert!(ask("new 4 2 1 1 2").starts_with("err protocol "), "no hello first");
        assert_eq!(ask("hello 2"), "err protocol unsupported version");
        assert_eq!(ask("hello 1\r"), "ok 1 paged-rust prefix_caching sliding_window hybrid allocation=any");
        assert!(ask("hello 1").starts_with("err protocol "), "a second hello");
        for bad in [
            "new 4 2 1 1",
            "new 4 2 1 1 2 prefix",
            "new 4 2 1 1 2 prefix_caching prefix_caching",
            "new 4 2 1 1 2 sliding_window=2 sliding_window=2",
            "new 4 2 1 1 2 sliding_window=2 prefix_caching sliding_window=3",
            "new 4 2 1 1 2 sliding_window=2 prefix_caching extra",
            "new 4 2 1 1 2 sliding_window",
            "new 4 2 1 1 2 sliding_window=",
            "new 4 2 1 1 2 sliding_window=+2",
            "new 4 2 1 1 2 sliding_window=2=2",
            "new 4 2 1 1 2 sliding_window=9223372036854775808",
            "new 4 2 1 1 2 sliding-window=2",
            "new 4 2 1 1 2 prefix_caching=1",
            "new +4 2 1 1 2",
            "new 4 2 1 1 9223372036854775808",
            "stats 0",
            "frobnicate",
            "",
        ] {
            assert!(ask(bad).starts_with("err protocol "), "{bad:?}");
        }
        assert_eq!(ask("new 4 2 1 1 2"), "ok 0");
        assert_eq!(ask("new 1 1 1 1 -1").split(' ').nth(1), Some("invalid_argument"));
        assert_eq!(ask("new 2147483648 1 1 1 1").split(' ').nth(1), Some("invalid_argument"), "block ids are int32");
        assert_eq!(ask("new 2147483647 2147483647 1 1 1").split(' ').nth(1), Some("out_of_memory"));
        assert_eq!(ask("new 1073741824 268435456 1 1 1").split(' ').nth(1), Some("out_of_memory"));
        assert_eq!(ask("new 1 1 1 1 1"), "ok 1", "a failed new takes no handle");
        assert_eq!(ask("add_seq 0 -9223372036854775808"), "ok 0");
        for bad in [
            "add_seq 0 1 5,,6",
            "add_seq 0 1 5 6",
            "extend 0 1 +5",
            "append 0 1 0 1,1,2 1,1,2 3800 b8008000",
            "append 0 1 0 1,1,2 1,1,2 38000000 b800800g",
            "append 0 1 0 1,-1,2 1,1,2 - b8008000",
            "gather 2 0 0",
            "gather -1 0 0",
        ] {
            assert!(ask(bad).starts_with("err protocol "), "{bad:?}");
        }
        // Shapes reach the port: a 0-D k, then an unknown sequence, answer the port's kinds.
        assert!(ask("append 0 -9223372036854775808 0 - 1,1,2 3c00 b8008000").starts_with("err invalid_argument "));
        assert!(ask("append 0 5 0 - 1,1,2 3c00 b8008000").starts_with("err unknown_sequence "));
        assert_eq!(ask("gather 0 -9223372036854775808 0"), "ok 0 - -");
        assert_eq!(ask("block_table 0 -9223372036854775808"), "ok -");
    }
}
