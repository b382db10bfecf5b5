//! MIRRORING: the mirror fetcher (consumer fetches from the source leader, appended as
//! fetched), its cuts (diverging epochs, tail checks, restarts at the source's log start) and
//! EPOCH_FENCING's leader-epoch bumps.

use super::*;
use crate::protocol::{ClusterRequest, ControllerRequest, LeaderEpoch, Offset, ReplicaRequest};

/// What a cut below the source's confirmed end means (see
/// `MirrorManager::source_lost_served_records`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SourceLoss {
    /// Not a loss of served records (or the design does not look): cut as a follower does.
    None,
    /// Followed: the caller cuts, then the partition goes ULE_RECOVERY.
    Followed,
    /// The partition goes FAILED; nothing is cut.
    Failed,
    /// A new leadership's assumed log end is being checked with the source first
    /// (`verify_takeover_loss`); nothing is cut yet.
    Verifying,
    /// The broken switch `mirror-keeps-source-lost-records`: the loss is ignored, nothing is
    /// cut and the partition stays MIRRORING (its next fetch meets the same answer).
    Ignored,
}

/// Where a fetcher's cut on its source's word goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FetcherCut {
    /// The whole log, restarting at offset 0 (the source has no epoch at or below ours).
    Whole,
    /// The log is cut to this offset.
    To(Offset),
}

impl MirrorManager {
    // ----- MIRRORING: the fetcher -----

    pub(super) fn maybe_send_mirror_fetch(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
    ) {
        // Only this task's fetch counts: one a dropped task left in flight is answered to
        // nobody.
        let generation = self.tasks[topic_partition].generation;
        let in_flight = self.requests.values().any(|(what, _, sent_by)| {
            *sent_by == Some(generation)
                && matches!(what, SentRequest::Fetch { partition, .. } if partition == topic_partition)
        });
        if in_flight {
            return;
        }
        let Some(source) = self.task_source(host, now_ms, topic_partition) else {
            return;
        };
        let Some((leader, source_epoch)) = source.metadata.leader(topic_partition) else {
            // Asked for on the next metadata refresh; its answer drives the fetch.
            source.metadata.request_update();
            return;
        };
        self.task_mut(topic_partition).fetch_not_before_ms = None;
        let Some(partition) = host.partitions().get(topic_partition) else {
            return;
        };
        let offset = partition.log.log_end_offset();
        let last_fetched_epoch = partition.log.latest_epoch().unwrap_or(LeaderEpoch(-1));
        let probe = std::mem::take(&mut self.task_mut(topic_partition).probe_log_end);
        let unchecked = !probe
            && self.design.verifies_mirrored_tail()
            && self.tasks[topic_partition].verified_source_epoch != Some(LeaderEpoch(source_epoch));
        let tail_check = if unchecked {
            // A search under way starts where it left off; else at the last batch.
            let from = self.tasks[topic_partition]
                .tail_check_from
                .filter(|from| *from < offset && *from >= partition.log.log_start_offset());
            let first_batch = partition
                .log
                .batches_from(from.unwrap_or(offset - 1))
                .next();
            first_batch.map(|batch| TailCheck {
                base_offset: Offset(batch.base_offset()),
                source_epoch: LeaderEpoch(source_epoch),
            })
        } else {
            None
        };
        if unchecked && tail_check.is_none() {
            // An empty log has no tail another history could have replaced.
            self.task_mut(topic_partition).verified_source_epoch = Some(LeaderEpoch(source_epoch));
        }
        let request = Request::Replica(ReplicaRequest::Fetch {
            replica_id: None,
            replica_epoch: -1,
            isolation: self.design.mirror_fetch_isolation(),
            max_wait_ms: MIRROR_FETCH_MAX_WAIT_MS,
            max_bytes: MIRROR_FETCH_MAX_BYTES,
            partitions: vec![FetchPartition {
                topic_partition: topic_partition.clone(),
                current_leader_epoch: LeaderEpoch(source_epoch),
                fetch_offset: tail_check.map_or(offset, |check| check.base_offset),
                last_fetched_epoch,
                // Fetch v13+: another topic of this name (deleted and created again) is
                // refused by the source rather than appended after this one's records.
                topic_id: self.named_source_topic_id(topic_partition),
            }],
        });
        let what = SentRequest::Fetch {
            partition: topic_partition.clone(),
            offset,
            tail_check,
            probe,
        };
        self.send_mirror_request(host, now_ms, leader, request, what);
    }

    pub(super) fn apply_mirror_fetch(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        (sent_offset, tail_check, probe): (Offset, Option<TailCheck>, bool),
        result: Result<FetchPartitionResponse, ErrorCode>,
    ) {
        self.note_source_answered(now_ms, topic_partition, result.is_ok());
        let fetching = self.tasks.get(topic_partition).is_some_and(|task| {
            task.step == Step::Fetching && task.state == MirrorState::Mirroring
        });
        let Some(partition) = host.lend().partitions.get_mut(topic_partition) else {
            return;
        };
        if !fetching || partition.log.log_end_offset() != sent_offset {
            return; // The fetcher was removed, or the log moved meanwhile.
        }
        let answer = match result {
            Ok(answer) => answer,
            Err(_) => {
                self.mirror_fetch_failed(now_ms, topic_partition);
                return;
            }
        };
        match answer.error {
            ErrorCode::None => {}
            ErrorCode::OffsetOutOfRange
                if tail_check.is_some_and(|check| answer.log_start_offset > check.base_offset)
                    && answer.log_start_offset <= sent_offset =>
            {
                // The source deleted the records the tail check would compare (DeleteRecords):
                // nothing is left there to tell two histories apart; fetch from the log end.
                let task = self.task_mut(topic_partition);
                task.verified_source_epoch = tail_check.map(|check| check.source_epoch);
                return;
            }
            ErrorCode::OffsetOutOfRange if answer.log_start_offset > sent_offset => {
                let removed = partition.log.log_start_offset() < sent_offset;
                let _ = partition
                    .log
                    .truncate_fully_and_start_at(answer.log_start_offset);
                host.lend().push_truncation(
                    topic_partition,
                    sent_offset,
                    TruncationReason::MirrorBelowSourceLogStart,
                );
                self.note_cut_removed(topic_partition, removed);
                return;
            }
            ErrorCode::OffsetOutOfRange
                if crate::mirror::supports_unclean_mirroring(
                    host.image(),
                    &topic_partition.topic,
                ) =>
            {
                // The source's log ends below what it served, and the topic follows such a
                // loss (spec §4.7): cut to the source's high watermark, as Kafka's follower
                // does on the same answer (any diverging history below it is found by the next
                // fetch's epoch check), then ULE_RECOVERY when the cut removed confirmed records.
                let end = answer.high_watermark.min(sent_offset);
                let cut = FetcherCut::To(end);
                self.cut_on_source_word(host, now_ms, topic_partition, sent_offset, cut, None);
                return;
            }
            ErrorCode::OffsetOutOfRange => {
                let reason = format!(
                    "the source's log ends below {sent_offset}, which it served before: an unclean \
                     leader election in the source, and mirror.support.unclean.leader.election is off"
                );
                self.fail_mirror_partition(host, now_ms, topic_partition, reason, true);
                return;
            }
            ErrorCode::TopicAuthorizationFailed => {
                // Retryable, as the prototype fails a partition on any other fetch error: an
                // operator may grant the access, and the retries then find it.
                let reason = self.refused_by_source(host, topic_partition, "Read");
                self.fail_mirror_partition(host, now_ms, topic_partition, reason, false);
                return;
            }
            _ => {
                self.mirror_fetch_failed(now_ms, topic_partition);
                return;
            }
        }
        if let Some(diverging) = answer.diverging_epoch {
            // No epoch at or below ours at the source: nothing here is its history.
            let cut = if diverging.end_offset.is_none() {
                FetcherCut::Whole
            } else {
                FetcherCut::To(follower_truncation_offset(&partition.log, diverging))
            };
            self.cut_on_source_word(host, now_ms, topic_partition, sent_offset, cut, None);
            return;
        }
        if probe {
            // No divergence at the log end: the tail is checked again by the next fetch.
            self.task_mut(topic_partition).fetch_not_before_ms =
                Some(now_ms + MIRROR_RETRY_BACKOFF_MS);
            return;
        }
        let fetched = match tail_check {
            Some(check) => {
                match self.check_tail(
                    host,
                    now_ms,
                    topic_partition,
                    (sent_offset, answer.high_watermark),
                    check,
                    answer.batches,
                ) {
                    Some(above_tail) => above_tail,
                    None => return,
                }
            }
            None => answer.batches,
        };
        // No divergence at the log end, and the tail (if checked) is the source's.
        self.note_source_confirmed(topic_partition, sent_offset);
        if fetched.is_empty() {
            return;
        }
        let leader_epoch = self.tasks[topic_partition].leader_epoch;
        let batches = self.design.store_fetched(leader_epoch, fetched);
        let Some(partition) = host.lend().partitions.get_mut(topic_partition) else {
            return;
        };
        if let Some(target) = follower_truncation_for_batches(&partition.log, &batches) {
            // The source's log never lowers its epochs, so a batch below this log's latest
            // epoch means the tail here is not the source's, though the fetch's divergence
            // check passed: the source re-used the tail's epoch number after a cut of its own
            // (a chain's middle cluster re-mirrored after its PREPARING cut, generator seed
            // 9200000000000091). Cut the tail as a replica does; the next fetch checks the rest.
            let event = BrokerEvent::MirrorEpochBelowLocal {
                topic_partition: topic_partition.clone(),
                offset: sent_offset,
                truncated_to: target,
            };
            let cut = FetcherCut::To(target);
            self.cut_on_source_word(host, now_ms, topic_partition, sent_offset, cut, Some(event));
            return;
        }
        if let Some(batch_epoch) = self.epoch_to_fence(leader_epoch, &batches) {
            self.request_fencing_bump(host, now_ms, topic_partition, batch_epoch);
            return;
        }
        if self.tasks[topic_partition].bump_before_append {
            // Any bump will do: it only has to be an epoch change a mirror of this log sees
            // before it can fetch what comes after the cut.
            host.lend().events.push(BrokerEvent::MirrorCutEpochBump {
                topic_partition: topic_partition.clone(),
                leader_epoch,
            });
            self.request_own_bump(host, now_ms, topic_partition, leader_epoch);
            return;
        }
        let Some(partition) = host.lend().partitions.get_mut(topic_partition) else {
            return;
        };
        match partition.log.append_as_follower(&batches) {
            Ok(info) => {
                self.note_source_confirmed(topic_partition, Offset(info.last_offset.0 + 1));
                host.lend().events.push(BrokerEvent::MirrorAppend {
                    topic_partition: topic_partition.clone(),
                    first_offset: info.first_offset,
                    last_offset: info.last_offset,
                });
                host.maybe_increment_high_watermark(now_ms, topic_partition);
                if self.tasks[topic_partition].retry_attempt != 0 {
                    self.clear_failure_record(host, now_ms, topic_partition);
                }
            }
            Err(error) => {
                let reason = format!("mirrored batches were refused: {error}");
                self.fail_mirror_partition(host, now_ms, topic_partition, reason, false);
            }
        }
    }

    /// A tail check's answer ([`MirrorDesign::verifies_mirrored_tail`]): the fetched batches
    /// above the log end (`sent_offset`) when every local batch from the check's offset to
    /// the log end is the source's batch there in the design's stored form (the seed's: byte
    /// for byte); `None` when there is nothing to append now. The local batches are compared
    /// with the fetched ones in order:
    /// - the first one differs: the search goes further back (twice the distance from the
    ///   log end) and nothing is cut, unless it is this log's first batch;
    /// - a later one differs: the log is cut at it (a mirroring cut, which fences the
    ///   followers and asks for a bump before the next append), and the next fetch checks
    ///   the new tail;
    /// - the answer ends before the log does (its byte limit): the next check goes on from
    ///   the first batch not compared.
    ///
    /// An empty answer proves nothing (a new source leader whose high watermark is catching
    /// up, or a source that ends at the batch's base and will refill it): the check is sent
    /// again after the backoff.
    pub(super) fn check_tail(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        (sent_offset, source_high_watermark): (Offset, Offset),
        check: TailCheck,
        fetched: Vec<RecordBatch>,
    ) -> Option<Vec<RecordBatch>> {
        let design = self.design;
        let partition = host.lend().partitions.get(topic_partition)?;
        if fetched.is_empty() {
            let task = self.task_mut(topic_partition);
            task.fetch_not_before_ms = Some(now_ms + MIRROR_RETRY_BACKOFF_MS);
            if source_high_watermark > check.base_offset {
                // The source holds the tail's offsets but would not serve them: probe its
                // epoch at this log's end instead (see `Task::probe_log_end`).
                task.probe_log_end = true;
                host.lend().events.push(BrokerEvent::MirrorTailProbed {
                    topic_partition: topic_partition.clone(),
                    base_offset: check.base_offset,
                });
            }
            return None;
        }
        let comparison = compare_with_source(&partition.log, check.base_offset, &fetched, design);
        let step = next_tail_step(
            comparison,
            check.base_offset,
            sent_offset,
            partition.log.log_start_offset(),
        );
        let (base_offset, source_epoch) = (check.base_offset, check.source_epoch);
        match step {
            TailStep::SearchBack(next_check) => {
                self.task_mut(topic_partition).tail_check_from = Some(next_check);
                host.lend()
                    .events
                    .push(BrokerEvent::MirrorTailSearchedBack {
                        topic_partition: topic_partition.clone(),
                        base_offset,
                        next_check,
                        source_epoch,
                    });
                None
            }
            TailStep::Cut(first_differing) => {
                self.task_mut(topic_partition).tail_check_from = None;
                let event = BrokerEvent::MirrorTailDiverged {
                    topic_partition: topic_partition.clone(),
                    base_offset: first_differing,
                    source_epoch,
                };
                let cut = FetcherCut::To(first_differing);
                self.cut_on_source_word(
                    host,
                    now_ms,
                    topic_partition,
                    sent_offset,
                    cut,
                    Some(event),
                );
                None
            }
            TailStep::ContinueFrom(next_check) => {
                self.task_mut(topic_partition).tail_check_from = Some(next_check);
                None
            }
            TailStep::Verified => {
                let task = self.task_mut(topic_partition);
                task.verified_source_epoch = Some(source_epoch);
                task.tail_check_from = None;
                host.lend().events.push(BrokerEvent::MirrorTailChecked {
                    topic_partition: topic_partition.clone(),
                    base_offset,
                    source_epoch,
                });
                Some(
                    fetched
                        .into_iter()
                        .filter(|batch| Offset(batch.base_offset()) >= sent_offset)
                        .collect(),
                )
            }
        }
    }

    /// The source answered a fetch at `offset` without a divergence, or this log now ends at
    /// `offset` after a mirrored append: the source holds this log up to there.
    fn note_source_confirmed(&mut self, topic_partition: &TopicPartition, offset: Offset) {
        let task = self.task_mut(topic_partition);
        task.confirmed_by_takeover = false;
        task.source_confirmed_end = Some(
            task.source_confirmed_end
                .map_or(offset, |end| end.max(offset)),
        );
    }

    /// Spec §4.7: a cut to `cut_to` below the end the source had shown it holds means the
    /// source lost records it served (an unclean leader election there; a next hop also sees
    /// it when its source re-aligned a history it had mirrored). With the topic's
    /// `mirror.support.unclean.leader.election=true` the cut is followed
    /// ([`SourceLoss::Followed`]: the caller cuts, then ULE_RECOVERY); otherwise the partition
    /// goes FAILED, non-retryable, keeping what it has ([`SourceLoss::Failed`]): the records
    /// the source lost may exist nowhere else, and only an operator can tell which history to
    /// keep.
    fn source_lost_served_records(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        cut_to: Offset,
    ) -> SourceLoss {
        if !self.design.fails_on_source_loss() {
            return SourceLoss::None;
        }
        let Some(confirmed_end) = self.tasks[topic_partition].source_confirmed_end else {
            return SourceLoss::None;
        };
        if cut_to >= confirmed_end {
            return SourceLoss::None;
        }
        if self.tasks[topic_partition].confirmed_by_takeover {
            self.verify_takeover_loss(host, now_ms, topic_partition, cut_to);
            return SourceLoss::Verifying;
        }
        let followed =
            crate::mirror::supports_unclean_mirroring(host.image(), &topic_partition.topic);
        host.lend()
            .events
            .push(BrokerEvent::MirrorSourceLostRecords {
                topic_partition: topic_partition.clone(),
                cut_to,
                confirmed_end,
                followed,
            });
        if followed {
            self.task_mut(topic_partition).source_confirmed_end = Some(cut_to);
            return SourceLoss::Followed;
        }
        if self
            .broken
            .contains(&BrokenSwitch::MirrorKeepsSourceLostRecords)
        {
            return SourceLoss::Ignored;
        }
        let reason = format!(
            "the source no longer holds offsets {}..{} it served: detected log truncation during \
             mirroring, an unclean leader election in the source, and \
             mirror.support.unclean.leader.election is off",
            cut_to.0, confirmed_end.0
        );
        self.fail_mirror_partition(host, now_ms, topic_partition, reason, true);
        SourceLoss::Failed
    }

    /// A new leadership assumed its log end confirmed (see `MirrorTask::confirmed_by_takeover`)
    /// and the source's answer would cut below it, to `cut_to`. Either the source lost
    /// records it served, or the leadership changed between PREPARING's end and its first
    /// answer and the log still holds this cluster's own history above what the source last
    /// mirrored from here (a failback whose alignment the first fetch finishes). The source
    /// tells which: its last-mirrored-epoch answer for this cluster (spec §4.1) is where its
    /// own copy of this cluster's history ends. The fetcher waits for the answer
    /// ([`Self::apply_takeover_loss_check`]).
    fn verify_takeover_loss(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        cut_to: Offset,
    ) {
        self.send_lookup_to_source(host, now_ms, topic_partition, Some(cut_to));
    }

    /// The source's answer to [`Self::verify_takeover_loss`]: a cut at or above the offset the
    /// source last mirrored from here removes only this cluster's own history, so the log end
    /// was never the source's (`source_confirmed_end` unknown again, as after PREPARING, and
    /// the next answer's cut is followed); any other answer leaves the loss standing (the
    /// next answer's cut is judged by spec §4.7). No answer: asked again at the next cut.
    pub(super) fn apply_takeover_loss_check(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        cut_to: Offset,
        result: Result<(ErrorCode, (LeaderEpoch, Offset)), ErrorCode>,
    ) {
        self.note_source_answered(now_ms, topic_partition, result.is_ok());
        let Some(task) = self.tasks.get_mut(topic_partition) else {
            return;
        };
        if task.step != Step::Waiting || task.state != MirrorState::Mirroring {
            return;
        }
        task.step = Step::Fetching;
        task.fetch_not_before_ms = Some(now_ms);
        let Ok((error, (last_mirrored_epoch, last_mirrored_offset))) = result else {
            task.fetch_not_before_ms = Some(now_ms + MIRROR_RETRY_BACKOFF_MS);
            return;
        };
        let own_history = error == ErrorCode::None
            && !last_mirrored_epoch.is_none()
            && cut_to >= last_mirrored_offset;
        task.confirmed_by_takeover = false;
        if own_history {
            task.source_confirmed_end = None;
        }
        host.lend()
            .events
            .push(BrokerEvent::MirrorTakeoverCutChecked {
                topic_partition: topic_partition.clone(),
                cut_to,
                last_mirrored_offset,
                own_history,
            });
    }

    /// Every cut the fetcher makes on its source's word (a diverging epoch, a tail that
    /// differs, a batch below the local epoch): unless spec §4.7 fails the partition instead
    /// (see [`Self::source_lost_served_records`]), the log is cut (a mirroring cut, see
    /// [`Self::mirror_cut`]), `event` says why, and a followed source loss goes ULE_RECOVERY
    /// (the fetcher stops; the partition mirrors again once every replica has truncated
    /// too, see `act`).
    fn cut_on_source_word(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        sent_offset: Offset,
        cut: FetcherCut,
        event: Option<BrokerEvent>,
    ) {
        let cut_to = match cut {
            FetcherCut::Whole => Offset(0),
            FetcherCut::To(offset) => offset,
        };
        let loss = self.source_lost_served_records(host, now_ms, topic_partition, cut_to);
        if matches!(
            loss,
            SourceLoss::Failed | SourceLoss::Verifying | SourceLoss::Ignored
        ) {
            return;
        }
        let Some(partition) = host.lend().partitions.get_mut(topic_partition) else {
            return;
        };
        match cut {
            FetcherCut::Whole => drop(partition.log.truncate_fully_and_start_at(Offset(0))),
            FetcherCut::To(offset) => drop(partition.log.truncate_to(offset)),
        }
        self.mirror_cut(host, topic_partition, sent_offset);
        host.lend().events.extend(event);
        if loss == SourceLoss::Followed {
            self.write_transition(host, now_ms, topic_partition, MirrorState::UleRecovery);
        }
    }

    /// EPOCH_FENCING's trigger: the highest epoch among fetched `batches` when it is above the
    /// leader epoch this broker leads the partition in (and the design keeps DLE ≥ SLE).
    pub(super) fn epoch_to_fence(
        &self,
        leader_epoch: LeaderEpoch,
        batches: &[RecordBatch],
    ) -> Option<LeaderEpoch> {
        if !self.design.fences_mirrored_epochs() {
            return None;
        }
        batches
            .iter()
            .map(|batch| LeaderEpoch(batch.partition_leader_epoch()))
            .max()
            .filter(|highest| *highest > leader_epoch)
    }

    /// EPOCH_FENCING (reactive, spec §4.4): asks the controller to raise this partition's
    /// leader epoch above the source's epoch plus [`LEADER_EPOCH_BUMP_INCREMENT`], with the
    /// same leader; the fetcher waits until metadata shows it (`Step::AwaitEpochBump`), and
    /// the fetch is sent again. The state stays MIRRORING; `epoch-fencing-state` persists
    /// EPOCH_FENCING first, as the late revision does, and bumps from its action.
    pub(super) fn request_fencing_bump(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        batch_epoch: LeaderEpoch,
    ) {
        let task = &self.tasks[topic_partition];
        let source_epoch = self
            .sources
            .get(&task.mirror)
            .map_or(LeaderEpoch::NONE, |source| {
                LeaderEpoch(source.metadata.leader_epoch(topic_partition))
            });
        let minimum = LeaderEpoch(batch_epoch.max(source_epoch).0 + LEADER_EPOCH_BUMP_INCREMENT);
        let leader_epoch = task.leader_epoch;
        host.lend().events.push(BrokerEvent::MirrorEpochFenced {
            topic_partition: topic_partition.clone(),
            batch_epoch,
            leader_epoch,
            minimum,
        });
        if self.design.persists_epoch_fencing() {
            // The late revision: EPOCH_FENCING is persisted first; its action bumps.
            self.task_mut(topic_partition).fence_minimum = Some(minimum);
            self.write_transition(host, now_ms, topic_partition, MirrorState::EpochFencing);
            return;
        }
        self.request_own_bump(host, now_ms, topic_partition, minimum);
    }

    /// EPOCH_FENCING's action (`epoch-fencing-state`): the bump above the fetched batch's epoch
    /// plus the increment, or, in a new leadership that found the state stored, above the
    /// source's epoch and this one's.
    pub(super) fn epoch_fencing_bump(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
    ) {
        let task = &self.tasks[topic_partition];
        let minimum = task.fence_minimum.unwrap_or_else(|| {
            let source_epoch = self
                .sources
                .get(&task.mirror)
                .map_or(LeaderEpoch::NONE, |source| {
                    LeaderEpoch(source.metadata.leader_epoch(topic_partition))
                });
            LeaderEpoch(source_epoch.max(task.leader_epoch).0 + LEADER_EPOCH_BUMP_INCREMENT)
        });
        self.request_own_bump(host, now_ms, topic_partition, minimum);
    }

    /// MIRRORING: asks the controller for BumpLeaderEpochs above `minimum` with the same
    /// leader; the fetcher waits for metadata to show it (`Step::AwaitEpochBump`, after
    /// [`Self::apply_bump`]) and then fetches again.
    pub(super) fn request_own_bump(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        minimum: LeaderEpoch,
    ) {
        let (broker_id, broker_epoch) = (host.broker_id(), host.broker_epoch().unwrap_or(-1));
        let task = self.task_mut(topic_partition);
        task.fencing_bump = true;
        task.step = Step::Waiting;
        let request = Request::Controller(ControllerRequest::BumpLeaderEpochs {
            broker_id,
            broker_epoch,
            partitions: vec![(task.id.topic_id, task.id.partition, minimum)],
        });
        let controller = host.controller();
        self.send_mirror_request(
            host,
            now_ms,
            controller,
            request,
            SentRequest::Bump(topic_partition.clone()),
        );
    }

    /// The mirror fetcher cut this leader's log back from `sent_offset` (its log end when the
    /// fetch went out): reported as a truncation, and, when the cut removed records, every
    /// follower is fenced until it truncates to the cut (`Partition::fence_after_mirror_cut`).
    pub(super) fn mirror_cut(
        &mut self,
        host: &mut impl MirrorHost,
        topic_partition: &TopicPartition,
        sent_offset: Offset,
    ) {
        let removed = host
            .partitions()
            .get(topic_partition)
            .is_some_and(|partition| partition.log.log_end_offset() < sent_offset);
        self.note_cut_removed(topic_partition, removed);
        if self.design.fences_followers_after_mirror_cut() {
            if let Some(partition) = host.lend().partitions.get_mut(topic_partition) {
                if partition.log.log_end_offset() < sent_offset {
                    partition.fence_after_mirror_cut();
                }
            }
        }
        host.lend().push_truncation(
            topic_partition,
            sent_offset,
            TruncationReason::MirrorDivergingEpoch,
        );
    }

    /// A mirroring cut that `removed` records asks for a leader-epoch bump before the next
    /// mirrored append ([`MirrorDesign::verifies_mirrored_tail`]).
    pub(super) fn note_cut_removed(&mut self, topic_partition: &TopicPartition, removed: bool) {
        if removed && self.design.verifies_mirrored_tail() {
            if let Some(task) = self.tasks.get_mut(topic_partition) {
                task.bump_before_append = true;
            }
        }
    }

    /// The source leader may have moved: refresh the source metadata and fetch again after
    /// the backoff.
    /// A source request of a task was answered (`answered`) or timed out: an answer, whatever
    /// its error, shows the source alive for this partition.
    pub(super) fn note_source_answered(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        answered: bool,
    ) {
        if let Some(task) = self.tasks.get_mut(topic_partition) {
            if answered && task.source_waited_since_ms.is_some() {
                task.source_waited_since_ms = Some(now_ms);
            }
        }
    }

    /// Fails a PREPARING or MIRRORING partition whose source has answered nothing for it for
    /// `mirror.socket.timeout.ms` (retryable: the source may come back); whether it did.
    pub(super) fn fail_if_source_silent(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
    ) -> bool {
        let Some(since_ms) = self.tasks[topic_partition].source_waited_since_ms else {
            return false;
        };
        let timeout_ms = self.failure_settings(topic_partition).socket_timeout_ms;
        if now_ms - since_ms < timeout_ms {
            return false;
        }
        host.lend().events.push(BrokerEvent::MirrorSourceSilent {
            topic_partition: topic_partition.clone(),
            since_ms,
            silent_for_ms: now_ms - since_ms,
        });
        let reason = format!(
            "the source cluster answered nothing for this partition for {} ms \
             (mirror.socket.timeout.ms {timeout_ms})",
            now_ms - since_ms
        );
        self.fail_mirror_partition(host, now_ms, topic_partition, reason, false);
        true
    }

    pub(super) fn mirror_fetch_failed(&mut self, now_ms: i64, topic_partition: &TopicPartition) {
        let Some(task) = self.tasks.get_mut(topic_partition) else {
            return;
        };
        task.fetch_not_before_ms = Some(now_ms + MIRROR_RETRY_BACKOFF_MS);
        if let Some(source) = self.sources.get_mut(&task.mirror) {
            source.metadata.request_update();
        }
    }

    pub(super) fn refresh_source_metadata(&mut self, host: &mut impl MirrorHost, now_ms: i64) {
        let mirrors: Vec<String> = self.sources.keys().cloned().collect();
        for mirror in mirrors {
            let source = self.sources.get_mut(&mirror).expect("listed");
            if !source.metadata.should_send(now_ms) {
                continue;
            }
            let (to, connection) = (source.metadata.target(), source.connection);
            let request = Request::Cluster(ClusterRequest::Metadata {
                topics: Some(source.metadata.requested_topics()),
            });
            source.metadata.on_sent();
            self.send_mirror_request(
                host,
                now_ms,
                to,
                request,
                SentRequest::SourceMetadata {
                    mirror,
                    to,
                    connection,
                },
            );
        }
    }

    pub(super) fn apply_source_metadata(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        (mirror, connection): (&str, u64),
        to: NodeId,
        result: Result<(Vec<crate::protocol::BrokerId>, Vec<TopicMetadata>), ErrorCode>,
    ) {
        let Some(source) = self.sources.get_mut(mirror) else {
            return;
        };
        if source.connection != connection {
            return; // Asked over a connection dropped since (bootstrap.servers changed).
        }
        match result {
            Ok((brokers, topics)) => {
                source.metadata.apply(now_ms, &brokers, &topics);
                self.watch_source_topics(host, now_ms, mirror, &topics);
            }
            Err(_) => source.metadata.on_failed(now_ms, to),
        }
    }

    /// The error message of a partition the source's authorizer refused `operation` on the
    /// topic, naming the principal the mirror's connections authenticate as.
    pub(super) fn refused_by_source(
        &self,
        host: &impl MirrorHost,
        topic_partition: &TopicPartition,
        operation: &str,
    ) -> String {
        let mirror = &self.tasks[topic_partition].mirror;
        let principal = crate::mirror::properties::mirror_principal(host.image(), mirror);
        format!(
            "the source cluster refuses {principal} {operation} on topic {} \
             (TopicAuthorizationFailed)",
            topic_partition.topic
        )
    }

    /// Whether the broken switch `mirror-ignores-source-topic-id` is on.
    pub(super) fn ignores_source_topic_id(&self) -> bool {
        self.broken
            .contains(&BrokenSwitch::MirrorIgnoresSourceTopicId)
    }

    /// The source topic id a fetch or lookup for `topic_partition` names: the one its
    /// partition mirrors, once known (none under `mirror-ignores-source-topic-id`).
    pub(super) fn named_source_topic_id(
        &self,
        topic_partition: &TopicPartition,
    ) -> Option<TopicId> {
        if self.ignores_source_topic_id() {
            return None;
        }
        self.tasks[topic_partition].source_topic.topic_id
    }

    /// A source answer naming the topic's id (a LastMirroredEpochLookup's, `answered`): the
    /// first id a task learns is the source topic its partition mirrors (stored with its next
    /// state write, so the next leader knows it too); another one means the source topic was
    /// deleted and created again, which fails the partition non-retryably, as
    /// [`Self::watch_source_topics`] does on a metadata answer. Returns whether it failed.
    pub(super) fn source_topic_replaced(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        answered: Option<TopicId>,
    ) -> bool {
        if self.ignores_source_topic_id() {
            return false;
        }
        let (Some(id), Some(task)) = (answered, self.tasks.get_mut(topic_partition)) else {
            return false;
        };
        let seen = match task.source_topic.topic_id {
            None => {
                task.source_topic.topic_id = Some(id);
                return false;
            }
            Some(seen) if seen == id => return false,
            Some(seen) => seen,
        };
        host.lend().events.push(BrokerEvent::MirrorSourceTopicGone {
            topic_partition: topic_partition.clone(),
            recreated: true,
        });
        let reason =
            format!("the source topic was deleted and created again (topic id {id}, was {seen})");
        self.fail_mirror_partition(host, now_ms, topic_partition, reason, true);
        true
    }

    /// Follows each PREPARING or MIRRORING task's source topic through a source metadata
    /// answer (the prototype's deleted-topic detection, spec §7 item 4): a topic id other
    /// than the one first seen means the source topic was deleted and created again, and
    /// answers that the topic does not exist, in a row for at least
    /// [`SOURCE_TOPIC_MISSING_MS`] (more than one metadata refresh: a broker whose image lags
    /// is not taken at its word), mean it was deleted (or, never seen, that the source has no
    /// such topic: a destination topic added to a mirror whose source lacks it, which the
    /// prototype's sync fails the same way); either fails the partition non-retryably (the
    /// records it still had to mirror are gone, and a re-created topic is another history).
    fn watch_source_topics(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        mirror: &str,
        topics: &[TopicMetadata],
    ) {
        let watched: Vec<TopicPartition> = self
            .tasks
            .iter()
            .filter(|(_, task)| {
                task.mirror == mirror
                    && matches!(task.state, MirrorState::Preparing | MirrorState::Mirroring)
            })
            .map(|(topic_partition, _)| topic_partition.clone())
            .collect();
        for topic_partition in watched {
            let Some(answer) = topics
                .iter()
                .find(|topic| topic.name == topic_partition.topic.as_str())
            else {
                continue;
            };
            if answer.error == ErrorCode::TopicAuthorizationFailed {
                // Not a deletion: the source hides the topic from this mirror's principal.
                // Retryable, as a refused fetch is.
                let reason = self.refused_by_source(host, &topic_partition, "Describe");
                self.fail_mirror_partition(host, now_ms, &topic_partition, reason, false);
                continue;
            }
            let watch = &mut self.task_mut(&topic_partition).source_topic;
            let reason = match (answer.error, answer.topic_id, watch.topic_id) {
                (ErrorCode::None, Some(id), Some(seen)) if id != seen => Some(format!(
                    "the source topic was deleted and created again (topic id {id}, was {seen})"
                )),
                (ErrorCode::None, Some(id), _) => {
                    watch.topic_id = Some(id);
                    watch.missing_since_ms = None;
                    None
                }
                (ErrorCode::UnknownTopicOrPartition, _, seen) => {
                    let since = *watch.missing_since_ms.get_or_insert(now_ms);
                    let missing_ms = now_ms - since;
                    (missing_ms >= SOURCE_TOPIC_MISSING_MS).then(|| match seen {
                        Some(_) => {
                            format!("the source topic is deleted (missing for {missing_ms} ms)")
                        }
                        None => format!(
                            "the source cluster has no such topic (missing for {missing_ms} ms)"
                        ),
                    })
                }
                _ => None,
            };
            if let Some(reason) = reason {
                host.lend().events.push(BrokerEvent::MirrorSourceTopicGone {
                    topic_partition: topic_partition.clone(),
                    recreated: answer.error.is_none(),
                });
                self.fail_mirror_partition(host, now_ms, &topic_partition, reason, true);
            }
        }
    }
}

/// What a tail check's answer shows of the local log from its check offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TailComparison {
    /// Every local batch compared is the source's; the comparison ended at this offset (the
    /// log end, or where the answer's batches ran out).
    EqualUpTo(Offset),
    /// The local batch at this base offset is not the source's batch there (or the source
    /// has none that starts there).
    Differs(Offset),
}

/// Compares the local batches from `from` with the `fetched` ones, pairwise in order: the
/// same base offset and the same batch in the design's stored form.
fn compare_with_source<D: crate::log::LogDisk>(
    log: &crate::log::PartitionLog<D>,
    from: Offset,
    fetched: &[RecordBatch],
    design: MirrorDesign,
) -> TailComparison {
    let mut local = log.batches_from(from).peekable();
    if local
        .peek()
        .is_none_or(|first| Offset(first.base_offset()) != from)
    {
        // The batch the check was sent for is gone (the log start moved past it).
        return TailComparison::Differs(from);
    }
    let mut compared_end = from;
    for (local, source) in local.zip(fetched) {
        if local.base_offset() != source.base_offset() || !design.is_stored_form_of(source, local) {
            return TailComparison::Differs(Offset(local.base_offset()));
        }
        compared_end = Offset(local.last_offset() + 1);
    }
    TailComparison::EqualUpTo(compared_end)
}

/// What a tail check does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TailStep {
    /// The first batch compared differs and the log holds batches below it: check again
    /// from this offset, nothing cut.
    SearchBack(Offset),
    /// Cut the log at this offset, the base of the first batch that differs (every batch
    /// compared below it is the source's, or there is none below it).
    Cut(Offset),
    /// Every batch compared is the source's but the answer ended before the log does: check
    /// again from this offset.
    ContinueFrom(Offset),
    /// Every batch from the check's offset to the log end is the source's.
    Verified,
}

/// The tail check's decision for a `comparison` of the local log from `checked_from` (the
/// log ends at `log_end`, starts at `log_start`). Going back doubles the distance from the
/// log end each time, so a tail of n diverged batches costs about log2(n) checks.
fn next_tail_step(
    comparison: TailComparison,
    checked_from: Offset,
    log_end: Offset,
    log_start: Offset,
) -> TailStep {
    match comparison {
        TailComparison::Differs(first) if first == checked_from && checked_from > log_start => {
            let distance = (log_end.0 - checked_from.0).max(1);
            TailStep::SearchBack(Offset((checked_from.0 - distance).max(log_start.0)))
        }
        TailComparison::Differs(first) => TailStep::Cut(first),
        TailComparison::EqualUpTo(end) if end < log_end => TailStep::ContinueFrom(end),
        TailComparison::EqualUpTo(_) => TailStep::Verified,
    }
}

#[cfg(test)]
mod tail_search_tests {
    use super::*;
    use crate::log::{AppendOrigin, LogConfig, MemoryDisk, PartitionLog};
    use crate::record::BatchBuilder;
    use bytes::Bytes;

    fn log_of(values: &[String]) -> PartitionLog<MemoryDisk> {
        let mut log = PartitionLog::open(MemoryDisk::new(), LogConfig::default())
            .expect("an empty disk opens")
            .0;
        for value in values {
            let mut builder = BatchBuilder::default();
            builder.append(0, None, Some(Bytes::from(value.clone())), vec![]);
            log.append_as_leader(&builder.build(), LeaderEpoch(0), AppendOrigin::Client, 0)
                .expect("a plain batch appends");
        }
        log
    }

    /// `length` one-record batches, the same in both logs below `diverged_from`.
    fn source_and_local(length: usize, diverged_from: usize) -> [PartitionLog<MemoryDisk>; 2] {
        let source: Vec<String> = (0..length).map(|index| format!("r{index}")).collect();
        let mut local = source.clone();
        for value in &mut local[diverged_from..] {
            value.push_str("-other-history");
        }
        [log_of(&source), log_of(&local)]
    }

    /// Runs the search as the fetcher does, each answer holding at most `per_answer` batches
    /// from the check's offset: the cut it ends with, and the number of checks.
    fn search(
        source: &PartitionLog<MemoryDisk>,
        local: &PartitionLog<MemoryDisk>,
        per_answer: usize,
    ) -> (Option<Offset>, usize) {
        let log_end = local.log_end_offset();
        let mut from = Offset(log_end.0 - 1);
        for checks in 1..=64 {
            let fetched: Vec<RecordBatch> = source
                .batches_from(from)
                .take(per_answer)
                .cloned()
                .collect();
            let comparison = compare_with_source(local, from, &fetched, MirrorDesign::Seed);
            match next_tail_step(comparison, from, log_end, local.log_start_offset()) {
                TailStep::SearchBack(next) | TailStep::ContinueFrom(next) => from = next,
                TailStep::Cut(at) => return (Some(at), checks),
                TailStep::Verified => return (None, checks),
            }
        }
        panic!("the search did not end in 64 checks");
    }

    #[test]
    fn a_diverged_tail_is_found_in_logarithmically_many_checks_and_cut_once() {
        // Generated seed 4704630039932608: 165 diverged batches, one cut (and one
        // ULE_RECOVERY) per batch, never finished. Now: back 1, 2, 4, ... then forward.
        for (length, diverged_from) in [(165, 0), (200, 37), (200, 198), (8, 7), (1, 0)] {
            let [source, local] = source_and_local(length, diverged_from);
            let (cut, checks) = search(&source, &local, 1_000);
            assert_eq!(
                cut,
                Some(Offset(diverged_from as i64)),
                "{length} from {diverged_from}"
            );
            let bound = 2 + (length as f64).log2().ceil() as usize;
            assert!(
                checks <= bound,
                "{checks} checks for {length} batches (bound {bound})"
            );
        }
    }

    #[test]
    fn answers_shorter_than_the_tail_read_on_from_where_they_ended() {
        let [source, local] = source_and_local(100, 90);
        let (cut, checks) = search(&source, &local, 7);
        assert_eq!(cut, Some(Offset(90)));
        assert!(
            checks > 2,
            "the forward read took several answers: {checks}"
        );
    }

    #[test]
    fn the_same_tail_is_verified_by_one_check() {
        let [source, local] = source_and_local(50, 50);
        assert_eq!(search(&source, &local, 1_000), (None, 1));
    }

    #[test]
    fn a_batch_the_source_starts_elsewhere_differs() {
        let [source, local] = source_and_local(10, 10);
        // The source's answer from 5 starts at 6: its batch at 5 is not this log's.
        let fetched: Vec<RecordBatch> = source.batches_from(Offset(6)).cloned().collect();
        assert_eq!(
            compare_with_source(&local, Offset(5), &fetched, MirrorDesign::Seed),
            TailComparison::Differs(Offset(5))
        );
        assert_eq!(
            compare_with_source(&local, Offset(5), &fetched[..0], MirrorDesign::Seed),
            TailComparison::EqualUpTo(Offset(5)),
            "an empty answer compares nothing (the fetcher retries it)"
        );
    }
}
