//! Topic lives: a topic deleted and created again under the same name is another topic.
//!
//! Kafka gives every topic a topic id at its creation; a DeleteTopics removes the topic and
//! its data, and a CreateTopics of the same name afterwards makes a new topic, with a new id,
//! whose partitions start empty at leader epoch 0. The checkers key what they remember of a
//! partition by its name, so they must learn when a name starts a new life, or the new topic's
//! epoch 0 reads as a second leader of the old one's and its empty log as a high watermark
//! gone down. [`TopicLives`] follows each cluster's controller image: when a topic's id
//! changes or the topic goes away, the checkers forget the partitions of its old life
//! ([`Checkers::forget_topic`]).
//!
//! What the old life held is gone with it, as Kafka allows: an acknowledged record of a topic
//! deleted since need not be on any log nor read by anyone. A record is judged to belong to
//! the old life when it was *sent* before the life ended: before the controller's image showed
//! the deletion, or before the last broker still holding a replica of the old topic removed it
//! (a broker learns of the deletion after the controller, and appends to and answers for the
//! old topic until then; it reports the removal, `PartitionRemoved`). The producer names the
//! partition, not the topic id (Produce before v13), so a send retried across a deletion and a
//! re-creation may land in either life, and the checkers cannot tell which; they excuse it
//! (the lenient side: a record the new life loses that way goes unreported).

use std::collections::{BTreeMap, BTreeSet};

use mirrorsim::protocol::{BrokerId, ClusterIndex, NodeId, TopicId, TopicPartition};

use super::view::ControllerView;
use super::Checkers;

/// The lives of every topic name of every cluster, as the controllers' images show them.
#[derive(Debug, Default)]
pub(super) struct TopicLives {
    /// Per (cluster, topic name): its current topic id and when its last life ended.
    lives: BTreeMap<(ClusterIndex, String), TopicLife>,
    /// Per cluster: the controller's metadata log end at the last look (its image changes
    /// only with its log).
    looked_at: BTreeMap<ClusterIndex, i64>,
}

#[derive(Debug, Default)]
struct TopicLife {
    /// The controller's topic id for the name (`None` while the topic is deleted).
    id: Option<TopicId>,
    /// The checker time at which a life last ended (the topic went away or its id changed).
    last_ended_ms: Option<i64>,
    /// When a broker last reported removing its replica of a partition of the topic
    /// (`PartitionRemoved`): until then that broker could append to and serve the old life
    /// (its metadata lagged the controller's), so the old life lasts at least that long.
    last_removed_ms: Option<i64>,
}

impl TopicLives {
    /// Looks at each live controller's image; returns the (cluster, topic) whose life ended
    /// since the last look, in order.
    pub(super) fn observe(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
    ) -> Vec<(ClusterIndex, String)> {
        let mut ended = Vec::new();
        for view in controllers {
            let log_end = view.controller.log_end_offset();
            if self.looked_at.insert(view.cluster, log_end) == Some(log_end) {
                continue;
            }
            let ids = &view.controller.image().topic_ids;
            for ((cluster, topic), life) in &mut self.lives {
                if *cluster != view.cluster {
                    continue;
                }
                let now = ids.get(topic).copied();
                if life.id.is_some() && life.id != now {
                    life.last_ended_ms = Some(time_ms);
                    ended.push((*cluster, topic.clone()));
                }
                life.id = now;
            }
            for (topic, id) in ids {
                self.lives
                    .entry((view.cluster, topic.clone()))
                    .or_default()
                    .id = Some(*id);
            }
        }
        ended
    }

    /// Notes that a broker of `cluster` removed its replica of a partition of `topic` (the
    /// topic was deleted) at `time_ms`.
    pub(super) fn note_removed(&mut self, cluster: ClusterIndex, topic: &str, time_ms: i64) {
        let life = self.lives.entry((cluster, topic.to_owned())).or_default();
        life.last_removed_ms = Some(life.last_removed_ms.map_or(time_ms, |ms| ms.max(time_ms)));
    }

    /// Whether a record of `topic` on `cluster` sent at `sent_ms` may belong to a life of the
    /// topic that has ended since (see the module doc): sent before the controller's image
    /// showed the end, or before the last broker that held the old life let go of it (a
    /// broker learns of the deletion from the controller after it, and appends and answers
    /// for the old life until then).
    pub(super) fn sent_before_an_end(
        &self,
        cluster: ClusterIndex,
        topic: &str,
        sent_ms: i64,
    ) -> bool {
        self.lives
            .get(&(cluster, topic.to_owned()))
            .and_then(|life| {
                let ended = life.last_ended_ms?;
                Some(ended.max(life.last_removed_ms.unwrap_or(ended)))
            })
            .is_some_and(|until| sent_ms < until)
    }
}

/// A key of the checkers' memory that names one partition of one cluster.
pub(crate) trait OfTopic {
    /// Whether the key is of a partition of `topic` on `cluster`.
    fn of_topic(&self, cluster: ClusterIndex, topic: &str) -> bool;
}

impl OfTopic for (ClusterIndex, TopicPartition) {
    fn of_topic(&self, cluster: ClusterIndex, topic: &str) -> bool {
        self.0 == cluster && self.1.topic == topic
    }
}

impl OfTopic for (ClusterIndex, TopicPartition, i32) {
    fn of_topic(&self, cluster: ClusterIndex, topic: &str) -> bool {
        self.0 == cluster && self.1.topic == topic
    }
}

impl OfTopic for (ClusterIndex, TopicPartition, BrokerId, u64, i32) {
    fn of_topic(&self, cluster: ClusterIndex, topic: &str) -> bool {
        self.0 == cluster && self.1.topic == topic
    }
}

impl OfTopic for (ClusterIndex, String, TopicPartition) {
    fn of_topic(&self, cluster: ClusterIndex, topic: &str) -> bool {
        self.0 == cluster && self.2.topic == topic
    }
}

impl OfTopic for (NodeId, u64, TopicPartition) {
    fn of_topic(&self, cluster: ClusterIndex, topic: &str) -> bool {
        self.0.cluster() == cluster && self.2.topic == topic
    }
}

/// Drops `map`'s entries of `topic` on `cluster`.
pub(crate) fn forget_in<K: OfTopic + Ord, V>(
    map: &mut BTreeMap<K, V>,
    cluster: ClusterIndex,
    topic: &str,
) {
    map.retain(|key, _| !key.of_topic(cluster, topic));
}

/// Drops `set`'s entries of `topic` on `cluster`.
pub(crate) fn forget_in_set<K: OfTopic + Ord>(
    set: &mut BTreeSet<K>,
    cluster: ClusterIndex,
    topic: &str,
) {
    set.retain(|key| !key.of_topic(cluster, topic));
}

impl Checkers {
    /// Learns from the controllers which topics ended a life this step and forgets what the
    /// checkers remember of their partitions (see the module doc).
    pub(super) fn follow_topic_lives(&mut self, time_ms: i64, controllers: &[ControllerView<'_>]) {
        for (cluster, topic) in self.topic_lives.observe(time_ms, controllers) {
            self.forget_topic(time_ms, cluster, &topic);
            self.mark("topic-life-ended");
        }
    }

    /// Whether `send` may have gone with a life of its topic that ended since: a deletion
    /// removed it from every log, which Kafka allows (see the module doc).
    pub(super) fn of_ended_topic_life(&self, send: &crate::world::workload::SendRecord) -> bool {
        let cluster = super::reads::cluster_of_value(&send.value);
        self.topic_lives
            .sent_before_an_end(cluster, &send.topic_partition.topic, send.sent_ms)
    }

    /// Whether `consumer`'s read `poll` may have been of a life of its topic that ended since:
    /// its record was sent before the end (`sent_ms`; when the history has no send of it, the
    /// fetch's time stands for it), so the final log of the topic's next life is no measure
    /// of it.
    pub(super) fn read_of_ended_topic_life(
        &self,
        consumer: NodeId,
        poll: &crate::world::workload::PollRecord,
        sent_ms: Option<i64>,
    ) -> bool {
        let sent_ms = sent_ms.unwrap_or(poll.fetched_ms);
        self.topic_lives.sent_before_an_end(
            consumer.cluster(),
            &poll.topic_partition.topic,
            sent_ms,
        )
    }

    /// Whether `consumer`'s read `poll` was of a record mirrored from a life of its source
    /// topic that has ended (`sent_ms` as [`Self::read_of_ended_topic_life`] takes it), from a
    /// log a mirroring truncation cut below it since: a topic added back to its mirror after
    /// its source topic was deleted and created again mirrors the new topic from scratch, its
    /// PREPARING cutting what it held of the old one (generated seed 13500000000000133).
    pub(super) fn mirrored_read_of_ended_source_life(
        &self,
        consumer: NodeId,
        poll: &crate::world::workload::PollRecord,
        sent_ms: Option<i64>,
    ) -> bool {
        let origin = super::reads::cluster_of_value(&poll.value);
        origin != consumer.cluster()
            && self.topic_lives.sent_before_an_end(
                origin,
                &poll.topic_partition.topic,
                sent_ms.unwrap_or(poll.fetched_ms),
            )
            && self.cut_by_mirroring(
                consumer.cluster(),
                &poll.topic_partition,
                poll.offset,
                poll.fetched_ms,
                |_| true,
            )
    }

    /// Forgets every partition of `topic` on `cluster`: its next life is another topic.
    fn forget_topic(&mut self, time_ms: i64, cluster: ClusterIndex, topic: &str) {
        forget_in(&mut self.metadata_epochs, cluster, topic);
        forget_in(&mut self.epoch_leaders, cluster, topic);
        forget_in(&mut self.replicas_seen, cluster, topic);
        forget_in(&mut self.durable_acked, cluster, topic);
        forget_in(&mut self.converged_to, cluster, topic);
        forget_in(&mut self.scans, cluster, topic);
        forget_in(&mut self.group_offsets, cluster, topic);
        forget_in(&mut self.member_resets, cluster, topic);
        forget_in(&mut self.mirror_truncations, cluster, topic);
        forget_in(&mut self.committed_high, cluster, topic);
        forget_in(&mut self.losses, cluster, topic);
        forget_in(&mut self.lossy_epoch_starts, cluster, topic);
        forget_in(&mut self.epoch_starts, cluster, topic);
        forget_in(&mut self.deposed_commits, cluster, topic);
        forget_in(&mut self.deposed_logs, cluster, topic);
        forget_in(&mut self.mirror_cut_epoch_starts, cluster, topic);
        forget_in(&mut self.mirror_cut_deposed_logs, cluster, topic);
        forget_in(&mut self.last_leaders, cluster, topic);
        forget_in_set(&mut self.leader_changed, cluster, topic);
        forget_in_set(&mut self.failed_on_source_loss, cluster, topic);
        self.failed_on_fault_silence
            .retain(|key, _| !key.of_topic(cluster, topic));
        forget_in(&mut self.stops_seen, cluster, topic);
        forget_in(&mut self.failures_seen, cluster, topic);
        forget_in(&mut self.member_commits, cluster, topic);
        forget_in(&mut self.passed, cluster, topic);
        forget_in(&mut self.log_versions, cluster, topic);
        forget_in(&mut self.replaced_versions, cluster, topic);
        forget_in(&mut self.committed_end, cluster, topic);
        forget_in(&mut self.lost_tails, cluster, topic);
        forget_in(&mut self.refetch_cuts, cluster, topic);
        for ((consumer, _), (_, positions)) in &mut self.polls_seen {
            if consumer.cluster() == cluster {
                positions.retain(|tp, _| tp.topic != topic);
            }
        }
        self.mirror.forget_topic(time_ms, cluster, topic);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_sent_before_its_topic_life_ended_is_of_the_old_life() {
        let a = ClusterIndex(0);
        let mut lives = TopicLives::default();
        lives.lives.insert(
            (a, "orders".to_owned()),
            TopicLife {
                id: Some(TopicId(9)),
                last_ended_ms: Some(5_000),
                last_removed_ms: None,
            },
        );
        assert!(lives.sent_before_an_end(a, "orders", 4_999));
        assert!(!lives.sent_before_an_end(a, "orders", 5_000));
        assert!(!lives.sent_before_an_end(a, "audit", 10));
        assert!(!lives.sent_before_an_end(ClusterIndex(1), "orders", 10));
        // A broker let go of the old life later than the controller's image showed its end.
        lives.note_removed(a, "orders", 5_300);
        assert!(lives.sent_before_an_end(a, "orders", 5_299));
        assert!(!lives.sent_before_an_end(a, "orders", 5_300));
        // A removal before the end does not shorten it.
        lives.note_removed(a, "orders", 4_000);
        assert!(lives.sent_before_an_end(a, "orders", 5_299));
    }

    #[test]
    fn forgetting_a_topic_keeps_other_topics_and_clusters() {
        let a = ClusterIndex(0);
        let mut map = BTreeMap::new();
        map.insert((a, TopicPartition::new("orders", 0)), 1);
        map.insert((a, TopicPartition::new("orders", 1)), 2);
        map.insert((a, TopicPartition::new("audit", 0)), 3);
        map.insert((ClusterIndex(1), TopicPartition::new("orders", 0)), 4);
        forget_in(&mut map, a, "orders");
        assert_eq!(map.values().copied().collect::<Vec<_>>(), vec![3, 4]);
    }
}
