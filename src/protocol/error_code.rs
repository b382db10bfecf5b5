//! Kafka error codes used on the wire between simulated nodes.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A Kafka protocol error code. `None` is success.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ErrorCode {
    /// 0: success.
    None,
    /// 1: the offset is outside the partition's log.
    OffsetOutOfRange,
    /// 2: the batch failed its CRC or structure check.
    CorruptMessage,
    /// 3: the topic or partition does not exist on this broker.
    UnknownTopicOrPartition,
    /// 6: this broker is not the leader (or a follower) of the partition.
    NotLeaderOrFollower,
    /// 7: the request did not complete in time (e.g. acks=all waiting for the ISR).
    RequestTimedOut,
    /// 10: the batch exceeds `max.message.bytes`.
    MessageTooLarge,
    /// 17: the topic name is not a legal Kafka topic name.
    InvalidTopic,
    /// 19: the ISR is smaller than `min.insync.replicas`; nothing was appended.
    NotEnoughReplicas,
    /// 20: appended, but the ISR shrank below `min.insync.replicas` before it was replicated.
    NotEnoughReplicasAfterAppend,
    /// 36: a topic with this name (or id) already exists.
    TopicAlreadyExists,
    /// 37: the partition count is not positive.
    InvalidPartitions,
    /// 38: the replication factor is not positive or exceeds the live brokers.
    InvalidReplicationFactor,
    /// 40: a configuration entry is duplicated or has an illegal value.
    InvalidConfig,
    /// 41: the receiver is not the active controller.
    NotController,
    /// 42: the request is malformed (e.g. an ISR that is not a subset of the replicas).
    InvalidRequest,
    /// 45: the batch's sequence does not follow the producer's last one.
    OutOfOrderSequenceNumber,
    /// 47: the producer epoch is older than the partition knows.
    InvalidProducerEpoch,
    /// 48: a transaction-state rule was broken.
    InvalidTxnState,
    /// 52: a transaction marker came from an older coordinator.
    TransactionCoordinatorFenced,
    /// 56: the broker's disk failed.
    KafkaStorageError,
    /// 74: the request's leader epoch is older than the partition's.
    FencedLeaderEpoch,
    /// 75: the request's leader epoch is newer than this broker knows.
    UnknownLeaderEpoch,
    /// 77: the broker epoch in the request is stale.
    StaleBrokerEpoch,
    /// 78: the offset is not yet available (the high watermark lags the epoch start).
    OffsetNotAvailable,
    /// 87: the batch breaks a produce rule.
    InvalidRecord,
    /// 89: the broker is fenced or not registered.
    BrokerIdNotRegistered,
    /// 90: a newer producer with the same transactional id fenced this one.
    ProducerFenced,
    /// 99: the partition epoch in an AlterPartition request is stale.
    InvalidUpdateVersion,
    /// 101: a registration came from a broker incarnation that is no longer current.
    DuplicateBrokerRegistration,
    /// 107: a proposed ISR member is fenced or not registered (KIP-841).
    IneligibleReplica,
    /// 14: the coordinator is loading its state.
    CoordinatorLoadInProgress,
    /// 15: no coordinator is available (its internal partition has no leader or does not exist yet).
    CoordinatorNotAvailable,
    /// 16: this broker is not the coordinator for the key.
    NotCoordinator,
    /// 25: the member is not in the group (also the answer to an admin offset write to a group with members).
    UnknownMemberId,
    /// 49: the producer id does not match the transactional id.
    InvalidProducerIdMapping,
    /// 50: the transaction timeout is out of range.
    InvalidTransactionTimeout,
    /// 51: the previous transaction is still completing; retry.
    ConcurrentTransactions,
    /// 68: the group still has members.
    NonEmptyGroup,
    /// 69: the group does not exist.
    GroupIdNotFound,
    /// 110: the member's epoch is stale (KIP-848).
    FencedMemberEpoch,
    /// 100: no topic with this id.
    UnknownTopicId,
    /// Any other code, kept as its number.
    Other(i16),
}

impl ErrorCode {
    /// The numeric Kafka code.
    pub fn code(self) -> i16 {
        match self {
            Self::None => 0,
            Self::OffsetOutOfRange => 1,
            Self::CorruptMessage => 2,
            Self::UnknownTopicOrPartition => 3,
            Self::NotLeaderOrFollower => 6,
            Self::RequestTimedOut => 7,
            Self::MessageTooLarge => 10,
            Self::InvalidTopic => 17,
            Self::NotEnoughReplicas => 19,
            Self::NotEnoughReplicasAfterAppend => 20,
            Self::TopicAlreadyExists => 36,
            Self::InvalidPartitions => 37,
            Self::InvalidReplicationFactor => 38,
            Self::InvalidConfig => 40,
            Self::NotController => 41,
            Self::InvalidRequest => 42,
            Self::OutOfOrderSequenceNumber => 45,
            Self::InvalidProducerEpoch => 47,
            Self::InvalidTxnState => 48,
            Self::TransactionCoordinatorFenced => 52,
            Self::KafkaStorageError => 56,
            Self::FencedLeaderEpoch => 74,
            Self::UnknownLeaderEpoch => 75,
            Self::StaleBrokerEpoch => 77,
            Self::OffsetNotAvailable => 78,
            Self::InvalidRecord => 87,
            Self::BrokerIdNotRegistered => 89,
            Self::ProducerFenced => 90,
            Self::InvalidUpdateVersion => 99,
            Self::DuplicateBrokerRegistration => 101,
            Self::IneligibleReplica => 107,
            Self::CoordinatorLoadInProgress => 14,
            Self::CoordinatorNotAvailable => 15,
            Self::NotCoordinator => 16,
            Self::UnknownMemberId => 25,
            Self::InvalidProducerIdMapping => 49,
            Self::InvalidTransactionTimeout => 50,
            Self::ConcurrentTransactions => 51,
            Self::NonEmptyGroup => 68,
            Self::GroupIdNotFound => 69,
            Self::FencedMemberEpoch => 110,
            Self::UnknownTopicId => 100,
            Self::Other(code) => code,
        }
    }

    /// The code for a numeric value.
    pub fn from_code(code: i16) -> Self {
        match code {
            0 => Self::None,
            1 => Self::OffsetOutOfRange,
            2 => Self::CorruptMessage,
            3 => Self::UnknownTopicOrPartition,
            6 => Self::NotLeaderOrFollower,
            7 => Self::RequestTimedOut,
            10 => Self::MessageTooLarge,
            17 => Self::InvalidTopic,
            19 => Self::NotEnoughReplicas,
            20 => Self::NotEnoughReplicasAfterAppend,
            36 => Self::TopicAlreadyExists,
            37 => Self::InvalidPartitions,
            38 => Self::InvalidReplicationFactor,
            40 => Self::InvalidConfig,
            41 => Self::NotController,
            42 => Self::InvalidRequest,
            45 => Self::OutOfOrderSequenceNumber,
            47 => Self::InvalidProducerEpoch,
            48 => Self::InvalidTxnState,
            52 => Self::TransactionCoordinatorFenced,
            56 => Self::KafkaStorageError,
            74 => Self::FencedLeaderEpoch,
            75 => Self::UnknownLeaderEpoch,
            77 => Self::StaleBrokerEpoch,
            78 => Self::OffsetNotAvailable,
            87 => Self::InvalidRecord,
            89 => Self::BrokerIdNotRegistered,
            90 => Self::ProducerFenced,
            99 => Self::InvalidUpdateVersion,
            101 => Self::DuplicateBrokerRegistration,
            107 => Self::IneligibleReplica,
            14 => Self::CoordinatorLoadInProgress,
            15 => Self::CoordinatorNotAvailable,
            16 => Self::NotCoordinator,
            25 => Self::UnknownMemberId,
            49 => Self::InvalidProducerIdMapping,
            50 => Self::InvalidTransactionTimeout,
            51 => Self::ConcurrentTransactions,
            68 => Self::NonEmptyGroup,
            69 => Self::GroupIdNotFound,
            110 => Self::FencedMemberEpoch,
            100 => Self::UnknownTopicId,
            other => Self::Other(other),
        }
    }

    /// Whether this is success.
    pub fn is_none(self) -> bool {
        self == Self::None
    }

    /// Whether a client should retry the same request (possibly after refreshing metadata),
    /// following Kafka's `RetriableException` subclasses.
    pub fn is_retriable(self) -> bool {
        matches!(
            self,
            Self::NotLeaderOrFollower
                | Self::RequestTimedOut
                | Self::NotEnoughReplicas
                | Self::NotEnoughReplicasAfterAppend
                | Self::UnknownTopicOrPartition
                | Self::KafkaStorageError
                | Self::FencedLeaderEpoch
                | Self::UnknownLeaderEpoch
                | Self::OffsetNotAvailable
                | Self::CorruptMessage
                | Self::NotController
                | Self::CoordinatorLoadInProgress
                | Self::CoordinatorNotAvailable
                | Self::NotCoordinator
                | Self::ConcurrentTransactions
        )
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}({})", self.code())
    }
}

impl From<&crate::log::AppendError> for ErrorCode {
    fn from(error: &crate::log::AppendError) -> Self {
        Self::from_code(error.error_code())
    }
}
