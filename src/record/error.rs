//! Typed decoding errors. Every error names the absolute byte position where the problem was
//! found, so a tool reading a segment file can say where the file went bad.

use std::fmt;

/// A batch or record that could not be decoded, with the byte position of the problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    /// Absolute byte position (in the buffer or file being read) where the problem was found.
    pub position: u64,
    /// What was wrong.
    pub kind: RecordErrorKind,
}

/// The kinds of malformed input the codec recognises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordErrorKind {
    /// Fewer bytes remain than the batch header or the declared batch length needs.
    Truncated {
        /// Bytes the batch needs from `position` on.
        needed: u64,
        /// Bytes that were available from `position` on.
        available: u64,
    },
    /// The batch length field is below the smallest legal v2 batch.
    InvalidBatchLength(i32),
    /// The magic byte is not 2; only RecordBatch v2 is modelled.
    UnsupportedMagic(i8),
    /// The stored CRC-32C does not match the bytes from offset 21 to the end of the batch.
    CrcMismatch {
        /// CRC field as stored at bytes 17..21.
        stored: u32,
        /// CRC-32C computed over the batch's bytes 21..end.
        computed: u32,
    },
    /// The compression bits hold 5, 6 or 7, which name no codec.
    UnsupportedCompression(&'static str),
    /// The compressed records region does not decompress (the reason says how); the position
    /// is where in the compressed payload the problem was found.
    Decompression {
        /// The batch's codec.
        codec: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// The compressed records region inflates past the decompressed-size limit (a
    /// decompression bomb, or a batch far larger than any Kafka writes).
    DecompressedTooLarge {
        /// The batch's codec.
        codec: &'static str,
        /// The limit, in decompressed bytes.
        limit: usize,
    },
    /// The records region violates the record format (the reason says how).
    CorruptRecord(String),
    /// A control record's key or value is malformed (the reason says how).
    CorruptControlRecord(String),
}

impl RecordError {
    /// Builds an error at `position`.
    pub fn new(position: u64, kind: RecordErrorKind) -> Self {
        Self { position, kind }
    }

    pub(crate) fn corrupt_record(position: u64, reason: impl Into<String>) -> Self {
        Self::new(position, RecordErrorKind::CorruptRecord(reason.into()))
    }
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: ", self.position)?;
        match &self.kind {
            RecordErrorKind::Truncated { needed, available } => write!(
                f,
                "truncated record batch (needs {needed} bytes, {available} available)"
            ),
            RecordErrorKind::InvalidBatchLength(length) => {
                write!(
                    f,
                    "invalid batch length {length} (a v2 batch needs at least 49)"
                )
            }
            RecordErrorKind::UnsupportedMagic(magic) => {
                write!(
                    f,
                    "unsupported magic {magic} (only RecordBatch v2 is supported)"
                )
            }
            RecordErrorKind::CrcMismatch { stored, computed } => write!(
                f,
                "CRC mismatch (stored 0x{stored:08x}, computed 0x{computed:08x})"
            ),
            RecordErrorKind::UnsupportedCompression(codec) => write!(
                f,
                "compression attribute names no codec ({codec}); Kafka knows ids 0-4"
            ),
            RecordErrorKind::Decompression { codec, reason } => {
                write!(f, "{codec} records do not decompress: {reason}")
            }
            RecordErrorKind::DecompressedTooLarge { codec, limit } => write!(
                f,
                "{codec} records decompress to more than {limit} bytes (the limit)"
            ),
            RecordErrorKind::CorruptRecord(reason) => write!(f, "corrupt record: {reason}"),
            RecordErrorKind::CorruptControlRecord(reason) => {
                write!(f, "corrupt control record: {reason}")
            }
        }
    }
}

impl std::error::Error for RecordError {}
