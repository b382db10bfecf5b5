//! The files beside a segment in a partition directory, recognised by their names as
//! kafka-dump-log does, and decoded instead of being misread as segments.
//!
//! Contract:
//! - [`FileKind::of`] maps a file name to its kind: `.index` (offset index: 8-byte entries of
//!   relative offset and position), `.timeindex` (12-byte entries of timestamp and relative
//!   offset), `.txnindex` (34-byte aborted-transaction entries), `.snapshot` (producer-state
//!   snapshot: version 1, CRC-32C, producer entries), `leader-epoch-checkpoint` (text: version
//!   0, a count, then `epoch startOffset` lines) and `partition.metadata` (text: `version: 0`,
//!   `topic_id: …`); anything else is a segment (`.log`, KRaft's `.checkpoint`, a device).
//! - [`dump_side_file`] prints every entry in the chosen layout (Kafka's own lines in the kafka
//!   layout, for the files kafka-dump-log decodes), stops an index at its first zero-filled
//!   entry as Kafka does (a preallocated index), and reports what does not decode (a partial
//!   entry at the end, a bad CRC, a malformed line) with its byte position in the summary. It
//!   never panics on bad input.

use std::io::{self, Write};

use mirrorsim::record::{decrement_sequence, RecordError, RecordErrorKind};

use super::output::write_json;
use super::{DumpOptions, DumpSummary, InvalidTail, OutputFormat, Source, TailLength};

/// What a file in a partition directory holds, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// Batches end to end (`.log`, a KRaft `.checkpoint`, or any name not listed here).
    Segment,
    /// `.index`: relative offset and byte position pairs.
    OffsetIndex,
    /// `.timeindex`: timestamp and relative offset pairs.
    TimeIndex,
    /// `.txnindex`: aborted transactions.
    TransactionIndex,
    /// `.snapshot`: the producer state at an offset.
    ProducerSnapshot,
    /// `leader-epoch-checkpoint`: the leader epoch cache.
    LeaderEpochCheckpoint,
    /// `partition.metadata`: the partition's topic id.
    PartitionMetadata,
    /// This model's own `high-watermark.checkpoint` and `log-start-offset.checkpoint` (one
    /// offset as a decimal line, in each partition directory `run --logs` writes; Kafka keeps
    /// these per log directory, in `replication-offset-checkpoint` and
    /// `log-start-offset-checkpoint`).
    ModelOffsetCheckpoint,
}

impl FileKind {
    /// The kind of the file called `file_name`.
    pub fn of(file_name: &str) -> Self {
        match file_name {
            "leader-epoch-checkpoint" => return Self::LeaderEpochCheckpoint,
            "partition.metadata" => return Self::PartitionMetadata,
            "high-watermark.checkpoint" | "log-start-offset.checkpoint" => {
                return Self::ModelOffsetCheckpoint
            }
            _ => {}
        }
        match file_name.rsplit_once('.').map(|(_, suffix)| suffix) {
            Some("index") => Self::OffsetIndex,
            Some("timeindex") => Self::TimeIndex,
            Some("txnindex") => Self::TransactionIndex,
            Some("snapshot") => Self::ProducerSnapshot,
            _ => Self::Segment,
        }
    }
}

/// One field's value.
enum Value {
    Int(i64),
    Text(String),
    /// Java's `OptionalLong`, which kafka-dump-log prints as `OptionalLong[N]` or
    /// `OptionalLong.empty`.
    Optional(Option<i64>),
}

/// One printed line: named fields in order.
struct Line {
    fields: Vec<(&'static str, Value)>,
    /// kafka-dump-log leaves a space at the end of a snapshot entry without batch metadata.
    kafka_trailing_space: bool,
}

impl Line {
    fn new(fields: Vec<(&'static str, Value)>) -> Self {
        Self {
            fields,
            kafka_trailing_space: false,
        }
    }
}

/// What decoding a side file gave: its lines, its problems, a damaged tail.
struct Decoded {
    /// A line about the whole file, before the entries, in our layouts only.
    header: Option<Line>,
    lines: Vec<Line>,
    /// Lines kafka-dump-log prints instead of entries (`FILE is empty.`).
    kafka_notes: Vec<String>,
    /// Whether the kafka layout prints the entries (not for a snapshot whose CRC is wrong,
    /// which Kafka refuses whole).
    kafka_prints_entries: bool,
    problems: Vec<RecordError>,
    tail: Option<(u64, RecordError)>,
}

impl Decoded {
    fn new() -> Self {
        Self {
            header: None,
            lines: Vec::new(),
            kafka_notes: Vec::new(),
            kafka_prints_entries: true,
            problems: Vec::new(),
            tail: None,
        }
    }
}

/// Decodes the side file `bytes` of `kind` and prints it.
pub(super) fn dump_side_file(
    kind: FileKind,
    bytes: &[u8],
    source: &Source,
    options: DumpOptions,
    out: &mut impl Write,
) -> io::Result<DumpSummary> {
    let base_offset = base_offset(&source.file_name);
    let mut decoded = match kind {
        FileKind::OffsetIndex => offset_index(bytes, base_offset.unwrap_or(0), source),
        FileKind::TimeIndex => time_index(bytes, base_offset.unwrap_or(0)),
        FileKind::TransactionIndex => transaction_index(bytes),
        FileKind::ProducerSnapshot => producer_snapshot(bytes),
        FileKind::LeaderEpochCheckpoint => leader_epoch_checkpoint(bytes),
        FileKind::PartitionMetadata => partition_metadata(bytes),
        FileKind::ModelOffsetCheckpoint => model_offset_checkpoint(bytes, &source.file_name),
        // Segments are dumped batch by batch by `dump_reader`; nothing to decode here.
        FileKind::Segment => Decoded::new(),
    };
    let indexed = matches!(kind, FileKind::OffsetIndex | FileKind::TimeIndex);
    if indexed && base_offset.is_none() {
        // Index offsets are relative to the base offset in the file's name.
        decoded.problems.push(RecordError::new(
            0,
            RecordErrorKind::CorruptRecord(format!(
                "{} is not named by a base offset; offsets are printed relative to 0",
                source.file_name
            )),
        ));
    }
    write_decoded(out, options.format, source, &decoded)?;
    Ok(summary_of(decoded, source))
}

fn write_decoded(
    out: &mut impl Write,
    format: OutputFormat,
    source: &Source,
    decoded: &Decoded,
) -> io::Result<()> {
    if format == OutputFormat::Kafka {
        writeln!(out, "Dumping {}", source.path)?;
        for note in &decoded.kafka_notes {
            writeln!(out, "{note}")?;
        }
    }
    if let (Some(header), false) = (&decoded.header, format == OutputFormat::Kafka) {
        write_line(out, format, header)?;
    }
    if format != OutputFormat::Kafka || decoded.kafka_prints_entries {
        for line in &decoded.lines {
            write_line(out, format, line)?;
        }
    }
    if let Some((position, error)) = &decoded.tail {
        let bytes = source.length.unwrap_or(*position).saturating_sub(*position);
        let tail = InvalidTail {
            position: *position,
            length: TailLength::Exact(bytes),
            error: error.clone(),
            file_name: source.file_name.clone(),
        };
        match format {
            OutputFormat::Json => super::output::write_json_tail(out, &tail)?,
            _ => super::output::write_tail_line(out, &tail)?,
        }
    }
    Ok(())
}

fn write_line(out: &mut impl Write, format: OutputFormat, line: &Line) -> io::Result<()> {
    match format {
        OutputFormat::Json => {
            let object: serde_json::Map<String, serde_json::Value> = line
                .fields
                .iter()
                .map(|(name, value)| {
                    let value = match value {
                        Value::Int(number) => serde_json::Value::from(*number),
                        Value::Text(text) => serde_json::Value::from(text.clone()),
                        Value::Optional(number) => serde_json::Value::from(*number),
                    };
                    (name.to_string(), value)
                })
                .collect();
            write_json(out, &object)
        }
        OutputFormat::Text => {
            let fields: Vec<String> = line
                .fields
                .iter()
                .map(|(name, value)| match value {
                    Value::Int(number) => format!("{name}={number}"),
                    Value::Text(text) => format!("{name}={text}"),
                    Value::Optional(number) => format!(
                        "{name}={}",
                        number.map_or_else(|| "none".to_string(), |n| n.to_string())
                    ),
                })
                .collect();
            writeln!(out, "{}", fields.join(" "))
        }
        OutputFormat::Kafka => {
            let fields: Vec<String> = line
                .fields
                .iter()
                .map(|(name, value)| match value {
                    Value::Int(number) => format!("{name}: {number}"),
                    Value::Text(text) => format!("{name}: {text}"),
                    Value::Optional(Some(number)) => format!("{name}: OptionalLong[{number}]"),
                    Value::Optional(None) => format!("{name}: OptionalLong.empty"),
                })
                .collect();
            let space = if line.kafka_trailing_space { " " } else { "" };
            writeln!(out, "{}{space}", fields.join(" "))
        }
    }
}

fn summary_of(decoded: Decoded, source: &Source) -> DumpSummary {
    let mut summary = DumpSummary {
        batches: decoded.lines.len(),
        invalid_batches: decoded.problems.len(),
        ..DumpSummary::default()
    };
    for problem in decoded.problems {
        summary.problem(problem);
    }
    summary.tail = decoded.tail.map(|(position, error)| InvalidTail {
        position,
        length: TailLength::Exact(source.length.unwrap_or(position).saturating_sub(position)),
        error,
        file_name: source.file_name.clone(),
    });
    summary
}

/// The base offset a segment's files are named by (`00000000000000000042.index` → 42).
fn base_offset(file_name: &str) -> Option<i64> {
    file_name.split('.').next()?.parse().ok()
}

/// Splits `bytes` into whole entries of `size` bytes; a partial entry at the end is the tail.
fn entries<'a>(bytes: &'a [u8], size: usize, decoded: &mut Decoded) -> Vec<&'a [u8]> {
    let whole = bytes.len() / size * size;
    if whole < bytes.len() {
        decoded.tail = Some((
            whole as u64,
            RecordError::new(
                whole as u64,
                RecordErrorKind::Truncated {
                    needed: size as u64,
                    available: (bytes.len() - whole) as u64,
                },
            ),
        ));
    }
    bytes[..whole].chunks_exact(size).collect()
}

fn be_i64(bytes: &[u8], at: usize) -> i64 {
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&bytes[at..at + 8]);
    i64::from_be_bytes(raw)
}

fn be_i32(bytes: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

fn be_i16(bytes: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([bytes[at], bytes[at + 1]])
}

/// `.index`: kafka-dump-log prints `offset: O position: P` per entry, `FILE is empty.` for
/// none, and stops at the first entry whose offset is the base offset after the first (the
/// zeros of a preallocated index).
fn offset_index(bytes: &[u8], base: i64, source: &Source) -> Decoded {
    let mut decoded = Decoded::new();
    let entries = entries(bytes, 8, &mut decoded);
    if entries.is_empty() {
        decoded
            .kafka_notes
            .push(format!("{} is empty.", source.path));
    }
    for (index, entry) in entries.iter().enumerate() {
        let offset = base.wrapping_add(i64::from(be_i32(entry, 0)));
        if index > 0 && offset == base {
            break;
        }
        decoded.lines.push(Line::new(vec![
            ("offset", Value::Int(offset)),
            ("position", Value::Int(i64::from(be_i32(entry, 4)))),
        ]));
    }
    decoded
}

/// `.timeindex`: `timestamp: T offset: O` per entry, stopping at a zero-filled entry as the
/// offset index does.
fn time_index(bytes: &[u8], base: i64) -> Decoded {
    let mut decoded = Decoded::new();
    let entries = entries(bytes, 12, &mut decoded);
    for (index, entry) in entries.iter().enumerate() {
        let offset = base.wrapping_add(i64::from(be_i32(entry, 8)));
        if index > 0 && offset == base {
            break;
        }
        decoded.lines.push(Line::new(vec![
            ("timestamp", Value::Int(be_i64(entry, 0))),
            ("offset", Value::Int(offset)),
        ]));
    }
    decoded
}

/// `.txnindex`: 34-byte entries (int16 version, producer id, first offset, last offset, last
/// stable offset), printed as kafka-dump-log does.
fn transaction_index(bytes: &[u8]) -> Decoded {
    let mut decoded = Decoded::new();
    for entry in entries(bytes, 34, &mut decoded) {
        decoded.lines.push(Line::new(vec![
            ("version", Value::Int(i64::from(be_i16(entry, 0)))),
            ("producerId", Value::Int(be_i64(entry, 2))),
            ("firstOffset", Value::Int(be_i64(entry, 10))),
            ("lastOffset", Value::Int(be_i64(entry, 18))),
            ("lastStableOffset", Value::Int(be_i64(entry, 26))),
        ]));
    }
    decoded
}

/// The only producer snapshot version Kafka writes and reads.
const SNAPSHOT_VERSION: i16 = 1;
/// Version (2 bytes) and CRC (4): the CRC-32C covers what follows.
const SNAPSHOT_ENTRIES_AT: usize = 6;
/// Producer id 8, epoch 2, last sequence 4, last offset 8, offset delta 4, timestamp 8,
/// coordinator epoch 4, current transaction's first offset 8.
const SNAPSHOT_ENTRY_SIZE: usize = 46;

/// `.snapshot`: `ProducerStateManager`'s file. kafka-dump-log prints each producer as
/// `producerId: … producerEpoch: … coordinatorEpoch: … currentTxnFirstOffset: … lastTimestamp:
/// …` and, when it has written data, `firstSequence: … lastSequence: … lastOffset: …
/// offsetDelta: … timestamp: …`; a bad version or CRC makes it refuse the file.
fn producer_snapshot(bytes: &[u8]) -> Decoded {
    let mut decoded = Decoded::new();
    if bytes.len() < SNAPSHOT_ENTRIES_AT + 4 {
        decoded.tail = Some((
            0,
            RecordError::new(
                0,
                RecordErrorKind::Truncated {
                    needed: (SNAPSHOT_ENTRIES_AT + 4) as u64,
                    available: bytes.len() as u64,
                },
            ),
        ));
        return decoded;
    }
    let version = be_i16(bytes, 0);
    let stored = be_i32(bytes, 2) as u32;
    let computed = crc32c::crc32c(&bytes[SNAPSHOT_ENTRIES_AT..]);
    let count = be_i32(bytes, SNAPSHOT_ENTRIES_AT);
    decoded.header = Some(Line::new(vec![
        ("version", Value::Int(i64::from(version))),
        ("crc", Value::Int(i64::from(stored))),
        ("valid", Value::Text((stored == computed).to_string())),
        ("entries", Value::Int(i64::from(count))),
    ]));
    if version != SNAPSHOT_VERSION {
        decoded.kafka_prints_entries = false;
        decoded.problems.push(RecordError::new(
            0,
            RecordErrorKind::UnsupportedMagic(version as i8),
        ));
        return decoded;
    }
    if stored != computed {
        decoded.kafka_prints_entries = false;
        decoded.problems.push(RecordError::new(
            2,
            RecordErrorKind::CrcMismatch { stored, computed },
        ));
    }
    snapshot_entries(bytes, count, &mut decoded);
    decoded
}

fn snapshot_entries(bytes: &[u8], count: i32, decoded: &mut Decoded) {
    let first = SNAPSHOT_ENTRIES_AT + 4;
    let available = (bytes.len() - first) / SNAPSHOT_ENTRY_SIZE;
    let wanted = usize::try_from(count).unwrap_or(0);
    if count < 0 || wanted > available || first + wanted * SNAPSHOT_ENTRY_SIZE != bytes.len() {
        let at = (first + wanted.min(available) * SNAPSHOT_ENTRY_SIZE) as u64;
        decoded.tail = Some((
            at,
            RecordError::new(
                SNAPSHOT_ENTRIES_AT as u64,
                RecordErrorKind::CorruptRecord(format!(
                    "{count} producer entries declared, {} bytes hold them",
                    bytes.len() - first
                )),
            ),
        ));
    }
    for index in 0..wanted.min(available) {
        let at = first + index * SNAPSHOT_ENTRY_SIZE;
        decoded
            .lines
            .push(snapshot_line(&bytes[at..at + SNAPSHOT_ENTRY_SIZE]));
    }
}

fn snapshot_line(entry: &[u8]) -> Line {
    let last_sequence = be_i32(entry, 10);
    let last_offset = be_i64(entry, 14);
    let offset_delta = be_i32(entry, 22);
    let timestamp = be_i64(entry, 26);
    let first_txn_offset = be_i64(entry, 38);
    let mut fields = vec![
        ("producerId", Value::Int(be_i64(entry, 0))),
        ("producerEpoch", Value::Int(i64::from(be_i16(entry, 8)))),
        ("coordinatorEpoch", Value::Int(i64::from(be_i32(entry, 34)))),
        (
            "currentTxnFirstOffset",
            Value::Optional((first_txn_offset >= 0).then_some(first_txn_offset)),
        ),
        ("lastTimestamp", Value::Int(timestamp)),
    ];
    // Kafka keeps batch metadata only for a producer that wrote data (last offset ≥ 0).
    let has_batch = last_offset >= 0;
    if has_batch {
        let first_sequence = if last_sequence >= 0 && offset_delta >= 0 {
            decrement_sequence(last_sequence, offset_delta)
        } else {
            last_sequence.wrapping_sub(offset_delta)
        };
        fields.extend([
            ("firstSequence", Value::Int(i64::from(first_sequence))),
            ("lastSequence", Value::Int(i64::from(last_sequence))),
            ("lastOffset", Value::Int(last_offset)),
            ("offsetDelta", Value::Int(i64::from(offset_delta))),
            ("timestamp", Value::Int(timestamp)),
        ]);
    }
    Line {
        fields,
        kafka_trailing_space: !has_batch,
    }
}

/// `leader-epoch-checkpoint`: `0`, the entry count, then `epoch startOffset` per line
/// (Kafka's `LeaderEpochCheckpointFile`; kafka-dump-log does not read it, so the kafka layout
/// uses its style: `epoch: E startOffset: O`).
fn leader_epoch_checkpoint(bytes: &[u8]) -> Decoded {
    let mut decoded = Decoded::new();
    let mut lines = text_lines(bytes);
    let header = |decoded: &mut Decoded, at: u64, reason: String| {
        decoded.tail = Some((
            at,
            RecordError::new(at, RecordErrorKind::CorruptRecord(reason)),
        ));
    };
    match lines.next() {
        Some((_, "0")) => {}
        Some((at, other)) => {
            header(
                &mut decoded,
                at,
                format!("unknown checkpoint version {other:?}"),
            );
            return decoded;
        }
        None => {
            header(&mut decoded, 0, "empty checkpoint file".to_string());
            return decoded;
        }
    }
    let Some((count_at, count)) = lines.next() else {
        header(
            &mut decoded,
            bytes.len() as u64,
            "no entry count".to_string(),
        );
        return decoded;
    };
    let Ok(count) = count.parse::<usize>() else {
        header(&mut decoded, count_at, format!("bad entry count {count:?}"));
        return decoded;
    };
    for (at, line) in lines.by_ref().take(count) {
        let parsed = line.split_once(' ').and_then(|(epoch, offset)| {
            Some((epoch.parse::<i32>().ok()?, offset.parse::<i64>().ok()?))
        });
        let Some((epoch, offset)) = parsed else {
            header(&mut decoded, at, format!("malformed entry {line:?}"));
            return decoded;
        };
        decoded.lines.push(Line::new(vec![
            ("epoch", Value::Int(i64::from(epoch))),
            ("startOffset", Value::Int(offset)),
        ]));
    }
    let present = decoded.lines.len();
    if present < count {
        header(
            &mut decoded,
            bytes.len() as u64,
            format!("{count} entries declared, {present} present"),
        );
    } else if let Some((at, extra)) = lines.next() {
        header(
            &mut decoded,
            at,
            format!("line after the {count} entries: {extra:?}"),
        );
    }
    decoded
}

/// `partition.metadata`: `version: 0` and `topic_id: ID` lines.
fn partition_metadata(bytes: &[u8]) -> Decoded {
    let mut decoded = Decoded::new();
    let mut fields = Vec::new();
    for (at, line) in text_lines(bytes) {
        match line.split_once(": ") {
            Some(("version", version)) => {
                fields.push(("version", Value::Text(version.to_string())))
            }
            Some(("topic_id", id)) => fields.push(("topicId", Value::Text(id.to_string()))),
            _ => {
                decoded.tail = Some((
                    at,
                    RecordError::new(
                        at,
                        RecordErrorKind::CorruptRecord(format!("unexpected line {line:?}")),
                    ),
                ));
                break;
            }
        }
    }
    if !fields.is_empty() {
        decoded.lines.push(Line::new(fields));
    }
    decoded
}

/// This model's `high-watermark.checkpoint` (`highWatermark: N`) or
/// `log-start-offset.checkpoint` (`logStartOffset: N`): one decimal offset on one line.
fn model_offset_checkpoint(bytes: &[u8], file_name: &str) -> Decoded {
    let name = if file_name.starts_with("high-watermark") {
        "highWatermark"
    } else {
        "logStartOffset"
    };
    let mut decoded = Decoded::new();
    let mut lines = text_lines(bytes);
    let problem = match (lines.next(), lines.next()) {
        (Some((at, line)), None) => match line.parse::<i64>() {
            Ok(offset) => {
                decoded
                    .lines
                    .push(Line::new(vec![(name, Value::Int(offset))]));
                None
            }
            Err(_) => Some((at, format!("not an offset: {line:?}"))),
        },
        (Some(_), Some((at, extra))) => Some((at, format!("line after the offset: {extra:?}"))),
        (None, _) => Some((0, "empty checkpoint file".to_string())),
    };
    if let Some((at, reason)) = problem {
        decoded.tail = Some((
            at,
            RecordError::new(at, RecordErrorKind::CorruptRecord(reason)),
        ));
    }
    decoded
}

/// Non-empty lines with their byte positions; bytes that are not UTF-8 become U+FFFD (and
/// then fail to parse, at their line).
fn text_lines(bytes: &[u8]) -> impl Iterator<Item = (u64, &str)> {
    let mut at = 0u64;
    bytes.split(|byte| *byte == b'\n').filter_map(move |raw| {
        let start = at;
        at += raw.len() as u64 + 1;
        let text = std::str::from_utf8(raw)
            .unwrap_or("\u{fffd}")
            .trim_end_matches('\r');
        (!text.is_empty()).then_some((start, text))
    })
}
