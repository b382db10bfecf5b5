//! The `mirrorsim` command line (design.md §6).
//!
//! Contract:
//! - `run SCENARIO [--seed N] [--design NAME]`: one simulated run; prints the SEED block first
//!   and `trace_hash=<16 hex>` last, one `admin …` line per admin timeline operation with its
//!   outcome, and on failure the violations and a one-line replay command.
//! - `replay SCENARIO --seed N`: the same run with the message trace on stderr, one line per
//!   delivered message and fault with its simulated time.
//! - `dump-log FILE [--json]` (see [`dump_log`]).
//! - Run exit codes: 0 pass, 1 safety violation, 2 liveness violation, 3 panic inside the
//!   simulation.
//! - Exit codes follow design.md §6: 0 success; 64 bad input, which covers a bad or missing flag,
//!   an unreadable file and a corrupt or truncated segment, always with a message on stderr
//!   naming the file (and, for a corrupt segment, the byte position). `--help` and `--version`
//!   exit 0. Failing to write the output exits 74 (`EX_IOERR`), except that a closed pipe (as
//!   with `| head`) ends the dump quietly with 0.

mod dump_log;

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{Args, Parser, Subcommand};

use dump_log::{DumpError, OutputFormat};

/// Exit code for bad input: a bad flag, an unreadable file, a corrupt segment (design.md §6).
const EXIT_BAD_INPUT: u8 = 64;
/// Exit code when the output cannot be written (sysexits' `EX_IOERR`).
const EXIT_OUTPUT_FAILED: u8 = 74;

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
    /// Run a scenario with a seed and print the trace.
    Replay(RunArgs),
    /// Decode a Kafka log segment (concatenated RecordBatch v2 batches), like kafka-dump-log.
    DumpLog(DumpLogArgs),
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The scenario file (TOML).
    scenario: PathBuf,
    /// The seed; a random one is chosen and printed when absent.
    #[arg(long)]
    seed: Option<u64>,
    /// The design variant; only `seed` (the default) exists so far.
    #[arg(long, default_value = "seed")]
    design: String,
    /// Test-only broken broker switches (e.g. `ack-before-replication`).
    #[arg(long = "broken")]
    broken: Vec<String>,
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
        Command::Run(args) => run_command(&args, false),
        Command::Replay(args) => run_command(&args, true),
    }
}

/// Exit code for a panic inside the simulation (design.md §6).
const EXIT_PANIC: u8 = 3;

fn run_command(args: &RunArgs, replay: bool) -> ExitCode {
    use mirrorsim_sim::runner::{run, RunOptions};
    use mirrorsim_sim::scenario::Scenario;

    if args.design != "seed" {
        eprintln!("mirrorsim: unknown design `{}` (known: seed)", args.design);
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let scenario = match Scenario::load(&args.scenario) {
        Ok(scenario) => scenario,
        Err(error) => {
            eprintln!("mirrorsim: {error}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let mut broken = Vec::new();
    for name in &args.broken {
        match mirrorsim::broker::BrokenSwitch::from_name(name) {
            Some(switch) => broken.push(switch),
            None => {
                eprintln!("mirrorsim: unknown --broken switch `{name}`");
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        }
    }
    let seed = args.seed.unwrap_or_else(random_seed);
    let options = RunOptions {
        seed,
        broken,
        trace: replay,
    };
    let plan = mirrorsim_sim::faults::plan(&scenario, seed);
    println!(
        "SEED seed={seed} scenario={} design={}",
        scenario.name, args.design
    );
    if let Some(swarm) = &plan.swarm {
        println!("  swarm: {swarm}");
    }
    for fault in &plan.faults {
        println!("  fault: {fault}");
    }
    let replay_line = format!(
        "cargo run --release --bin mirrorsim -- replay {} --seed {seed}{}",
        args.scenario.display(),
        args.broken
            .iter()
            .map(|b| format!(" --broken {b}"))
            .collect::<String>()
    );
    let outcome = std::panic::catch_unwind(|| run(&scenario, &options));
    let report = match outcome {
        Ok(report) => report,
        Err(_) => {
            println!("PANIC inside the simulation seed={seed}");
            println!("replay: {replay_line}");
            return ExitCode::from(EXIT_PANIC);
        }
    };
    let (sent, acked, failed) = report.records;
    println!(
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
    println!("coverage {}", marks.join(" "));
    let missing: Vec<&String> = scenario
        .coverage
        .iter()
        .filter(|mark| !report.marks.contains_key(*mark))
        .collect();
    if !missing.is_empty() {
        println!("VACUOUS coverage marks not reached: {missing:?}");
    }
    for record in &report.admin {
        println!("admin {record}");
    }
    for violation in &report.violations {
        println!("{}", violation.report_line(seed));
    }
    if report.verdict != mirrorsim_sim::runner::Verdict::Pass {
        println!("replay: {replay_line}");
    }
    println!("trace_hash={:016x}", report.trace_hash);
    ExitCode::from(report.verdict.exit_code())
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
        DumpError::Unreadable { .. } => {
            eprintln!("mirrorsim dump-log: {error}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
        DumpError::Corrupt { .. } => {
            eprintln!("mirrorsim dump-log: {}: {error}", file.display());
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}
