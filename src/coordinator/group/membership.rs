//! ConsumerGroupHeartbeat (KIP-848): members join, heartbeat, leave, and reconcile towards
//! their target assignment.

use super::*;
use crate::protocol::CoordinatorResponse;

impl GroupCoordinatorShard {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn handle_heartbeat(
        &mut self,
        env: &ShardEnv<'_>,
        from: NodeId,
        correlation_id: u64,
        group_id: String,
        member_id: String,
        member_epoch: i32,
        subscribed_topics: Option<Vec<String>>,
        out: &mut Out,
    ) {
        let error_response = |error| {
            (
                from,
                correlation_id,
                heartbeat_error(&member_id, member_epoch, error),
            )
        };
        if let Some(error) = self.ownership_error(env, &group_id) {
            out.responses.push(error_response(error));
            return;
        }
        if group_id.is_empty() || member_epoch < -1 || (member_epoch != 0 && member_id.is_empty()) {
            out.responses
                .push(error_response(ErrorCode::InvalidRequest));
            return;
        }
        let subscribed_topics = subscribed_topics.map(normalize_topics);
        if member_epoch == 0 && member_id.is_empty() {
            let Some(topics) = subscribed_topics else {
                out.responses
                    .push(error_response(ErrorCode::InvalidRequest));
                return;
            };
            self.join(env, from, correlation_id, group_id, topics, out);
            return;
        }
        if !self.is_live_member(&group_id, &member_id) {
            out.responses
                .push(error_response(ErrorCode::UnknownMemberId));
            return;
        }
        if member_epoch == -1 {
            self.leave(from, correlation_id, group_id, member_id, out);
            return;
        }
        let group_epoch = self.group_epoch(&group_id);
        let session_deadline_ms = env.now_ms + self.config.session_timeout_ms;
        let member = self
            .member_runtime(&group_id, &member_id)
            .expect("checked live above");
        match member.epoch {
            _ if member_epoch == 0 => {
                // A rejoin: the member dropped everything it had.
                member.epoch = None;
                member.assigned.clear();
                member.revoking.clear();
            }
            Some(epoch) if epoch == member_epoch => member.revoking.clear(),
            // After a failover the member's epoch is unknown; any it could hold is accepted.
            None if member_epoch <= group_epoch => {}
            _ => {
                out.responses
                    .push(error_response(ErrorCode::FencedMemberEpoch));
                return;
            }
        }
        member.session_deadline_ms = Some(session_deadline_ms);
        let current_topics = &self.groups[&group_id].members[&member_id];
        // A full heartbeat (one with the subscription) gets the whole assignment: the member
        // sends one after a failed heartbeat, whose lost answer may have changed it.
        let full_request = member_epoch == 0 || subscribed_topics.is_some();
        match subscribed_topics {
            Some(topics) if &topics != current_topics => {
                let member_index = member_index_of(&group_id, &member_id);
                let record = GroupRecord::Member {
                    group_id: group_id.clone(),
                    member_id: member_id.clone(),
                    member_index,
                    subscribed_topics: topics,
                };
                let pending = PendingWrite::Heartbeat {
                    to: from,
                    correlation_id,
                    group_id,
                    member_id,
                    member_epoch,
                };
                self.write(vec![record], pending, out);
            }
            _ => {
                let response = self.reconcile(env, &group_id, &member_id, full_request);
                out.responses.push((from, correlation_id, response));
            }
        }
    }

    pub(super) fn join(
        &mut self,
        env: &ShardEnv<'_>,
        from: NodeId,
        correlation_id: u64,
        group_id: String,
        topics: Vec<String>,
        out: &mut Out,
    ) {
        let persisted = self
            .groups
            .get(&group_id)
            .map_or(0, |group| group.next_member_index);
        let allocated = self
            .allocated_member_index
            .entry(group_id.clone())
            .or_insert(0);
        let member_index = persisted.max(*allocated);
        *allocated = member_index + 1;
        // The counter alone repeats ids when the log lost the records that advanced it.
        let member_id = format!("{group_id}-member-{}-{member_index}", env.coordinator_epoch);
        let record = GroupRecord::Member {
            group_id: group_id.clone(),
            member_id: member_id.clone(),
            member_index,
            subscribed_topics: topics,
        };
        let pending = PendingWrite::Heartbeat {
            to: from,
            correlation_id,
            group_id,
            member_id,
            member_epoch: 0,
        };
        self.write(vec![record], pending, out);
    }

    pub(super) fn leave(
        &mut self,
        from: NodeId,
        correlation_id: u64,
        group_id: String,
        member_id: String,
        out: &mut Out,
    ) {
        self.member_runtime(&group_id, &member_id)
            .expect("a live member")
            .removing = true;
        let record = GroupRecord::MemberRemoved {
            group_id: group_id.clone(),
            member_id: member_id.clone(),
        };
        let pending = PendingWrite::Leave {
            to: from,
            correlation_id,
            group_id,
            member_id,
        };
        self.write(vec![record], pending, out);
    }

    /// Moves a member towards its target assignment and builds its heartbeat answer. `full`
    /// forces the assignment into the answer.
    pub(super) fn reconcile(
        &mut self,
        env: &ShardEnv<'_>,
        group_id: &str,
        member_id: &str,
        full: bool,
    ) -> Response {
        let group = &self.groups[group_id];
        let group_epoch = group.epoch;
        let target = range_assignment(&group.members, env.image)
            .remove(member_id)
            .unwrap_or_default();
        let members = self.runtime.get_mut(group_id).expect("a known group");
        // Partitions another member holds or may still hold.
        let reserved: BTreeSet<TopicPartition> = members
            .iter()
            .filter(|(id, _)| id.as_str() != member_id)
            .flat_map(|(_, other)| other.assigned.iter().chain(other.revoking.iter()))
            .cloned()
            .collect();
        let member = members.get_mut(member_id).expect("a known member");
        let full = full || member.epoch.is_none();
        let epoch_changes = member.epoch != Some(group_epoch);
        let mut assigned: BTreeSet<TopicPartition> = target
            .iter()
            .filter(|tp| member.assigned.contains(*tp) || !reserved.contains(*tp))
            .cloned()
            .collect();
        if epoch_changes {
            // Partitions are taken away only together with an epoch change, so that the
            // member's next heartbeat acknowledges it.
            let revoked = member.assigned.difference(&assigned).cloned();
            member.revoking.extend(revoked);
        } else {
            assigned.extend(member.assigned.iter().cloned());
        }
        let changed = assigned != member.assigned;
        member.assigned = assigned;
        member.epoch = Some(group_epoch);
        let assignment =
            (full || changed || epoch_changes).then(|| member.assigned.iter().cloned().collect());
        Response::Coordinator(CoordinatorResponse::ConsumerGroupHeartbeat {
            error: ErrorCode::None,
            member_id: member_id.to_owned(),
            member_epoch: group_epoch,
            heartbeat_interval_ms: self.config.heartbeat_interval_ms,
            assignment,
        })
    }
}
