//! Kafka's group coordinator as a coordinator shard: KIP-848 consumer groups (the coordinator
//! assigns partitions) and committed offsets, one shard per `__consumer_offsets` partition.
//!
//! Contract (Kafka's `GroupMetadataManager` and `OffsetMetadataManager`, reduced):
//! - **Ownership.** A request whose group id hashes to another partition of
//!   `__consumer_offsets` ([`ShardEnv::owns_key`]) is answered `NotCoordinator`, as is every
//!   request after [`Shard::unloaded`], and every request still waiting for a write when the
//!   shard is unloaded. A request before [`Shard::loaded`] is answered
//!   `CoordinatorLoadInProgress`, and one while the metadata image has no `__consumer_offsets`
//!   partitions `CoordinatorNotAvailable`.
//! - **Persisted state** ("write, then apply": it changes only in [`Shard::replay`]): per group
//!   its members with their subscriptions, the group epoch, the member-index counter and the
//!   committed offsets; the record format is [`GroupRecord`]. Every answer that depends on a
//!   write (join, subscription change, leave, commit) is sent in [`Shard::write_completed`]; a
//!   failed write is answered with Kafka's normalized error ([`normalize_write_error`]).
//! - **Group epoch.** Replaying a [`GroupRecord::Member`] that adds a member or changes its
//!   subscription, or a [`GroupRecord::MemberRemoved`] that removes one, bumps the group epoch
//!   by one. Replay is the only place it moves, so a new coordinator that replays the partition
//!   computes the same epochs.
//! - **ConsumerGroupHeartbeat.** Epoch 0 with an empty member id joins: the member gets the id
//!   `{group}-member-{e}-{n}`, where `e` is the coordinator epoch and `n` comes from a
//!   per-group counter that is persisted with the member. The epoch makes the id unique the
//!   way Kafka's random UUID is: a new coordinator's epoch is above every earlier one, so it
//!   never hands out an id again even when `__consumer_offsets` lost the tail that held the
//!   counter (a power loss of an unreplicated partition). The answer waits for the member's
//!   record. Epoch 0 with a known member id rejoins (Kafka's answer to a
//!   fenced member): the member keeps its id and is treated as owning nothing. Epoch −1 leaves
//!   (a tombstone record, answered with epoch −1 once written). Any other epoch must equal the
//!   epoch the coordinator last gave the member, else `FencedMemberEpoch`; an unknown member
//!   gets `UnknownMemberId`. A heartbeat with a changed subscription writes the member's
//!   record first. Every accepted heartbeat restarts the member's session.
//! - **Assignment.** The target assignment is a range assignor over the group's members, topic
//!   by topic: the members subscribed to a topic in member-id order, partitions `0..n` (n from
//!   the metadata image; unknown topics have none) cut into consecutive ranges, the first
//!   `n % members` ranges one longer. A member whose epoch is behind the group epoch moves to
//!   the group epoch and gets its target, except partitions another member may still own:
//!   those it gets by a later heartbeat, once the previous owner acknowledged losing them. A
//!   member acknowledges an assignment by heartbeating with the epoch that came with it, so
//!   partitions are only ever taken away together with an epoch change. The answer carries the
//!   assignment when it changed, on a join or rejoin, on a full heartbeat (one that carries the
//!   subscription: members send one after a failed heartbeat, whose lost answer may have added
//!   a released partition within the same epoch), and on a member's first heartbeat after a
//!   failover; otherwise `None`.
//! - **Sessions.** A member that does not heartbeat for `session_timeout_ms` is removed by a
//!   tombstone (see [`Shard::poll_timeout`]); a failed removal is retried a heartbeat interval
//!   later. After a failover every loaded member gets a fresh session from the load time.
//! - **OffsetCommit.** A commit with member epoch < 0 is an admin or "simple" commit and is
//!   accepted only while the group has no members, else `UnknownMemberId` (KIP-1279 §7 item 6:
//!   mirroring's offset sync must be refused for active groups). Otherwise the member must
//!   exist (`UnknownMemberId`; `GroupIdNotFound` if the group does not) and the epoch must be
//!   the member's current one (`FencedMemberEpoch`). Partitions of topics or partitions the
//!   metadata image does not know get `UnknownTopicOrPartition`, and ones naming a topic id the
//!   image does not give the name (OffsetCommit v10) `UnknownTopicId`; the others are written,
//!   one record per partition (offset, leader epoch, metadata, commit time, and the topic id:
//!   the commit's, else the image's), and answered once the write completes.
//! - **OffsetFetch** answers from replayed state: the committed offset, or −1 (with leader
//!   epoch −1) for a partition without one, or whose recorded topic id the image no longer
//!   gives the name (KAFKA-19141's check); `partitions: None` means every partition the group
//!   has. An unknown group is not an error. While writes are pending, the answer waits until
//!   the last of them completed (Kafka's consumers fetch with `requireStable`, which the
//!   coordinator runtime runs as a write operation), so a commit accepted before the fetch is
//!   never missed by it.
//! - **Topic deletion** (Kafka's `onPartitionsDeleted`): when the broker's image drops a topic,
//!   a loaded shard writes a tombstone ([`GroupRecord::OffsetDeleted`]) for every committed
//!   offset of it, so a topic created again under the name starts without offsets. A shard not
//!   loaded then (its leader failing over), or a failed write, leaves them, as Kafka's does; a
//!   shard tombstones them when it loads, as their recorded topic id is not the image's.
//! - **DescribeGroups** gives, per group, `Empty` (no members), `Reconciling` (a member's epoch
//!   is behind the group epoch, or it has not acknowledged a revocation), `Stable`, or `Dead`
//!   (unknown group), and the member ids in order. An empty id list describes every group of
//!   this shard. If any listed group belongs to another shard the whole answer is
//!   `NotCoordinator` (the broker routes a describe by its first group).
//!
//! Simplifications against Kafka, on purpose:
//! - Member epochs, assignments and sessions are not persisted (Kafka writes the target and
//!   current assignment of every member). After a failover a member's epoch is unknown: its
//!   first heartbeat with any epoch from 1 to the group epoch is accepted and answered with its
//!   full assignment at the group epoch, and its commits are refused with `FencedMemberEpoch`
//!   until then. Who owned what before the failover is unknown, so a partition that was moving
//!   between members when the coordinator failed may be fetched by both for up to a heartbeat
//!   interval (commits stay fenced by epoch). DescribeGroups says `Reconciling` until every
//!   loaded member has heartbeated.
//! - Member ids are made by the coordinator (Kafka ≥ 3.9 lets the member choose one, KIP-1082),
//!   so a duplicated join request makes a second member that nobody heartbeats for; it holds
//!   its target partitions until its session times out.
//! - No `ownedTopicPartitions` in heartbeats: a member's epoch acknowledgement stands in for
//!   it, and a heartbeat with the previous epoch is fenced instead of being accepted as a lost
//!   response. Kafka answers a commit with a stale member epoch `STALE_MEMBER_EPOCH` (113);
//!   this model answers `FencedMemberEpoch`.
//! - One server-side assignor (range); no static membership, rebalance timeout, regex
//!   subscriptions, classic-protocol groups, offset expiry or OffsetDelete, or transactional
//!   offset commits (a deleted topic's offsets are deleted: [`Shard::topics_deleted`]). A commit for a partition the metadata image does not have is refused
//!   (Kafka only checks the topic). A group-epoch bump when a subscribed topic gains
//!   partitions is not written (Kafka writes the group's new subscription metadata and bumps
//!   the epoch): the new partitions enter the targets at the next heartbeats, and a member
//!   already at the group epoch gets those nobody else holds added to what it keeps, so every
//!   partition is read, though not rebalanced until the next epoch change.
//! - Configuration is the shard's ([`GroupCoordinatorConfig`]), not the member's.

mod membership;
mod offsets;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{partition_count, Shard, ShardEnv, ShardOutput, ShardWrite};
use crate::common::TopicId;
use crate::metadata::MetadataImage;
use crate::protocol::{
    CommittedOffset, CoordinatorRequest, CoordinatorResponse, ErrorCode, GroupDescription, NodeId,
    OffsetCommitEntry, Response, TopicName, TopicPartition,
};

/// The group coordinator's settings (Kafka's `group.consumer.*` broker configs, scaled to the
/// simulation's time frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupCoordinatorConfig {
    /// `group.consumer.session.timeout.ms`: a member silent this long is removed. Default
    /// 1 000 (Kafka: 45 000).
    pub session_timeout_ms: i64,
    /// `group.consumer.heartbeat.interval.ms`: how often members heartbeat. Default 200
    /// (Kafka: 5 000).
    pub heartbeat_interval_ms: i64,
}

impl Default for GroupCoordinatorConfig {
    fn default() -> Self {
        Self {
            session_timeout_ms: 1_000,
            heartbeat_interval_ms: 200,
        }
    }
}

/// One record of a group shard's `__consumer_offsets` partition, stored as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum GroupRecord {
    /// A committed offset (Kafka's `OffsetCommitKey`/`OffsetCommitValue`); a later one for the
    /// same group and partition replaces it.
    OffsetCommit {
        /// Group id.
        group_id: String,
        /// The partition.
        topic_partition: TopicPartition,
        /// The offset (the next record to consume).
        offset: i64,
        /// Leader epoch of the record before the offset, or −1.
        leader_epoch: i32,
        /// Free-form metadata.
        metadata: String,
        /// The coordinator's clock when the commit was accepted.
        commit_timestamp_ms: i64,
        /// An admin (or "simple") commit to a group without members, which may move the offset
        /// anywhere (an admin reset, or mirroring's offset sync), unlike a member's commit.
        #[serde(default)]
        by_admin: bool,
        /// The id of the topic the offset is of (Kafka's `OffsetCommitValue.TopicId`,
        /// KAFKA-19141): a topic deleted and created again under the name has another id, and
        /// the offset is not its.
        #[serde(default)]
        topic_id: Option<TopicId>,
    },
    /// A member joined or changed its subscription (Kafka's `ConsumerGroupMemberMetadata`).
    /// Bumps the group epoch when it adds the member or changes its subscription.
    Member {
        /// Group id.
        group_id: String,
        /// Member id, `{group}-member-{coordinator_epoch}-{member_index}`.
        member_id: String,
        /// The counter value the id was made from; the group's next id uses a larger one.
        member_index: u64,
        /// Subscribed topics, sorted, without duplicates.
        subscribed_topics: Vec<String>,
    },
    /// A member left or its session expired (the member's tombstone). Bumps the group epoch
    /// when it removes a member.
    MemberRemoved {
        /// Group id.
        group_id: String,
        /// Member id.
        member_id: String,
    },
    /// The tombstone of a committed offset (Kafka's `OffsetCommitKey` with a null value),
    /// written when the offset's topic is deleted.
    OffsetDeleted {
        /// Group id.
        group_id: String,
        /// The partition.
        topic_partition: TopicPartition,
    },
}

/// A committed offset as the shard holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetAndMetadata {
    /// The offset.
    pub offset: i64,
    /// Its leader epoch, or −1.
    pub leader_epoch: i32,
    /// Its metadata.
    pub metadata: String,
    /// When it was committed (coordinator clock).
    pub commit_timestamp_ms: i64,
    /// Written by an admin commit (member epoch < 0) to a group without members.
    pub by_admin: bool,
    /// The id of the topic the offset is of, if recorded.
    pub topic_id: Option<TopicId>,
}

impl OffsetAndMetadata {
    /// Whether the offset is of the topic `image` names `topic`: not when the image gives the
    /// name another id than the one recorded (the topic was deleted, or deleted and created
    /// again). An offset without a recorded id is taken to be.
    pub fn is_of_current_topic(&self, image: &MetadataImage, topic: &str) -> bool {
        self.topic_id
            .is_none_or(|recorded| image.topic_ids.get(topic) == Some(&recorded))
    }
}

/// A group's persisted state (built by replay only).
#[derive(Debug, Clone, Default)]
struct GroupState {
    epoch: i32,
    next_member_index: u64,
    /// Member id → subscribed topics.
    members: BTreeMap<String, Vec<String>>,
    offsets: BTreeMap<TopicPartition, OffsetAndMetadata>,
}

/// What the coordinator remembers about a member besides its record (not persisted).
#[derive(Debug, Clone, Default)]
struct MemberRuntime {
    /// The epoch last given to the member; `None` after a failover until it heartbeats.
    epoch: Option<i32>,
    /// The partitions last given to the member.
    assigned: BTreeSet<TopicPartition>,
    /// Partitions taken away with the last epoch change that the member has not yet
    /// acknowledged (it may still fetch them).
    revoking: BTreeSet<TopicPartition>,
    /// The session ends at this time; `None` until the next call that knows the time.
    session_deadline_ms: Option<i64>,
    /// A tombstone for the member is being written.
    removing: bool,
}

/// A request waiting for its write.
#[derive(Debug, Clone)]
enum PendingWrite {
    /// A join, rejoin or subscription change: answer with the member's assignment.
    Heartbeat {
        to: NodeId,
        correlation_id: u64,
        group_id: String,
        member_id: String,
        member_epoch: i32,
    },
    /// A leave.
    Leave {
        to: NodeId,
        correlation_id: u64,
        group_id: String,
        member_id: String,
    },
    /// A session expiry (nobody to answer).
    Expiry { group_id: String, member_id: String },
    /// A commit: the per-partition results; `None` entries take the write's outcome.
    Commit {
        to: NodeId,
        correlation_id: u64,
        results: Vec<(TopicPartition, Option<ErrorCode>)>,
    },
    /// The tombstones of a deleted topic's offsets (nobody to answer; a failed write leaves
    /// the offsets, as Kafka's does).
    OffsetCleanup,
}

/// An OffsetFetch waiting for the writes before it (Kafka's `requireStable` fetch, which the
/// coordinator runtime schedules as a write operation).
#[derive(Debug, Clone)]
struct StableFetch {
    /// Answer once the write with this id (the last one pending at the request) completed.
    after_write_id: u64,
    to: NodeId,
    correlation_id: u64,
    group_id: String,
    partitions: Option<Vec<TopicPartition>>,
}

/// The group coordinator shard; see the module doc.
#[derive(Debug, Clone)]
pub struct GroupCoordinatorShard {
    config: GroupCoordinatorConfig,
    groups: BTreeMap<String, GroupState>,
    /// Group id → member id → runtime state; holds exactly the members of `groups`.
    runtime: BTreeMap<String, BTreeMap<String, MemberRuntime>>,
    /// Group id → the next member index to hand out (covers joins still being written).
    allocated_member_index: BTreeMap<String, u64>,
    pending: BTreeMap<u64, PendingWrite>,
    /// OffsetFetch answers held until every write asked for before them completed.
    stable_fetches: Vec<StableFetch>,
    next_write_id: u64,
    loaded: bool,
    unloaded: bool,
}

impl Default for GroupCoordinatorShard {
    fn default() -> Self {
        Self::new(GroupCoordinatorConfig::default())
    }
}

/// Kafka's `GroupCoordinatorService.normalizeException` for a failed write.
pub fn normalize_write_error(error: ErrorCode) -> ErrorCode {
    match error {
        ErrorCode::UnknownTopicOrPartition
        | ErrorCode::NotEnoughReplicas
        | ErrorCode::NotEnoughReplicasAfterAppend
        | ErrorCode::RequestTimedOut => ErrorCode::CoordinatorNotAvailable,
        ErrorCode::NotLeaderOrFollower | ErrorCode::KafkaStorageError => ErrorCode::NotCoordinator,
        // UNKNOWN_SERVER_ERROR in Kafka.
        ErrorCode::MessageTooLarge | ErrorCode::CorruptMessage | ErrorCode::InvalidRecord => {
            ErrorCode::Other(-1)
        }
        other => other,
    }
}

impl GroupCoordinatorShard {
    /// An empty shard, to be loaded by replay.
    pub fn new(config: GroupCoordinatorConfig) -> Self {
        assert!(config.session_timeout_ms > 0, "session timeout must be > 0");
        assert!(
            config.heartbeat_interval_ms > 0,
            "heartbeat interval must be > 0"
        );
        Self {
            config,
            groups: BTreeMap::new(),
            runtime: BTreeMap::new(),
            allocated_member_index: BTreeMap::new(),
            pending: BTreeMap::new(),
            stable_fetches: Vec::new(),
            next_write_id: 1,
            loaded: false,
            unloaded: false,
        }
    }

    // ----- read-only getters (for checkers) -----

    /// The configuration.
    pub fn config(&self) -> &GroupCoordinatorConfig {
        &self.config
    }

    /// Every group this shard knows, in order.
    pub fn group_ids(&self) -> Vec<String> {
        self.groups.keys().cloned().collect()
    }

    /// The committed offsets of `group_id` (empty for an unknown group).
    pub fn committed_offsets(&self, group_id: &str) -> BTreeMap<TopicPartition, OffsetAndMetadata> {
        self.groups
            .get(group_id)
            .map(|group| group.offsets.clone())
            .unwrap_or_default()
    }

    /// The member ids of `group_id`, in order (empty for an unknown group).
    pub fn members(&self, group_id: &str) -> Vec<String> {
        self.groups
            .get(group_id)
            .map(|group| group.members.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The group epoch of `group_id` (0 for an unknown group).
    pub fn group_epoch(&self, group_id: &str) -> i32 {
        self.groups.get(group_id).map_or(0, |group| group.epoch)
    }

    /// The epoch last given to a member, if known.
    pub fn member_epoch(&self, group_id: &str, member_id: &str) -> Option<i32> {
        self.runtime.get(group_id)?.get(member_id)?.epoch
    }

    /// The partitions last given to a member (empty for an unknown member).
    pub fn member_assignment(&self, group_id: &str, member_id: &str) -> Vec<TopicPartition> {
        self.runtime
            .get(group_id)
            .and_then(|members| members.get(member_id))
            .map(|member| member.assigned.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The range assignor's target for every member of `group_id` under `image`.
    pub fn target_assignment(
        &self,
        group_id: &str,
        image: &MetadataImage,
    ) -> BTreeMap<String, BTreeSet<TopicPartition>> {
        self.groups
            .get(group_id)
            .map(|group| range_assignment(&group.members, image))
            .unwrap_or_default()
    }

    /// Requests waiting for a write.
    pub fn pending_writes(&self) -> usize {
        self.pending.len()
    }

    // ----- helpers -----

    fn write(&mut self, records: Vec<GroupRecord>, pending: PendingWrite, out: &mut Out) {
        let write_id = self.next_write_id;
        self.next_write_id += 1;
        self.pending.insert(write_id, pending);
        out.writes.push(ShardWrite { write_id, records });
    }

    /// Members replayed since the last call that knew the time start their session now.
    fn arm_sessions(&mut self, now_ms: i64) {
        let session_timeout_ms = self.config.session_timeout_ms;
        for member in self.runtime.values_mut().flat_map(BTreeMap::values_mut) {
            member
                .session_deadline_ms
                .get_or_insert(now_ms + session_timeout_ms);
        }
    }

    /// Why this shard may not answer for `group_id`, if it may not.
    fn ownership_error(&self, env: &ShardEnv<'_>, group_id: &str) -> Option<ErrorCode> {
        if self.unloaded {
            return Some(ErrorCode::NotCoordinator);
        }
        if !self.loaded {
            return Some(ErrorCode::CoordinatorLoadInProgress);
        }
        match env.owns_key(group_id) {
            None => Some(ErrorCode::CoordinatorNotAvailable),
            Some(false) => Some(ErrorCode::NotCoordinator),
            Some(true) => None,
        }
    }

    fn member_runtime(&mut self, group_id: &str, member_id: &str) -> Option<&mut MemberRuntime> {
        self.runtime.get_mut(group_id)?.get_mut(member_id)
    }

    fn is_live_member(&self, group_id: &str, member_id: &str) -> bool {
        self.runtime
            .get(group_id)
            .and_then(|members| members.get(member_id))
            .is_some_and(|member| !member.removing)
    }

    // ----- ConsumerGroupHeartbeat -----

    // ----- OffsetCommit, OffsetFetch, DescribeGroups -----
}

type Out = ShardOutput<GroupRecord>;

/// The answer to a request whose write ended with `error` (not for a successful join or leave).
fn pending_response(pending: PendingWrite, error: ErrorCode) -> Option<(NodeId, u64, Response)> {
    match pending {
        PendingWrite::Heartbeat {
            to,
            correlation_id,
            member_id,
            member_epoch,
            ..
        } => Some((
            to,
            correlation_id,
            heartbeat_error(&member_id, member_epoch, error),
        )),
        PendingWrite::Leave {
            to,
            correlation_id,
            member_id,
            ..
        } => Some((to, correlation_id, heartbeat_error(&member_id, -1, error))),
        PendingWrite::Expiry { .. } | PendingWrite::OffsetCleanup => None,
        PendingWrite::Commit {
            to, correlation_id, ..
        } => Some((to, correlation_id, commit_response(pending, error))),
    }
}

fn heartbeat_error(member_id: &str, member_epoch: i32, error: ErrorCode) -> Response {
    Response::Coordinator(CoordinatorResponse::ConsumerGroupHeartbeat {
        error,
        member_id: member_id.to_owned(),
        member_epoch,
        heartbeat_interval_ms: 0,
        assignment: None,
    })
}

fn describe_error(error: ErrorCode) -> Response {
    Response::Coordinator(CoordinatorResponse::DescribeGroups {
        error,
        groups: Vec::new(),
    })
}

/// The answer to a commit whose write ended with `outcome`.
fn commit_response(pending: PendingWrite, outcome: ErrorCode) -> Response {
    let PendingWrite::Commit { results, .. } = pending else {
        unreachable!("a commit");
    };
    Response::Coordinator(CoordinatorResponse::OffsetCommit {
        results: results
            .into_iter()
            .map(|(topic_partition, error)| (topic_partition, error.unwrap_or(outcome)))
            .collect(),
    })
}

fn normalize_topics(mut topics: Vec<String>) -> Vec<String> {
    topics.sort();
    topics.dedup();
    topics
}

/// The counter value of a member id made by a group shard (`{group}-member-{epoch}-{n}`).
fn member_index_of(group_id: &str, member_id: &str) -> u64 {
    member_id
        .strip_prefix(group_id)
        .and_then(|rest| rest.strip_prefix("-member-"))
        .and_then(|rest| rest.split_once('-'))
        .and_then(|(_epoch, index)| index.parse().ok())
        .expect("member ids are made by this shard")
}

/// The range assignor: per topic, its subscribers in member-id order get consecutive ranges,
/// the first `partitions % subscribers` one partition longer.
pub fn range_assignment(
    members: &BTreeMap<String, Vec<String>>,
    image: &MetadataImage,
) -> BTreeMap<String, BTreeSet<TopicPartition>> {
    let mut assignment: BTreeMap<String, BTreeSet<TopicPartition>> = members
        .keys()
        .map(|member_id| (member_id.clone(), BTreeSet::new()))
        .collect();
    let topics: BTreeSet<&String> = members.values().flatten().collect();
    for topic in topics {
        let subscribers: Vec<&String> = members
            .iter()
            .filter(|(_, topics)| topics.contains(topic))
            .map(|(member_id, _)| member_id)
            .collect();
        let partitions = partition_count(image, topic);
        let count = subscribers.len() as i32;
        let (per_member, extra) = (partitions / count, partitions % count);
        let mut next = 0;
        for (index, member_id) in subscribers.into_iter().enumerate() {
            let length = per_member + i32::from((index as i32) < extra);
            let owned = assignment
                .get_mut(member_id)
                .expect("every member has an entry");
            owned.extend(
                (next..next + length)
                    .map(|partition| TopicPartition::new(topic.clone(), partition)),
            );
            next += length;
        }
        debug_assert_eq!(next, partitions, "every partition of {topic} is assigned");
    }
    assignment
}

impl Shard for GroupCoordinatorShard {
    type Record = GroupRecord;

    fn replay(&mut self, record: &GroupRecord) {
        match record {
            GroupRecord::OffsetCommit {
                group_id,
                topic_partition,
                offset,
                leader_epoch,
                metadata,
                commit_timestamp_ms,
                by_admin,
                topic_id,
            } => {
                let group = self.groups.entry(group_id.clone()).or_default();
                self.runtime.entry(group_id.clone()).or_default();
                group.offsets.insert(
                    topic_partition.clone(),
                    OffsetAndMetadata {
                        offset: *offset,
                        leader_epoch: *leader_epoch,
                        metadata: metadata.clone(),
                        commit_timestamp_ms: *commit_timestamp_ms,
                        by_admin: *by_admin,
                        topic_id: *topic_id,
                    },
                );
            }
            GroupRecord::Member {
                group_id,
                member_id,
                member_index,
                subscribed_topics,
            } => {
                let group = self.groups.entry(group_id.clone()).or_default();
                group.next_member_index = group.next_member_index.max(member_index + 1);
                let previous = group
                    .members
                    .insert(member_id.clone(), subscribed_topics.clone());
                if previous.as_ref() != Some(subscribed_topics) {
                    group.epoch += 1;
                }
                self.runtime
                    .entry(group_id.clone())
                    .or_default()
                    .entry(member_id.clone())
                    .or_default();
            }
            GroupRecord::OffsetDeleted {
                group_id,
                topic_partition,
            } => {
                if let Some(group) = self.groups.get_mut(group_id) {
                    group.offsets.remove(topic_partition);
                }
            }
            GroupRecord::MemberRemoved {
                group_id,
                member_id,
            } => {
                let group = self.groups.entry(group_id.clone()).or_default();
                if group.members.remove(member_id).is_some() {
                    group.epoch += 1;
                }
                self.runtime
                    .entry(group_id.clone())
                    .or_default()
                    .remove(member_id);
            }
        }
    }

    fn loaded(&mut self, env: &ShardEnv<'_>, out: &mut Out) {
        self.loaded = true;
        self.arm_sessions(env.now_ms);
        self.delete_offsets_of_deleted_topics(env.image, out);
    }

    fn handle_request(
        &mut self,
        env: &ShardEnv<'_>,
        from: NodeId,
        correlation_id: u64,
        request: CoordinatorRequest,
        out: &mut Out,
    ) {
        self.arm_sessions(env.now_ms);
        match request {
            CoordinatorRequest::ConsumerGroupHeartbeat {
                group_id,
                member_id,
                member_epoch,
                subscribed_topics,
            } => self.handle_heartbeat(
                env,
                from,
                correlation_id,
                group_id,
                member_id,
                member_epoch,
                subscribed_topics,
                out,
            ),
            CoordinatorRequest::OffsetCommit {
                group_id,
                member_id,
                member_epoch,
                offsets,
            } => self.handle_offset_commit(
                env,
                from,
                correlation_id,
                group_id,
                member_id,
                member_epoch,
                offsets,
                out,
            ),
            CoordinatorRequest::OffsetFetch {
                group_id,
                partitions,
            } => match self.pending.keys().next_back() {
                // A commit still being written would be missed by an answer now: a member
                // taking over a revoked partition would rewind to the older offset.
                Some(&last) if self.ownership_error(env, &group_id).is_none() => {
                    self.stable_fetches.push(StableFetch {
                        after_write_id: last,
                        to: from,
                        correlation_id,
                        group_id,
                        partitions,
                    });
                }
                _ => {
                    let response = self.handle_offset_fetch(env, &group_id, partitions);
                    out.responses.push((from, correlation_id, response));
                }
            },
            CoordinatorRequest::DescribeGroups { group_ids } => {
                let response = self.handle_describe_groups(env, group_ids);
                out.responses.push((from, correlation_id, response));
            }
            // The broker routes only group requests here; anything else has no answer.
            _ => {}
        }
    }

    fn handle_response(
        &mut self,
        _env: &ShardEnv<'_>,
        _token: u64,
        _response: Result<Response, ErrorCode>,
        _out: &mut Out,
    ) {
        // The group coordinator sends no requests.
    }

    fn write_completed(
        &mut self,
        env: &ShardEnv<'_>,
        write_id: u64,
        result: Result<(), ErrorCode>,
        out: &mut Out,
    ) {
        self.arm_sessions(env.now_ms);
        // Writes complete in order: every fetch waiting for this one (or an earlier one) may
        // answer now, from state that includes it.
        let (ready, waiting): (Vec<StableFetch>, Vec<StableFetch>) =
            std::mem::take(&mut self.stable_fetches)
                .into_iter()
                .partition(|fetch| fetch.after_write_id <= write_id);
        self.stable_fetches = waiting;
        for fetch in ready {
            let response = self.handle_offset_fetch(env, &fetch.group_id, fetch.partitions);
            out.responses
                .push((fetch.to, fetch.correlation_id, response));
        }
        let Some(pending) = self.pending.remove(&write_id) else {
            return;
        };
        let error = match result {
            Ok(()) => ErrorCode::None,
            Err(error) => normalize_write_error(error),
        };
        match pending {
            PendingWrite::Heartbeat {
                to,
                correlation_id,
                group_id,
                member_id,
                member_epoch,
            } if error.is_none() => {
                // The member may have been removed by a write that completed in between.
                let response = if self.is_live_member(&group_id, &member_id) {
                    self.reconcile(env, &group_id, &member_id, member_epoch == 0)
                } else {
                    heartbeat_error(&member_id, member_epoch, ErrorCode::UnknownMemberId)
                };
                out.responses.push((to, correlation_id, response));
            }
            PendingWrite::Leave {
                to,
                correlation_id,
                group_id,
                member_id,
            } => {
                let response = if error.is_none() {
                    Response::Coordinator(CoordinatorResponse::ConsumerGroupHeartbeat {
                        error,
                        member_id,
                        member_epoch: -1,
                        heartbeat_interval_ms: 0,
                        assignment: None,
                    })
                } else {
                    // The tombstone failed: the member stays until it leaves again or its
                    // session ends.
                    if let Some(member) = self.member_runtime(&group_id, &member_id) {
                        member.removing = false;
                    }
                    heartbeat_error(&member_id, -1, error)
                };
                out.responses.push((to, correlation_id, response));
            }
            PendingWrite::Expiry {
                group_id,
                member_id,
            } => {
                if !error.is_none() {
                    // The tombstone failed: try again a heartbeat interval from now.
                    let retry_ms = env.now_ms + self.config.heartbeat_interval_ms;
                    if let Some(member) = self.member_runtime(&group_id, &member_id) {
                        member.removing = false;
                        member.session_deadline_ms = Some(retry_ms);
                    }
                }
            }
            pending => out.responses.extend(pending_response(pending, error)),
        }
    }

    fn handle_timeout(&mut self, env: &ShardEnv<'_>, out: &mut Out) {
        self.arm_sessions(env.now_ms);
        let expired: Vec<(String, String)> = self
            .runtime
            .iter()
            .flat_map(|(group_id, members)| {
                members
                    .iter()
                    .filter(|(_, member)| {
                        !member.removing
                            && member
                                .session_deadline_ms
                                .is_some_and(|deadline_ms| deadline_ms <= env.now_ms)
                    })
                    .map(move |(member_id, _)| (group_id.clone(), member_id.clone()))
            })
            .collect();
        for (group_id, member_id) in expired {
            self.member_runtime(&group_id, &member_id)
                .expect("listed above")
                .removing = true;
            let record = GroupRecord::MemberRemoved {
                group_id: group_id.clone(),
                member_id: member_id.clone(),
            };
            self.write(
                vec![record],
                PendingWrite::Expiry {
                    group_id,
                    member_id,
                },
                out,
            );
        }
    }

    fn topics_deleted(&mut self, _env: &ShardEnv<'_>, topics: &[TopicName], out: &mut Out) {
        if !self.loaded || self.unloaded {
            return;
        }
        // Kafka's `OffsetMetadataManager.onPartitionsDeleted`: one tombstone per committed
        // offset of a deleted topic, so a group never resumes a topic created again under the
        // same name at an offset of the deleted one's.
        self.delete_offsets_where(|partition, _| topics.contains(&partition.topic), out);
    }

    fn poll_timeout(&self) -> Option<i64> {
        self.runtime
            .values()
            .flat_map(BTreeMap::values)
            .filter(|member| !member.removing)
            .filter_map(|member| member.session_deadline_ms)
            .min()
    }

    fn unloaded(&mut self, out: &mut Out) {
        self.unloaded = true;
        for (_, pending) in std::mem::take(&mut self.pending) {
            out.responses
                .extend(pending_response(pending, ErrorCode::NotCoordinator));
        }
        for fetch in std::mem::take(&mut self.stable_fetches) {
            let response = Response::Coordinator(CoordinatorResponse::OffsetFetch {
                error: ErrorCode::NotCoordinator,
                offsets: Vec::new(),
            });
            out.responses
                .push((fetch.to, fetch.correlation_id, response));
        }
    }
}

#[cfg(test)]
#[path = "group_tests.rs"]
mod tests;
