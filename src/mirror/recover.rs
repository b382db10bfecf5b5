//! RecoverMirrorTopics on a destination broker (the late revision's `--recover`, spec §3.6):
//! FAILED partitions of a mirror's topics get a fresh budget of retries. A broker component
//! ([`crate::component`]): the broker hands it every RecoverMirrorTopics, every answer it
//! [`owns`](MirrorRecoveries::owns), and a `poll` at its [`deadline`](MirrorRecoveries::deadline).
//!
//! Contract:
//! - An unknown mirror is `ClusterMirrorNotFound` for the whole request. A topic this broker's
//!   image does not know is `UnknownTopicOrPartition`, one whose `mirror.name` names another
//!   mirror (or none) `InvalidClusterMirrorState`.
//! - For the other topics the broker reads every partition's state from its mirror
//!   coordinator, then rewrites each FAILED one as the state its retry goes to
//!   ([`retry_target`] with retries left: PREPARING, or STOPPING when it failed while
//!   stopping or its topic has been removed), with `recover` set, so that the coordinator
//!   clears the retry count and error; the write carries the state epoch it read, so a
//!   partition its leader moved on meanwhile is not overwritten (`FencedStateEpoch` for its
//!   topic; the admin may send the recovery again). A partition that is not FAILED is left
//!   alone and counts as done (the prototype's "already healthy").
//! - The leader learns of the recovery from the coordinator: its own next write is fenced by
//!   the new state epoch and it reads the state again, and a leader whose partition had no
//!   retry left reads it again every maximum backoff (see `manager`'s FAILED).
//! - The answer lists, per topic in request order, `None` or the first error met on its
//!   partitions (a read or write that failed, or went unanswered within
//!   [`RECOVER_REQUEST_TIMEOUT_MS`]: `RequestTimedOut`, and the write may have landed), and
//!   the partitions recovered (in topic and partition order).

use std::collections::BTreeMap;

use super::directory::MirrorDirectory;
use super::state::DesiredState;
use super::{retry_target, MirrorState, TopicMirrorConfig};
use crate::component::{BrokerContext, RequestsInFlight};
use crate::events::BrokerEvent;
use crate::metadata::ConfigResource;
use crate::protocol::{
    CoordinatorRequest, CoordinatorResponse, ErrorCode, LeaderEpoch, MirrorPartitionId,
    MirrorPartitionStatus, MirrorResponse, MirrorStateWrite, NodeId, Request, Response,
    TopicPartition,
};

/// How long a recovery waits for a coordinator's answer.
pub const RECOVER_REQUEST_TIMEOUT_MS: i64 = 1_000;

/// One RecoverMirrorTopics being answered.
#[derive(Debug, Clone)]
struct PendingRecovery {
    reply_to: NodeId,
    correlation_id: u64,
    mirror: String,
    /// Per topic, in request order: its error so far.
    topics: Vec<(String, ErrorCode)>,
    /// The partitions of the checked topics, by key.
    partitions: BTreeMap<MirrorPartitionId, TopicPartition>,
    recovered: Vec<TopicPartition>,
    waiting: usize,
}

impl PendingRecovery {
    /// Records `error` for the topic of `id` unless it already has one.
    fn topic_failed(&mut self, id: &MirrorPartitionId, error: ErrorCode) {
        let Some(topic_partition) = self.partitions.get(id) else {
            return;
        };
        let topic = topic_partition.topic.as_str();
        if let Some((_, topic_error)) = self.topics.iter_mut().find(|(name, _)| name == topic) {
            if topic_error.is_none() {
                *topic_error = error;
            }
        }
    }
}

/// What a recovery's request was.
#[derive(Debug, Clone)]
enum Phase {
    Read(Vec<MirrorPartitionId>),
    Write(Vec<MirrorPartitionId>),
}

/// The broker's recoveries in progress; see the module doc.
#[derive(Debug, Default)]
pub struct MirrorRecoveries {
    pending: BTreeMap<u64, PendingRecovery>,
    /// correlation id → (recovery id, phase).
    requests: RequestsInFlight<(u64, Phase), RECOVER_REQUEST_TIMEOUT_MS>,
    next_id: u64,
}

impl MirrorRecoveries {
    /// The earliest request timeout.
    pub fn deadline(&self) -> Option<i64> {
        self.requests.deadline()
    }

    /// Whether a request with this correlation id is a recovery's.
    pub fn owns(&self, correlation_id: u64) -> bool {
        self.requests.owns(correlation_id)
    }

    /// A RecoverMirrorTopics from an admin; see the module doc.
    pub fn handle_recover(
        &mut self,
        ctx: &mut BrokerContext<'_>,
        from: NodeId,
        correlation_id: u64,
        mirror: String,
        topics: Vec<String>,
    ) {
        if !ctx
            .image
            .configs
            .contains_key(&ConfigResource::Mirror(mirror.clone()))
        {
            let response = Response::Mirror(MirrorResponse::RecoverMirrorTopics {
                error: ErrorCode::ClusterMirrorNotFound,
                results: Vec::new(),
                recovered: Vec::new(),
            });
            ctx.outbox.respond(from, correlation_id, response);
            return;
        }
        let id = self.next_id;
        self.next_id += 1;
        let mut pending = PendingRecovery {
            reply_to: from,
            correlation_id,
            mirror: mirror.clone(),
            topics: Vec::new(),
            partitions: BTreeMap::new(),
            recovered: Vec::new(),
            waiting: 0,
        };
        for topic in topics {
            let error = topic_error(ctx, &mirror, &topic);
            if error.is_none() {
                for (key, topic_partition) in topic_keys(ctx, &topic) {
                    pending.partitions.insert(key, topic_partition);
                }
            }
            pending.topics.push((topic, error));
        }
        let keys: Vec<MirrorPartitionId> = pending.partitions.keys().copied().collect();
        self.pending.insert(id, pending);
        for (coordinator_partition, ids) in by_coordinator(ctx, &mirror, &keys) {
            let request = Request::Coordinator(CoordinatorRequest::ReadMirrorStates {
                coordinator_partition,
                mirror: mirror.clone(),
                partitions: ids.clone(),
            });
            self.send(ctx, id, coordinator_partition, request, Phase::Read(ids));
        }
        self.maybe_answer(ctx, id);
    }

    /// Expires requests.
    pub fn poll(&mut self, ctx: &mut BrokerContext<'_>) {
        for correlation_id in self.requests.expired(ctx.now_ms) {
            self.handle_response(ctx, correlation_id, Err(ErrorCode::RequestTimedOut));
        }
    }

    /// Routes an answer (or a timeout as `Err`) to its recovery.
    pub fn handle_response(
        &mut self,
        ctx: &mut BrokerContext<'_>,
        correlation_id: u64,
        response: Result<Response, ErrorCode>,
    ) {
        let Some((id, phase)) = self.requests.remove(correlation_id) else {
            return;
        };
        let Some(pending) = self.pending.get_mut(&id) else {
            return;
        };
        pending.waiting -= 1;
        match (phase, response) {
            (
                Phase::Read(_),
                Ok(Response::Coordinator(CoordinatorResponse::ReadMirrorStates {
                    error,
                    partitions,
                    ..
                })),
            ) if error.is_none() => {
                let mut writes = Vec::new();
                for status in partitions {
                    if !status.error.is_none() {
                        pending.topic_failed(&status.id, status.error);
                    } else if status.state == MirrorState::Failed {
                        let topic = pending.partitions[&status.id].topic.to_string();
                        if let Some(target) = recovery_target(ctx, &topic, status.previous_state) {
                            writes.push(recovery_write(&status, target));
                        }
                    }
                }
                self.write_recoveries(ctx, id, writes);
            }
            (
                Phase::Write(_),
                Ok(Response::Coordinator(CoordinatorResponse::WriteMirrorStates {
                    error,
                    partitions,
                })),
            ) if error.is_none() => {
                for (key, partition_error, _) in partitions {
                    if partition_error.is_none() {
                        let topic_partition = pending.partitions[&key].clone();
                        ctx.events.push(BrokerEvent::MirrorPartitionRecovered {
                            topic_partition: topic_partition.clone(),
                        });
                        pending.recovered.push(topic_partition);
                    } else {
                        pending.topic_failed(&key, partition_error);
                    }
                }
            }
            (Phase::Read(ids) | Phase::Write(ids), answer) => {
                let error = match answer {
                    Ok(Response::Coordinator(
                        CoordinatorResponse::ReadMirrorStates { error, .. }
                        | CoordinatorResponse::WriteMirrorStates { error, .. },
                    )) if !error.is_none() => error,
                    Ok(_) => ErrorCode::InvalidRequest,
                    Err(error) => error,
                };
                for key in &ids {
                    pending.topic_failed(key, error);
                }
            }
        }
        self.maybe_answer(ctx, id);
    }

    /// Sends the recovery writes, one request per coordinator.
    fn write_recoveries(
        &mut self,
        ctx: &mut BrokerContext<'_>,
        id: u64,
        writes: Vec<MirrorStateWrite>,
    ) {
        let mirror = self.pending[&id].mirror.clone();
        let keys: Vec<MirrorPartitionId> = writes.iter().map(|write| write.id).collect();
        for (coordinator_partition, ids) in by_coordinator(ctx, &mirror, &keys) {
            let batch: Vec<MirrorStateWrite> = writes
                .iter()
                .filter(|write| ids.contains(&write.id))
                .cloned()
                .collect();
            let request = Request::Coordinator(CoordinatorRequest::WriteMirrorStates {
                coordinator_partition,
                mirror: mirror.clone(),
                writes: batch,
            });
            self.send(ctx, id, coordinator_partition, request, Phase::Write(ids));
        }
    }

    /// Sends a request to the coordinator of `coordinator_partition`; without one known, its
    /// partitions' topics fail with `CoordinatorNotAvailable`.
    fn send(
        &mut self,
        ctx: &mut BrokerContext<'_>,
        id: u64,
        coordinator_partition: i32,
        request: Request,
        phase: Phase,
    ) {
        let pending = self.pending.get_mut(&id).expect("live recovery");
        let Some(coordinator) =
            MirrorDirectory::of(ctx).coordinator_of_partition(coordinator_partition)
        else {
            let (Phase::Read(ids) | Phase::Write(ids)) = &phase;
            for key in ids {
                pending.topic_failed(key, ErrorCode::CoordinatorNotAvailable);
            }
            return;
        };
        pending.waiting += 1;
        let correlation_id = ctx.outbox.request(coordinator, request);
        self.requests
            .insert(correlation_id, (id, phase), ctx.now_ms);
    }

    fn maybe_answer(&mut self, ctx: &mut BrokerContext<'_>, id: u64) {
        if self.pending[&id].waiting > 0 {
            return;
        }
        let mut pending = self.pending.remove(&id).expect("live recovery");
        pending.recovered.sort();
        let response = Response::Mirror(MirrorResponse::RecoverMirrorTopics {
            error: ErrorCode::None,
            results: pending.topics,
            recovered: pending.recovered,
        });
        ctx.outbox
            .respond(pending.reply_to, pending.correlation_id, response);
    }
}

/// Why `topic` cannot be recovered in `mirror`, or `None`.
fn topic_error(ctx: &BrokerContext<'_>, mirror: &str, topic: &str) -> ErrorCode {
    if !ctx.image.topic_ids.contains_key(topic) {
        return ErrorCode::UnknownTopicOrPartition;
    }
    match ctx.image.mirror_desired_state(topic) {
        Some(desired) if desired.mirror() == mirror => ErrorCode::None,
        _ => ErrorCode::InvalidClusterMirrorState,
    }
}

/// Every partition of `topic` with its mirror key.
fn topic_keys(ctx: &BrokerContext<'_>, topic: &str) -> Vec<(MirrorPartitionId, TopicPartition)> {
    let topic_id = ctx.image.topic_ids[topic];
    (0..crate::coordinator::partition_count(ctx.image, topic))
        .map(|partition| {
            (
                MirrorPartitionId {
                    topic_id,
                    partition,
                },
                TopicPartition::new(topic.to_owned(), partition),
            )
        })
        .collect()
}

/// `keys` grouped by the `__mirror_state` partition holding them (keys whose partition is
/// not known yet are left out; their topics then stay `None`, as nothing was found FAILED).
fn by_coordinator(
    ctx: &BrokerContext<'_>,
    mirror: &str,
    keys: &[MirrorPartitionId],
) -> BTreeMap<i32, Vec<MirrorPartitionId>> {
    let directory = MirrorDirectory::of(ctx);
    let mut grouped: BTreeMap<i32, Vec<MirrorPartitionId>> = BTreeMap::new();
    for key in keys {
        if let Some(coordinator_partition) = directory.state_partition_of(mirror, key) {
            grouped.entry(coordinator_partition).or_default().push(*key);
        }
    }
    grouped
}

/// Where a FAILED partition of `topic` is recovered to, with a fresh budget of retries.
fn recovery_target(
    ctx: &BrokerContext<'_>,
    topic: &str,
    previous_state: Option<MirrorState>,
) -> Option<MirrorState> {
    let desired: DesiredState = ctx.image.mirror_desired_state(topic)?;
    retry_target(previous_state, &desired, true)
}

/// The write that recovers the partition read as `status` to `target`. It keeps the stored
/// `own_writes_only` (a log that holds this cluster's own writes only must still be stopped
/// without a MIRROR_PID_RESET after its recovery).
fn recovery_write(status: &MirrorPartitionStatus, target: MirrorState) -> MirrorStateWrite {
    MirrorStateWrite {
        source_topic_id: None,
        id: status.id,
        state: Some(target),
        leader_epoch: LeaderEpoch::NONE,
        state_epoch: status.state_epoch,
        error_message: None,
        non_retryable: false,
        last_mirrored: None,
        own_writes_only: status.own_writes_only,
        recover: true,
    }
}
