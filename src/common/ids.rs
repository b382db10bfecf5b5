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

    /// The cluster whose [`Self::cluster_id`] is `id`.
    pub fn from_cluster_id(id: &str) -> Option<Self> {
        match id.strip_prefix("cluster-")?.as_bytes() {
            [letter @ b'a'..=b'z'] => Some(Self(letter - b'a')),
            _ => None,
        }
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

/// A topic's name, shared rather than copied: cloning one (every map key and message that names
/// a partition does) bumps a reference count instead of allocating, and two names cloned from
/// one compare equal without reading their bytes. It orders, hashes, prints and serialises
/// exactly as the `String` it holds, so maps keyed by it iterate in the same order.
#[derive(Clone)]
pub struct TopicName(std::sync::Arc<str>);

impl TopicName {
    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for TopicName {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for TopicName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for TopicName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq for TopicName {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl Eq for TopicName {}

impl PartialOrd for TopicName {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TopicName {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if std::sync::Arc::ptr_eq(&self.0, &other.0) {
            return std::cmp::Ordering::Equal;
        }
        self.0.cmp(&other.0)
    }
}

impl std::hash::Hash for TopicName {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialEq<str> for TopicName {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for TopicName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for TopicName {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<TopicName> for String {
    fn eq(&self, other: &TopicName) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<TopicName> for str {
    fn eq(&self, other: &TopicName) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<TopicName> for &str {
    fn eq(&self, other: &TopicName) -> bool {
        *self == other.as_str()
    }
}

impl From<String> for TopicName {
    fn from(name: String) -> Self {
        Self(name.into())
    }
}

impl From<&str> for TopicName {
    fn from(name: &str) -> Self {
        Self(name.into())
    }
}

impl From<&String> for TopicName {
    fn from(name: &String) -> Self {
        Self(name.as_str().into())
    }
}

impl From<TopicName> for String {
    fn from(name: TopicName) -> Self {
        name.as_str().to_string()
    }
}

impl fmt::Display for TopicName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for TopicName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl Serialize for TopicName {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for TopicName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::from)
    }
}

/// A topic partition by name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TopicPartition {
    /// Topic name.
    pub topic: TopicName,
    /// Partition index.
    pub partition: i32,
}

impl TopicPartition {
    /// Builds a topic partition.
    pub fn new(topic: impl Into<TopicName>, partition: i32) -> Self {
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
