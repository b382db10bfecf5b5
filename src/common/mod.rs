//! The vocabulary every layer above the record codec shares (Kafka's
//! `org.apache.kafka.common`): node, broker, cluster, topic and partition identifiers; offsets,
//! leader epochs and producer ids and epochs as types; Kafka's error codes; and the KIP-1279
//! mirror partition states the messages carry. It depends on nothing of the crate, so the
//! log, the metadata image, the protocol messages and every component can name the same ids
//! without depending on one another.

mod error_code;
mod ids;
mod mirror_state;
mod numbers;

pub use error_code::ErrorCode;
pub use ids::{BrokerId, ClientKind, ClusterIndex, NodeId, TopicId, TopicName, TopicPartition};
pub use mirror_state::MirrorState;
pub use numbers::{LeaderEpoch, Offset, ProducerEpoch, ProducerId};
