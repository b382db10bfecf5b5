//! Fuzzing bad input (issue #13): mutations of the shipped scenario files (a line deleted or
//! doubled, a value's type changed, extreme numbers, odd strings, unknown keys, broken syntax,
//! a truncated file) and of a real segment (bytes flipped, zeroed, inserted, cut).
//!
//! Every mutated scenario is either refused with a line inside the file and a field path
//! (the binary exits 64 with that message), or accepted, in which case it reads back from its
//! own TOML, and a sample of the accepted ones is run: each finishes within its simulated time
//! (set-up, fault and heal phases) and in bounded wall time, without a panic, with one of the
//! documented verdicts, and, when it passes, with every scripted fault fired. Every mutated
//! segment (a plain one, or one mixing plain and compressed batches) dumps to its end with
//! every problem named at a byte inside the input, never a panic. Proptest draws fresh cases on every `cargo test`; a failing case is printed with the
//! mutated text and saved under `sim/proptest-regressions/`.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use bytes::Bytes;
use mirrorsim_sim::commands::runner::{run, RunOptions, Verdict};
use mirrorsim_sim::scenario::{Scenario, ScenarioError};
use proptest::prelude::*;
use proptest::strategy::ValueTree;

mod common;
use common::repository_root;

/// Every shipped scenario file, in name order, with its text.
fn shipped() -> Vec<(PathBuf, String)> {
    let directory = repository_root().join("scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&directory)
        .expect("scenarios/")
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("a scenario file");
            (path, text)
        })
        .collect()
}

/// Numbers that broke the loader or a run before it checked them.
const EXTREME: &[&str] = &[
    "0",
    "-1",
    "1",
    "255",
    "256",
    "65536",
    "2147483648",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "18446744073709551615",
    "1e300",
    "-1e300",
    "nan",
    "inf",
    "-inf",
    "0.5",
    "-0.0",
];

/// Strings that broke the loader or a run before it checked them.
const ODD_STRINGS: &[&str] = &[
    "",
    " ",
    ".",
    "..",
    "x\\nVIOLATION invariant=liveness",
    "a\\u0000b",
    "__mirror_state",
    "a-broker-01",
    "a-broker-+1",
    "m.paused",
    "z",
    "ALL",
];

/// Text that breaks TOML's syntax, inserted as a line of its own.
const BROKEN_SYNTAX: &[&str] = &[
    "=",
    "[",
    "[[",
    "]]",
    "\"",
    "key =",
    "= 3",
    "[[topics]",
    "x = {",
    "'''",
    "a..b = 1",
    "[clusters]",
    "duration_ms = 1",
];

/// One change to a scenario file's text.
#[derive(Debug, Clone)]
enum Mutation {
    DeleteLine(usize),
    DuplicateLine(usize),
    UnknownKey(usize),
    ExtremeValue(usize, usize),
    ChangeType(usize),
    OddString(usize, usize),
    BrokenSyntax(usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = any::<usize>();
    // Weighted toward values, which TOML accepts and only the loader's rules can refuse.
    prop_oneof![
        2 => at.prop_map(Mutation::DeleteLine),
        1 => at.prop_map(Mutation::DuplicateLine),
        1 => at.prop_map(Mutation::UnknownKey),
        5 => (at, 0..EXTREME.len()).prop_map(|(l, v)| Mutation::ExtremeValue(l, v)),
        2 => at.prop_map(Mutation::ChangeType),
        3 => (at, 0..ODD_STRINGS.len()).prop_map(|(l, v)| Mutation::OddString(l, v)),
        1 => (at, 0..BROKEN_SYNTAX.len()).prop_map(|(l, v)| Mutation::BrokenSyntax(l, v)),
        1 => at.prop_map(Mutation::Truncate),
    ]
}

/// The `key = value` lines (indices into `lines`), for the value mutations.
fn assignments(lines: &[String]) -> Vec<usize> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, line)| {
            let trimmed = line.trim_start();
            !trimmed.starts_with('#') && !trimmed.starts_with('[') && trimmed.contains(" = ")
        })
        .map(|(index, _)| index)
        .collect()
}

fn apply(text: &str, mutation: &Mutation) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    if lines.is_empty() {
        return text.to_owned();
    }
    let line = |at: usize| at % lines.len();
    let assignment = |lines: &[String], at: usize| {
        let candidates = assignments(lines);
        (!candidates.is_empty()).then(|| candidates[at % candidates.len()])
    };
    let set_value = |lines: &mut Vec<String>, index: usize, value: String| {
        let key = lines[index]
            .split_once(" = ")
            .map_or("", |(key, _)| key)
            .to_owned();
        lines[index] = format!("{key} = {value}");
    };
    match mutation {
        Mutation::DeleteLine(at) => {
            lines.remove(line(*at));
        }
        Mutation::DuplicateLine(at) => {
            let index = line(*at);
            lines.insert(index, lines[index].clone());
        }
        Mutation::UnknownKey(at) => lines.insert(line(*at) + 1, "zz_unknown = 1".to_owned()),
        Mutation::ExtremeValue(at, value) => {
            if let Some(index) = assignment(&lines, *at) {
                set_value(&mut lines, index, EXTREME[*value].to_owned());
            }
        }
        Mutation::ChangeType(at) => {
            if let Some(index) = assignment(&lines, *at) {
                let value = lines[index]
                    .split_once(" = ")
                    .map_or(String::new(), |(_, value)| value.trim().to_owned());
                let changed = if value.starts_with('"') {
                    "7".to_owned()
                } else if value.starts_with('[') {
                    "3".to_owned()
                } else {
                    format!("\"{}\"", value.replace('"', ""))
                };
                set_value(&mut lines, index, changed);
            }
        }
        Mutation::OddString(at, value) => {
            if let Some(index) = assignment(&lines, *at) {
                set_value(&mut lines, index, format!("\"{}\"", ODD_STRINGS[*value]));
            }
        }
        Mutation::BrokenSyntax(at, value) => {
            lines.insert(line(*at), BROKEN_SYNTAX[*value].to_owned());
        }
        Mutation::Truncate(at) => {
            let joined = lines.join("\n");
            let mut cut = at % joined.len().max(1);
            while !joined.is_char_boundary(cut) {
                cut -= 1;
            }
            return joined[..cut].to_owned();
        }
    }
    let mut joined = lines.join("\n");
    joined.push('\n');
    joined
}

/// A refusal must point inside the file at a field path, on one line.
fn check_refusal(error: &ScenarioError, text: &str) -> Result<(), String> {
    let lines = text.lines().count().max(1);
    let shown = error.to_string();
    let line = error.line.ok_or_else(|| format!("no line: {shown}"))?;
    if line < 1 || line > lines + 1 {
        return Err(format!(
            "line {line} outside the file's {lines} lines: {shown}"
        ));
    }
    let field_start = error.field.chars().next().unwrap_or(' ');
    if !(field_start.is_ascii_lowercase() || field_start == '(') {
        return Err(format!(
            "field {:?} is not a field path: {shown}",
            error.field
        ));
    }
    if shown.contains('\n') || shown.contains('\r') {
        return Err(format!("the message spans lines: {shown:?}"));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 600,
        ..ProptestConfig::default()
    })]

    /// Every mutation of every shipped file is refused at a line and field, or reads back.
    #[test]
    fn every_mutated_scenario_is_refused_at_a_line_and_field_or_valid(
        file in any::<usize>(),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let files = shipped();
        let (path, original) = &files[file % files.len()];
        let text = mutations.iter().fold(original.clone(), |text, m| apply(&text, m));
        match Scenario::parse(path, &text) {
            Err(error) => {
                if let Err(problem) = check_refusal(&error, &text) {
                    return Err(TestCaseError::fail(format!("{problem}\n--- {mutations:?}\n{text}")));
                }
            }
            Ok(scenario) => {
                let written = scenario.to_toml().map_err(|e| TestCaseError::fail(e.to_string()))?;
                let again = Scenario::parse(Path::new("again.toml"), &written)
                    .map_err(|e| TestCaseError::fail(format!("{e}\n{written}")))?;
                prop_assert_eq!(again, scenario);
            }
        }
    }
}

/// The longest run the sample below takes on: its set-up, fault and heal phases.
const RUN_BUDGET_MS: u64 = 40_000;
/// How long one sampled run may take on the wall clock before it counts as a hang (a debug
/// build of the slowest scenario takes a few seconds).
const HANG_LIMIT: Duration = Duration::from_secs(240);
/// Accepted mutants run per `cargo test`.
const RUNS: usize = 6;

#[test]
fn accepted_mutants_run_to_a_documented_verdict_without_silent_skips() {
    // Fresh cases each time, printed so a failure can be found again.
    let base: u64 = std::env::var("MIRRORSIM_FUZZ_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or_else(rand_seed);
    eprintln!("fuzz seed {base} (MIRRORSIM_FUZZ_SEED={base} repeats it)");
    let files = shipped();
    let mut runner = proptest::test_runner::TestRunner::new_with_rng(
        ProptestConfig::default(),
        proptest::test_runner::TestRng::from_seed(
            proptest::test_runner::RngAlgorithm::ChaCha,
            &seed_bytes(base),
        ),
    );
    let strategy = (any::<usize>(), proptest::collection::vec(mutation(), 1..3));
    let mut ran = 0;
    for attempt in 0..2_000 {
        if ran == RUNS {
            break;
        }
        let (file, mutations) = strategy.new_tree(&mut runner).expect("a case").current();
        let (path, original) = &files[file % files.len()];
        let text = mutations
            .iter()
            .fold(original.clone(), |text, m| apply(&text, m));
        let Ok(scenario) = Scenario::parse(path, &text) else {
            continue;
        };
        if scenario.duration_ms + scenario.heal_ms > RUN_BUDGET_MS {
            continue;
        }
        ran += 1;
        let seed = base.wrapping_add(attempt);
        let context = format!(
            "{} seed {seed} after {mutations:?}:\n{text}",
            path.display()
        );
        check_run(scenario, seed, &context);
    }
    assert_eq!(ran, RUNS, "too few accepted mutants to run");
}

/// Runs one accepted mutant on its own thread and checks how it ended.
fn check_run(scenario: Scenario, seed: u64, context: &str) {
    let (done, finished) = mpsc::channel();
    let scenario_for_run = scenario.clone();
    std::thread::spawn(move || {
        let outcome = std::panic::catch_unwind(|| run(&scenario_for_run, &RunOptions::new(seed)));
        let _ = done.send(outcome);
    });
    let report = match finished.recv_timeout(HANG_LIMIT) {
        Ok(Ok(report)) => report,
        Ok(Err(_)) => panic!("the run panicked: {context}"),
        Err(_) => panic!("the run hung for {HANG_LIMIT:?}: {context}"),
    };
    // Set-up may take up to 30 s of simulated time before the phases start.
    let limit_ms = 30_000 + scenario.duration_ms + scenario.heal_ms + 1_000;
    assert!(
        report.simulated_ms >= 0 && report.simulated_ms as u64 <= limit_ms,
        "simulated {} ms, more than the run's {limit_ms}: {context}",
        report.simulated_ms
    );
    assert!(
        matches!(
            report.verdict,
            Verdict::Pass | Verdict::Safety | Verdict::Liveness
        ),
        "{context}"
    );
    if report.verdict != Verdict::Pass {
        eprintln!(
            "note: a mutant ended {:?} ({}); a finding to look at, not a loader defect: {context}",
            report.verdict,
            report
                .violations
                .first()
                .map_or(String::new(), |v| v.report_line(seed))
        );
        return;
    }
    // No silent skip: every scripted fault started (one `fault:KIND` mark each).
    for kind in mirrorsim_sim::scenario::FAULT_KINDS {
        let scripted = scenario
            .faults
            .scripted
            .iter()
            .filter(|fault| fault.kind() == *kind)
            .count() as u64;
        let fired = report
            .marks
            .get(&format!("fault:{kind}"))
            .copied()
            .unwrap_or(0);
        assert!(
            fired >= scripted,
            "{scripted} scripted `{kind}` fault(s), {fired} fired: {context}"
        );
    }
    let producers_targeted = scenario.faults.scripted.iter().any(|fault| {
        fault
            .nodes()
            .iter()
            .any(|node| node.get_ref().contains("-producer-"))
    });
    if !scenario.producers.is_empty() && !producers_targeted {
        assert!(report.records.0 > 0, "no record sent: {context}");
    }
}

/// A fresh seed for the sample, outside the simulation (as `mirrorsim run` draws one).
fn rand_seed() -> u64 {
    use rand::RngExt;
    rand::rng().random::<u64>() >> 11
}

fn seed_bytes(seed: u64) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    for (index, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&seed.wrapping_mul(index as u64 * 2 + 1).to_le_bytes());
    }
    bytes
}

/// The shipped sample segment.
fn sample_segment() -> Vec<u8> {
    std::fs::read(repository_root().join("tests/vectors/sample-segment.log")).expect("the segment")
}

/// Plain and gzip, snappy, lz4 and zstd batches in one segment (written by kafka-python).
fn mixed_segment() -> Vec<u8> {
    std::fs::read(repository_root().join("tests/fixtures/compressed/mixed.log")).expect("mixed")
}

/// One change to a segment's bytes.
#[derive(Debug, Clone)]
enum ByteMutation {
    Flip(usize, u8),
    Zero(usize, usize),
    Insert(usize, u8),
    Cut(usize),
    Fill(usize, usize, u8),
}

fn byte_mutation() -> impl Strategy<Value = ByteMutation> {
    let at = any::<usize>();
    prop_oneof![
        (at, 1..=255u8).prop_map(|(a, b)| ByteMutation::Flip(a, b)),
        (at, 1..64usize).prop_map(|(a, n)| ByteMutation::Zero(a, n)),
        (at, any::<u8>()).prop_map(|(a, b)| ByteMutation::Insert(a, b)),
        at.prop_map(ByteMutation::Cut),
        (
            at,
            1..16usize,
            prop_oneof![Just(0xffu8), Just(0x7f), Just(0x80)]
        )
            .prop_map(|(a, n, b)| ByteMutation::Fill(a, n, b)),
    ]
}

fn apply_bytes(bytes: &mut Vec<u8>, mutation: &ByteMutation) {
    if bytes.is_empty() {
        return;
    }
    let at = |a: usize, len: usize| a % len;
    match *mutation {
        ByteMutation::Flip(a, bits) => {
            let index = at(a, bytes.len());
            bytes[index] ^= bits;
        }
        ByteMutation::Zero(a, n) | ByteMutation::Fill(a, n, _) => {
            let start = at(a, bytes.len());
            let end = (start + n).min(bytes.len());
            let fill = match *mutation {
                ByteMutation::Fill(_, _, b) => b,
                _ => 0,
            };
            bytes[start..end].fill(fill);
        }
        ByteMutation::Insert(a, b) => {
            let index = at(a, bytes.len() + 1);
            bytes.insert(index, b);
        }
        ByteMutation::Cut(a) => {
            let len = at(a, bytes.len());
            bytes.truncate(len);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 800,
        ..ProptestConfig::default()
    })]

    /// A mutated segment dumps to its end, every problem it reports naming a byte inside the
    /// input; it never panics.
    #[test]
    fn every_mutated_segment_dumps_and_names_bytes_inside_it(
        mutations in proptest::collection::vec(byte_mutation(), 1..4),
        format in prop::sample::select(vec![Format::Text, Format::Json, Format::Kafka]),
        source in 0..4usize,
        decoder in prop::sample::select(vec![
            RecordDecoder::Strings,
            RecordDecoder::Offsets,
            RecordDecoder::TransactionLog,
            RecordDecoder::MirrorState,
        ]),
    ) {
        // Our sample, plain and compressed batches mixed, and the kmsg-written coordinator
        // segments (their records are what the topic decoders read).
        let mut bytes = match source {
            0 => sample_segment(),
            1 => mixed_segment(),
            2 => coordinator_segment("offsets.log"),
            _ => coordinator_segment("transactions.log"),
        };
        for mutation in &mutations {
            apply_bytes(&mut bytes, mutation);
        }
        let length = bytes.len() as u64;
        let mut out = Vec::new();
        let options = DumpOptions { print_data_log: true, decoder, ..DumpOptions::new(format) };
        let outcome = std::panic::catch_unwind(move || {
            let result = dump(Bytes::from(bytes), options, &mut out);
            (result, out)
        });
        let Ok((result, out)) = outcome else {
            return Err(TestCaseError::fail(format!("dump-log panicked after {mutations:?}")));
        };
        prop_assert!(String::from_utf8(out).is_ok(), "the dump is UTF-8");
        let summary = result.map_err(|error| TestCaseError::fail(error.to_string()))?;
        let tail = summary.tail.as_ref().map(|tail| &tail.error);
        for problem in summary.problems.iter().chain(tail) {
            prop_assert!(
                problem.position <= length,
                "byte {} past the input's {}: {}", problem.position, length, problem
            );
        }
    }
}

use mirrorsim_sim::commands::dump_log::{dump, DumpOptions, OutputFormat as Format, RecordDecoder};

/// A segment of `tests/fixtures/coordinator`.
fn coordinator_segment(name: &str) -> Vec<u8> {
    let path = repository_root()
        .join("tests/fixtures/coordinator")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

#[test]
fn the_sample_segment_dumps_whole() {
    let mut out = Vec::new();
    let options = DumpOptions::new(Format::Text);
    let summary = dump(Bytes::from(sample_segment()), options, &mut out).expect("it dumps");
    assert!(summary.batches > 0);
    assert!(summary.is_clean(), "{summary:?}");
    assert!(!out.is_empty());
}
