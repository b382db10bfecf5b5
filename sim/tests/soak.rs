//! `mirrorsim soak`: per-seed results equal `mirrorsim run`'s whatever the job count, failures
//! become JSON lines with the replay command, panics are caught per seed, vacuous scenarios
//! are reported, and the CLI's exit codes and final line.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use mirrorsim::switches::BrokenSwitch;
use mirrorsim_sim::commands::runner::{run, RunOptions, RunReport, Verdict};
use mirrorsim_sim::commands::soak::{
    soak, Failure, GenerateMode, Observer, ScenarioRef, SeedOutcome, SeedResult, Shard, SoakConfig,
    SoakScenario, StopAfter, Summary,
};
use mirrorsim_sim::faults::FaultPlan;
use mirrorsim_sim::scenario::Scenario;
use mirrorsim_sim::world::NetStats;

mod common;
use common::repository_root;

/// A scenario as the soak sees it when given `scenarios/NAME.toml` from the repository root.
fn soak_scenario(name: &str) -> SoakScenario {
    let relative = PathBuf::from(format!("scenarios/{name}.toml"));
    let scenario =
        Scenario::load(&repository_root().join(&relative)).unwrap_or_else(|e| panic!("{e}"));
    SoakScenario {
        path: relative,
        scenario,
    }
}

fn config(names: &[&str], jobs: usize, seed_base: u64, seeds: u64) -> SoakConfig {
    SoakConfig {
        scenarios: names.iter().map(|name| soak_scenario(name)).collect(),
        jobs,
        shard: Shard::WHOLE,
        seed_base,
        stop: StopAfter {
            duration: None,
            seeds: Some(seeds),
        },
        design: None,
        broken: Vec::new(),
        generate: GenerateMode::Off,
        generated_dir: std::env::temp_dir().join(format!("mirrorsim-soak-{}", std::process::id())),
        check_determinism: None,
    }
}

/// Keeps what the soak reported.
#[derive(Default)]
struct Collect {
    /// (work item, scenario index, seed, trace hash or None after a panic).
    seeds: Vec<(u64, usize, u64, Option<u64>)>,
    failures: Vec<Failure>,
}

impl Observer for Collect {
    fn seed_done(&mut self, outcome: &SeedOutcome, failure: Option<&Failure>, _: &Summary) {
        let hash = match &outcome.result {
            SeedResult::Finished(report) => Some(report.trace_hash),
            SeedResult::Panicked(_) => None,
        };
        let scenario = match outcome.scenario {
            ScenarioRef::File(index) => index,
            ScenarioRef::Generated => usize::MAX,
        };
        if !outcome.repeat {
            self.seeds
                .push((outcome.index, scenario, outcome.seed, hash));
        }
        self.failures.extend(failure.cloned());
    }
}

/// The `trace_hash=` of `mirrorsim run SCENARIO --seed N`, run as a process from the root.
fn cli_trace_hash(path: &Path, seed: u64) -> u64 {
    let output = Command::new(env!("CARGO_BIN_EXE_mirrorsim"))
        .current_dir(repository_root())
        .args([
            "run",
            &path.display().to_string(),
            "--seed",
            &seed.to_string(),
        ])
        .output()
        .expect("mirrorsim runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    let hex = last
        .strip_prefix("trace_hash=")
        .unwrap_or_else(|| panic!("no trace_hash in the last line: {stdout}"));
    u64::from_str_radix(hex, 16).expect("16 hex digits")
}

#[test]
fn soak_seeds_give_the_trace_hash_of_mirrorsim_run() {
    // Two jobs, two scenarios (one scripted, one swarm), four seeds from base 500.
    let config = config(&["leader_crash", "swarm_one_cluster"], 2, 500, 4);
    let mut collect = Collect::default();
    let (summary, _) = soak(&config, run, &mut collect);
    assert_eq!(summary.seeds, 4);
    collect.seeds.sort();
    // The items run are the sequence's prefix: round robin over the scenarios, seeds 500….
    let items: Vec<(u64, usize, u64)> = collect.seeds.iter().map(|s| (s.0, s.1, s.2)).collect();
    assert_eq!(
        items,
        vec![(0, 0, 500), (1, 1, 501), (2, 0, 502), (3, 1, 503)]
    );
    for (_, scenario, seed, hash) in &collect.seeds {
        let hash = hash.expect("no panic");
        let scenario = &config.scenarios[*scenario];
        let in_process = run(&scenario.scenario, &RunOptions::new(*seed));
        assert_eq!(
            hash,
            in_process.trace_hash,
            "{} seed {seed}",
            scenario.path.display()
        );
        assert_eq!(
            hash,
            cli_trace_hash(&scenario.path, *seed),
            "{} seed {seed}: soak differs from `mirrorsim run`",
            scenario.path.display()
        );
    }
}

#[test]
fn a_failing_seed_becomes_a_json_line_with_the_replay_command() {
    // Acknowledging before replication loses acknowledged writes when leader_crash kills the
    // leader; seeds 1..=3 of it are known to be caught.
    let mut config = config(&["leader_crash"], 2, 1, 3);
    config.broken = vec![BrokenSwitch::AckBeforeReplication];
    let mut collect = Collect::default();
    let (summary, _) = soak(&config, run, &mut collect);
    assert_eq!(summary.seeds, 3);
    assert!(summary.safety > 0, "no seed caught the broken switch");
    assert_eq!(summary.exit_code(), 1);
    let failure = collect.failures.first().expect("a failure");
    let line = failure.line();
    assert!(!line.contains('\n'), "one line: {line}");
    let json: serde_json::Value = serde_json::from_str(&line).expect("valid JSON");
    let seed = json["seed"].as_u64().expect("seed");
    assert_eq!(json["scenario"], "leader_crash");
    assert_eq!(json["verdict"], "safety");
    assert_eq!(
        json["replay"],
        format!(
            "cargo run --release --bin mirrorsim -- replay scenarios/leader_crash.toml --seed {seed} --broken ack-before-replication"
        )
    );
    let invariants = json["invariants"].as_array().expect("invariants");
    assert!(
        invariants.iter().any(|i| i == "acked-writes-durable"),
        "{line}"
    );
    assert!(json["detail"]
        .as_str()
        .is_some_and(|d| d.starts_with("VIOLATION invariant=")));
    assert!(json["simulated_ms"].as_i64().is_some_and(|ms| ms > 0));
    assert_eq!(json["trace_hash"].as_str().map(str::len), Some(16));
    assert_eq!(json["shard"], "1/1");
}

/// A report that passes, reaching `marks`.
fn fake_report(seed: u64, verdict: Verdict, marks: &[&str]) -> RunReport {
    RunReport {
        seed,
        plan: FaultPlan::default(),
        verdict,
        violations: Vec::new(),
        trace_hash: seed,
        simulated_ms: 1_000,
        net: NetStats::default(),
        records: (1, 1, 0),
        marks: marks.iter().map(|m| ((*m).to_owned(), 1)).collect(),
        marks_first_ms: Default::default(),
        admin: Vec::new(),
    }
}

#[test]
fn a_panic_is_caught_per_seed_and_the_soak_goes_on() {
    let config = config(&["leader_crash"], 3, 10, 12);
    let mut collect = Collect::default();
    let (summary, _) = soak(
        &config,
        |_: &Scenario, options: &RunOptions| {
            if options.seed == 13 {
                panic!("model assertion broke");
            }
            fake_report(
                options.seed,
                Verdict::Pass,
                &["leader-elected", "node-restarted"],
            )
        },
        &mut collect,
    );
    assert_eq!(summary.seeds, 12, "the soak went on after the panic");
    assert_eq!(summary.panics, 1);
    assert_eq!(summary.exit_code(), 3);
    let failure = &collect.failures[0];
    assert_eq!(failure.seed, 13);
    assert_eq!(failure.verdict, "panic");
    assert!(
        failure.detail.contains("model assertion broke"),
        "{}",
        failure.detail
    );
    assert!(failure
        .replay
        .ends_with("replay scenarios/leader_crash.toml --seed 13"));
    // Three jobs, yet exactly the items 0..12 ran, each once.
    let mut items: Vec<u64> = collect.seeds.iter().map(|s| s.0).collect();
    items.sort();
    assert_eq!(items, (0..12).collect::<Vec<_>>());
}

#[test]
fn exit_codes_rank_safety_over_panics_over_liveness() {
    let config = config(&["leader_crash"], 1, 0, 3);
    let verdicts = Mutex::new(vec![Verdict::Liveness, Verdict::Pass, Verdict::Pass]);
    let (summary, _) = soak(
        &config,
        |_: &Scenario, options: &RunOptions| {
            let verdict = verdicts.lock().unwrap()[options.seed as usize];
            fake_report(options.seed, verdict, &["leader-elected", "node-restarted"])
        },
        &mut Collect::default(),
    );
    assert_eq!((summary.liveness, summary.exit_code()), (1, 2));
    *verdicts.lock().unwrap() = vec![Verdict::Liveness, Verdict::Safety, Verdict::Pass];
    let (summary, _) = soak(
        &config,
        |_: &Scenario, options: &RunOptions| {
            let verdict = verdicts.lock().unwrap()[options.seed as usize];
            fake_report(options.seed, verdict, &[])
        },
        &mut Collect::default(),
    );
    assert_eq!(summary.exit_code(), 1);
}

#[test]
fn a_scenario_that_never_reaches_a_declared_mark_is_vacuous() {
    // leader_crash declares leader-elected and node-restarted; the fake never restarts a node.
    let config = config(&["leader_crash", "swarm_one_cluster"], 2, 0, 6);
    let (summary, _) = soak(
        &config,
        |_: &Scenario, options: &RunOptions| {
            fake_report(
                options.seed,
                Verdict::Pass,
                &["leader-elected", "fault:kill"],
            )
        },
        &mut Collect::default(),
    );
    assert_eq!(
        summary.vacuous(&config),
        vec![("leader_crash", vec!["node-restarted"])]
    );
    let report = summary.report(&config);
    assert!(
        report.contains("VACUOUS scenario=leader_crash missing=node-restarted"),
        "{report}"
    );
    assert!(report.contains("fault:kill"), "{report}");
    assert_eq!(summary.marks["leader-elected"].seeds, 6);
    let line = summary.final_line(&config, std::time::Duration::from_secs(60));
    assert!(
        line.starts_with("soak seeds=6 failures=0 seeds_per_min=6.0 sim_s_per_wall_s=0.1 "),
        "{line}"
    );
    assert!(line.contains(" vacuous=1 "), "{line}");
}

#[test]
fn the_cli_refuses_bad_flags_with_exit_64() {
    for args in [
        &["soak", "--duration", "10"][..],
        &["soak", "--duration", "0s"],
        &["soak", "--shard", "0/2"],
        &["soak", "--shard", "3/2"],
        &["soak", "--jobs", "0"],
        &["soak", "--scenarios", "scenarios/no_such.toml"],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_mirrorsim"))
            .current_dir(repository_root())
            .args(args)
            .output()
            .expect("mirrorsim runs");
        assert_eq!(output.status.code(), Some(64), "{args:?}");
        // A bad flag value is refused by its typed parser, naming the flag and the value; a
        // scenario that cannot be read by the soak itself.
        let stderr = String::from_utf8_lossy(&output.stderr);
        let (flag, value) = (args[1], args[2]);
        assert!(
            stderr.starts_with(&format!("error: invalid value '{value}' for '{flag} "))
                || (stderr.starts_with("mirrorsim soak: ") && stderr.contains(value)),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn the_cli_writes_failures_to_stdout_and_the_out_file_and_exits_1() {
    let out =
        std::env::temp_dir().join(format!("mirrorsim-soak-test-{}.jsonl", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_mirrorsim"))
        .current_dir(repository_root())
        .args([
            "soak",
            "--scenarios",
            "scenarios/leader_crash.toml",
            "--seeds",
            "1",
            "--seed-base",
            "9",
            "--jobs",
            "1",
            "--broken",
            "ack-before-replication",
            "--out",
        ])
        .arg(&out)
        .output()
        .expect("mirrorsim runs");
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("SOAK seed_base=9 shard=1/1 jobs=1 "),
        "{stdout}"
    );
    let json_lines: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with('{'))
        .collect();
    assert_eq!(json_lines.len(), 1, "{stdout}");
    let written = std::fs::read_to_string(&out).expect("the --out file");
    let _ = std::fs::remove_file(&out);
    assert_eq!(written, format!("{}\n", json_lines[0]));
    assert!(json_lines[0].contains(
        "\"replay\":\"cargo run --release --bin mirrorsim -- replay scenarios/leader_crash.toml --seed 9 --broken ack-before-replication\""
    ));
    let last = lines.last().expect("a final line");
    assert!(
        last.starts_with("soak seeds=1 failures=1 seeds_per_min="),
        "{last}"
    );
    assert!(last.contains(" safety=1 liveness=0 panics=0 "), "{last}");
}

#[test]
fn generated_scenarios_alternate_with_the_files_and_each_is_the_seeds_own() {
    let mut config = config(&["leader_crash"], 2, 40, 4);
    config.generate = GenerateMode::Mix;
    let items: Vec<(ScenarioRef, u64)> = (0..4).map(|i| config.item(i).expect("an item")).collect();
    assert_eq!(
        items,
        vec![
            (ScenarioRef::File(0), 40),
            (ScenarioRef::Generated, 41),
            (ScenarioRef::File(0), 42),
            (ScenarioRef::Generated, 43)
        ]
    );
    assert_eq!(
        *config.scenario_of(ScenarioRef::Generated, 43),
        mirrorsim_sim::scenario::generate::generate(43)
    );
    // A failing generated scenario is written where its failure line's replay command says.
    let written = mirrorsim_sim::commands::soak::write_generated(&config, 43).expect("written");
    let replay = config.replay_command(ScenarioRef::Generated, 43);
    assert!(replay.contains(&written.display().to_string()), "{replay}");
    let loaded = Scenario::load(&written).expect("the written file loads");
    assert_eq!(loaded, mirrorsim_sim::scenario::generate::generate(43));
    let _ = std::fs::remove_file(&written);
    config.generate = GenerateMode::Only;
    assert_eq!(config.item(0).map(|(s, _)| s), Some(ScenarioRef::Generated));
}

#[test]
fn the_determinism_check_runs_one_seed_in_k_twice_and_reports_a_different_hash() {
    // Slots: K items, then a repeat of one of them.
    let mut config = config(&["leader_crash"], 2, 0, 6);
    config.check_determinism = Some(3);
    let slots: Vec<(u64, bool)> = (0..8).map(|slot| config.slot(slot)).collect();
    assert_eq!(
        slots,
        vec![
            (0, false),
            (1, false),
            (2, false),
            (0, true),
            (3, false),
            (4, false),
            (5, false),
            (4, true)
        ]
    );
    // A runner whose second run of a seed gives another hash is caught; repeats are not seeds.
    let calls = Mutex::new(std::collections::BTreeMap::<u64, u64>::new());
    let unstable = |_: &Scenario, options: &RunOptions| -> RunReport {
        let mut report = fake_report(options.seed, Verdict::Pass, &[]);
        let mut calls = calls.lock().expect("not poisoned");
        let count = calls.entry(options.seed).or_insert(0);
        *count += 1;
        report.trace_hash = options.seed * 100 + *count;
        report
    };
    let mut collect = Collect::default();
    let (summary, _) = soak(&config, unstable, &mut collect);
    assert_eq!(summary.seeds, 6);
    assert_eq!(summary.repeated, 2);
    assert_eq!(summary.nondeterministic, 2);
    assert_eq!(summary.exit_code(), 3);
    let mismatch = collect
        .failures
        .iter()
        .find(|f| f.verdict == "nondeterminism")
        .expect("a nondeterminism failure");
    assert!(
        mismatch.detail.contains("trace_hash="),
        "{}",
        mismatch.detail
    );
    assert!(mismatch.replay.contains("--seed"), "{}", mismatch.replay);
    // The real runner is deterministic.
    let mut collect = Collect::default();
    let (summary, _) = soak(&config, run, &mut collect);
    assert_eq!((summary.repeated, summary.nondeterministic), (2, 0));
}

/// Generated scenarios per `cargo test` run (each about 20 simulated seconds).
const GENERATED_SEEDS: u64 = 6;

/// The generated soak draws a fresh seed base each run (printed, so a failure replays with
/// `MIRRORSIM_GENERATED_SEED_BASE=N`). The latest 10-minute soaks failed 1 of 1,110, 1 of
/// 1,168 and 0 of 948 generated seeds, both triaged since (issue #14's note): about one run in
/// 150 to 200 of these six seeds meets a shape no checker has seen, which is what it is for.
#[test]
fn a_short_generated_soak_finds_nothing() {
    // Issue #14: scenarios nobody wrote (printed, so a failure replays). Every third seed runs
    // twice, as `soak --check-determinism 3` does, so a stray iteration order shows here too.
    // Fresh seeds each run; MIRRORSIM_GENERATED_SEED_BASE=N runs the seeds from N again.
    let seed_base = match std::env::var("MIRRORSIM_GENERATED_SEED_BASE").as_deref() {
        Ok("fresh") | Err(_) => rand::random::<u64>() >> 11,
        Ok(base) => base.parse().unwrap_or_else(|_| {
            panic!("MIRRORSIM_GENERATED_SEED_BASE={base}: not a seed or `fresh`")
        }),
    };
    println!(
        "generated soak: seeds {seed_base}..{} (repeat with MIRRORSIM_GENERATED_SEED_BASE={seed_base})",
        seed_base + GENERATED_SEEDS - 1
    );
    let mut config = config(&[], 2, seed_base, GENERATED_SEEDS);
    config.generate = GenerateMode::Only;
    config.check_determinism = Some(3);
    let mut collect = Collect::default();
    let (summary, _) = soak(&config, run, &mut collect);
    assert_eq!(summary.seeds, GENERATED_SEEDS);
    assert!(summary.repeated >= 1, "the determinism check ran");
    let lines: Vec<String> = collect.failures.iter().map(Failure::line).collect();
    assert!(
        lines.is_empty(),
        "generated soak from seed base {seed_base} failed (each line has its replay command; \
         the scenario is `mirrorsim generate --seed SEED`):\n{}",
        lines.join("\n")
    );
}
