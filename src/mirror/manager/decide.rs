//! How a task chooses its next state from the stored state and the desired state, and what
//! each state's action is.

use super::*;

impl MirrorManager {
    // ----- decisions and actions -----

    pub(super) fn decide_next(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
    ) -> bool {
        let Some(desired) = host.image().mirror_desired_state(&topic_partition.topic) else {
            return false;
        };
        let task = &self.tasks[topic_partition];
        if task.state == MirrorState::Unknown
            && task.transition_in_doubt
            && matches!(desired, DesiredState::Stopped { .. })
        {
            // Removed while a write of this leadership (a PREPARING) may still land: the
            // UNKNOWN read says nothing of what will be stored, and a partition taken as never
            // mirrored would leave that PREPARING at the coordinator for good, where a failback
            // lookup is refused on it (generated seed 12300000000000221: the leader was its
            // own mirror coordinator, and its shard answered the re-read from the committed
            // state while the write waited for an ISR shrink). PREPARING is written again: it
            // lands, or is fenced by the earlier one, and the decision then stops from it.
            self.task_mut(topic_partition).decide_after_write = true;
            self.write_transition(host, now_ms, topic_partition, MirrorState::Preparing);
            return false;
        }
        if task.state == MirrorState::Unknown && matches!(desired, DesiredState::Stopped { .. }) {
            // Removed before anything was mirrored (or a partition added to a removed topic by
            // CreatePartitions): there is nothing to stop, and UNKNOWN → STOPPING is not a
            // legal transition. The partition is an ordinary writable one.
            let task = self.task_mut(topic_partition);
            task.step = Step::Idle;
            self.set_partition_mirror_state(host, topic_partition, MirrorState::Stopped);
            return false;
        }
        let target = match decide(task.state, &desired) {
            MirrorState::Failed => {
                let settings = self.failure_settings(topic_partition);
                let retries_left = settings.retries_left(task.retry_attempt);
                let wish = match &desired {
                    // `failed-refuses-stop`: the failed state is retried as if still wanted.
                    DesiredState::Stopped { mirror } if !self.design.stops_from_failed() => {
                        DesiredState::Mirror {
                            mirror: mirror.clone(),
                        }
                    }
                    _ => desired.clone(),
                };
                let prototype_retry = self.design.persists_epoch_fencing()
                    && retries_left
                    && task.previous_state == Some(MirrorState::EpochFencing)
                    && !matches!(wish, DesiredState::Stopped { .. });
                match retry_target(task.previous_state, &wish, retries_left) {
                    // The prototype retries the state it failed in, here an illegal
                    // FAILED → EPOCH_FENCING: skipped below, no attempt used (spec §9).
                    Some(_) if prototype_retry => MirrorState::EpochFencing,
                    Some(target) => target,
                    None => {
                        self.wait_for_operator(host, now_ms, topic_partition, settings);
                        return false;
                    }
                }
            }
            MirrorState::Preparing
                if task.state == MirrorState::Unknown
                    && self.broken.contains(&BrokenSwitch::MirrorSkipPreparing) =>
            {
                // Broken on purpose: straight to MIRRORING, no truncation.
                self.write_transition(host, now_ms, topic_partition, MirrorState::Mirroring);
                return false;
            }
            target => target,
        };
        let keep = task.state == target && task.wrote;
        if keep || !is_valid_transition(task.state, target) {
            // Re-run the current state's work (a new wish waits for it, e.g. a pause asked
            // while PREPARING follows once MIRRORING is reached).
            let task = self.task_mut(topic_partition);
            task.step = Step::Act;
            task.not_before_ms = now_ms;
            return true;
        }
        // A transition, or a new leader re-entering the state: the write fences the writes
        // of the previous leader.
        self.write_transition(host, now_ms, topic_partition, target);
        false
    }

    pub(super) fn act(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
    ) -> bool {
        let state = self.tasks[topic_partition].state;
        match state {
            MirrorState::Unknown => {
                self.task_mut(topic_partition).step = Step::Decide;
                true
            }
            MirrorState::Preparing => {
                // PREPARING cuts the log: what a source showed before says nothing now.
                let task = self.task_mut(topic_partition);
                task.source_confirmed_end = None;
                task.confirmed_by_takeover = false;
                self.send_lme_lookup(host, now_ms, topic_partition);
                false
            }
            MirrorState::Mirroring | MirrorState::Paused | MirrorState::Stopped
                if self.wish_leads_elsewhere(&*host, topic_partition, state) =>
            {
                // A wish that came while the state before was at work (a resume while
                // PAUSING, an add while STOPPING) could not be taken then; take it now.
                self.task_mut(topic_partition).step = Step::Decide;
                true
            }
            MirrorState::Mirroring => {
                let task = self.task_mut(topic_partition);
                task.step = Step::Fetching;
                task.fetch_not_before_ms = None;
                true
            }
            MirrorState::UleRecovery => {
                // Spec §4.7: the fetcher cut what the source lost and stopped; mirror again once
                // every replica, not only the ISR, has cut too (a follower fenced at the cut
                // truncates when it fetches; one that is down holds this until it is back).
                let log_end = host
                    .partitions()
                    .get(topic_partition)
                    .map_or(Offset(0), |partition| partition.log.log_end_offset());
                let task = self.task_mut(topic_partition);
                task.step = Step::AwaitTruncation {
                    offset: log_end,
                    every_replica: true,
                    removed: true,
                    reported: true,
                };
                task.not_before_ms = now_ms;
                true
            }
            MirrorState::EpochFencing => {
                self.epoch_fencing_bump(host, now_ms, topic_partition);
                false
            }
            MirrorState::Pausing if self.broken.contains(&BrokenSwitch::MirrorFetchWhilePaused) => {
                // Broken on purpose: the fetcher keeps running and PAUSED is never written.
                self.task_mut(topic_partition).step = Step::Fetching;
                false
            }
            MirrorState::Pausing => {
                // The fetcher is gone once the task leaves Fetching; answers to a fetch still
                // in flight are dropped (the task is no longer MIRRORING).
                self.write_transition(host, now_ms, topic_partition, MirrorState::Paused);
                false
            }
            MirrorState::Paused | MirrorState::Stopped => {
                self.task_mut(topic_partition).step = Step::Idle;
                false
            }
            MirrorState::Stopping => {
                self.stopping_start(host, now_ms, topic_partition);
                false
            }
            MirrorState::Failed => {
                let settings = self.failure_settings(topic_partition);
                let task = self.task_mut(topic_partition);
                task.step = Step::Decide;
                task.not_before_ms = now_ms + settings.backoff_ms(task.retry_attempt);
                false
            }
        }
    }

    /// The failure and retry settings of a task's mirror (read when the image last changed).
    pub(super) fn failure_settings(&self, topic_partition: &TopicPartition) -> FailureSettings {
        self.failure
            .get(&self.tasks[topic_partition].mirror)
            .copied()
            .unwrap_or_default()
    }

    /// A FAILED partition with no retry left (non-retryable, or its attempts used up) waits
    /// for an operator: RecoverMirrorTopics, which rewrites its state at the coordinator, or a
    /// failover (a change of `mirror.name`, which re-runs the decision at once). It reads its
    /// stored state again every maximum backoff, so that a recovery reaches it wherever it
    /// was written (the prototype follows the recovery with a metadata change instead).
    fn wait_for_operator(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        settings: FailureSettings,
    ) {
        let task = self.task_mut(topic_partition);
        task.step = Step::Read;
        task.not_before_ms = now_ms + settings.max_backoff_ms;
        if !task.waits_for_operator {
            task.waits_for_operator = true;
            let retry_attempt = task.retry_attempt;
            host.lend().events.push(BrokerEvent::MirrorAwaitsOperator {
                topic_partition: topic_partition.clone(),
                retry_attempt,
            });
        }
    }

    /// Whether `mirror.name` now asks a partition that reached `state` to move on to another
    /// state it may go to from there. Checked when a state is reached: a wish that arrived
    /// while the state before it was at work is looked at then (STOPPING → PREPARING is not
    /// a transition, so a topic added again while STOPPING re-ran STOPPING and, reaching
    /// STOPPED, was left there for good: generator seed 1337263765019824; likewise a resume
    /// while PAUSING, seed 1337263765019770).
    pub(super) fn wish_leads_elsewhere(
        &self,
        host: &impl MirrorHost,
        topic_partition: &TopicPartition,
        state: MirrorState,
    ) -> bool {
        host.image()
            .mirror_desired_state(&topic_partition.topic)
            .is_some_and(|desired| {
                let target = decide(state, &desired);
                target != state && is_valid_transition(state, target)
            })
    }
}
