//! Completing a transaction: the WriteTxnMarkers to every partition's leader, retried until
//! each is acknowledged, and the timers (transaction timeouts, expired transactional ids,
//! marker retries).

use super::*;
use crate::protocol::{ProducerEpoch, ProducerId, ReplicaRequest, ReplicaResponse};

/// The marker phase of one transaction (Kafka's `TxnMarkerEntry` plus the completion write).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct MarkerJob {
    pub(super) producer_id: i64,
    pub(super) producer_epoch: i16,
    pub(super) committed: bool,
    /// Partitions whose marker must be sent (again).
    pub(super) unsent: BTreeSet<TopicPartition>,
    /// Partitions whose marker is in a request in flight.
    pub(super) in_flight: BTreeSet<TopicPartition>,
    /// When to send `unsent` again, or to retry the completion write.
    pub(super) retry_at_ms: Option<i64>,
    /// The Complete write is in flight.
    pub(super) completing: bool,
}

impl MarkerJob {
    pub(super) fn all_acknowledged(&self) -> bool {
        self.unsent.is_empty() && self.in_flight.is_empty()
    }
}

/// Work in progress for a transactional id; its presence means CONCURRENT_TRANSACTIONS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Progress {
    /// A write (other than the completion write) is in flight.
    Writing,
    /// Markers, then the completion write.
    Completing(MarkerJob),
}

/// A WriteTxnMarkers request in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct MarkerRequest {
    pub(super) transactional_id: String,
    pub(super) partitions: Vec<TopicPartition>,
}

impl TransactionCoordinatorShard {
    /// Starts the marker phase of `transactional_id`, which must be durable in Prepare*.
    pub(super) fn start_markers(
        &mut self,
        env: &ShardEnv<'_>,
        transactional_id: &str,
        out: &mut ShardOutput<TransactionRecord>,
    ) {
        let metadata = &self.transactions[transactional_id];
        assert!(
            metadata.state.is_prepare(),
            "markers for {transactional_id} in {:?}",
            metadata.state
        );
        let job = MarkerJob {
            producer_id: metadata.producer_id,
            producer_epoch: metadata.producer_epoch,
            committed: metadata.state == TransactionState::PrepareCommit,
            unsent: metadata.partitions.clone(),
            in_flight: BTreeSet::new(),
            retry_at_ms: None,
            completing: false,
        };
        self.in_progress
            .insert(transactional_id.to_owned(), Progress::Completing(job));
        self.send_markers(env, transactional_id, out);
    }

    /// Sends the markers not yet acknowledged, one request per current leader.
    pub(super) fn send_markers(
        &mut self,
        env: &ShardEnv<'_>,
        transactional_id: &str,
        out: &mut ShardOutput<TransactionRecord>,
    ) {
        let Some(Progress::Completing(job)) = self.in_progress.get_mut(transactional_id) else {
            return;
        };
        job.retry_at_ms = None;
        let mut by_leader: BTreeMap<BrokerId, Vec<TopicPartition>> = BTreeMap::new();
        for topic_partition in std::mem::take(&mut job.unsent) {
            match env.image.partition(&topic_partition) {
                // The partition is gone: nobody can read the transaction there any more.
                None => {}
                Some(record) => match record.leader {
                    Some(leader) => by_leader.entry(leader).or_default().push(topic_partition),
                    // No leader right now: try again after the backoff.
                    None => {
                        job.unsent.insert(topic_partition);
                    }
                },
            }
        }
        for (leader, partitions) in by_leader {
            let token = self.next_token;
            self.next_token += 1;
            job.in_flight.extend(partitions.iter().cloned());
            let marker = TxnMarker {
                producer_id: ProducerId(job.producer_id),
                producer_epoch: ProducerEpoch(job.producer_epoch),
                committed: job.committed,
                coordinator_epoch: env.coordinator_epoch,
                partitions: partitions.clone(),
            };
            let to = NodeId::Broker(env.node_id.cluster(), leader);
            out.requests.push((
                to,
                Request::Replica(ReplicaRequest::WriteTxnMarkers {
                    markers: vec![marker],
                }),
                token,
            ));
            self.marker_requests.insert(
                token,
                MarkerRequest {
                    transactional_id: transactional_id.to_owned(),
                    partitions,
                },
            );
        }
        if !job.unsent.is_empty() {
            job.retry_at_ms = Some(env.now_ms + self.config.retry_backoff_ms);
        }
        self.maybe_complete(env, transactional_id, out);
    }

    /// Writes Complete* once every marker is acknowledged.
    pub(super) fn maybe_complete(
        &mut self,
        env: &ShardEnv<'_>,
        transactional_id: &str,
        out: &mut ShardOutput<TransactionRecord>,
    ) {
        let Some(Progress::Completing(job)) = self.in_progress.get_mut(transactional_id) else {
            return;
        };
        if !job.all_acknowledged() || job.completing || job.retry_at_ms.is_some() {
            return;
        }
        job.completing = true;
        let committed = job.committed;
        let current = self.transactions[transactional_id].clone();
        let mut metadata = TransactionMetadata {
            state: if committed {
                TransactionState::CompleteCommit
            } else {
                TransactionState::CompleteAbort
            },
            partitions: BTreeSet::new(),
            last_update_ms: env.now_ms,
            ..current
        };
        if metadata.next_producer_id != NO_PRODUCER_ID {
            // Transaction version 2 exhausted the epoch at EndTxn: the markers went out under
            // the old id at `i16::MAX`, and the producer goes on with the fresh id (Kafka's
            // `prepareComplete`).
            metadata.last_producer_id = metadata.producer_id;
            metadata.producer_id = metadata.next_producer_id;
            metadata.producer_epoch = 0;
            metadata.last_producer_epoch = NO_PRODUCER_EPOCH;
            metadata.next_producer_id = NO_PRODUCER_ID;
        }
        self.write_metadata(transactional_id, metadata, WritePurpose::Complete, out);
    }

    pub(super) fn handle_marker_response(
        &mut self,
        env: &ShardEnv<'_>,
        request: MarkerRequest,
        response: Result<Response, ErrorCode>,
        out: &mut ShardOutput<TransactionRecord>,
    ) {
        let transactional_id = request.transactional_id;
        let Some(Progress::Completing(job)) = self.in_progress.get_mut(&transactional_id) else {
            return;
        };
        let answers: BTreeMap<TopicPartition, ErrorCode> = match response {
            Ok(Response::Replica(ReplicaResponse::WriteTxnMarkers { results })) => results
                .into_iter()
                .filter(|(producer_id, _)| *producer_id == ProducerId(job.producer_id))
                .flat_map(|(_, partitions)| partitions)
                .collect(),
            // A timeout, or an answer of the wrong kind: retry every partition.
            _ => BTreeMap::new(),
        };
        let mut fenced = false;
        for topic_partition in request.partitions {
            job.in_flight.remove(&topic_partition);
            let error = answers
                .get(&topic_partition)
                .copied()
                .unwrap_or(ErrorCode::RequestTimedOut);
            match error {
                // Kafka's completion handler drops an acknowledged partition from the
                // in-memory metadata (`removePartition`; the log keeps the Prepare* record
                // whole), so a transaction left in Prepare* by a fenced marker names only the
                // partitions still waiting for theirs.
                ErrorCode::None => {
                    if let Some(metadata) = self.transactions.get_mut(&transactional_id) {
                        metadata.partitions.remove(&topic_partition);
                    }
                }
                ErrorCode::InvalidProducerEpoch | ErrorCode::TransactionCoordinatorFenced => {
                    fenced = true;
                }
                _ => {
                    job.unsent.insert(topic_partition);
                }
            }
        }
        if fenced {
            // A newer coordinator (or producer epoch) took over; stop here, as Kafka does.
            self.in_progress.remove(&transactional_id);
            self.marker_requests
                .retain(|_, request| request.transactional_id != transactional_id);
            return;
        }
        if !job.unsent.is_empty() && job.retry_at_ms.is_none() {
            job.retry_at_ms = Some(env.now_ms + self.config.retry_backoff_ms);
        }
        self.maybe_complete(env, &transactional_id, out);
    }

    /// When the coordinator acts on its own for `transactional_id`: aborts an Ongoing
    /// transaction once `txn_start_ms + timeout_ms < now`, expires an idle id after
    /// `transactional_id_expiration_ms`. `None` while work for the id is in progress.
    pub(super) fn timer_deadline(
        &self,
        transactional_id: &str,
        metadata: &TransactionMetadata,
    ) -> Option<i64> {
        if self.in_progress.contains_key(transactional_id) {
            return None;
        }
        let deadline = match metadata.state {
            TransactionState::Ongoing => metadata.txn_start_ms + metadata.timeout_ms + 1,
            state if state.is_idle() => {
                metadata.last_update_ms + self.config.transactional_id_expiration_ms
            }
            _ => return None,
        };
        let backoff = self.timer_backoff.get(transactional_id).copied();
        Some(backoff.map_or(deadline, |at| deadline.max(at)))
    }

    pub(super) fn abort_timed_out(
        &mut self,
        env: &ShardEnv<'_>,
        out: &mut ShardOutput<TransactionRecord>,
    ) {
        let timed_out: Vec<String> = self
            .transactions
            .iter()
            .filter(|(id, metadata)| {
                metadata.state == TransactionState::Ongoing
                    && self
                        .timer_deadline(id, metadata)
                        .is_some_and(|at| at <= env.now_ms)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for transactional_id in timed_out {
            let metadata = fence_metadata(&self.transactions[&transactional_id], env.now_ms);
            let purpose = WritePurpose::FenceAbort(None);
            self.write_metadata(&transactional_id, metadata, purpose, out);
        }
    }

    pub(super) fn expire_transactional_ids(
        &mut self,
        env: &ShardEnv<'_>,
        out: &mut ShardOutput<TransactionRecord>,
    ) {
        let expired: Vec<(String, i64)> = self
            .transactions
            .iter()
            .filter(|(id, metadata)| {
                metadata.state.is_idle()
                    && self
                        .timer_deadline(id, metadata)
                        .is_some_and(|at| at <= env.now_ms)
            })
            .map(|(id, metadata)| (id.clone(), metadata.producer_id))
            .collect();
        for (transactional_id, producer_id) in expired {
            let record = TransactionRecord::Tombstone {
                transactional_id: transactional_id.clone(),
                producer_id,
            };
            self.write(&transactional_id, record, WritePurpose::Expire, out);
        }
    }

    pub(super) fn retry_due_markers(
        &mut self,
        env: &ShardEnv<'_>,
        out: &mut ShardOutput<TransactionRecord>,
    ) {
        let due: Vec<String> = self
            .in_progress
            .iter()
            .filter(|(_, progress)| {
                matches!(progress, Progress::Completing(job)
                    if job.retry_at_ms.is_some_and(|at| at <= env.now_ms))
            })
            .map(|(id, _)| id.clone())
            .collect();
        for transactional_id in due {
            // Sends what is unsent (leaders resolved again), or retries the completion write.
            self.send_markers(env, &transactional_id, out);
        }
    }
}
