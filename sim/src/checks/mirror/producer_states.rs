//! `producer-state-matches`: a destination replica's producer state equals the source's
//! for the producers it mirrored, once it has caught up.

use super::*;
use mirrorsim::common::{ProducerEpoch, ProducerId};

/// What `psm-replica-agreement` compares for one partition: its current leader's log and
/// the followers whose log ends where the leader's does, with the same last batch.
pub(super) struct PsmComparison<'a> {
    leader: BrokerId,
    leader_log: &'a PartitionLog<MemoryDirDisk>,
    followers: Vec<(BrokerId, &'a PartitionLog<MemoryDirDisk>)>,
}

impl<'a> PsmComparison<'a> {
    pub(super) fn gather(
        controllers: &[ControllerView<'_>],
        brokers: &'a [BrokerView<'_>],
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
    ) -> Option<Self> {
        let (epoch, leader_log) = current_leader(controllers, brokers, cluster, topic_partition)?;
        let mut leader = None;
        let mut followers = Vec::new();
        for view in brokers.iter().filter(|view| view.cluster == cluster) {
            let Some(partition) = view.partition(topic_partition) else {
                continue;
            };
            match &partition.role {
                Role::Leader(state) if state.leader_epoch == LeaderEpoch(epoch) => {
                    leader = Some(view.broker.broker_id());
                }
                Role::Follower(_) if caught_up(&partition.log, leader_log) => {
                    followers.push((view.broker.broker_id(), &partition.log));
                }
                _ => {}
            }
        }
        Some(Self {
            leader: leader?,
            leader_log,
            followers,
        })
    }

    /// Whether [`PsmComparison::check`] compares something: the leader's producer state holds
    /// a producer and a follower (only `only`, if given) is compared with it.
    pub(super) fn compares_a_producer(&self, only: Option<BrokerId>) -> bool {
        !self.leader_log.producer_state().producers().is_empty()
            && self
                .followers
                .iter()
                .any(|(follower, _)| only.is_none_or(|only| only == *follower))
    }

    /// Compares the leader's producer state with its rebuild and with the followers' (only
    /// `only`'s, if given).
    pub(super) fn check(
        &self,
        time_ms: i64,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        only: Option<BrokerId>,
    ) -> Option<Violation> {
        let violation = |detail| {
            Some(Violation {
                invariant: Invariant::PsmReplicaAgreement,
                cluster: Some(cluster),
                topic_partition: Some(topic_partition.clone()),
                detail,
                time_ms,
            })
        };
        let leader_start = self.leader_log.log_start_offset();
        let live = summary(self.leader_log.producer_state(), leader_start.0);
        match self.leader_log.rebuilt_producer_state() {
            Err(error) => {
                return violation(format!(
                    "the leader (broker {})'s log does not replay: {error}",
                    self.leader
                ))
            }
            Ok(rebuilt) => {
                let rebuilt = summary(&rebuilt, leader_start.0);
                if let Some(difference) = first_difference(&live, &rebuilt) {
                    return violation(format!(
                        "the leader (broker {}) and a rebuild of its log (end {}) differ: \
                         {difference}",
                        self.leader,
                        self.leader_log.log_end_offset()
                    ));
                }
            }
        }
        for (follower, log) in &self.followers {
            if only.is_some_and(|only| only != *follower) {
                continue;
            }
            let start = leader_start.max(log.log_start_offset());
            let theirs = summary(log.producer_state(), start.0);
            let ours = if start == leader_start {
                live.clone()
            } else {
                summary(self.leader_log.producer_state(), start.0)
            };
            if let Some(difference) = first_difference(&ours, &theirs) {
                return violation(format!(
                    "the leader (broker {}) and follower broker {follower}, both at log end {}, \
                     differ: {difference}",
                    self.leader,
                    self.leader_log.log_end_offset()
                ));
            }
        }
        None
    }
}

/// Per producer id: (producer epoch, last sequence, last offset, open transaction's first
/// offset).
pub(super) type ProducerSummary =
    BTreeMap<ProducerId, (ProducerEpoch, i32, Offset, Option<Offset>)>;

/// Whether a follower's log ends where the leader's does, with the same last batch.
pub(super) fn caught_up(
    log: &PartitionLog<MemoryDirDisk>,
    leader_log: &PartitionLog<MemoryDirDisk>,
) -> bool {
    if log.log_end_offset() != leader_log.log_end_offset() {
        return false;
    }
    let last = log.log_end_offset() - 1;
    let theirs = log.batches_from(last).next();
    let ours = leader_log.batches_from(last).next();
    match (theirs, ours) {
        (Some(theirs), Some(ours)) => theirs.bytes() == ours.bytes(),
        (None, None) => true,
        _ => false,
    }
}

/// The compared part of a producer state: entries whose last remembered batch is at or above
/// `from`.
pub(super) fn summary(state: &ProducerStateManager, from: i64) -> ProducerSummary {
    state
        .producers()
        .iter()
        .filter_map(|(producer_id, entry)| {
            let last = entry.batches.back()?;
            (last.last_offset >= Offset(from)).then_some((
                *producer_id,
                (
                    entry.producer_epoch,
                    last.last_sequence,
                    last.last_offset,
                    entry.current_txn_first_offset,
                ),
            ))
        })
        .collect()
}

/// The first producer id on which two summaries differ, described.
pub(super) fn first_difference(ours: &ProducerSummary, theirs: &ProducerSummary) -> Option<String> {
    let ids: BTreeSet<ProducerId> = ours.keys().chain(theirs.keys()).copied().collect();
    ids.into_iter().find_map(|producer_id| {
        let (a, b) = (ours.get(&producer_id), theirs.get(&producer_id));
        (a != b).then(|| {
            format!(
                "producer {producer_id}: (epoch, last sequence, last offset, open transaction) \
                 {a:?} vs {b:?}"
            )
        })
    })
}

impl MirrorChecks {
    /// `psm-replica-agreement` for STOPPED partitions and restarted replicas that caught up.
    pub(super) fn check_pending_producer_states(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
        out: &mut Vec<Violation>,
    ) {
        let mut done = Vec::new();
        for ((cluster, topic_partition), until_ms) in &self.psm_pending {
            let expired = time_ms >= *until_ms;
            let Some(comparison) =
                PsmComparison::gather(controllers, brokers, *cluster, topic_partition)
            else {
                if expired {
                    done.push((*cluster, topic_partition.clone()));
                }
                continue;
            };
            if comparison.followers.is_empty() && !expired {
                continue; // No follower has the whole log yet.
            }
            if comparison.compares_a_producer(None) {
                *self
                    .preconditions
                    .entry(Invariant::PsmReplicaAgreement)
                    .or_default() += 1;
            }
            out.extend(comparison.check(time_ms, *cluster, topic_partition, None));
            done.push((*cluster, topic_partition.clone()));
        }
        for key in done {
            self.psm_pending.remove(&key);
        }
        for (node, incarnation) in self.restarted.keys() {
            let Some(view) = live_incarnation(brokers, *node, *incarnation) else {
                continue;
            };
            for topic_partition in view.partitions().map(|(tp, _)| tp) {
                let key = (*node, *incarnation, topic_partition.clone());
                if self.restart_checked.contains(&key) {
                    continue;
                }
                let Some(comparison) =
                    PsmComparison::gather(controllers, brokers, view.cluster, topic_partition)
                else {
                    continue;
                };
                let replica = view.broker.broker_id();
                let caught_up = comparison.leader == replica
                    || comparison.followers.iter().any(|(id, _)| *id == replica);
                if caught_up {
                    let only = Some(replica).filter(|id| *id != comparison.leader);
                    if comparison.compares_a_producer(only) {
                        *self
                            .preconditions
                            .entry(Invariant::PsmReplicaAgreement)
                            .or_default() += 1;
                    }
                    out.extend(comparison.check(time_ms, view.cluster, topic_partition, only));
                    self.restart_checked.insert(key);
                }
            }
        }
    }

    /// `psm-replica-agreement` for every led partition (at the end of a run).
    pub fn check_producer_states_everywhere(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
    ) -> Vec<Violation> {
        let mut out = Vec::new();
        for controller in controllers {
            for (topic_partition, _) in controller.controller.image().all_partitions() {
                if let Some(comparison) = PsmComparison::gather(
                    controllers,
                    brokers,
                    controller.cluster,
                    &topic_partition,
                ) {
                    if comparison.compares_a_producer(None) {
                        *self
                            .preconditions
                            .entry(Invariant::PsmReplicaAgreement)
                            .or_default() += 1;
                    }
                    out.extend(comparison.check(
                        time_ms,
                        controller.cluster,
                        &topic_partition,
                        None,
                    ));
                }
            }
        }
        out
    }
}
