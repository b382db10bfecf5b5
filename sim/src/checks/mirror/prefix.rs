//! `mirror-prefix` and `offset-identity`: a destination log is the source's, batch for batch at the
//! same offsets, up to where it mirrored, but for the cuts mirroring makes by design.

use super::*;
use mirrorsim::common::Offset;

/// The first batch of `log` from `from` on that the source's log does not hold at the same
/// base offset in the design's stored form (the seed's: the same bytes), described; `*checked_to` moves past every batch found
/// equal.
pub(super) fn prefix_mismatch(
    design: mirrorsim::mirror::MirrorDesign,
    log: &PartitionLog<MemoryDirDisk>,
    source_log: &PartitionLog<MemoryDirDisk>,
    from: i64,
    checked_to: &mut i64,
) -> Option<String> {
    let mut source_batches = source_log.batches_from(Offset(from)).peekable();
    for batch in log.batches_from(Offset(from)) {
        if batch.base_offset() < from {
            continue; // Straddles the source's log start: nothing to compare with.
        }
        while source_batches
            .peek()
            .is_some_and(|original| original.base_offset() < batch.base_offset())
        {
            source_batches.next();
        }
        match source_batches.next() {
            Some(original)
                if original.base_offset() == batch.base_offset()
                    && design.is_stored_form_of(original, batch) => {}
            Some(original) if original.base_offset() == batch.base_offset() => {
                return Some(format!(
                    "its batch at offset {} (epoch {}) differs from the source's there (epoch {})",
                    batch.base_offset(),
                    batch.partition_leader_epoch(),
                    original.partition_leader_epoch()
                ));
            }
            _ => {
                return Some(format!(
                    "its batch at offset {} (epoch {}) is not a source batch (the source's log \
                     spans [{}, {}))",
                    batch.base_offset(),
                    batch.partition_leader_epoch(),
                    source_log.log_start_offset(),
                    source_log.log_end_offset()
                ));
            }
        }
        *checked_to = batch.next_offset();
    }
    None
}

impl MirrorChecks {
    pub(super) fn check_identity(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
        append: &MirroredAppend,
    ) -> Option<Violation> {
        let cluster = append.node.cluster();
        let destination = brokers
            .iter()
            .find(|view| NodeId::Broker(view.cluster, view.broker.broker_id()) == append.node)?;
        let source = source_cluster(destination, &append.topic_partition.topic)?;
        if self
            .source_lives_ended
            .contains_key(&(source, append.topic_partition.topic.to_string()))
        {
            // The source's log may be another life of the topic now: `mirror-prefix` judges.
            return None;
        }
        let (_, source_log) =
            current_leader(controllers, brokers, source, &append.topic_partition)?;
        let log = &destination.partition(&append.topic_partition)?.log;
        for batch in log
            .batches_from(Offset(append.first_offset))
            .take_while(|batch| batch.base_offset() <= append.last_offset)
        {
            let Some(original) = source_log.batches_from(Offset(batch.base_offset())).next() else {
                continue; // The source no longer has it: nothing to compare with.
            };
            if original.base_offset() > batch.last_offset() {
                continue;
            }
            *self
                .preconditions
                .entry(Invariant::OffsetIdentity)
                .or_default() += 1;
            if self.design.is_stored_form_of(original, batch) {
                if batch.header().compression() != mirrorsim::record::CompressionType::None {
                    // A producer's compressed batch crossed the mirror byte for byte.
                    *self.marks.entry("compressed-batch-mirrored").or_default() += 1;
                }
                continue;
            }
            let base = batch.base_offset();
            if append
                .answered_before_source_cut
                .is_some_and(|(from, to)| from <= base && base < to)
            {
                // The source's own cut removed what it served this fetch, and refilled the
                // offsets before the answer was appended (generated seed 10000000000000274:
                // c's deposed leader, paused for 3.6 s with b's answer in flight, appended
                // b's batch 80 after b's PREPARING cut to 0 and re-mirror from a). The next
                // fetch meets the cut log, as `mirror-prefix` judges.
                *self
                    .marks
                    .entry("identity-answered-before-source-cut")
                    .or_default() += 1;
                continue;
            }
            if is_deposed(controllers, destination, &append.topic_partition)
                && current_leader(controllers, brokers, cluster, &append.topic_partition)
                    .and_then(|(_, leader)| leader.batches_from(Offset(base)).next())
                    .is_some_and(|leader_batch| leader_batch == batch)
            {
                // A deposed leader's append is judged after it learned of its successor: what
                // it holds at the offset now is the new leader's batch, replicated after a
                // truncation, not what it mirrored (paused through its partition's stop, it
                // appended the source's answer on waking, then followed the leader that had
                // stopped the partition; re-tuned regression
                // `stopped_boundary_stale_after_other_replica_mirrored`, seeds 1 and 5).
                *self
                    .marks
                    .entry("identity-deposed-append-replaced-by-leader")
                    .or_default() += 1;
                continue;
            }
            return Some(Violation {
                invariant: Invariant::OffsetIdentity,
                cluster: Some(cluster),
                topic_partition: Some(append.topic_partition.clone()),
                detail: format!(
                    "{} mirrored a batch at offset {} (epoch {}) that differs from the \
                         source's batch there (offset {}, epoch {})",
                    append.node,
                    batch.base_offset(),
                    batch.partition_leader_epoch(),
                    original.base_offset(),
                    original.partition_leader_epoch()
                ),
                time_ms,
            });
        }
        None
    }

    /// Folds the appends deposed leaders reported into the mirrored data, leaving out every
    /// batch byte-identical to the current leader's batch at the same offset. A deposed
    /// leader still fetches from its source until it hears of its successor; in a mirror
    /// loop (a failback whose old primary mirrors back while the new primary's deposed leader
    /// still mirrors it) what it fetches is the current leader's own writes, mirrored back
    /// (generator seed 9700000000000442: b-broker-4, deposed in b's epoch 0, appended b's
    /// epoch-2 batches 74..=113 from a, and b-broker-2, STOPPED in epoch 2, then wrote 120 in
    /// epoch 2). Those batches are the leader's own records: the replica holds what the
    /// leader holds, with the leader's epochs, and no fetch can keep them over the leader's.
    /// They are not mirrored data (mark `mirrored-own-records-by-deposed-leader`); a batch
    /// that differs, or one the leader lacks, is (9400000000000375's hazard). With no current
    /// leader to compare with, or the appender gone, the append counts whole.
    pub(super) fn fold_deposed_appends(
        &mut self,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
    ) {
        for deposed in std::mem::take(&mut self.deposed_appends) {
            let cluster = deposed.node.cluster();
            let tp = &deposed.topic_partition;
            let whole = (deposed.last_offset + 1, deposed.epoch);
            let appender_log = live_incarnation(brokers, deposed.node, deposed.incarnation)
                .and_then(|view| view.partition(tp))
                .map(|partition| &partition.log);
            let leader_log = current_leader(controllers, brokers, cluster, tp).map(|(_, log)| log);
            let (end, epoch) = match (appender_log, leader_log) {
                (Some(appended), Some(leader)) => {
                    match foreign_batches(
                        appended,
                        leader,
                        deposed.first_offset,
                        deposed.last_offset,
                    ) {
                        Some(foreign) => foreign,
                        None => {
                            *self
                                .marks
                                .entry("mirrored-own-records-by-deposed-leader")
                                .or_default() += 1;
                            continue;
                        }
                    }
                }
                _ => whole,
            };
            self.fold_mirrored(cluster, tp, end, epoch);
        }
    }

    /// `mirror-prefix` over every aligned destination leader whose log grew.
    pub(super) fn check_prefix(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
        out: &mut Vec<Violation>,
    ) {
        let design = self.design;
        let mut compared = 0;
        for (cluster, lost_tp, kept, epoch) in std::mem::take(&mut self.source_losses) {
            for ((node, incarnation, topic_partition), progress) in &mut self.prefix {
                if *topic_partition != lost_tp {
                    continue;
                }
                let Some(view) = live_incarnation(brokers, *node, *incarnation) else {
                    continue;
                };
                let Some(partition) = view.partition(topic_partition) else {
                    continue;
                };
                let end = partition.log.log_end_offset();
                if source_cluster(view, &topic_partition.topic) != Some(cluster) {
                    continue;
                }
                let stale = match epoch {
                    Some(epoch) => (kept, i64::MAX, epoch),
                    None if kept < end.0 => (kept, end.0, i32::MAX),
                    None => continue,
                };
                progress.stale = Some(match progress.stale {
                    Some((from, to, below)) => {
                        (from.min(stale.0), to.max(stale.1), below.max(stale.2))
                    }
                    None => stale,
                });
            }
        }
        for (cluster, cut_tp, kept, before, mark) in std::mem::take(&mut self.source_mirror_cuts) {
            self.note_unmet_source_cut(brokers, cluster, &cut_tp, (kept, before, mark));
            for ((node, incarnation, topic_partition), progress) in &mut self.prefix {
                if *topic_partition != cut_tp {
                    continue;
                }
                let Some(view) = live_incarnation(brokers, *node, *incarnation) else {
                    continue;
                };
                if source_cluster(view, &topic_partition.topic) != Some(cluster) {
                    continue;
                }
                progress.source_cut = Some(match progress.source_cut {
                    Some((from, to, _, _)) => (from.min(kept), to.max(before), 0, mark),
                    None => (kept, before, 0, mark),
                });
                // What this leader holds above the cut was checked against batches the source
                // no longer has: judge it again against what the source holds now (after the
                // excuse's one append), or an alias refilled in the same epoch numbers is seen
                // only after a leader-epoch change of this mirror restarts its progress
                // (generated seed 9970000000000596).
                progress.checked_to = progress.checked_to.min(kept);
            }
        }
        let mut cut_excused: BTreeMap<&'static str, u64> = BTreeMap::new();
        self.note_lives(brokers);
        let mirrored_ended_lives = &self.mirrored_ended_lives;
        self.prefix
            .retain(|(node, incarnation, topic_partition), progress| {
                let Some(view) = live_incarnation(brokers, *node, *incarnation) else {
                    return false; // That incarnation is gone.
                };
                let Some(partition) = view.partition(topic_partition) else {
                    return false;
                };
                match &partition.role {
                    Role::Leader(state)
                        if state.leader_epoch == LeaderEpoch(progress.leader_epoch) => {}
                    _ => return false, // A new epoch must align again.
                }
                let log = &partition.log;
                if log.log_end_offset() <= Offset(progress.checked_to)
                    || !matches!(
                        partition.mirror_state,
                        MirrorState::Mirroring | MirrorState::Paused
                    )
                {
                    return true;
                }
                let Some(source) = source_cluster(view, &topic_partition.topic) else {
                    return true;
                };
                if mirrored_ended_lives.contains_key(&(node.cluster(), topic_partition.clone())) {
                    // Mirrored a life of the source topic that has ended: judged apart.
                    return true;
                }
                let Some((_, source_log)) =
                    current_leader(controllers, brokers, source, topic_partition)
                else {
                    return true; // The source's leadership is moving.
                };
                let from = progress
                    .checked_to
                    .max(log.log_start_offset().0)
                    .max(source_log.log_start_offset().0);
                compared += 1;
                let mut checked_to = progress.checked_to;
                let mismatch = prefix_mismatch(design, log, source_log, from, &mut checked_to);
                // The mismatching batch starts at `checked_to`.
                let batch_epoch = log
                    .batches_from(Offset(checked_to))
                    .next()
                    .map_or(i32::MAX, |batch| batch.partition_leader_epoch());
                let stale = mismatch.is_some()
                    && progress.stale.is_some_and(|(stale_from, stale_to, below)| {
                        stale_from <= checked_to && checked_to < stale_to && batch_epoch < below
                    });
                let cut = progress
                    .source_cut
                    .filter(|(from, to, _, _)| {
                        mismatch.is_some() && *from <= checked_to && checked_to < *to
                    })
                    .map(|(_, _, _, mark)| mark);
                progress.checked_to = checked_to;
                if let Some(mark) = cut {
                    *cut_excused.entry(mark).or_default() += 1;
                    return true;
                }
                if stale {
                    // Fetched before its source lost it: compared again from here each step,
                    // until a truncation removes it.
                    return true;
                }
                if let Some(detail) = mismatch {
                    out.push(Violation {
                        invariant: Invariant::MirrorPrefix,
                        cluster: Some(node.cluster()),
                        topic_partition: Some(topic_partition.clone()),
                        detail: format!(
                            "{node} is {} and {detail} (source cluster {source})",
                            partition.mirror_state
                        ),
                        time_ms,
                    });
                    progress.checked_to = log.log_end_offset().0;
                }
                true
            });
        if compared > 0 {
            self.precondition(Invariant::MirrorPrefix);
        }
        for (mark, count) in cut_excused {
            *self.marks.entry(mark).or_default() += count;
        }
        self.check_ended_lives(time_ms, controllers, brokers, out);
    }

    /// Matches each source topic life that ended with the destination partitions that had
    /// mirrored it and are not STOPPED ([`mirrored_ended_life`]).
    fn note_lives(&mut self, brokers: &[BrokerView<'_>]) {
        for (source, topic, ended_ms) in std::mem::take(&mut self.lives_to_match) {
            let partitions: BTreeSet<&(ClusterIndex, TopicPartition)> = self
                .first_mirror_append_ms
                .keys()
                .chain(self.first_prepare_ms.keys())
                .filter(|(_, tp)| tp.topic == topic.as_str())
                .collect();
            for key @ (destination, tp) in partitions {
                let first_append_ms = self.first_mirror_append_ms.get(key).copied();
                let first_prepare_ms = self.first_prepare_ms.get(key).copied();
                // The leader's state: a follower's is not kept (generated seed
                // 13500000000000210: the deletion landed after the stop, and a follower's
                // state read as still mirroring).
                let mirrors_source = brokers.iter().any(|view| {
                    view.cluster == *destination
                        && source_cluster(view, &topic) == Some(source)
                        && view.partition(tp).is_some_and(|p| {
                            matches!(p.role, Role::Leader(_))
                                && mirrored_ended_life(
                                    (first_append_ms, first_prepare_ms),
                                    ended_ms,
                                    p.mirror_state,
                                )
                        })
                });
                if mirrors_source {
                    self.mirrored_ended_lives
                        .insert((*destination, tp.clone()), (source, 0));
                }
            }
        }
    }

    /// `mirror-prefix` for the destination partitions that mirrored an ended life of their
    /// source topic (see [`MirrorChecks::mirrored_ended_lives`]): the current leader's log
    /// must hold no batch of the source topic's next life ([`batch_of_later_life`]).
    fn check_ended_lives(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
        out: &mut Vec<Violation>,
    ) {
        // The mirroring of an ended life is over once the partition is STOPPED. The transition
        // event says so (`source_loss.rs`), but a leader that adopts STOPPED from a re-read of
        // its state emits none (a duplicated state write; generated seed 16000000000000190,
        // whose entry outlived the stop and judged the re-added mirror of the topic's next
        // life as the ended one).
        let before = self.mirrored_ended_lives.len();
        self.mirrored_ended_lives.retain(|(destination, tp), _| {
            !leader_is_stopped(controllers, brokers, *destination, tp)
        });
        let closed = before - self.mirrored_ended_lives.len();
        if closed > 0 {
            *self
                .marks
                .entry("ended-life-closed-by-stopped-leader")
                .or_default() += closed as u64;
        }
        let design = self.design;
        let mut judged = 0;
        for ((destination, tp), (source, checked_to)) in &mut self.mirrored_ended_lives {
            let Some((_, log)) = current_leader(controllers, brokers, *destination, tp) else {
                continue;
            };
            let Some((_, source_log)) = current_leader(controllers, brokers, *source, tp) else {
                continue; // Deleted and not created again, or its leadership is moving.
            };
            let from = (*checked_to).min(log.log_end_offset().0);
            judged += 1;
            let origin = (*destination, design);
            if let Some(detail) = batch_of_later_life(origin, log, source_log, from) {
                out.push(Violation {
                    invariant: Invariant::MirrorPrefix,
                    cluster: Some(*destination),
                    topic_partition: Some(tp.clone()),
                    detail: format!("its leader's log {detail} (source cluster {source})"),
                    time_ms,
                });
            }
            *checked_to = log.log_end_offset().0;
        }
        if judged > 0 {
            self.precondition(Invariant::MirrorPrefix);
            *self
                .marks
                .entry("prefix-judged-across-source-topic-life")
                .or_default() += judged;
        }
    }
}

/// Whether the current leader of `tp` on `cluster` is STOPPED.
fn leader_is_stopped(
    controllers: &[ControllerView<'_>],
    brokers: &[BrokerView<'_>],
    cluster: ClusterIndex,
    tp: &TopicPartition,
) -> bool {
    crate::checks::view::current_leader_partition(controllers, brokers, cluster, tp)
        .is_some_and(|partition| partition.mirror_state == MirrorState::Stopped)
}

/// Whether a destination partition whose leader is in `state` mirrored a source topic life
/// that ended at `ended_ms`: not STOPPED, and it appended before the end, or it is past
/// PREPARING (its lookup's answer named the ended life's topic id) with no append yet: a
/// source broker whose metadata lags serves the ended life after its controller's end
/// (generated seed 16000000000000032). One still PREPARING may learn the next life's id.
pub(super) fn mirrored_ended_life(
    (first_append_ms, first_prepare_ms): (Option<i64>, Option<i64>),
    ended_ms: i64,
    state: MirrorState,
) -> bool {
    let before_end = |first: Option<i64>| first.is_some_and(|ms| ms <= ended_ms);
    let past_lookup = matches!(
        state,
        MirrorState::Mirroring
            | MirrorState::Pausing
            | MirrorState::Paused
            | MirrorState::UleRecovery
            | MirrorState::EpochFencing
    );
    state != MirrorState::Stopped
        && (before_end(first_append_ms) || (past_lookup && before_end(first_prepare_ms)))
}

/// For a destination log that mirrored a life of its source topic that has ended: the first
/// batch from `from` on that the source's current log (the topic's next life, or nothing)
/// holds at the same base offset in the design's stored form, described. The old life's
/// batches are gone from the source, so nothing else can be compared; but a batch of the new
/// life on the destination means the mirror fetched the new topic by name and appended it
/// after the old one's records, which KIP-1279 forbids (a changed topic id fails the
/// partition, non-retryably). A batch a producer of the destination (`origin`'s cluster) wrote
/// is the destination's own: the new life holds it because it mirrors the destination back (a
/// failback after the source re-created the topic; generated seed 15910000000000518).
pub(super) fn batch_of_later_life(
    (destination, design): (ClusterIndex, mirrorsim::mirror::MirrorDesign),
    log: &PartitionLog<MemoryDirDisk>,
    source_log: &PartitionLog<MemoryDirDisk>,
    from: i64,
) -> Option<String> {
    let written_here = |batch: &mirrorsim::record::RecordBatch| {
        crate::checks::reads::record_value_in(batch, batch.base_offset())
            .is_some_and(|value| crate::checks::reads::cluster_of_value(&value) == destination)
    };
    log.batches_from(Offset(from))
        .filter(|batch| !batch.is_control() && !written_here(batch))
        .find(|batch| {
            source_log
                .batches_from(Offset(batch.base_offset()))
                .next()
                .is_some_and(|original| {
                    original.base_offset() == batch.base_offset()
                        && design.is_stored_form_of(original, batch)
                })
        })
        .map(|batch| {
            format!(
                "holds the source topic's batch of a later life at offset {} (epoch {}): the \
                 topic was deleted and created again after this partition mirrored it",
                batch.base_offset(),
                batch.partition_leader_epoch()
            )
        })
}
