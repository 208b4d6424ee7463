//! The driver's own tests: PROTOCOL.md's worked transcripts, and malformed requests.

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
        < ok 1 paged-rust prefix_caching sliding_window hybrid page_tables
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
        < ok 1 paged-rust prefix_caching sliding_window hybrid page_tables
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
        < ok 1 paged-rust prefix_caching sliding_window hybrid page_tables
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
        < ok 1 paged-rust prefix_caching sliding_window hybrid page_tables
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
    assert_eq!(ask("hello 1\r"), "ok 1 paged-rust prefix_caching sliding_window hybrid page_tables allocation=any");
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
