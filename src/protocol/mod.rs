//! Identifiers, error codes and messages that the modelled components exchange.

mod error_code;
mod ids;
mod messages;

pub use error_code::ErrorCode;
pub use ids::{BrokerId, ClientKind, ClusterIndex, NodeId, TopicId, TopicPartition};
pub use messages::{
    Acks, CommittedOffset, CoordinatorType, DescribeConfigsResult, Envelope, EpochAnswer,
    EpochQuery, FetchPartition, FetchPartitionResponse, GroupDescription, ListOffsetsAnswer,
    ListOffsetsQuery, Message, MirrorListing, MirrorPartitionDescription, MirrorPartitionId,
    MirrorPartitionStatus, MirrorStateWrite, MirrorTopicOperation, NewTopic, OffsetCommitEntry,
    OffsetSpec, Request, Response, TopicMetadata, TxnMarker,
};
