//! The wire vocabulary between simulated nodes: requests, responses and the envelope that
//! carries them. Messages are passed as typed values (no serialization), so they hold cheap
//! clones of batch bytes.
//!
//! Every request carries a correlation id chosen by the sender; the response echoes it. Each
//! request kind is modelled on the Kafka API of the same name, reduced to the fields the model
//! uses; single-partition Produce is the one simplification (Kafka batches partitions).

use crate::log::{AbortedTransaction, EpochEndOffset, FetchIsolation};
use crate::metadata::{MetadataRecord, PartitionRecord};
use crate::record::RecordBatch;

use super::{BrokerId, ErrorCode, NodeId, TopicId, TopicPartition};

/// A message in flight.
#[derive(Debug, Clone)]
pub struct Envelope {
    /// Sender.
    pub from: NodeId,
    /// Receiver.
    pub to: NodeId,
    /// Content.
    pub message: Message,
}

/// A request or a response.
#[derive(Debug, Clone)]
pub enum Message {
    /// A request with its correlation id.
    Request(u64, Request),
    /// A response to the request with this correlation id.
    Response(u64, Response),
}

impl Message {
    /// A short name for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Request(_, request) => request.kind(),
            Self::Response(_, response) => response.kind(),
        }
    }
}

/// `acks` of a produce request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Acks {
    /// acks=1: the leader's append is enough.
    Leader,
    /// acks=all (-1): every ISR member must have the batch, and the ISR must be at least
    /// `min.insync.replicas` when the leader appends.
    All,
}

/// Every request kind.
#[derive(Debug, Clone)]
pub enum Request {
    /// Broker → controller: register (or re-register after a restart).
    BrokerRegistration {
        /// The broker.
        broker_id: BrokerId,
        /// Process incarnation (changes on every restart).
        incarnation: u64,
    },
    /// Broker → controller: liveness and metadata progress.
    BrokerHeartbeat {
        /// The broker.
        broker_id: BrokerId,
        /// Its registration epoch.
        broker_epoch: i64,
        /// Offset of the next metadata record the broker will apply.
        metadata_offset: i64,
    },
    /// Broker → controller: metadata records from `from_offset` on.
    FetchMetadata {
        /// First record wanted.
        from_offset: i64,
        /// At most this many records.
        max_records: usize,
    },
    /// Partition leader → controller: change the ISR.
    AlterPartition {
        /// The leader.
        broker_id: BrokerId,
        /// Its registration epoch.
        broker_epoch: i64,
        /// Topic id.
        topic_id: TopicId,
        /// Partition.
        partition: i32,
        /// Leader epoch the leader acts in.
        leader_epoch: i32,
        /// Partition epoch the change is based on.
        partition_epoch: i32,
        /// Proposed ISR.
        new_isr: Vec<BrokerId>,
    },
    /// Broker → controller: a new block of producer ids.
    AllocateProducerIds {
        /// The broker.
        broker_id: BrokerId,
        /// Its registration epoch.
        broker_epoch: i64,
    },
    /// Admin → controller: create topics.
    CreateTopics {
        /// Topics to create.
        topics: Vec<NewTopic>,
    },
    /// Client → broker: topic metadata.
    Metadata {
        /// Topics of interest; `None` for all.
        topics: Option<Vec<String>>,
    },
    /// Producer → partition leader.
    Produce {
        /// Required acknowledgements.
        acks: Acks,
        /// How long the leader may wait for the ISR (acks=all).
        timeout_ms: i64,
        /// The partition.
        topic_partition: TopicPartition,
        /// Exactly one batch (Produce v3+).
        batch: RecordBatch,
    },
    /// Follower or consumer → partition leader.
    Fetch {
        /// The fetching follower, or `None` for a consumer.
        replica_id: Option<BrokerId>,
        /// The follower's registration epoch (−1 for consumers).
        replica_epoch: i64,
        /// Upper bound of the returned data.
        isolation: FetchIsolation,
        /// How long the leader may hold the request when it has no data (0: answer at once).
        max_wait_ms: i64,
        /// Bytes per partition.
        max_bytes: usize,
        /// Partitions and positions.
        partitions: Vec<FetchPartition>,
    },
    /// Follower or client → leader: end offset of an epoch.
    OffsetsForLeaderEpoch {
        /// The asking follower, or `None` for a client.
        replica_id: Option<BrokerId>,
        /// Partitions to look up.
        partitions: Vec<EpochQuery>,
    },
    /// Client → leader: earliest or latest offset.
    ListOffsets {
        /// Which bound "latest" means.
        isolation: FetchIsolation,
        /// Partitions to look up.
        partitions: Vec<ListOffsetsQuery>,
    },
    /// Producer → any broker: a producer id (idempotent producers).
    InitProducerId {
        /// Transactional id, if any.
        transactional_id: Option<String>,
    },
}

impl Request {
    /// A short name for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::BrokerRegistration { .. } => "BrokerRegistration",
            Self::BrokerHeartbeat { .. } => "BrokerHeartbeat",
            Self::FetchMetadata { .. } => "FetchMetadata",
            Self::AlterPartition { .. } => "AlterPartition",
            Self::AllocateProducerIds { .. } => "AllocateProducerIds",
            Self::CreateTopics { .. } => "CreateTopics",
            Self::Metadata { .. } => "Metadata",
            Self::Produce { .. } => "Produce",
            Self::Fetch { .. } => "Fetch",
            Self::OffsetsForLeaderEpoch { .. } => "OffsetsForLeaderEpoch",
            Self::ListOffsets { .. } => "ListOffsets",
            Self::InitProducerId { .. } => "InitProducerId",
        }
    }
}

/// A topic to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTopic {
    /// Name.
    pub name: String,
    /// Partition count.
    pub partitions: i32,
    /// Replication factor.
    pub replication_factor: i16,
    /// Topic configs.
    pub configs: Vec<(String, String)>,
    /// A fixed topic id (mirrored topics keep the source's); `None` lets the controller choose.
    pub topic_id: Option<TopicId>,
}

/// One partition of a fetch request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPartition {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// The fetcher's view of the leader epoch (−1: no check).
    pub current_leader_epoch: i32,
    /// First offset wanted.
    pub fetch_offset: i64,
    /// Epoch of the last batch the fetcher appended (−1: none; consumers send −1).
    pub last_fetched_epoch: i32,
}

/// One partition of an OffsetsForLeaderEpoch request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochQuery {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// The asker's view of the leader epoch (−1: no check).
    pub current_leader_epoch: i32,
    /// The epoch whose end offset is wanted.
    pub leader_epoch: i32,
}

/// Which offset ListOffsets returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSpec {
    /// The log start offset.
    Earliest,
    /// The isolation's upper bound (LEO, HW or LSO).
    Latest,
}

/// One partition of a ListOffsets request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOffsetsQuery {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// The asker's view of the leader epoch (−1: no check).
    pub current_leader_epoch: i32,
    /// Which offset.
    pub spec: OffsetSpec,
}

/// Every response kind, in the order of [`Request`].
#[derive(Debug, Clone)]
pub enum Response {
    /// Registration accepted with this epoch.
    BrokerRegistration {
        /// Error, if refused.
        error: ErrorCode,
        /// The new registration epoch.
        broker_epoch: i64,
    },
    /// Heartbeat answer.
    BrokerHeartbeat {
        /// `StaleBrokerEpoch` tells the broker to register again.
        error: ErrorCode,
        /// Whether the controller currently fences the broker.
        is_fenced: bool,
    },
    /// Metadata records.
    FetchMetadata {
        /// Records with their offsets, in order.
        records: Vec<(i64, MetadataRecord)>,
        /// Offset after the last record in the controller's log.
        end_offset: i64,
    },
    /// ISR change outcome.
    AlterPartition {
        /// Error, if refused.
        error: ErrorCode,
        /// The partition state after the change (or the current one on a stale request).
        partition: Option<PartitionRecord>,
    },
    /// A producer-id block.
    AllocateProducerIds {
        /// Error, if refused.
        error: ErrorCode,
        /// First id of the block.
        first_producer_id: i64,
        /// Ids in the block.
        count: i64,
    },
    /// Per-topic outcome of CreateTopics.
    CreateTopics {
        /// (topic, error, topic id if created).
        results: Vec<(String, ErrorCode, Option<TopicId>)>,
    },
    /// Topic metadata.
    Metadata {
        /// Live brokers.
        brokers: Vec<BrokerId>,
        /// Topics asked for.
        topics: Vec<TopicMetadata>,
    },
    /// Produce outcome.
    Produce {
        /// Error, or `None`.
        error: ErrorCode,
        /// Offset of the batch's first record.
        base_offset: i64,
        /// Append time when the topic uses LogAppendTime.
        log_append_time_ms: Option<i64>,
        /// The partition's log start offset.
        log_start_offset: i64,
    },
    /// Fetch data.
    Fetch {
        /// Per partition, in request order.
        partitions: Vec<FetchPartitionResponse>,
    },
    /// Epoch end offsets.
    OffsetsForLeaderEpoch {
        /// Per partition, in request order.
        partitions: Vec<EpochAnswer>,
    },
    /// Offsets.
    ListOffsets {
        /// Per partition, in request order.
        partitions: Vec<ListOffsetsAnswer>,
    },
    /// A producer id and epoch.
    InitProducerId {
        /// Error, or `None`.
        error: ErrorCode,
        /// The producer id.
        producer_id: i64,
        /// The producer epoch.
        producer_epoch: i16,
    },
}

impl Response {
    /// A short name for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::BrokerRegistration { .. } => "BrokerRegistrationResponse",
            Self::BrokerHeartbeat { .. } => "BrokerHeartbeatResponse",
            Self::FetchMetadata { .. } => "FetchMetadataResponse",
            Self::AlterPartition { .. } => "AlterPartitionResponse",
            Self::AllocateProducerIds { .. } => "AllocateProducerIdsResponse",
            Self::CreateTopics { .. } => "CreateTopicsResponse",
            Self::Metadata { .. } => "MetadataResponse",
            Self::Produce { .. } => "ProduceResponse",
            Self::Fetch { .. } => "FetchResponse",
            Self::OffsetsForLeaderEpoch { .. } => "OffsetsForLeaderEpochResponse",
            Self::ListOffsets { .. } => "ListOffsetsResponse",
            Self::InitProducerId { .. } => "InitProducerIdResponse",
        }
    }
}

/// One topic in a metadata response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMetadata {
    /// Topic name.
    pub name: String,
    /// `UnknownTopicOrPartition` if it does not exist.
    pub error: ErrorCode,
    /// Topic id.
    pub topic_id: Option<TopicId>,
    /// Partitions.
    pub partitions: Vec<PartitionRecord>,
}

/// One partition of a fetch response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPartitionResponse {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// Error, or `None`.
    pub error: ErrorCode,
    /// Leader's high watermark before the read.
    pub high_watermark: i64,
    /// Leader's last stable offset before the read.
    pub last_stable_offset: i64,
    /// Leader's log start offset before the read.
    pub log_start_offset: i64,
    /// Set when the fetcher's log diverges: truncate to at most this epoch's end offset.
    pub diverging_epoch: Option<EpochEndOffset>,
    /// Aborted transactions in range (READ_COMMITTED only).
    pub aborted_transactions: Option<Vec<AbortedTransaction>>,
    /// Whole batches, the first containing the fetch offset.
    pub batches: Vec<RecordBatch>,
}

/// One partition of an OffsetsForLeaderEpoch response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochAnswer {
    /// Error, or `None`.
    pub error: ErrorCode,
    /// The largest epoch ≤ the requested one the leader knows, or −1.
    pub leader_epoch: i32,
    /// That epoch's end offset, or −1.
    pub end_offset: i64,
}

/// One partition of a ListOffsets response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListOffsetsAnswer {
    /// Error, or `None`.
    pub error: ErrorCode,
    /// The offset.
    pub offset: i64,
    /// The leader epoch of the offset's batch, or −1.
    pub leader_epoch: i32,
}
