//! What liveness asks of transactions and admin operations once the heal phase ends: nothing left
//! unanswered, nothing left open that something will still close.

use std::collections::{BTreeMap, BTreeSet};

use mirrorsim::coordinator::transaction::TransactionMetadata;
use mirrorsim::mirror::TopicMirrorConfig;
use mirrorsim::protocol::{ClusterIndex, TopicPartition};

use super::invariants::{Invariant, Violation};
use super::reads::{cluster_of_value, LeaderLogs};
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
                    let entry = log.producer_state().producer(metadata.producer_id)?;
                    Some(entry.producer_epoch)
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
            .is_some_and(|log| offset >= log.last_stable_offset())
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
                if lso < log.high_watermark() && source_lso == Some(&lso) {
                    inherited.insert(key, lso);
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
