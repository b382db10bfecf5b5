//! Kafka's RecordBatch v2 (magic 2): decode, encode, control records, sequence arithmetic.
//!
//! Contract:
//! - Decoding never panics. Malformed input is a [`RecordError`] naming the byte position.
//! - A decoded [`RecordBatch`] is a zero-copy slice of its input whose CRC-32C (bytes 21..end)
//!   was verified ([`RecordBatch::inspect`] is the one way to hold a batch whose CRC is wrong,
//!   for tools that show damaged segments). Uncompressed and gzip, snappy, lz4 or zstd batches
//!   are accepted; a compressed batch's records are decompressed when they are read
//!   ([`compression`] holds each codec's framing and the bound on the decompressed size).
//! - Encoding a decoded uncompressed batch's header and records reproduces the input byte for
//!   byte; a compressed one reproduces the header and the decompressed records (a compressor's
//!   output is not unique).
//! - Producer ids, epochs, sequences and leader epochs are never changed by this module except
//!   through the explicit leader-stamping functions on [`RecordBatch`].

mod batch;
mod builder;
pub mod compression;
mod control;
mod error;
pub mod varint;

pub use batch::{
    BatchHeader, BatchReader, InspectedBatch, Record, RecordBatch, RecordHeader, Records,
    LOG_OVERHEAD, MAGIC_V2, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID,
    NO_SEQUENCE, NO_TIMESTAMP, RECORD_BATCH_OVERHEAD,
};
pub use builder::{
    encode_batch, end_transaction_marker, mirror_pid_reset, BatchBuilder, MarkerProducer,
};
pub use compression::{
    compress, decompress, decompress_magic_v0, DecompressError, DecompressFailure,
    DEFAULT_DECOMPRESSED_LIMIT,
};
pub use control::{
    control_record_key, end_transaction_value, mirror_pid_reset_value, parse_control_record,
    ControlRecord, ControlRecordType,
};
pub use error::{RecordError, RecordErrorKind};

/// Compression codec named by attribute bits 0–2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompressionType {
    /// 0: uncompressed.
    None,
    /// 1: gzip.
    Gzip,
    /// 2: snappy.
    Snappy,
    /// 3: lz4.
    Lz4,
    /// 4: zstd.
    Zstd,
    /// 5–7: not assigned.
    Unknown(u8),
}

impl CompressionType {
    /// Maps attribute bits 0–2.
    pub fn from_bits(bits: u8) -> Self {
        match bits & 0x07 {
            0 => Self::None,
            1 => Self::Gzip,
            2 => Self::Snappy,
            3 => Self::Lz4,
            4 => Self::Zstd,
            other => Self::Unknown(other),
        }
    }

    /// Attribute bits 0–2 for this codec.
    pub fn id(self) -> u8 {
        match self {
            Self::None => 0,
            Self::Gzip => 1,
            Self::Snappy => 2,
            Self::Lz4 => 3,
            Self::Zstd => 4,
            Self::Unknown(id) => id,
        }
    }

    /// Kafka's name for the codec (`CompressionType.name`), as kafka-dump-log prints it in
    /// `compresscodec:`: `none`, `gzip`, `snappy`, `lz4`, `zstd`; `unknown(N)` for ids 5–7,
    /// which Kafka refuses to name.
    pub fn name(self) -> String {
        match self.codec_name() {
            None => "none".to_string(),
            Some(_) if matches!(self, Self::Unknown(_)) => format!("unknown({})", self.id()),
            Some(name) => name.to_string(),
        }
    }

    /// The codec's name, or `None` when uncompressed.
    pub fn codec_name(self) -> Option<&'static str> {
        match self {
            Self::None => None,
            Self::Gzip => Some("gzip"),
            Self::Snappy => Some("snappy"),
            Self::Lz4 => Some("lz4"),
            Self::Zstd => Some("zstd"),
            Self::Unknown(_) => Some("unknown codec"),
        }
    }
}

/// Meaning of a batch's timestamps (attribute bit 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TimestampType {
    /// Timestamps were set by the producer.
    CreateTime,
    /// The broker's append time replaces every record timestamp (read as the max timestamp).
    LogAppendTime,
}

/// Kafka's `incrementSequence`: sequences wrap from `i32::MAX` to 0 and are never negative.
pub fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    debug_assert!(sequence >= 0 && increment >= 0);
    if sequence > i32::MAX - increment {
        increment - (i32::MAX - sequence) - 1
    } else {
        sequence + increment
    }
}

/// Kafka's `decrementSequence`: the inverse of [`increment_sequence`].
pub fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
    debug_assert!(sequence >= 0 && decrement >= 0);
    if sequence < decrement {
        i32::MAX - (decrement - sequence) + 1
    } else {
        sequence - decrement
    }
}

/// The broker's successor check: `next` follows `last` if it is `last + 1` (computed in 64
/// bits, so `last = -1` expects 0) or if `last` is `i32::MAX` and `next` is 0.
pub fn in_sequence(last: i32, next: i32) -> bool {
    i64::from(next) == i64::from(last) + 1 || (next == 0 && last == i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_arithmetic_wraps_at_int_max() {
        assert_eq!(increment_sequence(i32::MAX, 1), 0);
        assert_eq!(increment_sequence(i32::MAX - 5, 10), 4);
        assert_eq!(increment_sequence(7, 3), 10);
        assert_eq!(decrement_sequence(0, 1), i32::MAX);
        assert_eq!(decrement_sequence(4, 10), i32::MAX - 5);
        assert_eq!(decrement_sequence(10, 3), 7);
        assert!(in_sequence(-1, 0));
        assert!(in_sequence(i32::MAX, 0));
        assert!(!in_sequence(i32::MAX, 1));
        assert!(!in_sequence(5, 5));
        assert!(!in_sequence(5, 7));
    }
}
