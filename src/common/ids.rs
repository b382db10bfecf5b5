//! Identifiers shared by every component: clusters, nodes, brokers, topics and partitions.
//!
//! Node ids are small `Copy` values so that messages can carry them cheaply; their `Display`
//! form is the stable node name used in traces and violations (`a-broker-1`, `b-controller`,
//! `a-producer-2`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// A cluster, numbered from 0 and named `a`, `b`, `c`, … in output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ClusterIndex(pub u8);

impl ClusterIndex {
    /// The cluster's one-letter name.
    pub fn name(self) -> char {
        assert!(self.0 < 26, "cluster index {} has no letter", self.0);
        (b'a' + self.0) as char
    }

    /// The cluster id a KIP-1279 peer reports for this cluster (`cluster-a`, …).
    pub fn cluster_id(self) -> String {
        format!("cluster-{}", self.name())
    }
}

impl fmt::Display for ClusterIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name())
    }
}

/// A broker id, unique within its cluster (Kafka's `node.id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BrokerId(pub i32);

impl fmt::Display for BrokerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What kind of client a client node runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ClientKind {
    /// An idempotent (or transactional) producer.
    Producer,
    /// A consumer.
    Consumer,
    /// An admin client.
    Admin,
}

/// Every addressable node of the simulated world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum NodeId {
    /// The (single, active) controller of a cluster.
    Controller(ClusterIndex),
    /// A broker of a cluster.
    Broker(ClusterIndex, BrokerId),
    /// A client, named after the cluster it was configured against.
    Client(ClusterIndex, ClientKind, u16),
}

impl NodeId {
    /// The cluster the node belongs to (for clients: the cluster they bootstrap from).
    pub fn cluster(self) -> ClusterIndex {
        match self {
            Self::Controller(cluster) | Self::Broker(cluster, _) | Self::Client(cluster, _, _) => {
                cluster
            }
        }
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Controller(cluster) => write!(f, "{cluster}-controller"),
            Self::Broker(cluster, id) => write!(f, "{cluster}-broker-{id}"),
            Self::Client(cluster, kind, index) => {
                let kind = match kind {
                    ClientKind::Producer => "producer",
                    ClientKind::Consumer => "consumer",
                    ClientKind::Admin => "admin",
                };
                write!(f, "{cluster}-{kind}-{index}")
            }
        }
    }
}

/// A topic id (Kafka's UUID), kept as 128 bits. Mirrored topics keep the source's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TopicId(pub u128);

impl fmt::Display for TopicId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

/// A topic partition by name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TopicPartition {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
}

impl TopicPartition {
    /// Builds a topic partition.
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        Self {
            topic: topic.into(),
            partition,
        }
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}
