//! Typed errors of the partition log. Each maps to the Kafka error code a broker would return.

use std::fmt;

use super::disk::DiskError;
use super::producer_state::ProducerStateError;
use crate::common::{ErrorCode, Offset};
use crate::record::RecordError;

/// Why an append was refused. Nothing was written when an append fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AppendError {
    /// The batch is malformed or its CRC is wrong (`CORRUPT_MESSAGE`, 2).
    CorruptMessage(RecordError),
    /// The batch breaks a produce rule (`INVALID_RECORD`, 87); the reason says which.
    InvalidRecord(String),
    /// The batch is larger than `max.message.bytes` (`MESSAGE_TOO_LARGE`, 10).
    RecordTooLarge {
        /// Batch size in bytes.
        size: usize,
        /// The limit.
        max_message_bytes: usize,
    },
    /// Producer-state validation failed (codes 45, 47, 48, 52).
    ProducerState(ProducerStateError),
    /// A replicated append starts below the log end offset (Kafka's
    /// `UnexpectedAppendOffsetException`).
    UnexpectedAppendOffset {
        /// First offset of the append.
        first_offset: Offset,
        /// The local log end offset.
        log_end_offset: Offset,
    },
    /// A replicated append leaves a gap or overlaps itself. Compaction is not modelled, so
    /// replicated data must be contiguous.
    NonContiguousOffsets {
        /// The offset the next batch had to start at.
        expected_offset: Offset,
        /// The offset it started at.
        found_offset: Offset,
    },
    /// The disk failed (`KAFKA_STORAGE_ERROR`, 56).
    Disk(DiskError),
}

impl AppendError {
    /// Kafka's error code.
    pub fn error_code(&self) -> i16 {
        match self {
            Self::CorruptMessage(_) => 2,
            Self::InvalidRecord(_) => 87,
            Self::RecordTooLarge { .. } => 10,
            Self::ProducerState(error) => error.error_code(),
            // Kafka surfaces these to the fetcher, which treats them as a storage-level failure.
            Self::UnexpectedAppendOffset { .. } | Self::NonContiguousOffsets { .. } => -1,
            Self::Disk(_) => 56,
        }
    }
}

impl From<&AppendError> for ErrorCode {
    fn from(error: &AppendError) -> Self {
        Self::from_code(error.error_code())
    }
}

impl fmt::Display for AppendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::CorruptMessage(error) => write!(f, "CORRUPT_MESSAGE: {error}"),
            Self::InvalidRecord(reason) => write!(f, "INVALID_RECORD: {reason}"),
            Self::RecordTooLarge {
                size,
                max_message_bytes,
            } => write!(
                f,
                "MESSAGE_TOO_LARGE: batch of {size} bytes exceeds max.message.bytes {max_message_bytes}"
            ),
            Self::ProducerState(error) => write!(f, "{error}"),
            Self::UnexpectedAppendOffset {
                first_offset,
                log_end_offset,
            } => write!(
                f,
                "unexpected append offset {first_offset} below log end offset {log_end_offset}"
            ),
            Self::NonContiguousOffsets {
                expected_offset,
                found_offset,
            } => write!(
                f,
                "non-contiguous append: expected offset {expected_offset}, found {found_offset}"
            ),
            Self::Disk(error) => write!(f, "KAFKA_STORAGE_ERROR: {error}"),
        }
    }
}

impl std::error::Error for AppendError {}

impl From<ProducerStateError> for AppendError {
    fn from(error: ProducerStateError) -> Self {
        Self::ProducerState(error)
    }
}

impl From<DiskError> for AppendError {
    fn from(error: DiskError) -> Self {
        Self::Disk(error)
    }
}

/// A read outside the log (`OFFSET_OUT_OF_RANGE`, 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetOutOfRange {
    /// The requested offset.
    pub fetch_offset: Offset,
    /// The log start offset at the time.
    pub log_start_offset: Offset,
    /// The log end offset at the time.
    pub log_end_offset: Offset,
}

impl fmt::Display for OffsetOutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "OFFSET_OUT_OF_RANGE: offset {} outside [{}, {}]",
            self.fetch_offset, self.log_start_offset, self.log_end_offset
        )
    }
}

impl std::error::Error for OffsetOutOfRange {}

/// A failure of a log operation other than append or read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogError {
    /// The disk failed.
    Disk(DiskError),
    /// The log start offset cannot move above the high watermark (`OFFSET_OUT_OF_RANGE`).
    LogStartAboveHighWatermark {
        /// The requested log start offset.
        requested: Offset,
        /// The high watermark.
        high_watermark: Offset,
    },
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Disk(error) => write!(f, "{error}"),
            Self::LogStartAboveHighWatermark {
                requested,
                high_watermark,
            } => write!(
                f,
                "OFFSET_OUT_OF_RANGE: cannot move the log start offset to {requested} above the high watermark {high_watermark}"
            ),
        }
    }
}

impl std::error::Error for LogError {}

impl From<DiskError> for LogError {
    fn from(error: DiskError) -> Self {
        Self::Disk(error)
    }
}
