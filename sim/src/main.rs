//! The `mirrorsim` command line (design.md §6).
//!
//! Contract:
//! - Subcommands so far: `dump-log FILE [--json]` (see [`dump_log`]). `run`, `replay` and `soak`
//!   arrive with the simulator.
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
    /// Decode a Kafka log segment (concatenated RecordBatch v2 batches), like kafka-dump-log.
    DumpLog(DumpLogArgs),
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
    }
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
