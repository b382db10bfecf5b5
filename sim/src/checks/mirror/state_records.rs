//! The `__mirror_state` records (legal transitions, coordinator fencing) and
//! `single-mirror-fetcher`.

use super::*;
use mirrorsim::common::Offset;

/// Whether the current leader's `log` of a `__mirror_state` partition no longer holds the
/// last batch read from it (`progress`), and the partition has a single replica
/// (`replicas`): its committed records were lost with that replica's unflushed tail, which
/// an acks=all write to an ISR of one allows (no fsync), so the coordinator rebuilt its state
/// from a shorter log (generated seeds 1337263765019463, …784, …815 and …974: a one-broker
/// destination's power loss). With more replicas a committed record is never lost, and a
/// log that lost one is judged as it is.
pub(super) fn state_log_lost(
    log: &PartitionLog<MemoryDirDisk>,
    progress: &StateLogProgress,
    replicas: usize,
) -> bool {
    let Some((base, crc)) = progress.last_batch else {
        return false;
    };
    let still_there = log
        .batches_from(Offset(base))
        .next()
        .is_some_and(|batch| batch.base_offset() == base && batch.header().crc == crc);
    replicas == 1 && !still_there
}

/// `single-mirror-fetcher` (INV-12) over every broker's running mirror fetchers.
pub(super) fn check_single_fetcher(
    time_ms: i64,
    brokers: &[BrokerView<'_>],
    out: &mut Vec<Violation>,
) {
    let mut fetchers: Vec<(ClusterIndex, &TopicPartition, i32, BrokerId)> = Vec::new();
    for view in brokers {
        let broker = view.broker;
        for (topic_partition, state, leader_epoch) in broker.mirror_fetchers() {
            let broker_id = broker.broker_id();
            let role_epoch = view
                .partition(topic_partition)
                .and_then(|partition| partition.leader_state())
                .map(|leader| leader.leader_epoch);
            let known = broker
                .image()
                .partition(topic_partition)
                .map(|record| (record.leader, record.leader_epoch));
            let problem = if state != MirrorState::Mirroring {
                Some(format!("while {state}"))
            } else if role_epoch != Some(leader_epoch) {
                Some(format!(
                    "in leader epoch {leader_epoch}, but its role's leader epoch is {role_epoch:?}"
                ))
            } else if known != Some((Some(broker_id), leader_epoch.0)) {
                Some(format!(
                    "in leader epoch {leader_epoch}, but its metadata has (leader, epoch) {known:?}"
                ))
            } else if let Some((_, _, _, other)) = fetchers.iter().find(|(c, tp, e, _)| {
                *c == view.cluster && *tp == topic_partition && *e == leader_epoch.0
            }) {
                Some(format!(
                    "in leader epoch {leader_epoch}, as broker {other} does too"
                ))
            } else {
                None
            };
            fetchers.push((view.cluster, topic_partition, leader_epoch.0, broker_id));
            if let Some(problem) = problem {
                out.push(Violation {
                    invariant: Invariant::SingleMirrorFetcher,
                    cluster: Some(view.cluster),
                    topic_partition: Some(topic_partition.clone()),
                    detail: format!("{} runs a mirror fetcher {problem}", broker.node_id()),
                    time_ms,
                });
            }
        }
    }
}

impl MirrorChecks {
    /// `single-mirror-fetcher`'s case: a mirror partition's fetcher ran on a second broker
    /// (its leadership moved while it mirrored, so the old leader had to stop fetching).
    pub(super) fn note_fetchers(&mut self, brokers: &[BrokerView<'_>]) {
        let mut moved = false;
        for view in brokers {
            for (topic_partition, _, _) in view.broker.mirror_fetchers() {
                let seen = self
                    .fetcher_brokers
                    .entry((view.cluster, topic_partition.clone()))
                    .or_default();
                if seen.insert(view.broker.broker_id()) && seen.len() > 1 {
                    moved = true;
                }
            }
        }
        if moved {
            self.precondition(Invariant::SingleMirrorFetcher);
        }
    }

    /// Notes brokers whose incarnation changed (restarted) for `psm-replica-agreement`.
    pub(super) fn note_restarts(&mut self, time_ms: i64, brokers: &[BrokerView<'_>]) {
        for view in brokers {
            let node = NodeId::Broker(view.cluster, view.broker.broker_id());
            let previous = self.incarnations.insert(node, view.incarnation);
            if previous.is_some_and(|previous| previous != view.incarnation) {
                self.restarted.insert((node, view.incarnation), time_ms);
            }
        }
        self.restarted
            .retain(|_, seen_ms| time_ms - *seen_ms <= PSM_WAIT_MS);
        self.restart_checked
            .retain(|(node, incarnation, _)| self.restarted.contains_key(&(*node, *incarnation)));
    }

    /// INV-10 and INV-11 over the newly committed `__mirror_state` records.
    pub(super) fn check_state_records(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
    ) -> Vec<Violation> {
        let mut out = Vec::new();
        for controller in controllers {
            let cluster = controller.cluster;
            // Only `__mirror_state`'s partitions, not every partition of the image each step.
            let partitions = mirrorsim::coordinator::partition_count(
                controller.controller.image(),
                MIRROR_STATE_TOPIC,
            );
            for partition in 0..partitions {
                let tp = TopicPartition::new(MIRROR_STATE_TOPIC, partition);
                let Some((_, log)) = current_leader(controllers, brokers, cluster, &tp) else {
                    continue;
                };
                let replicas = controller
                    .controller
                    .image()
                    .partition(&tp)
                    .map_or(0, |record| record.replicas.len());
                let progress = self
                    .state_log_checked
                    .entry((cluster, tp.clone()))
                    .or_default();
                if state_log_lost(log, progress, replicas) {
                    // The records read are gone: judge the log the coordinator reloaded,
                    // from its start.
                    *progress = StateLogProgress::default();
                    self.stored
                        .retain(|(c, p, _, _), _| !(*c == cluster && *p == partition));
                }
                let progress = self
                    .state_log_checked
                    .get_mut(&(cluster, tp.clone()))
                    .expect("inserted above");
                let from = progress.checked.max(log.log_start_offset().0);
                let committed = log.high_watermark();
                let mut records = Vec::new();
                for batch in log.batches_from(Offset(from)) {
                    if batch.next_offset() > committed.0 {
                        break;
                    }
                    if batch.base_offset() >= from && !batch.is_control() {
                        records.extend(decode_records::<MirrorStateRecord>(batch));
                    }
                    progress.checked = batch.next_offset();
                    progress.last_batch = Some((batch.base_offset(), batch.header().crc));
                }
                for record in records {
                    out.extend(self.check_state_record(time_ms, cluster, &tp, record));
                }
            }
        }
        out
    }

    pub(super) fn check_state_record(
        &mut self,
        time_ms: i64,
        cluster: ClusterIndex,
        state_partition: &TopicPartition,
        record: MirrorStateRecord,
    ) -> Option<Violation> {
        let MirrorStateRecord::PartitionState { mirror, id, value } = record else {
            return None; // Last-mirrored-epoch records carry no state.
        };
        let key = (cluster, state_partition.partition, mirror.clone(), id);
        if value
            .as_ref()
            .is_none_or(|value| value.state == MirrorState::Stopped)
        {
            self.stopped_seen.insert((cluster, mirror.clone(), id));
        }
        let Some(value) = value else {
            self.stored.remove(&key);
            return None;
        };
        let previous = self
            .stored
            .insert(key, (value.state, value.state_epoch, value.leader_epoch));
        if previous.is_some() {
            self.precondition(Invariant::LegalTransitions);
        }
        let (state, state_epoch, leader_epoch) =
            previous.unwrap_or((MirrorState::Unknown, -1, LeaderEpoch::NONE));
        let violation = |invariant, detail| {
            Some(Violation {
                invariant,
                cluster: Some(cluster),
                topic_partition: Some(state_partition.clone()),
                detail,
                time_ms,
            })
        };
        let what = format!(
            "mirror {mirror} topic {} partition {}",
            id.topic_id, id.partition
        );
        if !is_valid_transition(state, value.state) {
            return violation(
                Invariant::LegalTransitions,
                format!(
                    "{what} went {state} → {} (state epoch {})",
                    value.state, value.state_epoch
                ),
            );
        }
        if value.state_epoch != state_epoch + 1 || value.leader_epoch < leader_epoch {
            return violation(
                Invariant::CoordinatorFencing,
                format!(
                    "{what}: state epoch {state_epoch} → {}, leader epoch {leader_epoch} → {}",
                    value.state_epoch, value.leader_epoch
                ),
            );
        }
        None
    }
}
