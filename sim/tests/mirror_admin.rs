//! The admin timeline end to end: `scenarios/mirror_admin.toml` runs its KIP-1279 mirror
//! workflow on cluster b with every operation's outcome checked, an admin timeline runs on a
//! cluster without topics, deferred workloads start late, and a bad `[[admin.OP]]` entry makes
//! `mirrorsim run` exit 64 naming the file, line and field.

use std::path::Path;
use std::process::Command;

use mirrorsim::protocol::ErrorCode;
use mirrorsim_sim::commands::runner::{run, RunOptions, RunReport, Verdict};
use mirrorsim_sim::scenario::{AdminOpKind, Scenario};
use mirrorsim_sim::world::admin::AdminOpRecord;

mod common;
use common::repository_root;

fn run_passing(scenario: &Scenario, seed: u64) -> RunReport {
    let report = run(scenario, &RunOptions::new(seed));
    let violations: Vec<String> = report
        .violations
        .iter()
        .map(|v| v.report_line(seed))
        .collect();
    assert_eq!(
        report.verdict,
        Verdict::Pass,
        "scenario {} seed {seed} failed:\n{}",
        scenario.name,
        violations.join("\n")
    );
    report
}

/// What an operation must end with: its kind, the request-level error and per-topic errors.
type Expected = (AdminOpKind, ErrorCode, &'static [(&'static str, ErrorCode)]);

const ORDERS_OK: &[(&str, ErrorCode)] = &[("orders", ErrorCode::None)];

/// `scenarios/mirror_admin.toml`'s timeline, in file order.
const MIRROR_ADMIN_OUTCOMES: [Expected; 11] = [
    (AdminOpKind::CreateMirror, ErrorCode::None, &[]),
    (AdminOpKind::AddTopics, ErrorCode::None, ORDERS_OK),
    // Already mirrored.
    (
        AdminOpKind::AddTopics,
        ErrorCode::None,
        &[("orders", ErrorCode::InvalidClusterMirrorState)],
    ),
    (AdminOpKind::PauseTopics, ErrorCode::None, ORDERS_OK),
    (AdminOpKind::ResumeTopics, ErrorCode::None, ORDERS_OK),
    // orders is still mirrored.
    (
        AdminOpKind::DeleteMirror,
        ErrorCode::InvalidClusterMirrorState,
        &[],
    ),
    (AdminOpKind::RemoveTopics, ErrorCode::None, ORDERS_OK),
    (AdminOpKind::DeleteMirror, ErrorCode::None, &[]),
    (AdminOpKind::CreateMirror, ErrorCode::None, &[]),
    (
        AdminOpKind::AddTopics,
        ErrorCode::ClusterMirrorNotFound,
        &[],
    ),
    (
        AdminOpKind::CreateMirror,
        ErrorCode::ClusterMirrorAlreadyExists,
        &[],
    ),
];

/// The remove is due while b's controller is down: its first attempt goes unanswered.
const RETRIED_OP: usize = 6;

fn assert_outcomes(seed: u64, admin: &[AdminOpRecord], expected: &[Expected]) {
    assert_eq!(
        admin.len(),
        expected.len(),
        "seed {seed}: one record per op"
    );
    for (record, (kind, error, topics)) in admin.iter().zip(expected) {
        let outcome = record
            .outcome
            .as_ref()
            .unwrap_or_else(|| panic!("seed {seed}: {record} never finished"));
        assert_eq!(record.op.kind, *kind, "seed {seed}: {record}");
        assert_eq!(outcome.error, *error, "seed {seed}: {record}");
        let topics: Vec<(String, ErrorCode)> =
            topics.iter().map(|(t, e)| (t.to_string(), *e)).collect();
        assert_eq!(outcome.topics, topics, "seed {seed}: {record}");
        assert!(
            outcome.started_ms >= record.op.at_ms && outcome.finished_ms >= outcome.started_ms,
            "seed {seed}: {record} ran before its time"
        );
    }
}

#[test]
fn mirror_admin_records_every_operation_outcome() {
    let scenario = Scenario::load(&repository_root().join("scenarios/mirror_admin.toml"))
        .unwrap_or_else(|error| panic!("{error}"));
    let fresh = {
        use rand::RngExt;
        rand::rng().random::<u64>() % 1_000_000_000
    };
    for seed in [1, 2, fresh] {
        println!("scenario mirror_admin seed {seed}");
        let report = run_passing(&scenario, seed);
        assert_outcomes(seed, &report.admin, &MIRROR_ADMIN_OUTCOMES);
        for (index, record) in report.admin.iter().enumerate() {
            let outcome = record.outcome.as_ref().expect("checked above");
            let expected = if index == RETRIED_OP { (2, 1) } else { (1, 0) };
            assert_eq!(
                (outcome.attempts, outcome.unanswered),
                expected,
                "seed {seed}: {record}"
            );
        }
        // The delete waits for the retried remove, whatever its own time says.
        let (remove, delete) = (&report.admin[RETRIED_OP], &report.admin[RETRIED_OP + 1]);
        assert!(
            delete.outcome.as_ref().unwrap().started_ms
                >= remove.outcome.as_ref().unwrap().finished_ms
        );
        for mark in ["admin-op-accepted", "admin-op-refused", "admin-op-retried"] {
            assert!(report.marks.contains_key(mark), "seed {seed}: no {mark}");
        }
        let (sent, acked, _) = report.records;
        assert!(sent > 0 && acked > 0, "seed {seed}: no load");
    }
}

/// Cluster b has no topics (so nothing to create in set-up) but an admin timeline; a's
/// producer and consumer start late in the fault phase.
const NO_TOPICS_ON_B: &str = r#"
duration_ms = 5000
heal_ms = 5000
[[clusters]]
brokers = 3
[[clusters]]
brokers = 1
mirror_state_partitions = 2
[[topics]]
cluster = "a"
name = "orders"
partitions = 2
replication_factor = 3
min_insync_replicas = 2
[[producers]]
cluster = "a"
topic = "orders"
interval_ms = 10
start_ms = 4000
[[consumers]]
cluster = "a"
topic = "orders"
start_ms = 4500
[[admin.create_mirror]]
at_ms = 100
cluster = "b"
mirror = "m"
source = "a"
[[admin.delete_mirror]]
at_ms = 200
cluster = "b"
mirror = "m"
"#;

#[test]
fn admin_timeline_runs_on_a_cluster_without_topics_and_workloads_start_late() {
    let scenario = Scenario::parse(Path::new("no_topics_on_b.toml"), NO_TOPICS_ON_B)
        .unwrap_or_else(|error| panic!("{error}"));
    let report = run_passing(&scenario, 5);
    assert_outcomes(
        5,
        &report.admin,
        &[
            (AdminOpKind::CreateMirror, ErrorCode::None, &[]),
            (AdminOpKind::DeleteMirror, ErrorCode::None, &[]),
        ],
    );
    // One record every 10 ms from 4 s to the end of the fault phase at 5 s.
    let (sent, acked, _) = report.records;
    assert!(
        (90..=110).contains(&sent) && acked > 0,
        "a producer starting at 4 s sent {sent} records"
    );
}

#[test]
fn run_exits_64_on_a_bad_admin_entry_naming_file_line_and_field() {
    let path = std::env::temp_dir().join(format!("mirror_admin_bad_{}.toml", std::process::id()));
    let text = NO_TOPICS_ON_B.replace("source = \"a\"\n", "source = \"b\"\n");
    std::fs::write(&path, text).expect("write the scenario");
    let output = Command::new(env!("CARGO_BIN_EXE_mirrorsim"))
        .args(["run", path.to_str().expect("utf-8 path"), "--seed", "1"])
        .output()
        .expect("run mirrorsim");
    let _ = std::fs::remove_file(&path);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(64), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}:28: field `admin.create_mirror[0].source`: the source must differ",
            path.display()
        )),
        "{stderr}"
    );
}
