//! `mirrorsim dump-log`: prints a Kafka log segment batch by batch, like `kafka-dump-log`.
//!
//! Contract:
//! - Input is a segment: RecordBatch v2 batches laid end to end from byte 0. Batches are decoded
//!   with the codec's [`mirrorsim::record::BatchReader`], so each printed batch passed the length, magic, CRC-32C and
//!   compression checks, and each printed record passed the record-format checks.
//! - Text output: one line per batch, then one line per record indented by two spaces. Fields are
//!   `name=value`. A key, value or header value is `null`, a quoted string when it is printable
//!   UTF-8, and `0x`-prefixed hex otherwise. A control record shows its decoded type instead
//!   (`COMMIT coordinatorEpoch=N`, `ABORT coordinatorEpoch=N`,
//!   `MIRROR_PID_RESET sourceClusterId=ID`, `UNKNOWN type=N`).
//! - JSON output: one object per batch per line with the same field names; records are an array,
//!   and a payload is `null`, `{"text": "..."}` or `{"hex": "..."}` by the same rule.
//! - The first batch or record that does not decode ends the dump with
//!   [`DumpError::Corrupt`], whose error names the absolute byte position. Everything before it
//!   has been written: whole batches in both formats, and in text also the batch line and the
//!   records that decoded (JSON lines are for programs, which must not mistake half a batch for
//!   a whole one).
//! - Nothing here panics on bad input.

use std::fmt;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use mirrorsim::record::{
    parse_control_record, BatchHeader, ControlRecord, ControlRecordType, Record, RecordBatch,
    RecordError, RecordErrorKind, TimestampType, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD,
};
use serde::Serialize;

/// How the dump is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// `name=value` lines for people.
    Text,
    /// One JSON object per batch per line, for programs.
    Json,
}

/// Why a dump stopped early.
#[derive(Debug)]
pub enum DumpError {
    /// The segment file could not be read.
    Unreadable {
        /// The file that was asked for.
        path: PathBuf,
        /// What the operating system said.
        source: io::Error,
    },
    /// A batch or record did not decode; `batches` whole batches were dumped before it.
    Corrupt {
        /// Batches dumped completely before the failure.
        batches: usize,
        /// Length of the segment's valid prefix: where the failing batch starts, which is
        /// where log recovery would truncate.
        valid_bytes: u64,
        /// The codec's error, naming the absolute byte position.
        error: RecordError,
    },
    /// Reading the input failed part-way (reported as [`DumpError::Unreadable`] by
    /// [`dump_file`], which knows the path).
    ReadFailed {
        /// Where the batch being read starts.
        position: u64,
        /// What the operating system said.
        source: io::Error,
    },
    /// Writing the dump failed (for example, the reader closed the pipe).
    Output(io::Error),
}

impl fmt::Display for DumpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unreadable { path, source } => {
                write!(f, "cannot read segment file {}: {source}", path.display())
            }
            Self::Corrupt {
                batches,
                valid_bytes,
                error,
            } => {
                let plural = if *batches == 1 { "" } else { "es" };
                write!(
                    f,
                    "{error} (after {batches} good batch{plural}, {valid_bytes} valid bytes)"
                )
            }
            Self::ReadFailed { position, source } => {
                write!(f, "reading the batch at byte {position} failed: {source}")
            }
            Self::Output(error) => write!(f, "cannot write the dump: {error}"),
        }
    }
}

impl std::error::Error for DumpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Unreadable { source, .. } | Self::ReadFailed { source, .. } => Some(source),
            Self::Corrupt { error, .. } => Some(error),
            Self::Output(error) => Some(error),
        }
    }
}

impl From<io::Error> for DumpError {
    fn from(error: io::Error) -> Self {
        Self::Output(error)
    }
}

/// Reads the segment at `path` and dumps it to `out`; returns the number of batches dumped.
/// The file is read batch by batch as the dump goes (a FIFO or a device is read as it
/// delivers, and memory holds one batch at a time).
pub fn dump_file(
    path: &Path,
    format: OutputFormat,
    out: &mut impl Write,
) -> Result<usize, DumpError> {
    let unreadable = |source| DumpError::Unreadable {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(unreadable)?;
    dump_reader(io::BufReader::new(file), format, out).map_err(|error| match error {
        DumpError::ReadFailed { source, .. } => unreadable(source),
        other => other,
    })
}

/// Dumps the segment held in `bytes` (whose first byte is segment position 0) to `out`; returns
/// the number of batches dumped. See the module doc for the formats and the error rule.
pub fn dump(bytes: Bytes, format: OutputFormat, out: &mut impl Write) -> Result<usize, DumpError> {
    dump_reader(&bytes[..], format, out)
}

/// Dumps the segment `input` delivers (its first byte is segment position 0) to `out`, one
/// batch in memory at a time; returns the number of batches dumped.
pub fn dump_reader(
    mut input: impl io::Read,
    format: OutputFormat,
    out: &mut impl Write,
) -> Result<usize, DumpError> {
    let mut batches = 0;
    let mut position = 0u64;
    let corrupt = |batches, valid_bytes, error| DumpError::Corrupt {
        batches,
        valid_bytes,
        error,
    };
    while let Some(bytes) = next_batch_bytes(&mut input, position).map_err(|error| match error {
        BatchRead::Failed(source) => DumpError::ReadFailed { position, source },
        BatchRead::Corrupt(error) => corrupt(batches, position, error),
    })? {
        // A header whose offsets no log can hold is refused like a bad CRC: no line for it.
        let batch = RecordBatch::decode(&bytes, position)
            .and_then(|batch| check_offset_range(position, batch.header()).map(|()| batch))
            .map_err(|error| corrupt(batches, position, error))?;
        let (described, failure) = describe_batch(position, &batch);
        match format {
            OutputFormat::Text => write_text(out, &described)?,
            OutputFormat::Json if failure.is_none() => write_json(out, &described)?,
            OutputFormat::Json => {}
        }
        if let Some(error) = failure {
            return Err(corrupt(batches, position, error));
        }
        batches += 1;
        position += batch.size_in_bytes() as u64;
    }
    Ok(batches)
}

/// Why [`next_batch_bytes`] has no batch.
enum BatchRead {
    /// The input could not be read.
    Failed(io::Error),
    /// The bytes read cannot start a batch.
    Corrupt(RecordError),
}

/// The bytes of the batch starting at `position`: its 12-byte log overhead (base offset and
/// batch length), then as many of the declared length's bytes as the input has. `None` at a
/// clean end of input. A short read is left to the decoder, which names it (a truncated
/// batch); a length below the smallest batch is refused here, before any read it would size.
fn next_batch_bytes(input: &mut impl io::Read, position: u64) -> Result<Option<Bytes>, BatchRead> {
    let mut head = Vec::with_capacity(LOG_OVERHEAD);
    (&mut *input)
        .take(LOG_OVERHEAD as u64)
        .read_to_end(&mut head)
        .map_err(BatchRead::Failed)?;
    if head.is_empty() {
        return Ok(None);
    }
    if head.len() < LOG_OVERHEAD {
        return Ok(Some(Bytes::from(head)));
    }
    let length = i32::from_be_bytes([head[8], head[9], head[10], head[11]]);
    let minimum_length = (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32;
    if length < minimum_length {
        return Err(BatchRead::Corrupt(RecordError::new(
            position + 8,
            RecordErrorKind::InvalidBatchLength(length),
        )));
    }
    let mut bytes = head;
    (&mut *input)
        .take(length as u64)
        .read_to_end(&mut bytes)
        .map_err(BatchRead::Failed)?;
    Ok(Some(Bytes::from(bytes)))
}

/// One batch as printed.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct BatchDump {
    position: u64,
    base_offset: i64,
    last_offset: i64,
    count: i32,
    partition_leader_epoch: i32,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    is_transactional: bool,
    is_control: bool,
    timestamp_type: &'static str,
    max_timestamp: i64,
    crc: u32,
    /// Always true: a batch whose CRC does not match is an error, not a line.
    valid: bool,
    size: usize,
    records: Vec<RecordDump>,
}

/// One record as printed: a data record's payload or a control record's decoded type.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct RecordDump {
    offset: i64,
    timestamp: i64,
    sequence: i32,
    #[serde(flatten)]
    body: RecordBody,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum RecordBody {
    Data {
        key: Option<Payload>,
        value: Option<Payload>,
        headers: Vec<HeaderDump>,
    },
    Control {
        control: ControlDump,
    },
}

/// A non-null key, value or header value.
#[derive(Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
enum Payload {
    /// Printable UTF-8.
    Text(String),
    /// Anything else, as lower-case hex.
    Hex(String),
}

#[derive(Debug, Serialize)]
struct HeaderDump {
    key: String,
    value: Option<Payload>,
}

/// A decoded control record. `type` is Kafka's upper-case name.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ControlDump {
    #[serde(skip)]
    record_type: ControlRecordType,
    #[serde(rename = "type")]
    kind: &'static str,
    type_id: i16,
    #[serde(skip_serializing_if = "Option::is_none")]
    coordinator_epoch: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    source_cluster_id: Option<String>,
}

/// Describes `batch` (at segment byte `position`) with every record that decodes; the error is
/// the first record that does not, or a record-count mismatch found after the last one.
fn describe_batch(position: u64, batch: &RecordBatch) -> (BatchDump, Option<RecordError>) {
    let header = batch.header();
    let mut described = BatchDump {
        position,
        base_offset: header.base_offset,
        last_offset: header.last_offset(),
        count: header.records_count,
        partition_leader_epoch: header.partition_leader_epoch,
        producer_id: header.producer_id,
        producer_epoch: header.producer_epoch,
        base_sequence: header.base_sequence,
        is_transactional: header.is_transactional(),
        is_control: header.is_control(),
        timestamp_type: match header.timestamp_type() {
            TimestampType::CreateTime => "CreateTime",
            TimestampType::LogAppendTime => "LogAppendTime",
        },
        max_timestamp: header.max_timestamp,
        crc: header.crc,
        valid: true,
        size: batch.size_in_bytes(),
        records: Vec::new(),
    };
    let mut previous_delta = None;
    for record in batch.records_at(position) {
        let described_record = record.and_then(|record| {
            check_record_offset(position, header, previous_delta, &record)?;
            previous_delta = Some(record.offset_delta);
            describe_record(position, batch, &record)
        });
        match described_record {
            Ok(record) => described.records.push(record),
            Err(error) => return (described, Some(error)),
        }
    }
    // The record iterator stops after `recordsCount` records; this catches the rest (a negative
    // count, bytes left over after the last record).
    let failure = batch.validate_records(position).err();
    (described, failure)
}

/// Byte position of `lastOffsetDelta` in a batch header.
const LAST_OFFSET_DELTA_AT: u64 = 23;
/// Byte position of `recordsCount` in a batch header.
const RECORDS_COUNT_AT: u64 = 57;

/// The batch's offset range must be one a log can hold: a base offset of at least 0, a
/// last offset delta of at least 0 that does not carry the last offset past `i64::MAX` (the
/// base offset is outside the CRC, so this is where a damaged one shows), and no more records
/// than offsets (compaction may leave fewer).
fn check_offset_range(position: u64, header: &BatchHeader) -> Result<(), RecordError> {
    let corrupt = |at: u64, reason: String| {
        Err(RecordError::new(
            position + at,
            RecordErrorKind::CorruptRecord(reason),
        ))
    };
    if header.base_offset < 0 {
        return corrupt(0, format!("negative base offset {}", header.base_offset));
    }
    if header.last_offset_delta < 0 {
        return corrupt(
            LAST_OFFSET_DELTA_AT,
            format!("negative lastOffsetDelta {}", header.last_offset_delta),
        );
    }
    if header
        .base_offset
        .checked_add(i64::from(header.last_offset_delta))
        .is_none()
    {
        return corrupt(
            0,
            format!(
                "baseOffset {} + lastOffsetDelta {} overflows the largest offset",
                header.base_offset, header.last_offset_delta
            ),
        );
    }
    if i64::from(header.records_count) > i64::from(header.last_offset_delta) + 1 {
        return corrupt(
            RECORDS_COUNT_AT,
            format!(
                "{} records do not fit the {} offsets lastOffsetDelta {} spans",
                header.records_count,
                i64::from(header.last_offset_delta) + 1,
                header.last_offset_delta
            ),
        );
    }
    Ok(())
}

/// A record's offset delta must lie in the batch's range and grow from record to record.
fn check_record_offset(
    position: u64,
    header: &BatchHeader,
    previous_delta: Option<i32>,
    record: &Record,
) -> Result<(), RecordError> {
    let delta = record.offset_delta;
    let in_order = previous_delta.is_none_or(|previous| delta > previous);
    if (0..=header.last_offset_delta).contains(&delta) && in_order {
        return Ok(());
    }
    Err(RecordError::new(
        position + LAST_OFFSET_DELTA_AT,
        RecordErrorKind::CorruptRecord(format!(
            "record offset delta {delta} {} (lastOffsetDelta {})",
            if in_order {
                "lies outside the batch"
            } else {
                "does not follow the previous record's"
            },
            header.last_offset_delta
        )),
    ))
}

fn describe_record(
    position: u64,
    batch: &RecordBatch,
    record: &Record,
) -> Result<RecordDump, RecordError> {
    let body = if batch.is_control() {
        RecordBody::Control {
            control: describe_control(position, record)?,
        }
    } else {
        RecordBody::Data {
            key: record.key.as_deref().map(payload),
            value: record.value.as_deref().map(payload),
            headers: record
                .headers
                .iter()
                .map(|header| HeaderDump {
                    key: header.key.clone(),
                    value: header.value.as_deref().map(payload),
                })
                .collect(),
        }
    };
    Ok(RecordDump {
        offset: record.offset,
        timestamp: record.timestamp,
        sequence: record.sequence,
        body,
    })
}

/// Decodes a control record's key and value. A malformed one is reported at the start of the
/// batch's records region: the codec does not expose where each record starts, and Kafka writes
/// exactly one record per control batch.
fn describe_control(position: u64, record: &Record) -> Result<ControlDump, RecordError> {
    let key = record.key.as_deref().unwrap_or(&[]);
    let control = parse_control_record(key, record.value.as_deref()).map_err(|reason| {
        RecordError::new(
            position + RECORD_BATCH_OVERHEAD as u64,
            RecordErrorKind::CorruptControlRecord(format!(
                "record at offset {}: {reason}",
                record.offset
            )),
        )
    })?;
    let kind = control.record_type();
    let mut described = ControlDump {
        record_type: kind,
        kind: kind.name(),
        type_id: kind.id(),
        coordinator_epoch: None,
        source_cluster_id: None,
    };
    match control {
        ControlRecord::EndTransaction {
            coordinator_epoch, ..
        } => described.coordinator_epoch = Some(coordinator_epoch),
        ControlRecord::MirrorPidReset { source_cluster_id } => {
            described.source_cluster_id = Some(source_cluster_id);
        }
        ControlRecord::Kraft(_) | ControlRecord::Unknown { .. } => {}
    }
    Ok(described)
}

/// Printable UTF-8 (no control characters, so it cannot break a line) becomes text; anything
/// else becomes hex.
fn payload(bytes: &[u8]) -> Payload {
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.chars().any(char::is_control) => Payload::Text(text.to_string()),
        _ => Payload::Hex(bytes.iter().map(|byte| format!("{byte:02x}")).collect()),
    }
}

impl fmt::Display for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Debug quoting escapes `"` and `\`, so a value can never run into the next field.
            Self::Text(text) => write!(f, "{text:?}"),
            Self::Hex(hex) => write!(f, "0x{hex}"),
        }
    }
}

/// `null` or the payload.
struct Nullable<'a>(&'a Option<Payload>);

impl fmt::Display for Nullable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(payload) => payload.fmt(f),
            None => f.write_str("null"),
        }
    }
}

impl fmt::Display for ControlDump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind)?;
        if let Some(epoch) = self.coordinator_epoch {
            write!(f, " coordinatorEpoch={epoch}")?;
        }
        if let Some(id) = &self.source_cluster_id {
            write!(f, " sourceClusterId={}", token(id))?;
        }
        if let ControlRecordType::Unknown(type_id) = self.record_type {
            write!(f, " type={type_id}")?;
        }
        Ok(())
    }
}

/// A value printed bare when it is a plain identifier (as Kafka cluster ids are), quoted
/// otherwise so that spaces or `=` cannot be misread as further fields.
fn token(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if plain {
        text.to_string()
    } else {
        format!("{text:?}")
    }
}

fn write_text(out: &mut impl Write, batch: &BatchDump) -> io::Result<()> {
    writeln!(
        out,
        "position={} baseOffset={} lastOffset={} count={} partitionLeaderEpoch={} \
         producerId={} producerEpoch={} baseSequence={} isTransactional={} isControl={} \
         timestampType={} maxTimestamp={} crc=0x{:08x} valid={} size={}",
        batch.position,
        batch.base_offset,
        batch.last_offset,
        batch.count,
        batch.partition_leader_epoch,
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        batch.is_transactional,
        batch.is_control,
        batch.timestamp_type,
        batch.max_timestamp,
        batch.crc,
        batch.valid,
        batch.size,
    )?;
    for record in &batch.records {
        write_text_record(out, record)?;
    }
    Ok(())
}

fn write_text_record(out: &mut impl Write, record: &RecordDump) -> io::Result<()> {
    write!(
        out,
        "  offset={} timestamp={} sequence={} ",
        record.offset, record.timestamp, record.sequence
    )?;
    match &record.body {
        RecordBody::Control { control } => writeln!(out, "{control}"),
        RecordBody::Data {
            key,
            value,
            headers,
        } => {
            let headers: Vec<String> = headers
                .iter()
                .map(|header| format!("{:?}={}", header.key, Nullable(&header.value)))
                .collect();
            writeln!(
                out,
                "key={} value={} headers=[{}]",
                Nullable(key),
                Nullable(value),
                headers.join(", ")
            )
        }
    }
}

fn write_json(out: &mut impl Write, batch: &BatchDump) -> io::Result<()> {
    serde_json::to_writer(&mut *out, batch).map_err(io::Error::from)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirrorsim::record::{
        control_record_key, end_transaction_marker, mirror_pid_reset, BatchBuilder, MarkerProducer,
        RecordHeader,
    };

    const T0: i64 = 1_700_000_000_000;

    fn data_batch() -> RecordBatch {
        let mut builder = BatchBuilder::idempotent(1000, 0, 0);
        builder.append(
            T0,
            Some(Bytes::from_static(b"k0")),
            Some(Bytes::from_static(b"v0")),
            Vec::new(),
        );
        builder.append(
            T0 + 5,
            None,
            Some(Bytes::from_static(&[0, 0xff])),
            vec![RecordHeader {
                key: "h".to_string(),
                value: None,
            }],
        );
        builder.build()
    }

    fn segment(batches: &[RecordBatch]) -> Bytes {
        let mut bytes = Vec::new();
        for batch in batches {
            bytes.extend_from_slice(batch.bytes());
        }
        Bytes::from(bytes)
    }

    fn dump_to_string(bytes: Bytes, format: OutputFormat) -> (String, Result<usize, DumpError>) {
        let mut out = Vec::new();
        let result = dump(bytes, format, &mut out);
        (
            String::from_utf8(out).expect("dump output is UTF-8"),
            result,
        )
    }

    #[test]
    fn payload_is_text_only_when_printable_utf8() {
        assert_eq!(payload(b"k0"), Payload::Text("k0".to_string()));
        assert_eq!(payload(b""), Payload::Text(String::new()));
        assert_eq!(payload(b"a\nb"), Payload::Hex("610a62".to_string()));
        assert_eq!(payload(&[0xff, 0x00]), Payload::Hex("ff00".to_string()));
        assert_eq!(
            Payload::Text("say \"hi\"".into()).to_string(),
            r#""say \"hi\"""#
        );
        assert_eq!(Payload::Hex("ff00".into()).to_string(), "0xff00");
    }

    #[test]
    fn text_dump_prints_batch_and_record_lines() {
        let batch = data_batch().stamped_by_leader(10, 3, None);
        let (text, result) =
            dump_to_string(segment(std::slice::from_ref(&batch)), OutputFormat::Text);
        assert_eq!(result.expect("valid segment"), 1);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        let expected_batch = format!(
            "position=0 baseOffset=10 lastOffset=11 count=2 partitionLeaderEpoch=3 \
             producerId=1000 producerEpoch=0 baseSequence=0 isTransactional=false \
             isControl=false timestampType=CreateTime maxTimestamp={} crc=0x{:08x} valid=true \
             size={}",
            T0 + 5,
            batch.header().crc,
            batch.size_in_bytes()
        );
        assert_eq!(lines[0], expected_batch);
        assert_eq!(
            lines[1],
            format!("  offset=10 timestamp={T0} sequence=0 key=\"k0\" value=\"v0\" headers=[]")
        );
        assert_eq!(
            lines[2],
            format!(
                "  offset=11 timestamp={} sequence=1 key=null value=0x00ff headers=[\"h\"=null]",
                T0 + 5
            )
        );
    }

    #[test]
    fn text_dump_decodes_every_control_type() {
        let producer = MarkerProducer {
            producer_id: 7,
            producer_epoch: 2,
        };
        let mut unknown = BatchBuilder::default();
        unknown.control = true;
        unknown.append(
            T0,
            Some(Bytes::copy_from_slice(&control_record_key(
                ControlRecordType::Unknown(42),
            ))),
            None,
            Vec::new(),
        );
        let batches = [
            end_transaction_marker(producer, true, 5, T0),
            end_transaction_marker(producer, false, 6, T0).with_base_offset(1),
            mirror_pid_reset("cluster-a", T0).with_base_offset(2),
            mirror_pid_reset("cluster a", T0).with_base_offset(3),
            unknown.build().with_base_offset(4),
        ];
        let (text, result) = dump_to_string(segment(&batches), OutputFormat::Text);
        assert_eq!(result.expect("valid segment"), 5);
        let records: Vec<&str> = text.lines().filter(|line| line.starts_with("  ")).collect();
        let tails: Vec<&str> = records
            .iter()
            .map(|line| line.split_once("sequence=-1 ").expect("control line").1)
            .collect();
        assert_eq!(
            tails,
            [
                "COMMIT coordinatorEpoch=5",
                "ABORT coordinatorEpoch=6",
                "MIRROR_PID_RESET sourceClusterId=cluster-a",
                "MIRROR_PID_RESET sourceClusterId=\"cluster a\"",
                "UNKNOWN type=42",
            ]
        );
    }

    #[test]
    fn json_dump_has_the_text_fields() {
        let batches = [
            data_batch(),
            mirror_pid_reset("cluster-a", T0).with_base_offset(2),
        ];
        let (text, result) = dump_to_string(segment(&batches), OutputFormat::Json);
        assert_eq!(result.expect("valid segment"), 2);
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["position"], 0);
        assert_eq!(lines[0]["count"], 2);
        assert_eq!(lines[0]["valid"], true);
        assert_eq!(lines[0]["records"][0]["key"]["text"], "k0");
        assert_eq!(lines[0]["records"][1]["key"], serde_json::Value::Null);
        assert_eq!(lines[0]["records"][1]["value"]["hex"], "00ff");
        assert_eq!(lines[0]["records"][1]["headers"][0]["key"], "h");
        let control = &lines[1]["records"][0]["control"];
        assert_eq!(control["type"], "MIRROR_PID_RESET");
        assert_eq!(control["typeId"], 7);
        assert_eq!(control["sourceClusterId"], "cluster-a");
        assert_eq!(lines[1]["position"], batches[0].size_in_bytes());
    }

    #[test]
    fn corrupt_second_batch_stops_with_its_byte_position() {
        let first = data_batch();
        let second = data_batch().with_base_offset(2);
        let mut bytes = segment(&[first.clone(), second]).to_vec();
        let second_at = first.size_in_bytes();
        bytes[second_at + 30] ^= 0x01;
        for format in [OutputFormat::Text, OutputFormat::Json] {
            let (text, result) = dump_to_string(Bytes::from(bytes.clone()), format);
            assert_eq!(
                text.lines().count(),
                if format == OutputFormat::Text { 3 } else { 1 }
            );
            match result {
                Err(DumpError::Corrupt {
                    batches: 1,
                    valid_bytes,
                    error,
                }) => {
                    assert_eq!(valid_bytes, second_at as u64);
                    assert_eq!(error.position, (second_at + 17) as u64);
                    assert!(error
                        .to_string()
                        .starts_with(&format!("at byte {}", second_at + 17)));
                }
                other => panic!("expected a corrupt-batch error, got {other:?}"),
            }
        }
    }

    #[test]
    fn truncated_segment_reports_the_last_batch_start() {
        let first = data_batch();
        let bytes = segment(&[first.clone(), data_batch()]);
        let cut = bytes.len() - 3;
        let (_, result) = dump_to_string(bytes.slice(..cut), OutputFormat::Text);
        match result {
            Err(DumpError::Corrupt {
                batches: 1,
                valid_bytes,
                error,
            }) => {
                assert_eq!(valid_bytes, first.size_in_bytes() as u64);
                assert_eq!(error.position, first.size_in_bytes() as u64);
                assert!(matches!(error.kind, RecordErrorKind::Truncated { .. }));
            }
            other => panic!("expected a truncation error, got {other:?}"),
        }
    }

    #[test]
    fn malformed_control_record_is_an_error_not_a_line() {
        let mut builder = BatchBuilder::default();
        builder.control = true;
        builder.append(T0, Some(Bytes::from_static(&[0, 0])), None, Vec::new());
        let (text, result) = dump_to_string(segment(&[builder.build()]), OutputFormat::Json);
        assert!(text.is_empty());
        match result {
            Err(DumpError::Corrupt {
                batches: 0,
                valid_bytes: 0,
                error,
            }) => {
                assert_eq!(error.position, RECORD_BATCH_OVERHEAD as u64);
                assert!(matches!(
                    error.kind,
                    RecordErrorKind::CorruptControlRecord(_)
                ));
            }
            other => panic!("expected a control-record error, got {other:?}"),
        }
    }

    #[test]
    fn empty_segment_dumps_nothing() {
        let (text, result) = dump_to_string(Bytes::new(), OutputFormat::Text);
        assert!(text.is_empty());
        assert_eq!(result.expect("an empty segment is valid"), 0);
    }

    #[test]
    fn missing_file_is_unreadable_and_names_the_file() {
        let path = Path::new("/nonexistent/mirrorsim/segment.log");
        let error = dump_file(path, OutputFormat::Text, &mut Vec::new()).expect_err("missing");
        assert!(matches!(error, DumpError::Unreadable { .. }));
        assert!(error
            .to_string()
            .contains("/nonexistent/mirrorsim/segment.log"));
    }
}
