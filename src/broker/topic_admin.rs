//! Topic administration on a broker: DeleteRecords at the partition leader, the admin entry
//! of DeleteTopics and CreatePartitions (checked against KIP-1279's mirror states, then
//! forwarded to the controller), and dropping the replicas of deleted topics.
//!
//! Contract:
//! - **DeleteRecords** (partition by partition, at the leader): not the leader →
//!   `NotLeaderOrFollower`; a mirror partition (its topic has `mirror.name`) that this leader
//!   has not seen STOPPED → `MirrorTopicNotStopped` (spec §3.8); an offset above the high
//!   watermark or below −1 → `OffsetOutOfRange`; otherwise the log start moves up to the
//!   offset (−1: the high watermark) and the answer carries the new log start. Followers follow
//!   the leader's log start through their fetches. (Kafka answers once every replica's low
//!   watermark has moved; this model answers at the leader.)
//! - **DeleteTopics / CreatePartitions** sent to a broker: topics that belong to a mirror
//!   (`mirror.name`) are checked first, as the prototype's brokers do: every partition's state
//!   is read from its mirror coordinator, and a topic with a partition that is neither STOPPED
//!   nor UNKNOWN (never mirrored; the controller refuses topics still to be mirrored), or that
//!   could not be read, is refused with `MirrorTopicNotStopped` (or the read's error) without
//!   reaching the controller. The other topics are forwarded to the controller in one
//!   request, and the answer merges both, in request order. Requests unanswered within
//!   [`TOPIC_ADMIN_TIMEOUT_MS`] count as `RequestTimedOut` for their topics.
//! - **Deleted topics**: once the image no longer has a replica's topic, the replica is dropped
//!   and its log directory deleted; so is a log found at start-up whose topic the caught-up
//!   image does not know (deleted while the broker was down).

use std::collections::{BTreeMap, BTreeSet};

use super::BrokerStorage;
use crate::coordinator::partition_count;
use crate::mirror::coordinator::{mirror_state_partition, MIRROR_STATE_TOPIC};
use crate::mirror::MirrorState;
use crate::mirror::TopicMirrorConfig;
use crate::protocol::{
    ErrorCode, MirrorPartitionId, NodeId, Request, Response, TopicId, TopicPartition,
};
use crate::switches::BrokenSwitch;

/// How long the admin entry waits for a coordinator or the controller.
pub const TOPIC_ADMIN_TIMEOUT_MS: i64 = 1_000;

/// A DeleteTopics or CreatePartitions being checked or forwarded.
#[derive(Debug, Clone)]
struct PendingTopicAdmin {
    reply_to: NodeId,
    correlation_id: u64,
    request: Request,
    /// Coordinator reads still expected.
    waiting: usize,
    /// Topics refused before forwarding, with why.
    refused: BTreeMap<String, ErrorCode>,
}

/// What a request of the entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// A coordinator read covering these topics.
    Check(Vec<String>),
    Forward,
}

/// The broker's admin entries in progress.
#[derive(Debug, Default)]
pub(super) struct TopicAdmins {
    pending: BTreeMap<u64, PendingTopicAdmin>,
    /// correlation id → (entry id, phase, sent at).
    requests: BTreeMap<u64, (u64, Phase, i64)>,
    next_id: u64,
}

impl TopicAdmins {
    /// The earliest request timeout.
    pub(super) fn deadline(&self) -> Option<i64> {
        self.requests
            .values()
            .map(|(_, _, sent_ms)| sent_ms + TOPIC_ADMIN_TIMEOUT_MS)
            .min()
    }

    /// Whether a request with this correlation id is an entry's.
    pub(super) fn owns(&self, correlation_id: u64) -> bool {
        self.requests.contains_key(&correlation_id)
    }
}

/// The topics a DeleteTopics or CreatePartitions names.
fn request_topics(request: &Request) -> Vec<String> {
    match request {
        Request::DeleteTopics { topics } => topics.clone(),
        Request::CreatePartitions { topics } => topics.iter().map(|(t, _)| t.clone()).collect(),
        _ => Vec::new(),
    }
}

/// The same request for `keep` only.
fn restrict(request: &Request, keep: &BTreeSet<String>) -> Request {
    match request {
        Request::DeleteTopics { topics } => Request::DeleteTopics {
            topics: topics
                .iter()
                .filter(|t| keep.contains(*t))
                .cloned()
                .collect(),
        },
        Request::CreatePartitions { topics } => Request::CreatePartitions {
            topics: topics
                .iter()
                .filter(|(t, _)| keep.contains(t))
                .cloned()
                .collect(),
        },
        other => other.clone(),
    }
}

/// The answer to `request` with per-topic `results` in request order.
fn answer(request: &Request, results: &BTreeMap<String, ErrorCode>) -> Response {
    let results = request_topics(request)
        .into_iter()
        .map(|topic| {
            let error = results
                .get(&topic)
                .copied()
                .unwrap_or(ErrorCode::RequestTimedOut);
            (topic, error)
        })
        .collect();
    match request {
        Request::CreatePartitions { .. } => Response::CreatePartitions { results },
        _ => Response::DeleteTopics { results },
    }
}

impl<S: BrokerStorage> super::Broker<S> {
    /// DeleteRecords; see the module doc.
    pub(super) fn handle_delete_records(
        &mut self,
        from: NodeId,
        correlation_id: u64,
        partitions: Vec<(TopicPartition, i64)>,
    ) {
        let results = partitions
            .into_iter()
            .map(|(tp, offset)| match self.delete_records(&tp, offset) {
                Ok(low_watermark) => (tp, ErrorCode::None, low_watermark),
                Err(error) => (tp, error, -1),
            })
            .collect();
        self.outbox
            .respond(from, correlation_id, Response::DeleteRecords { results });
    }

    fn delete_records(&mut self, tp: &TopicPartition, offset: i64) -> Result<i64, ErrorCode> {
        let (partition, _) = self.replicas.led_partition(tp, -1)?;
        let mirrored = self.image.mirror_desired_state(&tp.topic).is_some();
        let unchecked = self
            .config
            .broken
            .contains(&BrokenSwitch::MirrorTopicAdminUnchecked);
        if mirrored && partition.mirror_state != MirrorState::Stopped && !unchecked {
            return Err(ErrorCode::MirrorTopicNotStopped);
        }
        let mirror_state = mirrored.then_some(partition.mirror_state);
        let high_watermark = partition.log.high_watermark();
        let target = match offset {
            -1 => high_watermark,
            offset if (0..=high_watermark).contains(&offset) => offset,
            _ => return Err(ErrorCode::OffsetOutOfRange),
        };
        let log = &mut self
            .replicas
            .partitions_mut()
            .get_mut(tp)
            .expect("led above")
            .log;
        log.maybe_increment_log_start_offset(target)
            .map_err(|_| ErrorCode::KafkaStorageError)?;
        let log_start_offset = log.log_start_offset();
        self.events.push(super::BrokerEvent::RecordsDeleted {
            topic_partition: tp.clone(),
            log_start_offset,
            mirror_state,
        });
        Ok(log_start_offset)
    }

    /// DeleteTopics or CreatePartitions from an admin; see the module doc.
    pub(super) fn handle_topic_admin(
        &mut self,
        now_ms: i64,
        from: NodeId,
        correlation_id: u64,
        request: Request,
    ) {
        let id = self.topic_admins.next_id;
        self.topic_admins.next_id += 1;
        let mut pending = PendingTopicAdmin {
            reply_to: from,
            correlation_id,
            request,
            waiting: 0,
            refused: BTreeMap::new(),
        };
        let unchecked = self
            .config
            .broken
            .contains(&BrokenSwitch::MirrorTopicAdminUnchecked);
        let reads = if unchecked {
            Vec::new()
        } else {
            self.mirror_state_reads(&request_topics(&pending.request), &mut pending)
        };
        self.topic_admins.pending.insert(id, pending);
        for (to, request, topics) in reads {
            self.send_topic_admin_request(now_ms, id, to, request, Phase::Check(topics));
        }
        self.maybe_forward_topic_admin(now_ms, id);
    }

    /// The ReadMirrorStates covering every partition of the mirror topics among `topics`, by
    /// coordinator; a topic whose coordinator has no leader is refused at once.
    fn mirror_state_reads(
        &self,
        topics: &[String],
        pending: &mut PendingTopicAdmin,
    ) -> Vec<(NodeId, Request, Vec<String>)> {
        let state_partitions = partition_count(&self.image, MIRROR_STATE_TOPIC);
        let mut keys: BTreeMap<(i32, String), Vec<MirrorPartitionId>> = BTreeMap::new();
        for topic in topics {
            let (Some(desired), Some(topic_id)) = (
                self.image.mirror_desired_state(topic),
                self.image.topic_ids.get(topic),
            ) else {
                continue;
            };
            let count = self.image.topics[topic_id].partitions.len() as i32;
            for partition in 0..count {
                let id = MirrorPartitionId {
                    topic_id: *topic_id,
                    partition,
                };
                if state_partitions == 0 {
                    pending
                        .refused
                        .insert(topic.clone(), ErrorCode::CoordinatorNotAvailable);
                    break;
                }
                let coordinator = mirror_state_partition(desired.mirror(), &id, state_partitions);
                keys.entry((coordinator, desired.mirror().to_owned()))
                    .or_default()
                    .push(id);
            }
        }
        let mut reads = Vec::new();
        for ((coordinator_partition, mirror), partitions) in keys {
            let Some(to) = self
                .mirror_directory()
                .coordinator_of_partition(coordinator_partition)
            else {
                for id in &partitions {
                    let topic = self.topic_name(id.topic_id);
                    pending
                        .refused
                        .insert(topic, ErrorCode::CoordinatorNotAvailable);
                }
                continue;
            };
            let mut covered: Vec<String> = partitions
                .iter()
                .map(|id| self.topic_name(id.topic_id))
                .collect();
            covered.dedup();
            let request = Request::ReadMirrorStates {
                coordinator_partition,
                mirror,
                partitions,
            };
            reads.push((to, request, covered));
        }
        reads
    }

    fn topic_name(&self, topic_id: TopicId) -> String {
        self.image
            .topics
            .get(&topic_id)
            .map_or_else(String::new, |topic| topic.name.clone())
    }

    fn send_topic_admin_request(
        &mut self,
        now_ms: i64,
        id: u64,
        to: NodeId,
        request: Request,
        phase: Phase,
    ) {
        self.topic_admins
            .pending
            .get_mut(&id)
            .expect("requests are sent for live entries")
            .waiting += 1;
        let correlation_id = self.outbox.request(to, request);
        self.topic_admins
            .requests
            .insert(correlation_id, (id, phase, now_ms));
    }

    /// Once every check is in: forwards what is left, or answers.
    fn maybe_forward_topic_admin(&mut self, now_ms: i64, id: u64) {
        let pending = &self.topic_admins.pending[&id];
        if pending.waiting > 0 {
            return;
        }
        let accepted: BTreeSet<String> = request_topics(&pending.request)
            .into_iter()
            .filter(|topic| !pending.refused.contains_key(topic))
            .collect();
        if accepted.is_empty() {
            self.finish_topic_admin(id, BTreeMap::new());
            return;
        }
        let request = restrict(&pending.request, &accepted);
        self.events.push(super::BrokerEvent::TopicAdminForwarded {
            topics: accepted.into_iter().collect(),
        });
        let controller = self.controller;
        self.send_topic_admin_request(now_ms, id, controller, request, Phase::Forward);
    }

    fn finish_topic_admin(&mut self, id: u64, controller: BTreeMap<String, ErrorCode>) {
        let pending = self.topic_admins.pending.remove(&id).expect("live");
        let mut results = controller;
        results.extend(pending.refused);
        let response = answer(&pending.request, &results);
        self.outbox
            .respond(pending.reply_to, pending.correlation_id, response);
    }

    /// Expires the entries' requests.
    pub(super) fn poll_topic_admins(&mut self, now_ms: i64) {
        let expired: Vec<u64> = self
            .topic_admins
            .requests
            .iter()
            .filter(|(_, (_, _, sent_ms))| now_ms >= sent_ms + TOPIC_ADMIN_TIMEOUT_MS)
            .map(|(correlation_id, _)| *correlation_id)
            .collect();
        for correlation_id in expired {
            self.handle_topic_admin_response(
                now_ms,
                correlation_id,
                Err(ErrorCode::RequestTimedOut),
            );
        }
    }

    /// Routes an answer (or a timeout as `Err`) to its entry.
    pub(super) fn handle_topic_admin_response(
        &mut self,
        now_ms: i64,
        correlation_id: u64,
        response: Result<Response, ErrorCode>,
    ) {
        let Some((id, phase, _)) = self.topic_admins.requests.remove(&correlation_id) else {
            return;
        };
        if !self.topic_admins.pending.contains_key(&id) {
            return;
        }
        match phase {
            Phase::Check(topics) => {
                let refusals = self.check_refusals(&topics, response);
                let pending = self.topic_admins.pending.get_mut(&id).expect("checked");
                pending.waiting -= 1;
                for (topic, error) in refusals {
                    pending.refused.entry(topic).or_insert(error);
                }
                self.maybe_forward_topic_admin(now_ms, id);
            }
            Phase::Forward => {
                let results = match response {
                    Ok(
                        Response::DeleteTopics { results } | Response::CreatePartitions { results },
                    ) => results.into_iter().collect(),
                    // NotController, a timeout: every forwarded topic gets it (retriable).
                    Ok(_) => BTreeMap::new(),
                    Err(error) => {
                        let pending = &self.topic_admins.pending[&id];
                        request_topics(&pending.request)
                            .into_iter()
                            .map(|topic| (topic, error))
                            .collect()
                    }
                };
                self.finish_topic_admin(id, results);
            }
        }
    }

    /// The topics a coordinator's answer refuses: a partition not STOPPED or unreadable; every
    /// topic the read covered when the read itself failed.
    fn check_refusals(
        &self,
        topics: &[String],
        response: Result<Response, ErrorCode>,
    ) -> Vec<(String, ErrorCode)> {
        match response {
            Ok(Response::ReadMirrorStates {
                error: ErrorCode::None,
                partitions,
                ..
            }) => partitions
                .iter()
                .filter_map(|status| {
                    let error = if !status.error.is_none() {
                        status.error
                    } else if !matches!(status.state, MirrorState::Stopped | MirrorState::Unknown) {
                        ErrorCode::MirrorTopicNotStopped
                    } else {
                        return None;
                    };
                    Some((self.topic_name(status.id.topic_id), error))
                })
                .collect(),
            Ok(Response::ReadMirrorStates { error, .. }) => {
                topics.iter().map(|topic| (topic.clone(), error)).collect()
            }
            Ok(_) => topics
                .iter()
                .map(|topic| (topic.clone(), ErrorCode::InvalidRequest))
                .collect(),
            Err(error) => topics.iter().map(|topic| (topic.clone(), error)).collect(),
        }
    }
}
