//! The controller's request handlers: broker registrations and heartbeats, metadata fetches,
//! AlterPartition, producer-id blocks, topic creation, configs and ACLs.

use super::*;
use crate::protocol::{ClusterResponse, ControllerResponse, Offset, ProducerId};

impl<D: LogDisk> Controller<D> {
    pub(super) fn handle_broker_registration(
        &mut self,
        now_ms: i64,
        from: NodeId,
        broker_id: BrokerId,
        incarnation: u64,
    ) -> Result<Response, ControllerError> {
        let refuse = |error| {
            Response::Controller(ControllerResponse::BrokerRegistration {
                error,
                broker_epoch: -1,
            })
        };
        if !self.is_broker_sender(from, broker_id) {
            return Ok(refuse(ErrorCode::InvalidRequest));
        }
        if let Some(registration) = self.image.brokers.get(&broker_id) {
            if registration.incarnation == incarnation {
                // A retry (or a duplicate) from the registered process: same epoch, no record.
                let broker_epoch = registration.broker_epoch;
                self.refresh_session(broker_id, now_ms);
                return Ok(Response::Controller(
                    ControllerResponse::BrokerRegistration {
                        error: ErrorCode::None,
                        broker_epoch,
                    },
                ));
            }
            if self.registered_before(broker_id, incarnation) {
                // A late message from a process that a newer incarnation replaced.
                return Ok(refuse(ErrorCode::DuplicateBrokerRegistration));
            }
            if !registration.fenced {
                // The restarted broker lost its unflushed data: it must leave every ISR and
                // leadership under its old registration before it registers again.
                self.stage_fence_broker(broker_id);
            }
            self.stage_unclean_shutdown(broker_id);
        }
        let broker_epoch = self.image.next_offset;
        self.stage(MetadataRecord::RegisterBroker {
            broker_id,
            broker_epoch,
            incarnation,
        });
        self.commit()?;
        self.refresh_session(broker_id, now_ms);
        Ok(Response::Controller(
            ControllerResponse::BrokerRegistration {
                error: ErrorCode::None,
                broker_epoch,
            },
        ))
    }

    pub(super) fn handle_broker_heartbeat(
        &mut self,
        now_ms: i64,
        from: NodeId,
        broker_id: BrokerId,
        broker_epoch: i64,
        Offset(metadata_offset): Offset,
    ) -> Result<Response, ControllerError> {
        let refuse = |error| {
            Response::Controller(ControllerResponse::BrokerHeartbeat {
                error,
                is_fenced: true,
            })
        };
        if !self.is_broker_sender(from, broker_id) {
            return Ok(refuse(ErrorCode::InvalidRequest));
        }
        let Some(registration) = self.image.brokers.get(&broker_id) else {
            return Ok(refuse(ErrorCode::BrokerIdNotRegistered));
        };
        if registration.broker_epoch != broker_epoch {
            return Ok(refuse(ErrorCode::StaleBrokerEpoch));
        }
        // The broker epoch is the offset of its RegisterBroker record; `metadata_offset` is the
        // next record the broker will apply, so it has applied its registration once it is past.
        let caught_up = metadata_offset > registration.broker_epoch;
        let fenced = registration.fenced;
        self.refresh_session(broker_id, now_ms);
        if fenced && caught_up {
            self.stage_unfence_broker(broker_id);
            self.commit()?;
        }
        let is_fenced = self.image.brokers[&broker_id].fenced;
        assert!(!(caught_up && is_fenced), "a caught-up broker is unfenced");
        Ok(Response::Controller(ControllerResponse::BrokerHeartbeat {
            error: ErrorCode::None,
            is_fenced,
        }))
    }

    pub(super) fn handle_fetch_metadata(
        &self,
        Offset(from_offset): Offset,
        max_records: usize,
    ) -> Response {
        let end_offset = self.log.end_offset();
        let start = from_offset.clamp(0, end_offset);
        let count = max_records.min(self.config.fetch_metadata_records_max);
        let records: Vec<(Offset, MetadataRecord)> = self.log.records()[start as usize..]
            .iter()
            .take(count)
            .enumerate()
            .map(|(index, record)| (Offset(start + index as i64), record.clone()))
            .collect();
        assert!(records.len() <= count);
        Response::Controller(ControllerResponse::FetchMetadata {
            records,
            end_offset: Offset(end_offset),
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn handle_alter_partition(
        &mut self,
        from: NodeId,
        broker_id: BrokerId,
        broker_epoch: i64,
        topic_id: TopicId,
        partition: i32,
        leader_epoch: i32,
        partition_epoch: i32,
        new_isr: Vec<BrokerId>,
    ) -> Result<Response, ControllerError> {
        let reply = |error, partition| {
            Response::Controller(ControllerResponse::AlterPartition { error, partition })
        };
        if let Err(error) = self.check_broker_request(from, broker_id, broker_epoch) {
            return Ok(reply(error, None));
        }
        let Some(current) = self
            .image
            .topics
            .get(&topic_id)
            .and_then(|topic| topic.partitions.get(&partition))
            .cloned()
        else {
            return Ok(reply(ErrorCode::UnknownTopicOrPartition, None));
        };
        let refuse = |error| Ok(reply(error, Some(current.clone())));
        if leader_epoch < current.leader_epoch {
            return refuse(ErrorCode::FencedLeaderEpoch);
        }
        if leader_epoch > current.leader_epoch {
            // Only this controller bumps leader epochs: the sender made this epoch up.
            return refuse(ErrorCode::UnknownLeaderEpoch);
        }
        if current.leader != Some(broker_id) {
            return refuse(ErrorCode::NotLeaderOrFollower);
        }
        assert!(
            self.image.is_broker_alive(broker_id),
            "leaders are unfenced"
        );
        if partition_epoch != current.partition_epoch {
            return refuse(ErrorCode::InvalidUpdateVersion);
        }
        // The ISR's shape is checked alone: the ELR follows from it (`partition_change`).
        let proposal = PartitionRecord {
            isr: new_isr,
            partition_epoch: current.partition_epoch + 1,
            eligible_leader_replicas: Vec::new(),
            last_known_elr: Vec::new(),
            ..current.clone()
        };
        if check_partition_shape(&proposal).is_err() {
            return refuse(ErrorCode::InvalidRequest);
        }
        // KIP-841: only unfenced brokers may join (or stay in) an ISR the leader proposes.
        if !proposal
            .isr
            .iter()
            .all(|replica| self.image.is_broker_alive(*replica))
        {
            return refuse(ErrorCode::IneligibleReplica);
        }
        let unchanged = proposal.isr.len() == current.isr.len()
            && proposal
                .isr
                .iter()
                .all(|replica| current.isr.contains(replica));
        if unchanged {
            return Ok(reply(ErrorCode::None, Some(current)));
        }
        let topic = self
            .image
            .topic_name(topic_id)
            .expect("a partition's topic has a name")
            .to_string();
        let proposal = self
            .partition_change(&topic, &current, proposal.isr, None)
            .expect("a changed ISR changes the partition");
        assert_eq!(
            proposal.leader, current.leader,
            "the leader proposed its ISR"
        );
        self.stage(MetadataRecord::Partition(proposal.clone()));
        self.commit()?;
        Ok(reply(ErrorCode::None, Some(proposal)))
    }

    pub(super) fn handle_allocate_producer_ids(
        &mut self,
        from: NodeId,
        broker_id: BrokerId,
        broker_epoch: i64,
    ) -> Result<Response, ControllerError> {
        let refuse = |error| {
            Response::Controller(ControllerResponse::AllocateProducerIds {
                error,
                first_producer_id: ProducerId::NONE,
                count: 0,
            })
        };
        if !self.is_broker_sender(from, broker_id) {
            return Ok(refuse(ErrorCode::InvalidRequest));
        }
        let Some(registration) = self.image.brokers.get(&broker_id) else {
            return Ok(refuse(ErrorCode::BrokerIdNotRegistered));
        };
        if registration.broker_epoch != broker_epoch {
            return Ok(refuse(ErrorCode::StaleBrokerEpoch));
        }
        let first_producer_id = self.image.next_producer_id;
        let count = self.config.producer_id_block_size;
        let Some(next_producer_id) = first_producer_id.checked_add(count) else {
            return Ok(refuse(UNKNOWN_SERVER_ERROR));
        };
        self.stage(MetadataRecord::ProducerIds {
            broker_id,
            broker_epoch,
            next_producer_id,
        });
        self.commit()?;
        assert_eq!(self.image.next_producer_id, first_producer_id + count);
        Ok(Response::Controller(
            ControllerResponse::AllocateProducerIds {
                error: ErrorCode::None,
                first_producer_id: ProducerId(first_producer_id),
                count,
            },
        ))
    }

    pub(super) fn handle_create_topics(
        &mut self,
        topics: &[NewTopic],
    ) -> Result<Response, ControllerError> {
        let mut results = Vec::with_capacity(topics.len());
        for topic in topics {
            match self.stage_create_topic(topic) {
                Ok(topic_id) => results.push((topic.name.clone(), ErrorCode::None, Some(topic_id))),
                Err(error) => results.push((topic.name.clone(), error, None)),
            }
        }
        self.commit()?;
        Ok(Response::Controller(ControllerResponse::CreateTopics {
            results,
        }))
    }

    /// IncrementalAlterConfigs: SET (`Some`) or DELETE (`None`) entries of a topic or of the
    /// broker defaults, as one batch. A topic must exist; an unchanged value writes nothing.
    pub(super) fn handle_alter_configs(
        &mut self,
        resource: ConfigResource,
        changes: Vec<(String, Option<String>)>,
    ) -> Result<Response, ControllerError> {
        if let ConfigResource::Topic(name) = &resource {
            if !self.image.topic_ids.contains_key(name) {
                return Ok(Response::Controller(
                    ControllerResponse::IncrementalAlterConfigs {
                        error: ErrorCode::UnknownTopicOrPartition,
                    },
                ));
            }
        }
        if changes.iter().any(|(name, _)| name.is_empty()) {
            return Ok(Response::Controller(
                ControllerResponse::IncrementalAlterConfigs {
                    error: ErrorCode::InvalidConfig,
                },
            ));
        }
        if let Err(error) = self.check_mirror_config_change(&resource, &changes) {
            return Ok(Response::Controller(
                ControllerResponse::IncrementalAlterConfigs { error },
            ));
        }
        let min_isr_changed = changes.iter().any(|(name, _)| name == MIN_INSYNC_REPLICAS);
        for (name, value) in changes {
            let current = self
                .image
                .configs
                .get(&resource)
                .and_then(|entries| entries.get(&name));
            if current != value.as_ref() {
                self.stage(MetadataRecord::Config {
                    resource: resource.clone(),
                    name,
                    value,
                });
            }
        }
        if min_isr_changed {
            match &resource {
                ConfigResource::Topic(topic) => self.stage_clear_elr(Some(topic)),
                ConfigResource::Broker => self.stage_clear_elr(None),
                ConfigResource::Mirror(_) => {}
            }
        }
        self.commit()?;
        Ok(Response::Controller(
            ControllerResponse::IncrementalAlterConfigs {
                error: ErrorCode::None,
            },
        ))
    }

    /// CreateAcls (`create`) or DeleteAcls: one record per binding that changes.
    pub(super) fn handle_acls(
        &mut self,
        bindings: Vec<AclBinding>,
        create: bool,
    ) -> Result<Response, ControllerError> {
        for binding in bindings {
            let present = self.image.acls.contains(&binding);
            if create && !present {
                self.stage(MetadataRecord::Acl(binding));
            } else if !create && present {
                self.stage(MetadataRecord::RemoveAcl(binding));
            }
        }
        self.commit()?;
        let error = ErrorCode::None;
        Ok(if create {
            Response::Controller(ControllerResponse::CreateAcls { error })
        } else {
            Response::Controller(ControllerResponse::DeleteAcls { error })
        })
    }

    /// Validates one new topic and stages its records; later topics of the same request see it.
    pub(super) fn stage_create_topic(&mut self, topic: &NewTopic) -> Result<TopicId, ErrorCode> {
        if !is_valid_topic_name(&topic.name) {
            return Err(ErrorCode::InvalidTopic);
        }
        if self.image.topic_ids.contains_key(&topic.name) {
            return Err(ErrorCode::TopicAlreadyExists);
        }
        // Kafka refuses a name that differs from an existing one only in `.` versus `_`.
        let collision = topic_collision_key(&topic.name);
        if self
            .image
            .topic_ids
            .keys()
            .any(|existing| topic_collision_key(existing) == collision)
        {
            return Err(ErrorCode::InvalidTopic);
        }
        if let Some(topic_id) = topic.topic_id {
            if placement::is_reserved_topic_id(topic_id) {
                return Err(ErrorCode::InvalidRequest);
            }
            if self.image.topics.contains_key(&topic_id) {
                return Err(ErrorCode::TopicAlreadyExists);
            }
        }
        let partition_count = match topic.partitions {
            -1 => self.config.default_partition_count,
            count if count >= 1 && count <= self.config.topic_partition_count_max => count,
            _ => return Err(ErrorCode::InvalidPartitions),
        };
        let replication_factor = match topic.replication_factor {
            -1 => self.config.default_replication_factor,
            factor if factor >= 1 => factor,
            _ => return Err(ErrorCode::InvalidReplicationFactor),
        };
        let live_brokers = self.image.live_brokers();
        let replication_factor = replication_factor as usize;
        if replication_factor > live_brokers.len() {
            return Err(ErrorCode::InvalidReplicationFactor);
        }
        if placement::validate_topic_configs(&topic.configs).is_err() {
            return Err(ErrorCode::InvalidConfig);
        }

        let topic_offset = self.image.next_offset;
        let topic_id = match topic.topic_id {
            Some(topic_id) => topic_id,
            None => (0..TOPIC_ID_ATTEMPTS_MAX)
                .map(|attempt| derive_topic_id(self.cluster, &topic.name, topic_offset, attempt))
                .find(|topic_id| {
                    !placement::is_reserved_topic_id(*topic_id)
                        && !self.image.topics.contains_key(topic_id)
                })
                .expect("a free topic id within the attempt bound"),
        };
        let assignment =
            assign_replicas(&live_brokers, partition_count, replication_factor, topic_id);
        assert_eq!(assignment.len(), partition_count as usize);
        self.stage(MetadataRecord::Topic {
            name: topic.name.clone(),
            topic_id,
        });
        for (name, value) in &topic.configs {
            self.stage(MetadataRecord::Config {
                resource: crate::metadata::ConfigResource::Topic(topic.name.clone()),
                name: name.clone(),
                value: Some(value.clone()),
            });
        }
        for (partition, replicas) in assignment.into_iter().enumerate() {
            let leader = replicas[0];
            self.stage(MetadataRecord::Partition(PartitionRecord {
                topic_id,
                partition: partition as i32,
                isr: replicas.clone(),
                replicas,
                leader: Some(leader),
                leader_epoch: 0,
                partition_epoch: 0,
                eligible_leader_replicas: Vec::new(),
                last_known_elr: Vec::new(),
            }));
        }
        Ok(topic_id)
    }

    pub(super) fn handle_metadata(&self, topics: Option<&[String]>) -> Response {
        Response::Cluster(ClusterResponse::Metadata {
            brokers: self.image.live_brokers(),
            topics: self.image.describe_topics(topics),
        })
    }
}
