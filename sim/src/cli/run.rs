//! `run`, `replay` and `dump-log`: one simulated run with its report, and a segment file
//! dumped (with the byte position of what is damaged).

use crate::*;

/// `run`, or `replay` when `trace` is given.
pub(crate) fn run_command(
    args: &RunArgs,
    trace: Option<&mirrorsim_sim::commands::replay::TraceOptions>,
) -> ExitCode {
    use mirrorsim_sim::commands::runner::{run_keeping_disks, RunOptions};
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
        None => {
            let (report, disks) = run_keeping_disks(&scenario, &options);
            (report, false, disks)
        }
        Some(trace) => {
            // Buffered: a full trace has a line per message, and the buffer is flushed before
            // the report below.
            let out = Box::new(BufWriter::new(io::stdout()));
            let replay = mirrorsim_sim::commands::replay::replay(&scenario, &options, trace, out);
            for name in &replay.unmatched_nodes {
                eprintln!("mirrorsim replay: --node {name}: no node of this run has that name");
            }
            (replay.report, replay.output_failed, replay.disks)
        }
    });
    let report = match outcome {
        Ok((report, output_failed, disks)) => {
            if let Some(dir) = &args.logs {
                if let Err(code) = write_logs(dir, &disks) {
                    return code;
                }
            }
            // Whoever read the trace stopped reading (`replay … | head`): nothing more to print.
            if output_failed {
                return ExitCode::from(report.verdict.exit_code());
            }
            report
        }
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

/// `--logs DIR`: every broker's log directories under `DIR`, one directory per cluster named
/// by its scenario letter (`a`, `b`, …). A directory that cannot be written exits 74 (as
/// `--out` does).
fn write_logs(
    dir: &Path,
    disks: &mirrorsim_sim::commands::runner::BrokerDisks,
) -> Result<(), ExitCode> {
    let cluster_name = |index: u8| char::from(b'a' + index).to_string();
    match disks.write_to(dir, cluster_name) {
        Ok(files) => {
            out!("logs {files} files written under {}", dir.display());
            Ok(())
        }
        Err(error) => {
            eprintln!("mirrorsim: --logs {}: {error}", dir.display());
            Err(ExitCode::from(EXIT_OUTPUT_FAILED))
        }
    }
}

pub(crate) fn dump_log_command(args: &DumpLogArgs) -> ExitCode {
    let format = match (args.json, args.format) {
        (true, _) | (false, Some(DumpFormatArg::Json)) => OutputFormat::Json,
        (false, Some(DumpFormatArg::Kafka)) => OutputFormat::Kafka,
        (false, Some(DumpFormatArg::Text) | None) => OutputFormat::Text,
    };
    let options = DumpOptions {
        format,
        print_data_log: args.print_data_log,
        deep_iteration: args.deep_iteration,
        decoder: if args.offsets_decoder {
            RecordDecoder::Offsets
        } else if args.transaction_log_decoder {
            RecordDecoder::TransactionLog
        } else if args.mirror_state_decoder {
            RecordDecoder::MirrorState
        } else {
            RecordDecoder::Strings
        },
    };
    let mut out = BufWriter::new(io::stdout().lock());
    let several = args.files.len() > 1;
    let mut exit = ExitCode::SUCCESS;
    for file in &args.files {
        let header = if several {
            file_header(&mut out, file, format)
        } else {
            Ok(())
        };
        let dumped = header
            .map_err(DumpError::from)
            .and_then(|()| dump_log::dump_file(file, options, &mut out));
        // Flush what was decoded before any message, so stdout holds every batch first.
        let flushed = out.flush().map_err(DumpError::from);
        match (dumped, flushed) {
            (Ok(summary), Ok(())) => report_damage(file, &summary),
            // Standard output is gone or broken: nothing more can be shown.
            (_, Err(error)) | (Err(error @ DumpError::Output(_)), _) => return report(&error),
            // An unreadable file: said on stderr, the others are still dumped, and the exit
            // code says one was not.
            (Err(error), Ok(())) => exit = report(&error),
        }
    }
    exit
}

/// With several files, what tells one file's output from the next: kafka-dump-log's own
/// `Dumping PATH` line (every file has it in that layout), `file=PATH` in text, and in JSON an
/// object with the key `file`.
fn file_header(out: &mut impl Write, file: &Path, format: OutputFormat) -> io::Result<()> {
    let path = file.display().to_string();
    match format {
        OutputFormat::Kafka => Ok(()),
        OutputFormat::Text => writeln!(out, "file={path}"),
        OutputFormat::Json => writeln!(out, "{}", serde_json::json!({ "file": path })),
    }
}

/// Sums up on stderr what the dump found wrong (the dump itself shows each problem where it
/// is): every problem with its byte position, the damaged tail, non-consecutive offsets.
fn report_damage(file: &Path, summary: &dump_log::DumpSummary) {
    let file = file.display();
    for problem in &summary.problems {
        eprintln!("mirrorsim dump-log: {file}: {problem}");
    }
    if summary.invalid_batches > summary.problems.len() {
        eprintln!(
            "mirrorsim dump-log: {file}: {} invalid batches in all",
            summary.invalid_batches
        );
    }
    if let Some(tail) = &summary.tail {
        eprintln!(
            "mirrorsim dump-log: {file}: {}; the bytes from {} on are not a batch (log recovery \
             truncates there)",
            tail.error, tail.position
        );
    }
    if !summary.non_consecutive.is_empty() {
        eprintln!("Non-consecutive offsets in {file}");
        for (first, second) in &summary.non_consecutive {
            eprintln!("  {first} is followed by {second}");
        }
        let unlisted = summary.non_consecutive_count - summary.non_consecutive.len() as u64;
        if unlisted > 0 {
            eprintln!("  and {unlisted} more");
        }
    }
}

/// Prints `error` on stderr and picks its exit code.
pub(crate) fn report(error: &DumpError) -> ExitCode {
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
    }
}
