//! Replays the conformance vectors: every `*.txt` transcript in `ci/vectors/` (or in the
//! folder named by `PAGED_VECTORS_DIR`) through a fresh `Driver` per file, no process needed.
//!
//! The rules are PROTOCOL.md's "Transcripts": `# key: value` metadata at the top, `> ` a
//! request, `< ` its expected response, `#` comments and blank lines ignored; the replayer
//! sends `hello 1` itself, unless the header says `# handshake: in-transcript` (the transcript's
//! first request is then the session's first); a response matches when it is the expected line
//! exactly, except that an expected `err KIND ...` matches any `err KIND` line and an expected
//! `ok 1` to a `hello` any answer that starts `ok 1`. A transcript whose `# requires:` names a
//! capability the driver did not announce is skipped, with a note.
//!
//! Profiles (docs/CONTRACT.md, "Profiles"): the driver's `hello` names its profile settings (`OPTION=VALUE`
//! words); a transcript whose `# profile:` header names a value the driver's profile does not
//! have is skipped, with the reason. Under `allocation=lowest-free` block tables compare
//! exactly. Under `allocation=any` they compare up to a renaming of block ids ([`Renaming`]):
//! per cache handle, a bijection between the transcript's (the oracle's) ids and the port's,
//! bound at a `block_table` answer and unbound by the transcript's `# released C IDS` lines. A
//! table entry the sliding window released is -1 (docs/CONTRACT.md, "Sliding window"): it
//! names no block, so it must be -1 on both sides and binds nothing.
//!
//! Two tests, one per mode, selectable by name: `under_the_ports_profile` (the driver as it
//! ships, `allocation=any`) and `with_lowest_free_ids` (`Driver::with_allocation(LowestFree)`,
//! the contract's default profile, exact tables).
//!
//! With `PAGED_VECTORS_FIRST_FAILURE` set (the planted-mutant runner sets it: a mutant's verdict
//! needs one failure), each test stops at its first failing transcript and says how many it left.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use paged_kv::{Allocation, Driver};

/// One request of a transcript, its line number, the response it expects, and the oracle
/// block ids whose lifetime ended during it (`# released C IDS` lines after its response).
struct Step {
    line: usize,
    request: String,
    expected: String,
    released: Vec<(i64, Vec<i64>)>,
}

struct Transcript {
    requires: Vec<String>,
    /// `# handshake: in-transcript`: the replayer sends no `hello` of its own.
    own_handshake: bool,
    /// `# profile: OPTION=VALUE,...`: the option values its answers depend on.
    profile: Vec<(String, String)>,
    steps: Vec<Step>,
}

/// A block table's entry that the sliding window released (docs/CONTRACT.md, "Sliding window").
const RELEASED: i64 = -1;

/// docs/CONTRACT.md's options and their defaults, the profile of a driver that names none.
const DEFAULTS: [(&str, &str); 5] = [
    ("allocation", "lowest-free"),
    ("reuse", "free-first"),
    ("duplicates", "first"),
    ("registration", "dense"),
    ("freeing", "by-group"),
];

/// `PAGED_VECTORS_FIRST_FAILURE`: stop at the first failing transcript.
fn stop_at_first_failure() -> bool {
    std::env::var_os("PAGED_VECTORS_FIRST_FAILURE").is_some()
}

fn vectors_dir() -> PathBuf {
    match std::env::var_os("PAGED_VECTORS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../vectors"),
    }
}

/// A list of integers joined by `,`; `-` is the empty list.
fn ints(text: &str) -> Option<Vec<i64>> {
    match text {
        "-" => Some(Vec::new()),
        _ => text.split(',').map(|x| x.parse().ok()).collect(),
    }
}

fn parse(text: &str) -> Result<Transcript, String> {
    let mut t = Transcript { requires: Vec::new(), own_handshake: false, profile: Vec::new(), steps: Vec::new() };
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let (line, n) = (raw.strip_suffix('\r').unwrap_or(raw), i + 1);
        if let Some(caps) = line.strip_prefix("# requires:") {
            t.requires.extend(caps.split([' ', ',']).filter(|c| !c.is_empty()).map(String::from));
        } else if let Some(how) = line.strip_prefix("# handshake:") {
            t.own_handshake = how.trim() == "in-transcript";
        } else if let Some(settings) = line.strip_prefix("# profile:") {
            for setting in settings.split([' ', ',']).filter(|s| !s.is_empty()) {
                let (option, value) =
                    setting.split_once('=').ok_or(format!("line {n}: {setting:?} is not OPTION=VALUE"))?;
                t.profile.push((option.to_string(), value.to_string()));
            }
        } else if let Some(release) = line.strip_prefix("# released ") {
            let bad = || format!("line {n}: not '# released C ID,ID,...'");
            let (handle, ids) = release.split_once(' ').ok_or_else(bad)?;
            let (handle, ids) = (handle.parse().map_err(|_| bad())?, ints(ids).ok_or_else(bad)?);
            let step =
                t.steps.last_mut().filter(|_| pending.is_none()).ok_or(format!("line {n}: not after a response"))?;
            step.released.push((handle, ids));
        } else if line.starts_with('#') || line.trim().is_empty() {
            continue;
        } else if let Some(request) = line.strip_prefix("> ").or((line == ">").then_some("")) {
            if let Some((at, _)) = pending.replace((n, request.to_string())) {
                return Err(format!("line {at}: a request without an expected response"));
            }
        } else if let Some(expected) = line.strip_prefix("< ") {
            let (at, request) = pending.take().ok_or(format!("line {n}: a response without a request"))?;
            t.steps.push(Step { line: at, request, expected: expected.to_string(), released: Vec::new() });
        } else {
            return Err(format!("line {n}: neither a request, a response nor a comment"));
        }
    }
    match pending {
        Some((at, _)) => Err(format!("line {at}: a request without an expected response")),
        None => Ok(t),
    }
}

/// PROTOCOL.md's rule: exact, or the same `err KIND` whatever the message, or, for a `hello`,
/// the same `ok VERSION` whatever the driver's name, capabilities and profile after it.
fn matches(request: &str, expected: &str, got: &str) -> bool {
    let (mut e, mut g) = (expected.split(' '), got.split(' '));
    let head = e.next();
    let loose = head == Some("err") || (head == Some("ok") && request.split(' ').next() == Some("hello"));
    expected == got || (loose && g.next() == head && e.next() == g.next())
}

/// docs/CONTRACT.md's renaming under `allocation=any`: per cache handle, a bijection between the
/// oracle's block ids and the port's, each pair bound for the block's lifetime.
#[derive(Debug, Default)]
struct Renaming {
    port_of: HashMap<(i64, i64), i64>,
    oracle_of: HashMap<(i64, i64), i64>,
}

impl Renaming {
    /// One `block_table` answer of cache `handle`: entry i is oracle block `oracle[i]` and port
    /// block `port[i]`. A bound oracle id must come back as its port id; an unbound one must
    /// not come back as a port id bound to another oracle id; then the pair is bound. An entry
    /// the sliding window released, -1, names no block: it must be -1 in both, and binds nothing.
    fn table(&mut self, handle: i64, oracle: &[i64], port: &[i64]) -> Result<(), String> {
        if oracle.len() != port.len() {
            return Err(format!("the table has {} entries, expected {}", port.len(), oracle.len()));
        }
        for (i, (&m, &p)) in oracle.iter().zip(port).enumerate() {
            if m == RELEASED || p == RELEASED {
                if m != p {
                    return Err(format!("entry {i} is {p}, expected {m} (-1: released by the sliding window)"));
                }
                continue;
            }
            match (self.port_of.get(&(handle, m)), self.oracle_of.get(&(handle, p))) {
                (Some(&bound), _) if bound != p => {
                    return Err(format!(
                        "entry {i} is block {p}, but the transcript's block {m} is block {bound} here: two blocks \
                         where the reference has one, or an id that changed while its block was held"
                    ));
                }
                (None, Some(&other)) => {
                    return Err(format!(
                        "entry {i} is block {p}, which is still the transcript's block {other}, not {m}: one block \
                         where the reference has two (a held or cached block handed out again)"
                    ));
                }
                _ => {
                    self.port_of.insert((handle, m), p);
                    self.oracle_of.insert((handle, p), m);
                }
            }
        }
        Ok(())
    }

    /// `# released C IDS`: those oracle blocks' lifetimes ended; their ids are free to bind again.
    fn release(&mut self, handle: i64, ids: &[i64]) {
        for &m in ids {
            if let Some(p) = self.port_of.remove(&(handle, m)) {
                self.oracle_of.remove(&(handle, p));
            }
        }
    }

    /// The port's block for the oracle's `block` of cache `handle`, if an answer bound it.
    fn port(&self, handle: i64, block: i64) -> Option<i64> {
        self.port_of.get(&(handle, block)).copied()
    }

    /// A `page_table` or `slot_mapping` answer (the fields after `ok`): field `ids` holds pages
    /// `b * per_block + j` (or slots, per_block = B), each compared as its block b renamed and its place
    /// j exact (-1, a released slot, on both sides); every other field exactly.
    fn pages(&mut self, handle: i64, want: &str, have: &str, ids: usize, per_block: i64) -> Result<(), String> {
        let (want, have): (Vec<&str>, Vec<&str>) = (want.split(' ').collect(), have.split(' ').collect());
        if want.len() != have.len() || (0..want.len()).any(|i| i != ids && want[i] != have[i]) {
            return Err("not the expected answer (the fields besides the pages differ)".to_string());
        }
        let (Some(want), Some(have)) = (ints(want[ids]), ints(have[ids])) else {
            return Err("a list of pages that does not parse".to_string());
        };
        let split = |xs: &[i64]| -> (Vec<i64>, Vec<i64>) {
            xs.iter().map(|&x| if x == RELEASED { (RELEASED, 0) } else { (x.div_euclid(per_block), x.rem_euclid(per_block)) }).unzip()
        };
        let ((want_blocks, want_places), (have_blocks, have_places)) = (split(&want), split(&have));
        if let Some(i) = (0..want.len().min(have.len())).find(|&i| want_places[i] != have_places[i] && want[i] != RELEASED && have[i] != RELEASED) {
            return Err(format!("page {i} is {}, at place {} of its block, expected place {}", have[i], have_places[i], want_places[i]));
        }
        self.table(handle, &want_blocks, &have_blocks)
    }
}

/// The answer to `kv_pages C LAYER P FIRST COUNT` under renaming: the transcript's pages are the
/// oracle's, so each is asked for at the port's page of the block its oracle block is bound to (one
/// request a page), and the answers joined as one.
fn renamed_pages(fields: &[&str], block_size: i64, renaming: &Renaming, send: &mut dyn FnMut(&str) -> String) -> String {
    let [_, c, layer, p, first, count] = fields else { return send(&fields.join(" ")) };
    let (Ok(handle), Ok(size), Ok(first), Ok(count)) = (c.parse::<i64>(), p.parse::<i64>(), first.parse::<i64>(), count.parse::<i64>()) else {
        return send(&fields.join(" "));
    };
    let per_block = block_size / size;
    let (mut k, mut v) = (String::new(), String::new());
    for page in first..first + count {
        let Some(port) = renaming.port(handle, page / per_block) else {
            return format!("err unbound page {page} is of the transcript's block {}, which no answer named before", page / per_block);
        };
        let answer = send(&format!("kv_pages {c} {layer} {p} {} 1", port * per_block + page % per_block));
        match answer.split(' ').collect::<Vec<_>>()[..] {
            ["ok", kh, vh] => {
                k.push_str(kh);
                v.push_str(vh);
            }
            _ => return answer,
        }
    }
    let or_empty = |s: String| if s.is_empty() { "-".to_string() } else { s };
    format!("ok {} {}", or_empty(k), or_empty(v))
}

/// Compare one answer: exactly (PROTOCOL.md's rule), except under renaming a `block_table` answer, and a
/// `page_table` or `slot_mapping` answer's pages. `Err` says why it does not match.
fn check(step: &Step, got: &str, mut renaming: Option<&mut Renaming>, sizes: &HashMap<i64, i64>) -> Result<(), String> {
    let fields: Vec<&str> = step.request.split(' ').collect();
    let answers = (step.expected.split_once(' '), got.split_once(' '));
    if let (Some(renaming), Some(("ok", want)), Some(("ok", have))) = (renaming.as_deref_mut(), answers.0, answers.1) {
        let handle = fields.get(1).and_then(|h| h.parse::<i64>().ok());
        let block_size = handle.and_then(|h| sizes.get(&h).copied());
        match (&fields[..], handle, block_size) {
            (["page_table", _, _, p, _], Some(h), Some(bs)) => {
                return renaming.pages(h, want, have, 1, bs / p.parse::<i64>().map_err(|_| "a page size that does not parse".to_string())?);
            }
            (["slot_mapping", ..], Some(h), Some(bs)) => return renaming.pages(h, want, have, 0, bs),
            _ => {}
        }
    }
    let tables = match (renaming, &fields[..], step.expected.split_once(' '), got.split_once(' ')) {
        (Some(renaming), ["block_table", handle, ..], Some(("ok", want)), Some(("ok", have))) => {
            match (handle.parse(), ints(want), ints(have)) {
                (Ok(handle), Some(want), Some(have)) => Some((renaming, handle, want, have)),
                _ => None,
            }
        }
        _ => None,
    };
    match tables {
        Some((renaming, handle, want, have)) => renaming.table(handle, &want, &have),
        None if matches(&step.request, &step.expected, got) => Ok(()),
        None => Err("not the expected answer".to_string()),
    }
}

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}... ({} chars)", &text[..cut], text.len()),
        None => text.to_string(),
    }
}

/// The driver's profile, from its `hello` answer: every option, named or default.
fn profile_of(hello: &str) -> HashMap<String, String> {
    let mut profile: HashMap<String, String> = DEFAULTS.iter().map(|(o, v)| (o.to_string(), v.to_string())).collect();
    for word in hello.split(' ').skip(3) {
        if let Some((option, value)) = word.split_once('=') {
            profile.insert(option.to_string(), value.to_string());
        }
    }
    profile
}

/// Replays one transcript through `send` after the replayer's `hello` and its answer (or, for a
/// transcript that does its own handshake, none: nothing announced): `Ok(None)` passed,
/// `Ok(Some(reason))` skipped, `Err(report)` failed.
fn run(transcript: &Transcript, hello: &str, send: &mut dyn FnMut(&str) -> String) -> Result<Option<String>, String> {
    if !transcript.own_handshake && !hello.starts_with("ok 1 ") {
        return Err(format!("hello 1 was answered {hello:?}"));
    }
    let capabilities: Vec<&str> = hello.split(' ').skip(3).filter(|w| !w.contains('=')).collect();
    if let Some(missing) = transcript.requires.iter().find(|c| !capabilities.contains(&c.as_str())) {
        return Ok(Some(format!("requires {missing}, which the driver does not announce")));
    }
    let profile = profile_of(hello);
    for (option, value) in &transcript.profile {
        let ours = profile.get(option).map_or("(no such option)", String::as_str);
        if ours != value {
            return Ok(Some(format!("its answers need {option}={value}; the driver's profile has {option}={ours}")));
        }
    }
    let mut renaming = (profile["allocation"] == "any").then(Renaming::default);
    let mut sizes: HashMap<i64, i64> = HashMap::new(); // handle -> B, to read pages and slots as blocks
    for step in &transcript.steps {
        let fields: Vec<&str> = step.request.split(' ').collect();
        let block_size = fields.get(1).and_then(|h| sizes.get(&h.parse().ok()?).copied());
        let got = match (&renaming, fields[0], block_size) {
            (Some(renaming), "kv_pages", Some(bs)) if step.expected.starts_with("ok ") => {
                renamed_pages(&fields, bs, renaming, send)
            }
            _ => send(&step.request),
        };
        if let (["new", _, b, ..], Some(("ok", handle))) = (&fields[..], step.expected.split_once(' ')) {
            if let (Ok(handle), Ok(b)) = (handle.parse(), b.parse()) {
                sizes.insert(handle, b);
            }
        }
        if let Err(why) = check(step, &got, renaming.as_mut(), &sizes) {
            return Err(format!(
                "line {}: {why}\n  request:  {}\n  expected: {}\n  got:      {}",
                step.line,
                clip(&step.request, 200),
                clip(&step.expected, 200),
                clip(&got, 200)
            ));
        }
        if let Some(renaming) = renaming.as_mut() {
            for (handle, ids) in &step.released {
                renaming.release(*handle, ids);
            }
        }
    }
    Ok(None)
}

/// Replays one file through a fresh driver.
fn replay(path: &Path, mut driver: Driver) -> Result<Option<String>, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    let transcript = parse(&text)?;
    let hello = if transcript.own_handshake { String::new() } else { driver.handle("hello 1").0 };
    run(&transcript, &hello, &mut |request| driver.handle(request).0)
}

/// Every transcript, each through a fresh driver that `make` returns; panics on any failure.
fn replay_all(mode: &str, make: fn() -> Driver) {
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
    // A file written for another profile value is not skipped: another file of the same vector,
    // written for this port's value, is replayed. Only what the port cannot be sent is a skip.
    let (mut passed, mut skipped, mut other_profile, mut failures) = (0, 0, 0, Vec::new());
    let first_failure_only = stop_at_first_failure();
    for (i, file) in files.iter().enumerate() {
        match replay(file, make()) {
            Ok(None) => passed += 1,
            Ok(Some(reason)) if reason.starts_with("its answers need") => other_profile += 1,
            Ok(Some(reason)) => {
                skipped += 1;
                let _ = writeln!(stderr, "{mode}: skipped {}: {reason}", file.display());
            }
            Err(report) => failures.push(format!("{}: {report}", file.display())),
        }
        if first_failure_only && !failures.is_empty() {
            let _ = writeln!(
                stderr,
                "{mode}: stopped at the first failure (PAGED_VECTORS_FIRST_FAILURE), file {} of {}: {passed} passed \
                 and {skipped} skipped before it, {} not replayed",
                i + 1,
                files.len(),
                files.len() - i - 1
            );
            panic!("{mode}: {}", failures[0]);
        }
    }
    let _ = writeln!(
        stderr,
        "{mode}: {passed} passed, {skipped} skipped, {} failed of {} transcripts \
         ({other_profile} more are written for other profile values; this port's file of each of those vectors is among the passed)",
        failures.len(),
        files.len() - other_profile
    );
    assert!(failures.is_empty(), "{mode}: {} transcripts failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn every_transcript_replays_under_the_ports_profile() {
    replay_all("allocation=any (block ids renamed)", Driver::new);
}

#[test]
fn every_transcript_replays_with_lowest_free_ids() {
    replay_all("allocation=lowest-free (exact)", || Driver::with_allocation(Allocation::LowestFree));
}

// -- the replayer itself, on hand-made transcripts and a scripted port ---------------------------

/// Replay `transcript` against a port that answers `answers`, one per request, in order.
fn scripted(hello: &str, transcript: &str, answers: &[&str]) -> Result<Option<String>, String> {
    let mut answers = answers.iter();
    run(&parse(transcript).unwrap(), hello, &mut |_| answers.next().expect("an answer per request").to_string())
}

const ANY: &str = "ok 1 port prefix_caching allocation=any";

/// Two sequences of cache 0: seq 0 holds oracle blocks 0 and 1; seq 0 is freed (both released);
/// seq 1 then gets oracle blocks 1 and 0 again, new lifetimes.
const REUSE: &str = "\
> block_table 0 0
< ok 0,1
> free 0 0
< ok
# released 0 1,0
> block_table 0 1
< ok 1,0
";

#[test]
fn renaming_accepts_other_ids_bound_for_a_lifetime() {
    assert_eq!(scripted(ANY, REUSE, &["ok 7,3", "ok", "ok 9,3"]), Ok(None), "released ids bind again, to any block");
    let held = "> block_table 0 0\n< ok 0,1\n> block_table 0 0\n< ok 0,1\n";
    assert_eq!(scripted(ANY, held, &["ok 5,2", "ok 5,2"]), Ok(None));
}

#[test]
fn without_its_release_an_id_stays_bound() {
    let unreleased = REUSE.replace("# released 0 1,0\n", "");
    let report = scripted(ANY, &unreleased, &["ok 7,3", "ok", "ok 9,3"]).unwrap_err();
    assert!(report.contains("line 5: entry 0 is block 9, but the transcript's block 1 is block 3"), "{report}");
    let partly = REUSE.replace("# released 0 1,0\n", "# released 0 1\n");
    let report = scripted(ANY, &partly, &["ok 7,3", "ok", "ok 9,3"]).unwrap_err();
    assert!(report.contains("entry 1 is block 3, but the transcript's block 0 is block 7"), "{report}");
}

#[test]
fn an_id_that_changes_while_held_fails() {
    let t = "> block_table 0 0\n< ok 4\n> block_table 0 0\n< ok 4\n";
    let report = scripted(ANY, t, &["ok 6", "ok 8"]).unwrap_err();
    assert!(report.contains("line 3: entry 0 is block 8, but the transcript's block 4 is block 6"), "{report}");
}

#[test]
fn sharing_must_match_both_ways() {
    // The reference shares block 0 between a parent and its fork; the port gave the fork a copy.
    let shared = "> block_table 0 0\n< ok 0,1\n> block_table 0 1\n< ok 0,2\n";
    assert!(scripted(ANY, shared, &["ok 5,6", "ok 7,8"]).unwrap_err().contains("entry 0 is block 7"));
    assert_eq!(scripted(ANY, shared, &["ok 5,6", "ok 5,8"]), Ok(None));
    // The reference has two blocks; the port hands one held block out twice.
    let apart = "> block_table 0 0\n< ok 0\n> block_table 0 1\n< ok 1\n";
    let report = scripted(ANY, apart, &["ok 5", "ok 5"]).unwrap_err();
    assert!(report.contains("entry 0 is block 5, which is still the transcript's block 0, not 1"), "{report}");
}

#[test]
fn each_handle_renames_apart_and_lengths_and_other_answers_stay_exact() {
    let two = "> block_table 0 0\n< ok 0\n> block_table 1 0\n< ok 0\n";
    assert_eq!(scripted(ANY, two, &["ok 3", "ok 9"]), Ok(None), "cache 1's block 0 is not cache 0's");
    let t = "> block_table 0 0\n< ok 0,1\n";
    assert!(scripted(ANY, t, &["ok 0"]).unwrap_err().contains("the table has 1 entries, expected 2"));
    assert!(scripted(ANY, t, &["err unknown_sequence 0"]).is_err());
    let s = "> stats 0\n< ok free=1 used=1 cached=0 evictions=0\n";
    assert!(scripted(ANY, s, &["ok free=0 used=2 cached=0 evictions=0"]).is_err());
    let e = "> block_table 0 5\n< err unknown_sequence sequence 5 is not live\n";
    assert_eq!(scripted(ANY, e, &["err unknown_sequence 5"]), Ok(None));
}

#[test]
fn a_released_entry_is_minus_1_on_both_sides_and_binds_nothing() {
    // Seq 0's entry 0 was released by the window; entry 1 is oracle block 1.
    let t = "# requires: sliding_window\n> block_table 0 0\n< ok -1,1\n> block_table 0 1\n< ok 0,-1\n";
    let window = "ok 1 port prefix_caching sliding_window allocation=any";
    assert_eq!(scripted(window, t, &["ok -1,4", "ok 6,-1"]), Ok(None));
    let report = scripted(window, t, &["ok 3,4", "ok 6,-1"]).unwrap_err();
    assert!(report.contains("entry 0 is 3, expected -1"), "a block where the oracle released: {report}");
    let report = scripted(window, t, &["ok -1,4", "ok -1,-1"]).unwrap_err();
    assert!(report.contains("entry 0 is -1, expected 0"), "released where the oracle holds a block: {report}");
    let report = scripted(window, t, &["ok -1,4", "ok 4,-1"]).unwrap_err();
    assert!(report.contains("still the transcript's block 1"), "-1 bound nothing, 4 is still block 1: {report}");
    assert!(scripted("ok 1 port", t, &[]).unwrap().unwrap().contains("requires sliding_window"));
    assert_eq!(scripted("ok 1 port sliding_window", t, &["ok -1,1", "ok 0,-1"]), Ok(None), "exact");
    assert!(scripted("ok 1 port sliding_window", t, &["ok -1,1", "ok 0,1"]).is_err());
}

#[test]
fn lowest_free_compares_exactly_and_ignores_releases() {
    let lowest = "ok 1 port prefix_caching";
    assert!(scripted(lowest, REUSE, &["ok 7,3", "ok", "ok 9,3"]).is_err());
    assert_eq!(scripted(lowest, REUSE, &["ok 0,1", "ok", "ok 1,0"]), Ok(None));
}

#[test]
fn a_profile_the_port_does_not_have_is_skipped_with_its_reason() {
    let t = "# profile: reuse=release-order\n> stats 0\n< ok\n";
    let reason = scripted(ANY, t, &[]).unwrap().expect("skipped");
    assert_eq!(reason, "its answers need reuse=release-order; the driver's profile has reuse=free-first");
    let t = "# profile: allocation=lowest-free\n> stats 0\n< ok\n";
    assert!(scripted(ANY, t, &[]).unwrap().is_some());
    assert_eq!(scripted("ok 1 port prefix_caching", t, &["ok"]), Ok(None));
    let t = "# requires: prefix_caching\n> stats 0\n< ok\n";
    assert!(scripted("ok 1 port allocation=any", t, &[]).unwrap().unwrap().contains("requires prefix_caching"));
}

#[test]
fn a_hello_answer_matches_on_its_version_and_an_own_handshake_sends_none() {
    let t = "# handshake: in-transcript\n> quit\n< err protocol no hello yet\n> hello 1\n< ok 1\n";
    assert_eq!(scripted("", t, &["err protocol before hello", "ok 1 port prefix_caching allocation=any"]), Ok(None));
    assert!(scripted("", t, &["err protocol x", "ok 2 port"]).is_err());
    assert!(scripted("", t, &["ok", "ok 1 port"]).is_err(), "quit before hello answered ok");
    assert!(scripted("", "> stats 0\n< ok 1\n", &["ok 1 x"]).is_err(), "no hello of the replayer's: not answered");
    let t = "> stats 0\n< ok 1\n";
    assert!(scripted(ANY, t, &["ok 1 x"]).is_err(), "only a hello's answer matches on its first two fields");
}

#[test]
fn a_released_line_must_follow_a_response() {
    assert!(parse("# released 0 1\n> stats 0\n< ok\n").is_err());
    assert!(parse("> stats 0\n# released 0 1\n< ok\n").is_err());
    assert!(parse("> stats 0\n< ok\n# released 0 x\n").is_err());
    assert_eq!(parse("> free 0 0\n< ok\n# released 0 3,-\n").err().map(|e| e.contains("line 3")), Some(true));
}

#[test]
fn page_tables_rename_each_pages_block_and_keep_its_place() {
    // B = 4 (cache 0), P = 2: oracle pages 2, 3 are block 1's halves, page 0 block 0's first half.
    let t = "> new 8 4 1 1 1\n< ok 0\n> page_table 0 0 2 0\n< ok 0,3 2,3,0 1\n> slot_mapping 0 0 0 0 2\n< ok 4,-1\n";
    let tables = "ok 1 port page_tables allocation=any";
    assert_eq!(scripted(tables, t, &["ok 0", "ok 0,3 10,11,6 1", "ok 20,-1"]), Ok(None), "block 1 is 5 here, block 0 is 3");
    let report = scripted(tables, t, &["ok 0", "ok 0,3 11,10,6 1", "ok 20,-1"]).unwrap_err();
    assert!(report.contains("page 0 is 11, at place 1 of its block, expected place 0"), "{report}");
    let report = scripted(tables, t, &["ok 0", "ok 0,3 10,11,6 1", "ok 12,-1"]).unwrap_err();
    assert!(report.contains("entry 0 is block 3, but the transcript's block 1 is block 5"), "{report}");
    let report = scripted(tables, t, &["ok 0", "ok 0,3 10,11,6 1", "ok 20,21"]).unwrap_err();
    assert!(report.contains("entry 1 is 5, expected -1"), "a slot where the oracle has -1: {report}");
    assert!(scripted(tables, t, &["ok 0", "ok 0,2 10,11,6 1", "ok 20,-1"]).is_err(), "indptr exact");
    assert!(scripted(tables, t, &["ok 0", "ok 0,3 10,11,6 2", "ok 20,-1"]).is_err(), "last_page_len exact");
    assert_eq!(scripted("ok 1 port page_tables", t, &["ok 0", "ok 0,3 2,3,0 1", "ok 4,-1"]), Ok(None), "exact");
    assert!(scripted("ok 1 port page_tables", t, &["ok 0", "ok 0,3 10,11,6 1", "ok 20,-1"]).is_err());
}

#[test]
fn kv_pages_are_asked_for_at_the_ports_pages() {
    // Oracle block 1 is the port's block 5: its pages 2, 3 (P = 2) are asked for as 10 and 11, one at a time.
    let t = "> new 8 4 1 1 1\n< ok 0\n> page_table 0 0 2 0\n< ok 0,2 2,3 2\n> kv_pages 0 0 2 2 2\n< ok 3c004000 bc00c000\n";
    let mut sent = Vec::new();
    let mut answers = ["ok 0", "ok 0,2 10,11 2", "ok 3c00 bc00", "ok 4000 c000"].into_iter();
    let mut send = |request: &str| {
        sent.push(request.to_string());
        answers.next().expect("an answer per request").to_string()
    };
    assert_eq!(run(&parse(t).unwrap(), "ok 1 port page_tables allocation=any", &mut send), Ok(None));
    assert_eq!(sent[2..], ["kv_pages 0 0 2 10 1", "kv_pages 0 0 2 11 1"]);
    let unbound = "> new 8 4 1 1 1\n< ok 0\n> kv_pages 0 0 2 2 1\n< ok 3c00 bc00\n";
    let report = scripted("ok 1 port page_tables allocation=any", unbound, &["ok 0"]).unwrap_err();
    assert!(report.contains("which no answer named before"), "{report}");
}
