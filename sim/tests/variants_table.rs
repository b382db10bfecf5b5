//! `mirrorsim variants` as a process: the table catches no-pid-reset in active_passive by
//! `no-stale-pid-after-stopped` while the seed design (the control row) passes, the Markdown
//! goes to `--out`, bad input exits 64, and the default columns are the mirroring scenarios.
//! The aggregation, the median gap and the rendering are unit-tested in `sim/src/commands/variants.rs`.

use std::path::PathBuf;
use std::process::{Command, Output};

use mirrorsim_sim::commands::variants::is_mirroring;
use mirrorsim_sim::scenario::Scenario;

mod common;
use common::repository_root;

/// `mirrorsim variants ARGS…`, run from the repository root.
fn variants(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mirrorsim"))
        .current_dir(repository_root())
        .arg("variants")
        .args(args)
        .output()
        .expect("the mirrorsim binary runs")
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("mirrorsim-variants-{}-{name}", std::process::id()))
}

/// The table row of `design` (its first word is the design's name).
fn row<'a>(stdout: &'a str, design: &str) -> &'a str {
    stdout
        .lines()
        .find(|line| line.split_whitespace().next() == Some(design))
        .unwrap_or_else(|| panic!("no row for {design} in:\n{stdout}"))
}

#[test]
fn no_pid_reset_is_caught_in_active_passive_and_the_seed_design_passes() {
    let out = temp_path("table.md");
    let output = variants(&[
        "--seeds",
        "2",
        "--designs",
        "seed,no-pid-reset",
        "--scenarios",
        "scenarios/active_passive.toml",
        "--jobs",
        "2",
        "--out",
        &out.display().to_string(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.starts_with(
        "VARIANTS designs=2 (seed,no-pid-reset) scenarios=1 (active_passive) seeds=2 seed_base=0 jobs=2 runs=4\n"
    ), "{stdout}");
    let header = row(&stdout, "design");
    assert!(header.contains("active_passive"), "{header}");
    assert_eq!(row(&stdout, "seed"), "seed          pass");
    assert!(
        row(&stdout, "no-pid-reset").ends_with("no-stale-pid-after-stopped 2/2 (1)"),
        "{stdout}"
    );
    assert!(stdout.contains("seed (control): passed every run (2 runs)"));
    assert!(stdout.contains(
        "no-pid-reset: caught by: no-stale-pid-after-stopped (in active_passive); median seeds to first failure: 1 in active_passive"
    ), "{stdout}");
    assert!(
        stdout.contains("replay scenarios/active_passive.toml --seed 0 --design no-pid-reset"),
        "{stdout}"
    );
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("variants designs=2 scenarios=1 seeds=2 runs=4 seed_base=0 caught=1/1 control_failures=0 panics=0 wall_s="),
        "{last}"
    );
    // One progress line per cell on stderr.
    assert_eq!(stderr.matches("variants [").count(), 2, "{stderr}");

    let markdown = std::fs::read_to_string(&out).expect("the --out file");
    let _ = std::fs::remove_file(&out);
    assert!(
        markdown.contains("| `no-pid-reset` | `no-stale-pid-after-stopped` 2/2 (1) |"),
        "{markdown}"
    );
    assert!(markdown.contains("| `seed` | pass |"), "{markdown}");
}

#[test]
fn bad_input_exits_64_naming_the_problem() {
    let no_mirror = temp_path("single-cluster");
    std::fs::create_dir_all(&no_mirror).expect("a temporary directory");
    std::fs::copy(
        repository_root().join("scenarios/leader_crash.toml"),
        no_mirror.join("leader_crash.toml"),
    )
    .expect("copied");
    let no_mirror_arg = no_mirror.display().to_string();
    for (args, expected) in [
        (
            vec!["--designs", "seed,lmo"],
            "--designs: unknown design `lmo`",
        ),
        (
            vec!["--scenarios", "scenarios/nope.toml"],
            "scenarios/nope.toml",
        ),
        (vec!["--seeds", "0"], "--seeds must be at least 1"),
        (vec!["--jobs", "0"], "for '--jobs <JOBS>': bad value `0`"),
        (
            vec!["--seed-base", "18446744073709551615", "--seeds", "2"],
            "runs past the largest seed",
        ),
        (
            vec!["--scenarios", no_mirror_arg.as_str()],
            "holds no mirroring scenario",
        ),
        (vec!["--frobnicate"], "--frobnicate"),
    ] {
        let output = variants(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(64), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}: nothing runs");
    }
    let _ = std::fs::remove_dir_all(&no_mirror);
}

#[test]
fn the_default_columns_are_the_scenarios_with_two_or_more_clusters() {
    // The rule is "the admin timeline creates a mirror"; for the shipped scenarios it picks
    // exactly the multi-cluster ones, which is what a reader of the table expects.
    let mut mirroring = 0;
    for entry in std::fs::read_dir(repository_root().join("scenarios")).expect("scenarios/") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|ext| ext != "toml") {
            continue;
        }
        let scenario = Scenario::load(&path).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(
            is_mirroring(&scenario),
            scenario.clusters.len() >= 2,
            "{}",
            path.display()
        );
        mirroring += usize::from(is_mirroring(&scenario));
    }
    assert!(mirroring >= 10, "only {mirroring} mirroring scenarios");
}
