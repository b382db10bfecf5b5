//! Coordinators hosted on brokers, Kafka's `CoordinatorRuntime` model.
//!
//! A coordinator is split into *shards*, one per partition of an internal topic
//! (`__consumer_offsets` for groups, `__transaction_state` for transactions, `__mirror_state`
//! for KIP-1279's mirror partition states, whose shard lives with the rest of mirroring). The
//! broker leading such a partition hosts its shard: when it becomes leader it builds a fresh
//! shard, replays every record of the partition into it ([`Shard::replay`]) and calls
//! [`Shard::loaded`]; from then on it routes the requests whose key hashes to that partition
//! ([`partition_for`]) to the shard. When it loses leadership it calls [`Shard::unloaded`] and
//! drops the shard.
//!
//! Contract between a shard and the runtime (the broker):
//! - A shard changes its state only in `replay`. To change state it asks for a write
//!   ([`ShardOutput::writes`]); the runtime appends the records to the partition as one batch
//!   (leader append, coordinator origin) and, once the partition's high watermark passes the
//!   batch, replays the records into the shard and then calls [`Shard::write_completed`] with
//!   `Ok`. If the write cannot be appended it reports the error instead. Writes complete in the
//!   order they were asked for. ("Write, then apply": a shard never shows state that could be
//!   lost with its partition's uncommitted tail.)
//! - Responses a shard queues are sent at once; a shard that must wait for a write keeps the
//!   request's return address and answers in `write_completed`.
//! - Requests a shard sends to other nodes ([`ShardOutput::requests`]) carry a shard-chosen
//!   token; the runtime delivers the answer (or `Err(RequestTimedOut)`) to
//!   [`Shard::handle_response`] with that token.
//! - Shards are deterministic state machines: time comes in [`ShardEnv::now_ms`], metadata in
//!   [`ShardEnv::image`]; no clocks, no randomness, `BTreeMap` only.

pub mod group;
pub mod host;
pub mod runtime;
pub mod transaction;

use std::fmt::Debug;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::metadata::{MetadataImage, MIN_INSYNC_REPLICAS};
use crate::protocol::{
    ControllerRequest, CoordinatorRequest, ErrorCode, NewTopic, NodeId, Request, Response,
    TopicName, TopicPartition,
};

/// The group coordinator's internal topic.
pub const CONSUMER_OFFSETS_TOPIC: &str = "__consumer_offsets";
/// The transaction coordinator's internal topic.
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";

/// Java's `String.hashCode` over the UTF-16 code units of `key`.
pub fn java_string_hash(key: &str) -> i32 {
    key.encode_utf16().fold(0i32, |hash, unit| {
        hash.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// Kafka's coordinator partition for a key: `abs(hashCode(key)) % partitions` (with Kafka's
/// `Utils.abs`, which maps `i32::MIN` to 0).
pub fn partition_for(key: &str, partitions: i32) -> i32 {
    assert!(partitions > 0, "an internal topic has partitions");
    let hash = java_string_hash(key);
    let abs = if hash == i32::MIN { 0 } else { hash.abs() };
    abs % partitions
}

/// The partition count of `topic` in `image` (0 while the image does not have it).
pub fn partition_count(image: &MetadataImage, topic: &str) -> i32 {
    image
        .topic_ids
        .get(topic)
        .and_then(|topic_id| image.topics.get(topic_id))
        .map_or(0, |topic| topic.partitions.len() as i32)
}

/// The partition of internal topic `topic` that coordinates `key`, once `image` has the topic.
pub fn coordinator_partition_in(
    image: &MetadataImage,
    topic: &str,
    key: &str,
) -> Option<TopicPartition> {
    let partitions = partition_count(image, topic);
    (partitions > 0).then(|| TopicPartition::new(topic, partition_for(key, partitions)))
}

/// The CreateTopics a broker sends its controller for internal topic `topic` on first use.
/// The configured replication factor as it is, like Kafka's `offsets.topic.replication.factor`:
/// while fewer brokers are alive the controller refuses the creation and FindCoordinator keeps
/// answering CoordinatorNotAvailable, rather than an under-replicated coordinator topic being
/// created.
pub fn internal_topic_creation(topic: &str, partitions: i32, replication_factor: i16) -> Request {
    let min_insync = replication_factor.min(2);
    Request::Controller(ControllerRequest::CreateTopics {
        topics: vec![NewTopic {
            name: topic.to_string(),
            partitions,
            replication_factor,
            configs: vec![(MIN_INSYNC_REPLICAS.into(), min_insync.to_string())],
            topic_id: None,
        }],
    })
}

/// What a shard sees of the world when it is called.
#[derive(Debug, Clone, Copy)]
pub struct ShardEnv<'a> {
    /// The hosting broker's clock.
    pub now_ms: i64,
    /// The hosting broker's metadata image (partition leaders, topic configs).
    pub image: &'a MetadataImage,
    /// The leader epoch of the shard's partition: the coordinator epoch.
    pub coordinator_epoch: i32,
    /// The hosting broker.
    pub node_id: NodeId,
    /// The shard's partition of the internal topic.
    pub partition: &'a TopicPartition,
}

impl ShardEnv<'_> {
    /// Whether `key` hashes ([`partition_for`]) to the shard's partition under the partition
    /// count the image has for the shard's topic; `None` while the image has no partitions of
    /// that topic. Every shard answers requests for keys it does not own with
    /// `NotCoordinator`; what it answers for `None` is its own choice.
    pub fn owns_key(&self, key: &str) -> Option<bool> {
        let partitions = partition_count(self.image, &self.partition.topic);
        (partitions > 0).then(|| partition_for(key, partitions) == self.partition.partition)
    }
}

/// Records to append as one batch; `write_id` comes back in [`Shard::write_completed`].
#[derive(Debug, Clone, PartialEq)]
pub struct ShardWrite<R> {
    /// Chosen by the shard.
    pub write_id: u64,
    /// The records, in order.
    pub records: Vec<R>,
}

/// What a shard asks the runtime to do.
#[derive(Debug, Clone)]
pub struct ShardOutput<R> {
    /// Writes, appended in this order.
    pub writes: Vec<ShardWrite<R>>,
    /// Responses to send now: (to, correlation id, response).
    pub responses: Vec<(NodeId, u64, Response)>,
    /// Requests to send: (to, request, token).
    pub requests: Vec<(NodeId, Request, u64)>,
    /// Coverage marks for the simulator's checkers: cases only the shard sees (see
    /// `BrokerEvent::CoordinatorMark`). They change nothing in the shard or the runtime.
    pub marks: Vec<&'static str>,
}

impl<R> Default for ShardOutput<R> {
    fn default() -> Self {
        Self {
            writes: Vec::new(),
            responses: Vec::new(),
            requests: Vec::new(),
            marks: Vec::new(),
        }
    }
}

impl<R> ShardOutput<R> {
    /// Whether nothing was asked for.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
            && self.responses.is_empty()
            && self.requests.is_empty()
            && self.marks.is_empty()
    }
}

/// One coordinator shard; see the module doc for the contract with the runtime.
pub trait Shard {
    /// The shard's record type, stored as JSON in its partition's batches.
    type Record: Clone + Debug + Serialize + DeserializeOwned;

    /// Applies one committed record (while loading, and after each write commits).
    fn replay(&mut self, record: &Self::Record);

    /// The whole partition was replayed; the shard may now resume work (e.g. finish
    /// transactions that were completing when the previous coordinator stopped).
    fn loaded(&mut self, env: &ShardEnv<'_>, out: &mut ShardOutput<Self::Record>);

    /// A request for this shard.
    fn handle_request(
        &mut self,
        env: &ShardEnv<'_>,
        from: NodeId,
        correlation_id: u64,
        request: CoordinatorRequest,
        out: &mut ShardOutput<Self::Record>,
    );

    /// The answer to a request the shard sent, or `Err(RequestTimedOut)`.
    fn handle_response(
        &mut self,
        env: &ShardEnv<'_>,
        token: u64,
        response: Result<Response, ErrorCode>,
        out: &mut ShardOutput<Self::Record>,
    );

    /// A write committed (its records were replayed just before) or failed.
    fn write_completed(
        &mut self,
        env: &ShardEnv<'_>,
        write_id: u64,
        result: Result<(), ErrorCode>,
        out: &mut ShardOutput<Self::Record>,
    );

    /// The deadline from [`Shard::poll_timeout`] passed.
    fn handle_timeout(&mut self, env: &ShardEnv<'_>, out: &mut ShardOutput<Self::Record>);

    /// The broker's metadata image dropped these topics (deleted, or deleted and created
    /// again under the same name): Kafka's `onPartitionsDeleted`, called on the shards loaded
    /// at that moment. By default nothing.
    fn topics_deleted(
        &mut self,
        _env: &ShardEnv<'_>,
        _topics: &[TopicName],
        _out: &mut ShardOutput<Self::Record>,
    ) {
    }

    /// The earliest time the shard wants `handle_timeout`.
    fn poll_timeout(&self) -> Option<i64>;

    /// The broker lost the partition: answer pending requests (with `NotCoordinator`); the
    /// shard is dropped afterwards.
    fn unloaded(&mut self, out: &mut ShardOutput<Self::Record>);
}

/// A metadata image holding one topic of `partitions` partitions, each led by `leader` alone
/// in epoch 0 (for tests of the coordinators and their host).
#[cfg(test)]
pub(crate) fn image_with_topic(
    topic: &str,
    topic_id: crate::protocol::TopicId,
    partitions: i32,
    leader: crate::protocol::BrokerId,
) -> MetadataImage {
    use crate::metadata::{MetadataRecord, PartitionRecord};
    let mut image = MetadataImage::default();
    let name = topic.to_owned();
    image.apply(0, &MetadataRecord::Topic { name, topic_id });
    for partition in 0..partitions {
        let record = MetadataRecord::Partition(PartitionRecord {
            topic_id,
            partition,
            replicas: vec![leader],
            isr: vec![leader],
            leader: Some(leader),
            leader_epoch: 0,
            partition_epoch: 0,
            eligible_leader_replicas: Vec::new(),
            last_known_elr: Vec::new(),
        });
        image.apply(1 + i64::from(partition), &record);
    }
    image
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinator_partition_follows_java_string_hash() {
        // Values printed by Java 17's "...".hashCode() on this machine.
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("group-1"), 293_427_299);
        assert_eq!(java_string_hash("ü-group"), 1_699_569_262);
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(partition_for("polygenelubricants", 50), 0);
        assert_eq!(partition_for("a", 50), 47);
        for key in ["txn-1", "orders-app", "g", "ü-group"] {
            let partition = partition_for(key, 50);
            assert!((0..50).contains(&partition), "{key} → {partition}");
        }
    }

    #[test]
    fn shard_owns_the_keys_that_hash_to_its_partition_once_the_topic_exists() {
        use crate::protocol::{BrokerId, ClusterIndex, TopicId};

        let image = image_with_topic(TRANSACTION_STATE_TOPIC, TopicId(1), 3, BrokerId(1));
        let home = TopicPartition::new(TRANSACTION_STATE_TOPIC, partition_for("txn-1", 3));
        let env = ShardEnv {
            now_ms: 0,
            image: &image,
            coordinator_epoch: 0,
            node_id: NodeId::Broker(ClusterIndex(0), BrokerId(1)),
            partition: &home,
        };
        assert_eq!(env.owns_key("txn-1"), Some(true));
        let foreign = ["a", "b", "c", "d"]
            .into_iter()
            .find(|key| partition_for(key, 3) != home.partition)
            .expect("some key hashes elsewhere");
        assert_eq!(env.owns_key(foreign), Some(false));
        let empty = MetadataImage::default();
        let before_the_topic = ShardEnv {
            image: &empty,
            ..env
        };
        assert_eq!(before_the_topic.owns_key("txn-1"), None);
    }
}
