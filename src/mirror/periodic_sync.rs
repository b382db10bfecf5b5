//! KIP-1279's periodic sync on the destination (spec §7), seed design. A component of the
//! broker ([`crate::component`]): the broker calls [`MirrorSyncs::reconcile`] after every
//! metadata change, hands it every answer it [`owns`](MirrorSyncs::owns), and `poll`s it at its
//! [`deadline`](MirrorSyncs::deadline).
//!
//! Contract:
//! - **Who.** A mirror's sync runs on one broker: the leader of the `__mirror_state` partition
//!   of the mirror's name ([`mirror_sync_partition`]), the mirror's "coordinator broker". The
//!   round follows that leadership: a broker that loses it drops its round, and answers to a
//!   dropped round are ignored.
//! - **When.** A round starts when the broker takes the role and then every
//!   `mirror.metadata.refresh.interval.ms` ([`SyncConfig::refresh_interval_ms`])
//!   after the previous round ended. Requests of a round that stay unanswered for
//!   [`SYNC_REQUEST_TIMEOUT_MS`] count as failed; a failed piece is skipped and the next round
//!   tries again (everything the round writes is idempotent).
//! - **What**, in five phases, each waiting for the answers of the previous one:
//!   1. *Discover*: the source's metadata for all topics and its ACLs, from one source broker
//!      (the bootstrap list in turn: a failure ends the round, and the next one starts after
//!      [`SYNC_RETRY_BACKOFF_MS`] with the next broker). No round runs while
//!      `bootstrap.servers` names another cluster than the mirror's recorded source (spec S-15).
//!   2. *Describe*: the source's dynamic configs of the mirror's active topics (`mirror.name`
//!      without a suffix: paused and stopped topics are not synced), the groups of every live
//!      source broker (ListGroups), and the stored mirror state of every partition of the
//!      active topics (ReadMirrorStates to their mirror coordinators).
//!   3. *Fetch offsets*: each group that `mirror.groups.include`/`exclude` admit is asked for
//!      its committed offsets at the source broker that listed it (its coordinator), and the
//!      destination's log start and high watermark with their leader epochs are read for
//!      every partition phase 2 found MIRRORING (ListOffsets to their leaders).
//!   4. *Verify*: the states of those partitions are read again; a partition's bounds are used
//!      only if it is still MIRRORING in the same state epoch, so no transition happened
//!      between the first read and the second, and the bounds were read inside MIRRORING. A
//!      partition whose topic is in the mirror but that is STOPPED, PREPARING or FAILED holds
//!      the destination's own log, which PREPARING is about to cut to the last mirrored
//!      epoch: an offset clamped to its high watermark would point past the log once PREPARING
//!      is done (generated soak, issue #14), and the group would skip what is mirrored there.
//!   5. *Apply*, all to the destination:
//!      - topics the mirror adopts (`mirror.topics.include` minus `mirror.topics.exclude`) that
//!        the destination lacks are created with the source's topic id and partition count;
//!        once one exists with that id and in no mirror it is added to the mirror
//!        (AlterMirrorTopics); a destination topic of the same name with another id is left
//!        alone (the operator must delete it);
//!      - an active topic that `mirror.topics.exclude` matches (an exclude altered after the
//!        topic joined) is removed from the mirror (AlterMirrorTopics remove, spec §7 item 10):
//!        it stops and turns writable;
//!      - a mirrored or paused topic with fewer partitions than its source topic is grown to the
//!        source's count (GrowMirrorTopics; an admin's CreatePartitions of a mirror topic is
//!        refused until STOPPED), and its new partitions prepare and mirror;
//!      - differing source topic configs are SET (IncrementalAlterConfigs; exclude list);
//!      - ACLs are created and deleted to match the source (`mirror.acl.include`);
//!      - each group offset of a partition verified MIRRORING is clamped into the destination log
//!        ([`clamp_group_offset`]; one committed in a source leader epoch newer than the epoch at
//!        the destination's log end waits for a later round) and committed as an admin commit to the destination's group
//!        coordinator, which refuses it while the group has members there (`UnknownMemberId`:
//!        the group is active on the destination and skipped). The topic must still be active
//!        in the image when the commit is sent.
//!
//! Not modelled: share groups, periodic epoch bumps (later revisions), and groups whose
//! coordinator moves between the ListGroups and OffsetFetch of a round (the OffsetFetch fails
//! and the group waits for the next round).

use crate::protocol::{
    ClusterRequest, ClusterResponse, CommittedOffset, ControllerRequest, CoordinatorRequest,
    CoordinatorResponse, ErrorCode, LeaderEpoch, ListOffsetsQuery, MirrorPartitionId,
    MirrorTopicOperation, NewTopic, NodeId, Offset, OffsetCommitEntry, OffsetSpec, ReplicaRequest,
    ReplicaResponse, Request, Response, TopicId, TopicPartition,
};
use std::collections::{BTreeMap, BTreeSet};

use super::coordinator::{mirror_sync_partition, MIRROR_STATE_TOPIC};
use super::directory::MirrorDirectory;
use super::sync::{clamp_group_offset, OffsetBounds, SyncSettings};
use super::TopicMirrorConfig;
use super::{MirrorDesign, MirrorState};
use crate::component::BrokerContext;
use crate::coordinator::{
    coordinator_partition_in, internal_topic_creation, partition_count, CONSUMER_OFFSETS_TOPIC,
};
use crate::events::BrokerEvent;
use crate::metadata::{AclBinding, ConfigResource};

/// How long a sync request may stay unanswered.
pub const SYNC_REQUEST_TIMEOUT_MS: i64 = 1_000;

/// Pause before a round whose discovery failed is tried again with the next source broker.
pub const SYNC_RETRY_BACKOFF_MS: i64 = 100;

/// Where a round is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the next round.
    Idle,
    Discover,
    Describe,
    FetchOffsets,
    Verify,
    Apply,
}

/// What a sync request asked.
#[derive(Debug, Clone)]
enum SyncRequest {
    SourceMetadata(NodeId),
    SourceAcls,
    SourceConfigs,
    ListGroups(NodeId),
    OffsetFetch(String),
    /// Stored mirror states, in the phase that asked (Describe or Verify).
    States,
    /// The (partition, earliest?) keys of the queries, in request order.
    DestinationOffsets(Vec<(TopicPartition, bool)>),
    /// A destination write; only its completion matters.
    Apply,
}

/// One mirror's sync on this broker.
#[derive(Debug, Clone)]
struct SyncRound {
    id: u64,
    phase: Phase,
    /// Answers still expected in the current phase.
    waiting: usize,
    /// When the next round may start (`Idle`).
    not_before_ms: i64,
    /// Index into the bootstrap list of the source broker asked first.
    target: usize,
    /// Discovery failed: the round ends and the next starts after a short backoff.
    retry_soon: bool,
    source_topics: BTreeMap<String, (TopicId, i32)>,
    source_brokers: Vec<NodeId>,
    source_acls: Option<BTreeSet<AclBinding>>,
    source_configs: BTreeMap<String, Vec<(String, String)>>,
    /// Group → the source broker that listed it.
    source_groups: BTreeMap<String, NodeId>,
    source_offsets: BTreeMap<String, Vec<CommittedOffset>>,
    /// (partition, earliest or latest) → (offset, epoch).
    destination_offsets: BTreeMap<(TopicPartition, bool), (i64, i32)>,
    /// Stored (state, state epoch) of the active topics' partitions, read in Describe.
    states_described: BTreeMap<MirrorPartitionId, (MirrorState, i32)>,
    /// The same, read again in Verify.
    states_verified: BTreeMap<MirrorPartitionId, (MirrorState, i32)>,
}

impl SyncRound {
    fn new(id: u64, now_ms: i64) -> Self {
        Self {
            id,
            phase: Phase::Idle,
            waiting: 0,
            not_before_ms: now_ms,
            target: 0,
            retry_soon: false,
            source_topics: BTreeMap::new(),
            source_brokers: Vec::new(),
            source_acls: None,
            source_configs: BTreeMap::new(),
            source_groups: BTreeMap::new(),
            source_offsets: BTreeMap::new(),
            destination_offsets: BTreeMap::new(),
            states_described: BTreeMap::new(),
            states_verified: BTreeMap::new(),
        }
    }

    /// Forgets what the previous round learned.
    fn restart(&mut self) {
        let (id, target) = (self.id, self.target);
        *self = Self::new(id, 0);
        self.target = target;
    }
}

/// The broker settings a sync round follows.
#[derive(Debug, Clone, Copy)]
pub struct SyncConfig {
    /// The design variant (which partitions' offsets are synced, clamped or not, read up to
    /// which end).
    pub design: MirrorDesign,
    /// `mirror.metadata.refresh.interval.ms`: the pause between the end of a round and the
    /// start of the next.
    pub refresh_interval_ms: i64,
    /// The replication factor of the topics the sync creates (adopted topics, and the offsets
    /// topic when no group coordinator exists yet).
    pub replication_factor: i16,
    /// `offsets.topic.num.partitions`, for creating the offsets topic on first use.
    pub offsets_topic_partitions: i32,
    /// The broken switch `mirror-sync-ignores-source-changes`: no adoption, topic configs or
    /// ACLs.
    pub ignores_source_changes: bool,
    /// The broken switch `mirror-sync-readopts-removed`: a removed topic is adopted again.
    pub readopts_removed: bool,
}

/// The broker's sync rounds; see the module doc.
#[derive(Debug)]
pub struct MirrorSyncs {
    config: SyncConfig,
    rounds: BTreeMap<String, SyncRound>,
    /// correlation id → (mirror, round id, what, sent at).
    requests: BTreeMap<u64, (String, u64, SyncRequest, i64)>,
    next_round_id: u64,
}

impl MirrorSyncs {
    /// No rounds yet; rounds follow the image through [`MirrorSyncs::reconcile`].
    pub fn new(config: SyncConfig) -> Self {
        Self {
            config,
            rounds: BTreeMap::new(),
            requests: BTreeMap::new(),
            next_round_id: 0,
        }
    }

    /// The earliest time the syncs want a timeout.
    pub fn deadline(&self) -> Option<i64> {
        let requests = self
            .requests
            .values()
            .map(|(_, _, _, sent_ms)| sent_ms + SYNC_REQUEST_TIMEOUT_MS);
        let rounds = self
            .rounds
            .values()
            .filter(|round| round.phase == Phase::Idle)
            .map(|round| round.not_before_ms);
        requests.chain(rounds).min()
    }

    /// Whether a request with this correlation id is a sync's.
    pub fn owns(&self, correlation_id: u64) -> bool {
        self.requests.contains_key(&correlation_id)
    }
}

impl MirrorSyncs {
    /// Starts or drops rounds after the metadata image changed.
    pub fn reconcile(&mut self, ctx: &mut BrokerContext<'_>) {
        let partitions = partition_count(ctx.image, MIRROR_STATE_TOPIC);
        let mirrors: BTreeSet<String> = ctx
            .image
            .configs
            .keys()
            .filter_map(|resource| match resource {
                ConfigResource::Mirror(name) => Some(name.clone()),
                _ => None,
            })
            .filter(|mirror| {
                partitions > 0
                    && ctx
                        .image
                        .partition(&TopicPartition::new(
                            MIRROR_STATE_TOPIC,
                            mirror_sync_partition(mirror, partitions),
                        ))
                        .and_then(|record| record.leader)
                        == Some(ctx.broker_id)
            })
            .collect();
        self.rounds.retain(|mirror, _| mirrors.contains(mirror));
        for mirror in mirrors {
            if !self.rounds.contains_key(&mirror) {
                let id = self.next_round_id;
                self.next_round_id += 1;
                let round = SyncRound::new(id, ctx.now_ms);
                self.rounds.insert(mirror, round);
            }
        }
    }

    /// Expires sync requests and starts due rounds.
    pub fn poll(&mut self, ctx: &mut BrokerContext<'_>) {
        let expired: Vec<u64> = self
            .requests
            .iter()
            .filter(|(_, (_, _, _, sent_ms))| ctx.now_ms >= sent_ms + SYNC_REQUEST_TIMEOUT_MS)
            .map(|(id, _)| *id)
            .collect();
        for correlation_id in expired {
            self.handle_response(ctx, correlation_id, Err(ErrorCode::RequestTimedOut));
        }
        let due: Vec<String> = self
            .rounds
            .iter()
            .filter(|(_, round)| round.phase == Phase::Idle && ctx.now_ms >= round.not_before_ms)
            .map(|(mirror, _)| mirror.clone())
            .collect();
        for mirror in due {
            self.start_sync_round(ctx, &mirror);
        }
    }

    fn sync_settings(ctx: &BrokerContext<'_>, mirror: &str) -> Option<SyncSettings> {
        let properties = ctx
            .image
            .configs
            .get(&ConfigResource::Mirror(mirror.to_owned()))?;
        SyncSettings::from_properties(|key| properties.get(key).map(String::as_str)).ok()
    }

    fn send_sync_request(
        &mut self,
        ctx: &mut BrokerContext<'_>,
        mirror: &str,
        to: NodeId,
        request: Request,
        what: SyncRequest,
    ) {
        let round = self
            .rounds
            .get_mut(mirror)
            .expect("requests are sent for live rounds");
        round.waiting += 1;
        let round_id = round.id;
        let own = ctx.node_id.cluster();
        let principal =
            crate::mirror::properties::request_principal(ctx.image, (own, Some(mirror)), to);
        let correlation_id = ctx.outbox.request_as(to, request, principal);
        self.requests.insert(
            correlation_id,
            (mirror.to_owned(), round_id, what, ctx.now_ms),
        );
    }

    fn end_sync_round(&mut self, ctx: &mut BrokerContext<'_>, mirror: &str) {
        let interval = self.config.refresh_interval_ms;
        if let Some(round) = self.rounds.get_mut(mirror) {
            round.restart();
            round.phase = Phase::Idle;
            round.not_before_ms = ctx.now_ms + interval;
        }
    }

    // ----- phase 1 -----

    fn start_sync_round(&mut self, ctx: &mut BrokerContext<'_>, mirror: &str) {
        let directory = MirrorDirectory::of(ctx);
        let Some(bootstrap) = directory.source_of(mirror) else {
            self.end_sync_round(ctx, mirror);
            return;
        };
        if self.config.design.checks_source_cluster()
            && directory.source_cluster_changed(mirror).is_some()
        {
            // Spec S-15: `bootstrap.servers` names another cluster than the one the mirror
            // was created from; nothing of it is adopted, copied or committed here (the
            // mirror's partitions fail when they next contact it).
            self.end_sync_round(ctx, mirror);
            return;
        }
        let round = self.rounds.get_mut(mirror).expect("due");
        round.restart();
        round.phase = Phase::Discover;
        let to = bootstrap[round.target % bootstrap.len()];
        let metadata = Request::Cluster(ClusterRequest::Metadata { topics: None });
        let what = SyncRequest::SourceMetadata(to);
        self.send_sync_request(ctx, mirror, to, metadata, what);
        let acls = Request::Cluster(ClusterRequest::DescribeAcls);
        self.send_sync_request(ctx, mirror, to, acls, SyncRequest::SourceAcls);
    }

    // ----- answers -----

    /// Routes an answer (or a timeout as `Err`) to its round.
    pub fn handle_response(
        &mut self,
        ctx: &mut BrokerContext<'_>,
        correlation_id: u64,
        response: Result<Response, ErrorCode>,
    ) {
        let Some((mirror, round_id, what, _)) = self.requests.remove(&correlation_id) else {
            return;
        };
        let Some(round) = self.rounds.get_mut(&mirror) else {
            return;
        };
        if round.id != round_id || round.phase == Phase::Idle {
            return;
        }
        round.waiting -= 1;
        let ok = record_sync_answer(round, what, response);
        if !ok && round.phase == Phase::Discover {
            // The source broker did not answer: the round ends, and the next one asks the
            // next bootstrap broker after a short backoff rather than a whole interval.
            round.target += 1;
            round.retry_soon = true;
        }
        if round.waiting > 0 {
            return;
        }
        match round.phase {
            Phase::Discover if round.retry_soon => {
                round.restart();
                round.phase = Phase::Idle;
                round.not_before_ms = ctx.now_ms + SYNC_RETRY_BACKOFF_MS;
            }
            Phase::Discover => self.sync_describe(ctx, &mirror),
            Phase::Describe => self.sync_fetch_offsets(ctx, &mirror),
            Phase::FetchOffsets => self.sync_verify(ctx, &mirror),
            Phase::Verify => self.sync_apply(ctx, &mirror),
            Phase::Apply | Phase::Idle => self.end_sync_round(ctx, &mirror),
        }
    }

    // ----- phase 2 -----

    fn sync_describe(&mut self, ctx: &mut BrokerContext<'_>, mirror: &str) {
        let active = MirrorDirectory::of(ctx).active_topics(mirror);
        let round = self.rounds.get_mut(mirror).expect("live");
        round.phase = Phase::Describe;
        let to = round.source_brokers.first().copied();
        let on_source: Vec<ConfigResource> = active
            .iter()
            .filter(|topic| round.source_topics.contains_key(*topic))
            .map(|topic| ConfigResource::Topic(topic.clone()))
            .collect();
        let brokers = round.source_brokers.clone();
        if let (Some(to), false) = (to, on_source.is_empty()) {
            let request = Request::Cluster(ClusterRequest::DescribeConfigs {
                resources: on_source,
            });
            self.send_sync_request(ctx, mirror, to, request, SyncRequest::SourceConfigs);
        }
        for broker in brokers {
            let request = Request::Coordinator(CoordinatorRequest::ListGroups);
            self.send_sync_request(
                ctx,
                mirror,
                broker,
                request,
                SyncRequest::ListGroups(broker),
            );
        }
        let keys = MirrorDirectory::of(ctx).keys_by_coordinator(mirror);
        self.send_state_reads(ctx, mirror, keys);
        if self.rounds[mirror].waiting == 0 {
            self.sync_fetch_offsets(ctx, mirror);
        }
    }

    /// ReadMirrorStates for `keys` to their coordinators; a key whose coordinator is unknown
    /// stays unread (and is not synced this round).
    fn send_state_reads(
        &mut self,
        ctx: &mut BrokerContext<'_>,
        mirror: &str,
        keys: BTreeMap<i32, Vec<MirrorPartitionId>>,
    ) {
        for (coordinator_partition, partitions) in keys {
            let Some(coordinator) =
                MirrorDirectory::of(ctx).coordinator_of_partition(coordinator_partition)
            else {
                continue;
            };
            let request = Request::Coordinator(CoordinatorRequest::ReadMirrorStates {
                coordinator_partition,
                mirror: mirror.to_owned(),
                partitions,
            });
            self.send_sync_request(ctx, mirror, coordinator, request, SyncRequest::States);
        }
    }

    /// The partitions whose group offsets this round may sync, by mirror key: those phase 2
    /// read as MIRRORING (every partition of the active topics under `sync-by-topic-state`).
    fn sync_candidates(
        &self,
        ctx: &BrokerContext<'_>,
        mirror: &str,
    ) -> BTreeMap<MirrorPartitionId, TopicPartition> {
        let mut candidates = BTreeMap::new();
        if !self.config.design.syncs_mirroring_partitions_only() {
            for topic in MirrorDirectory::of(ctx).active_topics(mirror) {
                let topic_id = ctx.image.topic_ids[&topic];
                for partition in 0..partition_count(ctx.image, &topic) {
                    let id = MirrorPartitionId {
                        topic_id,
                        partition,
                    };
                    candidates.insert(id, TopicPartition::new(topic.clone(), partition));
                }
            }
            return candidates;
        }
        let names: BTreeMap<TopicId, &String> = ctx
            .image
            .topic_ids
            .iter()
            .map(|(name, id)| (*id, name))
            .collect();
        let described = &self.rounds[mirror].states_described;
        for (id, (state, _)) in described {
            if let (MirrorState::Mirroring, Some(name)) = (state, names.get(&id.topic_id)) {
                candidates.insert(*id, TopicPartition::new((*name).clone(), id.partition));
            }
        }
        candidates
    }

    /// Earliest and latest queries for every one of `partitions` with a leader, by leader.
    fn destination_offset_queries(
        ctx: &BrokerContext<'_>,
        partitions: &BTreeSet<TopicPartition>,
    ) -> BTreeMap<NodeId, Vec<ListOffsetsQuery>> {
        let mut by_leader: BTreeMap<NodeId, Vec<ListOffsetsQuery>> = BTreeMap::new();
        for topic_partition in partitions {
            let Some(record) = ctx.image.partition(topic_partition) else {
                continue;
            };
            let Some(leader) = record.leader else {
                continue;
            };
            let node = NodeId::Broker(ctx.node_id.cluster(), leader);
            for spec in [OffsetSpec::Earliest, OffsetSpec::Latest] {
                by_leader.entry(node).or_default().push(ListOffsetsQuery {
                    topic_partition: topic_partition.clone(),
                    current_leader_epoch: LeaderEpoch(record.leader_epoch),
                    spec,
                });
            }
        }
        by_leader
    }

    // ----- phase 3 -----

    fn sync_fetch_offsets(&mut self, ctx: &mut BrokerContext<'_>, mirror: &str) {
        let settings = Self::sync_settings(ctx, mirror);
        let round = self.rounds.get_mut(mirror).expect("live");
        round.phase = Phase::FetchOffsets;
        let groups: Vec<(String, NodeId)> = round
            .source_groups
            .iter()
            .filter(|(group, _)| settings.as_ref().is_some_and(|s| s.syncs_group(group)))
            .map(|(group, broker)| (group.clone(), *broker))
            .collect();
        for (group, broker) in groups {
            let request = Request::Coordinator(CoordinatorRequest::OffsetFetch {
                group_id: group.clone(),
                partitions: None,
            });
            self.send_sync_request(
                ctx,
                mirror,
                broker,
                request,
                SyncRequest::OffsetFetch(group),
            );
        }
        let candidates = self.sync_candidates(ctx, mirror).into_values().collect();
        for (leader, queries) in Self::destination_offset_queries(ctx, &candidates) {
            let keys = queries
                .iter()
                .map(|q| (q.topic_partition.clone(), q.spec == OffsetSpec::Earliest))
                .collect();
            let request = Request::Replica(ReplicaRequest::ListOffsets {
                isolation: self.config.design.offset_sync_end_isolation(),
                partitions: queries,
            });
            let what = SyncRequest::DestinationOffsets(keys);
            self.send_sync_request(ctx, mirror, leader, request, what);
        }
        if self.rounds[mirror].waiting == 0 {
            self.sync_verify(ctx, mirror);
        }
    }

    // ----- phase 4 -----

    /// Reads again the states of the partitions whose bounds were read.
    fn sync_verify(&mut self, ctx: &mut BrokerContext<'_>, mirror: &str) {
        let mut keys = MirrorDirectory::of(ctx).keys_by_coordinator(mirror);
        let round = self.rounds.get_mut(mirror).expect("live");
        round.phase = Phase::Verify;
        for ids in keys.values_mut() {
            ids.retain(|id| {
                matches!(
                    round.states_described.get(id),
                    Some((MirrorState::Mirroring, _))
                )
            });
        }
        keys.retain(|_, ids| !ids.is_empty());
        if !self.rounds[mirror].source_offsets.is_empty() {
            self.send_state_reads(ctx, mirror, keys);
        }
        if self.rounds[mirror].waiting == 0 {
            self.sync_apply(ctx, mirror);
        }
    }

    // ----- phase 5 -----

    fn sync_apply(&mut self, ctx: &mut BrokerContext<'_>, mirror: &str) {
        self.rounds.get_mut(mirror).expect("live").phase = Phase::Apply;
        if let Some(settings) = Self::sync_settings(ctx, mirror) {
            if !self.config.ignores_source_changes {
                self.sync_adopt_topics(ctx, mirror, &settings);
            }
            if self.config.design.enforces_topics_exclude() {
                self.sync_exclude_topics(ctx, mirror, &settings);
            }
            if self.config.design.grows_mirror_topics() {
                self.sync_partition_counts(ctx, mirror);
            }
            if !self.config.ignores_source_changes {
                self.sync_topic_configs(ctx, mirror, &settings);
                self.sync_acls(ctx, mirror, &settings);
            }
            self.sync_group_offsets(ctx, mirror);
        }
        if self.rounds[mirror].waiting == 0 {
            self.end_sync_round(ctx, mirror);
        }
    }

    fn sync_adopt_topics(
        &mut self,
        ctx: &mut BrokerContext<'_>,
        mirror: &str,
        settings: &SyncSettings,
    ) {
        let round = &self.rounds[mirror];
        let mut create = Vec::new();
        let mut add = Vec::new();
        let mut readd = Vec::new();
        for (topic, (source_id, partitions)) in &round.source_topics {
            if !settings.adopts_topic(topic) {
                continue;
            }
            match ctx.image.topic_ids.get(topic) {
                None => create.push(NewTopic {
                    name: topic.clone(),
                    partitions: *partitions,
                    replication_factor: self.config.replication_factor,
                    configs: Vec::new(),
                    topic_id: Some(*source_id),
                }),
                Some(id) if id == source_id && ctx.image.mirror_desired_state(topic).is_none() => {
                    add.push(topic.clone());
                }
                Some(id)
                    if self.config.readopts_removed
                        && id == source_id
                        && matches!(
                            ctx.image.mirror_desired_state(topic),
                            Some(super::DesiredState::Stopped { .. })
                        ) =>
                {
                    // Broken on purpose: the operator's removal is overridden, the topic
                    // vouched for as stopped.
                    readd.push(topic.clone());
                }
                // In a mirror already, stopped, or a name clash with another topic id: the
                // operator's business.
                Some(_) => {}
            }
        }
        let controller = ctx.controller;
        if !create.is_empty() {
            let request = Request::Controller(ControllerRequest::CreateTopics { topics: create });
            self.send_sync_request(ctx, mirror, controller, request, SyncRequest::Apply);
        }
        if !add.is_empty() {
            let request = Request::Controller(ControllerRequest::AlterMirrorTopics {
                mirror: mirror.to_owned(),
                operation: MirrorTopicOperation::Add,
                topics: add,
                // Only topics in no mirror: a stopped one is not adopted again (spec §3.3).
                checked_stopped: Vec::new(),
                include_patterns: Vec::new(),
            });
            self.send_sync_request(ctx, mirror, controller, request, SyncRequest::Apply);
        }
        if !readd.is_empty() {
            let request = Request::Controller(ControllerRequest::AlterMirrorTopics {
                mirror: mirror.to_owned(),
                operation: MirrorTopicOperation::Add,
                checked_stopped: readd
                    .iter()
                    .map(|topic| (topic.clone(), mirror.to_owned()))
                    .collect(),
                topics: readd,
                include_patterns: Vec::new(),
            });
            self.send_sync_request(ctx, mirror, controller, request, SyncRequest::Apply);
        }
    }

    /// Removes from the mirror every active topic its `mirror.topics.exclude` matches (spec §7
    /// item 10): an operator who excludes a topic after it was adopted, or added by hand,
    /// wants it no longer mirrored, and a removal is how a topic leaves a mirror (its
    /// partitions stop and turn writable). Paused topics are left alone, as the prototype's
    /// enforcement looks at active topics only; they are removed once resumed.
    fn sync_exclude_topics(
        &mut self,
        ctx: &mut BrokerContext<'_>,
        mirror: &str,
        settings: &SyncSettings,
    ) {
        let excluded: Vec<String> = MirrorDirectory::of(ctx)
            .active_topics(mirror)
            .into_iter()
            .filter(|topic| settings.topics_exclude.matches(topic))
            .collect();
        if excluded.is_empty() {
            return;
        }
        for topic in &excluded {
            ctx.events.push(BrokerEvent::MirrorTopicExcluded {
                topic: topic.clone(),
            });
        }
        let request = Request::Controller(ControllerRequest::AlterMirrorTopics {
            mirror: mirror.to_owned(),
            operation: MirrorTopicOperation::Remove,
            topics: excluded,
            checked_stopped: Vec::new(),
            include_patterns: Vec::new(),
        });
        let controller = ctx.controller;
        self.send_sync_request(ctx, mirror, controller, request, SyncRequest::Apply);
    }

    /// Grows each topic the mirror mirrors or pauses that has fewer partitions than its source topic
    /// (GrowMirrorTopics): the new partitions then get leaders, and their tasks prepare and
    /// mirror as any partition of the topic does. Without it, records the source writes to its
    /// new partitions are never mirrored.
    fn sync_partition_counts(&mut self, ctx: &mut BrokerContext<'_>, mirror: &str) {
        use super::state::DesiredState;
        let round = &self.rounds[mirror];
        let grow: Vec<(String, i32)> = ctx
            .image
            .topic_ids
            .keys()
            .filter(|topic| {
                matches!(ctx.image.mirror_desired_state(topic),
                    Some(DesiredState::Mirror { mirror: m } | DesiredState::Paused { mirror: m })
                        if m == mirror)
            })
            .filter_map(|topic| {
                let (_, source_count) = round.source_topics.get(topic)?;
                let count = crate::coordinator::partition_count(ctx.image, topic);
                (*source_count > count).then(|| (topic.clone(), *source_count))
            })
            .collect();
        if grow.is_empty() {
            return;
        }
        for (topic, partitions) in &grow {
            ctx.events.push(BrokerEvent::MirrorTopicGrowing {
                topic: topic.clone(),
                partitions: *partitions,
            });
        }
        let request = Request::Controller(ControllerRequest::GrowMirrorTopics {
            mirror: mirror.to_owned(),
            topics: grow,
        });
        let controller = ctx.controller;
        self.send_sync_request(ctx, mirror, controller, request, SyncRequest::Apply);
    }

    fn sync_topic_configs(
        &mut self,
        ctx: &mut BrokerContext<'_>,
        mirror: &str,
        settings: &SyncSettings,
    ) {
        let active: BTreeSet<String> = MirrorDirectory::of(ctx)
            .active_topics(mirror)
            .into_iter()
            .collect();
        let round = &self.rounds[mirror];
        let mut alters = Vec::new();
        for (topic, configs) in &round.source_configs {
            if !active.contains(topic) {
                continue;
            }
            let resource = ConfigResource::Topic(topic.clone());
            let destination = ctx.image.configs.get(&resource);
            let changes = settings.config_changes(configs.iter().map(|(k, v)| (k, v)), |name| {
                destination.and_then(|d| d.get(name)).map(String::as_str)
            });
            if !changes.is_empty() {
                alters.push(Request::Controller(
                    ControllerRequest::IncrementalAlterConfigs { resource, changes },
                ));
            }
        }
        let controller = ctx.controller;
        for request in alters {
            self.send_sync_request(ctx, mirror, controller, request, SyncRequest::Apply);
        }
    }

    fn sync_acls(&mut self, ctx: &mut BrokerContext<'_>, mirror: &str, settings: &SyncSettings) {
        let Some(source) = &self.rounds[mirror].source_acls else {
            return;
        };
        let (create, delete) = settings.acl_changes(source, &ctx.image.acls);
        let controller = ctx.controller;
        if !create.is_empty() {
            let request = Request::Controller(ControllerRequest::CreateAcls { bindings: create });
            self.send_sync_request(ctx, mirror, controller, request, SyncRequest::Apply);
        }
        if !delete.is_empty() {
            let request = Request::Controller(ControllerRequest::DeleteAcls { bindings: delete });
            self.send_sync_request(ctx, mirror, controller, request, SyncRequest::Apply);
        }
    }

    fn sync_group_offsets(&mut self, ctx: &mut BrokerContext<'_>, mirror: &str) {
        let active: BTreeSet<String> = MirrorDirectory::of(ctx)
            .active_topics(mirror)
            .into_iter()
            .collect();
        let unclamped = self.config.design == MirrorDesign::UnclampedOffsetSync;
        let round = &self.rounds[mirror];
        let by_topic_state = !self.config.design.syncs_mirroring_partitions_only();
        let verified: BTreeSet<TopicPartition> = self
            .sync_candidates(ctx, mirror)
            .into_iter()
            .filter(|(id, _)| {
                by_topic_state || round.states_verified.get(id) == round.states_described.get(id)
            })
            .map(|(_, tp)| tp)
            .collect();
        // Per group: the entries to commit, and per entry (source offset, high watermark read).
        let mut commits: Vec<(String, Vec<OffsetCommitEntry>, Vec<SyncedFrom>)> = Vec::new();
        for (group, offsets) in &round.source_offsets {
            let mut entries = Vec::new();
            let mut sources = Vec::new();
            for committed in offsets {
                let tp = &committed.topic_partition;
                if !active.contains(tp.topic.as_str())
                    || !verified.contains(tp)
                    || committed.offset.is_none()
                {
                    continue;
                }
                let bounds = (
                    round.destination_offsets.get(&(tp.clone(), true)),
                    round.destination_offsets.get(&(tp.clone(), false)),
                );
                let (Some(&log_start), Some(&log_end)) = bounds else {
                    continue;
                };
                let source = (committed.offset.0, committed.leader_epoch.0);
                let synced = if unclamped {
                    Some(source)
                } else {
                    clamp_group_offset(source, OffsetBounds { log_start, log_end })
                };
                let Some((offset, leader_epoch)) = synced else {
                    if source.1 > log_end.1 {
                        ctx.events.push(BrokerEvent::MirrorOffsetSyncDeferred {
                            group_id: group.clone(),
                            topic_partition: tp.clone(),
                            source_offset: committed.offset,
                            source_epoch: committed.leader_epoch,
                            destination_epoch: LeaderEpoch(log_end.1),
                        });
                    }
                    continue;
                };
                entries.push(OffsetCommitEntry {
                    topic_partition: tp.clone(),
                    offset: Offset(offset),
                    leader_epoch: LeaderEpoch(leader_epoch),
                    metadata: committed.metadata.clone(),
                    topic_id: None,
                });
                sources.push((committed.offset.0, log_end.0));
            }
            if !entries.is_empty() {
                commits.push((group.clone(), entries, sources));
            }
        }
        for (group, entries, sources) in commits {
            let Some(partition) =
                coordinator_partition_in(ctx.image, CONSUMER_OFFSETS_TOPIC, &group)
            else {
                // As an admin's FindCoordinator would: create the offsets topic, and commit
                // next round.
                let request = internal_topic_creation(
                    CONSUMER_OFFSETS_TOPIC,
                    self.config.offsets_topic_partitions,
                    self.config.replication_factor,
                );
                ctx.outbox.request(ctx.controller, request);
                continue;
            };
            let Some(coordinator) = ctx.image.partition(&partition).and_then(|r| r.leader) else {
                continue; // No coordinator right now: next round.
            };
            for (entry, (source_offset, high_watermark_read)) in entries.iter().zip(sources) {
                ctx.events.push(BrokerEvent::MirrorOffsetSynced {
                    group_id: group.clone(),
                    topic_partition: entry.topic_partition.clone(),
                    offset: entry.offset,
                    source_offset: Offset(source_offset),
                    high_watermark_read: Offset(high_watermark_read),
                });
            }
            let to = NodeId::Broker(ctx.node_id.cluster(), coordinator);
            let request = Request::Coordinator(CoordinatorRequest::OffsetCommit {
                group_id: group,
                member_id: String::new(),
                member_epoch: -1,
                offsets: entries,
            });
            self.send_sync_request(ctx, mirror, to, request, SyncRequest::Apply);
        }
    }
}

/// Where a synced offset came from: (the source's committed offset, the destination's high
/// watermark the round read).
type SyncedFrom = (i64, i64);

/// Keeps what an answer says in the round; whether the request succeeded.
fn record_sync_answer(
    round: &mut SyncRound,
    what: SyncRequest,
    response: Result<Response, ErrorCode>,
) -> bool {
    match (what, response) {
        (
            SyncRequest::States,
            Ok(Response::Coordinator(CoordinatorResponse::ReadMirrorStates {
                error,
                partitions,
                ..
            })),
        ) => {
            let states = if round.phase == Phase::Verify {
                &mut round.states_verified
            } else {
                &mut round.states_described
            };
            for status in partitions {
                if error.is_none() && status.error.is_none() {
                    states.insert(status.id, (status.state, status.state_epoch));
                }
            }
            error.is_none()
        }
        (
            SyncRequest::SourceMetadata(to),
            Ok(Response::Cluster(ClusterResponse::Metadata { brokers, topics })),
        ) => {
            round.source_topics = topics
                .iter()
                .filter(|topic| topic.error.is_none())
                .filter_map(|topic| {
                    let id = topic.topic_id?;
                    Some((topic.name.clone(), (id, topic.partitions.len() as i32)))
                })
                .collect();
            round.source_brokers = brokers
                .iter()
                .map(|id| NodeId::Broker(to.cluster(), *id))
                .collect();
            true
        }
        (
            SyncRequest::SourceAcls,
            Ok(Response::Cluster(ClusterResponse::DescribeAcls { error, bindings })),
        ) => {
            if error.is_none() {
                round.source_acls = Some(bindings.into_iter().collect());
            }
            error.is_none()
        }
        (
            SyncRequest::SourceConfigs,
            Ok(Response::Cluster(ClusterResponse::DescribeConfigs { results })),
        ) => {
            for result in results {
                if let (ConfigResource::Topic(topic), ErrorCode::None) =
                    (result.resource, result.error)
                {
                    round.source_configs.insert(topic, result.configs);
                }
            }
            true
        }
        (
            SyncRequest::ListGroups(broker),
            Ok(Response::Coordinator(CoordinatorResponse::ListGroups { error, groups })),
        ) => {
            for group in groups {
                round.source_groups.insert(group, broker);
            }
            error.is_none()
        }
        (
            SyncRequest::OffsetFetch(group),
            Ok(Response::Coordinator(CoordinatorResponse::OffsetFetch { error, offsets })),
        ) => {
            if error.is_none() {
                let offsets = offsets.into_iter().filter(|o| o.error.is_none()).collect();
                round.source_offsets.insert(group, offsets);
            }
            error.is_none()
        }
        (
            SyncRequest::DestinationOffsets(keys),
            Ok(Response::Replica(ReplicaResponse::ListOffsets { partitions })),
        ) => {
            // Answers come in query order. A partition is used only with both of its bounds.
            for (key, answer) in keys.into_iter().zip(partitions) {
                if answer.error.is_none() {
                    let bound = (answer.offset.0, answer.leader_epoch.0);
                    round.destination_offsets.insert(key, bound);
                }
            }
            true
        }
        (SyncRequest::Apply, Ok(_)) => true,
        _ => false,
    }
}
