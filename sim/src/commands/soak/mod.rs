//! `mirrorsim soak`: many fresh seeds over many scenarios for a wall-clock budget, on several
//! threads, shardable across machines (design.md §6, issue #6).
//!
//! Contract:
//! - **Work sequence.** The soak runs work items `j = 0, 1, 2, …` in this order: item `j` runs
//!   scenario `j % S` (the scenarios in the order given) with seed [`SeedSequence::seed`]`(j)`.
//!   Seeds are `first, first + N, first + 2N, …` where `first` is the smallest seed at or above
//!   `--seed-base` with `seed % N == K − 1` for `--shard K/N`, so the shards of one seed space
//!   never overlap (even with different bases) and together cover every seed from the base on.
//! - **Stopping.** Workers claim items from one counter and stop claiming when the duration has
//!   run out (or `--seeds` items were claimed); every claimed item is finished, so the items run
//!   are always a prefix `0..M` of the sequence. `M` depends on wall time and machine speed;
//!   each item's result does not: every seed runs through [`crate::commands::runner::run`] in its own
//!   fresh OS thread with its own madsim `Runtime`, exactly as `mirrorsim run SCENARIO --seed N`
//!   runs it, so it has the same trace hash and verdict (tested in `sim/tests/soak.rs`).
//!   Wall-clock time is read only here, outside every simulation, to decide when to stop.
//! - **Fault model.** Each scenario runs with its own fault model: a swarm scenario gets its
//!   seed-chosen fault kinds and rates, a scripted one its scripted faults (the seed still moves
//!   latency, scheduling and every random choice). Swarm faults are not added to scripted
//!   scenarios: their faults are chosen to stay inside Kafka's single-fault durability model
//!   ([`crate::faults`]), and a scripted scenario may already spend that budget on purpose.
//! - **Failures.** A run with a violation, or a panic inside the simulation (caught per seed,
//!   the soak goes on), becomes one [`Failure`], written as one JSON line with the replay
//!   command.
//! - **Coverage.** [`Summary`] counts, per coverage mark, the seeds that reached it and the
//!   total count; a scenario none of whose seeds reached one of its declared `coverage` marks
//!   is *vacuous*.
//! - **Generated scenarios** (`--generate`, [`GenerateMode`]): a work item may run the scenario
//!   [`crate::scenario::generate::generate`] draws from its own seed instead of a file: every other item
//!   with `mix` (the odd ones; the even ones go round the files), every item with `only`. A
//!   failing generated scenario is written as `generated-SEED.toml` into
//!   [`SoakConfig::generated_dir`] (by [`write_generated`]), and its failure line's path and
//!   replay command name that file, so `run`, `replay` and `shrink` take it unchanged.
//! - **Determinism self-check** (`--check-determinism K`, FoundationDB's unseed check): one
//!   item in `K` is run a second time, as an extra work item placed `K` items later, so another
//!   worker thread usually runs it at another point of the soak; a different trace hash is a
//!   failure of its own kind (`nondeterminism`, with both hashes and the replay command).
//!   Repeats are not counted as seeds.
//! - **Exit code** ([`Summary::exit_code`]): 0 no failure; 1 any safety violation; else 3 any
//!   panic or nondeterminism (a simulator bug); else 2 liveness only. Bad input (64) is decided
//!   before a soak starts.

mod failure;
mod summary;

pub use failure::{
    failure_of, nondeterminism_failure, Failure, FailureViolation, SeedOutcome, SeedResult,
};
pub use summary::{MarkTally, ScenarioTally, Summary};

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mirrorsim::mirror::{is_valid_transition, MirrorDesign, MirrorState};
use mirrorsim::switches::BrokenSwitch;
use serde::Serialize;

use crate::checks::{INVARIANTS, PRECONDITION_PREFIX};
use crate::commands::runner::{RunOptions, RunReport, Verdict};
use crate::scenario::{Scenario, FAULT_KINDS};

/// Stack size of a seed's thread: the main thread's usual 8 MiB, as `mirrorsim run` has.
const SEED_THREAD_STACK: usize = 8 << 20;

/// Parses a duration: one or more `<integer><unit>` groups with units `h`, `m`, `s`
/// (`90s`, `10m`, `1h`, `1h30m`). Zero and bare numbers are refused.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = |why: &str| format!("bad duration `{text}`: {why} (examples: 90s, 10m, 1h, 1h30m)");
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(bad("empty"));
    }
    let mut total: u64 = 0;
    let mut digits = String::new();
    for c in trimmed.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit: u64 = match c {
            'h' => 3_600,
            'm' => 60,
            's' => 1,
            _ => return Err(bad(&format!("unknown unit `{c}`"))),
        };
        if digits.is_empty() {
            return Err(bad(&format!("`{c}` without a number before it")));
        }
        let value: u64 = digits.parse().map_err(|_| bad("number too large"))?;
        total = value
            .checked_mul(unit)
            .and_then(|seconds| total.checked_add(seconds))
            .ok_or_else(|| bad("too long"))?;
        digits.clear();
    }
    if !digits.is_empty() {
        return Err(bad("a number needs a unit (h, m or s)"));
    }
    if total == 0 {
        return Err(bad("must be longer than zero"));
    }
    Ok(Duration::from_secs(total))
}

/// Formats whole seconds the way [`parse_duration`] reads them (`2m`, `1h30m`, `45s`).
pub fn format_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    let (h, m, s) = (seconds / 3_600, seconds / 60 % 60, seconds % 60);
    let mut out = String::new();
    if h > 0 {
        let _ = write!(out, "{h}h");
    }
    if m > 0 {
        let _ = write!(out, "{m}m");
    }
    if s > 0 || out.is_empty() {
        let _ = write!(out, "{s}s");
    }
    out
}

/// `--shard K/N`: this process runs the seeds with `seed % N == K − 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// K, 1-based.
    pub index: u64,
    /// N.
    pub count: u64,
}

impl Shard {
    /// The whole seed space (`1/1`).
    pub const WHOLE: Shard = Shard { index: 1, count: 1 };

    /// Parses `K/N` with `1 ≤ K ≤ N`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("bad shard `{text}`: {why} (expected K/N with 1 <= K <= N)");
        let (k, n) = text.split_once('/').ok_or_else(|| bad("no `/`"))?;
        let index: u64 = k.trim().parse().map_err(|_| bad("K is not a number"))?;
        let count: u64 = n.trim().parse().map_err(|_| bad("N is not a number"))?;
        if count == 0 {
            return Err(bad("N must be at least 1"));
        }
        if index == 0 || index > count {
            return Err(bad("K must lie in 1..=N"));
        }
        Ok(Self { index, count })
    }

    /// Whether this shard runs `seed`.
    pub fn owns(self, seed: u64) -> bool {
        seed % self.count == self.index - 1
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The seeds one shard runs, from a base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeedSequence {
    first: Option<u64>,
    step: u64,
}

impl SeedSequence {
    /// The seeds at or above `base` that `shard` owns, in increasing order.
    pub fn new(base: u64, shard: Shard) -> Self {
        let wanted = shard.index - 1;
        let delta = (wanted + shard.count - base % shard.count) % shard.count;
        Self {
            first: base.checked_add(delta),
            step: shard.count,
        }
    }

    /// The seed of work item `index`; `None` past the end of the 64-bit seed space.
    pub fn seed(&self, index: u64) -> Option<u64> {
        self.first?.checked_add(index.checked_mul(self.step)?)
    }
}

/// One scenario of a soak.
#[derive(Debug, Clone)]
pub struct SoakScenario {
    /// The path as given (it goes into the replay command, relative to the repository root).
    pub path: PathBuf,
    /// The loaded scenario.
    pub scenario: Scenario,
}

/// Whether a soak runs generated scenarios (see the module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum GenerateMode {
    /// Only the scenario files.
    #[default]
    Off,
    /// Every other work item a generated scenario.
    Mix,
    /// Every work item a generated scenario.
    Only,
}

/// What a work item runs: a scenario file of [`SoakConfig::scenarios`] by index, or the
/// scenario generated from the item's seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ScenarioRef {
    /// `config.scenarios[index]`.
    File(usize),
    /// [`crate::scenario::generate::generate`] of the seed.
    Generated,
}

/// When a soak stops claiming new seeds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StopAfter {
    /// Wall-clock budget.
    pub duration: Option<Duration>,
    /// At most this many work items.
    pub seeds: Option<u64>,
}

/// Everything a soak needs.
#[derive(Debug, Clone)]
pub struct SoakConfig {
    /// Scenarios, run round robin.
    pub scenarios: Vec<SoakScenario>,
    /// Worker threads (each runs one seed at a time).
    pub jobs: usize,
    /// This process's part of the seed space.
    pub shard: Shard,
    /// Seeds start here.
    pub seed_base: u64,
    /// When to stop.
    pub stop: StopAfter,
    /// The design variant for every run (`None`: each scenario's own); it also goes into the
    /// replay command.
    pub design: Option<MirrorDesign>,
    /// Test-only broken switches for every run (they also go into the replay command).
    pub broken: Vec<BrokenSwitch>,
    /// Generated scenarios, mixed in or alone.
    pub generate: GenerateMode,
    /// Where failing generated scenarios are written.
    pub generated_dir: PathBuf,
    /// Run one item in this many twice and compare trace hashes (`None`: never).
    pub check_determinism: Option<u64>,
}

impl SoakConfig {
    /// What work item `index` runs and its seed (`None` past the end of the seed space).
    pub fn item(&self, index: u64) -> Option<(ScenarioRef, u64)> {
        let seed = SeedSequence::new(self.seed_base, self.shard).seed(index)?;
        let files = self.scenarios.len().max(1) as u64;
        let scenario = match self.generate {
            GenerateMode::Off => ScenarioRef::File((index % files) as usize),
            GenerateMode::Only => ScenarioRef::Generated,
            GenerateMode::Mix if index % 2 == 1 || self.scenarios.is_empty() => {
                ScenarioRef::Generated
            }
            GenerateMode::Mix => ScenarioRef::File(((index / 2) % files) as usize),
        };
        Some((scenario, seed))
    }

    /// The work item (and whether it is a determinism repeat) of the pool's `slot`-th claim.
    /// Without the check, slot `j` is item `j`. With `--check-determinism K`, every block of
    /// `K + 1` slots holds `K` items and, last, a repeat of one of them (position `block % K`
    /// of the block, so the repeat is claimed after it and usually runs in another thread).
    pub fn slot(&self, slot: u64) -> (u64, bool) {
        let Some(every) = self.check_determinism.filter(|every| *every > 0) else {
            return (slot, false);
        };
        let (block, position) = (slot / (every + 1), slot % (every + 1));
        if position < every {
            (block * every + position, false)
        } else {
            (block * every + block % every, true)
        }
    }

    /// Whether item `index` is run a second time by the determinism self-check.
    pub fn is_repeated(&self, index: u64) -> bool {
        self.check_determinism
            .filter(|every| *every > 0)
            .is_some_and(|every| index % every == (index / every) % every)
    }

    /// The rows of the report: one per scenario file, then one for the generated scenarios.
    pub fn rows(&self) -> usize {
        self.scenarios.len() + usize::from(self.generate != GenerateMode::Off)
    }

    /// The report row of `scenario`.
    pub fn row(&self, scenario: ScenarioRef) -> usize {
        match scenario {
            ScenarioRef::File(index) => index,
            ScenarioRef::Generated => self.scenarios.len(),
        }
    }

    /// The name of a report row.
    pub fn row_name(&self, row: usize) -> &str {
        self.scenarios
            .get(row)
            .map_or("(generated)", |s| s.scenario.name.as_str())
    }

    /// The scenario a work item runs (a generated one is drawn from `seed`).
    pub fn scenario_of(&self, scenario: ScenarioRef, seed: u64) -> std::borrow::Cow<'_, Scenario> {
        match scenario {
            ScenarioRef::File(index) => std::borrow::Cow::Borrowed(&self.scenarios[index].scenario),
            ScenarioRef::Generated => {
                std::borrow::Cow::Owned(crate::scenario::generate::generate(seed))
            }
        }
    }

    /// The file a work item's scenario is in: the one given, or where [`write_generated`]
    /// writes a generated one.
    pub fn path_of(&self, scenario: ScenarioRef, seed: u64) -> PathBuf {
        match scenario {
            ScenarioRef::File(index) => self.scenarios[index].path.clone(),
            ScenarioRef::Generated => self.generated_dir.join(format!("generated-{seed}.toml")),
        }
    }

    /// Refuses a seed base the 64-bit seed space cannot serve: no seed at all for this shard,
    /// or fewer than `--seeds` (the soak would quietly run fewer and exit 0).
    pub fn check_seed_space(&self) -> Result<(), String> {
        let sequence = SeedSequence::new(self.seed_base, self.shard);
        if sequence.seed(0).is_none() {
            return Err(format!(
                "--seed-base {} leaves shard {} no seed below 2^64",
                self.seed_base, self.shard
            ));
        }
        if let Some(seeds) = self.stop.seeds {
            if sequence.seed(seeds - 1).is_none() {
                return Err(format!(
                    "--seed-base {} with --seeds {seeds} runs past the largest seed (2^64 - 1) \
                     for shard {}",
                    self.seed_base, self.shard
                ));
            }
        }
        Ok(())
    }

    /// The exact command that replays `seed` of scenario `scenario` with a full trace.
    pub fn replay_command(&self, scenario: ScenarioRef, seed: u64) -> String {
        let mut command = format!(
            "cargo run --release --bin mirrorsim -- replay {} --seed {seed}",
            self.path_of(scenario, seed).display()
        );
        if let Some(design) = self.design {
            let _ = write!(command, " --design {design}");
        }
        for switch in &self.broken {
            let _ = write!(command, " --broken {}", switch.name());
        }
        command
    }
}

/// Writes the scenario generated from `seed` where [`SoakConfig::path_of`] says (creating the
/// directory), for a failure of it; returns the path.
pub fn write_generated(config: &SoakConfig, seed: u64) -> std::io::Result<PathBuf> {
    let path = config.path_of(ScenarioRef::Generated, seed);
    std::fs::create_dir_all(&config.generated_dir)?;
    std::fs::write(&path, crate::scenario::generate::generated_toml(seed))?;
    Ok(path)
}

/// What the driver tells its caller while a soak runs.
pub trait Observer {
    /// A seed finished; `failure` is its report when it failed. `summary` already counts it.
    fn seed_done(&mut self, outcome: &SeedOutcome, failure: Option<&Failure>, summary: &Summary);
    /// Called about every [`Observer::tick_interval`] while seeds run.
    fn tick(&mut self, _summary: &Summary, _elapsed: Duration) {}
    /// How often [`Observer::tick`] is called.
    fn tick_interval(&self) -> Duration {
        Duration::from_millis(500)
    }
}

/// Runs the soak: `config.jobs` worker threads claim work items in order until the stop
/// condition holds, each seed running `runner` in a fresh thread (a panic there is caught and
/// becomes a failure). Returns the summary and the wall time.
pub fn soak<R>(config: &SoakConfig, runner: R, observer: &mut dyn Observer) -> (Summary, Duration)
where
    R: Fn(&Scenario, &RunOptions) -> RunReport + Sync,
{
    let start = Instant::now();
    // A budget too long for the clock is no budget.
    let deadline = config.stop.duration.and_then(|d| start.checked_add(d));
    let exhausted = AtomicBool::new(false);
    let mut summary = Summary::new(config);
    if config.scenarios.is_empty() && config.generate == GenerateMode::Off {
        return (summary, start.elapsed());
    }
    let work = |slot: u64| {
        let (index, repeat) = config.slot(slot);
        if exhausted.load(Ordering::SeqCst)
            || deadline.is_some_and(|deadline| Instant::now() >= deadline)
            || config.stop.seeds.is_some_and(|max| index >= max)
        {
            return None;
        }
        let Some((scenario, seed)) = config.item(index) else {
            exhausted.store(true, Ordering::SeqCst);
            return None;
        };
        let result = run_seed(config, &runner, scenario, seed);
        Some(SeedOutcome {
            index,
            scenario,
            seed,
            result,
            repeat,
        })
    };
    let tick_every = observer.tick_interval();
    let mut twice = DeterminismCheck::default();
    run_pool(
        "soak",
        config.jobs,
        work,
        tick_every,
        &mut |event| match event {
            PoolEvent::Done(outcome) => {
                summary.record(config, &outcome);
                let failure = match twice.compare(config, &outcome) {
                    Some(mismatch) => {
                        summary.nondeterministic += 1;
                        Some(mismatch)
                    }
                    None if outcome.repeat => None,
                    None => failure_of(config, &outcome),
                };
                observer.seed_done(&outcome, failure.as_ref(), &summary);
            }
            PoolEvent::Tick => observer.tick(&summary, start.elapsed()),
        },
    );
    summary.seed_space_exhausted = exhausted.load(Ordering::SeqCst);
    (summary, start.elapsed())
}

/// The determinism self-check's pairing of an item's two runs, whichever finishes first.
#[derive(Debug, Default)]
struct DeterminismCheck {
    /// Item → trace hash (`None`: panicked) of the run that finished first.
    first: BTreeMap<u64, Option<u64>>,
}

impl DeterminismCheck {
    /// Pairs `outcome` with its item's other run; the failure when their hashes differ.
    fn compare(&mut self, config: &SoakConfig, outcome: &SeedOutcome) -> Option<Failure> {
        if !config.is_repeated(outcome.index) {
            return None;
        }
        let other = self.first.remove(&outcome.index);
        let Some(other) = other else {
            self.first.insert(outcome.index, outcome.trace_hash());
            return None;
        };
        (other != outcome.trace_hash()).then(|| {
            let first = other.unwrap_or(0);
            let mut failure = nondeterminism_failure(config, first, outcome);
            if other.is_none() {
                failure.detail = format!(
                    "the same seed ran twice: a panic, then {}",
                    outcome
                        .trace_hash()
                        .map_or("a panic".to_owned(), |h| format!("trace_hash={h:016x}"))
                );
            }
            failure
        })
    }
}

/// What [`run_pool`] hands its caller.
pub enum PoolEvent<T> {
    /// A work item's result.
    Done(T),
    /// About `tick_every` has passed since the last tick.
    Tick,
}

/// Runs work items 0, 1, 2, … on `jobs` worker threads (`NAME-worker-K`): each claims the next
/// index and calls `work` with it, and stops at the first `None`. Results travel to the
/// calling thread, which hands each to `on` as it arrives, with a `Tick` about every
/// `tick_every`. Returns once every worker has stopped. `mirrorsim soak` and `mirrorsim
/// variants` share it.
pub fn run_pool<T, W>(
    name: &str,
    jobs: usize,
    work: W,
    tick_every: Duration,
    on: &mut dyn FnMut(PoolEvent<T>),
) where
    T: Send,
    W: Fn(u64) -> Option<T> + Sync,
{
    let next = AtomicU64::new(0);
    let (sender, receiver) = mpsc::channel::<T>();
    std::thread::scope(|scope| {
        for worker in 0..jobs.max(1) {
            let sender = sender.clone();
            let (next, work) = (&next, &work);
            let spawned = std::thread::Builder::new()
                .name(format!("{name}-worker-{worker}"))
                .spawn_scoped(scope, move || {
                    while let Some(result) = work(next.fetch_add(1, Ordering::SeqCst)) {
                        if sender.send(result).is_err() {
                            break;
                        }
                    }
                });
            if let Err(error) = spawned {
                eprintln!("mirrorsim {name}: cannot start worker {worker}: {error}");
            }
        }
        drop(sender);
        let mut last_tick = Instant::now();
        loop {
            let wait = tick_every.saturating_sub(last_tick.elapsed());
            match receiver.recv_timeout(wait) {
                Ok(result) => on(PoolEvent::Done(result)),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if last_tick.elapsed() >= tick_every {
                last_tick = Instant::now();
                on(PoolEvent::Tick);
            }
        }
    });
}

/// Runs one seed of a soak through [`run_isolated`].
fn run_seed<R>(config: &SoakConfig, runner: &R, scenario: ScenarioRef, seed: u64) -> SeedResult
where
    R: Fn(&Scenario, &RunOptions) -> RunReport + Sync,
{
    let options = RunOptions {
        design: config.design,
        broken: config.broken.clone(),
        ..RunOptions::new(seed)
    };
    run_isolated(runner, &config.scenario_of(scenario, seed), &options)
}

/// Runs `runner` on `scenario` in a fresh thread named `seed-N` (a fresh thread per runtime
/// keeps every per-thread state, such as std's hash keys, as `mirrorsim run` has it) and
/// catches a panic there. `mirrorsim shrink` runs its candidates the same way.
pub fn run_isolated<R>(runner: &R, scenario: &Scenario, options: &RunOptions) -> SeedResult
where
    R: Fn(&Scenario, &RunOptions) -> RunReport + Sync,
{
    let body = || runner(scenario, options);
    let joined = std::thread::scope(|scope| {
        match std::thread::Builder::new()
            .name(format!("seed-{}", options.seed))
            .stack_size(SEED_THREAD_STACK)
            .spawn_scoped(scope, body)
        {
            Ok(handle) => handle.join(),
            // No thread to be had: run here instead, still catching a panic.
            Err(_) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)),
        }
    });
    match joined {
        Ok(report) => SeedResult::Finished(Box::new(report)),
        Err(payload) => SeedResult::Panicked(panic_message(payload.as_ref())),
    }
}

/// The text of a panic payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic with a non-text payload".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::summary::{legal_transitions, mark_group};
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3_600)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5_400)));
        assert_eq!(parse_duration(" 2m5s "), Ok(Duration::from_secs(125)));
    }

    #[test]
    fn bad_durations_are_refused_with_a_reason() {
        for (text, why) in [
            ("", "empty"),
            ("10", "needs a unit"),
            ("10d", "unknown unit `d`"),
            ("m", "without a number"),
            ("0s", "longer than zero"),
            ("-5m", "unknown unit `-`"),
            ("1.5m", "unknown unit `.`"),
            ("99999999999999999999s", "too large"),
            ("9999999999999999h", "too long"),
        ] {
            let error = parse_duration(text).expect_err(text);
            assert!(error.contains(why), "{text}: {error}");
            assert!(error.contains("examples"), "{text}: {error}");
        }
    }

    #[test]
    fn durations_format_as_they_parse() {
        for seconds in [1, 45, 60, 120, 3_600, 5_400, 3_725] {
            let duration = Duration::from_secs(seconds);
            assert_eq!(parse_duration(&format_duration(duration)), Ok(duration));
        }
        assert_eq!(format_duration(Duration::from_secs(120)), "2m");
    }

    #[test]
    fn shards_parse_and_validate() {
        assert_eq!(Shard::parse("1/1"), Ok(Shard::WHOLE));
        assert_eq!(Shard::parse("3/4"), Ok(Shard { index: 3, count: 4 }));
        for (text, why) in [
            ("0/4", "1..=N"),
            ("5/4", "1..=N"),
            ("1/0", "at least 1"),
            ("1", "no `/`"),
            ("a/4", "K is not"),
            ("1/b", "N is not"),
            ("-1/4", "K is not"),
        ] {
            let error = Shard::parse(text).expect_err(text);
            assert!(error.contains(why), "{text}: {error}");
        }
    }

    #[test]
    fn shards_split_the_seed_space_without_overlap_or_gaps() {
        for base in [0u64, 1, 7, 1_000_003] {
            let count = 3;
            let mut seen = BTreeMap::new();
            for index in 1..=count {
                let shard = Shard { index, count };
                let sequence = SeedSequence::new(base, shard);
                for item in 0..50 {
                    let seed = sequence.seed(item).expect("in range");
                    assert!(shard.owns(seed), "{seed} in {shard}");
                    assert!(seed >= base);
                    assert_eq!(seed % count, index - 1);
                    assert!(seen.insert(seed, shard).is_none(), "{seed} twice");
                }
            }
            // Together the shards cover every seed from the base on.
            for seed in base..base + 150 {
                assert!(seen.contains_key(&seed), "{seed} not covered from {base}");
            }
        }
    }

    #[test]
    fn a_single_shard_runs_consecutive_seeds_from_the_base() {
        let sequence = SeedSequence::new(41, Shard::WHOLE);
        let seeds: Vec<u64> = (0..4).filter_map(|i| sequence.seed(i)).collect();
        assert_eq!(seeds, vec![41, 42, 43, 44]);
    }

    #[test]
    fn the_seed_space_ends_without_overflow() {
        let sequence = SeedSequence::new(u64::MAX - 1, Shard::WHOLE);
        assert_eq!(sequence.seed(0), Some(u64::MAX - 1));
        assert_eq!(sequence.seed(1), Some(u64::MAX));
        assert_eq!(sequence.seed(2), None);
        let sequence = SeedSequence::new(u64::MAX, Shard { index: 1, count: 2 });
        assert_eq!(
            sequence.seed(0),
            None,
            "u64::MAX is odd; the next even seed overflows"
        );
    }

    #[test]
    fn every_legal_transition_mark_is_well_formed() {
        let marks = legal_transitions();
        assert!(marks.contains(&"mirror-transition:MIRRORING->STOPPING".to_owned()));
        assert!(marks.contains(&"mirror-transition:UNKNOWN->PREPARING".to_owned()));
        assert!(!marks.contains(&"mirror-transition:STOPPED->MIRRORING".to_owned()));
        assert!(marks.iter().all(|m| mark_group(m) == 0));
    }

    #[test]
    fn marks_are_grouped() {
        assert_eq!(mark_group("admin-op-refused"), 1);
        assert_eq!(mark_group("fault:kill"), 2);
        assert_eq!(mark_group("network-partitioned"), 2);
        assert_eq!(mark_group("mirror-append"), 3);
        assert_eq!(mark_group("leader-elected"), 4);
        assert_eq!(mark_group("something-new"), 5);
    }
}
