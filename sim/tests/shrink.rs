//! `mirrorsim shrink`: a swarm failure that needs a fault shrinks to a file that loads, fails
//! the same invariant with the same seed and has fewer faults; the CLI writes and checks the
//! file, and refuses a passing seed. The reducer's own rules are unit-tested in
//! `sim/src/commands/shrink.rs` with a fake runner.

use std::path::{Path, PathBuf};
use std::process::Command;

use mirrorsim::switches::BrokenSwitch;
use mirrorsim_sim::commands::runner::{run, RunOptions};
use mirrorsim_sim::commands::shrink::{
    materialise, render, shrink_seed, target_of, ShrinkError, ShrinkOptions, Size,
};
use mirrorsim_sim::commands::soak::run_isolated;
use mirrorsim_sim::scenario::Scenario;

mod common;
use common::{load, repository_root};

/// The invariant `scenario` fails with `seed` and `broken`, if any (`panic` for a panic).
fn failure(scenario: &Scenario, seed: u64, broken: &[BrokenSwitch]) -> Option<String> {
    let options = RunOptions {
        broken: broken.to_vec(),
        ..RunOptions::new(seed)
    };
    target_of(&run_isolated(&run, scenario, &options), seed).map(|target| target.invariant)
}

/// A file in the temporary directory, unique to this process and `name`.
fn temporary(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("mirrorsim-shrink-{}-{name}", std::process::id()))
}

#[test]
fn a_swarm_failure_that_needs_a_fault_shrinks_to_a_file_that_fails_the_same_way() {
    let scenario = load("swarm_one_cluster");
    let broken = vec![BrokenSwitch::AckBeforeReplication];
    // A seed whose swarm plan has several faults and that acknowledges a write before it is
    // replicated, and whose failure needs a fault: without one it passes.
    let seed = (0..10)
        .find(|&seed| {
            let materialised = materialise(&scenario, seed);
            let mut without_faults = materialised.clone();
            without_faults.faults.scripted.clear();
            materialised.faults.scripted.len() >= 2
                && failure(&scenario, seed, &broken).as_deref() == Some("acked-writes-durable")
                && failure(&without_faults, seed, &broken).is_none()
        })
        .expect("a seed in 0..10 fails acked-writes-durable only with faults");
    println!("seed {seed}");

    let options = ShrinkOptions {
        seed,
        broken: broken.clone(),
        budget: 15,
    };
    let mut lines = Vec::new();
    let shrunk = shrink_seed(&scenario, &options, run, &mut |line| {
        lines.push(line.to_owned())
    })
    .expect("the seed fails");
    println!("{}", lines.join("\n"));
    assert_eq!(shrunk.target.invariant, "acked-writes-durable");
    assert!(shrunk.same_trace, "materialising changed the run");
    assert!(shrunk.runs <= 15 + 2, "{} runs", shrunk.runs);
    assert!(
        lines.iter().any(|l| l.starts_with("shrink: step 1 runs=")
            && l.ends_with("still fails acked-writes-durable")),
        "{lines:#?}"
    );

    let out = temporary("swarm.toml");
    let text = render(
        &shrunk,
        Path::new("scenarios/swarm_one_cluster.toml"),
        &out,
        &options,
    )
    .expect("renders");
    std::fs::write(&out, &text).expect("writes");
    let written = Scenario::load(&out);
    let _ = std::fs::remove_file(&out);
    let written = written.unwrap_or_else(|error| panic!("{error}\n{text}"));
    assert_eq!(written, shrunk.scenario, "the file reads back as written");
    assert!(!written.faults.swarm);
    assert_eq!(
        failure(&written, seed, &broken).as_deref(),
        Some("acked-writes-durable"),
        "{text}"
    );

    let before = Size::of(&materialise(&scenario, seed));
    let after = Size::of(&written);
    assert_eq!(before, shrunk.before);
    assert!(after.faults < before.faults, "{before} -> {after}");
    assert!(after.faults >= 1, "the failure needs a fault: {after}");
    assert!(after.producers <= before.producers, "{before} -> {after}");
    assert!(after.consumers <= before.consumers, "{before} -> {after}");
    assert!(text.contains(&format!(
        "# Reproduce: cargo run --release --bin mirrorsim -- run {} --seed {seed} --broken ack-before-replication\n",
        out.display()
    )));
}

#[test]
fn a_passing_seed_has_nothing_to_shrink() {
    let options = ShrinkOptions {
        seed: 1,
        broken: Vec::new(),
        budget: 5,
    };
    let result = shrink_seed(&load("leader_crash"), &options, run, &mut |_| {});
    assert_eq!(result.err(), Some(ShrinkError::Passes));

    let output = Command::new(env!("CARGO_BIN_EXE_mirrorsim"))
        .current_dir(repository_root())
        .args(["shrink", "scenarios/leader_crash.toml", "--seed", "1"])
        .output()
        .expect("mirrorsim runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(64), "{stderr}");
    assert!(
        stderr.contains(
            "mirrorsim shrink: nothing to shrink: seed 1 passes scenarios/leader_crash.toml"
        ),
        "{stderr}"
    );
}

#[test]
fn the_cli_writes_a_checked_file_and_refuses_bad_input() {
    let out = temporary("cli.toml");
    let output = Command::new(env!("CARGO_BIN_EXE_mirrorsim"))
        .current_dir(repository_root())
        .args([
            "shrink",
            "scenarios/leader_crash.toml",
            "--seed",
            "9",
            "--broken",
            "ack-before-replication",
            "--budget",
            "4",
            "--out",
        ])
        .arg(&out)
        .output()
        .expect("mirrorsim runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let written = std::fs::read_to_string(&out);
    let _ = std::fs::remove_file(&out);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let written = written.expect("the --out file");
    assert!(
        stdout.contains("shrink: seed 9 fails acked-writes-durable (safety, exit 1): VIOLATION"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "shrink: wrote {} (checked: it fails acked-writes-durable with seed 9)",
            out.display()
        )),
        "{stdout}"
    );
    assert!(
        written.starts_with(
            "# Shrunk by `mirrorsim shrink` from scenarios/leader_crash.toml with seed 9.\n"
        ),
        "{written}"
    );
    assert!(written.contains("# Runs: "), "{written}");

    for args in [
        &["shrink", "scenarios/leader_crash.toml"][..],
        &["shrink", "scenarios/no_such.toml", "--seed", "1"],
        &[
            "shrink",
            "scenarios/leader_crash.toml",
            "--seed",
            "9",
            "--broken",
            "no-such-switch",
        ],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_mirrorsim"))
            .current_dir(repository_root())
            .args(args)
            .output()
            .expect("mirrorsim runs");
        assert_eq!(output.status.code(), Some(64), "{args:?}");
    }
}
