//! paged-kv-driver: the wire protocol (docs/PROTOCOL.md) over stdin and stdout.
//!
//! One request line in, one response line out, flushed at once (the client waits for it).
//! Exits 0 on `quit` or at the end of input. Everything else is in `paged_kv::wire`.
//!
//! `paged-kv-driver [--allocation=any|lowest-free]`: the port's profile, `allocation=any`
//! (announced at `hello`), unless `--allocation=lowest-free` asks for the contract's default
//! (the reference's block ids, for a gate that compares tables exactly).

use std::io::{self, BufRead, Write};
use std::process::ExitCode;

use paged_kv::{Allocation, Driver};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut driver = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] | ["--allocation=any"] => Driver::new(),
        ["--allocation=lowest-free"] => Driver::with_allocation(Allocation::LowestFree),
        _ => {
            eprintln!("usage: paged-kv-driver [--allocation=any|lowest-free]");
            return ExitCode::from(2);
        }
    };
    let mut out = io::stdout().lock();
    for line in io::stdin().lock().split(b'\n') {
        let Ok(line) = line else { break };
        // Bytes that are not UTF-8 cannot parse as any field: the handler answers `err protocol`.
        let (response, quit) = driver.handle(&String::from_utf8_lossy(&line));
        if writeln!(out, "{response}").and_then(|()| out.flush()).is_err() || quit {
            break; // the client is gone, or asked us to go
        }
    }
    ExitCode::SUCCESS
}
