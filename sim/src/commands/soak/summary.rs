//! The soak's report: per-scenario tallies, the coverage of marks, fault kinds and mirror
//! transitions, and the final summary line.

use super::*;

/// How often a mark was reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MarkTally {
    /// Seeds that reached it at least once.
    pub seeds: u64,
    /// Times reached, over every seed.
    pub total: u64,
}

/// Per-scenario figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScenarioTally {
    /// Seeds run.
    pub seeds: u64,
    /// Seeds that failed.
    pub failures: u64,
    /// Simulated milliseconds (finished runs only).
    pub simulated_ms: i64,
    /// Marks reached by at least one seed.
    pub marks: BTreeSet<String>,
}

/// What a soak found so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Seeds run.
    pub seeds: u64,
    /// Seeds with a safety violation.
    pub safety: u64,
    /// Seeds with only liveness violations.
    pub liveness: u64,
    /// Seeds whose simulation panicked.
    pub panics: u64,
    /// Seeds that ran twice with different trace hashes (`--check-determinism`).
    pub nondeterministic: u64,
    /// Seeds run a second time for the determinism self-check.
    pub repeated: u64,
    /// Simulated milliseconds over every finished seed.
    pub simulated_ms: i64,
    /// Per report row ([`SoakConfig::rows`]): the scenario files in order, then the generated
    /// scenarios.
    pub scenarios: Vec<ScenarioTally>,
    /// Every mark reached, by name.
    pub marks: BTreeMap<String, MarkTally>,
    /// The soak stopped because this shard's seeds reached the end of the 64-bit seed space
    /// (only a soak bounded by `--duration` alone can get there; `--seeds` is checked first).
    pub seed_space_exhausted: bool,
}

impl Summary {
    /// An empty summary for `config`.
    pub fn new(config: &SoakConfig) -> Self {
        Self {
            scenarios: vec![ScenarioTally::default(); config.rows()],
            ..Self::default()
        }
    }

    /// Failing seeds.
    pub fn failures(&self) -> u64 {
        self.safety + self.liveness + self.panics + self.nondeterministic
    }

    /// Adds one outcome (a determinism repeat is only counted as a repeat).
    pub fn record(&mut self, config: &SoakConfig, outcome: &SeedOutcome) {
        if outcome.repeat {
            self.repeated += 1;
            return;
        }
        self.seeds += 1;
        let tally = &mut self.scenarios[config.row(outcome.scenario)];
        tally.seeds += 1;
        match &outcome.result {
            SeedResult::Panicked(_) => {
                self.panics += 1;
                tally.failures += 1;
            }
            SeedResult::Finished(report) => {
                match report.verdict {
                    Verdict::Pass => {}
                    Verdict::Safety => self.safety += 1,
                    Verdict::Liveness => self.liveness += 1,
                }
                if report.verdict != Verdict::Pass {
                    tally.failures += 1;
                }
                self.simulated_ms += report.simulated_ms;
                tally.simulated_ms += report.simulated_ms;
                for (mark, count) in &report.marks {
                    if *count == 0 {
                        continue;
                    }
                    let entry = self.marks.entry(mark.clone()).or_default();
                    entry.seeds += 1;
                    entry.total += count;
                    tally.marks.insert(mark.clone());
                }
            }
        }
    }

    /// The exit code (module doc).
    pub fn exit_code(&self) -> u8 {
        use crate::exit::{LIVENESS, PANIC, PASS, SAFETY};
        if self.safety > 0 {
            SAFETY
        } else if self.panics > 0 || self.nondeterministic > 0 {
            PANIC
        } else if self.liveness > 0 {
            LIVENESS
        } else {
            PASS
        }
    }

    /// Scenarios that ran at least one seed yet never reached a declared coverage mark, with
    /// the marks missing.
    pub fn vacuous<'a>(&self, config: &'a SoakConfig) -> Vec<(&'a str, Vec<&'a str>)> {
        config
            .scenarios
            .iter()
            .zip(&self.scenarios)
            .filter(|(_, tally)| tally.seeds > 0)
            .filter_map(|(scenario, tally)| {
                let missing: Vec<&str> = scenario
                    .scenario
                    .coverage
                    .iter()
                    .filter(|mark| !tally.marks.contains(*mark))
                    .map(String::as_str)
                    .collect();
                (!missing.is_empty()).then_some((scenario.scenario.name.as_str(), missing))
            })
            .collect()
    }

    /// The end-of-soak report: per-scenario figures, coverage marks grouped, what was never
    /// reached, vacuous scenarios. Several lines, each ending in a newline.
    pub fn report(&self, config: &SoakConfig) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "scenarios:");
        for (row, tally) in self.scenarios.iter().enumerate() {
            let _ = writeln!(
                out,
                "  {:<30} seeds={:<6} failures={:<4} simulated={:.0}s",
                config.row_name(row),
                tally.seeds,
                tally.failures,
                tally.simulated_ms as f64 / 1000.0
            );
        }
        if config.check_determinism.is_some() {
            let _ = writeln!(
                out,
                "determinism: {} seeds run twice, {} with different trace hashes",
                self.repeated, self.nondeterministic
            );
        }
        let _ = writeln!(
            out,
            "coverage (seeds = seeds that reached the mark, total = times reached):"
        );
        let mut groups: BTreeMap<usize, Vec<(&String, &MarkTally)>> = BTreeMap::new();
        for (mark, tally) in self
            .marks
            .iter()
            .filter(|(mark, _)| !mark.starts_with(PRECONDITION_PREFIX))
        {
            groups
                .entry(mark_group(mark))
                .or_default()
                .push((mark, tally));
        }
        for (group, marks) in groups {
            let _ = writeln!(out, "  {}:", MARK_GROUPS[group]);
            for (mark, tally) in marks {
                let _ = writeln!(
                    out,
                    "    {mark:<44} seeds={:<6} total={}",
                    tally.seeds, tally.total
                );
            }
        }
        if self.marks.keys().any(|m| m.starts_with(TRANSITION_PREFIX)) {
            let transitions: Vec<String> = legal_transitions()
                .into_iter()
                .filter(|mark| !self.marks.contains_key(mark))
                .map(|mark| mark.trim_start_matches(TRANSITION_PREFIX).to_owned())
                .collect();
            let _ = writeln!(
                out,
                "  legal mirror transitions never reached: {}",
                list_or_none(&transitions)
            );
        } else {
            let _ = writeln!(
                out,
                "  legal mirror transitions never reached: all (no mirroring ran)"
            );
        }
        let faults: Vec<String> = FAULT_KINDS
            .iter()
            .filter(|kind| !self.marks.contains_key(&format!("{FAULT_PREFIX}{kind}")))
            .map(|kind| (*kind).to_owned())
            .collect();
        let _ = writeln!(
            out,
            "  fault kinds never injected: {}",
            list_or_none(&faults)
        );
        let declared: BTreeSet<&String> = config
            .scenarios
            .iter()
            .flat_map(|s| &s.scenario.coverage)
            .collect();
        let unreached: Vec<String> = declared
            .into_iter()
            .filter(|mark| !self.marks.contains_key(*mark))
            .cloned()
            .collect();
        let _ = writeln!(
            out,
            "  declared marks never reached: {}",
            list_or_none(&unreached)
        );
        let _ = writeln!(
            out,
            "invariants (seeds = seeds whose run reached the invariant's precondition):"
        );
        for (invariant, precondition) in INVARIANTS {
            let tally = self
                .marks
                .get(&format!("{PRECONDITION_PREFIX}{invariant}"))
                .copied()
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {invariant:<30} seeds={:<6} total={:<8} when {precondition}",
                tally.seeds, tally.total
            );
        }
        for (name, missing) in self.vacuous(config) {
            let _ = writeln!(out, "VACUOUS scenario={name} missing={}", missing.join(","));
        }
        for invariant in self.vacuous_invariants() {
            let _ = writeln!(
                out,
                "VACUOUS invariant={invariant} (no seed reached its precondition)"
            );
        }
        for (scenario, tally) in config.scenarios.iter().zip(&self.scenarios) {
            if tally.seeds == 0 {
                let _ = writeln!(
                    out,
                    "NOT RUN scenario={} (the soak ended before its turn)",
                    scenario.scenario.name
                );
            }
        }
        out
    }

    /// The final line: `soak seeds=N failures=F seeds_per_min=X sim_s_per_wall_s=Y` followed
    /// by `safety=… liveness=… panics=… vacuous=… wall_s=…`; keys never change or move.
    pub fn final_line(&self, config: &SoakConfig, wall: Duration) -> String {
        let wall_s = wall.as_secs_f64().max(1e-9);
        format!(
            "soak seeds={} failures={} seeds_per_min={:.1} sim_s_per_wall_s={:.1} safety={} liveness={} panics={} vacuous={} wall_s={:.1} vacuous_invariants={}",
            self.seeds,
            self.failures(),
            self.seeds as f64 * 60.0 / wall_s,
            self.simulated_ms as f64 / 1000.0 / wall_s,
            self.safety,
            self.liveness,
            self.panics,
            self.vacuous(config).len(),
            wall.as_secs_f64(),
            self.vacuous_invariants().len()
        )
    }

    /// The invariants whose precondition no seed reached (see
    /// [`crate::checks::INVARIANTS`]): their checks tested nothing in this soak.
    pub fn vacuous_invariants(&self) -> Vec<&'static str> {
        INVARIANTS
            .iter()
            .map(|(invariant, _)| *invariant)
            .filter(|invariant| {
                !self
                    .marks
                    .contains_key(&format!("{PRECONDITION_PREFIX}{invariant}"))
            })
            .collect()
    }
}

pub(super) const TRANSITION_PREFIX: &str = "mirror-transition:";

pub(super) const FAULT_PREFIX: &str = "fault:";

pub(super) const MARK_GROUPS: [&str; 6] = [
    "mirror state transitions",
    "admin operations",
    "faults injected (fault:KIND) and their effects",
    "mirroring",
    "cluster and clients",
    "other",
];

/// The group (index into [`MARK_GROUPS`]) a mark is reported under.
pub(super) fn mark_group(mark: &str) -> usize {
    if mark.starts_with(TRANSITION_PREFIX) {
        0
    } else if mark.starts_with("admin-op-") {
        1
    } else if mark.starts_with(FAULT_PREFIX)
        || matches!(
            mark,
            "node-killed"
                | "node-restarted"
                | "node-paused"
                | "node-isolated"
                | "network-partitioned"
                | "disk-torn"
                | "unflushed-lost"
        )
    {
        2
    } else if mark.starts_with("mirror-")
        || matches!(
            mark,
            "records-deleted" | "topic-admin-forwarded" | "removed-topic-add-forwarded"
        )
    {
        3
    } else if matches!(
        mark,
        "leader-elected"
            | "isr-changed"
            | "coordinator-loaded"
            | "follower-truncated"
            | "follower-high-watermark-lowered"
            | "follower-above-its-high-watermark"
            | "follower-truncated-to-high-watermark"
            | "follower-truncated-below-leader-epoch-end"
            | "leader-elected-above-its-high-watermark"
            | "group-offset-committed"
            | "group-offset-admin-reset"
            | "producer-epoch-bumped"
    ) {
        4
    } else {
        5
    }
}

/// Every legal change of state of a mirror partition, as its coverage mark.
pub(super) fn legal_transitions() -> Vec<String> {
    let mut marks = Vec::new();
    for from in MirrorState::ALL {
        for to in MirrorState::ALL {
            if from != to && is_valid_transition(from, to) {
                marks.push(format!("{TRANSITION_PREFIX}{from}->{to}"));
            }
        }
    }
    marks
}

pub(super) fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(" ")
    }
}
