//! Control records: the single record of a control batch.
//!
//! The key is `int16 version, int16 type`. Types 0 (ABORT) and 1 (COMMIT) are end-transaction
//! markers whose value is `int16 version, int32 coordinatorEpoch`. Type 7 is this project's
//! `MIRROR_PID_RESET` (design.md §6): its value is `int16 version` followed by `SourceClusterId`
//! as an int16 length and UTF-8 bytes. Types 2–6 are KRaft's and appear only in metadata logs.
//! Any other type decodes as [`ControlRecord::Unknown`]; nothing here panics on bad input.
//! As in Kafka, a key or value with a higher version than 0 is read as version 0.

use bytes::BufMut;

/// Control record type ids (Kafka's `ControlRecordType`, plus type 7 from KIP-1279).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ControlRecordType {
    /// 0: transaction aborted.
    Abort,
    /// 1: transaction committed.
    Commit,
    /// 2: KRaft leader change.
    LeaderChange,
    /// 3: KRaft snapshot header.
    SnapshotHeader,
    /// 4: KRaft snapshot footer.
    SnapshotFooter,
    /// 5: KRaft version.
    KraftVersion,
    /// 6: KRaft voters.
    KraftVoters,
    /// 7: KIP-1279 mirror producer-id reset.
    MirrorPidReset,
    /// Any other id; consumers ignore it.
    Unknown(i16),
}

impl ControlRecordType {
    /// The marker that ends a transaction: COMMIT or ABORT.
    pub fn end_transaction(committed: bool) -> Self {
        if committed {
            Self::Commit
        } else {
            Self::Abort
        }
    }

    /// Maps a wire id to a type.
    pub fn from_id(id: i16) -> Self {
        match id {
            0 => Self::Abort,
            1 => Self::Commit,
            2 => Self::LeaderChange,
            3 => Self::SnapshotHeader,
            4 => Self::SnapshotFooter,
            5 => Self::KraftVersion,
            6 => Self::KraftVoters,
            7 => Self::MirrorPidReset,
            other => Self::Unknown(other),
        }
    }

    /// The wire id.
    pub fn id(self) -> i16 {
        match self {
            Self::Abort => 0,
            Self::Commit => 1,
            Self::LeaderChange => 2,
            Self::SnapshotHeader => 3,
            Self::SnapshotFooter => 4,
            Self::KraftVersion => 5,
            Self::KraftVoters => 6,
            Self::MirrorPidReset => 7,
            Self::Unknown(id) => id,
        }
    }

    /// Upper-case name as kafka-dump-log prints it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Abort => "ABORT",
            Self::Commit => "COMMIT",
            Self::LeaderChange => "LEADER_CHANGE",
            Self::SnapshotHeader => "SNAPSHOT_HEADER",
            Self::SnapshotFooter => "SNAPSHOT_FOOTER",
            Self::KraftVersion => "KRAFT_VERSION",
            Self::KraftVoters => "KRAFT_VOTERS",
            Self::MirrorPidReset => "MIRROR_PID_RESET",
            Self::Unknown(_) => "UNKNOWN",
        }
    }
}

/// A parsed control record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlRecord {
    /// ABORT or COMMIT end-transaction marker.
    EndTransaction {
        /// `true` for COMMIT, `false` for ABORT.
        committed: bool,
        /// Epoch of the transaction coordinator that wrote the marker.
        coordinator_epoch: i32,
    },
    /// KIP-1279 MIRROR_PID_RESET: every producer entry of the partition is removed.
    MirrorPidReset {
        /// Cluster id of the source the partition mirrored from before it stopped.
        source_cluster_id: String,
    },
    /// A KRaft control record (types 2–6); its value is not interpreted here.
    Kraft(ControlRecordType),
    /// A type this model does not know; ignored like Kafka's UNKNOWN.
    Unknown {
        /// The unknown type id.
        type_id: i16,
    },
}

impl ControlRecord {
    /// The record's type.
    pub fn record_type(&self) -> ControlRecordType {
        match self {
            Self::EndTransaction {
                committed: true, ..
            } => ControlRecordType::Commit,
            Self::EndTransaction {
                committed: false, ..
            } => ControlRecordType::Abort,
            Self::MirrorPidReset { .. } => ControlRecordType::MirrorPidReset,
            Self::Kraft(kind) => *kind,
            Self::Unknown { type_id } => ControlRecordType::Unknown(*type_id),
        }
    }
}

/// Parses a control record from its key and value. The error is a reason for the caller to
/// attach a byte position to.
pub fn parse_control_record(key: &[u8], value: Option<&[u8]>) -> Result<ControlRecord, String> {
    if key.len() < 4 {
        return Err(format!(
            "control record key has {} bytes, needs 4",
            key.len()
        ));
    }
    let key_version = i16::from_be_bytes([key[0], key[1]]);
    if key_version < 0 {
        return Err(format!("negative control record key version {key_version}"));
    }
    let type_id = i16::from_be_bytes([key[2], key[3]]);
    match ControlRecordType::from_id(type_id) {
        kind @ (ControlRecordType::Abort | ControlRecordType::Commit) => {
            let value = value.ok_or("end-transaction marker without a value")?;
            if value.len() < 6 {
                return Err(format!(
                    "end-transaction marker value has {} bytes, needs 6",
                    value.len()
                ));
            }
            check_value_version(value)?;
            Ok(ControlRecord::EndTransaction {
                committed: kind == ControlRecordType::Commit,
                coordinator_epoch: i32::from_be_bytes([value[2], value[3], value[4], value[5]]),
            })
        }
        ControlRecordType::MirrorPidReset => {
            let value = value.ok_or("MIRROR_PID_RESET without a value")?;
            parse_mirror_pid_reset_value(value)
        }
        ControlRecordType::Unknown(type_id) => Ok(ControlRecord::Unknown { type_id }),
        kraft => Ok(ControlRecord::Kraft(kraft)),
    }
}

fn check_value_version(value: &[u8]) -> Result<(), String> {
    let version = i16::from_be_bytes([value[0], value[1]]);
    if version < 0 {
        return Err(format!("negative control record value version {version}"));
    }
    Ok(())
}

fn parse_mirror_pid_reset_value(value: &[u8]) -> Result<ControlRecord, String> {
    if value.len() < 4 {
        return Err(format!(
            "MIRROR_PID_RESET value has {} bytes, needs at least 4",
            value.len()
        ));
    }
    check_value_version(value)?;
    let length = i16::from_be_bytes([value[2], value[3]]);
    if length < 0 {
        return Err(format!(
            "MIRROR_PID_RESET source cluster id length {length}"
        ));
    }
    let end = 4 + length as usize;
    let raw = value.get(4..end).ok_or_else(|| {
        format!(
            "MIRROR_PID_RESET source cluster id length {length} runs past the value ({} bytes)",
            value.len()
        )
    })?;
    let source_cluster_id = std::str::from_utf8(raw)
        .map_err(|_| "MIRROR_PID_RESET source cluster id is not UTF-8".to_string())?
        .to_string();
    Ok(ControlRecord::MirrorPidReset { source_cluster_id })
}

/// The 4-byte key of a control record of `kind` (version 0).
pub fn control_record_key(kind: ControlRecordType) -> [u8; 4] {
    let mut key = [0u8; 4];
    key[2..4].copy_from_slice(&kind.id().to_be_bytes());
    key
}

/// The 6-byte value of an end-transaction marker (version 0).
pub fn end_transaction_value(coordinator_epoch: i32) -> [u8; 6] {
    let mut value = [0u8; 6];
    value[2..6].copy_from_slice(&coordinator_epoch.to_be_bytes());
    value
}

/// The value of a MIRROR_PID_RESET record (version 0, then the source cluster id as an int16
/// length and UTF-8 bytes). Panics if the id is longer than an int16 length allows, which is a
/// programming error: cluster ids are short names.
pub fn mirror_pid_reset_value(source_cluster_id: &str) -> Vec<u8> {
    let length = i16::try_from(source_cluster_id.len()).expect("source cluster id too long");
    let mut value = Vec::with_capacity(4 + source_cluster_id.len());
    value.put_i16(0);
    value.put_i16(length);
    value.put_slice(source_cluster_id.as_bytes());
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_unknown_types_decode_as_unknown() {
        for id in [-1i16, 8, 100, i16::MAX, i16::MIN] {
            let key = control_record_key(ControlRecordType::from_id(id));
            assert_eq!(
                parse_control_record(&key, None),
                Ok(ControlRecord::Unknown { type_id: id })
            );
        }
    }

    #[test]
    fn control_key_shorter_than_four_bytes_is_an_error() {
        assert!(parse_control_record(&[0, 0, 0], None).is_err());
        assert!(parse_control_record(&[0xff, 0xff, 0, 1], Some(&[0; 6])).is_err());
    }

    #[test]
    fn control_end_transaction_marker_needs_six_value_bytes() {
        let key = control_record_key(ControlRecordType::Commit);
        assert!(parse_control_record(&key, Some(&[0, 0, 0, 0, 5])).is_err());
        assert!(parse_control_record(&key, None).is_err());
        assert_eq!(
            parse_control_record(&key, Some(&end_transaction_value(5))),
            Ok(ControlRecord::EndTransaction {
                committed: true,
                coordinator_epoch: 5
            })
        );
        // A higher value version is read as version 0.
        assert_eq!(
            parse_control_record(&key, Some(&[0, 3, 0, 0, 0, 9, 0xaa])),
            Ok(ControlRecord::EndTransaction {
                committed: true,
                coordinator_epoch: 9
            })
        );
    }

    #[test]
    fn control_mirror_pid_reset_round_trips_and_rejects_bad_lengths() {
        let key = control_record_key(ControlRecordType::MirrorPidReset);
        assert_eq!(key, [0, 0, 0, 7]);
        let value = mirror_pid_reset_value("cluster-a");
        assert_eq!(&value[..4], &[0, 0, 0, 9]);
        assert_eq!(
            parse_control_record(&key, Some(&value)),
            Ok(ControlRecord::MirrorPidReset {
                source_cluster_id: "cluster-a".into()
            })
        );
        assert!(parse_control_record(&key, Some(&[0, 0, 0, 10, b'a'])).is_err());
        assert!(parse_control_record(&key, Some(&[0, 0, 0xff, 0xff])).is_err());
        assert!(parse_control_record(&key, Some(&[0, 0, 0, 1, 0xff])).is_err());
        assert!(parse_control_record(&key, None).is_err());
    }
}
