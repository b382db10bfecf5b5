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
//! cluster's own history, which the source never served, and are not judged. When another
//! broker takes the leadership over, only what was committed of it carries over: the mirrored
//! range is lowered to the highest high watermark the last mirroring leader had at its
//! appends (mark `mirror-loss-judged-to-committed`), and what a deposed leader still appends
//! after that, not knowing of the election, is not counted (mark
//! `mirror-append-of-deposed-leader`). A deposed leader's uncommitted appends may be on no
//! other replica, and the new leader's own tail there is not what was mirrored (generated seed
//! 14100000000000161: a's leader, cut off from its followers, mirrored b's records above its
//! failback cut; the follower that took over still held a's own pre-failback records there,
//! from a fetch answered before the cut, and its mirror fetcher cut them).

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
            } => self.note_mirrored(view, topic_partition, last_offset.0 + 1),
            BrokerEvent::BecameLeader {
                topic_partition,
                leader_epoch,
                ..
            } => self.note_leader(view, topic_partition, leader_epoch.0),
            BrokerEvent::MirrorTransition {
                topic_partition,
                to: MirrorState::Preparing,
                ..
            } => {
                let key = (view.cluster, topic_partition.clone());
                self.mirrored_since_prepare.remove(&key);
                self.mirroring_leaders.remove(&key);
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

    /// A mirrored append ending at `end` by `view`'s broker: counted unless a later leader
    /// took the partition over (see the module doc), with the broker's high watermark.
    fn note_mirrored(&mut self, view: &BrokerView<'_>, topic_partition: &TopicPartition, end: i64) {
        let key = (view.cluster, topic_partition.clone());
        let node = view.broker.node_id();
        if self
            .latest_leaders
            .get(&key)
            .is_some_and(|(leader, _)| *leader != node)
        {
            *self
                .marks
                .entry("mirror-append-of-deposed-leader")
                .or_default() += 1;
            return;
        }
        let mirrored = self.mirrored_since_prepare.entry(key.clone()).or_insert(0);
        *mirrored = (*mirrored).max(end);
        let high_watermark = view
            .partition(topic_partition)
            .map_or(0, |partition| partition.log.high_watermark().0);
        let committed = match self.mirroring_leaders.get(&key) {
            Some((by, committed)) if *by == node => (*committed).max(high_watermark),
            _ => high_watermark,
        };
        self.mirroring_leaders.insert(key, (node, committed));
    }

    /// `view`'s broker leads the partition in `leader_epoch`: when it is another broker than
    /// the last mirroring leader, only what that one had committed of its mirrored records
    /// carries over (see the module doc).
    fn note_leader(
        &mut self,
        view: &BrokerView<'_>,
        topic_partition: &TopicPartition,
        leader_epoch: i32,
    ) {
        let key = (view.cluster, topic_partition.clone());
        let node = view.broker.node_id();
        if self
            .latest_leaders
            .get(&key)
            .is_some_and(|(_, epoch)| *epoch > leader_epoch)
        {
            return; // A deposed leader's late news of an older epoch.
        }
        self.latest_leaders
            .insert(key.clone(), (node, leader_epoch));
        let Some(&(by, committed)) = self.mirroring_leaders.get(&key) else {
            return;
        };
        if by == node {
            return;
        }
        self.mirroring_leaders.remove(&key);
        if let Some(end) = self.mirrored_since_prepare.get_mut(&key) {
            if committed < *end {
                *end = committed;
                *self
                    .marks
                    .entry("mirror-loss-judged-to-committed")
                    .or_default() += 1;
            }
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
