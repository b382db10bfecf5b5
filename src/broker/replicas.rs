//! The broker's side of its replica manager (`crate::replica::ReplicaManager`): requests and
//! answers routed to it, and what it reports carried on to the other components. A high
//! watermark that moves completes, in this order, the produces waiting on it, the transaction
//! markers waiting on it, the coordinator shard on the partition, and the fetches waiting for
//! data; a replica that becomes leader loads its coordinator shard, one that becomes follower
//! unloads it and is followed by the replica fetcher.

use super::*;
use crate::mirror::gate::{mirror_state_of, refuses_client_write, refuses_delete_records};
use crate::mirror::TopicMirrorConfig;
use crate::protocol::{Offset, ReplicaResponse, TopicName};
use crate::replica::WriteGate;

impl<S: BrokerStorage> Broker<S> {
    /// A Produce (verified, where KIP-890 asks for it: `txn_verification`) on the replica
    /// manager, with KIP-1279's read-only gate, and the high-watermark fan-out after it.
    pub(super) fn append_produce(&mut self, now_ms: i64, request: ProduceRequest) {
        let topic_partition = request.topic_partition.clone();
        let gate = self.write_gate(&topic_partition);
        let outcome =
            self.replicas
                .handle_produce(&mut replica_context!(self, now_ms), request, gate);
        if outcome == ProduceOutcome::Appended {
            self.maybe_increment_high_watermark(now_ms, &topic_partition);
            self.try_complete_delayed_fetches(now_ms);
        }
    }

    /// KIP-1279's read-only gate on a client write to `topic_partition`, as this broker's
    /// image and the replica's mirror state decide it (`crate::mirror::gate`).
    pub(super) fn write_gate(&self, topic_partition: &TopicPartition) -> WriteGate {
        let partition_state = self
            .replicas
            .partitions()
            .get(topic_partition)
            .map_or(MirrorState::Unknown, |partition| partition.mirror_state);
        let mirror_state = mirror_state_of(&self.image, &topic_partition.topic, partition_state);
        WriteGate {
            mirror_state,
            refused_in: refuses_client_write(mirror_state, &self.config.broken),
        }
    }

    /// DeleteRecords at the leader, with KIP-1279's gate (`crate::mirror::gate`): a mirror
    /// partition's records are deleted only once it is STOPPED.
    pub(super) fn handle_delete_records(
        &mut self,
        now_ms: i64,
        from: NodeId,
        correlation_id: u64,
        partitions: Vec<(TopicPartition, Offset)>,
    ) {
        let (image, broken) = (&self.image, &self.config.broken);
        let gate = |topic_partition: &TopicPartition, partition: &Partition<S::Disk>| {
            let mirror_state =
                mirror_state_of(image, &topic_partition.topic, partition.mirror_state);
            WriteGate {
                mirror_state,
                refused_in: refuses_delete_records(mirror_state, broken),
            }
        };
        self.replicas.handle_delete_records(
            &mut replica_context!(self, now_ms),
            from,
            correlation_id,
            partitions,
            gate,
        );
    }

    /// Moves `topic_partition`'s high watermark if its ISR allows, and when it moved runs
    /// everything that waited on it (see the module doc).
    pub(super) fn maybe_increment_high_watermark(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
    ) {
        if self
            .replicas
            .increment_high_watermark(&self.image, self.broker_id, topic_partition)
        {
            self.complete_delayed_produces(now_ms);
            self.complete_delayed_markers(now_ms);
            self.poll_coordinator(now_ms, topic_partition);
            self.try_complete_delayed_fetches(now_ms);
        }
    }

    pub(super) fn complete_delayed_produces(&mut self, now_ms: i64) {
        self.replicas
            .complete_delayed_produces(&mut replica_context!(self, now_ms));
    }

    /// The topic's `min.insync.replicas` (the coordinators' writes obey it too).
    pub(super) fn min_insync_replicas(&self, topic: &str) -> usize {
        self.replicas.min_insync_replicas(&self.image, topic)
    }

    #[allow(clippy::too_many_arguments)] // The fields of one Fetch request, unpacked.
    pub(super) fn handle_fetch(
        &mut self,
        now_ms: i64,
        (from, principal): (NodeId, Option<&str>),
        correlation_id: u64,
        replica_id: Option<BrokerId>,
        isolation: FetchIsolation,
        max_wait_ms: i64,
        max_bytes: usize,
        partitions: Vec<FetchPartition>,
    ) {
        let refused = self.unreadable_partitions(principal, &partitions);
        if !refused.is_empty() {
            // An error answers at once, with what the other partitions hold now.
            let readable: Vec<FetchPartition> = (0..partitions.len())
                .filter(|index| !refused.contains(index))
                .map(|index| partitions[index].clone())
                .collect();
            let read =
                self.read_fetch_partitions(now_ms, replica_id, isolation, max_bytes, &readable);
            let answers = Self::merge_refused_fetch_answers(&partitions, &refused, read);
            let response = Response::Replica(ReplicaResponse::Fetch {
                partitions: answers,
            });
            self.outbox.respond(from, correlation_id, response);
            return;
        }
        let answers =
            self.read_fetch_partitions(now_ms, replica_id, isolation, max_bytes, &partitions);
        if fetch_answer_ready(&answers) || max_wait_ms <= 0 {
            self.outbox.respond(
                from,
                correlation_id,
                Response::Replica(ReplicaResponse::Fetch {
                    partitions: answers,
                }),
            );
            return;
        }
        self.replicas.delay_fetch(DelayedFetch {
            reply_to: from,
            correlation_id,
            replica_id,
            isolation,
            max_bytes,
            partitions,
            deadline_ms: now_ms + max_wait_ms,
        });
    }

    /// Reads a Fetch's partitions; a follower's progress may then grow the ISR and move the
    /// high watermark, partition by partition.
    fn read_fetch_partitions(
        &mut self,
        now_ms: i64,
        replica_id: Option<BrokerId>,
        isolation: FetchIsolation,
        max_bytes: usize,
        partitions: &[FetchPartition],
    ) -> Vec<FetchPartitionResponse> {
        let read = self.replicas.read_fetch_partitions(
            &mut replica_context!(self, now_ms),
            replica_id,
            isolation,
            max_bytes,
            partitions,
        );
        for topic_partition in read.followed {
            if let Some(follower) = replica_id {
                self.replicas.maybe_expand_isr(
                    &mut replica_context!(self, now_ms),
                    &topic_partition,
                    follower,
                );
            }
            self.maybe_increment_high_watermark(now_ms, &topic_partition);
        }
        read.answers
    }

    /// Answers delayed fetches that now have data (or whose wait ran out).
    pub(super) fn try_complete_delayed_fetches(&mut self, now_ms: i64) {
        let pending = self.replicas.take_delayed_fetches();
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
                    Response::Replica(ReplicaResponse::Fetch {
                        partitions: answers,
                    }),
                );
            } else {
                self.replicas.delay_fetch(fetch);
            }
        }
    }

    pub(super) fn handle_alter_partition_response(
        &mut self,
        now_ms: i64,
        correlation_id: u64,
        error: ErrorCode,
        record: Option<PartitionRecord>,
    ) {
        let changed = self.replicas.handle_alter_partition_response(
            &mut replica_context!(self, now_ms),
            correlation_id,
            error,
            record,
        );
        if let Some(topic_partition) = changed {
            self.after_isr_change(now_ms, &topic_partition);
        }
    }

    pub(super) fn after_isr_change(&mut self, now_ms: i64, topic_partition: &TopicPartition) {
        // A smaller ISR can let the high watermark move; a larger one can make acks=all
        // produces fail with NotEnoughReplicasAfterAppend less often.
        self.maybe_increment_high_watermark(now_ms, topic_partition);
        self.complete_delayed_produces(now_ms);
    }

    /// The session applied fetched metadata: once ready, bring replicas, coordinators and
    /// mirror components in line with the image, and open the listeners the first time.
    pub(super) fn after_metadata(&mut self, now_ms: i64, applied: bool) {
        if applied && self.session.metadata_ready() {
            for topic_partition in self.replicas.drop_deleted_topics(&self.image) {
                self.fetcher.forget(&topic_partition);
                self.events
                    .push(BrokerEvent::PartitionRemoved { topic_partition });
            }
            self.tell_coordinators_of_deleted_topics(now_ms);
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

    /// Tells the coordinator shards this broker hosts which topics the image dropped since the
    /// last call (deleted, or deleted and created again under the same name): the group
    /// coordinator deletes their committed offsets. A topic deleted while this broker was
    /// down is not reported (its first image after a restart has nothing to compare with), as
    /// Kafka's metadata publisher reports deletions from the deltas it applies.
    fn tell_coordinators_of_deleted_topics(&mut self, now_ms: i64) {
        let deleted: Vec<TopicName> = self
            .topic_ids_seen
            .iter()
            .filter(|(name, id)| self.image.topic_ids.get(name.as_str()) != Some(id))
            .map(|(name, _)| TopicName::from(name.as_str()))
            .collect();
        if self.topic_ids_seen != self.image.topic_ids {
            self.topic_ids_seen = self.image.topic_ids.clone();
        }
        if deleted.is_empty() {
            return;
        }
        let hosted: Vec<TopicPartition> = self
            .coordinators
            .shards()
            .map(|(partition, _)| partition.clone())
            .collect();
        for partition in hosted {
            self.with_coordinator(now_ms, &partition, |host, context| {
                host.topics_deleted(context, &deleted)
            });
        }
    }

    /// Opens the listeners once the image shows this incarnation's registration and handles
    /// the requests held until then, in arrival order.
    pub(super) fn open_listeners(&mut self, now_ms: i64) {
        self.serving_requests = true;
        for envelope in std::mem::take(&mut self.held_requests) {
            if let Message::Request(correlation_id, request) = envelope.message {
                let from = (envelope.from, envelope.principal.as_deref());
                self.handle_request(now_ms, from, correlation_id, request);
            }
        }
    }

    /// Brings every local replica's role in line with the metadata image, partition by
    /// partition, each change carried on before the next.
    fn reconcile_partitions(&mut self, now_ms: i64) {
        for (topic_partition, record) in ReplicaManager::<S>::assigned(&self.image, self.broker_id)
        {
            if !self.replicas.ensure_replica(&topic_partition, &record) {
                continue;
            }
            let mirror_topic = self
                .image
                .mirror_desired_state(&topic_partition.topic)
                .is_some();
            let change = self.replicas.apply_partition_record(
                &mut replica_context!(self, now_ms),
                &topic_partition,
                &record,
                mirror_topic,
            );
            self.carry_replica_change(now_ms, &topic_partition, change);
        }
    }

    fn carry_replica_change(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        change: ReplicaChange,
    ) {
        match change {
            ReplicaChange::Unchanged => {}
            ReplicaChange::LeaderIsrUpdated => self.after_isr_change(now_ms, topic_partition),
            ReplicaChange::BecameLeader => {
                // As Kafka's `makeLeader`: an ISR of the leader alone commits its whole log now.
                self.maybe_increment_high_watermark(now_ms, topic_partition);
                self.load_coordinator(now_ms, topic_partition);
            }
            ReplicaChange::BecameFollower { leader } => {
                self.unload_coordinator(topic_partition);
                self.complete_delayed_markers(now_ms);
                if let Some(leader) = leader {
                    self.fetcher.follow(leader);
                }
            }
        }
    }
}
