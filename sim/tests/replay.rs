//! End-to-end tests of `mirrorsim replay` (design.md §6, §8): the built binary replays
//! `leader_crash` and its stdout is checked line by line, against `mirrorsim run` of the same
//! seed and against the contract of `mirrorsim_sim::commands::replay` (simulated time first, then the
//! node span, message summaries, the node filter, the verdict last).

use std::io::Write;
use std::process::Command;
use std::sync::{Arc, Mutex};

use mirrorsim_sim::commands::replay::{replay, TraceLevel, TraceOptions};
use mirrorsim_sim::commands::runner::{run, RunOptions};
use mirrorsim_sim::scenario::Scenario;

mod common;
use common::repository_root;

const SCENARIO: &str = "scenarios/leader_crash.toml";
/// Acknowledging before replication loses an acknowledged write when leader_crash kills the
/// leader; [`SEED`] is caught, see tests/soak.rs.
const BROKEN: [&str; 2] = ["--broken", "ack-before-replication"];
/// A seed [`BROKEN`] fails on, where the crashed leader comes back and truncates the tail it
/// acknowledged alone.
const SEED: &str = "9";

/// Runs `mirrorsim ARGS…` from the repository root; returns its exit code and stdout.
fn mirrorsim(args: &[&str]) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_mirrorsim"))
        .current_dir(repository_root())
        .args(args)
        .output()
        .expect("mirrorsim runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("panicked"),
        "mirrorsim {args:?} panicked: {stderr}"
    );
    (
        output.status.code().expect("exit code"),
        String::from_utf8(output.stdout).expect("UTF-8 stdout"),
    )
}

/// One trace line, split into its columns.
#[derive(Debug)]
struct TraceLine<'a> {
    /// Simulated microseconds.
    micros: u64,
    /// `world`, or a node name with its incarnation (`a-broker-2#1`).
    node: &'a str,
    /// The event.
    text: &'a str,
}

/// Parses `   12.345678s node text`; `None` for any other line (the SEED block, the report).
fn parse(line: &str) -> Option<TraceLine<'_>> {
    let (time, rest) = line.trim_start().split_once("s ")?;
    let (seconds, fraction) = time.split_once('.')?;
    if fraction.len() != 6 || !(seconds.chars().chain(fraction.chars())).all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let micros = seconds.parse::<u64>().ok()? * 1_000_000 + fraction.parse::<u64>().ok()?;
    let (node, text) = rest.split_once(' ')?;
    Some(TraceLine {
        micros,
        node,
        text: text.trim_start(),
    })
}

fn trace_lines(stdout: &str) -> Vec<TraceLine<'_>> {
    stdout.lines().filter_map(parse).collect()
}

/// `a-broker-2#1` → (`a-broker-2`, 1).
fn node_and_incarnation(label: &str) -> Option<(&str, u64)> {
    let (node, incarnation) = label.split_once('#')?;
    Some((node, incarnation.parse().ok()?))
}

#[test]
fn replay_prints_the_run_output_with_a_timeline_in_simulated_time() {
    let (run_code, run_out) = mirrorsim(&["run", SCENARIO, "--seed", "2"]);
    let (replay_code, replay_out) = mirrorsim(&["replay", SCENARIO, "--seed", "2"]);
    assert_eq!(run_code, 0, "{run_out}");
    assert_eq!(replay_code, run_code);
    // Without its trace lines, a replay prints exactly what the run prints: the same SEED
    // block, report and trace hash, so tracing changed nothing in the simulation.
    let untraced: Vec<&str> = replay_out
        .lines()
        .filter(|line| parse(line).is_none())
        .collect();
    assert_eq!(untraced, run_out.lines().collect::<Vec<_>>());
    assert!(run_out.lines().last().unwrap().starts_with("trace_hash="));

    let lines = trace_lines(&replay_out);
    assert!(lines.len() > 1_000, "only {} trace lines", lines.len());
    // Simulated time: it starts near zero, never goes back, and ends at the report's
    // simulated time (leader_crash heals within its 10 s fault phase plus heal time).
    assert!(lines[0].micros < 10_000, "{:?}", lines[0]);
    for pair in lines.windows(2) {
        assert!(pair[0].micros <= pair[1].micros, "{pair:?}");
    }
    let simulated: f64 = run_out
        .split("simulated=")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .and_then(|rest| rest.trim_end().strip_suffix('s'))
        .and_then(|s| s.trim().parse().ok())
        .expect("simulated= in the report");
    let last = lines.last().unwrap();
    assert!(
        (last.micros as f64 / 1e6 - simulated).abs() < 0.01,
        "{last:?} vs simulated={simulated}"
    );
    // Every line names its node with an incarnation, or is a world line.
    for line in &lines {
        assert!(
            line.node == "world" || node_and_incarnation(line.node).is_some(),
            "{line:?}"
        );
    }
    // The killed leaders come back as a second incarnation of the same node.
    let restarted: Vec<&TraceLine<'_>> = lines
        .iter()
        .filter(|l| node_and_incarnation(l.node).is_some_and(|(_, i)| i == 2))
        .collect();
    assert!(
        restarted.iter().any(|l| l.text == "start"),
        "no second incarnation started"
    );
    let killed = lines
        .iter()
        .find(|l| l.text.starts_with("killed"))
        .expect("a kill line");
    assert!(killed.node.ends_with("#1"), "{killed:?}");
    assert!(lines
        .iter()
        .any(|l| l.node == "world" && l.text.starts_with("fault start at=2000ms")));
    assert!(lines
        .iter()
        .any(|l| l.node == "world" && l.text.starts_with("verdict Pass")));
}

#[test]
fn messages_show_their_fields() {
    let (_, out) = mirrorsim(&["replay", SCENARIO, "--seed", SEED, BROKEN[0], BROKEN[1]]);
    let lines = trace_lines(&out);
    // A produce request as its leader received it: partition, acks and the batch header with
    // the producer id, epoch and sequence, never raw bytes.
    let produce = lines
        .iter()
        .find(|l| l.text.contains(" Produce#"))
        .expect("a delivered produce request");
    assert!(
        produce.node.starts_with("a-broker-"),
        "a produce is delivered to a broker: {produce:?}"
    );
    assert!(produce.text.starts_with("<- a-producer-"), "{produce:?}");
    for field in [
        "orders-",
        "acks=all",
        "batch[",
        " pid=",
        " epoch=",
        " seq=",
        "leader_epoch=-1",
    ] {
        assert!(produce.text.contains(field), "no {field}: {produce:?}");
    }
    assert!(!produce.text.contains("\\x"), "raw bytes: {produce:?}");
    // Fetch answers carry the leader's offsets and the batches' headers.
    let fetched = lines
        .iter()
        .find(|l| l.text.contains("FetchResponse#") && l.text.contains("batch["))
        .expect("a fetch answer with data");
    assert!(fetched.text.contains(" hw="), "{fetched:?}");
    // Leadership as the controller wrote it and as the brokers took it on.
    assert!(lines.iter().any(|l| l.node == "a-controller#1"
        && l.text.contains("Partition orders-0 leader=")
        && l.text.contains("isr=[")));
    assert!(lines
        .iter()
        .any(|l| l.text.starts_with("BecameLeader orders-0 leader_epoch=1")));
}

#[test]
fn a_failing_replay_ends_with_the_verdict_and_the_violation() {
    let (code, out) = mirrorsim(&["replay", SCENARIO, "--seed", SEED, BROKEN[0], BROKEN[1]]);
    assert_eq!(code, 1, "a safety violation: {out}");
    let lines = trace_lines(&out);
    let n = lines.len();
    assert_eq!(lines[n - 2].node, "world");
    assert_eq!(lines[n - 2].text, "verdict Safety: 1 violation(s)");
    assert_eq!(lines[n - 1].node, "world");
    assert!(
        lines[n - 1]
            .text
            .starts_with("VIOLATION invariant=acked-writes-durable cluster=a"),
        "{:?}",
        lines[n - 1]
    );
    assert!(
        lines[n - 1].text.contains(&format!("seed={SEED} time=")),
        "{:?}",
        lines[n - 1]
    );
    // And the same trace hash as the run that found it.
    let (_, run_out) = mirrorsim(&["run", SCENARIO, "--seed", SEED, BROKEN[0], BROKEN[1]]);
    assert_eq!(out.lines().last(), run_out.lines().last());
}

#[test]
fn node_filter_keeps_those_nodes_and_the_world() {
    let args = ["replay", SCENARIO, "--seed", SEED, BROKEN[0], BROKEN[1]];
    let (_, all) = mirrorsim(&args);
    let mut with_filter = args.to_vec();
    with_filter.extend(["--node", "a-broker-2", "--node", "a-producer-1"]);
    let (code, filtered) = mirrorsim(&with_filter);
    assert_eq!(code, 1);
    let kept = trace_lines(&filtered);
    let expected: Vec<String> = trace_lines(&all)
        .into_iter()
        .filter(|l| {
            l.node == "world"
                || matches!(
                    node_and_incarnation(l.node),
                    Some(("a-broker-2" | "a-producer-1", _))
                )
        })
        .map(|l| format!("{} {} {}", l.micros, l.node, l.text))
        .collect();
    let kept: Vec<String> = kept
        .into_iter()
        .map(|l| format!("{} {} {}", l.micros, l.node, l.text))
        .collect();
    assert!(kept.iter().any(|l| l.contains(" a-broker-2#1 ")));
    assert!(kept.iter().any(|l| l.contains(" a-producer-1#1 ")));
    assert_eq!(kept, expected);
}

#[test]
fn timeline_level_leaves_out_messages() {
    // The crashed leader comes back and truncates the tail it acknowledged alone.
    let (_, out) = mirrorsim(&[
        "replay", SCENARIO, "--seed", SEED, BROKEN[0], BROKEN[1], "--level", "timeline",
    ]);
    let lines = trace_lines(&out);
    assert!(
        lines
            .iter()
            .all(|l| !l.text.starts_with("<- ") && !l.text.starts_with("LeaderAppend")),
        "a message line at the timeline level"
    );
    for wanted in [
        "fault start",
        "killed",
        "BecameLeader",
        "Truncated",
        "verdict",
    ] {
        assert!(
            lines.iter().any(|l| l.text.starts_with(wanted)),
            "no {wanted} line"
        );
    }
    let (code, _) = mirrorsim(&["replay", SCENARIO, "--seed", "1", "--level", "loud"]);
    assert_eq!(code, 64, "a bad --level is bad input");
}

/// A writer the test can read back after the replay.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn the_library_replay_reports_like_run_and_names_unknown_nodes() {
    let scenario = Scenario::load(&repository_root().join(SCENARIO)).expect("scenario loads");
    let options = RunOptions::new(3);
    let captured = Captured::default();
    let trace = TraceOptions {
        level: TraceLevel::Timeline,
        nodes: vec!["a-controller".into(), "a-broker-7".into()],
    };
    let replayed = replay(&scenario, &options, &trace, Box::new(captured.clone()));
    let plain = run(&scenario, &options);
    assert_eq!(replayed.report.trace_hash, plain.trace_hash);
    assert_eq!(replayed.unmatched_nodes, vec!["a-broker-7".to_owned()]);
    assert!(!replayed.output_failed);
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let lines = trace_lines(&text);
    assert_eq!(
        lines.len(),
        text.lines().count(),
        "only trace lines: {text}"
    );
    assert!(lines
        .iter()
        .all(|l| l.node == "world" || l.node == "a-controller#1"));
    assert!(lines
        .iter()
        .any(|l| l.node == "a-controller#1" && l.text.starts_with("metadata ")));
}

#[test]
fn follower_targets_resolve_to_a_replica_that_is_not_the_leader_when_the_fault_starts() {
    // `source_unclean_election_followed` pauses `a-follower:orders:0` and kills
    // `b-follower:orders:0`: each hits a broker other than the partition's leader of the
    // moment, which then keeps leading (a's until its own kill at 5.5 s).
    let (code, out) = mirrorsim(&[
        "replay",
        "scenarios/source_unclean_election_followed.toml",
        "--seed",
        "1",
    ]);
    assert_eq!(code, 0, "{out}");
    let lines = trace_lines(&out);
    for (cluster, fault) in [
        ("a", "pause nodes=a-follower:orders:0"),
        ("b", "kill nodes=b-follower:orders:0"),
    ] {
        let start = lines
            .iter()
            .position(|line| {
                line.node == "world"
                    && line.text.starts_with("fault start")
                    && line.text.contains(fault)
            })
            .unwrap_or_else(|| panic!("no {fault} in the trace"));
        let hit = node_and_incarnation(lines[start + 1].node)
            .expect("the node the fault hit")
            .0;
        let leader = lines[..start]
            .iter()
            .rev()
            .find(|line| {
                line.node.starts_with(&format!("{cluster}-broker-"))
                    && line.text.starts_with("BecameLeader orders-0 ")
            })
            .and_then(|line| node_and_incarnation(line.node))
            .expect("a leader before the fault")
            .0;
        assert!(hit.starts_with(&format!("{cluster}-broker-")), "{hit}");
        assert_ne!(hit, leader, "{fault} hit the leader");
    }
}
