//! What dump-log prints about one batch, decoded once and written by any of the formats.
//!
//! Contract: [`describe_batch`] never fails and never panics. It describes every header field
//! of the batch (whose CRC may be wrong: `valid` says so) and every record that decodes; the
//! first problem found after the header (impossible offsets, a payload that does not
//! decompress, a record that does not decode, a malformed control record, bytes left after the
//! last record) ends the records and is kept in `error`, with its byte position.

use bytes::Bytes;
use mirrorsim::record::{
    parse_control_record, BatchHeader, ControlRecord, ControlRecordType, InspectedBatch, Record,
    RecordBatch, RecordError, RecordErrorKind, TimestampType, RECORD_BATCH_OVERHEAD,
};
use serde::Serialize;

use super::decode::Decoded;

/// One batch as printed.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct BatchDump {
    pub position: u64,
    pub base_offset: i64,
    pub last_offset: i64,
    pub count: i32,
    pub partition_leader_epoch: i32,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub last_sequence: i32,
    pub is_transactional: bool,
    pub is_control: bool,
    /// The delete horizon (attribute bit 6), `null` when the bit is clear.
    pub delete_horizon_ms: Option<i64>,
    pub timestamp_type: &'static str,
    pub max_timestamp: i64,
    pub magic: i8,
    /// Kafka's codec name: `none`, `gzip`, `snappy`, `lz4`, `zstd`.
    pub compression: String,
    pub crc: u32,
    /// Whether the stored CRC matches the bytes (kafka-dump-log's `isvalid`).
    pub valid: bool,
    pub size: usize,
    /// The first problem found after the header, with its byte position.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip)]
    pub error_detail: Option<RecordError>,
    pub records: Vec<RecordDump>,
}

/// A length-delimited entry that is not a v2 batch (magic 0 or 1, or a length no v2 batch
/// has): skipped by its length, shown as one line.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SkippedDump {
    pub position: u64,
    pub size: usize,
    pub magic: i8,
    pub valid: bool,
    pub error: String,
}

/// One record as printed: a data record's payload or a control record's decoded type.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RecordDump {
    pub offset: i64,
    pub timestamp: i64,
    pub sequence: i32,
    /// Key length, −1 for a null key.
    pub key_size: i32,
    /// Value length, −1 for a null value.
    pub value_size: i32,
    #[serde(flatten)]
    pub body: RecordBody,
    /// The raw key and value, for formats that print them as Kafka's string decoder does.
    #[serde(skip)]
    pub raw_key: Option<Bytes>,
    #[serde(skip)]
    pub raw_value: Option<Bytes>,
    /// A magic 0 or 1 record's own CRC check (each legacy message has one); `None` in a v2
    /// batch, whose CRC is the batch's.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub legacy: Option<LegacyCheck>,
    /// The key and payload as a topic decoder reads them (`--offsets-decoder` and the like),
    /// set only when one was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decoded: Option<Decoded>,
}

/// A magic 0 or 1 message's stored CRC-32 and whether it matches its bytes.
#[derive(Debug, Serialize)]
pub(super) struct LegacyCheck {
    pub crc: u32,
    pub valid: bool,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum RecordBody {
    Data {
        key: Option<Payload>,
        value: Option<Payload>,
        headers: Vec<HeaderDump>,
    },
    Control {
        /// Control records carry headers too (Kafka writes none); kept for `headerKeys`.
        #[serde(skip)]
        header_keys: Vec<String>,
        control: ControlDump,
    },
}

impl RecordBody {
    /// The record's header keys in stored order.
    pub fn header_keys(&self) -> Vec<&str> {
        match self {
            Self::Data { headers, .. } => headers.iter().map(|h| h.key.as_str()).collect(),
            Self::Control { header_keys, .. } => header_keys.iter().map(String::as_str).collect(),
        }
    }
}

/// A non-null key, value or header value.
#[derive(Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) enum Payload {
    /// Printable UTF-8.
    Text(String),
    /// Anything else, as lower-case hex.
    Hex(String),
}

#[derive(Debug, Serialize)]
pub(super) struct HeaderDump {
    pub key: String,
    pub value: Option<Payload>,
}

/// A decoded control record. `type` is Kafka's upper-case name.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ControlDump {
    #[serde(skip)]
    pub record_type: ControlRecordType,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub type_id: i16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coordinator_epoch: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_cluster_id: Option<String>,
}

/// Describes the batch at segment byte `position`; with `read_records` false only the header
/// (kafka-dump-log without `--deep-iteration` or `--print-data-log`).
pub(super) fn describe_batch(
    position: u64,
    inspected: &InspectedBatch,
    read_records: bool,
) -> BatchDump {
    let batch = &inspected.batch;
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
        last_sequence: header.last_sequence(),
        is_transactional: header.is_transactional(),
        is_control: header.is_control(),
        delete_horizon_ms: header.delete_horizon_ms(),
        timestamp_type: match header.timestamp_type() {
            TimestampType::CreateTime => "CreateTime",
            TimestampType::LogAppendTime => "LogAppendTime",
        },
        max_timestamp: header.max_timestamp,
        magic: header.magic,
        compression: header.compression().name(),
        crc: header.crc,
        valid: inspected.crc_valid(),
        size: batch.size_in_bytes(),
        error: None,
        error_detail: None,
        records: Vec::new(),
    };
    let failure = check_offset_range(position, header)
        .and_then(|()| {
            if read_records {
                describe_records(position, batch, &mut described.records)
            } else {
                Ok(())
            }
        })
        .err();
    if let Some(error) = failure {
        described.error = Some(error.to_string());
        described.error_detail = Some(error);
    }
    described
}

/// Decodes every record into `records` (one decompression for a compressed batch); the error
/// is the first record that does not describe, or what the record layer's validation finds
/// after the last one (a record-count mismatch, bytes left over).
fn describe_records(
    position: u64,
    batch: &RecordBatch,
    records: &mut Vec<RecordDump>,
) -> Result<(), RecordError> {
    let header = batch.header();
    let mut previous_delta = None;
    let mut first_failure = None;
    let validated = batch.validate_records_with(position, |record| {
        if first_failure.is_some() {
            return;
        }
        let described = check_record_offset(position, header, previous_delta, record)
            .and_then(|()| describe_record(position, batch, record));
        previous_delta = Some(record.offset_delta);
        match described {
            Ok(described) => records.push(described),
            Err(error) => first_failure = Some(error),
        }
    });
    match first_failure {
        Some(error) => Err(error),
        None => validated,
    }
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
            header_keys: record.headers.iter().map(|h| h.key.clone()).collect(),
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
        key_size: size_of(&record.key),
        value_size: size_of(&record.value),
        body,
        raw_key: record.key.clone(),
        raw_value: record.value.clone(),
        legacy: None,
        decoded: None,
    })
}

/// Kafka's `keySize`/`valueSize`: the length, −1 for null.
fn size_of(bytes: &Option<Bytes>) -> i32 {
    bytes.as_ref().map_or(-1, |bytes| bytes.len() as i32)
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
pub(super) fn payload(bytes: &[u8]) -> Payload {
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.chars().any(char::is_control) => Payload::Text(text.to_string()),
        _ => Payload::Hex(bytes.iter().map(|byte| format!("{byte:02x}")).collect()),
    }
}
