//! `mirrorsim shrink`: reduces a failing seed's fault plan and workload to a small scenario file
//! that still fails the same invariant with the same seed (design.md §8, issue #6).
//!
//! Contract:
//! - **Target.** The seed is run once, like every run here through
//!   [`crate::commands::soak::run_isolated`] (a fresh thread and madsim runtime per run, a panic caught).
//!   A passing seed has nothing to shrink ([`ShrinkError::Passes`]). Otherwise the target is the
//!   invariant of the first violation, or `panic` for a panic inside the simulation; a candidate
//!   *reproduces* when its first violation has that invariant (for `panic`: when it panics).
//! - **Materialise** ([`materialise`]). The seed's fault plan becomes scripted faults
//!   ([`crate::faults::PlannedFault::to_scripted`]) and swarm mode is turned off. The swarm choice
//!   (kinds and rates) has no effect on a run beyond the faults it drew, so nothing else is
//!   written. The plan is drawn from its own random stream, not madsim's, so the materialised
//!   scenario runs exactly as the seed did (same trace hash); it must reproduce, else the
//!   shrink stops ([`ShrinkError::NotMaterialised`], a bug).
//! - **Reduce** ([`reduce`], generic over the "does it still fail" oracle). A greedy search,
//!   not a proof: removing a fault changes the schedule of everything after it, so a smaller
//!   plan may pass where a larger one failed. Every candidate is written as TOML and parsed
//!   back first: an invalid one (say, a fault naming a producer that was removed) is skipped
//!   without a run, and an identical one is never run twice. A candidate is kept only when it
//!   reproduces. The passes, repeated while a round makes progress and the budget lasts:
//!   the fault phase (`duration_ms`) shortened by bisection, dropping faults that would start
//!   after it (first, so later candidates run shorter simulations); faults removed
//!   ddmin-style (all, halves, quarters, …, singles); fault durations halved; the whole plan
//!   moved earlier; the fault phase shortened again; then the workload: producer, consumer,
//!   admin and topic entries removed ddmin-style, client counts halved, producer intervals
//!   doubled.
//!   Nothing is declared "needed" in advance (admin operations included): the search decides.
//! - **What is never changed.** The seed: only the given one is tried, so the result is "this
//!   file with this seed" and every step compares runs on one schedule (trying nearby seeds
//!   when a candidate passes would find more, at several runs per candidate, and move the
//!   seed). `heal_ms`: a shorter heal manufactures liveness failures unrelated to the
//!   original. Clusters, broker counts and topic settings.
//! - **Budget.** At most `budget` candidate runs; the seed and the materialised scenario are
//!   run once each on top (and `mirrorsim shrink` runs the written file once to verify it).
//! - **Output** ([`render`]): the shrunk scenario as TOML ([`Scenario::to_toml`], which
//!   [`Scenario::load`] reads back as the same scenario) under a header of comments: source,
//!   seed, broken switches, target, runs, sizes before and after, and the command that
//!   reproduces it. Its `coverage` is empty: the original's marks need the faults removed.

use std::collections::BTreeSet;
use std::fmt::{self, Write as _};
use std::path::Path;

use mirrorsim::switches::BrokenSwitch;

use crate::commands::runner::{RunOptions, RunReport, Verdict};
use crate::commands::soak::{run_isolated, SeedResult};
use crate::faults::{plan, PlannedFault, SwarmChoice};
use crate::scenario::{FaultSpec, Scenario, ScriptedFault};

/// Candidate runs a shrink may use unless told otherwise.
pub const DEFAULT_BUDGET: usize = 200;
/// Fault durations are not halved below this (the runner checks every 10 ms).
const MIN_FAULT_DURATION_MS: u64 = 100;
/// Shifts and fault-phase cuts smaller than this are not worth a run.
const MIN_TIME_STEP_MS: u64 = 100;
/// Producer intervals are not doubled beyond this: slower still is nearly no producer, and
/// removing the producer is tried anyway.
const MAX_PRODUCER_INTERVAL_MS: u64 = 1_000;
/// The target of a run that panicked.
pub const PANIC_TARGET: &str = "panic";
/// The file name candidates are parsed under (it appears only in errors, which are skipped).
const CANDIDATE_PATH: &str = "candidate.toml";

/// The failure a shrink keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The first violation's invariant, or [`PANIC_TARGET`].
    pub invariant: String,
    /// `safety`, `liveness` or `panic`.
    pub verdict: &'static str,
    /// The exit code `mirrorsim run` gives the run (1, 2 or 3).
    pub exit_code: u8,
    /// The first violation's report line, or the panic message.
    pub detail: String,
    /// The run's trace hash (`None` after a panic).
    pub trace_hash: Option<u64>,
}

/// The failure of a run, `None` when it passed.
pub fn target_of(result: &SeedResult, seed: u64) -> Option<Target> {
    match result {
        SeedResult::Panicked(message) => Some(Target {
            invariant: PANIC_TARGET.to_owned(),
            verdict: "panic",
            exit_code: 3,
            detail: message.clone(),
            trace_hash: None,
        }),
        SeedResult::Finished(report) => {
            let verdict = match report.verdict {
                Verdict::Pass => return None,
                Verdict::Safety => "safety",
                Verdict::Liveness => "liveness",
            };
            let first = report.violations.first()?;
            Some(Target {
                invariant: first.invariant.name().to_owned(),
                verdict,
                exit_code: report.verdict.exit_code(),
                detail: first.report_line(seed),
                trace_hash: Some(report.trace_hash),
            })
        }
    }
}

/// How big a scenario is, as the progress lines and the header report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    /// Scripted faults.
    pub faults: usize,
    /// Producer nodes (the sum of the entries' counts).
    pub producers: u32,
    /// Consumer nodes.
    pub consumers: u32,
    /// Admin timeline operations.
    pub admin_ops: usize,
    /// Declared topics.
    pub topics: usize,
    /// The fault phase, in ms.
    pub duration_ms: u64,
    /// Records (transactions, for transactional producers) per simulated second offered by
    /// every producer together.
    pub produce_rate: u64,
}

impl Size {
    /// The size of `scenario` (its scripted faults: materialise a swarm scenario first).
    pub fn of(scenario: &Scenario) -> Self {
        Self {
            faults: scenario.faults.scripted.len(),
            producers: scenario.producers.iter().map(|p| u32::from(p.count)).sum(),
            consumers: scenario.consumers.iter().map(|c| u32::from(c.count)).sum(),
            admin_ops: scenario.admin.len(),
            topics: scenario.topics.len(),
            duration_ms: scenario.duration_ms,
            produce_rate: scenario
                .producers
                .iter()
                .map(|p| u64::from(p.count) * 1_000 / p.interval_ms.max(1))
                .sum(),
        }
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "faults={} producers={} consumers={} admin_ops={} topics={} duration_ms={} produce_rate={}/s",
            self.faults,
            self.producers,
            self.consumers,
            self.admin_ops,
            self.topics,
            self.duration_ms,
            self.produce_rate
        )
    }
}

/// `scenario` with `seed`'s fault plan written out as scripted faults and swarm mode off (the
/// module doc says why this runs exactly as the seed did). Coverage marks are dropped.
pub fn materialise(scenario: &Scenario, seed: u64) -> Scenario {
    let plan = plan(scenario, seed);
    let mut materialised = scenario.clone();
    materialised.faults = FaultSpec {
        swarm: false,
        swarm_kinds: Vec::new(),
        swarm_impaired_brokers: None,
        scripted: plan.faults.iter().map(PlannedFault::to_scripted).collect(),
    };
    materialised.coverage.clear();
    materialised
}

/// `scenario` as it reads back from its own TOML, with that TOML; `None` when it is invalid.
fn normalise(scenario: &Scenario) -> Option<(Scenario, String)> {
    let text = scenario.to_toml().ok()?;
    let parsed = Scenario::parse(Path::new(CANDIDATE_PATH), &text).ok()?;
    Some((parsed, text))
}

/// One kept candidate, as [`reduce`] reports it.
#[derive(Debug)]
pub struct Step<'a> {
    /// Kept candidates so far, this one included.
    pub number: usize,
    /// Candidate runs so far.
    pub runs: usize,
    /// What changed, e.g. `removed faults 2..4 of 6`.
    pub change: &'a str,
    /// The new smallest failing scenario.
    pub scenario: &'a Scenario,
}

/// What [`reduce`] ends with.
#[derive(Debug, Clone)]
pub struct Reduced {
    /// The smallest scenario found that reproduces (the start when nothing smaller did).
    pub scenario: Scenario,
    /// Candidates run.
    pub runs: usize,
    /// Candidates kept.
    pub steps: usize,
    /// The budget ran out before a round without progress.
    pub budget_exhausted: bool,
}

/// Reduces `start`, which fails `target`, to a smaller scenario for which `oracle` still
/// returns `Some(target)`; `oracle` is called at most `budget` times (module doc: passes and
/// rules). `on_step` hears of every kept candidate.
pub fn reduce<F>(
    start: Scenario,
    target: &str,
    budget: usize,
    oracle: F,
    on_step: &mut dyn FnMut(&Step<'_>),
) -> Reduced
where
    F: FnMut(&Scenario) -> Option<String>,
{
    let mut search = Search {
        seen: start.to_toml().into_iter().collect(),
        current: start,
        target,
        budget,
        oracle,
        on_step,
        runs: 0,
        steps: 0,
    };
    while search.round() && !search.exhausted() {}
    Reduced {
        budget_exhausted: search.exhausted(),
        scenario: search.current,
        runs: search.runs,
        steps: search.steps,
    }
}

/// The state of one [`reduce`].
struct Search<'a, F> {
    current: Scenario,
    target: &'a str,
    budget: usize,
    oracle: F,
    on_step: &'a mut dyn FnMut(&Step<'_>),
    /// TOML of every candidate run (and of the start), so none runs twice.
    seen: BTreeSet<String>,
    runs: usize,
    steps: usize,
}

impl<F> Search<'_, F>
where
    F: FnMut(&Scenario) -> Option<String>,
{
    fn exhausted(&self) -> bool {
        self.runs >= self.budget
    }

    /// Runs `candidate` and keeps it when it reproduces; false when it does not, is invalid,
    /// was run before, or the budget is spent.
    fn attempt(&mut self, candidate: Scenario, change: &str) -> bool {
        if self.exhausted() {
            return false;
        }
        let Some((candidate, text)) = normalise(&candidate) else {
            return false;
        };
        if !self.seen.insert(text) {
            return false;
        }
        self.runs += 1;
        if (self.oracle)(&candidate).as_deref() != Some(self.target) {
            return false;
        }
        self.current = candidate;
        self.steps += 1;
        (self.on_step)(&Step {
            number: self.steps,
            runs: self.runs,
            change,
            scenario: &self.current,
        });
        true
    }

    /// One round of every pass; whether any candidate was kept.
    fn round(&mut self) -> bool {
        let before = self.steps;
        // First, because every later candidate then runs a shorter simulation (a safety
        // violation stops the run, so the phase after it is often not needed at all).
        self.shorten_fault_phase();
        self.ddmin("faults", |s| &mut s.faults.scripted);
        self.halve_fault_durations();
        self.move_faults_earlier();
        self.shorten_fault_phase();
        self.ddmin("producers", |s| &mut s.producers);
        self.halve_counts("producers", |s, i| {
            s.producers.get_mut(i).map(|p| &mut p.count)
        });
        self.slow_producers();
        self.ddmin("consumers", |s| &mut s.consumers);
        self.halve_counts("consumers", |s, i| {
            s.consumers.get_mut(i).map(|c| &mut c.count)
        });
        self.ddmin("admin", |s| &mut s.admin);
        self.ddmin("topics", |s| &mut s.topics);
        self.steps > before
    }

    /// Delta debugging over one list: remove everything, then each half, each quarter, …,
    /// each single entry; after a removal, go on at the coarser granularity. Ends with no
    /// single entry removable (1-minimal), or out of budget.
    fn ddmin<T: Clone>(&mut self, what: &str, list: fn(&mut Scenario) -> &mut Vec<T>) {
        let mut granularity = 1;
        loop {
            let len = list(&mut self.current).len();
            if len == 0 || self.exhausted() {
                return;
            }
            let granularity_now = granularity.min(len);
            let chunk = len.div_ceil(granularity_now);
            let mut removed = false;
            for start in (0..len).step_by(chunk) {
                let end = (start + chunk).min(len);
                let mut candidate = self.current.clone();
                list(&mut candidate).drain(start..end);
                let change = format!("removed {what} {start}..{end} of {len}");
                if self.attempt(candidate, &change) {
                    removed = true;
                    break;
                }
            }
            if removed {
                granularity = granularity_now.saturating_sub(1).max(2);
            } else if chunk == 1 {
                return;
            } else {
                granularity = (granularity_now * 2).min(len);
            }
        }
    }

    /// Halves each fault's duration while it still fails.
    fn halve_fault_durations(&mut self) {
        for index in 0..self.current.faults.scripted.len() {
            loop {
                let half = self.current.faults.scripted[index].duration_ms() / 2;
                if half < MIN_FAULT_DURATION_MS {
                    break;
                }
                let mut candidate = self.current.clone();
                // A clock skew has no duration: it lasts until the heal phase.
                let Some(duration) = candidate.faults.scripted[index].duration_ms_mut() else {
                    break;
                };
                *duration = Some(half);
                if !self.attempt(candidate, &format!("fault {index} lasts {half} ms")) {
                    break;
                }
            }
        }
    }

    /// Moves every fault earlier, keeping their spacing (what happens between faults is more
    /// often the point than when they start), so the fault phase can be cut shorter: by half
    /// the time before the first fault, and when that passes, by a quarter, an eighth, …
    fn move_faults_earlier(&mut self) {
        let Some(first) = self
            .current
            .faults
            .scripted
            .iter()
            .map(ScriptedFault::at_ms)
            .min()
        else {
            return;
        };
        let mut shift = first / 2;
        while shift >= MIN_TIME_STEP_MS && !self.exhausted() {
            let mut candidate = self.current.clone();
            for fault in &mut candidate.faults.scripted {
                *fault.at_ms_mut() -= shift;
            }
            if self.attempt(candidate, &format!("faults {shift} ms earlier")) {
                let first = self
                    .current
                    .faults
                    .scripted
                    .iter()
                    .map(ScriptedFault::at_ms)
                    .min();
                shift = first.unwrap_or(0) / 2;
            } else {
                shift /= 2;
            }
        }
    }

    /// Bisects the fault phase's length between 0 and the current one. Not monotone in
    /// general, so this finds a short failing length, not the shortest.
    fn shorten_fault_phase(&mut self) {
        let mut too_short = 0;
        loop {
            let fails = self.current.duration_ms;
            let gap = fails.saturating_sub(too_short);
            if gap <= (fails / 8).max(MIN_TIME_STEP_MS) || self.exhausted() {
                return;
            }
            let middle = too_short + gap / 2;
            let mut candidate = self.current.clone();
            candidate.duration_ms = middle;
            // A fault starting after the phase would never fire.
            candidate.faults.scripted.retain(|f| f.at_ms() < middle);
            if !self.attempt(candidate, &format!("duration_ms {middle}")) {
                too_short = middle;
            }
        }
    }

    /// Halves each entry's client count while it still fails.
    fn halve_counts(&mut self, what: &str, count: fn(&mut Scenario, usize) -> Option<&mut u16>) {
        for index in 0.. {
            loop {
                let Some(now) = count(&mut self.current, index).map(|c| *c) else {
                    return;
                };
                if now <= 1 {
                    break;
                }
                let mut candidate = self.current.clone();
                if let Some(slot) = count(&mut candidate, index) {
                    *slot = now / 2;
                }
                let change = format!("{what}[{index}].count {}", now / 2);
                if !self.attempt(candidate, &change) {
                    break;
                }
            }
        }
    }

    /// Doubles each producer's interval (fewer records) while it still fails.
    fn slow_producers(&mut self) {
        for index in 0..self.current.producers.len() {
            loop {
                let doubled = self.current.producers[index].interval_ms * 2;
                if doubled > MAX_PRODUCER_INTERVAL_MS {
                    break;
                }
                let mut candidate = self.current.clone();
                candidate.producers[index].interval_ms = doubled;
                let change = format!("producers[{index}].interval_ms {doubled}");
                if !self.attempt(candidate, &change) {
                    break;
                }
            }
        }
    }
}

/// What to shrink.
#[derive(Debug, Clone)]
pub struct ShrinkOptions {
    /// The failing seed.
    pub seed: u64,
    /// Test-only broken switches, for every run.
    pub broken: Vec<BrokenSwitch>,
    /// At most this many candidate runs.
    pub budget: usize,
}

/// Why a shrink did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShrinkError {
    /// The seed passes: nothing to shrink.
    Passes,
    /// The materialised scenario does not fail like the seed (a bug in materialising).
    NotMaterialised {
        /// The seed's invariant.
        expected: String,
        /// The materialised scenario's invariant, if it failed.
        got: Option<String>,
    },
}

impl fmt::Display for ShrinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Passes => write!(f, "the seed passes: nothing to shrink"),
            Self::NotMaterialised { expected, got } => write!(
                f,
                "the fault plan written out as scripted faults no longer fails {} (it {}): a bug in `mirrorsim shrink`",
                expected,
                got.as_ref()
                    .map_or("passes".to_owned(), |invariant| format!("fails {invariant}"))
            ),
        }
    }
}

/// A finished shrink.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The failure kept.
    pub target: Target,
    /// The seed's swarm choice, when the scenario is a swarm scenario.
    pub swarm: Option<SwarmChoice>,
    /// Faults of the seed's plan that swarm mode drew (the rest were scripted).
    pub swarm_faults: usize,
    /// The materialised scenario's size.
    pub before: Size,
    /// The result's size.
    pub after: Size,
    /// The result.
    pub scenario: Scenario,
    /// Every run: the seed, the materialised scenario and the candidates.
    pub runs: usize,
    /// Candidates kept.
    pub steps: usize,
    /// The budget ran out (a larger one may shrink further).
    pub budget_exhausted: bool,
    /// The materialised scenario had the seed's trace hash, as it should.
    pub same_trace: bool,
}

/// Shrinks `scenario` at `options.seed` with `runner` (normally [`crate::commands::runner::run`]);
/// `say` hears the progress lines.
pub fn shrink_seed<R>(
    scenario: &Scenario,
    options: &ShrinkOptions,
    runner: R,
    say: &mut dyn FnMut(&str),
) -> Result<Shrunk, ShrinkError>
where
    R: Fn(&Scenario, &RunOptions) -> RunReport + Sync,
{
    // The design, if any, is the scenario's own (`design = …`), so the written file carries it.
    let run_options = RunOptions {
        broken: options.broken.clone(),
        ..RunOptions::new(options.seed)
    };
    let seed = options.seed;
    let run_one =
        |candidate: &Scenario| target_of(&run_isolated(&runner, candidate, &run_options), seed);
    let target = run_one(scenario).ok_or(ShrinkError::Passes)?;
    say(&format!(
        "shrink: seed {seed} fails {} ({}, exit {}): {}",
        target.invariant, target.verdict, target.exit_code, target.detail
    ));
    let plan = plan(scenario, seed);
    let swarm_faults = plan.faults.len() - scenario.faults.scripted.len();
    let mut materialised = materialise(scenario, seed);
    materialised.name = format!("{}-seed{seed}-shrunk", scenario.name);
    materialised.description = format!(
        "`mirrorsim shrink` of scenario {} with seed {seed}: fails {}",
        scenario.name, target.invariant
    );
    // Run it as it will be written, so the file and the search start from the same thing.
    let materialised = normalise(&materialised).map_or(materialised, |(parsed, _)| parsed);
    let check = run_one(&materialised);
    if check.as_ref().map(|t| &t.invariant) != Some(&target.invariant) {
        return Err(ShrinkError::NotMaterialised {
            expected: target.invariant,
            got: check.map(|t| t.invariant),
        });
    }
    let same_trace = check.as_ref().and_then(|t| t.trace_hash) == target.trace_hash;
    let before = Size::of(&materialised);
    say(&format!(
        "shrink: materialised {} faults ({swarm_faults} from swarm mode); it fails {} too{}",
        before.faults,
        target.invariant,
        if same_trace {
            ", same trace hash"
        } else {
            ", with another trace hash"
        }
    ));
    say(&format!("shrink: start {before}"));
    let reduced = reduce(
        materialised,
        &target.invariant,
        options.budget,
        |candidate| run_one(candidate).map(|t| t.invariant),
        &mut |step| {
            say(&format!(
                "shrink: step {} runs={} {} ({}) still fails {}",
                step.number,
                step.runs,
                Size::of(step.scenario),
                step.change,
                target.invariant
            ));
        },
    );
    Ok(Shrunk {
        swarm: plan.swarm,
        swarm_faults,
        before,
        after: Size::of(&reduced.scenario),
        runs: reduced.runs + 2,
        steps: reduced.steps,
        budget_exhausted: reduced.budget_exhausted,
        scenario: reduced.scenario,
        target,
        same_trace,
    })
}

/// The command that reproduces the shrunk file's failure.
pub fn reproduce_command(out: &Path, seed: u64, broken: &[BrokenSwitch]) -> String {
    let mut command = format!(
        "cargo run --release --bin mirrorsim -- run {} --seed {seed}",
        out.display()
    );
    for switch in broken {
        let _ = write!(command, " --broken {}", switch.name());
    }
    command
}

/// The file `mirrorsim shrink` writes: a header of comments, then the scenario.
pub fn render(
    shrunk: &Shrunk,
    source: &Path,
    out: &Path,
    options: &ShrinkOptions,
) -> Result<String, toml::ser::Error> {
    let body = shrunk.scenario.to_toml()?;
    let mut header = String::new();
    // A panic message may span lines: each one is commented, or the file would not parse.
    let mut line = |text: String| {
        for part in text.lines() {
            header.push_str("# ");
            header.push_str(part);
            header.push('\n');
        }
    };
    line(format!(
        "Shrunk by `mirrorsim shrink` from {} with seed {}.",
        source.display(),
        options.seed
    ));
    if !options.broken.is_empty() {
        let names: Vec<&str> = options.broken.iter().map(|b| b.name()).collect();
        line(format!("Broken switches: {}.", names.join(" ")));
    }
    line(format!(
        "Fails: {} ({}, exit {}), the first violation of the original run.",
        shrunk.target.invariant, shrunk.target.verdict, shrunk.target.exit_code
    ));
    line(format!("Original: {}", shrunk.target.detail));
    if let Some(swarm) = &shrunk.swarm {
        line(format!(
            "Swarm choice of the seed ({} faults drawn, written out as scripted faults): {swarm}",
            shrunk.swarm_faults
        ));
    }
    line(format!(
        "Runs: {} ({} kept){}.",
        shrunk.runs,
        shrunk.steps,
        if shrunk.budget_exhausted {
            "; the budget ran out, a larger --budget may shrink further"
        } else {
            ""
        }
    ));
    line(format!("Before: {}", shrunk.before));
    line(format!("After:  {}", shrunk.after));
    line(format!(
        "Reproduce: {}",
        reproduce_command(out, options.seed, &options.broken)
    ));
    Ok(format!("{header}\n{body}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::FaultAction;

    /// A scenario with two producers, two consumers and five scripted faults on distinct
    /// brokers or kinds, so a predicate can name each one.
    const BIG: &str = r#"
name = "big"
duration_ms = 20000
[[clusters]]
brokers = 3
[[topics]]
cluster = "a"
name = "orders"
partitions = 2
replication_factor = 3
[[topics]]
cluster = "a"
name = "payments"
partitions = 1
replication_factor = 3
[[producers]]
cluster = "a"
topic = "orders"
count = 3
[[producers]]
cluster = "a"
topic = "payments"
interval_ms = 50
[[consumers]]
cluster = "a"
topic = "orders"
count = 2
[[faults.kill]]
at_ms = 1000
nodes = ["a-broker-1"]
[[faults.pause]]
at_ms = 4000
nodes = ["a-broker-2"]
duration_ms = 1600
[[faults.packet_loss]]
at_ms = 8000
probability = 0.1
[[faults.isolate]]
at_ms = 12000
nodes = ["a-broker-3"]
[[faults.hold_back]]
at_ms = 15000
nodes = ["a-leader:orders:0"]
hold_ms = 800
probability = 0.02
"#;

    fn big() -> Scenario {
        Scenario::parse(Path::new("big.toml"), BIG).expect("BIG parses")
    }

    fn has_fault(scenario: &Scenario, kind: &str) -> bool {
        scenario.faults.scripted.iter().any(|f| f.kind() == kind)
    }

    fn has_producer_on(scenario: &Scenario, topic: &str) -> bool {
        scenario
            .producers
            .iter()
            .any(|p| p.topic.get_ref() == topic)
    }

    fn quiet(_: &Step<'_>) {}

    #[test]
    fn reduce_keeps_exactly_what_the_failure_needs() {
        let mut calls = 0;
        let oracle = |s: &Scenario| {
            calls += 1;
            (has_fault(s, "pause") && has_producer_on(s, "payments")).then(|| "x".to_owned())
        };
        let reduced = reduce(big(), "x", 500, oracle, &mut quiet);
        let s = &reduced.scenario;
        let kinds: Vec<&str> = s.faults.scripted.iter().map(ScriptedFault::kind).collect();
        assert_eq!(kinds, ["pause"]);
        assert_eq!(s.producers.len(), 1);
        assert_eq!(s.producers[0].topic.get_ref(), "payments");
        assert_eq!(s.producers[0].interval_ms, 800, "doubled up to the cap");
        assert!(s.consumers.is_empty());
        // The payments topic is needed by its producer; orders by nothing any more.
        let topics: Vec<&str> = s.topics.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(topics, ["payments"]);
        assert_eq!(
            s.faults.scripted[0].duration_ms(),
            100,
            "1600 halved down to the floor"
        );
        assert!(
            s.duration_ms < 20_000,
            "the fault phase was cut: {}",
            s.duration_ms
        );
        assert!(s.faults.scripted[0].at_ms() < 4_000, "moved earlier");
        assert_eq!(reduced.runs, calls);
        assert!(!reduced.budget_exhausted);
    }

    #[test]
    fn reduce_honours_the_budget_and_returns_the_best_so_far() {
        let mut calls = 0;
        let oracle = |s: &Scenario| {
            calls += 1;
            has_fault(s, "isolate").then(|| "x".to_owned())
        };
        let reduced = reduce(big(), "x", 3, oracle, &mut quiet);
        assert_eq!(calls, 3);
        assert_eq!(reduced.runs, 3);
        assert!(reduced.budget_exhausted);
        assert!(has_fault(&reduced.scenario, "isolate"));
        assert!(reduced.scenario.faults.scripted.len() < 5);
    }

    #[test]
    fn reduce_needs_the_same_invariant_not_just_a_failure() {
        // Everything fails, but only the full scenario fails `x`.
        let start = big();
        let full = start.to_toml().unwrap();
        let oracle = |s: &Scenario| {
            Some(
                if s.to_toml().unwrap() == full {
                    "x"
                } else {
                    "other"
                }
                .to_owned(),
            )
        };
        let mut steps = 0;
        let reduced = reduce(start.clone(), "x", 1_000, oracle, &mut |_| steps += 1);
        assert_eq!(steps, 0);
        assert_eq!(reduced.scenario, start);
        assert!(!reduced.budget_exhausted, "the search ends by itself");
    }

    #[test]
    fn reduce_skips_invalid_candidates_without_running_them() {
        // The kill targets the third producer: removing producers (or lowering the count)
        // makes the target name invalid, so those candidates never reach the oracle.
        let text = BIG.replace("nodes = [\"a-broker-1\"]", "nodes = [\"a-producer-3\"]");
        let start = Scenario::parse(Path::new("big.toml"), &text).unwrap();
        let oracle = |s: &Scenario| {
            assert!(s.producers.iter().map(|p| p.count).sum::<u16>() >= 3);
            has_fault(s, "kill").then(|| "x".to_owned())
        };
        let reduced = reduce(start, "x", 500, oracle, &mut quiet);
        assert_eq!(reduced.scenario.faults.scripted.len(), 1);
    }

    #[test]
    fn steps_are_reported_in_order_with_the_run_count() {
        let mut seen = Vec::new();
        let oracle = |s: &Scenario| has_fault(s, "kill").then(|| "x".to_owned());
        let reduced = reduce(big(), "x", 500, oracle, &mut |step| {
            seen.push((step.number, step.runs, step.change.to_owned()));
        });
        assert_eq!(seen.len(), reduced.steps);
        assert!(seen
            .windows(2)
            .all(|w| w[0].0 + 1 == w[1].0 && w[0].1 < w[1].1));
        // The fault phase is cut first: that alone drops every fault after the kill.
        assert_eq!(seen[0].2, "duration_ms 10000", "{seen:?}");
        assert_eq!(reduced.scenario.faults.scripted.len(), 1);
    }

    /// A runner without the simulator: it panics when the scenario has a `kill` fault and
    /// passes otherwise.
    fn panics_on_a_kill(scenario: &Scenario, options: &RunOptions) -> RunReport {
        assert!(!has_fault(scenario, "kill"), "a kill, on purpose");
        RunReport {
            seed: options.seed,
            plan: plan(scenario, options.seed),
            verdict: Verdict::Pass,
            violations: Vec::new(),
            trace_hash: 0,
            simulated_ms: 0,
            net: Default::default(),
            records: (0, 0, 0),
            marks: Default::default(),
            marks_first_ms: Default::default(),
            admin: Vec::new(),
        }
    }

    #[test]
    fn a_panic_is_a_target_like_an_invariant() {
        let options = ShrinkOptions {
            seed: 3,
            broken: Vec::new(),
            budget: 100,
        };
        let shrunk = shrink_seed(&big(), &options, panics_on_a_kill, &mut |_| {}).unwrap();
        assert_eq!(
            (shrunk.target.invariant.as_str(), shrunk.target.verdict),
            (PANIC_TARGET, "panic")
        );
        assert_eq!(shrunk.target.exit_code, 3);
        assert!(shrunk.target.detail.contains("a kill, on purpose"));
        let kinds: Vec<&str> = shrunk
            .scenario
            .faults
            .scripted
            .iter()
            .map(ScriptedFault::kind)
            .collect();
        assert_eq!(kinds, ["kill"]);
        assert_eq!(shrunk.after.producers, 0, "{}", shrunk.after);

        let mut without_kill = big();
        without_kill.faults.scripted.remove(0);
        let passes = shrink_seed(&without_kill, &options, panics_on_a_kill, &mut |_| {});
        assert_eq!(passes.err(), Some(ShrinkError::Passes));
    }

    #[test]
    fn materialised_swarm_plans_give_the_same_plan_back() {
        let path = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scenarios/swarm_transactions.toml"
        ));
        let scenario = Scenario::load(path).expect("the scenario parses");
        let mut kinds = BTreeSet::new();
        for seed in 0..200 {
            let original = plan(&scenario, seed);
            let (materialised, _) = normalise(&materialise(&scenario, seed)).expect("valid");
            assert!(!materialised.faults.swarm);
            let again = plan(&materialised, seed);
            assert_eq!(again.faults, original.faults, "seed {seed}");
            assert_eq!(again.swarm, None);
            kinds.extend(original.faults.iter().map(|f| f.action.kind()));
            let drift = original.faults.iter().any(
                |f| matches!(f.action, FaultAction::ClockSkew { drift_ppm, .. } if drift_ppm != 0),
            );
            if drift {
                assert!(materialised.to_toml().unwrap().contains("drift_ppm = "));
            }
        }
        assert_eq!(kinds.len(), crate::scenario::FAULT_KINDS.len(), "{kinds:?}");
    }

    #[test]
    fn the_header_names_the_source_the_sizes_and_the_command() {
        let scenario = big();
        let size = Size::of(&scenario);
        assert_eq!(size.producers, 4);
        assert_eq!(size.produce_rate, 3 * 100 + 20);
        let shrunk = Shrunk {
            target: Target {
                invariant: "acked-writes-durable".into(),
                verdict: "safety",
                exit_code: 1,
                detail: "a panic message\nover two lines".into(),
                trace_hash: Some(1),
            },
            swarm: None,
            swarm_faults: 0,
            before: size,
            after: size,
            scenario: scenario.clone(),
            runs: 7,
            steps: 2,
            budget_exhausted: true,
            same_trace: true,
        };
        let options = ShrinkOptions {
            seed: 9,
            broken: vec![BrokenSwitch::AckBeforeReplication],
            budget: 5,
        };
        let text = render(
            &shrunk,
            Path::new("scenarios/big.toml"),
            Path::new("out.toml"),
            &options,
        )
        .unwrap();
        assert!(
            text.starts_with(
                "# Shrunk by `mirrorsim shrink` from scenarios/big.toml with seed 9.\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("# Broken switches: ack-before-replication.\n"),
            "{text}"
        );
        assert!(
            text.contains("# Runs: 7 (2 kept); the budget ran out"),
            "{text}"
        );
        assert!(
            text.contains("# Original: a panic message\n# over two lines\n"),
            "{text}"
        );
        assert!(text.contains(
            "# Reproduce: cargo run --release --bin mirrorsim -- run out.toml --seed 9 --broken ack-before-replication\n"
        ));
        let parsed = Scenario::parse(Path::new("out.toml"), &text).expect("the file parses");
        assert_eq!(parsed, scenario);
    }
}
