//! The controller's durable metadata log: one file of CRC-protected frames, one frame per batch
//! of [`MetadataRecord`]s.
//!
//! File `metadata.log` (see [`METADATA_LOG_FILE`]) is a sequence of frames, each
//!
//! ```text
//! [u32 big-endian payload length][u32 big-endian CRC-32C of the payload][payload]
//! ```
//!
//! where the payload is the `serde_json` encoding of the batch: a non-empty JSON array of
//! records. A record's offset is its index in the whole log; offsets are not stored.
//!
//! A frame holds a whole batch, not a single record, because the records of one controller
//! decision must survive or vanish together, as a KRaft record batch does: a `FenceBroker`
//! without the partition changes that move leadership off the fenced broker would recover into
//! an image where a fenced broker leads.
//!
//! Writes: [`MetadataLog::append`] encodes a batch as one frame, appends it with one write and
//! flushes the file before it returns; only then are the records part of
//! [`MetadataLog::records`]. The caller acts on records (answers, applies them to images others
//! can see) only after that.
//!
//! Recovery: [`MetadataLog::open`] reads the frames in order and stops at the first frame that is
//! torn (shorter than its header says), fails its CRC, does not decode to a non-empty batch,
//! has a length above [`MAX_FRAME_PAYLOAD_BYTES`], or holds a batch the caller's `accept` hook
//! refuses. The file is truncated right before that frame, so the next append continues a valid
//! log. Bad bytes never panic.

use std::fmt;

use crate::log::{DiskError, LogDisk};
use crate::metadata::MetadataRecord;

/// Name of the metadata log file in the controller's directory.
pub const METADATA_LOG_FILE: &str = "metadata.log";

/// Bytes of a frame header: payload length and CRC-32C.
pub const FRAME_HEADER_BYTES: usize = 8;

/// Largest payload a frame may have (64 MiB). Encoding asserts it; recovery treats a larger
/// length field as corruption.
pub const MAX_FRAME_PAYLOAD_BYTES: usize = 64 << 20;

/// Why recovery stopped before the end of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// Fewer bytes are left than a header (or the header's payload) needs: a torn write.
    Torn {
        /// Bytes left from the frame start to the end of the file.
        available_bytes: usize,
    },
    /// The length field is above [`MAX_FRAME_PAYLOAD_BYTES`].
    LengthTooLarge {
        /// The length field.
        length: usize,
    },
    /// The payload's CRC-32C does not match the header.
    CrcMismatch {
        /// CRC in the header.
        stored: u32,
        /// CRC of the bytes read.
        computed: u32,
    },
    /// The payload passed its CRC but is not a non-empty batch of metadata records.
    Undecodable(String),
    /// The record decoded but the caller refused it (it breaks an ordering rule of the image).
    Refused(String),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Torn { available_bytes } => {
                write!(f, "torn frame: only {available_bytes} bytes left")
            }
            Self::LengthTooLarge { length } => {
                write!(f, "frame length {length} exceeds {MAX_FRAME_PAYLOAD_BYTES}")
            }
            Self::CrcMismatch { stored, computed } => write!(
                f,
                "frame CRC mismatch: stored {stored:#010x}, computed {computed:#010x}"
            ),
            Self::Undecodable(reason) => write!(f, "undecodable record: {reason}"),
            Self::Refused(reason) => write!(f, "refused record: {reason}"),
        }
    }
}

/// What recovery found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataLogRecovery {
    /// Records kept (the new log end offset).
    pub records: i64,
    /// Bytes kept (the valid prefix of the file).
    pub valid_bytes: u64,
    /// Bytes cut off the end of the file (0 when the file was clean).
    pub truncated_bytes: u64,
    /// Why the scan stopped early, with the byte position of the bad frame.
    pub stopped_at: Option<(u64, FrameError)>,
}

/// Appends `records` (a non-empty batch) to `out` as one frame.
pub fn encode_frame(records: &[MetadataRecord], out: &mut Vec<u8>) {
    assert!(!records.is_empty(), "a frame holds a non-empty batch");
    let payload = serde_json::to_vec(records).expect("metadata records always serialize");
    assert!(
        payload.len() <= MAX_FRAME_PAYLOAD_BYTES,
        "metadata batch of {} bytes exceeds the frame limit",
        payload.len()
    );
    let length = u32::try_from(payload.len()).expect("bounded by MAX_FRAME_PAYLOAD_BYTES");
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(&crc32c::crc32c(&payload).to_be_bytes());
    out.extend_from_slice(&payload);
}

/// Decodes the frame at the start of `bytes`: its batch and the frame's total size in bytes.
pub fn decode_frame(bytes: &[u8]) -> Result<(Vec<MetadataRecord>, usize), FrameError> {
    if bytes.len() < FRAME_HEADER_BYTES {
        return Err(FrameError::Torn {
            available_bytes: bytes.len(),
        });
    }
    let length = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
    let stored = u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
    if length > MAX_FRAME_PAYLOAD_BYTES {
        return Err(FrameError::LengthTooLarge { length });
    }
    let frame_bytes = FRAME_HEADER_BYTES + length;
    if bytes.len() < frame_bytes {
        return Err(FrameError::Torn {
            available_bytes: bytes.len(),
        });
    }
    let payload = &bytes[FRAME_HEADER_BYTES..frame_bytes];
    let computed = crc32c::crc32c(payload);
    if computed != stored {
        return Err(FrameError::CrcMismatch { stored, computed });
    }
    let records: Vec<MetadataRecord> = serde_json::from_slice(payload)
        .map_err(|error| FrameError::Undecodable(error.to_string()))?;
    if records.is_empty() {
        return Err(FrameError::Undecodable("empty batch".to_string()));
    }
    Ok((records, frame_bytes))
}

/// The metadata log: the durable file and an in-memory copy of every record in it.
#[derive(Debug)]
pub struct MetadataLog<D: LogDisk> {
    disk: D,
    records: Vec<MetadataRecord>,
    byte_length: u64,
}

impl<D: LogDisk> MetadataLog<D> {
    /// Opens (creating if needed) and recovers the log on `disk`. `accept(first_offset, batch)`
    /// sees the batch of every intact frame in order and may refuse it; the log ends before the
    /// first torn, corrupt or refused frame, and the file is truncated there.
    pub fn open(
        mut disk: D,
        mut accept: impl FnMut(i64, &[MetadataRecord]) -> Result<(), String>,
    ) -> Result<(Self, MetadataLogRecovery), DiskError> {
        disk.create(METADATA_LOG_FILE)?;
        let bytes = disk.read_file(METADATA_LOG_FILE)?;
        let mut records: Vec<MetadataRecord> = Vec::new();
        let mut position = 0usize;
        let mut stopped_at = None;
        while position < bytes.len() {
            let outcome = decode_frame(&bytes[position..]).and_then(|(batch, size)| {
                accept(records.len() as i64, &batch).map_err(FrameError::Refused)?;
                Ok((batch, size))
            });
            match outcome {
                Ok((batch, size)) => {
                    assert!(
                        size > FRAME_HEADER_BYTES,
                        "a frame has a header and a payload"
                    );
                    assert!(!batch.is_empty());
                    records.extend(batch);
                    position += size;
                }
                Err(error) => {
                    stopped_at = Some((position as u64, error));
                    break;
                }
            }
        }
        assert!(position <= bytes.len(), "recovery read past the end");
        let truncated_bytes = (bytes.len() - position) as u64;
        assert_eq!(
            stopped_at.is_some(),
            truncated_bytes > 0,
            "recovery stops early exactly when bytes are left"
        );
        if truncated_bytes > 0 {
            disk.truncate(METADATA_LOG_FILE, position as u64)?;
            disk.flush(METADATA_LOG_FILE)?;
        }
        let recovery = MetadataLogRecovery {
            records: records.len() as i64,
            valid_bytes: position as u64,
            truncated_bytes,
            stopped_at,
        };
        let log = Self {
            disk,
            records,
            byte_length: position as u64,
        };
        Ok((log, recovery))
    }

    /// Appends `records` as one frame with one write, and flushes. On success they are durable
    /// and visible in [`MetadataLog::records`]; on failure nothing becomes visible (the file may
    /// hold a torn frame, which the next recovery cuts off whole).
    pub fn append(&mut self, records: &[MetadataRecord]) -> Result<(), DiskError> {
        if records.is_empty() {
            return Ok(());
        }
        let mut bytes = Vec::new();
        encode_frame(records, &mut bytes);
        assert!(bytes.len() > FRAME_HEADER_BYTES);
        self.disk.append(METADATA_LOG_FILE, &bytes)?;
        self.disk.flush(METADATA_LOG_FILE)?;
        self.records.extend_from_slice(records);
        self.byte_length += bytes.len() as u64;
        Ok(())
    }

    /// Every durable record; a record's offset is its index.
    pub fn records(&self) -> &[MetadataRecord] {
        &self.records
    }

    /// Offset of the next record to be written.
    pub fn end_offset(&self) -> i64 {
        self.records.len() as i64
    }

    /// Bytes of the file that hold the records.
    pub fn byte_length(&self) -> u64 {
        self.byte_length
    }

    /// The disk.
    pub fn disk(&self) -> &D {
        &self.disk
    }

    /// Gives the disk back (to crash it and recover in tests, or to hand it to a restarted node).
    pub fn into_disk(self) -> D {
        self.disk
    }
}
