//! Logs as they were: every version of a leader's log the checks saw (a deposed leader's,
//! one a mirroring cut replaced), and the reads and skips they explain.

use super::*;
use mirrorsim::common::Offset;

/// A partition's lossy epoch starts (epoch, start offset) and its deposed leaders' logs.
type LossyStartsAndDeposedLogs<'a> = (&'a [(i32, i64)], &'a [DeposedLog]);

/// Whether `poll` read a record a deposed leader's log held below its high watermark at an
/// offset at or above the start of a later leader epoch (`lossy_starts`: (epoch, start offset)
/// of epochs that began below the committed high watermark), while it was seen leading: the
/// later epoch's lineage holds its own records from that start on, so no later log holds
/// what the deposed leader exposed there, and its truncation on learning of the election
/// drops it as the loss dropped the rest. Records below the start, or a deposed leader of an
/// epoch not below the lossy one, excuse nothing.
///
/// `high_watermark_floor(epoch)`: how far a leader deposed in `epoch` may have raised its high
/// watermark beyond what the checks saw of it (0: not at all).
pub(super) fn read_from_deposed_tail(
    lossy_starts: &[(i32, i64)],
    deposed: &[DeposedLog],
    poll: &PollRecord,
    high_watermark_floor: impl Fn(i32) -> i64,
) -> bool {
    deposed.iter().any(|log| {
        let high_watermark = log
            .version
            .high_watermark
            .max(high_watermark_floor(log.leader_epoch));
        poll.fetched_ms <= log.last_seen_ms
            && log.first_seen_ms <= poll.received_ms
            && lossy_starts
                .iter()
                .any(|&(epoch, start)| log.leader_epoch < epoch && start <= poll.offset)
            && log
                .version
                .holds_below(poll.offset, &poll.value, high_watermark)
    })
}

/// Adds what `view`'s broker, still leading in `leader_epoch`, holds in `log` from `from` on to
/// the deposed logs `kept` of its partition (see [`Checkers::note_deposed_leader_logs`]): to
/// the one it extends, or as another when its log no longer extends any (a deposed mirror
/// leader's fetcher may still cut it).
pub(super) fn note_deposed_log(
    kept: &mut Vec<DeposedLog>,
    time_ms: i64,
    view: &BrokerView<'_>,
    leader_epoch: i32,
    log: &PartitionLog<MemoryDirDisk>,
    from: i64,
) {
    let broker = view.broker.broker_id();
    let extends = |deposed: &DeposedLog| {
        deposed.broker == broker
            && deposed.incarnation == view.incarnation
            && deposed.leader_epoch == leader_epoch
            && deposed.version.batches.last().is_none_or(|last| {
                log.batches_from(Offset(last.base_offset()))
                    .next()
                    .is_some_and(|batch| {
                        batch.base_offset() == last.base_offset()
                            && batch.header().crc == last.header().crc
                    })
            })
    };
    let deposed = match kept.iter().position(extends) {
        Some(at) => &mut kept[at],
        None => {
            kept.push(DeposedLog {
                broker,
                incarnation: view.incarnation,
                leader_epoch,
                first_seen_ms: time_ms,
                last_seen_ms: time_ms,
                version: LogVersion::default(),
            });
            kept.last_mut().expect("just pushed")
        }
    };
    let last_base = deposed
        .version
        .batches
        .last()
        .map(|last| last.base_offset());
    for batch in log.batches_from(Offset(from)) {
        if last_base.is_none_or(|base| batch.base_offset() > base) {
            deposed.version.batches.push(batch.clone());
        }
    }
    deposed.version.high_watermark = log.high_watermark().0;
    deposed.last_seen_ms = time_ms;
}

/// Keeps, for each partition with an epoch start in `starts`, the log of every broker still
/// leading it in a lower epoch, from the lowest such start above that epoch on (see
/// [`Checkers::note_deposed_leader_logs`]). Only the few partitions with a start are looked
/// at, not every partition of every broker: this runs every step once one happened.
pub(super) fn keep_deposed_logs(
    starts_by_partition: &BTreeMap<(ClusterIndex, TopicPartition), Vec<(i32, i64)>>,
    deposed_logs: &mut BTreeMap<(ClusterIndex, TopicPartition), Vec<DeposedLog>>,
    time_ms: i64,
    brokers: &[BrokerView<'_>],
) {
    for (key, starts) in starts_by_partition {
        let (cluster, tp) = key;
        for view in brokers.iter().filter(|view| view.cluster == *cluster) {
            let Some(partition) = view.partition(tp) else {
                continue;
            };
            let Role::Leader(state) = &partition.role else {
                continue;
            };
            let Some(from) = (starts.iter())
                .filter(|(epoch, _)| *epoch > state.leader_epoch.0)
                .map(|(_, start)| *start)
                .min()
            else {
                continue;
            };
            let kept = deposed_logs.entry(key.clone()).or_default();
            note_deposed_log(
                kept,
                time_ms,
                view,
                state.leader_epoch.0,
                &partition.log,
                from,
            );
        }
    }
}

impl Checkers {
    /// In the step of each read: notes the jumps over offsets for which the current leader's
    /// log holds no record the consumer must receive, while no mirroring truncation has cut
    /// them since the read (so the log still holds what the consumer read past). `check_polls`
    /// judges jumps against the final log, which a later mirroring truncation may have
    /// rewritten there (`skip_rewritten_by_mirroring`).
    ///
    /// The consumer passes control batches between two reads without a poll to show for it, so
    /// the log it passed may be rewritten before its next read, not after (generator seed 5:
    /// c's consumer read 22, fetched the ABORT marker at 23 and the `MIRROR_PID_RESET` at 24,
    /// then PREPARING cut c's log to 0 and mirrored a from scratch past 25, and the consumer's
    /// next read was a's 25). So every step also extends, per consumer and partition, the range
    /// past its last read that the leader's log held as control batches only below its high
    /// watermark ([`PassedRange`]); a jump that stays inside it after a mirroring truncation
    /// cut it is noted in `passed_then_cut`. Only control batches count there, for
    /// READ_COMMITTED consumers too (an aborted transaction's data is not excused this way).
    pub(super) fn note_poll_gaps(&mut self, logs: &dyn LeaderLogs, history: &History) {
        let mut polls_seen = std::mem::take(&mut self.polls_seen);
        for (&(consumer, incarnation), polls) in &history.polls {
            let (seen, last) = polls_seen.entry((consumer, incarnation)).or_default();
            for (index, poll) in polls.iter().enumerate().skip(*seen) {
                let tp = &poll.topic_partition;
                let previous = match last.get_mut(tp) {
                    Some(last) => Some(std::mem::replace(last, poll.offset)),
                    None => last.insert(tp.clone(), poll.offset),
                };
                let next = PassedRange {
                    from: poll.offset + 1,
                    to: poll.offset + 1,
                    cut: false,
                    mirror_cut: false,
                };
                let passed = self
                    .passed
                    .insert((consumer, incarnation, tp.clone()), next);
                if passed.is_none() {
                    self.log_versions
                        .entry((consumer.cluster(), tp.clone()))
                        .or_default();
                }
                let Some(previous) =
                    previous.filter(|previous| !poll.after_reset && poll.offset > previous + 1)
                else {
                    continue;
                };
                let cluster = consumer.cluster();
                let log = logs.leader_log(cluster, tp);
                // Past the range, the rewritten log may hold control batches only up to the
                // read (a marker the new log has where the old one ended): the consumer passed
                // those too (regression `retried_delete_mirror_took_effect`, seed
                // 3307716073686212: passed the COMMIT at 38 of a log ending at 39, PREPARING
                // cut it to 0 and mirrored a's log, whose 38 is data and 39 a COMMIT; the
                // consumer read on at 40).
                let control_only_past = |passed: &PassedRange| {
                    poll.offset <= passed.to
                        || (passed.mirror_cut
                            && log.is_some_and(|log| {
                                control_batches_span(log, passed.to, poll.offset)
                            }))
                };
                if passed.is_some_and(|passed| {
                    passed.cut && passed.from == previous + 1 && control_only_past(&passed)
                }) {
                    self.passed_then_cut.insert((consumer, incarnation, index));
                }
                let Some(log) = log else {
                    continue;
                };
                let gap = (previous + 1, poll.offset);
                let holds_data = |read_committed| {
                    first_data_offset_between(log, gap.0, gap.1, read_committed).is_some()
                };
                // The transaction outcomes of READ_COMMITTED cost a walk of the whole log: only
                // when the gap holds data at all.
                let empty = log.log_start_offset() <= Offset(gap.0)
                    && gap.1 <= log.log_end_offset().0
                    && (!holds_data(false)
                        || (history.read_committed.contains(&consumer) && !holds_data(true)));
                let cut_since =
                    self.cut_by_mirroring(cluster, tp, gap.1 - 1, poll.fetched_ms, |_| true)
                        || self.lost_since(cluster, tp, gap.1 - 1, poll.fetched_ms);
                if empty && !cut_since {
                    self.empty_gaps.insert((consumer, incarnation, index));
                }
            }
            *seen = polls.len();
        }
        self.polls_seen = polls_seen;
        for ((consumer, _, tp), passed) in &mut self.passed {
            if passed.cut {
                continue;
            }
            let Some(log) = logs.leader_log(consumer.cluster(), tp) else {
                continue;
            };
            for batch in log.batches_from(Offset(passed.to)) {
                let next = batch.next_offset();
                if !batch.is_control()
                    || next > log.high_watermark().0
                    || batch.base_offset() > passed.to
                {
                    break;
                }
                passed.to = next;
            }
        }
    }

    /// In each step: extends, per (cluster, partition) a consumer read, the version of the
    /// current leader's log the checkers saw ([`LogVersion`]), and keeps a version the log
    /// stopped extending (its last batch seen is gone or another) in `replaced_versions`.
    /// A broker answers a fetch from its log as it is when the fetch arrives, which a
    /// truncation may rewrite before the answer reaches the consumer, so the step of the read
    /// may already see another log (generator seeds 3307716073686192 and …194: PREPARING's
    /// and the first mirror fetch's cuts landed while a READ_COMMITTED fetch travelled).
    pub(super) fn note_log_versions(&mut self, time_ms: i64, logs: &dyn LeaderLogs) {
        // One entry per partition a consumer has read (`note_poll_gaps` adds it).
        for (key, version) in &mut self.log_versions {
            let Some(log) = logs.leader_log(key.0, &key.1) else {
                continue;
            };
            let extends = version.batches.last().is_none_or(|last| {
                log.batches_from(Offset(last.base_offset()))
                    .next()
                    .is_some_and(|batch| {
                        batch.base_offset() == last.base_offset()
                            && batch.header().crc == last.header().crc
                    })
            });
            if !extends {
                let replaced = std::mem::take(version);
                self.replaced_versions
                    .entry(key.clone())
                    .or_default()
                    .push((time_ms, replaced));
            }
            let from = version
                .batches
                .last()
                .map_or(log.log_start_offset(), |last| {
                    Offset(last.base_offset() + 1)
                });
            for batch in log.batches_from(from) {
                if batch.base_offset() >= from.0 {
                    version.batches.push(batch.clone());
                }
            }
            version.high_watermark = log.high_watermark().0;
        }
    }

    /// Per step: a leader still leading a partition of a topic that is not durable in an epoch
    /// below a later epoch's start (a zombie that has not heard of the election: paused, or
    /// its own ISR shrink to itself answered after the controller moved on) whose high
    /// watermark passed that start committed what the later epoch never holds: a loss of
    /// committed data (`losses`, with the later epoch, as `observe_leader_start` notes one),
    /// noted again each time that high watermark rises. `committed_high` only follows the
    /// leader of the controller's current epoch, which cannot see it.
    pub(super) fn note_deposed_commits(&mut self, time_ms: i64, brokers: &[BrokerView<'_>]) {
        let mut found = Vec::new();
        for view in brokers {
            for (tp, partition) in view.partitions() {
                let Role::Leader(state) = &partition.role else {
                    continue;
                };
                if self
                    .durable_topics
                    .contains(&(view.cluster, tp.topic.clone()))
                {
                    continue;
                }
                let key = (view.cluster, tp.clone());
                let Some(starts) = self.epoch_starts.get(&key) else {
                    continue;
                };
                let noted = self
                    .deposed_commits
                    .get(&(view.cluster, tp.clone(), state.leader_epoch.0))
                    .copied();
                let high = partition.log.high_watermark();
                if let Some((epoch, start)) =
                    deposed_commit_past_successor(starts, state.leader_epoch.0, high.0, noted)
                {
                    self.deposed_commits
                        .insert((view.cluster, tp.clone(), state.leader_epoch.0), high.0);
                    found.push((key, epoch, start));
                }
            }
        }
        for ((cluster, tp), epoch, start) in found {
            let starts = self
                .lossy_epoch_starts
                .entry((cluster, tp.clone()))
                .or_default();
            if !starts.contains(&(epoch, start)) {
                starts.push((epoch, start));
            }
            self.note_loss(time_ms, cluster, &tp, start, Some(epoch));
            self.mark("deposed-leader-committed-past-successor");
        }
    }

    /// Per step: for each partition a leader epoch of began below its committed high watermark
    /// (`lossy_epoch_starts`, a topic that is not durable), keeps the log of every broker still
    /// leading it in a lower epoch, from the lowest such start above that epoch on, with its
    /// high watermark (`deposed_logs`): what it may answer a consumer whose metadata is as
    /// stale as its own. A log that no longer extends the one kept (a deposed mirror leader's
    /// fetcher may still cut it) is kept as another.
    pub(super) fn note_deposed_leader_logs(&mut self, time_ms: i64, brokers: &[BrokerView<'_>]) {
        keep_deposed_logs(
            &self.lossy_epoch_starts,
            &mut self.deposed_logs,
            time_ms,
            brokers,
        );
        keep_deposed_logs(
            &self.mirror_cut_epoch_starts,
            &mut self.mirror_cut_deposed_logs,
            time_ms,
            brokers,
        );
    }

    /// A leader of `view`'s cluster cut `topic_partition` to `to` by mirroring: noted with its
    /// leader epoch (see `mirror_cut_epoch_starts`). A cut by a follower (a deposed leader's
    /// fetcher, say) starts no epoch and is not noted.
    pub(super) fn note_mirror_cut_epoch(
        &mut self,
        view: &BrokerView<'_>,
        tp: &TopicPartition,
        to: i64,
    ) {
        let Some(Role::Leader(state)) = view.partition(tp).map(|p| &p.role) else {
            return;
        };
        let starts = self
            .mirror_cut_epoch_starts
            .entry((view.cluster, tp.clone()))
            .or_default();
        if !starts.contains(&(state.leader_epoch.0, to)) {
            starts.push((state.leader_epoch.0, to));
        }
    }

    /// Whether `consumer` read its own cluster's record `poll` from a deposed leader after a
    /// leader of a later epoch cut it by mirroring (a failback's cut of the old primary's
    /// writes): the deposed leader, not yet told of the election, serves what it holds, as
    /// Kafka's does, and truncates it on learning of it (generated seed 9960000000000233:
    /// c-broker-1, isolated and deposed in epoch 2, answered c-consumer-1's fetch at 630 after
    /// c-broker-3's PREPARING in epoch 3 had cut c's log to 0). A mirrored record is never
    /// excused so: every later log holds it at the same offset.
    pub(super) fn read_from_deposed_leader_before_mirror_cut(
        &self,
        consumer: NodeId,
        poll: &PollRecord,
    ) -> bool {
        let key = (consumer.cluster(), poll.topic_partition.clone());
        if cluster_of_value(&poll.value) != consumer.cluster() {
            return false;
        }
        let (Some(starts), Some(deposed)) = (
            self.mirror_cut_epoch_starts.get(&key),
            self.mirror_cut_deposed_logs.get(&key),
        ) else {
            return false;
        };
        // A leader paused across the election resumes with the follower fetches that queued
        // up meanwhile and may raise its high watermark to what its successor held when
        // elected, answer a consumer and learn of the election within one step of the checks
        // (generated seed 10400000000000059: b-broker-4, paused in epoch 0 with its high
        // watermark at 29, answered offset 29 with 30 after b-broker-3, elected in epoch 1
        // holding 0..=29, had cut b's log by PREPARING).
        let successor_start = |deposed_epoch: i32| {
            self.epoch_starts
                .get(&key)
                .into_iter()
                .flatten()
                .filter(|(epoch, _)| *epoch > deposed_epoch)
                .min_by_key(|(epoch, _)| *epoch)
                .map_or(0, |(_, start)| *start)
        };
        read_from_deposed_tail(starts, deposed, poll, successor_start)
    }

    /// Whether `consumer` read `poll` from a deposed leader's tail (see
    /// [`read_from_deposed_tail`]): a read after the loss its epoch's successor began with, of
    /// a record that loss dooms as well. Generator seed 9800000000000371: a held-back
    /// AlterPartition stalled c-broker-3's link to its controller (everything behind it on
    /// the link waited), the controller fenced it at 9.92 s and elected c-broker-2, outside
    /// the ISR, uncleanly at 379 (payments-0, `unclean.leader.election.enable`); c-broker-3,
    /// ISR [3] in its own view, went on taking c-producer-1's records up to 536 in epoch 0,
    /// and c-consumer-1, still fetching in epoch 0, read 488..535 from it after the election
    /// until c-broker-3 learned of it at 12.6 s and truncated to 379.
    pub(super) fn read_from_deposed_leader(&self, consumer: NodeId, poll: &PollRecord) -> bool {
        self.lossy_starts_and_deposed_logs(consumer, poll)
            .is_some_and(|(starts, deposed)| read_from_deposed_tail(starts, deposed, poll, |_| 0))
    }

    /// The lossy epoch starts and the deposed leaders' logs of the partition `consumer` read
    /// `poll` from, when it has both.
    fn lossy_starts_and_deposed_logs(
        &self,
        consumer: NodeId,
        poll: &PollRecord,
    ) -> Option<LossyStartsAndDeposedLogs<'_>> {
        let key = (consumer.cluster(), poll.topic_partition.clone());
        let starts = self.lossy_epoch_starts.get(&key)?;
        let deposed = self.deposed_logs.get(&key)?;
        Some((starts, deposed))
    }

    /// Whether the jump of `consumer` from its `previous` read of a partition to `poll` over
    /// `skipped`, a data record of the final log, is excused because `poll` came from a
    /// deposed leader's doomed tail ([`Self::read_from_deposed_leader`]) whose log held no
    /// record for the consumer between the two reads, and `skipped` is at or above the start
    /// of the successor epoch that dooms that tail: the record there now is the successor's,
    /// never in the log the consumer read. Regression
    /// `unclean_leader_of_stopped_mirror_lacking_local_epoch` seed 32: c-broker-2, deposed by
    /// an unclean election that began c-broker-3's epoch 8 at 47, still served c-consumer-1 in
    /// epoch 6 (it had not learned of the election): 45..47 held the stop's control batches,
    /// 48 its own write; the consumer then found the truncation by position validation and
    /// read the successor's 47 on.
    pub(super) fn skip_into_deposed_tail(
        &self,
        consumer: NodeId,
        read_committed: bool,
        (previous, poll): (&PollRecord, &PollRecord),
        skipped: i64,
    ) -> bool {
        let Some((starts, deposed)) = self.lossy_starts_and_deposed_logs(consumer, poll) else {
            return false;
        };
        deposed.iter().any(|log| {
            let first = log.version.batches.first().map(|batch| batch.base_offset());
            let from = first.map_or(i64::MAX, |first| first.max(previous.offset + 1));
            from <= skipped
                && starts
                    .iter()
                    .any(|&(epoch, start)| log.leader_epoch < epoch && start <= skipped)
                && read_from_deposed_tail(starts, std::slice::from_ref(log), poll, |_| 0)
                && log
                    .version
                    .holds_nothing_between(from, poll.offset, read_committed)
        })
    }

    /// Whether the jump of `consumer`'s `poll` from its `previous` read of the partition over
    /// `skipped`, a data record of the final log, is excused because it read both from a
    /// version of the leader's log (what it read is what that version held there, below a
    /// high watermark the reads themselves show) that held no record for it in between and
    /// that the log stopped extending after the fetch was sent (see `note_log_versions`),
    /// and a mirroring
    /// truncation (or a loss of committed data) at or below `skipped` came after the read,
    /// so the record there now was not in the log it read. Both reads must be of that
    /// version (their values at their offsets): a jump over a record the log read held is
    /// never excused.
    pub(super) fn skip_over_replaced_log(
        &self,
        consumer: NodeId,
        read_committed: bool,
        previous: &PollRecord,
        poll: &PollRecord,
        skipped: i64,
    ) -> bool {
        let (cluster, tp) = (consumer.cluster(), &poll.topic_partition);
        let read_from_replaced = self
            .replaced_versions
            .get(&(cluster, tp.clone()))
            .is_some_and(|versions| {
                versions.iter().any(|(replaced_ms, version)| {
                    // The reads show that the leader's high watermark had passed them when it
                    // answered, which the checkers' last step before the cut may not have seen
                    // (generated seed 13600000000000283: a follower's fetch moved it and the
                    // held consumer fetch was answered, then PREPARING cut the log, all
                    // within one step).
                    let read = |poll: &PollRecord| {
                        version.holds_below(poll.offset, &poll.value, poll.offset + 1)
                    };
                    *replaced_ms >= poll.fetched_ms
                        && read(previous)
                        && read(poll)
                        && version.holds_nothing_between(
                            previous.offset + 1,
                            poll.offset,
                            read_committed,
                        )
                })
            });
        read_from_replaced
            && (self.cut_by_mirroring(cluster, tp, skipped, poll.fetched_ms, |_| true)
                || self.lost_since(cluster, tp, skipped, poll.fetched_ms))
    }

    /// Whether the jump of `consumer`'s `poll` from its `previous` read of the partition over
    /// `skipped`, the first data record of the final log in between, is excused because the
    /// consumer passed the jump's offsets in two versions of the leader's log (see
    /// `note_log_versions`): the version `previous` was read from held no record for it from
    /// there up to some offset `s` (the `MIRROR_PID_RESET` a failover wrote, say), and was
    /// replaced between the two reads' fetches; the version `poll` was read from (replaced
    /// after its fetch was sent, or still the current one) held no record for it in `[s, poll)`
    /// (an ABORT marker the new log holds where the consumer's position stood). Every data
    /// record of the final log in the jump must have come by a mirroring truncation at or
    /// below it, after the read of the version that held nothing there (generator seeds
    /// 2292223553896316 and …411: c's consumer passed the reset at 28, then PREPARING cut c's
    /// log to 0 and mirrored a from scratch past 29 before its next fetch, which read 30 over
    /// a's ABORT marker at 29). Only a mirroring cut: it keeps the leader epoch, so a consumer
    /// has no leader change to validate its position at (KIP-320), whereas a loss of committed
    /// data between the reads comes with a new leader epoch, and a Kafka consumer validates
    /// its position against the new leader's log and rewinds below the divergence. A jump over
    /// a record either version held is never excused.
    pub(super) fn skip_across_replaced_log(
        &self,
        consumer: NodeId,
        read_committed: bool,
        (previous, poll): (&PollRecord, &PollRecord),
        skipped: i64,
        final_log: Option<&PartitionLog<MemoryDirDisk>>,
    ) -> bool {
        let (cluster, tp) = (consumer.cluster(), &poll.topic_partition);
        let key = (cluster, tp.clone());
        let Some(replaced) = self.replaced_versions.get(&key) else {
            return false;
        };
        let from = previous.offset + 1;
        let rewritten =
            |offset, since_ms| self.cut_by_mirroring(cluster, tp, offset, since_ms, |_| true);
        let read_from = |version: &LogVersion, split| {
            version.holds(poll.offset, &poll.value)
                && version.holds_nothing_between(split, poll.offset, read_committed)
        };
        replaced.iter().any(|(replaced_ms, version)| {
            if !(previous.fetched_ms <= *replaced_ms
                && *replaced_ms < poll.fetched_ms
                && version.holds(previous.offset, &previous.value))
            {
                return false;
            }
            // How far the version `previous` was read from held nothing for the consumer.
            let end = version.high_watermark.min(poll.offset);
            let split = version
                .first_data_between(from, end, read_committed)
                .unwrap_or(end);
            if split <= from {
                return false;
            }
            let poll_version = self
                .log_versions
                .get(&key)
                .is_some_and(|current| read_from(current, split))
                || replaced.iter().any(|(later_ms, later)| {
                    *later_ms >= poll.fetched_ms && read_from(later, split)
                });
            // The final log's first data record where the poll's version held nothing.
            let past_split = if skipped >= split {
                Some(skipped)
            } else {
                final_log.and_then(|log| {
                    first_data_offset_between(log, split, poll.offset, read_committed)
                })
            };
            poll_version
                && (skipped >= split || rewritten(skipped, previous.fetched_ms))
                && past_split.is_none_or(|offset| rewritten(offset, poll.fetched_ms))
        })
    }
}
