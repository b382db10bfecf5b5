//! Answers, nested as the requests they answer ([`super::Request`]): a response's family is
//! its request's, so a requester routes an answer by family before it looks at the kind.

use crate::common::{
    BrokerId, ErrorCode, LeaderEpoch, NodeId, Offset, ProducerEpoch, ProducerId, TopicId,
    TopicPartition,
};
use crate::metadata::{MetadataRecord, PartitionRecord, TopicMetadata};

use super::parts::*;

/// Every response kind, in the families of [`super::Request`].
#[derive(Debug, Clone)]
pub enum Response {
    /// Answers to requests served by the active controller only (a broker answers NotController).
    Controller(ControllerResponse),
    /// Answers to requests served by a partition's leader (its replica manager).
    Replica(ReplicaResponse),
    /// Answers to requests served by a group, transaction or mirror-state coordinator
    /// (or, for the idempotent InitProducerId, any broker).
    Coordinator(CoordinatorResponse),
    /// Answers to requests served by a broker's KIP-1279 mirror components.
    Mirror(MirrorResponse),
    /// Answers to requests served by any node of a cluster: metadata, configs, ACLs, and
    /// the topic operations a broker screens before the controller applies them.
    Cluster(ClusterResponse),
}

impl Response {
    /// A short name for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Controller(response) => response.kind(),
            Self::Replica(response) => response.kind(),
            Self::Coordinator(response) => response.kind(),
            Self::Mirror(response) => response.kind(),
            Self::Cluster(response) => response.kind(),
        }
    }
}

/// Answers to the requests served by the active controller only (a broker answers NotController).
#[derive(Debug, Clone)]
pub enum ControllerResponse {
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
        records: Vec<(Offset, MetadataRecord)>,
        /// Offset after the last record in the controller's log.
        end_offset: Offset,
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
        first_producer_id: ProducerId,
        /// Ids in the block.
        count: i64,
    },
    /// Per-topic outcome of CreateTopics.
    CreateTopics {
        /// (topic, error, topic id if created).
        results: Vec<(String, ErrorCode, Option<TopicId>)>,
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
    /// Outcome of BumpLeaderEpochs.
    BumpLeaderEpochs {
        /// Request-level error (`StaleBrokerEpoch`, `InvalidRequest`), or `None`.
        error: ErrorCode,
        /// (topic id, partition, error, the partition's leader epoch now), in request order.
        partitions: Vec<(TopicId, i32, ErrorCode, LeaderEpoch)>,
    },
    /// Outcome of CreateMirror.
    CreateMirror {
        /// Error, or `None`.
        error: ErrorCode,
    },
    /// Per-topic outcome of AlterMirrorTopics.
    AlterMirrorTopics {
        /// Request-level error (e.g. an unknown mirror), or `None`.
        error: ErrorCode,
        /// (topic, error), in request order.
        results: Vec<(String, ErrorCode)>,
    },
    /// Per-topic outcome of GrowMirrorTopics.
    GrowMirrorTopics {
        /// Request-level error (`NotController`), or `None`.
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
}

impl ControllerResponse {
    /// A short name for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::BrokerRegistration { .. } => "BrokerRegistrationResponse",
            Self::BrokerHeartbeat { .. } => "BrokerHeartbeatResponse",
            Self::FetchMetadata { .. } => "FetchMetadataResponse",
            Self::AlterPartition { .. } => "AlterPartitionResponse",
            Self::AllocateProducerIds { .. } => "AllocateProducerIdsResponse",
            Self::CreateTopics { .. } => "CreateTopicsResponse",
            Self::IncrementalAlterConfigs { .. } => "IncrementalAlterConfigsResponse",
            Self::CreateAcls { .. } => "CreateAclsResponse",
            Self::DeleteAcls { .. } => "DeleteAclsResponse",
            Self::BumpLeaderEpochs { .. } => "BumpLeaderEpochsResponse",
            Self::CreateMirror { .. } => "CreateMirrorResponse",
            Self::AlterMirrorTopics { .. } => "AlterMirrorTopicsResponse",
            Self::GrowMirrorTopics { .. } => "GrowMirrorTopicsResponse",
            Self::ListMirrors { .. } => "ListMirrorsResponse",
        }
    }
}

/// Answers to the requests served by a partition's leader (its replica manager).
#[derive(Debug, Clone)]
pub enum ReplicaResponse {
    /// Produce outcome.
    Produce {
        /// Error, or `None`.
        error: ErrorCode,
        /// Offset of the batch's first record.
        base_offset: Offset,
        /// Append time when the topic uses LogAppendTime.
        log_append_time_ms: Option<i64>,
        /// The partition's log start offset.
        log_start_offset: Offset,
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
    /// Per-marker, per-partition outcome of WriteTxnMarkers.
    WriteTxnMarkers {
        /// (producer id, [(partition, error)]).
        results: Vec<(ProducerId, Vec<(TopicPartition, ErrorCode)>)>,
    },
    /// Per partition: error and the log start offset after the request.
    DeleteRecords {
        /// (partition, error, low watermark), in request order.
        results: Vec<(TopicPartition, ErrorCode, Offset)>,
    },
}

impl ReplicaResponse {
    /// A short name for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Produce { .. } => "ProduceResponse",
            Self::Fetch { .. } => "FetchResponse",
            Self::OffsetsForLeaderEpoch { .. } => "OffsetsForLeaderEpochResponse",
            Self::ListOffsets { .. } => "ListOffsetsResponse",
            Self::WriteTxnMarkers { .. } => "WriteTxnMarkersResponse",
            Self::DeleteRecords { .. } => "DeleteRecordsResponse",
        }
    }
}

/// Answers to the requests served by a group, transaction or mirror-state coordinator
/// (or, for the idempotent InitProducerId, any broker).
#[derive(Debug, Clone)]
pub enum CoordinatorResponse {
    /// A producer id and epoch.
    InitProducerId {
        /// Error, or `None`.
        error: ErrorCode,
        /// The producer id.
        producer_id: ProducerId,
        /// The producer epoch.
        producer_epoch: ProducerEpoch,
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
        /// Transaction version 2 (KIP-890 part 2, EndTxn v5): the producer id the client
        /// holds from now on (a new one once the epoch overflowed); [`ProducerId::NONE`] under
        /// version 1 and with an error.
        producer_id: ProducerId,
        /// Transaction version 2: the epoch the coordinator bumped to for this transaction's
        /// markers, which the client's next transaction uses; [`ProducerEpoch::NONE`] under
        /// version 1 and with an error.
        producer_epoch: ProducerEpoch,
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
    /// The groups a broker's coordinators host.
    ListGroups {
        /// Error, or `None`.
        error: ErrorCode,
        /// Group ids, sorted.
        groups: Vec<String>,
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

impl CoordinatorResponse {
    /// A short name for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::InitProducerId { .. } => "InitProducerIdResponse",
            Self::FindCoordinator { .. } => "FindCoordinatorResponse",
            Self::AddPartitionsToTxn { .. } => "AddPartitionsToTxnResponse",
            Self::EndTxn { .. } => "EndTxnResponse",
            Self::ConsumerGroupHeartbeat { .. } => "ConsumerGroupHeartbeatResponse",
            Self::OffsetCommit { .. } => "OffsetCommitResponse",
            Self::OffsetFetch { .. } => "OffsetFetchResponse",
            Self::DescribeGroups { .. } => "DescribeGroupsResponse",
            Self::ListGroups { .. } => "ListGroupsResponse",
            Self::ReadMirrorStates { .. } => "ReadMirrorStatesResponse",
            Self::WriteMirrorStates { .. } => "WriteMirrorStatesResponse",
            Self::DeleteMirrorStates { .. } => "DeleteMirrorStatesResponse",
        }
    }
}

/// Answers to the requests served by a broker's KIP-1279 mirror components.
#[derive(Debug, Clone)]
pub enum MirrorResponse {
    /// The answer to a LastMirroredEpochLookup.
    LastMirroredEpochLookup {
        /// `None`; `InvalidClusterMirrorState` if a mirror of the source still mirrors the
        /// partition from the requester (mirroring both ways at once); coordinator errors.
        error: ErrorCode,
        /// The last mirrored leader epoch, or −1 if the source recorded none.
        last_mirrored_epoch: LeaderEpoch,
        /// The log end offset when the source stopped mirroring (the late revision stores it
        /// with the epoch), or −1. Only the `offset-alignment` design aligns by it.
        last_mirrored_offset: Offset,
        /// The answering source's topic id of the topic (`None` when it has no such topic):
        /// the asker keeps it as the source topic its partition mirrors (this model's
        /// addition; the KIP's destination topic has the source's topic id already).
        topic_id: Option<super::TopicId>,
    },
    /// Outcome of AddTopicsToMirror at a broker: the controller's answer, with the topics the
    /// broker's check refused merged in (request order).
    AddTopicsToMirror {
        /// A whole-request error (`ClusterMirrorNotFound`, `NotController`, …), or `None`.
        error: ErrorCode,
        /// Per topic.
        results: Vec<(String, ErrorCode)>,
    },
    /// Outcome of RecoverMirrorTopics.
    RecoverMirrorTopics {
        /// A whole-request error (`ClusterMirrorNotFound`), or `None`.
        error: ErrorCode,
        /// Per topic, in request order.
        results: Vec<(String, ErrorCode)>,
        /// The partitions found FAILED and recovered.
        recovered: Vec<TopicPartition>,
    },
    /// Outcome of DeleteMirror.
    DeleteMirror {
        /// Error, or `None`.
        error: ErrorCode,
    },
    /// A mirror's partitions.
    DescribeMirror {
        /// `ClusterMirrorNotFound` for an unknown mirror, else `None`.
        error: ErrorCode,
        /// Every partition of the mirror's topics, by topic and partition.
        partitions: Vec<MirrorPartitionDescription>,
    },
}

impl MirrorResponse {
    /// A short name for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::LastMirroredEpochLookup { .. } => "LastMirroredEpochLookupResponse",
            Self::AddTopicsToMirror { .. } => "AddTopicsToMirrorResponse",
            Self::RecoverMirrorTopics { .. } => "RecoverMirrorTopicsResponse",
            Self::DeleteMirror { .. } => "DeleteMirrorResponse",
            Self::DescribeMirror { .. } => "DescribeMirrorResponse",
        }
    }
}

/// Answers to the requests served by any node of a cluster: metadata, configs, ACLs, and
/// the topic operations a broker screens before the controller applies them.
#[derive(Debug, Clone)]
pub enum ClusterResponse {
    /// Topic metadata.
    Metadata {
        /// Live brokers.
        brokers: Vec<BrokerId>,
        /// Topics asked for.
        topics: Vec<TopicMetadata>,
    },
    /// ACLs.
    DescribeAcls {
        /// Error, or `None`.
        error: ErrorCode,
        /// Bindings.
        bindings: Vec<crate::metadata::AclBinding>,
    },
    /// Configs per resource, in request order: (resource, error, entries sorted by name).
    DescribeConfigs {
        /// The results.
        results: Vec<DescribeConfigsResult>,
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
}

impl ClusterResponse {
    /// A short name for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Metadata { .. } => "MetadataResponse",
            Self::DescribeAcls { .. } => "DescribeAclsResponse",
            Self::DescribeConfigs { .. } => "DescribeConfigsResponse",
            Self::DeleteTopics { .. } => "DeleteTopicsResponse",
            Self::CreatePartitions { .. } => "CreatePartitionsResponse",
        }
    }
}
