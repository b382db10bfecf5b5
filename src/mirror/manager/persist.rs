//! The manager's reads and writes of the stored mirror partition state at the mirror
//! coordinator (ReadMirrorStates, WriteMirrorStates): every transition is persisted before
//! its action runs, and a refused write sends the task back to read the state again.

use super::*;
use crate::protocol::{CoordinatorRequest, LeaderEpoch, Offset};

impl MirrorManager {
    // ----- coordinator reads and writes -----

    pub(super) fn send_mirror_request(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        to: NodeId,
        request: Request,
        what: SentRequest,
    ) {
        let generation = what
            .task_partition()
            .and_then(|tp| self.tasks.get(tp))
            .map(|task| task.generation);
        let mirror = match &what {
            SentRequest::SourceMetadata { mirror, .. } => Some(mirror.as_str()),
            other => other
                .task_partition()
                .and_then(|tp| self.tasks.get(tp))
                .map(|task| task.mirror.as_str()),
        };
        let own = host.node_id().cluster();
        let principal =
            crate::mirror::properties::request_principal(host.image(), (own, mirror), to);
        let correlation_id = host.lend().outbox.request_as(to, request, principal);
        self.requests
            .insert(correlation_id, (what, now_ms, generation));
    }

    pub(super) fn send_read(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
    ) {
        let task = &self.tasks[topic_partition];
        let Some((coordinator, coordinator_partition)) =
            MirrorDirectory::new(host.image(), host.node_id().cluster())
                .coordinator_of(&task.mirror, &task.id)
        else {
            self.retry_step_later(now_ms, topic_partition, Step::Read);
            return;
        };
        let request = Request::Coordinator(CoordinatorRequest::ReadMirrorStates {
            coordinator_partition,
            mirror: task.mirror.clone(),
            partitions: vec![task.id],
        });
        self.task_mut(topic_partition).step = Step::Waiting;
        let what = SentRequest::Read(topic_partition.clone());
        self.send_mirror_request(host, now_ms, coordinator, request, what);
    }

    pub(super) fn apply_read(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        status: MirrorPartitionStatus,
    ) {
        let ignores_id = self.ignores_source_topic_id();
        let task = self.task_mut(topic_partition);
        if status.state == MirrorState::Preparing && task.state == MirrorState::Failed {
            // A recovery (RecoverMirrorTopics) moved the partition on while this leadership
            // had it FAILED: an earlier PREPARING may have cut the log already.
            task.preparing_resumed = true;
        }
        if status.state != MirrorState::Unknown {
            // Some write landed (this leadership's or a later one's): what it stored decides.
            task.transition_in_doubt = false;
        }
        if status.state != task.state || task.source_waited_since_ms.is_none() {
            // A state learned by reading is entered as one this leadership wrote: the wait for
            // the source starts now, or ends (generated seed 13600000000000283: a FAILED whose
            // write timed out, learned by the re-read, kept the silence clock of the MIRRORING
            // before it, and the PREPARING a recovery wrote failed as silent at once).
            task.source_waited_since_ms = matches!(
                status.state,
                MirrorState::Preparing | MirrorState::Mirroring
            )
            .then_some(now_ms);
        }
        task.state = status.state;
        task.state_epoch = status.state_epoch;
        task.previous_state = status.previous_state;
        task.retry_attempt = status.retry_attempt;
        task.last_mirrored = status.last_mirrored;
        if let Some(id) = status.source_topic_id.filter(|_| !ignores_id) {
            // The source topic an earlier leadership mirrored: a source answer naming another
            // id for it is another topic (`watch_source_topics`), and fetches and lookups
            // name this one (the source refuses them once the topic is replaced).
            task.source_topic.topic_id = Some(id);
        } else if status.state == MirrorState::Stopped {
            forget_source_topic(task);
        }
        // A re-read by this leadership (after a fenced or refused write) of the PREPARING or
        // FAILED it wrote itself keeps what it knows: only this leadership cuts or mirrors
        // here, and it clears the flag when it does (generator seed 9960000000000208: a
        // refused loop's state write was fenced, the re-read forgot the log held only local
        // writes, and the stop recorded its own epoch as the last mirrored one).
        // The same for a STOPPING this leadership wrote (its answer lost, the retry fenced):
        // the stop mirrored nothing, so it records no last mirrored epoch of its own.
        // A new leadership learns the same from the stored state: the leader that wrote it
        // had neither removed records by a cut nor mirrored since the partition left UNKNOWN
        // or STOPPED.
        let never_mirrored = (task.wrote && task.own_writes_only) || status.own_writes_only;
        let in_stop = status.state == MirrorState::Stopping
            || (status.state == MirrorState::Failed
                && status.previous_state == Some(MirrorState::Stopping));
        let own_stop = in_stop && ((task.wrote && task.stop_own_writes_only) || never_mirrored);
        if own_stop {
            task.last_mirrored = task
                .last_mirrored
                .or(Some((LeaderEpoch::NONE, Offset::NONE)));
        }
        task.stop_own_writes_only = own_stop;
        task.own_writes_only = (never_mirrored
            && matches!(status.state, MirrorState::Preparing | MirrorState::Failed)
            && !in_stop)
            || matches!(status.state, MirrorState::Unknown | MirrorState::Stopped);
        if !task.wrote
            && task.source_confirmed_end.is_none()
            && matches!(
                status.state,
                MirrorState::Mirroring
                    | MirrorState::Pausing
                    | MirrorState::Paused
                    | MirrorState::UleRecovery
                    | MirrorState::EpochFencing
            )
        {
            // A new leadership of a partition that mirrors: its log is the earlier leaders'
            // (a clean election), whose records above the last PREPARING cut came from the
            // source's answers, unless the leadership changed between PREPARING's end and its
            // first answer: then the log may still hold this cluster's own history above the
            // last mirrored offset, which a failback's first fetch cuts. So the assumption is
            // checked when an answer contradicts it (`verify_takeover_loss`).
            let log_end = host
                .partitions()
                .get(topic_partition)
                .map(|partition| partition.log.log_end_offset());
            let task = self.task_mut(topic_partition);
            task.source_confirmed_end = log_end;
            task.confirmed_by_takeover = log_end.is_some();
        }
        let task = self.task_mut(topic_partition);
        task.step = Step::Decide;
        task.not_before_ms = now_ms;
        let state = task.state;
        self.set_partition_mirror_state(host, topic_partition, state);
    }

    /// Whether this broker leads `topic_partition` as a mirror partition whose log holds only
    /// this cluster's own writes (see `MirrorTask::own_writes_only`).
    pub fn mirror_log_holds_own_writes_only(&self, topic_partition: &TopicPartition) -> bool {
        self.tasks.get(topic_partition).is_some_and(|task| {
            (task.own_writes_only && !task.cut_decided)
                || (task.state == MirrorState::Stopping && task.stop_own_writes_only)
        })
    }

    pub(super) fn set_partition_mirror_state(
        &mut self,
        host: &mut impl MirrorHost,
        topic_partition: &TopicPartition,
        state: MirrorState,
    ) {
        if let Some(partition) = host.lend().partitions.get_mut(topic_partition) {
            partition.mirror_state = state;
        }
    }

    pub(super) fn write_transition(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        target: MirrorState,
    ) {
        self.write_failed_or_transition(host, now_ms, topic_partition, target, None, false);
    }

    /// Fails the partition (retryable unless said otherwise).
    pub(super) fn fail_mirror_partition(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        reason: String,
        non_retryable: bool,
    ) {
        self.write_failed_or_transition(
            host,
            now_ms,
            topic_partition,
            MirrorState::Failed,
            Some(reason),
            non_retryable,
        );
    }

    pub(super) fn write_failed_or_transition(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        target: MirrorState,
        error_message: Option<String>,
        non_retryable: bool,
    ) {
        let write = MirrorStateWrite {
            error_message,
            non_retryable,
            ..self.state_write(topic_partition, target)
        };
        self.send_write(
            host,
            now_ms,
            topic_partition,
            write,
            WritePurpose::Transition(target, non_retryable),
        );
    }

    /// A retried partition's first mirrored append: MIRRORING persisted again with the failure
    /// record cleared (the prototype's `clearFailedStateAndPersist`). Until then the retry
    /// count stands, so a cause that lets the retry reach MIRRORING but not mirror (the source
    /// answers the lookup and refuses every fetch) runs out of attempts as it should.
    pub(super) fn clear_failure_record(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
    ) {
        let write = MirrorStateWrite {
            recover: true,
            ..self.state_write(topic_partition, MirrorState::Mirroring)
        };
        let purpose = WritePurpose::ClearFailure;
        self.send_write(host, now_ms, topic_partition, write, purpose);
    }

    /// This leadership's write of `target` for the partition: fenced by its leader and state
    /// epochs, with no failure, last mirrored epoch or recovery.
    fn state_write(
        &self,
        topic_partition: &TopicPartition,
        target: MirrorState,
    ) -> MirrorStateWrite {
        let task = &self.tasks[topic_partition];
        MirrorStateWrite {
            source_topic_id: task.source_topic.topic_id,
            id: task.id,
            state: Some(target),
            leader_epoch: task.leader_epoch,
            state_epoch: task.state_epoch,
            error_message: None,
            non_retryable: false,
            last_mirrored: None,
            // A state that mirrors holds the source's records from its first fetch on.
            own_writes_only: (task.own_writes_only
                && matches!(
                    target,
                    MirrorState::Preparing
                        | MirrorState::Failed
                        | MirrorState::Stopping
                        | MirrorState::Stopped
                ))
                || task.stop_own_writes_only,
            recover: false,
        }
    }

    pub(super) fn send_write(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        write: MirrorStateWrite,
        purpose: WritePurpose,
    ) {
        let task = &self.tasks[topic_partition];
        let retry_step = match purpose {
            WritePurpose::Transition(..) => Step::Decide,
            WritePurpose::LastMirrored | WritePurpose::ClearFailure => Step::Act,
        };
        let Some((coordinator, coordinator_partition)) =
            MirrorDirectory::new(host.image(), host.node_id().cluster())
                .coordinator_of(&task.mirror, &task.id)
        else {
            self.retry_step_later(now_ms, topic_partition, retry_step);
            return;
        };
        let request = Request::Coordinator(CoordinatorRequest::WriteMirrorStates {
            coordinator_partition,
            mirror: task.mirror.clone(),
            writes: vec![write],
        });
        self.task_mut(topic_partition).step = Step::Waiting;
        let what = SentRequest::Write(topic_partition.clone(), purpose);
        self.send_mirror_request(host, now_ms, coordinator, request, what);
    }

    pub(super) fn apply_write(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        purpose: WritePurpose,
        result: Result<(ErrorCode, i32), ErrorCode>,
    ) {
        let error = match result {
            Ok((error, _)) => error,
            Err(error) => error,
        };
        match (purpose, error) {
            (WritePurpose::Transition(target, non_retryable), ErrorCode::None) => {
                let state_epoch = result.map_or(-1, |(_, epoch)| epoch);
                let task = self.task_mut(topic_partition);
                if target == MirrorState::Failed && task.state != MirrorState::Failed {
                    task.previous_state = Some(task.state);
                }
                // The coordinator's bookkeeping of the failure record, as it applied the write.
                if target == MirrorState::Failed {
                    task.retry_attempt = if non_retryable || task.retry_attempt < 0 {
                        -1
                    } else {
                        task.retry_attempt.saturating_add(1).max(1)
                    };
                } else if !keeps_failure_record(task.state, target) {
                    task.retry_attempt = 0;
                    task.previous_state = None;
                }
                task.waits_for_operator = false;
                task.source_waited_since_ms =
                    matches!(target, MirrorState::Preparing | MirrorState::Mirroring)
                        .then_some(now_ms);
                let from = task.state;
                let resumed_stop = from == MirrorState::Stopping
                    || (from == MirrorState::Failed
                        && task.previous_state == Some(MirrorState::Stopping));
                if target == MirrorState::Stopping && !resumed_stop {
                    // A new stop: what a stop of an earlier mirroring session persisted (read
                    // back from the coordinator) is not what this one mirrored. A session that
                    // neither cut nor mirrored (PREPARING and FAILED only, e.g. a loop refused
                    // by both sides) added nothing of the source's lineage: the earlier stop's
                    // value stands, else none (−1), never this cluster's own latest epoch, which
                    // a cluster mirroring from here would take for the source's and keep its
                    // own records below (generator seed 201).
                    task.last_mirrored = if task.own_writes_only {
                        Some(
                            task.last_mirrored
                                .unwrap_or((LeaderEpoch::NONE, Offset::NONE)),
                        )
                    } else {
                        None
                    };
                }
                if target == MirrorState::Stopping && !resumed_stop {
                    task.stop_own_writes_only = task.own_writes_only;
                    task.own_stop_wait_until_ms = None;
                    task.stop_journal.clear();
                } else if !matches!(target, MirrorState::Stopping | MirrorState::Failed) {
                    task.stop_own_writes_only = false;
                }
                if !matches!(target, MirrorState::Preparing | MirrorState::Failed) {
                    task.own_writes_only = false;
                }
                // A STOPPED this leadership wrote is what a read of it tells: from here on
                // only this cluster writes, so a later PREPARING (the topic added back)
                // carries own_writes_only until it cuts, for the next leader to read
                // (generated seed 9980000000000689: the next leader read PREPARING without it,
                // stopped with MIRROR_PID_RESET, and a live producer's retry was appended twice).
                if target == MirrorState::Stopped {
                    task.own_writes_only = true;
                    task.cut_decided = false;
                    forget_source_topic(task);
                }
                if target == MirrorState::Preparing {
                    task.preparing_resumed =
                        !matches!(from, MirrorState::Unknown | MirrorState::Stopped);
                }
                task.state = target;
                task.state_epoch = state_epoch;
                task.wrote = true;
                task.transition_in_doubt = false;
                task.step = if std::mem::take(&mut task.decide_after_write) {
                    Step::Decide
                } else {
                    Step::Act
                };
                task.not_before_ms = now_ms;
                self.set_partition_mirror_state(host, topic_partition, target);
                host.lend().events.push(BrokerEvent::MirrorTransition {
                    topic_partition: topic_partition.clone(),
                    from,
                    to: target,
                });
            }
            (WritePurpose::ClearFailure, ErrorCode::None) => {
                let state_epoch = result.map_or(-1, |(_, epoch)| epoch);
                let task = self.task_mut(topic_partition);
                let retry_attempt = std::mem::take(&mut task.retry_attempt);
                task.previous_state = None;
                task.state_epoch = state_epoch;
                task.step = Step::Fetching;
                host.lend()
                    .events
                    .push(BrokerEvent::MirrorFailureRecordCleared {
                        topic_partition: topic_partition.clone(),
                        retry_attempt,
                    });
            }
            (WritePurpose::LastMirrored, ErrorCode::None) => {
                self.task_mut(topic_partition).step = Step::Act;
                if self.design.stops_with_abort_markers() {
                    self.stopping_request_bump(host, now_ms, topic_partition);
                } else {
                    self.stopping_after_last_mirrored(host, now_ms, topic_partition);
                }
            }
            // Read the state again when another writer moved it on (or a newer leader
            // exists), and when a transition write went unanswered: it may have landed, and
            // what the coordinator holds decides the next step, not what this task last knew
            // (a task that still believed UNKNOWN took a removal for "nothing mirrored yet"
            // and went STOPPED without a word to the coordinator, which kept the PREPARING it
            // had written, and a's failback lookup was refused on it for good:
            // deposed_leader_mirrors_own_records_back seed 9700000000000442).
            (
                _,
                error @ (ErrorCode::FencedStateEpoch
                | ErrorCode::FencedLeaderEpoch
                | ErrorCode::InvalidClusterMirrorState),
            )
            | (WritePurpose::Transition(..), error @ ErrorCode::RequestTimedOut) => {
                host.lend()
                    .events
                    .push(BrokerEvent::MirrorStateWriteRefused {
                        topic_partition: topic_partition.clone(),
                        error,
                    });
                let task = self.task_mut(topic_partition);
                task.decide_after_write = false;
                if error == ErrorCode::RequestTimedOut {
                    task.transition_in_doubt = true;
                }
                self.retry_step_later(now_ms, topic_partition, Step::Read);
            }
            (WritePurpose::Transition(..), _) => {
                self.task_mut(topic_partition).decide_after_write = false;
                self.retry_step_later(now_ms, topic_partition, Step::Decide);
            }
            (WritePurpose::LastMirrored, _) => {
                self.retry_step_later(now_ms, topic_partition, Step::Act);
            }
            (WritePurpose::ClearFailure, ErrorCode::RequestTimedOut) => {
                // It may have landed and moved the state epoch: read it again.
                self.retry_step_later(now_ms, topic_partition, Step::Read);
            }
            (WritePurpose::ClearFailure, _) => {
                // Mirror on; the next append asks again.
                self.retry_step_later(now_ms, topic_partition, Step::Act);
            }
        }
    }
}

/// A stop ends the mirroring of the source topic, as the coordinator's stored value says
/// (`next_value`): the partition added back later mirrors whatever topic of that name the
/// source has then, learned afresh. Kept, the id of a source topic deleted and created again
/// meanwhile failed the re-added partition for good as "replaced" (generated seed
/// 14500000000000274, with re-creations on transactional topics allowed).
fn forget_source_topic(task: &mut MirrorTask) {
    task.source_topic.topic_id = None;
}
