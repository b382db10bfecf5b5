//! Bad input never hangs, panics or passes silently (issue #13): the binary's exit codes and
//! messages for bad flags, output files and segments; a set-up that cannot finish is a liveness
//! failure; the README's exit-code table is the binary's. The loader's rules, with the line
//! and field path of every refusal, are unit-tested in `sim/src/scenario/tests.rs`; the fuzz
//! tests of the loader and of dump-log are in `sim/tests/fuzz_input.rs`.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output};

use bytes::Bytes;
use mirrorsim::record::BatchBuilder;
use mirrorsim_sim::commands::runner::{run, RunOptions, Verdict};

mod common;
use common::{load, repository_root};

fn mirrorsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mirrorsim"))
        .current_dir(repository_root())
        .args(args)
        .output()
        .expect("the mirrorsim binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A file under the temp directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, bytes: &[u8]) -> Self {
        let path =
            std::env::temp_dir().join(format!("mirrorsim-bad-input-{}-{name}", std::process::id()));
        std::fs::write(&path, bytes).expect("temp file written");
        Self(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("temp path is UTF-8")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn an_invalid_scenario_exits_64_naming_file_line_and_field() {
    let text = std::fs::read_to_string(repository_root().join("scenarios/leader_crash.toml"))
        .expect("the scenario");
    for (from, to, field) in [
        (
            "interval_ms = ",
            "interval_ms = 9223372036854775806\n# was: ",
            "producers[0].interval_ms",
        ),
        ("brokers = 3", "brokers = 256", "clusters[0].brokers"),
        ("duration_ms = ", "duration_ms = = ", "duration_ms"),
    ] {
        assert!(text.contains(from), "{from:?} not in leader_crash.toml");
        let file = TempFile::new("scenario.toml", text.replacen(from, to, 1).as_bytes());
        let output = mirrorsim(&["run", file.path(), "--seed", "1"]);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(64), "{message}");
        let line = text
            .lines()
            .position(|line| line.contains(from))
            .expect("the line")
            + 1;
        assert!(
            message.starts_with(&format!(
                "mirrorsim: {}:{line}: field `{field}`: ",
                file.path()
            )),
            "{message}"
        );
        assert!(output.stdout.is_empty(), "nothing runs");
    }
}

#[test]
fn a_set_up_that_never_finishes_is_a_liveness_failure() {
    // The loader refuses every file that gets here; a scenario built in code does not pass
    // through it. A topic name the controller refuses leaves the set-up waiting for it.
    let mut scenario = load("leader_crash");
    scenario.topics[0].name = "bad name".to_owned();
    scenario.producers.clear();
    scenario.consumers.clear();
    scenario.faults.scripted.clear();
    let report = run(&scenario, &RunOptions::new(1));
    assert_eq!(report.verdict, Verdict::Liveness);
    assert_eq!(report.verdict.exit_code(), 2);
    let [violation] = &report.violations[..] else {
        panic!("one violation: {:?}", report.violations)
    };
    assert_eq!(violation.invariant, "liveness");
    assert!(violation.detail.contains("set-up"), "{}", violation.detail);
}

#[test]
fn soak_refuses_a_seed_base_the_seed_space_cannot_serve() {
    for args in [
        &["--seed-base", "18446744073709551615", "--seeds", "3"][..],
        &[
            "--seed-base",
            "18446744073709551615",
            "--seeds",
            "3",
            "--shard",
            "1/2",
        ],
        &[
            "--seed-base",
            "18446744073709551615",
            "--seeds",
            "1",
            "--shard",
            "1/2",
        ],
    ] {
        let mut all = vec!["soak", "--scenarios", "scenarios/leader_crash.toml"];
        all.extend_from_slice(args);
        let output = mirrorsim(&all);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(64), "{args:?}: {message}");
        assert!(
            message.starts_with("mirrorsim soak: --seed-base "),
            "{message}"
        );
        assert!(output.stdout.is_empty(), "no seed ran: {args:?}");
    }
}

#[test]
fn an_out_file_that_cannot_be_created_or_written_exits_74() {
    let missing = "/nonexistent-directory/mirrorsim/out.jsonl";
    let output = mirrorsim(&[
        "soak",
        "--scenarios",
        "scenarios/leader_crash.toml",
        "--seeds",
        "1",
        "--out",
        missing,
    ]);
    assert_eq!(output.status.code(), Some(74), "{}", stderr(&output));
    assert!(stderr(&output).starts_with("mirrorsim soak: --out: cannot create "));
    let output = mirrorsim(&[
        "variants",
        "--seeds",
        "1",
        "--designs",
        "seed",
        "--scenarios",
        "scenarios/active_passive.toml",
        "--out",
        missing,
    ]);
    assert_eq!(output.status.code(), Some(74), "{}", stderr(&output));
    assert!(stderr(&output).starts_with("mirrorsim variants: --out: cannot create "));
    // A failing seed whose line cannot be written: the file asked for does not hold it, so the
    // output error wins over the safety verdict.
    let output = mirrorsim(&[
        "soak",
        "--scenarios",
        "scenarios/leader_crash.toml",
        "--seeds",
        "1",
        "--seed-base",
        "9",
        "--jobs",
        "1",
        "--broken",
        "ack-before-replication",
        "--out",
        "/dev/full",
    ]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(74), "{message}");
    assert!(message.contains("cannot write /dev/full"), "{message}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("\"verdict\":\"safety\""), "{stdout}");
}

/// One uncompressed batch of two records at `base_offset`.
fn batch_at(base_offset: i64) -> Bytes {
    let mut builder = BatchBuilder::idempotent(7, 0, 0);
    builder.append(
        1_700_000_000_000,
        None,
        Some(Bytes::from_static(b"v0")),
        vec![],
    );
    builder.append(
        1_700_000_000_001,
        None,
        Some(Bytes::from_static(b"v1")),
        vec![],
    );
    let mut bytes = builder.build().bytes().to_vec();
    // The base offset is outside the CRC, so it can be set after the build.
    bytes[..8].copy_from_slice(&base_offset.to_be_bytes());
    Bytes::from(bytes)
}

#[test]
fn dump_log_shows_offsets_no_log_can_hold_at_their_byte() {
    // A base offset whose last offset would pass i64::MAX printed a wrapped lastOffset.
    let file = TempFile::new("max-base.log", &batch_at(i64::MAX));
    let output = mirrorsim(&["dump-log", file.path()]);
    let message = stderr(&output);
    // As kafka-dump-log, a damaged batch is shown and the dump ends normally.
    assert_eq!(output.status.code(), Some(0), "{message}");
    assert!(
        message.contains("at byte 0: corrupt record: baseOffset 9223372036854775807 + lastOffsetDelta 1 overflows"),
        "{message}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(" error=\"at byte 0: corrupt record"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("  offset="),
        "no record of such a batch: {stdout}"
    );
    // A lastOffsetDelta that disagrees with the records (the header field is outside no
    // check but the CRC, so the CRC is recomputed after the change).
    let mut bytes = batch_at(0).to_vec();
    bytes[23..27].copy_from_slice(&0i32.to_be_bytes());
    let crc = crc32c::crc32c(&bytes[21..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    let file = TempFile::new("delta.log", &bytes);
    let output = mirrorsim(&["dump-log", file.path()]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{message}");
    assert!(
        message.contains("at byte 57: corrupt record: 2 records do not fit the 1 offsets lastOffsetDelta 0 spans"),
        "{message}"
    );
}

#[test]
fn dump_log_reads_devices_and_fifos_as_they_deliver() {
    // /dev/zero never ends: read whole first, it blocked; read batch by batch, its first
    // length field (0) starts an invalid tail, counted up to the drain limit.
    let output = mirrorsim(&["dump-log", "/dev/zero"]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{message}");
    assert!(message.contains("at byte 8"), "{message}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "Found at least 67108864 invalid bytes at the end of zero (the input did not end)\n"
    );
    // A FIFO: the dump prints what the writer sends and ends when it closes.
    let fifo =
        std::env::temp_dir().join(format!("mirrorsim-bad-input-{}.fifo", std::process::id()));
    let _ = std::fs::remove_file(&fifo);
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let writer_path = fifo.clone();
    let writer = std::thread::spawn(move || {
        let mut pipe = std::fs::OpenOptions::new()
            .write(true)
            .open(&writer_path)
            .expect("the FIFO opens for writing");
        pipe.write_all(&batch_at(0)).expect("written");
        pipe.write_all(&batch_at(2)).expect("written");
    });
    let output = mirrorsim(&["dump-log", fifo.to_str().expect("UTF-8")]);
    writer.join().expect("the writer finished");
    let _ = std::fs::remove_file(&fifo);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.starts_with("position="))
            .count(),
        2,
        "{stdout}"
    );
}

/// The README's "Exit codes" table: `| code | meaning |` rows under that heading.
fn readme_exit_codes() -> Vec<(u8, String)> {
    let readme = std::fs::read_to_string(repository_root().join("README.md")).expect("README");
    let section = readme
        .split("\n### Exit codes\n")
        .nth(1)
        .expect("a `### Exit codes` section in the README");
    section
        .lines()
        .take_while(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let code = cells.get(1)?.parse().ok()?;
            Some((code, cells.get(2)?.to_string()))
        })
        .collect()
}

#[test]
fn the_readme_exit_code_table_is_the_binarys() {
    let readme = readme_exit_codes();
    let codes: Vec<u8> = readme.iter().map(|(code, _)| *code).collect();
    let table: Vec<u8> = mirrorsim_sim::exit::TABLE
        .iter()
        .map(|(code, _)| *code)
        .collect();
    assert_eq!(codes, table, "README rows {readme:?}");
    for ((_, meaning), (_, name)) in readme.iter().zip(mirrorsim_sim::exit::TABLE) {
        assert!(
            meaning.to_lowercase().starts_with(name),
            "README says {meaning:?}, the binary's table {name:?}"
        );
    }
    // And the binary does what the table says, for the codes a quick run shows.
    assert_eq!(mirrorsim(&["--version"]).status.code(), Some(0));
    assert_eq!(mirrorsim(&["run"]).status.code(), Some(64));
    assert_eq!(
        mirrorsim(&["dump-log", "/nonexistent"]).status.code(),
        Some(64)
    );
}
