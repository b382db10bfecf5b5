//! Identifiers, error codes and messages that the modelled components exchange.

mod error_code;
mod ids;
mod messages;

pub use error_code::ErrorCode;
pub use ids::{BrokerId, ClientKind, ClusterIndex, NodeId, TopicId, TopicPartition};
pub use messages::{
    Acks, Envelope, EpochAnswer, EpochQuery, FetchPartition, FetchPartitionResponse,
    ListOffsetsAnswer, ListOffsetsQuery, Message, NewTopic, OffsetSpec, Request, Response,
    TopicMetadata,
};
