//! The broker: Kafka's `ReplicaManager`, `Partition` and replica fetcher, as one sans-IO state
//! machine implementing [`Node`].
//!
//! Contract:
//! - **Controller session.** On start the broker recovers every partition directory on its disk,
//!   registers with the controller (a new broker epoch per incarnation), heartbeats, and polls
//!   the controller's metadata log. It acts on partition leadership only after its metadata
//!   image shows its *current* registration, so a restarted broker never acts on leadership the
//!   controller granted to its previous incarnation.
//! - **Listeners.** Until its image first shows its registration the broker holds every request
//!   and answers it only then (Kafka opens its listeners only after catching up with the
//!   metadata log; its clients keep the request queued while they reconnect).
//! - **Leader.** Client produce (acks=1 and acks=all with `min.insync.replicas`), follower and
//!   consumer fetches (with the diverging-epoch check and a bounded wait when there is no data),
//!   OffsetsForLeaderEpoch, ListOffsets. It tracks followers, moves the high watermark over the
//!   maximal ISR, proposes ISR changes with AlterPartition and completes acks=all produces when
//!   the high watermark passes them.
//! - **Follower.** One fetch session per leader broker. A diverging epoch in the answer truncates
//!   the log per Kafka's `getOffsetTruncationState` (KIP-101/279); an out-of-range answer
//!   restarts at the leader's log start or truncates to its high watermark; appended data moves
//!   the follower's high watermark and log start up to the leader's.
//! - **Producer ids.** Any broker answers InitProducerId from a block of ids the controller
//!   granted it; the first block in every cluster starts at 0.
//! - Every state change a checker needs is also reported as a [`BrokerEvent`].
//!
//! Modelling limits: one replica fetcher session per leader (Kafka may use several threads),
//! single-partition produce requests, no partition reassignment or deletion, and the high
//! watermark advances even while the ISR is below `min.insync.replicas` (pre-KIP-966 behaviour).

mod config;
mod coordinators;
mod event_summary;
mod mirror_describe;
mod mirror_sync;
pub use mirror_sync::SYNC_REQUEST_TIMEOUT_MS;
mod mirroring;
mod partition;
mod storage;
#[cfg(test)]
mod tests;
mod topic_admin;

use std::collections::BTreeMap;

use crate::mirror::TopicMirrorConfig;
use crate::switches::BrokenSwitch;
pub use config::{BrokerConfig, BrokerConfigError};
pub use partition::{FollowerRole, FollowerState, LeaderState, Partition, Role};
pub use storage::{
    parse_partition_dir_name, partition_dir_name, BrokerStorage, MemoryDirDisk, MemoryStorage,
};

use crate::coordinator::mirror::MIRROR_STATE_TOPIC;
use crate::log::{AppendOrigin, EpochEndOffset, FetchIsolation, LogConfig, LogDisk, PartitionLog};
use crate::metadata::MIN_INSYNC_REPLICAS;
use crate::metadata::{MetadataImage, PartitionRecord};
use crate::mirror::MirrorState;
use crate::node::{Node, Outbox};
use crate::protocol::{
    Acks, BrokerId, ClusterIndex, CoordinatorType, EpochAnswer, EpochQuery, ErrorCode,
    FetchPartition, FetchPartitionResponse, ListOffsetsAnswer, ListOffsetsQuery, Message, NodeId,
    OffsetSpec, Request, Response, TopicPartition,
};
use crate::record::RecordBatch;

/// Why a replica's log was truncated (reported so checkers can tell legal truncations apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TruncationReason {
    /// A fetch answer carried a diverging epoch.
    DivergingEpoch,
    /// The follower's log had no epochs; it restarted from its high watermark.
    NoEpochsOnBecomingFollower,
    /// The leader's log is shorter than the fetch offset.
    OffsetOutOfRangeAboveLeader,
    /// The leader's log starts above the follower's log end.
    OffsetOutOfRangeBelowLeaderStart,
    /// KIP-1279 PREPARING: a mirror leader truncated after its last mirrored epoch.
    MirrorLastMirroredEpoch,
    /// KIP-1279 STOPPING: a mirror leader truncated to its last stable offset.
    MirrorStopAtLastStableOffset,
    /// KIP-1279 MIRRORING: the source answered a mirror fetch with a diverging epoch.
    MirrorDivergingEpoch,
    /// KIP-1279 MIRRORING: the source's log starts above the mirror's log end.
    MirrorBelowSourceLogStart,
}

impl TruncationReason {
    /// Whether KIP-1279 mirroring truncated (the destination's log follows the source's, and
    /// what it drops is lost by design, e.g. a failback's unmirrored writes).
    pub fn is_mirroring(self) -> bool {
        matches!(
            self,
            Self::MirrorLastMirroredEpoch
                | Self::MirrorStopAtLastStableOffset
                | Self::MirrorDivergingEpoch
                | Self::MirrorBelowSourceLogStart
        )
    }

    /// Whether a KIP-1279 mirroring cut follows the source's log: PREPARING's last mirrored
    /// epoch lookup, a diverging epoch, a restart below the source's log start. STOPPING's
    /// cut to the last stable offset is the one the destination decides alone.
    pub fn follows_source(self) -> bool {
        self.is_mirroring() && self != Self::MirrorStopAtLastStableOffset
    }
}

/// Something a checker or a trace wants to know about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrokerEvent {
    /// This broker became leader of a partition in `leader_epoch` at `start_offset`.
    BecameLeader {
        /// The partition.
        topic_partition: TopicPartition,
        /// The leader epoch.
        leader_epoch: i32,
        /// The log end offset at which the epoch starts.
        start_offset: i64,
    },
    /// This broker now follows `leader` (or waits, when `None`).
    BecameFollower {
        /// The partition.
        topic_partition: TopicPartition,
        /// The new leader.
        leader: Option<BrokerId>,
        /// The leader epoch.
        leader_epoch: i32,
    },
    /// A log was truncated.
    Truncated {
        /// The partition.
        topic_partition: TopicPartition,
        /// Log end offset before.
        from_log_end_offset: i64,
        /// Log end offset after.
        to_log_end_offset: i64,
        /// High watermark before.
        high_watermark_before: i64,
        /// Why.
        reason: TruncationReason,
    },
    /// A leader appended a client batch (or a MIRROR_PID_RESET).
    LeaderAppend {
        /// The partition.
        topic_partition: TopicPartition,
        /// First offset.
        first_offset: i64,
        /// Last offset.
        last_offset: i64,
        /// The leader epoch stamped.
        leader_epoch: i32,
        /// For a KIP-1279 mirror topic, the partition's mirror state at the append (`None`
        /// for a topic in no mirror).
        mirror_state: Option<crate::mirror::MirrorState>,
        /// Whether the appended batch is a control batch (STOPPING's MIRROR_PID_RESET). An
        /// observer cannot tell from the log later: PREPARING may have cut it and a mirrored
        /// batch taken its offset by the time the event is read.
        control: bool,
    },
    /// A mirror leader appended batches fetched from the source, as they were (KIP-1279).
    MirrorAppend {
        /// The partition.
        topic_partition: TopicPartition,
        /// First offset.
        first_offset: i64,
        /// Last offset.
        last_offset: i64,
    },
    /// This leader moved a partition's log start for a DeleteRecords.
    RecordsDeleted {
        /// The partition.
        topic_partition: TopicPartition,
        /// The new log start offset.
        log_start_offset: i64,
        /// The leader's mirror state of the partition (`None` for a topic in no mirror).
        mirror_state: Option<crate::mirror::MirrorState>,
    },
    /// This broker forwarded a DeleteTopics or CreatePartitions for these topics to the
    /// controller (after its KIP-1279 mirror check).
    TopicAdminForwarded {
        /// The topics forwarded.
        topics: Vec<String>,
    },
    /// A mirror partition's leader persisted a state transition (KIP-1279) and acts on it.
    MirrorTransition {
        /// The partition.
        topic_partition: TopicPartition,
        /// The state before (as this leader knew it).
        from: crate::mirror::MirrorState,
        /// The state persisted.
        to: crate::mirror::MirrorState,
    },
    /// The mirror sync (KIP-1279 §7) sent an admin commit of a source group's offset to this
    /// cluster's group coordinator.
    MirrorOffsetSynced {
        /// The group.
        group_id: String,
        /// The partition.
        topic_partition: TopicPartition,
        /// The offset committed.
        offset: i64,
        /// The source's committed offset it came from.
        source_offset: i64,
        /// The destination's high watermark the sync read for the partition this round (the
        /// clamp's upper bound), for the checkers; not in the event's summary line.
        high_watermark_read: i64,
    },
    /// This broker loaded the coordinator shard of an internal partition it now leads.
    CoordinatorLoaded {
        /// The internal partition.
        topic_partition: TopicPartition,
        /// Its leader epoch (the coordinator epoch).
        leader_epoch: i32,
    },
    /// A follower lowered its high watermark to its (new) leader's, which lagged.
    FollowerHighWatermarkLowered {
        /// The partition.
        topic_partition: TopicPartition,
        /// High watermark before.
        from: i64,
        /// High watermark after.
        to: i64,
        /// The leader it follows.
        leader: BrokerId,
    },
    /// This leader refused a WriteTxnMarkers marker for a KIP-1279 mirror partition that is
    /// not STOPPED (`ReadOnlyTopic`; the transaction coordinator retries it).
    TxnMarkerRefused {
        /// The partition.
        topic_partition: TopicPartition,
        /// Whether the marker was a COMMIT (else ABORT).
        committed: bool,
        /// The partition's mirror state at the refusal.
        mirror_state: crate::mirror::MirrorState,
    },
    /// This leader acknowledged, without an append, a WriteTxnMarkers marker for a KIP-1279
    /// mirror partition that is not STOPPED and holds nothing of the producer's transaction
    /// (see `MirrorDesign::acknowledges_moot_markers`).
    TxnMarkerMoot {
        /// The partition.
        topic_partition: TopicPartition,
        /// Whether the marker was a COMMIT (else ABORT).
        committed: bool,
        /// The partition's mirror state.
        mirror_state: crate::mirror::MirrorState,
    },
    /// This leader appended a WriteTxnMarkers marker into a KIP-1279 mirror partition that is
    /// not STOPPED, as its log holds only this cluster's own writes: nothing cut or mirrored
    /// yet (see `MirrorDesign::admits_markers_before_cut`).
    TxnMarkerAdmittedBeforeCut {
        /// The partition.
        topic_partition: TopicPartition,
        /// Whether the marker was a COMMIT (else ABORT).
        committed: bool,
        /// The partition's mirror state.
        mirror_state: crate::mirror::MirrorState,
    },
    /// The mirror fetcher got batches whose epoch is below this log's latest at the fetch
    /// offset, though the source found no divergence (it re-used the epoch number of this
    /// log's tail): the tail was cut back to `truncated_to` before anything was appended.
    MirrorEpochBelowLocal {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The fetch offset (this log's end).
        offset: i64,
        /// Where the log was cut.
        truncated_to: i64,
    },
    /// A `__mirror_state` partition refused the tombstones of a mirror the controller had
    /// deleted; the admin still gets the controller's answer.
    MirrorTombstonesRefused {
        /// Which DeleteMirror.
        delete_id: u64,
    },
    /// STOPPING of a partition whose log held this cluster's own writes only (nothing cut or
    /// mirrored since it left UNKNOWN or STOPPED): no cut to the LSO, no MIRROR_PID_RESET.
    StopOfOwnWrites {
        /// The partition.
        topic_partition: TopicPartition,
    },
    /// An AlterPartition went unanswered: the same proposal is sent again and stays pending
    /// (the high watermark is still computed over the maximal ISR), as Kafka's channel retries.
    AlterPartitionRetried {
        /// The partition.
        topic_partition: TopicPartition,
        /// The proposed ISR.
        isr: Vec<BrokerId>,
    },
    /// The mirror fetcher got a batch whose leader epoch is above this partition's own
    /// (the destination's leader epoch): nothing was appended, and the leader asked the
    /// controller to raise its epoch above `minimum` first
    /// (`MirrorDesign::fences_mirrored_epochs`, the later revision's EPOCH_FENCING).
    MirrorEpochFenced {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The highest epoch among the fetched batches.
        batch_epoch: i32,
        /// The leader epoch the partition is led in.
        leader_epoch: i32,
        /// The minimum asked of the controller.
        minimum: i32,
    },
    /// A mirroring cut of this leadership removed records, and the fetcher is about to append
    /// again: the leader asks the controller to raise its epoch above `leader_epoch` first,
    /// so that a mirror of this log sees the change (`MirrorDesign::verifies_mirrored_tail`).
    MirrorCutEpochBump {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The leader epoch the cut was made in.
        leader_epoch: i32,
    },
    /// A tail check found the log's last batch, at `base_offset`, equal to the source's batch
    /// there in `source_epoch` (`MirrorDesign::verifies_mirrored_tail`).
    MirrorTailChecked {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The base offset of the batch compared.
        base_offset: i64,
        /// The source leader epoch the fetch named.
        source_epoch: i32,
    },
    /// A tail check found the log's last batch, at `base_offset`, differing from the source's
    /// batch there (another history in the same epoch numbers): the batch was cut, and the
    /// next fetch checks the one before.
    MirrorTailDiverged {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The base offset of the batch cut.
        base_offset: i64,
        /// The source leader epoch the fetch named.
        source_epoch: i32,
    },
    /// A follower fetched past a mirror cut it had not yet truncated to, and its epoch check
    /// passed: the leader answered it as diverging at the cut
    /// (`MirrorDesign::fences_followers_after_mirror_cut`), where Kafka's check alone would
    /// have let it keep records the cut removed, or append inside a batch it never had.
    MirrorCutFencedFollower {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The fenced follower.
        follower: BrokerId,
        /// Its fetch offset.
        fetch_offset: i64,
        /// The cut it must truncate to.
        cut: i64,
    },
    /// A fetcher named a last fetched epoch above every epoch this leader's log holds (a
    /// KIP-1279 mirror log's cache holds its batches' epochs only, and a mirroring cut removed
    /// the later ones): the fetch diverged at the log end, in the latest epoch left
    /// (`leader_end_offset_for_fetched_epoch`).
    FetchedEpochAboveLatest {
        /// The partition.
        topic_partition: TopicPartition,
        /// The follower that fetched, or `None` for a consumer's fetch (a downstream
        /// cluster's mirror fetcher).
        follower: Option<BrokerId>,
        /// The epoch the fetch named.
        last_fetched_epoch: i32,
        /// The latest epoch of this log, and its log end offset: the answer.
        latest: EpochEndOffset,
    },
    /// PREPARING's cut removed records (or an earlier leadership's may have), and its ISR has
    /// truncated, but a replica outside the ISR has not been seen at or below the cut: the
    /// seed design here waits for it (`MirrorDesign::prepare_awaits_every_replica_after_cut`),
    /// where the KIP's rule would go on to MIRRORING. Reported once per wait.
    PreparingAwaitsReplicaOutsideIsr {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The cut's offset.
        offset: i64,
    },
    /// A request arrived before this incarnation's listeners were open; it is held and handled
    /// once they open (see `Broker::serving_requests`).
    RequestHeldBeforeListening {
        /// Who sent it.
        from: NodeId,
        /// The request's name.
        request: &'static str,
    },
    /// This broker, as the transactional id's coordinator, refused AddPartitionsToTxn for
    /// partitions of topics its metadata has mirroring or paused (`ReadOnlyTopic`, KIP-1279).
    TxnEnlistRefused {
        /// The transactional id.
        transactional_id: String,
        /// The partitions refused as read-only.
        partitions: Vec<TopicPartition>,
    },
    /// The ISR of a led partition changed (as confirmed by the controller).
    IsrChanged {
        /// The partition.
        topic_partition: TopicPartition,
        /// The new ISR.
        isr: Vec<BrokerId>,
    },
    /// A leader answered a client batch its producer had already written (a retry or a
    /// duplicated request) with the original offsets, appending nothing.
    DuplicateBatch {
        /// The partition.
        topic_partition: TopicPartition,
        /// The original first offset.
        first_offset: i64,
    },
    /// The mirror coordinator refused this broker's write of a partition's mirror state as
    /// stale (`FencedStateEpoch`, `FencedLeaderEpoch`) or illegal
    /// (`InvalidClusterMirrorState`); the broker reads the state again.
    MirrorStateWriteRefused {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The coordinator's error.
        error: ErrorCode,
    },
    /// A mirror partition's leader read a state that a newer leadership persisted (a
    /// greater leader epoch than its own): it is a deposed leader behind on metadata, and
    /// reads again later instead of taking the state as its own.
    MirrorStateOfNewerLeader {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The leader epoch this broker leads in, in its own view.
        leader_epoch: i32,
        /// The greatest leader epoch the coordinator accepted a write with.
        stored_leader_epoch: i32,
    },
    /// A leader refused a client batch for a KIP-1279 mirror partition that is not STOPPED
    /// (`ReadOnlyTopic`).
    MirrorWriteRefused {
        /// The partition.
        topic_partition: TopicPartition,
        /// Its mirror state.
        mirror_state: crate::mirror::MirrorState,
    },
}

#[derive(Debug, Clone, Copy)]
struct PendingRequest {
    correlation_id: u64,
    sent_ms: i64,
}

#[derive(Debug, Clone, Default)]
struct FetchSession {
    inflight: Option<PendingRequest>,
    /// Partitions in the in-flight request with the fetch offsets sent.
    inflight_offsets: BTreeMap<TopicPartition, i64>,
    next_fetch_ms: i64,
}

#[derive(Debug, Clone)]
struct DelayedProduce {
    reply_to: NodeId,
    correlation_id: u64,
    topic_partition: TopicPartition,
    leader_epoch: i32,
    base_offset: i64,
    required_offset: i64,
    log_append_time_ms: Option<i64>,
    deadline_ms: i64,
}

#[derive(Debug, Clone)]
struct DelayedFetch {
    reply_to: NodeId,
    correlation_id: u64,
    replica_id: Option<BrokerId>,
    isolation: FetchIsolation,
    max_bytes: usize,
    partitions: Vec<FetchPartition>,
    deadline_ms: i64,
}

/// A broker; see the module doc.
pub struct Broker<S: BrokerStorage> {
    node_id: NodeId,
    broker_id: BrokerId,
    config: BrokerConfig,
    storage: S,
    incarnation: u64,
    outbox: Outbox,
    controller: NodeId,
    broker_epoch: Option<i64>,
    registration: Option<PendingRequest>,
    next_registration_ms: i64,
    heartbeat: Option<PendingRequest>,
    next_heartbeat_ms: i64,
    image: MetadataImage,
    metadata_fetch: Option<PendingRequest>,
    next_metadata_fetch_ms: i64,
    metadata_ready: bool,
    /// Whether the listeners are open. Kafka's `BrokerServer` enables request processing only
    /// once the controller acknowledged that the broker caught up with the metadata log (its
    /// image shows its own registration), so a restarted broker never answers from an empty
    /// image ("no such mirror", "not leader") what its cluster knows. Set the first time
    /// `metadata_ready` is, and kept for the incarnation: a broker that must register again
    /// keeps its listeners open, as Kafka's does.
    serving_requests: bool,
    /// Requests that arrived before the listeners opened, in arrival order. A Kafka client
    /// refused a connection keeps its request queued and reconnects every
    /// `reconnect.backoff.ms`, so the request reaches the broker soon after its listener opens;
    /// holding it here models that without a connection layer (dropping it instead would stall
    /// every client for its request timeout at each broker start).
    held_requests: Vec<crate::protocol::Envelope>,
    partitions: BTreeMap<TopicPartition, Partition<S::Disk>>,
    unassigned_logs: BTreeMap<TopicPartition, PartitionLog<S::Disk>>,
    fetch_sessions: BTreeMap<BrokerId, FetchSession>,
    delayed_produces: Vec<DelayedProduce>,
    delayed_fetches: Vec<DelayedFetch>,
    alter_partitions: BTreeMap<u64, (TopicPartition, i64)>,
    producer_id_block: Option<(i64, i64)>,
    allocate_producer_ids: Option<PendingRequest>,
    waiting_for_producer_id: Vec<(NodeId, u64)>,
    coordinators: BTreeMap<
        TopicPartition,
        Box<dyn crate::coordinator::runtime::HostedCoordinator<S::Disk> + Send>,
    >,
    delayed_markers: Vec<coordinators::DelayedMarkers>,
    next_isr_check_ms: i64,
    next_flush_ms: Option<i64>,
    next_high_watermark_checkpoint_ms: i64,
    events: Vec<BrokerEvent>,
    mirror: mirroring::MirrorManager,
    mirror_syncs: mirror_sync::MirrorSyncs,
    mirror_describes: mirror_describe::MirrorDescribes,
    topic_admins: topic_admin::TopicAdmins,
    /// Messages this broker sent itself (to a coordinator it hosts), handled on the next
    /// timeout as Kafka calls a local coordinator directly.
    loopback: Vec<crate::protocol::Envelope>,
    last_now_ms: i64,
}

impl<S: BrokerStorage> Broker<S> {
    /// Starts a broker process: recovers every partition directory in `storage`.
    /// `incarnation` must differ on every start of the same broker.
    pub fn new(
        cluster: ClusterIndex,
        broker_id: BrokerId,
        config: BrokerConfig,
        mut storage: S,
        incarnation: u64,
        now_ms: i64,
    ) -> Result<Self, crate::log::LogError> {
        let node_id = NodeId::Broker(cluster, broker_id);
        let mut unassigned_logs = BTreeMap::new();
        for dir in storage.partition_dirs() {
            let Some(topic_partition) = parse_partition_dir_name(&dir) else {
                continue;
            };
            let disk = storage.open_dir(&dir);
            let (log, _report) = PartitionLog::open(disk, log_config(&config))?;
            unassigned_logs.insert(topic_partition, log);
        }
        Ok(Self {
            node_id,
            broker_id,
            next_isr_check_ms: now_ms + config.replica_lag_time_max_ms / 2,
            next_flush_ms: config
                .log_flush_interval_ms
                .map(|interval| now_ms + interval),
            next_high_watermark_checkpoint_ms: now_ms
                + config.high_watermark_checkpoint_interval_ms,
            config,
            storage,
            incarnation,
            outbox: Outbox::new(node_id),
            controller: NodeId::Controller(cluster),
            broker_epoch: None,
            registration: None,
            next_registration_ms: now_ms,
            heartbeat: None,
            next_heartbeat_ms: now_ms,
            image: MetadataImage::default(),
            metadata_fetch: None,
            next_metadata_fetch_ms: now_ms,
            metadata_ready: false,
            serving_requests: false,
            held_requests: Vec::new(),
            partitions: BTreeMap::new(),
            unassigned_logs,
            fetch_sessions: BTreeMap::new(),
            delayed_produces: Vec::new(),
            delayed_fetches: Vec::new(),
            alter_partitions: BTreeMap::new(),
            producer_id_block: None,
            allocate_producer_ids: None,
            waiting_for_producer_id: Vec::new(),
            coordinators: BTreeMap::new(),
            delayed_markers: Vec::new(),
            events: Vec::new(),
            mirror: mirroring::MirrorManager::default(),
            mirror_syncs: mirror_sync::MirrorSyncs::default(),
            mirror_describes: mirror_describe::MirrorDescribes::default(),
            topic_admins: topic_admin::TopicAdmins::default(),
            loopback: Vec::new(),
            last_now_ms: now_ms,
        })
    }

    // ----- getters for checkers -----

    /// The broker id.
    pub fn broker_id(&self) -> BrokerId {
        self.broker_id
    }

    /// The current registration epoch, once registered.
    pub fn broker_epoch(&self) -> Option<i64> {
        self.broker_epoch
    }

    /// Whether the broker answers requests: its image has shown this incarnation's
    /// registration (until then requests are held).
    pub fn serving_requests(&self) -> bool {
        self.serving_requests
    }

    /// The broker's (possibly stale) metadata image.
    pub fn image(&self) -> &MetadataImage {
        &self.image
    }

    /// Whether the broker acts on leadership (its metadata shows its current registration).
    pub fn is_metadata_ready(&self) -> bool {
        self.metadata_ready
    }

    /// Partition replicas this broker hosts, by partition.
    pub fn partitions(&self) -> &BTreeMap<TopicPartition, Partition<S::Disk>> {
        &self.partitions
    }

    /// The coordinator shards this broker hosts, by internal partition (read-only, for
    /// checkers; downcast to the shard host type).
    pub fn hosted_coordinators(
        &self,
    ) -> impl Iterator<Item = (&TopicPartition, &dyn std::any::Any)> {
        self.coordinators
            .iter()
            .map(|(partition, host)| (partition, host.as_any()))
    }

    /// The storage (for the simulator's disk faults).
    pub fn storage(&self) -> &S {
        &self.storage
    }

    /// Events since the last call.
    pub fn take_events(&mut self) -> Vec<BrokerEvent> {
        std::mem::take(&mut self.events)
    }

    /// Events not taken yet, oldest first (a trace shows what an input added to them).
    pub fn pending_events(&self) -> &[BrokerEvent] {
        &self.events
    }

    /// Flushes every log (used by a clean shutdown).
    pub fn flush_all(&mut self) {
        for partition in self.partitions.values_mut() {
            // A disk error leaves the data unflushed, which a crash then models.
            let _ = partition.log.flush();
        }
    }

    // ----- controller session -----

    fn maybe_register(&mut self, now_ms: i64) {
        if self.broker_epoch.is_some() || now_ms < self.next_registration_ms {
            return;
        }
        if let Some(pending) = self.registration {
            if now_ms - pending.sent_ms < self.config.controller_request_timeout_ms {
                return;
            }
        }
        let correlation_id = self.outbox.request(
            self.controller,
            Request::BrokerRegistration {
                broker_id: self.broker_id,
                incarnation: self.incarnation,
            },
        );
        self.registration = Some(PendingRequest {
            correlation_id,
            sent_ms: now_ms,
        });
        self.next_registration_ms = now_ms + self.config.controller_request_timeout_ms;
    }

    fn maybe_heartbeat(&mut self, now_ms: i64) {
        let Some(broker_epoch) = self.broker_epoch else {
            return;
        };
        if now_ms < self.next_heartbeat_ms {
            return;
        }
        if let Some(pending) = self.heartbeat {
            if now_ms - pending.sent_ms < self.config.controller_request_timeout_ms {
                return;
            }
        }
        let correlation_id = self.outbox.request(
            self.controller,
            Request::BrokerHeartbeat {
                broker_id: self.broker_id,
                broker_epoch,
                metadata_offset: self.image.next_offset,
            },
        );
        self.heartbeat = Some(PendingRequest {
            correlation_id,
            sent_ms: now_ms,
        });
        self.next_heartbeat_ms = now_ms + self.config.heartbeat_interval_ms;
    }

    fn maybe_fetch_metadata(&mut self, now_ms: i64) {
        if now_ms < self.next_metadata_fetch_ms {
            return;
        }
        if let Some(pending) = self.metadata_fetch {
            if now_ms - pending.sent_ms < self.config.controller_request_timeout_ms {
                return;
            }
        }
        let correlation_id = self.outbox.request(
            self.controller,
            Request::FetchMetadata {
                from_offset: self.image.next_offset,
                max_records: self.config.metadata_fetch_max_records,
            },
        );
        self.metadata_fetch = Some(PendingRequest {
            correlation_id,
            sent_ms: now_ms,
        });
    }

    fn handle_metadata_records(
        &mut self,
        now_ms: i64,
        records: Vec<(i64, crate::metadata::MetadataRecord)>,
        end_offset: i64,
    ) {
        self.metadata_fetch = None;
        let mut applied = false;
        for (offset, record) in records {
            if offset != self.image.next_offset {
                // A stale or overlapping answer (e.g. after a retry); take only what follows.
                continue;
            }
            self.image.apply(offset, &record);
            applied = true;
        }
        self.next_metadata_fetch_ms = if self.image.next_offset < end_offset {
            now_ms
        } else {
            now_ms + self.config.metadata_fetch_interval_ms
        };
        if !self.metadata_ready {
            self.metadata_ready = self.broker_epoch.is_some_and(|epoch| {
                self.image
                    .brokers
                    .get(&self.broker_id)
                    .is_some_and(|registration| registration.broker_epoch == epoch)
            });
            applied |= self.metadata_ready;
        }
        if applied && self.metadata_ready {
            self.drop_deleted_topics();
            self.reconcile_partitions(now_ms);
            self.reconcile_mirror_tasks(now_ms);
            self.reconcile_mirror_syncs(now_ms);
        }
        if self.metadata_ready && !self.serving_requests {
            self.open_listeners(now_ms);
        }
    }

    /// Opens the listeners once the image shows this incarnation's registration and handles
    /// the requests held until then, in arrival order.
    fn open_listeners(&mut self, now_ms: i64) {
        self.serving_requests = true;
        for envelope in std::mem::take(&mut self.held_requests) {
            if let Message::Request(correlation_id, request) = envelope.message {
                self.handle_request(now_ms, envelope.from, correlation_id, request);
            }
        }
    }

    /// Brings every local replica's role in line with the metadata image.
    fn reconcile_partitions(&mut self, now_ms: i64) {
        let assigned: Vec<(TopicPartition, PartitionRecord)> = self
            .image
            .all_partitions()
            .filter(|(_, record)| record.replicas.contains(&self.broker_id))
            .map(|(topic_partition, record)| (topic_partition, record.clone()))
            .collect();
        for (topic_partition, record) in assigned {
            if !self.partitions.contains_key(&topic_partition) {
                let Some(log) = self.take_or_create_log(&topic_partition) else {
                    continue;
                };
                self.partitions.insert(
                    topic_partition.clone(),
                    Partition {
                        topic_partition: topic_partition.clone(),
                        topic_id: record.topic_id,
                        log,
                        role: Role::Follower(FollowerRole {
                            leader: None,
                            leader_epoch: -1,
                        }),
                        mirror_state: MirrorState::Unknown,
                    },
                );
            }
            self.apply_partition_record(now_ms, &topic_partition, &record);
        }
    }

    fn take_or_create_log(
        &mut self,
        topic_partition: &TopicPartition,
    ) -> Option<PartitionLog<S::Disk>> {
        if let Some(log) = self.unassigned_logs.remove(topic_partition) {
            return Some(log);
        }
        let disk = self.storage.open_dir(&partition_dir_name(topic_partition));
        PartitionLog::open(disk, log_config(&self.config))
            .ok()
            .map(|(log, _)| log)
    }

    fn apply_partition_record(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        record: &PartitionRecord,
    ) {
        let self_id = self.broker_id;
        let partition = self
            .partitions
            .get_mut(topic_partition)
            .expect("reconciled partition exists");
        let same_epoch = partition.leader_epoch() == record.leader_epoch;
        match (&partition.role, record.leader) {
            (Role::Leader(_), Some(leader)) if leader == self_id && same_epoch => {
                let before = partition.leader_state().map(|s| s.isr.clone());
                partition.update_isr(record);
                let after = partition.leader_state().map(|s| s.isr.clone());
                if before != after {
                    self.events.push(BrokerEvent::IsrChanged {
                        topic_partition: topic_partition.clone(),
                        isr: record.isr.clone(),
                    });
                }
                self.after_isr_change(now_ms, topic_partition);
            }
            (Role::Follower(role), leader) if role.leader == leader && same_epoch => {}
            (_, Some(leader)) if leader == self_id => {
                let mirror_topic = self
                    .image
                    .mirror_desired_state(&topic_partition.topic)
                    .is_some();
                partition.become_leader(record, self_id, now_ms, mirror_topic);
                self.events.push(BrokerEvent::BecameLeader {
                    topic_partition: topic_partition.clone(),
                    leader_epoch: record.leader_epoch,
                    start_offset: partition.log.log_end_offset(),
                });
                // As Kafka's `makeLeader`: an ISR of the leader alone commits its whole log now.
                self.maybe_increment_high_watermark(now_ms, topic_partition);
                self.load_coordinator(now_ms, topic_partition);
            }
            (_, leader) => {
                let log_end_before = partition.log.log_end_offset();
                let high_watermark_before = partition.log.high_watermark();
                partition.become_follower(record);
                if partition.log.log_end_offset() < log_end_before {
                    self.events.push(BrokerEvent::Truncated {
                        topic_partition: topic_partition.clone(),
                        from_log_end_offset: log_end_before,
                        to_log_end_offset: partition.log.log_end_offset(),
                        high_watermark_before,
                        reason: TruncationReason::NoEpochsOnBecomingFollower,
                    });
                }
                self.events.push(BrokerEvent::BecameFollower {
                    topic_partition: topic_partition.clone(),
                    leader,
                    leader_epoch: record.leader_epoch,
                });
                self.fail_delayed_produces(topic_partition, ErrorCode::NotLeaderOrFollower);
                self.unload_coordinator(topic_partition);
                self.complete_delayed_markers(now_ms);
                if let Some(leader) = leader {
                    self.fetch_sessions.entry(leader).or_default();
                }
            }
        }
    }

    // ----- produce -----

    #[allow(clippy::too_many_arguments)] // The fields of one Produce request, unpacked.
    fn handle_produce(
        &mut self,
        now_ms: i64,
        from: NodeId,
        correlation_id: u64,
        acks: Acks,
        timeout_ms: i64,
        topic_partition: TopicPartition,
        batch: RecordBatch,
    ) {
        let min_insync = self.min_insync_replicas(&topic_partition.topic);
        let Some(partition) = self.partitions.get_mut(&topic_partition) else {
            self.respond_produce(
                from,
                correlation_id,
                ErrorCode::NotLeaderOrFollower,
                -1,
                None,
                -1,
            );
            return;
        };
        let Role::Leader(state) = &partition.role else {
            self.respond_produce(
                from,
                correlation_id,
                ErrorCode::NotLeaderOrFollower,
                -1,
                None,
                -1,
            );
            return;
        };
        let leader_epoch = state.leader_epoch;
        // For a KIP-1279 mirror topic, the partition's mirror state (`None` for other topics).
        let mirror_state = self
            .image
            .mirror_desired_state(&topic_partition.topic)
            .map(|_| partition.mirror_state);
        if let Some(state) = mirror_state.filter(|state| {
            !state.is_writable()
                && !self
                    .config
                    .broken
                    .contains(&BrokenSwitch::MirrorWritableBeforeStopped)
        }) {
            // KIP-1279: a mirror topic is read-only until its partition is STOPPED.
            self.events.push(BrokerEvent::MirrorWriteRefused {
                topic_partition: topic_partition.clone(),
                mirror_state: state,
            });
            let log_start = partition.log.log_start_offset();
            self.respond_produce(
                from,
                correlation_id,
                ErrorCode::ReadOnlyTopic,
                -1,
                None,
                log_start,
            );
            return;
        }
        if acks == Acks::All && state.isr.len() < min_insync {
            let log_start = partition.log.log_start_offset();
            self.respond_produce(
                from,
                correlation_id,
                ErrorCode::NotEnoughReplicas,
                -1,
                None,
                log_start,
            );
            return;
        }
        let appended =
            partition
                .log
                .append_as_leader(&batch, leader_epoch, AppendOrigin::Client, now_ms);
        let info = match appended {
            Ok(info) => info,
            Err(error) => {
                let log_start = partition.log.log_start_offset();
                self.respond_produce(
                    from,
                    correlation_id,
                    ErrorCode::from(&error),
                    -1,
                    None,
                    log_start,
                );
                return;
            }
        };
        if info.duplicate {
            self.events.push(BrokerEvent::DuplicateBatch {
                topic_partition: topic_partition.clone(),
                first_offset: info.first_offset,
            });
        } else {
            self.events.push(BrokerEvent::LeaderAppend {
                topic_partition: topic_partition.clone(),
                first_offset: info.first_offset,
                last_offset: info.last_offset,
                leader_epoch,
                mirror_state,
                control: batch.is_control(),
            });
        }
        let ack_at_once = acks == Acks::Leader
            || self
                .config
                .broken
                .contains(&BrokenSwitch::AckBeforeReplication);
        match if ack_at_once { Acks::Leader } else { acks } {
            Acks::Leader => self.respond_produce(
                from,
                correlation_id,
                ErrorCode::None,
                info.first_offset,
                info.log_append_time_ms,
                info.log_start_offset,
            ),
            Acks::All => self.delayed_produces.push(DelayedProduce {
                reply_to: from,
                correlation_id,
                topic_partition: topic_partition.clone(),
                leader_epoch,
                base_offset: info.first_offset,
                required_offset: info.last_offset + 1,
                log_append_time_ms: info.log_append_time_ms,
                deadline_ms: now_ms + timeout_ms,
            }),
        }
        self.maybe_increment_high_watermark(now_ms, &topic_partition);
        self.try_complete_delayed_fetches(now_ms);
    }

    fn respond_produce(
        &mut self,
        to: NodeId,
        correlation_id: u64,
        error: ErrorCode,
        base_offset: i64,
        log_append_time_ms: Option<i64>,
        log_start_offset: i64,
    ) {
        self.outbox.respond(
            to,
            correlation_id,
            Response::Produce {
                error,
                base_offset,
                log_append_time_ms,
                log_start_offset,
            },
        );
    }

    /// The topic's `min.insync.replicas`; the broker default when unset or unparsable.
    fn min_insync_replicas(&self, topic: &str) -> usize {
        // The empty fallback fails to parse, so the default needs no string of its own (this
        // runs for every acks=all produce and coordinator write).
        self.image
            .topic_config(topic, MIN_INSYNC_REPLICAS, "")
            .parse()
            .unwrap_or(self.config.default_min_insync_replicas)
    }

    fn maybe_increment_high_watermark(&mut self, now_ms: i64, topic_partition: &TopicPartition) {
        let self_id = self.broker_id;
        let moved = self
            .partitions
            .get_mut(topic_partition)
            .is_some_and(|partition| partition.maybe_increment_high_watermark(self_id));
        if moved {
            self.complete_delayed_produces(now_ms);
            self.complete_delayed_markers(now_ms);
            self.poll_coordinator(now_ms, topic_partition);
            self.try_complete_delayed_fetches(now_ms);
        }
    }

    /// Answers every acks=all produce whose offsets the high watermark passed, and fails those
    /// whose partition this broker no longer leads in the same epoch.
    fn complete_delayed_produces(&mut self, now_ms: i64) {
        let pending = std::mem::take(&mut self.delayed_produces);
        for produce in pending {
            let partition = self.partitions.get(&produce.topic_partition);
            let leader = partition.and_then(|p| p.leader_state().map(|s| (p, s)));
            match leader {
                Some((partition, state)) if state.leader_epoch == produce.leader_epoch => {
                    if partition.log.high_watermark() >= produce.required_offset {
                        let min_insync = self.min_insync_replicas(&produce.topic_partition.topic);
                        let error = if state.isr.len() < min_insync {
                            ErrorCode::NotEnoughReplicasAfterAppend
                        } else {
                            ErrorCode::None
                        };
                        let log_start = partition.log.log_start_offset();
                        self.respond_produce(
                            produce.reply_to,
                            produce.correlation_id,
                            error,
                            produce.base_offset,
                            produce.log_append_time_ms,
                            log_start,
                        );
                    } else if now_ms >= produce.deadline_ms {
                        self.respond_produce(
                            produce.reply_to,
                            produce.correlation_id,
                            ErrorCode::RequestTimedOut,
                            -1,
                            None,
                            -1,
                        );
                    } else {
                        self.delayed_produces.push(produce);
                    }
                }
                _ => self.respond_produce(
                    produce.reply_to,
                    produce.correlation_id,
                    ErrorCode::NotLeaderOrFollower,
                    -1,
                    None,
                    -1,
                ),
            }
        }
    }

    fn fail_delayed_produces(&mut self, topic_partition: &TopicPartition, error: ErrorCode) {
        let (failed, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.delayed_produces)
            .into_iter()
            .partition(|produce| &produce.topic_partition == topic_partition);
        self.delayed_produces = kept;
        for produce in failed {
            self.respond_produce(
                produce.reply_to,
                produce.correlation_id,
                error,
                -1,
                None,
                -1,
            );
        }
    }

    // ----- fetch (leader side) -----

    #[allow(clippy::too_many_arguments)]
    fn handle_fetch(
        &mut self,
        now_ms: i64,
        from: NodeId,
        correlation_id: u64,
        replica_id: Option<BrokerId>,
        isolation: FetchIsolation,
        max_wait_ms: i64,
        max_bytes: usize,
        partitions: Vec<FetchPartition>,
    ) {
        let answers =
            self.read_fetch_partitions(now_ms, replica_id, isolation, max_bytes, &partitions);
        if fetch_answer_ready(&answers) || max_wait_ms <= 0 {
            self.outbox.respond(
                from,
                correlation_id,
                Response::Fetch {
                    partitions: answers,
                },
            );
            return;
        }
        self.delayed_fetches.push(DelayedFetch {
            reply_to: from,
            correlation_id,
            replica_id,
            isolation,
            max_bytes,
            partitions,
            deadline_ms: now_ms + max_wait_ms,
        });
    }

    fn read_fetch_partitions(
        &mut self,
        now_ms: i64,
        replica_id: Option<BrokerId>,
        isolation: FetchIsolation,
        max_bytes: usize,
        partitions: &[FetchPartition],
    ) -> Vec<FetchPartitionResponse> {
        let mut answers = Vec::with_capacity(partitions.len());
        let mut touched = Vec::new();
        for request in partitions {
            let answer = self.read_partition(now_ms, replica_id, isolation, max_bytes, request);
            if replica_id.is_some() && answer.error.is_none() && answer.diverging_epoch.is_none() {
                touched.push(request.topic_partition.clone());
            }
            answers.push(answer);
        }
        for topic_partition in touched {
            if let Some(follower) = replica_id {
                self.maybe_expand_isr(now_ms, &topic_partition, follower);
            }
            self.maybe_increment_high_watermark(now_ms, &topic_partition);
        }
        answers
    }

    /// One partition of a Fetch, for a follower (`follower` names it) or a consumer (a client,
    /// or a downstream cluster's KIP-1279 mirror fetcher): the leader-epoch check, the
    /// divergence check on the last fetched epoch (KIP-320, kafka-storage.md §4.6; a plain
    /// consumer sends none), then the read. Where the two kinds of fetcher differ, and why:
    /// - a fetched epoch the log cannot place (its epoch cache is empty) is OFFSET_OUT_OF_RANGE
    ///   for a follower, as Kafka answers; a consumer is told it as an undefined diverging
    ///   epoch, which a mirror fetcher takes for "nothing here is the source's history" and
    ///   truncates fully (`broker::mirroring`);
    /// - only a follower is fenced at a mirror cut it has not truncated to yet, reads up to
    ///   the log end and has its fetch recorded for the ISR; a consumer reads up to the bound
    ///   its isolation sets.
    fn read_partition(
        &mut self,
        now_ms: i64,
        follower: Option<BrokerId>,
        isolation: FetchIsolation,
        max_bytes: usize,
        request: &FetchPartition,
    ) -> FetchPartitionResponse {
        let topic_partition = &request.topic_partition;
        let (partition, _) = match self.led_partition(topic_partition, request.current_leader_epoch)
        {
            Ok(led) => led,
            Err(error) => return error_answer(topic_partition, error),
        };
        let log = &partition.log;
        if request.last_fetched_epoch >= 0 {
            let end = leader_end_offset_for_fetched_epoch(log, request.last_fetched_epoch);
            if end == EpochEndOffset::UNDEFINED && follower.is_some() {
                return offsets_answer(topic_partition, log, ErrorCode::OffsetOutOfRange);
            }
            if end == EpochEndOffset::UNDEFINED
                || end.epoch < request.last_fetched_epoch
                || end.end_offset < request.fetch_offset
            {
                let mut answer = offsets_answer(topic_partition, log, ErrorCode::None);
                answer.diverging_epoch = Some(end);
                self.note_fetched_epoch_above_latest(request, follower, end);
                return answer;
            }
        }
        let Some(follower) = follower else {
            return match log.read(request.fetch_offset, max_bytes, isolation, true) {
                Err(_) => offsets_answer(topic_partition, log, ErrorCode::OffsetOutOfRange),
                Ok(data) => data_answer(topic_partition, data),
            };
        };
        if let Some(cut) = partition.mirror_cut_fence(follower, request.fetch_offset) {
            // The epoch check passed, but a mirror cut since this follower's last fetch at
            // or below it may have removed records it holds (Partition::fence_after_mirror_cut).
            let mut answer = offsets_answer(topic_partition, log, ErrorCode::None);
            answer.diverging_epoch = Some(EpochEndOffset {
                epoch: request.last_fetched_epoch,
                end_offset: cut,
            });
            self.events.push(BrokerEvent::MirrorCutFencedFollower {
                topic_partition: topic_partition.clone(),
                follower,
                fetch_offset: request.fetch_offset,
                cut,
            });
            return answer;
        }
        let read = log.read(
            request.fetch_offset,
            max_bytes,
            FetchIsolation::LogEnd,
            true,
        );
        let Ok(data) = read else {
            return offsets_answer(topic_partition, log, ErrorCode::OffsetOutOfRange);
        };
        self.partitions
            .get_mut(topic_partition)
            .expect("led above")
            .record_follower_fetch(follower, request.fetch_offset, now_ms);
        data_answer(topic_partition, data)
    }

    /// Notes a fetch answered as diverging at `end`, when `end` is this log's latest epoch
    /// below the one the fetch named ([`BrokerEvent::FetchedEpochAboveLatest`]).
    fn note_fetched_epoch_above_latest(
        &mut self,
        request: &FetchPartition,
        follower: Option<BrokerId>,
        end: EpochEndOffset,
    ) {
        if end.epoch >= 0 && end.epoch < request.last_fetched_epoch {
            let latest = self
                .partitions
                .get(&request.topic_partition)
                .and_then(|partition| partition.log.latest_epoch());
            if latest == Some(end.epoch) {
                self.events.push(BrokerEvent::FetchedEpochAboveLatest {
                    topic_partition: request.topic_partition.clone(),
                    follower,
                    last_fetched_epoch: request.last_fetched_epoch,
                    latest: end,
                });
            }
        }
    }

    /// The partition and its leader state when this broker leads it in the epoch a request
    /// names (a negative epoch names none); otherwise the error to answer with.
    fn led_partition(
        &self,
        topic_partition: &TopicPartition,
        current_leader_epoch: i32,
    ) -> Result<(&Partition<S::Disk>, &LeaderState), ErrorCode> {
        let partition = self
            .partitions
            .get(topic_partition)
            .ok_or(ErrorCode::UnknownTopicOrPartition)?;
        let state = partition
            .leader_state()
            .ok_or(ErrorCode::NotLeaderOrFollower)?;
        match check_leader_epoch(current_leader_epoch, state.leader_epoch) {
            Some(error) => Err(error),
            None => Ok((partition, state)),
        }
    }

    /// Answers delayed fetches that now have data (or whose wait ran out).
    fn try_complete_delayed_fetches(&mut self, now_ms: i64) {
        if self.delayed_fetches.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.delayed_fetches);
        for fetch in pending {
            let answers = self.read_fetch_partitions(
                now_ms,
                fetch.replica_id,
                fetch.isolation,
                fetch.max_bytes,
                &fetch.partitions,
            );
            if fetch_answer_ready(&answers) || now_ms >= fetch.deadline_ms {
                self.outbox.respond(
                    fetch.reply_to,
                    fetch.correlation_id,
                    Response::Fetch {
                        partitions: answers,
                    },
                );
            } else {
                self.delayed_fetches.push(fetch);
            }
        }
    }

    // ----- ISR -----

    fn maybe_expand_isr(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        follower: BrokerId,
    ) {
        let Some(partition) = self.partitions.get_mut(topic_partition) else {
            return;
        };
        if let Some(proposed) = partition.maybe_expand_isr(follower) {
            self.send_alter_partition(now_ms, topic_partition, proposed);
        }
    }

    fn maybe_shrink_isrs(&mut self, now_ms: i64) {
        let self_id = self.broker_id;
        let lag_time_ms = self.config.replica_lag_time_max_ms;
        let mut proposals = Vec::new();
        for (topic_partition, partition) in self.partitions.iter_mut() {
            if let Some(proposed) = partition.maybe_shrink_isr(self_id, now_ms, lag_time_ms) {
                proposals.push((topic_partition.clone(), proposed));
            }
        }
        for (topic_partition, proposed) in proposals {
            self.send_alter_partition(now_ms, &topic_partition, proposed);
        }
    }

    fn send_alter_partition(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        new_isr: Vec<BrokerId>,
    ) {
        let Some(broker_epoch) = self.broker_epoch else {
            return;
        };
        let Some(partition) = self.partitions.get(topic_partition) else {
            return;
        };
        let Some(state) = partition.leader_state() else {
            return;
        };
        let request = Request::AlterPartition {
            broker_id: self.broker_id,
            broker_epoch,
            topic_id: partition.topic_id,
            partition: topic_partition.partition,
            leader_epoch: state.leader_epoch,
            partition_epoch: state.partition_epoch,
            new_isr,
        };
        let correlation_id = self.outbox.request(self.controller, request);
        self.alter_partitions
            .insert(correlation_id, (topic_partition.clone(), now_ms));
    }

    fn handle_alter_partition_response(
        &mut self,
        now_ms: i64,
        correlation_id: u64,
        error: ErrorCode,
        record: Option<PartitionRecord>,
    ) {
        let Some((topic_partition, _)) = self.alter_partitions.remove(&correlation_id) else {
            return;
        };
        let Some(partition) = self.partitions.get_mut(&topic_partition) else {
            return;
        };
        match (error, record) {
            (ErrorCode::None, Some(record)) => {
                partition.update_isr(&record);
                // The controller may answer an unchanged ISR with the current state (same
                // partition epoch); the proposal is settled either way.
                if let Role::Leader(state) = &mut partition.role {
                    state.pending_isr = None;
                }
                self.events.push(BrokerEvent::IsrChanged {
                    topic_partition: topic_partition.clone(),
                    isr: record.isr.clone(),
                });
                self.after_isr_change(now_ms, &topic_partition);
            }
            (ErrorCode::RequestTimedOut, _) => {
                // Unanswered: Kafka's AlterPartition channel retries until it is answered, and
                // the proposal stays pending meanwhile, so the high watermark is still computed
                // over the maximal ISR. Dropping it let a deposed leader cut off from its
                // controller commit a produce over its ISR of itself alone and acknowledge
                // it, after the controller had elected another leader below it (generated
                // seed 9970000000001044, `transaction-atomicity`).
                let pending = partition
                    .leader_state()
                    .and_then(|state| state.pending_isr.clone());
                if let Some(proposed) = pending {
                    self.events.push(BrokerEvent::AlterPartitionRetried {
                        topic_partition: topic_partition.clone(),
                        isr: proposed.clone(),
                    });
                    self.send_alter_partition(now_ms, &topic_partition, proposed);
                }
            }
            _ => {
                // Refused (stale epochs, fenced member): drop the proposal; metadata will bring
                // the partition's real state and the next check proposes again.
                if let Role::Leader(state) = &mut partition.role {
                    state.pending_isr = None;
                }
            }
        }
    }

    fn after_isr_change(&mut self, now_ms: i64, topic_partition: &TopicPartition) {
        // A smaller ISR can let the high watermark move; a larger one can make acks=all
        // produces fail with NotEnoughReplicasAfterAppend less often.
        self.maybe_increment_high_watermark(now_ms, topic_partition);
        self.complete_delayed_produces(now_ms);
    }

    fn expire_alter_partitions(&mut self, now_ms: i64) {
        let timeout = self.config.controller_request_timeout_ms;
        let expired: Vec<u64> = self
            .alter_partitions
            .iter()
            .filter(|(_, (_, sent_ms))| now_ms - sent_ms >= timeout)
            .map(|(correlation_id, _)| *correlation_id)
            .collect();
        for correlation_id in expired {
            self.handle_alter_partition_response(
                now_ms,
                correlation_id,
                ErrorCode::RequestTimedOut,
                None,
            );
        }
    }

    // ----- follower fetching -----

    fn maybe_send_replica_fetches(&mut self, now_ms: i64) {
        if !self.metadata_ready {
            return;
        }
        let Some(broker_epoch) = self.broker_epoch else {
            return;
        };
        let leaders: Vec<BrokerId> = self.fetch_sessions.keys().copied().collect();
        for leader in leaders {
            let session = self.fetch_sessions.get(&leader).expect("listed above");
            if let Some(pending) = session.inflight {
                if now_ms - pending.sent_ms < self.config.replica_fetch_timeout_ms {
                    continue;
                }
            }
            if now_ms < session.next_fetch_ms {
                continue;
            }
            let requests = self.follower_fetch_partitions(leader);
            if requests.is_empty() {
                self.fetch_sessions.remove(&leader);
                continue;
            }
            let offsets = requests
                .iter()
                .map(|request| (request.topic_partition.clone(), request.fetch_offset))
                .collect();
            let correlation_id = self.outbox.request(
                NodeId::Broker(self.node_id.cluster(), leader),
                Request::Fetch {
                    replica_id: Some(self.broker_id),
                    replica_epoch: broker_epoch,
                    isolation: FetchIsolation::LogEnd,
                    max_wait_ms: self.config.replica_fetch_wait_max_ms,
                    max_bytes: self.config.replica_fetch_max_bytes,
                    partitions: requests,
                },
            );
            let session = self.fetch_sessions.get_mut(&leader).expect("listed above");
            session.inflight = Some(PendingRequest {
                correlation_id,
                sent_ms: now_ms,
            });
            session.inflight_offsets = offsets;
        }
    }

    fn follower_fetch_partitions(&self, leader: BrokerId) -> Vec<FetchPartition> {
        self.partitions
            .values()
            .filter_map(|partition| match &partition.role {
                Role::Follower(role) if role.leader == Some(leader) => Some(FetchPartition {
                    topic_partition: partition.topic_partition.clone(),
                    current_leader_epoch: role.leader_epoch,
                    fetch_offset: partition.log.log_end_offset(),
                    last_fetched_epoch: partition.log.latest_epoch().unwrap_or(-1),
                }),
                _ => None,
            })
            .collect()
    }

    fn handle_replica_fetch_response(
        &mut self,
        now_ms: i64,
        leader: BrokerId,
        correlation_id: u64,
        answers: Vec<FetchPartitionResponse>,
    ) {
        let Some(session) = self.fetch_sessions.get_mut(&leader) else {
            return;
        };
        if session.inflight.map(|p| p.correlation_id) != Some(correlation_id) {
            return;
        }
        session.inflight = None;
        let offsets = std::mem::take(&mut session.inflight_offsets);
        let mut backoff = false;
        for answer in answers {
            let Some(sent_offset) = offsets.get(&answer.topic_partition).copied() else {
                continue;
            };
            backoff |= !self.handle_replica_fetch_answer(leader, sent_offset, answer);
        }
        let next = if backoff {
            now_ms + self.config.replica_fetch_backoff_ms
        } else {
            now_ms
        };
        if let Some(session) = self.fetch_sessions.get_mut(&leader) {
            session.next_fetch_ms = next;
        }
    }

    /// Applies one partition of a fetch answer; returns false when the fetcher should back off.
    fn handle_replica_fetch_answer(
        &mut self,
        leader: BrokerId,
        sent_offset: i64,
        answer: FetchPartitionResponse,
    ) -> bool {
        let topic_partition = answer.topic_partition.clone();
        let Some(partition) = self.partitions.get_mut(&topic_partition) else {
            return true;
        };
        let following =
            matches!(&partition.role, Role::Follower(role) if role.leader == Some(leader));
        if !following || partition.log.log_end_offset() != sent_offset {
            // The role or the log changed while the fetch was in flight: drop the answer.
            return true;
        }
        match answer.error {
            ErrorCode::None => {}
            ErrorCode::OffsetOutOfRange => {
                let reason = if answer.log_start_offset > partition.log.log_end_offset() {
                    let _ = partition
                        .log
                        .truncate_fully_and_start_at(answer.log_start_offset);
                    TruncationReason::OffsetOutOfRangeBelowLeaderStart
                } else {
                    let target = answer.high_watermark.min(partition.log.log_end_offset());
                    let _ = partition.log.truncate_to(target);
                    TruncationReason::OffsetOutOfRangeAboveLeader
                };
                self.push_truncation(&topic_partition, sent_offset, reason);
                return true;
            }
            _ => return false,
        }
        let target = match answer.diverging_epoch {
            Some(_)
                if self
                    .config
                    .broken
                    .contains(&BrokenSwitch::SkipDivergenceTruncation) =>
            {
                return false;
            }
            Some(diverging) => Some(follower_truncation_offset(&partition.log, diverging)),
            None => follower_truncation_for_batches(&partition.log, &answer.batches),
        };
        if let Some(target) = target {
            let _ = partition.log.truncate_to(target);
            self.push_truncation(
                &topic_partition,
                sent_offset,
                TruncationReason::DivergingEpoch,
            );
            return true;
        }
        let appended = if self
            .config
            .broken
            .contains(&BrokenSwitch::FollowerIgnoresPidReset)
        {
            partition
                .log
                .append_as_follower_ignoring_pid_reset(&answer.batches)
        } else {
            partition.log.append_as_follower(&answer.batches)
        };
        if appended.is_err() {
            return false;
        }
        let log = &mut partition.log;
        let high_watermark_before = log.high_watermark();
        let high_watermark = log.update_high_watermark(answer.high_watermark);
        if high_watermark < high_watermark_before {
            // Kafka's follower takes the leader's high watermark as it is; a new leader's may
            // lag its predecessor's until its followers fetch again.
            self.events.push(BrokerEvent::FollowerHighWatermarkLowered {
                topic_partition: topic_partition.clone(),
                from: high_watermark_before,
                to: high_watermark,
                leader,
            });
        }
        let log = &mut self
            .partitions
            .get_mut(&topic_partition)
            .expect("checked above")
            .log;
        let new_start = answer.log_start_offset.min(log.high_watermark());
        // Raising the start above the high watermark is refused by the log; clamped above.
        let _ = log.maybe_increment_log_start_offset(new_start);
        true
    }

    fn push_truncation(
        &mut self,
        topic_partition: &TopicPartition,
        from: i64,
        reason: TruncationReason,
    ) {
        let Some(partition) = self.partitions.get_mut(topic_partition) else {
            return;
        };
        partition.leader_log_truncated();
        let to = partition.log.log_end_offset();
        // Reported even when the log end moves up (a restart at the leader's log start):
        // either way the log's content was rewritten.
        if to != from {
            self.events.push(BrokerEvent::Truncated {
                topic_partition: topic_partition.clone(),
                from_log_end_offset: from,
                to_log_end_offset: to,
                high_watermark_before: partition.log.high_watermark(),
                reason,
            });
        }
    }

    // ----- other requests -----

    fn handle_metadata_request(
        &mut self,
        from: NodeId,
        correlation_id: u64,
        topics: Option<Vec<String>>,
    ) {
        let response = Response::Metadata {
            brokers: self.image.live_brokers(),
            topics: self.image.describe_topics(topics.as_deref()),
        };
        self.outbox.respond(from, correlation_id, response);
    }

    fn handle_offsets_for_leader_epoch(
        &mut self,
        from: NodeId,
        correlation_id: u64,
        queries: Vec<EpochQuery>,
    ) {
        let partitions = queries
            .iter()
            .map(|query| {
                let undefined = |error| EpochAnswer {
                    error,
                    leader_epoch: -1,
                    end_offset: -1,
                };
                let partition =
                    match self.led_partition(&query.topic_partition, query.current_leader_epoch) {
                        Ok((partition, _)) => partition,
                        Err(error) => return undefined(error),
                    };
                let end = partition.log.end_offset_for_epoch(query.leader_epoch);
                EpochAnswer {
                    error: ErrorCode::None,
                    leader_epoch: end.epoch,
                    end_offset: end.end_offset,
                }
            })
            .collect();
        self.outbox.respond(
            from,
            correlation_id,
            Response::OffsetsForLeaderEpoch { partitions },
        );
    }

    fn handle_list_offsets(
        &mut self,
        from: NodeId,
        correlation_id: u64,
        isolation: FetchIsolation,
        queries: Vec<ListOffsetsQuery>,
    ) {
        let partitions = queries
            .iter()
            .map(|query| self.list_offset(isolation, query))
            .collect();
        self.outbox
            .respond(from, correlation_id, Response::ListOffsets { partitions });
    }

    fn list_offset(
        &self,
        isolation: FetchIsolation,
        query: &ListOffsetsQuery,
    ) -> ListOffsetsAnswer {
        let failed = |error| ListOffsetsAnswer {
            error,
            offset: -1,
            leader_epoch: -1,
        };
        let (partition, state) =
            match self.led_partition(&query.topic_partition, query.current_leader_epoch) {
                Ok(led) => led,
                Err(error) => return failed(error),
            };
        let log = &partition.log;
        let offset = match (query.spec, isolation) {
            (OffsetSpec::Earliest, _) => log.log_start_offset(),
            (OffsetSpec::Latest, FetchIsolation::LogEnd) => log.log_end_offset(),
            (OffsetSpec::Latest, _) if log.high_watermark() < state.leader_epoch_start_offset => {
                // Kafka refuses until the new leader's HW reaches its epoch start (§4.2).
                return failed(ErrorCode::OffsetNotAvailable);
            }
            (OffsetSpec::Latest, FetchIsolation::HighWatermark) => log.high_watermark(),
            (OffsetSpec::Latest, FetchIsolation::TxnCommitted) => log.last_stable_offset(),
        };
        ListOffsetsAnswer {
            error: ErrorCode::None,
            offset,
            leader_epoch: log
                .epoch_cache()
                .epoch_for_offset(offset.max(0))
                .unwrap_or(-1),
        }
    }

    fn handle_init_producer_id(&mut self, now_ms: i64, from: NodeId, correlation_id: u64) {
        self.waiting_for_producer_id.push((from, correlation_id));
        self.serve_producer_ids(now_ms);
    }

    fn serve_producer_ids(&mut self, now_ms: i64) {
        while !self.waiting_for_producer_id.is_empty() {
            let Some((next, end)) = self.producer_id_block else {
                break;
            };
            if next >= end {
                self.producer_id_block = None;
                break;
            }
            self.producer_id_block = Some((next + 1, end));
            let (to, correlation_id) = self.waiting_for_producer_id.remove(0);
            self.outbox.respond(
                to,
                correlation_id,
                Response::InitProducerId {
                    error: ErrorCode::None,
                    producer_id: next,
                    producer_epoch: 0,
                },
            );
        }
        if !self.waiting_for_producer_id.is_empty() {
            self.maybe_allocate_producer_ids(now_ms);
        }
    }

    fn maybe_allocate_producer_ids(&mut self, now_ms: i64) {
        let Some(broker_epoch) = self.broker_epoch else {
            return;
        };
        if let Some(pending) = self.allocate_producer_ids {
            if now_ms - pending.sent_ms < self.config.controller_request_timeout_ms {
                return;
            }
        }
        let correlation_id = self.outbox.request(
            self.controller,
            Request::AllocateProducerIds {
                broker_id: self.broker_id,
                broker_epoch,
            },
        );
        self.allocate_producer_ids = Some(PendingRequest {
            correlation_id,
            sent_ms: now_ms,
        });
    }

    // ----- periodic work -----

    fn periodic(&mut self, now_ms: i64) {
        if now_ms >= self.next_isr_check_ms {
            self.maybe_shrink_isrs(now_ms);
            self.next_isr_check_ms = now_ms + (self.config.replica_lag_time_max_ms / 2).max(1);
        }
        if let (Some(next), Some(interval)) =
            (self.next_flush_ms, self.config.log_flush_interval_ms)
        {
            if now_ms >= next {
                self.flush_all();
                self.next_flush_ms = Some(now_ms + interval);
            }
        }
        if now_ms >= self.next_high_watermark_checkpoint_ms {
            for partition in self.partitions.values_mut() {
                let _ = partition.log.checkpoint_high_watermark();
            }
            self.next_high_watermark_checkpoint_ms =
                now_ms + self.config.high_watermark_checkpoint_interval_ms;
        }
        if !self.waiting_for_producer_id.is_empty() {
            self.maybe_allocate_producer_ids(now_ms);
        }
    }

    fn handle_request(&mut self, now_ms: i64, from: NodeId, correlation_id: u64, request: Request) {
        match request {
            Request::Produce {
                acks,
                timeout_ms,
                topic_partition,
                batch,
            } => self.handle_produce(
                now_ms,
                from,
                correlation_id,
                acks,
                timeout_ms,
                topic_partition,
                batch,
            ),
            Request::Fetch {
                replica_id,
                replica_epoch: _,
                isolation,
                max_wait_ms,
                max_bytes,
                partitions,
            } => self.handle_fetch(
                now_ms,
                from,
                correlation_id,
                replica_id,
                isolation,
                max_wait_ms,
                max_bytes,
                partitions,
            ),
            Request::Metadata { topics } => {
                self.handle_metadata_request(from, correlation_id, topics)
            }
            Request::OffsetsForLeaderEpoch {
                replica_id: _,
                partitions,
            } => self.handle_offsets_for_leader_epoch(from, correlation_id, partitions),
            Request::ListOffsets {
                isolation,
                partitions,
            } => self.handle_list_offsets(from, correlation_id, isolation, partitions),
            Request::InitProducerId {
                transactional_id: Some(transactional_id),
                transaction_timeout_ms,
                producer_id,
                producer_epoch,
            } => {
                let key = transactional_id.clone();
                let key_type = CoordinatorType::Transaction;
                let request = Request::InitProducerId {
                    transactional_id: Some(transactional_id),
                    transaction_timeout_ms,
                    producer_id,
                    producer_epoch,
                };
                self.route_to_coordinator(now_ms, from, correlation_id, key_type, &key, request)
            }
            Request::InitProducerId { .. } => {
                self.handle_init_producer_id(now_ms, from, correlation_id)
            }
            Request::FindCoordinator { key_type, key } => {
                self.handle_find_coordinator(from, correlation_id, key_type, &key)
            }
            Request::WriteTxnMarkers { markers } => {
                self.handle_write_txn_markers(now_ms, from, correlation_id, markers)
            }
            Request::AddPartitionsToTxn { .. } => {
                self.handle_add_partitions_to_txn(now_ms, from, correlation_id, request)
            }
            Request::EndTxn {
                ref transactional_id,
                ..
            } => {
                let key = transactional_id.clone();
                let key_type = CoordinatorType::Transaction;
                self.route_to_coordinator(now_ms, from, correlation_id, key_type, &key, request)
            }
            Request::ConsumerGroupHeartbeat { .. }
            | Request::OffsetCommit { .. }
            | Request::OffsetFetch { .. }
            | Request::DescribeGroups { .. } => {
                let key = match &request {
                    Request::ConsumerGroupHeartbeat { group_id, .. }
                    | Request::OffsetCommit { group_id, .. }
                    | Request::OffsetFetch { group_id, .. } => group_id.clone(),
                    // A multi-group describe goes to the first group's coordinator.
                    Request::DescribeGroups { group_ids } => {
                        group_ids.first().cloned().unwrap_or_default()
                    }
                    _ => unreachable!("matched above"),
                };
                let key_type = CoordinatorType::Group;
                self.route_to_coordinator(now_ms, from, correlation_id, key_type, &key, request)
            }
            Request::LastMirroredEpochLookup {
                requester,
                topic,
                partition,
            } => self.handle_last_mirrored_epoch_lookup(
                now_ms,
                from,
                correlation_id,
                requester,
                &topic,
                partition,
            ),
            Request::ReadMirrorStates {
                coordinator_partition,
                ..
            }
            | Request::WriteMirrorStates {
                coordinator_partition,
                ..
            }
            | Request::DeleteMirrorStates {
                coordinator_partition,
                ..
            } => {
                let partition = TopicPartition::new(MIRROR_STATE_TOPIC, coordinator_partition);
                self.route_to_shard(now_ms, from, correlation_id, &partition, request)
            }
            // Controller-bound requests sent to a broker are answered with NotController (admin
            // clients send them to the controller; brokers do not forward).
            Request::DeleteMirror { name } => {
                self.handle_delete_mirror(now_ms, from, correlation_id, name)
            }
            Request::DeleteRecords { partitions } => {
                self.handle_delete_records(from, correlation_id, partitions)
            }
            request @ (Request::DeleteTopics { .. } | Request::CreatePartitions { .. }) => {
                self.handle_topic_admin(now_ms, from, correlation_id, request)
            }
            Request::DescribeMirror { name } => {
                self.handle_describe_mirror(now_ms, from, correlation_id, name)
            }
            Request::ListGroups => {
                let groups = self.hosted_group_ids();
                let error = ErrorCode::None;
                let response = Response::ListGroups { error, groups };
                self.outbox.respond(from, correlation_id, response);
            }
            Request::DescribeConfigs { resources } => {
                let response = self.describe_configs(resources);
                self.outbox.respond(from, correlation_id, response);
            }
            Request::DescribeAcls => {
                let bindings = self.image.acls.iter().cloned().collect();
                let error = ErrorCode::None;
                let response = Response::DescribeAcls { error, bindings };
                self.outbox.respond(from, correlation_id, response);
            }
            Request::CreateMirror { .. }
            | Request::AlterMirrorTopics { .. }
            | Request::ListMirrors
            | Request::IncrementalAlterConfigs { .. }
            | Request::CreateAcls { .. }
            | Request::DeleteAcls { .. }
            | Request::BrokerRegistration { .. }
            | Request::BrokerHeartbeat { .. }
            | Request::FetchMetadata { .. }
            | Request::AlterPartition { .. }
            | Request::AllocateProducerIds { .. }
            | Request::BumpLeaderEpochs { .. }
            | Request::CreateTopics { .. } => {
                self.respond_not_controller(from, correlation_id, &request)
            }
        }
    }

    fn respond_not_coordinator(&mut self, from: NodeId, correlation_id: u64, request: &Request) {
        let error = ErrorCode::NotCoordinator;
        let response = match request {
            Request::AddPartitionsToTxn { partitions, .. } => Response::AddPartitionsToTxn {
                results: partitions.iter().map(|tp| (tp.clone(), error)).collect(),
            },
            Request::EndTxn { .. } => Response::EndTxn { error },
            Request::WriteTxnMarkers { markers } => Response::WriteTxnMarkers {
                results: markers
                    .iter()
                    .map(|marker| {
                        let partitions = marker
                            .partitions
                            .iter()
                            .map(|tp| (tp.clone(), ErrorCode::NotLeaderOrFollower))
                            .collect();
                        (marker.producer_id, partitions)
                    })
                    .collect(),
            },
            Request::ConsumerGroupHeartbeat {
                member_id,
                member_epoch,
                ..
            } => Response::ConsumerGroupHeartbeat {
                error,
                member_id: member_id.clone(),
                member_epoch: *member_epoch,
                heartbeat_interval_ms: 0,
                assignment: None,
            },
            Request::OffsetCommit { offsets, .. } => Response::OffsetCommit {
                results: offsets
                    .iter()
                    .map(|entry| (entry.topic_partition.clone(), error))
                    .collect(),
            },
            Request::OffsetFetch { .. } => Response::OffsetFetch {
                error,
                offsets: Vec::new(),
            },
            Request::DescribeGroups { .. } => Response::DescribeGroups {
                error,
                groups: Vec::new(),
            },
            Request::InitProducerId { .. } => Response::InitProducerId {
                error,
                producer_id: -1,
                producer_epoch: -1,
            },
            Request::ReadMirrorStates { .. } => Response::ReadMirrorStates {
                error,
                coordinator_epoch: -1,
                partitions: Vec::new(),
            },
            Request::WriteMirrorStates { .. } => Response::WriteMirrorStates {
                error,
                partitions: Vec::new(),
            },
            Request::DeleteMirrorStates { .. } => Response::DeleteMirrorStates { error },
            _ => return,
        };
        self.outbox.respond(from, correlation_id, response);
    }

    fn respond_not_controller(&mut self, from: NodeId, correlation_id: u64, request: &Request) {
        let response = match request {
            Request::CreateTopics { topics } => Response::CreateTopics {
                results: topics
                    .iter()
                    .map(|topic| (topic.name.clone(), ErrorCode::NotController, None))
                    .collect(),
            },
            Request::IncrementalAlterConfigs { .. } => Response::IncrementalAlterConfigs {
                error: ErrorCode::NotController,
            },
            Request::CreateAcls { .. } => Response::CreateAcls {
                error: ErrorCode::NotController,
            },
            Request::DeleteAcls { .. } => Response::DeleteAcls {
                error: ErrorCode::NotController,
            },
            Request::DescribeAcls => Response::DescribeAcls {
                error: ErrorCode::None,
                bindings: self.image.acls.iter().cloned().collect(),
            },
            Request::CreateMirror { .. } => Response::CreateMirror {
                error: ErrorCode::NotController,
            },
            Request::DeleteMirror { .. } => Response::DeleteMirror {
                error: ErrorCode::NotController,
            },
            Request::AlterMirrorTopics { .. } => Response::AlterMirrorTopics {
                error: ErrorCode::NotController,
                results: Vec::new(),
            },
            Request::ListMirrors => Response::ListMirrors {
                error: ErrorCode::NotController,
                mirrors: Vec::new(),
            },
            _ => return,
        };
        self.outbox.respond(from, correlation_id, response);
    }

    fn handle_response(
        &mut self,
        now_ms: i64,
        from: NodeId,
        correlation_id: u64,
        response: Response,
    ) {
        let Some(response) = self.route_coordinator_response(now_ms, correlation_id, response)
        else {
            return;
        };
        if self.mirror.owns(correlation_id) {
            self.handle_mirror_response(now_ms, correlation_id, Ok(response));
            return;
        }
        if self.mirror_syncs.owns(correlation_id) {
            self.handle_sync_response(now_ms, correlation_id, Ok(response));
            return;
        }
        if self.mirror_describes.owns(correlation_id) {
            self.handle_describe_response(now_ms, correlation_id, Ok(response));
            return;
        }
        if self.topic_admins.owns(correlation_id) {
            self.handle_topic_admin_response(now_ms, correlation_id, Ok(response));
            return;
        }
        match response {
            Response::BrokerRegistration {
                error,
                broker_epoch,
            } => {
                if self.registration.map(|p| p.correlation_id) != Some(correlation_id) {
                    return;
                }
                self.registration = None;
                if error.is_none() {
                    self.broker_epoch = Some(broker_epoch);
                    self.next_heartbeat_ms = now_ms;
                } else {
                    self.next_registration_ms = now_ms + self.config.controller_request_timeout_ms;
                }
            }
            Response::BrokerHeartbeat { error, .. } => {
                if self.heartbeat.map(|p| p.correlation_id) != Some(correlation_id) {
                    return;
                }
                self.heartbeat = None;
                if matches!(
                    error,
                    ErrorCode::StaleBrokerEpoch | ErrorCode::BrokerIdNotRegistered
                ) {
                    // The controller lost or replaced our registration: register again.
                    self.broker_epoch = None;
                    self.metadata_ready = false;
                    self.next_registration_ms = now_ms;
                }
            }
            Response::FetchMetadata {
                records,
                end_offset,
            } => {
                if self.metadata_fetch.map(|p| p.correlation_id) == Some(correlation_id) {
                    self.handle_metadata_records(now_ms, records, end_offset);
                }
            }
            Response::AlterPartition { error, partition } => {
                self.handle_alter_partition_response(now_ms, correlation_id, error, partition);
            }
            Response::AllocateProducerIds {
                error,
                first_producer_id,
                count,
            } => {
                if self.allocate_producer_ids.map(|p| p.correlation_id) != Some(correlation_id) {
                    return;
                }
                self.allocate_producer_ids = None;
                if error.is_none() && count > 0 {
                    self.producer_id_block = Some((first_producer_id, first_producer_id + count));
                }
                self.serve_producer_ids(now_ms);
            }
            Response::Fetch { partitions } => {
                if let NodeId::Broker(_, leader) = from {
                    self.handle_replica_fetch_response(now_ms, leader, correlation_id, partitions);
                }
            }
            // Brokers send no other requests (yet).
            Response::FindCoordinator { .. }
            | Response::AddPartitionsToTxn { .. }
            | Response::EndTxn { .. }
            | Response::WriteTxnMarkers { .. }
            | Response::ConsumerGroupHeartbeat { .. }
            | Response::OffsetCommit { .. }
            | Response::OffsetFetch { .. }
            | Response::DescribeGroups { .. }
            | Response::IncrementalAlterConfigs { .. }
            | Response::CreateAcls { .. }
            | Response::DeleteAcls { .. }
            | Response::DescribeAcls { .. }
            | Response::ListGroups { .. }
            | Response::DescribeMirror { .. }
            | Response::DeleteRecords { .. }
            | Response::DeleteTopics { .. }
            | Response::CreatePartitions { .. }
            | Response::DescribeConfigs { .. }
            | Response::BumpLeaderEpochs { .. }
            | Response::LastMirroredEpochLookup { .. }
            | Response::CreateMirror { .. }
            | Response::DeleteMirror { .. }
            | Response::AlterMirrorTopics { .. }
            | Response::ListMirrors { .. }
            | Response::ReadMirrorStates { .. }
            | Response::WriteMirrorStates { .. }
            | Response::DeleteMirrorStates { .. }
            | Response::CreateTopics { .. }
            | Response::Metadata { .. }
            | Response::Produce { .. }
            | Response::OffsetsForLeaderEpoch { .. }
            | Response::ListOffsets { .. }
            | Response::InitProducerId { .. } => {}
        }
    }

    fn expire_delayed_operations(&mut self, now_ms: i64) {
        if self
            .delayed_produces
            .iter()
            .any(|p| now_ms >= p.deadline_ms)
        {
            self.complete_delayed_produces(now_ms);
        }
        if self.delayed_fetches.iter().any(|f| now_ms >= f.deadline_ms) {
            self.try_complete_delayed_fetches(now_ms);
        }
    }
}

impl<S: BrokerStorage> Node for Broker<S> {
    fn node_id(&self) -> NodeId {
        self.node_id
    }

    fn handle_message(&mut self, now_ms: i64, envelope: crate::protocol::Envelope) {
        self.last_now_ms = now_ms;
        match envelope.message {
            Message::Request(_, ref request)
                if !self.serving_requests
                    && !self
                        .config
                        .broken
                        .contains(&BrokenSwitch::ServeBeforeRegistration) =>
            {
                self.events.push(BrokerEvent::RequestHeldBeforeListening {
                    from: envelope.from,
                    request: request.kind(),
                });
                self.held_requests.push(envelope);
            }
            Message::Request(correlation_id, request) => {
                self.handle_request(now_ms, envelope.from, correlation_id, request)
            }
            Message::Response(correlation_id, response) => {
                self.handle_response(now_ms, envelope.from, correlation_id, response)
            }
        }
        self.drive(now_ms);
    }

    fn handle_timeout(&mut self, now_ms: i64) {
        self.last_now_ms = now_ms;
        for envelope in std::mem::take(&mut self.loopback) {
            self.handle_message(now_ms, envelope);
        }
        self.expire_delayed_operations(now_ms);
        self.poll_coordinators(now_ms);
        if self
            .delayed_markers
            .iter()
            .any(|delayed| now_ms >= delayed.deadline_ms)
        {
            self.complete_delayed_markers(now_ms);
        }
        self.expire_alter_partitions(now_ms);
        self.periodic(now_ms);
        self.drive(now_ms);
    }

    fn poll_timeout(&self) -> Option<i64> {
        // Called after every input, so the deadlines are folded without collecting them.
        let timeout = self.config.controller_request_timeout_ms;
        let retry_at = |next_ms: i64, pending: Option<PendingRequest>| {
            next_ms.max(pending.map_or(i64::MIN, |pending| pending.sent_ms + timeout))
        };
        let session = if self.broker_epoch.is_none() {
            retry_at(self.next_registration_ms, self.registration)
        } else {
            retry_at(self.next_heartbeat_ms, self.heartbeat)
        };
        let fetches = self
            .fetch_sessions
            .values()
            .map(|session| match session.inflight {
                Some(pending) => pending.sent_ms + self.config.replica_fetch_timeout_ms,
                None => session.next_fetch_ms,
            });
        [
            self.next_isr_check_ms,
            self.next_high_watermark_checkpoint_ms,
            retry_at(self.next_metadata_fetch_ms, self.metadata_fetch),
            session,
        ]
        .into_iter()
        .chain(self.next_flush_ms)
        .chain(fetches)
        .chain(self.delayed_produces.iter().map(|p| p.deadline_ms))
        .chain(self.delayed_fetches.iter().map(|f| f.deadline_ms))
        .chain(
            self.alter_partitions
                .values()
                .map(|(_, sent)| sent + timeout),
        )
        .chain(
            self.allocate_producer_ids
                .map(|pending| pending.sent_ms + timeout),
        )
        .chain(self.coordinator_deadline())
        .chain(self.mirror.deadline())
        .chain(self.mirror_syncs.deadline())
        .chain(self.mirror_describes.deadline())
        .chain(self.topic_admins.deadline())
        .chain((!self.loopback.is_empty()).then_some(self.last_now_ms))
        .min()
    }

    fn take_outbox(&mut self) -> Vec<crate::protocol::Envelope> {
        let node_id = self.node_id;
        let outbox = self.outbox.take();
        if !outbox.iter().any(|envelope| envelope.to == node_id) {
            return outbox;
        }
        let (to_self, outbox): (Vec<_>, Vec<_>) = outbox
            .into_iter()
            .partition(|envelope| envelope.to == node_id);
        self.loopback.extend(to_self);
        outbox
    }
}

impl<S: BrokerStorage> Broker<S> {
    /// Sends whatever the session, metadata and fetch state call for now.
    fn drive(&mut self, now_ms: i64) {
        self.maybe_register(now_ms);
        self.maybe_heartbeat(now_ms);
        self.maybe_fetch_metadata(now_ms);
        self.maybe_send_replica_fetches(now_ms);
        self.poll_mirror(now_ms);
        self.poll_mirror_sync(now_ms);
        self.poll_mirror_describes(now_ms);
        self.poll_topic_admins(now_ms);
    }
}

fn log_config(config: &BrokerConfig) -> LogConfig {
    LogConfig {
        segment_bytes: config.segment_bytes,
        broken_lso_ignores_open_transactions: config
            .broken
            .contains(&BrokenSwitch::LsoIgnoresOpenTransactions),
        ..LogConfig::default()
    }
}

/// Kafka's current-leader-epoch fencing (kafka-storage.md §4.4).
fn check_leader_epoch(requested: i32, local: i32) -> Option<ErrorCode> {
    if requested < 0 {
        None
    } else if requested < local {
        Some(ErrorCode::FencedLeaderEpoch)
    } else if requested > local {
        Some(ErrorCode::UnknownLeaderEpoch)
    } else {
        None
    }
}

fn error_answer(topic_partition: &TopicPartition, error: ErrorCode) -> FetchPartitionResponse {
    FetchPartitionResponse {
        topic_partition: topic_partition.clone(),
        error,
        high_watermark: -1,
        last_stable_offset: -1,
        log_start_offset: -1,
        diverging_epoch: None,
        aborted_transactions: None,
        batches: Vec::new(),
    }
}

/// A successful read's answer.
fn data_answer(
    topic_partition: &TopicPartition,
    data: crate::log::FetchDataInfo,
) -> FetchPartitionResponse {
    FetchPartitionResponse {
        topic_partition: topic_partition.clone(),
        error: ErrorCode::None,
        high_watermark: data.high_watermark,
        last_stable_offset: data.last_stable_offset,
        log_start_offset: data.log_start_offset,
        diverging_epoch: None,
        aborted_transactions: data.aborted_transactions,
        batches: data.batches,
    }
}

/// Whether a fetch has something to answer now (data, an error or a divergence) rather than
/// waiting in purgatory for data.
fn fetch_answer_ready(answers: &[FetchPartitionResponse]) -> bool {
    answers.iter().any(|answer| {
        !answer.batches.is_empty() || !answer.error.is_none() || answer.diverging_epoch.is_some()
    })
}

fn offsets_answer<D: LogDisk>(
    topic_partition: &TopicPartition,
    log: &PartitionLog<D>,
    error: ErrorCode,
) -> FetchPartitionResponse {
    FetchPartitionResponse {
        topic_partition: topic_partition.clone(),
        error,
        high_watermark: log.high_watermark(),
        last_stable_offset: log.last_stable_offset(),
        log_start_offset: log.log_start_offset(),
        diverging_epoch: None,
        aborted_transactions: None,
        batches: Vec::new(),
    }
}

/// The leader's end offset for a fetcher's last fetched epoch (a follower's, or a downstream
/// cluster's mirror fetcher's), for the fetch's divergence check (kafka-storage.md §4.6).
///
/// Kafka's leader always finds the epoch: its own leader epoch enters the cache at the log end
/// when it takes over, and no follower can hold a batch of a later epoch. A KIP-1279 mirror
/// leader keeps no such entry (its cache holds the source's epochs, spec §4.2), and PREPARING
/// truncates the leader's own log, so a follower that missed the truncation (out of the ISR
/// then) can come back with a tail in a local epoch above every epoch left here, e.g. the
/// MIRROR_PID_RESET of an earlier STOPPING. Kafka's cache answers undefined above its latest
/// epoch, and the OFFSET_OUT_OF_RANGE that follows leaves the follower's log as it is once the
/// leader's has grown past it (§4.8): the follower would ask again for ever, or append the
/// source's older epochs onto that tail once the source reaches its epoch. The answer is the one
/// Kafka gives when the leader's epoch starts at its log end: the latest epoch here, ending at
/// the log end, so the follower cuts its tail back to the end of that epoch in its own log.
///
/// A chain's next hop meets the same: it mirrored this cluster's own writes (a local epoch),
/// and this cluster's re-add cut them; an undefined answer made it cut its whole log, records
/// this log still holds among them, and a stop before the refill lost them on that cluster
/// (generated seed 10300000000000916).
fn leader_end_offset_for_fetched_epoch<D: LogDisk>(
    log: &PartitionLog<D>,
    last_fetched_epoch: i32,
) -> EpochEndOffset {
    match log.latest_epoch() {
        Some(latest) if latest < last_fetched_epoch => EpochEndOffset {
            epoch: latest,
            end_offset: log.log_end_offset(),
        },
        _ => log.end_offset_for_epoch(last_fetched_epoch),
    }
}

/// Where a follower must truncate before appending `batches` (fetched at its log end), if
/// they would put an epoch below its latest one after it; `None` when they fit.
///
/// A leader's log never lowers its epochs, so when the first fetched batch has epoch `e`
/// below the follower's latest epoch, every batch the leader holds below this offset has an
/// epoch ≤ `e` and the follower's batches of later epochs are not the leader's. Kafka never
/// sees this (its epochs are the leader's terms); a KIP-1279 destination's log mixes the
/// source's epochs with its own (written while STOPPED), and a follower that missed a
/// PREPARING truncation keeps a local tail whose epoch the source may reach later, which the
/// fetch's divergence check then takes for the leader's. The tail is cut as for a diverging
/// epoch `(e, this offset)`; the next fetch checks what is left.
pub fn follower_truncation_for_batches<D: LogDisk>(
    log: &PartitionLog<D>,
    batches: &[RecordBatch],
) -> Option<i64> {
    let first = batches.first()?;
    let epoch = first.partition_leader_epoch();
    let latest = log.latest_epoch()?;
    if epoch < 0 || epoch >= latest {
        return None;
    }
    Some(follower_truncation_offset(
        log,
        EpochEndOffset {
            epoch,
            end_offset: first.base_offset(),
        },
    ))
}

/// Kafka's follower truncation decision for a diverging epoch `(Lε, Lo)` from the leader
/// (kafka-storage.md §4.5). When the follower lacks `Lε` it truncates to the end of its own
/// closest lower epoch; the next fetch carries that epoch and may diverge again (KIP-279).
pub fn follower_truncation_offset<D: LogDisk>(
    log: &PartitionLog<D>,
    leader: EpochEndOffset,
) -> i64 {
    let log_end = log.log_end_offset();
    if leader.end_offset < 0 {
        return log.high_watermark();
    }
    if leader.epoch < 0 {
        return leader.end_offset.min(log_end);
    }
    let local = log.end_offset_for_epoch(leader.epoch);
    if local == EpochEndOffset::UNDEFINED {
        leader.end_offset.min(log_end)
    } else if local.epoch != leader.epoch {
        local.end_offset.min(log_end)
    } else {
        local.end_offset.min(leader.end_offset).min(log_end)
    }
}
