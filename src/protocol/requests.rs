//! Requests, nested by who serves them: the active controller, a partition's leader, a
//! coordinator, a broker's KIP-1279 mirror components, or any node of a cluster. A node matches
//! the families it serves and answers the others with one arm each (a broker answers every
//! controller request with NotController), so no handler lists the kinds that are not its own.
//!
//! Each kind is modelled on the Kafka API of the same name, reduced to the fields the model
//! uses; single-partition Produce is the one simplification (Kafka batches partitions).

use crate::common::{
    BrokerId, ErrorCode, LeaderEpoch, Offset, ProducerEpoch, ProducerId, TopicId, TopicPartition,
};
use crate::log::FetchIsolation;
use crate::record::RecordBatch;

use super::parts::*;
use super::responses::Response;

/// Every request kind.
#[derive(Debug, Clone)]
pub enum Request {
    /// Requests served by the active controller only (a broker answers NotController).
    Controller(ControllerRequest),
    /// Requests served by a partition's leader (its replica manager).
    Replica(ReplicaRequest),
    /// Requests served by a group, transaction or mirror-state coordinator
    /// (or, for the idempotent InitProducerId, any broker).
    Coordinator(CoordinatorRequest),
    /// Requests served by a broker's KIP-1279 mirror components.
    Mirror(MirrorRequest),
    /// Requests served by any node of a cluster: metadata, configs, ACLs, and
    /// the topic operations a broker screens before the controller applies them.
    Cluster(ClusterRequest),
}

impl Request {
    /// A short name for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Controller(request) => request.kind(),
            Self::Replica(request) => request.kind(),
            Self::Coordinator(request) => request.kind(),
            Self::Mirror(request) => request.kind(),
            Self::Cluster(request) => request.kind(),
        }
    }
}

/// Requests served by the active controller only (a broker answers NotController).
#[derive(Debug, Clone)]
pub enum ControllerRequest {
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
        metadata_offset: Offset,
    },
    /// Broker → controller: metadata records from `from_offset` on (KRaft's Fetch of the
    /// `__cluster_metadata` log).
    FetchMetadata {
        /// First record wanted.
        from_offset: Offset,
        /// At most this many records.
        max_records: usize,
        /// How long the controller may hold the request while it has no record from
        /// `from_offset` on (KRaft's `MaxWaitMs`: the broker's fetch is a long poll).
        max_wait_ms: i64,
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
        leader_epoch: LeaderEpoch,
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
        partitions: Vec<(TopicId, i32, LeaderEpoch)>,
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
    /// Admin → controller: create a mirror (KIP-1279 CreateMirror). The properties are stored
    /// as configs of the mirror resource; `bootstrap.servers` (the source cluster) is required.
    CreateMirror {
        /// The mirror's name.
        name: String,
        /// Its properties.
        configs: Vec<(String, String)>,
    },
    /// Admin → controller: AddTopicsToMirror, RemoveTopicsFromMirror, PauseMirrorTopics or
    /// ResumeMirrorTopics, as a change of each topic's `mirror.name`. (An admin sends
    /// AddTopicsToMirror to a broker, [`MirrorRequest::AddTopicsToMirror`], which checks and
    /// forwards it as this.)
    AlterMirrorTopics {
        /// The mirror.
        mirror: String,
        /// What to do.
        operation: MirrorTopicOperation,
        /// The topics.
        topics: Vec<String>,
        /// Add only: `(topic, mirror)` for each topic the sending broker found removed by
        /// `mirror` and whose every partition it read as STOPPED or UNKNOWN in that mirror's
        /// coordinator state (the prototype's broker-side validation). The controller adds a
        /// topic another mirror removed only if it is listed here with that mirror.
        checked_stopped: Vec<(String, String)>,
        /// Add only: patterns appended to the mirror's `mirror.topics.include` in the same
        /// metadata batch (AddTopicsToMirror's `include_patterns`).
        include_patterns: Vec<String>,
    },
    /// A destination broker's periodic sync → controller: grow the mirror's topics to their
    /// source topics' partition counts (the prototype's "scale partitions"; an admin's
    /// CreatePartitions of a mirror topic is refused until STOPPED).
    GrowMirrorTopics {
        /// The mirror.
        mirror: String,
        /// (topic, the source's partition count).
        topics: Vec<(String, i32)>,
    },
    /// Admin → controller: the mirrors, their properties and member topics, as `filter` asks.
    ListMirrors {
        /// Which mirrors and member topics to list.
        filter: ListMirrorsFilter,
    },
}

impl ControllerRequest {
    /// A short name for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::BrokerRegistration { .. } => "BrokerRegistration",
            Self::BrokerHeartbeat { .. } => "BrokerHeartbeat",
            Self::FetchMetadata { .. } => "FetchMetadata",
            Self::AlterPartition { .. } => "AlterPartition",
            Self::BumpLeaderEpochs { .. } => "BumpLeaderEpochs",
            Self::AllocateProducerIds { .. } => "AllocateProducerIds",
            Self::CreateTopics { .. } => "CreateTopics",
            Self::IncrementalAlterConfigs { .. } => "IncrementalAlterConfigs",
            Self::CreateAcls { .. } => "CreateAcls",
            Self::DeleteAcls { .. } => "DeleteAcls",
            Self::CreateMirror { .. } => "CreateMirror",
            Self::AlterMirrorTopics { .. } => "AlterMirrorTopics",
            Self::GrowMirrorTopics { .. } => "GrowMirrorTopics",
            Self::ListMirrors { .. } => "ListMirrors",
        }
    }
}

/// Requests served by a partition's leader (its replica manager).
#[derive(Debug, Clone)]
pub enum ReplicaRequest {
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
        /// The producer's transactional id (Produce v3+), which KIP-890's verification asks
        /// the coordinator about; `None` for a producer without one.
        transactional_id: Option<String>,
        /// The topic id the producer means (Produce v13): a leader whose partition has another
        /// id (the topic was deleted and created again) refuses it with `UnknownTopicId`
        /// rather than write a batch of the deleted topic's sequences into the new one. `None`
        /// produces by name.
        topic_id: Option<TopicId>,
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
    /// Transaction coordinator → partition leaders: write COMMIT/ABORT markers.
    WriteTxnMarkers {
        /// Markers, each for several partitions.
        markers: Vec<TxnMarker>,
    },
    /// Admin → partition leader: move each partition's log start offset up to the offset (−1:
    /// the high watermark). Refused on a mirror partition that is not STOPPED.
    DeleteRecords {
        /// (partition, new log start offset).
        partitions: Vec<(TopicPartition, Offset)>,
    },
}

impl ReplicaRequest {
    /// A short name for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Produce { .. } => "Produce",
            Self::Fetch { .. } => "Fetch",
            Self::OffsetsForLeaderEpoch { .. } => "OffsetsForLeaderEpoch",
            Self::ListOffsets { .. } => "ListOffsets",
            Self::WriteTxnMarkers { .. } => "WriteTxnMarkers",
            Self::DeleteRecords { .. } => "DeleteRecords",
        }
    }
}

/// Requests served by a group, transaction or mirror-state coordinator
/// (or, for the idempotent InitProducerId, any broker).
#[derive(Debug, Clone)]
pub enum CoordinatorRequest {
    /// Producer → any broker (idempotent) or its transaction coordinator (transactional): a
    /// producer id and epoch. A transactional re-init bumps the epoch and fences older instances.
    InitProducerId {
        /// Transactional id, if any.
        transactional_id: Option<String>,
        /// `transaction.timeout.ms` (transactional only).
        transaction_timeout_ms: i64,
        /// The id the producer holds (−1 if none; KIP-360 re-init keeps it).
        producer_id: ProducerId,
        /// The epoch the producer holds (−1 if none).
        producer_epoch: ProducerEpoch,
    },
    /// Client → any broker: which broker coordinates a group or transactional id.
    FindCoordinator {
        /// Group or transaction coordinator.
        key_type: CoordinatorType,
        /// The group id or transactional id.
        key: String,
    },
    /// Transactional producer → its coordinator: partitions joining the ongoing transaction.
    /// A partition leader → the coordinator with `verify_only` (KIP-890 part 1, Kafka's
    /// AddPartitionsToTxn v4 `VerifyOnly`): are these partitions in the producer's ongoing
    /// transaction? Nothing is added.
    AddPartitionsToTxn {
        /// Transactional id.
        transactional_id: String,
        /// Producer id.
        producer_id: ProducerId,
        /// Producer epoch.
        producer_epoch: ProducerEpoch,
        /// Partitions to add.
        partitions: Vec<TopicPartition>,
        /// Only verify membership (a broker's check before a transaction's first append).
        verify_only: bool,
    },
    /// Transactional producer → its coordinator: commit or abort the ongoing transaction.
    EndTxn {
        /// Transactional id.
        transactional_id: String,
        /// Producer id.
        producer_id: ProducerId,
        /// Producer epoch.
        producer_epoch: ProducerEpoch,
        /// Commit (`true`) or abort.
        committed: bool,
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
    /// Admin → every broker: the groups of the group coordinators the broker hosts (Kafka's
    /// ListGroups, which an admin sends to each broker).
    ListGroups,
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

impl CoordinatorRequest {
    /// A short name for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::InitProducerId { .. } => "InitProducerId",
            Self::FindCoordinator { .. } => "FindCoordinator",
            Self::AddPartitionsToTxn { .. } => "AddPartitionsToTxn",
            Self::EndTxn { .. } => "EndTxn",
            Self::ConsumerGroupHeartbeat { .. } => "ConsumerGroupHeartbeat",
            Self::OffsetCommit { .. } => "OffsetCommit",
            Self::OffsetFetch { .. } => "OffsetFetch",
            Self::DescribeGroups { .. } => "DescribeGroups",
            Self::ListGroups => "ListGroups",
            Self::ReadMirrorStates { .. } => "ReadMirrorStates",
            Self::WriteMirrorStates { .. } => "WriteMirrorStates",
            Self::DeleteMirrorStates { .. } => "DeleteMirrorStates",
        }
    }
}

/// Requests served by a broker's KIP-1279 mirror components.
#[derive(Debug, Clone)]
pub enum MirrorRequest {
    /// Admin → any destination broker: AddTopicsToMirror. The broker checks that every
    /// partition of a topic a mirror removed is STOPPED in that mirror's state, then forwards
    /// the rest to the controller (see `mirror::topic_admin`).
    AddTopicsToMirror {
        /// The mirror to add the topics to.
        mirror: String,
        /// The topics.
        topics: Vec<String>,
        /// Patterns appended to the mirror's `mirror.topics.include` with the add (the
        /// prototype's `StartMirrorTopicsOptions.includePatterns`); usually empty.
        include_patterns: Vec<String>,
    },
    /// Admin → any destination broker: RecoverMirrorTopics, a fresh budget of retries for
    /// the FAILED partitions of the topics (see `mirror::recover`).
    RecoverMirrorTopics {
        /// The mirror.
        mirror: String,
        /// The topics.
        topics: Vec<String>,
    },
    /// Admin → controller: delete a mirror whose topics are all removed (DeleteMirror).
    DeleteMirror {
        /// The mirror's name.
        name: String,
    },
    /// Admin → any destination broker: every partition of a mirror's topics with its stored
    /// state, last mirrored epoch and lag (KIP-1279's describe; see `mirror::describe`).
    DescribeMirror {
        /// The mirror's name.
        name: String,
    },
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
        /// The source topic id the asker's partition mirrored, if it knows one: a source
        /// whose topic has another id (deleted and created again) answers `UnknownTopicId`
        /// rather than align the asker with another topic's history.
        topic_id: Option<super::TopicId>,
    },
}

impl MirrorRequest {
    /// A short name for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::AddTopicsToMirror { .. } => "AddTopicsToMirror",
            Self::RecoverMirrorTopics { .. } => "RecoverMirrorTopics",
            Self::DeleteMirror { .. } => "DeleteMirror",
            Self::DescribeMirror { .. } => "DescribeMirror",
            Self::LastMirroredEpochLookup { .. } => "LastMirroredEpochLookup",
        }
    }
}

/// Requests served by any node of a cluster: metadata, configs, ACLs, and
/// the topic operations a broker screens before the controller applies them.
#[derive(Debug, Clone)]
pub enum ClusterRequest {
    /// Client → broker: topic metadata.
    Metadata {
        /// Topics of interest; `None` for all.
        topics: Option<Vec<String>>,
    },
    /// Admin → any broker: list ACLs.
    DescribeAcls,
    /// Admin → any broker: the dynamic configs of some resources, as the broker's metadata
    /// image has them (`mirror.name` is hidden, KIP-1279 AS22).
    DescribeConfigs {
        /// The resources.
        resources: Vec<crate::metadata::ConfigResource>,
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
}

impl ClusterRequest {
    /// A short name for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Metadata { .. } => "Metadata",
            Self::DescribeAcls => "DescribeAcls",
            Self::DescribeConfigs { .. } => "DescribeConfigs",
            Self::DeleteTopics { .. } => "DeleteTopics",
            Self::CreatePartitions { .. } => "CreatePartitions",
        }
    }
}

impl ControllerRequest {
    /// The answer of a node that cannot serve the request (a broker, which is not the
    /// controller, answers [`ErrorCode::NotController`]), in the request's own answer shape,
    /// as Kafka's `AbstractRequest.getErrorResponse` builds it: every topic of a CreateTopics
    /// carries the error, lists stay empty. `None` for FetchMetadata, whose answer carries no
    /// error: a node that cannot serve it stays silent and the broker retries at its timeout.
    pub fn error_response(&self, error: ErrorCode) -> Option<Response> {
        use super::ControllerResponse as Answer;
        let answer = match self {
            Self::BrokerRegistration { .. } => Answer::BrokerRegistration {
                error,
                broker_epoch: -1,
            },
            Self::BrokerHeartbeat { .. } => Answer::BrokerHeartbeat {
                error,
                is_fenced: true,
            },
            Self::FetchMetadata { .. } => return None,
            Self::AlterPartition { .. } => Answer::AlterPartition {
                error,
                partition: None,
            },
            Self::BumpLeaderEpochs { .. } => Answer::BumpLeaderEpochs {
                error,
                partitions: Vec::new(),
            },
            Self::AllocateProducerIds { .. } => Answer::AllocateProducerIds {
                error,
                first_producer_id: ProducerId::NONE,
                count: 0,
            },
            Self::CreateTopics { topics } => Answer::CreateTopics {
                results: topics
                    .iter()
                    .map(|topic| (topic.name.clone(), error, None))
                    .collect(),
            },
            Self::IncrementalAlterConfigs { .. } => Answer::IncrementalAlterConfigs { error },
            Self::CreateAcls { .. } => Answer::CreateAcls { error },
            Self::DeleteAcls { .. } => Answer::DeleteAcls { error },
            Self::CreateMirror { .. } => Answer::CreateMirror { error },
            Self::AlterMirrorTopics { .. } => Answer::AlterMirrorTopics {
                error,
                results: Vec::new(),
            },
            Self::GrowMirrorTopics { .. } => Answer::GrowMirrorTopics {
                error,
                results: Vec::new(),
            },
            Self::ListMirrors { .. } => Answer::ListMirrors {
                error,
                mirrors: Vec::new(),
            },
        };
        Some(Response::Controller(answer))
    }
}

impl CoordinatorRequest {
    /// The answer of a broker that does not host the coordinator the request is for
    /// ([`ErrorCode::NotCoordinator`]), in the request's own answer shape: per-partition
    /// requests carry the error on every partition, the rest once; ids and epochs are −1 and
    /// lists empty, as Kafka's `getErrorResponse` leaves them.
    pub fn error_response(&self, error: ErrorCode) -> Response {
        use super::CoordinatorResponse as Answer;
        Response::Coordinator(match self {
            Self::InitProducerId { .. } => Answer::InitProducerId {
                error,
                producer_id: ProducerId::NONE,
                producer_epoch: ProducerEpoch::NONE,
            },
            Self::FindCoordinator { .. } => Answer::FindCoordinator {
                error,
                coordinator: None,
            },
            Self::AddPartitionsToTxn { partitions, .. } => Answer::AddPartitionsToTxn {
                results: partitions.iter().map(|tp| (tp.clone(), error)).collect(),
            },
            Self::EndTxn { .. } => Answer::EndTxn {
                error,
                producer_id: ProducerId::NONE,
                producer_epoch: ProducerEpoch::NONE,
            },
            Self::ConsumerGroupHeartbeat {
                member_id,
                member_epoch,
                ..
            } => Answer::ConsumerGroupHeartbeat {
                error,
                member_id: member_id.clone(),
                member_epoch: *member_epoch,
                heartbeat_interval_ms: 0,
                assignment: None,
            },
            Self::OffsetCommit { offsets, .. } => Answer::OffsetCommit {
                results: offsets
                    .iter()
                    .map(|entry| (entry.topic_partition.clone(), error))
                    .collect(),
            },
            Self::OffsetFetch { .. } => Answer::OffsetFetch {
                error,
                offsets: Vec::new(),
            },
            Self::DescribeGroups { .. } => Answer::DescribeGroups {
                error,
                groups: Vec::new(),
            },
            Self::ListGroups => Answer::ListGroups {
                error,
                groups: Vec::new(),
            },
            Self::ReadMirrorStates { .. } => Answer::ReadMirrorStates {
                error,
                coordinator_epoch: -1,
                partitions: Vec::new(),
            },
            Self::WriteMirrorStates { .. } => Answer::WriteMirrorStates {
                error,
                partitions: Vec::new(),
            },
            Self::DeleteMirrorStates { .. } => Answer::DeleteMirrorStates { error },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::ConfigResource;
    use crate::protocol::Message;
    use std::collections::BTreeSet;

    const BROKER: BrokerId = BrokerId(1);

    fn tp() -> TopicPartition {
        TopicPartition::new("orders", 0)
    }

    /// One request of every controller kind, with a topic or partition where the kind has
    /// per-item results.
    fn controller_requests() -> Vec<ControllerRequest> {
        let topic_id = TopicId(7);
        vec![
            ControllerRequest::BrokerRegistration {
                broker_id: BROKER,
                incarnation: 1,
            },
            ControllerRequest::BrokerHeartbeat {
                broker_id: BROKER,
                broker_epoch: 3,
                metadata_offset: Offset(10),
            },
            ControllerRequest::FetchMetadata {
                from_offset: Offset(0),
                max_records: 10,
                max_wait_ms: 200,
            },
            ControllerRequest::AlterPartition {
                broker_id: BROKER,
                broker_epoch: 3,
                topic_id,
                partition: 0,
                leader_epoch: LeaderEpoch(1),
                partition_epoch: 1,
                new_isr: vec![BROKER],
            },
            ControllerRequest::BumpLeaderEpochs {
                broker_id: BROKER,
                broker_epoch: 3,
                partitions: vec![(topic_id, 0, LeaderEpoch(1))],
            },
            ControllerRequest::AllocateProducerIds {
                broker_id: BROKER,
                broker_epoch: 3,
            },
            ControllerRequest::CreateTopics {
                topics: vec![NewTopic {
                    name: "orders".into(),
                    partitions: 1,
                    replication_factor: 1,
                    configs: Vec::new(),
                    topic_id: None,
                }],
            },
            ControllerRequest::IncrementalAlterConfigs {
                resource: ConfigResource::Topic("orders".into()),
                changes: Vec::new(),
            },
            ControllerRequest::CreateAcls {
                bindings: Vec::new(),
            },
            ControllerRequest::DeleteAcls {
                bindings: Vec::new(),
            },
            ControllerRequest::CreateMirror {
                name: "m".into(),
                configs: Vec::new(),
            },
            ControllerRequest::AlterMirrorTopics {
                mirror: "m".into(),
                operation: MirrorTopicOperation::Add,
                topics: vec!["orders".into()],
                checked_stopped: Vec::new(),
                include_patterns: Vec::new(),
            },
            ControllerRequest::GrowMirrorTopics {
                mirror: "m".into(),
                topics: vec![("orders".into(), 4)],
            },
            ControllerRequest::ListMirrors {
                filter: ListMirrorsFilter::default(),
            },
        ]
    }

    /// One request of every coordinator kind.
    fn coordinator_requests() -> Vec<CoordinatorRequest> {
        vec![
            CoordinatorRequest::InitProducerId {
                transactional_id: Some("t".into()),
                transaction_timeout_ms: 1_000,
                producer_id: ProducerId::NONE,
                producer_epoch: ProducerEpoch::NONE,
            },
            CoordinatorRequest::FindCoordinator {
                key_type: CoordinatorType::Group,
                key: "g".into(),
            },
            CoordinatorRequest::AddPartitionsToTxn {
                transactional_id: "t".into(),
                producer_id: ProducerId(4),
                producer_epoch: ProducerEpoch(0),
                partitions: vec![tp()],
                verify_only: false,
            },
            CoordinatorRequest::EndTxn {
                transactional_id: "t".into(),
                producer_id: ProducerId(4),
                producer_epoch: ProducerEpoch(0),
                committed: true,
            },
            CoordinatorRequest::ConsumerGroupHeartbeat {
                group_id: "g".into(),
                member_id: "member".into(),
                member_epoch: 2,
                subscribed_topics: None,
            },
            CoordinatorRequest::OffsetCommit {
                group_id: "g".into(),
                member_id: "member".into(),
                member_epoch: 2,
                offsets: vec![OffsetCommitEntry {
                    topic_partition: tp(),
                    offset: Offset(5),
                    leader_epoch: LeaderEpoch::NONE,
                    metadata: String::new(),
                    topic_id: None,
                }],
            },
            CoordinatorRequest::OffsetFetch {
                group_id: "g".into(),
                partitions: None,
            },
            CoordinatorRequest::DescribeGroups {
                group_ids: vec!["g".into()],
            },
            CoordinatorRequest::ListGroups,
            CoordinatorRequest::ReadMirrorStates {
                coordinator_partition: 0,
                mirror: "m".into(),
                partitions: Vec::new(),
            },
            CoordinatorRequest::WriteMirrorStates {
                coordinator_partition: 0,
                mirror: "m".into(),
                writes: Vec::new(),
            },
            CoordinatorRequest::DeleteMirrorStates {
                coordinator_partition: 0,
                mirror: "m".into(),
            },
        ]
    }

    /// The answer's trace line: its kind and fields.
    fn summary(response: Response) -> String {
        Message::Response(9, response).summary().to_string()
    }

    #[test]
    fn a_not_controller_answer_has_its_requests_kind_and_carries_the_error() {
        let requests = controller_requests();
        let kinds: BTreeSet<&str> = requests.iter().map(ControllerRequest::kind).collect();
        assert_eq!(kinds.len(), 14, "one request of every controller kind");
        for request in requests {
            let Some(response) = request.error_response(ErrorCode::NotController) else {
                assert!(matches!(request, ControllerRequest::FetchMetadata { .. }));
                continue;
            };
            assert_eq!(response.kind(), format!("{}Response", request.kind()));
            let line = summary(response);
            assert!(line.contains("NotController"), "{line}");
        }
    }

    #[test]
    fn a_not_coordinator_answer_has_its_requests_kind_and_carries_the_error() {
        let requests = coordinator_requests();
        let kinds: BTreeSet<&str> = requests.iter().map(CoordinatorRequest::kind).collect();
        assert_eq!(kinds.len(), 12, "one request of every coordinator kind");
        for request in requests {
            let response = request.error_response(ErrorCode::NotCoordinator);
            assert_eq!(response.kind(), format!("{}Response", request.kind()));
            let line = summary(response);
            assert!(line.contains("NotCoordinator"), "{line}");
        }
    }
}
