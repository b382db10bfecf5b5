//! KIP-1279 on a broker: the MirrorMetadataManager and mirror fetcher for the mirror
//! partitions this broker leads (destination side), and the last-mirrored-epoch lookups it
//! answers for other clusters (source side). Seed design (spec §2–§4).
//!
//! Contract (destination side):
//! - **Tasks.** Every partition this broker leads whose topic has `mirror.name` gets a task,
//!   created when leadership or the config appears and dropped when either goes (the
//!   partition's `mirror_state` then falls back to `Unknown`, i.e. read-only). A task first
//!   reads the partition's state from the mirror coordinator (the leader of its
//!   `__mirror_state` partition; a local coordinator is reached through the broker's
//!   loopback), then decides with [`decide`] and persists every transition with
//!   WriteMirrorStates carrying the task's leader epoch, before it runs the new state's
//!   action. A new leader re-enters the current state (a self-transition write), which
//!   fences the previous leader's writes and re-runs the action. A read state whose leader
//!   epoch is above the task's was persisted by a newer leadership: the broker is a deposed
//!   leader behind on metadata and does not take it as its own (it reads again later, until
//!   the metadata drops the task). Steps are strictly
//!   sequential per task; a request unanswered within [`MIRROR_REQUEST_TIMEOUT_MS`] is
//!   retried after [`MIRROR_RETRY_BACKOFF_MS`].
//! - **PREPARING** asks a source broker for the last mirrored epoch (LME) the source recorded
//!   for this cluster; −1 truncates the whole log, otherwise the log is truncated at the end
//!   of epoch LME in the local epoch cache. The task then waits until every ISR follower's
//!   log end is at or below that point before it persists MIRRORING; every replica's with
//!   `mirror.support.unclean.leader.election=true`, and also when the cut removed records or
//!   PREPARING was re-entered (a replica outside the ISR could keep what was cut, and a
//!   mirrored batch of the same epoch number over it hides that from the divergence check;
//!   the KIP's ISR-only wait is the `prepare-awaits-isr` design).
//! - **MIRRORING** runs the mirror fetcher: consumer Fetch requests (isolation up to the
//!   source's LSO, the seed's choice) to the source partition leader, found through a
//!   metadata cache over the mirror's `bootstrap.servers`, with the local log end as the
//!   fetch offset and the local latest epoch as the last fetched epoch. Batches are appended
//!   exactly as fetched (`append_as_follower` on the leader: offsets, epochs, producer ids
//!   and CRCs unchanged), and the high watermark moves as the ISR replicates them. A
//!   diverging epoch truncates to the source's end of that epoch, and so does a fetched batch
//!   whose epoch is below the local latest (the source never lowers its epochs; the tail here
//!   carries a number the source re-used); OffsetOutOfRange below the
//!   source's log start restarts at it; one above means the source lost data it had served
//!   (an unclean election there): the partition FAILS non-retryably, unless the topic has
//!   `mirror.support.unclean.leader.election=true`, which cuts to the source's high watermark
//!   (Kafka's follower rule on the same answer) through the §4.7 path below.
//!   Spec §4.7: any of those cuts below the end the source had already shown it holds
//!   (`MirrorTask::source_confirmed_end`: a fetch answered without a divergence, moved up by
//!   each append, the log end for a new leadership of a mirroring partition, unknown after
//!   PREPARING until the first such answer) is a loss of records the source served (a new
//!   leadership's assumed log end is checked first with the source's last mirrored offset
//!   for this cluster: a cut at or above it removes only this cluster's own history, the
//!   previous leader having died between PREPARING and its first answer, and is followed):
//!   FAILED, non-retryable, nothing cut, unless the topic has
//!   `mirror.support.unclean.leader.election=true`, which makes the cut and persists
//!   ULE_RECOVERY (the late revision's state): no fetcher until every replica, not only the
//!   ISR, has truncated to the cut, then MIRRORING. `follows-source-loss` is the seed's
//!   fetcher, which always cuts and fetches on.
//!   DLE ≥ SLE (the later revision's rule, spec §4.4; `epochs-unfenced` is the seed's
//!   fetcher): a fetched batch whose epoch is above the leader epoch this broker leads the
//!   partition in is not appended; the leader asks the controller (BumpLeaderEpochs, same
//!   leader) for an epoch above the source's plus [`LEADER_EPOCH_BUMP_INCREMENT`], waits for
//!   metadata to show it, and fetches again. The state stays MIRRORING meanwhile, and a bump
//!   that fails is asked again; `epoch-fencing-state` is the late revision's persisted
//!   EPOCH_FENCING instead (MIRRORING → EPOCH_FENCING → bump → MIRRORING, a failed bump
//!   FAILED and retried to the state it failed in, as its prototype does). So
//!   every replica's mirrored epochs are at most the epoch it was led in, and any later
//!   leader's epoch, and its stop's bump, lies above them all, and above every epoch a synced
//!   group offset carries.
//!   Tail check (`tail-unverified` is the KIP's fetcher): mirrored batches keep their
//!   source's epochs, so after a source's mirroring cut refilled its log in the same epoch
//!   number, a downstream mirror's last fetched epoch names two histories and the divergence
//!   check passes. So a task's first fetch in each source leader epoch starts at the base of
//!   its own last batch and compares the source's batch there (in the design's stored form):
//!   equal, it appends only what lies above its log end; different, it cuts that batch (a
//!   mirroring cut) and checks the one before; an empty answer is asked again after the
//!   backoff. And a mirroring cut that removed records asks for a leader-epoch bump (same
//!   leader) before the next mirrored append, so that every change of this log's history
//!   comes with a new source epoch its own mirrors see.
//! - **PAUSING** drops the fetcher and persists PAUSED; PAUSED does nothing.
//! - **STOPPING** runs the seed's steps in order: remove the fetcher; bump the leader epoch
//!   above every epoch in the log and above the current leader epoch (BumpLeaderEpochs, then
//!   wait for metadata to show it); once the high watermark has reached the bumped
//!   leadership's start (the whole log replicated, so only open transactions lie above the
//!   LSO), truncate to the last stable offset; persist the last mirrored (epoch, offset), captured
//!   before anything local was written and kept across re-runs (a new stop after mirroring
//!   again captures afresh); append MIRROR_PID_RESET (unless the log already ends with one
//!   this stop wrote, in an epoch above the last mirrored one: a reset mirrored from the
//!   source does not count) and wait for the high watermark to pass it;
//!   persist STOPPED. None of it needs the source cluster. Only then does the partition's
//!   `mirror_state` become STOPPED and clients may write.
//!   A stop of a log that holds this cluster's own writes only (nothing cut or mirrored
//!   since the partition left UNKNOWN or STOPPED, as this leadership knows or the stored
//!   state says: every transition write carries it) removes and resets nothing: it admits
//!   the local coordinator's markers and waits up to [`MIRROR_OWN_STOP_TXN_WAIT_MS`] for the
//!   open transactions to end instead of cutting to the LSO, and writes no MIRROR_PID_RESET
//!   (spec §5.4's premise, every producer entry came from mirrored data, is false there).
//! - A partition whose stored state is UNKNOWN when its topic is removed (`.removed` before
//!   PREPARING was persisted, or added to a removed topic by CreatePartitions) never mirrored
//!   anything: it is not stopped through STOPPING (UNKNOWN → STOPPING is illegal) but counts as
//!   STOPPED at once, an ordinary writable partition.
//! - **FAILED** retries after an exponential backoff (the mirror's
//!   `mirror.failed.retry.*` settings, [`FailureSettings`]) to [`retry_target`] of the state
//!   it failed in, unless non-retryable or its attempts are used up; a topic removed from the
//!   mirror meanwhile goes to STOPPING instead, retryable or not (see `retry_target` for why
//!   the prototype's order is not kept), so a failover never waits on the source (L-2). The
//!   retry count survives the retry, MIRRORING included (see [`keeps_failure_record`]), and
//!   is cleared by the first mirrored append after it (MIRRORING written again with
//!   `recover`, event `MirrorFailureRecordCleared`), so a cause that persists runs out of
//!   attempts, a fetch refused after an answered lookup too: the partition then waits for
//!   an operator, reading its stored state again every maximum backoff to see a
//!   RecoverMirrorTopics. A source that answers nothing for this partition (no fetch, no
//!   lookup answered) for `mirror.socket.timeout.ms` fails it, retryably.
//!
//! Contract (source side): a LastMirroredEpochLookup from cluster X about a topic unknown here
//! is answered `UnknownTopicOrPartition` (the requester retries; the KIP's "missing → −1"
//! would have it mirror from scratch and cut its whole log, which after a deletion of the
//! source topic is the only copy left); it is answered −1 when no
//! mirror of this cluster has X as its source; otherwise the
//! coordinator of the first such mirror (by name) is read: a partition it still mirrors
//! (any state but UNKNOWN and STOPPED) is `InvalidClusterMirrorState`, else its persisted last
//! mirrored epoch (or −1).
//!
//! Contract (admin entry): a DeleteMirror sent to this broker is checked before it is
//! forwarded, as the prototype's brokers do: every partition of the mirror's topics must be
//! STOPPED at its coordinator (else `InvalidClusterMirrorState`, or the coordinator's error);
//! then the request is forwarded to the controller; only once the controller accepted it
//! does every `__mirror_state` partition tombstone the mirror's records (DeleteMirrorStates),
//! and the admin is answered after them (the seed tombstones after the controller's step 3,
//! the prototype's brokers once the config is gone). The broker's check enumerates the
//! mirror's partitions from its own metadata image, which may be stale (a broker back from a
//! pause that has not yet seen the topics join the mirror finds none and checks nothing):
//! tombstoning before the controller's authoritative check deleted the states of MIRRORING
//! partitions, whose leaders then read UNKNOWN and went STOPPED with no STOPPING, keeping the
//! mirrored producer ids (generator seed 9400000000000778, `no-stale-pid-after-stopped`;
//! `scenarios/regressions/delete_mirror_stale_broker_tombstones_before_controller.toml`). Without the
//! check an operator could delete a mirror mid-STOPPING, and the partition would turn into a
//! plain writable topic before its leader epoch was bumped (the `mirror_admin` scenario's
//! `epochs-monotonic` finding when the admin went straight to the controller).
//!
//! The periodic sync (configs, group offsets, ACLs, topic adoption) is
//! [`periodic_sync`](super::periodic_sync)'s.
//!
//! Contract (host): the manager is a component of the broker that owns no replica. For each
//! call the broker lends itself as a [`MirrorHost`]: its ids, metadata image, outbox and event
//! list, its replicas (the manager reads and cuts leader logs, appends mirrored batches and
//! sets each partition's `mirror_state`), and one operation it keeps for itself, moving a
//! high watermark (which completes produce and fetch requests and polls coordinators).
//!
//! Not modelled yet: the later revisions' proactive and periodic bumps (the reactive bump
//! above is, and `epoch-fencing-state` persists it), follow-the-source
//! log start, and fetch sessions shared by partitions (one fetch per partition).

mod decide;
mod delete;
mod fetcher;
mod persist;
mod preparing;
mod source_side;
mod stopping;

pub use stopping::{ResetSkipped, StopStep};

use crate::protocol::{
    BrokerId, ClusterIndex, ClusterResponse, ControllerResponse, CoordinatorResponse, ErrorCode,
    FetchPartition, FetchPartitionResponse, LeaderEpoch, MirrorPartitionId, MirrorPartitionStatus,
    MirrorResponse, MirrorStateWrite, NodeId, Offset, ReplicaResponse, Request, Response, TopicId,
    TopicMetadata, TopicPartition,
};
use std::collections::BTreeMap;

use super::coordinator::MIRROR_STATE_TOPIC;
use super::directory::MirrorDirectory;
use super::failure::FailureSettings;
use super::TopicMirrorConfig;
use super::{
    decide, design::LEADER_EPOCH_BUMP_INCREMENT, is_valid_transition, keeps_failure_record,
    retry_target, DesiredState, MirrorDesign, MirrorState,
};
use crate::coordinator::partition_count;
use crate::events::{BrokerEvent, TruncationReason};
use crate::log::{AppendOrigin, LogDisk};
use crate::metadata::cache::MetadataCache;
use crate::metadata::{ConfigResource, MetadataImage};
use crate::node::Outbox;
use crate::record::{end_transaction_marker, mirror_pid_reset, MarkerProducer, RecordBatch};
use crate::replica::{
    follower_truncation_for_batches, follower_truncation_offset, report_truncation_among,
    Partition, Role,
};
use crate::switches::BrokenSwitch;

/// What the broker lends the mirror manager for one call; see the module doc.
pub trait MirrorHost {
    /// The disk the broker's replica logs live on.
    type Disk: LogDisk;
    /// The broker's parts the manager writes, borrowed apart so that one step may hold
    /// several (a replica and the event list) at once.
    fn lend(&mut self) -> MirrorContext<'_, Self::Disk>;
    /// The broker's replicas, to read.
    fn partitions(&self) -> &BTreeMap<TopicPartition, Partition<Self::Disk>>;
    /// The broker's metadata image.
    fn image(&self) -> &MetadataImage;
    /// The broker's node id.
    fn node_id(&self) -> NodeId;
    /// The broker's id in its cluster.
    fn broker_id(&self) -> BrokerId;
    /// The broker's epoch from its registration (−1 before it registered).
    fn broker_epoch(&self) -> Option<i64>;
    /// The controller of the broker's cluster.
    fn controller(&self) -> NodeId;
    /// Mirrored batches were appended to a led partition: its high watermark may move, and
    /// what waited for it (acks=all produces, fetches, coordinator writes) completes.
    fn maybe_increment_high_watermark(&mut self, now_ms: i64, topic_partition: &TopicPartition);
}

/// The broker's parts the mirror manager writes during one step (see [`MirrorHost::lend`]).
#[derive(Debug)]
pub struct MirrorContext<'a, D: LogDisk> {
    /// The broker's replicas.
    pub partitions: &'a mut BTreeMap<TopicPartition, Partition<D>>,
    /// Where requests go out.
    pub outbox: &'a mut Outbox,
    /// Where the manager reports what checkers and traces need.
    pub events: &'a mut Vec<BrokerEvent>,
}

impl<D: LogDisk> MirrorContext<'_, D> {
    /// Reports a mirroring cut of a led partition's log from log end `from`.
    fn push_truncation(
        &mut self,
        topic_partition: &TopicPartition,
        from: Offset,
        reason: TruncationReason,
    ) {
        report_truncation_among(self.partitions, self.events, topic_partition, from, reason);
    }
}

/// How long a mirror request may stay unanswered before it is retried.
pub const MIRROR_REQUEST_TIMEOUT_MS: i64 = 1_000;
/// Pause before a failed step is retried.
pub const MIRROR_RETRY_BACKOFF_MS: i64 = 100;
/// How long a stop of a log of the cluster's own writes waits for its open transactions to
/// end (the local coordinator's markers, retried until they land, come well within it).
pub const MIRROR_OWN_STOP_TXN_WAIT_MS: i64 = 5_000;
/// How long a source leader may hold a mirror fetch that has no data.
const MIRROR_FETCH_MAX_WAIT_MS: i64 = 100;
/// Bytes per mirror fetch.
const MIRROR_FETCH_MAX_BYTES: usize = 1 << 20;
/// The metadata cache's refresh interval for source clusters.
const SOURCE_METADATA_MAX_AGE_MS: i64 = 5_000;
/// How long source metadata answers must keep saying a source topic does not exist before
/// its partitions fail as deleted (longer than a refresh: two answers at least).
const SOURCE_TOPIC_MISSING_MS: i64 = SOURCE_METADATA_MAX_AGE_MS + 1_000;

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Read the coordinator's state.
    Read,
    /// Choose the next target from the state and the desired state.
    Decide,
    /// Run the current state's action.
    Act,
    /// A request of this task is in flight.
    Waiting,
    /// PREPARING and ULE_RECOVERY: waiting for the ISR (or, with `every_replica`, every
    /// replica) to truncate to this offset; MIRRORING is written then.
    /// `reported`: the wait for a replica outside the ISR has been reported.
    AwaitTruncation {
        offset: Offset,
        every_replica: bool,
        /// This cut removed records (a re-run of PREPARING's act removes none).
        removed: bool,
        reported: bool,
    },
    /// MIRRORING: the fetcher runs.
    Fetching,
    /// STOPPING: waiting for metadata to show a leader epoch above `min`.
    AwaitEpochBump { min: LeaderEpoch },
    /// STOPPING: the bump is visible (`StopStep::Bumped` is recorded); the cut to the LSO
    /// waits until the whole log is replicated and, in a stop of own writes, until its open
    /// transactions end (or the wait for them runs out).
    AwaitCut,
    /// STOPPING: waiting for the high watermark to pass the MIRROR_PID_RESET at `offset`.
    AwaitResetCommitted { offset: Offset },
    /// Nothing to do until the desired state changes (PAUSED, STOPPED, FAILED for good).
    Idle,
}

/// What a write is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WritePurpose {
    /// A transition (and, to FAILED, whether the failure is non-retryable); its action runs
    /// once it is persisted.
    Transition(MirrorState, bool),
    /// STOPPING's last-mirrored-epoch record.
    LastMirrored,
    /// MIRRORING again, with the failure record cleared: a retried partition's first mirrored
    /// append (`recover` set on the write).
    ClearFailure,
}

impl SentRequest {
    /// The partition whose task sent the request, for a task's request.
    fn task_partition(&self) -> Option<&TopicPartition> {
        match self {
            SentRequest::Read(tp)
            | SentRequest::Write(tp, _)
            | SentRequest::LmeLookup { partition: tp, .. }
            | SentRequest::Bump(tp)
            | SentRequest::Fetch { partition: tp, .. } => Some(tp),
            SentRequest::SourceMetadata { .. }
            | SentRequest::LookupRead { .. }
            | SentRequest::DeleteCheck(_)
            | SentRequest::DeleteTombstones(_)
            | SentRequest::DeleteForward(_) => None,
        }
    }
}

/// A request the mirror manager sent.
#[derive(Debug, Clone)]
enum SentRequest {
    Read(TopicPartition),
    Write(TopicPartition, WritePurpose),
    LmeLookup {
        partition: TopicPartition,
        to: NodeId,
        /// `Some(cut_to)`: not PREPARING's lookup but the check of a new leadership's
        /// contradicted log end (`verify_takeover_loss`), for a cut to `cut_to`.
        verifies_cut: Option<Offset>,
    },
    Bump(TopicPartition),
    Fetch {
        partition: TopicPartition,
        /// The log end offset when the fetch went out.
        offset: Offset,
        tail_check: Option<TailCheck>,
        /// A probe at the log end (see `Task::probe_log_end`).
        probe: bool,
    },
    SourceMetadata {
        mirror: String,
        to: NodeId,
        /// The connection that asked ([`SourceCluster::connection`]).
        connection: u64,
    },
    /// Source side: the coordinator read behind a lookup, and whom to answer.
    LookupRead {
        reply_to: NodeId,
        correlation_id: u64,
        /// This cluster's topic id of the topic looked up (sent back with the answer).
        topic_id: TopicId,
    },
    /// DeleteMirror at the admin entry: a coordinator read of the mirror's partitions.
    DeleteCheck(u64),
    /// DeleteMirror: a coordinator's tombstones of the mirror's records.
    DeleteTombstones(u64),
    /// DeleteMirror: the controller's answer, to relay.
    DeleteForward(u64),
}

/// A mirror fetch that re-reads the log's last batch to compare it with the source's
/// ([`MirrorDesign::verifies_mirrored_tail`]).
#[derive(Debug, Clone, Copy)]
struct TailCheck {
    /// The base offset of the local last batch, where the fetch starts.
    base_offset: Offset,
    /// The source leader epoch the fetch names.
    source_epoch: LeaderEpoch,
}

/// A DeleteMirror this broker checks before it forwards it (the prototype's admin-entry
/// validation; spec §3.7).
#[derive(Debug, Clone)]
struct PendingDelete {
    reply_to: NodeId,
    correlation_id: u64,
    mirror: String,
    /// Coordinator answers still expected in the current phase.
    waiting: usize,
    /// The first reason to refuse, once known.
    refused: Option<ErrorCode>,
    /// The controller's answer, once it accepted the delete (the tombstone phase follows).
    controller_answer: Option<ErrorCode>,
}

/// One led mirror partition.
#[derive(Debug, Clone)]
struct MirrorTask {
    mirror: String,
    id: MirrorPartitionId,
    /// The `mirror.name` value the task last acted on.
    desired: String,
    /// This task persisted a state (so later decisions need not re-fence).
    wrote: bool,
    /// MIRRORING: when the next fetch may go out after a failed one.
    fetch_not_before_ms: Option<i64>,
    /// The leader epoch this broker leads the partition in.
    leader_epoch: LeaderEpoch,
    /// The state as the coordinator committed it (`Unknown` until read).
    state: MirrorState,
    state_epoch: i32,
    previous_state: Option<MirrorState>,
    retry_attempt: i16,
    last_mirrored: Option<(LeaderEpoch, Offset)>,
    step: Step,
    not_before_ms: i64,
    /// The desired state changed while a request was in flight.
    re_evaluate: bool,
    /// PREPARING was entered from a state in which an earlier leadership may already have
    /// cut the log (PREPARING itself, re-run by a new leader, or FAILED, retried), or this
    /// leadership's own PREPARING cut removed records and its act runs again (a
    /// re-evaluation): the cut then removes nothing, though a replica outside the ISR may
    /// still hold what the first cut removed (generated seed 15100000000000342: a replica
    /// paused across the first cut kept its 32 records, the second cut waited for the ISR
    /// alone, and the replica came back on an epoch number the mirrored batches re-used).
    preparing_resumed: bool,
    /// This leadership read the partition UNKNOWN or STOPPED and has neither removed records
    /// by a cut nor mirrored into it since (it went PREPARING and FAILED only): the log holds
    /// this cluster's own writes alone, and until `cut_decided` the local coordinator's
    /// markers are admitted (see [`MirrorDesign::admits_markers_before_cut`]).
    own_writes_only: bool,
    /// This leadership took PREPARING's last-mirrored-epoch answer and cut its log to it (the
    /// cut may have removed nothing: the log still holds own writes only). A mirror fetch
    /// follows, whose diverging-epoch check cannot see a local marker appended now under this
    /// cluster's own epoch numbering, which the source's mirrored epochs may reuse: so the
    /// local coordinator's markers are refused from here on, while a stop before the first
    /// fetch is still a stop of own writes (generated seed 12400000000000107).
    cut_decided: bool,
    /// STOPPING (or FAILED in it): the stop began while the log held this cluster's own
    /// writes only (`own_writes_only`), as this leadership knew or the stored state said. Such
    /// a stop removes nothing and resets nothing: it waits for open transactions to end (the
    /// local coordinator's markers are admitted) instead of cutting to the LSO, and writes no
    /// MIRROR_PID_RESET, whose premise (every producer entry came from mirrored data, spec
    /// §5.4) is false here (generated seeds 9970000000000777 and 25).
    stop_own_writes_only: bool,
    /// STOPPING of own writes: until when it waits for open transactions to end
    /// ([`MIRROR_OWN_STOP_TXN_WAIT_MS`] after it first found one).
    own_stop_wait_until_ms: Option<i64>,
    /// MIRRORING: this task asked the controller to raise its leader epoch above a fetched
    /// batch's (EPOCH_FENCING); the epoch moving up with the same leader is its own bump, not
    /// a new leadership. Cleared once metadata shows a higher epoch.
    fencing_bump: bool,
    /// EPOCH_FENCING (`epoch-fencing-state`): the leader epoch the bump must exceed, from the
    /// fetched batch that called for it; `None` when a new leadership found the state stored
    /// (it bumps above the source's epoch then).
    fence_minimum: Option<LeaderEpoch>,
    /// A transition write of this leadership went unanswered and may still land (its
    /// coordinator may hold it uncommitted, or queued), and no read since showed a state: the
    /// stored UNKNOWN a read returns meanwhile says nothing of what will be stored.
    transition_in_doubt: bool,
    /// The next successful transition write is followed by a decision rather than the new
    /// state's action (a PREPARING written only to settle `transition_in_doubt`).
    decide_after_write: bool,
    /// MIRRORING: the source leader epoch this log's tail was last checked against (a tail
    /// check, or an empty log); `None` in a new leadership. A fetch in another source epoch
    /// checks the tail first ([`MirrorDesign::verifies_mirrored_tail`]).
    verified_source_epoch: Option<LeaderEpoch>,
    /// MIRRORING: the next fetch goes out at the log end without a tail check, as a probe of
    /// KIP-320's divergence check only (nothing it brings is appended): a tail check's answer
    /// held nothing at the tail though the source's high watermark is past it (its isolation
    /// bound, a last stable offset held back by an open transaction, stops the read there),
    /// and a check from the tail's base offset cannot see that the source's epoch of the tail
    /// ends below this log's end (generated seed 14000000000000043).
    probe_log_end: bool,
    /// MIRRORING: where the next tail check starts while a search for the first batch that
    /// differs from the source's is under way (`None`: at the last batch). A differing
    /// batch sends the search back twice as far from the log end, an equal one lets the
    /// check read forward from it: the divergence is found in a number of fetches that grows
    /// with the logarithm of the diverged tail's length, and cut once (generated seed
    /// 4704630039932608: a chain's middle refilled 165 records one cut per batch, each with
    /// its own ULE_RECOVERY, and the run ended before the tail was gone).
    tail_check_from: Option<Offset>,
    /// A mirroring cut of this leadership removed records: the leader epoch is raised before
    /// the next mirrored append, so that a mirror of this log sees a new epoch and checks its
    /// tail ([`MirrorDesign::verifies_mirrored_tail`]). Cleared by any epoch increase.
    bump_before_append: bool,
    /// Which task this is: every task gets a new one, so an answer (or the timeout) of a
    /// request sent by a task dropped since (a leadership that ended) is not applied to the
    /// task of the next leadership, which has its own steps and has read nothing yet.
    generation: u64,
    /// MIRRORING (kept across a pause): the log end up to which the source has shown it holds
    /// this log's records: the offset of a fetch it answered without a divergence, moved up
    /// by every mirrored append. A cut below it means the source lost records it had served
    /// (an unclean election there, spec §4.7; see `source_lost_served_records`). `None` in a
    /// new leadership and after PREPARING, whose first fetches may still cut this cluster's
    /// own history (the fine-grained alignment after a truncation at the LME).
    source_confirmed_end: Option<Offset>,
    /// `source_confirmed_end` was assumed when this leadership took over a mirroring
    /// partition (its log end), not shown by the source yet: the first answer that contradicts
    /// it is verified before it counts as a loss (see `verify_takeover_loss`).
    confirmed_by_takeover: bool,
    /// FAILED with no retry left: the wait for an operator has been reported.
    waits_for_operator: bool,
    /// The source topic as this leadership has seen it in the source's metadata: its topic id,
    /// and since when answers have said it does not exist (see `watch_source_topic`).
    source_topic: SourceTopicWatch,
    /// PREPARING and MIRRORING: since when the source has answered nothing for this
    /// partition (set when the state is entered, by this leadership's write or learned by a
    /// read, moved on by every answer of the source).
    source_waited_since_ms: Option<i64>,
    /// The steps this leadership's STOPPING took, in order (see [`StopStep`]); begun afresh
    /// when a new stop is persisted.
    stop_journal: Vec<StopStep>,
}

/// What a task has seen of its source topic in the source's metadata answers.
#[derive(Debug, Clone, Copy, Default)]
struct SourceTopicWatch {
    /// The topic id the source answered with first (a different one later: the topic was
    /// deleted and created again).
    topic_id: Option<crate::protocol::TopicId>,
    /// The first of the answers in a row that said the topic does not exist, after it was
    /// seen.
    missing_since_ms: Option<i64>,
}

/// A source cluster as one mirror sees it: one connection, over the `bootstrap.servers` it
/// was made with.
#[derive(Debug, Clone)]
struct SourceCluster {
    metadata: MetadataCache,
    /// The brokers `bootstrap.servers` named when the connection was made (a change drops it).
    bootstrap: Vec<NodeId>,
    /// Tells this connection's metadata answers from a dropped one's.
    connection: u64,
}

/// The broker's mirror manager state; see the module doc.
#[derive(Debug)]
pub struct MirrorManager {
    /// The design variant the manager follows.
    design: MirrorDesign,
    /// Rules broken on purpose, to show a checker catching them.
    broken: Vec<BrokenSwitch>,
    tasks: BTreeMap<TopicPartition, MirrorTask>,
    sources: BTreeMap<String, SourceCluster>,
    /// Each mirror's failure and retry settings, read from the image whenever it changes
    /// (so that a poll does not parse them again).
    failure: BTreeMap<String, FailureSettings>,
    /// Requests in flight: what was asked, when, and the generation of the task that asked
    /// (`None` for requests of no task).
    requests: BTreeMap<u64, (SentRequest, i64, Option<u64>)>,
    deletes: BTreeMap<u64, PendingDelete>,
    next_delete_id: u64,
    /// The generation of the next task created.
    next_generation: u64,
    /// The number of the next source connection made.
    next_connection: u64,
}

impl MirrorManager {
    /// A manager with no task yet, following `design` (and breaking `broken` on purpose).
    pub fn new(design: MirrorDesign, broken: Vec<BrokenSwitch>) -> Self {
        Self {
            design,
            broken,
            tasks: BTreeMap::new(),
            sources: BTreeMap::new(),
            failure: BTreeMap::new(),
            requests: BTreeMap::new(),
            deletes: BTreeMap::new(),
            next_delete_id: 0,
            next_generation: 0,
            next_connection: 0,
        }
    }

    /// The earliest time the manager wants a timeout.
    pub fn deadline(&self) -> Option<i64> {
        let requests = self
            .requests
            .values()
            .map(|(_, sent_ms, _)| sent_ms + MIRROR_REQUEST_TIMEOUT_MS);
        // Only steps that move when advanced (or a fetch backoff) ask for a wakeup; the other
        // waits move on messages (follower fetches, metadata), which drive the manager too.
        let tasks = self.tasks.values().filter_map(|task| match task.step {
            Step::Read | Step::Decide | Step::Act => Some(task.not_before_ms),
            Step::Fetching => task.fetch_not_before_ms,
            _ => None,
        });
        let sources = self
            .sources
            .values()
            .filter_map(|source| source.metadata.next_wakeup());
        requests.chain(tasks).chain(sources).min()
    }

    /// Whether a request with this correlation id is the manager's.
    pub fn owns(&self, correlation_id: u64) -> bool {
        self.requests.contains_key(&correlation_id)
    }
}

/// The producer (id, epoch) and coordinator epoch of every open transaction in `log`'s
/// producer state, in first-offset order: what an ABORT marker for each must carry to be
/// accepted (a marker below the producer's epoch or coordinator epoch is fenced).
fn open_transaction_markers<D: crate::log::LogDisk>(
    log: &crate::log::PartitionLog<D>,
) -> Vec<(MarkerProducer, i32)> {
    let state = log.producer_state();
    state
        .ongoing_txns()
        .values()
        .filter_map(|txn| state.producer(txn.producer_id))
        .map(|entry| {
            let producer = MarkerProducer {
                producer_id: entry.producer_id.0,
                producer_epoch: entry.producer_epoch.0,
            };
            (producer, entry.coordinator_epoch.max(0))
        })
        .collect()
}

impl MirrorManager {
    // ----- tasks follow leadership and config -----

    /// Creates, keeps or drops tasks after the metadata image changed.
    pub fn reconcile_mirror_tasks(&mut self, host: &mut impl MirrorHost, now_ms: i64) {
        self.drop_changed_source_connections(host);
        let directory = MirrorDirectory::new(host.image(), host.node_id().cluster());
        self.failure = host
            .image()
            .configs
            .keys()
            .filter_map(|resource| match resource {
                ConfigResource::Mirror(name) => {
                    Some((name.clone(), directory.failure_settings(name)))
                }
                _ => None,
            })
            .collect();
        let mut wanted: BTreeMap<TopicPartition, (String, MirrorPartitionId, LeaderEpoch, String)> =
            BTreeMap::new();
        for (topic_partition, partition) in host.partitions() {
            let Role::Leader(state) = &partition.role else {
                continue;
            };
            let Some(desired) = host.image().mirror_desired_state(&topic_partition.topic) else {
                continue;
            };
            let id = MirrorPartitionId {
                topic_id: partition.topic_id,
                partition: topic_partition.partition,
            };
            wanted.insert(
                topic_partition.clone(),
                (
                    desired.mirror().to_owned(),
                    id,
                    state.leader_epoch,
                    desired.config_value(),
                ),
            );
        }
        let dropped: Vec<TopicPartition> = self
            .tasks
            .iter()
            .filter(|(tp, task)| {
                !wanted
                    .get(*tp)
                    .is_some_and(|(mirror, id, leader_epoch, _)| {
                        *mirror == task.mirror
                            && *id == task.id
                            && (*leader_epoch == task.leader_epoch || own_bump(task, *leader_epoch))
                    })
            })
            .map(|(tp, _)| tp.clone())
            .collect();
        for topic_partition in dropped {
            self.tasks.remove(&topic_partition);
            if let Some(partition) = host.lend().partitions.get_mut(&topic_partition) {
                partition.mirror_state = MirrorState::Unknown;
            }
        }
        for (topic_partition, (mirror, id, leader_epoch, desired)) in wanted {
            match self.tasks.get_mut(&topic_partition) {
                Some(task) => {
                    // A task is kept only in its own leadership (same epoch, or its own bump).
                    assert!(
                        leader_epoch >= task.leader_epoch,
                        "{topic_partition}: mirror task's leader epoch {} went back to {leader_epoch}",
                        task.leader_epoch
                    );
                    if leader_epoch > task.leader_epoch {
                        task.fencing_bump = false;
                        task.bump_before_append = false;
                    }
                    task.leader_epoch = leader_epoch;
                    // A new wish (the config changed) is looked at as soon as the task is
                    // between requests.
                    if task.desired != desired {
                        task.desired = desired;
                        task.re_evaluate = true;
                    }
                }
                None => {
                    let generation = self.next_generation;
                    self.next_generation += 1;
                    self.tasks.insert(
                        topic_partition,
                        MirrorTask {
                            mirror,
                            id,
                            desired,
                            wrote: false,
                            fetch_not_before_ms: None,
                            leader_epoch,
                            state: MirrorState::Unknown,
                            state_epoch: -1,
                            previous_state: None,
                            retry_attempt: 0,
                            last_mirrored: None,
                            step: Step::Read,
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
                            generation,
                            source_confirmed_end: None,
                            confirmed_by_takeover: false,
                            waits_for_operator: false,
                            source_topic: SourceTopicWatch::default(),
                            source_waited_since_ms: None,
                            stop_journal: Vec::new(),
                        },
                    );
                }
            }
        }
    }

    /// Drives every task and the source metadata caches.
    pub fn poll_mirror(&mut self, host: &mut impl MirrorHost, now_ms: i64) {
        self.expire_mirror_requests(host, now_ms);
        let partitions: Vec<TopicPartition> = self.tasks.keys().cloned().collect();
        for topic_partition in partitions {
            // A step may finish at once and make the next one due: run until it waits.
            for _ in 0..8 {
                if !self.advance_mirror_task(host, now_ms, &topic_partition) {
                    break;
                }
            }
        }
        self.refresh_source_metadata(host, now_ms);
    }

    fn expire_mirror_requests(&mut self, host: &mut impl MirrorHost, now_ms: i64) {
        let expired: Vec<u64> = self
            .requests
            .iter()
            .filter(|(_, (_, sent_ms, _))| now_ms >= sent_ms + MIRROR_REQUEST_TIMEOUT_MS)
            .map(|(id, _)| *id)
            .collect();
        for correlation_id in expired {
            self.handle_mirror_response(
                host,
                now_ms,
                correlation_id,
                Err(ErrorCode::RequestTimedOut),
            );
        }
    }

    /// Runs one step of a task; whether another step may follow at once.
    fn advance_mirror_task(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
    ) -> bool {
        let Some(task) = self.tasks.get(topic_partition) else {
            return false;
        };
        if task.re_evaluate && !matches!(task.step, Step::Waiting | Step::Read) {
            let task = self.task_mut(topic_partition);
            task.re_evaluate = false;
            task.step = Step::Decide;
            task.not_before_ms = now_ms;
            return true;
        }
        if now_ms < task.not_before_ms {
            return false;
        }
        match task.step {
            Step::Read => {
                self.send_read(host, now_ms, topic_partition);
                false
            }
            Step::Decide => self.decide_next(host, now_ms, topic_partition),
            Step::Act => self.act(host, now_ms, topic_partition),
            Step::AwaitTruncation {
                offset,
                every_replica,
                removed,
                reported,
            } => {
                if self.replicas_truncated_to(&*host, topic_partition, offset, every_replica) {
                    self.write_transition(host, now_ms, topic_partition, MirrorState::Mirroring);
                } else if every_replica
                    && !reported
                    && self.replicas_truncated_to(&*host, topic_partition, offset, false)
                {
                    // The ISR alone would have let PREPARING go on (the KIP's rule): say once
                    // that this cut waits for a replica outside it.
                    self.task_mut(topic_partition).step = Step::AwaitTruncation {
                        offset,
                        every_replica,
                        removed,
                        reported: true,
                    };
                    host.lend()
                        .events
                        .push(BrokerEvent::PreparingAwaitsReplicaOutsideIsr {
                            topic_partition: topic_partition.clone(),
                            offset,
                            cut_removed_records: removed,
                        });
                }
                false
            }
            Step::Fetching => {
                let fetch_not_before_ms = task.fetch_not_before_ms;
                if self.fail_if_source_silent(host, now_ms, topic_partition) {
                    return false;
                }
                if fetch_not_before_ms.is_none_or(|at| now_ms >= at) {
                    self.maybe_send_mirror_fetch(host, now_ms, topic_partition);
                }
                false
            }
            Step::AwaitEpochBump { min } => {
                if task.leader_epoch <= min {
                    return false;
                }
                if task.state == MirrorState::Mirroring {
                    // EPOCH_FENCING's bump is visible: the fetcher runs again.
                    let task = self.task_mut(topic_partition);
                    task.step = Step::Fetching;
                    task.fetch_not_before_ms = None;
                } else if task.state == MirrorState::EpochFencing {
                    // The persisted EPOCH_FENCING's bump is visible: back to MIRRORING.
                    self.task_mut(topic_partition).fence_minimum = None;
                    self.write_transition(host, now_ms, topic_partition, MirrorState::Mirroring);
                    return false;
                } else {
                    let leader_epoch = task.leader_epoch;
                    self.note_stop_step(topic_partition, StopStep::Bumped { leader_epoch });
                    self.task_mut(topic_partition).step = Step::AwaitCut;
                    self.stopping_after_bump(host, now_ms, topic_partition);
                }
                true
            }
            Step::AwaitCut => {
                self.stopping_after_bump(host, now_ms, topic_partition);
                true
            }
            Step::AwaitResetCommitted { offset } => {
                let committed = host
                    .partitions()
                    .get(topic_partition)
                    .is_some_and(|p| p.log.high_watermark() > offset);
                if committed {
                    self.note_stop_step(topic_partition, StopStep::PersistStopped);
                    self.write_transition(host, now_ms, topic_partition, MirrorState::Stopped);
                }
                false
            }
            Step::Waiting | Step::Idle => false,
        }
    }

    fn task_mut(&mut self, topic_partition: &TopicPartition) -> &mut MirrorTask {
        self.tasks
            .get_mut(topic_partition)
            .expect("a task being driven exists")
    }

    /// A step failed for a reason worth retrying as the same step later.
    fn retry_step_later(&mut self, now_ms: i64, topic_partition: &TopicPartition, step: Step) {
        if let Some(task) = self.tasks.get_mut(topic_partition) {
            task.step = step;
            task.not_before_ms = now_ms + MIRROR_RETRY_BACKOFF_MS;
        }
    }
    // ----- answers -----

    /// Routes an answer (or a timeout as `Err`) to the request it belongs to.
    pub fn handle_mirror_response(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        correlation_id: u64,
        response: Result<Response, ErrorCode>,
    ) {
        let Some((what, _, sent_by)) = self.requests.remove(&correlation_id) else {
            return;
        };
        let live = what.task_partition().is_none_or(|tp| {
            self.tasks
                .get(tp)
                .is_some_and(|task| Some(task.generation) == sent_by)
        });
        if !live {
            // The task was dropped while the request was in flight (its leadership ended, or
            // the topic left the mirror); a task created since is another one and did not ask.
            return;
        }
        match what {
            SentRequest::Read(tp) => match response {
                Ok(Response::Coordinator(CoordinatorResponse::ReadMirrorStates {
                    error: ErrorCode::None,
                    mut partitions,
                    ..
                })) if partitions.len() == 1 && partitions[0].error.is_none() => {
                    let status = partitions.remove(0);
                    let leader_epoch = self.tasks[&tp].leader_epoch;
                    if status.leader_epoch > leader_epoch {
                        // Persisted by a newer leadership: this broker is a deposed leader
                        // whose metadata has not caught up (the prototype's zombie, S-12, which
                        // drops out). Its log need not hold what that leadership wrote (a
                        // STOPPED's MIRROR_PID_RESET): taking the state as its own would run a
                        // state it never reached. Read again later; the metadata showing the
                        // new leader drops the task.
                        host.lend()
                            .events
                            .push(BrokerEvent::MirrorStateOfNewerLeader {
                                topic_partition: tp.clone(),
                                leader_epoch,
                                stored_leader_epoch: status.leader_epoch,
                            });
                        self.retry_step_later(now_ms, &tp, Step::Read);
                    } else {
                        self.apply_read(host, now_ms, &tp, status);
                    }
                }
                _ => self.retry_step_later(now_ms, &tp, Step::Read),
            },
            SentRequest::Write(tp, purpose) => {
                let result = match response {
                    Ok(Response::Coordinator(CoordinatorResponse::WriteMirrorStates {
                        error,
                        partitions,
                    })) => {
                        if !error.is_none() {
                            Err(error)
                        } else {
                            partitions
                                .first()
                                .map_or(Err(ErrorCode::InvalidRequest), |(_, e, epoch)| {
                                    Ok((*e, *epoch))
                                })
                        }
                    }
                    Ok(_) => Err(ErrorCode::InvalidRequest),
                    Err(error) => Err(error),
                };
                self.apply_write(host, now_ms, &tp, purpose, result);
            }
            SentRequest::LmeLookup {
                partition,
                to,
                verifies_cut,
            } => {
                let mut source_topic_id = None;
                let result = match response {
                    Ok(Response::Mirror(MirrorResponse::LastMirroredEpochLookup {
                        error,
                        last_mirrored_epoch,
                        last_mirrored_offset,
                        topic_id,
                    })) => {
                        source_topic_id = topic_id;
                        Ok((error, (last_mirrored_epoch, last_mirrored_offset)))
                    }
                    Ok(_) => Err(ErrorCode::InvalidRequest),
                    Err(error) => Err(error),
                };
                if self.source_topic_replaced(host, now_ms, &partition, source_topic_id) {
                    return;
                }
                match verifies_cut {
                    None => self.apply_lme(host, now_ms, &partition, result, to),
                    Some(cut_to) => {
                        self.apply_takeover_loss_check(host, now_ms, &partition, cut_to, result)
                    }
                }
            }
            SentRequest::Bump(tp) => {
                let result = match response {
                    Ok(Response::Controller(ControllerResponse::BumpLeaderEpochs {
                        error: ErrorCode::None,
                        partitions,
                    })) => partitions
                        .first()
                        .map_or(Err(ErrorCode::InvalidRequest), |(_, _, e, epoch)| {
                            Ok((*e, *epoch))
                        }),
                    Ok(Response::Controller(ControllerResponse::BumpLeaderEpochs {
                        error,
                        ..
                    })) => Err(error),
                    Ok(_) => Err(ErrorCode::InvalidRequest),
                    Err(error) => Err(error),
                };
                let failed = match result {
                    Err(error) | Ok((error, _)) if error != ErrorCode::None => Some(error),
                    _ => None,
                };
                let state = self.tasks.get(&tp).map(|task| task.state);
                if let (Some(error), Some(mirror_state)) = (failed, state) {
                    host.lend().events.push(BrokerEvent::MirrorEpochBumpFailed {
                        topic_partition: tp.clone(),
                        mirror_state,
                        error,
                    });
                }
                match failed {
                    // The late revision: a bump that fails fails the partition (retryable).
                    Some(error) if state == Some(MirrorState::EpochFencing) => {
                        let reason = format!("the leader epoch bump failed: {error:?}");
                        self.fail_mirror_partition(host, now_ms, &tp, reason, false);
                    }
                    _ => self.apply_bump(now_ms, &tp, result),
                }
            }
            SentRequest::Fetch {
                partition,
                offset,
                tail_check,
                probe,
            } => {
                let result = match response {
                    Ok(Response::Replica(ReplicaResponse::Fetch { mut partitions }))
                        if partitions.len() == 1 =>
                    {
                        Ok(partitions.remove(0))
                    }
                    Ok(_) => Err(ErrorCode::InvalidRequest),
                    Err(error) => Err(error),
                };
                let sent = (offset, tail_check, probe);
                self.apply_mirror_fetch(host, now_ms, &partition, sent, result);
            }
            SentRequest::SourceMetadata {
                mirror,
                to,
                connection,
            } => {
                let result = match response {
                    Ok(Response::Cluster(ClusterResponse::Metadata { brokers, topics })) => {
                        Ok((brokers, topics))
                    }
                    Ok(_) => Err(ErrorCode::InvalidRequest),
                    Err(error) => Err(error),
                };
                self.apply_source_metadata(host, now_ms, (&mirror, connection), to, result);
            }
            SentRequest::LookupRead {
                reply_to,
                correlation_id,
                topic_id,
            } => {
                let to = (reply_to, correlation_id, topic_id);
                self.answer_lookup_from_coordinator(host, to, response);
            }
            SentRequest::DeleteCheck(delete_id) => {
                self.delete_check_answered(host, now_ms, delete_id, response)
            }
            SentRequest::DeleteTombstones(delete_id) => {
                self.delete_tombstones_answered(host, delete_id, response)
            }
            SentRequest::DeleteForward(delete_id) => {
                self.delete_forward_answered(host, now_ms, delete_id, response)
            }
        }
        self.poll_mirror(host, now_ms);
    }
}

/// Whether a task's leader epoch moved only by its own bump, STOPPING's or EPOCH_FENCING's
/// (the leader stays).
fn own_bump(task: &MirrorTask, leader_epoch: LeaderEpoch) -> bool {
    leader_epoch > task.leader_epoch
        && (task.fencing_bump
            || matches!(
                task.step,
                Step::AwaitEpochBump { .. } | Step::AwaitCut | Step::Waiting
            ) && task.state == MirrorState::Stopping)
}

/// Read-only views for the simulator's checkers (`single-mirror-fetcher`).
impl MirrorManager {
    /// The partitions whose mirror fetcher runs (their task is fetching), with the task's
    /// committed mirror state and the leader epoch it leads the partition in.
    pub fn mirror_fetchers(
        &self,
    ) -> impl Iterator<Item = (&TopicPartition, MirrorState, LeaderEpoch)> {
        self.tasks
            .iter()
            .filter(|(_, task)| task.step == Step::Fetching)
            .map(|(topic_partition, task)| (topic_partition, task.state, task.leader_epoch))
    }

    /// The steps STOPPING took on `topic_partition` under this broker's leadership, in order
    /// (empty before a stop; see [`StopStep`]).
    pub fn stop_journal(&self, topic_partition: &TopicPartition) -> &[StopStep] {
        self.tasks
            .get(topic_partition)
            .map_or(&[], |task| task.stop_journal.as_slice())
    }
}
