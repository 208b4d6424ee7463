//! Replays the conformance vectors: every `*.txt` transcript in `ci/vectors/` (or in the
//! folder named by `PAGED_VECTORS_DIR`) through a fresh `Driver` per file, no process needed.
//!
//! The rules are PROTOCOL.md's "Transcripts": `# key: value` metadata at the top, `> ` a
//! request, `< ` its expected response, `#` comments and blank lines ignored; the replayer
//! sends `hello 1` itself; a response matches when it is the expected line exactly, except
//! that an expected `err KIND ...` matches any `err KIND` line. A transcript whose
//! `# requires:` names a capability the driver did not announce is skipped, with a note.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use paged_kv::Driver;

/// One request of a transcript, its line number and the response it expects.
struct Step {
    line: usize,
    request: String,
    expected: String,
}

struct Transcript {
    requires: Vec<String>,
    steps: Vec<Step>,
}

fn vectors_dir() -> PathBuf {
    match std::env::var_os("PAGED_VECTORS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../vectors"),
    }
}

fn parse(text: &str) -> Result<Transcript, String> {
    let mut t = Transcript { requires: Vec::new(), steps: Vec::new() };
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let (line, n) = (raw.strip_suffix('\r').unwrap_or(raw), i + 1);
        if let Some(caps) = line.strip_prefix("# requires:") {
            t.requires.extend(caps.split([' ', ',']).filter(|c| !c.is_empty()).map(String::from));
        } else if line.starts_with('#') || line.trim().is_empty() {
            continue;
        } else if let Some(request) = line.strip_prefix("> ").or((line == ">").then_some("")) {
            if let Some((at, _)) = pending.replace((n, request.to_string())) {
                return Err(format!("line {at}: a request without an expected response"));
            }
        } else if let Some(expected) = line.strip_prefix("< ") {
            let (at, request) = pending.take().ok_or(format!("line {n}: a response without a request"))?;
            t.steps.push(Step { line: at, request, expected: expected.to_string() });
        } else {
            return Err(format!("line {n}: neither a request, a response nor a comment"));
        }
    }
    match pending {
        Some((at, _)) => Err(format!("line {at}: a request without an expected response")),
        None => Ok(t),
    }
}

/// PROTOCOL.md's rule: exact, or the same `err KIND`, whatever the message.
fn matches(expected: &str, got: &str) -> bool {
    let (mut e, mut g) = (expected.split(' '), got.split(' '));
    expected == got || (e.next() == Some("err") && g.next() == Some("err") && e.next() == g.next())
}

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}... ({} chars)", &text[..cut], text.len()),
        None => text.to_string(),
    }
}

/// Replays one transcript: `Ok(None)` passed, `Ok(Some(reason))` skipped, `Err(report)` failed.
fn replay(path: &Path) -> Result<Option<String>, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    let transcript = parse(&text)?;
    let mut driver = Driver::new();
    let (hello, _) = driver.handle("hello 1");
    let capabilities: Vec<&str> = hello.split(' ').skip(3).collect();
    if !hello.starts_with("ok 1 ") {
        return Err(format!("hello 1 was answered {hello:?}"));
    }
    if let Some(missing) = transcript.requires.iter().find(|c| !capabilities.contains(&c.as_str())) {
        return Ok(Some(format!("requires {missing}, which the driver does not announce")));
    }
    for step in &transcript.steps {
        let (got, _) = driver.handle(&step.request);
        if !matches(&step.expected, &got) {
            return Err(format!(
                "line {}\n  request:  {}\n  expected: {}\n  got:      {}",
                step.line,
                clip(&step.request, 200),
                clip(&step.expected, 200),
                clip(&got, 200)
            ));
        }
    }
    Ok(None)
}

#[test]
fn every_transcript_replays() {
    let dir = vectors_dir();
    let mut files: Vec<PathBuf> =
        fs::read_dir(&dir).map(|entries| entries.filter_map(|e| Some(e.ok()?.path())).collect()).unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|ext| ext == "txt"));
    files.sort();
    assert!(
        !files.is_empty(),
        "no transcripts (*.txt) in {}: the conformance vectors are missing, so nothing was checked \
         (set PAGED_VECTORS_DIR to replay another folder)",
        dir.display()
    );

    // Notes go straight to stderr, past the test harness's capture, so skips are always seen.
    let mut stderr = std::io::stderr();
    let (mut passed, mut skipped, mut failures) = (0, 0, Vec::new());
    for file in &files {
        match replay(file) {
            Ok(None) => passed += 1,
            Ok(Some(reason)) => {
                skipped += 1;
                let _ = writeln!(stderr, "skipped {}: {reason}", file.display());
            }
            Err(report) => failures.push(format!("{}: {report}", file.display())),
        }
    }
    let _ = writeln!(
        stderr,
        "{passed} passed, {skipped} skipped, {} failed of {} transcripts",
        failures.len(),
        files.len()
    );
    assert!(failures.is_empty(), "{} transcripts failed:\n{}", failures.len(), failures.join("\n"));
}
