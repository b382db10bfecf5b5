//! Where each request and answer goes: to the broker's own handlers, a hosted coordinator, a
//! mirror component, or back as NotCoordinator / NotController.

use super::*;
use crate::metadata::authorizer::AclOperation;
use crate::protocol::{
    ClusterRequest, ClusterResponse, ControllerResponse, CoordinatorRequest, CoordinatorResponse,
    MirrorRequest, MirrorResponse, ReplicaRequest, ReplicaResponse,
};

impl<S: BrokerStorage> Broker<S> {
    pub(super) fn handle_metadata_request(
        &mut self,
        (from, principal): (NodeId, Option<&str>),
        correlation_id: u64,
        topics: Option<Vec<String>>,
    ) {
        let described = self.image.describe_topics(topics.as_deref());
        let response = Response::Cluster(ClusterResponse::Metadata {
            brokers: self.image.live_brokers(),
            topics: self.authorize_metadata(principal, topics.is_some(), described),
        });
        self.outbox.respond(from, correlation_id, response);
    }

    /// Routes a request by its family: each family's handler below serves every kind in it.
    /// A broker is not the controller: controller requests (admin clients send them to the
    /// controller, and brokers do not forward them) are answered `NotController`.
    /// `from`: the sender, and the principal its connection authenticated as, if any (the
    /// authorization of `authorization.rs` applies to the requests that carry one).
    pub(super) fn handle_request(
        &mut self,
        now_ms: i64,
        (from, principal): (NodeId, Option<&str>),
        correlation_id: u64,
        request: Request,
    ) {
        match request {
            Request::Replica(request) => {
                self.handle_replica_request(now_ms, (from, principal), correlation_id, request)
            }
            Request::Coordinator(request) => {
                self.handle_coordinator_request(now_ms, from, correlation_id, request)
            }
            Request::Mirror(request) => {
                self.handle_mirror_request(now_ms, (from, principal), correlation_id, request)
            }
            Request::Cluster(request) => {
                self.handle_cluster_request(now_ms, (from, principal), correlation_id, request)
            }
            Request::Controller(request) => {
                if let Some(response) = request.error_response(ErrorCode::NotController) {
                    self.outbox.respond(from, correlation_id, response);
                }
            }
        }
    }

    /// Produce, fetches, offset lookups, DeleteRecords and transaction markers: the replica
    /// manager's, with the broker's KIP-1279 gates and high-watermark fan-out around it.
    fn handle_replica_request(
        &mut self,
        now_ms: i64,
        (from, principal): (NodeId, Option<&str>),
        correlation_id: u64,
        request: ReplicaRequest,
    ) {
        match request {
            ReplicaRequest::Produce {
                acks,
                timeout_ms,
                topic_partition,
                batch,
                transactional_id,
                topic_id,
            } => self.handle_produce(
                now_ms,
                ProduceRequest {
                    from,
                    correlation_id,
                    acks,
                    timeout_ms,
                    topic_partition,
                    batch,
                    topic_id,
                },
                transactional_id,
            ),
            ReplicaRequest::Fetch {
                replica_id,
                replica_epoch: _,
                isolation,
                max_wait_ms,
                max_bytes,
                partitions,
            } => self.handle_fetch(
                now_ms,
                (from, principal),
                correlation_id,
                replica_id,
                isolation,
                max_wait_ms,
                max_bytes,
                partitions,
            ),
            ReplicaRequest::OffsetsForLeaderEpoch {
                replica_id: _,
                partitions,
            } => self.replicas.handle_offsets_for_leader_epoch(
                &mut replica_context!(self, now_ms),
                from,
                correlation_id,
                partitions,
            ),
            ReplicaRequest::ListOffsets {
                isolation,
                partitions,
            } => self.replicas.handle_list_offsets(
                &mut replica_context!(self, now_ms),
                from,
                correlation_id,
                isolation,
                partitions,
            ),
            ReplicaRequest::DeleteRecords { partitions } => {
                self.handle_delete_records(now_ms, from, correlation_id, partitions)
            }
            ReplicaRequest::WriteTxnMarkers { markers } => {
                self.handle_write_txn_markers(now_ms, from, correlation_id, markers)
            }
        }
    }

    /// Coordinator requests: to the hosted shard of their key (or `NotCoordinator`); an
    /// idempotent InitProducerId, FindCoordinator and ListGroups are any broker's.
    fn handle_coordinator_request(
        &mut self,
        now_ms: i64,
        from: NodeId,
        correlation_id: u64,
        request: CoordinatorRequest,
    ) {
        let (key_type, key) = match &request {
            CoordinatorRequest::InitProducerId {
                transactional_id: None,
                ..
            } => {
                let outbox = &mut self.outbox;
                return self
                    .session
                    .handle_init_producer_id(now_ms, from, correlation_id, outbox);
            }
            CoordinatorRequest::FindCoordinator { key_type, key } => {
                return self.coordinators.handle_find_coordinator(
                    &mut context!(self, now_ms),
                    from,
                    correlation_id,
                    *key_type,
                    key,
                );
            }
            CoordinatorRequest::ListGroups => {
                let groups = self.hosted_group_ids();
                let error = ErrorCode::None;
                let response =
                    Response::Coordinator(CoordinatorResponse::ListGroups { error, groups });
                return self.outbox.respond(from, correlation_id, response);
            }
            CoordinatorRequest::AddPartitionsToTxn { .. } => {
                return self.handle_add_partitions_to_txn(now_ms, from, correlation_id, request);
            }
            CoordinatorRequest::ReadMirrorStates {
                coordinator_partition,
                ..
            }
            | CoordinatorRequest::WriteMirrorStates {
                coordinator_partition,
                ..
            }
            | CoordinatorRequest::DeleteMirrorStates {
                coordinator_partition,
                ..
            } => {
                let partition = TopicPartition::new(MIRROR_STATE_TOPIC, *coordinator_partition);
                return self.route_to_shard(now_ms, from, correlation_id, &partition, request);
            }
            CoordinatorRequest::InitProducerId {
                transactional_id: Some(transactional_id),
                ..
            }
            | CoordinatorRequest::EndTxn {
                transactional_id, ..
            } => (CoordinatorType::Transaction, transactional_id.clone()),
            CoordinatorRequest::ConsumerGroupHeartbeat { group_id, .. }
            | CoordinatorRequest::OffsetCommit { group_id, .. }
            | CoordinatorRequest::OffsetFetch { group_id, .. } => {
                (CoordinatorType::Group, group_id.clone())
            }
            // A multi-group describe goes to the first group's coordinator.
            CoordinatorRequest::DescribeGroups { group_ids } => (
                CoordinatorType::Group,
                group_ids.first().cloned().unwrap_or_default(),
            ),
        };
        self.route_to_coordinator(now_ms, from, correlation_id, key_type, &key, request)
    }

    /// KIP-1279's broker requests: the source side's last-mirrored-epoch lookup, and the
    /// admin entries of AddTopicsToMirror, DeleteMirror and DescribeMirror.
    fn handle_mirror_request(
        &mut self,
        now_ms: i64,
        (from, principal): (NodeId, Option<&str>),
        correlation_id: u64,
        request: MirrorRequest,
    ) {
        match request {
            MirrorRequest::LastMirroredEpochLookup { topic, .. }
                if !self.authorized(principal, AclOperation::Describe, &topic) =>
            {
                let response = Response::Mirror(MirrorResponse::LastMirroredEpochLookup {
                    error: ErrorCode::TopicAuthorizationFailed,
                    last_mirrored_epoch: crate::protocol::LeaderEpoch::NONE,
                    last_mirrored_offset: crate::protocol::Offset::NONE,
                    topic_id: None,
                });
                self.outbox.respond(from, correlation_id, response);
            }
            MirrorRequest::LastMirroredEpochLookup {
                requester,
                topic,
                partition,
                topic_id,
            } => self.with_mirror_manager(|manager, broker| {
                manager.handle_last_mirrored_epoch_lookup(
                    broker,
                    now_ms,
                    (from, correlation_id),
                    (requester, &topic, partition, topic_id),
                );
            }),
            request @ MirrorRequest::AddTopicsToMirror { .. } => self.topic_admins.handle_request(
                &mut context!(self, now_ms),
                from,
                correlation_id,
                Request::Mirror(request),
            ),
            MirrorRequest::DeleteMirror { name } => self.with_mirror_manager(|manager, broker| {
                manager.handle_delete_mirror(broker, now_ms, from, correlation_id, name);
            }),
            MirrorRequest::RecoverMirrorTopics { mirror, topics } => {
                self.mirror_recoveries.handle_recover(
                    &mut context!(self, now_ms),
                    from,
                    correlation_id,
                    mirror,
                    topics,
                )
            }
            MirrorRequest::DescribeMirror { name } => self.mirror_describes.handle_describe_mirror(
                &mut context!(self, now_ms),
                from,
                correlation_id,
                name,
            ),
        }
    }

    /// Metadata, configs and ACLs from this broker's image; DeleteTopics and CreatePartitions
    /// through the KIP-1279 topic admin entry, which forwards them to the controller.
    fn handle_cluster_request(
        &mut self,
        now_ms: i64,
        (from, principal): (NodeId, Option<&str>),
        correlation_id: u64,
        request: ClusterRequest,
    ) {
        match request {
            ClusterRequest::Metadata { topics } => {
                self.handle_metadata_request((from, principal), correlation_id, topics)
            }
            ClusterRequest::DescribeConfigs { resources } => {
                let response = self.describe_configs(resources);
                self.outbox.respond(from, correlation_id, response);
            }
            ClusterRequest::DescribeAcls => {
                let bindings = self.image.acls.iter().cloned().collect();
                let error = ErrorCode::None;
                let response = Response::Cluster(ClusterResponse::DescribeAcls { error, bindings });
                self.outbox.respond(from, correlation_id, response);
            }
            request @ (ClusterRequest::DeleteTopics { .. }
            | ClusterRequest::CreatePartitions { .. }) => self.topic_admins.handle_request(
                &mut context!(self, now_ms),
                from,
                correlation_id,
                Request::Cluster(request),
            ),
        }
    }

    pub(super) fn handle_response(
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
        if self.mirror_recoveries.owns(correlation_id) {
            let context = &mut context!(self, now_ms);
            self.mirror_recoveries
                .handle_response(context, correlation_id, Ok(response));
            return;
        }
        if self.txn_verifications.owns(correlation_id) {
            self.handle_verification_answer(now_ms, correlation_id, Ok(response));
            return;
        }
        if self.topic_admins.owns(correlation_id) {
            self.topic_admins.handle_response(
                &mut context!(self, now_ms),
                correlation_id,
                Ok(response),
            );
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
            Response::Controller(ControllerResponse::AlterPartition { error, partition }) => {
                self.handle_alter_partition_response(now_ms, correlation_id, error, partition);
            }
            Response::Replica(ReplicaResponse::Fetch { partitions }) => {
                if let NodeId::Broker(_, leader) = from {
                    self.with_fetcher(now_ms, |fetcher, context| {
                        fetcher.handle_response(context, leader, correlation_id, partitions);
                    });
                }
            }
            // Every other answer a broker gets went to the component that sent the request
            // above; one nobody awaits any more (its sender gave up or restarted) is dropped.
            Response::Controller(_)
            | Response::Replica(_)
            | Response::Coordinator(_)
            | Response::Mirror(_)
            | Response::Cluster(_) => {}
        }
    }
}
