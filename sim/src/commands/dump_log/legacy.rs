//! Magic 0 and 1 message sets (Kafka's `LegacyRecord`, the format before RecordBatch v2, still
//! found on old or upgraded clusters), described for dump-log as kafka-dump-log reads them.
//!
//! Contract: [`describe_legacy`] never panics. An entry is one message: offset (8), size (4),
//! CRC-32 of the rest (4), magic (1), attributes (1), a timestamp (8, magic 1 only), key and
//! value (each a 4-byte length, −1 for null, then the bytes). An uncompressed message is one
//! record; a compressed one (attribute bits 0–2: gzip, snappy, lz4) is a wrapper whose value is
//! a compressed message set of inner messages, each a record: under magic 1 their offsets are
//! relative (the wrapper's offset is the last inner record's absolute offset), under magic 0
//! absolute. The entry is described like a v2 batch (the v2-only fields −1, `NoTimestampType`
//! under magic 0), and each record carries its own CRC check. A problem inside the entry
//! (a payload that does not decompress, an inner message that does not parse, a wrapper inside
//! a wrapper) ends the records and is kept in `error`; only an entry too short to be a message
//! at all is refused (`None`), and the caller skips it by its length.

use bytes::Bytes;
use mirrorsim::record::{
    decompress, decompress_magic_v0, CompressionType, DecompressFailure, RecordError,
    RecordErrorKind, DEFAULT_DECOMPRESSED_LIMIT, LOG_OVERHEAD,
};

use super::model::{payload, BatchDump, LegacyCheck, RecordBody, RecordDump};

/// Where the CRC-covered part begins (the magic byte).
const MAGIC_AT: usize = 16;
/// Attribute bit 3: the timestamp is the broker's (LogAppendTime), magic 1 only.
const LOG_APPEND_TIME_BIT: u8 = 0x08;

/// One message parsed from its entry.
struct Message {
    offset: i64,
    crc: u32,
    /// The CRC-32 of the bytes the CRC field covers.
    computed_crc: u32,
    valid: bool,
    magic: i8,
    attributes: u8,
    /// −1 under magic 0.
    timestamp: i64,
    key: Option<Bytes>,
    value: Option<Bytes>,
}

impl Message {
    fn codec(&self) -> CompressionType {
        CompressionType::from_bits(self.attributes)
    }

    fn timestamp_type(&self) -> &'static str {
        match (self.magic, self.attributes & LOG_APPEND_TIME_BIT != 0) {
            (0, _) => "NoTimestampType",
            (_, true) => "LogAppendTime",
            (_, false) => "CreateTime",
        }
    }
}

/// Describes the magic 0 or 1 entry `entry` (log overhead included) at segment byte
/// `position`, its records too when `read_records`, with the CRC its bytes have (for the
/// report of a mismatch); `None` when it is not a message.
pub(super) fn describe_legacy(
    position: u64,
    entry: &Bytes,
    read_records: bool,
) -> Option<(BatchDump, u32)> {
    let wrapper = parse_message(entry).ok()?;
    let codec = wrapper.codec();
    let mut described = BatchDump {
        position,
        base_offset: wrapper.offset,
        last_offset: wrapper.offset,
        count: 1,
        partition_leader_epoch: -1,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        last_sequence: -1,
        is_transactional: false,
        is_control: false,
        delete_horizon_ms: None,
        timestamp_type: wrapper.timestamp_type(),
        max_timestamp: wrapper.timestamp,
        magic: wrapper.magic,
        compression: codec.name(),
        crc: wrapper.crc,
        valid: wrapper.valid,
        size: entry.len(),
        error: None,
        error_detail: None,
        records: Vec::new(),
    };
    if codec == CompressionType::None {
        if read_records {
            described
                .records
                .push(record_of(&wrapper, wrapper.offset, wrapper.timestamp));
        }
        return Some((described, wrapper.computed_crc));
    }
    // The count and first offset need the inner messages, as Java's legacy batch does.
    match inner_records(position, &wrapper) {
        Ok(records) => {
            described.count = records.len() as i32;
            described.base_offset = records.first().map_or(wrapper.offset, |r| r.offset);
            if read_records {
                described.records = records;
            }
        }
        Err(error) => {
            described.count = 0;
            described.error = Some(error.to_string());
            described.error_detail = Some(error);
        }
    }
    Some((described, wrapper.computed_crc))
}

/// The records of a compressed wrapper, with absolute offsets and the timestamps Java gives
/// them (the wrapper's under LogAppendTime); on a problem, its error and no records: Java
/// reads every inner message of a wrapper before it gives the first (a magic 1 wrapper's
/// offsets are relative to the last one), so a bad one fails them all.
fn inner_records(position: u64, wrapper: &Message) -> Result<Vec<RecordDump>, RecordError> {
    // The compressed payload begins after the value's 4-byte length.
    let value_at = position + value_position(wrapper) as u64 + 4;
    let Some(value) = &wrapper.value else {
        return Err(corrupt(
            value_at - 4,
            "a compressed message has no value".to_owned(),
        ));
    };
    let codec = wrapper.codec();
    let name = codec.codec_name().unwrap_or("unknown");
    let decompressor = if wrapper.magic == 0 {
        decompress_magic_v0
    } else {
        decompress
    };
    let raw = decompressor(codec, value, DEFAULT_DECOMPRESSED_LIMIT)
        .map(Bytes::from)
        .map_err(|error| {
            let kind = match error.failure {
                DecompressFailure::TooLarge { limit } => {
                    RecordErrorKind::DecompressedTooLarge { codec: name, limit }
                }
                DecompressFailure::Corrupt(reason) => RecordErrorKind::Decompression {
                    codec: name,
                    reason,
                },
                DecompressFailure::UnknownCodec(_) => RecordErrorKind::UnsupportedCompression(name),
            };
            RecordError::new(value_at + error.offset as u64, kind)
        })?;
    let mut inner = Vec::new();
    let mut at = 0usize;
    while at < raw.len() {
        let problem = |reason: String| corrupt(value_at, reason);
        let Some(length) = raw.get(at + 8..at + LOG_OVERHEAD).map(read_i32) else {
            return Err(problem(format!("a partial inner message at byte {at}")));
        };
        let end = usize::try_from(length)
            .ok()
            .and_then(|length| (at + LOG_OVERHEAD).checked_add(length))
            .filter(|end| *end <= raw.len());
        let Some(end) = end else {
            return Err(problem(format!(
                "inner message at byte {at} overruns the set"
            )));
        };
        let message = parse_message(&raw.slice(at..end))
            .map_err(|reason| problem(format!("inner message at byte {at}: {reason}")))?;
        if message.codec() != CompressionType::None {
            return Err(problem(format!(
                "a compressed message inside a compressed one at byte {at}"
            )));
        }
        inner.push(message);
        at = end;
    }
    // Magic 1 wrappers carry relative inner offsets; the wrapper's is the last absolute one.
    let base = match (wrapper.magic, inner.last()) {
        (0, _) | (_, None) => 0,
        (_, Some(last)) => wrapper.offset - last.offset,
    };
    let log_append_time = wrapper.attributes & LOG_APPEND_TIME_BIT != 0;
    Ok(inner
        .iter()
        .map(|message| {
            let timestamp = if log_append_time {
                wrapper.timestamp
            } else {
                message.timestamp
            };
            record_of(message, base + message.offset, timestamp)
        })
        .collect())
}

/// One message as a record line.
fn record_of(message: &Message, offset: i64, timestamp: i64) -> RecordDump {
    let size = |bytes: &Option<Bytes>| bytes.as_ref().map_or(-1, |b| b.len() as i32);
    RecordDump {
        offset,
        timestamp,
        sequence: -1,
        key_size: size(&message.key),
        value_size: size(&message.value),
        body: RecordBody::Data {
            key: message.key.as_deref().map(payload),
            value: message.value.as_deref().map(payload),
            headers: Vec::new(),
        },
        raw_key: message.key.clone(),
        raw_value: message.value.clone(),
        decoded: None,
        legacy: Some(LegacyCheck {
            crc: message.crc,
            valid: message.valid,
        }),
    }
}

/// Byte position of the value's length field inside a message.
fn value_position(message: &Message) -> usize {
    let key_at = MAGIC_AT + 2 + if message.magic >= 1 { 8 } else { 0 };
    key_at + 4 + message.key.as_ref().map_or(0, Bytes::len)
}

/// Parses one message (log overhead included); the reason when it is not one.
fn parse_message(entry: &Bytes) -> Result<Message, String> {
    let byte = |at: usize| {
        entry
            .get(at)
            .copied()
            .ok_or_else(|| format!("ends at byte {at}"))
    };
    let offset = entry.get(0..8).map(read_i64).ok_or("no offset")?;
    let crc = entry.get(12..16).map(read_u32).ok_or("no CRC")?;
    let magic = byte(MAGIC_AT)? as i8;
    if !(0..=1).contains(&magic) {
        return Err(format!("magic {magic} is not a legacy message"));
    }
    let attributes = byte(MAGIC_AT + 1)?;
    let mut at = MAGIC_AT + 2;
    let timestamp = if magic == 1 {
        let timestamp = entry.get(at..at + 8).map(read_i64).ok_or("no timestamp")?;
        at += 8;
        timestamp
    } else {
        -1
    };
    let key = read_bytes(entry, &mut at).ok_or("the key overruns the message")?;
    let value = read_bytes(entry, &mut at).ok_or("the value overruns the message")?;
    if at != entry.len() {
        return Err(format!("{} bytes after the value", entry.len() - at));
    }
    let computed_crc = crc32fast::hash(&entry[MAGIC_AT..]);
    Ok(Message {
        offset,
        crc,
        computed_crc,
        valid: computed_crc == crc,
        magic,
        attributes,
        timestamp,
        key,
        value,
    })
}

/// A record that does not decode, at byte `position` of the segment.
fn corrupt(position: u64, reason: String) -> RecordError {
    RecordError::new(position, RecordErrorKind::CorruptRecord(reason))
}

/// A length-prefixed byte string at `*at` (−1: null), advancing past it; `None` if it overruns.
fn read_bytes(entry: &Bytes, at: &mut usize) -> Option<Option<Bytes>> {
    let length = read_i32(entry.get(*at..*at + 4)?);
    *at += 4;
    if length == -1 {
        return Some(None);
    }
    let length = usize::try_from(length).ok()?;
    let end = at.checked_add(length).filter(|end| *end <= entry.len())?;
    let bytes = entry.slice(*at..end);
    *at = end;
    Some(Some(bytes))
}

fn read_i64(bytes: &[u8]) -> i64 {
    i64::from_be_bytes(bytes.try_into().expect("eight bytes"))
}

fn read_i32(bytes: &[u8]) -> i32 {
    i32::from_be_bytes(bytes.try_into().expect("four bytes"))
}

fn read_u32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes(bytes.try_into().expect("four bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message: `magic`, `attributes`, timestamp (magic 1), key and value, its CRC sealed.
    fn message(offset: i64, magic: i8, attributes: u8, key: &[u8], value: &[u8]) -> Vec<u8> {
        let mut body = vec![magic as u8, attributes];
        if magic == 1 {
            body.extend(1_700_000_000_000i64.to_be_bytes());
        }
        for part in [key, value] {
            body.extend((part.len() as i32).to_be_bytes());
            body.extend(part);
        }
        let mut entry = offset.to_be_bytes().to_vec();
        entry.extend(((body.len() + 4) as i32).to_be_bytes());
        entry.extend(crc32fast::hash(&body).to_be_bytes());
        entry.extend(body);
        entry
    }

    #[test]
    fn a_wrapper_whose_value_does_not_decompress_keeps_its_header_and_the_error() {
        let entry = Bytes::from(message(9, 1, 1, b"", b"not gzip"));
        let described = describe_legacy(100, &entry, true).expect("a message").0;
        assert!(described.valid, "the CRC covers the bytes as they are");
        assert_eq!(
            (described.last_offset, described.compression.as_str()),
            (9, "gzip")
        );
        assert!(described.records.is_empty());
        let error = described.error_detail.expect("the payload's problem");
        assert!(matches!(
            error.kind,
            RecordErrorKind::Decompression { codec: "gzip", .. }
        ));
        // The payload begins at 100 + 34: the log overhead and CRC (16), magic and attributes,
        // the timestamp, the empty key's length and the value's length.
        assert!(error.position >= 100 + 34, "inside the payload: {error}");
    }

    #[test]
    fn a_wrapper_inside_a_wrapper_is_an_error_and_a_short_entry_is_not_a_message() {
        let inner = message(0, 1, 1, b"", b"x");
        let value = mirrorsim::record::compress(CompressionType::Gzip, &inner);
        let entry = Bytes::from(message(0, 1, 1, b"", &value));
        let described = describe_legacy(0, &entry, true).expect("a message").0;
        let error = described.error.expect("nested compression refused");
        assert!(error.contains("inside a compressed one"), "{error}");
        // Too short to hold a key and a value: not a message, skipped by the caller.
        let mut short = message(0, 0, 0, b"k", b"v");
        short.truncate(short.len() - 2);
        let length = (short.len() - 12) as i32;
        short[8..12].copy_from_slice(&length.to_be_bytes());
        assert!(describe_legacy(0, &Bytes::from(short), true).is_none());
    }

    #[test]
    fn log_append_time_gives_inner_records_the_wrappers_timestamp() {
        let inner: Vec<u8> = [message(0, 1, 0, b"a", b"1"), message(1, 1, 0, b"b", b"2")].concat();
        let value = mirrorsim::record::compress(CompressionType::Gzip, &inner);
        let entry = Bytes::from(message(41, 1, 1 | LOG_APPEND_TIME_BIT, b"", &value));
        let described = describe_legacy(0, &entry, true).expect("a message").0;
        assert_eq!(described.timestamp_type, "LogAppendTime");
        let records: Vec<(i64, i64)> = described
            .records
            .iter()
            .map(|record| (record.offset, record.timestamp))
            .collect();
        assert_eq!(records, [(40, 1_700_000_000_000), (41, 1_700_000_000_000)]);
        assert_eq!((described.base_offset, described.count), (40, 2));
    }
}
