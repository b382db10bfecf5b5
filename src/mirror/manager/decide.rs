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
                let retries_left = (0..MIRROR_RETRY_MAX_ATTEMPTS).contains(&task.retry_attempt);
                match retry_target(task.previous_state, &desired, retries_left) {
                    Some(target) => target,
                    None => {
                        self.task_mut(topic_partition).step = Step::Idle;
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
                let task = self.task_mut(topic_partition);
                task.step = Step::Decide;
                task.not_before_ms = now_ms + backoff_ms(task.retry_attempt);
                false
            }
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
