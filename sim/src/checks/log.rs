//! The log checks run every step: one leader per partition and epoch, replicas agreeing
//! below the high watermark, leader and metadata epochs only moving up, batch epochs
//! never going back.

use super::*;
use mirrorsim::common::Offset;

impl Checkers {
    pub(super) fn check_metadata_epochs(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        out: &mut Vec<Violation>,
    ) {
        for view in controllers {
            for (tp, record) in view.controller.image().all_partitions() {
                let leaderless_isr = record.leader.is_none() && record.isr.is_empty();
                let tracked = !self.eligible_seen.is_empty();
                if leaderless_isr || !record.eligible_leader_replicas.is_empty() || tracked {
                    self.observe_eligible_leaders(view.cluster, record);
                }
                out.extend(self.observe_metadata_epoch(
                    time_ms,
                    view.cluster,
                    tp,
                    record.leader_epoch,
                ));
            }
        }
    }

    /// KIP-966's elections, as marks: a partition with eligible leader replicas
    /// (`elr-populated`), one left without a leader and with an empty ISR (`elr-leaderless`),
    /// and a leader elected from the eligible replicas last seen (`elr-leader-elected`) or,
    /// after a leaderless state with none of them, another (`elr-last-known-leader-elected`:
    /// the last known leader, or an unclean election).
    fn observe_eligible_leaders(
        &mut self,
        cluster: ClusterIndex,
        record: &mirrorsim::metadata::PartitionRecord,
    ) {
        // By topic id: a copy key, looked up for every partition while any is tracked.
        let key = (cluster, record.topic_id, record.partition);
        let leaderless = record.leader.is_none() && record.isr.is_empty();
        if let (Some(leader), Some((eligible, was_leaderless))) =
            (record.leader, self.eligible_seen.get(&key))
        {
            if eligible.contains(&leader) {
                self.mark("elr-leader-elected");
            } else if *was_leaderless {
                self.mark("elr-last-known-leader-elected");
            }
        }
        if record.eligible_leader_replicas.is_empty() && !leaderless {
            self.eligible_seen.remove(&key);
            return;
        }
        let seen = (record.eligible_leader_replicas.clone(), leaderless);
        let previous = self.eligible_seen.insert(key, seen);
        if !record.eligible_leader_replicas.is_empty()
            && previous
                .as_ref()
                .is_none_or(|(eligible, _)| eligible.is_empty())
        {
            self.mark("elr-populated");
        }
        if leaderless
            && previous
                .as_ref()
                .is_none_or(|(_, was_leaderless)| !was_leaderless)
        {
            self.mark("elr-leaderless");
        }
    }

    pub(super) fn check_leaders(
        &mut self,
        time_ms: i64,
        brokers: &[BrokerView<'_>],
        out: &mut Vec<Violation>,
    ) {
        for view in brokers {
            for (tp, partition) in view.partitions() {
                let Role::Leader(state) = &partition.role else {
                    continue;
                };
                let broker_id = view.broker.broker_id();
                let epoch = state.leader_epoch;
                out.extend(self.observe_leader(time_ms, view.cluster, tp, epoch.0, broker_id));
            }
        }
    }

    pub(super) fn check_replica_logs(
        &mut self,
        time_ms: i64,
        brokers: &[BrokerView<'_>],
        out: &mut Vec<Violation>,
    ) {
        for view in brokers {
            let node = NodeId::Broker(view.cluster, view.broker.broker_id());
            for (tp, partition) in view.partitions() {
                let current_leader = matches!(&partition.role, Role::Leader(state)
                    if self.metadata_epochs.get(&(view.cluster, tp.clone())) == Some(&state.leader_epoch.0));
                if current_leader {
                    let high = self
                        .committed_high
                        .entry((view.cluster, tp.clone()))
                        .or_insert(0);
                    *high = (*high).max(partition.log.high_watermark().0);
                }
                let key = (node, view.incarnation, tp.clone());
                let seen = (partition.leader_epoch().0, partition.log.high_watermark().0);
                self.check_replica(time_ms, key, seen, &partition.log, out);
            }
        }
    }

    /// One replica's per-step checks (`hw-monotonic`, the batch epoch scan), over one entry
    /// of what was seen of it.
    fn check_replica(
        &mut self,
        time_ms: i64,
        key: (NodeId, u64, TopicPartition),
        seen_now: (i32, i64),
        log: &PartitionLog<MemoryDirDisk>,
        out: &mut Vec<Violation>,
    ) {
        let seen = self.replicas_seen.entry(key.clone()).or_default();
        let previous = seen.high_watermark.replace(seen_now);
        let regressions = scan_log_epochs(seen, log);
        out.extend(self.high_watermark_verdict(time_ms, &key, previous, seen_now));
        out.extend(epoch_regression_violations(time_ms, &key, regressions));
    }

    /// A partition's leader epoch in the controller's metadata never decreases.
    pub(super) fn observe_metadata_epoch(
        &mut self,
        time_ms: i64,
        cluster: ClusterIndex,
        tp: TopicPartition,
        epoch: i32,
    ) -> Option<Violation> {
        let previous = self.metadata_epochs.insert((cluster, tp.clone()), epoch)?;
        if previous < epoch {
            self.precondition(Invariant::EpochsMonotonic);
            self.leader_changed.insert((cluster, tp.clone()));
        }
        (previous > epoch).then(|| Violation {
            invariant: Invariant::EpochsMonotonic,
            cluster: Some(cluster),
            topic_partition: Some(tp),
            detail: format!("metadata leader epoch went from {previous} to {epoch}"),
            time_ms,
        })
    }

    /// No two brokers ever lead one partition in one leader epoch.
    pub(super) fn observe_leader(
        &mut self,
        time_ms: i64,
        cluster: ClusterIndex,
        tp: &TopicPartition,
        epoch: i32,
        broker_id: BrokerId,
    ) -> Option<Violation> {
        let last = self.last_leaders.insert((cluster, tp.clone()), broker_id);
        if last.is_some_and(|last| last != broker_id) {
            self.precondition(Invariant::SingleLeaderPerEpoch);
        }
        let first = *self
            .epoch_leaders
            .entry((cluster, tp.clone(), epoch))
            .or_insert(broker_id);
        (first != broker_id).then(|| Violation {
            invariant: Invariant::SingleLeaderPerEpoch,
            cluster: Some(cluster),
            topic_partition: Some(tp.clone()),
            detail: format!("brokers {first} and {broker_id} both led epoch {epoch}"),
            time_ms,
        })
    }

    /// Within one leader epoch a replica's high watermark only grows while its process lives,
    /// except through a reported truncation or a reported adoption of a new leader's lagging
    /// one (both reset what was seen). The tests' entry; a step runs [`Self::check_replica`].
    #[cfg(test)]
    pub(super) fn observe_high_watermark(
        &mut self,
        time_ms: i64,
        key: (NodeId, u64, TopicPartition),
        seen_now: (i32, i64),
    ) -> Option<Violation> {
        let previous = self
            .replicas_seen
            .entry(key.clone())
            .or_default()
            .high_watermark
            .replace(seen_now);
        self.high_watermark_verdict(time_ms, &key, previous, seen_now)
    }

    /// `hw-monotonic` on one replica's (leader epoch, high watermark) now and at the last step.
    fn high_watermark_verdict(
        &mut self,
        time_ms: i64,
        key: &(NodeId, u64, TopicPartition),
        previous: Option<(i32, i64)>,
        (epoch, high_watermark): (i32, i64),
    ) -> Option<Violation> {
        let (previous_epoch, previous) = previous?;
        if previous_epoch == epoch && high_watermark > previous {
            self.precondition(Invariant::HwMonotonic);
        }
        let (node, _, tp) = key;
        (previous_epoch == epoch && high_watermark < previous).then(|| Violation {
            invariant: Invariant::HwMonotonic,
            cluster: Some(node.cluster()),
            topic_partition: Some(tp.clone()),
            detail: format!(
                "{node} high watermark went from {previous} to {high_watermark} in leader epoch {epoch} without a truncation"
            ),
            time_ms,
        })
    }

    /// Batch epochs never decrease along a log; checks only batches appended since last time.
    /// The tests' entry; a step runs [`Self::check_replica`].
    #[cfg(test)]
    pub(super) fn check_log_epochs(
        &mut self,
        time_ms: i64,
        key: (NodeId, u64, TopicPartition),
        log: &PartitionLog<MemoryDirDisk>,
        out: &mut Vec<Violation>,
    ) {
        let seen = self.replicas_seen.entry(key.clone()).or_default();
        let regressions = scan_log_epochs(seen, log);
        out.extend(epoch_regression_violations(time_ms, &key, regressions));
    }
}

/// Scans the batches appended since the last scan of this replica (all of them when its log
/// end went below where the scan stopped) and returns each batch whose epoch is below an
/// earlier one's, as (base offset, epoch, highest epoch before it).
fn scan_log_epochs(
    seen: &mut ReplicaSeen,
    log: &PartitionLog<MemoryDirDisk>,
) -> Vec<(i64, i32, i32)> {
    let log_end = log.log_end_offset().0;
    let (checked_to, mut last_epoch) = match seen.epochs_checked {
        Some((checked_to, last_epoch)) if checked_to <= log_end => (checked_to, last_epoch),
        _ => (0, -1),
    };
    let mut regressions = Vec::new();
    for batch in log.batches_from(Offset(checked_to)) {
        let epoch = batch.partition_leader_epoch();
        if epoch < last_epoch {
            regressions.push((batch.base_offset(), epoch, last_epoch));
        }
        last_epoch = last_epoch.max(epoch);
    }
    seen.epochs_checked = Some((log_end, last_epoch));
    regressions
}

/// The `epochs-monotonic` violations of [`scan_log_epochs`]'s findings on replica `key`.
fn epoch_regression_violations(
    time_ms: i64,
    key: &(NodeId, u64, TopicPartition),
    regressions: Vec<(i64, i32, i32)>,
) -> impl Iterator<Item = Violation> + '_ {
    regressions
        .into_iter()
        .map(move |(base_offset, epoch, last_epoch)| Violation {
            invariant: Invariant::EpochsMonotonic,
            cluster: Some(key.0.cluster()),
            topic_partition: Some(key.2.clone()),
            detail: format!(
                "{} log: batch at offset {base_offset} has epoch {epoch} after epoch {last_epoch}",
                key.0
            ),
            time_ms,
        })
}
