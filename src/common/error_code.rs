//! Kafka error codes used on the wire between simulated nodes.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Declares [`ErrorCode`] and both directions of its numeric mapping from one table, so that a
/// code added to one direction cannot be missing from the other.
macro_rules! error_codes {
    ($($(#[$doc:meta])* $name:ident = $code:literal,)*) => {
        /// A Kafka protocol error code. `None` is success.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum ErrorCode {
            $($(#[$doc])* $name,)*
            /// Any other code, kept as its number.
            Other(i16),
        }

        impl ErrorCode {
            /// The numeric Kafka code.
            pub fn code(self) -> i16 {
                match self {
                    $(Self::$name => $code,)*
                    Self::Other(code) => code,
                }
            }

            /// The code for a numeric value.
            pub fn from_code(code: i16) -> Self {
                match code {
                    $($code => Self::$name,)*
                    other => Self::Other(other),
                }
            }
        }
    };
}

error_codes! {
    /// 0: success.
    None = 0,
    /// 1: the offset is outside the partition's log.
    OffsetOutOfRange = 1,
    /// 2: the batch failed its CRC or structure check.
    CorruptMessage = 2,
    /// 3: the topic or partition does not exist on this broker.
    UnknownTopicOrPartition = 3,
    /// 6: this broker is not the leader (or a follower) of the partition.
    NotLeaderOrFollower = 6,
    /// 7: the request did not complete in time (e.g. acks=all waiting for the ISR).
    RequestTimedOut = 7,
    /// 10: the batch exceeds `max.message.bytes`.
    MessageTooLarge = 10,
    /// 17: the topic name is not a legal Kafka topic name.
    InvalidTopic = 17,
    /// 19: the ISR is smaller than `min.insync.replicas`; nothing was appended.
    NotEnoughReplicas = 19,
    /// 20: appended, but the ISR shrank below `min.insync.replicas` before it was replicated.
    NotEnoughReplicasAfterAppend = 20,
    /// 36: a topic with this name (or id) already exists.
    TopicAlreadyExists = 36,
    /// 37: the partition count is not positive.
    InvalidPartitions = 37,
    /// 38: the replication factor is not positive or exceeds the live brokers.
    InvalidReplicationFactor = 38,
    /// 40: a configuration entry is duplicated or has an illegal value.
    InvalidConfig = 40,
    /// 41: the receiver is not the active controller.
    NotController = 41,
    /// 42: the request is malformed (e.g. an ISR that is not a subset of the replicas).
    InvalidRequest = 42,
    /// 45: the batch's sequence does not follow the producer's last one.
    OutOfOrderSequenceNumber = 45,
    /// 47: the producer epoch is older than the partition knows.
    InvalidProducerEpoch = 47,
    /// 48: a transaction-state rule was broken.
    InvalidTxnState = 48,
    /// 52: a transaction marker came from an older coordinator.
    TransactionCoordinatorFenced = 52,
    /// 56: the broker's disk failed.
    KafkaStorageError = 56,
    /// 74: the request's leader epoch is older than the partition's.
    FencedLeaderEpoch = 74,
    /// 75: the request's leader epoch is newer than this broker knows.
    UnknownLeaderEpoch = 75,
    /// 77: the broker epoch in the request is stale.
    StaleBrokerEpoch = 77,
    /// 78: the offset is not yet available (the high watermark lags the epoch start).
    OffsetNotAvailable = 78,
    /// 87: the batch breaks a produce rule.
    InvalidRecord = 87,
    /// 89: the broker is fenced or not registered.
    BrokerIdNotRegistered = 89,
    /// 90: a newer producer with the same transactional id fenced this one.
    ProducerFenced = 90,
    /// 99: the partition epoch in an AlterPartition request is stale.
    InvalidUpdateVersion = 99,
    /// 101: a registration came from a broker incarnation that is no longer current.
    DuplicateBrokerRegistration = 101,
    /// 107: a proposed ISR member is fenced or not registered (KIP-841).
    IneligibleReplica = 107,
    /// 14: the coordinator is loading its state.
    CoordinatorLoadInProgress = 14,
    /// 15: no coordinator is available (its internal partition has no leader or does not exist yet).
    CoordinatorNotAvailable = 15,
    /// 16: this broker is not the coordinator for the key.
    NotCoordinator = 16,
    /// 25: the member is not in the group (also the answer to an admin offset write to a group with members).
    UnknownMemberId = 25,
    /// 29: the request's principal may not perform the operation on the topic (its source
    /// cluster's authorizer refused a KIP-1279 mirror's fetch, metadata or lookup).
    TopicAuthorizationFailed = 29,
    /// 49: the producer id does not match the transactional id.
    InvalidProducerIdMapping = 49,
    /// 50: the transaction timeout is out of range.
    InvalidTransactionTimeout = 50,
    /// 51: the previous transaction is still completing; retry.
    ConcurrentTransactions = 51,
    /// 68: the group still has members.
    NonEmptyGroup = 68,
    /// 69: the group does not exist.
    GroupIdNotFound = 69,
    /// 110: the member's epoch is stale (KIP-848).
    FencedMemberEpoch = 110,
    /// 100: no topic with this id.
    UnknownTopicId = 100,
    /// 124: the state epoch of a write is older than the stored one (Kafka's share-group
    /// `FENCED_STATE_EPOCH`, reused by KIP-1279's mirror coordinator).
    FencedStateEpoch = 124,
    /// KIP-1279 `INVALID_CLUSTER_MIRROR_STATE`: a mirror partition or topic is not in a state
    /// that admits the operation (e.g. an illegal transition). The KIP has no number yet; this
    /// model uses 1001.
    InvalidClusterMirrorState = 1001,
    /// KIP-1279 `ReadOnlyTopicException`: a produce to a mirror topic that is not stopped
    /// (number 1002 in this model).
    ReadOnlyTopic = 1002,
    /// KIP-1279 `MirrorTopicNotStoppedException`: DeleteRecords, DeleteTopics or
    /// CreatePartitions on a mirror topic that is not stopped, or AddTopicsToMirror on a topic
    /// another mirror removed whose stop has not finished (number 1003 in this model).
    MirrorTopicNotStopped = 1003,
    /// KIP-1279 CreateMirror: a mirror with this name exists (number 1004 in this model).
    ClusterMirrorAlreadyExists = 1004,
    /// KIP-1279: no mirror with this name (number 1005 in this model).
    ClusterMirrorNotFound = 1005,
}

impl ErrorCode {
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
