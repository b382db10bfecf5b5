//! The controller of one cluster: KRaft's `QuorumController` reduced to a single active
//! controller, as a sans-IO state machine.
//!
//! **Limit: one controller per cluster.** KRaft runs a Raft quorum of controllers and commits a
//! record once a majority has it. Here a cluster has exactly one controller
//! (`NodeId::Controller(cluster)`), and a record is committed when that controller has appended
//! it to its metadata log **and flushed** the file: the single fsync plays the role of the quorum
//! commit. There is no controller failover, only restarts of the same controller from its disk.
//!
//! # Contract
//!
//! Inputs, through [`crate::node::Node`]:
//! - `handle_message` with a request from a broker or client (table below). Responses are
//!   ignored (the controller sends no requests).
//! - `handle_timeout`: fences every unfenced broker whose session deadline has passed.
//!
//! Outputs: one response per request it serves, queued in order (`take_outbox`), and
//! `poll_timeout` = the earliest session deadline of an unfenced broker or held fetch.
//!
//! Every request is handled to completion in one call: the controller validates it against its
//! [`MetadataImage`], builds the records (applying each to the image as it goes, so later
//! records of the same batch see earlier ones), appends the batch to the metadata log with one
//! write, flushes, and only then answers. Records are therefore never visible — not in an answer,
//! not in `FetchMetadata` — before they are durable.
//!
//! | request | records written | answer |
//! |---|---|---|
//! | `BrokerRegistration` | a new incarnation: `FenceBroker` and partition changes if the previous registration was still unfenced, then `RegisterBroker` (epoch = its offset; the broker starts fenced). The current incarnation again: nothing (retry). An older incarnation: nothing, `DuplicateBrokerRegistration`. | the epoch |
//! | `BrokerHeartbeat` | refreshes the session; a fenced broker whose `metadata_offset` passed its `RegisterBroker` record is unfenced (`UnfenceBroker`) and elected where eligible | `is_fenced` |
//! | `FetchMetadata` | nothing; durable records from `from_offset` on, held up to `max_wait_ms` while there are none (see below) | records, end offset |
//! | `AlterPartition` | after validation, one `Partition` record with the new ISR and `partition_epoch + 1` | the new state |
//! | `AllocateProducerIds` | `ProducerIds` moving `next_producer_id` up by one block; the first block starts at 0 | first id, count |
//! | `CreateTopics` | per valid topic: `Topic`, its `Config`s, one `Partition` per partition | per-topic result |
//! | `Metadata` | nothing; answered from the image (live brokers, topics) | topic metadata |
//!
//! A `FetchMetadata` with nothing to return is a long poll, as KRaft's Fetch of the metadata
//! log is: the controller holds it (one per broker: a newer fetch from the same broker
//! replaces the held one) until a record is committed past `from_offset` or `max_wait_ms`
//! passes, then answers it as if it had just arrived. Held fetches are volatile: a restarted
//! controller has none, and the broker re-sends after its request timeout.
//!
//! Data-plane requests (`Produce`, `Fetch`, `OffsetsForLeaderEpoch`, `ListOffsets`,
//! `InitProducerId`) are not served by a controller and are dropped without an answer.
//!
//! # Elections
//!
//! Every change of a partition's leader and ISR goes through one builder (`partition_change`,
//! Kafka's `PartitionChangeBuilder`), which also keeps KIP-966's eligible leader replicas
//! (ELR) and last known leader when [`ControllerConfig::eligible_leader_replicas`] is on (the
//! default; `pre-kip-966` turns it off). When a broker is fenced (session timeout, or
//! re-registration of a new incarnation while unfenced), every partition it is in changes in
//! the same batch as its `FenceBroker`: it leaves the ISR (without ELR, unless it is the last
//! member: then the ISR is kept, so that only that replica can become leader cleanly later);
//! if it led, the new leader is the first replica, in `replicas` order, that is in the new
//! ISR and unfenced, or with an empty ISR one of the ELR; without one the partition is
//! leaderless, unless the topic config `unclean.leader.election.enable` is `"true"` (or, with
//! ELR, the partition's last known leader is back): then that replica leads with ISR =
//! `[it]`. A new incarnation's registration is an unclean shutdown (no controlled shutdown
//! writes Kafka's clean-shutdown file here): with ELR it leaves every ISR and ELR it is in.
//! When a broker is unfenced, every leaderless partition it replicates gets a leader by the
//! same rule. A change of `min.insync.replicas` clears the ELR of the partitions it covers.
//! Every change bumps `partition_epoch`; every leader change (to or from none included) bumps
//! `leader_epoch`.
//!
//! Invariants asserted on every record written: leader ∈ ISR, ISR ⊆ replicas (no duplicates;
//! empty only without a leader), ELR ⊆ replicas and disjoint from the ISR, a leader is an
//! unfenced broker, epochs never decrease, offsets are consecutive.
//! Operating problems (bad requests, stale epochs) are answered with error codes; a failing disk
//! makes the controller stop serving ([`Controller::fatal_error`]), like Kafka's controller
//! process exiting on a metadata-log fault; it is restarted by building a new one on the disk.
//!
//! # Recovery
//!
//! [`Controller::new`] reads the metadata log (format in [`metadata_log`]), stops at the first
//! torn, corrupt or inconsistent frame and truncates the file there, and rebuilds the image by
//! applying the records. Broker sessions are volatile: after a restart every registered broker
//! gets a fresh deadline of `now + broker_session_timeout_ms`.
//!
//! # Not modelled
//!
//! Raft quorum and controller failover, snapshots (the log is kept whole, in memory too),
//! controlled shutdown (so no clean shutdown either), KIP-966's unclean recovery (the
//! GetReplicaLogInfo exchange Kafka never shipped), preferred-leader election,
//! reassignment, topic deletion, racks. Kafka refuses a new incarnation while the old session is
//! alive (`DUPLICATE_BROKER_REGISTRATION`); this controller fences the old one at once instead.
//! Determinism: `BTreeMap`/`Vec` only, no clock (time comes in as `now_ms`), no randomness.

mod config;
pub mod metadata_log;
pub mod mirrors;
mod placement;
#[cfg(test)]
mod tests;
mod topic_admin;

mod partition_change;
mod requests;

use std::collections::BTreeMap;

pub use config::{ControllerConfig, ControllerError};
pub use metadata_log::{
    decode_frame, encode_frame, FrameError, MetadataLog, MetadataLogRecovery, METADATA_LOG_FILE,
};
pub use placement::{
    assign_replicas, derive_topic_id, is_valid_topic_name, topic_collision_key, topic_name_problem,
    TOPIC_NAME_LENGTH_MAX,
};

use crate::log::LogDisk;
use crate::metadata::{
    AclBinding, ConfigResource, MetadataImage, MetadataRecord, PartitionRecord,
    MIN_INSYNC_REPLICAS, UNCLEAN_LEADER_ELECTION_ENABLE,
};
use crate::node::{Node, Outbox};
use crate::protocol::{
    BrokerId, ClusterIndex, ClusterRequest, ClusterResponse, ControllerRequest, Envelope,
    ErrorCode, Message, MirrorRequest, NewTopic, NodeId, Offset, Request, Response, TopicId,
};
use partition_change::{build_partition_change, ChangeRules};

/// Kafka's `UNKNOWN_SERVER_ERROR` (−1), for the exhausted producer-id space.
const UNKNOWN_SERVER_ERROR: ErrorCode = ErrorCode::Other(-1);

/// Attempts at deriving a free topic id before giving up (a collision needs a 128-bit hash
/// clash, so one attempt practically always suffices).
const TOPIC_ID_ATTEMPTS_MAX: u32 = 64;

/// The single active controller of a cluster; see the module doc.
#[derive(Debug)]
pub struct Controller<D: LogDisk> {
    node_id: NodeId,
    cluster: ClusterIndex,
    config: ControllerConfig,
    log: MetadataLog<D>,
    /// The durable records applied, plus `staged` while a request is being handled.
    image: MetadataImage,
    /// Records of the batch being built: applied to `image`, not yet in `log`.
    staged: Vec<MetadataRecord>,
    /// Session deadline of every registered broker (controller clock, volatile).
    session_deadlines_ms: BTreeMap<BrokerId, i64>,
    /// FetchMetadata requests held until a record is committed past their offset (volatile).
    held_fetches: Vec<HeldFetch>,
    outbox: Outbox,
    recovery: MetadataLogRecovery,
    fatal_error: Option<ControllerError>,
}

impl<D: LogDisk> Controller<D> {
    /// Recovers the controller `node_id` (which must be `NodeId::Controller(_)`) from `disk`:
    /// reads the metadata log, truncates a torn or corrupt tail, rebuilds the image and gives
    /// every registered broker a fresh session deadline of `now_ms + broker_session_timeout_ms`.
    pub fn new(
        node_id: NodeId,
        config: ControllerConfig,
        disk: D,
        now_ms: i64,
    ) -> Result<Self, ControllerError> {
        let NodeId::Controller(cluster) = node_id else {
            panic!("a controller needs a controller node id, not {node_id}");
        };
        config.validate()?;
        let mut image = MetadataImage::default();
        let (log, recovery) = MetadataLog::open(disk, |first_offset, batch| {
            for (index, record) in batch.iter().enumerate() {
                check_record(&image, first_offset + index as i64, record)?;
                image.apply(first_offset + index as i64, record);
            }
            check_batch(&image, batch)
        })?;
        if image.next_offset != log.end_offset() {
            // A refused batch was (partly) applied before it was refused: rebuild from the
            // records kept.
            image = replay(log.records());
        }
        assert_eq!(image.next_offset, log.end_offset());
        assert_eq!(recovery.records, log.end_offset());
        let session_deadline_ms = now_ms + config.broker_session_timeout_ms;
        let session_deadlines_ms = image
            .brokers
            .keys()
            .map(|broker_id| (*broker_id, session_deadline_ms))
            .collect();
        let controller = Self {
            node_id,
            cluster,
            config,
            log,
            image,
            staged: Vec::new(),
            session_deadlines_ms,
            held_fetches: Vec::new(),
            outbox: Outbox::new(node_id),
            recovery,
            fatal_error: None,
        };
        controller.assert_image_invariants();
        Ok(controller)
    }

    /// The cluster this controller runs.
    pub fn cluster(&self) -> ClusterIndex {
        self.cluster
    }

    /// The configuration.
    pub fn config(&self) -> &ControllerConfig {
        &self.config
    }

    /// The image built from every durable record.
    pub fn image(&self) -> &MetadataImage {
        &self.image
    }

    /// Every durable record of the metadata log; a record's offset is its index.
    pub fn records(&self) -> &[MetadataRecord] {
        self.log.records()
    }

    /// Offset of the next record the controller will write.
    pub fn log_end_offset(&self) -> i64 {
        self.log.end_offset()
    }

    /// What recovery found when this controller was built.
    pub fn recovery(&self) -> &MetadataLogRecovery {
        &self.recovery
    }

    /// The disk error that stopped this controller, if any. A stopped controller drops every
    /// message and wants no timeout; build a new one from the disk to restart it.
    pub fn fatal_error(&self) -> Option<&ControllerError> {
        self.fatal_error.as_ref()
    }

    /// The session deadline of a registered broker, in controller-clock milliseconds.
    pub fn session_deadline_ms(&self, broker_id: BrokerId) -> Option<i64> {
        self.session_deadlines_ms.get(&broker_id).copied()
    }

    /// The disk.
    pub fn disk(&self) -> &D {
        self.log.disk()
    }

    /// Gives the disk back (to crash it, or to build the restarted controller on it).
    pub fn into_disk(self) -> D {
        self.log.into_disk()
    }

    // ---- Batches -------------------------------------------------------------------------

    /// Adds `record` to the batch being built and applies it to the image.
    fn stage(&mut self, record: MetadataRecord) {
        let offset = self.image.next_offset;
        if let Err(reason) = check_record(&self.image, offset, &record) {
            panic!("controller built an invalid record at offset {offset}: {reason}: {record:?}");
        }
        if let MetadataRecord::Partition(partition) = &record {
            if let Some(leader) = partition.leader {
                assert!(
                    self.image.is_broker_alive(leader),
                    "controller elected fenced broker {leader} for {}-{}",
                    partition.topic_id,
                    partition.partition
                );
            }
        }
        self.image.apply(offset, &record);
        self.staged.push(record);
        assert_eq!(
            self.log.end_offset() + self.staged.len() as i64,
            self.image.next_offset
        );
    }

    /// Makes the staged batch durable (one append, one flush). On a disk error the image goes
    /// back to the durable records and the controller stops.
    fn commit(&mut self) -> Result<(), ControllerError> {
        if self.staged.is_empty() {
            return Ok(());
        }
        let staged = std::mem::take(&mut self.staged);
        if let Err(reason) = check_batch(&self.image, &staged) {
            panic!("controller built an inconsistent batch: {reason}: {staged:?}");
        }
        match self.log.append(&staged) {
            Ok(()) => {
                assert_eq!(self.log.end_offset(), self.image.next_offset);
                self.assert_image_invariants();
                Ok(())
            }
            Err(error) => {
                self.image = replay(self.log.records());
                let error = ControllerError::Disk(error);
                self.fatal_error = Some(error.clone());
                Err(error)
            }
        }
    }

    /// Whole-image invariants that hold between requests.
    fn assert_image_invariants(&self) {
        assert!(self.staged.is_empty(), "a batch was left uncommitted");
        for (topic_partition, partition) in self.image.all_partitions() {
            if let Some(leader) = partition.leader {
                assert!(
                    self.image.is_broker_alive(leader),
                    "{topic_partition} is led by fenced or unknown broker {leader}"
                );
            }
            if let Err(reason) = check_partition_shape(partition) {
                panic!("{topic_partition}: {reason}");
            }
        }
        assert!(self.image.next_producer_id >= 0);
    }

    // ---- Elections -----------------------------------------------------------------------

    fn unclean_election_enabled(&self, topic: &str) -> bool {
        self.image
            .topic_config(topic, UNCLEAN_LEADER_ELECTION_ENABLE, "false")
            == "true"
    }

    /// The rules of a change of `partition` of `topic` (see `partition_change`), with
    /// `acceptable` the replicas that may lead.
    fn change_rules<'a>(
        &self,
        topic: &str,
        partition: &PartitionRecord,
        unclean_shutdown: Option<BrokerId>,
        acceptable: &'a dyn Fn(BrokerId) -> bool,
    ) -> ChangeRules<'a> {
        let min_insync_replicas = self
            .image
            .topic_config(topic, MIN_INSYNC_REPLICAS, "")
            .parse()
            .unwrap_or(self.config.default_min_insync_replicas)
            .min(partition.replicas.len());
        ChangeRules {
            eligible_leader_replicas: self.config.eligible_leader_replicas,
            min_insync_replicas,
            unclean_election_enabled: self.unclean_election_enabled(topic),
            unclean_shutdown,
            acceptable,
        }
    }

    /// The change of `partition` of `topic` to `target_isr`, electing among unfenced brokers
    /// (see `partition_change`); `None` if nothing changes.
    fn partition_change(
        &self,
        topic: &str,
        partition: &PartitionRecord,
        target_isr: Vec<BrokerId>,
        unclean_shutdown: Option<BrokerId>,
    ) -> Option<PartitionRecord> {
        let acceptable = |replica: BrokerId| self.image.is_broker_alive(replica);
        let rules = self.change_rules(topic, partition, unclean_shutdown, &acceptable);
        build_partition_change(partition, target_isr, &rules)
    }

    /// Stages `FenceBroker` for an unfenced broker and moves every partition off it.
    fn stage_fence_broker(&mut self, broker_id: BrokerId) {
        let registration = self.image.brokers.get(&broker_id).expect("registered");
        assert!(!registration.fenced, "broker {broker_id} is already fenced");
        let broker_epoch = registration.broker_epoch;
        self.stage(MetadataRecord::FenceBroker {
            broker_id,
            broker_epoch,
        });
        self.stage_broker_leaving(broker_id, false);
    }

    /// Moves every partition off `broker_id`, fenced by now, in the batch being staged: it
    /// leaves the ISR (without ELR the last member stays, so that only it can lead cleanly
    /// later) and, after an `unclean_shutdown` (KIP-966), the ELR too and may not lead.
    fn stage_broker_leaving(&mut self, broker_id: BrokerId, unclean_shutdown: bool) {
        let changes: Vec<PartitionRecord> = self
            .image
            .all_partitions()
            .filter_map(|(topic_partition, partition)| {
                let leads = partition.leader == Some(broker_id);
                let in_isr = partition.isr.contains(&broker_id);
                assert!(
                    !leads || in_isr,
                    "{topic_partition}: leader outside the ISR"
                );
                let eligible = partition.eligible_leader_replicas.contains(&broker_id);
                let leaves = in_isr || (unclean_shutdown && eligible);
                if !leaves {
                    return None;
                }
                let mut isr = partition.isr.clone();
                if isr.len() > 1 || self.config.eligible_leader_replicas {
                    isr.retain(|replica| *replica != broker_id);
                }
                let topic = &topic_partition.topic;
                let unclean = unclean_shutdown.then_some(broker_id);
                self.partition_change(topic, partition, isr, unclean)
            })
            .collect();
        for change in changes {
            assert_ne!(change.leader, Some(broker_id));
            self.stage(MetadataRecord::Partition(change));
        }
    }

    /// Stages `UnfenceBroker` for a fenced broker and elects leaders for the leaderless
    /// partitions it replicates.
    fn stage_unfence_broker(&mut self, broker_id: BrokerId) {
        let registration = self.image.brokers.get(&broker_id).expect("registered");
        assert!(registration.fenced, "broker {broker_id} is not fenced");
        let broker_epoch = registration.broker_epoch;
        self.stage(MetadataRecord::UnfenceBroker {
            broker_id,
            broker_epoch,
        });
        let changes: Vec<PartitionRecord> = self
            .image
            .all_partitions()
            .filter(|(_, partition)| {
                partition.leader.is_none() && partition.replicas.contains(&broker_id)
            })
            .filter_map(|(topic_partition, partition)| {
                let isr = partition.isr.clone();
                let change = self.partition_change(&topic_partition.topic, partition, isr, None)?;
                change.leader.is_some().then_some(change)
            })
            .collect();
        for change in changes {
            assert!(change.leader.is_some());
            self.stage(MetadataRecord::Partition(change));
        }
    }

    /// KIP-966's unclean-shutdown handling, for a new incarnation of `broker_id` (fenced by
    /// now): it leaves every ISR and ELR it is in, so that an eligible replica that kept its
    /// records leads rather than one that may have lost unflushed ones. Every restart here is
    /// unclean: no controlled shutdown writes Kafka's clean-shutdown file. Without ELR a
    /// restart changes nothing more than its fence did.
    fn stage_unclean_shutdown(&mut self, broker_id: BrokerId) {
        if !self.config.eligible_leader_replicas {
            return;
        }
        assert!(!self.image.is_broker_alive(broker_id), "fenced before");
        self.stage_broker_leaving(broker_id, true);
    }

    /// KIP-966's `ClearElrRecord`: a change of `min.insync.replicas` (of `topic`, or of the
    /// cluster default with `None`) clears the ELR and last known leader of the partitions it
    /// applies to; the next change of each recomputes them.
    fn stage_clear_elr(&mut self, topic: Option<&str>) {
        if !self.config.eligible_leader_replicas {
            return;
        }
        let cleared: Vec<PartitionRecord> = self
            .image
            .all_partitions()
            .filter(|(topic_partition, partition)| {
                topic.is_none_or(|topic| topic == topic_partition.topic)
                    && !(partition.eligible_leader_replicas.is_empty()
                        && partition.last_known_elr.is_empty())
            })
            .map(|(_, partition)| PartitionRecord {
                eligible_leader_replicas: Vec::new(),
                last_known_elr: Vec::new(),
                partition_epoch: partition.partition_epoch + 1,
                ..partition.clone()
            })
            .collect();
        for change in cleared {
            self.stage(MetadataRecord::Partition(change));
        }
    }

    fn refresh_session(&mut self, broker_id: BrokerId, now_ms: i64) {
        assert!(self.image.brokers.contains_key(&broker_id));
        self.session_deadlines_ms
            .insert(broker_id, now_ms + self.config.broker_session_timeout_ms);
    }

    /// Whether `incarnation` of `broker_id` ever registered. The durable log is the record of
    /// that (it is kept whole); registrations are rare enough for a scan.
    fn registered_before(&self, broker_id: BrokerId, incarnation: u64) -> bool {
        self.log.records().iter().any(|record| {
            matches!(
                record,
                MetadataRecord::RegisterBroker {
                    broker_id: registered,
                    incarnation: registered_incarnation,
                    ..
                } if *registered == broker_id && *registered_incarnation == incarnation
            )
        })
    }

    fn is_broker_sender(&self, from: NodeId, broker_id: BrokerId) -> bool {
        from == NodeId::Broker(self.cluster, broker_id)
    }

    /// A broker-to-controller request about partitions must come from the broker it names
    /// (`InvalidRequest`) in its current registration (Kafka's `checkBrokerEpoch`: an unknown
    /// broker is as stale as an old epoch, `StaleBrokerEpoch`).
    fn check_broker_request(
        &self,
        from: NodeId,
        broker_id: BrokerId,
        broker_epoch: i64,
    ) -> Result<(), ErrorCode> {
        if !self.is_broker_sender(from, broker_id) {
            return Err(ErrorCode::InvalidRequest);
        }
        let epoch_current = self
            .image
            .brokers
            .get(&broker_id)
            .is_some_and(|registration| registration.broker_epoch == broker_epoch);
        if epoch_current {
            Ok(())
        } else {
            Err(ErrorCode::StaleBrokerEpoch)
        }
    }

    // ---- Requests ------------------------------------------------------------------------

    /// Serves one request; `None` for requests a controller does not answer: a partition
    /// leader's, a coordinator's and a broker's KIP-1279 requests are brokers' business.
    fn handle_request(
        &mut self,
        now_ms: i64,
        from: NodeId,
        request: Request,
    ) -> Result<Option<Response>, ControllerError> {
        match request {
            Request::Controller(request) => self
                .handle_controller_request(now_ms, from, request)
                .map(Some),
            Request::Cluster(request) => self.handle_cluster_request(request),
            Request::Mirror(MirrorRequest::DeleteMirror { name }) => {
                self.handle_delete_mirror(&name).map(Some)
            }
            Request::Mirror(
                MirrorRequest::LastMirroredEpochLookup { .. }
                | MirrorRequest::DescribeMirror { .. }
                | MirrorRequest::AddTopicsToMirror { .. }
                | MirrorRequest::RecoverMirrorTopics { .. },
            )
            | Request::Replica(_)
            | Request::Coordinator(_) => Ok(None),
        }
    }

    /// Metadata, ACLs, and the topic operations a broker screened first; DescribeConfigs is
    /// brokers' (`None`).
    fn handle_cluster_request(
        &mut self,
        request: ClusterRequest,
    ) -> Result<Option<Response>, ControllerError> {
        let response = match request {
            ClusterRequest::Metadata { topics } => self.handle_metadata(topics.as_deref()),
            ClusterRequest::DescribeAcls => Response::Cluster(ClusterResponse::DescribeAcls {
                error: ErrorCode::None,
                bindings: self.image.acls.iter().cloned().collect(),
            }),
            ClusterRequest::DeleteTopics { topics } => self.handle_delete_topics(&topics)?,
            ClusterRequest::CreatePartitions { topics } => {
                self.handle_create_partitions(&topics)?
            }
            ClusterRequest::DescribeConfigs { .. } => return Ok(None),
        };
        Ok(Some(response))
    }

    /// The requests only a controller serves.
    fn handle_controller_request(
        &mut self,
        now_ms: i64,
        from: NodeId,
        request: ControllerRequest,
    ) -> Result<Response, ControllerError> {
        let response = match request {
            ControllerRequest::BrokerRegistration {
                broker_id,
                incarnation,
            } => self.handle_broker_registration(now_ms, from, broker_id, incarnation)?,
            ControllerRequest::BrokerHeartbeat {
                broker_id,
                broker_epoch,
                metadata_offset,
            } => self.handle_broker_heartbeat(
                now_ms,
                from,
                broker_id,
                broker_epoch,
                metadata_offset,
            )?,
            // Answered at once: it has records, or it may not wait (a held one never gets here).
            ControllerRequest::FetchMetadata {
                from_offset,
                max_records,
                ..
            } => self.handle_fetch_metadata(from_offset, max_records),
            ControllerRequest::AlterPartition {
                broker_id,
                broker_epoch,
                topic_id,
                partition,
                leader_epoch,
                partition_epoch,
                new_isr,
            } => self.handle_alter_partition(
                from,
                broker_id,
                broker_epoch,
                topic_id,
                partition,
                leader_epoch.0,
                partition_epoch,
                new_isr,
            )?,
            ControllerRequest::AllocateProducerIds {
                broker_id,
                broker_epoch,
            } => self.handle_allocate_producer_ids(from, broker_id, broker_epoch)?,
            ControllerRequest::CreateTopics { topics } => self.handle_create_topics(&topics)?,
            ControllerRequest::IncrementalAlterConfigs { resource, changes } => {
                self.handle_alter_configs(resource, changes)?
            }
            ControllerRequest::CreateAcls { bindings } => self.handle_acls(bindings, true)?,
            ControllerRequest::DeleteAcls { bindings } => self.handle_acls(bindings, false)?,
            ControllerRequest::BumpLeaderEpochs {
                broker_id,
                broker_epoch,
                partitions,
            } => self.handle_bump_leader_epochs(from, broker_id, broker_epoch, &partitions)?,
            ControllerRequest::CreateMirror { name, configs } => {
                self.handle_create_mirror(&name, configs)?
            }
            ControllerRequest::AlterMirrorTopics {
                mirror,
                operation,
                topics,
                checked_stopped,
                include_patterns,
            } => self.handle_alter_mirror_topics(
                &mirror,
                operation,
                &topics,
                &checked_stopped,
                &include_patterns,
            )?,
            ControllerRequest::GrowMirrorTopics { mirror, topics } => {
                self.handle_grow_mirror_topics(&mirror, &topics)?
            }
            ControllerRequest::ListMirrors { filter } => self.handle_list_mirrors(&filter),
        };
        Ok(response)
    }
}

impl<D: LogDisk> Node for Controller<D> {
    fn node_id(&self) -> NodeId {
        self.node_id
    }

    fn handle_message(&mut self, now_ms: i64, envelope: Envelope) {
        assert_eq!(
            envelope.to, self.node_id,
            "message delivered to the wrong node"
        );
        if self.fatal_error.is_some() {
            return;
        }
        match envelope.message {
            Message::Request(correlation_id, request) => {
                if let Some(held) = HeldFetch::of(now_ms, envelope.from, correlation_id, &request) {
                    if held.from_offset.0 >= self.log.end_offset() {
                        self.held_fetches.retain(|other| other.from != held.from);
                        self.held_fetches.push(held);
                        return;
                    }
                }
                // A disk error is recorded in `fatal_error`; the request goes unanswered.
                if let Ok(Some(response)) = self.handle_request(now_ms, envelope.from, request) {
                    self.outbox.respond(envelope.from, correlation_id, response);
                }
                assert!(self.staged.is_empty(), "a batch was left uncommitted");
                self.answer_held_fetches(now_ms);
            }
            Message::Response(..) => {}
        }
    }

    fn handle_timeout(&mut self, now_ms: i64) {
        if self.fatal_error.is_some() {
            return;
        }
        let expired: Vec<BrokerId> = self
            .session_deadlines_ms
            .iter()
            .filter(|(broker_id, deadline_ms)| {
                **deadline_ms <= now_ms && self.image.is_broker_alive(**broker_id)
            })
            .map(|(broker_id, _)| *broker_id)
            .collect();
        for broker_id in expired {
            self.stage_fence_broker(broker_id);
        }
        // A disk error is recorded in `fatal_error`.
        let _ = self.commit();
        if self.fatal_error.is_none() {
            self.answer_held_fetches(now_ms);
        }
    }

    fn poll_timeout(&self) -> Option<i64> {
        if self.fatal_error.is_some() {
            return None;
        }
        let sessions = self
            .session_deadlines_ms
            .iter()
            .filter(|(broker_id, _)| self.image.is_broker_alive(**broker_id))
            .map(|(_, deadline_ms)| *deadline_ms);
        let held = self.held_fetches.iter().map(|held| held.deadline_ms);
        sessions.chain(held).min()
    }

    fn take_outbox(&mut self) -> Vec<Envelope> {
        self.outbox.take()
    }
}

/// A FetchMetadata the controller holds until it has records for it (see the module doc).
#[derive(Debug, Clone, Copy)]
struct HeldFetch {
    from: NodeId,
    correlation_id: u64,
    from_offset: Offset,
    max_records: usize,
    deadline_ms: i64,
}

impl HeldFetch {
    /// The fetch `request` would be while held: only a FetchMetadata that may wait.
    fn of(now_ms: i64, from: NodeId, correlation_id: u64, request: &Request) -> Option<Self> {
        match request {
            Request::Controller(ControllerRequest::FetchMetadata {
                from_offset,
                max_records,
                max_wait_ms,
            }) if *max_wait_ms > 0 => Some(Self {
                from,
                correlation_id,
                from_offset: *from_offset,
                max_records: *max_records,
                deadline_ms: now_ms + max_wait_ms,
            }),
            _ => None,
        }
    }
}

impl<D: LogDisk> Controller<D> {
    /// Answers every held fetch that now has records, or whose wait is over.
    fn answer_held_fetches(&mut self, now_ms: i64) {
        let end_offset = self.log.end_offset();
        let (due, held): (Vec<HeldFetch>, Vec<HeldFetch>) = std::mem::take(&mut self.held_fetches)
            .into_iter()
            .partition(|held| held.from_offset.0 < end_offset || held.deadline_ms <= now_ms);
        self.held_fetches = held;
        for fetch in due {
            let response = self.handle_fetch_metadata(fetch.from_offset, fetch.max_records);
            self.outbox
                .respond(fetch.from, fetch.correlation_id, response);
        }
    }
}

/// The image of `records` applied from offset 0.
fn replay(records: &[MetadataRecord]) -> MetadataImage {
    let mut image = MetadataImage::default();
    for (offset, record) in records.iter().enumerate() {
        image.apply(offset as i64, record);
    }
    image
}

/// Structural rules of one partition state: replicas non-empty and distinct, ISR a non-empty
/// subset of the replicas without duplicates, the leader (if any) in the ISR, epochs ≥ 0.
fn check_partition_shape(partition: &PartitionRecord) -> Result<(), String> {
    let distinct = |list: &[BrokerId]| {
        list.iter()
            .enumerate()
            .all(|(index, broker)| !list[..index].contains(broker))
    };
    if partition.replicas.is_empty() || !distinct(&partition.replicas) {
        return Err("replicas must be non-empty and distinct".to_string());
    }
    if !distinct(&partition.isr) {
        return Err("ISR must be distinct".to_string());
    }
    if partition.isr.is_empty() && partition.leader.is_some() {
        return Err("a led partition must have a non-empty ISR".to_string());
    }
    let elr = &partition.eligible_leader_replicas;
    if !distinct(elr)
        || !elr
            .iter()
            .all(|replica| partition.replicas.contains(replica))
        || elr.iter().any(|replica| partition.isr.contains(replica))
    {
        return Err("ELR must be distinct replicas outside the ISR".to_string());
    }
    if !partition
        .last_known_elr
        .iter()
        .all(|replica| partition.replicas.contains(replica))
    {
        return Err("the last known ELR must be replicas".to_string());
    }
    if !partition
        .isr
        .iter()
        .all(|replica| partition.replicas.contains(replica))
    {
        return Err("ISR must be a subset of the replicas".to_string());
    }
    if partition
        .leader
        .is_some_and(|leader| !partition.isr.contains(&leader))
    {
        return Err("leader must be in the ISR".to_string());
    }
    if partition.leader_epoch < 0 || partition.partition_epoch < 0 {
        return Err("epochs must not be negative".to_string());
    }
    Ok(())
}

/// Whether `image`, with `batch` just applied, is consistent at the batch boundary: no broker
/// fenced or re-registered in the batch leads a partition, and every partition the batch
/// changed has an unfenced leader or none. (Inside a batch a fenced broker may still lead until
/// the batch's later records move its partitions.)
fn check_batch(image: &MetadataImage, batch: &[MetadataRecord]) -> Result<(), String> {
    for record in batch {
        match record {
            MetadataRecord::FenceBroker { broker_id, .. }
            | MetadataRecord::RegisterBroker { broker_id, .. } => {
                if let Some((topic_partition, _)) = image
                    .all_partitions()
                    .find(|(_, partition)| partition.leader == Some(*broker_id))
                {
                    return Err(format!(
                        "fenced broker {broker_id} still leads {topic_partition}"
                    ));
                }
            }
            MetadataRecord::Partition(partition) => {
                let current = &image.topics[&partition.topic_id].partitions[&partition.partition];
                if let Some(leader) = current.leader {
                    if !image.is_broker_alive(leader) {
                        return Err(format!(
                            "partition {}-{} is led by fenced broker {leader}",
                            partition.topic_id, partition.partition
                        ));
                    }
                }
            }
            MetadataRecord::UnfenceBroker { .. }
            | MetadataRecord::Topic { .. }
            | MetadataRecord::RemoveTopic { .. }
            | MetadataRecord::ProducerIds { .. }
            | MetadataRecord::Config { .. }
            | MetadataRecord::Acl(_)
            | MetadataRecord::RemoveAcl(_) => {}
        }
    }
    Ok(())
}

/// Whether `record` may be applied at `offset` to `image`: everything
/// [`MetadataImage::apply`] would assert, plus the controller's own rules (broker epoch = record
/// offset, unique topic names and ids, partition shape). Recovery uses it to refuse bad records
/// without panicking; the write path asserts it.
fn check_record(image: &MetadataImage, offset: i64, record: &MetadataRecord) -> Result<(), String> {
    if offset != image.next_offset {
        return Err(format!(
            "offset {offset} is not the next offset {}",
            image.next_offset
        ));
    }
    match record {
        MetadataRecord::RegisterBroker { broker_epoch, .. } => {
            if *broker_epoch != offset {
                return Err(format!(
                    "broker epoch {broker_epoch} is not the record offset {offset}"
                ));
            }
        }
        MetadataRecord::FenceBroker {
            broker_id,
            broker_epoch,
        }
        | MetadataRecord::UnfenceBroker {
            broker_id,
            broker_epoch,
        } => match image.brokers.get(broker_id) {
            Some(registration) if registration.broker_epoch == *broker_epoch => {}
            _ => {
                return Err(format!(
                    "broker {broker_id} epoch {broker_epoch} is not registered"
                ))
            }
        },
        MetadataRecord::RemoveTopic { topic_id } => {
            if !image.topics.contains_key(topic_id) {
                return Err(format!("topic {topic_id} does not exist"));
            }
        }
        MetadataRecord::Topic { name, topic_id } => {
            if image.topic_ids.contains_key(name) {
                return Err(format!("topic {name} exists"));
            }
            if image.topics.contains_key(topic_id) {
                return Err(format!("topic id {topic_id} exists"));
            }
        }
        MetadataRecord::Partition(partition) => {
            let Some(topic) = image.topics.get(&partition.topic_id) else {
                return Err(format!("unknown topic id {}", partition.topic_id));
            };
            check_partition_shape(partition)?;
            if let Some(previous) = topic.partitions.get(&partition.partition) {
                if partition.replicas != previous.replicas {
                    return Err("replicas changed (reassignment is not modelled)".to_string());
                }
                if partition.leader_epoch < previous.leader_epoch {
                    return Err("leader epoch went back".to_string());
                }
                if partition.partition_epoch <= previous.partition_epoch {
                    return Err("partition epoch did not move forward".to_string());
                }
            }
        }
        MetadataRecord::ProducerIds {
            next_producer_id, ..
        } => {
            if *next_producer_id <= image.next_producer_id {
                return Err("producer id blocks must move forward".to_string());
            }
        }
        MetadataRecord::Config { .. } | MetadataRecord::Acl(_) | MetadataRecord::RemoveAcl(_) => {}
    }
    Ok(())
}
