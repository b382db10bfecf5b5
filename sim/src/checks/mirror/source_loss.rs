//! `mirror-loss-followed` (spec §4.7): a MIRRORING destination partition never cuts records
//! it mirrored from its source, on the source's word that it no longer has them, unless the
//! topic has `mirror.support.unclean.leader.election=true`. Such a cut means the source lost
//! records it had served (an unclean leader election there, or a chain's middle cluster
//! re-aligning a history its next hop had mirrored); without the topic's support the
//! partition must go FAILED and keep them, reported, for an operator to judge: the records
//! the source lost may exist nowhere else, and the destination's consumers have read them.
//!
//! "Mirrored" is what the partition's leaders reported appending (`MirrorAppend`) since its
//! last PREPARING: PREPARING's own cut and the fine-grained cut of the first fetch after it
//! (a failback's writes beyond the source's end of the last mirrored epoch) remove this
//! cluster's own history, which the source never served, and are not judged.

use super::*;

impl MirrorChecks {
    /// Learns from one event what `mirror-loss-followed` needs, and judges the mirror
    /// fetcher's cuts.
    pub(super) fn observe_source_loss(
        &mut self,
        time_ms: i64,
        view: &BrokerView<'_>,
        event: &BrokerEvent,
    ) {
        match event {
            BrokerEvent::MirrorAppend {
                topic_partition,
                last_offset,
                ..
            } => {
                let end = self
                    .mirrored_since_prepare
                    .entry((view.cluster, topic_partition.clone()))
                    .or_insert(0);
                *end = (*end).max(last_offset.0 + 1);
            }
            BrokerEvent::MirrorTransition {
                topic_partition,
                to: MirrorState::Preparing,
                ..
            } => {
                self.mirrored_since_prepare
                    .remove(&(view.cluster, topic_partition.clone()));
            }
            BrokerEvent::MirrorTransition {
                topic_partition,
                to: MirrorState::Stopped,
                ..
            } => {
                // The mirroring of the ended life is over; a later add mirrors afresh.
                self.mirrored_ended_lives
                    .remove(&(view.cluster, topic_partition.clone()));
            }
            BrokerEvent::MirrorSourceLostRecords { .. } => {
                self.precondition(Invariant::MirrorLossFollowed);
            }
            BrokerEvent::Truncated {
                topic_partition,
                to_log_end_offset,
                reason: TruncationReason::MirrorDivergingEpoch,
                ..
            } => self.judge_fetcher_cut(time_ms, view, topic_partition, to_log_end_offset.0),
            _ => {}
        }
    }

    /// A mirror fetcher's cut to `to`: a violation when it removes mirrored records of a topic
    /// without unclean-election support.
    fn judge_fetcher_cut(
        &mut self,
        time_ms: i64,
        view: &BrokerView<'_>,
        topic_partition: &TopicPartition,
        to: i64,
    ) {
        let key = (view.cluster, topic_partition.clone());
        let Some(end) = self.mirrored_since_prepare.get_mut(&key) else {
            return;
        };
        if to >= *end {
            return;
        }
        let mirrored_end = std::mem::replace(end, to);
        self.precondition(Invariant::MirrorLossFollowed);
        let supported = mirrorsim::mirror::supports_unclean_mirroring(
            view.broker.image(),
            &topic_partition.topic,
        );
        if supported {
            *self
                .marks
                .entry("mirror-loss-followed-supported")
                .or_default() += 1;
            return;
        }
        self.found.push(Violation {
            invariant: Invariant::MirrorLossFollowed,
            cluster: Some(view.cluster),
            topic_partition: Some(topic_partition.clone()),
            detail: format!(
                "{} cut mirrored records {to}..{mirrored_end} its source no longer has and \
                 went on mirroring, though the topic lacks mirror.support.unclean.leader.election",
                view.broker.node_id()
            ),
            time_ms,
        });
    }
}
