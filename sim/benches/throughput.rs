//! Simulator throughput and memory: prints figures, asserts nothing about speed (issue 16's
//! yardstick).
//!
//! `cargo bench -p mirrorsim-sim --bench throughput` prints one table, measured in one run on
//! one machine so its rows compare: for `active_passive`, `failback`, `swarm_one_cluster` and
//! a mix of generated scenarios (the soak's `--generate` seeds), each run `SEEDS` times one
//! after another in this process (default 20; `MIRRORSIM_BENCH_SEEDS=N`), the simulated
//! seconds per wall second, seeds per minute, messages per wall second and the wall time per
//! message (the generated rows run each generated seed as the soak does: seed = scenario's); and next to them two floors written here: a bare madsim one-way message loop (six
//! nodes sending to each other through madsim endpoints, nothing else) and a bare event loop
//! (a binary heap of timed events drawing madsim's RNG). The last column is each row's wall
//! time per message over the bare madsim loop's: what the world, the model and the checkers
//! add to delivering a message. Then the resident memory after the first and the last row and
//! its peak (VmHWM), which shows whether memory stays flat across seeds.
//!
//! `MIRRORSIM_BENCH_SCENARIO=NAME` measures one scenario of `scenarios/` instead of the table's
//! scenario rows (the floors are always measured).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use madsim::net::Endpoint;
use madsim::rand::Rng;
use madsim::runtime::{Handle, Runtime};
use mirrorsim_sim::commands::runner::{run, simulation_config, RunOptions};
use mirrorsim_sim::scenario::{generate::generate, Scenario};

/// The seed base of the generated rows (the soak's `--generate` seeds are drawn the same way).
const GENERATED_SEED_BASE: u64 = 10_400_000_000_000_000;
/// Messages the bare madsim loop delivers.
const BARE_MESSAGES: u64 = 360_000;
/// Nodes of the bare madsim loop.
const BARE_NODES: u64 = 6;
/// Events the bare event loop handles.
const BARE_EVENTS: u64 = 5_000_000;
const TAG: u64 = 7;

/// One measured row.
struct Row {
    name: String,
    seeds: u64,
    failing: u64,
    wall_s: f64,
    simulated_s: f64,
    messages: u64,
}

impl Row {
    fn nanos_per_message(&self) -> f64 {
        self.wall_s * 1e9 / self.messages.max(1) as f64
    }
}

fn main() {
    let seeds: u64 = std::env::var("MIRRORSIM_BENCH_SEEDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(20);
    let names: Vec<String> = match std::env::var("MIRRORSIM_BENCH_SCENARIO") {
        Ok(name) => vec![name],
        Err(_) => ["active_passive", "failback", "swarm_one_cluster"]
            .map(str::to_owned)
            .to_vec(),
    };
    let mut rows: Vec<Row> = names
        .iter()
        .map(|name| {
            let path =
                Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../scenarios/{name}.toml"));
            let scenario = Scenario::load(&path).unwrap_or_else(|error| panic!("{error}"));
            measure(name, 0..seeds, |_| scenario.clone())
        })
        .collect();
    let rss_after_scenarios = memory_kib("VmRSS");
    if std::env::var("MIRRORSIM_BENCH_SCENARIO").is_err() {
        let generated = GENERATED_SEED_BASE..GENERATED_SEED_BASE + seeds;
        rows.push(measure("generated mix", generated, generate));
    }
    let bare = bare_madsim_loop();
    let events_per_s = bare_event_loop();
    print_table(&rows, &bare, events_per_s);
    println!(
        "memory: RSS after the scenario rows {} MiB, at the end {} MiB, peak {} MiB",
        rss_after_scenarios / 1024,
        memory_kib("VmRSS") / 1024,
        memory_kib("VmHWM") / 1024
    );
}

/// Runs the `seeds`, one after another, each on the scenario `scenario_of` gives for it.
fn measure(name: &str, seeds: std::ops::Range<u64>, scenario_of: impl Fn(u64) -> Scenario) -> Row {
    let mut row = Row {
        name: name.to_owned(),
        seeds: seeds.end - seeds.start,
        failing: 0,
        wall_s: 0.0,
        simulated_s: 0.0,
        messages: 0,
    };
    for seed in seeds {
        let scenario = scenario_of(seed);
        let start = Instant::now();
        let report = run(&scenario, &RunOptions::new(seed));
        row.wall_s += start.elapsed().as_secs_f64();
        row.simulated_s += report.simulated_ms as f64 / 1000.0;
        row.messages += report.net.sent;
        row.failing += u64::from(!report.violations.is_empty());
    }
    row
}

/// Six madsim nodes send one-way messages round-robin through madsim endpoints until
/// [`BARE_MESSAGES`] arrived: what madsim alone costs per message.
fn bare_madsim_loop() -> Row {
    let runtime = Runtime::with_seed_and_config(1, simulation_config());
    let start = Instant::now();
    let simulated = runtime.block_on(async {
        let received = Arc::new(AtomicU64::new(0));
        let handle = Handle::current();
        let begin = madsim::time::Instant::now();
        let mut nodes = Vec::new();
        for index in 0..BARE_NODES {
            let received = Arc::clone(&received);
            nodes.push(
                handle
                    .create_node()
                    .name(format!("bare-{index}"))
                    .ip(bare_address(index).ip())
                    .init(move || bare_node(index, Arc::clone(&received)))
                    .build(),
            );
        }
        while received.load(Ordering::Relaxed) < BARE_MESSAGES {
            madsim::time::sleep(Duration::from_millis(1)).await;
        }
        begin.elapsed()
    });
    Row {
        name: "bare madsim loop".to_owned(),
        seeds: 0,
        failing: 0,
        wall_s: start.elapsed().as_secs_f64(),
        simulated_s: simulated.as_secs_f64(),
        messages: BARE_MESSAGES,
    }
}

fn bare_address(index: u64) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 9, 0, index as u8 + 1)), 1)
}

/// One node of the bare loop: receives and counts, and sends its share to the next nodes.
async fn bare_node(index: u64, received: Arc<AtomicU64>) {
    let endpoint = Arc::new(Endpoint::bind(bare_address(index)).await.expect("bind"));
    let receiver = Arc::clone(&endpoint);
    // Dropping the handle leaves the task running (as the world's sends do).
    madsim::task::spawn(async move {
        while receiver.recv_from_raw(TAG).await.is_ok() {
            received.fetch_add(1, Ordering::Relaxed);
        }
    });
    for sent in 0..BARE_MESSAGES / BARE_NODES {
        let to = bare_address((index + 1 + sent % (BARE_NODES - 1)) % BARE_NODES);
        let _ = endpoint.send_to_raw(to, TAG, Box::new(sent)).await;
    }
    std::future::pending::<()>().await;
}

/// A bare event loop: timed events in a binary heap, each handled by scheduling the next one a
/// random delay later (madsim's RNG). Events per wall second, timed outside the runtime (inside
/// it madsim answers the clock with simulated time).
fn bare_event_loop() -> f64 {
    let runtime = Runtime::with_seed_and_config(1, simulation_config());
    let start = Instant::now();
    runtime.block_on(async {
        let mut rng = madsim::rand::thread_rng();
        let mut queue = BinaryHeap::new();
        for node in 0..BARE_NODES {
            queue.push(Reverse((rng.gen_range(0..1_000u64), node)));
        }
        for _ in 0..BARE_EVENTS {
            let Reverse((at, node)) = queue.pop().expect("the loop keeps one event per node");
            queue.push(Reverse((at + rng.gen_range(1..1_000u64), node)));
        }
    });
    BARE_EVENTS as f64 / start.elapsed().as_secs_f64()
}

fn print_table(rows: &[Row], bare: &Row, events_per_s: f64) {
    println!(
        "{:<20} {:>6} {:>8} {:>8} {:>12} {:>10} {:>12} {:>10} {:>9}",
        "row",
        "seeds",
        "failing",
        "wall s",
        "sim s/wall s",
        "seeds/min",
        "msgs/wall s",
        "ns/msg",
        "× madsim"
    );
    for row in rows.iter().chain([bare]) {
        // The bare loop runs no seed: its seed columns stay empty.
        let per_seed = |value: String| {
            if row.seeds == 0 {
                "-".to_owned()
            } else {
                value
            }
        };
        println!(
            "{:<20} {:>6} {:>8} {:>8.1} {:>12.1} {:>10} {:>12.0} {:>10.0} {:>9.2}",
            row.name,
            per_seed(row.seeds.to_string()),
            per_seed(row.failing.to_string()),
            row.wall_s,
            row.simulated_s / row.wall_s,
            per_seed(format!("{:.0}", row.seeds as f64 * 60.0 / row.wall_s)),
            row.messages as f64 / row.wall_s,
            row.nanos_per_message(),
            row.nanos_per_message() / bare.nanos_per_message()
        );
    }
    println!(
        "{:<20} {:>6} {:>8} {:>8} {:>12} {:>10} {:>12.0} {:>10.0} (events)",
        "bare event loop",
        "-",
        "-",
        "-",
        "-",
        "-",
        events_per_s,
        1e9 / events_per_s
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
