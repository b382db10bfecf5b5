//! What a loss or a KIP-1279 mirroring cut excuses: the checkers' bookkeeping of where each
//! log lost committed data, was cut by mirroring or truncated, and the questions the history
//! and group checks ask of it before they call a missing or changed record a violation.

use super::*;

impl Checkers {
    /// Records a mirroring truncation and forgets the acknowledged records it dropped.
    pub(super) fn note_mirror_truncation(
        &mut self,
        time_ms: i64,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        to_offset: i64,
        reason: TruncationReason,
    ) {
        self.mirror_truncations
            .entry((cluster, topic_partition.clone()))
            .or_default()
            .push((time_ms, to_offset, reason));
        if reason == TruncationReason::MirrorLastMirroredEpoch {
            self.refetch_cuts
                .entry((cluster, topic_partition.clone()))
                .or_default()
                .push(RefetchCut {
                    time_ms,
                    to: to_offset,
                    refetched: Vec::new(),
                });
        }
        // A mirroring cut is noted as such, never again as a lost tail.
        if let Some(end) = self
            .committed_end
            .get_mut(&(cluster, topic_partition.clone()))
        {
            *end = (*end).min(to_offset);
        }
        for ((consumer, _, tp), passed) in &mut self.passed {
            if consumer.cluster() == cluster && tp == topic_partition && to_offset < passed.to {
                passed.cut = true;
                passed.mirror_cut = true;
            }
        }
        if let Some(records) = self
            .durable_acked
            .get_mut(&(cluster, topic_partition.clone()))
        {
            records.unverified.retain(|(offset, _)| *offset < to_offset);
            records.verified.retain(|(offset, _)| *offset < to_offset);
        }
        self.mark("mirror-truncated");
    }

    /// Notes a committed tail lost outside mirroring (see `lost_tails`): the current leader's
    /// log of a partition of a topic that is not durable ends below a high watermark a current
    /// leader showed before. A clean election never does that (every ISR member's log reaches
    /// the leader's high watermark), nor does a leader inside its epoch but for mirroring.
    pub(super) fn note_committed_end(
        &mut self,
        time_ms: i64,
        cluster: ClusterIndex,
        tp: &TopicPartition,
        (log_end, high_watermark): (i64, i64),
    ) {
        if self.durable_topics.contains(&(cluster, tp.topic.clone())) {
            return;
        }
        let end = self
            .committed_end
            .entry((cluster, tp.clone()))
            .or_insert(high_watermark);
        if log_end < *end {
            *end = high_watermark;
            self.lost_tails
                .entry((cluster, tp.clone()))
                .or_default()
                .push((time_ms, log_end));
            self.mark("committed-tail-lost");
        } else {
            *end = (*end).max(high_watermark);
        }
    }

    /// Records a loss of committed data of (`cluster`, `topic_partition`) above `kept` (see
    /// [`Checkers::losses`]): reads and jumps over what the log held there before are judged
    /// against a log that no longer holds it, and a mirror of the partition may hold batches
    /// its source lost.
    pub(super) fn note_loss(
        &mut self,
        time_ms: i64,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        kept: i64,
        epoch: Option<i32>,
    ) {
        self.losses
            .entry((cluster, topic_partition.clone()))
            .or_default()
            .push((time_ms, kept));
        for ((consumer, _, tp), passed) in &mut self.passed {
            if consumer.cluster() == cluster && tp == topic_partition && kept < passed.to {
                passed.cut = true;
            }
        }
        self.mirror
            .note_source_loss(cluster, topic_partition, kept, epoch);
        if topic_partition.topic == mirrorsim::mirror::coordinator::MIRROR_STATE_TOPIC {
            self.mirror.note_mirror_state_loss(time_ms, cluster);
        }
        self.mark("committed-data-lost");
    }

    /// A leader of (`cluster`, `topic_partition`) began its epoch at `start_offset`: below the
    /// highest high watermark its leaders reached (`committed_high`), committed data is gone.
    /// A clean election with intact disks never does that (every ISR member holds what the
    /// leader committed); an unclean one, or the only replica's power loss, does. On a topic
    /// that is not durable it is noted as a loss ([`Checkers::note_loss`]); on a durable one
    /// it is a lost acknowledged write, which `acked-writes-durable` reports, and nothing is
    /// excused. The epoch and its start are kept too (`lossy_epoch_starts`), for a deposed
    /// leader of a lower epoch that goes on serving (see [`Checkers::note_deposed_leader_logs`]).
    ///
    /// What the loss kept is where the new leader's log and the committed one part, which is
    /// below `start_offset` when the new leader lacks whole epochs (an unclean election of a
    /// replica that was deposed before them): `prior_epoch`, the epoch of the new leader's
    /// batch just below its start, says which it holds, and the committed log is kept only up
    /// to the start of the first later epoch, as its followers' divergence check truncates
    /// them (generated seed 10100000000000735: a-broker-2, deposed in epoch 0 at 106 and
    /// writing on to 143 in it, was elected uncleanly in epoch 2; broker 3's committed epoch
    /// 1 from 106 was lost, not only what lay above 143).
    pub(super) fn observe_leader_start(
        &mut self,
        time_ms: i64,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        (leader_epoch, start_offset): (i32, i64),
        prior_epoch: Option<i32>,
    ) {
        let key = (cluster, topic_partition.clone());
        // The epoch's start as far as the logs before it are concerned: where its lineage
        // parts from theirs.
        let kept = self.kept_by_new_leader(cluster, topic_partition, start_offset, prior_epoch);
        self.epoch_starts
            .entry(key.clone())
            .or_default()
            .push((leader_epoch, kept));
        let Some(high) = self.committed_high.get_mut(&key) else {
            return;
        };
        if kept >= *high {
            return;
        }
        *high = (*high).min(start_offset);
        if !self
            .durable_topics
            .contains(&(cluster, topic_partition.topic.clone()))
        {
            self.lossy_epoch_starts
                .entry(key)
                .or_default()
                .push((leader_epoch, kept));
            if kept < start_offset {
                self.mark("loss-kept-below-unclean-leader-start");
            }
            let epoch = Some(leader_epoch);
            self.note_loss(time_ms, cluster, topic_partition, kept, epoch);
        }
    }

    /// Where a new leader's log starting its epoch at `start_offset`, whose batch below it is
    /// of `prior_epoch`, parts from the logs of the epochs it lacks: the lowest start of an
    /// epoch above `prior_epoch` seen begin below `start_offset` (see
    /// [`Checkers::observe_leader_start`]); `start_offset` when it lacks none. On a partition
    /// holding mirrored data the batch below the start tells only when it is the cluster's own,
    /// above the mirrored data and of an epoch above every mirrored one (written after the
    /// stop's bump); otherwise the loss is left at `start_offset`: mirrored batches carry the
    /// source's leader epochs, whose numbers say nothing of this cluster's (the fetcher keeps
    /// them below its own, DLE ≥ SLE). Generated seed 10200000000000671: c's orders-1 had
    /// stopped mirroring; its leader, paused and deposed in epoch 2 at 124, wrote on there to
    /// 130 and was elected uncleanly in epoch 4, lacking epoch 3's committed 124..160.
    pub(super) fn kept_by_new_leader(
        &self,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        start_offset: i64,
        prior_epoch: Option<i32>,
    ) -> i64 {
        let Some(prior_epoch) = prior_epoch else {
            return start_offset;
        };
        if let Some((mirrored_end, mirrored_epoch)) =
            self.mirror.mirrored_extent(cluster, topic_partition)
        {
            if start_offset <= mirrored_end || prior_epoch <= mirrored_epoch {
                return start_offset;
            }
        }
        self.epoch_starts
            .get(&(cluster, topic_partition.clone()))
            .into_iter()
            .flatten()
            .filter(|&&(epoch, start)| epoch > prior_epoch && start < start_offset)
            .map(|&(_, start)| start)
            .fold(start_offset, i64::min)
    }

    /// Whether a loss of committed data (see [`Checkers::losses`]) of (`cluster`,
    /// `topic_partition`) at or after `since_ms` kept less than up to `offset`, so the log no
    /// longer holds what was at `offset` then.
    pub(super) fn lost_since(
        &self,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        offset: i64,
        since_ms: i64,
    ) -> bool {
        let key = (cluster, topic_partition.clone());
        kept_below(
            self.losses.get(&key).into_iter().flatten().copied(),
            offset,
            since_ms,
        )
    }

    /// Whether a loss of committed data of (`cluster`, `topic_partition`) (`losses` or
    /// `lost_tails`) came within `window` (checker times, both ends included) and kept no
    /// more than `offset` (see [`super::history::jumped_over_loss`]).
    pub(super) fn lost_between(
        &self,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        offset: i64,
        (from_ms, to_ms): (i64, i64),
    ) -> bool {
        let key = (cluster, topic_partition.clone());
        all_losses(&self.losses, &self.lost_tails, &key)
            .any(|(lost_ms, kept)| from_ms <= lost_ms && lost_ms <= to_ms && kept <= offset)
    }

    /// [`Self::lost_since`] counting committed tails lost outside mirroring too (`lost_tails`).
    pub(super) fn lost_or_tail_lost_since(
        &self,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        offset: i64,
        since_ms: i64,
    ) -> bool {
        let key = (cluster, topic_partition.clone());
        kept_below(
            all_losses(&self.losses, &self.lost_tails, &key),
            offset,
            since_ms,
        )
    }

    /// Whether a loss of committed data of (`cluster`, `topic_partition`) at or after
    /// `since_ms` (a leader starting its epoch below the high watermark, `losses`, or a leader
    /// log ending below it, `lost_tails`: only on a topic that is not durable) kept the
    /// transactional record at `offset` but nothing from `decided_at` on, where the final log
    /// decides its transaction (`None`: nowhere yet). The marker a client saw decide it then
    /// (a READ_COMMITTED read past the record needs one below the last stable offset; a
    /// coordinator's commit writes one) may be what the loss took, and the final log's marker
    /// is another written since: with one replica and its unflushed tail lost, the broker's
    /// rebuilt producer state still holds the transaction open from the record on, and the
    /// producer's next marker (an abort, say) closes it, as in Kafka. A loss at or below the
    /// record's offset is the record's own, judged by the excuses for a lost record; a loss
    /// above the marker left the verdict in place.
    pub(super) fn outcome_lost_since(
        &self,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        offset: i64,
        decided_at: Option<i64>,
        since_ms: i64,
    ) -> bool {
        let key = (cluster, topic_partition.clone());
        let decided_at = decided_at.unwrap_or(i64::MAX);
        all_losses(&self.losses, &self.lost_tails, &key)
            .any(|(time_ms, kept)| since_ms <= time_ms && offset < kept && kept <= decided_at)
    }

    /// The lowest offset from which (`cluster`, `topic_partition`) lost committed data, if it
    /// did (see [`lost_from`]).
    pub(super) fn lost_from(
        &self,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
    ) -> Option<i64> {
        lost_from(&self.losses, &self.lost_tails, cluster, topic_partition)
    }

    /// The lowest offset below `log_end` from which (`source`, `topic_partition`) dropped its
    /// data at or before `time_ms`, if it did: a loss of committed data, or a mirroring
    /// truncation (a failback of the source cutting its own unmirrored writes, which a mirror
    /// of it may have fetched).
    pub(super) fn cut_before(
        &self,
        source: ClusterIndex,
        topic_partition: &TopicPartition,
        log_end: i64,
        time_ms: i64,
    ) -> Option<i64> {
        let key = (source, topic_partition.clone());
        let lost = self.losses.get(&key).into_iter().flatten().copied();
        let cut = (self.mirror_truncations.get(&key).into_iter().flatten())
            .map(|&(cut_ms, to, _)| (cut_ms, to));
        lost.chain(cut)
            .filter(|&(cut_ms, kept)| cut_ms <= time_ms && kept < log_end)
            .map(|(_, kept)| kept)
            .min()
    }

    /// Whether a mirroring truncation of (`cluster`, `topic_partition`) for which `legal`
    /// holds cut at or below `offset` at or after `since_ms`.
    pub(super) fn cut_by_mirroring(
        &self,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        offset: i64,
        since_ms: i64,
        legal: impl Fn(TruncationReason) -> bool,
    ) -> bool {
        self.mirror_truncations
            .get(&(cluster, topic_partition.clone()))
            .is_some_and(|truncations| {
                truncations.iter().any(|&(time_ms, to, reason)| {
                    since_ms <= time_ms && offset >= to && legal(reason)
                })
            })
    }

    /// Whether mirroring dropped this acknowledged send by design (see `mirror_truncations`).
    pub(super) fn dropped_by_mirroring(
        &self,
        offset: i64,
        send: &crate::world::workload::SendRecord,
    ) -> bool {
        let cluster = cluster_of_value(&send.value);
        self.cut_by_mirroring(cluster, &send.topic_partition, offset, send.sent_ms, |_| {
            true
        })
    }

    /// Whether a failback cut this acknowledged transactional send out of its own cluster's log
    /// by design: a mirroring truncation of the producer's cluster that follows a source
    /// (PREPARING's last-mirrored-epoch cut, the first mirror fetch's diverging epoch, or a
    /// restart below the source's log start) came at or below the offset it was acknowledged
    /// at, after it was sent. KIP-1279's failback drops the old primary's unmirrored writes,
    /// committed transactions included (the coordinator confirms a commit once PrepareCommit
    /// is written; the partitions' markers are refused from PREPARING on, and the records go
    /// with the cut). STOPPING's cut to the last stable offset is not one of them: it drops
    /// open transactions only, never one the coordinator confirmed, unless a loss of committed
    /// data took its marker first (`txn_send_stop_cut_after_outcome_lost`). The caller checks
    /// that the record is gone from the final log (a record the failback mirrored back is
    /// judged by its markers as any other).
    pub(super) fn txn_send_cut_by_failback(
        &self,
        send: &crate::world::workload::SendRecord,
    ) -> bool {
        let Some(offset) = send.acked_offset else {
            return false;
        };
        let cluster = cluster_of_value(&send.value);
        let legal = |reason| {
            matches!(
                reason,
                TruncationReason::MirrorLastMirroredEpoch
                    | TruncationReason::MirrorDivergingEpoch
                    | TruncationReason::MirrorBelowSourceLogStart
            )
        };
        self.cut_by_mirroring(cluster, &send.topic_partition, offset, send.sent_ms, legal)
    }

    /// Whether STOPPING's cut to the last stable offset dropped this acknowledged
    /// transactional send from its own cluster's log after a loss of committed data there had
    /// left its transaction open: a loss at or after the send kept the record's offset but not
    /// its COMMIT marker, so the transaction is open from the record on, the last stable
    /// offset stays at or below it, and STOPPING drops open transactions by design
    /// ([`Checkers::stop_cut_after_loss`], the send's counterpart of
    /// `stop_cut_after_outcome_lost`). On a durable topic such a loss comes only from a source
    /// mirrored in: a failback's diverging-epoch cut following the new primary's own loss
    /// (`consume_events` notes it, `note_loss`). Generator seed 9200000000000275: b mirrored
    /// a's committed transaction whole (record at 150, COMMIT at 153 of orders-1), b's only
    /// replica (replication factor 1) came back from a torn power loss ending at 152, so b
    /// held the record open; a's failback cut to b's diverging epoch at 152, taking a's own
    /// COMMIT, and a's STOPPING cut to its last stable offset 150 took the record. The
    /// failback reproduced what b held, and b's topic was not durable. A STOPPING cut with no
    /// such loss between the send and the cut excuses nothing, nor a loss at or below the
    /// record's offset (the record's own, judged by the other excuses).
    pub(super) fn txn_send_stop_cut_after_outcome_lost(
        &self,
        send: &crate::world::workload::SendRecord,
    ) -> bool {
        let Some(offset) = send.acked_offset else {
            return false;
        };
        let key = (cluster_of_value(&send.value), send.topic_partition.clone());
        self.stop_cut_after_loss(&key, offset, send.sent_ms)
    }

    /// Whether STOPPING's cut to the last stable offset dropped this acknowledged
    /// transactional send from its own cluster's log after a failback's cut (one that follows
    /// the source: last-mirrored-epoch lookup, diverging epoch, restart below the source's log
    /// start) had come above the record, after the send: that cut removed the old primary's
    /// unmirrored marker and kept the record, so its transaction was open from the record on,
    /// and STOPPING drops open transactions, finishing the failback's cut (the next mirror
    /// fetch would have: the record was never mirrored either). Generated seed
    /// 9990000000000710 under `tail-unverified`: a's epoch 0 held both the prefix b mirrored
    /// (..=66) and a's own later transaction (records 67, 68, COMMIT 69 written by a's next
    /// leader); PREPARING's lookup gave epoch 0 and the cut went to the end of a's epoch 0 (69),
    /// taking the COMMIT only; a's topic was removed before its first fetch, and STOPPING's
    /// cut to its last stable offset 67 took the records of a transaction a's coordinator had
    /// confirmed. A STOPPING cut with no such failback cut between the send and it excuses
    /// nothing, nor a failback cut at or below the record (`txn_send_cut_by_failback` judges
    /// that one).
    pub(super) fn txn_send_stop_cut_after_failback_cut(
        &self,
        send: &crate::world::workload::SendRecord,
    ) -> bool {
        let Some(offset) = send.acked_offset else {
            return false;
        };
        let key = (cluster_of_value(&send.value), send.topic_partition.clone());
        let Some(cuts) = self.mirror_truncations.get(&key) else {
            return false;
        };
        cuts.iter().any(|&(stop_ms, stop_to, reason)| {
            reason == TruncationReason::MirrorStopAtLastStableOffset
                && send.sent_ms <= stop_ms
                && stop_to <= offset
                && cuts.iter().any(|&(cut_ms, to, reason)| {
                    reason.follows_source()
                        && send.sent_ms <= cut_ms
                        && cut_ms <= stop_ms
                        && offset < to
                })
        })
    }

    /// Whether a failback decided how the transaction of the record at `offset` (sent at
    /// `since_ms`) ended in its own cluster's log: a mirroring cut that follows the source
    /// (PREPARING's last-mirrored-epoch cut, a diverging epoch, a restart below the source's log
    /// start) came after the send, above the record and at or below the control batch that
    /// decided it (`decided_at`). That batch is then the new primary's, mirrored back: under
    /// `abort-markers` its stop ABORTs the transactions it had mirrored open (the fetcher reads
    /// up to the source's high watermark), and the failback cuts the old primary's own COMMIT
    /// with the rest of its unmirrored writes, as the seed's cut to the last stable offset
    /// loses the same commit by removing the records (`txn-record-cut-by-failback`; generated
    /// seeds 7 and 20 under `abort-markers`).
    pub(super) fn outcome_decided_by_failback_source(
        &self,
        cluster: ClusterIndex,
        tp: &TopicPartition,
        offset: i64,
        decided_at: Option<i64>,
        since_ms: i64,
    ) -> bool {
        let Some(marker) = decided_at else {
            return false;
        };
        self.mirror_truncations
            .get(&(cluster, tp.clone()))
            .is_some_and(|cuts| {
                cuts.iter().any(|&(time_ms, to, reason)| {
                    since_ms <= time_ms && offset < to && to <= marker && reason.follows_source()
                })
            })
    }

    /// Whether a transactional send gone from its final log may be gone by design, and then
    /// the coverage mark saying why: `txn-record-cut-by-failback`
    /// ([`Checkers::txn_send_cut_by_failback`]), `txn-record-stop-cut-after-outcome-lost`
    /// ([`Checkers::txn_send_stop_cut_after_outcome_lost`]),
    /// `txn-record-stop-cut-after-failback-cut`
    /// ([`Checkers::txn_send_stop_cut_after_failback_cut`]) or `txn-record-lost-not-durable`
    /// ([`Checkers::txn_send_lost_not_durable`]: its topic is not durable, a loss of committed
    /// data came at or below its offset after the send, and the log no longer holds it there).
    pub(super) fn txn_send_gone_legally(
        &self,
        logs: &dyn LeaderLogs,
        send: &crate::world::workload::SendRecord,
    ) -> Option<&'static str> {
        if self.of_ended_topic_life(send) {
            // Deleted with its topic (`checks::topics`): no log holds it or its outcome.
            Some("txn-record-of-deleted-topic")
        } else if self.txn_send_cut_by_failback(send) {
            Some("txn-record-cut-by-failback")
        } else if self.txn_send_stop_cut_after_outcome_lost(send) {
            Some("txn-record-stop-cut-after-outcome-lost")
        } else if self.txn_send_stop_cut_after_failback_cut(send) {
            Some("txn-record-stop-cut-after-failback-cut")
        } else if self.txn_send_lost_not_durable(logs, send) {
            Some("txn-record-lost-not-durable")
        } else {
            None
        }
    }

    /// Whether a loss of committed data took this acknowledged transactional send from a topic
    /// that is not durable: the log no longer holds it at its offset ([`Checkers::lost_legally`])
    /// and a loss was seen at or below that offset after the send (a leader starting its epoch
    /// below the high watermark, or a leader's log ending below it: `losses`, `lost_tails`). A
    /// transactional producer always acknowledges with acks=all, so its record was committed
    /// and only such a loss takes it; a topic that is not durable permits the loss but is not
    /// its cause. Without the loss the record went another way, which the other excuses judge:
    /// generator seed 5 under `markers-refused-before-cut` (a reverse mirror on b while c still
    /// mirrored payments from b; the COMMIT markers of b's transaction were refused, PREPARING
    /// failed on the loop without cutting, and STOPPING's cut to the last stable offset took the
    /// records of a transaction its producer was told was committed) was excused here because
    /// b's payments has `min.insync.replicas` 1.
    pub(super) fn txn_send_lost_not_durable(
        &self,
        logs: &dyn LeaderLogs,
        send: &crate::world::workload::SendRecord,
    ) -> bool {
        let Some(offset) = send.acked_offset else {
            return false;
        };
        let cluster = cluster_of_value(&send.value);
        self.lost_legally(logs, offset, send)
            && self.lost_or_tail_lost_since(cluster, &send.topic_partition, offset, send.sent_ms)
    }

    /// Whether a truncation that may legally cut what `consumer` read in `poll` came at or
    /// below its offset at or after the read, so the final log may hold other data there:
    /// - any mirroring truncation, when the record was written on the consumer's own cluster:
    ///   a failback drops the old primary's writes since it stopped, which its consumers may
    ///   have read (KIP-1279 §failback; the cut comes from the last-mirrored-epoch lookup or the
    ///   first mirror fetch's diverging epoch);
    /// - STOPPING's cut to the last stable offset, for a READ_UNCOMMITTED consumer, which may
    ///   have read the open transactions it drops.
    ///
    /// A record the cluster mirrored in is never excused otherwise: the mirror copies only what
    /// the source committed, which a clean source never rewrites. That is how chain seed
    /// 10022's lost committed records were caught.
    pub(super) fn rewritten_by_mirroring(
        &self,
        consumer: NodeId,
        read_committed: bool,
        poll: &PollRecord,
    ) -> bool {
        let cluster = consumer.cluster();
        let local_write = cluster_of_value(&poll.value) == cluster;
        let legal = |reason| match reason {
            TruncationReason::MirrorStopAtLastStableOffset => local_write || !read_committed,
            _ => local_write,
        };
        let (tp, offset) = (&poll.topic_partition, poll.offset);
        // From the fetch's sending on: the broker may have read its log at any time before
        // the answer arrived, so a truncation while it travelled counts as after the read.
        self.cut_by_mirroring(cluster, tp, offset, poll.fetched_ms, legal)
    }

    /// Whether a committed tail lost outside mirroring (see `lost_tails`: a topic that is not
    /// durable, an unclean election or a power loss of the replicas holding the tail) took the
    /// offset `consumer` read, after it read it: Kafka lets such a topic lose records its
    /// consumers already received, and the offset may hold another record since.
    pub(super) fn lost_with_tail(&self, consumer: NodeId, poll: &PollRecord) -> bool {
        let key = (consumer.cluster(), poll.topic_partition.clone());
        let tails = self.lost_tails.get(&key).into_iter().flatten().copied();
        kept_below(tails, poll.offset, poll.fetched_ms)
    }

    /// Whether a loss of committed data ([`Checkers::losses`]) of the partition `consumer` read
    /// in `poll` came at or below its offset at or after the read: whatever cluster wrote the
    /// record, the log read no longer holds it (a topic that is not durable, or the mirror of
    /// one, lost it). A loss before the read, or above its offset, excuses nothing.
    pub(super) fn lost_after_read(&self, consumer: NodeId, poll: &PollRecord) -> bool {
        self.lost_since(
            consumer.cluster(),
            &poll.topic_partition,
            poll.offset,
            poll.fetched_ms,
        )
    }

    /// Whether a mirrored record `consumer` read in `poll` was cut from its cluster's log by a
    /// mirroring truncation that follows the source (PREPARING's last-mirrored-epoch cut or a
    /// diverging epoch) at or below its offset after the read, and the cluster that wrote it
    /// lost committed data at or below that offset after the read too (a topic that is not
    /// durable: a leader epoch starting below its high watermark, [`Checkers::losses`], or a
    /// leader log ending below it, `lost_tails`). The mirror then fetches the offset again from a log
    /// that no longer holds the record, as KIP-1279 mirrors whatever the source holds
    /// (generator seed 3307716073686385: b's topic stopped, then was mirrored again, and the
    /// PREPARING cut took b to 0, as its last-mirrored-epoch lookup on a found nothing; before
    /// b fetched the old records back, a's only replica of the partition lost them in a power
    /// loss, and b mirrored a's new records at their offsets). The mirror's own truncation alone never excuses a
    /// mirrored record (a clean source rewrites nothing), nor does a loss of the source alone
    /// (the mirror still holds what the consumer read), nor a loss before the read. When the
    /// loss came before the cut, [`Checkers::note_loss`] already noted it on the mirror.
    pub(super) fn mirrored_read_lost_at_origin(&self, consumer: NodeId, poll: &PollRecord) -> bool {
        let cluster = consumer.cluster();
        let origin = cluster_of_value(&poll.value);
        let (tp, offset) = (&poll.topic_partition, poll.offset);
        let follows_source = |reason| {
            matches!(
                reason,
                TruncationReason::MirrorLastMirroredEpoch | TruncationReason::MirrorDivergingEpoch
            )
        };
        origin != cluster
            && self.cut_by_mirroring(cluster, tp, offset, poll.fetched_ms, follows_source)
            && (self.origin_lost_since_read(poll)
                || self.origin_cut_own_write(origin, tp, offset, poll.fetched_ms))
    }

    /// Whether the cluster that wrote the record read in `poll` lost committed data at or
    /// below its offset after the read (see [`Checkers::lost_or_tail_lost_since`]).
    pub(super) fn origin_lost_since_read(&self, poll: &PollRecord) -> bool {
        let origin = cluster_of_value(&poll.value);
        self.lost_or_tail_lost_since(origin, &poll.topic_partition, poll.offset, poll.fetched_ms)
    }

    /// Whether the cluster that wrote a record (`origin`) cut it from its own log by a
    /// mirroring truncation that follows a source, at or below `offset`, at or after
    /// `since_ms`: a destination with a history of its own drops it by design when it starts
    /// mirroring (PREPARING's cut, a diverging epoch), and a mirror of that cluster follows
    /// (the second way a mirrored read is gone at its origin, mark
    /// `mirrored-read-cut-by-origin-mirroring`; generated seeds 10100000000001314 and …1415,
    /// chain a → b → c: c mirrored and served b's own records, b's topics were then added to
    /// its mirror of a and PREPARING cut them to 0, and c, cut by its own PREPARING, mirrored
    /// a's records at those offsets).
    pub(super) fn origin_cut_own_write(
        &self,
        origin: ClusterIndex,
        tp: &TopicPartition,
        offset: i64,
        since_ms: i64,
    ) -> bool {
        self.cut_by_mirroring(
            origin,
            tp,
            offset,
            since_ms,
            TruncationReason::follows_source,
        )
    }

    /// Notes offsets a mirror leader of (`cluster`, `topic_partition`) appended from its
    /// source: every last-mirrored-epoch cut noted before holds them as fetched back.
    pub(super) fn note_mirror_append(
        &mut self,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        range: (i64, i64),
    ) {
        if let Some(cuts) = self
            .refetch_cuts
            .get_mut(&(cluster, topic_partition.clone()))
        {
            for cut in cuts {
                cut.refetched.push(range);
            }
        }
    }

    /// A new leader of `topic_partition` starts its epoch at `start_offset`: what the mirror
    /// had fetched back above it after a last-mirrored-epoch cut is not in this leader's log
    /// (an uncommitted tail the old leader took with it, e.g. in a power loss), so it no
    /// longer counts as fetched back (generator seed 9500000000000348: b's cut to 0, a's
    /// records re-mirrored by b-broker-2, its power loss 0.3 s later before b-broker-1 had
    /// fetched any, b-broker-1 elected with an empty log and the topic stopped there).
    pub(super) fn forget_refetches_past(
        &mut self,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        start_offset: i64,
    ) {
        let Some(cuts) = self
            .refetch_cuts
            .get_mut(&(cluster, topic_partition.clone()))
        else {
            return;
        };
        let mut forgot = false;
        for cut in cuts {
            let kept: Vec<(i64, i64)> = cut
                .refetched
                .iter()
                .filter(|&&(first, _)| first < start_offset)
                .map(|&(first, last)| (first, last.min(start_offset - 1)))
                .collect();
            forgot |= kept != cut.refetched;
            cut.refetched = kept;
        }
        if forgot {
            self.mark("refetch-lost-at-election");
        }
    }

    /// Whether a mirrored record `consumer` read in `poll` was cut from its cluster's log by
    /// PREPARING's last-mirrored-epoch cut at or below its offset after the read, and the
    /// mirror never fetched that offset back from the source since (no `MirrorAppend` of the
    /// partition covered it after the cut): the topic left the mirror again (STOPPING) first,
    /// so the final log holds something else there or nothing. KIP-1279 mirroring a stopped
    /// topic again from the same source asks the source for its last mirrored epoch, which a
    /// source that never mirrored from this cluster does not have: it answers −1, and the
    /// destination truncates everything to mirror from scratch (kip1279-spec S-24, "not a bug
    /// per design, but a data-loss hazard"); a stop before the mirror caught up keeps the
    /// truncated log (generator seed 2292223553896714: b's orders stopped, was added back and
    /// cut to 0, and was removed again within 110 ms, so STOPPING wrote its `MIRROR_PID_RESET`
    /// at offset 0 where b's consumer had read a's record). A record the mirror fetched back
    /// is judged as any other (a clean source rewrites nothing), and so is a read after the
    /// cut, a cut of another reason, and a record the cluster wrote itself (failback's rules
    /// judge those, see [`Checkers::rewritten_by_mirroring`]).
    pub(super) fn mirrored_read_cut_not_refetched(
        &self,
        consumer: NodeId,
        poll: &PollRecord,
    ) -> bool {
        let cluster = consumer.cluster();
        let (tp, offset) = (&poll.topic_partition, poll.offset);
        cluster_of_value(&poll.value) != cluster
            && self
                .refetch_cuts
                .get(&(cluster, tp.clone()))
                .is_some_and(|cuts| {
                    cuts.iter().any(|cut| {
                        poll.fetched_ms <= cut.time_ms
                            && offset >= cut.to
                            && !cut
                                .refetched
                                .iter()
                                .any(|&(first, last)| first <= offset && offset <= last)
                    })
                })
    }

    /// Whether a transactional record `consumer` read in `poll` was cut by STOPPING's truncation
    /// to the last stable offset after a loss of committed data had left its transaction
    /// undecided: a loss at or after the read (a leader epoch starting below the high
    /// watermark, `losses`, or a leader log ending below it, `lost_tails`: only on a topic
    /// that is not durable) kept the record's offset but nothing above it from some offset on,
    /// and then, at or after that loss, STOPPING cut at or below the record's offset. The
    /// COMMIT marker the consumer's READ_COMMITTED read relied on (or the mirror's copy of it)
    /// went with the lost tail, so the rebuilt producer state holds the transaction open from
    /// the record on, the last stable offset stays below it, and STOPPING drops open
    /// transactions by design (KIP-1279: the source's marker will never come). The record is
    /// lost with the tail as any committed record of such a topic may be (generator seeds
    /// 8368442226905498, 2292223553896339: b's only replica of a mirrored partition came back
    /// from a torn power loss just past a committed transaction's first record, and STOPPING
    /// cut to it and wrote `MIRROR_PID_RESET` there). A STOPPING cut with no such loss between
    /// the read and the cut excuses nothing here (`rewritten_by_mirroring` judges it), nor does
    /// a loss at or below the record's offset (the loss excuses judge that), nor a cut before
    /// the loss.
    pub(super) fn stop_cut_after_outcome_lost(&self, consumer: NodeId, poll: &PollRecord) -> bool {
        let key = (consumer.cluster(), poll.topic_partition.clone());
        self.stop_cut_after_loss(&key, poll.offset, poll.fetched_ms)
    }

    /// Whether, at or after `since_ms`, a loss of committed data of `key` (`losses`,
    /// `lost_tails`) kept `offset` but not everything above it, and then, at or after that
    /// loss, STOPPING's cut to the last stable offset came at or below `offset`: the loss
    /// left the transaction at `offset` open, and STOPPING dropped it as such (see
    /// [`Checkers::stop_cut_after_outcome_lost`]).
    pub(super) fn stop_cut_after_loss(
        &self,
        key: &(ClusterIndex, TopicPartition),
        offset: i64,
        since_ms: i64,
    ) -> bool {
        let Some(cuts) = self.mirror_truncations.get(key) else {
            return false;
        };
        cuts.iter().any(|&(cut_ms, to, reason)| {
            reason == TruncationReason::MirrorStopAtLastStableOffset
                && since_ms <= cut_ms
                && to <= offset
                && all_losses(&self.losses, &self.lost_tails, key).any(|(lost_ms, kept)| {
                    since_ms <= lost_ms && lost_ms <= cut_ms && offset < kept
                })
        })
    }

    /// Whether the log of the partition `consumer` read in `poll` may hold another batch at its
    /// offset than the one the consumer read: a mirroring truncation of any reason, or a loss
    /// of committed data (`losses`, `lost_tails`), at or below the offset at or after the read.
    /// Whether that rewrite was legal is the poll checks' question (`inconsistent-offsets`);
    /// what the final log holds there since says nothing of what the consumer received.
    pub(super) fn log_rewritten_since_read(&self, consumer: NodeId, poll: &PollRecord) -> bool {
        let (cluster, tp) = (consumer.cluster(), &poll.topic_partition);
        self.cut_by_mirroring(cluster, tp, poll.offset, poll.fetched_ms, |_| true)
            || self.lost_or_tail_lost_since(cluster, tp, poll.offset, poll.fetched_ms)
    }

    /// Whether the jump of `consumer`'s poll number `index` over `skipped`, a data record of
    /// the final log, is excused: when the consumer read past it, the leader's log held no
    /// record for it there (control batches, such as the `MIRROR_PID_RESET` a failover wrote,
    /// or for READ_COMMITTED aborted data; seen in the step of the read, see `note_poll_gaps`),
    /// and a mirroring truncation at or below `skipped` came after the read, so the record
    /// there now was not in the log the consumer read. A jump over a data record the log held
    /// is never excused, mirrored or not.
    pub(super) fn skip_rewritten_by_mirroring(
        &self,
        (consumer, incarnation, index): (NodeId, u64, usize),
        poll: &PollRecord,
        skipped: i64,
    ) -> bool {
        let tp = &poll.topic_partition;
        let key = (consumer, incarnation, index);
        let cluster = consumer.cluster();
        (self.empty_gaps.contains(&key)
            && (self.cut_by_mirroring(cluster, tp, skipped, poll.fetched_ms, |_| true)
                || self.lost_since(cluster, tp, skipped, poll.fetched_ms)))
            || self.passed_then_cut.contains(&key)
    }

    /// Whether the jump of a READ_COMMITTED consumer's poll (`key`, `poll`) over `skipped`, a
    /// transactional record the final log decides at `decided_at` (`None`: nowhere yet), is
    /// excused because a loss of committed data on a topic that is not durable took the marker
    /// that hid it: when the consumer read past it, the log held nothing there for it (seen in
    /// the step of the read, `note_poll_gaps`: the record's transaction was aborted), and a
    /// loss after the read kept the record but not that marker
    /// ([`Checkers::outcome_lost_since`]), so the broker's rebuilt producer state held the
    /// transaction open from the record on and the producer's next marker, a COMMIT the
    /// coordinator wrote for a later transaction, closed it, as in Kafka (generator seeds
    /// 9400000000000713 and 9400000000000338: a's only replica kept the aborted record at 296
    /// but not its ABORT at 297 in a torn power loss; the coordinator's reloaded PrepareCommit
    /// wrote a COMMIT at 297). A jump over a record its transaction committed when the consumer
    /// read past it is never excused.
    pub(super) fn skip_over_lost_outcome(
        &self,
        key: (NodeId, u64, usize),
        poll: &PollRecord,
        skipped: i64,
        decided_at: Option<i64>,
    ) -> bool {
        let (cluster, tp) = (key.0.cluster(), &poll.topic_partition);
        self.empty_gaps.contains(&key)
            && self.outcome_lost_since(cluster, tp, skipped, decided_at, poll.fetched_ms)
    }

    /// Whether the jump of a READ_COMMITTED consumer's poll (`key`, `poll`) over `skipped`, a
    /// transactional record the final log decides at `decided_at`, is excused because a
    /// failback decided its transaction after the read: when the consumer read past it the
    /// log held nothing there for it (seen in the step of the read, `note_poll_gaps`: the
    /// transaction was aborted), and a mirroring cut that follows the source came after the
    /// read, above the record and at or below the control batch that decides it now
    /// ([`Checkers::outcome_decided_by_failback_source`]). The marker that hid it was the old
    /// primary's own, cut with its unmirrored writes; the one that decides it now is the new
    /// primary's, mirrored back (generated seed 15700000000000057: a's only replica of
    /// payments-1 lost the COMMIT at 64 of the transaction at 62 in a torn power loss, the
    /// coordinator aborted it at 102 and the consumer read 61 then 63; a's failback cut the log
    /// to 64 and mirrored b's copy of the COMMIT back there). A jump over a record its
    /// transaction committed when the consumer read past it is never excused.
    pub(super) fn skip_over_failback_decided_outcome(
        &self,
        key: (NodeId, u64, usize),
        poll: &PollRecord,
        skipped: i64,
        decided_at: Option<i64>,
    ) -> bool {
        let (cluster, tp) = (key.0.cluster(), &poll.topic_partition);
        self.empty_gaps.contains(&key)
            && self.outcome_decided_by_failback_source(
                cluster,
                tp,
                skipped,
                decided_at,
                poll.fetched_ms,
            )
    }

    /// Whether the jump of `consumer`'s `poll` over `skipped`, a data record of the final log,
    /// is excused because the log was rewritten there only after the fetches of both reads
    /// around it were sent: a mirroring truncation or a loss of committed data at or below
    /// `skipped` came after `poll`'s fetch (so after the previous read's too). The two answers
    /// gave the consumer every record the log they were read from held for it between the two
    /// reads, so that log held none at `skipped` (a control batch, or for READ_COMMITTED
    /// aborted data); the record there now came with the rewrite. The step of the reads may
    /// see the rewritten log already, so `note_poll_gaps` cannot tell (generated seed
    /// 15600000000000068: b's consumer read payments-0 and -1 to 58 past the
    /// `MIRROR_PID_RESET` at 59 and then 60; 2 ms later PREPARING cut b's logs to 0 and
    /// mirrored a record to 59). A fetch sent before the rewrite may arrive after it, by the
    /// link's latency: a skip the answer to such a fetch could show is the checker's blind
    /// spot here.
    pub(super) fn skip_before_rewrite(
        &self,
        consumer: NodeId,
        poll: &PollRecord,
        skipped: i64,
    ) -> bool {
        let (cluster, tp) = (consumer.cluster(), &poll.topic_partition);
        self.cut_by_mirroring(cluster, tp, skipped, poll.fetched_ms, |_| true)
            || self.lost_since(cluster, tp, skipped, poll.fetched_ms)
    }

    /// Whether the jump of `consumer`'s `poll` over `skipped`, a data record of the final log
    /// first sent at `sent_ms`, is excused because that record did not exist when the consumer
    /// read past its offset: it was sent after the read's fetch, and a mirroring truncation or
    /// a loss of committed data (see [`Checkers::losses`]) at or below `skipped` came after the
    /// read, so the log the consumer read held something else there (generator seed
    /// 1337263765019505: the read past an aborted transaction came just before the only
    /// replica's power loss, with no leader left in the step to see the log it read). A record
    /// that existed at the read is judged as before.
    pub(super) fn skip_over_later_write(
        &self,
        consumer: NodeId,
        poll: &PollRecord,
        skipped: i64,
        sent_ms: Option<i64>,
    ) -> bool {
        let (cluster, tp) = (consumer.cluster(), &poll.topic_partition);
        sent_ms.is_some_and(|sent_ms| sent_ms > poll.fetched_ms)
            && (self.cut_by_mirroring(cluster, tp, skipped, poll.fetched_ms, |_| true)
                || self.lost_since(cluster, tp, skipped, poll.fetched_ms))
    }
}
