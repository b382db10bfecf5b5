//! The source side of PREPARING: answering another cluster's LastMirroredEpochLookup from
//! the mirror coordinator.

use super::*;
use crate::protocol::{
    CoordinatorRequest, CoordinatorResponse, LeaderEpoch, MirrorResponse, Offset,
};

impl MirrorManager {
    // ----- source side -----

    /// A LastMirroredEpochLookup from another cluster (`requester`, asking about `topic`'s
    /// `partition`, which it knows under `asked_id` if it names one), to answer to `from`
    /// under `correlation_id`; see the module doc.
    pub fn handle_last_mirrored_epoch_lookup(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        (from, correlation_id): (NodeId, u64),
        (requester, topic, partition, asked_id): (ClusterIndex, &str, i32, Option<TopicId>),
    ) {
        let known_id = host.image().topic_ids.get(topic).copied();
        let answer = |error, last_mirrored_epoch| {
            Response::Mirror(MirrorResponse::LastMirroredEpochLookup {
                error,
                last_mirrored_epoch,
                last_mirrored_offset: Offset::NONE,
                topic_id: known_id,
            })
        };
        // The mirrors here whose source is the requester; the topic's own (its `mirror.name`,
        // kept as `<mirror>.removed` after a stop) holds its state, whichever sorts first: a
        // second mirror from the same cluster with no record of the topic must not answer
        // "nothing mirrored" while the topic's mirror still mirrors from there (generator seed
        // 9960000000000058: a loop went unrefused and cut committed data on both sides).
        // A mirror's source is the cluster id recorded at its creation (spec §4.1: "mirrors
        // whose source cluster id == requester's"), whatever bootstrap.servers names since.
        let directory = MirrorDirectory::new(host.image(), host.node_id().cluster());
        let requester_id = requester.cluster_id();
        let from_requester: Vec<&String> = host
            .image()
            .configs
            .keys()
            .filter_map(|resource| match resource {
                ConfigResource::Mirror(name) => directory
                    .source_cluster_id(name)
                    .filter(|id| *id == requester_id)
                    .map(|_| name),
                _ => None,
            })
            .collect();
        let own = host
            .image()
            .mirror_desired_state(topic)
            .map(|desired| desired.mirror().to_owned());
        let mirror = own
            .filter(|own| from_requester.contains(&own))
            .or_else(|| from_requester.first().map(|name| (*name).clone()));
        let Some(topic_id) = known_id else {
            // No such topic here (deleted, or not yet in this broker's image): there is nothing
            // to align with, and −1 would have the requester mirror from scratch, cutting its
            // whole log, the only copy left of a deleted source topic's records.
            host.lend().outbox.respond(
                from,
                correlation_id,
                answer(ErrorCode::UnknownTopicOrPartition, LeaderEpoch::NONE),
            );
            return;
        };
        if asked_id.is_some_and(|asked| asked != topic_id) {
            // The asker mirrored another topic of this name (this one was deleted and created
            // again since): aligning it with this topic's history would cut its log for
            // records that were never its source's.
            host.lend().outbox.respond(
                from,
                correlation_id,
                answer(ErrorCode::UnknownTopicId, LeaderEpoch::NONE),
            );
            return;
        }
        let Some(mirror) = mirror else {
            host.lend().outbox.respond(
                from,
                correlation_id,
                answer(ErrorCode::None, LeaderEpoch::NONE),
            );
            return;
        };
        let task = MirrorTask {
            mirror: mirror.clone(),
            id: MirrorPartitionId {
                topic_id,
                partition,
            },
            desired: String::new(),
            wrote: false,
            fetch_not_before_ms: None,
            leader_epoch: LeaderEpoch(-1),
            state: MirrorState::Unknown,
            state_epoch: -1,
            previous_state: None,
            retry_attempt: 0,
            last_mirrored: None,
            step: Step::Idle,
            not_before_ms: now_ms,
            re_evaluate: false,
            preparing_resumed: false,
            own_writes_only: false,
            cut_decided: false,
            stop_own_writes_only: false,
            own_stop_wait_until_ms: None,
            fencing_bump: false,
            fence_minimum: None,
            transition_in_doubt: false,
            decide_after_write: false,
            verified_source_epoch: None,
            probe_log_end: false,
            tail_check_from: None,
            bump_before_append: false,
            generation: 0,
            source_confirmed_end: None,
            confirmed_by_takeover: false,
            waits_for_operator: false,
            source_topic: SourceTopicWatch::default(),
            source_waited_since_ms: None,
            stop_journal: Vec::new(),
        };
        let Some((coordinator, coordinator_partition)) =
            MirrorDirectory::new(host.image(), host.node_id().cluster())
                .coordinator_of(&task.mirror, &task.id)
        else {
            host.lend().outbox.respond(
                from,
                correlation_id,
                answer(ErrorCode::CoordinatorNotAvailable, LeaderEpoch::NONE),
            );
            return;
        };
        let request = Request::Coordinator(CoordinatorRequest::ReadMirrorStates {
            coordinator_partition,
            mirror,
            partitions: vec![task.id],
        });
        let what = SentRequest::LookupRead {
            reply_to: from,
            correlation_id,
            topic_id,
        };
        self.send_mirror_request(host, now_ms, coordinator, request, what);
    }

    pub(super) fn answer_lookup_from_coordinator(
        &mut self,
        host: &mut impl MirrorHost,
        (reply_to, correlation_id, topic_id): (NodeId, u64, TopicId),
        response: Result<Response, ErrorCode>,
    ) {
        let none = (LeaderEpoch::NONE, Offset::NONE);
        let (error, (last_mirrored_epoch, last_mirrored_offset)) = match response {
            Ok(Response::Coordinator(CoordinatorResponse::ReadMirrorStates {
                error: ErrorCode::None,
                partitions,
                ..
            })) => match partitions.first() {
                Some(status) if !status.error.is_none() => (status.error, none),
                Some(status)
                    if !matches!(status.state, MirrorState::Unknown | MirrorState::Stopped) =>
                {
                    (ErrorCode::InvalidClusterMirrorState, none)
                }
                Some(status) => (ErrorCode::None, status.last_mirrored.unwrap_or(none)),
                None => (ErrorCode::InvalidRequest, none),
            },
            Ok(Response::Coordinator(CoordinatorResponse::ReadMirrorStates { error, .. })) => {
                (error, none)
            }
            Ok(_) => (ErrorCode::InvalidRequest, none),
            Err(error) => (error, none),
        };
        host.lend().outbox.respond(
            reply_to,
            correlation_id,
            Response::Mirror(MirrorResponse::LastMirroredEpochLookup {
                error,
                last_mirrored_epoch,
                last_mirrored_offset,
                topic_id: Some(topic_id),
            }),
        );
    }
}
