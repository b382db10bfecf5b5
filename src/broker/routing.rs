//! Where each request and answer goes: to the broker's own handlers, a hosted coordinator, a
//! mirror component, or back as NotCoordinator / NotController.

use super::*;

impl<S: BrokerStorage> Broker<S> {
    pub(super) fn handle_metadata_request(
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

    pub(super) fn handle_request(
        &mut self,
        now_ms: i64,
        from: NodeId,
        correlation_id: u64,
        request: Request,
    ) {
        match request {
            Request::Produce {
                acks,
                timeout_ms,
                topic_partition,
                batch,
            } => self.handle_produce(
                now_ms,
                ProduceRequest {
                    from,
                    correlation_id,
                    acks,
                    timeout_ms,
                    topic_partition,
                    batch,
                },
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
            } => self.replicas.handle_offsets_for_leader_epoch(
                &mut replica_context!(self, now_ms),
                from,
                correlation_id,
                partitions,
            ),
            Request::ListOffsets {
                isolation,
                partitions,
            } => self.replicas.handle_list_offsets(
                &mut replica_context!(self, now_ms),
                from,
                correlation_id,
                isolation,
                partitions,
            ),
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
                self.coordinators.handle_find_coordinator(
                    &mut context!(self, now_ms),
                    from,
                    correlation_id,
                    key_type,
                    &key,
                )
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
                self.handle_delete_records(now_ms, from, correlation_id, partitions)
            }
            request @ (Request::DeleteTopics { .. } | Request::CreatePartitions { .. }) => self
                .topic_admins
                .handle_request(&mut context!(self, now_ms), from, correlation_id, request),
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

    pub(super) fn respond_not_coordinator(
        &mut self,
        from: NodeId,
        correlation_id: u64,
        request: &Request,
    ) {
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

    pub(super) fn respond_not_controller(
        &mut self,
        from: NodeId,
        correlation_id: u64,
        request: &Request,
    ) {
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
            Response::AlterPartition { error, partition } => {
                self.handle_alter_partition_response(now_ms, correlation_id, error, partition);
            }
            Response::Fetch { partitions } => {
                if let NodeId::Broker(_, leader) = from {
                    self.with_fetcher(now_ms, |fetcher, context| {
                        fetcher.handle_response(context, leader, correlation_id, partitions);
                    });
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
}
