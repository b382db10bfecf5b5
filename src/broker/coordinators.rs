//! The broker's side of its coordinator host (`crate::coordinator::host`): loading and
//! unloading shards as leadership of their partitions moves, running a shard's call over its
//! partition's log and carrying a moved high watermark on, routing coordinator requests and
//! answers, AddPartitionsToTxn's KIP-1279 screen, and the facts of KIP-1279's gate on the
//! WriteTxnMarkers the replica manager appends.

use super::{replica_context, BrokerStorage, Partition, Role};
use crate::coordinator::group::{GroupCoordinatorConfig, GroupCoordinatorShard};
use crate::coordinator::runtime::{HostContext, HostedCoordinator, ShardHost};
use crate::coordinator::transaction::{
    TransactionCoordinatorConfig, TransactionCoordinatorShard, OPERATION_NOT_ATTEMPTED,
};
use crate::coordinator::{CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC};
use crate::mirror::coordinator::{MirrorCoordinatorShard, MIRROR_STATE_TOPIC};
use crate::mirror::gate::{marker_gate, refuses_txn_enlist, MarkerFacts};
use crate::mirror::TopicMirrorConfig;
use crate::protocol::{
    ClusterResponse, CoordinatorRequest, CoordinatorResponse, CoordinatorType, ErrorCode, NodeId,
    Response, TopicPartition, TxnMarker,
};
use crate::switches::BrokenSwitch;

impl<S: BrokerStorage> super::Broker<S> {
    /// Routes a request to the shard hosting its key, or answers `NotCoordinator`.
    pub(super) fn route_to_coordinator(
        &mut self,
        now_ms: i64,
        from: NodeId,
        correlation_id: u64,
        key_type: CoordinatorType,
        key: &str,
        request: CoordinatorRequest,
    ) {
        let partition = self
            .coordinators
            .coordinator_partition(&self.image, key_type, key);
        let hosted = partition
            .as_ref()
            .is_some_and(|p| self.coordinators.hosts(p));
        if !hosted {
            let response = request.error_response(ErrorCode::NotCoordinator);
            self.outbox.respond(from, correlation_id, response);
            return;
        }
        let partition = partition.expect("checked above");
        self.with_coordinator(now_ms, &partition, |host, context| {
            host.handle_request(context, from, correlation_id, request)
        });
    }

    /// Routes a request to the shard of `partition` if this broker hosts it, or answers
    /// `NotCoordinator` (requests that name their coordinator partition, e.g. the mirror
    /// coordinator's).
    pub(super) fn route_to_shard(
        &mut self,
        now_ms: i64,
        from: NodeId,
        correlation_id: u64,
        partition: &TopicPartition,
        request: CoordinatorRequest,
    ) {
        if !self.coordinators.hosts(partition) {
            let response = request.error_response(ErrorCode::NotCoordinator);
            self.outbox.respond(from, correlation_id, response);
            return;
        }
        self.with_coordinator(now_ms, partition, |host, context| {
            host.handle_request(context, from, correlation_id, request)
        });
    }

    /// Calls `action` with a hosted shard and the context it needs.
    pub(super) fn with_coordinator(
        &mut self,
        now_ms: i64,
        partition: &TopicPartition,
        action: impl FnOnce(
            &mut (dyn crate::coordinator::runtime::HostedCoordinator<S::Disk> + Send),
            &mut HostContext<'_, S::Disk>,
        ),
    ) {
        let Some(mut host) = self.coordinators.take(partition) else {
            return;
        };
        let mut marks = Vec::new();
        if let Some(mut context) = self.host_context(now_ms, partition, &mut marks) {
            action(host.as_mut(), &mut context);
        }
        self.coordinators.put(partition, host);
        self.events
            .extend((marks.into_iter()).map(|mark| super::BrokerEvent::CoordinatorMark { mark }));
        // A coordinator write is committed at once when the leader is the whole ISR.
        self.maybe_increment_high_watermark(now_ms, partition);
    }

    /// What a shard of `partition` works with, while this broker leads the partition.
    fn host_context<'a>(
        &'a mut self,
        now_ms: i64,
        partition: &TopicPartition,
        marks: &'a mut Vec<&'static str>,
    ) -> Option<HostContext<'a, S::Disk>> {
        let min_insync = self.min_insync_replicas(&partition.topic);
        let replica = self.replicas.partitions_mut().get_mut(partition)?;
        let Role::Leader(state) = &replica.role else {
            return None;
        };
        let leader_epoch = state.leader_epoch;
        let enough_replicas = state.isr.len() >= min_insync;
        Some(HostContext {
            now_ms,
            image: &self.image,
            log: &mut replica.log,
            leader_epoch,
            outbox: &mut self.outbox,
            node_id: self.node_id,
            enough_replicas,
            broken: &self.config.broken,
            marks,
        })
    }

    /// Loads the shard of an internal partition this broker now leads (or reloads it in a new
    /// leader epoch).
    pub(super) fn load_coordinator(&mut self, now_ms: i64, partition: &TopicPartition) {
        self.unload_coordinator(partition);
        let transaction_config = TransactionCoordinatorConfig {
            transaction_version_2: self.config.mirror_design.transaction_version_2(),
            ..TransactionCoordinatorConfig::default()
        };
        // Loading replays the log and resumes markers: nothing a mark is kept for.
        let mut marks = Vec::new();
        let Some(mut context) = self.host_context(now_ms, partition, &mut marks) else {
            return;
        };
        let leader_epoch = context.leader_epoch;
        if let Some(host) = host_for(partition, transaction_config, &mut context) {
            self.coordinators.insert(partition, host);
            self.events.push(super::BrokerEvent::CoordinatorLoaded {
                topic_partition: partition.clone(),
                leader_epoch,
            });
        }
    }

    /// Drops the shard of a partition this broker no longer leads.
    pub(super) fn unload_coordinator(&mut self, partition: &TopicPartition) {
        self.coordinators.unload(partition, &mut self.outbox);
    }

    /// Completes the shard's writes the high watermark passed and runs its timers.
    pub(super) fn poll_coordinator(&mut self, now_ms: i64, partition: &TopicPartition) {
        if self.coordinators.hosts(partition) {
            self.with_coordinator(now_ms, partition, |host, context| host.poll(context));
        }
    }

    /// Polls every hosted shard whose deadline passed.
    pub(super) fn poll_coordinators(&mut self, now_ms: i64) {
        for partition in self.coordinators.due(now_ms) {
            self.poll_coordinator(now_ms, &partition);
        }
    }

    /// Gives an answer to the shard that sent the request, if one did; otherwise hands it back.
    pub(super) fn route_coordinator_response(
        &mut self,
        now_ms: i64,
        correlation_id: u64,
        response: Response,
    ) -> Option<Response> {
        let Some(partition) = self.coordinators.awaiting(correlation_id) else {
            return Some(response);
        };
        self.with_coordinator(now_ms, &partition, |host, context| {
            host.handle_response(context, correlation_id, response);
        });
        None
    }

    /// AddPartitionsToTxn, as Kafka's `KafkaApis` screens it before its coordinator sees it
    /// (it answers unauthorized and unknown topics there): a transactional id this broker
    /// does not coordinate gets `NotCoordinator`; then a partition KIP-1279's gate refuses to
    /// enlist ([`refuses_txn_enlist`]: unless the design is `txn-enlist-unchecked`, one of a
    /// topic whose `mirror.name` asks to mirror or to pause it) gets `ReadOnlyTopic` and the
    /// request's other partitions
    /// `OPERATION_NOT_ATTEMPTED`, so a producer on the destination never enlists a mirror
    /// partition whose markers its leader would refuse (issue #14: the prototype enlists it,
    /// the produce is refused, and the transaction's ABORT marker is refused for as long as
    /// the partition mirrors, leaving the transaction in PrepareAbort). The check reads this
    /// broker's metadata, which knows the desired state but not each partition's state: a
    /// topic being removed (`<m>.removed`) is enlisted while a partition may still be
    /// STOPPING; its leader then refuses the produce and the marker until STOPPED, which
    /// STOPPING reaches on its own, so the transaction completes then.
    pub(super) fn handle_add_partitions_to_txn(
        &mut self,
        now_ms: i64,
        from: NodeId,
        correlation_id: u64,
        request: CoordinatorRequest,
    ) {
        let CoordinatorRequest::AddPartitionsToTxn {
            transactional_id,
            partitions,
            verify_only,
            ..
        } = &request
        else {
            unreachable!("called for AddPartitionsToTxn");
        };
        let key_type = CoordinatorType::Transaction;
        let hosted = self
            .coordinators
            .hosts_key(&self.image, key_type, transactional_id);
        // A verification enlists nothing: it asks about partitions already enlisted.
        let read_only = if *verify_only {
            Vec::new()
        } else {
            refuses_txn_enlist(&self.image, self.config.mirror_design, partitions)
        };
        if !hosted || read_only.is_empty() {
            let key = transactional_id.clone();
            self.route_to_coordinator(now_ms, from, correlation_id, key_type, &key, request);
            return;
        }
        let results = partitions
            .iter()
            .map(|tp| {
                let error = if read_only.contains(tp) {
                    ErrorCode::ReadOnlyTopic
                } else if self.image.partition(tp).is_none() {
                    ErrorCode::UnknownTopicOrPartition
                } else {
                    OPERATION_NOT_ATTEMPTED
                };
                (tp.clone(), error)
            })
            .collect();
        self.events.push(super::BrokerEvent::TxnEnlistRefused {
            transactional_id: transactional_id.clone(),
            partitions: read_only,
        });
        let response = Response::Coordinator(CoordinatorResponse::AddPartitionsToTxn { results });
        self.outbox.respond(from, correlation_id, response);
    }

    /// WriteTxnMarkers on a partition leader: the replica manager appends each marker and
    /// answers once the ISR has them; KIP-1279's gate ([`marker_gate`]) refuses a marker for a
    /// mirror partition that is not STOPPED, except where the design admits it.
    pub(super) fn handle_write_txn_markers(
        &mut self,
        now_ms: i64,
        from: NodeId,
        correlation_id: u64,
        markers: Vec<TxnMarker>,
    ) {
        // A marker ends the producer's transaction here: a verification in flight for it
        // (KIP-890) no longer proves the partition is in an ongoing transaction.
        for marker in &markers {
            for topic_partition in &marker.partitions {
                self.txn_verifications
                    .drop_guard(topic_partition, marker.producer_id);
            }
        }
        let design = self.config.mirror_design;
        let unchecked = self
            .config
            .broken
            .contains(&BrokenSwitch::MirrorMarkersUnchecked);
        let image = &self.image;
        let manager = self
            .mirror
            .as_ref()
            .expect("the mirror manager is read between its own calls");
        let gate = |marker: &TxnMarker,
                    topic_partition: &TopicPartition,
                    partition: &Partition<S::Disk>| {
            let open_transaction = partition
                .log
                .producer_state()
                .producer(marker.producer_id)
                .is_some_and(|entry| entry.current_txn_first_offset.is_some());
            marker_gate(
                design,
                MarkerFacts {
                    mirror_topic: image.mirror_desired_state(&topic_partition.topic).is_some(),
                    mirror_state: partition.mirror_state,
                    committed: marker.committed,
                    open_transaction,
                    own_writes_only: manager.mirror_log_holds_own_writes_only(topic_partition),
                    unchecked,
                },
            )
        };
        self.replicas.append_txn_markers(
            &mut replica_context!(self, now_ms),
            from,
            correlation_id,
            markers,
            gate,
        );
        for partition in self
            .replicas
            .partitions()
            .keys()
            .cloned()
            .collect::<Vec<_>>()
        {
            self.maybe_increment_high_watermark(now_ms, &partition);
        }
        self.complete_delayed_markers(now_ms);
        self.try_complete_delayed_fetches(now_ms);
    }

    /// Answers marker writes whose partitions all replicated (or failed, or timed out).
    pub(super) fn complete_delayed_markers(&mut self, now_ms: i64) {
        self.replicas
            .complete_delayed_markers(&mut replica_context!(self, now_ms));
    }
}

impl<S: BrokerStorage> super::Broker<S> {
    /// The ids of the groups the group coordinator shards hosted here know (ListGroups).
    pub(super) fn hosted_group_ids(&self) -> Vec<String> {
        use crate::coordinator::group::GroupCoordinatorShard;
        use crate::coordinator::runtime::ShardHost;
        let mut groups: Vec<String> = self
            .coordinators
            .shards()
            .filter_map(|(_, host)| {
                host.as_any()
                    .downcast_ref::<ShardHost<GroupCoordinatorShard>>()
            })
            .flat_map(|host| host.shard().group_ids())
            .collect();
        groups.sort();
        groups.dedup();
        groups
    }

    /// DescribeConfigs from this broker's metadata image. `mirror.name` is hidden, as the
    /// KIP asks (AS22): it is the destination's own bookkeeping, never something to copy.
    pub(super) fn describe_configs(
        &self,
        resources: Vec<crate::metadata::ConfigResource>,
    ) -> Response {
        use crate::metadata::ConfigResource;
        use crate::mirror::state::MIRROR_NAME_CONFIG;
        let results = resources
            .into_iter()
            .map(|resource| {
                let known = match &resource {
                    ConfigResource::Topic(topic) => self.image.topic_ids.contains_key(topic),
                    _ => true,
                };
                let configs = self
                    .image
                    .configs
                    .get(&resource)
                    .map(|configs| {
                        configs
                            .iter()
                            .filter(|(name, _)| name.as_str() != MIRROR_NAME_CONFIG)
                            .map(|(name, value)| (name.clone(), value.clone()))
                            .collect()
                    })
                    .unwrap_or_default();
                crate::protocol::DescribeConfigsResult {
                    resource,
                    error: if known {
                        ErrorCode::None
                    } else {
                        ErrorCode::UnknownTopicOrPartition
                    },
                    configs,
                }
            })
            .collect();
        Response::Cluster(ClusterResponse::DescribeConfigs { results })
    }
}

/// The shard a broker hosts for a partition it leads, loaded from that partition's log, or
/// `None` when the partition belongs to no coordinator.
fn host_for<D: crate::log::LogDisk>(
    partition: &TopicPartition,
    transaction_config: TransactionCoordinatorConfig,
    context: &mut HostContext<'_, D>,
) -> Option<Box<dyn HostedCoordinator<D> + Send>> {
    match partition.topic.as_str() {
        CONSUMER_OFFSETS_TOPIC => {
            let shard = GroupCoordinatorShard::new(GroupCoordinatorConfig::default());
            Some(Box::new(ShardHost::load(partition.clone(), shard, context)))
        }
        TRANSACTION_STATE_TOPIC => {
            let shard = TransactionCoordinatorShard::new(partition.partition, transaction_config);
            Some(Box::new(ShardHost::load(partition.clone(), shard, context)))
        }
        MIRROR_STATE_TOPIC => {
            let mut shard = MirrorCoordinatorShard::new();
            shard.accept_skipped_preparing =
                context.broken.contains(&BrokenSwitch::MirrorSkipPreparing);
            shard.ignore_epochs = context
                .broken
                .contains(&BrokenSwitch::MirrorCoordinatorIgnoresEpochs);
            Some(Box::new(ShardHost::load(partition.clone(), shard, context)))
        }
        _ => None,
    }
}
