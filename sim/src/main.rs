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
//! - `dump-log FILE [--json]` (see [`dump_log`]).
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
//! - Exit codes follow design.md §6: 0 success; 64 bad input, which covers a bad or missing flag,
//!   an unreadable file and a corrupt or truncated segment, always with a message on stderr
//!   naming the file (and, for a corrupt segment, the byte position). `--help` and `--version`
//!   exit 0. Failing to write the output exits 74 (`EX_IOERR`), except that a closed pipe (as
//!   with `| head`) ends the dump quietly with 0.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{Args, Parser, Subcommand};

use mirrorsim_sim::commands::dump_log::{self, DumpError, OutputFormat};

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
    /// The segment file to decode.
    file: PathBuf,
    /// Print one JSON object per batch per line instead of text.
    #[arg(long)]
    json: bool,
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

/// `run`, or `replay` when `trace` is given.
fn run_command(
    args: &RunArgs,
    trace: Option<&mirrorsim_sim::commands::replay::TraceOptions>,
) -> ExitCode {
    use mirrorsim_sim::commands::runner::{run, RunOptions};
    use mirrorsim_sim::scenario::Scenario;

    let design = match parse_design(args.design.as_deref()) {
        Ok(design) => design,
        Err(message) => {
            eprintln!("mirrorsim: {message}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let scenario = match Scenario::load(&args.scenario) {
        Ok(scenario) => scenario,
        Err(error) => {
            eprintln!("mirrorsim: {error}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let broken = match broken_switches(&args.broken) {
        Ok(broken) => broken,
        Err(message) => {
            eprintln!("mirrorsim: {message}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let seed = args.seed.unwrap_or_else(random_seed);
    let options = RunOptions {
        seed,
        design,
        broken,
        trace: false,
    };
    let plan = mirrorsim_sim::faults::plan(&scenario, seed);
    out!(
        "SEED seed={seed} scenario={} design={}",
        scenario.name,
        design.unwrap_or_else(|| scenario.mirror_design())
    );
    if let Some(swarm) = &plan.swarm {
        out!("  swarm: {swarm}");
    }
    for fault in &plan.faults {
        out!("  fault: {fault}");
    }
    let replay_line = format!(
        "cargo run --release --bin mirrorsim -- replay {} --seed {seed}{}{}",
        args.scenario.display(),
        design.map_or(String::new(), |design| format!(" --design {design}")),
        args.broken
            .iter()
            .map(|b| format!(" --broken {b}"))
            .collect::<String>()
    );
    let outcome = std::panic::catch_unwind(|| match trace {
        None => (run(&scenario, &options), false),
        Some(trace) => {
            // Buffered: a full trace has a line per message, and the buffer is flushed before
            // the report below.
            let out = Box::new(BufWriter::new(io::stdout()));
            let replay = mirrorsim_sim::commands::replay::replay(&scenario, &options, trace, out);
            for name in &replay.unmatched_nodes {
                eprintln!("mirrorsim replay: --node {name}: no node of this run has that name");
            }
            (replay.report, replay.output_failed)
        }
    });
    let report = match outcome {
        // Whoever read the trace stopped reading (`replay … | head`): nothing more to print.
        Ok((report, true)) => return ExitCode::from(report.verdict.exit_code()),
        Ok((report, false)) => report,
        Err(_) => {
            out!("PANIC inside the simulation seed={seed}");
            out!("replay: {replay_line}");
            return ExitCode::from(EXIT_PANIC);
        }
    };
    let (sent, acked, failed) = report.records;
    out!(
        "records sent={sent} acked={acked} failed={failed} messages={} dropped={} duplicated={} held_back={} simulated={:.3}s",
        report.net.sent,
        report.net.dropped,
        report.net.duplicated,
        report.net.held_back,
        report.simulated_ms as f64 / 1000.0
    );
    let marks: Vec<String> = report
        .marks
        .iter()
        .map(|(name, count)| format!("{name}={count}"))
        .collect();
    out!("coverage {}", marks.join(" "));
    let missing: Vec<&String> = scenario
        .coverage
        .iter()
        .filter(|mark| !report.marks.contains_key(*mark))
        .collect();
    if !missing.is_empty() {
        out!("VACUOUS coverage marks not reached: {missing:?}");
    }
    for record in &report.admin {
        out!("admin {record}");
    }
    for violation in &report.violations {
        out!("{}", violation.report_line(seed));
    }
    if report.verdict != mirrorsim_sim::commands::runner::Verdict::Pass {
        out!("replay: {replay_line}");
    }
    out!("trace_hash={:016x}", report.trace_hash);
    ExitCode::from(report.verdict.exit_code())
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

fn dump_log_command(args: &DumpLogArgs) -> ExitCode {
    let format = if args.json {
        OutputFormat::Json
    } else {
        OutputFormat::Text
    };
    let mut out = BufWriter::new(io::stdout().lock());
    let dumped = dump_log::dump_file(&args.file, format, &mut out);
    // Flush what was decoded before any error message, so stdout holds every good batch.
    let flushed = out.flush().map_err(DumpError::from);
    match (dumped, flushed) {
        (Ok(_), Ok(())) => ExitCode::SUCCESS,
        (Err(error), _) | (Ok(_), Err(error)) => report(&args.file, &error),
    }
}

/// Prints `error` on stderr, naming the file, and picks its exit code.
fn report(file: &Path, error: &DumpError) -> ExitCode {
    match error {
        DumpError::Output(io_error) if io_error.kind() == io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        DumpError::Output(_) => {
            eprintln!("mirrorsim dump-log: {error}");
            ExitCode::from(EXIT_OUTPUT_FAILED)
        }
        DumpError::Unreadable { .. } | DumpError::ReadFailed { .. } => {
            eprintln!("mirrorsim dump-log: {error}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
        DumpError::Corrupt { .. } => {
            eprintln!("mirrorsim dump-log: {}: {error}", file.display());
            ExitCode::from(EXIT_BAD_INPUT)
        }
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

/// A bad-input error of `soak`: printed, exit 64.
fn soak_bad_input(message: &str) -> ExitCode {
    eprintln!("mirrorsim soak: {message}");
    ExitCode::from(EXIT_BAD_INPUT)
}

fn soak_command(args: &SoakArgs) -> ExitCode {
    use mirrorsim_sim::commands::soak::{self, SoakConfig, StopAfter};

    let duration = match (args.duration, args.seeds) {
        (Some(duration), _) => Some(duration),
        (None, Some(_)) => None,
        (None, None) => Some(std::time::Duration::from_secs(600)),
    };
    if args.seeds == Some(0) {
        return soak_bad_input("--seeds must be at least 1");
    }
    let shard = args.shard;
    let jobs = args.jobs.unwrap_or_else(available_cores);
    let design = match parse_design(args.design.as_deref()) {
        Ok(design) => design,
        Err(message) => return soak_bad_input(&message),
    };
    let broken = match broken_switches(&args.broken) {
        Ok(broken) => broken,
        Err(message) => return soak_bad_input(&message),
    };
    let generate = match args.generate {
        None => soak::GenerateMode::Off,
        Some(GenerateArg::Mix) => soak::GenerateMode::Mix,
        Some(GenerateArg::Only) => soak::GenerateMode::Only,
    };
    if args.check_determinism == Some(0) {
        return soak_bad_input("--check-determinism must be at least 1");
    }
    let scenarios = if generate == soak::GenerateMode::Only && args.scenarios.is_empty() {
        Vec::new()
    } else {
        match soak_scenarios(&args.scenarios) {
            Ok(scenarios) => scenarios,
            Err(message) => return soak_bad_input(&message),
        }
    };
    let generated_dir = args.generated_dir.clone().unwrap_or_else(|| {
        args.out
            .as_ref()
            .and_then(|out| out.parent())
            .filter(|parent| !parent.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("target/soak-generated"), Path::to_path_buf)
    });
    // JSON consumers that read numbers as doubles keep a base below 2^53 exact.
    let seed_base = args.seed_base.unwrap_or_else(|| random_seed() >> 11);
    let config = SoakConfig {
        scenarios,
        jobs,
        shard,
        seed_base,
        stop: StopAfter {
            duration,
            seeds: args.seeds,
        },
        design,
        broken,
        generate,
        generated_dir,
        check_determinism: args.check_determinism,
    };
    if let Err(message) = config.check_seed_space() {
        return soak_bad_input(&message);
    }
    // Created after every flag is checked and before any seed runs; a path that cannot be
    // created is an output error (74), as a failed write is.
    let mut out = match &args.out {
        None => None,
        Some(path) => match std::fs::File::create(path) {
            Ok(file) => Some((path.clone(), BufWriter::new(file))),
            Err(error) => {
                eprintln!(
                    "mirrorsim soak: --out: cannot create {}: {error}",
                    path.display()
                );
                return ExitCode::from(EXIT_OUTPUT_FAILED);
            }
        },
    };
    say(&format!(
        "SOAK seed_base={seed_base} shard={shard} jobs={jobs} duration={} seeds={} scenarios={} ({}) generate={} check_determinism={}",
        duration.map_or("-".to_owned(), soak::format_duration),
        args.seeds.map_or("-".to_owned(), |n| n.to_string()),
        config.scenarios.len(),
        config
            .scenarios
            .iter()
            .map(|s| s.scenario.name.as_str())
            .collect::<Vec<_>>()
            .join(","),
        match config.generate {
            soak::GenerateMode::Off => "off",
            soak::GenerateMode::Mix => "mix",
            soak::GenerateMode::Only => "only",
        },
        config
            .check_determinism
            .map_or("off".to_owned(), |every| format!("1/{every}"))
    ));
    let mut observer = SoakProgress {
        config: &config,
        terminal: std::io::IsTerminal::is_terminal(&io::stderr()),
        stop: config.stop,
        out: out.as_mut().map(|(_, writer)| writer),
        out_failed: None,
        drawn: false,
        elapsed: std::time::Duration::ZERO,
    };
    let (summary, wall) = soak::soak(&config, mirrorsim_sim::commands::runner::run, &mut observer);
    observer.clear();
    let out_failed = observer.out_failed.take();
    say(summary.report(&config).trim_end());
    if summary.seed_space_exhausted {
        say("soak: stopped early: this shard's seeds reached the end of the 64-bit seed space");
    }
    say(&summary.final_line(&config, wall));
    let mut code = summary.exit_code();
    if args.require_preconditions && code == mirrorsim_sim::exit::PASS {
        let vacuous = summary.vacuous_invariants();
        if !vacuous.is_empty() {
            eprintln!(
                "mirrorsim soak: --require-preconditions: no seed exercised {}",
                vacuous.join(", ")
            );
            code = mirrorsim_sim::exit::SAFETY;
        }
    }
    let flushed = out.as_mut().map(|(_, writer)| writer.flush());
    if let Some(error) = out_failed.or(flushed.and_then(Result::err)) {
        let path = out.as_ref().map(|(path, _)| path.display().to_string());
        eprintln!(
            "mirrorsim soak: cannot write {}: {error} (the failure lines above are on stdout; \
             exit code {EXIT_OUTPUT_FAILED} even when seeds failed, since the file asked for \
             does not hold them)",
            path.unwrap_or_default()
        );
        code = EXIT_OUTPUT_FAILED;
    }
    ExitCode::from(code)
}

/// A `--jobs` value: 1 to 1024 worker threads.
fn parse_jobs(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(jobs) if (1..=1024).contains(&jobs) => Ok(jobs),
        _ => Err(format!(
            "bad value `{text}` (expected a whole number from 1 to 1024)"
        )),
    }
}

/// Worker threads when `--jobs` is not given: the available cores.
fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The scenarios of a soak: the files given (a directory stands for its `*.toml` files, in
/// name order), or every `scenarios/*.toml` under the current directory.
fn soak_scenarios(
    paths: &[PathBuf],
) -> Result<Vec<mirrorsim_sim::commands::soak::SoakScenario>, String> {
    use mirrorsim_sim::commands::soak::SoakScenario;
    use mirrorsim_sim::scenario::Scenario;

    let defaulted = paths.is_empty();
    let given = if defaulted {
        vec![PathBuf::from("scenarios")]
    } else {
        paths.to_vec()
    };
    let mut files = Vec::new();
    for path in given {
        if path.is_dir() {
            let entries = std::fs::read_dir(&path)
                .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
            let mut found: Vec<PathBuf> = entries
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .filter(|p| p.extension().is_some_and(|ext| ext == "toml"))
                .collect();
            found.sort();
            if found.is_empty() {
                return Err(format!("{} holds no *.toml scenario", path.display()));
            }
            files.extend(found);
        } else if defaulted {
            return Err(
                "no scenarios/ directory here: run from the repository root or pass --scenarios"
                    .to_owned(),
            );
        } else {
            files.push(path);
        }
    }
    files
        .into_iter()
        .map(|path| match Scenario::load(&path) {
            Ok(scenario) => Ok(SoakScenario { path, scenario }),
            Err(error) => Err(error.to_string()),
        })
        .collect()
}

/// The soak's progress display and failure writer.
struct SoakProgress<'a> {
    /// The soak (to write a failing generated scenario where its failure line says).
    config: &'a mirrorsim_sim::commands::soak::SoakConfig,
    /// stderr is a terminal: redraw a bar in place; otherwise print a status line now and then.
    terminal: bool,
    stop: mirrorsim_sim::commands::soak::StopAfter,
    out: Option<&'a mut BufWriter<std::fs::File>>,
    /// The first error writing `out`.
    out_failed: Option<io::Error>,
    /// A bar is on the terminal's last line.
    drawn: bool,
    elapsed: std::time::Duration,
}

/// How often a status line is printed when stderr is not a terminal.
const STATUS_EVERY: std::time::Duration = std::time::Duration::from_secs(15);

impl SoakProgress<'_> {
    /// Removes the bar, if one is drawn.
    fn clear(&mut self) {
        if self.drawn {
            eprint!("\r\x1b[2K");
            self.drawn = false;
        }
    }

    fn status(&self, summary: &mirrorsim_sim::commands::soak::Summary) -> String {
        let minutes = self.elapsed.as_secs_f64().max(1e-9) / 60.0;
        format!(
            "seeds={} failures={} seeds/min={:.0} sim-s/wall-s={:.0}",
            summary.seeds,
            summary.failures(),
            summary.seeds as f64 / minutes,
            summary.simulated_ms as f64 / 1000.0 / (minutes * 60.0)
        )
    }

    /// Done so far, from 0 to 1, by time or by seeds, whichever is further.
    fn fraction(&self, summary: &mirrorsim_sim::commands::soak::Summary) -> f64 {
        let by_time = self.stop.duration.map_or(0.0, |d| {
            self.elapsed.as_secs_f64() / d.as_secs_f64().max(1e-9)
        });
        let by_seeds = self
            .stop
            .seeds
            .map_or(0.0, |n| summary.seeds as f64 / n.max(1) as f64);
        by_time.max(by_seeds).clamp(0.0, 1.0)
    }

    fn draw(&mut self, summary: &mirrorsim_sim::commands::soak::Summary) {
        const WIDTH: usize = 30;
        let done = (self.fraction(summary) * WIDTH as f64) as usize;
        let budget = self.stop.duration.map_or(String::new(), |d| {
            format!("/{}", mirrorsim_sim::commands::soak::format_duration(d))
        });
        eprint!(
            "\r\x1b[2K[{}{}] {}{budget} {}",
            "#".repeat(done),
            "-".repeat(WIDTH - done),
            mirrorsim_sim::commands::soak::format_duration(self.elapsed),
            self.status(summary)
        );
        self.drawn = true;
    }
}

impl mirrorsim_sim::commands::soak::Observer for SoakProgress<'_> {
    fn seed_done(
        &mut self,
        outcome: &mirrorsim_sim::commands::soak::SeedOutcome,
        failure: Option<&mirrorsim_sim::commands::soak::Failure>,
        summary: &mirrorsim_sim::commands::soak::Summary,
    ) {
        let Some(failure) = failure else {
            return;
        };
        self.clear();
        if outcome.scenario == mirrorsim_sim::commands::soak::ScenarioRef::Generated {
            if let Err(error) =
                mirrorsim_sim::commands::soak::write_generated(self.config, outcome.seed)
            {
                eprintln!(
                    "mirrorsim soak: cannot write the generated scenario {}: {error}",
                    failure.path
                );
                self.out_failed.get_or_insert(error);
            }
        }
        let line = failure.line();
        say(&line);
        if let Some(out) = self.out.as_mut() {
            let written = writeln!(out, "{line}").and_then(|()| out.flush());
            if let Err(error) = written {
                self.out_failed.get_or_insert(error);
            }
        }
        if self.terminal {
            self.draw(summary);
        }
    }

    fn tick(
        &mut self,
        summary: &mirrorsim_sim::commands::soak::Summary,
        elapsed: std::time::Duration,
    ) {
        let previous = self.elapsed;
        self.elapsed = elapsed;
        if self.terminal {
            self.draw(summary);
        } else if elapsed.as_secs() / STATUS_EVERY.as_secs()
            > previous.as_secs() / STATUS_EVERY.as_secs()
        {
            eprintln!(
                "soak progress elapsed={} {}",
                mirrorsim_sim::commands::soak::format_duration(elapsed),
                self.status(summary)
            );
        }
    }
}

/// A bad-input error of `shrink`: printed, exit 64.
fn shrink_bad_input(message: &str) -> ExitCode {
    eprintln!("mirrorsim shrink: {message}");
    ExitCode::from(EXIT_BAD_INPUT)
}

fn shrink_command(args: &ShrinkArgs) -> ExitCode {
    use mirrorsim_sim::commands::shrink::{self, ShrinkError, ShrinkOptions};
    use mirrorsim_sim::scenario::Scenario;

    let mut scenario = match Scenario::load(&args.scenario) {
        Ok(scenario) => scenario,
        Err(error) => return shrink_bad_input(&error.to_string()),
    };
    match parse_design(args.design.as_deref()) {
        Ok(Some(design)) => {
            scenario.design = Some(toml::Spanned::new(0..0, design.name().to_owned()));
        }
        Ok(None) => {}
        Err(message) => return shrink_bad_input(&message),
    }
    let options = ShrinkOptions {
        seed: args.seed,
        broken: match broken_switches(&args.broken) {
            Ok(broken) => broken,
            Err(message) => return shrink_bad_input(&message),
        },
        budget: args.budget,
    };
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from(format!("{}-seed{}-shrunk.toml", scenario.name, args.seed))
    });
    say(&format!(
        "shrink: scenario={} seed={} budget={} out={}",
        args.scenario.display(),
        args.seed,
        args.budget,
        out.display()
    ));
    let started = std::time::Instant::now();
    let shrunk = match shrink::shrink_seed(
        &scenario,
        &options,
        mirrorsim_sim::commands::runner::run,
        &mut |line| say(line),
    ) {
        Ok(shrunk) => shrunk,
        Err(ShrinkError::Passes) => {
            return shrink_bad_input(&format!(
                "nothing to shrink: seed {} passes {}",
                args.seed,
                args.scenario.display()
            ))
        }
        Err(error) => {
            eprintln!("mirrorsim shrink: {error}");
            return ExitCode::from(EXIT_SHRINK_BUG);
        }
    };
    let text = match shrink::render(&shrunk, &args.scenario, &out, &options) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("mirrorsim shrink: cannot write the scenario as TOML: {error}");
            return ExitCode::from(EXIT_SHRINK_BUG);
        }
    };
    if let Err(error) = std::fs::write(&out, text) {
        eprintln!("mirrorsim shrink: cannot write {}: {error}", out.display());
        return ExitCode::from(EXIT_OUTPUT_FAILED);
    }
    say(&format!(
        "shrink: done runs={} kept={} wall={:.1}s{}",
        shrunk.runs,
        shrunk.steps,
        started.elapsed().as_secs_f64(),
        if shrunk.budget_exhausted {
            " (budget exhausted: a larger --budget may shrink further)"
        } else {
            ""
        }
    ));
    say(&format!("shrink: before {}", shrunk.before));
    say(&format!("shrink: after  {}", shrunk.after));
    // The file as written, loaded as `run` loads it, must fail the same way.
    let verified = Scenario::load(&out).map(|written| {
        let run_options = mirrorsim_sim::commands::runner::RunOptions {
            broken: options.broken.clone(),
            ..mirrorsim_sim::commands::runner::RunOptions::new(args.seed)
        };
        let result = mirrorsim_sim::commands::soak::run_isolated(
            &mirrorsim_sim::commands::runner::run,
            &written,
            &run_options,
        );
        shrink::target_of(&result, args.seed)
    });
    match verified {
        Ok(Some(target)) if target.invariant == shrunk.target.invariant => {
            say(&format!(
                "shrink: wrote {} (checked: it fails {} with seed {})",
                out.display(),
                target.invariant,
                args.seed
            ));
            say(&format!(
                "shrink: reproduce: {}",
                shrink::reproduce_command(&out, args.seed, &options.broken)
            ));
            ExitCode::SUCCESS
        }
        Ok(other) => {
            eprintln!(
                "mirrorsim shrink: {} was written but {} with seed {}, not {}: a bug in `shrink`",
                out.display(),
                other.map_or("passes".to_owned(), |t| format!("fails {}", t.invariant)),
                args.seed,
                shrunk.target.invariant
            );
            ExitCode::from(EXIT_SHRINK_BUG)
        }
        Err(error) => {
            eprintln!("mirrorsim shrink: the written file does not load: {error}");
            ExitCode::from(EXIT_SHRINK_BUG)
        }
    }
}

/// A bad-input error of `variants`: printed, exit 64.
fn variants_bad_input(message: &str) -> ExitCode {
    eprintln!("mirrorsim variants: {message}");
    ExitCode::from(EXIT_BAD_INPUT)
}

/// The designs of `--designs` (each value may hold several, comma-separated), in
/// [`mirrorsim::mirror::MirrorDesign::ALL`]'s order so the control row comes first; every
/// design when none is given.
fn variants_designs(names: &[String]) -> Result<Vec<mirrorsim::mirror::MirrorDesign>, String> {
    use mirrorsim::mirror::MirrorDesign;

    if names.is_empty() {
        return Ok(MirrorDesign::ALL.to_vec());
    }
    let mut designs = std::collections::BTreeSet::new();
    for name in names.iter().flat_map(|value| value.split(',')) {
        let name = name.trim();
        if name.is_empty() {
            continue;
        }
        let design = MirrorDesign::from_name(name).ok_or_else(|| {
            format!(
                "--designs: unknown design `{name}` (known: {})",
                MirrorDesign::names()
            )
        })?;
        designs.insert(design);
    }
    if designs.is_empty() {
        return Err("--designs: no design named".to_owned());
    }
    Ok(designs.into_iter().collect())
}

/// The columns of `variants`: each file given, and for each directory (default `scenarios/`)
/// its `*.toml` files that mirror ([`mirrorsim_sim::commands::variants::is_mirroring`]), since the
/// designs differ only in the mirroring code.
fn variants_scenarios(
    paths: &[PathBuf],
) -> Result<Vec<mirrorsim_sim::commands::soak::SoakScenario>, String> {
    use mirrorsim_sim::commands::variants::is_mirroring;

    let given = if paths.is_empty() {
        vec![PathBuf::from("scenarios")]
    } else {
        paths.to_vec()
    };
    let mut scenarios = Vec::new();
    for path in given {
        let directory = path.is_dir();
        let loaded = soak_scenarios(std::slice::from_ref(&path))?;
        if !directory {
            scenarios.extend(loaded);
            continue;
        }
        let mirroring: Vec<_> = loaded
            .into_iter()
            .filter(|s| is_mirroring(&s.scenario))
            .collect();
        if mirroring.is_empty() {
            return Err(format!(
                "{} holds no mirroring scenario (one whose admin timeline has a create_mirror)",
                path.display()
            ));
        }
        scenarios.extend(mirroring);
    }
    Ok(scenarios)
}

fn variants_command(args: &VariantsArgs) -> ExitCode {
    use mirrorsim_sim::commands::variants::{self, VariantsConfig};

    if args.seeds == 0 {
        return variants_bad_input("--seeds must be at least 1");
    }
    if args.seed_base.checked_add(args.seeds - 1).is_none() {
        return variants_bad_input("--seed-base + --seeds runs past the largest seed (2^64 - 1)");
    }
    let jobs = args.jobs.unwrap_or_else(available_cores);
    let designs = match variants_designs(&args.designs) {
        Ok(designs) => designs,
        Err(message) => return variants_bad_input(&message),
    };
    let only_generated = matches!(args.generate, Some(GenerateArg::Only));
    let scenarios = if only_generated && args.scenarios.is_empty() {
        Vec::new()
    } else {
        match variants_scenarios(&args.scenarios) {
            Ok(scenarios) => scenarios,
            Err(message) => return variants_bad_input(&message),
        }
    };
    // Created now so a bad path is refused before the runs, not after them; like a failed
    // write, it is an output error (74).
    let out = match &args.out {
        None => None,
        Some(path) => match std::fs::File::create(path) {
            Ok(file) => Some((path, file)),
            Err(error) => {
                eprintln!(
                    "mirrorsim variants: --out: cannot create {}: {error}",
                    path.display()
                );
                return ExitCode::from(EXIT_OUTPUT_FAILED);
            }
        },
    };
    let config = VariantsConfig {
        designs,
        scenarios,
        seeds: args.seeds,
        seed_base: args.seed_base,
        jobs,
        generated: args.generate.is_some(),
    };
    let list = |names: Vec<&str>| names.join(",");
    say(&format!(
        "VARIANTS designs={} ({}) scenarios={} ({}) seeds={} seed_base={} jobs={jobs} runs={}",
        config.designs.len(),
        list(config.designs.iter().map(|d| d.name()).collect()),
        config.columns(),
        list(
            config
                .scenarios
                .iter()
                .map(|s| s.scenario.name.as_str())
                .chain(config.generated.then_some(variants::GENERATED_COLUMN))
                .collect()
        ),
        config.seeds,
        config.seed_base,
        config.total_runs()
    ));
    let cells = config.designs.len() * config.columns();
    let started = std::time::Instant::now();
    let mut finished = 0;
    let (matrix, wall) = variants::run_variants(
        &config,
        mirrorsim_sim::commands::runner::run,
        &mut |matrix, design, scenario| {
            finished += 1;
            let control = matrix.designs[design] == mirrorsim::mirror::MirrorDesign::Seed;
            let cell = matrix.cell(design, scenario);
            eprintln!(
                "variants [{finished}/{cells}] {} × {}: {}{} ({:.1}s)",
                matrix.designs[design],
                matrix.scenarios[scenario].name,
                cell.text(),
                if control && cell.caught() {
                    "  <- CONTROL FAILED"
                } else {
                    ""
                },
                started.elapsed().as_secs_f64()
            );
        },
    );
    say("");
    say(matrix.table().trim_end());
    say("");
    for line in matrix.summaries() {
        say(&line);
    }
    let details = matrix.details();
    if !details.is_empty() {
        say("");
        say("details (one line per caught cell):");
        for line in details {
            say(&format!("  {line}"));
        }
    }
    let markdown = matrix.markdown();
    if args.markdown {
        say("");
        say(markdown.trim_end());
    }
    let control_failures = matrix.control_failures();
    if !control_failures.is_empty() {
        let message = format!(
            "THE SEED DESIGN FAILED in {}: the control row must pass, so this is a bug in the model or a checker (replay commands above)",
            control_failures.join(", ")
        );
        say("");
        say(&format!("CONTROL FAILED: {message}"));
        eprintln!("mirrorsim variants: {message}");
    }
    say(&matrix.final_line(wall));
    let mut code = matrix.exit_code();
    if let Some((path, mut file)) = out {
        if let Err(error) = file
            .write_all(markdown.as_bytes())
            .and_then(|()| file.flush())
        {
            eprintln!(
                "mirrorsim variants: cannot write {}: {error}",
                path.display()
            );
            code = EXIT_OUTPUT_FAILED;
        }
    }
    ExitCode::from(code)
}

/// `generate`: the scenario of a seed, on stdout or in `--out`.
fn generate_command(args: &GenerateArgs) -> ExitCode {
    let seed = args.seed.unwrap_or_else(|| {
        let seed = random_seed() >> 11;
        eprintln!("mirrorsim generate: seed {seed}");
        seed
    });
    let text = mirrorsim_sim::scenario::generate::generated_toml(seed);
    if let Err(error) = mirrorsim_sim::scenario::generate::check_loads(seed, &text) {
        eprintln!("mirrorsim generate: the scenario of seed {seed} does not load (a bug): {error}");
        return ExitCode::from(EXIT_SHRINK_BUG);
    }
    match &args.out {
        None => {
            say(text.trim_end());
            ExitCode::SUCCESS
        }
        Some(path) => match std::fs::write(path, &text) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!(
                    "mirrorsim generate: cannot write {}: {error}",
                    path.display()
                );
                ExitCode::from(EXIT_OUTPUT_FAILED)
            }
        },
    }
}
