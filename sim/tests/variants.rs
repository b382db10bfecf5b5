//! Issue #7: every rejected KIP-1279 design is caught by a named invariant in a scenario the
//! seed's design passes with the same seed. Each test runs both designs on pinned seeds (the
//! README's variants table was measured with `mirrorsim variants`).

use std::path::PathBuf;

use mirrorsim::mirror::MirrorDesign;
use mirrorsim_sim::runner::{run, RunOptions, RunReport, Verdict};
use mirrorsim_sim::scenario::Scenario;

fn load(name: &str) -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("scenarios")
        .join(format!("{name}.toml"));
    Scenario::load(&path).unwrap_or_else(|error| panic!("{error}"))
}

fn run_design(scenario: &Scenario, design: MirrorDesign, seed: u64) -> RunReport {
    run(
        scenario,
        &RunOptions {
            seed,
            design: Some(design),
            broken: Vec::new(),
            trace: false,
        },
    )
}

/// Asserts that on each of `seeds` the seed design passes `scenario` and `design` is caught
/// by `invariant`.
fn seed_passes_and_variant_is_caught(
    scenario: &str,
    design: MirrorDesign,
    invariant: &str,
    seeds: &[u64],
) {
    let scenario = load(scenario);
    for &seed in seeds {
        let reference = run_design(&scenario, MirrorDesign::Seed, seed);
        assert_eq!(
            reference.verdict,
            Verdict::Pass,
            "{} seed {seed} under the seed design: {:?}",
            scenario.name,
            reference.violations
        );
        let variant = run_design(&scenario, design, seed);
        let caught = variant.violations.iter().find(|v| v.invariant == invariant);
        assert!(
            caught.is_some(),
            "{} seed {seed} under {design}: {invariant} not reported; got {:?}",
            scenario.name,
            variant.violations
        );
        println!("{design} caught at seed {seed}: {}", caught.unwrap());
    }
}

#[test]
fn no_pid_reset_leaves_the_sources_producer_ids_in_the_stopped_partition() {
    // Spec §9 S-1: without MIRROR_PID_RESET, a's producer ids survive b's stop.
    seed_passes_and_variant_is_caught(
        "active_passive",
        MirrorDesign::NoPidReset,
        "no-stale-pid-after-stopped",
        &[0, 1],
    );
}

#[test]
fn no_epoch_bump_writes_local_batches_in_an_epoch_no_higher_than_mirrored_ones() {
    // Without the bump, b's first local batch (its MIRROR_PID_RESET) carries b's leader
    // epoch, below the epochs a's leader moves gave the mirrored batches.
    seed_passes_and_variant_is_caught(
        "active_passive",
        MirrorDesign::NoEpochBump,
        "epochs-monotonic",
        &[0, 1],
    );
}

#[test]
fn epoch_rewrite_makes_the_mirrored_log_differ_from_the_sources() {
    // Spec §9 S-23: batches stamped with b's epoch are no longer the source's bytes.
    seed_passes_and_variant_is_caught(
        "active_passive",
        MirrorDesign::EpochRewrite,
        "offset-identity",
        &[0, 1],
    );
}

#[test]
fn unclamped_offset_sync_commits_offsets_beyond_the_destination_log() {
    // Spec §9 S-11: a's consumers commit past what b holds while b's leader is cut off.
    seed_passes_and_variant_is_caught(
        "group_offset_sync",
        MirrorDesign::UnclampedOffsetSync,
        "offset-sync-clamped",
        &[0, 1],
    );
}
