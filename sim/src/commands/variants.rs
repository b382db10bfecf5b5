//! `mirrorsim variants`: every design variant against every mirroring scenario over a fixed
//! range of seeds, tabulated as caught or not, by which invariant and how soon (issue #7,
//! design.md §8: "run rejected designs side by side and name the invariant each one breaks").
//!
//! Contract:
//! - **Runs.** Cell (design D, scenario S) runs the seeds `base, base + 1, …, base + N − 1` of S
//!   with D forced (`RunOptions::design = Some(D)`, which overrides a scenario's own `design`),
//!   each through [`crate::commands::soak::run_isolated`] — its own thread and madsim runtime, a panic
//!   caught — exactly as `mirrorsim run S --seed K --design D` runs it. A cell's result depends
//!   only on D, S, the base and N, never on `--jobs` or on which worker ran what, so the same
//!   flags always print the same table.
//! - **Failure.** A run fails when it reports any violation (safety or liveness) or panics. Its
//!   *first invariant* is its first violation's (the runner lists safety first, and a safety
//!   violation ends the run), or `panic`.
//! - **Cell.** The failing runs out of N, every first invariant with its count, every invariant
//!   reported at all with its count, the first failing seed, and the median seeds to first
//!   failure. In the table a cell reads `INVARIANT F/N (M)`: its most frequent first invariant
//!   (ties: the name first in alphabetical order) with a `+` appended when failing runs had
//!   other first invariants too, F failing runs of N, M the median seeds to first failure; or
//!   `pass`.
//! - **Median seeds to first failure.** With the failing seeds at positions `p1 < p2 < … < pk`
//!   (position = seed − base), the gaps are `p1 + 1, p2 − p1, …, pk − p(k−1)`: how many seeds
//!   had to run, from the start or from the previous failure, to see the next failure. M is the
//!   median of those gaps (the mean of the middle two for an even count) and `-` when no seed
//!   failed. Every seed failing gives 1; failures at positions 4 and 9 of 10 give gaps 5, 5 and
//!   M = 5. It estimates how many fresh seeds a soak of that scenario needs to catch the variant.
//! - **Control.** The seed design is the control row: every one of its cells must pass, since
//!   the variants are judged against it. A failing cell there is a bug in the model or a
//!   checker; it is reported loudly and the exit code is 1 ([`Matrix::exit_code`]); otherwise 0,
//!   whatever the variants did. Bad input (64) is decided before any run.
//!
//! Everything here except [`run_variants`] is plain aggregation and text, tested with made-up
//! outcomes; [`run_variants`] takes the runner as a parameter.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use mirrorsim::mirror::MirrorDesign;

use crate::commands::runner::{RunOptions, RunReport, Verdict};
use crate::commands::soak::{run_isolated, run_pool, PoolEvent, SeedResult, SoakScenario};
use crate::scenario::{AdminOpKind, Scenario};

/// The first invariant of a run that panicked.
pub const PANIC: &str = "panic";

/// Whether `scenario` mirrors: its admin timeline creates a mirror. Only such scenarios can
/// tell the designs apart (they differ only in the mirroring code), so they are the default
/// columns; every shipped scenario with two or more clusters has one, the single-cluster ones
/// none.
pub fn is_mirroring(scenario: &Scenario) -> bool {
    scenario
        .admin
        .iter()
        .any(|op| op.kind() == AdminOpKind::CreateMirror)
}

/// How one run ended, as the table counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    /// No violation.
    Passed,
    /// A violation or a panic.
    Failed {
        /// The first violation's invariant, or [`PANIC`].
        first: String,
        /// Every invariant the run reported (`{panic}` for a panic).
        invariants: BTreeSet<String>,
    },
}

impl RunOutcome {
    /// The outcome of a finished or panicked run.
    pub fn of(result: &SeedResult) -> Self {
        match result {
            SeedResult::Panicked(_) => Self::failed(PANIC, [PANIC]),
            SeedResult::Finished(report) => Self::of_report(report),
        }
    }

    fn of_report(report: &RunReport) -> Self {
        let Some(first) = report.violations.first() else {
            return match report.verdict {
                Verdict::Pass => Self::Passed,
                // A verdict without a violation should not happen; still count it as failed.
                Verdict::Safety => Self::failed("safety", ["safety"]),
                Verdict::Liveness => Self::failed("liveness", ["liveness"]),
            };
        };
        Self::failed(
            first.invariant.name(),
            report.violations.iter().map(|v| v.invariant.name()),
        )
    }

    /// A failed outcome (for callers and tests that build outcomes by hand).
    pub fn failed<'a>(first: &str, invariants: impl IntoIterator<Item = &'a str>) -> Self {
        Self::Failed {
            first: first.to_owned(),
            invariants: invariants.into_iter().map(str::to_owned).collect(),
        }
    }
}

/// The median of the gaps between failing seed positions (see the module doc); `None` when
/// there are none. `failing` must be sorted and free of duplicates.
pub fn median_gap(failing: &[u64]) -> Option<f64> {
    let mut previous: Option<u64> = None;
    let mut gaps: Vec<u64> = failing
        .iter()
        .map(|&position| {
            let gap = previous.map_or(position + 1, |p| position - p);
            previous = Some(position);
            gap
        })
        .collect();
    gaps.sort_unstable();
    let middle = gaps.len() / 2;
    match gaps.len() {
        0 => None,
        n if n % 2 == 1 => Some(gaps[middle] as f64),
        _ => Some((gaps[middle - 1] + gaps[middle]) as f64 / 2.0),
    }
}

/// A median as printed: `1`, `2.5`, or `-` for none.
pub fn format_median(median: Option<f64>) -> String {
    match median {
        None => "-".to_owned(),
        Some(value) if value.fract() == 0.0 => format!("{value:.0}"),
        Some(value) => format!("{value:.1}"),
    }
}

/// What one (design, scenario) pair found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cell {
    /// Runs recorded.
    pub runs: u64,
    /// Positions (seed − base) of the failing runs.
    pub failing: BTreeSet<u64>,
    /// Failing runs by first invariant.
    pub first_invariants: BTreeMap<String, u64>,
    /// Failing runs by every invariant they reported.
    pub invariants: BTreeMap<String, u64>,
}

impl Cell {
    /// Counts the run at `position`.
    pub fn record(&mut self, position: u64, outcome: &RunOutcome) {
        self.runs += 1;
        if let RunOutcome::Failed { first, invariants } = outcome {
            self.failing.insert(position);
            *self.first_invariants.entry(first.clone()).or_default() += 1;
            for invariant in invariants {
                *self.invariants.entry(invariant.clone()).or_default() += 1;
            }
        }
    }

    /// Failing runs.
    pub fn failures(&self) -> u64 {
        self.failing.len() as u64
    }

    /// Whether any run failed.
    pub fn caught(&self) -> bool {
        !self.failing.is_empty()
    }

    /// The most frequent first invariant (ties: alphabetical order).
    pub fn main_invariant(&self) -> Option<&str> {
        // `max_by_key` keeps the last maximum; iterating in reverse makes that the first name.
        self.first_invariants
            .iter()
            .rev()
            .max_by_key(|(_, count)| **count)
            .map(|(name, _)| name.as_str())
    }

    /// The first invariants in order of frequency (ties: alphabetical).
    pub fn first_invariants_by_count(&self) -> Vec<(&str, u64)> {
        let mut listed: Vec<(&str, u64)> = self
            .first_invariants
            .iter()
            .map(|(name, count)| (name.as_str(), *count))
            .collect();
        listed.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        listed
    }

    /// The median seeds to first failure.
    pub fn median_gap(&self) -> Option<f64> {
        median_gap(&self.failing.iter().copied().collect::<Vec<_>>())
    }

    /// The first failing position.
    pub fn first_failing(&self) -> Option<u64> {
        self.failing.first().copied()
    }

    /// The table's text: `INVARIANT F/N (M)`, or `pass`.
    pub fn text(&self) -> String {
        self.render("")
    }

    /// [`Cell::text`] with the invariant between `quote`s (a backquote for Markdown).
    fn render(&self, quote: &str) -> String {
        let Some(main) = self.main_invariant() else {
            return "pass".to_owned();
        };
        let others = if self.first_invariants.len() > 1 {
            "+"
        } else {
            ""
        };
        format!(
            "{quote}{main}{quote}{others} {}/{} ({})",
            self.failures(),
            self.runs,
            format_median(self.median_gap())
        )
    }
}

/// One scenario column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// The scenario's name (the header).
    pub name: String,
    /// The file as given, for replay commands.
    pub path: String,
}

/// The whole table: one [`Cell`] per design and scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matrix {
    /// Rows.
    pub designs: Vec<MirrorDesign>,
    /// Columns.
    pub scenarios: Vec<Column>,
    /// Seeds per cell.
    pub seeds: u64,
    /// The first seed of every cell.
    pub seed_base: u64,
    /// Design-major.
    cells: Vec<Cell>,
}

/// How wide the plain table may be before its columns wrap into blocks.
pub const TABLE_WIDTH: usize = 160;

/// The legend printed under both tables.
const LEGEND: &str =
    "cell: the most frequent first invariant of the failing runs (`+`: others too), \
failing runs/seeds run, (median seeds to first failure); `pass`: no seed failed";

impl Matrix {
    /// An empty table.
    pub fn new(
        designs: Vec<MirrorDesign>,
        scenarios: Vec<Column>,
        seeds: u64,
        seed_base: u64,
    ) -> Self {
        let cells = vec![Cell::default(); designs.len() * scenarios.len()];
        Self {
            designs,
            scenarios,
            seeds,
            seed_base,
            cells,
        }
    }

    /// The cell of row `design` and column `scenario` (indices).
    pub fn cell(&self, design: usize, scenario: usize) -> &Cell {
        &self.cells[design * self.scenarios.len() + scenario]
    }

    /// Counts a run; returns its cell.
    pub fn record(
        &mut self,
        design: usize,
        scenario: usize,
        position: u64,
        outcome: &RunOutcome,
    ) -> &Cell {
        let cell = &mut self.cells[design * self.scenarios.len() + scenario];
        cell.record(position, outcome);
        cell
    }

    /// Runs recorded so far.
    pub fn runs(&self) -> u64 {
        self.cells.iter().map(|cell| cell.runs).sum()
    }

    /// Runs that panicked.
    pub fn panics(&self) -> u64 {
        self.cells
            .iter()
            .filter_map(|cell| cell.first_invariants.get(PANIC))
            .sum()
    }

    fn row(&self, design: usize) -> impl Iterator<Item = (&Column, &Cell)> {
        self.scenarios
            .iter()
            .enumerate()
            .map(move |(scenario, column)| (column, self.cell(design, scenario)))
    }

    /// The control row's failing cells: scenario names. Empty when the seed design passed every
    /// run, or was not run.
    pub fn control_failures(&self) -> Vec<&str> {
        self.designs
            .iter()
            .enumerate()
            .filter(|(_, design)| **design == MirrorDesign::Seed)
            .flat_map(|(design, _)| self.row(design))
            .filter(|(_, cell)| cell.caught())
            .map(|(column, _)| column.name.as_str())
            .collect()
    }

    /// 0 when the seed design passed every run (or was not run), 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        if self.control_failures().is_empty() {
            crate::exit::PASS
        } else {
            crate::exit::SAFETY
        }
    }

    /// The variants (every design but the seed's) caught in at least one scenario, and how many
    /// variants ran.
    pub fn variants_caught(&self) -> (usize, usize) {
        let variants: Vec<usize> = (0..self.designs.len())
            .filter(|&d| self.designs[d] != MirrorDesign::Seed)
            .collect();
        let caught = variants
            .iter()
            .filter(|&&d| self.row(d).any(|(_, cell)| cell.caught()))
            .count();
        (caught, variants.len())
    }

    /// The table as aligned plain text, with a legend line: [`Matrix::table_within`]
    /// [`TABLE_WIDTH`] characters.
    pub fn table(&self) -> String {
        self.table_within(TABLE_WIDTH)
    }

    /// The table as aligned plain text. When the scenarios do not fit in `width` characters the
    /// columns wrap into blocks, each repeating the design column (as R prints a wide data
    /// frame), so a terminal shows it without breaking lines; at least one scenario per block.
    pub fn table_within(&self, width: usize) -> String {
        let mut rows: Vec<Vec<String>> = vec![std::iter::once("design".to_owned())
            .chain(self.scenarios.iter().map(|column| column.name.clone()))
            .collect()];
        for (d, design) in self.designs.iter().enumerate() {
            rows.push(
                std::iter::once(design.name().to_owned())
                    .chain(self.row(d).map(|(_, cell)| cell.text()))
                    .collect(),
            );
        }
        let widths: Vec<usize> = (0..rows[0].len())
            .map(|c| rows.iter().map(|row| row[c].len()).max().unwrap_or(0))
            .collect();
        let mut out = String::new();
        let mut next = 1;
        while next < widths.len() {
            let mut block = vec![0];
            let mut used = widths[0];
            while next < widths.len() && (block.len() == 1 || used + 2 + widths[next] <= width) {
                used += 2 + widths[next];
                block.push(next);
                next += 1;
            }
            if !out.is_empty() {
                out.push('\n');
            }
            write_block(&mut out, &rows, &widths, &block);
        }
        let _ = writeln!(out, "{LEGEND}");
        out
    }

    /// The table in Markdown (invariants and designs in code spans), the legend and the
    /// per-design summaries as a list, ready for the README.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let headers: Vec<&str> = self.scenarios.iter().map(|c| c.name.as_str()).collect();
        let _ = writeln!(out, "| design | {} |", headers.join(" | "));
        let _ = writeln!(out, "|---|{}", "---|".repeat(headers.len()));
        for (d, design) in self.designs.iter().enumerate() {
            let cells: Vec<String> = self.row(d).map(|(_, cell)| cell.render("`")).collect();
            let _ = writeln!(out, "| `{design}` | {} |", cells.join(" | "));
        }
        let _ = writeln!(
            out,
            "\n{} seeds per cell from {}. {LEGEND}.\n",
            self.seeds, self.seed_base
        );
        for line in self.summaries() {
            let _ = writeln!(out, "- {line}");
        }
        out
    }

    /// One line per design: what caught it, where, and how soon; the control row's verdict.
    pub fn summaries(&self) -> Vec<String> {
        (0..self.designs.len()).map(|d| self.summary(d)).collect()
    }

    fn summary(&self, d: usize) -> String {
        let design = self.designs[d];
        let runs: u64 = self.row(d).map(|(_, cell)| cell.runs).sum();
        let caught: Vec<(&Column, &Cell)> = self.row(d).filter(|(_, c)| c.caught()).collect();
        if design == MirrorDesign::Seed {
            return if caught.is_empty() {
                format!("{design} (control): passed every run ({runs} runs)")
            } else {
                format!(
                    "{design} (control): FAILED in {} — a bug in the model or a checker ({})",
                    caught
                        .iter()
                        .map(|(column, _)| column.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    self.caught_by(&caught)
                )
            };
        }
        if caught.is_empty() {
            return format!("{design}: NOT caught in any scenario ({runs} runs)");
        }
        format!(
            "{design}: caught by: {}; median seeds to first failure: {}",
            self.caught_by(&caught),
            self.medians(&caught)
        )
    }

    /// `SCENARIO, …`, or `every scenario` when the list is every column of the table.
    fn scenario_list(&self, names: &[&str]) -> String {
        if names.len() > 1 && names.len() == self.scenarios.len() {
            "every scenario".to_owned()
        } else {
            names.join(", ")
        }
    }

    /// `INVARIANT (in SCENARIO, …), …`: every first invariant of the failing runs with the
    /// scenarios where it was one, the invariant with the most failing runs first.
    fn caught_by(&self, caught: &[(&Column, &Cell)]) -> String {
        let mut by_invariant: BTreeMap<&str, (u64, Vec<&str>)> = BTreeMap::new();
        for (column, cell) in caught {
            for (invariant, count) in cell.first_invariants_by_count() {
                let entry = by_invariant.entry(invariant).or_default();
                entry.0 += count;
                entry.1.push(column.name.as_str());
            }
        }
        let mut listed: Vec<(&str, (u64, Vec<&str>))> = by_invariant.into_iter().collect();
        listed.sort_by(|a, b| (b.1).0.cmp(&(a.1).0).then(a.0.cmp(b.0)));
        listed
            .iter()
            .map(|(invariant, (_, scenarios))| {
                format!("{invariant} (in {})", self.scenario_list(scenarios))
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `M in SCENARIO, …; M' in …`, smallest median first; `M in each` when every catching
    /// scenario has the same one.
    fn medians(&self, caught: &[(&Column, &Cell)]) -> String {
        // Medians are whole or halves: twice the median is an exact key.
        let mut by_median: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
        for (column, cell) in caught {
            let twice = cell.median_gap().map_or(0, |m| (m * 2.0) as u64);
            by_median
                .entry(twice)
                .or_default()
                .push(column.name.as_str());
        }
        let single = by_median.len() == 1 && caught.len() > 1;
        by_median
            .iter()
            .map(|(twice, names)| {
                let median = format_median(Some(*twice as f64 / 2.0));
                if single {
                    format!("{median} in each")
                } else {
                    format!("{median} in {}", self.scenario_list(names))
                }
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// One line per caught cell: counts, first failing seed, every invariant seen, and the
    /// command that replays the first failing seed.
    pub fn details(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (d, design) in self.designs.iter().enumerate() {
            for (column, cell) in self.row(d) {
                let Some(first) = cell.first_failing() else {
                    continue;
                };
                let seed = self.seed_base + first;
                let (make, file) = if column.path == GENERATED_COLUMN {
                    (
                        format!(
                            "cargo run --release --bin mirrorsim -- generate --seed {seed} --out generated-{seed}.toml && "
                        ),
                        format!("generated-{seed}.toml"),
                    )
                } else {
                    (String::new(), column.path.clone())
                };
                lines.push(format!(
                    "{design} × {}: failed {}/{} first_failing_seed={seed} median={} first_invariants={} invariants={} replay: {make}cargo run --release --bin mirrorsim -- replay {file} --seed {seed} --design {design}",
                    column.name,
                    cell.failures(),
                    cell.runs,
                    format_median(cell.median_gap()),
                    counts(cell.first_invariants_by_count()),
                    counts(cell.invariants.iter().map(|(name, n)| (name.as_str(), *n))),
                ));
            }
        }
        lines
    }

    /// The last line: `variants designs=… scenarios=… seeds=… runs=…` then `seed_base=…
    /// caught=C/V control_failures=… panics=… wall_s=…`; keys never change or move.
    pub fn final_line(&self, wall: Duration) -> String {
        let (caught, variants) = self.variants_caught();
        format!(
            "variants designs={} scenarios={} seeds={} runs={} seed_base={} caught={caught}/{variants} control_failures={} panics={} wall_s={:.1}",
            self.designs.len(),
            self.scenarios.len(),
            self.seeds,
            self.runs(),
            self.seed_base,
            self.control_failures().len(),
            self.panics(),
            wall.as_secs_f64()
        )
    }
}

/// `a×3,b×1`.
fn counts<'a>(items: impl IntoIterator<Item = (&'a str, u64)>) -> String {
    items
        .into_iter()
        .map(|(name, count)| format!("{name}×{count}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Columns `block` of `rows` (the header first), a rule under the header.
fn write_block(out: &mut String, rows: &[Vec<String>], widths: &[usize], block: &[usize]) {
    for (r, row) in rows.iter().enumerate() {
        let line: Vec<String> = block
            .iter()
            .map(|&c| format!("{:<width$}", row[c], width = widths[c]))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
        if r == 0 {
            let rule: Vec<String> = block.iter().map(|&c| "-".repeat(widths[c])).collect();
            let _ = writeln!(out, "{}", rule.join("  "));
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct VariantsConfig {
    /// Rows.
    pub designs: Vec<MirrorDesign>,
    /// Columns.
    pub scenarios: Vec<SoakScenario>,
    /// Seeds per cell (at least 1).
    pub seeds: u64,
    /// The first seed; `seed_base + seeds − 1` must fit in a u64.
    pub seed_base: u64,
    /// Worker threads, each running one seed at a time.
    pub jobs: usize,
    /// A last column of scenarios generated from each seed ([`crate::scenario::generate::generate`]),
    /// run with that seed. A variant's run there counts only where the seed design passed the
    /// same seed: the generated scenarios reach cases the seed design fails too, and what the
    /// column measures is what the variant breaks that the seed design does not.
    pub generated: bool,
}

/// The name of the generated column (also its `path`; its replay command generates the file).
pub const GENERATED_COLUMN: &str = "generated";

impl VariantsConfig {
    /// Every run, cell by cell (design-major), seeds in order.
    pub fn total_runs(&self) -> u64 {
        (self.designs.len() * self.columns()) as u64 * self.seeds
    }

    /// The table's columns: the scenario files, then the generated column if asked for.
    pub fn columns(&self) -> usize {
        self.scenarios.len() + usize::from(self.generated)
    }

    /// Whether column `scenario` is the generated one.
    fn is_generated(&self, scenario: usize) -> bool {
        scenario == self.scenarios.len()
    }

    /// Design index, scenario index and seed position of run `index`.
    fn item(&self, index: u64) -> (usize, usize, u64) {
        let cell = index / self.seeds.max(1);
        let columns = self.columns().max(1) as u64;
        (
            (cell / columns) as usize,
            (cell % columns) as usize,
            index % self.seeds.max(1),
        )
    }

    fn empty_matrix(&self) -> Matrix {
        let mut columns: Vec<Column> = self
            .scenarios
            .iter()
            .map(|s| Column {
                name: s.scenario.name.clone(),
                path: s.path.display().to_string(),
            })
            .collect();
        if self.generated {
            columns.push(Column {
                name: GENERATED_COLUMN.to_owned(),
                path: GENERATED_COLUMN.to_owned(),
            });
        }
        Matrix::new(self.designs.clone(), columns, self.seeds, self.seed_base)
    }
}

/// Runs every cell: `config.jobs` worker threads claim runs in order (cell by cell, so cells
/// finish roughly in table order), each through [`run_isolated`]. `cell_done(matrix, design,
/// scenario)` is called once a cell has all its runs. Returns the table and the wall time.
pub fn run_variants<R>(
    config: &VariantsConfig,
    runner: R,
    cell_done: &mut dyn FnMut(&Matrix, usize, usize),
) -> (Matrix, Duration)
where
    R: Fn(&Scenario, &RunOptions) -> RunReport + Sync,
{
    let start = Instant::now();
    let mut matrix = config.empty_matrix();
    let total = config.total_runs();
    let work = |index: u64| {
        if index >= total {
            return None;
        }
        let (design, scenario, position) = config.item(index);
        let seed = config.seed_base + position;
        let options = RunOptions {
            design: Some(config.designs[design]),
            ..RunOptions::new(seed)
        };
        let generated;
        let scenario = if config.is_generated(scenario) {
            generated = crate::scenario::generate::generate(seed);
            &generated
        } else {
            &config.scenarios[scenario].scenario
        };
        let result = run_isolated(&runner, scenario, &options);
        // Only the outcome travels: a whole report per run would pile up.
        Some((index, RunOutcome::of(&result)))
    };
    // No ticks: progress is reported per finished cell.
    let never = Duration::from_secs(3600);
    // The generated column's outcomes wait for the end: a variant's run is judged against
    // the seed design's on the same seed.
    let mut generated: Vec<(usize, u64, RunOutcome)> = Vec::new();
    run_pool("variants", config.jobs, work, never, &mut |event| {
        if let PoolEvent::Done((index, outcome)) = event {
            let (design, scenario, position) = config.item(index);
            if config.is_generated(scenario) {
                generated.push((design, position, outcome));
            } else if matrix.record(design, scenario, position, &outcome).runs == config.seeds {
                cell_done(&matrix, design, scenario);
            }
        }
    });
    if config.generated {
        record_generated(config, &mut matrix, generated, cell_done);
    }
    (matrix, start.elapsed())
}

/// Fills the generated column: the seed design's row with every run, each other row with its
/// runs on the seeds the seed design passed (all of them without a seed design row).
fn record_generated(
    config: &VariantsConfig,
    matrix: &mut Matrix,
    mut outcomes: Vec<(usize, u64, RunOutcome)>,
    cell_done: &mut dyn FnMut(&Matrix, usize, usize),
) {
    outcomes.sort_by_key(|(design, position, _)| (*design, *position));
    let column = config.scenarios.len();
    let control = config.designs.iter().position(|d| *d == MirrorDesign::Seed);
    let control_failed: BTreeSet<u64> = outcomes
        .iter()
        .filter(|(design, _, outcome)| {
            Some(*design) == control && matches!(outcome, RunOutcome::Failed { .. })
        })
        .map(|(_, position, _)| *position)
        .collect();
    for (design, position, outcome) in &outcomes {
        if Some(*design) == control || !control_failed.contains(position) {
            matrix.record(*design, column, *position, outcome);
        }
    }
    for design in 0..config.designs.len() {
        cell_done(matrix, design, column);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns(names: &[&str]) -> Vec<Column> {
        names
            .iter()
            .map(|name| Column {
                name: (*name).to_owned(),
                path: format!("scenarios/{name}.toml"),
            })
            .collect()
    }

    fn fail(invariant: &str) -> RunOutcome {
        RunOutcome::failed(invariant, [invariant])
    }

    /// Seed and no-pid-reset over active_passive and failback, 4 seeds from 10: no-pid-reset
    /// fails every active_passive seed and failback's seeds 11 and 13 (once with liveness too).
    fn sample() -> Matrix {
        let mut matrix = Matrix::new(
            vec![MirrorDesign::Seed, MirrorDesign::NoPidReset],
            columns(&["active_passive", "failback"]),
            4,
            10,
        );
        for position in 0..4 {
            matrix.record(0, 0, position, &RunOutcome::Passed);
            matrix.record(0, 1, position, &RunOutcome::Passed);
            matrix.record(1, 0, position, &fail("no-stale-pid-after-stopped"));
        }
        matrix.record(1, 1, 0, &RunOutcome::Passed);
        matrix.record(
            1,
            1,
            1,
            &RunOutcome::failed(
                "no-stale-pid-after-stopped",
                ["no-stale-pid-after-stopped", "liveness"],
            ),
        );
        matrix.record(1, 1, 2, &RunOutcome::Passed);
        matrix.record(1, 1, 3, &fail("psm-replica-agreement"));
        matrix
    }

    #[test]
    fn median_gap_counts_seeds_from_the_start_then_between_failures() {
        assert_eq!(median_gap(&[]), None);
        // Every seed fails: each failure needed one seed.
        assert_eq!(median_gap(&[0, 1, 2, 3]), Some(1.0));
        // The first failure at position 4 needed five seeds.
        assert_eq!(median_gap(&[4]), Some(5.0));
        // Gaps 5 and 5.
        assert_eq!(median_gap(&[4, 9]), Some(5.0));
        // Gaps 1, 1, 8: the median ignores the one long wait.
        assert_eq!(median_gap(&[0, 1, 9]), Some(1.0));
        // Gaps 2, 1, 3, 6 sorted 1, 2, 3, 6: the mean of the middle two.
        assert_eq!(median_gap(&[1, 2, 5, 11]), Some(2.5));
        assert_eq!(format_median(Some(2.5)), "2.5");
        assert_eq!(format_median(Some(1.0)), "1");
        assert_eq!(format_median(None), "-");
    }

    #[test]
    fn a_cell_shows_its_most_frequent_first_invariant() {
        let mut cell = Cell::default();
        assert_eq!(cell.text(), "pass");
        cell.record(0, &RunOutcome::Passed);
        cell.record(1, &fail("offset-identity"));
        cell.record(2, &fail("mirror-prefix"));
        cell.record(3, &fail("offset-identity"));
        assert_eq!(cell.main_invariant(), Some("offset-identity"));
        assert_eq!(cell.text(), "offset-identity+ 3/4 (1)");
        assert_eq!(cell.first_failing(), Some(1));
        // A tie goes to the alphabetically first name.
        cell.record(4, &fail("mirror-prefix"));
        assert_eq!(cell.main_invariant(), Some("mirror-prefix"));
        assert_eq!(
            cell.first_invariants_by_count(),
            vec![("mirror-prefix", 2), ("offset-identity", 2)]
        );
    }

    #[test]
    fn fake_results_make_the_table() {
        let matrix = sample();
        let table = matrix.table();
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].starts_with("design "), "{table}");
        assert!(lines[0].contains("active_passive") && lines[0].contains("failback"));
        assert!(lines[1].starts_with("------"), "{table}");
        assert!(lines[2].starts_with("seed "), "{table}");
        assert_eq!(lines[2].matches("pass").count(), 2, "{table}");
        assert!(lines[3].starts_with("no-pid-reset "));
        assert!(
            lines[3].contains("no-stale-pid-after-stopped 4/4 (1)"),
            "{table}"
        );
        // Failures at positions 1 and 3: gaps 2 and 2.
        assert!(
            lines[3].contains("no-stale-pid-after-stopped+ 2/4 (2)"),
            "{table}"
        );
        // Columns line up: the failback column starts at the same place in every row.
        let at = lines[0].find("failback").expect("header");
        assert_eq!(&lines[2][at..at + 4], "pass", "{table}");
        assert_eq!(&lines[3][at..at + 10], "no-stale-p", "{table}");

        let markdown = matrix.markdown();
        assert!(markdown.starts_with("| design | active_passive | failback |\n|---|---|---|\n"));
        assert!(markdown.contains("| `seed` | pass | pass |"), "{markdown}");
        assert!(
            markdown.contains(
                "| `no-pid-reset` | `no-stale-pid-after-stopped` 4/4 (1) | `no-stale-pid-after-stopped`+ 2/4 (2) |"
            ),
            "{markdown}"
        );
        assert!(markdown.contains("4 seeds per cell from 10."), "{markdown}");
    }

    #[test]
    fn summaries_name_the_invariants_scenarios_and_medians() {
        let matrix = sample();
        let summaries = matrix.summaries();
        assert_eq!(summaries[0], "seed (control): passed every run (8 runs)");
        assert_eq!(
            summaries[1],
            "no-pid-reset: caught by: no-stale-pid-after-stopped (in every scenario), \
             psm-replica-agreement (in failback); median seeds to first failure: \
             1 in active_passive; 2 in failback"
        );
        let details = matrix.details();
        assert_eq!(details.len(), 2);
        assert!(details[1]
            .starts_with("no-pid-reset × failback: failed 2/4 first_failing_seed=11 median=2 "));
        assert!(details[1].contains(
            "first_invariants=no-stale-pid-after-stopped×1,psm-replica-agreement×1 invariants=liveness×1,no-stale-pid-after-stopped×1,psm-replica-agreement×1"
        ));
        assert!(
            details[1].ends_with("replay scenarios/failback.toml --seed 11 --design no-pid-reset")
        );
        assert_eq!(
            matrix.final_line(Duration::from_millis(12_340)),
            "variants designs=2 scenarios=2 seeds=4 runs=16 seed_base=10 caught=1/1 control_failures=0 panics=0 wall_s=12.3"
        );
    }

    #[test]
    fn a_wide_table_wraps_into_blocks_that_repeat_the_design_column() {
        let matrix = sample();
        let whole = matrix.table_within(usize::MAX);
        assert_eq!(whole.lines().filter(|l| l.starts_with("design")).count(), 1);
        // Room for the design column and one scenario only: one block per scenario.
        let narrow = matrix.table_within(10);
        let blocks: Vec<&str> = narrow.split("\n\n").collect();
        assert_eq!(blocks.len(), 2, "{narrow}");
        assert!(
            blocks[0].starts_with("design        active_passive\n"),
            "{narrow}"
        );
        assert!(
            blocks[1].starts_with("design        failback\n"),
            "{narrow}"
        );
        assert!(blocks[1].contains("no-pid-reset  no-stale-pid-after-stopped+ 2/4 (2)"));
        assert!(narrow.ends_with(&format!("{LEGEND}\n")));
    }

    #[test]
    fn one_median_for_every_catching_scenario_is_said_once() {
        let mut matrix = Matrix::new(
            vec![MirrorDesign::EpochRewrite],
            columns(&["active_passive", "chain", "failover_under_faults"]),
            2,
            0,
        );
        for position in 0..2 {
            matrix.record(0, 0, position, &fail("offset-identity"));
            matrix.record(0, 1, position, &fail("offset-identity"));
            matrix.record(0, 2, position, &RunOutcome::Passed);
        }
        assert_eq!(
            matrix.summaries(),
            vec![
                "epoch-rewrite: caught by: offset-identity (in active_passive, chain); \
                 median seeds to first failure: 1 in each"
            ]
        );
    }

    #[test]
    fn a_variant_never_caught_is_said_so() {
        let mut matrix = Matrix::new(
            vec![MirrorDesign::AbortMarkers],
            columns(&["active_passive"]),
            2,
            0,
        );
        matrix.record(0, 0, 0, &RunOutcome::Passed);
        matrix.record(0, 0, 1, &RunOutcome::Passed);
        assert_eq!(
            matrix.summaries(),
            vec!["abort-markers: NOT caught in any scenario (2 runs)"]
        );
        assert_eq!(matrix.variants_caught(), (0, 1));
        assert_eq!(matrix.exit_code(), 0, "no control row: nothing to fail");
    }

    #[test]
    fn a_failing_control_row_fails_the_command() {
        let mut matrix = sample();
        assert_eq!(matrix.exit_code(), 0);
        matrix.record(0, 1, 3, &RunOutcome::Passed);
        let mut matrix_with_panic = matrix.clone();
        matrix.record(0, 0, 2, &fail("liveness"));
        assert_eq!(matrix.control_failures(), vec!["active_passive"]);
        assert_eq!(matrix.exit_code(), 1);
        assert!(
            matrix.summaries()[0].starts_with(
                "seed (control): FAILED in active_passive — a bug in the model or a checker (liveness (in active_passive))"
            ),
            "{}",
            matrix.summaries()[0]
        );
        // A panic is a failure like any other, under its own name.
        matrix_with_panic.record(0, 1, 0, &RunOutcome::failed(PANIC, [PANIC]));
        assert_eq!(matrix_with_panic.control_failures(), vec!["failback"]);
        assert_eq!(matrix_with_panic.panics(), 1);
        assert!(matrix_with_panic
            .final_line(Duration::ZERO)
            .contains(" control_failures=1 panics=1 "));
    }

    #[test]
    fn runs_are_claimed_cell_by_cell() {
        let scenario = Scenario::parse(
            std::path::Path::new("x.toml"),
            "name = \"x\"\nduration_ms = 1000\n[[clusters]]\nbrokers = 1\n",
        )
        .expect("a minimal scenario");
        assert!(!is_mirroring(&scenario));
        let soak_scenario = SoakScenario {
            path: "x.toml".into(),
            scenario,
        };
        let config = VariantsConfig {
            designs: vec![MirrorDesign::Seed, MirrorDesign::NoPidReset],
            scenarios: vec![soak_scenario.clone(), soak_scenario],
            seeds: 3,
            seed_base: 0,
            jobs: 1,
            generated: false,
        };
        assert_eq!(config.total_runs(), 12);
        assert_eq!(config.item(0), (0, 0, 0));
        assert_eq!(config.item(2), (0, 0, 2));
        assert_eq!(config.item(3), (0, 1, 0));
        assert_eq!(config.item(6), (1, 0, 0));
        assert_eq!(config.item(11), (1, 1, 2));
    }

    /// A runner that never simulates: no-pid-reset fails odd seeds, and seed 4 panics under it.
    fn fake_runner(_: &Scenario, options: &RunOptions) -> RunReport {
        let fails = options.design == Some(MirrorDesign::NoPidReset) && options.seed % 2 == 1;
        assert!(
            !(options.design == Some(MirrorDesign::NoPidReset) && options.seed == 4),
            "a made-up panic"
        );
        RunReport {
            seed: options.seed,
            plan: crate::faults::FaultPlan::default(),
            verdict: if fails {
                Verdict::Safety
            } else {
                Verdict::Pass
            },
            violations: if fails {
                vec![crate::checks::Violation {
                    invariant: crate::checks::Invariant::NoStalePidAfterStopped,
                    cluster: None,
                    topic_partition: None,
                    detail: String::new(),
                    time_ms: 0,
                }]
            } else {
                Vec::new()
            },
            trace_hash: options.seed,
            simulated_ms: 1,
            net: crate::world::NetStats::default(),
            records: (0, 0, 0),
            marks: BTreeMap::new(),
            marks_first_ms: BTreeMap::new(),
            admin: Vec::new(),
        }
    }

    #[test]
    fn the_pool_fills_every_cell_whatever_the_job_count() {
        let scenario = Scenario::parse(
            std::path::Path::new("x.toml"),
            "name = \"x\"\nduration_ms = 1000\n[[clusters]]\nbrokers = 1\n",
        )
        .expect("a minimal scenario");
        let mut config = VariantsConfig {
            designs: vec![MirrorDesign::Seed, MirrorDesign::NoPidReset],
            scenarios: vec![SoakScenario {
                path: "x.toml".into(),
                scenario,
            }],
            seeds: 6,
            seed_base: 1,
            jobs: 1,
            generated: false,
        };
        let mut done = Vec::new();
        let (one_job, _) = run_variants(&config, fake_runner, &mut |matrix, d, s| {
            done.push((d, s, matrix.cell(d, s).runs));
        });
        done.sort_unstable();
        assert_eq!(done, vec![(0, 0, 6), (1, 0, 6)]);
        assert_eq!(one_job.cell(0, 0).text(), "pass");
        // Seeds 1..=6: 1, 3 and 5 fail, 4 panics: positions 0, 2, 3, 4, gaps 1, 2, 1, 1.
        let cell = one_job.cell(1, 0);
        assert_eq!(cell.text(), "no-stale-pid-after-stopped+ 4/6 (1)");
        assert_eq!(cell.first_invariants.get(PANIC), Some(&1));
        config.jobs = 3;
        let (three_jobs, _) = run_variants(&config, fake_runner, &mut |_, _, _| {});
        assert_eq!(three_jobs, one_job);
    }

    #[test]
    fn the_generated_column_counts_a_variant_only_where_the_seed_design_passed() {
        // The seed design fails seeds divisible by 3; no-pid-reset fails odd seeds. Each run
        // gets the scenario generated from its seed (its name says which).
        let runner = |scenario: &Scenario, options: &RunOptions| {
            assert_eq!(scenario.name, format!("generated-{}", options.seed));
            let control_fails = options.design == Some(MirrorDesign::Seed) && options.seed % 3 == 0;
            let mut report = fake_runner(
                scenario,
                &RunOptions {
                    seed: 1,
                    ..options.clone()
                },
            );
            report.seed = options.seed;
            if control_fails {
                report.verdict = Verdict::Safety;
                report.violations = vec![crate::checks::Violation {
                    invariant: crate::checks::Invariant::MirrorPrefix,
                    cluster: None,
                    topic_partition: None,
                    detail: String::new(),
                    time_ms: 0,
                }];
            } else if options.design == Some(MirrorDesign::Seed) || options.seed % 2 == 0 {
                report.verdict = Verdict::Pass;
                report.violations.clear();
            }
            report
        };
        let config = VariantsConfig {
            designs: vec![MirrorDesign::Seed, MirrorDesign::NoPidReset],
            scenarios: Vec::new(),
            seeds: 6,
            seed_base: 1,
            jobs: 2,
            generated: true,
        };
        assert_eq!(config.total_runs(), 12);
        let mut done = Vec::new();
        let (matrix, _) = run_variants(&config, runner, &mut |matrix, d, s| {
            done.push((d, s, matrix.cell(d, s).runs));
        });
        done.sort_unstable();
        // Seeds 1..=6: the seed design fails 3 and 6, so no-pid-reset counts 1, 2, 4, 5, of
        // which 1 and 5 fail (its failure on 3 is the seed design's too).
        assert_eq!(done, vec![(0, 0, 6), (1, 0, 4)]);
        assert_eq!(matrix.scenarios[0].name, GENERATED_COLUMN);
        assert_eq!(matrix.cell(0, 0).text(), "mirror-prefix 2/6 (3)");
        assert_eq!(
            matrix.cell(1, 0).failing,
            [0, 4].into_iter().collect::<BTreeSet<u64>>()
        );
        assert_eq!(matrix.control_failures(), vec![GENERATED_COLUMN]);
        let details = matrix.details();
        assert!(
            details[1].contains("generate --seed 1 --out generated-1.toml"),
            "{details:?}"
        );
    }
}
