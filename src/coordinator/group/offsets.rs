//! OffsetCommit, OffsetFetch and DescribeGroups.

use super::*;
use crate::protocol::{CoordinatorResponse, LeaderEpoch, Offset};

impl GroupCoordinatorShard {
    pub(super) fn commit_error(
        &self,
        group_id: &str,
        member_id: &str,
        member_epoch: i32,
    ) -> Option<ErrorCode> {
        let group = self.groups.get(group_id);
        let has_members = group.is_some_and(|group| !group.members.is_empty());
        if member_epoch < 0 && !has_members {
            return None; // An admin or simple commit to an empty group.
        }
        if group.is_none() {
            return Some(ErrorCode::GroupIdNotFound);
        }
        if !self.is_live_member(group_id, member_id) {
            return Some(ErrorCode::UnknownMemberId);
        }
        let epoch = self.runtime[group_id][member_id].epoch;
        (epoch != Some(member_epoch)).then_some(ErrorCode::FencedMemberEpoch)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn handle_offset_commit(
        &mut self,
        env: &ShardEnv<'_>,
        from: NodeId,
        correlation_id: u64,
        group_id: String,
        member_id: String,
        member_epoch: i32,
        offsets: Vec<OffsetCommitEntry>,
        out: &mut Out,
    ) {
        let group_error = self
            .ownership_error(env, &group_id)
            .or_else(|| group_id.is_empty().then_some(ErrorCode::InvalidRequest))
            .or_else(|| self.commit_error(&group_id, &member_id, member_epoch));
        if let Some(error) = group_error {
            let results = offsets
                .into_iter()
                .map(|entry| (entry.topic_partition, error))
                .collect();
            out.responses.push((
                from,
                correlation_id,
                Response::Coordinator(CoordinatorResponse::OffsetCommit { results }),
            ));
            return;
        }
        let mut records = Vec::new();
        let mut results = Vec::new();
        for entry in offsets {
            if env.image.partition(&entry.topic_partition).is_none() {
                results.push((
                    entry.topic_partition,
                    Some(ErrorCode::UnknownTopicOrPartition),
                ));
                continue;
            }
            let topic_id = env
                .image
                .topic_ids
                .get(entry.topic_partition.topic.as_str())
                .copied();
            if entry.topic_id.is_some() && entry.topic_id != topic_id {
                // Meant for a topic since deleted; the name now has another id.
                results.push((entry.topic_partition, Some(ErrorCode::UnknownTopicId)));
                continue;
            }
            results.push((entry.topic_partition.clone(), None));
            records.push(GroupRecord::OffsetCommit {
                group_id: group_id.clone(),
                topic_partition: entry.topic_partition,
                offset: entry.offset.0,
                leader_epoch: entry.leader_epoch.0,
                metadata: entry.metadata,
                commit_timestamp_ms: env.now_ms,
                by_admin: member_epoch < 0,
                topic_id,
            });
        }
        let pending = PendingWrite::Commit {
            to: from,
            correlation_id,
            results,
        };
        if records.is_empty() {
            out.responses.push((
                from,
                correlation_id,
                commit_response(pending, ErrorCode::None),
            ));
        } else {
            self.write(records, pending, out);
        }
    }

    pub(super) fn handle_offset_fetch(
        &self,
        env: &ShardEnv<'_>,
        group_id: &str,
        partitions: Option<Vec<TopicPartition>>,
    ) -> Response {
        if let Some(error) = self.ownership_error(env, group_id) {
            return Response::Coordinator(CoordinatorResponse::OffsetFetch {
                error,
                offsets: Vec::new(),
            });
        }
        let committed = self.groups.get(group_id).map(|group| &group.offsets);
        let partitions = partitions.unwrap_or_else(|| {
            committed
                .map(|offsets| offsets.keys().cloned().collect())
                .unwrap_or_default()
        });
        let offsets = partitions
            .into_iter()
            .map(|topic_partition| {
                // An offset of a deleted topic, not yet tombstoned, is not the group's offset
                // of a topic created again under the name (KAFKA-19141's fetch-path check).
                let found = committed
                    .and_then(|offsets| offsets.get(&topic_partition))
                    .filter(|offset| offset.is_of_current_topic(env.image, &topic_partition.topic));
                CommittedOffset {
                    offset: Offset(found.map_or(-1, |offset| offset.offset)),
                    leader_epoch: LeaderEpoch(found.map_or(-1, |offset| offset.leader_epoch)),
                    metadata: found
                        .map(|offset| offset.metadata.clone())
                        .unwrap_or_default(),
                    error: ErrorCode::None,
                    topic_partition,
                }
            })
            .collect();
        Response::Coordinator(CoordinatorResponse::OffsetFetch {
            error: ErrorCode::None,
            offsets,
        })
    }

    /// Tombstones, in one write, every committed offset of every group that `doomed` picks.
    pub(super) fn delete_offsets_where(
        &mut self,
        doomed: impl Fn(&TopicPartition, &OffsetAndMetadata) -> bool,
        out: &mut Out,
    ) {
        let records: Vec<GroupRecord> = self
            .groups
            .iter()
            .flat_map(|(group_id, group)| {
                group
                    .offsets
                    .iter()
                    .filter(|(partition, offset)| doomed(partition, offset))
                    .map(|(partition, _)| GroupRecord::OffsetDeleted {
                        group_id: group_id.clone(),
                        topic_partition: partition.clone(),
                    })
            })
            .collect();
        if !records.is_empty() {
            self.write(records, PendingWrite::OffsetCleanup, out);
        }
    }

    /// On load: tombstones the offsets of topics deleted while no coordinator had the shard
    /// loaded. Kafka's `onPartitionsDeleted` reaches only the shards loaded when a broker
    /// applies the deletion, so a shard whose leader was failing over at that moment keeps
    /// them, and a topic created again under the name would be resumed at the deleted one's
    /// offsets; the recorded topic id tells them apart.
    pub(super) fn delete_offsets_of_deleted_topics(
        &mut self,
        image: &MetadataImage,
        out: &mut Out,
    ) {
        self.delete_offsets_where(
            |partition, offset| !offset.is_of_current_topic(image, &partition.topic),
            out,
        );
    }

    pub(super) fn handle_describe_groups(
        &self,
        env: &ShardEnv<'_>,
        group_ids: Vec<String>,
    ) -> Response {
        let group_ids = if group_ids.is_empty() {
            // Every group of this shard: no key to check, only whether the shard serves.
            if self.unloaded {
                return describe_error(ErrorCode::NotCoordinator);
            }
            if !self.loaded {
                return describe_error(ErrorCode::CoordinatorLoadInProgress);
            }
            self.group_ids()
        } else {
            if let Some(error) = group_ids
                .iter()
                .find_map(|group_id| self.ownership_error(env, group_id))
            {
                return describe_error(error);
            }
            group_ids
        };
        let groups = group_ids
            .into_iter()
            .map(|group_id| GroupDescription {
                state: self.group_state(&group_id).to_owned(),
                members: self.members(&group_id),
                group_id,
            })
            .collect();
        Response::Coordinator(CoordinatorResponse::DescribeGroups {
            error: ErrorCode::None,
            groups,
        })
    }

    pub(super) fn group_state(&self, group_id: &str) -> &'static str {
        let Some(group) = self.groups.get(group_id) else {
            return "Dead";
        };
        if group.members.is_empty() {
            return "Empty";
        }
        let reconciling = self.runtime[group_id]
            .values()
            .any(|member| member.epoch != Some(group.epoch) || !member.revoking.is_empty());
        if reconciling {
            "Reconciling"
        } else {
            "Stable"
        }
    }
}
