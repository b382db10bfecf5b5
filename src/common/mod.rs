//! The vocabulary every layer above the record codec shares: node, broker, cluster, topic and
//! partition identifiers, Kafka's error codes (Kafka's `org.apache.kafka.common`), and the
//! KIP-1279 mirror partition states the messages carry. It
//! depends on nothing of the crate, so the metadata image, the protocol messages and every
//! component can name the same ids without depending on one another.

mod error_code;
mod ids;
mod mirror_state;

pub use error_code::ErrorCode;
pub use ids::{BrokerId, ClientKind, ClusterIndex, NodeId, TopicId, TopicPartition};
pub use mirror_state::MirrorState;
