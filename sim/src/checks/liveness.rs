//! What liveness asks of transactions and admin operations once the heal phase ends: nothing left
//! unanswered, nothing left open that something will still close.

use mirrorsim::common::{Offset, ProducerId};
use std::collections::{BTreeMap, BTreeSet};

use super::*;

use mirrorsim::coordinator::transaction::TransactionMetadata;
use mirrorsim::mirror::TopicMirrorConfig;
use mirrorsim::protocol::{ClusterIndex, TopicPartition};

use super::invariants::{Invariant, Violation};
use super::reads::{cluster_of_value, record_value_at_is, LeaderLogs};
use super::view::{broker_view, current_leader, BrokerView, ControllerView};
use crate::world::workload::History;

/// Admin timeline operations still without an outcome after healing: every operation ends,
/// accepted or refused, once its controller answers.
pub(super) fn unfinished_admin_ops(time_ms: i64, history: &History) -> Vec<Violation> {
    history
        .admin_ops
        .iter()
        .filter(|record| record.outcome.is_none())
        .map(|record| Violation {
            invariant: Invariant::Liveness,
            cluster: Some(record.op.cluster),
            topic_partition: None,
            detail: format!("admin op {record} after healing"),
            time_ms,
        })
        .collect()
}

/// Transactions still completing (PrepareCommit or PrepareAbort) at the shard of their
/// current transaction coordinator after healing: a healed cluster writes every marker within
/// a few retries, so one left there is stuck for good and its producer gets
/// CONCURRENT_TRANSACTIONS forever (issue #14: markers a mirror partition refuses as read-only).
/// Nothing else sees this: the producer's sends have all failed by then, and the partitions
/// the markers are for may hold no data of the transaction. A transaction excused by
/// [`marker_fenced_after_coordinator_rollback`] is counted instead (the second value).
pub(super) fn unfinished_transactions(
    time_ms: i64,
    controllers: &[ControllerView<'_>],
    brokers: &[BrokerView<'_>],
    lost_committed_data: impl Fn(ClusterIndex, &TopicPartition) -> bool,
) -> (Vec<Violation>, u64) {
    let mut excused = 0;
    use mirrorsim::coordinator::runtime::ShardHost;
    use mirrorsim::coordinator::transaction::TransactionCoordinatorShard;
    use mirrorsim::coordinator::TRANSACTION_STATE_TOPIC;
    let mut out = Vec::new();
    for controller in controllers {
        let image = controller.controller.image();
        for (tp, record) in image
            .all_partitions()
            .filter(|(tp, _)| tp.topic == TRANSACTION_STATE_TOPIC)
        {
            let shard = record.leader.and_then(|leader| {
                broker_view(brokers, controller.cluster, leader).and_then(|view| {
                    view.broker
                        .hosted_coordinators()
                        .find(|(partition, _)| **partition == tp)
                        .and_then(|(_, host)| {
                            host.downcast_ref::<ShardHost<TransactionCoordinatorShard>>()
                        })
                })
            });
            let Some(shard) = shard.map(ShardHost::shard) else {
                continue; // The general check reports a partition without a leader.
            };
            let rolled_back = lost_committed_data(controller.cluster, &tp);
            for (transactional_id, metadata) in shard.transactions() {
                if !metadata.state.is_prepare() {
                    continue;
                }
                let epoch_at = |partition: &TopicPartition| {
                    let (_, log) =
                        current_leader(controllers, brokers, controller.cluster, partition)?;
                    let entry = log
                        .producer_state()
                        .producer(ProducerId(metadata.producer_id))?;
                    Some(entry.producer_epoch.0)
                };
                if marker_fenced_after_coordinator_rollback(metadata, rolled_back, epoch_at) {
                    excused += 1;
                    continue;
                }
                let partitions: Vec<String> = metadata
                    .partitions
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                out.push(Violation {
                    invariant: Invariant::Liveness,
                    cluster: Some(controller.cluster),
                    topic_partition: metadata.partitions.first().cloned(),
                    detail: format!(
                        "transaction {transactional_id} (producer id {}) is still {:?} at its coordinator after healing: markers unwritten on [{}]",
                        metadata.producer_id,
                        metadata.state,
                        partitions.join(",")
                    ),
                    time_ms,
                });
            }
        }
    }
    (out, excused)
}

/// Whether a transaction left in Prepare* is one its coordinator re-started from a rolled-back
/// `__transaction_state`, whose markers the partitions still waiting for them fence: the
/// coordinator's partition lost committed data (`rolled_back`: a one-replica power loss of its
/// unflushed tail), and on every partition the coordinator still lists (an acknowledged one is
/// dropped from its in-memory metadata, as Kafka's `removePartition` does) the current
/// leader's producer state holds the transaction's producer id at an epoch above the one the
/// markers carry (`epoch_at`). The lost records had moved the transactional id on (a
/// timeout's fencing abort bumped the epoch, its ABORT marker reached a partition whose log
/// kept it); the
/// reloaded coordinator resends the old transaction's markers at the old epoch, the leader
/// answers INVALID_PRODUCER_EPOCH, and Kafka's `TransactionMarkerRequestCompletionHandler`
/// drops the transaction's markers as fenced (`removeMarkersForTxn`), leaving it in Prepare*
/// at that coordinator, as here. Kafka's durability is replication: a single replica's
/// power loss promises nothing for the records it had not flushed. Without the loss, or with
/// one partition still at the markers' epoch (a marker it would take), the check stands.
pub(super) fn marker_fenced_after_coordinator_rollback(
    metadata: &TransactionMetadata,
    rolled_back: bool,
    epoch_at: impl Fn(&TopicPartition) -> Option<i16>,
) -> bool {
    rolled_back
        && !metadata.partitions.is_empty()
        && metadata.partitions.iter().all(|partition| {
            epoch_at(partition).is_some_and(|epoch| epoch > metadata.producer_epoch)
        })
}

/// Whether a READ_COMMITTED reader could not reach `send`'s record because a transaction its
/// coordinator lost (`forgotten`, see [`Checkers::hanging_after_coordinator_loss`]) holds the
/// last stable offset below it.
pub(super) fn above_forgotten_txn(
    logs: &dyn LeaderLogs,
    forgotten: &BTreeSet<(ClusterIndex, TopicPartition)>,
    offset: i64,
    send: &crate::world::workload::SendRecord,
) -> bool {
    let tp = &send.topic_partition;
    let cluster = cluster_of_value(&send.value);
    forgotten.contains(&(cluster, tp.clone()))
        && logs
            .leader_log(cluster, tp)
            .is_some_and(|log| offset >= log.last_stable_offset().0)
}

/// The transaction coordinator of `cluster` for `transactional_id`, if its `__transaction_state`
/// partition's current leader has loaded it: that partition, and the metadata the shard holds
/// for the id (`None`: it knows no such id).
pub(super) fn transaction_coordinator_view<'a>(
    controllers: &[ControllerView<'_>],
    brokers: &'a [BrokerView<'_>],
    cluster: ClusterIndex,
    transactional_id: &str,
) -> Option<(TopicPartition, Option<&'a TransactionMetadata>)> {
    use mirrorsim::coordinator::runtime::ShardHost;
    use mirrorsim::coordinator::transaction::TransactionCoordinatorShard;
    let controller = controllers.iter().find(|view| view.cluster == cluster)?;
    let tp = transaction_state_partition(controllers, cluster, transactional_id)?;
    let leader = controller.controller.image().partition(&tp)?.leader?;
    let view = broker_view(brokers, cluster, leader)?;
    let shard = view
        .broker
        .hosted_coordinators()
        .find(|(partition, _)| **partition == tp)
        .and_then(|(_, host)| host.downcast_ref::<ShardHost<TransactionCoordinatorShard>>())?
        .shard();
    Some((tp, shard.transaction(transactional_id)))
}

/// The `__transaction_state` partition of `cluster` that holds `transactional_id`'s state, once
/// the controller's image has the topic.
pub(super) fn transaction_state_partition(
    controllers: &[ControllerView<'_>],
    cluster: ClusterIndex,
    transactional_id: &str,
) -> Option<TopicPartition> {
    use mirrorsim::coordinator::{partition_count, partition_for, TRANSACTION_STATE_TOPIC};
    let controller = controllers.iter().find(|view| view.cluster == cluster)?;
    let partitions = partition_count(controller.controller.image(), TRANSACTION_STATE_TOPIC);
    (partitions > 0).then(|| {
        TopicPartition::new(
            TRANSACTION_STATE_TOPIC,
            partition_for(transactional_id, partitions),
        )
    })
}

/// The mirror partitions whose open transaction is their source's hanging one (`hung`:
/// partition → last stable offset, of partitions whose open transaction nothing will close):
/// a destination that still mirrors or pauses the topic, whose current leader's last stable
/// offset is below its high watermark at the offset where its source's (or, along a chain,
/// its source's source's) hanging transaction begins. Offsets are the source's, so that is
/// the same transaction, mirrored before its marker was lost; the source writes no marker
/// to mirror, and a mirror fetch reads no further than the source's last stable offset
/// (generator seed 9700000000001103: a's one-replica payments-2 lost the marker of the
/// transaction at 694 in a power loss, and b, mirroring it, held 694 open and fetched
/// nothing above it).
pub(super) fn hanging_mirrored_from_source(
    controllers: &[ControllerView<'_>],
    brokers: &[BrokerView<'_>],
    hung: &BTreeMap<(ClusterIndex, TopicPartition), i64>,
) -> BTreeSet<(ClusterIndex, TopicPartition)> {
    use mirrorsim::mirror::DesiredState;
    let mut inherited: BTreeMap<(ClusterIndex, TopicPartition), i64> = BTreeMap::new();
    // Along a chain each pass reaches one cluster further; a world has at most a few.
    for _ in 0..controllers.len() {
        let mut grew = false;
        for controller in controllers {
            let image = controller.controller.image();
            for (tp, _) in image.all_partitions() {
                let key = (controller.cluster, tp.clone());
                if hung.contains_key(&key) || inherited.contains_key(&key) {
                    continue;
                }
                let mirroring = image
                    .mirror_desired_state(&tp.topic)
                    .is_some_and(|desired| !matches!(desired, DesiredState::Stopped { .. }));
                let Some(source) =
                    crate::checks::mirror::mirror_source_in(image, &tp.topic).filter(|_| mirroring)
                else {
                    continue;
                };
                let Some((_, log)) = current_leader(controllers, brokers, controller.cluster, &tp)
                else {
                    continue;
                };
                let lso = log.last_stable_offset();
                let source_key = (source, tp.clone());
                let source_lso = hung.get(&source_key).or_else(|| inherited.get(&source_key));
                if lso < log.high_watermark() && source_lso == Some(&lso.0) {
                    inherited.insert(key, lso.0);
                    grew = true;
                }
            }
        }
        if !grew {
            break;
        }
    }
    inherited.into_keys().collect()
}

impl Checkers {
    /// Liveness at the end of the heal phase.
    pub fn check_liveness(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
        history: &History,
    ) -> Vec<Violation> {
        // A source loss is excused only where the source's log did lose records: a lost
        // committed tail, or a mirroring cut of its own (a chain's middle cluster).
        let lost_on: BTreeSet<(ClusterIndex, TopicPartition)> = self
            .losses
            .keys()
            .chain(self.mirror_truncations.keys())
            .cloned()
            .collect();
        let (mut out, excused) = crate::checks::mirror::check_mirror_liveness(
            time_ms,
            controllers,
            brokers,
            (&self.failed_on_source_loss, &lost_on),
            &self
                .failed_on_fault_silence
                .iter()
                .filter(|(_, awaits)| **awaits)
                .map(|(key, _)| key.clone())
                .collect(),
            |destination, tp, source| self.mirror.source_life_ended_under(destination, tp, source),
        );
        self.mark_times("liveness-mirror-loop-retrying", excused.loops);
        self.mark_times("liveness-source-topic-missing", excused.source_missing);
        self.mark_times("liveness-source-lost-records", excused.source_lost_records);
        self.mark_times("liveness-source-topic-recreated", excused.source_recreated);
        self.mark_times(
            "liveness-failed-awaiting-operator",
            excused.awaiting_operator,
        );
        let (kept_lost, judged) = crate::checks::mirror::check_source_loss_kept(
            time_ms,
            self.mirror.design,
            controllers,
            brokers,
            |cluster, tp| self.lost_from(cluster, tp),
        );
        out.extend(kept_lost);
        self.mark_times("liveness-source-loss-kept-judged", judged);
        let (unsynced, judged) = crate::checks::mirror::source_sync::check_source_sync(
            time_ms,
            controllers,
            &self.admin_world,
            &history.admin_ops,
        );
        out.extend(unsynced);
        self.mark_times("liveness-adoption-judged", judged.adoptions);
        self.mark_times("liveness-exclusion-judged", judged.exclusions);
        self.mark_times("liveness-rediscovery-judged", judged.rediscoveries);
        self.mark_times("liveness-topic-config-sync-judged", judged.configs);
        self.mark_times("liveness-acl-sync-judged", judged.acls);
        self.mark_times(
            "acl-sync-several-sources-unjudged",
            judged.acls_several_sources,
        );
        self.mark_times(
            "acl-overwritten-at-source",
            judged.acls_overwritten_at_source,
        );
        // Partitions held by a transaction its coordinator lost (see
        // `hanging_after_coordinator_loss`).
        let mut forgotten_txns = BTreeSet::new();
        // Partitions whose open transaction nothing will close, with their last stable offset.
        let mut hung: BTreeMap<(ClusterIndex, TopicPartition), i64> = BTreeMap::new();
        for controller in controllers {
            for (tp, _) in controller.controller.image().all_partitions() {
                let Some((_, log)) = current_leader(controllers, brokers, controller.cluster, &tp)
                else {
                    continue;
                };
                let hanging = self.hanging_after_loss(controller.cluster, &tp, log);
                if hanging {
                    self.mark("hanging-txn-after-loss");
                }
                let forgotten = !hanging
                    && self.hanging_after_coordinator_loss(controller.cluster, &tp, log, |id| {
                        transaction_coordinator_view(controllers, brokers, controller.cluster, id)
                    });
                if forgotten {
                    self.mark("hanging-txn-after-coordinator-loss");
                    forgotten_txns.insert((controller.cluster, tp.clone()));
                }
                if hanging || forgotten {
                    hung.insert((controller.cluster, tp), log.last_stable_offset().0);
                }
            }
        }
        let inherited = hanging_mirrored_from_source(controllers, brokers, &hung);
        if !inherited.is_empty() {
            *self
                .marks
                .entry("hanging-txn-mirrored-from-source".into())
                .or_default() += inherited.len() as u64;
        }
        for controller in controllers {
            for (tp, record) in controller.controller.image().all_partitions() {
                let leader_log = current_leader(controllers, brokers, controller.cluster, &tp);
                let key = (controller.cluster, tp.clone());
                let hanging = hung.contains_key(&key) || inherited.contains(&key);
                let problem = if record.leader.is_none() {
                    Some("no leader".to_string())
                } else if let Some((_, log)) = leader_log
                    .filter(|(_, log)| log.last_stable_offset() < log.high_watermark())
                    .filter(|_| !hanging)
                {
                    Some(format!(
                        "a transaction is still open: last stable offset {} below high watermark {}",
                        log.last_stable_offset(),
                        log.high_watermark()
                    ))
                } else if record.isr.len() != record.replicas.len() {
                    Some(format!(
                        "ISR {:?} short of replicas {:?}",
                        record.isr, record.replicas
                    ))
                } else {
                    None
                };
                if let Some(problem) = problem {
                    out.push(Violation {
                        invariant: Invariant::Liveness,
                        cluster: Some(controller.cluster),
                        topic_partition: Some(tp),
                        detail: problem,
                        time_ms,
                    });
                }
            }
        }
        for (tp, offset, value) in history.acked() {
            let cluster = cluster_of_value(value);
            let Some((_, log)) = current_leader(controllers, brokers, cluster, tp) else {
                continue;
            };
            if offset >= log.high_watermark().0 && log.high_watermark() < log.log_end_offset() {
                out.push(Violation {
                    invariant: Invariant::Liveness,
                    cluster: Some(cluster),
                    topic_partition: Some(tp.clone()),
                    detail: format!(
                        "acknowledged offset {offset} still above the high watermark {}",
                        log.high_watermark()
                    ),
                    time_ms,
                });
                break;
            }
        }
        // A killed client's outstanding sends never resolve: its process is gone.
        let alive = |key: &(NodeId, u64, u64)| !history.dead_incarnations.contains(&(key.0, key.1));
        let unresolved = history
            .sends
            .iter()
            .filter(|(key, send)| {
                alive(key) && send.acked_offset.is_none() && send.failed.is_none()
            })
            .count();
        if unresolved > 0 {
            let ((producer, incarnation, _), first) = history
                .sends
                .iter()
                .find(|(key, send)| {
                    alive(key) && send.acked_offset.is_none() && send.failed.is_none()
                })
                .expect("counted above");
            out.push(Violation {
                invariant: Invariant::Liveness,
                cluster: Some(producer.cluster()),
                topic_partition: Some(first.topic_partition.clone()),
                detail: format!(
                    "{unresolved} sends neither acknowledged nor failed after healing; first: {producer}#{incarnation} {:?} sent at {} ms",
                    first.value,
                    first.sent_ms
                ),
                time_ms,
            });
        }
        out.extend(unfinished_admin_ops(time_ms, history));
        let (stuck, rolled_back) =
            unfinished_transactions(time_ms, controllers, brokers, |cluster, tp| {
                self.lost_from(cluster, tp).is_some()
            });
        out.extend(stuck);
        self.mark_times("stuck-txn-after-coordinator-rollback", rolled_back);
        let logs = ViewLeaderLogs {
            controllers,
            brokers,
        };
        let outcome_lost_sends = std::cell::Cell::new(0);
        let enlist_lost_sends = std::cell::Cell::new(0);
        let ended_life_sends = std::cell::Cell::new(0);
        let commits_confirmed = commits_confirmed_at(history);
        // The final logs do not change while the history is checked: each is scanned for its
        // transactions' ends once, not once per unseen record.
        let txn_ends = std::cell::RefCell::new(TxnEndsMemo::default());
        let report = unseen(
            time_ms,
            history,
            |offset, send, read_committed| {
                let outcome_lost = || {
                    let lost = self.commit_lost_not_durable(
                        &logs,
                        &mut txn_ends.borrow_mut(),
                        offset,
                        send,
                    );
                    outcome_lost_sends.set(outcome_lost_sends.get() + u64::from(lost));
                    lost
                };
                let enlist_lost = || {
                    let completed_ms = commits_confirmed.get(send.value.as_str()).copied();
                    let cluster = cluster_of_value(&send.value);
                    let state = |id: &str| transaction_state_partition(controllers, cluster, id);
                    let lost = self.aborted_after_enlist_lost(
                        state,
                        &logs,
                        &mut txn_ends.borrow_mut(),
                        offset,
                        send,
                        completed_ms,
                    );
                    enlist_lost_sends.set(enlist_lost_sends.get() + u64::from(lost));
                    lost
                };
                let ended_life = || {
                    let ended = self.of_ended_topic_life(send);
                    ended_life_sends.set(ended_life_sends.get() + u64::from(ended));
                    ended
                };
                ended_life()
                    || self.dropped_by_mirroring(offset, send)
                    || self.lost_legally(&logs, offset, send)
                    || (read_committed && self.above_hanging_txn(&logs, offset, send))
                    || (read_committed && above_forgotten_txn(&logs, &forgotten_txns, offset, send))
                    || (read_committed && outcome_lost())
                    || (read_committed && enlist_lost())
            },
            |cluster, tp, offset, window| self.lost_between(cluster, tp, offset, window),
            |cluster, tp, offset| {
                let log = logs.leader_log(cluster, tp)?;
                let batch = log.batches_from(Offset(offset)).next()?;
                (batch.base_offset() <= offset).then(|| batch.partition_leader_epoch())
            },
        );
        out.extend(report.violations);
        self.mark_times(
            "unseen-read-by-group-on-other-cluster",
            report.read_elsewhere,
        );
        self.mark_times("unseen-jumped-over-loss", report.jumped_over_loss);
        self.mark_times(
            "unseen-read-newer-epoch-there",
            report.read_newer_epoch_there,
        );
        self.mark_times("unseen-topic-deleted-since", ended_life_sends.get());
        self.mark_times("unseen-commit-lost-not-durable", outcome_lost_sends.get());
        self.mark_times(
            "unseen-outside-commit-after-coordinator-loss",
            enlist_lost_sends.get(),
        );
        out
    }

    /// Whether a READ_COMMITTED reader may never receive `send`'s transactional record although
    /// its transaction was confirmed committed, because the COMMIT marker is gone: the topic is
    /// not durable, the final log still holds the record at its offset but not as committed,
    /// and a loss of committed data after the send kept the log above the record and at or
    /// below the control batch that now decides it. The loss took the COMMIT with the unflushed
    /// tail; the partition's leader then held the producer's transaction open from the record
    /// on, and the producer's next transaction under the same producer epoch (transaction
    /// version 1, no epoch bump per transaction) appended to it, so that transaction's ABORT
    /// aborted the record too, as it would in Kafka. The same loss excuses the record in
    /// `transaction-atomicity` (`txn-outcome-lost-not-durable`). Generator seed
    /// 9300000000000389: a's only replica of orders-2 held the record at 116 and its COMMIT at
    /// 117; a torn power loss at 3.75 s kept 0..117, and the producer's next transaction wrote
    /// 117 and an ABORT covering 116.
    pub(super) fn commit_lost_not_durable(
        &self,
        logs: &dyn LeaderLogs,
        txn_ends: &mut TxnEndsMemo,
        offset: i64,
        send: &crate::world::workload::SendRecord,
    ) -> bool {
        let (tp, value) = (&send.topic_partition, send.value.as_str());
        let cluster = cluster_of_value(value);
        if self.durable_topics.contains(&(cluster, tp.topic.clone())) {
            return false;
        }
        let Some(log) = logs.leader_log(cluster, tp) else {
            return false;
        };
        let holds_it = record_value_at_is(log, offset, value);
        if !holds_it {
            return false;
        }
        let Some(end) = txn_ends.end_at(cluster, tp, log, offset) else {
            return false;
        };
        end.outcome != TxnOutcome::Committed
            && self.outcome_lost_since(cluster, tp, offset, end.decided_at, send.sent_ms)
    }

    /// Whether a READ_COMMITTED reader may never receive `send`'s transactional record although
    /// its transaction was confirmed committed (at `completed_ms`), because its coordinator lost
    /// the partition's enlisting (see [`Checkers::enlist_lost_by_coordinator`]: a loss of the
    /// producer's `__transaction_state` partition between the send and the confirmation) and
    /// the final log holds the record at its offset in a transaction its producer's next ABORT
    /// there aborted: the COMMIT went only to the partitions the reloaded coordinator knew of,
    /// and the record stayed open until that ABORT, as `transaction-atomicity` excuses too
    /// (`txn-record-outside-commit-after-coordinator-loss`). Generator seed 9800000000000076:
    /// b-broker-1, b's only broker, answered b-producer-2's AddPartitionsToTxn of payments-0 at
    /// 4.619 s and lost that state record in a power loss at 4.620 s; after the restart the
    /// producer wrote t77 at payments-0 offset 0 (7.34 s), its EndTxn COMMIT (7.39 s) wrote
    /// markers to payments-1 and payments-2 only, and the next transaction's ABORT on
    /// payments-0 aborted t77 with its own records. A record the final log commits, does not
    /// hold at its offset or leaves open (`above_forgotten_txn` judges that), or a
    /// coordinator that lost nothing in that window, excuses nothing.
    /// `state_partition` gives a transactional id's `__transaction_state` partition.
    pub(super) fn aborted_after_enlist_lost(
        &self,
        state_partition: impl FnOnce(&str) -> Option<TopicPartition>,
        logs: &dyn LeaderLogs,
        txn_ends: &mut TxnEndsMemo,
        offset: i64,
        send: &crate::world::workload::SendRecord,
        completed_ms: Option<i64>,
    ) -> bool {
        let (tp, value) = (&send.topic_partition, send.value.as_str());
        let cluster = cluster_of_value(value);
        let Some(writer) = parse_value(value.as_bytes()) else {
            return false;
        };
        let transactional_id = crate::world::workload::transactional_id(&writer.producer);
        let enlist_lost = state_partition(&transactional_id).is_some_and(|state| {
            self.enlist_lost_by_coordinator(cluster, &state, send, completed_ms)
        });
        if !enlist_lost {
            return false;
        }
        let Some(log) = logs.leader_log(cluster, tp) else {
            return false;
        };
        let holds_it = record_value_at_is(log, offset, value);
        holds_it
            && txn_ends
                .end_at(cluster, tp, log, offset)
                .is_some_and(|end| end.outcome == TxnOutcome::Aborted)
    }

    /// Whether the open transaction that holds `log`'s last stable offset below its high
    /// watermark may be one whose marker a loss of committed data took: the topic is not
    /// durable, and a loss kept the log above the transaction's first record (the LSO), so
    /// its records survived and what came after them, its COMMIT or ABORT among it, may not
    /// have. Kafka leaves such a "hanging transaction" open until an operator aborts it
    /// (`kafka-transactions.sh abort`, KIP-664): its producer's coordinator has finished it and
    /// writes no marker again (generator seed 3307716073686216, a one-replica leader's power
    /// loss at 9.3 s keeping 0..54 with the transaction open at 53).
    pub(super) fn hanging_after_loss(
        &self,
        cluster: ClusterIndex,
        tp: &TopicPartition,
        log: &PartitionLog<MemoryDirDisk>,
    ) -> bool {
        let lso = log.last_stable_offset();
        lso < log.high_watermark()
            && !self.durable_topics.contains(&(cluster, tp.topic.clone()))
            && self
                .losses
                .get(&(cluster, tp.clone()))
                .is_some_and(|losses| losses.iter().any(|&(_, kept)| lso < Offset(kept)))
    }

    /// Whether a confirmed commit may have left `send`'s record, which the final log holds,
    /// outside the commit because its transaction coordinator lost the partition's enlisting:
    /// the producer's `__transaction_state` partition (`state_partition` of its cluster) lost
    /// committed data (its only replica's power loss, an unclean election) seen after the send
    /// and no later than the commit was confirmed (`completed_ms`). The coordinator had
    /// answered the AddPartitionsToTxn from a state record the loss took, and reloaded an
    /// older state without the partition; the producer's records there still went to the
    /// partition's leader, which appended them as Kafka does before KIP-890 (transaction
    /// version 1: no verification with the coordinator), and the EndTxn it confirmed wrote
    /// COMMIT markers to the partitions the coordinator knew of only. The record then stays
    /// open until the same producer epoch's next marker there closes it: an ABORT aborts it.
    /// `hanging_after_coordinator_loss` is the case no marker ever comes. Generator seeds
    /// 9400000000000169 and 9400000000002055: b's only broker lost, in a torn power loss, the
    /// record enlisting orders-1 it had answered just before; after the restart transaction
    /// 68 (39) wrote orders-1 at 86 (275), committed, and the next transaction's ABORT at 87
    /// (276) aborted the record. A loss seen before the send (the coordinator the producer
    /// enlisted with had already reloaded), after the confirmation (the coordinator that
    /// decided the commit knew what it had enlisted), of another cluster or of another
    /// transactional id's partition excuses nothing.
    ///
    /// The same loss leaves a confirmed abort's record outside the ABORT markers, open until
    /// the producer's next marker there: a COMMIT commits it (mark
    /// `txn-record-outside-abort-after-coordinator-loss`). `transaction-atomicity` asks this
    /// only when that COMMIT also commits a record of a transaction the producer was confirmed
    /// committed, so the COMMIT is that transaction's own. Generator seed 9800000000000909:
    /// a's only broker lost, in a power loss at 10.77 s, the `__transaction_state` record
    /// enlisting orders-2 for transaction 138 and all of orders-2; after the restart the
    /// producer's retried record landed at orders-2 offset 0, the reloaded coordinator's ABORT
    /// went to orders-0 and orders-3 only, and the producer's next transaction (epoch 1, after
    /// its epoch bump) wrote orders-2 at 1 and committed at 3, committing offset 0 with it, as
    /// Kafka's producer state does before KIP-890 (an open transaction's first offset survives
    /// an epoch bump; no verification with the coordinator).
    pub(super) fn enlist_lost_by_coordinator(
        &self,
        cluster: ClusterIndex,
        state_partition: &TopicPartition,
        send: &crate::world::workload::SendRecord,
        completed_ms: Option<i64>,
    ) -> bool {
        let Some(completed_ms) = completed_ms else {
            return false;
        };
        let key = (cluster, state_partition.clone());
        all_losses(&self.losses, &self.lost_tails, &key)
            .any(|(time_ms, _)| send.sent_ms <= time_ms && time_ms <= completed_ms)
    }

    /// Whether the open transaction that holds `log`'s last stable offset below its high
    /// watermark is one its transaction coordinator lost: the coordinator's `__transaction_state`
    /// partition lost committed data (its only replica's power loss, an unclean election), and
    /// the coordinator (`coordinator` gives, for a transactional id, its partition and what its
    /// loaded shard holds for it) does not hold this producer id's transaction open on the
    /// partition. The producer's AddPartitionsToTxn was answered from a state record the loss
    /// took, so its produce still went to the partition's leader, which appended it as Kafka
    /// does before KIP-890 (transaction version 1: no verification with the coordinator; a
    /// producer id the leader holds no state for may start at any sequence), and its EndTxn then
    /// found no such transaction (INVALID_PRODUCER_ID_MAPPING): no coordinator ever writes a
    /// marker or times the transaction out, and the LSO stays there until an operator aborts it
    /// (`kafka-transactions.sh abort`, KIP-664). Or the loss kept an older state of the
    /// producer id, the producer's next AddPartitionsToTxn opened a transaction there without
    /// the lost partition, and its EndTxn wrote markers to the others only. Generator seed
    /// 2292223553896731: b's only broker lost, in a power loss at 18.7 s, the Ongoing record
    /// enlisting orders-1 and orders-2 (and those partitions' records); after the restart the
    /// producer's first records there opened a transaction at offset 0 that nothing closes
    /// (`regressions/hanging_txn_after_coordinator_power_loss`, the second case, on orders-3).
    /// A coordinator that still holds the transaction open on the partition times it out or
    /// completes it, and one that lost nothing is trusted to have written every marker: neither
    /// is excused.
    pub(super) fn hanging_after_coordinator_loss<'m>(
        &self,
        cluster: ClusterIndex,
        tp: &TopicPartition,
        log: &PartitionLog<MemoryDirDisk>,
        coordinator: impl FnOnce(&str) -> Option<(TopicPartition, Option<&'m TransactionMetadata>)>,
    ) -> bool {
        let lso = log.last_stable_offset();
        if lso >= log.high_watermark() {
            return false;
        }
        let Some(open) = log
            .producer_state()
            .ongoing_txns()
            .values()
            .min_by_key(|txn| txn.first_offset)
        else {
            return false;
        };
        let Some(writer) = record_value_at(log, lso.0.max(open.first_offset.0))
            .and_then(|value| parse_value(value.as_bytes()))
        else {
            return false;
        };
        let transactional_id = crate::world::workload::transactional_id(&writer.producer);
        let Some((state_partition, metadata)) = coordinator(&transactional_id) else {
            return false; // no loaded coordinator: the liveness check reports its partition
        };
        let held_open = metadata.is_some_and(|metadata| {
            ProducerId(metadata.producer_id) == open.producer_id
                && !metadata.state.is_idle()
                && metadata.partitions.contains(tp)
        });
        !held_open && self.lost_from(cluster, &state_partition).is_some()
    }

    /// Whether a READ_COMMITTED reader could not reach `send`'s record because a hanging
    /// transaction (see [`Checkers::hanging_after_loss`]) holds the last stable offset below it.
    pub(super) fn above_hanging_txn(
        &self,
        logs: &dyn LeaderLogs,
        offset: i64,
        send: &crate::world::workload::SendRecord,
    ) -> bool {
        let tp = &send.topic_partition;
        let cluster = cluster_of_value(&send.value);
        logs.leader_log(cluster, tp).is_some_and(|log| {
            offset >= log.last_stable_offset().0 && self.hanging_after_loss(cluster, tp, log)
        })
    }

    /// Whether an acknowledged record may be gone from the final log by Kafka's rules: its
    /// topic is not durable (an acks=1 producer, unclean election or `min.insync.replicas` < 2:
    /// an acknowledgement from a leader that then lost its leadership does not survive the
    /// follower's truncation) and the current leader's log no longer holds it at its offset.
    /// A record the log still holds must be seen, on every topic.
    pub(super) fn lost_legally(
        &self,
        logs: &dyn LeaderLogs,
        offset: i64,
        send: &crate::world::workload::SendRecord,
    ) -> bool {
        let (tp, value) = (&send.topic_partition, send.value.as_str());
        let cluster = cluster_of_value(value);
        !self.durable_topics.contains(&(cluster, tp.topic.clone()))
            && logs
                .leader_log(cluster, tp)
                .is_some_and(|log| !record_value_at_is(log, offset, value))
    }
}
