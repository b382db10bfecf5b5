//! Helpers shared by the client unit tests (`producer_tests.rs`, `transactional_tests.rs`,
//! `consumer_tests.rs`, `group_consumer_tests.rs`): the test cluster's brokers and partitions,
//! the answers a test plays back, the scripted-broker plumbing (take a client's requests,
//! answer one), and the seeded generator of the model tests. Test-only; nothing here holds
//! state except the generator.

use crate::metadata::PartitionRecord;
use crate::node::Node;
use crate::protocol::{
    BrokerId, ClusterIndex, ClusterResponse, Envelope, ErrorCode, FetchPartition, Message, NodeId,
    Offset, ReplicaRequest, ReplicaResponse, Request, Response, TopicId, TopicMetadata,
    TopicPartition,
};
use crate::record::RecordBatch;

/// The one cluster the tests run.
pub(crate) const CLUSTER: ClusterIndex = ClusterIndex(0);

/// Broker `id` of the test cluster.
pub(crate) fn broker(id: i32) -> NodeId {
    NodeId::Broker(CLUSTER, BrokerId(id))
}

/// The id of the test topic `orders` in every Metadata answer of the tests.
pub(crate) const ORDERS_TOPIC_ID: TopicId = TopicId(7);

/// Partition `partition` of the test topic `orders`.
pub(crate) fn tp(partition: i32) -> TopicPartition {
    TopicPartition::new("orders", partition)
}

/// [`orders_metadata`] for an `orders` created again under the id `topic_id`.
pub(crate) fn recreated_orders_metadata(
    brokers: &[i32],
    leaders: &[i32],
    leader_epoch: i32,
    topic_id: TopicId,
) -> Response {
    let Response::Cluster(ClusterResponse::Metadata {
        brokers,
        mut topics,
    }) = orders_metadata(brokers, leaders, leader_epoch)
    else {
        unreachable!("orders_metadata answers Metadata");
    };
    for topic in &mut topics {
        topic.topic_id = Some(topic_id);
        for partition in &mut topic.partitions {
            partition.topic_id = topic_id;
        }
    }
    Response::Cluster(ClusterResponse::Metadata { brokers, topics })
}

/// A Metadata answer naming live `brokers`, where partition `i` of `orders` is led by
/// `leaders[i]` in `leader_epoch` (every broker a replica and in the ISR).
pub(crate) fn orders_metadata(brokers: &[i32], leaders: &[i32], leader_epoch: i32) -> Response {
    let brokers: Vec<BrokerId> = brokers.iter().copied().map(BrokerId).collect();
    let partitions = (0..)
        .zip(leaders)
        .map(|(partition, leader)| PartitionRecord {
            topic_id: ORDERS_TOPIC_ID,
            partition,
            replicas: brokers.clone(),
            isr: brokers.clone(),
            leader: Some(BrokerId(*leader)),
            leader_epoch,
            partition_epoch: leader_epoch,
            eligible_leader_replicas: Vec::new(),
            last_known_elr: Vec::new(),
        })
        .collect();
    Response::Cluster(ClusterResponse::Metadata {
        brokers,
        topics: vec![TopicMetadata {
            name: "orders".into(),
            error: ErrorCode::None,
            topic_id: Some(ORDERS_TOPIC_ID),
            partitions,
        }],
    })
}

/// A successful Produce answer: the batch starts at `base_offset`.
pub(crate) fn produce_ok(base_offset: i64) -> Response {
    Response::Replica(ReplicaResponse::Produce {
        error: ErrorCode::None,
        base_offset: Offset(base_offset),
        log_append_time_ms: None,
        log_start_offset: Offset(0),
    })
}

/// A Produce answer refusing the batch with `error`.
pub(crate) fn produce_error(error: ErrorCode) -> Response {
    Response::Replica(ReplicaResponse::Produce {
        error,
        base_offset: Offset::NONE,
        log_append_time_ms: None,
        log_start_offset: Offset(0),
    })
}

/// One request the client under test sent.
#[derive(Debug, Clone)]
pub(crate) struct Sent {
    pub to: NodeId,
    pub correlation_id: u64,
    pub request: Request,
}

impl Sent {
    /// The batch of a Produce request.
    pub fn batch(&self) -> &RecordBatch {
        match &self.request {
            Request::Replica(ReplicaRequest::Produce { batch, .. }) => batch,
            other => panic!("expected Produce, got {other:?}"),
        }
    }

    /// The partition of a Produce request.
    pub fn produce_partition(&self) -> &TopicPartition {
        match &self.request {
            Request::Replica(ReplicaRequest::Produce {
                topic_partition, ..
            }) => topic_partition,
            other => panic!("expected Produce, got {other:?}"),
        }
    }

    /// (producer id, epoch, base sequence, record count) of a Produce request.
    pub fn stamp(&self) -> (i64, i16, i32, i32) {
        let header = self.batch().header();
        (
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
            header.records_count,
        )
    }

    /// The partitions of a Fetch request.
    pub fn fetch_partitions(&self) -> &[FetchPartition] {
        match &self.request {
            Request::Replica(ReplicaRequest::Fetch { partitions, .. }) => partitions,
            other => panic!("expected Fetch, got {other:?}"),
        }
    }
}

/// Takes `client`'s outbox, which holds only requests: clients serve none.
pub(crate) fn take_requests(client: &mut impl Node) -> Vec<Sent> {
    client
        .take_outbox()
        .into_iter()
        .map(|envelope| match envelope.message {
            Message::Request(correlation_id, request) => Sent {
                to: envelope.to,
                correlation_id,
                request,
            },
            other => panic!("a client only sends requests, got {other:?}"),
        })
        .collect()
}

/// Delivers `response` to `client` at `now_ms` as the answer of `request`, from the broker
/// it went to.
pub(crate) fn respond(client: &mut impl Node, now_ms: i64, request: &Sent, response: Response) {
    let envelope = Envelope {
        from: request.to,
        principal: None,
        connection: 0,
        to: client.node_id(),
        message: Message::Response(request.correlation_id, response),
    };
    client.handle_message(now_ms, envelope);
}

/// splitmix64: a tiny deterministic generator driven by a model test case's seed.
pub(crate) struct Rng(pub u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A draw in `0..bound`.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    /// True with probability `percent`/100.
    pub fn percent(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}
