//! The Jepsen-style history check: every acknowledged record read where it was written,
//! nothing read that was never written, no duplicates or reorderings, and the preconditions
//! each of these needs noted from the history.

use super::*;
use mirrorsim::common::Offset;
use reads::ValueOffsetsMemo;

impl Checkers {
    /// End-of-run comparison of the history with the final logs.
    pub fn check_history(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
        history: &History,
    ) -> Vec<Violation> {
        let logs = ViewLeaderLogs {
            controllers,
            brokers,
        };
        let lost_reads;
        let ended_life_reads;
        let lost_at_origin_reads;
        let cut_at_origin_reads;
        let not_refetched_reads;
        let stop_cut_reads;
        let deposed_reads;
        let deposed_cut_reads;
        let outcome_lost_reads = std::cell::Cell::new(0u64);
        let failback_decided_reads = std::cell::Cell::new(0u64);
        let outcome_lost_skips = std::cell::Cell::new(0u64);
        let failback_decided_skips = std::cell::Cell::new(0u64);
        let ended_life_skips = std::cell::Cell::new(0u64);
        let deposed_tail_skips = std::cell::Cell::new(0u64);
        let before_rewrite_skips = std::cell::Cell::new(0u64);
        let (mut out, (rewritten_reads, rewritten_skips, across_skips)) = {
            let by_mirroring = |consumer: NodeId, poll: &PollRecord| {
                self.rewritten_by_mirroring(
                    consumer,
                    history.read_committed.contains(&consumer),
                    poll,
                )
            };
            // Two views of a loss of committed data on a topic that is not durable: a leader
            // log ending below a high watermark seen before (`lost_tails`), and a leader epoch
            // starting below it or a mirror following such a source (`losses`).
            let lost = |consumer: NodeId, poll: &PollRecord| {
                self.lost_with_tail(consumer, poll) || self.lost_after_read(consumer, poll)
            };
            let lost_at_origin = |consumer: NodeId, poll: &PollRecord| {
                self.mirrored_read_lost_at_origin(consumer, poll)
            };
            let not_refetched = |consumer: NodeId, poll: &PollRecord| {
                self.mirrored_read_cut_not_refetched(consumer, poll)
            };
            let stop_cut = |consumer: NodeId, poll: &PollRecord| {
                self.stop_cut_after_outcome_lost(consumer, poll)
            };
            let deposed =
                |consumer: NodeId, poll: &PollRecord| self.read_from_deposed_leader(consumer, poll);
            let deposed_cut = |consumer: NodeId, poll: &PollRecord| {
                self.read_from_deposed_leader_before_mirror_cut(consumer, poll)
            };
            let sent_ms: BTreeMap<&str, i64> = history
                .sends
                .values()
                .map(|send| (send.value.as_str(), send.sent_ms))
                .collect();
            let ended_life = |consumer: NodeId, poll: &PollRecord| {
                let sent = sent_ms.get(poll.value.as_str()).copied();
                self.read_of_ended_topic_life(consumer, poll, sent)
                    || self.mirrored_read_of_ended_source_life(consumer, poll, sent)
            };
            // Every excuse but the last, which is counted on its own below.
            let rewritten_before_deposed_cut = |consumer: &NodeId, poll: &PollRecord| {
                ended_life(*consumer, poll)
                    || by_mirroring(*consumer, poll)
                    || lost(*consumer, poll)
                    || lost_at_origin(*consumer, poll)
                    || not_refetched(*consumer, poll)
                    || stop_cut(*consumer, poll)
                    || deposed(*consumer, poll)
            };
            let rewritten = |consumer: NodeId, poll: &PollRecord| {
                rewritten_before_deposed_cut(&consumer, poll) || deposed_cut(consumer, poll)
            };
            let reads = || {
                history.polls.iter().flat_map(|((consumer, _), polls)| {
                    polls.iter().map(move |poll| (*consumer, poll))
                })
            };
            ended_life_reads = reads()
                .filter(|(consumer, poll)| ended_life(*consumer, poll))
                .count();
            let rewritten_reads = reads()
                .filter(|(consumer, poll)| by_mirroring(*consumer, poll))
                .count();
            lost_reads = reads()
                .filter(|(consumer, poll)| !by_mirroring(*consumer, poll) && lost(*consumer, poll))
                .count();
            lost_at_origin_reads = reads()
                .filter(|(consumer, poll)| {
                    !by_mirroring(*consumer, poll)
                        && !lost(*consumer, poll)
                        && lost_at_origin(*consumer, poll)
                })
                .count();
            cut_at_origin_reads = reads()
                .filter(|(consumer, poll)| {
                    !by_mirroring(*consumer, poll)
                        && !lost(*consumer, poll)
                        && lost_at_origin(*consumer, poll)
                        && !self.origin_lost_since_read(poll)
                })
                .count();
            not_refetched_reads = reads()
                .filter(|(consumer, poll)| {
                    !by_mirroring(*consumer, poll)
                        && !lost(*consumer, poll)
                        && !lost_at_origin(*consumer, poll)
                        && not_refetched(*consumer, poll)
                })
                .count();
            stop_cut_reads = reads()
                .filter(|(consumer, poll)| {
                    !by_mirroring(*consumer, poll)
                        && !lost(*consumer, poll)
                        && !lost_at_origin(*consumer, poll)
                        && !not_refetched(*consumer, poll)
                        && stop_cut(*consumer, poll)
                })
                .count();
            deposed_reads = reads()
                .filter(|(consumer, poll)| {
                    !by_mirroring(*consumer, poll)
                        && !lost(*consumer, poll)
                        && !lost_at_origin(*consumer, poll)
                        && !not_refetched(*consumer, poll)
                        && !stop_cut(*consumer, poll)
                        && deposed(*consumer, poll)
                })
                .count();
            deposed_cut_reads = reads()
                .filter(|(consumer, poll)| {
                    !rewritten_before_deposed_cut(consumer, poll) && deposed_cut(*consumer, poll)
                })
                .count();
            let rewritten_skips = std::cell::Cell::new(0u64);
            let across_skips = std::cell::Cell::new(0u64);
            let skip_rewritten = |key: (NodeId, u64, usize), poll: &PollRecord, skipped| {
                if ended_life(key.0, poll) {
                    // A jump in a life of the topic that has ended: the final log is the next
                    // life's, no measure of what the old one held between the two reads.
                    ended_life_skips.set(ended_life_skips.get() + 1);
                    return true;
                }
                let written_later = logs
                    .leader_log(key.0.cluster(), &poll.topic_partition)
                    .and_then(|log| record_value_at(log, skipped))
                    .and_then(|value| sent_ms.get(value.as_str()).copied());
                let previous = history.polls[&(key.0, key.1)][..key.2]
                    .iter()
                    .rev()
                    .find(|earlier| earlier.topic_partition == poll.topic_partition);
                let read_committed = history.read_committed.contains(&key.0);
                let excused = self.skip_rewritten_by_mirroring(key, poll, skipped)
                    || self.skip_over_later_write(key.0, poll, skipped, written_later)
                    || previous.is_some_and(|previous| {
                        self.skip_over_replaced_log(key.0, read_committed, previous, poll, skipped)
                    });
                let before_rewrite = !excused
                    && previous.is_some()
                    && self.skip_before_rewrite(key.0, poll, skipped);
                before_rewrite_skips.set(before_rewrite_skips.get() + u64::from(before_rewrite));
                if before_rewrite {
                    return true;
                }
                let into_deposed_tail = !excused
                    && previous.is_some_and(|previous| {
                        let reads = (previous, poll);
                        self.skip_into_deposed_tail(key.0, read_committed, reads, skipped)
                    });
                deposed_tail_skips.set(deposed_tail_skips.get() + u64::from(into_deposed_tail));
                let excused = excused || into_deposed_tail;
                let across = !excused
                    && previous.is_some_and(|previous| {
                        let log = logs.leader_log(key.0.cluster(), &poll.topic_partition);
                        let reads = (previous, poll);
                        self.skip_across_replaced_log(key.0, read_committed, reads, skipped, log)
                    });
                // Where the final log decides the skipped record's transaction, for a
                // READ_COMMITTED consumer's jump no other excuse covers.
                let decided_at = (!excused && !across && read_committed)
                    .then(|| logs.leader_log(key.0.cluster(), &poll.topic_partition))
                    .flatten()
                    .and_then(|log| transaction_end_at(log, skipped))
                    .map(|end| end.decided_at);
                let outcome_lost = decided_at.is_some_and(|decided_at| {
                    self.skip_over_lost_outcome(key, poll, skipped, decided_at)
                });
                let failback_decided = !outcome_lost
                    && decided_at.is_some_and(|decided_at| {
                        self.skip_over_failback_decided_outcome(key, poll, skipped, decided_at)
                    });
                rewritten_skips.set(rewritten_skips.get() + u64::from(excused));
                across_skips.set(across_skips.get() + u64::from(across));
                outcome_lost_skips.set(outcome_lost_skips.get() + u64::from(outcome_lost));
                failback_decided_skips
                    .set(failback_decided_skips.get() + u64::from(failback_decided));
                excused || across || outcome_lost || failback_decided
            };
            let mut out = check_polls(time_ms, &logs, history, &rewritten, &skip_rewritten);
            let outcome_lost = |cluster, tp: &TopicPartition, offset, decided_at, since_ms| {
                if self
                    .outcome_decided_by_failback_source(cluster, tp, offset, decided_at, since_ms)
                {
                    failback_decided_reads.set(failback_decided_reads.get() + 1);
                    return true;
                }
                let lost = self.outcome_lost_since(cluster, tp, offset, decided_at, since_ms);
                outcome_lost_reads.set(outcome_lost_reads.get() + u64::from(lost));
                lost
            };
            let replaced =
                |consumer: NodeId, poll: &PollRecord| self.log_rewritten_since_read(consumer, poll);
            out.extend(check_delivered_records(
                time_ms,
                &logs,
                history,
                (&rewritten, &replaced),
                &outcome_lost,
            ));
            (
                out,
                (rewritten_reads, rewritten_skips.get(), across_skips.get()),
            )
        };
        self.mark_times("read-of-deleted-topic-life", ended_life_reads);
        self.mark_times("skip-in-deleted-topic-life", ended_life_skips.get());
        self.mark_times("skip-into-deposed-tail", deposed_tail_skips.get());
        self.mark_times("read-rewritten-by-mirroring", rewritten_reads);
        self.mark_times("read-lost-with-committed-tail", lost_reads);
        self.mark_times("mirrored-read-lost-at-origin", lost_at_origin_reads);
        self.mark_times("mirrored-read-cut-by-origin-mirroring", cut_at_origin_reads);
        self.mark_times("mirrored-read-cut-not-refetched", not_refetched_reads);
        self.mark_times("read-cut-at-stop-after-outcome-lost", stop_cut_reads);
        self.mark_times("read-from-deposed-leader-past-lossy-start", deposed_reads);
        self.mark_times(
            "read-outcome-decided-by-failback-source",
            failback_decided_reads.get(),
        );
        self.mark_times(
            "read-from-deposed-leader-after-mirror-cut",
            deposed_cut_reads,
        );
        self.mark_times("read-committed-outcome-lost", outcome_lost_reads.get());
        self.mark_times("skip-rewritten-by-mirroring", rewritten_skips);
        self.mark_times("skip-before-rewrite", before_rewrite_skips.get());
        self.mark_times("skip-across-replaced-log", across_skips);
        self.mark_times(
            "skip-over-outcome-lost-not-durable",
            outcome_lost_skips.get(),
        );
        self.mark_times(
            "skip-over-outcome-decided-by-failback-source",
            failback_decided_skips.get(),
        );
        let gone_marks = std::cell::RefCell::new(Vec::new());
        let gone_legally = |send: &crate::world::workload::SendRecord| {
            let mark = self.txn_send_gone_legally(&logs, send);
            gone_marks.borrow_mut().extend(mark);
            mark.is_some()
        };
        let lost_marked = |mark, cluster, tp: &TopicPartition, offset, decided_at, since_ms| {
            let lost = self.outcome_lost_since(cluster, tp, offset, decided_at, since_ms);
            if lost {
                gone_marks.borrow_mut().push(mark);
            }
            lost
        };
        let outcome_lost = |cluster, tp: &TopicPartition, offset, decided_at, since_ms| {
            if self.outcome_decided_by_failback_source(cluster, tp, offset, decided_at, since_ms) {
                gone_marks
                    .borrow_mut()
                    .push("txn-outcome-decided-by-failback-source");
                return true;
            }
            let mark = "txn-outcome-lost-not-durable";
            lost_marked(mark, cluster, tp, offset, decided_at, since_ms)
        };
        let abort_lost = |cluster, tp: &TopicPartition, offset, decided_at, since_ms| {
            let mark = "txn-abort-marker-lost-not-durable";
            lost_marked(mark, cluster, tp, offset, decided_at, since_ms)
        };
        let enlist_lost = |producer: NodeId,
                           send: &crate::world::workload::SendRecord,
                           completed_ms,
                           committed: bool| {
            let cluster = producer.cluster();
            let transactional_id = crate::world::workload::transactional_id(producer);
            let lost = transaction_state_partition(controllers, cluster, &transactional_id)
                .is_some_and(|state| {
                    self.enlist_lost_by_coordinator(cluster, &state, send, completed_ms)
                });
            if lost {
                gone_marks.borrow_mut().push(if committed {
                    "txn-record-outside-commit-after-coordinator-loss"
                } else {
                    "txn-record-outside-abort-after-coordinator-loss"
                });
            }
            lost
        };
        out.extend(check_transaction_atomicity(
            time_ms,
            &logs,
            history,
            &gone_legally,
            &outcome_lost,
            &abort_lost,
            &enlist_lost,
        ));
        for mark in gone_marks.into_inner() {
            self.mark(mark);
        }
        self.note_history_preconditions(&logs, history);
        out.extend(self.check_group_resumes(time_ms, &logs, history));
        out.extend(self.check_caught_up_stops(time_ms, &history.admin_ops));
        let (admin, refusals, excuses) = crate::checks::admin::check_admin_outcomes(
            time_ms,
            &self.admin_world,
            &self.mirror_images,
            &history.admin_ops,
        );
        out.extend(admin);
        if refusals > 0 {
            self.precondition(Invariant::AdminOutcomes);
        }
        for _ in 0..excuses.stale_images {
            self.mark("admin-answered-from-stale-image");
        }
        for _ in 0..excuses.duplicated {
            self.mark("admin-request-duplicated");
        }
        for _ in 0..excuses.landed_late {
            self.mark("admin-delete-landed-late");
        }
        for _ in 0..excuses.excluded_by_sync {
            self.mark("admin-topic-excluded-by-sync");
        }
        let mut full = Vec::new();
        self.check_acked_durable(time_ms, controllers, brokers, history, true, &mut full);
        out.extend(full);
        out.extend(self.lost_writes(time_ms, controllers, brokers, history));
        out
    }

    /// The preconditions of the history checks, judged on the same final logs: which cases
    /// the recorded reads, transactions and retries reached (see [`INVARIANTS`]), and the
    /// transaction outcomes the final logs hold, as coverage marks.
    pub(super) fn note_history_preconditions(&mut self, logs: &dyn LeaderLogs, history: &History) {
        if history.batch_retries > 0 {
            self.precondition(Invariant::ProducerOrder);
        }
        let mut outcomes: BTreeMap<
            (ClusterIndex, TopicPartition),
            BTreeMap<i64, (i64, TxnOutcome)>,
        > = BTreeMap::new();
        for ((consumer, _), polls) in &history.polls {
            let cluster = consumer.cluster();
            let read_committed = history.read_committed.contains(consumer);
            let mut last: BTreeMap<&TopicPartition, i64> = BTreeMap::new();
            let mut ranges: BTreeMap<&TopicPartition, (i64, i64)> = BTreeMap::new();
            for poll in polls {
                let tp = &poll.topic_partition;
                let moved = self.leader_changed.contains(&(cluster, tp.clone()));
                if let Some(previous) = last.insert(tp, poll.offset).filter(|_| !poll.after_reset) {
                    if poll.offset > previous + 1 {
                        self.precondition(Invariant::SkippedPoll);
                    }
                    if moved {
                        self.precondition(Invariant::NonmonotonicPoll);
                    }
                }
                if moved {
                    self.precondition(Invariant::InconsistentOffsets);
                }
                let range = ranges.entry(tp).or_insert((poll.offset, poll.offset));
                *range = (range.0.min(poll.offset), range.1.max(poll.offset));
            }
            for (tp, (low, high)) in ranges {
                let Some(log) = logs.leader_log(cluster, tp) else {
                    continue;
                };
                let partition_outcomes = outcomes
                    .entry((cluster, tp.clone()))
                    .or_insert_with(|| transaction_outcomes(log));
                for batch in log
                    .batches_from(Offset(low))
                    .take_while(|b| b.base_offset() <= high)
                {
                    if batch.base_offset() < low {
                        continue;
                    }
                    if batch.is_control() {
                        self.precondition(Invariant::NoControlRecordsDelivered);
                    } else if read_committed && batch.is_transactional() {
                        match partition_outcomes.get(&batch.base_offset()) {
                            Some((_, TxnOutcome::Aborted)) => {
                                self.precondition(Invariant::ReadCommitted);
                                self.mark("read-committed-skipped-aborted");
                            }
                            Some((_, TxnOutcome::Open)) => {
                                self.precondition(Invariant::ReadCommitted);
                                self.mark("read-committed-skipped-open");
                            }
                            _ => {}
                        }
                    }
                }
            }
        }
        self.note_transaction_preconditions(logs, history, &mut outcomes);
        self.note_unseen_precondition(history);
    }

    /// `transaction-atomicity`'s aborted branch, and marks for the markers the final logs hold:
    /// `txn-commit-marker`, `txn-abort-marker`, `txn-fence-abort` (an ABORT at a producer epoch
    /// above its transaction's records: the coordinator fenced the producer, on a timeout or a
    /// new instance's InitProducerId; under transaction version 2, where every marker is above
    /// its records, one the producer's next batch here is above too) and `aborted-index-from-mirrored-data` (a destination's
    /// aborted-transaction index holds a transaction it mirrored).
    pub(super) fn note_transaction_preconditions(
        &mut self,
        logs: &dyn LeaderLogs,
        history: &History,
        outcomes: &mut PartitionOutcomes,
    ) {
        let mut values = ValueOffsetsMemo::default();
        for ((producer, incarnation, _), transaction) in &history.transactions {
            if transaction.committed != Some(false) {
                continue;
            }
            let cluster = producer.cluster();
            let left_records = transaction.handles.iter().any(|handle| {
                let Some(send) = history.sends.get(&(*producer, *incarnation, *handle)) else {
                    return false;
                };
                let Some(log) = logs.leader_log(cluster, &send.topic_partition) else {
                    return false;
                };
                let partition_outcomes = outcomes
                    .entry((cluster, send.topic_partition.clone()))
                    .or_insert_with(|| transaction_outcomes(log));
                values
                    .offset_of(cluster, &send.topic_partition, log, &send.value)
                    .and_then(|offset| log.batches_from(Offset(offset)).next())
                    .and_then(|batch| partition_outcomes.get(&batch.base_offset()))
                    .is_some_and(|(_, outcome)| *outcome == TxnOutcome::Aborted)
            });
            if left_records {
                self.precondition(Invariant::TransactionAtomicity);
                self.mark("txn-aborted-records-in-log");
            }
        }
        // Every partition a transactional producer wrote to, on its own cluster and on those
        // that mirror it (the partitions read above).
        let mut partitions: BTreeSet<(ClusterIndex, TopicPartition)> =
            outcomes.keys().cloned().collect();
        partitions.extend(
            history
                .sends
                .values()
                .filter(|send| send.transaction.is_some())
                .map(|send| (cluster_of_value(&send.value), send.topic_partition.clone())),
        );
        for (cluster, tp) in partitions {
            let Some(log) = logs.leader_log(cluster, &tp) else {
                continue;
            };
            self.note_markers(cluster, &tp, log);
        }
    }

    /// Marks for the transaction markers of one final log (see
    /// [`Checkers::note_transaction_preconditions`]).
    pub(super) fn note_markers(
        &mut self,
        cluster: ClusterIndex,
        tp: &TopicPartition,
        log: &PartitionLog<MemoryDirDisk>,
    ) {
        use mirrorsim::record::ControlRecord;
        // (producer id, epoch, Some(committed) for a marker) of every transactional batch.
        let batches: Vec<(i64, i16, Option<bool>)> = log
            .batches_from(log.log_start_offset())
            .filter_map(|batch| {
                let header = batch.header();
                let marker = match batch.control_record() {
                    Some(Ok(ControlRecord::EndTransaction { committed, .. })) => Some(committed),
                    _ if header.is_transactional() && !header.is_control() => None,
                    _ => return None,
                };
                Some((header.producer_id, header.producer_epoch, marker))
            })
            .collect();
        let version_2 = self.mirror.design.transaction_version_2();
        // Producer id → the epoch of its latest batch (data or marker): an ABORT above it was
        // written for an epoch the producer never wrote with, a fence.
        let mut epochs: BTreeMap<i64, i16> = BTreeMap::new();
        for (index, &(producer_id, epoch, marker)) in batches.iter().enumerate() {
            let above = epochs
                .insert(producer_id, epoch)
                .is_some_and(|previous| previous < epoch);
            let Some(committed) = marker else {
                continue;
            };
            self.mark(if committed {
                "txn-commit-marker"
            } else {
                "txn-abort-marker"
            });
            // Under transaction version 2 every marker is one epoch above its records (the
            // EndTxn bump), and the producer goes on at the marker's epoch; a fenced one
            // starts over above it (a new instance's InitProducerId). The log cannot tell a
            // fence whose producer wrote nothing here since.
            let fenced = above
                && (!version_2
                    || batches[index + 1..]
                        .iter()
                        .find(|(id, _, _)| *id == producer_id)
                        .is_some_and(|&(_, next, _)| next > epoch));
            if fenced && !committed {
                self.mark("txn-fence-abort");
            }
        }
        if let Some(mirrored_end) = self.mirror.mirrored_end(cluster, tp) {
            if log
                .aborted_txns()
                .iter()
                .any(|aborted| aborted.last_offset < Offset(mirrored_end))
            {
                self.mark("aborted-index-from-mirrored-data");
            }
        }
    }

    /// `unseen`'s case: a reader (a plain consumer, or a group as a whole) whose reads came
    /// from two or more incarnations or members had to see an acknowledged record.
    pub(super) fn note_unseen_precondition(&mut self, history: &History) {
        let reader = |consumer: &NodeId| match history.groups.get(consumer) {
            Some(group) => format!("group {group} of cluster {}", consumer.cluster()),
            None => consumer.to_string(),
        };
        let mut sources: BTreeMap<String, BTreeSet<(NodeId, u64)>> = BTreeMap::new();
        for ((consumer, incarnation), polls) in &history.polls {
            if !polls.is_empty() {
                sources
                    .entry(reader(consumer))
                    .or_default()
                    .insert((*consumer, *incarnation));
            }
        }
        let spread: BTreeSet<&String> = sources
            .iter()
            .filter(|(_, from)| from.len() > 1)
            .map(|(name, _)| name)
            .collect();
        let required = history.subscriptions.iter().any(|(consumer, topics)| {
            spread.contains(&reader(consumer))
                && history.acked_sends().any(|(_, send)| {
                    cluster_of_value(&send.value) == consumer.cluster()
                        && topics
                            .iter()
                            .any(|topic| *topic == send.topic_partition.topic)
                })
        });
        if required {
            self.precondition(Invariant::Unseen);
        }
    }

    /// Jepsen's lost write: an acknowledged acks=all record whose offset is beyond the end of a
    /// fully replicated log (high watermark = log end) can never appear: it was truncated away.
    pub(super) fn lost_writes(
        &self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
        history: &History,
    ) -> Vec<Violation> {
        let mut out = Vec::new();
        for (offset, send) in history.acked_sends() {
            let (tp, value) = (&send.topic_partition, &send.value);
            let cluster = cluster_of_value(value);
            if !self.durable_topics.contains(&(cluster, tp.topic.clone()))
                || self.dropped_by_mirroring(offset, send)
                || self.of_ended_topic_life(send)
            {
                continue;
            }
            let Some((_, log)) = current_leader(controllers, brokers, cluster, tp) else {
                continue;
            };
            let replicated = log.high_watermark() == log.log_end_offset();
            if replicated && offset >= log.log_end_offset().0 {
                out.push(Violation {
                    invariant: Invariant::AckedWritesDurable,
                    cluster: Some(cluster),
                    topic_partition: Some(tp.clone()),
                    detail: format!(
                        "lost write: acknowledged {value:?} at offset {offset}, the leader's replicated log ends at {}",
                        log.log_end_offset()
                    ),
                    time_ms,
                });
                break;
            }
        }
        out
    }
}
