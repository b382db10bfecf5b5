//! DeleteTopics and CreatePartitions on the controller.
//!
//! Contract:
//! - **DeleteTopics**, topic by topic: an unknown topic is `UnknownTopicOrPartition`; an
//!   internal topic (`__` prefix) `InvalidRequest`; a topic a mirror still mirrors or pauses
//!   (`mirror.name` without `.removed`) `MirrorTopicNotStopped` (KIP-1279 §3.8: brokers also
//!   check that every partition is STOPPED before they forward, which the controller cannot
//!   see). Otherwise one `RemoveTopic` record deletes the topic with its partitions and
//!   configs; brokers drop its replicas and delete their logs when they apply it.
//! - **CreatePartitions**, topic by topic: unknown → `UnknownTopicOrPartition`; internal →
//!   `InvalidRequest`; a count not above the current one, or above the configured maximum →
//!   `InvalidPartitions`; a mirror topic that is not `.removed` → `MirrorTopicNotStopped`;
//!   fewer live brokers than the topic's replication factor (its first partition's) →
//!   `InvalidReplicationFactor`. New partitions get replicas the way CreateTopics places them,
//!   leader epoch 0 and the full replica set as ISR.
//! - **GrowMirrorTopics** (a mirror's periodic sync): the same for the mirror's own topics
//!   (mirrored or paused by it), which an admin's CreatePartitions may not grow; another
//!   mirror's topic, or one in none, is `InvalidClusterMirrorState`.

use super::placement::assign_replicas;
use super::{Controller, ControllerError};
use crate::log::LogDisk;
use crate::metadata::{MetadataRecord, PartitionRecord};
use crate::mirror::DesiredState;
use crate::mirror::TopicMirrorConfig;
use crate::protocol::{ClusterResponse, ControllerResponse, ErrorCode, Response};

impl<D: LogDisk> Controller<D> {
    /// Why a mirror topic may not be deleted or grown now, if it may not.
    fn mirror_topic_refusal(&self, topic: &str) -> Option<ErrorCode> {
        match self.image.mirror_desired_state(topic) {
            Some(DesiredState::Mirror { .. } | DesiredState::Paused { .. }) => {
                Some(ErrorCode::MirrorTopicNotStopped)
            }
            Some(DesiredState::Stopped { .. }) | None => None,
        }
    }

    pub(super) fn handle_delete_topics(
        &mut self,
        topics: &[String],
    ) -> Result<Response, ControllerError> {
        let mut results = Vec::with_capacity(topics.len());
        for topic in topics {
            let error = match self.image.topic_ids.get(topic).copied() {
                None => ErrorCode::UnknownTopicOrPartition,
                Some(_) if topic.starts_with("__") => ErrorCode::InvalidRequest,
                Some(topic_id) => match self.mirror_topic_refusal(topic) {
                    Some(error) => error,
                    None => {
                        self.stage(MetadataRecord::RemoveTopic { topic_id });
                        ErrorCode::None
                    }
                },
            };
            results.push((topic.clone(), error));
        }
        self.commit()?;
        Ok(Response::Cluster(ClusterResponse::DeleteTopics { results }))
    }

    pub(super) fn handle_create_partitions(
        &mut self,
        topics: &[(String, i32)],
    ) -> Result<Response, ControllerError> {
        let mut results = Vec::with_capacity(topics.len());
        for (topic, count) in topics {
            let error = match self.stage_new_partitions(topic, *count, None) {
                Ok(()) => ErrorCode::None,
                Err(error) => error,
            };
            results.push((topic.clone(), error));
        }
        self.commit()?;
        Ok(Response::Cluster(ClusterResponse::CreatePartitions {
            results,
        }))
    }

    /// GrowMirrorTopics from `mirror`'s periodic sync: each topic the mirror mirrors or
    /// pauses grows to its source's partition count (a count not above the current one is
    /// `InvalidPartitions`: the sync's view was older); a topic of another mirror, or of none,
    /// is `InvalidClusterMirrorState`.
    pub(super) fn handle_grow_mirror_topics(
        &mut self,
        mirror: &str,
        topics: &[(String, i32)],
    ) -> Result<Response, ControllerError> {
        let results = topics
            .iter()
            .map(|(topic, count)| {
                let error = match self.stage_new_partitions(topic, *count, Some(mirror)) {
                    Ok(()) => ErrorCode::None,
                    Err(error) => error,
                };
                (topic.clone(), error)
            })
            .collect();
        self.commit()?;
        Ok(Response::Controller(ControllerResponse::GrowMirrorTopics {
            error: ErrorCode::None,
            results,
        }))
    }

    /// Stages the partitions that grow `topic` to `count`; `grown_by`: the mirror whose sync
    /// asks (it may grow its own mirror topics, which an admin may not).
    fn stage_new_partitions(
        &mut self,
        topic: &str,
        count: i32,
        grown_by: Option<&str>,
    ) -> Result<(), ErrorCode> {
        let topic_id = *self
            .image
            .topic_ids
            .get(topic)
            .ok_or(ErrorCode::UnknownTopicOrPartition)?;
        if topic.starts_with("__") {
            return Err(ErrorCode::InvalidRequest);
        }
        let current = self.image.topics[&topic_id].partitions.len() as i32;
        if count <= current || count > self.config.topic_partition_count_max {
            return Err(ErrorCode::InvalidPartitions);
        }
        match grown_by {
            None => {
                if let Some(error) = self.mirror_topic_refusal(topic) {
                    return Err(error);
                }
            }
            Some(mirror) => match self.image.mirror_desired_state(topic) {
                Some(desired @ (DesiredState::Mirror { .. } | DesiredState::Paused { .. }))
                    if desired.mirror() == mirror => {}
                _ => return Err(ErrorCode::InvalidClusterMirrorState),
            },
        }
        let replication_factor = self.image.topics[&topic_id]
            .partitions
            .values()
            .next()
            .map_or(1, |partition| partition.replicas.len());
        let live_brokers = self.image.live_brokers();
        if replication_factor > live_brokers.len() {
            return Err(ErrorCode::InvalidReplicationFactor);
        }
        // The placement of a topic of `count` partitions, of which the new ones are taken.
        let assignment = assign_replicas(&live_brokers, count, replication_factor, topic_id);
        for (partition, replicas) in assignment.into_iter().enumerate().skip(current as usize) {
            self.stage(MetadataRecord::Partition(PartitionRecord {
                topic_id,
                partition: partition as i32,
                isr: replicas.clone(),
                leader: Some(replicas[0]),
                replicas,
                leader_epoch: 0,
                partition_epoch: 0,
                eligible_leader_replicas: Vec::new(),
                last_known_elr: Vec::new(),
            }));
        }
        Ok(())
    }
}
