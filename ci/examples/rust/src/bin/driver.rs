//! paged-kv-driver: the wire protocol (docs/PROTOCOL.md) over stdin and stdout.
//!
//! One request line in, one response line out, in order. Answers are flushed whenever no further
//! request is waiting in the input buffer: a client that waits for each answer gets it at once, and
//! one that sends a run of requests gets their answers in one write.
//! Exits 0 on `quit` or at the end of input. Everything else is in `paged_kv::wire`.
//!
//! `paged-kv-driver [--allocation=any|lowest-free]`: the port's profile, `allocation=any`
//! (announced at `hello`), unless `--allocation=lowest-free` asks for the contract's default
//! (the reference's block ids, for a gate that compares tables exactly).

use std::io::{self, BufRead, BufReader, BufWriter, Write};
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
    let mut input = BufReader::with_capacity(1 << 16, io::stdin().lock());
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break, // end of input
            Ok(_) => {}
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        // Bytes that are not UTF-8 cannot parse as any field: the handler answers `err protocol`.
        let (response, quit) = driver.handle(&String::from_utf8_lossy(&line));
        let mut sent = writeln!(out, "{response}");
        if input.buffer().is_empty() || quit {
            sent = sent.and_then(|()| out.flush()); // no request waits: the client may be waiting for this answer
        }
        if sent.is_err() || quit {
            break; // the client is gone, or asked us to go
        }
    }
    let _ = out.flush(); // the answers to requests at the end of input without a `quit`
    ExitCode::SUCCESS
}
