//! Simulator throughput and memory: prints figures, asserts nothing about speed.
//!
//! `cargo bench -p mirrorsim-sim --bench throughput` runs `SEEDS` seeds (default 200; set
//! `MIRRORSIM_BENCH_SEEDS=1000` for the README figure) of `scenarios/swarm_one_cluster.toml`, a
//! 3-broker cluster under steady acks=all load with swarm faults on, one after another in this
//! process, and reports simulated seconds per wall second, seeds per minute, messages per wall
//! second, and the peak resident memory (VmHWM) with the resident memory after the first and
//! the last seed, which shows whether memory stays flat across seeds.
//! `MIRRORSIM_BENCH_SCENARIO=NAME` measures another scenario of `scenarios/` the same way
//! (the README gives `active_passive` for two clusters mirroring).

use std::path::Path;
use std::time::Instant;

use mirrorsim_sim::commands::runner::{run, RunOptions};
use mirrorsim_sim::scenario::Scenario;

fn main() {
    let seeds: u64 = std::env::var("MIRRORSIM_BENCH_SEEDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(200);
    let name = std::env::var("MIRRORSIM_BENCH_SCENARIO")
        .unwrap_or_else(|_| "swarm_one_cluster".to_owned());
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../scenarios/{name}.toml"));
    let scenario = Scenario::load(&path).unwrap_or_else(|error| panic!("{error}"));
    let start = Instant::now();
    let mut simulated_ms = 0i64;
    let mut messages = 0u64;
    let mut failures = 0u64;
    let mut rss_after_first = 0;
    for seed in 0..seeds {
        let report = run(&scenario, &RunOptions::new(seed));
        simulated_ms += report.simulated_ms;
        messages += report.net.sent;
        failures += u64::from(!report.violations.is_empty());
        if seed == 0 {
            rss_after_first = memory_kib("VmRSS");
        }
    }
    let wall = start.elapsed().as_secs_f64();
    println!("scenario: {name} ({})", scenario.description);
    println!("seeds: {seeds}, failing: {failures}");
    println!(
        "wall: {wall:.1} s, simulated: {:.0} s",
        simulated_ms as f64 / 1000.0
    );
    println!(
        "simulated seconds per wall second: {:.1}",
        simulated_ms as f64 / 1000.0 / wall
    );
    println!("seeds per minute: {:.0}", seeds as f64 * 60.0 / wall);
    println!("messages per wall second: {:.0}", messages as f64 / wall);
    println!(
        "memory: RSS after seed 0 {} MiB, after seed {} {} MiB, peak {} MiB",
        rss_after_first / 1024,
        seeds - 1,
        memory_kib("VmRSS") / 1024,
        memory_kib("VmHWM") / 1024
    );
}

/// A `/proc/self/status` field in KiB (0 where unavailable).
fn memory_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with(field))
                .and_then(|line| {
                    line.split_whitespace()
                        .nth(1)
                        .and_then(|value| value.parse().ok())
                })
        })
        .unwrap_or(0)
}
