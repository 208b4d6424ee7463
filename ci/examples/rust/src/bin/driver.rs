//! paged-kv-driver: the wire protocol (docs/PROTOCOL.md) over stdin and stdout.
//!
//! One request line in, one response line out, flushed at once (the client waits for it).
//! Exits 0 on `quit` or at the end of input. Everything else is in `paged_kv::wire`.

use std::io::{self, BufRead, Write};

use paged_kv::Driver;

fn main() {
    let mut driver = Driver::new();
    let mut out = io::stdout().lock();
    for line in io::stdin().lock().split(b'\n') {
        let Ok(line) = line else { break };
        // Bytes that are not UTF-8 cannot parse as any field: the handler answers `err protocol`.
        let (response, quit) = driver.handle(&String::from_utf8_lossy(&line));
        if writeln!(out, "{response}").and_then(|()| out.flush()).is_err() || quit {
            break; // the client is gone, or asked us to go
        }
    }
}
