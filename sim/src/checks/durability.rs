//! Durability: every acknowledged write of a durable topic is in the log the current leader
//! holds, checked as acknowledgements arrive and again over whole logs.

use super::*;
use mirrorsim::common::LeaderEpoch;

impl Checkers {
    /// Acknowledged acks=all records are in the current leader's log below its high watermark.
    /// Takes in the acknowledgements new since last time, checks each once its leader's high
    /// watermark passes it, and everything again after a leader change (or when `full`).
    pub fn check_acked_durable(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
        history: &History,
        full: bool,
        out: &mut Vec<Violation>,
    ) {
        let leader =
            |cluster, tp: &TopicPartition| current_leader(controllers, brokers, cluster, tp);
        self.verify_acked(time_ms, history, full, leader, out);
    }

    /// [`Checkers::check_acked_durable`] with the current leaders' (epoch, log) from `leader`.
    pub(super) fn verify_acked<'a>(
        &mut self,
        time_ms: i64,
        history: &History,
        full: bool,
        leader: impl Fn(ClusterIndex, &TopicPartition) -> Option<(i32, &'a PartitionLog<MemoryDirDisk>)>,
        out: &mut Vec<Violation>,
    ) {
        for key in &history.readable[self.readable_seen..] {
            let send = &history.sends[key];
            let offset = send.acked_offset.expect("a readable send was acknowledged");
            let cluster = cluster_of_value(&send.value);
            let tp = &send.topic_partition;
            if self.of_ended_topic_life(send) {
                self.mark("acked-of-deleted-topic");
                continue;
            }
            if self.durable_topics.contains(&(cluster, tp.topic.clone()))
                && !self.dropped_by_mirroring(offset, send)
            {
                self.durable_acked
                    .entry((cluster, tp.clone()))
                    .or_default()
                    .unverified
                    .insert((offset, send.value.clone()));
            }
        }
        self.readable_seen = history.readable.len();
        let mut reverified = 0;
        for ((cluster, tp), records) in &mut self.durable_acked {
            let Some((epoch, log)) = leader(*cluster, tp) else {
                continue;
            };
            if full || records.leader_epoch != epoch {
                // A new leader may have lost what the previous one had: check everything again.
                let moved = records.leader_epoch != epoch && !records.verified.is_empty();
                records.leader_epoch = epoch;
                let verified = std::mem::take(&mut records.verified);
                if moved {
                    reverified += verified.len();
                }
                records.unverified.extend(verified);
            }
            let mut values = ValueCursor::default();
            while records
                .unverified
                .first()
                .is_some_and(|(offset, _)| *offset < log.high_watermark().0)
            {
                let (offset, value) = records.unverified.pop_first().expect("checked above");
                match values.value_at(log, offset) {
                    Some(found) if found == value => {}
                    found => out.push(Violation {
                        invariant: Invariant::AckedWritesDurable,
                        cluster: Some(*cluster),
                        topic_partition: Some(tp.clone()),
                        detail: format!(
                            "acknowledged {value:?} at offset {offset}, leader (epoch {epoch}) has {found:?} there, below its high watermark {}; the acknowledged record is {}",
                            log.high_watermark(),
                            offset_of_value(log, &value).map_or("absent".to_string(), |at| format!("at offset {at}"))
                        ),
                        time_ms,
                    }),
                }
                records.verified.push((offset, value));
            }
        }
        if reverified > 0 {
            self.precondition(Invariant::AckedWritesDurable);
        }
    }

    /// Per step: every ISR member's log equals the leader's below their common high watermark
    /// (only the newly covered range is compared), and the leader's log holds no duplicate and
    /// no reordered record of one producer (only new batches are scanned).
    pub(super) fn check_logs_incremental(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
        out: &mut Vec<Violation>,
    ) {
        for controller in controllers {
            let cluster = controller.cluster;
            for (tp, record) in controller.controller.image().all_partitions() {
                let Some(leader_id) = record.leader else {
                    continue;
                };
                let Some((epoch, leader_log)) = leader_log_of(brokers, cluster, &tp, record) else {
                    continue;
                };
                let ends = (leader_log.log_end_offset().0, leader_log.high_watermark().0);
                self.note_committed_end(time_ms, cluster, &tp, ends);
                let leader_incarnation =
                    broker_view(brokers, cluster, leader_id).map_or(0, |view| view.incarnation);
                let scan = self
                    .scans
                    .entry((cluster, tp.clone(), leader_id, leader_incarnation, epoch))
                    .or_default();
                let lost_from = lost_from(&self.losses, &self.lost_tails, cluster, &tp);
                let reordered =
                    scan_new_records(time_ms, cluster, &tp, leader_log, scan, lost_from, out);
                self.mark_times("reorder-after-lost-producer-state", reordered);
                for member in record.isr.iter().filter(|member| **member != leader_id) {
                    let Some(view) = brokers
                        .iter()
                        .find(|view| view.cluster == cluster && view.broker.broker_id() == *member)
                    else {
                        continue;
                    };
                    let Some(partition) = view.partition(&tp) else {
                        continue;
                    };
                    if partition.leader_epoch() != LeaderEpoch(epoch) {
                        continue;
                    }
                    let key = (cluster, tp.clone(), *member, view.incarnation, epoch);
                    let converged_to = self.converged_to.entry(key).or_insert(0);
                    let from = *converged_to;
                    let verified = compare_range(
                        time_ms,
                        cluster,
                        &tp,
                        *member,
                        leader_log,
                        &partition.log,
                        from,
                        out,
                    );
                    *converged_to = verified;
                    if verified > from && (view.incarnation > 1 || epoch > 0) {
                        self.precondition(Invariant::ReplicaConvergence);
                    }
                }
            }
        }
    }

    /// Full replica comparison, duplicate and order scans, and `psm-replica-agreement` on
    /// every partition; run at the end of a run.
    pub fn check_logs_deep(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
    ) -> Vec<Violation> {
        let mut out = self
            .mirror
            .check_producer_states_everywhere(time_ms, controllers, brokers);
        for controller in controllers {
            for (tp, record) in controller.controller.image().all_partitions() {
                let Some((epoch, leader_log)) =
                    current_leader(controllers, brokers, controller.cluster, &tp)
                else {
                    continue;
                };
                for member in &record.isr {
                    let follower = brokers.iter().find(|view| {
                        view.cluster == controller.cluster && view.broker.broker_id() == *member
                    });
                    let Some(follower) = follower else {
                        continue;
                    };
                    let Some(partition) = follower.partition(&tp) else {
                        continue;
                    };
                    let in_epoch = partition.leader_epoch() == LeaderEpoch(epoch);
                    if in_epoch {
                        let (cluster, log) = (controller.cluster, &partition.log);
                        compare_range(time_ms, cluster, &tp, *member, leader_log, log, 0, &mut out);
                    }
                }
                let mut scan = LogScan::default();
                let lost_from = self.lost_from(controller.cluster, &tp);
                scan_new_records(
                    time_ms,
                    controller.cluster,
                    &tp,
                    leader_log,
                    &mut scan,
                    lost_from,
                    &mut out,
                );
            }
        }
        out
    }
}
