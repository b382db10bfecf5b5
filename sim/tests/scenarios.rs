//! Every scenario with fresh random seeds (printed, with the replay command on
//! failure), the pinned regression seeds, determinism, and the broken-switch tests that show a
//! checker catching a deliberately broken broker.

use mirrorsim::mirror::MirrorDesign;
use mirrorsim::protocol::ErrorCode;
use mirrorsim::switches::BrokenSwitch;
use mirrorsim_sim::commands::runner::{run, RunOptions, RunReport, Verdict};

mod common;
use common::{load, repository_root, shipped_scenarios};

/// Scenarios every `cargo test` runs with fresh seeds and checks for determinism: every
/// shipped file in `scenarios/` (found, not listed, so a new one is never left out), and the
/// regression of a KIP finding whose every seed shows the consequence it pins (a destination
/// producer writing while its topic still mirrors). The other regression files run on their
/// pinned seeds (`tests/regression-seeds.txt`).
fn scenarios() -> Vec<String> {
    let mut names = shipped_scenarios();
    assert!(names.len() >= 20, "scenarios/ holds only {names:?}");
    names.push("regressions/txn_producer_on_mirroring_destination".to_owned());
    names
}

fn run_seed(name: &str, seed: u64, broken: Vec<BrokenSwitch>) -> RunReport {
    run_scenario(&load(name), seed, broken)
}

fn run_scenario(
    scenario: &mirrorsim_sim::scenario::Scenario,
    seed: u64,
    broken: Vec<BrokenSwitch>,
) -> RunReport {
    run(
        scenario,
        &RunOptions {
            seed,
            design: None,
            broken,
            trace: false,
        },
    )
}

/// Runs `name` with `seed` and asserts it passed and was not vacuous: a scenario with producers
/// must have had records acknowledged.
fn assert_passes(name: &str, seed: u64) -> RunReport {
    let scenario = load(name);
    let report = run_scenario(&scenario, seed, Vec::new());
    let violations: Vec<String> = report
        .violations
        .iter()
        .map(|v| v.report_line(seed))
        .collect();
    assert_eq!(
        report.verdict,
        Verdict::Pass,
        "scenario {name} seed {seed} failed:\n{}\nreplay: {}",
        violations.join("\n"),
        replay_command(name, seed)
    );
    let (sent, acked, _) = report.records;
    assert!(
        scenario.producers.is_empty() || (sent > 0 && acked > 0),
        "scenario {name} seed {seed} produced nothing: vacuous"
    );
    report
}

/// Asserts that the run reached every coverage mark its file declares. A pinned regression
/// whose mark is no longer reached no longer tests its fix (the model moved under it and it
/// passes for a reason of its own), so it fails here until it is re-pinned.
fn assert_reached_declared_marks(name: &str, seed: u64, report: &RunReport) {
    let missing = unreached_marks(name, report);
    assert!(
        missing.is_empty(),
        "scenario {name} seed {seed} never reached its declared coverage marks {missing:?}: \
         vacuous\nreplay: {}",
        replay_command(name, seed)
    );
}

/// The coverage marks scenario `name` declares that `report`'s run did not reach.
fn unreached_marks(name: &str, report: &RunReport) -> Vec<String> {
    load(name)
        .coverage
        .into_iter()
        .filter(|mark| !report.marks.contains_key(mark))
        .collect()
}

fn replay_command(name: &str, seed: u64) -> String {
    format!("cargo run --release --bin mirrorsim -- replay scenarios/{name}.toml --seed {seed}")
}

/// The outcome of the run's first `describe_mirror` operation.
fn first_describe(report: &RunReport) -> mirrorsim_sim::world::admin::AdminOutcome {
    report
        .admin
        .iter()
        .find(|record| record.op.kind.name() == "describe_mirror")
        .and_then(|record| record.outcome.clone())
        .expect("the describe finished")
}

/// Fresh seeds for this run, from the operating system, printed so a failure can be replayed.
fn fresh_seeds(count: usize) -> Vec<u64> {
    use rand::RngExt;
    let mut rng = rand::rng();
    (0..count)
        .map(|_| rng.random::<u64>() % 1_000_000_000)
        .collect()
}

#[test]
fn scenarios_pass_with_fresh_random_seeds() {
    for name in &scenarios() {
        for seed in fresh_seeds(2) {
            println!("scenario {name} seed {seed}");
            assert_passes(name, seed);
        }
    }
}

/// A pinned line: `SCENARIO SEED [DESIGN]`. A design is named where the seed design's own
/// defence now keeps the run off the path its file pins (the design is the seed design
/// minus that defence), so the older fix or checker excuse the file guards is still reached.
fn parse_pinned_line(line: &str) -> (&str, u64, Option<MirrorDesign>) {
    let mut fields = line.split_whitespace();
    let (Some(name), Some(seed)) = (fields.next(), fields.next()) else {
        panic!("bad line {line:?}: expected `SCENARIO SEED [DESIGN]`");
    };
    let seed: u64 = seed
        .parse()
        .unwrap_or_else(|_| panic!("bad seed in {line:?}"));
    let design = fields.next().map(|design| {
        MirrorDesign::from_name(design).unwrap_or_else(|| panic!("bad design in {line:?}"))
    });
    assert!(
        fields.next().is_none(),
        "bad line {line:?}: trailing fields"
    );
    (name, seed, design)
}

#[test]
fn scenarios_pass_with_pinned_regression_seeds() {
    let text = std::fs::read_to_string(repository_root().join("tests/regression-seeds.txt"))
        .expect("tests/regression-seeds.txt");
    let mut count = 0;
    let mut unreached = Vec::new();
    for line in text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
    {
        // A `retune` line must pass; its marks are reported, not required (see the file).
        let (retune, line) = match line.strip_prefix("retune ") {
            Some(rest) => (true, rest),
            None => (false, line),
        };
        let (name, seed, design) = parse_pinned_line(line);
        let report = match design {
            None => assert_passes(name, seed),
            Some(design) => {
                let report = run(
                    &load(name),
                    &RunOptions {
                        seed,
                        design: Some(design),
                        broken: Vec::new(),
                        trace: false,
                    },
                );
                assert_eq!(
                    report.verdict,
                    Verdict::Pass,
                    "{name} seed {seed} under {design}: {:?}",
                    report.violations
                );
                report
            }
        };
        if retune {
            let missing = unreached_marks(name, &report);
            unreached.push(format!("{line}: {missing:?}"));
        } else {
            assert_reached_declared_marks(name, seed, &report);
        }
        count += 1;
    }
    assert!(count > 0, "no pinned seeds");
    for line in unreached {
        println!("retune (marks not reached): {line}");
    }
}

#[test]
fn same_seed_gives_same_trace_hash_for_every_scenario() {
    for name in &scenarios() {
        let first = run_seed(name, 42, Vec::new());
        let second = run_seed(name, 42, Vec::new());
        assert_eq!(
            first.trace_hash, second.trace_hash,
            "scenario {name} is not deterministic"
        );
        let other = run_seed(name, 43, Vec::new());
        assert_ne!(
            first.trace_hash, other.trace_hash,
            "scenario {name}: seeds 42 and 43 gave one trace"
        );
    }
}

#[test]
fn madsim_determinism_check_passes() {
    // madsim runs the seed twice in fresh threads and compares every random draw.
    madsim::runtime::Runtime::check_determinism(
        7,
        mirrorsim_sim::commands::runner::simulation_config(),
        leader_crash_seed_7,
    );
}

async fn leader_crash_seed_7() {
    let report = mirrorsim_sim::commands::runner::supervise_for_test(load("leader_crash"), 7).await;
    assert!(report.records.0 > 0, "the run produced nothing");
}

/// Runs `name` with `switch` on seeds 0..10 until `caught` finds the violation it expects in
/// a report, and prints it; fails when no seed does.
fn caught_within_ten_seeds(
    name: &str,
    switch: BrokenSwitch,
    caught: impl Fn(&RunReport) -> Option<String>,
) {
    let found =
        (0..10).find_map(|seed| caught(&run_seed(name, seed, vec![switch])).map(|v| (seed, v)));
    let (seed, violation) =
        found.unwrap_or_else(|| panic!("no seed in 0..10 caught {switch:?} in {name}"));
    println!("caught at seed {seed}: {violation}");
}

/// The outcomes of `report`'s finished admin operations named `operation`, in timeline order.
fn outcomes_of(
    report: &RunReport,
    operation: &str,
) -> Vec<mirrorsim_sim::world::admin::AdminOutcome> {
    report
        .admin
        .iter()
        .filter(|record| record.op.kind.name() == operation)
        .filter_map(|record| record.outcome.clone())
        .collect()
}

/// The first violation of `invariant` in `report`, printed.
fn violation_of(report: &RunReport, invariant: &str) -> Option<String> {
    report
        .violations
        .iter()
        .find(|v| v.invariant == invariant)
        .map(ToString::to_string)
}

#[test]
fn a_stop_that_cuts_below_what_a_describe_showed_caught_up_is_caught() {
    // `planned_failover`: the operator saw every partition caught up (lag 0) before the
    // stop; a STOPPING that cuts one record below the last stable offset loses a record the
    // operator was told was safe (`stop-keeps-caught-up`). The seed design keeps them all
    // and reaches the check's precondition on each partition.
    caught_within_ten_seeds(
        "planned_failover",
        BrokenSwitch::MirrorStopCutBelowLso,
        |report| violation_of(report, "stop-keeps-caught-up"),
    );
    for seed in fresh_seeds(2) {
        let report = assert_passes("planned_failover", seed);
        assert_eq!(
            report.marks.get("precondition:stop-keeps-caught-up"),
            Some(&3),
            "seed {seed}: every partition judged"
        );
    }
}

#[test]
fn broken_ack_before_replication_is_caught_within_ten_seeds() {
    // Acknowledging acks=all before the ISR has the write loses acknowledged records when the
    // leader dies: acked-writes-durable (or a Jepsen lost write) must notice.
    caught_within_ten_seeds(
        "leader_crash",
        BrokenSwitch::AckBeforeReplication,
        |report| violation_of(report, "acked-writes-durable"),
    );
}

#[test]
fn broken_skip_divergence_truncation_is_caught_within_ten_seeds() {
    // A follower that ignores diverging epochs keeps a stale suffix: its log never converges,
    // so replica-convergence or liveness (the ISR is never restored) must fail.
    caught_within_ten_seeds(
        "leader_partition",
        BrokenSwitch::SkipDivergenceTruncation,
        |report| (report.verdict != Verdict::Pass).then(|| report.violations[0].to_string()),
    );
}

#[test]
fn broken_lso_ignoring_open_transactions_is_caught_within_ten_seeds() {
    // A last stable offset that ignores open transactions lets READ_COMMITTED consumers read
    // data whose transaction later aborts: the read-committed checker must notice.
    caught_within_ten_seeds(
        "transactions",
        BrokenSwitch::LsoIgnoresOpenTransactions,
        |report| violation_of(report, "read-committed"),
    );
}

#[test]
fn broken_mirror_taking_writes_before_stopped_is_caught_within_ten_seeds() {
    // b's producer starts while b still mirrors: a write must be refused until STOPPED.
    caught_within_ten_seeds(
        "active_passive",
        BrokenSwitch::MirrorWritableBeforeStopped,
        // Caught by the append check itself (the event's own batch, not the log read later).
        |report| {
            violation_of(report, "read-only-until-stopped")
                .filter(|detail| detail.contains("appended a client batch"))
        },
    );
}

#[test]
fn failover_finishes_while_the_source_is_unreachable() {
    // Spec §3.3: STOPPING needs only the destination's log, controller and coordinator. In
    // `source_unreachable_failover` a and b are cut apart from 4 s to the end of the fault
    // phase (12 s) and the failover starts at 5 s: STOPPED must come inside the cut.
    for seed in [11, 12, 13] {
        let report = assert_passes("source_unreachable_failover", seed);
        let stopped_at = report.marks_first_ms.get("mirror-stopped").copied();
        assert!(
            stopped_at.is_some_and(|at| (5_000..12_000).contains(&at)),
            "seed {seed}: first STOPPED at {stopped_at:?} ms, not while a was cut off"
        );
        // The describe at 11 s, a still cut off: orders' partitions STOPPED with their last
        // mirrored epoch, no lag; audit, added after the cut and stopped while PREPARING,
        // STOPPED with nothing mirrored (a stop of the cluster's own writes: no last mirrored
        // epoch or offset of its own, −1@−1).
        let describe = first_describe(&report);
        assert_eq!(describe.described.len(), 3, "seed {seed}: {describe:?}");
        for line in &describe.described {
            let expected = if line.starts_with("audit-0=") {
                line == "audit-0=STOPPED(lag=-,lme=-1@-1)"
            } else {
                line.contains("=STOPPED(lag=-,lme=") && !line.contains("lme=-")
            };
            assert!(expected, "seed {seed}: {line}");
        }
        assert!(
            report
                .marks
                .contains_key("mirror-transition:PREPARING->STOPPING"),
            "seed {seed}: {:?}",
            report.marks
        );
    }
}

#[test]
fn a_silent_source_fails_the_partitions_until_retries_run_out_and_recover_brings_them_back() {
    // `source_outage_fails_and_recovers` (the prototype's testFailedRetryExhaustion and
    // testRecoverMirrorTopics): a is cut off from b from 3 s to 15 s; the mirror fails a
    // partition after 2 s without an answer from a and allows 3 attempts.
    for seed in fresh_seeds(3) {
        println!("seed {seed}");
        let report = assert_passes("source_outage_fails_and_recovers", seed);
        let outcomes: Vec<_> = report
            .admin
            .iter()
            .filter_map(|record| Some((record.op.kind.name(), record.outcome.clone()?)))
            .collect();
        let outcome = |kind: &str, nth: usize| {
            outcomes
                .iter()
                .filter(|(name, _)| *name == kind)
                .nth(nth)
                .map(|(_, outcome)| outcome.clone())
                .unwrap_or_else(|| panic!("seed {seed}: no {kind} #{nth} finished"))
        };
        // At 11.5 s, a unreachable: every partition FAILED with its 3 attempts used and the
        // reason on record.
        let failed = outcome("describe_mirror", 0);
        assert_eq!(failed.described.len(), 3, "seed {seed}: {failed:?}");
        for line in &failed.described {
            assert!(
                line.contains("=FAILED(")
                    && line.contains(",retries=3,")
                    && line.contains("mirror.socket.timeout.ms"),
                "seed {seed}: {line}"
            );
        }
        // a is back at 15 s; the recovery at 18 s finds both partitions of orders FAILED.
        let recovered = outcome("recover_topics", 0);
        assert_eq!(
            recovered.described,
            ["orders-0=RECOVERED", "orders-1=RECOVERED"],
            "seed {seed}: {recovered:?}"
        );
        // At 23 s: audit failed over from FAILED while a was unreachable; orders mirrors
        // again with its failure record cleared.
        let last = outcome("describe_mirror", 1);
        for line in &last.described {
            let expected = if line.starts_with("audit-0=") {
                line.starts_with("audit-0=STOPPED(")
            } else {
                line.contains("=MIRRORING(") && !line.contains("retries=")
            };
            assert!(expected, "seed {seed}: {line}");
        }
        let first = |mark: &str| report.marks_first_ms.get(mark).copied();
        let stopped = first("mirror-stopped");
        assert!(
            stopped.is_some_and(|at| (12_000..15_000).contains(&at)),
            "seed {seed}: audit STOPPED at {stopped:?} ms, not while a was cut off"
        );
    }
}

#[test]
fn a_mirrors_bootstrap_may_move_within_its_source_but_not_to_another_cluster() {
    // `mirror_config_update` (ducktape test_config_update, spec S-15): an unknown key is
    // refused; one broker of a as bootstrap.servers resets the connection and mirroring goes
    // on; c's brokers (a failed-over mirror of a) fail b's partitions for good on resume, and
    // b holds nothing of c's.
    for seed in fresh_seeds(3) {
        println!("seed {seed}");
        let report = assert_passes("mirror_config_update", seed);
        let errors: Vec<ErrorCode> = outcomes_of(&report, "alter_mirror")
            .into_iter()
            .map(|outcome| outcome.error)
            .collect();
        assert_eq!(
            errors,
            [ErrorCode::InvalidConfig, ErrorCode::None, ErrorCode::None],
            "seed {seed}"
        );
        let describes = outcomes_of(&report, "describe_mirror");
        assert!(
            describes[1]
                .described
                .iter()
                .all(|line| line.contains("=FAILED(")
                    && line.contains("retries=-1")
                    && line.contains("created from cluster-a")),
            "seed {seed}: {:?}",
            describes[1]
        );
    }
}

/// Every partition `describe` shows is MIRRORING with no failure on record.
fn assert_all_mirroring_with_no_failure_on_record(
    describe: &mirrorsim_sim::world::admin::AdminOutcome,
    seed: u64,
) {
    assert!(
        describe
            .described
            .iter()
            .all(|line| line.contains("=MIRRORING(") && !line.contains("retries=")),
        "seed {seed}: {describe:?}"
    );
}

#[test]
fn a_partition_failed_by_a_short_outage_mirrors_again_on_its_own() {
    // `source_outage_auto_recovery` (the prototype's testAutoRecovery): a is cut off from 3 s to
    // 9 s; the partitions fail after 2 s of silence and retry; at 14 s they mirror again with
    // no failure on record, and no attempt budget ran out.
    for seed in fresh_seeds(3) {
        println!("seed {seed}");
        let report = assert_passes("source_outage_auto_recovery", seed);
        let describes = outcomes_of(&report, "describe_mirror");
        assert_eq!(describes.len(), 2, "seed {seed}");
        assert!(
            describes[0]
                .described
                .iter()
                .all(|line| line.contains("retries=") && line.contains("mirror.socket.timeout.ms")),
            "seed {seed}: {:?}",
            describes[0]
        );
        assert_all_mirroring_with_no_failure_on_record(&describes[1], seed);
        assert!(!report.marks.contains_key("mirror-retries-exhausted"));
    }
}

#[test]
fn a_source_that_refuses_the_mirrors_principal_fails_the_partitions_until_access_is_granted() {
    // `source_acl_denies_mirror`: a's authorizer grants User:m Read on every topic, then denies
    // it Read on orders (fetches refused) and everything on audit (metadata and lookups
    // refused) for a few seconds. The partitions fail retryably with the refusal on record and
    // mirror again, with none of it on record, once the denies are deleted.
    for seed in fresh_seeds(3) {
        println!("seed {seed}");
        let report = assert_passes("source_acl_denies_mirror", seed);
        let describes = outcomes_of(&report, "describe_mirror");
        assert_eq!(describes.len(), 2, "seed {seed}");
        let refused = |line: &String, operation: &str| {
            line.contains("retries=")
                && line.contains(&format!("refuses User:m {operation}"))
                && line.contains("TopicAuthorizationFailed")
        };
        // audit never gets past its refused lookup; orders' lookups are answered, so a retry
        // reaches MIRRORING (which clears the failure record, the seed's rule) before its next
        // fetch is refused: it may be caught there, but not everywhere.
        let first = &describes[0].described;
        assert!(
            first.iter().all(|line| {
                (line.starts_with("orders")
                    && (refused(line, "Read") || line.contains("=MIRRORING(")))
                    || (line.starts_with("audit") && refused(line, "Describe"))
            }) && first
                .iter()
                .any(|line| line.starts_with("orders") && refused(line, "Read")),
            "seed {seed}: {:?}",
            describes[0]
        );
        assert_all_mirroring_with_no_failure_on_record(&describes[1], seed);
        assert!(!report.marks.contains_key("mirror-failed-non-retryable"));
    }
}

#[test]
fn a_deleted_source_topic_fails_its_partitions_for_good_and_the_others_mirror_on() {
    // `source_topic_deleted` (the prototype's testDeletedSourceTopicMovesToNonRetryable): a
    // deletes orders and events at 5 s; audit stays mirrored.
    for seed in fresh_seeds(3) {
        println!("seed {seed}");
        let report = assert_passes("source_topic_deleted", seed);
        let describe = first_describe(&report);
        for line in &describe.described {
            let expected = if line.starts_with("audit-0=") {
                line.starts_with("audit-0=MIRRORING(")
            } else {
                line.contains("=FAILED(")
                    && line.contains(",retries=-1,")
                    && line.contains("the source topic is deleted")
            };
            assert!(expected, "seed {seed}: {line}");
        }
        // events, failed over at 15 s, stopped from FAILED; orders stayed FAILED, which the
        // liveness check accepted only because a deleted its source topic.
        assert!(report
            .marks
            .contains_key("mirror-transition:FAILED->STOPPING"));
        assert!(report.marks.contains_key("liveness-source-topic-missing"));
    }
}

#[test]
fn a_source_unclean_election_fails_the_mirror_partition_unless_its_topic_supports_it() {
    // `source_unclean_election` (spec §4.7, config off): a's stale follower is elected
    // uncleanly at about 6.5 s, without records a's leader committed alone and b mirrored. b's
    // orders-0 goes FAILED, non-retryable, keeping them; the failover at 11 s stops it from
    // FAILED. `source_unclean_election_followed` (config on): b cuts what a lost, fences its
    // followers, waits in ULE_RECOVERY for every replica to cut too, and mirrors a's new
    // history to the end.
    for seed in fresh_seeds(3) {
        println!("seed {seed}");
        let report = assert_passes("source_unclean_election", seed);
        let describe = first_describe(&report);
        let [line] = describe.described.as_slice() else {
            panic!("seed {seed}: {describe:?}");
        };
        assert!(
            line.starts_with("orders-0=FAILED(")
                && line.contains(",retries=-1,")
                && line.contains("unclean leader election in the source"),
            "seed {seed}: {line}"
        );
        assert!(!report.marks.contains_key("mirror-source-unclean-followed"));
        let followed = assert_passes("source_unclean_election_followed", seed);
        let describe = first_describe(&followed);
        assert!(
            describe.described[0].starts_with("orders-0=MIRRORING("),
            "seed {seed}: {describe:?}"
        );
        // ULE_RECOVERY lasts until b's follower, down from 4.5 s to 8.5 s, is back and cut.
        let recovered = followed
            .marks_first_ms
            .get("mirror-transition:ULE_RECOVERY->MIRRORING")
            .copied();
        assert!(
            recovered.is_some_and(|at| at >= 8_500),
            "seed {seed}: ULE_RECOVERY ended at {recovered:?} ms"
        );
        assert!(!followed.marks.contains_key("mirror-source-unclean-failed"));
    }
}

#[test]
fn a_grown_source_topic_grows_its_mirror_and_every_new_partition_mirrors() {
    // `source_topic_grows`: a grows orders from 2 to 4 partitions at 5 s; a's producers follow
    // their metadata onto the new ones; b's sync grows b's orders, and at 13 s all four mirror.
    // (The liveness check holds every one mirrored to the source's stable end after healing.)
    for seed in fresh_seeds(3) {
        println!("seed {seed}");
        let report = assert_passes("source_topic_grows", seed);
        let describe = first_describe(&report);
        assert_eq!(describe.described.len(), 4, "seed {seed}: {describe:?}");
        assert!(
            describe
                .described
                .iter()
                .all(|line| line.contains("=MIRRORING(")),
            "seed {seed}: {describe:?}"
        );
    }
}

#[test]
fn source_side_topics_configs_and_acls_reach_the_destination() {
    // `source_side_changes`: a creates orders-eu (deferred), sets topic configs on orders and
    // creates and deletes ACLs while b mirrors; b's sync adopts orders-eu and copies what its
    // settings take; b's operator stops orders-eu at 11 s. Liveness judges adoption, configs,
    // ACLs and that the stopped topic is not adopted again (each a mark the file declares); at
    // 14 s orders mirrors and orders-eu is STOPPED.
    for seed in fresh_seeds(2) {
        println!("seed {seed}");
        let report = assert_passes("source_side_changes", seed);
        let describe = first_describe(&report);
        assert_eq!(describe.described.len(), 4, "seed {seed}: {describe:?}");
        for line in &describe.described {
            let want = if line.starts_with("orders-eu") {
                "=STOPPED("
            } else {
                "=MIRRORING("
            };
            assert!(line.contains(want), "seed {seed}: {line}");
        }
        for outcome in outcomes_of(&report, "create_topics") {
            assert_eq!(
                outcome.topics,
                vec![("orders-eu".to_owned(), ErrorCode::None)]
            );
        }
    }
    // A sync that copies nothing of the source's changes is caught by each rule.
    let report = run_seed(
        "source_side_changes",
        1,
        vec![BrokenSwitch::MirrorSyncIgnoresSourceChanges],
    );
    let details: Vec<String> = report.violations.iter().map(ToString::to_string).collect();
    for expected in [
        "never adopted a's orders-eu",
        "retention.ms is None here",
        "missing here",
    ] {
        assert!(
            details.iter().any(|detail| detail.contains(expected)),
            "{expected:?} not among {details:#?}"
        );
    }
    // A sync that adopts a stopped topic again (the prototype's
    // testStopMirrorTopicPreventsRediscovery) is caught too.
    caught_within_ten_seeds(
        "source_side_changes",
        BrokenSwitch::MirrorSyncReadoptsRemoved,
        |report| {
            violation_of(report, "liveness")
                .filter(|violation| violation.contains("adopted a topic its operator stopped"))
        },
    );
}

#[test]
fn an_exclude_altered_later_stops_the_topic_it_matches() {
    // `mirror_exclude_update`: b excludes orders-eu at 5 s; the sync removes it from the
    // mirror (marks in the file), b's producer writes to it from 10 s, and the operator's
    // re-add at 12 s is removed again. orders-us mirrors throughout.
    for seed in fresh_seeds(2) {
        println!("seed {seed}");
        let report = assert_passes("mirror_exclude_update", seed);
        let add_back = &outcomes_of(&report, "add_topics")[1];
        assert_eq!(
            add_back.topics,
            vec![("orders-eu".to_owned(), ErrorCode::None)]
        );
    }
}

#[test]
fn a_failback_started_too_early_fails_until_the_failover_and_can_be_taken_back() {
    // failback_too_early: a adds orders and events to its reverse mirror at 3 s while b still
    // mirrors both from a. The source refuses the last-mirrored-epoch lookup, so a's
    // partitions are FAILED (or between retries, PREPARING) at 4.5 s. events is removed at
    // 5 s and must stop from FAILED (before the fix a retry went back to PREPARING forever and
    // the liveness check reported it); orders prepares and mirrors once b fails over at 6.5 s.
    for seed in [31, 32] {
        let report = assert_passes("failback_too_early", seed);
        let describe = first_describe(&report);
        assert_eq!(describe.described.len(), 3, "seed {seed}: {describe:?}");
        assert!(
            describe
                .described
                .iter()
                .all(|line| line.contains("=FAILED(") || line.contains("=PREPARING(")),
            "seed {seed}: {describe:?}"
        );
        let count = |mark: &str| report.marks.get(mark).copied().unwrap_or(0);
        let first = |mark: &str| report.marks_first_ms.get(mark).copied();
        assert!(
            count("mirror-transition:PREPARING->FAILED") > 0,
            "seed {seed}"
        );
        // events leaves from FAILED, or from PREPARING when the removal lands between two
        // retries (a retry's PREPARING lasts one lookup round trip, its FAILED 100 ms).
        let stopped_from = ["FAILED", "PREPARING"]
            .map(|from| first(&format!("mirror-transition:{from}->STOPPING")));
        assert!(
            stopped_from.iter().flatten().any(|at| *at >= 5_000),
            "seed {seed}: {:?}",
            report.marks
        );
        // b's three partitions and a's two orders partitions each started mirroring once.
        assert_eq!(
            count("mirror-transition:PREPARING->MIRRORING"),
            5,
            "seed {seed}"
        );
        // b's orders (failover) and a's events (taken back) stopped.
        assert_eq!(count("mirror-stopped"), 3, "seed {seed}");
    }
}

#[test]
fn topic_admin_on_a_mirror_topic_waits_for_stopped() {
    // mirror_topic_admin: DeleteRecords, CreatePartitions and DeleteTopics refused while b
    // mirrors orders and while it is STOPPING, accepted once STOPPED.
    use mirrorsim::protocol::ErrorCode;
    for seed in [21, 22] {
        let report = assert_passes("mirror_topic_admin", seed);
        let outcomes: Vec<(String, Option<ErrorCode>)> = report
            .admin
            .iter()
            .map(|record| {
                let outcome = record.outcome.as_ref().expect("every op finished");
                (
                    record.op.kind.name().to_owned(),
                    outcome.topic_error("orders"),
                )
            })
            .collect();
        let refused = Some(ErrorCode::MirrorTopicNotStopped);
        let accepted = Some(ErrorCode::None);
        let expected: Vec<(String, Option<ErrorCode>)> = [
            ("create_mirror", None),
            ("add_topics", accepted),
            ("delete_records", refused),
            ("create_partitions", refused),
            ("delete_topics", refused),
            ("remove_topics", accepted),
            ("delete_records", refused),
            ("delete_records", accepted),
            ("create_partitions", accepted),
            ("delete_topics", accepted),
        ]
        .into_iter()
        .map(|(op, error)| (op.to_owned(), error))
        .collect();
        assert_eq!(outcomes, expected, "seed {seed}");
    }
}

#[test]
fn broken_mirror_topic_admin_without_the_stopped_check_is_caught_within_ten_seeds() {
    // DeleteRecords carried out by a MIRRORING leader.
    caught_within_ten_seeds(
        "mirror_topic_admin",
        BrokenSwitch::MirrorTopicAdminUnchecked,
        |report| violation_of(report, "read-only-until-stopped"),
    );
}

#[test]
fn a_replica_outside_the_isr_during_a_full_truncation_diverges_unless_every_replica_is_awaited() {
    // A finding about the KIP. With the default mirror.support.unclean.leader.election=false,
    // the KIP's PREPARING waits only for the ISR, and a replica outside it keeps the records
    // PREPARING cut.
    //
    // Where those records carry epochs above the re-mirrored ones (`delete_mirror` seed 7026:
    // b mirrors orders from scratch a second time after its own writes), the follower's epoch
    // rule catches them since issue #14: a follower never appends batches of an epoch below
    // its own latest without truncating first, so the seed passes even with the KIP's wait.
    let mut scenario = load("delete_mirror");
    for topic in &mut scenario.topics {
        topic.mirror_support_unclean_leader_election = false;
    }
    let options = RunOptions {
        design: Some(MirrorDesign::PrepareAwaitsIsr),
        ..RunOptions::new(7026)
    };
    let report = run(&scenario, &options);
    assert_eq!(report.verdict, Verdict::Pass, "{:?}", report.violations);
    // Where they carry the same epoch number as the batch mirrored at their offset (generated
    // seed 3307716073686462, shrunk), the returning replica's divergence check keeps its stale
    // record and it rejoins the ISR with a log the leader never had. Awaiting every replica
    // cures it: always (the config), or when the cut removed records (the seed design here).
    let seed = 3307716073686462;
    let mut scenario = load("regressions/replica_missed_preparing_cut_same_epoch");
    let kips_wait = RunOptions {
        design: Some(MirrorDesign::PrepareAwaitsIsr),
        ..RunOptions::new(seed)
    };
    let report = run(&scenario, &kips_wait);
    assert!(
        violation_of(&report, "replica-convergence").is_some(),
        "{:?}",
        report.violations
    );
    let report = run(&scenario, &RunOptions::new(seed));
    assert_eq!(report.verdict, Verdict::Pass, "{:?}", report.violations);
    assert!(
        report
            .marks
            .contains_key("preparing-awaits-replica-outside-isr"),
        "the seed design's wait was not what saved it: {:?}",
        report.marks
    );
    for topic in &mut scenario.topics {
        topic.mirror_support_unclean_leader_election = true;
    }
    let report = run(&scenario, &kips_wait);
    assert_eq!(report.verdict, Verdict::Pass, "{:?}", report.violations);
}

#[test]
fn broken_mirror_topic_admin_forwarding_while_mirroring_is_caught() {
    // The same switch without the DeleteRecords ops, so that what is caught is a DeleteTopics
    // or CreatePartitions forwarded while orders' committed mirror state is not STOPPED (the
    // controller then refuses it, but the broker's check was skipped).
    use mirrorsim_sim::scenario::AdminOpKind;
    let mut scenario = load("mirror_topic_admin");
    scenario
        .admin
        .retain(|op| op.kind() != AdminOpKind::DeleteRecords);
    let found = (0..10).find_map(|seed| {
        let options = RunOptions {
            broken: vec![BrokenSwitch::MirrorTopicAdminUnchecked],
            ..RunOptions::new(seed)
        };
        run(&scenario, &options)
            .violations
            .into_iter()
            .find(|v| v.invariant == "read-only-until-stopped" && v.detail.contains("forwarded"))
    });
    assert!(
        found.is_some(),
        "no seed in 0..10 caught a forwarded topic admin"
    );
}

#[test]
fn broken_mirror_skipping_preparing_is_caught_within_ten_seeds() {
    // An extra UNKNOWN → MIRRORING edge (no last-mirrored-epoch truncation) that the mirror
    // coordinator accepts: the committed __mirror_state records show the illegal transition.
    caught_within_ten_seeds(
        "active_passive",
        BrokenSwitch::MirrorSkipPreparing,
        |report| violation_of(report, "legal-transitions"),
    );
}

#[test]
fn broken_mirror_fetching_while_paused_is_caught_within_ten_seeds() {
    // PAUSING that keeps the mirror fetcher running: a fetcher outside MIRRORING.
    caught_within_ten_seeds(
        "mirror_admin",
        BrokenSwitch::MirrorFetchWhilePaused,
        |report| violation_of(report, "single-mirror-fetcher"),
    );
}

#[test]
fn broken_follower_ignoring_the_pid_reset_is_caught_within_ten_seeds() {
    // Followers that keep the mirrored producer state a MIRROR_PID_RESET clears disagree with
    // their leader (and with a rebuild of the log) once the partition is STOPPED.
    caught_within_ten_seeds(
        "active_passive",
        BrokenSwitch::FollowerIgnoresPidReset,
        |report| violation_of(report, "psm-replica-agreement"),
    );
}

#[test]
fn broken_mirror_coordinator_ignoring_epochs_is_caught_within_ten_seeds() {
    // A zombie leader of b's orders-0 (fenced by its controller, unaware of it) writes
    // MIRRORING after its successor re-entered PREPARING and moved on: a coordinator that
    // trusts the writer's epochs commits a record whose leader and state epochs go back.
    caught_within_ten_seeds(
        "mirror_zombie_leader",
        BrokenSwitch::MirrorCoordinatorIgnoresEpochs,
        |report| violation_of(report, "coordinator-fencing"),
    );
}

#[test]
fn a_jump_over_a_reset_that_preparing_cut_is_excused_in_a_failback_without_reverse_mirror() {
    // Issue #14: failback without a's reverse mirror. b's consumer read b's records 0..=N−1
    // mirrored from a, skipped b's MIRROR_PID_RESET at N (its failover) and read b's own writes
    // from N+1; when b mirrors a again, a has no last mirrored epoch for b (−1), so PREPARING
    // truncates b's log to 0 and mirrors a from scratch: a data record of a sits at N in the
    // final log. The jump was over a control batch when it happened, so skipped-poll excuses
    // it (mark `skip-rewritten-by-mirroring`); a jump over a data record never is (the unit
    // tests in sim/src/checks/mod.rs).
    let name = "regressions/failback_without_reverse_mirror";
    let scenario = load(name);
    let text = scenario.to_toml().expect("serialises");
    let again = mirrorsim_sim::scenario::Scenario::parse(std::path::Path::new("again.toml"), &text)
        .unwrap_or_else(|error| panic!("{error}\n{text}"));
    assert_eq!(
        again, scenario,
        "the regression scenario reads back from its TOML"
    );
    for seed in [1, 2, 3] {
        let report = assert_passes(name, seed);
        assert!(
            report.marks.contains_key("skip-rewritten-by-mirroring")
                && report
                    .marks
                    .contains_key("mirror-transition:STOPPED->PREPARING"),
            "seed {seed} did not reach the excused jump: {:?}",
            report.marks
        );
    }
}

#[test]
fn mirror_prefix_catches_an_off_by_one_in_the_last_mirrored_epoch_truncation() {
    // failback's a moves its leaders after b stopped mirroring, so a's PREPARING truncation
    // removes data (lme-truncation-removed-data): one record kept too many is a record b
    // never had, and b's own bumped epoch can equal a's, so the fetch's divergence check does
    // not repair it. The seed design's tail check does (below), so the checker is shown
    // catching it under tail-unverified, where nothing compares the kept tail with b's.
    let report = run(
        &load("failback"),
        &RunOptions {
            seed: 0,
            design: Some(MirrorDesign::TailUnverified),
            broken: vec![BrokenSwitch::MirrorLmeTruncationOffByOne],
            trace: false,
        },
    );
    let caught = violation_of(&report, "mirror-prefix");
    assert!(caught.is_some(), "not caught: {:?}", report.violations);
    println!("caught at seed 0: {}", caught.unwrap());
}

#[test]
fn the_tail_check_cuts_a_record_the_last_mirrored_epoch_truncation_kept_too_many() {
    // The same broken truncation under the seed design: a's first fetch from b re-reads a's
    // last batch, finds b's differs (mirror-tail-diverged), cuts it and mirrors b's.
    for seed in [0, 1] {
        let report = run_seed(
            "failback",
            seed,
            vec![BrokenSwitch::MirrorLmeTruncationOffByOne],
        );
        assert_eq!(
            report.verdict,
            Verdict::Pass,
            "seed {seed}: {:?}",
            report.violations
        );
        assert!(
            report.marks.contains_key("mirror-tail-diverged"),
            "seed {seed}: the tail check found nothing to cut"
        );
    }
}

/// Issue #14's situation: transactional producers on b write to topics b still mirrors.
const TXN_ON_MIRROR: &str = "regressions/txn_producer_on_mirroring_destination";

#[test]
fn a_transactional_producer_on_a_mirroring_destination_never_writes_into_the_mirror() {
    // The seed design: AddPartitionsToTxn refuses orders while b mirrors it, and the markers of
    // what b's payments producer enlisted while payments was being stopped (its produce was
    // refused, so nothing of it is in the log) are refused until payments is STOPPED, then
    // appended (before generated seed 14200000000000179 they were acknowledged without an
    // append, which left a produce retried into the STOPPED partition unfenced). Every
    // transaction of b completes (the liveness check reads the coordinators). Seeds 2 and 3
    // since issue #17's recorded source cluster id moved every run with a mirror (0 and 1 no
    // longer enlist while payments stops).
    for seed in [2, 3] {
        let report = assert_passes(TXN_ON_MIRROR, seed);
        for mark in [
            "mirror-txn-enlist-refused",
            "mirror-txn-marker-refused-in-stopping",
        ] {
            assert!(
                report.marks.contains_key(mark),
                "seed {seed}: {mark} not reached: {:?}",
                report.marks
            );
        }
    }
}

#[test]
fn broken_markers_without_the_read_only_check_are_caught_in_the_mirror() {
    // The behaviour issue #14 reported: with the prototype's unchecked AddPartitionsToTxn and
    // no read-only check on WriteTxnMarkers, the coordinator's ABORT lands in a MIRRORING
    // partition where the source's next batch belongs (mirror-prefix); with the seed's
    // enlist check alone, the ABORT of a transaction enlisted while payments was being
    // stopped lands in b's epoch before STOPPING's bump. On the seed's fetcher
    // (`epochs-unfenced`) that epoch is below the mirrored ones (epochs-monotonic); with
    // DLE ≥ SLE, b's epoch is already above every mirrored epoch, and the ABORT, closing
    // nothing in b's log, breaks no invariant there. Seed 2: the first that shows both since
    // AddTopicsToMirror goes through a broker (seed 0 before; the epoch race is timing).
    let scenario = load(TXN_ON_MIRROR);
    for (design, invariant) in [
        (MirrorDesign::TxnEnlistUnchecked, "mirror-prefix"),
        (MirrorDesign::EpochsUnfenced, "epochs-monotonic"),
    ] {
        let report = run(
            &scenario,
            &RunOptions {
                design: Some(design),
                broken: vec![BrokenSwitch::MirrorMarkersUnchecked],
                ..RunOptions::new(2)
            },
        );
        let caught = violation_of(&report, invariant)
            .unwrap_or_else(|| panic!("{design}: no {invariant}: {:?}", report.violations));
        println!("{design} with mirror-markers-unchecked: {caught}");
    }
}

#[test]
fn a_restarted_broker_answering_before_its_registration_is_not_excused_as_a_stale_image() {
    // Generator seed 8368442226905946: a restarted broker answered DescribeMirror from the
    // image it was still catching up on (ClusterMirrorNotFound). The model holds requests
    // until the image shows the broker's registration; `admin-outcomes` excuses an answer
    // from a stale image only at a broker that serves (one cut off from its controller), so
    // the broken switch that answers early is caught, and the cut-off case stays excused.
    // (The file was re-tuned on 2026-12-06 so that the describe goes to the restarted broker
    // a few ms after its restart; see its last comment. Since AddTopicsToMirror goes through
    // a broker, the window is met on 9 seeds of 1-30, the first 6.)
    let seed = 6;
    let scenario = load("regressions/describe_at_restarted_broker_before_catch_up");
    let report = run(
        &scenario,
        &RunOptions {
            broken: vec![BrokenSwitch::ServeBeforeRegistration],
            ..RunOptions::new(seed)
        },
    );
    let caught = violation_of(&report, "admin-outcomes")
        .unwrap_or_else(|| panic!("no admin-outcomes: {:?}", report.violations));
    println!("serve-before-registration: {caught}");
    let report = run(&scenario, &RunOptions::new(seed));
    assert_eq!(report.verdict, Verdict::Pass, "{:?}", report.violations);

    let seed = 9400000000002222;
    let scenario = load("regressions/describe_at_broker_cut_off_from_controller_stale_image");
    let report = run(&scenario, &RunOptions::new(seed));
    assert_eq!(report.verdict, Verdict::Pass, "{:?}", report.violations);
    assert!(
        report.marks.contains_key("admin-answered-from-stale-image"),
        "{:?}",
        report.marks
    );
}

#[test]
fn a_mirror_left_mirroring_over_records_its_source_lost_is_caught_at_the_end() {
    // `source_unclean_election` without its failover: b's orders-0 is left in the mirror to
    // the end. The seed design fails it (FAILED, keeping what a lost, which liveness accepts:
    // a did lose records); a fetcher that ignores the loss (`mirror-keeps-source-lost-records`)
    // stays MIRRORING over records a no longer has, which only the end-of-run rule of spec
    // §4.7 sees (mirror-prefix leaves them unjudged after the source's loss).
    let path = common::repository_root().join("scenarios/source_unclean_election.toml");
    let text = std::fs::read_to_string(&path).expect("source_unclean_election is readable");
    let failover = "[[admin.remove_topics]]\nat_ms = 11000\ncluster = \"b\"\nmirror = \"m\"\ntopics = [\"orders\"]\n";
    let kept = text.replace(failover, "");
    assert_ne!(kept, text, "the failover was found");
    let kept = kept.replace("    \"mirror-transition:FAILED->STOPPING\",\n", "");
    let scenario = mirrorsim_sim::scenario::Scenario::parse(&path, &kept).expect("valid");
    let broken = vec![BrokenSwitch::MirrorKeepsSourceLostRecords];
    let mut caught = 0;
    for seed in 1..=3 {
        let report = run_scenario(&scenario, seed, Vec::new());
        assert_eq!(
            report.verdict,
            Verdict::Pass,
            "seed {seed}: {:?}",
            report.violations
        );
        assert!(
            report.marks.contains_key("liveness-source-lost-records"),
            "seed {seed}"
        );
        let report = run_scenario(&scenario, seed, broken.clone());
        let found = report.violations.iter().any(|violation| {
            violation.invariant == "liveness"
                && violation
                    .to_string()
                    .contains("holds records its source no longer has")
        });
        assert!(
            report
                .marks
                .contains_key("liveness-source-loss-kept-judged"),
            "seed {seed}"
        );
        caught += usize::from(found);
    }
    assert_eq!(caught, 3, "caught in every seed");
}

#[test]
fn a_producers_stop_ms_ends_its_load_and_the_run_still_passes() {
    // `leader_crash`'s two producers (a record every 10 ms each, for the 10 s fault phase)
    // stopped at 3 s: about 600 records instead of about 2,000.
    let path = common::repository_root().join("scenarios/leader_crash.toml");
    let text = std::fs::read_to_string(&path).expect("leader_crash is readable");
    let stopped = text.replace("interval_ms = 10\n", "interval_ms = 10\nstop_ms = 3000\n");
    assert_ne!(stopped, text, "the producer table was found");
    let scenario = mirrorsim_sim::scenario::Scenario::parse(&path, &stopped).expect("valid");
    for seed in fresh_seeds(2) {
        let report = run_scenario(&scenario, seed, Vec::new());
        assert_eq!(
            report.verdict,
            Verdict::Pass,
            "seed {seed}: {:?}",
            report.violations
        );
        let (sent, acked, _) = report.records;
        assert!(
            (400..=620).contains(&sent),
            "seed {seed}: {sent} records sent"
        );
        assert!(acked > 0, "seed {seed}");
        let full = run_scenario(&load("leader_crash"), seed, Vec::new());
        assert!(
            full.records.0 > 3 * sent,
            "seed {seed}: {} vs {sent}",
            full.records.0
        );
    }
}

#[test]
fn a_mirror_that_knows_its_source_topic_by_name_only_follows_a_recreated_one_and_is_caught() {
    // `source_topic_recreated`: a deletes orders and creates it again while b mirrors it, and
    // b's leader of orders-1 dies in between, so the next leader knows the topic it mirrors
    // only from the stored state. The seed design names the source topic id in its fetches
    // and lookups and fails the partition; a mirror that knows the topic by name only
    // (`mirror-ignores-source-topic-id`) reads the new topic's epoch 0 as an unclean election
    // of the old one (b's orders follows such losses), cuts b's log and mirrors the new topic
    // into it, which `mirror-prefix` judges across the source topic's lives.
    let broken = vec![BrokenSwitch::MirrorIgnoresSourceTopicId];
    for seed in 1..=3 {
        assert_passes("source_topic_recreated", seed);
        let report = run_seed("source_topic_recreated", seed, broken.clone());
        let caught = violation_of(&report, "mirror-prefix")
            .is_some_and(|detail| detail.contains("the source topic's batch of a later life"));
        assert!(caught, "seed {seed}: {:?}", report.violations);
        assert!(
            report
                .marks
                .contains_key("prefix-judged-across-source-topic-life"),
            "seed {seed}"
        );
    }
}
