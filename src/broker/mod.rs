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
//! - **Host of components.** The broker routes each request and answer to the component that
//!   owns it and merges their deadlines: the coordinator shards (`coordinators.rs`), and the
//!   KIP-1279 components of `crate::mirror` — the mirror manager (lent the broker as a
//!   `MirrorHost` per call), the periodic sync and the describer (lent a `BrokerContext`).
//! - Every state change a checker needs is also reported as a [`BrokerEvent`].
//!
//! Modelling limits: one replica fetcher session per leader (Kafka may use several threads),
//! single-partition produce requests, no partition reassignment or deletion, and the high
//! watermark advances even while the ISR is below `min.insync.replicas` (pre-KIP-966 behaviour).

mod config;
mod controller_session;
mod coordinators;
pub use crate::mirror::periodic_sync::SYNC_REQUEST_TIMEOUT_MS;
#[cfg(test)]
#[path = "mirroring_tests.rs"]
mod mirroring_tests;
mod storage;
#[cfg(test)]
mod tests;
mod topic_admin;

use std::collections::BTreeMap;

pub use crate::events::{BrokerEvent, TruncationReason};
use crate::mirror::TopicMirrorConfig;
pub use crate::replica::{
    follower_truncation_for_batches, follower_truncation_offset, FollowerRole, FollowerState,
    LeaderState, Partition, Role,
};
use crate::switches::BrokenSwitch;
pub use config::{BrokerConfig, BrokerConfigError};
pub use storage::{
    parse_partition_dir_name, partition_dir_name, BrokerStorage, MemoryDirDisk, MemoryStorage,
};

use crate::log::{AppendOrigin, EpochEndOffset, FetchIsolation, LogConfig, LogDisk, PartitionLog};
use crate::metadata::MIN_INSYNC_REPLICAS;
use crate::metadata::{MetadataImage, PartitionRecord};
use crate::mirror::coordinator::MIRROR_STATE_TOPIC;
use crate::mirror::describe::MirrorDescribes;
use crate::mirror::directory::MirrorDirectory;
use crate::mirror::gate::{mirror_state_of, refuses_client_write};
use crate::mirror::manager::{MirrorContext, MirrorHost, MirrorManager};
use crate::mirror::periodic_sync::{MirrorSyncs, SyncConfig};
use crate::mirror::MirrorState;
use crate::node::{Node, Outbox};
use crate::protocol::{
    Acks, BrokerId, ClusterIndex, CoordinatorType, EpochAnswer, EpochQuery, ErrorCode,
    FetchPartition, FetchPartitionResponse, ListOffsetsAnswer, ListOffsetsQuery, Message, NodeId,
    OffsetSpec, Request, Response, TopicPartition,
};
use crate::record::RecordBatch;
use crate::replica::report_leader_truncation;
use controller_session::{ControllerSession, SessionAnswer};

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

/// The [`BrokerContext`] a broker lends one of its components for one call. A macro rather
/// than a method so that the borrow of the broker's fields stays disjoint from the borrow of
/// the component (a field of the same broker).
macro_rules! context {
    ($broker:expr, $now_ms:expr) => {
        crate::component::BrokerContext {
            now_ms: $now_ms,
            node_id: $broker.node_id,
            broker_id: $broker.broker_id,
            controller: $broker.controller,
            image: &$broker.image,
            outbox: &mut $broker.outbox,
            events: &mut $broker.events,
        }
    };
}

/// A broker; see the module doc.
pub struct Broker<S: BrokerStorage> {
    node_id: NodeId,
    broker_id: BrokerId,
    config: BrokerConfig,
    storage: S,
    outbox: Outbox,
    controller: NodeId,
    /// Registration, heartbeats, the metadata log fetch and producer-id blocks.
    session: ControllerSession,
    image: MetadataImage,
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
    coordinators: BTreeMap<
        TopicPartition,
        Box<dyn crate::coordinator::runtime::HostedCoordinator<S::Disk> + Send>,
    >,
    delayed_markers: Vec<coordinators::DelayedMarkers>,
    next_isr_check_ms: i64,
    next_flush_ms: Option<i64>,
    next_high_watermark_checkpoint_ms: i64,
    events: Vec<BrokerEvent>,
    /// KIP-1279's MirrorMetadataManager and mirror fetcher; `None` only while it is lent
    /// the broker for one of its calls (see [`Broker::with_mirror_manager`]).
    mirror: Option<MirrorManager>,
    mirror_syncs: MirrorSyncs,
    mirror_describes: MirrorDescribes,
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
        let controller = NodeId::Controller(cluster);
        let session = ControllerSession::new(controller, broker_id, incarnation, &config, now_ms);
        let mirror = MirrorManager::new(config.mirror_design, config.broken.clone());
        let sync_config = SyncConfig {
            design: config.mirror_design,
            refresh_interval_ms: config.mirror_metadata_refresh_interval_ms,
            replication_factor: config.internal_topic_replication_factor,
            offsets_topic_partitions: config.offsets_topic_partitions,
        };
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
            outbox: Outbox::new(node_id),
            controller,
            session,
            image: MetadataImage::default(),
            serving_requests: false,
            held_requests: Vec::new(),
            partitions: BTreeMap::new(),
            unassigned_logs,
            fetch_sessions: BTreeMap::new(),
            delayed_produces: Vec::new(),
            delayed_fetches: Vec::new(),
            alter_partitions: BTreeMap::new(),
            coordinators: BTreeMap::new(),
            delayed_markers: Vec::new(),
            events: Vec::new(),
            mirror: Some(mirror),
            mirror_syncs: MirrorSyncs::new(sync_config),
            mirror_describes: MirrorDescribes::default(),
            topic_admins: topic_admin::TopicAdmins::default(),
            loopback: Vec::new(),
            last_now_ms: now_ms,
        })
    }

    /// Where this broker's image says each mirror's parts are.
    fn mirror_directory(&self) -> MirrorDirectory<'_> {
        MirrorDirectory::new(&self.image, self.node_id.cluster())
    }

    /// The mirror manager, between its calls.
    fn mirror_manager(&self) -> &MirrorManager {
        self.mirror
            .as_ref()
            .expect("the mirror manager is read between its own calls")
    }

    /// Runs `call` with the mirror manager and this broker as its [`MirrorHost`]. The manager
    /// is taken out for the call, so that it may hold the broker's parts and its own state at
    /// once; nothing the host does for it reaches back into the manager (a read of it then
    /// would find it gone and stop on the assertion in [`Broker::mirror_manager`]).
    fn with_mirror_manager<T>(
        &mut self,
        call: impl FnOnce(&mut MirrorManager, &mut Self) -> T,
    ) -> T {
        let mut manager = self
            .mirror
            .take()
            .expect("the mirror manager is not lent twice");
        let result = call(&mut manager, self);
        self.mirror = Some(manager);
        result
    }

    // ----- getters for checkers -----

    /// The partitions whose mirror fetcher runs, with the task's committed mirror state and
    /// the leader epoch it leads the partition in (`single-mirror-fetcher`).
    pub fn mirror_fetchers(&self) -> impl Iterator<Item = (&TopicPartition, MirrorState, i32)> {
        self.mirror_manager().mirror_fetchers()
    }

    /// The broker id.
    pub fn broker_id(&self) -> BrokerId {
        self.broker_id
    }

    /// The current registration epoch, once registered.
    pub fn broker_epoch(&self) -> Option<i64> {
        self.session.broker_epoch()
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
        self.session.metadata_ready()
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

    /// The session applied fetched metadata: once ready, bring replicas, coordinators and
    /// mirror components in line with the image, and open the listeners the first time.
    fn after_metadata(&mut self, now_ms: i64, applied: bool) {
        if applied && self.session.metadata_ready() {
            self.drop_deleted_topics();
            self.reconcile_partitions(now_ms);
            self.with_mirror_manager(|manager, broker| {
                manager.reconcile_mirror_tasks(broker, now_ms);
            });
            self.mirror_syncs.reconcile(&mut context!(self, now_ms));
        }
        if self.session.metadata_ready() && !self.serving_requests {
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
        let mirror_state =
            mirror_state_of(&self.image, &topic_partition.topic, partition.mirror_state);
        if let Some(state) = refuses_client_write(mirror_state, &self.config.broken) {
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
    ///   truncates fully (`mirror::manager`);
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
        let Some(broker_epoch) = self.session.broker_epoch() else {
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
        if !self.session.metadata_ready() {
            return;
        }
        let Some(broker_epoch) = self.session.broker_epoch() else {
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
        if let Some(partition) = self.partitions.get_mut(topic_partition) {
            report_leader_truncation(partition, &mut self.events, topic_partition, from, reason);
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
        self.session.periodic(now_ms, &mut self.outbox);
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
                self.session
                    .handle_init_producer_id(now_ms, from, correlation_id, &mut self.outbox)
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
            } => self.with_mirror_manager(|manager, broker| {
                manager.handle_last_mirrored_epoch_lookup(
                    broker,
                    now_ms,
                    (from, correlation_id),
                    (requester, &topic, partition),
                );
            }),
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
                self.with_mirror_manager(|manager, broker| {
                    manager.handle_delete_mirror(broker, now_ms, from, correlation_id, name);
                });
            }
            Request::DeleteRecords { partitions } => {
                self.handle_delete_records(from, correlation_id, partitions)
            }
            request @ (Request::DeleteTopics { .. } | Request::CreatePartitions { .. }) => {
                self.handle_topic_admin(now_ms, from, correlation_id, request)
            }
            Request::DescribeMirror { name } => self.mirror_describes.handle_describe_mirror(
                &mut context!(self, now_ms),
                from,
                correlation_id,
                name,
            ),
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
        if self.mirror_manager().owns(correlation_id) {
            self.with_mirror_manager(|manager, broker| {
                manager.handle_mirror_response(broker, now_ms, correlation_id, Ok(response));
            });
            return;
        }
        if self.mirror_syncs.owns(correlation_id) {
            let context = &mut context!(self, now_ms);
            self.mirror_syncs
                .handle_response(context, correlation_id, Ok(response));
            return;
        }
        if self.mirror_describes.owns(correlation_id) {
            let context = &mut context!(self, now_ms);
            self.mirror_describes
                .handle_response(context, correlation_id, Ok(response));
            return;
        }
        if self.topic_admins.owns(correlation_id) {
            self.handle_topic_admin_response(now_ms, correlation_id, Ok(response));
            return;
        }
        let (image, outbox) = (&mut self.image, &mut self.outbox);
        let response =
            match self
                .session
                .handle_response(now_ms, correlation_id, response, image, outbox)
            {
                SessionAnswer::NotMine(response) => response,
                SessionAnswer::Handled => return,
                SessionAnswer::Metadata { applied } => {
                    self.after_metadata(now_ms, applied);
                    return;
                }
            };
        match response {
            Response::AlterPartition { error, partition } => {
                self.handle_alter_partition_response(now_ms, correlation_id, error, partition);
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
            | Response::InitProducerId { .. }
            // The session's, taken above.
            | Response::BrokerRegistration { .. }
            | Response::BrokerHeartbeat { .. }
            | Response::FetchMetadata { .. }
            | Response::AllocateProducerIds { .. } => {}
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
            self.session.deadline(),
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
        .chain(self.coordinator_deadline())
        .chain(self.mirror_manager().deadline())
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
        self.session.poll(now_ms, &self.image, &mut self.outbox);
        self.maybe_send_replica_fetches(now_ms);
        self.with_mirror_manager(|manager, broker| manager.poll_mirror(broker, now_ms));
        self.mirror_syncs.poll(&mut context!(self, now_ms));
        self.mirror_describes.poll(&mut context!(self, now_ms));
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

impl<S: BrokerStorage> MirrorHost for Broker<S> {
    type Disk = S::Disk;

    fn lend(&mut self) -> MirrorContext<'_, S::Disk> {
        MirrorContext {
            partitions: &mut self.partitions,
            outbox: &mut self.outbox,
            events: &mut self.events,
        }
    }

    fn partitions(&self) -> &BTreeMap<TopicPartition, Partition<S::Disk>> {
        &self.partitions
    }

    fn image(&self) -> &MetadataImage {
        &self.image
    }

    fn node_id(&self) -> NodeId {
        self.node_id
    }

    fn broker_id(&self) -> BrokerId {
        self.broker_id
    }

    fn broker_epoch(&self) -> Option<i64> {
        self.session.broker_epoch()
    }

    fn controller(&self) -> NodeId {
        self.controller
    }

    fn maybe_increment_high_watermark(&mut self, now_ms: i64, topic_partition: &TopicPartition) {
        Broker::maybe_increment_high_watermark(self, now_ms, topic_partition);
    }
}
