//! The coordinator host: the coordinator shards one broker hosts, a broker component.
//!
//! Contract:
//! - **Owns** one shard per internal partition this broker leads and has loaded (groups,
//!   transactions, KIP-1279 mirror states), and the internal topics' settings.
//! - **FindCoordinator**: the leader of the key's partition of the internal topic; the topic is
//!   created on first use (Kafka's auto-creation), `CoordinatorNotAvailable` meanwhile.
//! - **Lends** a shard out for one call ([`CoordinatorHost::take`] / [`CoordinatorHost::put`]):
//!   a shard works over its partition's log, which the broker's replica manager owns, and a
//!   write it appends may move the partition's high watermark, whose consequences (completing
//!   the shard's writes among them) cross components; so the broker runs the call and what
//!   follows it, and this host only keeps the shards.
//! - Which shard a partition gets is the broker's choice (the mirror shard is KIP-1279's and
//!   lives above this layer): [`CoordinatorHost::insert`] takes the loaded shard.

use std::collections::BTreeMap;

use super::runtime::HostedCoordinator;
use super::{coordinator_partition_in, internal_topic_creation};
use super::{CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC};
use crate::component::BrokerContext;
use crate::log::LogDisk;
use crate::metadata::MetadataImage;
use crate::node::Outbox;
use crate::protocol::{
    CoordinatorResponse, CoordinatorType, ErrorCode, NodeId, Response, TopicPartition,
};

/// A hosted shard.
pub type HostedShard<D> = Box<dyn HostedCoordinator<D> + Send>;

/// The internal topics' settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InternalTopics {
    /// Partitions of `__consumer_offsets`.
    pub offsets_topic_partitions: i32,
    /// Partitions of `__transaction_state`.
    pub transaction_state_partitions: i32,
    /// Replication factor of both.
    pub replication_factor: i16,
}

/// See the module doc.
pub struct CoordinatorHost<D: LogDisk> {
    topics: InternalTopics,
    shards: BTreeMap<TopicPartition, HostedShard<D>>,
}

impl<D: LogDisk> CoordinatorHost<D> {
    /// A host with no shard loaded.
    pub fn new(topics: InternalTopics) -> Self {
        Self {
            topics,
            shards: BTreeMap::new(),
        }
    }

    /// The internal topic of a coordinator kind, its partition count and replication factor.
    fn internal_topic(&self, key_type: CoordinatorType) -> (&'static str, i32, i16) {
        match key_type {
            CoordinatorType::Group => (
                CONSUMER_OFFSETS_TOPIC,
                self.topics.offsets_topic_partitions,
                self.topics.replication_factor,
            ),
            CoordinatorType::Transaction => (
                TRANSACTION_STATE_TOPIC,
                self.topics.transaction_state_partitions,
                self.topics.replication_factor,
            ),
        }
    }

    /// The partition of the internal topic that coordinates `key`, once the topic exists.
    pub fn coordinator_partition(
        &self,
        image: &MetadataImage,
        key_type: CoordinatorType,
        key: &str,
    ) -> Option<TopicPartition> {
        let (topic, _, _) = self.internal_topic(key_type);
        coordinator_partition_in(image, topic, key)
    }

    /// Whether the shard coordinating `key` is hosted here.
    pub fn hosts_key(&self, image: &MetadataImage, key_type: CoordinatorType, key: &str) -> bool {
        self.coordinator_partition(image, key_type, key)
            .is_some_and(|partition| self.shards.contains_key(&partition))
    }

    /// FindCoordinator; see the module doc.
    pub fn handle_find_coordinator(
        &self,
        context: &mut BrokerContext<'_>,
        from: NodeId,
        correlation_id: u64,
        key_type: CoordinatorType,
        key: &str,
    ) {
        let coordinator = match self.coordinator_partition(context.image, key_type, key) {
            Some(partition) => context
                .image
                .partition(&partition)
                .and_then(|record| record.leader)
                .map(|leader| NodeId::Broker(context.node_id.cluster(), leader)),
            None => {
                let (topic, partitions, replication_factor) = self.internal_topic(key_type);
                let request = internal_topic_creation(topic, partitions, replication_factor);
                context.outbox.request(context.controller, request);
                None
            }
        };
        let error = if coordinator.is_some() {
            ErrorCode::None
        } else {
            ErrorCode::CoordinatorNotAvailable
        };
        context.outbox.respond(
            from,
            correlation_id,
            Response::Coordinator(CoordinatorResponse::FindCoordinator { error, coordinator }),
        );
    }

    /// Whether the shard of `partition` is hosted here.
    pub fn hosts(&self, partition: &TopicPartition) -> bool {
        self.shards.contains_key(partition)
    }

    /// Takes the shard of `partition` out for one call; [`CoordinatorHost::put`] brings it back.
    pub fn take(&mut self, partition: &TopicPartition) -> Option<HostedShard<D>> {
        self.shards.remove(partition)
    }

    /// Brings back a shard taken out.
    pub fn put(&mut self, partition: &TopicPartition, shard: HostedShard<D>) {
        let previous = self.shards.insert(partition.clone(), shard);
        assert!(previous.is_none(), "{partition}: a shard is hosted once");
    }

    /// Hosts a shard just loaded from its partition's log (unload the previous one first).
    pub fn insert(&mut self, partition: &TopicPartition, shard: HostedShard<D>) {
        self.put(partition, shard);
    }

    /// Drops the shard of a partition this broker no longer leads, telling it so.
    pub fn unload(&mut self, partition: &TopicPartition, outbox: &mut Outbox) {
        if let Some(mut shard) = self.shards.remove(partition) {
            shard.unload(outbox);
        }
    }

    /// The partitions whose shard's deadline passed at `now_ms`.
    pub fn due(&self, now_ms: i64) -> Vec<TopicPartition> {
        self.shards
            .iter()
            .filter(|(_, shard)| {
                shard
                    .poll_timeout()
                    .is_some_and(|deadline| deadline <= now_ms)
            })
            .map(|(partition, _)| partition.clone())
            .collect()
    }

    /// The partition of the shard that sent the request `correlation_id` answers, if one did.
    pub fn awaiting(&self, correlation_id: u64) -> Option<TopicPartition> {
        self.shards
            .iter()
            .find(|(_, shard)| shard.awaits(correlation_id))
            .map(|(partition, _)| partition.clone())
    }

    /// The earliest deadline of any hosted shard.
    pub fn deadline(&self) -> Option<i64> {
        self.shards
            .values()
            .filter_map(|shard| shard.poll_timeout())
            .min()
    }

    /// The hosted shards, by internal partition.
    pub fn shards(&self) -> impl Iterator<Item = (&TopicPartition, &HostedShard<D>)> {
        self.shards.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::MemoryDisk;
    use crate::protocol::ControllerRequest;
    use crate::protocol::{BrokerId, ClusterIndex, Envelope, Message, Request, TopicId};

    const ME: NodeId = NodeId::Broker(ClusterIndex(0), BrokerId(1));
    const CLIENT: NodeId =
        NodeId::Client(ClusterIndex(0), crate::protocol::ClientKind::Producer, 1);

    fn host() -> CoordinatorHost<MemoryDisk> {
        CoordinatorHost::new(InternalTopics {
            offsets_topic_partitions: 3,
            transaction_state_partitions: 2,
            replication_factor: 3,
        })
    }

    fn find(host: &CoordinatorHost<MemoryDisk>, image: &MetadataImage) -> Vec<Envelope> {
        let mut outbox = Outbox::new(ME);
        let mut events = Vec::new();
        let mut context = BrokerContext {
            now_ms: 0,
            node_id: ME,
            broker_id: BrokerId(1),
            controller: NodeId::Controller(ClusterIndex(0)),
            image,
            outbox: &mut outbox,
            events: &mut events,
        };
        host.handle_find_coordinator(&mut context, CLIENT, 5, CoordinatorType::Transaction, "t-1");
        outbox.take()
    }

    #[test]
    fn find_coordinator_creates_the_internal_topic_first_then_names_the_leader() {
        let host = host();
        let empty = MetadataImage::default();
        let sent = find(&host, &empty);
        match sent.as_slice() {
            [create, answer] => {
                assert_eq!(create.to, NodeId::Controller(ClusterIndex(0)));
                let Message::Request(
                    _,
                    Request::Controller(ControllerRequest::CreateTopics { topics }),
                ) = &create.message
                else {
                    panic!("the internal topic is created: {create:?}");
                };
                assert_eq!(topics[0].name, TRANSACTION_STATE_TOPIC);
                assert_eq!(topics[0].partitions, 2);
                assert!(matches!(
                    answer.message,
                    Message::Response(
                        5,
                        Response::Coordinator(CoordinatorResponse::FindCoordinator {
                            error: ErrorCode::CoordinatorNotAvailable,
                            coordinator: None
                        })
                    )
                ));
            }
            other => panic!("a creation and an answer expected: {other:?}"),
        }

        let image = crate::coordinator::image_with_topic(
            TRANSACTION_STATE_TOPIC,
            TopicId(9),
            2,
            BrokerId(2),
        );
        assert!(!host.hosts_key(&image, CoordinatorType::Transaction, "t-1"));
        let sent = find(&host, &image);
        assert!(matches!(
            sent.as_slice(),
            [Envelope {
                message: Message::Response(
                    5,
                    Response::Coordinator(CoordinatorResponse::FindCoordinator {
                        error: ErrorCode::None,
                        coordinator: Some(NodeId::Broker(ClusterIndex(0), BrokerId(2)))
                    })
                ),
                ..
            }]
        ));
        assert_eq!(host.deadline(), None);
        assert!(host.due(0).is_empty());
    }
}
