//! A seed's outcome and the failure record a soak writes for it (one JSON line, with its
//! replay command).

use super::*;

/// How one seed ended.
#[derive(Debug)]
pub enum SeedResult {
    /// The run finished (passing or not).
    Finished(Box<RunReport>),
    /// The simulation panicked, with the panic message.
    Panicked(String),
}

/// One finished work item.
#[derive(Debug)]
pub struct SeedOutcome {
    /// The work item it ran (for a determinism repeat: the item repeated).
    pub index: u64,
    /// What it ran.
    pub scenario: ScenarioRef,
    /// The seed.
    pub seed: u64,
    /// What happened.
    pub result: SeedResult,
    /// A second run of an item for the determinism self-check (not counted as a seed).
    pub repeat: bool,
}

impl SeedOutcome {
    /// The trace hash, if the run finished.
    pub fn trace_hash(&self) -> Option<u64> {
        match &self.result {
            SeedResult::Finished(report) => Some(report.trace_hash),
            SeedResult::Panicked(_) => None,
        }
    }
}

/// A failing seed, as reported: one JSON object per line, keys in this order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Failure {
    /// The scenario's name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// `safety`, `liveness`, `panic` or `nondeterminism`.
    pub verdict: &'static str,
    /// The invariants broken, sorted (`["panic"]` for a panic).
    pub invariants: Vec<String>,
    /// The first violation's report line (`VIOLATION invariant=… seed=N time=T`), the panic
    /// message, or for `nondeterminism` the two trace hashes.
    pub detail: String,
    /// Simulated milliseconds the run covered (`null` after a panic).
    pub simulated_ms: Option<i64>,
    /// The command that replays the seed with a full trace, from the repository root.
    pub replay: String,
    /// The scenario file as given to the soak.
    pub path: String,
    /// The run's trace hash (`null` after a panic).
    pub trace_hash: Option<String>,
    /// The soak's seed base and shard, to rerun the whole soak.
    pub seed_base: u64,
    /// `K/N`.
    pub shard: String,
    /// Every violation.
    pub violations: Vec<FailureViolation>,
}

impl Failure {
    /// The JSON line (no trailing newline).
    pub fn line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|error| {
            // Strings and numbers always serialise; should that ever change, still one line.
            serde_json::json!({
                "scenario": self.scenario,
                "seed": self.seed,
                "replay": self.replay,
                "error": error.to_string(),
            })
            .to_string()
        })
    }
}

/// One violation of a [`Failure`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailureViolation {
    /// The invariant's stable name.
    pub invariant: &'static str,
    /// The cluster letter, if one is concerned.
    pub cluster: Option<String>,
    /// The topic, if a partition is concerned.
    pub topic: Option<String>,
    /// The partition, if one is concerned.
    pub partition: Option<i32>,
    /// What was seen.
    pub detail: String,
    /// Simulated time of detection, in ms since the start of the run.
    pub time_ms: i64,
}

/// The failure report of `outcome`, if it failed.
pub fn failure_of(config: &SoakConfig, outcome: &SeedOutcome) -> Option<Failure> {
    let mut failure = blank_failure(config, outcome);
    match &outcome.result {
        SeedResult::Panicked(message) => {
            failure.detail = format!("panic inside the simulation: {message}");
        }
        SeedResult::Finished(report) => {
            failure.verdict = match report.verdict {
                Verdict::Pass => return None,
                Verdict::Safety => "safety",
                Verdict::Liveness => "liveness",
            };
            let invariants: BTreeSet<&str> = report
                .violations
                .iter()
                .map(|v| v.invariant.name())
                .collect();
            failure.invariants = invariants.into_iter().map(str::to_owned).collect();
            failure.detail = report
                .violations
                .first()
                .map(|v| v.report_line(outcome.seed))
                .unwrap_or_default();
            failure.simulated_ms = Some(report.simulated_ms);
            failure.trace_hash = Some(format!("{:016x}", report.trace_hash));
            failure.violations = report
                .violations
                .iter()
                .map(|v| FailureViolation {
                    invariant: v.invariant.name(),
                    cluster: v.cluster.map(|c| c.to_string()),
                    topic: v.topic_partition.as_ref().map(|tp| tp.topic.to_string()),
                    partition: v.topic_partition.as_ref().map(|tp| tp.partition),
                    detail: v.detail.clone(),
                    time_ms: v.time_ms,
                })
                .collect();
        }
    }
    Some(failure)
}

/// The failure of a determinism repeat whose trace hash differs from the first run's.
pub fn nondeterminism_failure(config: &SoakConfig, first: u64, repeat: &SeedOutcome) -> Failure {
    let mut failure = blank_failure(config, repeat);
    failure.verdict = "nondeterminism";
    failure.invariants = vec!["determinism".to_owned()];
    let second = repeat.trace_hash().map_or("a panic".to_owned(), |hash| {
        format!("trace_hash={hash:016x}")
    });
    failure.detail = format!(
        "the same seed ran twice: trace_hash={first:016x}, then {second} (in another thread, \
         later in the soak)"
    );
    failure.trace_hash = Some(format!("{first:016x}"));
    failure
}

/// A failure record for `outcome` with its identity filled in, judged as a panic.
pub(super) fn blank_failure(config: &SoakConfig, outcome: &SeedOutcome) -> Failure {
    let path = config.path_of(outcome.scenario, outcome.seed);
    let name = match outcome.scenario {
        ScenarioRef::File(index) => config.scenarios[index].scenario.name.clone(),
        ScenarioRef::Generated => format!("generated-{}", outcome.seed),
    };
    Failure {
        scenario: name,
        seed: outcome.seed,
        verdict: "panic",
        invariants: vec!["panic".to_owned()],
        detail: String::new(),
        simulated_ms: None,
        replay: config.replay_command(outcome.scenario, outcome.seed),
        path: path.display().to_string(),
        trace_hash: None,
        seed_base: config.seed_base,
        shard: config.shard.to_string(),
        violations: Vec::new(),
    }
}
