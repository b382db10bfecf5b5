//! WriteTxnMarkers on a partition leader: each marker appended with the coordinator's origin
//! and answered once the ISR has it (Kafka writes markers with acks=all), or refused.

use super::{ReplicaContext, ReplicaManager};
use crate::common::{LeaderEpoch, Offset};
use crate::events::BrokerEvent;
use crate::log::AppendOrigin;
use crate::protocol::{
    ErrorCode, NodeId, ProducerId, ReplicaResponse, Response, TopicPartition, TxnMarker,
};
use crate::record::{end_transaction_marker, MarkerProducer};
use crate::replica::storage::BrokerStorage;
use crate::replica::{Partition, Role};

/// How long a marker write may wait for the ISR.
const MARKER_TIMEOUT_MS: i64 = 1_000;

/// What KIP-1279's read-only gate says of one transaction marker for a partition this broker
/// leads. The gate's rules are the mirroring layer's (`crate::mirror::gate::marker_gate`); the
/// broker decides and the replica manager applies the answer, after its leadership checks and
/// before `min.insync.replicas`, as the prototype's check comes before the partition's append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerGate {
    /// Append it. `admitted_before_cut`: a mirror partition that is not writable admits it only
    /// because its log still holds this cluster's own writes alone (reported as
    /// `TxnMarkerAdmittedBeforeCut` once appended).
    Append {
        /// See above.
        admitted_before_cut: bool,
    },
    /// Acknowledge it without appending: nothing of its transaction is in this log.
    Moot,
    /// Refuse it with READ_ONLY_TOPIC.
    Refuse,
}

/// One partition of a WriteTxnMarkers request waiting for replication.
#[derive(Debug, Clone)]
struct MarkerEntry {
    producer_id: ProducerId,
    topic_partition: TopicPartition,
    leader_epoch: LeaderEpoch,
    required_offset: Offset,
    error: ErrorCode,
}

/// A WriteTxnMarkers request whose markers are appended but not yet replicated to the ISR.
#[derive(Debug, Clone)]
pub(super) struct DelayedMarkers {
    reply_to: NodeId,
    correlation_id: u64,
    entries: Vec<MarkerEntry>,
    pub(super) deadline_ms: i64,
}

impl<S: BrokerStorage> ReplicaManager<S> {
    /// Appends every marker of a WriteTxnMarkers request on each of its partitions (or notes
    /// why not), asking `gate` about each led partition; the answer waits for the ISR
    /// ([`ReplicaManager::complete_delayed_markers`]). Every partition's high watermark may
    /// move afterwards: the broker carries that on.
    pub fn append_txn_markers(
        &mut self,
        context: &mut ReplicaContext<'_>,
        from: NodeId,
        correlation_id: u64,
        markers: Vec<TxnMarker>,
        mut gate: impl FnMut(&TxnMarker, &TopicPartition, &Partition<S::Disk>) -> MarkerGate,
    ) {
        let mut entries = Vec::new();
        for marker in markers {
            for topic_partition in marker.partitions.clone() {
                entries.push(self.append_marker(context, &marker, topic_partition, &mut gate));
            }
        }
        self.delayed_markers.push(DelayedMarkers {
            reply_to: from,
            correlation_id,
            entries,
            deadline_ms: context.now_ms + MARKER_TIMEOUT_MS,
        });
    }

    /// Appends one marker as the partition's leader, or says why not.
    fn append_marker(
        &mut self,
        context: &mut ReplicaContext<'_>,
        marker: &TxnMarker,
        topic_partition: TopicPartition,
        gate: &mut impl FnMut(&TxnMarker, &TopicPartition, &Partition<S::Disk>) -> MarkerGate,
    ) -> MarkerEntry {
        let min_insync = self.min_insync_replicas(context.image, &topic_partition.topic);
        let mut entry = MarkerEntry {
            producer_id: marker.producer_id,
            topic_partition: topic_partition.clone(),
            leader_epoch: LeaderEpoch(-1),
            required_offset: Offset(-1),
            error: ErrorCode::None,
        };
        let Some(partition) = self.partitions.get_mut(&topic_partition) else {
            entry.error = ErrorCode::UnknownTopicOrPartition;
            return entry;
        };
        let Role::Leader(state) = &partition.role else {
            entry.error = ErrorCode::NotLeaderOrFollower;
            return entry;
        };
        let mirror_state = partition.mirror_state;
        let admitted_before_cut = match gate(marker, &topic_partition, partition) {
            MarkerGate::Append {
                admitted_before_cut,
            } => admitted_before_cut,
            MarkerGate::Moot => {
                // Acknowledged, nothing appended: no offset to wait for.
                entry.leader_epoch = state.leader_epoch;
                context.events.push(BrokerEvent::TxnMarkerMoot {
                    topic_partition,
                    committed: marker.committed,
                    mirror_state,
                });
                return entry;
            }
            MarkerGate::Refuse => {
                entry.error = ErrorCode::ReadOnlyTopic;
                context.events.push(BrokerEvent::TxnMarkerRefused {
                    topic_partition,
                    committed: marker.committed,
                    mirror_state,
                });
                return entry;
            }
        };
        // Markers are acks=all writes: refused below min.insync.replicas.
        if state.isr.len() < min_insync {
            entry.error = ErrorCode::NotEnoughReplicas;
            return entry;
        }
        let leader_epoch = state.leader_epoch;
        let batch = end_transaction_marker(
            MarkerProducer {
                producer_id: marker.producer_id.0,
                producer_epoch: marker.producer_epoch.0,
            },
            marker.committed,
            marker.coordinator_epoch,
            context.now_ms,
        );
        match partition.log.append_as_leader(
            &batch,
            leader_epoch,
            AppendOrigin::Coordinator,
            context.now_ms,
        ) {
            Ok(info) => {
                entry.leader_epoch = leader_epoch;
                entry.required_offset = info.last_offset + 1;
                if admitted_before_cut {
                    context
                        .events
                        .push(BrokerEvent::TxnMarkerAdmittedBeforeCut {
                            topic_partition,
                            committed: marker.committed,
                            mirror_state,
                        });
                }
            }
            Err(error) => entry.error = ErrorCode::from(&error),
        }
        entry
    }

    /// Whether a waiting marker write's deadline passed.
    pub fn marker_deadline_passed(&self, now_ms: i64) -> bool {
        self.delayed_markers
            .iter()
            .any(|delayed| now_ms >= delayed.deadline_ms)
    }

    /// Answers marker writes whose partitions all replicated (or failed, or timed out).
    pub fn complete_delayed_markers(&mut self, context: &mut ReplicaContext<'_>) {
        let pending = std::mem::take(&mut self.delayed_markers);
        for mut delayed in pending {
            let mut waiting = false;
            for entry in delayed.entries.iter_mut().filter(|e| e.error.is_none()) {
                let replica = self.partitions.get(&entry.topic_partition);
                let led = replica
                    .and_then(|p| p.leader_state().map(|s| (p, s.leader_epoch, s.isr.len())));
                match led {
                    Some((partition, epoch, isr_size)) if epoch == entry.leader_epoch => {
                        if partition.log.high_watermark() >= entry.required_offset {
                            entry.required_offset = Offset(-1);
                            let min_insync = self
                                .min_insync_replicas(context.image, &entry.topic_partition.topic);
                            if isr_size < min_insync {
                                entry.error = ErrorCode::NotEnoughReplicasAfterAppend;
                            }
                        } else if context.now_ms >= delayed.deadline_ms {
                            entry.error = ErrorCode::RequestTimedOut;
                        } else {
                            waiting = true;
                        }
                    }
                    _ => entry.error = ErrorCode::NotLeaderOrFollower,
                }
            }
            if waiting {
                self.delayed_markers.push(delayed);
                continue;
            }
            context.outbox.respond(
                delayed.reply_to,
                delayed.correlation_id,
                Response::Replica(ReplicaResponse::WriteTxnMarkers {
                    results: results_by_producer(delayed.entries),
                }),
            );
        }
    }
}

/// A WriteTxnMarkers answer: each producer's partitions with their errors, producers in the
/// order the request named them.
fn results_by_producer(
    entries: Vec<MarkerEntry>,
) -> Vec<(ProducerId, Vec<(TopicPartition, ErrorCode)>)> {
    let mut results: Vec<(ProducerId, Vec<(TopicPartition, ErrorCode)>)> = Vec::new();
    for entry in entries {
        match results
            .iter_mut()
            .find(|(producer_id, _)| *producer_id == entry.producer_id)
        {
            Some((_, partitions)) => partitions.push((entry.topic_partition, entry.error)),
            None => results.push((
                entry.producer_id,
                vec![(entry.topic_partition, entry.error)],
            )),
        }
    }
    results
}
