//! The `mirrorsim` command line (design.md §6).
//!
//! Contract:
//! - `run SCENARIO [--seed N] [--design NAME]`: one simulated run; prints the SEED block first
//!   and `trace_hash=<16 hex>` last, one `admin …` line per admin timeline operation with its
//!   outcome, and on failure the violations and a one-line replay command.
//! - `replay SCENARIO --seed N [--level messages|timeline] [--node NAME]…`: the same run (same
//!   output, same `trace_hash`), with its trace on stdout between the SEED block and the report:
//!   one line per event, `<simulated time> <node#incarnation | world> <event>` (see
//!   [`mirrorsim_sim::commands::replay`]). `--level timeline` keeps state changes, faults, admin
//!   operations and the verdict; `messages` (the default) adds every delivered message with a
//!   summary of its fields. `--node` (repeatable) keeps only those nodes' lines and the `world`
//!   lines; a name no node of the run has is reported on stderr.
//! - `dump-log FILE [--json | --format text|json|kafka] [--print-data-log] [--deep-iteration]`
//!   (see [`dump_log`]): exit 0 once the file was read to its end, damaged or not (the damage
//!   is in the dump, summed up on stderr), 64 if it cannot be read, 74 if stdout cannot be
//!   written.
//! - `soak [--duration 10m] [--scenarios PATH…] [--jobs J] [--shard K/N] [--out FILE]
//!   [--seed-base N] [--seeds N]`: fresh seeds over the scenarios until the duration runs out
//!   (see [`mirrorsim_sim::commands::soak`] for the seed sequence and what is deterministic); a `SOAK`
//!   line first (seed base, shard, jobs, budget, scenarios), every failure as one JSON line on
//!   stdout (and in `--out FILE`), a progress bar on stderr when it is a terminal (a status
//!   line every 15 s otherwise), then the per-scenario and coverage report and, last,
//!   `soak seeds=N failures=F seeds_per_min=X sim_s_per_wall_s=Y …`. Exit code 0 no failure,
//!   1 any safety violation, else 3 any panic, else 2 liveness only, 64 bad input (a seed base
//!   the seed space cannot serve included), 74 if the `--out` file cannot be created or
//!   written (whatever the seeds did: the file asked for does not hold them).
//! - `shrink SCENARIO --seed N [--out FILE] [--broken SWITCH…] [--budget RUNS]` (see
//!   [`mirrorsim_sim::commands::shrink`]): progress lines `shrink: …` on stdout, one per kept candidate,
//!   then the sizes before and after, and the reproduce command. Writes the shrunk scenario
//!   (default `NAME-seedN-shrunk.toml` in the current directory) and runs it once to check it.
//!   Exit code 0 written and checked; 64 bad input, including a seed that passes ("nothing to
//!   shrink"); 70 the materialised or written scenario does not fail like the seed (a bug);
//!   74 the file cannot be written.
//! - `variants [--seeds N] [--designs NAME…] [--scenarios PATH…] [--jobs J] [--seed-base B]
//!   [--out FILE] [--markdown] [--generate [mix|only]]` (see [`mirrorsim_sim::commands::variants`];
//!   `--generate` adds a column of scenarios generated from the seeds): every design against every
//!   mirroring scenario (a directory, `scenarios/` by default, stands for its `*.toml` files
//!   whose admin timeline has a `create_mirror`; a file given by name is always taken), seeds
//!   `B..B+N` (default 0..20) per cell. A `VARIANTS` line first, a progress line per finished
//!   cell on stderr, then the table, one summary line per design, one detail line per caught
//!   cell with a replay command, the Markdown table with `--markdown` (always written to
//!   `--out FILE`), and last `variants designs=… scenarios=… seeds=… runs=… … wall_s=…`. Exit
//!   code 0 when the seed design (the control row) passed every run, 1 when it failed anywhere,
//!   64 bad input, 74 if the `--out` file cannot be created or written (which wins over 1).
//! - Run exit codes: 0 pass, 1 safety violation, 2 liveness violation (a set-up that never
//!   finishes included), 3 panic inside the simulation; every code is in
//!   [`mirrorsim_sim::exit`].
//! - Exit codes follow design.md §6: 0 success (for `dump-log`, the file read to its end,
//!   damaged or not, as kafka-dump-log; each problem named on stderr with its byte position);
//!   64 bad input, which covers a bad or missing flag and an unreadable file, always with a
//!   message on stderr naming the file. `--help` and `--version` exit 0. Failing to write the output exits 74 (`EX_IOERR`), except that a closed pipe (as
//!   with `| head`) ends the dump quietly with 0.

mod cli;

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{Args, Parser, Subcommand};

use mirrorsim_sim::commands::dump_log::{
    self, DumpError, DumpOptions, OutputFormat, RecordDecoder,
};

use cli::run::{dump_log_command, run_command};
use cli::shrink::shrink_command;
use cli::soak::{available_cores, parse_jobs, soak_command, soak_scenarios};
use cli::variants::{generate_command, variants_command};

use mirrorsim_sim::exit::{
    BAD_INPUT as EXIT_BAD_INPUT, INTERNAL as EXIT_SHRINK_BUG, OUTPUT_FAILED as EXIT_OUTPUT_FAILED,
    PANIC as EXIT_PANIC,
};

/// Deterministic simulation testbed for Kafka cluster mirroring (KIP-1279).
#[derive(Debug, Parser)]
#[command(name = "mirrorsim", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a scenario once with one seed.
    Run(RunArgs),
    /// Run a scenario with a seed and print its trace as a readable timeline.
    Replay(ReplayArgs),
    /// Decode a Kafka log segment (concatenated RecordBatch v2 batches), like kafka-dump-log.
    DumpLog(DumpLogArgs),
    /// Run fresh seeds over many scenarios for a time budget; failures as JSON lines.
    Soak(SoakArgs),
    /// Reduce a failing seed's faults and workload to a small scenario file that still fails.
    Shrink(ShrinkArgs),
    /// Run every design variant against the mirroring scenarios and tabulate which invariant
    /// catches each, and how soon.
    Variants(VariantsArgs),
    /// Write a complete, valid scenario drawn from a seed (topology, workloads, admin timeline,
    /// faults), for `run`, `replay`, `shrink` and `soak --scenarios`.
    Generate(GenerateArgs),
}

#[derive(Debug, Args)]
struct GenerateArgs {
    /// The seed the scenario is drawn from (a random one is chosen and printed on stderr when
    /// absent).
    #[arg(long)]
    seed: Option<u64>,
    /// Write the scenario to this file instead of stdout.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct VariantsArgs {
    /// Seeds per design and scenario.
    #[arg(long, default_value_t = 20)]
    seeds: u64,
    /// The first seed of every cell (fixed, so the table is reproducible).
    #[arg(long, default_value_t = 0)]
    seed_base: u64,
    /// Designs to run, space- or comma-separated (default: all, the seed design first as the
    /// control row).
    #[arg(long, num_args = 1..)]
    designs: Vec<String>,
    /// Scenario files or directories (a directory stands for its mirroring `*.toml` files;
    /// default: the mirroring scenarios in `scenarios/`).
    #[arg(long, num_args = 1..)]
    scenarios: Vec<PathBuf>,
    /// Worker threads, each running one seed at a time, 1 to 1024 (default: the available
    /// cores).
    #[arg(long, value_parser = parse_jobs)]
    jobs: Option<usize>,
    /// Write the Markdown table and the per-design summaries to this file.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also print the Markdown table on stdout.
    #[arg(long)]
    markdown: bool,
    /// Add a column of scenarios generated from the seeds (`mirrorsim generate`), where a
    /// variant's run counts only on the seeds the seed design passed: `mix` (the default when
    /// the flag has no value) after the scenario files, `only` instead of them.
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "mix")]
    generate: Option<GenerateArg>,
}

#[derive(Debug, Args)]
struct ShrinkArgs {
    /// The scenario file (TOML).
    scenario: PathBuf,
    /// The failing seed.
    #[arg(long)]
    seed: u64,
    /// Where to write the shrunk scenario (default: `NAME-seedN-shrunk.toml` in the current
    /// directory).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The KIP-1279 design variant (default: the scenario's); written into the shrunk file.
    #[arg(long)]
    design: Option<String>,
    /// Test-only broken broker switches for every run, as for `run`.
    #[arg(long = "broken")]
    broken: Vec<String>,
    /// At most this many candidate runs.
    #[arg(long, default_value_t = mirrorsim_sim::commands::shrink::DEFAULT_BUDGET)]
    budget: usize,
}

#[derive(Debug, Args)]
struct SoakArgs {
    /// Wall-clock budget for starting new seeds: `90s`, `10m`, `1h`, `1h30m` (default 10m, or
    /// none when only --seeds is given).
    #[arg(long, value_parser = mirrorsim_sim::commands::soak::parse_duration)]
    duration: Option<std::time::Duration>,
    /// Scenario files or directories of them (default: every `scenarios/*.toml`).
    #[arg(long, num_args = 1..)]
    scenarios: Vec<PathBuf>,
    /// Worker threads, each running one seed at a time, 1 to 1024 (default: the available
    /// cores).
    #[arg(long, value_parser = parse_jobs)]
    jobs: Option<usize>,
    /// Run only the seeds with `seed % N == K-1`, so N machines split the work.
    #[arg(long, default_value = "1/1", value_parser = mirrorsim_sim::commands::soak::Shard::parse)]
    shard: mirrorsim_sim::commands::soak::Shard,
    /// Also write each failure's JSON line to this file (created or truncated at the start).
    #[arg(long)]
    out: Option<PathBuf>,
    /// First seed of the sequence (default: random, printed on the `SOAK` line).
    #[arg(long)]
    seed_base: Option<u64>,
    /// Stop after this many seeds (with --duration, whichever comes first).
    #[arg(long)]
    seeds: Option<u64>,
    /// The KIP-1279 design variant for every run (default: each scenario's own).
    #[arg(long)]
    design: Option<String>,
    /// Test-only broken broker switches for every run (e.g. `ack-before-replication`).
    #[arg(long = "broken")]
    broken: Vec<String>,
    /// Exit 1 when an invariant's precondition was reached by no seed (its check tested
    /// nothing: `VACUOUS invariant=NAME`), even if every seed passed.
    #[arg(long)]
    require_preconditions: bool,
    /// Run scenarios generated from the seeds (`mirrorsim generate`): `mix` (the default when
    /// the flag has no value) alternates them with the scenario files, `only` runs nothing
    /// else.
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "mix")]
    generate: Option<GenerateArg>,
    /// Where a failing generated scenario is written as `generated-SEED.toml` (default: the
    /// `--out` file's directory, else `target/soak-generated`).
    #[arg(long)]
    generated_dir: Option<PathBuf>,
    /// Run one seed in K (default 10) a second time, later and usually in another worker
    /// thread, and report a different trace hash as a `nondeterminism` failure.
    #[arg(long, num_args = 0..=1, default_missing_value = "10")]
    check_determinism: Option<u64>,
}

/// `--generate` of `soak`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum GenerateArg {
    Mix,
    Only,
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The scenario file (TOML).
    scenario: PathBuf,
    /// The seed; a random one is chosen and printed when absent.
    #[arg(long)]
    seed: Option<u64>,
    /// The KIP-1279 design variant (`seed`, `abort-markers`, `pid-rewrite`, …; default: the
    /// scenario's `design`, else `seed`).
    #[arg(long)]
    design: Option<String>,
    /// Test-only broken broker switches (e.g. `ack-before-replication`).
    #[arg(long = "broken")]
    broken: Vec<String>,
    /// After the run, write every broker's log directories under DIR
    /// (`DIR/<cluster>/broker-<id>/<topic>-<partition>/`), for `dump-log`.
    #[arg(long, value_name = "DIR")]
    logs: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct ReplayArgs {
    #[command(flatten)]
    run: RunArgs,
    /// How much to show: `timeline` (state changes, faults, admin operations, verdict) or
    /// `messages` (the timeline plus every delivered message).
    #[arg(long, value_enum, default_value = "messages")]
    level: LevelArg,
    /// Show only this node's lines (and the lines about the whole world); repeatable.
    #[arg(long = "node", value_name = "NAME")]
    nodes: Vec<String>,
}

/// `--level` of `replay`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum LevelArg {
    Timeline,
    Messages,
}

#[derive(Debug, Args)]
struct DumpLogArgs {
    /// The files to decode, in order (kafka-dump-log's `--files`): segments and side files.
    #[arg(required = true, num_args = 1..)]
    files: Vec<PathBuf>,
    /// Print one JSON object per batch per line instead of text (`--format json`).
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// The layout: `text` (the default), `json`, or `kafka` (kafka-dump-log's own lines).
    #[arg(long, value_enum)]
    format: Option<DumpFormatArg>,
    /// kafka-dump-log's option: with `--format kafka`, print every record with its key and
    /// payload (the other layouts always print records).
    #[arg(long)]
    print_data_log: bool,
    /// kafka-dump-log's option: with `--format kafka`, print every record without payload.
    #[arg(long)]
    deep_iteration: bool,
    /// kafka-dump-log's option: decode records as `__consumer_offsets` holds them (implies
    /// `--print-data-log`).
    #[arg(long, group = "topic_decoder")]
    offsets_decoder: bool,
    /// kafka-dump-log's option: decode records as `__transaction_state` holds them (implies
    /// `--print-data-log`).
    #[arg(long, group = "topic_decoder")]
    transaction_log_decoder: bool,
    /// Decode records as this model's mirror coordinator writes `__mirror_state` (implies
    /// `--print-data-log`).
    #[arg(long, group = "topic_decoder")]
    mirror_state_decoder: bool,
}

/// `--format` of `dump-log`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum DumpFormatArg {
    Text,
    Json,
    Kafka,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage_exit(&error),
    };
    match cli.command {
        Command::DumpLog(args) => dump_log_command(&args),
        Command::Run(args) => run_command(&args, None),
        Command::Replay(args) => {
            let trace = mirrorsim_sim::commands::replay::TraceOptions {
                level: match args.level {
                    LevelArg::Timeline => mirrorsim_sim::commands::replay::TraceLevel::Timeline,
                    LevelArg::Messages => mirrorsim_sim::commands::replay::TraceLevel::Messages,
                },
                nodes: args.nodes,
            };
            run_command(&args.run, Some(&trace))
        }
        Command::Soak(args) => soak_command(&args),
        Command::Shrink(args) => shrink_command(&args),
        Command::Variants(args) => variants_command(&args),
        Command::Generate(args) => generate_command(&args),
    }
}

/// Reads a `--design` flag (`None` when absent).
fn parse_design(name: Option<&str>) -> Result<Option<mirrorsim::mirror::MirrorDesign>, String> {
    use mirrorsim::mirror::MirrorDesign;
    name.map(|name| {
        MirrorDesign::from_name(name).ok_or_else(|| {
            format!(
                "unknown --design `{name}` (known: {})",
                MirrorDesign::names()
            )
        })
    })
    .transpose()
}

/// The `--broken` switches of `run`, `replay`, `soak` and `shrink`, by name.
fn broken_switches(names: &[String]) -> Result<Vec<mirrorsim::switches::BrokenSwitch>, String> {
    names
        .iter()
        .map(|name| {
            mirrorsim::switches::BrokenSwitch::from_name(name)
                .ok_or_else(|| format!("unknown --broken switch `{name}`"))
        })
        .collect()
}

/// A seed from the operating system, for runs that did not name one (outside the simulation).
fn random_seed() -> u64 {
    use rand::RngExt;
    rand::rng().random()
}

/// Prints clap's message (help and version go to stdout, errors to stderr) and picks the exit
/// code: clap's own code 2 for usage errors would collide with "liveness violation".
fn usage_exit(error: &clap::Error) -> ExitCode {
    // If even the usage message cannot be printed there is nothing better to report.
    let _ = error.print();
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => ExitCode::SUCCESS,
        _ => ExitCode::from(EXIT_BAD_INPUT),
    }
}

/// `println!` through [`say`]: a closed stdout (`mirrorsim run … | head`) does not panic.
macro_rules! out {
    ($($arg:tt)*) => {
        say(&format!($($arg)*))
    };
}
use out;

/// Writes `text` and a newline to stdout and flushes; a closed stdout (`| head`) is ignored so
/// the soak still finishes, writes `--out` and exits with its verdict.
fn say(text: &str) {
    let mut stdout = io::stdout().lock();
    let _ = writeln!(stdout, "{text}").and_then(|()| stdout.flush());
}
