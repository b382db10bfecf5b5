//! DescribeMirror on a destination broker: KIP-1279's "describe" of a mirror for operators,
//! the CLI and checkers. A component of the broker ([`crate::component`]): the broker hands it
//! every DescribeMirror, every answer it [`owns`](MirrorDescribes::owns), and a `poll` at its
//! [`deadline`](MirrorDescribes::deadline).
//!
//! Contract: a DescribeMirror names a mirror; an unknown one is `ClusterMirrorNotFound` at
//! once. Otherwise the broker asks, all at the same time,
//! - every mirror coordinator holding keys of the mirror's partitions (ReadMirrorStates);
//! - every destination leader of those partitions for its high watermark (ListOffsets);
//! - one source broker (the mirror's `bootstrap.servers`, first listed) for the leaders of
//!   the mirror's topics (Metadata), and then those source leaders for their last stable
//!   offsets (ListOffsets, read_committed), which is what the fetcher copies up to;
//!
//! and answers with one description per partition once every request is answered or has
//! timed out ([`DESCRIBE_REQUEST_TIMEOUT_MS`]). What could not be learnt stays unknown
//! (−1, an error on the status, no lag); the answer never waits for an unreachable source,
//! so a describe works in the middle of a disaster recovery. Lag is reported for MIRRORING
//! and PAUSED partitions only: after a stop, the two logs are no longer meant to match.

use crate::protocol::{
    ClusterRequest, ClusterResponse, CoordinatorRequest, CoordinatorResponse, ErrorCode,
    LeaderEpoch, ListOffsetsQuery, MirrorPartitionDescription, MirrorPartitionId,
    MirrorPartitionStatus, MirrorResponse, NodeId, Offset, OffsetSpec, ReplicaRequest,
    ReplicaResponse, Request, Response, TopicPartition,
};
use std::collections::BTreeMap;

use super::directory::MirrorDirectory;
use super::MirrorState;
use crate::component::{BrokerContext, RequestsInFlight};
use crate::log::FetchIsolation;
use crate::metadata::ConfigResource;

/// How long a describe waits for any one answer: at most two rounds of it (source metadata,
/// then source offsets) stay below an admin client's request timeout.
pub const DESCRIBE_REQUEST_TIMEOUT_MS: i64 = 400;

/// What a describe's request asked.
#[derive(Debug, Clone)]
enum DescribeRequest {
    States,
    DestinationOffsets(Vec<TopicPartition>),
    SourceMetadata(NodeId),
    SourceOffsets(Vec<TopicPartition>),
}

/// One DescribeMirror being answered.
#[derive(Debug, Clone)]
struct PendingDescribe {
    reply_to: NodeId,
    correlation_id: u64,
    waiting: usize,
    /// Every partition of the mirror's topics, with what is known so far.
    partitions: BTreeMap<TopicPartition, MirrorPartitionDescription>,
}

/// The broker's describes in progress.
#[derive(Debug, Default)]
pub struct MirrorDescribes {
    pending: BTreeMap<u64, PendingDescribe>,
    /// correlation id → (describe id, what).
    requests: RequestsInFlight<(u64, DescribeRequest), DESCRIBE_REQUEST_TIMEOUT_MS>,
    next_id: u64,
}

impl MirrorDescribes {
    /// The earliest request timeout.
    pub fn deadline(&self) -> Option<i64> {
        self.requests.deadline()
    }

    /// Whether a request with this correlation id is a describe's.
    pub fn owns(&self, correlation_id: u64) -> bool {
        self.requests.owns(correlation_id)
    }
}

fn unknown_status(id: MirrorPartitionId, error: ErrorCode) -> MirrorPartitionStatus {
    MirrorPartitionStatus {
        source_topic_id: None,
        id,
        error,
        state: MirrorState::Unknown,
        leader_epoch: LeaderEpoch::NONE,
        state_epoch: -1,
        previous_state: None,
        retry_attempt: 0,
        error_message: None,
        last_mirrored: None,
        own_writes_only: false,
    }
}

impl MirrorDescribes {
    /// A DescribeMirror from an admin; see the module doc.
    pub fn handle_describe_mirror(
        &mut self,
        ctx: &mut BrokerContext<'_>,
        from: NodeId,
        correlation_id: u64,
        mirror: String,
    ) {
        let resource = ConfigResource::Mirror(mirror.clone());
        if !ctx.image.configs.contains_key(&resource) {
            let response = Response::Mirror(MirrorResponse::DescribeMirror {
                error: ErrorCode::ClusterMirrorNotFound,
                partitions: Vec::new(),
            });
            ctx.outbox.respond(from, correlation_id, response);
            return;
        }
        let id = self.next_id;
        self.next_id += 1;
        let mut pending = PendingDescribe {
            reply_to: from,
            correlation_id,
            waiting: 0,
            partitions: BTreeMap::new(),
        };
        let keys = MirrorDirectory::of(ctx).keys_by_coordinator(&mirror);
        let mut topic_names = BTreeMap::new();
        for (name, topic_id) in &ctx.image.topic_ids {
            topic_names.insert(*topic_id, name.clone());
        }
        for ids in keys.values() {
            for key in ids {
                let topic_partition =
                    TopicPartition::new(topic_names[&key.topic_id].clone(), key.partition);
                pending.partitions.insert(
                    topic_partition.clone(),
                    MirrorPartitionDescription {
                        topic_partition,
                        status: unknown_status(*key, ErrorCode::RequestTimedOut),
                        high_watermark: Offset::NONE,
                        source_last_stable_offset: Offset::NONE,
                        lag: None,
                    },
                );
            }
        }
        self.pending.insert(id, pending);
        for (coordinator_partition, ids) in keys {
            let Some(coordinator) =
                MirrorDirectory::of(ctx).coordinator_of_partition(coordinator_partition)
            else {
                self.describe_coordinator_unavailable(id, &ids);
                continue;
            };
            let request = Request::Coordinator(CoordinatorRequest::ReadMirrorStates {
                coordinator_partition,
                mirror: mirror.clone(),
                partitions: ids,
            });
            self.send_request(ctx, id, coordinator, request, DescribeRequest::States);
        }
        self.describe_destination_offsets(ctx, id);
        if let Some(source) = MirrorDirectory::of(ctx)
            .source_of(&mirror)
            .and_then(|nodes| nodes.first().copied())
        {
            let topics = self.describe_topics(id);
            let request = Request::Cluster(ClusterRequest::Metadata {
                topics: Some(topics),
            });
            let what = DescribeRequest::SourceMetadata(source);
            self.send_request(ctx, id, source, request, what);
        }
        self.maybe_finish_describe(ctx, id);
    }

    fn describe_topics(&self, id: u64) -> Vec<String> {
        let mut topics: Vec<String> = self.pending[&id]
            .partitions
            .keys()
            .map(|tp| tp.topic.to_string())
            .collect();
        topics.dedup();
        topics
    }

    fn describe_coordinator_unavailable(&mut self, id: u64, ids: &[MirrorPartitionId]) {
        let pending = self.pending.get_mut(&id).expect("live");
        for description in pending.partitions.values_mut() {
            if ids.contains(&description.status.id) {
                description.status.error = ErrorCode::CoordinatorNotAvailable;
            }
        }
    }

    fn describe_destination_offsets(&mut self, ctx: &mut BrokerContext<'_>, id: u64) {
        let mut by_leader: BTreeMap<NodeId, Vec<ListOffsetsQuery>> = BTreeMap::new();
        for tp in self.pending[&id].partitions.keys() {
            let Some(record) = ctx.image.partition(tp) else {
                continue;
            };
            let Some(leader) = record.leader else {
                continue;
            };
            by_leader
                .entry(NodeId::Broker(ctx.node_id.cluster(), leader))
                .or_default()
                .push(ListOffsetsQuery {
                    topic_partition: tp.clone(),
                    current_leader_epoch: LeaderEpoch(record.leader_epoch),
                    spec: OffsetSpec::Latest,
                });
        }
        for (leader, queries) in by_leader {
            let partitions = queries.iter().map(|q| q.topic_partition.clone()).collect();
            let request = Request::Replica(ReplicaRequest::ListOffsets {
                isolation: FetchIsolation::HighWatermark,
                partitions: queries,
            });
            let what = DescribeRequest::DestinationOffsets(partitions);
            self.send_request(ctx, id, leader, request, what);
        }
    }

    fn send_request(
        &mut self,
        ctx: &mut BrokerContext<'_>,
        id: u64,
        to: NodeId,
        request: Request,
        what: DescribeRequest,
    ) {
        self.pending
            .get_mut(&id)
            .expect("requests are sent for live describes")
            .waiting += 1;
        let correlation_id = ctx.outbox.request(to, request);
        self.requests.insert(correlation_id, (id, what), ctx.now_ms);
    }

    /// Expires describe requests.
    pub fn poll(&mut self, ctx: &mut BrokerContext<'_>) {
        for correlation_id in self.requests.expired(ctx.now_ms) {
            self.handle_response(ctx, correlation_id, Err(ErrorCode::RequestTimedOut));
        }
    }

    /// Routes an answer (or a timeout as `Err`) to its describe.
    pub fn handle_response(
        &mut self,
        ctx: &mut BrokerContext<'_>,
        correlation_id: u64,
        response: Result<Response, ErrorCode>,
    ) {
        let Some((id, what)) = self.requests.remove(correlation_id) else {
            return;
        };
        let Some(pending) = self.pending.get_mut(&id) else {
            return;
        };
        pending.waiting -= 1;
        match (what, response) {
            (
                DescribeRequest::States,
                Ok(Response::Coordinator(CoordinatorResponse::ReadMirrorStates {
                    error,
                    partitions,
                    ..
                })),
            ) => {
                for status in partitions {
                    if let Some(description) = pending
                        .partitions
                        .values_mut()
                        .find(|d| d.status.id == status.id)
                    {
                        description.status = status;
                        if !error.is_none() {
                            description.status.error = error;
                        }
                    }
                }
            }
            (
                DescribeRequest::DestinationOffsets(tps),
                Ok(Response::Replica(ReplicaResponse::ListOffsets { partitions })),
            ) => {
                for (tp, answer) in tps.iter().zip(partitions) {
                    if let (Some(description), true) =
                        (pending.partitions.get_mut(tp), answer.error.is_none())
                    {
                        description.high_watermark = answer.offset;
                    }
                }
            }
            (
                DescribeRequest::SourceMetadata(source),
                Ok(Response::Cluster(ClusterResponse::Metadata { topics, .. })),
            ) => {
                let mut by_leader: BTreeMap<NodeId, Vec<ListOffsetsQuery>> = BTreeMap::new();
                for topic in topics.iter().filter(|t| t.error.is_none()) {
                    for record in &topic.partitions {
                        let tp = TopicPartition::new(topic.name.clone(), record.partition);
                        let (Some(leader), true) =
                            (record.leader, pending.partitions.contains_key(&tp))
                        else {
                            continue;
                        };
                        by_leader
                            .entry(NodeId::Broker(source.cluster(), leader))
                            .or_default()
                            .push(ListOffsetsQuery {
                                topic_partition: tp,
                                current_leader_epoch: LeaderEpoch(record.leader_epoch),
                                spec: OffsetSpec::Latest,
                            });
                    }
                }
                for (leader, queries) in by_leader {
                    let tps = queries.iter().map(|q| q.topic_partition.clone()).collect();
                    let request = Request::Replica(ReplicaRequest::ListOffsets {
                        isolation: FetchIsolation::TxnCommitted,
                        partitions: queries,
                    });
                    let what = DescribeRequest::SourceOffsets(tps);
                    self.send_request(ctx, id, leader, request, what);
                }
            }
            (
                DescribeRequest::SourceOffsets(tps),
                Ok(Response::Replica(ReplicaResponse::ListOffsets { partitions })),
            ) => {
                for (tp, answer) in tps.iter().zip(partitions) {
                    if let (Some(description), true) =
                        (pending.partitions.get_mut(tp), answer.error.is_none())
                    {
                        description.source_last_stable_offset = answer.offset;
                    }
                }
            }
            // Failures and timeouts leave what they would have told unknown.
            _ => {}
        }
        self.maybe_finish_describe(ctx, id);
    }

    fn maybe_finish_describe(&mut self, ctx: &mut BrokerContext<'_>, id: u64) {
        if self.pending[&id].waiting > 0 {
            return;
        }
        let pending = self.pending.remove(&id).expect("live");
        let partitions = pending
            .partitions
            .into_values()
            .map(|mut description| {
                let lagging = matches!(
                    description.status.state,
                    MirrorState::Mirroring | MirrorState::Paused
                );
                let known = description.high_watermark.is_some()
                    && description.source_last_stable_offset.is_some();
                description.lag = (lagging && known)
                    .then(|| description.source_last_stable_offset - description.high_watermark);
                description
            })
            .collect();
        let response = Response::Mirror(MirrorResponse::DescribeMirror {
            error: ErrorCode::None,
            partitions,
        });
        ctx.outbox
            .respond(pending.reply_to, pending.correlation_id, response);
    }
}
