//! `stop-keeps-caught-up` (issue #17, "no silent loss at the stop"): a mirror partition that
//! an operator saw caught up keeps, when it stops, everything it was caught up to.
//!
//! Mirroring is asynchronous, so a stop (a failover) in general loses what the source had not
//! yet served: the lag is the recovery point. A planned failover waits for it: the operator
//! stops the source's producers, watches `describe_mirror` until a partition's lag is 0 (its
//! high watermark at the source's last stable offset L), and then stops the topic. That
//! promise is what this checks: once a describe showed partition P MIRRORING or PAUSED with lag
//! 0 against L, the next time P goes STOPPED its mirrored data (everything below the stop's
//! own MIRROR_PID_RESET) reaches L. A describe that reported lag 0 wrongly, a STOPPING that cut
//! below the source's last stable offset, or a leader change that dropped mirrored records
//! would each lose records the operator was told were safe, without a word.
//!
//! Not judged, as the spec excuses them or they are other checks' business: a partition that
//! went FAILED in between (failed and reported); one whose log was cut in between by anything
//! but STOPPING's own cut to the last stable offset (a followed source loss, PREPARING after a
//! re-add: those are `mirror-loss-followed`'s and the history checks'); one that lost committed
//! data in between (`acked-writes-durable`'s); a stop that writes no reset (a log of this
//! cluster's own writes only, or a design without the reset).

use super::*;
use crate::world::admin::AdminOpRecord;
use mirrorsim::mirror::MirrorState;

/// A destination partition turning STOPPED, as its leader reported it.
#[derive(Debug, Clone, Copy)]
pub(super) struct StopSeen {
    /// When the checkers saw it (ms since the run started).
    time_ms: i64,
    /// Where the leader's mirrored data ends: the base offset of its last MIRROR_PID_RESET
    /// (the stop's own), `None` when its log holds none.
    mirrored_end: Option<i64>,
}

impl Checkers {
    /// Notes a mirror partition's transition for `stop-keeps-caught-up`: each stop (into
    /// STOPPED from another state) with where its mirrored data ends, and each failure.
    pub(super) fn note_stop_or_failure(
        &mut self,
        time_ms: i64,
        view: &BrokerView<'_>,
        topic_partition: &TopicPartition,
        (from, to): (MirrorState, MirrorState),
    ) {
        let key = (view.cluster, topic_partition.clone());
        match to {
            MirrorState::Stopped if from != MirrorState::Stopped => {
                let mirrored_end = view.partition(topic_partition).and_then(|partition| {
                    let log = &partition.log;
                    log.batches_from(log.log_start_offset())
                        .filter(|batch| batch.is_mirror_pid_reset())
                        .last()
                        .map(|reset| reset.base_offset())
                });
                self.stops_seen.entry(key).or_default().push(StopSeen {
                    time_ms,
                    mirrored_end,
                });
            }
            MirrorState::Failed => self.failures_seen.entry(key).or_default().push(time_ms),
            _ => {}
        }
    }

    /// `stop-keeps-caught-up` over the run's describes (see the module doc).
    pub(super) fn check_caught_up_stops(
        &mut self,
        time_ms: i64,
        admin_ops: &[AdminOpRecord],
    ) -> Vec<Violation> {
        let mut out = Vec::new();
        for record in admin_ops {
            let Some(outcome) = &record.outcome else {
                continue;
            };
            let described_ms = outcome.answered_at_ms;
            for (topic_partition, caught_up_to) in &outcome.caught_up {
                let key = (record.op.cluster, topic_partition.clone());
                let Some(stop) = self
                    .stops_seen
                    .get(&key)
                    .and_then(|stops| stops.iter().find(|stop| stop.time_ms > described_ms))
                    .copied()
                else {
                    continue;
                };
                let between = |at: i64| at > described_ms && at <= stop.time_ms;
                let failed = self
                    .failures_seen
                    .get(&key)
                    .is_some_and(|times| times.iter().copied().any(between));
                let cut = self.mirror_truncations.get(&key).is_some_and(|cuts| {
                    cuts.iter().any(|(at, _, reason)| {
                        between(*at) && *reason != TruncationReason::MirrorStopAtLastStableOffset
                    })
                });
                let lost = self.lost_or_tail_lost_since(
                    record.op.cluster,
                    topic_partition,
                    *caught_up_to,
                    described_ms,
                );
                let Some(mirrored_end) = stop.mirrored_end else {
                    continue;
                };
                if failed || cut || lost {
                    self.mark("caught-up-stop-excused");
                    continue;
                }
                self.precondition(Invariant::StopKeepsCaughtUp);
                if mirrored_end < *caught_up_to {
                    out.push(Violation {
                        invariant: Invariant::StopKeepsCaughtUp,
                        cluster: Some(record.op.cluster),
                        topic_partition: Some(topic_partition.clone()),
                        detail: format!(
                            "describe_mirror (admin #{}) showed it caught up to the source's last \
                             stable offset {caught_up_to} at {described_ms} ms, yet it went \
                             STOPPED at {} ms with its mirrored data ending at {mirrored_end}: \
                             records below {caught_up_to} lost without a word",
                            record.op.index, stop.time_ms
                        ),
                        time_ms,
                    });
                }
            }
        }
        out
    }
}
