//! What a client knows about its cluster: partition leaders, live brokers, and when to ask again.
//! The simulated clients keep one, and so does a destination broker's mirror fetcher for each
//! source cluster it reads (a client of that cluster).
//!
//! Contract (Kafka's client `Metadata`, reduced):
//! - The cache asks for the topics it was told about. A refresh is due when one was requested
//!   (an error said the cached leader is wrong, or a new topic appeared), when the cache was
//!   never filled, or when it is older than `metadata_max_age_ms`. At most one Metadata request
//!   is in flight, and a new one waits `retry_backoff_ms` after the previous answer or failure.
//! - A partition's cached leader is replaced only by an answer with the same or a newer leader
//!   epoch, so a broker with stale metadata cannot move the client backwards (KIP-320) — of
//!   the same topic: an answer naming another topic id for the name (the topic was deleted and
//!   created again, its epochs start over) drops what the cache held of the old one, leaders
//!   and seen epochs, as Kafka's client does since KAFKA-12257.
//! - The cache also remembers the greatest leader epoch the client has *seen* for a partition
//!   from elsewhere (a committed offset's epoch; Kafka's `updateLastSeenEpochIfNewer`). While
//!   the cached leader's epoch is older than that, the leader counts as unknown and a refresh is
//!   due, so the client never fetches from a deposed leader it already knows to be stale (a
//!   zombie leader would answer OffsetOutOfRange for an offset its log never reached, and the
//!   consumer would reset).
//! - Requests that need "any broker" (Metadata, InitProducerId) go to the current rotation
//!   target. The rotation is the sorted union of the bootstrap brokers and the live brokers of
//!   the last answer; the target moves to the next one only after a failure or timeout, so the
//!   choice is deterministic.

use std::collections::{BTreeMap, BTreeSet};

use super::TopicMetadata;
use crate::common::{BrokerId, ClusterIndex, NodeId, TopicPartition};

/// Why a bootstrap list cannot start a cache: it is empty, or names something other than
/// brokers of one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InvalidBootstrap(pub String);

/// The cached leader of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PartitionLeader {
    /// The leader broker, `None` while the partition has no leader.
    pub leader: Option<BrokerId>,
    /// The partition's leader epoch as of the answer.
    pub leader_epoch: i32,
}

/// A client's metadata cache; see the module doc.
#[derive(Debug, Clone)]
pub(crate) struct MetadataCache {
    cluster: ClusterIndex,
    bootstrap: BTreeSet<NodeId>,
    live_brokers: BTreeSet<NodeId>,
    target: NodeId,
    topics: BTreeSet<String>,
    partitions: BTreeMap<TopicPartition, PartitionLeader>,
    last_seen_leader_epochs: BTreeMap<TopicPartition, i32>,
    /// The topic id each topic's cached leaders belong to.
    topic_ids: BTreeMap<String, crate::common::TopicId>,
    last_refresh_ms: Option<i64>,
    update_requested: bool,
    request_in_flight: bool,
    not_before_ms: i64,
    max_age_ms: i64,
    retry_backoff_ms: i64,
}

impl MetadataCache {
    /// A cache that knows only the bootstrap brokers, which must be brokers of one cluster.
    pub fn new(
        bootstrap: &[NodeId],
        max_age_ms: i64,
        retry_backoff_ms: i64,
    ) -> Result<Self, InvalidBootstrap> {
        let first = *bootstrap
            .first()
            .ok_or_else(|| InvalidBootstrap("the list is empty".into()))?;
        let cluster = first.cluster();
        for node in bootstrap {
            if !matches!(node, NodeId::Broker(node_cluster, _) if *node_cluster == cluster) {
                return Err(InvalidBootstrap(format!(
                    "{node} is not a broker of cluster {cluster}"
                )));
            }
        }
        let bootstrap: BTreeSet<NodeId> = bootstrap.iter().copied().collect();
        let target = *bootstrap.first().expect("checked non-empty");
        Ok(Self {
            cluster,
            bootstrap,
            live_brokers: BTreeSet::new(),
            target,
            topics: BTreeSet::new(),
            partitions: BTreeMap::new(),
            last_seen_leader_epochs: BTreeMap::new(),
            topic_ids: BTreeMap::new(),
            last_refresh_ms: None,
            update_requested: false,
            request_in_flight: false,
            not_before_ms: i64::MIN,
            max_age_ms,
            retry_backoff_ms,
        })
    }

    /// The node of broker `broker_id` in this client's cluster.
    pub fn broker_node(&self, broker_id: BrokerId) -> NodeId {
        NodeId::Broker(self.cluster, broker_id)
    }

    /// Adds `topic` to the topics asked for; a new topic makes a refresh due.
    pub fn add_topic(&mut self, topic: &str) {
        if !self.topics.contains(topic) {
            self.topics.insert(topic.to_owned());
            self.update_requested = true;
        }
    }

    /// Marks the cache as wrong: the next refresh goes out as soon as the backoff allows.
    pub fn request_update(&mut self) {
        self.update_requested = true;
    }

    /// The cached leader of `topic_partition`, if one is known and not older than the
    /// greatest leader epoch seen for it.
    pub fn leader(&self, topic_partition: &TopicPartition) -> Option<(NodeId, i32)> {
        let cached = self.partitions.get(topic_partition)?;
        let leader = cached.leader?;
        if cached.leader_epoch < self.last_seen_leader_epoch(topic_partition) {
            return None;
        }
        Some((self.broker_node(leader), cached.leader_epoch))
    }

    /// Records that `leader_epoch` exists for `topic_partition` (Kafka's
    /// `updateLastSeenEpochIfNewer`). A cached leader older than it stops counting, and a
    /// refresh is requested. Returns whether the epoch was newer than any seen before.
    pub fn update_last_seen_epoch_if_newer(
        &mut self,
        topic_partition: &TopicPartition,
        leader_epoch: i32,
    ) -> bool {
        if leader_epoch < 0 || leader_epoch <= self.last_seen_leader_epoch(topic_partition) {
            return false;
        }
        self.last_seen_leader_epochs
            .insert(topic_partition.clone(), leader_epoch);
        if self.leader_epoch(topic_partition) < leader_epoch {
            self.update_requested = true;
        }
        true
    }

    fn last_seen_leader_epoch(&self, topic_partition: &TopicPartition) -> i32 {
        let cached = self.leader_epoch(topic_partition);
        self.last_seen_leader_epochs
            .get(topic_partition)
            .map_or(cached, |seen| (*seen).max(cached))
    }

    /// The cached leader epoch of `topic_partition`, or −1 (no check) if unknown.
    pub fn leader_epoch(&self, topic_partition: &TopicPartition) -> i32 {
        self.partitions
            .get(topic_partition)
            .map_or(-1, |cached| cached.leader_epoch)
    }

    /// The id of `topic` as the last answer naming it gave, if any answer did.
    pub fn topic_id(&self, topic: &str) -> Option<crate::common::TopicId> {
        self.topic_ids.get(topic).copied()
    }

    /// The broker that "any broker" requests go to now.
    pub fn target(&self) -> NodeId {
        self.target
    }

    /// A request to `broker` failed or timed out: if it is still the rotation target, move on,
    /// so that two failures of requests sent to the same broker rotate only once.
    pub fn rotate_away_from(&mut self, broker: NodeId) {
        if self.target == broker {
            self.rotate();
        }
    }

    fn rotate(&mut self) {
        let candidates: BTreeSet<NodeId> =
            self.bootstrap.union(&self.live_brokers).copied().collect();
        let next = candidates
            .range((
                std::ops::Bound::Excluded(self.target),
                std::ops::Bound::Unbounded,
            ))
            .next()
            .or_else(|| candidates.first())
            .copied();
        self.target = next.expect("the bootstrap list is never empty");
    }

    /// Whether a Metadata request should be sent at `now_ms`.
    pub fn should_send(&self, now_ms: i64) -> bool {
        !self.request_in_flight && now_ms >= self.not_before_ms && self.refresh_due(now_ms)
    }

    fn refresh_due(&self, now_ms: i64) -> bool {
        match self.last_refresh_ms {
            None => true,
            Some(last_ms) => self.update_requested || now_ms >= last_ms + self.max_age_ms,
        }
    }

    /// The topics the next Metadata request asks about.
    pub fn requested_topics(&self) -> Vec<String> {
        self.topics.iter().cloned().collect()
    }

    /// A Metadata request went out. Requests for an update made from now on need another one.
    pub fn on_sent(&mut self) {
        assert!(!self.request_in_flight, "one metadata request at a time");
        self.request_in_flight = true;
        self.update_requested = false;
    }

    /// The Metadata request to `broker` failed or timed out: rotate, and try again after the
    /// backoff.
    pub fn on_failed(&mut self, now_ms: i64, broker: NodeId) {
        assert!(self.request_in_flight, "no metadata request in flight");
        self.request_in_flight = false;
        self.update_requested = true;
        self.not_before_ms = now_ms + self.retry_backoff_ms;
        self.rotate_away_from(broker);
    }

    /// Applies a Metadata answer. Returns the partitions whose cached leader changed.
    pub fn apply(
        &mut self,
        now_ms: i64,
        brokers: &[BrokerId],
        topics: &[TopicMetadata],
    ) -> Vec<TopicPartition> {
        assert!(self.request_in_flight, "no metadata request in flight");
        self.request_in_flight = false;
        self.last_refresh_ms = Some(now_ms);
        self.not_before_ms = now_ms + self.retry_backoff_ms;
        self.live_brokers = brokers.iter().map(|id| self.broker_node(*id)).collect();
        let mut changed = Vec::new();
        for topic in topics {
            if topic.error.is_none() {
                self.apply_topic(topic, &mut changed);
            } else {
                // The topic is unknown to this broker: forget its leaders, and ask again later.
                self.forget_topic(&topic.name, &mut changed);
                self.update_requested = true;
            }
        }
        changed
    }

    fn apply_topic(&mut self, topic: &TopicMetadata, changed: &mut Vec<TopicPartition>) {
        let mut dropped = Vec::new();
        if let Some(topic_id) = topic.topic_id {
            let previous = self.topic_ids.insert(topic.name.clone(), topic_id);
            if previous.is_some_and(|previous| previous != topic_id) {
                // Another topic under the name: its leader epochs start over.
                let of_topic =
                    |topic_partition: &TopicPartition| topic_partition.topic == topic.name.as_str();
                dropped = self
                    .partitions
                    .keys()
                    .filter(|tp| of_topic(tp))
                    .cloned()
                    .collect();
                self.partitions.retain(|tp, _| !of_topic(tp));
                self.last_seen_leader_epochs.retain(|tp, _| !of_topic(tp));
            }
        }
        for record in &topic.partitions {
            let topic_partition = TopicPartition::new(topic.name.clone(), record.partition);
            let fresh = PartitionLeader {
                leader: record.leader,
                leader_epoch: record.leader_epoch,
            };
            if fresh.leader_epoch < self.last_seen_leader_epoch(&topic_partition) {
                // A broker with older metadata answered; keep the newer leader (KIP-320),
                // and ask again if the client knows of a newer epoch than it has a leader for.
                self.update_requested |= self.leader(&topic_partition).is_none();
                continue;
            }
            let cached = self.partitions.get(&topic_partition).copied();
            if cached != Some(fresh) {
                changed.push(topic_partition.clone());
            }
            if fresh.leader.is_none() {
                // No leader right now: refresh again after the backoff until one is elected.
                self.update_requested = true;
            }
            self.partitions.insert(topic_partition, fresh);
        }
        // Partitions the old topic had and the new one has not.
        changed.extend(
            dropped
                .into_iter()
                .filter(|tp| !self.partitions.contains_key(tp)),
        );
    }

    fn forget_topic(&mut self, topic: &str, changed: &mut Vec<TopicPartition>) {
        let forgotten: Vec<TopicPartition> = self
            .partitions
            .keys()
            .filter(|topic_partition| topic_partition.topic == topic)
            .cloned()
            .collect();
        for topic_partition in forgotten {
            self.partitions.remove(&topic_partition);
            changed.push(topic_partition);
        }
    }

    /// How many partitions `topic` has, as the last answers told (0 before any named it).
    pub fn partition_count(&self, topic: &str) -> i32 {
        // Keys sort by topic, then partition: the topic's last key is its highest partition.
        // (A producer asks before every record it sends.)
        let first = TopicPartition::new(topic, 0);
        let last = TopicPartition::new(topic, i32::MAX);
        self.partitions
            .range(first..=last)
            .next_back()
            .map_or(0, |(topic_partition, _)| topic_partition.partition + 1)
    }

    /// The next time the cache wants to act, if it is not waiting for an answer.
    pub fn next_wakeup(&self) -> Option<i64> {
        if self.request_in_flight {
            return None;
        }
        match self.last_refresh_ms {
            Some(last_ms) if !self.update_requested => {
                Some((last_ms + self.max_age_ms).max(self.not_before_ms))
            }
            _ => Some(self.not_before_ms),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::PartitionRecord;
    use crate::protocol::{ErrorCode, TopicId};

    fn broker(id: i32) -> NodeId {
        NodeId::Broker(ClusterIndex(0), BrokerId(id))
    }

    fn topic(leader: i32, leader_epoch: i32) -> TopicMetadata {
        TopicMetadata {
            name: "t".into(),
            error: ErrorCode::None,
            topic_id: Some(TopicId(1)),
            partitions: vec![PartitionRecord {
                topic_id: TopicId(1),
                partition: 0,
                replicas: vec![BrokerId(1), BrokerId(2)],
                isr: vec![BrokerId(1), BrokerId(2)],
                leader: Some(BrokerId(leader)),
                leader_epoch,
                partition_epoch: leader_epoch,
                eligible_leader_replicas: Vec::new(),
                last_known_elr: Vec::new(),
            }],
        }
    }

    #[test]
    fn bootstrap_must_name_brokers_of_one_cluster() {
        assert!(MetadataCache::new(&[], 1, 1).is_err());
        let mixed = [broker(1), NodeId::Broker(ClusterIndex(1), BrokerId(2))];
        assert!(MetadataCache::new(&mixed, 1, 1).is_err());
        assert!(MetadataCache::new(&[NodeId::Controller(ClusterIndex(0))], 1, 1).is_err());
    }

    #[test]
    fn rotation_walks_the_sorted_union_of_bootstrap_and_live_brokers() {
        let mut cache = MetadataCache::new(&[broker(2), broker(1)], 1000, 10).unwrap();
        assert_eq!(cache.target(), broker(1));
        cache.rotate_away_from(broker(1));
        assert_eq!(cache.target(), broker(2));
        cache.rotate_away_from(broker(1));
        assert_eq!(
            cache.target(),
            broker(2),
            "a second failure of the old target is no news"
        );
        cache.on_sent();
        cache.apply(0, &[BrokerId(3)], &[]);
        cache.rotate_away_from(broker(2));
        assert_eq!(cache.target(), broker(3));
        cache.rotate_away_from(broker(3));
        assert_eq!(cache.target(), broker(1));
    }

    #[test]
    fn stale_leader_epoch_never_replaces_a_newer_cached_leader() {
        let tp = TopicPartition::new("t", 0);
        let mut cache = MetadataCache::new(&[broker(1)], 1000, 10).unwrap();
        cache.add_topic("t");
        cache.on_sent();
        assert_eq!(cache.apply(0, &[], &[topic(2, 5)]), vec![tp.clone()]);
        cache.on_sent();
        assert!(cache.apply(20, &[], &[topic(1, 4)]).is_empty());
        assert_eq!(cache.leader(&tp), Some((broker(2), 5)));
    }

    #[test]
    fn a_topic_created_again_under_the_name_starts_its_epochs_over() {
        // KAFKA-12257: the deleted topic's leader epoch 5 must not hold back the new topic's
        // epoch 0 (a mirror fetcher fetched the deleted topic's leader for good: generated seed
        // 15200000000000021). The same topic's older epoch is still refused.
        let tp = TopicPartition::new("t", 0);
        let mut cache = MetadataCache::new(&[broker(1)], 1000, 10).unwrap();
        cache.add_topic("t");
        cache.on_sent();
        cache.apply(0, &[], &[topic(2, 5)]);
        cache.update_last_seen_epoch_if_newer(&tp, 6);
        let again = |leader, leader_epoch| {
            let mut created_again = topic(leader, leader_epoch);
            created_again.topic_id = Some(TopicId(2));
            created_again.partitions[0].topic_id = TopicId(2);
            created_again
        };
        cache.on_sent();
        assert_eq!(cache.apply(20, &[], &[again(1, 0)]), vec![tp.clone()]);
        assert_eq!(cache.leader(&tp), Some((broker(1), 0)));
        cache.on_sent();
        assert!(
            cache.apply(40, &[], &[topic(2, 5)]).len() == 1,
            "the old id again is news"
        );
        cache.on_sent();
        cache.apply(60, &[], &[again(1, 3)]);
        cache.on_sent();
        assert!(cache.apply(80, &[], &[again(2, 2)]).is_empty());
        assert_eq!(cache.leader(&tp), Some((broker(1), 3)));
    }

    #[test]
    fn a_leader_older_than_a_seen_epoch_is_unknown_until_a_newer_answer() {
        let tp = TopicPartition::new("t", 0);
        let mut cache = MetadataCache::new(&[broker(1)], 1000, 10).unwrap();
        cache.add_topic("t");
        cache.on_sent();
        cache.apply(0, &[], &[topic(1, 0)]);
        assert_eq!(cache.leader(&tp), Some((broker(1), 0)));
        assert!(!cache.should_send(10));

        // A committed offset says epoch 1 exists: the epoch-0 leader may be a zombie.
        assert!(cache.update_last_seen_epoch_if_newer(&tp, 1));
        assert!(!cache.update_last_seen_epoch_if_newer(&tp, 1), "not newer");
        assert_eq!(cache.leader(&tp), None);
        assert!(cache.should_send(10), "a refresh is due at once");

        // The zombie (or any broker with old metadata) answers again: still unknown.
        cache.on_sent();
        assert!(cache.apply(10, &[], &[topic(1, 0)]).is_empty());
        assert_eq!(cache.leader(&tp), None);
        assert!(cache.should_send(20), "and the cache keeps asking");

        cache.on_sent();
        assert_eq!(cache.apply(20, &[], &[topic(2, 1)]), vec![tp.clone()]);
        assert_eq!(cache.leader(&tp), Some((broker(2), 1)));
        assert!(
            !cache.update_last_seen_epoch_if_newer(&tp, 0),
            "an older epoch changes nothing"
        );
        assert_eq!(cache.leader(&tp), Some((broker(2), 1)));
    }

    #[test]
    fn refresh_is_due_on_request_on_age_and_waits_for_the_backoff() {
        let mut cache = MetadataCache::new(&[broker(1)], 1000, 10).unwrap();
        assert!(cache.should_send(0), "never refreshed");
        cache.on_sent();
        assert!(!cache.should_send(0), "one in flight at a time");
        cache.apply(0, &[], &[]);
        assert!(!cache.should_send(5));
        cache.request_update();
        assert!(!cache.should_send(9), "backoff after the last answer");
        assert!(cache.should_send(10));
        cache.on_sent();
        cache.apply(10, &[], &[]);
        assert_eq!(cache.next_wakeup(), Some(1010));
        assert!(cache.should_send(1010), "too old");
    }
}
