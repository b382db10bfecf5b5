//! The wire vocabulary between simulated nodes: requests, responses and the envelope that
//! carries them. Messages are passed as typed values (no serialization), so they hold cheap
//! clones of batch bytes.
//!
//! Every request carries a correlation id chosen by the sender; the response echoes it. Each
//! request kind is modelled on the Kafka API of the same name, reduced to the fields the model
//! uses; single-partition Produce is the one simplification (Kafka batches partitions).

use crate::log::{AbortedTransaction, EpochEndOffset, FetchIsolation};
use crate::metadata::{MetadataRecord, PartitionRecord, TopicMetadata};
use crate::record::RecordBatch;

use crate::common::{BrokerId, ErrorCode, NodeId, TopicId, TopicPartition};

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
    /// Broker → controller: raise the leader epoch of partitions the broker leads, without a
    /// leader change, until it exceeds `min_leader_epoch` (KIP-1279 `BumpLeaderEpochs`; the
    /// seed's STOPPING step 2).
    BumpLeaderEpochs {
        /// The leader.
        broker_id: BrokerId,
        /// Its registration epoch.
        broker_epoch: i64,
        /// (topic id, partition, epoch the leader epoch must exceed).
        partitions: Vec<(TopicId, i32, i32)>,
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
    /// Producer → any broker (idempotent) or its transaction coordinator (transactional): a
    /// producer id and epoch. A transactional re-init bumps the epoch and fences older instances.
    InitProducerId {
        /// Transactional id, if any.
        transactional_id: Option<String>,
        /// `transaction.timeout.ms` (transactional only).
        transaction_timeout_ms: i64,
        /// The id the producer holds (−1 if none; KIP-360 re-init keeps it).
        producer_id: i64,
        /// The epoch the producer holds (−1 if none).
        producer_epoch: i16,
    },
    /// Client → any broker: which broker coordinates a group or transactional id.
    FindCoordinator {
        /// Group or transaction coordinator.
        key_type: CoordinatorType,
        /// The group id or transactional id.
        key: String,
    },
    /// Transactional producer → its coordinator: partitions joining the ongoing transaction.
    AddPartitionsToTxn {
        /// Transactional id.
        transactional_id: String,
        /// Producer id.
        producer_id: i64,
        /// Producer epoch.
        producer_epoch: i16,
        /// Partitions to add.
        partitions: Vec<TopicPartition>,
    },
    /// Transactional producer → its coordinator: commit or abort the ongoing transaction.
    EndTxn {
        /// Transactional id.
        transactional_id: String,
        /// Producer id.
        producer_id: i64,
        /// Producer epoch.
        producer_epoch: i16,
        /// Commit (`true`) or abort.
        committed: bool,
    },
    /// Transaction coordinator → partition leaders: write COMMIT/ABORT markers.
    WriteTxnMarkers {
        /// Markers, each for several partitions.
        markers: Vec<TxnMarker>,
    },
    /// Consumer → group coordinator: membership heartbeat (KIP-848 style: the coordinator
    /// assigns partitions).
    ConsumerGroupHeartbeat {
        /// Group id.
        group_id: String,
        /// Member id; empty to join.
        member_id: String,
        /// Member epoch: 0 to join, −1 to leave, else the current epoch.
        member_epoch: i32,
        /// Topics subscribed (sent when joining or when they change).
        subscribed_topics: Option<Vec<String>>,
    },
    /// Consumer or admin → group coordinator: commit offsets. An admin write uses an empty
    /// member id and epoch −1 and is refused while the group has members.
    OffsetCommit {
        /// Group id.
        group_id: String,
        /// Member id (empty for an admin write).
        member_id: String,
        /// Member epoch (−1 for an admin write).
        member_epoch: i32,
        /// Offsets.
        offsets: Vec<OffsetCommitEntry>,
    },
    /// Consumer or admin → group coordinator: committed offsets.
    OffsetFetch {
        /// Group id.
        group_id: String,
        /// Partitions; `None` for all the group has.
        partitions: Option<Vec<TopicPartition>>,
    },
    /// Admin → group coordinator: groups and their state (for mirroring's offset sync).
    DescribeGroups {
        /// Group ids; empty for all groups of this coordinator.
        group_ids: Vec<String>,
    },
    /// Admin → any broker (forwarded) or controller: change configs.
    IncrementalAlterConfigs {
        /// The object configured.
        resource: crate::metadata::ConfigResource,
        /// (name, new value or `None` to delete).
        changes: Vec<(String, Option<String>)>,
    },
    /// Admin → controller: create ACLs.
    CreateAcls {
        /// Bindings to create.
        bindings: Vec<crate::metadata::AclBinding>,
    },
    /// Admin → controller: delete ACLs.
    DeleteAcls {
        /// Bindings to delete.
        bindings: Vec<crate::metadata::AclBinding>,
    },
    /// Admin → any broker: list ACLs.
    DescribeAcls,
    /// Admin → every broker: the groups of the group coordinators the broker hosts (Kafka's
    /// ListGroups, which an admin sends to each broker).
    ListGroups,
    /// Admin → any broker: the dynamic configs of some resources, as the broker's metadata
    /// image has them (`mirror.name` is hidden, KIP-1279 AS22).
    DescribeConfigs {
        /// The resources.
        resources: Vec<crate::metadata::ConfigResource>,
    },
    /// Admin → controller: create a mirror (KIP-1279 CreateMirror). The properties are stored
    /// as configs of the mirror resource; `bootstrap.servers` (the source cluster) is required.
    CreateMirror {
        /// The mirror's name.
        name: String,
        /// Its properties.
        configs: Vec<(String, String)>,
    },
    /// Admin → controller: delete a mirror whose topics are all removed (DeleteMirror).
    DeleteMirror {
        /// The mirror's name.
        name: String,
    },
    /// Admin → partition leader: move each partition's log start offset up to the offset (−1:
    /// the high watermark). Refused on a mirror partition that is not STOPPED.
    DeleteRecords {
        /// (partition, new log start offset).
        partitions: Vec<(TopicPartition, i64)>,
    },
    /// Admin → any broker (checked, then forwarded) or controller: delete topics. Refused for
    /// a mirror topic whose partitions are not all STOPPED (`MirrorTopicNotStopped`).
    DeleteTopics {
        /// The topics.
        topics: Vec<String>,
    },
    /// Admin → any broker (checked, then forwarded) or controller: raise topics' partition
    /// counts. Refused for a mirror topic whose partitions are not all STOPPED.
    CreatePartitions {
        /// (topic, new total partition count).
        topics: Vec<(String, i32)>,
    },
    /// Admin → any destination broker: every partition of a mirror's topics with its stored
    /// state, last mirrored epoch and lag (KIP-1279's describe; see `mirror::describe`).
    DescribeMirror {
        /// The mirror's name.
        name: String,
    },
    /// Admin → controller: AddTopicsToMirror, RemoveTopicsFromMirror, PauseMirrorTopics or
    /// ResumeMirrorTopics, as a change of each topic's `mirror.name`.
    AlterMirrorTopics {
        /// The mirror.
        mirror: String,
        /// What to do.
        operation: MirrorTopicOperation,
        /// The topics.
        topics: Vec<String>,
    },
    /// Admin → controller: the mirrors, their properties and member topics.
    ListMirrors,
    /// Destination broker → any source broker: the last mirrored epoch the source recorded
    /// for a partition when it stopped mirroring *from* the requester (KIP-1279's
    /// `DescribeClusterMirrors` with `LastMirrorEpochLookups`, reduced to one partition).
    LastMirroredEpochLookup {
        /// The asking (destination) cluster.
        requester: super::ClusterIndex,
        /// The topic, by name (topic ids may differ between the clusters).
        topic: String,
        /// The partition.
        partition: i32,
    },
    /// Broker → mirror coordinator: the stored state of mirror partitions (KIP-1279
    /// `ReadMirrorStates`), all keyed to one `__mirror_state` partition.
    ReadMirrorStates {
        /// The `__mirror_state` partition the keys hash to (the sender groups by it).
        coordinator_partition: i32,
        /// The mirror.
        mirror: String,
        /// The partitions.
        partitions: Vec<MirrorPartitionId>,
    },
    /// Broker → mirror coordinator: persist state changes (KIP-1279 `WriteMirrorStates`), all
    /// keyed to one `__mirror_state` partition.
    WriteMirrorStates {
        /// The `__mirror_state` partition the keys hash to.
        coordinator_partition: i32,
        /// The mirror.
        mirror: String,
        /// One entry per partition.
        writes: Vec<MirrorStateWrite>,
    },
    /// Broker → mirror coordinator: tombstone every record of a deleted mirror that this
    /// coordinator partition holds (DeleteMirror, seed step 4).
    DeleteMirrorStates {
        /// The `__mirror_state` partition to clean.
        coordinator_partition: i32,
        /// The mirror.
        mirror: String,
    },
}

/// The topic-membership operations of KIP-1279's admin API.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum MirrorTopicOperation {
    /// AddTopicsToMirror: `mirror.name = <mirror>`.
    Add,
    /// RemoveTopicsFromMirror (failover): `mirror.name = <mirror>.removed`.
    Remove,
    /// PauseMirrorTopics: `mirror.name = <mirror>.paused`.
    Pause,
    /// ResumeMirrorTopics: `mirror.name = <mirror>` again.
    Resume,
}

/// One mirror in a ListMirrors answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorListing {
    /// The mirror's name.
    pub name: String,
    /// Its properties, in name order.
    pub configs: Vec<(String, String)>,
    /// Its topics with their `mirror.name` values, in topic order.
    pub topics: Vec<(String, String)>,
}

/// A mirror partition as the mirror coordinator keys it (with the mirror name).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct MirrorPartitionId {
    /// The destination topic's id (the source's: mirrored topics keep it).
    pub topic_id: TopicId,
    /// The partition.
    pub partition: i32,
}

/// One partition of a WriteMirrorStates request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorStateWrite {
    /// The partition.
    pub id: MirrorPartitionId,
    /// The new state; `None` writes only the last mirrored epoch.
    pub state: Option<crate::common::MirrorState>,
    /// The writer's leader epoch of the partition (−1: not checked).
    pub leader_epoch: i32,
    /// The state epoch the writer last read (−1: not checked).
    pub state_epoch: i32,
    /// Why the partition failed (FAILED only).
    pub error_message: Option<String>,
    /// The failure must not be retried (FAILED only).
    pub non_retryable: bool,
    /// The last mirrored (epoch, end offset) to persist, if any.
    pub last_mirrored: Option<(i32, i64)>,
    /// With a state: as far as the writer knows, nothing was cut from or mirrored into the
    /// partition's log since it last left UNKNOWN or STOPPED, so it holds this cluster's own
    /// writes only (this model's addition to the KIP's record, for the next leader).
    pub own_writes_only: bool,
}

/// One partition of a ReadMirrorStates answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorPartitionStatus {
    /// The partition.
    pub id: MirrorPartitionId,
    /// `None`, or why this partition could not be read (e.g. `NotCoordinator`).
    pub error: ErrorCode,
    /// The stored state (`Unknown` without a record).
    pub state: crate::common::MirrorState,
    /// The greatest leader epoch any accepted write carried (−1 if none).
    pub leader_epoch: i32,
    /// The stored state epoch (−1 without a record).
    pub state_epoch: i32,
    /// The state before FAILED.
    pub previous_state: Option<crate::common::MirrorState>,
    /// 0: not failed; n ≥ 1: the n-th failure; −1: non-retryable.
    pub retry_attempt: i16,
    /// Why it failed.
    pub error_message: Option<String>,
    /// The last mirrored (epoch, end offset), if persisted.
    pub last_mirrored: Option<(i32, i64)>,
    /// The stored state's `own_writes_only` (see [`MirrorStateWrite::own_writes_only`]).
    pub own_writes_only: bool,
}

/// One partition of a DescribeMirror answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorPartitionDescription {
    /// The destination partition.
    pub topic_partition: TopicPartition,
    /// What its mirror coordinator stores (`error` set when it could not be read).
    pub status: MirrorPartitionStatus,
    /// The destination leader's high watermark (−1 when unknown).
    pub high_watermark: i64,
    /// The source leader's last stable offset, what mirroring copies up to (−1 when unknown).
    pub source_last_stable_offset: i64,
    /// `source_last_stable_offset − high_watermark` while both are known and the partition
    /// is mirrored or paused; `None` otherwise.
    pub lag: Option<i64>,
}

/// Which coordinator a FindCoordinator asks for.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum CoordinatorType {
    /// The group coordinator (`__consumer_offsets`).
    Group,
    /// The transaction coordinator (`__transaction_state`).
    Transaction,
}

/// One marker of a WriteTxnMarkers request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMarker {
    /// Producer id of the transaction.
    pub producer_id: i64,
    /// Producer epoch the marker carries.
    pub producer_epoch: i16,
    /// COMMIT (`true`) or ABORT.
    pub committed: bool,
    /// The coordinator's epoch (its `__transaction_state` partition leader epoch).
    pub coordinator_epoch: i32,
    /// Partitions to write the marker to.
    pub partitions: Vec<TopicPartition>,
}

/// One partition of an OffsetCommit request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitEntry {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// The committed offset (the next record to consume).
    pub offset: i64,
    /// Leader epoch of the record before the offset, or −1.
    pub leader_epoch: i32,
    /// Free-form metadata.
    pub metadata: String,
}

/// A committed offset as OffsetFetch returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// The offset, −1 if none.
    pub offset: i64,
    /// Its leader epoch, or −1.
    pub leader_epoch: i32,
    /// Its metadata.
    pub metadata: String,
    /// Per-partition error.
    pub error: ErrorCode,
}

/// A group as DescribeGroups returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    /// Group id.
    pub group_id: String,
    /// `Empty`, `Stable`, `Assigning`, … (free-form in this model).
    pub state: String,
    /// Member ids.
    pub members: Vec<String>,
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
            Self::BumpLeaderEpochs { .. } => "BumpLeaderEpochs",
            Self::CreateTopics { .. } => "CreateTopics",
            Self::Metadata { .. } => "Metadata",
            Self::Produce { .. } => "Produce",
            Self::Fetch { .. } => "Fetch",
            Self::OffsetsForLeaderEpoch { .. } => "OffsetsForLeaderEpoch",
            Self::ListOffsets { .. } => "ListOffsets",
            Self::InitProducerId { .. } => "InitProducerId",
            Self::FindCoordinator { .. } => "FindCoordinator",
            Self::AddPartitionsToTxn { .. } => "AddPartitionsToTxn",
            Self::EndTxn { .. } => "EndTxn",
            Self::WriteTxnMarkers { .. } => "WriteTxnMarkers",
            Self::ConsumerGroupHeartbeat { .. } => "ConsumerGroupHeartbeat",
            Self::OffsetCommit { .. } => "OffsetCommit",
            Self::OffsetFetch { .. } => "OffsetFetch",
            Self::DescribeGroups { .. } => "DescribeGroups",
            Self::IncrementalAlterConfigs { .. } => "IncrementalAlterConfigs",
            Self::CreateAcls { .. } => "CreateAcls",
            Self::DeleteAcls { .. } => "DeleteAcls",
            Self::DescribeAcls => "DescribeAcls",
            Self::ListGroups => "ListGroups",
            Self::DescribeConfigs { .. } => "DescribeConfigs",
            Self::CreateMirror { .. } => "CreateMirror",
            Self::DeleteMirror { .. } => "DeleteMirror",
            Self::DescribeMirror { .. } => "DescribeMirror",
            Self::DeleteRecords { .. } => "DeleteRecords",
            Self::DeleteTopics { .. } => "DeleteTopics",
            Self::CreatePartitions { .. } => "CreatePartitions",
            Self::AlterMirrorTopics { .. } => "AlterMirrorTopics",
            Self::ListMirrors => "ListMirrors",
            Self::LastMirroredEpochLookup { .. } => "LastMirroredEpochLookup",
            Self::ReadMirrorStates { .. } => "ReadMirrorStates",
            Self::WriteMirrorStates { .. } => "WriteMirrorStates",
            Self::DeleteMirrorStates { .. } => "DeleteMirrorStates",
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
    /// The coordinator for a key.
    FindCoordinator {
        /// Error, or `None`.
        error: ErrorCode,
        /// The coordinator broker.
        coordinator: Option<NodeId>,
    },
    /// Per-partition outcome of AddPartitionsToTxn.
    AddPartitionsToTxn {
        /// (partition, error).
        results: Vec<(TopicPartition, ErrorCode)>,
    },
    /// Outcome of EndTxn.
    EndTxn {
        /// Error, or `None`.
        error: ErrorCode,
    },
    /// Per-marker, per-partition outcome of WriteTxnMarkers.
    WriteTxnMarkers {
        /// (producer id, [(partition, error)]).
        results: Vec<(i64, Vec<(TopicPartition, ErrorCode)>)>,
    },
    /// Membership answer.
    ConsumerGroupHeartbeat {
        /// Error, or `None`.
        error: ErrorCode,
        /// The member id (assigned on join).
        member_id: String,
        /// The member's epoch.
        member_epoch: i32,
        /// How often to heartbeat.
        heartbeat_interval_ms: i64,
        /// The member's assignment, when it changed.
        assignment: Option<Vec<TopicPartition>>,
    },
    /// Per-partition outcome of OffsetCommit.
    OffsetCommit {
        /// (partition, error).
        results: Vec<(TopicPartition, ErrorCode)>,
    },
    /// Committed offsets.
    OffsetFetch {
        /// Group-level error.
        error: ErrorCode,
        /// Offsets.
        offsets: Vec<CommittedOffset>,
    },
    /// Groups.
    DescribeGroups {
        /// Error, or `None`.
        error: ErrorCode,
        /// Descriptions.
        groups: Vec<GroupDescription>,
    },
    /// Outcome of IncrementalAlterConfigs.
    IncrementalAlterConfigs {
        /// Error, or `None`.
        error: ErrorCode,
    },
    /// Outcome of CreateAcls.
    CreateAcls {
        /// Error, or `None`.
        error: ErrorCode,
    },
    /// Outcome of DeleteAcls.
    DeleteAcls {
        /// Error, or `None`.
        error: ErrorCode,
    },
    /// ACLs.
    DescribeAcls {
        /// Error, or `None`.
        error: ErrorCode,
        /// Bindings.
        bindings: Vec<crate::metadata::AclBinding>,
    },
    /// The groups a broker's coordinators host.
    ListGroups {
        /// Error, or `None`.
        error: ErrorCode,
        /// Group ids, sorted.
        groups: Vec<String>,
    },
    /// Configs per resource, in request order: (resource, error, entries sorted by name).
    DescribeConfigs {
        /// The results.
        results: Vec<DescribeConfigsResult>,
    },
    /// The answer to a LastMirroredEpochLookup.
    LastMirroredEpochLookup {
        /// `None`; `InvalidClusterMirrorState` if a mirror of the source still mirrors the
        /// partition from the requester (mirroring both ways at once); coordinator errors.
        error: ErrorCode,
        /// The last mirrored leader epoch, or −1 if the source recorded none.
        last_mirrored_epoch: i32,
        /// The log end offset when the source stopped mirroring (the late revision stores it
        /// with the epoch), or −1. Only the `offset-alignment` design aligns by it.
        last_mirrored_offset: i64,
    },
    /// Outcome of BumpLeaderEpochs.
    BumpLeaderEpochs {
        /// Request-level error (`StaleBrokerEpoch`, `InvalidRequest`), or `None`.
        error: ErrorCode,
        /// (topic id, partition, error, the partition's leader epoch now), in request order.
        partitions: Vec<(TopicId, i32, ErrorCode, i32)>,
    },
    /// Outcome of CreateMirror.
    CreateMirror {
        /// Error, or `None`.
        error: ErrorCode,
    },
    /// Outcome of DeleteMirror.
    DeleteMirror {
        /// Error, or `None`.
        error: ErrorCode,
    },
    /// Per partition: error and the log start offset after the request.
    DeleteRecords {
        /// (partition, error, low watermark), in request order.
        results: Vec<(TopicPartition, ErrorCode, i64)>,
    },
    /// Per-topic outcome of DeleteTopics.
    DeleteTopics {
        /// (topic, error), in request order.
        results: Vec<(String, ErrorCode)>,
    },
    /// Per-topic outcome of CreatePartitions.
    CreatePartitions {
        /// (topic, error), in request order.
        results: Vec<(String, ErrorCode)>,
    },
    /// A mirror's partitions.
    DescribeMirror {
        /// `ClusterMirrorNotFound` for an unknown mirror, else `None`.
        error: ErrorCode,
        /// Every partition of the mirror's topics, by topic and partition.
        partitions: Vec<MirrorPartitionDescription>,
    },
    /// Per-topic outcome of AlterMirrorTopics.
    AlterMirrorTopics {
        /// Request-level error (e.g. an unknown mirror), or `None`.
        error: ErrorCode,
        /// (topic, error), in request order.
        results: Vec<(String, ErrorCode)>,
    },
    /// The mirrors.
    ListMirrors {
        /// Error, or `None`.
        error: ErrorCode,
        /// In name order.
        mirrors: Vec<MirrorListing>,
    },
    /// Stored mirror partition states.
    ReadMirrorStates {
        /// Request-level error (`NotCoordinator`, `CoordinatorLoadInProgress`), or `None`.
        error: ErrorCode,
        /// The coordinator's epoch (its partition's leader epoch), for the reader to compare.
        coordinator_epoch: i32,
        /// One entry per partition asked for.
        partitions: Vec<MirrorPartitionStatus>,
    },
    /// Outcome of WriteMirrorStates.
    WriteMirrorStates {
        /// Request-level error, or `None`.
        error: ErrorCode,
        /// Per partition: its error, and its state epoch after the write (−1 if refused).
        partitions: Vec<(MirrorPartitionId, ErrorCode, i32)>,
    },
    /// Outcome of DeleteMirrorStates.
    DeleteMirrorStates {
        /// Error, or `None`.
        error: ErrorCode,
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
            Self::FindCoordinator { .. } => "FindCoordinatorResponse",
            Self::AddPartitionsToTxn { .. } => "AddPartitionsToTxnResponse",
            Self::EndTxn { .. } => "EndTxnResponse",
            Self::WriteTxnMarkers { .. } => "WriteTxnMarkersResponse",
            Self::ConsumerGroupHeartbeat { .. } => "ConsumerGroupHeartbeatResponse",
            Self::OffsetCommit { .. } => "OffsetCommitResponse",
            Self::OffsetFetch { .. } => "OffsetFetchResponse",
            Self::DescribeGroups { .. } => "DescribeGroupsResponse",
            Self::IncrementalAlterConfigs { .. } => "IncrementalAlterConfigsResponse",
            Self::CreateAcls { .. } => "CreateAclsResponse",
            Self::DeleteAcls { .. } => "DeleteAclsResponse",
            Self::DescribeAcls { .. } => "DescribeAclsResponse",
            Self::ListGroups { .. } => "ListGroupsResponse",
            Self::DescribeConfigs { .. } => "DescribeConfigsResponse",
            Self::BumpLeaderEpochs { .. } => "BumpLeaderEpochsResponse",
            Self::LastMirroredEpochLookup { .. } => "LastMirroredEpochLookupResponse",
            Self::CreateMirror { .. } => "CreateMirrorResponse",
            Self::DeleteMirror { .. } => "DeleteMirrorResponse",
            Self::DescribeMirror { .. } => "DescribeMirrorResponse",
            Self::DeleteRecords { .. } => "DeleteRecordsResponse",
            Self::DeleteTopics { .. } => "DeleteTopicsResponse",
            Self::CreatePartitions { .. } => "CreatePartitionsResponse",
            Self::AlterMirrorTopics { .. } => "AlterMirrorTopicsResponse",
            Self::ListMirrors { .. } => "ListMirrorsResponse",
            Self::ReadMirrorStates { .. } => "ReadMirrorStatesResponse",
            Self::WriteMirrorStates { .. } => "WriteMirrorStatesResponse",
            Self::DeleteMirrorStates { .. } => "DeleteMirrorStatesResponse",
        }
    }
}

/// One resource of a DescribeConfigs answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeConfigsResult {
    /// The resource.
    pub resource: crate::metadata::ConfigResource,
    /// `UnknownTopicOrPartition` for a topic the broker does not know, else `None`.
    pub error: ErrorCode,
    /// (name, value), sorted by name.
    pub configs: Vec<(String, String)>,
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
