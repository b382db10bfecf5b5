//! Identifiers, error codes and messages that the modelled components exchange, and the
//! one-line summaries traces show of them ([`Message::summary`]).

mod messages;
mod summary;

// The shared ids and error codes, and the metadata a Metadata answer carries, under the
// names every component has always imported them by.
pub use crate::common::{
    BrokerId, ClientKind, ClusterIndex, ErrorCode, NodeId, TopicId, TopicPartition,
};
pub use crate::metadata::TopicMetadata;
pub use messages::{
    Acks, CommittedOffset, CoordinatorType, DescribeConfigsResult, Envelope, EpochAnswer,
    EpochQuery, FetchPartition, FetchPartitionResponse, GroupDescription, ListOffsetsAnswer,
    ListOffsetsQuery, Message, MirrorListing, MirrorPartitionDescription, MirrorPartitionId,
    MirrorPartitionStatus, MirrorStateWrite, MirrorTopicOperation, NewTopic, OffsetCommitEntry,
    OffsetSpec, Request, Response, TxnMarker,
};
pub use summary::{MessageSummary, PartitionSummary, MAX_ITEMS};
