//! Where a destination broker finds a mirror's parts, read from its metadata image: the
//! source cluster's bootstrap brokers, the mirror's topics, and which `__mirror_state`
//! partition (and so which coordinator broker) holds each mirror partition's key.
//!
//! Contract: every answer is a pure function of the image as the broker sees it now; nothing
//! is cached, so an answer is as fresh (or as stale) as the image. "No answer" (`None` or an
//! empty collection) means the image does not know yet: `__mirror_state` not created, no
//! leader for a partition, no such mirror, or a `bootstrap.servers` that does not parse.

use std::collections::BTreeMap;

use super::coordinator::{mirror_state_partition, MIRROR_STATE_TOPIC};
use super::failure::FailureSettings;
use super::sync::BOOTSTRAP_SERVERS_CONFIG;
use super::{parse_bootstrap_servers, DesiredState, TopicMirrorConfig};
use crate::component::BrokerContext;
use crate::coordinator::partition_count;
use crate::metadata::{ConfigResource, MetadataImage};
use crate::protocol::{ClusterIndex, MirrorPartitionId, NodeId, TopicPartition};

/// A read-only view of the mirrors in one destination broker's image.
#[derive(Debug, Clone, Copy)]
pub struct MirrorDirectory<'a> {
    image: &'a MetadataImage,
    /// The destination cluster, whose brokers lead `__mirror_state`.
    cluster: ClusterIndex,
}

impl<'a> MirrorDirectory<'a> {
    /// The mirrors of `image`, on a broker of `cluster`.
    pub fn new(image: &'a MetadataImage, cluster: ClusterIndex) -> Self {
        Self { image, cluster }
    }

    /// The mirrors in the image a broker lent one of its components.
    pub fn of(context: &BrokerContext<'a>) -> Self {
        Self::new(context.image, context.node_id.cluster())
    }

    /// The source cluster's bootstrap brokers of `mirror` (its `bootstrap.servers`).
    pub fn source_of(&self, mirror: &str) -> Option<Vec<NodeId>> {
        let value = self
            .image
            .configs
            .get(&ConfigResource::Mirror(mirror.to_owned()))?
            .get(BOOTSTRAP_SERVERS_CONFIG)?;
        parse_bootstrap_servers(value).ok()
    }

    /// The recorded source cluster id of `mirror` and the cluster its `bootstrap.servers`
    /// names now, when they differ ([`super::properties::source_cluster_changed`]).
    pub fn source_cluster_changed(&self, mirror: &str) -> Option<(String, ClusterIndex)> {
        let properties = self
            .image
            .configs
            .get(&ConfigResource::Mirror(mirror.to_owned()))?;
        super::properties::source_cluster_changed(properties)
    }

    /// The id of `mirror`'s source cluster: the one recorded at its creation, else (a mirror
    /// created without it) the cluster its `bootstrap.servers` names.
    pub fn source_cluster_id(&self, mirror: &str) -> Option<String> {
        let properties = self
            .image
            .configs
            .get(&ConfigResource::Mirror(mirror.to_owned()))?;
        properties
            .get(super::properties::SOURCE_CLUSTER_ID_CONFIG)
            .cloned()
            .or_else(|| {
                super::properties::cluster_id_of_bootstrap(
                    properties.get(BOOTSTRAP_SERVERS_CONFIG)?,
                )
            })
    }

    /// The failure and retry settings of `mirror` (the defaults for a mirror the image does not
    /// know; CreateMirror and AlterConfigs refuse unreadable ones).
    pub fn failure_settings(&self, mirror: &str) -> FailureSettings {
        self.image
            .configs
            .get(&ConfigResource::Mirror(mirror.to_owned()))
            .and_then(|properties| {
                FailureSettings::from_properties(|key| properties.get(key).map(String::as_str)).ok()
            })
            .unwrap_or_default()
    }

    /// The topics that want to be mirrored by `mirror` now (desired state MIRROR).
    pub fn active_topics(&self, mirror: &str) -> Vec<String> {
        self.image
            .topic_ids
            .keys()
            .filter(|topic| {
                matches!(self.image.mirror_desired_state(topic),
                    Some(DesiredState::Mirror { mirror: m }) if m == mirror)
            })
            .cloned()
            .collect()
    }

    /// The keys of every partition of `mirror`'s topics (whatever their desired state),
    /// grouped by the `__mirror_state` partition that holds them.
    pub fn keys_by_coordinator(&self, mirror: &str) -> BTreeMap<i32, Vec<MirrorPartitionId>> {
        let partitions = partition_count(self.image, MIRROR_STATE_TOPIC);
        let mut keys: BTreeMap<i32, Vec<MirrorPartitionId>> = BTreeMap::new();
        if partitions == 0 {
            return keys;
        }
        for (name, topic_id) in &self.image.topic_ids {
            let ours = self
                .image
                .mirror_desired_state(name)
                .is_some_and(|desired| desired.mirror() == mirror);
            if !ours {
                continue;
            }
            let count = self
                .image
                .topics
                .get(topic_id)
                .map_or(0, |topic| topic.partitions.len());
            for partition in 0..count as i32 {
                let id = MirrorPartitionId {
                    topic_id: *topic_id,
                    partition,
                };
                keys.entry(mirror_state_partition(mirror, &id, partitions))
                    .or_default()
                    .push(id);
            }
        }
        keys
    }

    /// The broker leading `__mirror_state` partition `coordinator_partition`.
    pub fn coordinator_of_partition(&self, coordinator_partition: i32) -> Option<NodeId> {
        let leader = self
            .image
            .partition(&TopicPartition::new(
                MIRROR_STATE_TOPIC,
                coordinator_partition,
            ))?
            .leader?;
        Some(NodeId::Broker(self.cluster, leader))
    }

    /// The `__mirror_state` partition holding the key (`mirror`, `id`) (`None` before the
    /// topic exists).
    pub fn state_partition_of(&self, mirror: &str, id: &MirrorPartitionId) -> Option<i32> {
        let partitions = partition_count(self.image, MIRROR_STATE_TOPIC);
        (partitions > 0).then(|| mirror_state_partition(mirror, id, partitions))
    }

    /// The coordinator broker of the key (`mirror`, `id`) and the `__mirror_state` partition
    /// holding it.
    pub fn coordinator_of(&self, mirror: &str, id: &MirrorPartitionId) -> Option<(NodeId, i32)> {
        let partition = self.state_partition_of(mirror, id)?;
        Some((self.coordinator_of_partition(partition)?, partition))
    }
}
