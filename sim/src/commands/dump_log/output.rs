//! The three layouts of dump-log: our `name=value` text, one JSON object per line, and
//! kafka-dump-log's own text (`--format kafka`), written from the same descriptions.
//!
//! Contract: every writer writes whole lines and nothing but its layout; errors go to the
//! caller's summary (and so to stderr), except that our text and JSON carry a batch's error in
//! its `error` field. The kafka layout follows `DumpLogSegments.scala` (`printBatchLevel` and
//! `dumpLog`) field for field; where it cannot be exact (KRaft snapshot/voters control records,
//! which Kafka prints as JSON, and entries that are not v2 batches) the README says so.

use std::fmt;
use std::io::{self, Write};

use mirrorsim::record::ControlRecordType;

use super::model::{BatchDump, ControlDump, Payload, RecordBody, RecordDump, SkippedDump};
use super::{InvalidTail, TailLength};

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

impl fmt::Display for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Debug quoting escapes `"` and `\`, so a value can never run into the next field.
            Self::Text(text) => write!(f, "{text:?}"),
            Self::Hex(hex) => write!(f, "0x{hex}"),
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

/// Our text layout: the batch line, then one indented line per record.
pub(super) fn write_text(out: &mut impl Write, batch: &BatchDump) -> io::Result<()> {
    write!(
        out,
        "position={} baseOffset={} lastOffset={} count={} partitionLeaderEpoch={} \
         producerId={} producerEpoch={} baseSequence={} lastSequence={} isTransactional={} \
         isControl={} deleteHorizonMs={} timestampType={} maxTimestamp={} magic={} \
         compression={} crc=0x{:08x} valid={} size={}",
        batch.position,
        batch.base_offset,
        batch.last_offset,
        batch.count,
        batch.partition_leader_epoch,
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        batch.last_sequence,
        batch.is_transactional,
        batch.is_control,
        batch
            .delete_horizon_ms
            .map_or_else(|| "none".to_string(), |ms| ms.to_string()),
        batch.timestamp_type,
        batch.max_timestamp,
        batch.magic,
        batch.compression,
        batch.crc,
        batch.valid,
        batch.size,
    )?;
    match &batch.error {
        Some(error) => writeln!(out, " error={error:?}")?,
        None => writeln!(out)?,
    }
    for record in &batch.records {
        write_text_record(out, record)?;
    }
    Ok(())
}

fn write_text_record(out: &mut impl Write, record: &RecordDump) -> io::Result<()> {
    write!(
        out,
        "  offset={} timestamp={} sequence={} keySize={} valueSize={} ",
        record.offset, record.timestamp, record.sequence, record.key_size, record.value_size
    )?;
    match &record.body {
        RecordBody::Control { control, .. } => writeln!(out, "{control}"),
        RecordBody::Data {
            key,
            value,
            headers,
        } => {
            let headers: Vec<String> = headers
                .iter()
                .map(|header| format!("{:?}={}", header.key, Nullable(&header.value)))
                .collect();
            write!(
                out,
                "key={} value={} headers=[{}]",
                Nullable(key),
                Nullable(value),
                headers.join(", ")
            )?;
            if let Some(check) = &record.legacy {
                write!(out, " crc=0x{:08x} valid={}", check.crc, check.valid)?;
            }
            match &record.decoded {
                Some(decoded) => {
                    write!(out, " decoded=")?;
                    write_json(out, decoded)
                }
                None => writeln!(out),
            }
        }
    }
}

/// One JSON object on one line.
pub(super) fn write_json(out: &mut impl Write, value: &impl serde::Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value).map_err(io::Error::from)?;
    writeln!(out)
}

/// An entry that is not a v2 batch, in our text layout.
pub(super) fn write_text_skipped(out: &mut impl Write, skipped: &SkippedDump) -> io::Result<()> {
    writeln!(
        out,
        "position={} size={} magic={} valid={} error={:?}",
        skipped.position, skipped.size, skipped.magic, skipped.valid, skipped.error
    )
}

/// The damaged tail, as kafka-dump-log reports it (its wording is used by every text layout).
pub(super) fn write_tail_line(out: &mut impl Write, tail: &InvalidTail) -> io::Result<()> {
    match tail.length {
        TailLength::Exact(bytes) => writeln!(
            out,
            "Found {bytes} invalid bytes at the end of {}",
            tail.file_name
        ),
        TailLength::AtLeast(bytes) => writeln!(
            out,
            "Found at least {bytes} invalid bytes at the end of {} (the input did not end)",
            tail.file_name
        ),
    }
}

/// The damaged tail as a JSON object.
pub(super) fn write_json_tail(out: &mut impl Write, tail: &InvalidTail) -> io::Result<()> {
    let (bytes, exact) = match tail.length {
        TailLength::Exact(bytes) => (bytes, true),
        TailLength::AtLeast(bytes) => (bytes, false),
    };
    let object = serde_json::json!({
        "invalidBytes": bytes,
        "exact": exact,
        "position": tail.position,
        "file": tail.file_name,
        "error": tail.error.to_string(),
    });
    write_json(out, &object)
}

/// kafka-dump-log's batch line (`printBatchLevel` for magic 2) and, when the records were
/// read, one `| offset: …` line per record (`dumpLog`'s deep iteration), with the key and
/// payload of a data record that was decoded (`--print-data-log` or a topic decoder).
pub(super) fn write_kafka_batch(out: &mut impl Write, batch: &BatchDump) -> io::Result<()> {
    if batch.magic < 2 {
        write_kafka_legacy_entry_line(out, batch)?;
    } else {
        write_kafka_batch_line(out, batch)?;
    }
    for record in &batch.records {
        write_kafka_record(out, batch.timestamp_type, record)?;
    }
    Ok(())
}

/// `printBatchLevel`'s line for a v2 batch: its own fields, then the ones every entry has.
fn write_kafka_batch_line(out: &mut impl Write, batch: &BatchDump) -> io::Result<()> {
    let delete_horizon = batch.delete_horizon_ms.map_or_else(
        || "OptionalLong.empty".to_string(),
        |ms| format!("OptionalLong[{ms}]"),
    );
    write!(
        out,
        "baseOffset: {} lastOffset: {} count: {} baseSequence: {} lastSequence: {} \
         producerId: {} producerEpoch: {} partitionLeaderEpoch: {} isTransactional: {} \
         isControl: {} deleteHorizonMs: {} ",
        batch.base_offset,
        batch.last_offset,
        batch.count,
        batch.base_sequence,
        batch.last_sequence,
        batch.producer_id,
        batch.producer_epoch,
        batch.partition_leader_epoch,
        batch.is_transactional,
        batch.is_control,
        delete_horizon,
    )?;
    write_kafka_entry_fields(out, batch)
}

/// `printBatchLevel`'s line for a magic 0 or 1 message (`offset:` its last offset, then the
/// fields every entry has); its records (`write_kafka_record`) carry each message's own
/// `isValid` and `crc`, closed by the `}` Kafka's format string leaves there.
fn write_kafka_legacy_entry_line(out: &mut impl Write, batch: &BatchDump) -> io::Result<()> {
    write!(out, "offset: {} ", batch.last_offset)?;
    write_kafka_entry_fields(out, batch)
}

/// The end of `printBatchLevel`'s line, the same for every magic.
fn write_kafka_entry_fields(out: &mut impl Write, batch: &BatchDump) -> io::Result<()> {
    writeln!(
        out,
        "position: {} {}: {} size: {} magic: {} compresscodec: {} crc: {} isvalid: {}",
        batch.position,
        batch.timestamp_type,
        batch.max_timestamp,
        batch.size,
        batch.magic,
        batch.compression,
        batch.crc,
        batch.valid,
    )
}

fn write_kafka_record(
    out: &mut impl Write,
    timestamp_type: &str,
    record: &RecordDump,
) -> io::Result<()> {
    write!(
        out,
        "| offset: {} {timestamp_type}: {} keySize: {} valueSize: {}",
        record.offset, record.timestamp, record.key_size, record.value_size,
    )?;
    match &record.legacy {
        Some(check) => write!(out, " isValid: {} crc: {}}}", check.valid, check.crc)?,
        None => write!(
            out,
            " sequence: {} headerKeys: [{}]",
            record.sequence,
            record.body.header_keys().join(",")
        )?,
    }
    match &record.body {
        RecordBody::Control { control, .. } => write_kafka_control(out, control)?,
        RecordBody::Data { .. } => {
            if let Some(decoded) = &record.decoded {
                if let Some(key) = &decoded.key {
                    write!(out, " key: {key}")?;
                }
                if let Some(payload) = &decoded.payload {
                    write!(out, " payload: {payload}")?;
                }
            }
        }
    }
    writeln!(out)
}

/// Kafka prints ABORT and COMMIT as `endTxnMarker: … coordinatorEpoch: …`, KRaft's snapshot
/// and voter records as JSON (not decoded here: their type is printed instead), and any other
/// type as `controlType: NAME(id)`; type 7 is named MIRROR_PID_RESET as a KIP-1279 broker would.
fn write_kafka_control(out: &mut impl Write, control: &ControlDump) -> io::Result<()> {
    match (control.record_type, control.coordinator_epoch) {
        (ControlRecordType::Abort | ControlRecordType::Commit, Some(epoch)) => write!(
            out,
            " endTxnMarker: {} coordinatorEpoch: {epoch}",
            control.kind
        ),
        _ => write!(out, " controlType: {}({})", control.kind, control.type_id),
    }
}

/// An entry that is neither a v2 batch nor a magic 0/1 message (which Kafka would refuse with
/// an exception): named and skipped by its length.
pub(super) fn write_kafka_skipped(out: &mut impl Write, skipped: &SkippedDump) -> io::Result<()> {
    writeln!(
        out,
        "position: {} size: {} magic: {} isvalid: false error: {}",
        skipped.position, skipped.size, skipped.magic, skipped.error
    )
}
