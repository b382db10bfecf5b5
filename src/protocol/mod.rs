//! Identifiers, error codes and messages that the modelled components exchange, and the
//! one-line summaries traces show of them ([`Message::summary`]).

mod error_code;
mod ids;
mod messages;
mod summary;

pub use error_code::ErrorCode;
pub use ids::{BrokerId, ClientKind, ClusterIndex, NodeId, TopicId, TopicPartition};
pub use messages::{
    Acks, CommittedOffset, CoordinatorType, DescribeConfigsResult, Envelope, EpochAnswer,
    EpochQuery, FetchPartition, FetchPartitionResponse, GroupDescription, ListOffsetsAnswer,
    ListOffsetsQuery, Message, MirrorListing, MirrorPartitionDescription, MirrorPartitionId,
    MirrorPartitionStatus, MirrorStateWrite, MirrorTopicOperation, NewTopic, OffsetCommitEntry,
    OffsetSpec, Request, Response, TopicMetadata, TxnMarker,
};
pub use summary::{MessageSummary, PartitionSummary, MAX_ITEMS};
