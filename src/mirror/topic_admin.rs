//! The broker's admin entries of DeleteTopics, CreatePartitions and AddTopicsToMirror, a
//! broker component: checked against KIP-1279's mirror states, then forwarded to the
//! controller.
//!
//! Contract:
//! - **DeleteTopics / CreatePartitions** sent to a broker: topics that belong to a mirror
//!   (`mirror.name`) are checked first, as the prototype's brokers do: every partition's state
//!   is read from its mirror coordinator, and a topic with a partition that is neither STOPPED
//!   nor UNKNOWN (never mirrored; the controller refuses topics still to be mirrored), or that
//!   could not be read, is refused with `MirrorTopicNotStopped` (or the read's error) without
//!   reaching the controller. The other topics are forwarded to the controller in one
//!   request, and the answer merges both, in request order. Requests unanswered within
//!   [`TOPIC_ADMIN_TIMEOUT_MS`] count as `RequestTimedOut` for their topics.
//! - **AddTopicsToMirror** the same way, for the topics a mirror removed (`<m>.removed`, in
//!   this broker's image): every partition's state in mirror `m` must be STOPPED or UNKNOWN
//!   (the prototype's broker-side validation), else `MirrorTopicNotStopped`. (The prototype
//!   answers `INVALID_CLUSTER_MIRROR_STATE`; this model keeps that for "already in a mirror"
//!   and says what to wait for, which also lets an admin that retried tell a refusal from its
//!   own earlier attempt having added the topic.) Without it a
//!   topic whose stop has not run yet (its leader fenced or cut off) could join another
//!   mirror and be removed from it again; the new mirror's state reads UNKNOWN, so its leader
//!   would take the partition as never mirrored and skip the stop, keeping the first
//!   mirror's producer state (generated seed 10500000000000289, `no-stale-pid-after-stopped`).
//!   The forward names each checked topic with the mirror it was checked in
//!   (`checked_stopped`); the controller adds a removed topic only if that mirror is still
//!   the one that removed it, so a check made on a stale image cannot let one through. A
//!   whole-request error of the controller (`ClusterMirrorNotFound`, `NotController`) is
//!   relayed as it came. The `add-unchecked` design skips the reads and names every removed
//!   topic as checked (the seed's controller-only validation).
//! - Each call gets a [`BrokerContext`]; the broker routes the requests, the answers to the
//!   entry's own requests ([`TopicAdmins::owns`]) and merges its [`TopicAdmins::deadline`].
//! - `MirrorTopicAdminUnchecked` (a broken switch) skips the DeleteTopics / CreatePartitions
//!   check on purpose.

use std::collections::{BTreeMap, BTreeSet};

use crate::component::{BrokerContext, RequestsInFlight};
use crate::coordinator::partition_count;
use crate::events::BrokerEvent;
use crate::metadata::MetadataImage;
use crate::mirror::coordinator::{mirror_state_partition, MIRROR_STATE_TOPIC};
use crate::mirror::directory::MirrorDirectory;
use crate::mirror::state::DesiredState;
use crate::mirror::{MirrorState, TopicMirrorConfig};
use crate::protocol::{
    ClusterRequest, ClusterResponse, ControllerRequest, ControllerResponse, CoordinatorRequest,
    CoordinatorResponse, ErrorCode, MirrorPartitionId, MirrorRequest, MirrorResponse,
    MirrorTopicOperation, NodeId, Request, Response, TopicId,
};

/// How long the admin entry waits for a coordinator or the controller.
pub const TOPIC_ADMIN_TIMEOUT_MS: i64 = 1_000;

/// A DeleteTopics, CreatePartitions or AddTopicsToMirror being checked or forwarded.
#[derive(Debug, Clone)]
struct PendingTopicAdmin {
    reply_to: NodeId,
    correlation_id: u64,
    request: Request,
    /// Coordinator reads still expected.
    waiting: usize,
    /// Topics refused before forwarding, with why.
    refused: BTreeMap<String, ErrorCode>,
    /// AddTopicsToMirror: each removed topic with the mirror whose states it is checked in.
    checked_stopped: Vec<(String, String)>,
    /// The controller's whole-request error, relayed (AddTopicsToMirror).
    error: ErrorCode,
}

/// What a request of the entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// A coordinator read covering these topics.
    Check(Vec<String>),
    Forward,
}

/// The broker's admin entries in progress; see the module doc.
#[derive(Debug, Default)]
pub struct TopicAdmins {
    pending: BTreeMap<u64, PendingTopicAdmin>,
    /// correlation id → (entry id, phase, sent at).
    requests: RequestsInFlight<(u64, Phase), TOPIC_ADMIN_TIMEOUT_MS>,
    next_id: u64,
    /// Skip the DeleteTopics / CreatePartitions check (`MirrorTopicAdminUnchecked`).
    unchecked: bool,
    /// Skip AddTopicsToMirror's check (the `add-unchecked` design).
    add_unchecked: bool,
}

impl TopicAdmins {
    /// An admin entry; `unchecked` skips the DeleteTopics / CreatePartitions check (a broken
    /// switch), `add_unchecked` AddTopicsToMirror's (a design).
    pub fn new(unchecked: bool, add_unchecked: bool) -> Self {
        Self {
            unchecked,
            add_unchecked,
            ..Self::default()
        }
    }

    /// The earliest request timeout.
    pub fn deadline(&self) -> Option<i64> {
        self.requests.deadline()
    }

    /// Whether a request with this correlation id is an entry's.
    pub fn owns(&self, correlation_id: u64) -> bool {
        self.requests.owns(correlation_id)
    }
}

/// The topics a DeleteTopics, CreatePartitions or AddTopicsToMirror names.
fn request_topics(request: &Request) -> Vec<String> {
    match request {
        Request::Cluster(ClusterRequest::DeleteTopics { topics })
        | Request::Mirror(MirrorRequest::AddTopicsToMirror { topics, .. }) => topics.clone(),
        Request::Cluster(ClusterRequest::CreatePartitions { topics }) => {
            topics.iter().map(|(t, _)| t.clone()).collect()
        }
        _ => Vec::new(),
    }
}

/// The request to forward to the controller for `keep` only.
fn restrict(pending: &PendingTopicAdmin, keep: &BTreeSet<String>) -> Request {
    match &pending.request {
        Request::Mirror(MirrorRequest::AddTopicsToMirror {
            mirror,
            topics,
            include_patterns,
        }) => Request::Controller(ControllerRequest::AlterMirrorTopics {
            mirror: mirror.clone(),
            operation: MirrorTopicOperation::Add,
            topics: topics
                .iter()
                .filter(|t| keep.contains(*t))
                .cloned()
                .collect(),
            checked_stopped: pending
                .checked_stopped
                .iter()
                .filter(|(t, _)| keep.contains(t))
                .cloned()
                .collect(),
            include_patterns: include_patterns.clone(),
        }),
        Request::Cluster(ClusterRequest::DeleteTopics { topics }) => {
            Request::Cluster(ClusterRequest::DeleteTopics {
                topics: topics
                    .iter()
                    .filter(|t| keep.contains(*t))
                    .cloned()
                    .collect(),
            })
        }
        Request::Cluster(ClusterRequest::CreatePartitions { topics }) => {
            Request::Cluster(ClusterRequest::CreatePartitions {
                topics: topics
                    .iter()
                    .filter(|(t, _)| keep.contains(t))
                    .cloned()
                    .collect(),
            })
        }
        other => other.clone(),
    }
}

/// The answer to `pending` with per-topic `results` in request order.
fn answer(pending: &PendingTopicAdmin, results: &BTreeMap<String, ErrorCode>) -> Response {
    let request = &pending.request;
    if !pending.error.is_none() {
        return Response::Mirror(MirrorResponse::AddTopicsToMirror {
            error: pending.error,
            results: Vec::new(),
        });
    }
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
        Request::Cluster(ClusterRequest::CreatePartitions { .. }) => {
            Response::Cluster(ClusterResponse::CreatePartitions { results })
        }
        Request::Mirror(MirrorRequest::AddTopicsToMirror { .. }) => {
            Response::Mirror(MirrorResponse::AddTopicsToMirror {
                error: ErrorCode::None,
                results,
            })
        }
        _ => Response::Cluster(ClusterResponse::DeleteTopics { results }),
    }
}

impl TopicAdmins {
    /// DeleteTopics, CreatePartitions or AddTopicsToMirror from an admin; see the module doc.
    pub fn handle_request(
        &mut self,
        context: &mut BrokerContext<'_>,
        from: NodeId,
        correlation_id: u64,
        request: Request,
    ) {
        let id = self.next_id;
        self.next_id += 1;
        let mut pending = PendingTopicAdmin {
            reply_to: from,
            correlation_id,
            request,
            waiting: 0,
            refused: BTreeMap::new(),
            checked_stopped: Vec::new(),
            error: ErrorCode::None,
        };
        let reads = match &pending.request {
            Request::Mirror(MirrorRequest::AddTopicsToMirror { topics, .. }) => {
                let removed = topics_with_mirror(context.image, topics, |desired| {
                    matches!(desired, DesiredState::Stopped { .. })
                });
                pending.checked_stopped.clone_from(&removed);
                if self.add_unchecked {
                    Vec::new()
                } else {
                    mirror_state_reads(context, &removed, &mut pending)
                }
            }
            _ if self.unchecked => Vec::new(),
            request => {
                let in_mirrors =
                    topics_with_mirror(context.image, &request_topics(request), |_| true);
                mirror_state_reads(context, &in_mirrors, &mut pending)
            }
        };
        self.pending.insert(id, pending);
        for (to, request, topics) in reads {
            self.send(context, id, to, request, Phase::Check(topics));
        }
        self.maybe_forward(context, id);
    }

    fn send(
        &mut self,
        context: &mut BrokerContext<'_>,
        id: u64,
        to: NodeId,
        request: Request,
        phase: Phase,
    ) {
        self.pending
            .get_mut(&id)
            .expect("requests are sent for live entries")
            .waiting += 1;
        let correlation_id = context.outbox.request(to, request);
        self.requests
            .insert(correlation_id, (id, phase), context.now_ms);
    }

    /// Once every check is in: forwards what is left, or answers.
    fn maybe_forward(&mut self, context: &mut BrokerContext<'_>, id: u64) {
        let pending = &self.pending[&id];
        if pending.waiting > 0 {
            return;
        }
        let accepted: BTreeSet<String> = request_topics(&pending.request)
            .into_iter()
            .filter(|topic| !pending.refused.contains_key(topic))
            .collect();
        if accepted.is_empty() {
            self.finish(context, id, BTreeMap::new());
            return;
        }
        let request = restrict(pending, &accepted);
        let event = match &request {
            Request::Controller(ControllerRequest::AlterMirrorTopics {
                topics,
                checked_stopped,
                ..
            }) => BrokerEvent::AddTopicsForwarded {
                topics: topics.clone(),
                checked_stopped: checked_stopped.clone(),
            },
            _ => BrokerEvent::TopicAdminForwarded {
                topics: accepted.into_iter().collect(),
            },
        };
        context.events.push(event);
        let controller = context.controller;
        self.send(context, id, controller, request, Phase::Forward);
    }

    fn finish(
        &mut self,
        context: &mut BrokerContext<'_>,
        id: u64,
        controller: BTreeMap<String, ErrorCode>,
    ) {
        let mut pending = self.pending.remove(&id).expect("live");
        let mut results = controller;
        results.extend(std::mem::take(&mut pending.refused));
        let response = answer(&pending, &results);
        context
            .outbox
            .respond(pending.reply_to, pending.correlation_id, response);
    }

    /// Expires the entries' requests.
    pub fn poll(&mut self, context: &mut BrokerContext<'_>) {
        for correlation_id in self.requests.expired(context.now_ms) {
            self.handle_response(context, correlation_id, Err(ErrorCode::RequestTimedOut));
        }
    }

    /// Routes an answer (or a timeout as `Err`) to its entry.
    pub fn handle_response(
        &mut self,
        context: &mut BrokerContext<'_>,
        correlation_id: u64,
        response: Result<Response, ErrorCode>,
    ) {
        let Some((id, phase)) = self.requests.remove(correlation_id) else {
            return;
        };
        if !self.pending.contains_key(&id) {
            return;
        }
        match phase {
            Phase::Check(topics) => {
                let refusals = check_refusals(context.image, &topics, response);
                let pending = self.pending.get_mut(&id).expect("checked");
                pending.waiting -= 1;
                for (topic, error) in refusals {
                    pending.refused.entry(topic).or_insert(error);
                }
                self.maybe_forward(context, id);
            }
            Phase::Forward => {
                let results = match response {
                    Ok(
                        Response::Cluster(ClusterResponse::DeleteTopics { results })
                        | Response::Cluster(ClusterResponse::CreatePartitions { results })
                        | Response::Controller(ControllerResponse::AlterMirrorTopics {
                            error: ErrorCode::None,
                            results,
                        }),
                    ) => results.into_iter().collect(),
                    Ok(Response::Controller(ControllerResponse::AlterMirrorTopics {
                        error,
                        ..
                    })) => {
                        self.pending.get_mut(&id).expect("checked").error = error;
                        BTreeMap::new()
                    }
                    // NotController, a timeout: every forwarded topic gets it (retriable).
                    Ok(_) => BTreeMap::new(),
                    Err(error) => {
                        let pending = &self.pending[&id];
                        request_topics(&pending.request)
                            .into_iter()
                            .map(|topic| (topic, error))
                            .collect()
                    }
                };
                self.finish(context, id, results);
            }
        }
    }
}

/// Among `topics`, those in a mirror (in this broker's image) whose desired state `keep`
/// takes, each with that mirror.
fn topics_with_mirror(
    image: &MetadataImage,
    topics: &[String],
    keep: impl Fn(&DesiredState) -> bool,
) -> Vec<(String, String)> {
    topics
        .iter()
        .filter_map(|topic| {
            let desired = image.mirror_desired_state(topic)?;
            keep(&desired).then(|| (topic.clone(), desired.mirror().to_owned()))
        })
        .collect()
}

/// The ReadMirrorStates covering every partition of each `(topic, mirror)` in that mirror's
/// state, by coordinator; a topic whose coordinator has no leader is refused at once.
fn mirror_state_reads(
    context: &BrokerContext<'_>,
    topics: &[(String, String)],
    pending: &mut PendingTopicAdmin,
) -> Vec<(NodeId, Request, Vec<String>)> {
    let image = context.image;
    let state_partitions = partition_count(image, MIRROR_STATE_TOPIC);
    let mut keys: BTreeMap<(i32, String), Vec<MirrorPartitionId>> = BTreeMap::new();
    for (topic, mirror) in topics {
        let Some(topic_id) = image.topic_ids.get(topic) else {
            continue;
        };
        let count = image.topics[topic_id].partitions.len() as i32;
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
            let coordinator = mirror_state_partition(mirror, &id, state_partitions);
            keys.entry((coordinator, mirror.clone()))
                .or_default()
                .push(id);
        }
    }
    let mut reads = Vec::new();
    for ((coordinator_partition, mirror), partitions) in keys {
        let Some(to) = MirrorDirectory::new(image, context.node_id.cluster())
            .coordinator_of_partition(coordinator_partition)
        else {
            for id in &partitions {
                let topic = topic_name(image, id.topic_id);
                pending
                    .refused
                    .insert(topic, ErrorCode::CoordinatorNotAvailable);
            }
            continue;
        };
        let mut covered: Vec<String> = partitions
            .iter()
            .map(|id| topic_name(image, id.topic_id))
            .collect();
        covered.dedup();
        let request = Request::Coordinator(CoordinatorRequest::ReadMirrorStates {
            coordinator_partition,
            mirror,
            partitions,
        });
        reads.push((to, request, covered));
    }
    reads
}

fn topic_name(image: &MetadataImage, topic_id: TopicId) -> String {
    image
        .topics
        .get(&topic_id)
        .map_or_else(String::new, |topic| topic.name.to_string())
}

/// The topics a coordinator's answer refuses: a partition neither STOPPED nor UNKNOWN or
/// unreadable; every topic the read covered when the read itself failed.
fn check_refusals(
    image: &MetadataImage,
    topics: &[String],
    response: Result<Response, ErrorCode>,
) -> Vec<(String, ErrorCode)> {
    match response {
        Ok(Response::Coordinator(CoordinatorResponse::ReadMirrorStates {
            error: ErrorCode::None,
            partitions,
            ..
        })) => partitions
            .iter()
            .filter_map(|status| {
                let error = if !status.error.is_none() {
                    status.error
                } else if !matches!(status.state, MirrorState::Stopped | MirrorState::Unknown) {
                    ErrorCode::MirrorTopicNotStopped
                } else {
                    return None;
                };
                Some((topic_name(image, status.id.topic_id), error))
            })
            .collect(),
        Ok(Response::Coordinator(CoordinatorResponse::ReadMirrorStates { error, .. })) => {
            topics.iter().map(|topic| (topic.clone(), error)).collect()
        }
        Ok(_) => topics
            .iter()
            .map(|topic| (topic.clone(), ErrorCode::InvalidRequest))
            .collect(),
        Err(error) => topics.iter().map(|topic| (topic.clone(), error)).collect(),
    }
}
