//! End-to-end tests of `mirrorsim dump-log`: the built binary is run on segment files written
//! with the codec's own builders, and its stdout, stderr and exit code are checked against
//! design.md §6 and kafka-dump-log's semantics (control records decoded; compressed batches
//! printed; a damaged batch printed invalid and the dump going on; a torn tail reported as
//! invalid bytes at the end; exit 0 once the file was read, 64 when it cannot be).

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use mirrorsim::record::{
    end_transaction_marker, mirror_pid_reset, BatchBuilder, MarkerProducer, RecordBatch,
    RecordHeader,
};

const T0: i64 = 1_700_000_000_000;
/// Exit code for bad input (design.md §6).
const EXIT_BAD_INPUT: i32 = 64;
/// Bytes 17..21 of a batch hold its CRC; corruption after them is reported there.
const CRC_OFFSET: usize = 17;

/// A segment file under the system temp directory, removed when dropped.
struct TempSegment {
    path: PathBuf,
}

impl TempSegment {
    /// Writes `bytes` to a file whose name is unique to this process and call.
    fn new(bytes: &[u8]) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "mirrorsim-dump-log-{}-{}.log",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        std::fs::write(&path, bytes).expect("temp dir is writable");
        Self { path }
    }
}

impl Drop for TempSegment {
    fn drop(&mut self) {
        // Best effort: a leftover temp file is harmless.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The test segment, batch by batch, as a leader would have stamped it.
struct Segment {
    batches: Vec<RecordBatch>,
}

impl Segment {
    /// Offsets 0–1 idempotent data; 2 transactional data; 3 COMMIT; 4 transactional data;
    /// 5 ABORT; 6 MIRROR_PID_RESET (partition leader epoch bumped to 1).
    fn new() -> Self {
        let mut idempotent = BatchBuilder::idempotent(1000, 0, 0);
        idempotent.append(T0, Some(Bytes::from("k0")), Some(Bytes::from("v0")), vec![]);
        idempotent.append(
            T0 + 5,
            Some(Bytes::from("k1")),
            Some(Bytes::from("v1")),
            vec![],
        );

        let committed = transactional(2000, vec![0x00, 0xff]);
        let aborted = transactional(3000, b"lost".to_vec());
        let batches = vec![
            idempotent.build().stamped_by_leader(0, 0, None),
            committed.stamped_by_leader(2, 0, None),
            end_transaction_marker(producer(2000), true, 5, T0 + 20).stamped_by_leader(3, 0, None),
            aborted.stamped_by_leader(4, 0, None),
            end_transaction_marker(producer(3000), false, 6, T0 + 30).stamped_by_leader(5, 0, None),
            mirror_pid_reset("cluster-a", T0 + 40).stamped_by_leader(6, 1, None),
        ];
        Self { batches }
    }

    fn bytes(&self) -> Vec<u8> {
        self.batches
            .iter()
            .flat_map(|batch| batch.bytes().iter().copied())
            .collect()
    }

    /// Byte position of batch `index` in the segment.
    fn position(&self, index: usize) -> usize {
        self.batches[..index]
            .iter()
            .map(RecordBatch::size_in_bytes)
            .sum()
    }
}

fn producer(producer_id: i64) -> MarkerProducer {
    MarkerProducer {
        producer_id,
        producer_epoch: 1,
    }
}

fn transactional(producer_id: i64, value: Vec<u8>) -> RecordBatch {
    let mut builder = BatchBuilder::idempotent(producer_id, 1, 0);
    builder.transactional = true;
    let header = RecordHeader {
        key: "trace".to_string(),
        value: Some(Bytes::from("t-1")),
    };
    builder.append(T0 + 10, None, Some(Bytes::from(value)), vec![header]);
    builder.build()
}

fn mirrorsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mirrorsim"))
        .args(args)
        .output()
        .expect("the mirrorsim binary runs")
}

fn dump_log(segment: &TempSegment, extra: &[&str]) -> Output {
    let path = segment.path.to_str().expect("temp path is UTF-8");
    let mut args = vec!["dump-log", path];
    args.extend_from_slice(extra);
    mirrorsim(&args)
}

fn stdout_lines(output: &Output) -> Vec<String> {
    String::from_utf8(output.stdout.clone())
        .expect("stdout is UTF-8")
        .lines()
        .map(str::to_string)
        .collect()
}

/// Every stdout line parsed as the one JSON object `--json` writes per line.
fn json_lines(output: &Output) -> Vec<serde_json::Value> {
    stdout_lines(output)
        .iter()
        .map(|line| serde_json::from_str(line).expect("every line is one JSON object"))
        .collect()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn dump_log_prints_every_batch_and_decodes_control_records() {
    let segment = Segment::new();
    let file = TempSegment::new(&segment.bytes());
    let output = dump_log(&file, &[]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(output.stderr.is_empty(), "stderr: {}", stderr(&output));
    let lines = stdout_lines(&output);
    // Six batch lines and seven record lines.
    assert_eq!(lines.len(), 13, "{lines:#?}");

    let batch_lines: Vec<&String> = lines.iter().filter(|l| !l.starts_with("  ")).collect();
    assert_eq!(batch_lines.len(), 6);
    for (index, line) in batch_lines.iter().enumerate() {
        let batch = &segment.batches[index];
        let prefix = format!(
            "position={} baseOffset={} lastOffset={} count={} ",
            segment.position(index),
            batch.base_offset(),
            batch.last_offset(),
            batch.header().records_count
        );
        assert!(line.starts_with(&prefix), "{line}\nwanted prefix {prefix}");
        let crc = format!(
            "crc=0x{:08x} valid=true size={}",
            batch.header().crc,
            batch.size_in_bytes()
        );
        assert!(line.ends_with(&crc), "{line}\nwanted suffix {crc}");
    }
    assert!(batch_lines[0].contains(
        "partitionLeaderEpoch=0 producerId=1000 producerEpoch=0 baseSequence=0 lastSequence=1 \
         isTransactional=false isControl=false deleteHorizonMs=none timestampType=CreateTime"
    ));
    assert!(batch_lines[2].contains(
        "producerId=2000 producerEpoch=1 baseSequence=-1 lastSequence=-1 isTransactional=true \
         isControl=true"
    ));
    assert!(batch_lines[5].contains(
        "partitionLeaderEpoch=1 producerId=-1 producerEpoch=-1 baseSequence=-1 lastSequence=-1 \
         isTransactional=false isControl=true"
    ));

    let expected_records = [
        (1, format!("  offset=0 timestamp={T0} sequence=0 keySize=2 valueSize=2 key=\"k0\" value=\"v0\" headers=[]")),
        (2, format!("  offset=1 timestamp={} sequence=1 keySize=2 valueSize=2 key=\"k1\" value=\"v1\" headers=[]", T0 + 5)),
        (
            4,
            format!(
                "  offset=2 timestamp={} sequence=0 keySize=-1 valueSize=2 key=null value=0x00ff headers=[\"trace\"=\"t-1\"]",
                T0 + 10
            ),
        ),
        (6, format!("  offset=3 timestamp={} sequence=-1 keySize=4 valueSize=6 COMMIT coordinatorEpoch=5", T0 + 20)),
        (
            8,
            format!(
                "  offset=4 timestamp={} sequence=0 keySize=-1 valueSize=4 key=null value=\"lost\" headers=[\"trace\"=\"t-1\"]",
                T0 + 10
            ),
        ),
        (10, format!("  offset=5 timestamp={} sequence=-1 keySize=4 valueSize=6 ABORT coordinatorEpoch=6", T0 + 30)),
        (
            12,
            format!(
                "  offset=6 timestamp={} sequence=-1 keySize=4 valueSize=13 MIRROR_PID_RESET sourceClusterId=cluster-a",
                T0 + 40
            ),
        ),
    ];
    for (index, expected) in expected_records {
        assert_eq!(lines[index], expected, "line {index}");
    }
}

#[test]
fn dump_log_json_prints_one_object_per_batch() {
    let segment = Segment::new();
    let file = TempSegment::new(&segment.bytes());
    let output = dump_log(&file, &["--json"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let objects = json_lines(&output);
    assert_eq!(objects.len(), segment.batches.len());
    for (index, (object, batch)) in objects.iter().zip(&segment.batches).enumerate() {
        let header = batch.header();
        assert_eq!(object["position"], segment.position(index), "batch {index}");
        assert_eq!(object["baseOffset"], header.base_offset);
        assert_eq!(object["lastOffset"], header.last_offset());
        assert_eq!(object["count"], header.records_count);
        assert_eq!(
            object["partitionLeaderEpoch"],
            header.partition_leader_epoch
        );
        assert_eq!(object["producerId"], header.producer_id);
        assert_eq!(object["producerEpoch"], header.producer_epoch);
        assert_eq!(object["baseSequence"], header.base_sequence);
        assert_eq!(object["isTransactional"], header.is_transactional());
        assert_eq!(object["isControl"], header.is_control());
        assert_eq!(object["crc"], header.crc);
        assert_eq!(object["valid"], true);
        assert_eq!(object["size"], batch.size_in_bytes());
        let records = object["records"].as_array().expect("records array");
        assert_eq!(records.len(), header.records_count as usize);
    }
    let first = &objects[0]["records"];
    assert_eq!(first[0]["offset"], 0);
    assert_eq!(first[0]["timestamp"], T0);
    assert_eq!(first[0]["key"]["text"], "k0");
    assert_eq!(first[1]["value"]["text"], "v1");
    let binary = &objects[1]["records"][0];
    assert_eq!(binary["key"], serde_json::Value::Null);
    assert_eq!(binary["value"]["hex"], "00ff");
    assert_eq!(binary["headers"][0]["key"], "trace");
    assert_eq!(binary["headers"][0]["value"]["text"], "t-1");
    let commit = &objects[2]["records"][0]["control"];
    assert_eq!(commit["type"], "COMMIT");
    assert_eq!(commit["coordinatorEpoch"], 5);
    let abort = &objects[4]["records"][0]["control"];
    assert_eq!(abort["type"], "ABORT");
    assert_eq!(abort["coordinatorEpoch"], 6);
    let reset = &objects[5]["records"][0]["control"];
    assert_eq!(reset["type"], "MIRROR_PID_RESET");
    assert_eq!(reset["typeId"], 7);
    assert_eq!(reset["sourceClusterId"], "cluster-a");
}

#[test]
fn dump_log_bad_crc_prints_the_batch_invalid_and_goes_on() {
    let segment = Segment::new();
    let mut bytes = segment.bytes();
    let second = segment.position(1);
    // A byte in the second batch's records region: only the CRC can notice.
    bytes[second + 70] ^= 0x10;
    let file = TempSegment::new(&bytes);
    for flags in [&[][..], &["--json"][..], &["--format", "kafka"][..]] {
        let output = dump_log(&file, flags);
        assert_eq!(output.status.code(), Some(0), "flags {flags:?}");
        let lines = stdout_lines(&output);
        let validity: Vec<bool> = lines
            .iter()
            .filter_map(|line| {
                ["valid=", "\"valid\":", "isvalid: "]
                    .iter()
                    .find_map(|mark| line.split(mark).nth(1))
            })
            .map(|rest| rest.starts_with("true"))
            .collect();
        assert_eq!(
            validity,
            [true, false, true, true, true, true],
            "flags {flags:?}: {lines:#?}"
        );
        let message = stderr(&output);
        assert!(
            message.contains(&format!("at byte {}", second + CRC_OFFSET)),
            "{message}"
        );
        assert!(message.contains("CRC mismatch"), "{message}");
        assert!(message.contains(file.path.to_str().unwrap()), "{message}");
    }
}

#[test]
fn dump_log_torn_tail_is_reported_as_invalid_bytes_and_exits_0() {
    let segment = Segment::new();
    let bytes = segment.bytes();
    let last = segment.position(segment.batches.len() - 1);
    let file = TempSegment::new(&bytes[..bytes.len() - 7]);
    let name = file.path.file_name().unwrap().to_str().unwrap().to_string();
    let output = dump_log(&file, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = stdout_lines(&output);
    // Everything but the MIRROR_PID_RESET batch and its record, then kafka-dump-log's line.
    assert_eq!(lines.len(), 12, "{lines:#?}");
    let torn = bytes.len() - 7 - last;
    assert_eq!(
        lines[11],
        format!("Found {torn} invalid bytes at the end of {name}")
    );
    let message = stderr(&output);
    assert!(message.contains(&format!("at byte {last}")), "{message}");
    assert!(message.contains("truncated"), "{message}");
}

/// A fixture of `tests/fixtures/compressed` (written by kafka-python and other independent
/// tools; see its generate.py).
fn fixture(name: &str) -> String {
    fixture_in("compressed", name)
}

/// The path of `tests/fixtures/DIR/NAME`.
fn fixture_in(dir: &str, name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(dir)
        .join(name);
    path.to_str().expect("UTF-8 path").to_string()
}

#[test]
fn dump_log_dumps_several_files_in_order_and_goes_past_an_unreadable_one() {
    // kafka-dump-log's `--files a,b`: every file in turn. With more than one, each file's
    // output starts with its path (`file=PATH` in text, `{"file": PATH}` in JSON, the layout's
    // own `Dumping PATH` in kafka's); a file that cannot be read is reported on stderr, the
    // others are still dumped, and the exit code says one was not (64).
    let (gzip, zstd) = (
        fixture("kafka-python-gzip.log"),
        fixture("kafka-python-zstd.log"),
    );
    let missing = fixture("no-such-segment.log");
    let output = mirrorsim(&["dump-log", &gzip, &missing, &zstd, "--json"]);
    assert_eq!(output.status.code(), Some(EXIT_BAD_INPUT));
    assert!(
        stderr(&output).contains("no-such-segment.log"),
        "{}",
        stderr(&output)
    );
    let objects = json_lines(&output);
    let files: Vec<(usize, &str)> = objects
        .iter()
        .enumerate()
        .filter_map(|(at, object)| Some((at, object.get("file")?.as_str()?)))
        .collect();
    assert_eq!(
        files,
        vec![
            (0, gzip.as_str()),
            (4, missing.as_str()),
            (5, zstd.as_str())
        ]
    );
    assert_eq!(objects[1]["compression"], "gzip");
    assert_eq!(objects[6]["compression"], "zstd");
    assert_eq!(
        objects.len(),
        9,
        "three headers, three batches of each readable file"
    );

    let text = mirrorsim(&["dump-log", &gzip, &zstd]);
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    let lines = stdout_lines(&text);
    assert_eq!(lines[0], format!("file={gzip}"));
    assert!(lines.contains(&format!("file={zstd}")));
    let kafka = mirrorsim(&["dump-log", &gzip, &zstd, "--format", "kafka"]);
    let dumping: Vec<String> = stdout_lines(&kafka)
        .into_iter()
        .filter(|line| line.starts_with("Dumping "))
        .collect();
    assert_eq!(
        dumping,
        vec![format!("Dumping {gzip}"), format!("Dumping {zstd}")]
    );
    // One file: no header, as before.
    let one = mirrorsim(&["dump-log", &gzip]);
    assert!(stdout_lines(&one)[0].starts_with("position=0 "));
}

#[test]
fn dump_log_prints_compressed_batches_of_every_codec() {
    for (codec, records) in [("gzip", 708), ("snappy", 708), ("lz4", 708), ("zstd", 708)] {
        let path = fixture(&format!("kafka-python-{codec}.log"));
        let output = mirrorsim(&["dump-log", &path, "--json"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert!(output.stderr.is_empty(), "{}", stderr(&output));
        let objects = json_lines(&output);
        assert_eq!(objects.len(), 3);
        let mut count = 0;
        for object in &objects {
            assert_eq!(object["compression"], codec);
            assert_eq!(object["valid"], true);
            count += object["records"].as_array().expect("records").len();
        }
        assert_eq!(count, records, "{codec}");
        let first = &objects[0]["records"][0];
        assert_eq!(first["key"]["text"], "k0");
        assert_eq!(first["value"]["text"], "value-0 ".repeat(20));
    }
}

/// Dumps every `*.log` of the fixture directory `dir` (relative to the repository root) with
/// `--format kafka --print-data-log` and holds the output line for line against the file's
/// `<stem>.kafka.txt`; returns how many segments were compared.
/// Dumps every `<stem>.log` of `dir` in the kafka layout with the flag `flag(stem)` gives and
/// compares it with `<stem>.kafka.txt` line for line; returns how many it compared.
fn assert_kafka_layouts_match(dir: &str, flag: fn(&str) -> &'static str) -> usize {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(dir);
    let mut compared = 0;
    for entry in std::fs::read_dir(&dir).expect("the fixture directory") {
        let name = entry
            .expect("an entry")
            .file_name()
            .into_string()
            .expect("UTF-8");
        let Some(stem) = name.strip_suffix(".log") else {
            continue;
        };
        let expected = std::fs::read(dir.join(format!("{stem}.kafka.txt"))).expect("expected");
        let output = Command::new(env!("CARGO_BIN_EXE_mirrorsim"))
            .current_dir(&dir)
            .args(["dump-log", &name, "--format", "kafka", flag(stem)])
            .output()
            .expect("the binary runs");
        assert_eq!(output.status.code(), Some(0), "{name}: {}", stderr(&output));
        let (got, want) = (
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&expected),
        );
        for (index, (got, want)) in got.split('\n').zip(want.split('\n')).enumerate() {
            assert_eq!(got, want, "{name} line {}", index + 1);
        }
        assert_eq!(output.stdout, expected, "{name}");
        compared += 1;
    }
    compared
}

#[test]
fn dump_log_kafka_layout_matches_the_independent_formatter_line_for_line() {
    // `<segment>.kafka.txt` is kafka-dump-log's output for the segment with --print-data-log,
    // formatted by generate.py from kafka-python's decode, following DumpLogSegments.scala.
    assert_eq!(
        assert_kafka_layouts_match("tests/fixtures/compressed", |_| "--print-data-log"),
        9,
        "every fixture segment has its expected kafka layout"
    );
}

#[test]
fn dump_log_decodes_legacy_message_sets_as_kafka_dump_log_prints_them() {
    // `tests/fixtures/legacy`: magic 0 and 1 message sets built by kafka-python 2.0.2's
    // LegacyRecordBatchBuilder (plain, gzip, snappy and lz4 wrappers, magic 0's lz4 with the
    // descriptor checksum Kafka 0.8-0.9 got wrong, and one with a flipped byte), and what
    // kafka-dump-log --print-data-log prints for each, formatted by generate.py from
    // kafka-python's own decode following DumpLogSegments.scala.
    assert_eq!(
        assert_kafka_layouts_match("tests/fixtures/legacy", |_| "--print-data-log"),
        9,
        "every legacy fixture has its expected kafka layout"
    );
}

#[test]
fn dump_log_reads_message_sets_written_by_real_brokers() {
    // `tests/fixtures/broker-captured`: message sets of fetch responses captured from Kafka
    // 0.8.2.1, 0.8.2.2 and 0.9.0.0 brokers (kafka-rust's test data, see NOTICE; a broker of
    // that age sends its segment's bytes as they are on disk): plain, gzip and snappy (the Java
    // producer's xerial framing), one with its CRC overwritten; the expected kafka layout
    // formatted from kafka-python's decode (extract.py).
    assert_eq!(
        assert_kafka_layouts_match("tests/fixtures/broker-captured", |_| "--print-data-log"),
        6,
        "every captured message set has its expected kafka layout"
    );
    // The producer's input: every value is its line of fetch1.txt, at offsets 0-41.
    let lines = std::fs::read_to_string(fixture_in("broker-captured", "fetch1.txt")).unwrap();
    let lines: Vec<&str> = lines.lines().collect();
    for name in [
        "fetch1.mytopic.1p.nocompression.kafka.0821.log",
        "fetch1.mytopic.1p.gzip.kafka.0821.log",
        "fetch1.mytopic.1p.snappy.kafka.0821.log",
        "fetch1.mytopic.1p.snappy.kafka.0822.log",
    ] {
        let output = mirrorsim(&["dump-log", &fixture_in("broker-captured", name), "--json"]);
        let records: Vec<serde_json::Value> = json_lines(&output)
            .iter()
            .flat_map(|entry| entry["records"].as_array().expect("records").clone())
            .collect();
        assert_eq!(records.len(), lines.len(), "{name}");
        for (offset, (record, line)) in records.iter().zip(&lines).enumerate() {
            assert_eq!(record["offset"], offset as u64, "{name}");
            assert_eq!(record["value"]["text"], *line, "{name} offset {offset}");
            assert_eq!(record["valid"], true, "{name} offset {offset}");
        }
    }
    // The overwritten CRC: printed invalid, the message still shown, exit 0, stderr names it.
    let name = "fetch2.mytopic.nocompression.invalid_crc.kafka.0900.log";
    let output = mirrorsim(&["dump-log", &fixture_in("broker-captured", name), "--json"]);
    assert_eq!(output.status.code(), Some(0));
    let entries = json_lines(&output);
    assert_eq!(entries[0]["valid"], false);
    assert!(
        stderr(&output).contains("CRC mismatch"),
        "{}",
        stderr(&output)
    );
}

/// The decoder flag for a segment of `tests/fixtures/coordinator`.
fn coordinator_decoder(stem: &str) -> &'static str {
    match stem {
        "offsets" => "--offsets-decoder",
        "transactions" => "--transaction-log-decoder",
        other => panic!("no decoder for the fixture {other}"),
    }
}

#[test]
fn dump_log_topic_decoders_print_kmsg_records_as_kafka_dump_log_does() {
    // `tests/fixtures/coordinator`: `__consumer_offsets` and `__transaction_state` records
    // encoded by franz-go's kmsg (generate.go: offset commits of key versions 0-1 and value
    // versions 0-4 with 4.1's tagged topic id, group metadata of value versions 0-4 with consumer
    // subscriptions and assignments of versions 0-3, a connect group, tombstones; two KIP-848
    // records encoded by hand, an unknown record type; transactions in every state, value
    // versions 0-1 with tagged fields), laid out
    // by kafka-python's batch builder in plain, gzip and zstd batches (generate.py), and what
    // kafka-dump-log --offsets-decoder / --transaction-log-decoder prints for them.
    assert_eq!(
        assert_kafka_layouts_match("tests/fixtures/coordinator", coordinator_decoder),
        2,
        "both coordinator segments have their expected kafka layout"
    );
}

/// The printed key and payload of every record of records.json for `topic`, as JSON values
/// where they are JSON (the offsets decoder's) and strings otherwise.
fn expected_decoded(topic: &str) -> Vec<(serde_json::Value, serde_json::Value)> {
    let path = fixture_in("coordinator", "records.json");
    let records: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(path).expect("records.json")).expect("JSON");
    let as_value = |text: &str| {
        serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.into()))
    };
    records
        .iter()
        .filter(|record| record["topic"] == topic)
        .enumerate()
        .map(|(offset, record)| {
            let printed = record["printed"].as_str().expect("printed").to_string();
            let printed = printed.replace("{offset}", &offset.to_string());
            let printed = printed.strip_prefix(" key: ").expect("a key");
            match printed.split_once(" payload: ") {
                Some((key, payload)) => (as_value(key), as_value(payload)),
                None => (as_value(printed), serde_json::Value::Null),
            }
        })
        .collect()
}

#[test]
fn dump_log_json_nests_every_decoded_field_of_the_kmsg_records() {
    for (stem, topic) in [
        ("offsets", "__consumer_offsets"),
        ("transactions", "__transaction_state"),
    ] {
        let path = fixture_in("coordinator", &format!("{stem}.log"));
        let output = mirrorsim(&["dump-log", &path, "--json", coordinator_decoder(stem)]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let decoded: Vec<(serde_json::Value, serde_json::Value)> = json_lines(&output)
            .iter()
            .flat_map(|batch| batch["records"].as_array().expect("records").clone())
            .map(|record| {
                let decoded = &record["decoded"];
                (decoded["key"].clone(), decoded["payload"].clone())
            })
            .collect();
        let expected = expected_decoded(topic);
        assert_eq!(decoded.len(), expected.len(), "{stem}");
        for (index, (got, want)) in decoded.iter().zip(&expected).enumerate() {
            assert_eq!(got, want, "{stem} record {index}");
        }
    }
    // Our text layout carries the same object at the end of each record line.
    let path = fixture_in("coordinator", "offsets.log");
    let output = mirrorsim(&["dump-log", &path, "--offsets-decoder"]);
    let lines = stdout_lines(&output);
    let first = lines.iter().find(|l| l.starts_with("  offset=0 ")).unwrap();
    assert!(
        first.ends_with(
            r#" decoded={"key":{"type":"0","data":{"group":"legacy-group","topic":"orders","partition":0}},"payload":{"version":"0","data":{"offset":10,"metadata":"m0","commitTimestamp":1700000000010}}}"#
        ),
        "{first}"
    );
}

#[test]
fn dump_log_mirror_state_decoder_prints_the_models_coordinator_records() {
    use mirrorsim::common::{LeaderEpoch, MirrorState, Offset, TopicId};
    use mirrorsim::coordinator::runtime::encode_records;
    use mirrorsim::mirror::coordinator::{MirrorStateRecord, PartitionStateValue};
    use mirrorsim::protocol::MirrorPartitionId;

    let id = MirrorPartitionId {
        topic_id: TopicId(0x0123_4567_89ab_cdef_0011_2233_4455_6677),
        partition: 1,
    };
    let state = |state, state_epoch| MirrorStateRecord::PartitionState {
        mirror: "m1".into(),
        id,
        value: Some(PartitionStateValue {
            state,
            leader_epoch: LeaderEpoch(2),
            state_epoch,
            previous_state: None,
            retry_attempt: 0,
            error_message: None,
            own_writes_only: false,
            source_topic_id: Some(id.topic_id),
        }),
    };
    // What the coordinator appends as a partition goes MIRRORING → STOPPING → STOPPED, then
    // the tombstones of a DeleteMirror.
    let writes = [
        vec![state(MirrorState::Mirroring, 0)],
        vec![
            state(MirrorState::Stopping, 1),
            MirrorStateRecord::LastMirroredEpoch {
                mirror: "m1".into(),
                id,
                value: Some((LeaderEpoch(2), Offset(40))),
            },
        ],
        vec![state(MirrorState::Stopped, 2)],
        vec![
            MirrorStateRecord::PartitionState {
                mirror: "m1".into(),
                id,
                value: None,
            },
            MirrorStateRecord::LastMirroredEpoch {
                mirror: "m1".into(),
                id,
                value: None,
            },
        ],
    ];
    let mut base_offset = 0;
    let mut bytes = Vec::new();
    for records in &writes {
        let batch = encode_records(records, T0).stamped_by_leader(base_offset, 3, None);
        base_offset += records.len() as i64;
        bytes.extend_from_slice(batch.bytes());
    }
    // Something that is not a mirror state record, as a damaged or foreign value would be.
    let mut foreign = BatchBuilder::default();
    foreign.append(T0, None, Some(Bytes::from("{\"group\":1}")), vec![]);
    bytes.extend_from_slice(
        foreign
            .build()
            .stamped_by_leader(base_offset, 3, None)
            .bytes(),
    );
    let segment = TempSegment::new(&bytes);
    let output = dump_log(&segment, &["--format", "kafka", "--mirror-state-decoder"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let mut tails: Vec<String> = stdout_lines(&output)
        .iter()
        .filter_map(|line| {
            line.split_once("headerKeys: [] ")
                .map(|(_, t)| t.to_string())
        })
        .collect();
    let key = r#"{"mirrorName":"m1","topicId":"ASNFZ4mrze8AESIzRFVmdw","partition":1}"#;
    let value = |state: &str, epoch: i32| {
        format!(
            r#"{{"data":{{"state":"{state}","leaderEpoch":2,"stateEpoch":{epoch},"previousState":null,"retryAttempt":0,"errorMessage":null,"ownWritesOnly":false,"sourceTopicId":"ASNFZ4mrze8AESIzRFVmdw"}}}}"#
        )
    };
    let partition_key = format!(r#"{{"type":"MirrorPartitionState","data":{key}}}"#);
    let epochs_key = format!(r#"{{"type":"LastMirrorEpochs","data":{key}}}"#);
    // Something that is not a mirror state record is a line that says so; the dump went on.
    let foreign = tails.pop().expect("the foreign record's line");
    assert!(
        foreign.starts_with(
            "key: Error at offset 6, skipping. the value is not a mirror state record:"
        ),
        "{foreign}"
    );
    assert_eq!(
        tails,
        vec![
            format!("key: {partition_key} payload: {}", value("MIRRORING", 0)),
            format!("key: {partition_key} payload: {}", value("STOPPING", 1)),
            format!(
                r#"key: {epochs_key} payload: {{"data":{{"lastMirrorEpoch":2,"lastMirrorOffset":40}}}}"#
            ),
            format!("key: {partition_key} payload: {}", value("STOPPED", 2)),
            format!("key: {partition_key} payload: <DELETE>"),
            format!("key: {epochs_key} payload: <DELETE>"),
        ]
    );
}

/// Every `.log` file under `dir` whose partition directory starts with `prefix`, sorted.
fn segments_under(dir: &std::path::Path, prefix: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).expect("a directory the run wrote") {
            let path = entry.expect("an entry").path();
            let in_partition = path
                .parent()
                .and_then(|p| p.file_name())
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix));
            if path.is_dir() {
                pending.push(path);
            } else if in_partition && path.extension().is_some_and(|e| e == "log") {
                found.push(path.to_str().expect("UTF-8").to_string());
            }
        }
    }
    found.sort();
    found
}

/// `mirrorsim run SCENARIO --seed SEED --logs DIR`, checked to pass, with the trace hash the
/// same run prints without `--logs`.
fn run_writing_logs(scenario: &str, seed: &str, dir: &std::path::Path) {
    let scenario = format!("{}/../scenarios/{scenario}", env!("CARGO_MANIFEST_DIR"));
    let _ = std::fs::remove_dir_all(dir);
    let logs = dir.to_str().expect("UTF-8");
    let with = mirrorsim(&["run", &scenario, "--seed", seed, "--logs", logs]);
    assert_eq!(with.status.code(), Some(0), "{}", stderr(&with));
    let without = mirrorsim(&["run", &scenario, "--seed", seed]);
    let hash = |output: &Output| {
        stdout_lines(output)
            .into_iter()
            .find(|line| line.starts_with("trace_hash="))
            .expect("a trace hash")
    };
    assert_eq!(hash(&with), hash(&without), "--logs changed the run");
    assert!(stdout_lines(&with)
        .iter()
        .any(|line| line.starts_with("logs ") && line.contains("files written under")));
}

#[test]
fn dump_log_decodes_the_logs_a_simulated_run_wrote() {
    let dir = std::env::temp_dir().join(format!("mirrorsim-logs-{}", std::process::id()));
    // group_offset_sync: consumer groups on both clusters, a mirror syncing their offsets.
    run_writing_logs("group_offset_sync.toml", "3", &dir);
    for (prefix, decoder, expected) in [
        (
            "__mirror_state-",
            "--mirror-state-decoder",
            "\"state\":\"MIRRORING\"",
        ),
        (
            "__consumer_offsets-",
            "--offsets-decoder",
            "{\"type\":\"OffsetCommit\"}",
        ),
    ] {
        let segments = segments_under(&dir, prefix);
        assert!(!segments.is_empty(), "the run wrote {prefix} segments");
        let mut args = vec!["dump-log", "--format", "kafka", decoder];
        args.extend(segments.iter().map(String::as_str));
        let output = mirrorsim(&args);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert_eq!(stderr(&output), "", "the run's segments are whole");
        let text = String::from_utf8(output.stdout).expect("UTF-8");
        let records = text.lines().filter(|l| l.starts_with("| offset: ")).count();
        assert!(records > 0, "{prefix}: records");
        assert!(text.contains(expected), "{prefix}: {expected}");
        assert!(
            !text.contains("Error at offset"),
            "{prefix}: every record decodes"
        );
    }
    // The data partitions: whole batches, valid CRCs, nothing left over.
    let segments = segments_under(&dir, "orders-");
    let mut args = vec!["dump-log", "--json"];
    args.extend(segments.iter().map(String::as_str));
    let output = mirrorsim(&args);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stderr(&output), "");
    let batches = json_lines(&output)
        .into_iter()
        .filter(|object| object.get("baseOffset").is_some())
        .collect::<Vec<_>>();
    assert!(!batches.is_empty());
    assert!(batches.iter().all(|batch| batch["valid"] == true));
    // Every file of a partition directory, the model's checkpoint files beside the segment.
    let partition = std::path::Path::new(&segments[0]).parent().unwrap();
    let mut files: Vec<String> = std::fs::read_dir(partition)
        .unwrap()
        .map(|entry| entry.unwrap().path().to_str().unwrap().to_string())
        .collect();
    files.sort();
    let mut args = vec!["dump-log"];
    args.extend(files.iter().map(String::as_str));
    let output = mirrorsim(&args);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stderr(&output), "", "{files:?}");
    assert!(stdout_lines(&output)
        .iter()
        .any(|line| line.starts_with("highWatermark=")));

    // active_passive: transactional producers, so __transaction_state.
    run_writing_logs("active_passive.toml", "3", &dir);
    let segments = segments_under(&dir, "__transaction_state-");
    let mut args = vec!["dump-log", "--format", "kafka", "--transaction-log-decoder"];
    args.extend(segments.iter().map(String::as_str));
    let output = mirrorsim(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    assert!(text.contains("key: {\"type\":\"Metadata\"}"));
    assert!(text.contains("\"state\":\"CompleteCommit\""));
    assert!(!text.contains("Error at offset"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dump_log_reads_the_models_offset_checkpoints_and_names_a_bad_one() {
    let dir = std::env::temp_dir().join(format!("mirrorsim-checkpoints-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        (
            "high-watermark.checkpoint",
            "482\n",
            Some("highWatermark: 482"),
        ),
        (
            "log-start-offset.checkpoint",
            "7\n",
            Some("logStartOffset: 7"),
        ),
    ];
    for (name, content, expected) in cases {
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap();
        let output = mirrorsim(&["dump-log", path.to_str().unwrap(), "--format", "kafka"]);
        assert_eq!(output.status.code(), Some(0));
        assert_eq!(stderr(&output), "");
        assert_eq!(stdout_lines(&output).last().map(String::as_str), expected);
    }
    // Damage is named at its byte, not read as a broken segment's batch.
    for (content, reason) in [
        ("48x\n", "not an offset: \"48x\""),
        ("1\n2\n", "line after the offset: \"2\""),
        ("", "empty checkpoint file"),
    ] {
        let path = dir.join("high-watermark.checkpoint");
        std::fs::write(&path, content).unwrap();
        let output = mirrorsim(&["dump-log", path.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(0));
        assert!(stderr(&output).contains(reason), "{}", stderr(&output));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn run_logs_into_a_directory_that_cannot_be_made_exits_74() {
    let blocker = TempSegment::new(b"a file where the directory would go");
    let dir = blocker.path.join("logs");
    let scenario = format!(
        "{}/../scenarios/leader_crash.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let output = mirrorsim(&[
        "run",
        &scenario,
        "--seed",
        "1",
        "--logs",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(74));
    assert!(
        stderr(&output).starts_with("mirrorsim: --logs "),
        "{}",
        stderr(&output)
    );
}

#[test]
fn dump_log_refuses_two_topic_decoders_at_once() {
    let segment = TempSegment::new(&Segment::new().bytes());
    let output = dump_log(
        &segment,
        &["--offsets-decoder", "--transaction-log-decoder"],
    );
    assert_eq!(output.status.code(), Some(EXIT_BAD_INPUT));
    assert!(
        stderr(&output).contains("cannot be used with"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn dump_log_json_of_a_legacy_gzip_wrapper_and_a_damaged_message() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/legacy");
    let path = dir.join("v1-gzip.log").display().to_string();
    let output = mirrorsim(&["dump-log", &path, "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let objects = json_lines(&output);
    assert_eq!(objects.len(), 2);
    let wrapper = &objects[0];
    assert_eq!(
        (
            &wrapper["magic"],
            &wrapper["compression"],
            &wrapper["count"]
        ),
        (
            &serde_json::json!(1),
            &serde_json::json!("gzip"),
            &serde_json::json!(5)
        )
    );
    assert_eq!(
        (&wrapper["baseOffset"], &wrapper["lastOffset"]),
        (&serde_json::json!(0), &serde_json::json!(4))
    );
    let offsets: Vec<i64> = wrapper["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|record| record["offset"].as_i64().expect("an offset"))
        .collect();
    assert_eq!(
        offsets,
        [0, 1, 2, 3, 4],
        "relative inner offsets made absolute"
    );
    assert_eq!(wrapper["records"][1]["key"], serde_json::Value::Null);
    assert_eq!(wrapper["records"][2]["valueSize"], -1);
    assert!(wrapper["records"][0]["valid"].as_bool().expect("a check"));
    // A flipped byte in the last message: printed invalid, the dump goes on, exit 0.
    let path = dir.join("v1-bad-crc.log").display().to_string();
    let output = mirrorsim(&["dump-log", &path, "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let objects = json_lines(&output);
    assert_eq!(objects.len(), 8, "every message of both sets");
    let valid: Vec<bool> = objects
        .iter()
        .map(|object| object["valid"].as_bool().expect("valid"))
        .collect();
    assert_eq!(valid, [true, true, true, true, true, true, true, false]);
    assert!(
        stderr(&output).contains("at byte 299: CRC mismatch"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn dump_log_kafka_layout_on_a_mixed_segment() {
    let path = fixture("mixed.log");
    let output = mirrorsim(&["dump-log", &path, "--format", "kafka", "--print-data-log"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = stdout_lines(&output);
    assert_eq!(lines[0], format!("Dumping {path}"));
    let batch_lines: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("baseOffset: "))
        .collect();
    let codecs: Vec<&str> = batch_lines
        .iter()
        .map(|line| {
            line.split("compresscodec: ")
                .nth(1)
                .and_then(|rest| rest.split(' ').next())
                .expect("a codec")
        })
        .collect();
    assert_eq!(codecs, ["none", "gzip", "snappy", "lz4", "zstd", "none"]);
    let records: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("| offset: "))
        .collect();
    assert_eq!(records.len(), 5 + 5 * 3);
    assert_eq!(
        records[5].as_str(),
        "| offset: 5 CreateTime: 1700000001000 keySize: -1 valueSize: 80 sequence: -1 \
         headerKeys: [] payload: plain 0 plain 0 plain 0 plain 0 plain 0 plain 0 plain 0 \
         plain 0 plain 0 plain 0 "
    );
}

#[test]
fn dump_log_missing_file_exits_64_naming_the_file() {
    let missing = std::env::temp_dir().join(format!(
        "mirrorsim-dump-log-{}-missing.log",
        std::process::id()
    ));
    let path = missing.to_str().expect("temp path is UTF-8");
    let output = mirrorsim(&["dump-log", path]);
    assert_eq!(output.status.code(), Some(EXIT_BAD_INPUT));
    assert!(output.stdout.is_empty());
    assert!(stderr(&output).contains(path), "{}", stderr(&output));
}

#[test]
fn unknown_flag_or_missing_argument_exits_64() {
    let segment = TempSegment::new(&Segment::new().bytes());
    let output = dump_log(&segment, &["--no-such-flag"]);
    assert_eq!(output.status.code(), Some(EXIT_BAD_INPUT));
    assert!(
        stderr(&output).contains("--no-such-flag"),
        "{}",
        stderr(&output)
    );
    for args in [&["dump-log"][..], &["no-such-command"][..], &[][..]] {
        let output = mirrorsim(args);
        assert_eq!(output.status.code(), Some(EXIT_BAD_INPUT), "args {args:?}");
    }
}

#[test]
fn help_and_version_exit_0() {
    for args in [
        &["--help"][..],
        &["--version"][..],
        &["dump-log", "--help"][..],
    ] {
        let output = mirrorsim(args);
        assert_eq!(output.status.code(), Some(0), "args {args:?}");
        assert!(!output.stdout.is_empty(), "args {args:?}");
    }
}

/// A file with a given name (side files are recognised by it) in a directory of its own,
/// removed when dropped.
struct NamedFile {
    dir: PathBuf,
    path: PathBuf,
}

impl NamedFile {
    fn new(name: &str, bytes: &[u8]) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "mirrorsim-dump-log-side-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("temp dir is writable");
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("temp dir is writable");
        Self { dir, path }
    }

    fn dump(&self, extra: &[&str]) -> Output {
        let mut args = vec!["dump-log", self.path.to_str().expect("UTF-8")];
        args.extend_from_slice(extra);
        mirrorsim(&args)
    }
}

impl Drop for NamedFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// stdout after the `Dumping PATH` line of the kafka layout.
fn kafka_entries(output: &Output) -> Vec<String> {
    let lines = stdout_lines(output);
    assert!(lines[0].starts_with("Dumping "), "{lines:#?}");
    lines[1..].to_vec()
}

#[test]
fn dump_log_decodes_an_offset_index_and_stops_at_its_preallocated_zeros() {
    // Kafka's OffsetIndex entries: int32 offset relative to the base offset in the name, int32
    // position; a preallocated index is zero-filled after its last entry.
    let mut bytes = Vec::new();
    for (relative, position) in [(0i32, 0i32), (37, 4_140), (80, 8_270)] {
        bytes.extend(relative.to_be_bytes());
        bytes.extend(position.to_be_bytes());
    }
    bytes.extend([0u8; 64]);
    let file = NamedFile::new("00000000000000000100.index", &bytes);
    let output = file.dump(&["--format", "kafka"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        kafka_entries(&output),
        [
            "offset: 100 position: 0",
            "offset: 137 position: 4140",
            "offset: 180 position: 8270"
        ]
    );
    let output = file.dump(&[]);
    assert_eq!(stdout_lines(&output)[1], "offset=137 position=4140");
    let empty = NamedFile::new("00000000000000000000.index", &[]);
    let output = empty.dump(&["--format", "kafka"]);
    assert_eq!(
        kafka_entries(&output),
        [format!("{} is empty.", empty.path.display())]
    );
}

#[test]
fn dump_log_decodes_a_time_index_and_reports_a_partial_entry() {
    let mut bytes = Vec::new();
    for (timestamp, relative) in [(T0, 0i32), (T0 + 500, 12)] {
        bytes.extend(timestamp.to_be_bytes());
        bytes.extend(relative.to_be_bytes());
    }
    bytes.extend([1u8, 2, 3, 4, 5]);
    let file = NamedFile::new("00000000000000000042.timeindex", &bytes);
    let output = file.dump(&["--format", "kafka"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        kafka_entries(&output),
        [
            format!("timestamp: {T0} offset: 42"),
            format!("timestamp: {} offset: 54", T0 + 500),
            "Found 5 invalid bytes at the end of 00000000000000000042.timeindex".to_string(),
        ]
    );
    assert!(
        stderr(&output).contains("at byte 24"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn dump_log_decodes_a_transaction_index() {
    // AbortedTxn: int16 version, producer id, first offset, last offset, last stable offset.
    let mut bytes = Vec::new();
    bytes.extend(0i16.to_be_bytes());
    for field in [3000i64, 4, 5, 4] {
        bytes.extend(field.to_be_bytes());
    }
    let file = NamedFile::new("00000000000000000000.txnindex", &bytes);
    let output = file.dump(&["--format", "kafka"]);
    assert_eq!(
        kafka_entries(&output),
        ["version: 0 producerId: 3000 firstOffset: 4 lastOffset: 5 lastStableOffset: 4"]
    );
    let output = file.dump(&["--json"]);
    let object: serde_json::Value = serde_json::from_str(&stdout_lines(&output)[0]).expect("JSON");
    assert_eq!(object["producerId"], 3000);
    assert_eq!(object["lastStableOffset"], 4);
}

/// A producer snapshot as Kafka's `ProducerStateManager.writeSnapshot` lays it out, with the
/// entries of Kafka's `testProducerSnapshotCompatibility`.
fn producer_snapshot() -> Vec<u8> {
    let mut entries = Vec::new();
    entries.extend(2i32.to_be_bytes());
    // Producer 1: epoch 2, last sequence 1, last offset 2, offset delta 3, timestamp -1,
    // coordinator epoch 3, a transaction open at offset 100.
    entries.extend(1i64.to_be_bytes());
    entries.extend(2i16.to_be_bytes());
    entries.extend(1i32.to_be_bytes());
    entries.extend(2i64.to_be_bytes());
    entries.extend(3i32.to_be_bytes());
    entries.extend((-1i64).to_be_bytes());
    entries.extend(3i32.to_be_bytes());
    entries.extend(100i64.to_be_bytes());
    // Producer 11: epoch 12, no data written (last sequence -1, last offset -1), timestamp
    // 123456, coordinator epoch 13, no open transaction.
    entries.extend(11i64.to_be_bytes());
    entries.extend(12i16.to_be_bytes());
    entries.extend((-1i32).to_be_bytes());
    entries.extend((-1i64).to_be_bytes());
    entries.extend(0i32.to_be_bytes());
    entries.extend(123_456i64.to_be_bytes());
    entries.extend(13i32.to_be_bytes());
    entries.extend((-1i64).to_be_bytes());
    let mut bytes = Vec::new();
    bytes.extend(1i16.to_be_bytes());
    bytes.extend(crc32c::crc32c(&entries).to_be_bytes());
    bytes.extend(entries);
    bytes
}

#[test]
fn dump_log_decodes_a_producer_snapshot_as_kafka_prints_it() {
    let file = NamedFile::new("00000000000000000006.snapshot", &producer_snapshot());
    let output = file.dump(&["--format", "kafka"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        kafka_entries(&output),
        [
            // firstSequence is Kafka's decrementSequence(1, 3), which wraps.
            "producerId: 1 producerEpoch: 2 coordinatorEpoch: 3 currentTxnFirstOffset: \
             OptionalLong[100] lastTimestamp: -1 firstSequence: 2147483646 lastSequence: 1 \
             lastOffset: 2 offsetDelta: 3 timestamp: -1",
            "producerId: 11 producerEpoch: 12 coordinatorEpoch: 13 currentTxnFirstOffset: \
             OptionalLong.empty lastTimestamp: 123456 ",
        ]
    );
    let output = file.dump(&[]);
    let lines = stdout_lines(&output);
    assert!(lines[0].starts_with("version=1 crc="), "{lines:#?}");
    assert!(lines[0].ends_with(" valid=true entries=2"), "{lines:#?}");
    // A flipped byte: Kafka refuses the file; our text shows it invalid, the message names
    // the CRC's byte.
    let mut damaged = producer_snapshot();
    damaged[20] ^= 1;
    let file = NamedFile::new("00000000000000000006.snapshot", &damaged);
    let output = file.dump(&["--format", "kafka"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(kafka_entries(&output).is_empty());
    assert!(
        stderr(&output).contains("at byte 2: CRC mismatch"),
        "{}",
        stderr(&output)
    );
    let output = file.dump(&[]);
    assert!(stdout_lines(&output)[0].contains(" valid=false "));
}

#[test]
fn dump_log_decodes_a_leader_epoch_checkpoint_and_partition_metadata() {
    let file = NamedFile::new("leader-epoch-checkpoint", b"0\n2\n0 0\n3 150\n");
    let output = file.dump(&[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout_lines(&output),
        ["epoch=0 startOffset=0", "epoch=3 startOffset=150"]
    );
    let short = NamedFile::new("leader-epoch-checkpoint", b"0\n3\n0 0\n");
    let output = short.dump(&[]);
    assert!(
        stderr(&output).contains("3 entries declared, 1 present"),
        "{}",
        stderr(&output)
    );
    let metadata = NamedFile::new(
        "partition.metadata",
        b"version: 0\ntopic_id: q1w2e3r4t5y6u7i8o9p0aa\n",
    );
    let output = metadata.dump(&["--json"]);
    let object: serde_json::Value = serde_json::from_str(&stdout_lines(&output)[0]).expect("JSON");
    assert_eq!(object["version"], "0");
    assert_eq!(object["topicId"], "q1w2e3r4t5y6u7i8o9p0aa");
}
