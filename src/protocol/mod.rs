//! Identifiers, error codes and messages that the modelled components exchange, and the
//! one-line summaries traces show of them ([`Message::summary`]).

mod messages;
mod parts;
mod requests;
mod responses;
mod summary;

// The shared ids and error codes, and the metadata a Metadata answer carries, under the
// names every component has always imported them by.
pub use crate::common::{
    BrokerId, ClientKind, ClusterIndex, ErrorCode, LeaderEpoch, NodeId, Offset, ProducerEpoch,
    ProducerId, TopicId, TopicName, TopicPartition,
};
pub use crate::metadata::TopicMetadata;
pub use messages::{Envelope, Message};
pub use parts::{
    Acks, CommittedOffset, CoordinatorType, DescribeConfigsResult, EpochAnswer, EpochQuery,
    FetchPartition, FetchPartitionResponse, GroupDescription, ListMirrorsFilter, ListOffsetsAnswer,
    ListOffsetsQuery, ListedState, MirrorListing, MirrorPartitionDescription, MirrorPartitionId,
    MirrorPartitionStatus, MirrorStateWrite, MirrorTopicOperation, NewTopic, OffsetCommitEntry,
    OffsetSpec, TxnMarker,
};
pub use requests::{
    ClusterRequest, ControllerRequest, CoordinatorRequest, MirrorRequest, ReplicaRequest, Request,
};
pub use responses::{
    ClusterResponse, ControllerResponse, CoordinatorResponse, MirrorResponse, ReplicaResponse,
    Response,
};
pub use summary::{MessageSummary, PartitionSummary, MAX_ITEMS};
