//! The broker: one sans-IO state machine implementing [`Node`] that hosts the components of a
//! Kafka broker — the replica manager and replica fetcher (`crate::replica`), the controller
//! session, the coordinator shards, topic administration and KIP-1279's components
//! (`crate::mirror`) — routes every request and answer to its owner and merges their deadlines.
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
//! - **Leader** (the replica manager, `crate::replica::ReplicaManager`). Client produce (acks=1
//!   and acks=all with `min.insync.replicas`), follower and consumer fetches (with the
//!   diverging-epoch check and a bounded wait when there is no data), OffsetsForLeaderEpoch,
//!   ListOffsets. It tracks followers, moves the high watermark over the maximal ISR, proposes
//!   ISR changes with AlterPartition and completes acks=all produces when the high watermark
//!   passes them; the broker carries a moved high watermark on to the other components
//!   (`replicas.rs`).
//! - **Follower** (the replica fetcher). One fetch session per leader broker. A diverging epoch in the answer truncates
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

mod authorization;
mod config;
mod controller_session;
mod coordinators;
mod replicas;
mod routing;
mod txn_verification;
pub use crate::mirror::periodic_sync::SYNC_REQUEST_TIMEOUT_MS;
#[cfg(test)]
#[path = "mirroring_tests.rs"]
mod mirroring_tests;
#[cfg(test)]
mod tests;

use crate::common::LeaderEpoch;
use std::collections::BTreeMap;

pub use crate::events::{BrokerEvent, TruncationReason};
pub use crate::replica::storage::{
    parse_partition_dir_name, partition_dir_name, BrokerStorage, MemoryDirDisk, MemoryStorage,
};
pub use crate::replica::{
    follower_truncation_for_batches, follower_truncation_offset, FollowerRole, FollowerState,
    LeaderState, Partition, Role,
};
use crate::switches::BrokenSwitch;
pub use config::{BrokerConfig, BrokerConfigError};

use crate::coordinator::host::{CoordinatorHost, InternalTopics};
use crate::log::{FetchIsolation, LogConfig};
use crate::metadata::{MetadataImage, PartitionRecord};
use crate::mirror::coordinator::MIRROR_STATE_TOPIC;
use crate::mirror::describe::MirrorDescribes;
use crate::mirror::manager::{MirrorContext, MirrorHost, MirrorManager, StopStep};
use crate::mirror::periodic_sync::{MirrorSyncs, SyncConfig};
use crate::mirror::recover::MirrorRecoveries;
use crate::mirror::topic_admin::TopicAdmins;
use crate::mirror::MirrorState;
use crate::node::{Node, Outbox};
use crate::protocol::{
    BrokerId, ClusterIndex, CoordinatorType, ErrorCode, FetchPartition, FetchPartitionResponse,
    Message, NodeId, Request, Response, TopicPartition,
};
use crate::replica::{
    fetch_answer_ready, DelayedFetch, FetcherConfig, FetcherContext, ProduceOutcome,
    ProduceRequest, ReplicaChange, ReplicaConfig, ReplicaFetcher, ReplicaManager,
};
use controller_session::{ControllerSession, SessionAnswer};

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
pub(crate) use context;

/// The [`crate::replica::ReplicaContext`] a broker lends its replica manager for one call (a
/// macro for the same reason as [`context!`]).
macro_rules! replica_context {
    ($broker:expr, $now_ms:expr) => {
        crate::replica::ReplicaContext {
            now_ms: $now_ms,
            broker_id: $broker.broker_id,
            controller: $broker.controller,
            broker_epoch: $broker.session.broker_epoch(),
            image: &$broker.image,
            outbox: &mut $broker.outbox,
            events: &mut $broker.events,
        }
    };
}
pub(crate) use replica_context;

/// A broker; see the module doc.
pub struct Broker<S: BrokerStorage> {
    node_id: NodeId,
    broker_id: BrokerId,
    config: BrokerConfig,
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
    /// The replica manager: the data directories, every replica, produces and fetches in
    /// purgatory, the ISR.
    replicas: ReplicaManager<S>,
    /// The replica fetcher: one fetch session per leader this broker follows partitions on.
    fetcher: ReplicaFetcher,
    /// The coordinator shards this broker hosts.
    coordinators: CoordinatorHost<S::Disk>,
    events: Vec<BrokerEvent>,
    /// KIP-1279's MirrorMetadataManager and mirror fetcher; `None` only while it is lent
    /// the broker for one of its calls (see [`Broker::with_mirror_manager`]).
    mirror: Option<MirrorManager>,
    mirror_syncs: MirrorSyncs,
    mirror_describes: MirrorDescribes,
    mirror_recoveries: MirrorRecoveries,
    topic_admins: TopicAdmins,
    /// KIP-890 part 1: produces waiting for their transaction's verification.
    txn_verifications: txn_verification::TxnVerifications,
    /// The image's topics (name → id) at the last metadata application, to tell the
    /// coordinators which were deleted since.
    topic_ids_seen: std::collections::BTreeMap<String, crate::protocol::TopicId>,
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
        storage: S,
        incarnation: u64,
        now_ms: i64,
    ) -> Result<Self, crate::log::LogError> {
        let node_id = NodeId::Broker(cluster, broker_id);
        let replicas = ReplicaManager::new(replica_config(&config), storage, now_ms)?;
        let controller = NodeId::Controller(cluster);
        let session = ControllerSession::new(controller, broker_id, incarnation, &config, now_ms);
        let fetcher = ReplicaFetcher::new(FetcherConfig {
            request_timeout_ms: config.replica_fetch_timeout_ms,
            wait_max_ms: config.replica_fetch_wait_max_ms,
            max_bytes: config.replica_fetch_max_bytes,
            backoff_ms: config.replica_fetch_backoff_ms,
            truncation: config.mirror_design.follower_truncation(),
            sends_current_leader_epoch: config.mirror_design.fences_by_leader_epoch(),
            skip_divergence_truncation: config
                .broken
                .contains(&BrokenSwitch::SkipDivergenceTruncation),
            ignores_pid_reset: config
                .broken
                .contains(&BrokenSwitch::FollowerIgnoresPidReset),
        });
        let mirror = MirrorManager::new(config.mirror_design, config.broken.clone());
        let coordinators = CoordinatorHost::new(InternalTopics {
            offsets_topic_partitions: config.offsets_topic_partitions,
            transaction_state_partitions: config.transaction_state_partitions,
            replication_factor: config.internal_topic_replication_factor,
        });
        let topic_admins = TopicAdmins::new(
            config
                .broken
                .contains(&BrokenSwitch::MirrorTopicAdminUnchecked),
            !config.mirror_design.checks_add_against_stored_state(),
        );
        let sync_config = SyncConfig {
            design: config.mirror_design,
            refresh_interval_ms: config.mirror_metadata_refresh_interval_ms,
            replication_factor: config.internal_topic_replication_factor,
            offsets_topic_partitions: config.offsets_topic_partitions,
            ignores_source_changes: config
                .broken
                .contains(&BrokenSwitch::MirrorSyncIgnoresSourceChanges),
            readopts_removed: config
                .broken
                .contains(&BrokenSwitch::MirrorSyncReadoptsRemoved),
        };
        Ok(Self {
            node_id,
            broker_id,
            config,
            outbox: Outbox::new(node_id),
            controller,
            session,
            image: MetadataImage::default(),
            serving_requests: false,
            held_requests: Vec::new(),
            replicas,
            fetcher,
            coordinators,
            events: Vec::new(),
            mirror: Some(mirror),
            mirror_syncs: MirrorSyncs::new(sync_config),
            mirror_describes: MirrorDescribes::default(),
            mirror_recoveries: MirrorRecoveries::default(),
            txn_verifications: Default::default(),
            topic_admins,
            topic_ids_seen: Default::default(),
            loopback: Vec::new(),
            last_now_ms: now_ms,
        })
    }

    /// Runs `call` with the replica fetcher and the parts of this broker it may use.
    fn with_fetcher<T>(
        &mut self,
        now_ms: i64,
        call: impl FnOnce(&mut ReplicaFetcher, &mut FetcherContext<'_, S::Disk>) -> T,
    ) -> T {
        let mut context = FetcherContext {
            now_ms,
            node_id: self.node_id,
            broker_id: self.broker_id,
            partitions: self.replicas.partitions_mut(),
            outbox: &mut self.outbox,
            events: &mut self.events,
        };
        call(&mut self.fetcher, &mut context)
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
    pub fn mirror_fetchers(
        &self,
    ) -> impl Iterator<Item = (&TopicPartition, MirrorState, LeaderEpoch)> {
        self.mirror_manager().mirror_fetchers()
    }

    /// The steps KIP-1279's STOPPING took on `topic_partition` while this broker leads it (see
    /// `mirror::manager::StopStep`).
    pub fn mirror_stop_journal(&self, topic_partition: &TopicPartition) -> &[StopStep] {
        self.mirror_manager().stop_journal(topic_partition)
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
        self.replicas.partitions()
    }

    /// The hosted partitions, to change a log behind the protocol's back (a test standing in
    /// for what the model does not do, such as the prototype's simulated unclean election).
    #[cfg(test)]
    pub(crate) fn partitions_mut_for_test(
        &mut self,
    ) -> &mut BTreeMap<TopicPartition, Partition<S::Disk>> {
        self.replicas.partitions_mut()
    }

    /// The coordinator shards this broker hosts, by internal partition (read-only, for
    /// checkers; downcast to the shard host type).
    pub fn hosted_coordinators(
        &self,
    ) -> impl Iterator<Item = (&TopicPartition, &dyn std::any::Any)> {
        self.coordinators
            .shards()
            .map(|(partition, host)| (partition, host.as_any()))
    }

    /// The storage (for the simulator's disk faults).
    pub fn storage(&self) -> &S {
        self.replicas.storage()
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
        self.replicas.flush_all();
    }

    // ----- controller session -----

    // ----- produce -----

    // ----- fetch (leader side) -----

    // ----- ISR -----

    // ----- follower fetching -----

    // ----- other requests -----

    // ----- periodic work -----

    fn periodic(&mut self, now_ms: i64) {
        self.replicas.periodic(&mut replica_context!(self, now_ms));
        self.session.periodic(now_ms, &mut self.outbox);
    }

    fn expire_delayed_operations(&mut self, now_ms: i64) {
        if self.replicas.produce_deadline_passed(now_ms) {
            self.complete_delayed_produces(now_ms);
        }
        if self.replicas.fetch_deadline_passed(now_ms) {
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
            Message::Request(correlation_id, request) => self.handle_request(
                now_ms,
                (envelope.from, envelope.principal.as_deref()),
                correlation_id,
                request,
            ),
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
        if self.replicas.marker_deadline_passed(now_ms) {
            self.complete_delayed_markers(now_ms);
        }
        self.replicas
            .expire_alter_partitions(&mut replica_context!(self, now_ms));
        self.periodic(now_ms);
        self.drive(now_ms);
    }

    fn poll_timeout(&self) -> Option<i64> {
        // Called after every input, so the deadlines are folded without collecting them.
        std::iter::once(self.session.deadline())
            .chain(self.replicas.deadline())
            .chain(self.fetcher.deadlines())
            .chain(self.coordinators.deadline())
            .chain(self.mirror_manager().deadline())
            .chain(self.mirror_syncs.deadline())
            .chain(self.mirror_describes.deadline())
            .chain(self.mirror_recoveries.deadline())
            .chain(self.topic_admins.deadline())
            .chain(self.txn_verifications.deadline())
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
        if let (true, Some(broker_epoch)) =
            (self.session.metadata_ready(), self.session.broker_epoch())
        {
            self.with_fetcher(now_ms, |fetcher, context| {
                fetcher.poll(context, broker_epoch)
            });
        }
        self.with_mirror_manager(|manager, broker| manager.poll_mirror(broker, now_ms));
        self.mirror_syncs.poll(&mut context!(self, now_ms));
        self.mirror_describes.poll(&mut context!(self, now_ms));
        self.mirror_recoveries.poll(&mut context!(self, now_ms));
        self.topic_admins.poll(&mut context!(self, now_ms));
        self.expire_txn_verifications(now_ms);
    }
}

/// The replica manager's settings in `config`.
fn replica_config(config: &BrokerConfig) -> ReplicaConfig {
    ReplicaConfig {
        replica_lag_time_max_ms: config.replica_lag_time_max_ms,
        default_min_insync_replicas: config.default_min_insync_replicas,
        log_flush_interval_ms: config.log_flush_interval_ms,
        high_watermark_checkpoint_interval_ms: config.high_watermark_checkpoint_interval_ms,
        controller_request_timeout_ms: config.controller_request_timeout_ms,
        log: LogConfig {
            segment_bytes: config.segment_bytes,
            broken_lso_ignores_open_transactions: config
                .broken
                .contains(&BrokenSwitch::LsoIgnoresOpenTransactions),
            ..LogConfig::default()
        },
        follower_truncation: config.mirror_design.follower_truncation(),
        high_watermark_waits_for_min_isr: config.mirror_design.eligible_leader_replicas(),
        isr_join_waits_for_epoch_start: config.mirror_design.isr_join_waits_for_epoch_start(),
        broken: config.broken.clone(),
    }
}

impl<S: BrokerStorage> MirrorHost for Broker<S> {
    type Disk = S::Disk;

    fn lend(&mut self) -> MirrorContext<'_, S::Disk> {
        MirrorContext {
            partitions: self.replicas.partitions_mut(),
            outbox: &mut self.outbox,
            events: &mut self.events,
        }
    }

    fn partitions(&self) -> &BTreeMap<TopicPartition, Partition<S::Disk>> {
        self.replicas.partitions()
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
