//! Decoding RecordBatch v2 (magic 2) over `bytes::Bytes`.
//!
//! [`RecordBatch::decode`] checks the header, the declared length, the magic byte, the CRC-32C
//! over bytes `[21, end)` and the compression bits (a codec id Kafka knows); the batch then holds
//! a zero-copy slice of the input. [`RecordBatch::inspect`] makes the same checks except the CRC
//! and the codec id, and reports the CRC it computed, for tools that print damaged batches.
//! Records are decoded lazily by [`RecordBatch::records`]; their keys, values and header values
//! are slices of the same buffer, or of the decompressed records region when the batch is
//! compressed (decompressed once per iteration, bounded by
//! [`super::DEFAULT_DECOMPRESSED_LIMIT`]). [`RecordBatch::validate_records`] runs the
//! record-level checks Kafka's decoder makes (declared lengths, header counts, exactly
//! `recordsCount` records, nothing after them, in the decompressed bytes when compressed). A
//! record error inside compressed records is reported at the start of the compressed payload
//! (batch byte 61), its reason naming the byte of the decompressed records.
//!
//! The only fields a broker may change on a stored batch are the base offset and the partition
//! leader epoch, which the CRC does not cover ([`RecordBatch::with_base_offset`],
//! [`RecordBatch::with_partition_leader_epoch`]), and, under LogAppendTime, the timestamp type and
//! max timestamp, which forces a new CRC ([`RecordBatch::stamped_by_leader`]).

use std::fmt;

use bytes::{Bytes, BytesMut};

use super::compression::{self, DecompressFailure, DEFAULT_DECOMPRESSED_LIMIT};
use super::control::{parse_control_record, ControlRecord};
use super::error::{RecordError, RecordErrorKind};
use super::varint::{read_varint, read_varlong};
use super::{increment_sequence, CompressionType, TimestampType};

/// Size of the v2 batch header: every batch is at least this long.
pub const RECORD_BATCH_OVERHEAD: usize = 61;
/// Bytes before the part that `batchLength` counts (base offset and the length itself).
pub const LOG_OVERHEAD: usize = 12;
/// The only record format decoded.
pub const MAGIC_V2: i8 = 2;
/// Producer id of a batch written without idempotence.
pub const NO_PRODUCER_ID: i64 = -1;
/// Producer epoch of a batch written without idempotence.
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// Base sequence of a batch written without idempotence, and of control batches.
pub const NO_SEQUENCE: i32 = -1;
/// Partition leader epoch a producer writes before the leader stamps its own.
pub const NO_PARTITION_LEADER_EPOCH: i32 = -1;
/// Timestamp of a batch with no records.
pub const NO_TIMESTAMP: i64 = -1;

pub(crate) const CRC_OFFSET: usize = 17;
pub(crate) const ATTRIBUTES_OFFSET: usize = 21;
pub(crate) const PARTITION_LEADER_EPOCH_OFFSET: usize = 12;
pub(crate) const MAX_TIMESTAMP_OFFSET: usize = 35;
pub(crate) const PRODUCER_ID_OFFSET: usize = 43;

const COMPRESSION_MASK: i16 = 0x07;
pub(crate) const TIMESTAMP_TYPE_BIT: i16 = 0x08;
pub(crate) const TRANSACTIONAL_BIT: i16 = 0x10;
pub(crate) const CONTROL_BIT: i16 = 0x20;
pub(crate) const DELETE_HORIZON_BIT: i16 = 0x40;

/// Every header field of a v2 batch, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    /// Offset of the first record (assigned by the leader; producers write 0).
    pub base_offset: i64,
    /// Bytes after the length field to the end of the batch.
    pub batch_length: i32,
    /// Leader epoch stamped by the leader that first appended the batch.
    pub partition_leader_epoch: i32,
    /// Format version; always 2 for a decoded batch.
    pub magic: i8,
    /// CRC-32C over bytes `[21, end)`.
    pub crc: u32,
    /// Attribute bits (compression, timestamp type, transactional, control, delete horizon).
    pub attributes: i16,
    /// `lastOffset - baseOffset`; also the last sequence delta.
    pub last_offset_delta: i32,
    /// Timestamp of the first record, or the delete horizon when that bit is set.
    pub base_timestamp: i64,
    /// Largest record timestamp, or the broker's append time under LogAppendTime.
    pub max_timestamp: i64,
    /// Producer id, or −1.
    pub producer_id: i64,
    /// Producer epoch, or −1.
    pub producer_epoch: i16,
    /// Sequence of the first record, or −1.
    pub base_sequence: i32,
    /// Number of records in the records region (may be below `last_offset_delta + 1` after compaction).
    pub records_count: i32,
}

impl BatchHeader {
    /// The compression codec named by attribute bits 0–2.
    pub fn compression(&self) -> CompressionType {
        CompressionType::from_bits((self.attributes & COMPRESSION_MASK) as u8)
    }

    /// CreateTime or LogAppendTime (attribute bit 3).
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes & TIMESTAMP_TYPE_BIT != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Attribute bit 4: the batch belongs to a transaction.
    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL_BIT != 0
    }

    /// Attribute bit 5: the batch holds control records, never returned to applications.
    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_BIT != 0
    }

    /// The delete horizon (KIP-534) when attribute bit 6 is set; it is stored in `base_timestamp`.
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        (self.attributes & DELETE_HORIZON_BIT != 0).then_some(self.base_timestamp)
    }

    /// Whether a producer id is set.
    pub fn has_producer_id(&self) -> bool {
        self.producer_id >= 0
    }

    /// Offset of the last record. The base offset is not covered by the CRC, so a corrupt one
    /// must not overflow; the sum wraps as Java's `long` arithmetic does.
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .wrapping_add(i64::from(self.last_offset_delta))
    }

    /// The offset after this batch (wrapping, like [`BatchHeader::last_offset`]).
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// Sequence of the last record, with Kafka's wrap-around, or −1 without a base sequence.
    pub fn last_sequence(&self) -> i32 {
        sequence_at(self.base_sequence, self.last_offset_delta)
    }

    /// Total size of the batch in bytes.
    pub fn size_in_bytes(&self) -> usize {
        self.batch_length as usize + LOG_OVERHEAD
    }

    /// Reads the header from the first 61 bytes of `bytes` without any validation.
    fn read(bytes: &[u8]) -> Self {
        debug_assert!(bytes.len() >= RECORD_BATCH_OVERHEAD);
        Self {
            base_offset: be_i64(bytes, 0),
            batch_length: be_i32(bytes, 8),
            partition_leader_epoch: be_i32(bytes, 12),
            magic: bytes[16] as i8,
            crc: be_i32(bytes, CRC_OFFSET) as u32,
            attributes: be_i16(bytes, ATTRIBUTES_OFFSET),
            last_offset_delta: be_i32(bytes, 23),
            base_timestamp: be_i64(bytes, 27),
            max_timestamp: be_i64(bytes, MAX_TIMESTAMP_OFFSET),
            producer_id: be_i64(bytes, 43),
            producer_epoch: be_i16(bytes, 51),
            base_sequence: be_i32(bytes, 53),
            records_count: be_i32(bytes, 57),
        }
    }
}

/// One validated v2 batch: its header and a zero-copy slice holding exactly its bytes.
///
/// `Debug` shows the header and the byte count, not the bytes (a batch's raw bytes would
/// swamp any message or assertion that holds one); `Display` is the one-line summary traces
/// use, e.g. `batch[10..=14 n=5 pid=3 epoch=0 seq=10 leader_epoch=2 txn 312B]`.
#[derive(Clone, PartialEq, Eq)]
pub struct RecordBatch {
    header: BatchHeader,
    bytes: Bytes,
}

/// One record header (key/value pair attached to a record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordHeader {
    /// UTF-8 header key (never null).
    pub key: String,
    /// Header value, `None` for a null value.
    pub value: Option<Bytes>,
}

/// One decoded record with both its effective and its raw (delta) fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// `baseOffset + offsetDelta`.
    pub offset: i64,
    /// Effective timestamp: the batch max timestamp under LogAppendTime, else base + delta.
    pub timestamp: i64,
    /// `incrementSequence(baseSequence, offsetDelta)`, or −1 without a base sequence.
    pub sequence: i32,
    /// Record attributes byte (no bits are defined; kept for byte-identical re-encoding).
    pub attributes: i8,
    /// Timestamp delta as stored.
    pub timestamp_delta: i64,
    /// Offset delta as stored.
    pub offset_delta: i32,
    /// Key, `None` for a null key.
    pub key: Option<Bytes>,
    /// Value, `None` for a null value (a tombstone).
    pub value: Option<Bytes>,
    /// Headers in stored order.
    pub headers: Vec<RecordHeader>,
}

impl RecordBatch {
    /// Decodes the batch at the start of `bytes`. `position` is the absolute byte position of
    /// `bytes[0]` and is used only in errors. `bytes` may hold more data after the batch.
    pub fn decode(bytes: &Bytes, position: u64) -> Result<Self, RecordError> {
        let inspected = Self::inspect(bytes, position)?;
        let header = inspected.batch.header;
        if !inspected.crc_valid() {
            return Err(RecordError::new(
                position + CRC_OFFSET as u64,
                RecordErrorKind::CrcMismatch {
                    stored: header.crc,
                    computed: inspected.computed_crc,
                },
            ));
        }
        if let CompressionType::Unknown(_) = header.compression() {
            return Err(RecordError::new(
                position + ATTRIBUTES_OFFSET as u64,
                RecordErrorKind::UnsupportedCompression(
                    header.compression().codec_name().unwrap_or("unknown codec"),
                ),
            ));
        }
        Ok(inspected.batch)
    }

    /// Reads the batch at the start of `bytes` as [`RecordBatch::decode`] does, except that a
    /// CRC mismatch or an unknown codec id is not an error: the CRC computed is returned beside
    /// the batch, and an unknown codec fails when the records are read. For tools that show a
    /// damaged segment batch by batch (a batch whose CRC is wrong must never reach a log).
    pub fn inspect(bytes: &Bytes, position: u64) -> Result<InspectedBatch, RecordError> {
        let available = bytes.len();
        if available < RECORD_BATCH_OVERHEAD {
            return Err(RecordError::new(
                position,
                RecordErrorKind::Truncated {
                    needed: RECORD_BATCH_OVERHEAD as u64,
                    available: available as u64,
                },
            ));
        }
        let header = BatchHeader::read(bytes);
        let minimum_length = (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32;
        if header.batch_length < minimum_length {
            return Err(RecordError::new(
                position + 8,
                RecordErrorKind::InvalidBatchLength(header.batch_length),
            ));
        }
        if header.magic != MAGIC_V2 {
            return Err(RecordError::new(
                position + 16,
                RecordErrorKind::UnsupportedMagic(header.magic),
            ));
        }
        let size = header.size_in_bytes();
        if available < size {
            return Err(RecordError::new(
                position,
                RecordErrorKind::Truncated {
                    needed: size as u64,
                    available: available as u64,
                },
            ));
        }
        let computed_crc = crc32c::crc32c(&bytes[ATTRIBUTES_OFFSET..size]);
        Ok(InspectedBatch {
            batch: Self {
                header,
                bytes: bytes.slice(..size),
            },
            computed_crc,
        })
    }

    /// Decodes `bytes` as one complete batch and also validates every record; trailing bytes
    /// after the batch are an error.
    pub fn decode_exact(bytes: Bytes) -> Result<Self, RecordError> {
        let batch = Self::decode(&bytes, 0)?;
        if batch.size_in_bytes() != bytes.len() {
            return Err(RecordError::corrupt_record(
                batch.size_in_bytes() as u64,
                format!(
                    "{} bytes after the end of the batch",
                    bytes.len() - batch.size_in_bytes()
                ),
            ));
        }
        batch.validate_records(0)?;
        Ok(batch)
    }

    /// The decoded header.
    pub fn header(&self) -> &BatchHeader {
        &self.header
    }

    /// The batch's bytes, exactly as stored.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// Total size in bytes.
    pub fn size_in_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Offset of the first record.
    pub fn base_offset(&self) -> i64 {
        self.header.base_offset
    }

    /// Offset of the last record.
    pub fn last_offset(&self) -> i64 {
        self.header.last_offset()
    }

    /// The offset after this batch.
    pub fn next_offset(&self) -> i64 {
        self.header.next_offset()
    }

    /// The partition leader epoch stamped on this batch.
    pub fn partition_leader_epoch(&self) -> i32 {
        self.header.partition_leader_epoch
    }

    /// Whether this is a control batch.
    pub fn is_control(&self) -> bool {
        self.header.is_control()
    }

    /// Whether this batch belongs to a transaction.
    pub fn is_transactional(&self) -> bool {
        self.header.is_transactional()
    }

    /// Iterates over the records. Each item is a record or the first error (after which the
    /// iterator ends). `position` is the absolute byte position of the batch, used in errors.
    /// A compressed batch is decompressed here; a payload that does not decompress is the
    /// first (and only) item.
    pub fn records_at(&self, position: u64) -> Records<'_> {
        let count = self.header.records_count;
        let mut records = Records {
            header: &self.header,
            region: Bytes::new(),
            origin: RegionOrigin::Plain {
                at: position + RECORD_BATCH_OVERHEAD as u64,
            },
            cursor: 0,
            remaining: count.max(0) as usize,
            failed: count < 0,
            pending: None,
        };
        match self.header.compression() {
            CompressionType::None => {
                records.region = self.bytes.slice(RECORD_BATCH_OVERHEAD..);
            }
            // Kafka's iterator returns nothing for an empty batch without reading its payload.
            _ if count <= 0 => {}
            codec => match self.decompressed_records(position) {
                Ok(region) => {
                    records.region = region;
                    records.origin = RegionOrigin::Decompressed {
                        codec: codec.codec_name().unwrap_or("unknown codec"),
                        payload_at: position + RECORD_BATCH_OVERHEAD as u64,
                    };
                }
                Err(error) => records.pending = Some(error),
            },
        }
        records
    }

    /// The records region of a compressed batch, decompressed (at most
    /// [`DEFAULT_DECOMPRESSED_LIMIT`] bytes). Errors name the absolute byte position in the
    /// compressed payload; `position` is the batch's.
    pub fn decompressed_records(&self, position: u64) -> Result<Bytes, RecordError> {
        let codec = self.header.compression();
        let payload = &self.bytes[RECORD_BATCH_OVERHEAD..];
        let payload_at = position + RECORD_BATCH_OVERHEAD as u64;
        let name = codec.codec_name().unwrap_or("uncompressed");
        compression::decompress(codec, payload, DEFAULT_DECOMPRESSED_LIMIT)
            .map(Bytes::from)
            .map_err(|error| {
                let kind = match error.failure {
                    DecompressFailure::Corrupt(reason) => RecordErrorKind::Decompression {
                        codec: name,
                        reason,
                    },
                    DecompressFailure::TooLarge { limit } => {
                        RecordErrorKind::DecompressedTooLarge { codec: name, limit }
                    }
                    DecompressFailure::UnknownCodec(_) => {
                        return RecordError::new(
                            position + ATTRIBUTES_OFFSET as u64,
                            RecordErrorKind::UnsupportedCompression(name),
                        );
                    }
                };
                RecordError::new(payload_at + error.offset as u64, kind)
            })
    }

    /// Iterates over the records, reporting errors relative to the start of the batch.
    pub fn records(&self) -> Records<'_> {
        self.records_at(0)
    }

    /// Checks every record the way Kafka's decoder does: each record's declared length matches
    /// the bytes it uses, header counts are sane, exactly `recordsCount` records are present and
    /// no bytes follow them.
    pub fn validate_records(&self, position: u64) -> Result<(), RecordError> {
        self.validate_records_with(position, |_| {})
    }

    /// [`RecordBatch::validate_records`], handing every decoded record to `inspect` on the way,
    /// so that a caller with checks of its own on the records decodes them only once.
    pub fn validate_records_with(
        &self,
        position: u64,
        mut inspect: impl FnMut(&Record),
    ) -> Result<(), RecordError> {
        if self.header.records_count < 0 {
            return Err(RecordError::corrupt_record(
                position + 57,
                format!("negative record count {}", self.header.records_count),
            ));
        }
        let mut records = self.records_at(position);
        for record in records.by_ref() {
            inspect(&record?);
        }
        if records.cursor != records.region.len() {
            return Err(records.error_at(
                records.cursor,
                format!(
                    "{} bytes remain after the last of {} records",
                    records.region.len() - records.cursor,
                    self.header.records_count
                ),
            ));
        }
        Ok(())
    }

    /// The control record of a control batch (its first record), parsed; `None` for data
    /// batches and for control batches with no records (emptied by compaction).
    pub fn control_record(&self) -> Option<Result<ControlRecord, RecordError>> {
        if !self.is_control() {
            return None;
        }
        let record = match self.records().next()? {
            Ok(record) => record,
            Err(error) => return Some(Err(error)),
        };
        let key = record.key.as_deref().unwrap_or(&[]);
        Some(
            parse_control_record(key, record.value.as_deref()).map_err(|reason| {
                RecordError::new(
                    RECORD_BATCH_OVERHEAD as u64,
                    RecordErrorKind::CorruptControlRecord(reason),
                )
            }),
        )
    }

    /// Whether this is a MIRROR_PID_RESET control batch (a control batch whose first record's
    /// key has type 7).
    pub fn is_mirror_pid_reset(&self) -> bool {
        matches!(
            self.control_record(),
            Some(Ok(ControlRecord::MirrorPidReset { .. }))
        )
    }

    /// A copy with a new base offset. The CRC does not cover the base offset, so the rest of
    /// the bytes are unchanged (Kafka's `setLastOffset`).
    pub fn with_base_offset(&self, base_offset: i64) -> Self {
        let mut bytes = BytesMut::from(&self.bytes[..]);
        bytes[0..8].copy_from_slice(&base_offset.to_be_bytes());
        let header = BatchHeader {
            base_offset,
            ..self.header
        };
        Self {
            header,
            bytes: bytes.freeze(),
        }
    }

    /// A copy with a new partition leader epoch; the CRC is unchanged because it does not cover
    /// bytes 12..16.
    pub fn with_partition_leader_epoch(&self, partition_leader_epoch: i32) -> Self {
        let mut bytes = BytesMut::from(&self.bytes[..]);
        let range = PARTITION_LEADER_EPOCH_OFFSET..PARTITION_LEADER_EPOCH_OFFSET + 4;
        bytes[range].copy_from_slice(&partition_leader_epoch.to_be_bytes());
        let header = BatchHeader {
            partition_leader_epoch,
            ..self.header
        };
        Self {
            header,
            bytes: bytes.freeze(),
        }
    }

    /// A copy with another producer id and the CRC recomputed over it (the producer id is
    /// inside the CRC's range). Only the rejected `pid-rewrite` design rewrites producer ids.
    pub fn with_producer_id(&self, producer_id: i64) -> Self {
        let mut bytes = BytesMut::from(&self.bytes[..]);
        let range = PRODUCER_ID_OFFSET..PRODUCER_ID_OFFSET + 8;
        bytes[range].copy_from_slice(&producer_id.to_be_bytes());
        let crc = crc32c::crc32c(&bytes[ATTRIBUTES_OFFSET..]);
        bytes[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
        let header = BatchHeader {
            producer_id,
            crc,
            ..self.header
        };
        Self {
            header,
            bytes: bytes.freeze(),
        }
    }

    /// A copy stamped by the leader in one pass: new base offset, new partition leader epoch
    /// and, when `log_append_time_ms` is given, LogAppendTime with that max timestamp and a
    /// recomputed CRC (Kafka's `setMaxTimestamp`, which returns early when nothing changes).
    pub fn stamped_by_leader(
        &self,
        base_offset: i64,
        partition_leader_epoch: i32,
        log_append_time_ms: Option<i64>,
    ) -> Self {
        let mut bytes = BytesMut::from(&self.bytes[..]);
        let mut header = self.header;
        bytes[0..8].copy_from_slice(&base_offset.to_be_bytes());
        let range = PARTITION_LEADER_EPOCH_OFFSET..PARTITION_LEADER_EPOCH_OFFSET + 4;
        bytes[range].copy_from_slice(&partition_leader_epoch.to_be_bytes());
        header.base_offset = base_offset;
        header.partition_leader_epoch = partition_leader_epoch;
        if let Some(time_ms) = log_append_time_ms {
            let attributes = header.attributes | TIMESTAMP_TYPE_BIT;
            if attributes != header.attributes || time_ms != header.max_timestamp {
                header.attributes = attributes;
                header.max_timestamp = time_ms;
                let attributes_range = ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2;
                bytes[attributes_range].copy_from_slice(&attributes.to_be_bytes());
                let max_range = MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8;
                bytes[max_range].copy_from_slice(&time_ms.to_be_bytes());
                header.crc = crc32c::crc32c(&bytes[ATTRIBUTES_OFFSET..]);
                bytes[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&header.crc.to_be_bytes());
            }
        }
        Self {
            header,
            bytes: bytes.freeze(),
        }
    }
}

impl fmt::Debug for RecordBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordBatch")
            .field("header", &self.header)
            .field("bytes", &format_args!("<{} bytes>", self.bytes.len()))
            .finish()
    }
}

impl fmt::Display for RecordBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header = &self.header;
        write!(
            f,
            "batch[{}..={} n={}",
            header.base_offset,
            header.last_offset(),
            header.records_count
        )?;
        if header.has_producer_id() {
            write!(
                f,
                " pid={} epoch={} seq={}",
                header.producer_id, header.producer_epoch, header.base_sequence
            )?;
        }
        write!(f, " leader_epoch={}", header.partition_leader_epoch)?;
        if header.is_transactional() {
            f.write_str(" txn")?;
        }
        // A control batch names its marker (COMMIT, ABORT, MIRROR_PID_RESET): that is what a
        // reader of a trace wants to know, and the one record is cheap to decode.
        match self.control_record() {
            Some(Ok(record)) => write!(f, " control={}", record.record_type().name())?,
            Some(Err(_)) => f.write_str(" control=corrupt")?,
            None => {}
        }
        write!(f, " {}B]", self.bytes.len())
    }
}

/// A batch read by [`RecordBatch::inspect`]: the batch, whose CRC may be wrong, and the CRC
/// computed over its bytes `[21, end)`.
#[derive(Debug, Clone)]
pub struct InspectedBatch {
    /// The batch as stored.
    pub batch: RecordBatch,
    /// CRC-32C computed over bytes `[21, end)`.
    pub computed_crc: u32,
}

impl InspectedBatch {
    /// Whether the stored CRC matches the bytes (Kafka's `isValid`).
    pub fn crc_valid(&self) -> bool {
        self.batch.header.crc == self.computed_crc
    }
}

/// Iterator over the records of one batch; see [`RecordBatch::records_at`].
pub struct Records<'a> {
    header: &'a BatchHeader,
    /// The records region: the batch's own bytes after the header, or the decompressed records.
    region: Bytes,
    origin: RegionOrigin,
    cursor: usize,
    remaining: usize,
    failed: bool,
    /// A decompression error, yielded as the first item.
    pending: Option<RecordError>,
}

/// Where a records region's bytes sit, for error positions.
enum RegionOrigin {
    /// Region byte 0 is at absolute position `at`.
    Plain { at: u64 },
    /// Decompressed bytes have no file position: errors name the compressed payload's start
    /// and say which decompressed byte failed.
    Decompressed {
        codec: &'static str,
        payload_at: u64,
    },
}

impl Records<'_> {
    /// The error for a problem at byte `offset` of the records region.
    fn error_at(&self, offset: usize, reason: String) -> RecordError {
        match self.origin {
            RegionOrigin::Plain { at } => RecordError::corrupt_record(at + offset as u64, reason),
            RegionOrigin::Decompressed { codec, payload_at } => RecordError::corrupt_record(
                payload_at,
                format!("{reason} (byte {offset} of the {codec}-decompressed records)"),
            ),
        }
    }
}

impl Iterator for Records<'_> {
    type Item = Result<Record, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(error) = self.pending.take() {
            self.failed = true;
            return Some(Err(error));
        }
        if self.failed || self.remaining == 0 {
            return None;
        }
        let start = self.cursor;
        match decode_record(self.header, &self.region, start) {
            Ok((record, end)) => {
                self.cursor = end;
                self.remaining -= 1;
                Some(Ok(record))
            }
            Err((offset, reason)) => {
                self.failed = true;
                Some(Err(self.error_at(offset, reason)))
            }
        }
    }
}

/// A cursor over the records region that reports the byte offset of every failure.
struct Cursor<'a> {
    bytes: &'a Bytes,
    at: usize,
    end: usize,
}

type DecodeFailure = (usize, String);

impl Cursor<'_> {
    fn varint(&mut self, field: &str) -> Result<i32, DecodeFailure> {
        let (value, used) = read_varint(&self.bytes[self.at..self.end])
            .map_err(|error| (self.at, format!("{field}: bad varint ({error:?})")))?;
        self.at += used;
        Ok(value)
    }

    fn varlong(&mut self, field: &str) -> Result<i64, DecodeFailure> {
        let (value, used) = read_varlong(&self.bytes[self.at..self.end])
            .map_err(|error| (self.at, format!("{field}: bad varlong ({error:?})")))?;
        self.at += used;
        Ok(value)
    }

    fn u8(&mut self, field: &str) -> Result<u8, DecodeFailure> {
        if self.at >= self.end {
            return Err((self.at, format!("{field}: premature end of record")));
        }
        self.at += 1;
        Ok(self.bytes[self.at - 1])
    }

    /// A length-prefixed byte field; −1 means null, other negative lengths are corrupt.
    fn nullable_bytes(&mut self, field: &str) -> Result<Option<Bytes>, DecodeFailure> {
        let length_at = self.at;
        let length = self.varint(field)?;
        if length == -1 {
            return Ok(None);
        }
        if length < 0 {
            return Err((length_at, format!("{field}: negative length {length}")));
        }
        let length = length as usize;
        if self.end - self.at < length {
            return Err((
                length_at,
                format!(
                    "{field}: length {length} runs past the record end ({} bytes left)",
                    self.end - self.at
                ),
            ));
        }
        let value = self.bytes.slice(self.at..self.at + length);
        self.at += length;
        Ok(Some(value))
    }
}

/// Decodes the record at `start` of the records region `bytes` (offsets in failures are
/// relative to the region).
fn decode_record(
    header: &BatchHeader,
    bytes: &Bytes,
    start: usize,
) -> Result<(Record, usize), DecodeFailure> {
    let mut cursor = Cursor {
        bytes,
        at: start,
        end: bytes.len(),
    };
    let length = cursor.varint("record length")?;
    if length < 0 {
        return Err((start, format!("negative record length {length}")));
    }
    let body_start = cursor.at;
    let record_end = body_start
        .checked_add(length as usize)
        .filter(|end| *end <= bytes.len())
        .ok_or_else(|| {
            (
                start,
                format!(
                    "record length {length} runs past the records' end ({} bytes left)",
                    bytes.len() - body_start
                ),
            )
        })?;
    cursor.end = record_end;
    let attributes = cursor.u8("record attributes")? as i8;
    let timestamp_delta = cursor.varlong("timestamp delta")?;
    let offset_delta = cursor.varint("offset delta")?;
    let key = cursor.nullable_bytes("key")?;
    let value = cursor.nullable_bytes("value")?;
    let header_count_at = cursor.at;
    let header_count = cursor.varint("header count")?;
    if header_count < 0 {
        return Err((
            header_count_at,
            format!("negative header count {header_count}"),
        ));
    }
    if header_count as usize > cursor.end - cursor.at {
        return Err((
            header_count_at,
            format!("header count {header_count} exceeds the bytes left in the record"),
        ));
    }
    let mut headers = Vec::with_capacity(header_count as usize);
    for _ in 0..header_count {
        let key_at = cursor.at;
        let key = cursor
            .nullable_bytes("header key")?
            .ok_or((key_at, "null header key".to_string()))?;
        let key = String::from_utf8(key.to_vec())
            .map_err(|_| (key_at, "header key is not UTF-8".to_string()))?;
        let value = cursor.nullable_bytes("header value")?;
        headers.push(RecordHeader { key, value });
    }
    if cursor.at != record_end {
        return Err((
            cursor.at,
            format!(
                "record declares {length} bytes but its fields use {}",
                cursor.at - body_start
            ),
        ));
    }
    let timestamp = match header.timestamp_type() {
        TimestampType::LogAppendTime => header.max_timestamp,
        TimestampType::CreateTime => header.base_timestamp.wrapping_add(timestamp_delta),
    };
    let sequence = sequence_at(header.base_sequence, offset_delta);
    let record = Record {
        offset: header.base_offset.wrapping_add(i64::from(offset_delta)),
        timestamp,
        sequence,
        attributes,
        timestamp_delta,
        offset_delta,
        key,
        value,
        headers,
    };
    Ok((record, record_end))
}

/// Iterates over concatenated batches (a log segment or a fetch response). Yields each batch
/// with its absolute byte position; on the first error yields the error and stops.
pub struct BatchReader {
    bytes: Bytes,
    position: u64,
    cursor: usize,
    failed: bool,
}

impl BatchReader {
    /// Reads batches from `bytes`, whose first byte sits at absolute position `position`.
    pub fn new(bytes: Bytes, position: u64) -> Self {
        Self {
            bytes,
            position,
            cursor: 0,
            failed: false,
        }
    }

    /// Byte offset (relative to the start of the input) after the last batch yielded.
    pub fn valid_bytes(&self) -> usize {
        self.cursor
    }
}

impl Iterator for BatchReader {
    type Item = Result<(u64, RecordBatch), RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.cursor == self.bytes.len() {
            return None;
        }
        let position = self.position + self.cursor as u64;
        let rest = self.bytes.slice(self.cursor..);
        match RecordBatch::decode(&rest, position) {
            Ok(batch) => {
                self.cursor += batch.size_in_bytes();
                Some(Ok((position, batch)))
            }
            Err(error) => {
                self.failed = true;
                Some(Err(error))
            }
        }
    }
}

/// The sequence `delta` records after `base_sequence` ([`increment_sequence`]), or −1 without a
/// base sequence. Deltas come from the input, and a CRC-valid batch may still carry a negative
/// one, so this must not reach `increment_sequence`'s debug assertion: a negative delta gets
/// Java's wrapping `int` arithmetic instead of a panic.
fn sequence_at(base_sequence: i32, delta: i32) -> i32 {
    if base_sequence < 0 {
        NO_SEQUENCE
    } else if delta < 0 {
        if base_sequence > i32::MAX.wrapping_sub(delta) {
            delta.wrapping_sub(i32::MAX - base_sequence).wrapping_sub(1)
        } else {
            base_sequence.wrapping_add(delta)
        }
    } else {
        increment_sequence(base_sequence, delta)
    }
}

fn be_i16(bytes: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([bytes[at], bytes[at + 1]])
}

fn be_i32(bytes: &[u8], at: usize) -> i32 {
    let mut raw = [0u8; 4];
    raw.copy_from_slice(&bytes[at..at + 4]);
    i32::from_be_bytes(raw)
}

fn be_i64(bytes: &[u8], at: usize) -> i64 {
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&bytes[at..at + 8]);
    i64::from_be_bytes(raw)
}
