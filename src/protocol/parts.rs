//! The parts requests and responses share: partitions of a fetch or an offset lookup and
//! their answers, a topic to create, transaction markers, committed offsets, a mirror
//! partition's state as the mirror coordinator and DescribeMirror carry it, and the small
//! enums (`acks`, coordinator kinds, mirror topic operations).

use crate::log::{AbortedTransaction, EpochEndOffset};
use crate::record::RecordBatch;

use crate::common::{
    ErrorCode, LeaderEpoch, Offset, ProducerEpoch, ProducerId, TopicId, TopicPartition,
};

/// `acks` of a produce request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Acks {
    /// acks=1: the leader's append is enough.
    Leader,
    /// acks=all (-1): every ISR member must have the batch, and the ISR must be at least
    /// `min.insync.replicas` when the leader appends.
    All,
}

/// The topic-membership operations of KIP-1279's admin API.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum MirrorTopicOperation {
    /// AddTopicsToMirror: `mirror.name = <mirror>`.
    Add,
    /// RemoveTopicsFromMirror (failover): `mirror.name = <mirror>.removed`.
    Remove,
    /// PauseMirrorTopics: `mirror.name = <mirror>.paused`.
    Pause,
    /// ResumeMirrorTopics: `mirror.name = <mirror>` again.
    Resume,
}

/// A member topic's desired state as ListMirrors filters it (the prototype's
/// `ListClusterMirrorsOptions.desiredStateFilter`, by `MirrorPartitionState` name): what its
/// `mirror.name` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ListedState {
    /// `mirror.name = <mirror>`.
    Mirroring,
    /// `mirror.name = <mirror>.paused`.
    Paused,
    /// `mirror.name = <mirror>.removed`.
    Stopped,
}

/// The filters of a ListMirrors request (the prototype's `ListClusterMirrorsOptions`). An
/// empty `names` or `source_cluster_ids` matches every mirror; an empty `desired_states`
/// stands for the prototype's default, MIRRORING and PAUSED. A mirror that passes the first
/// two is listed with the member topics whose desired state passes the third (none, maybe).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListMirrorsFilter {
    /// Mirror names (`mirrorNameFilter`).
    pub names: Vec<String>,
    /// Source cluster ids as recorded at CreateMirror (`sourceClusterIdFilter`).
    pub source_cluster_ids: Vec<String>,
    /// Desired states of the listed topics (`desiredStateFilter`).
    pub desired_states: Vec<ListedState>,
}

impl ListMirrorsFilter {
    /// Every mirror with every member topic, whatever its desired state.
    pub fn everything() -> Self {
        Self {
            desired_states: vec![
                ListedState::Mirroring,
                ListedState::Paused,
                ListedState::Stopped,
            ],
            ..Self::default()
        }
    }

    /// Whether a topic in `state` is listed.
    pub fn lists_state(&self, state: ListedState) -> bool {
        if self.desired_states.is_empty() {
            matches!(state, ListedState::Mirroring | ListedState::Paused)
        } else {
            self.desired_states.contains(&state)
        }
    }

    /// Whether the mirror `name`, created from the cluster `source_cluster_id` (if recorded), is
    /// listed.
    pub fn lists_mirror(&self, name: &str, source_cluster_id: Option<&str>) -> bool {
        (self.names.is_empty() || self.names.iter().any(|n| n == name))
            && (self.source_cluster_ids.is_empty()
                || source_cluster_id
                    .is_some_and(|id| self.source_cluster_ids.iter().any(|s| s == id)))
    }
}

/// One mirror in a ListMirrors answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorListing {
    /// The mirror's name.
    pub name: String,
    /// Its properties, in name order.
    pub configs: Vec<(String, String)>,
    /// Its topics with their `mirror.name` values, in topic order.
    pub topics: Vec<(String, String)>,
}

/// A mirror partition as the mirror coordinator keys it (with the mirror name).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct MirrorPartitionId {
    /// The destination topic's id (the source's: mirrored topics keep it).
    pub topic_id: TopicId,
    /// The partition.
    pub partition: i32,
}

/// One partition of a WriteMirrorStates request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorStateWrite {
    /// The partition.
    pub id: MirrorPartitionId,
    /// The new state; `None` writes only the last mirrored epoch.
    pub state: Option<crate::common::MirrorState>,
    /// The writer's leader epoch of the partition (−1: not checked).
    pub leader_epoch: LeaderEpoch,
    /// The state epoch the writer last read (−1: not checked).
    pub state_epoch: i32,
    /// Why the partition failed (FAILED only).
    pub error_message: Option<String>,
    /// The failure must not be retried (FAILED only).
    pub non_retryable: bool,
    /// The last mirrored (epoch, end offset) to persist, if any.
    pub last_mirrored: Option<(LeaderEpoch, Offset)>,
    /// With a state: as far as the writer knows, nothing was cut from or mirrored into the
    /// partition's log since it last left UNKNOWN or STOPPED, so it holds this cluster's own
    /// writes only (this model's addition to the KIP's record, for the next leader).
    pub own_writes_only: bool,
    /// RecoverMirrorTopics: the write takes a FAILED partition back to the state it retries
    /// to with its failure record (retry count, error) cleared, a fresh budget of retries.
    pub recover: bool,
    /// The source topic id the partition mirrors, once the writer knows it; stored until
    /// the partition is STOPPED (this model's addition to the KIP's record: the KIP's
    /// destination topic has the source's topic id, which this model's pre-created
    /// destination topics need not, so the next leader learns it here). A source topic with
    /// another id is another topic: the partition fails non-retryably rather than mirror it.
    pub source_topic_id: Option<TopicId>,
}

/// One partition of a ReadMirrorStates answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorPartitionStatus {
    /// The partition.
    pub id: MirrorPartitionId,
    /// `None`, or why this partition could not be read (e.g. `NotCoordinator`).
    pub error: ErrorCode,
    /// The stored state (`Unknown` without a record).
    pub state: crate::common::MirrorState,
    /// The greatest leader epoch any accepted write carried (−1 if none).
    pub leader_epoch: LeaderEpoch,
    /// The stored state epoch (−1 without a record).
    pub state_epoch: i32,
    /// The state before FAILED.
    pub previous_state: Option<crate::common::MirrorState>,
    /// 0: not failed; n ≥ 1: the n-th failure; −1: non-retryable.
    pub retry_attempt: i16,
    /// Why it failed.
    pub error_message: Option<String>,
    /// The last mirrored (epoch, end offset), if persisted.
    pub last_mirrored: Option<(LeaderEpoch, Offset)>,
    /// The stored state's `own_writes_only` (see [`MirrorStateWrite::own_writes_only`]).
    pub own_writes_only: bool,
    /// The stored source topic id (see [`MirrorStateWrite::source_topic_id`]).
    pub source_topic_id: Option<TopicId>,
}

/// One partition of a DescribeMirror answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorPartitionDescription {
    /// The destination partition.
    pub topic_partition: TopicPartition,
    /// What its mirror coordinator stores (`error` set when it could not be read).
    pub status: MirrorPartitionStatus,
    /// The destination leader's high watermark (−1 when unknown).
    pub high_watermark: Offset,
    /// The source leader's last stable offset, what mirroring copies up to (−1 when unknown).
    pub source_last_stable_offset: Offset,
    /// `source_last_stable_offset − high_watermark` while both are known and the partition
    /// is mirrored or paused; `None` otherwise.
    pub lag: Option<i64>,
}

/// Which coordinator a FindCoordinator asks for.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum CoordinatorType {
    /// The group coordinator (`__consumer_offsets`).
    Group,
    /// The transaction coordinator (`__transaction_state`).
    Transaction,
}

/// One marker of a WriteTxnMarkers request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMarker {
    /// Producer id of the transaction.
    pub producer_id: ProducerId,
    /// Producer epoch the marker carries.
    pub producer_epoch: ProducerEpoch,
    /// COMMIT (`true`) or ABORT.
    pub committed: bool,
    /// The coordinator's epoch (its `__transaction_state` partition leader epoch).
    pub coordinator_epoch: i32,
    /// Partitions to write the marker to.
    pub partitions: Vec<TopicPartition>,
}

/// One partition of an OffsetCommit request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitEntry {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// The committed offset (the next record to consume).
    pub offset: Offset,
    /// Leader epoch of the record before the offset, or −1.
    pub leader_epoch: LeaderEpoch,
    /// Free-form metadata.
    pub metadata: String,
    /// The topic id the committer means (OffsetCommit v10): a coordinator whose metadata
    /// gives the name another id (deleted and created again) refuses the partition with
    /// `UnknownTopicId`. `None` commits by name (an admin's or the mirror's offset sync); the
    /// coordinator then records the id its metadata has.
    pub topic_id: Option<TopicId>,
}

/// A committed offset as OffsetFetch returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// The offset, −1 if none.
    pub offset: Offset,
    /// Its leader epoch, or −1.
    pub leader_epoch: LeaderEpoch,
    /// Its metadata.
    pub metadata: String,
    /// Per-partition error.
    pub error: ErrorCode,
}

/// A group as DescribeGroups returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    /// Group id.
    pub group_id: String,
    /// `Empty`, `Stable`, `Assigning`, … (free-form in this model).
    pub state: String,
    /// Member ids.
    pub members: Vec<String>,
}

/// A topic to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTopic {
    /// Name.
    pub name: String,
    /// Partition count.
    pub partitions: i32,
    /// Replication factor.
    pub replication_factor: i16,
    /// Topic configs.
    pub configs: Vec<(String, String)>,
    /// A fixed topic id (mirrored topics keep the source's); `None` lets the controller choose.
    pub topic_id: Option<TopicId>,
}

/// One partition of a fetch request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPartition {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// The fetcher's view of the leader epoch (−1: no check).
    pub current_leader_epoch: LeaderEpoch,
    /// First offset wanted.
    pub fetch_offset: Offset,
    /// Epoch of the last batch the fetcher appended (−1: none; consumers send −1).
    pub last_fetched_epoch: LeaderEpoch,
    /// The topic id the fetcher means (Fetch v13+): a leader whose replica of the partition
    /// has another topic id (the topic was deleted and created again) refuses it with
    /// `UnknownTopicId` instead of serving another topic's records under the same name.
    /// `None` fetches by name (this model's consumers and followers); a KIP-1279 mirror
    /// fetcher sends the source topic id its partition mirrors, once known.
    pub topic_id: Option<TopicId>,
}

/// One partition of an OffsetsForLeaderEpoch request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochQuery {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// The asker's view of the leader epoch (−1: no check).
    pub current_leader_epoch: LeaderEpoch,
    /// The epoch whose end offset is wanted.
    pub leader_epoch: LeaderEpoch,
}

/// Which offset ListOffsets returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSpec {
    /// The log start offset.
    Earliest,
    /// The isolation's upper bound (LEO, HW or LSO).
    Latest,
}

/// One partition of a ListOffsets request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOffsetsQuery {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// The asker's view of the leader epoch (−1: no check).
    pub current_leader_epoch: LeaderEpoch,
    /// Which offset.
    pub spec: OffsetSpec,
}

/// One resource of a DescribeConfigs answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeConfigsResult {
    /// The resource.
    pub resource: crate::metadata::ConfigResource,
    /// `UnknownTopicOrPartition` for a topic the broker does not know, else `None`.
    pub error: ErrorCode,
    /// (name, value), sorted by name.
    pub configs: Vec<(String, String)>,
}

/// One partition of a fetch response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPartitionResponse {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// Error, or `None`.
    pub error: ErrorCode,
    /// Leader's high watermark before the read.
    pub high_watermark: Offset,
    /// Leader's last stable offset before the read.
    pub last_stable_offset: Offset,
    /// Leader's log start offset before the read.
    pub log_start_offset: Offset,
    /// Set when the fetcher's log diverges: truncate to at most this epoch's end offset.
    pub diverging_epoch: Option<EpochEndOffset>,
    /// Aborted transactions in range (READ_COMMITTED only).
    pub aborted_transactions: Option<Vec<AbortedTransaction>>,
    /// Whole batches, the first containing the fetch offset.
    pub batches: Vec<RecordBatch>,
}

impl FetchPartitionResponse {
    /// An answer for `topic_partition` that carries only `error`.
    pub fn error(topic_partition: &TopicPartition, error: ErrorCode) -> Self {
        Self {
            topic_partition: topic_partition.clone(),
            error,
            high_watermark: Offset::NONE,
            last_stable_offset: Offset::NONE,
            log_start_offset: Offset::NONE,
            diverging_epoch: None,
            aborted_transactions: None,
            batches: Vec::new(),
        }
    }
}

/// One partition of an OffsetsForLeaderEpoch response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochAnswer {
    /// Error, or `None`.
    pub error: ErrorCode,
    /// The largest epoch ≤ the requested one the leader knows, or −1.
    pub leader_epoch: LeaderEpoch,
    /// That epoch's end offset, or −1.
    pub end_offset: Offset,
}

/// One partition of a ListOffsets response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListOffsetsAnswer {
    /// Error, or `None`.
    pub error: ErrorCode,
    /// The offset.
    pub offset: Offset,
    /// The leader epoch of the offset's batch, or −1.
    pub leader_epoch: LeaderEpoch,
}
