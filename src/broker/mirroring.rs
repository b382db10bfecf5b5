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
//!   (an unclean election there) and the partition FAILS non-retryably, as with
//!   `mirror.support.unclean.leader.election=false`.
//!   DLE ≥ SLE (the later revision's rule, spec §4.4; `epochs-unfenced` is the seed's
//!   fetcher): a fetched batch whose epoch is above the leader epoch this broker leads the
//!   partition in is not appended; the leader asks the controller (BumpLeaderEpochs, same
//!   leader) for an epoch above the source's plus [`LEADER_EPOCH_BUMP_INCREMENT`], waits for
//!   metadata to show it, and fetches again. The state stays MIRRORING meanwhile (the late
//!   revision's persisted EPOCH_FENCING state and its proactive bumps are issue #17's). So
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
//! - **FAILED** retries after an exponential backoff (initial [`MIRROR_RETRY_BACKOFF_MS`],
//!   doubling up to [`MIRROR_RETRY_BACKOFF_MAX_MS`]) to [`retry_target`] of the state it
//!   failed in, unless non-retryable or after [`MIRROR_RETRY_MAX_ATTEMPTS`] attempts; a topic
//!   removed from the mirror meanwhile goes to STOPPING instead, retryable or not (see
//!   `retry_target` for why the prototype's order is not kept). Like the prototype, entering PREPARING resets the retry count, so a PREPARING
//!   that keeps failing retries at the initial backoff and never exhausts its attempts.
//!
//! Contract (source side): a LastMirroredEpochLookup from cluster X is answered −1 when no
//! mirror of this cluster has X as its source or the topic is unknown here; otherwise the
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
//! The periodic sync (configs, group offsets, ACLs, topic adoption) is `mirror_sync`'s.
//!
//! Not modelled yet: EPOCH_FENCING as a persisted state and proactive bumps (later
//! revisions; the reactive bump above is), follow-the-source
//! log start, and fetch sessions shared by partitions (one fetch per partition).

use std::collections::BTreeMap;

use super::{BrokerStorage, Role, TruncationReason};
use crate::coordinator::mirror::{mirror_state_partition, MIRROR_STATE_TOPIC};
use crate::coordinator::partition_count;
use crate::log::AppendOrigin;
use crate::metadata::cache::MetadataCache;
use crate::metadata::ConfigResource;
use crate::mirror::state::MIRROR_SUPPORT_UNCLEAN_CONFIG;
use crate::mirror::sync::BOOTSTRAP_SERVERS_CONFIG;
use crate::mirror::TopicMirrorConfig;
use crate::mirror::{
    decide, design::LEADER_EPOCH_BUMP_INCREMENT, is_valid_transition, parse_bootstrap_servers,
    retry_target, DesiredState, MirrorDesign, MirrorState,
};
use crate::protocol::{
    ClusterIndex, ErrorCode, FetchPartition, FetchPartitionResponse, MirrorPartitionId,
    MirrorPartitionStatus, MirrorStateWrite, NodeId, Request, Response, TopicMetadata,
    TopicPartition,
};
use crate::record::{end_transaction_marker, mirror_pid_reset, MarkerProducer, RecordBatch};
use crate::switches::BrokenSwitch;

/// How long a mirror request may stay unanswered before it is retried.
pub const MIRROR_REQUEST_TIMEOUT_MS: i64 = 1_000;
/// Pause before a failed step is retried, and the first FAILED backoff.
pub const MIRROR_RETRY_BACKOFF_MS: i64 = 100;
/// Longest FAILED backoff.
pub const MIRROR_RETRY_BACKOFF_MAX_MS: i64 = 5_000;
/// FAILED retries before the partition waits for an operator (`mirror.failed.retry.max.attempts`).
pub const MIRROR_RETRY_MAX_ATTEMPTS: i16 = 20;
/// How long a stop of a log of the cluster's own writes waits for its open transactions to
/// end (the local coordinator's markers, retried until they land, come well within it).
const MIRROR_OWN_STOP_TXN_WAIT_MS: i64 = 5_000;
/// How long a source leader may hold a mirror fetch that has no data.
const MIRROR_FETCH_MAX_WAIT_MS: i64 = 100;
/// Bytes per mirror fetch.
const MIRROR_FETCH_MAX_BYTES: usize = 1 << 20;
/// The metadata cache's refresh interval for source clusters.
const SOURCE_METADATA_MAX_AGE_MS: i64 = 5_000;

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
    /// PREPARING: waiting for the ISR (or, with `every_replica`, every replica) to truncate
    /// to this offset.
    /// `reported`: the wait for a replica outside the ISR has been reported.
    AwaitTruncation {
        offset: i64,
        every_replica: bool,
        reported: bool,
    },
    /// MIRRORING: the fetcher runs.
    Fetching,
    /// STOPPING: waiting for metadata to show a leader epoch above `min`.
    AwaitEpochBump { min: i32 },
    /// STOPPING: waiting for the high watermark to pass the MIRROR_PID_RESET at `offset`.
    AwaitResetCommitted { offset: i64 },
    /// Nothing to do until the desired state changes (PAUSED, STOPPED, FAILED for good).
    Idle,
}

/// What a write is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WritePurpose {
    /// A transition; its action runs once it is persisted.
    Transition(MirrorState),
    /// STOPPING's last-mirrored-epoch record.
    LastMirrored,
}

impl MirrorRequest {
    /// The partition whose task sent the request, for a task's request.
    fn task_partition(&self) -> Option<&TopicPartition> {
        match self {
            MirrorRequest::Read(tp)
            | MirrorRequest::Write(tp, _)
            | MirrorRequest::LmeLookup { partition: tp, .. }
            | MirrorRequest::Bump(tp)
            | MirrorRequest::Fetch { partition: tp, .. } => Some(tp),
            MirrorRequest::SourceMetadata { .. }
            | MirrorRequest::LookupRead { .. }
            | MirrorRequest::DeleteCheck(_)
            | MirrorRequest::DeleteTombstones(_)
            | MirrorRequest::DeleteForward(_) => None,
        }
    }
}

/// A request the mirror manager sent.
#[derive(Debug, Clone)]
enum MirrorRequest {
    Read(TopicPartition),
    Write(TopicPartition, WritePurpose),
    LmeLookup {
        partition: TopicPartition,
        to: NodeId,
    },
    Bump(TopicPartition),
    Fetch {
        partition: TopicPartition,
        /// The log end offset when the fetch went out.
        offset: i64,
        tail_check: Option<TailCheck>,
    },
    SourceMetadata {
        mirror: String,
        to: NodeId,
    },
    /// Source side: the coordinator read behind a lookup, and whom to answer.
    LookupRead {
        reply_to: NodeId,
        correlation_id: u64,
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
    base_offset: i64,
    /// The source leader epoch the fetch names.
    source_epoch: i32,
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
    leader_epoch: i32,
    /// The state as the coordinator committed it (`Unknown` until read).
    state: MirrorState,
    state_epoch: i32,
    previous_state: Option<MirrorState>,
    retry_attempt: i16,
    last_mirrored: Option<(i32, i64)>,
    step: Step,
    not_before_ms: i64,
    /// The desired state changed while a request was in flight.
    re_evaluate: bool,
    /// PREPARING was entered from a state in which an earlier leadership may already have
    /// cut the log (PREPARING itself, re-run by a new leader, or FAILED, retried): this
    /// leadership's cut then removes nothing, though a replica outside the ISR may still
    /// hold what the first cut removed.
    preparing_resumed: bool,
    /// This leadership read the partition UNKNOWN or STOPPED and has neither cut the log nor
    /// mirrored into it since (it went PREPARING and FAILED only): the log holds this
    /// cluster's own writes alone, and the local coordinator's markers are admitted (see
    /// [`MirrorDesign::admits_markers_before_cut`]).
    own_writes_only: bool,
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
    /// MIRRORING: the source leader epoch this log's tail was last checked against (a tail
    /// check, or an empty log); `None` in a new leadership. A fetch in another source epoch
    /// checks the tail first ([`MirrorDesign::verifies_mirrored_tail`]).
    verified_source_epoch: Option<i32>,
    /// A mirroring cut of this leadership removed records: the leader epoch is raised before
    /// the next mirrored append, so that a mirror of this log sees a new epoch and checks its
    /// tail ([`MirrorDesign::verifies_mirrored_tail`]). Cleared by any epoch increase.
    bump_before_append: bool,
    /// Which task this is: every task gets a new one, so an answer (or the timeout) of a
    /// request sent by a task dropped since (a leadership that ended) is not applied to the
    /// task of the next leadership, which has its own steps and has read nothing yet.
    generation: u64,
}

/// A source cluster as one mirror sees it.
#[derive(Debug, Clone)]
struct SourceCluster {
    metadata: MetadataCache,
}

/// The broker's mirror manager state; see the module doc.
#[derive(Debug, Default)]
pub(super) struct MirrorManager {
    tasks: BTreeMap<TopicPartition, MirrorTask>,
    sources: BTreeMap<String, SourceCluster>,
    /// Requests in flight: what was asked, when, and the generation of the task that asked
    /// (`None` for requests of no task).
    requests: BTreeMap<u64, (MirrorRequest, i64, Option<u64>)>,
    deletes: BTreeMap<u64, PendingDelete>,
    next_delete_id: u64,
    /// The generation of the next task created.
    next_generation: u64,
}

impl MirrorManager {
    /// The earliest time the manager wants a timeout.
    pub(super) fn deadline(&self) -> Option<i64> {
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
    pub(super) fn owns(&self, correlation_id: u64) -> bool {
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
                producer_id: entry.producer_id,
                producer_epoch: entry.producer_epoch,
            };
            (producer, entry.coordinator_epoch.max(0))
        })
        .collect()
}

fn backoff_ms(retry_attempt: i16) -> i64 {
    let doublings = u32::try_from(retry_attempt.max(1) - 1).unwrap_or(0).min(16);
    (MIRROR_RETRY_BACKOFF_MS << doublings).min(MIRROR_RETRY_BACKOFF_MAX_MS)
}

impl<S: BrokerStorage> super::Broker<S> {
    // ----- tasks follow leadership and config -----

    /// Creates, keeps or drops tasks after the metadata image changed.
    pub(super) fn reconcile_mirror_tasks(&mut self, now_ms: i64) {
        let mut wanted: BTreeMap<TopicPartition, (String, MirrorPartitionId, i32, String)> =
            BTreeMap::new();
        for (topic_partition, partition) in &self.partitions {
            let Role::Leader(state) = &partition.role else {
                continue;
            };
            let Some(desired) = self.image.mirror_desired_state(&topic_partition.topic) else {
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
            .mirror
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
            self.mirror.tasks.remove(&topic_partition);
            if let Some(partition) = self.partitions.get_mut(&topic_partition) {
                partition.mirror_state = MirrorState::Unknown;
            }
        }
        for (topic_partition, (mirror, id, leader_epoch, desired)) in wanted {
            match self.mirror.tasks.get_mut(&topic_partition) {
                Some(task) => {
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
                    let generation = self.mirror.next_generation;
                    self.mirror.next_generation += 1;
                    self.mirror.tasks.insert(
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
                            stop_own_writes_only: false,
                            own_stop_wait_until_ms: None,
                            fencing_bump: false,
                            verified_source_epoch: None,
                            bump_before_append: false,
                            generation,
                        },
                    );
                }
            }
        }
    }

    /// Drives every task and the source metadata caches.
    pub(super) fn poll_mirror(&mut self, now_ms: i64) {
        self.expire_mirror_requests(now_ms);
        let partitions: Vec<TopicPartition> = self.mirror.tasks.keys().cloned().collect();
        for topic_partition in partitions {
            // A step may finish at once and make the next one due: run until it waits.
            for _ in 0..8 {
                if !self.advance_mirror_task(now_ms, &topic_partition) {
                    break;
                }
            }
        }
        self.refresh_source_metadata(now_ms);
    }

    fn expire_mirror_requests(&mut self, now_ms: i64) {
        let expired: Vec<u64> = self
            .mirror
            .requests
            .iter()
            .filter(|(_, (_, sent_ms, _))| now_ms >= sent_ms + MIRROR_REQUEST_TIMEOUT_MS)
            .map(|(id, _)| *id)
            .collect();
        for correlation_id in expired {
            self.handle_mirror_response(now_ms, correlation_id, Err(ErrorCode::RequestTimedOut));
        }
    }

    /// Runs one step of a task; whether another step may follow at once.
    fn advance_mirror_task(&mut self, now_ms: i64, topic_partition: &TopicPartition) -> bool {
        let Some(task) = self.mirror.tasks.get(topic_partition) else {
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
                self.send_read(now_ms, topic_partition);
                false
            }
            Step::Decide => self.decide_next(now_ms, topic_partition),
            Step::Act => self.act(now_ms, topic_partition),
            Step::AwaitTruncation {
                offset,
                every_replica,
                reported,
            } => {
                if self.replicas_truncated_to(topic_partition, offset, every_replica) {
                    self.write_transition(now_ms, topic_partition, MirrorState::Mirroring);
                } else if every_replica
                    && !reported
                    && self.replicas_truncated_to(topic_partition, offset, false)
                {
                    // The ISR alone would have let PREPARING go on (the KIP's rule): say once
                    // that this cut waits for a replica outside it.
                    self.task_mut(topic_partition).step = Step::AwaitTruncation {
                        offset,
                        every_replica,
                        reported: true,
                    };
                    self.events
                        .push(super::BrokerEvent::PreparingAwaitsReplicaOutsideIsr {
                            topic_partition: topic_partition.clone(),
                            offset,
                        });
                }
                false
            }
            Step::Fetching => {
                if task.fetch_not_before_ms.is_none_or(|at| now_ms >= at) {
                    self.maybe_send_mirror_fetch(now_ms, topic_partition);
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
                } else {
                    self.stopping_after_bump(now_ms, topic_partition);
                }
                true
            }
            Step::AwaitResetCommitted { offset } => {
                let committed = self
                    .partitions
                    .get(topic_partition)
                    .is_some_and(|p| p.log.high_watermark() > offset);
                if committed {
                    self.write_transition(now_ms, topic_partition, MirrorState::Stopped);
                }
                false
            }
            Step::Waiting | Step::Idle => false,
        }
    }

    fn task_mut(&mut self, topic_partition: &TopicPartition) -> &mut MirrorTask {
        self.mirror
            .tasks
            .get_mut(topic_partition)
            .expect("a task being driven exists")
    }

    /// A step failed for a reason worth retrying as the same step later.
    fn retry_step_later(&mut self, now_ms: i64, topic_partition: &TopicPartition, step: Step) {
        if let Some(task) = self.mirror.tasks.get_mut(topic_partition) {
            task.step = step;
            task.not_before_ms = now_ms + MIRROR_RETRY_BACKOFF_MS;
        }
    }

    // ----- coordinator reads and writes -----

    /// The node of the coordinator of a task's key, if `__mirror_state` has a leader for it.
    fn mirror_coordinator(&self, task: &MirrorTask) -> Option<(NodeId, i32)> {
        let partitions = partition_count(&self.image, MIRROR_STATE_TOPIC);
        if partitions == 0 {
            return None;
        }
        let partition = mirror_state_partition(&task.mirror, &task.id, partitions);
        let leader = self
            .image
            .partition(&TopicPartition::new(MIRROR_STATE_TOPIC, partition))?
            .leader?;
        Some((NodeId::Broker(self.node_id.cluster(), leader), partition))
    }

    fn send_mirror_request(
        &mut self,
        now_ms: i64,
        to: NodeId,
        request: Request,
        what: MirrorRequest,
    ) {
        let generation = what
            .task_partition()
            .and_then(|tp| self.mirror.tasks.get(tp))
            .map(|task| task.generation);
        let correlation_id = self.outbox.request(to, request);
        self.mirror
            .requests
            .insert(correlation_id, (what, now_ms, generation));
    }

    fn send_read(&mut self, now_ms: i64, topic_partition: &TopicPartition) {
        let task = &self.mirror.tasks[topic_partition];
        let Some((coordinator, coordinator_partition)) = self.mirror_coordinator(task) else {
            self.retry_step_later(now_ms, topic_partition, Step::Read);
            return;
        };
        let request = Request::ReadMirrorStates {
            coordinator_partition,
            mirror: task.mirror.clone(),
            partitions: vec![task.id],
        };
        self.task_mut(topic_partition).step = Step::Waiting;
        let what = MirrorRequest::Read(topic_partition.clone());
        self.send_mirror_request(now_ms, coordinator, request, what);
    }

    fn apply_read(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        status: MirrorPartitionStatus,
    ) {
        let task = self.task_mut(topic_partition);
        task.state = status.state;
        task.state_epoch = status.state_epoch;
        task.previous_state = status.previous_state;
        task.retry_attempt = status.retry_attempt;
        task.last_mirrored = status.last_mirrored;
        // A re-read by this leadership (after a fenced or refused write) of the PREPARING or
        // FAILED it wrote itself keeps what it knows: only this leadership cuts or mirrors
        // here, and it clears the flag when it does (generator seed 9960000000000208: a
        // refused loop's state write was fenced, the re-read forgot the log held only local
        // writes, and the stop recorded its own epoch as the last mirrored one).
        // The same for a STOPPING this leadership wrote (its answer lost, the retry fenced):
        // the stop mirrored nothing, so it records no last mirrored epoch of its own.
        // A new leadership learns the same from the stored state: the leader that wrote it
        // had neither cut nor mirrored since the partition left UNKNOWN or STOPPED.
        let never_mirrored = (task.wrote && task.own_writes_only) || status.own_writes_only;
        let in_stop = status.state == MirrorState::Stopping
            || (status.state == MirrorState::Failed
                && status.previous_state == Some(MirrorState::Stopping));
        let own_stop = in_stop && ((task.wrote && task.stop_own_writes_only) || never_mirrored);
        if own_stop {
            task.last_mirrored = task.last_mirrored.or(Some((-1, -1)));
        }
        task.stop_own_writes_only = own_stop;
        task.own_writes_only = (never_mirrored
            && matches!(status.state, MirrorState::Preparing | MirrorState::Failed)
            && !in_stop)
            || matches!(status.state, MirrorState::Unknown | MirrorState::Stopped);
        task.step = Step::Decide;
        task.not_before_ms = now_ms;
        let state = task.state;
        self.set_partition_mirror_state(topic_partition, state);
    }

    /// Whether this broker leads `topic_partition` as a mirror partition whose log holds only
    /// this cluster's own writes (see `MirrorTask::own_writes_only`).
    pub(super) fn mirror_log_holds_own_writes_only(
        &self,
        topic_partition: &TopicPartition,
    ) -> bool {
        self.mirror.tasks.get(topic_partition).is_some_and(|task| {
            task.own_writes_only
                || (task.state == MirrorState::Stopping && task.stop_own_writes_only)
        })
    }

    fn set_partition_mirror_state(&mut self, topic_partition: &TopicPartition, state: MirrorState) {
        if let Some(partition) = self.partitions.get_mut(topic_partition) {
            partition.mirror_state = state;
        }
    }

    fn write_transition(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        target: MirrorState,
    ) {
        self.write_failed_or_transition(now_ms, topic_partition, target, None, false);
    }

    /// Fails the partition (retryable unless said otherwise).
    fn fail_mirror_partition(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        reason: String,
        non_retryable: bool,
    ) {
        self.write_failed_or_transition(
            now_ms,
            topic_partition,
            MirrorState::Failed,
            Some(reason),
            non_retryable,
        );
    }

    fn write_failed_or_transition(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        target: MirrorState,
        error_message: Option<String>,
        non_retryable: bool,
    ) {
        let task = &self.mirror.tasks[topic_partition];
        let write = MirrorStateWrite {
            id: task.id,
            state: Some(target),
            leader_epoch: task.leader_epoch,
            state_epoch: task.state_epoch,
            error_message,
            non_retryable,
            last_mirrored: None,
            own_writes_only: task.own_writes_only || task.stop_own_writes_only,
        };
        self.send_write(
            now_ms,
            topic_partition,
            write,
            WritePurpose::Transition(target),
        );
    }

    fn send_write(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        write: MirrorStateWrite,
        purpose: WritePurpose,
    ) {
        let task = &self.mirror.tasks[topic_partition];
        let retry_step = match purpose {
            WritePurpose::Transition(_) => Step::Decide,
            WritePurpose::LastMirrored => Step::Act,
        };
        let Some((coordinator, coordinator_partition)) = self.mirror_coordinator(task) else {
            self.retry_step_later(now_ms, topic_partition, retry_step);
            return;
        };
        let request = Request::WriteMirrorStates {
            coordinator_partition,
            mirror: task.mirror.clone(),
            writes: vec![write],
        };
        self.task_mut(topic_partition).step = Step::Waiting;
        let what = MirrorRequest::Write(topic_partition.clone(), purpose);
        self.send_mirror_request(now_ms, coordinator, request, what);
    }

    fn apply_write(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        purpose: WritePurpose,
        result: Result<(ErrorCode, i32), ErrorCode>,
    ) {
        let error = match result {
            Ok((error, _)) => error,
            Err(error) => error,
        };
        match (purpose, error) {
            (WritePurpose::Transition(target), ErrorCode::None) => {
                let state_epoch = result.map_or(-1, |(_, epoch)| epoch);
                let task = self.task_mut(topic_partition);
                if target == MirrorState::Failed && task.state != MirrorState::Failed {
                    task.previous_state = Some(task.state);
                }
                if target == MirrorState::Failed {
                    task.retry_attempt = task.retry_attempt.saturating_add(1).max(1);
                } else if matches!(
                    target,
                    MirrorState::Preparing | MirrorState::Paused | MirrorState::Stopped
                ) {
                    task.retry_attempt = 0;
                }
                let from = task.state;
                let resumed_stop = from == MirrorState::Stopping
                    || (from == MirrorState::Failed
                        && task.previous_state == Some(MirrorState::Stopping));
                if target == MirrorState::Stopping && !resumed_stop {
                    // A new stop: what a stop of an earlier mirroring session persisted (read
                    // back from the coordinator) is not what this one mirrored. A session that
                    // neither cut nor mirrored (PREPARING and FAILED only, e.g. a loop refused
                    // by both sides) added nothing of the source's lineage: the earlier stop's
                    // value stands, else none (−1), never this cluster's own latest epoch, which
                    // a cluster mirroring from here would take for the source's and keep its
                    // own records below (generator seed 201).
                    task.last_mirrored = if task.own_writes_only {
                        Some(task.last_mirrored.unwrap_or((-1, -1)))
                    } else {
                        None
                    };
                }
                if target == MirrorState::Stopping && !resumed_stop {
                    task.stop_own_writes_only = task.own_writes_only;
                    task.own_stop_wait_until_ms = None;
                } else if !matches!(target, MirrorState::Stopping | MirrorState::Failed) {
                    task.stop_own_writes_only = false;
                }
                if !matches!(target, MirrorState::Preparing | MirrorState::Failed) {
                    task.own_writes_only = false;
                }
                // A STOPPED this leadership wrote is what a read of it tells: from here on
                // only this cluster writes, so a later PREPARING (the topic added back)
                // carries own_writes_only until it cuts, for the next leader to read
                // (generated seed 9980000000000689: the next leader read PREPARING without it,
                // stopped with MIRROR_PID_RESET, and a live producer's retry was appended twice).
                if target == MirrorState::Stopped {
                    task.own_writes_only = true;
                }
                if target == MirrorState::Preparing {
                    task.preparing_resumed =
                        !matches!(from, MirrorState::Unknown | MirrorState::Stopped);
                }
                task.state = target;
                task.state_epoch = state_epoch;
                task.wrote = true;
                task.step = Step::Act;
                task.not_before_ms = now_ms;
                self.set_partition_mirror_state(topic_partition, target);
                self.events.push(super::BrokerEvent::MirrorTransition {
                    topic_partition: topic_partition.clone(),
                    from,
                    to: target,
                });
            }
            (WritePurpose::LastMirrored, ErrorCode::None) => {
                self.task_mut(topic_partition).step = Step::Act;
                if self.config.mirror_design.stops_with_abort_markers() {
                    self.stopping_request_bump(now_ms, topic_partition);
                } else {
                    self.stopping_after_last_mirrored(now_ms, topic_partition);
                }
            }
            // Another writer moved the state on (or a newer leader exists): read it again.
            (
                _,
                error @ (ErrorCode::FencedStateEpoch
                | ErrorCode::FencedLeaderEpoch
                | ErrorCode::InvalidClusterMirrorState),
            ) => {
                self.events
                    .push(super::BrokerEvent::MirrorStateWriteRefused {
                        topic_partition: topic_partition.clone(),
                        error,
                    });
                self.retry_step_later(now_ms, topic_partition, Step::Read);
            }
            (WritePurpose::Transition(_), _) => {
                self.retry_step_later(now_ms, topic_partition, Step::Decide);
            }
            (WritePurpose::LastMirrored, _) => {
                self.retry_step_later(now_ms, topic_partition, Step::Act);
            }
        }
    }

    // ----- decisions and actions -----

    fn decide_next(&mut self, now_ms: i64, topic_partition: &TopicPartition) -> bool {
        let Some(desired) = self.image.mirror_desired_state(&topic_partition.topic) else {
            return false;
        };
        let task = &self.mirror.tasks[topic_partition];
        if task.state == MirrorState::Unknown && matches!(desired, DesiredState::Stopped { .. }) {
            // Removed before anything was mirrored (or a partition added to a removed topic by
            // CreatePartitions): there is nothing to stop, and UNKNOWN → STOPPING is not a
            // legal transition. The partition is an ordinary writable one.
            let task = self.task_mut(topic_partition);
            task.step = Step::Idle;
            self.set_partition_mirror_state(topic_partition, MirrorState::Stopped);
            return false;
        }
        let target = match decide(task.state, &desired) {
            MirrorState::Failed => {
                let retries_left = (0..MIRROR_RETRY_MAX_ATTEMPTS).contains(&task.retry_attempt);
                match retry_target(task.previous_state, &desired, retries_left) {
                    Some(target) => target,
                    None => {
                        self.task_mut(topic_partition).step = Step::Idle;
                        return false;
                    }
                }
            }
            MirrorState::Preparing
                if task.state == MirrorState::Unknown
                    && self
                        .config
                        .broken
                        .contains(&BrokenSwitch::MirrorSkipPreparing) =>
            {
                // Broken on purpose: straight to MIRRORING, no truncation.
                self.write_transition(now_ms, topic_partition, MirrorState::Mirroring);
                return false;
            }
            target => target,
        };
        let keep = task.state == target && task.wrote;
        if keep || !is_valid_transition(task.state, target) {
            // Re-run the current state's work (a new wish waits for it, e.g. a pause asked
            // while PREPARING follows once MIRRORING is reached).
            let task = self.task_mut(topic_partition);
            task.step = Step::Act;
            task.not_before_ms = now_ms;
            return true;
        }
        // A transition, or a new leader re-entering the state: the write fences the writes
        // of the previous leader.
        self.write_transition(now_ms, topic_partition, target);
        false
    }

    fn act(&mut self, now_ms: i64, topic_partition: &TopicPartition) -> bool {
        let state = self.mirror.tasks[topic_partition].state;
        match state {
            MirrorState::Unknown => {
                self.task_mut(topic_partition).step = Step::Decide;
                true
            }
            MirrorState::Preparing => {
                self.send_lme_lookup(now_ms, topic_partition);
                false
            }
            MirrorState::Mirroring | MirrorState::Paused | MirrorState::Stopped
                if self.wish_leads_elsewhere(topic_partition, state) =>
            {
                // A wish that came while the state before was at work (a resume while
                // PAUSING, an add while STOPPING) could not be taken then; take it now.
                self.task_mut(topic_partition).step = Step::Decide;
                true
            }
            MirrorState::Mirroring => {
                let task = self.task_mut(topic_partition);
                task.step = Step::Fetching;
                task.fetch_not_before_ms = None;
                true
            }
            MirrorState::Pausing
                if self
                    .config
                    .broken
                    .contains(&BrokenSwitch::MirrorFetchWhilePaused) =>
            {
                // Broken on purpose: the fetcher keeps running and PAUSED is never written.
                self.task_mut(topic_partition).step = Step::Fetching;
                false
            }
            MirrorState::Pausing => {
                // The fetcher is gone once the task leaves Fetching; answers to a fetch still
                // in flight are dropped (the task is no longer MIRRORING).
                self.write_transition(now_ms, topic_partition, MirrorState::Paused);
                false
            }
            MirrorState::Paused | MirrorState::Stopped => {
                self.task_mut(topic_partition).step = Step::Idle;
                false
            }
            MirrorState::Stopping => {
                self.stopping_start(now_ms, topic_partition);
                false
            }
            MirrorState::Failed => {
                let task = self.task_mut(topic_partition);
                task.step = Step::Decide;
                task.not_before_ms = now_ms + backoff_ms(task.retry_attempt);
                false
            }
        }
    }

    /// Whether `mirror.name` now asks a partition that reached `state` to move on to another
    /// state it may go to from there. Checked when a state is reached: a wish that arrived
    /// while the state before it was at work is looked at then (STOPPING → PREPARING is not
    /// a transition, so a topic added again while STOPPING re-ran STOPPING and, reaching
    /// STOPPED, was left there for good: generator seed 1337263765019824; likewise a resume
    /// while PAUSING, seed 1337263765019770).
    fn wish_leads_elsewhere(&self, topic_partition: &TopicPartition, state: MirrorState) -> bool {
        self.image
            .mirror_desired_state(&topic_partition.topic)
            .is_some_and(|desired| {
                let target = decide(state, &desired);
                target != state && is_valid_transition(state, target)
            })
    }

    // ----- PREPARING -----

    pub(super) fn source_of(&self, mirror: &str) -> Option<Vec<NodeId>> {
        let value = self
            .image
            .configs
            .get(&ConfigResource::Mirror(mirror.to_owned()))?
            .get(BOOTSTRAP_SERVERS_CONFIG)?;
        parse_bootstrap_servers(value).ok()
    }

    /// The mirror's source cluster view, created on first use.
    fn source_cluster(&mut self, mirror: &str) -> Option<&mut SourceCluster> {
        if !self.mirror.sources.contains_key(mirror) {
            let bootstrap = self.source_of(mirror)?;
            let metadata = MetadataCache::new(
                &bootstrap,
                SOURCE_METADATA_MAX_AGE_MS,
                MIRROR_RETRY_BACKOFF_MS,
            )
            .ok()?;
            self.mirror
                .sources
                .insert(mirror.to_owned(), SourceCluster { metadata });
        }
        self.mirror.sources.get_mut(mirror)
    }

    /// The source cluster view of a task's mirror, asked about the task's topic; without a
    /// usable `bootstrap.servers` the partition fails.
    fn task_source(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
    ) -> Option<&mut SourceCluster> {
        let mirror = self.mirror.tasks[topic_partition].mirror.clone();
        if self.source_cluster(&mirror).is_none() {
            let reason = "the mirror's bootstrap.servers is unusable".to_string();
            self.fail_mirror_partition(now_ms, topic_partition, reason, false);
            return None;
        }
        let source = self.mirror.sources.get_mut(&mirror).expect("created above");
        source.metadata.add_topic(&topic_partition.topic);
        Some(source)
    }

    fn send_lme_lookup(&mut self, now_ms: i64, topic_partition: &TopicPartition) {
        let Some(source) = self.task_source(now_ms, topic_partition) else {
            return;
        };
        let to = source.metadata.target();
        let request = Request::LastMirroredEpochLookup {
            requester: self.node_id.cluster(),
            topic: topic_partition.topic.clone(),
            partition: topic_partition.partition,
        };
        self.task_mut(topic_partition).step = Step::Waiting;
        let what = MirrorRequest::LmeLookup {
            partition: topic_partition.clone(),
            to,
        };
        self.send_mirror_request(now_ms, to, request, what);
    }

    fn apply_lme(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        result: Result<(ErrorCode, (i32, i64)), ErrorCode>,
        from: NodeId,
    ) {
        let (last_mirrored_epoch, last_mirrored_offset) = match result {
            Ok((ErrorCode::None, last_mirrored)) => last_mirrored,
            Ok((ErrorCode::InvalidClusterMirrorState, _)) => {
                let reason = "the source still mirrors this partition from here".to_string();
                self.fail_mirror_partition(now_ms, topic_partition, reason, false);
                return;
            }
            Ok(_) | Err(_) => {
                let mirror = self.mirror.tasks[topic_partition].mirror.clone();
                if let Some(source) = self.mirror.sources.get_mut(&mirror) {
                    source.metadata.rotate_away_from(from);
                }
                self.retry_step_later(now_ms, topic_partition, Step::Act);
                return;
            }
        };
        // From the cut on, the log is to be a prefix of the source's: no more local markers.
        self.task_mut(topic_partition).own_writes_only = false;
        let Some(partition) = self.partitions.get_mut(topic_partition) else {
            return;
        };
        let log_end_before = partition.log.log_end_offset();
        let offset_alignment = self.config.mirror_design == MirrorDesign::OffsetAlignment;
        let truncated = if last_mirrored_epoch < 0 {
            partition.log.truncate_fully_and_start_at(0).map(|()| 0)
        } else if offset_alignment {
            // The early KIP's alignment: keep everything below the last mirrored offset,
            // whatever epoch wrote it here.
            let target = last_mirrored_offset.clamp(0, log_end_before);
            partition.log.truncate_to(target).map(|_| target)
        } else {
            let end = partition.log.end_offset_for_epoch(last_mirrored_epoch);
            let off_by_one = i64::from(
                self.config
                    .broken
                    .contains(&BrokenSwitch::MirrorLmeTruncationOffByOne),
            );
            let target = if end.end_offset < 0 {
                0
            } else {
                (end.end_offset + off_by_one).min(log_end_before)
            };
            partition.log.truncate_to(target).map(|_| target)
        };
        match truncated {
            Ok(offset) => {
                self.push_truncation(
                    topic_partition,
                    log_end_before,
                    TruncationReason::MirrorLastMirroredEpoch,
                );
                let design = self.config.mirror_design;
                let removed = offset < log_end_before;
                self.note_cut_removed(topic_partition, removed);
                if design.fences_followers_after_mirror_cut()
                    && (!removed || design.prepare_awaits_every_replica_after_cut())
                {
                    // (`prepare-awaits-isr` keeps the KIP's PREPARING whole: no fence after a
                    // cut that removed records either.)
                    // A cut that removed nothing waits for the ISR only, yet a replica outside
                    // it may hold records the leader never had (a zombie leader's queued
                    // produce, generator seed 169) in an epoch number the mirrored batches
                    // reuse; and the wait after a cut that removed records judges a follower
                    // by its last fetch offset, while the answer to that fetch may carry
                    // records above the cut (generated seed 9970000000000940: the follower
                    // appended them, was paused, and fetched past the cut forever). Fence every
                    // follower at the cut so none rejoins past it.
                    if let Some(partition) = self.partitions.get_mut(topic_partition) {
                        partition.fence_after_mirror_cut();
                    }
                }
                let task = self.task_mut(topic_partition);
                let every_replica = design.prepare_awaits_every_replica_after_cut()
                    && (offset < log_end_before || task.preparing_resumed);
                task.step = Step::AwaitTruncation {
                    offset,
                    every_replica,
                    reported: false,
                };
                task.not_before_ms = now_ms;
            }
            Err(error) => {
                self.fail_mirror_partition(
                    now_ms,
                    topic_partition,
                    format!("truncation failed: {error}"),
                    false,
                );
            }
        }
    }

    /// Whether every ISR follower's log ends at or below `offset` (they truncated too); every
    /// replica's, not only the ISR's, with `mirror.support.unclean.leader.election=true` or
    /// when `every_replica` (the cut removed records, see
    /// [`MirrorDesign::prepare_awaits_every_replica_after_cut`]).
    fn replicas_truncated_to(
        &self,
        topic_partition: &TopicPartition,
        offset: i64,
        every_replica: bool,
    ) -> bool {
        let Some(partition) = self.partitions.get(topic_partition) else {
            return false;
        };
        let Role::Leader(state) = &partition.role else {
            return false;
        };
        let every_replica = every_replica
            || self
                .image
                .configs
                .get(&ConfigResource::Topic(topic_partition.topic.clone()))
                .and_then(|configs| configs.get(MIRROR_SUPPORT_UNCLEAN_CONFIG))
                .is_some_and(|value| value == "true");
        let members = if every_replica {
            &state.replicas
        } else {
            &state.isr
        };
        members
            .iter()
            .filter(|member| **member != self.broker_id)
            .all(|member| {
                state
                    .followers
                    .get(member)
                    .is_some_and(|f| f.log_end_offset >= 0 && f.log_end_offset <= offset)
            })
    }

    // ----- MIRRORING: the fetcher -----

    fn maybe_send_mirror_fetch(&mut self, now_ms: i64, topic_partition: &TopicPartition) {
        // Only this task's fetch counts: one a dropped task left in flight is answered to
        // nobody.
        let generation = self.mirror.tasks[topic_partition].generation;
        let in_flight = self.mirror.requests.values().any(|(what, _, sent_by)| {
            *sent_by == Some(generation)
                && matches!(what, MirrorRequest::Fetch { partition, .. } if partition == topic_partition)
        });
        if in_flight {
            return;
        }
        let Some(source) = self.task_source(now_ms, topic_partition) else {
            return;
        };
        let Some((leader, source_epoch)) = source.metadata.leader(topic_partition) else {
            // Asked for on the next metadata refresh; its answer drives the fetch.
            source.metadata.request_update();
            return;
        };
        self.task_mut(topic_partition).fetch_not_before_ms = None;
        let Some(partition) = self.partitions.get(topic_partition) else {
            return;
        };
        let offset = partition.log.log_end_offset();
        let last_fetched_epoch = partition.log.latest_epoch().unwrap_or(-1);
        let unchecked = self.config.mirror_design.verifies_mirrored_tail()
            && self.mirror.tasks[topic_partition].verified_source_epoch != Some(source_epoch);
        let tail_check = if unchecked {
            let last_batch = partition.log.batches_from(offset - 1).next();
            last_batch.map(|batch| TailCheck {
                base_offset: batch.base_offset(),
                source_epoch,
            })
        } else {
            None
        };
        if unchecked && tail_check.is_none() {
            // An empty log has no tail another history could have replaced.
            self.task_mut(topic_partition).verified_source_epoch = Some(source_epoch);
        }
        let request = Request::Fetch {
            replica_id: None,
            replica_epoch: -1,
            isolation: self.config.mirror_design.mirror_fetch_isolation(),
            max_wait_ms: MIRROR_FETCH_MAX_WAIT_MS,
            max_bytes: MIRROR_FETCH_MAX_BYTES,
            partitions: vec![FetchPartition {
                topic_partition: topic_partition.clone(),
                current_leader_epoch: source_epoch,
                fetch_offset: tail_check.map_or(offset, |check| check.base_offset),
                last_fetched_epoch,
            }],
        };
        let what = MirrorRequest::Fetch {
            partition: topic_partition.clone(),
            offset,
            tail_check,
        };
        self.send_mirror_request(now_ms, leader, request, what);
    }

    fn apply_mirror_fetch(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        (sent_offset, tail_check): (i64, Option<TailCheck>),
        result: Result<FetchPartitionResponse, ErrorCode>,
    ) {
        let fetching = self.mirror.tasks.get(topic_partition).is_some_and(|task| {
            task.step == Step::Fetching && task.state == MirrorState::Mirroring
        });
        let Some(partition) = self.partitions.get_mut(topic_partition) else {
            return;
        };
        if !fetching || partition.log.log_end_offset() != sent_offset {
            return; // The fetcher was removed, or the log moved meanwhile.
        }
        let answer = match result {
            Ok(answer) => answer,
            Err(_) => {
                self.mirror_fetch_failed(now_ms, topic_partition);
                return;
            }
        };
        match answer.error {
            ErrorCode::None => {}
            ErrorCode::OffsetOutOfRange
                if tail_check.is_some_and(|check| answer.log_start_offset > check.base_offset)
                    && answer.log_start_offset <= sent_offset =>
            {
                // The source deleted the records the tail check would compare (DeleteRecords):
                // nothing is left there to tell two histories apart; fetch from the log end.
                let task = self.task_mut(topic_partition);
                task.verified_source_epoch = tail_check.map(|check| check.source_epoch);
                return;
            }
            ErrorCode::OffsetOutOfRange if answer.log_start_offset > sent_offset => {
                let removed = partition.log.log_start_offset() < sent_offset;
                let _ = partition
                    .log
                    .truncate_fully_and_start_at(answer.log_start_offset);
                self.push_truncation(
                    topic_partition,
                    sent_offset,
                    TruncationReason::MirrorBelowSourceLogStart,
                );
                self.note_cut_removed(topic_partition, removed);
                return;
            }
            ErrorCode::OffsetOutOfRange => {
                let reason = format!(
                    "the source's log ends below {sent_offset}, which it served before: an unclean \
                     leader election in the source, and mirror.support.unclean.leader.election is off"
                );
                self.fail_mirror_partition(now_ms, topic_partition, reason, true);
                return;
            }
            _ => {
                self.mirror_fetch_failed(now_ms, topic_partition);
                return;
            }
        }
        if let Some(diverging) = answer.diverging_epoch {
            if diverging.end_offset < 0 {
                // The source has no epoch at or below ours: nothing here is its history.
                let _ = partition.log.truncate_fully_and_start_at(0);
                self.mirror_cut(topic_partition, sent_offset);
                return;
            }
            let target = super::follower_truncation_offset(&partition.log, diverging);
            let _ = partition.log.truncate_to(target);
            self.mirror_cut(topic_partition, sent_offset);
            return;
        }
        let fetched = match tail_check {
            Some(check) => {
                match self.check_tail(now_ms, topic_partition, sent_offset, check, answer.batches) {
                    Some(above_tail) => above_tail,
                    None => return,
                }
            }
            None => answer.batches,
        };
        if fetched.is_empty() {
            return;
        }
        let leader_epoch = self.mirror.tasks[topic_partition].leader_epoch;
        let batches = self
            .config
            .mirror_design
            .store_fetched(leader_epoch, fetched);
        let Some(partition) = self.partitions.get_mut(topic_partition) else {
            return;
        };
        if let Some(target) = super::follower_truncation_for_batches(&partition.log, &batches) {
            // The source's log never lowers its epochs, so a batch below this log's latest
            // epoch means the tail here is not the source's, though the fetch's divergence
            // check passed: the source re-used the tail's epoch number after a cut of its own
            // (a chain's middle cluster re-mirrored after its PREPARING cut, generator seed
            // 9200000000000091). Cut the tail as a replica does; the next fetch checks the rest.
            let _ = partition.log.truncate_to(target);
            self.mirror_cut(topic_partition, sent_offset);
            self.events.push(super::BrokerEvent::MirrorEpochBelowLocal {
                topic_partition: topic_partition.clone(),
                offset: sent_offset,
                truncated_to: target,
            });
            return;
        }
        if let Some(batch_epoch) = self.epoch_to_fence(leader_epoch, &batches) {
            self.request_fencing_bump(now_ms, topic_partition, batch_epoch);
            return;
        }
        if self.mirror.tasks[topic_partition].bump_before_append {
            // Any bump will do: it only has to be an epoch change a mirror of this log sees
            // before it can fetch what comes after the cut.
            self.events.push(super::BrokerEvent::MirrorCutEpochBump {
                topic_partition: topic_partition.clone(),
                leader_epoch,
            });
            self.request_own_bump(now_ms, topic_partition, leader_epoch);
            return;
        }
        let Some(partition) = self.partitions.get_mut(topic_partition) else {
            return;
        };
        match partition.log.append_as_follower(&batches) {
            Ok(info) => {
                self.events.push(super::BrokerEvent::MirrorAppend {
                    topic_partition: topic_partition.clone(),
                    first_offset: info.first_offset,
                    last_offset: info.last_offset,
                });
                self.maybe_increment_high_watermark(now_ms, topic_partition);
            }
            Err(error) => {
                let reason = format!("mirrored batches were refused: {error}");
                self.fail_mirror_partition(now_ms, topic_partition, reason, false);
            }
        }
    }

    /// A tail check's answer ([`MirrorDesign::verifies_mirrored_tail`]): the fetched batches
    /// above the log end (`sent_offset`) when the source's batch at the check's offset is the
    /// local last batch in the design's stored form (the seed's: byte for byte); `None` when
    /// there is nothing to append now. On a difference the local batch is cut (a mirroring
    /// cut, which fences the followers and asks for a bump before the next append) and the
    /// next fetch checks the batch before it. An empty answer proves nothing (a new source
    /// leader whose high watermark is catching up, or a source that ends at the batch's base
    /// and will refill it): the check is sent again after the backoff.
    fn check_tail(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        sent_offset: i64,
        check: TailCheck,
        fetched: Vec<RecordBatch>,
    ) -> Option<Vec<RecordBatch>> {
        let design = self.config.mirror_design;
        let partition = self.partitions.get_mut(topic_partition)?;
        let Some(first) = fetched.first() else {
            self.task_mut(topic_partition).fetch_not_before_ms =
                Some(now_ms + MIRROR_RETRY_BACKOFF_MS);
            return None;
        };
        let same = partition
            .log
            .batches_from(check.base_offset)
            .next()
            .is_some_and(|local| {
                local.base_offset() == check.base_offset && design.is_stored_form_of(first, local)
            });
        let (base_offset, source_epoch) = (check.base_offset, check.source_epoch);
        if !same {
            let _ = partition.log.truncate_to(base_offset);
            self.mirror_cut(topic_partition, sent_offset);
            self.events.push(super::BrokerEvent::MirrorTailDiverged {
                topic_partition: topic_partition.clone(),
                base_offset,
                source_epoch,
            });
            return None;
        }
        self.task_mut(topic_partition).verified_source_epoch = Some(source_epoch);
        self.events.push(super::BrokerEvent::MirrorTailChecked {
            topic_partition: topic_partition.clone(),
            base_offset,
            source_epoch,
        });
        Some(
            fetched
                .into_iter()
                .filter(|batch| batch.base_offset() >= sent_offset)
                .collect(),
        )
    }

    /// EPOCH_FENCING's trigger: the highest epoch among fetched `batches` when it is above the
    /// leader epoch this broker leads the partition in (and the design keeps DLE ≥ SLE).
    fn epoch_to_fence(&self, leader_epoch: i32, batches: &[RecordBatch]) -> Option<i32> {
        if !self.config.mirror_design.fences_mirrored_epochs() {
            return None;
        }
        batches
            .iter()
            .map(RecordBatch::partition_leader_epoch)
            .max()
            .filter(|highest| *highest > leader_epoch)
    }

    /// EPOCH_FENCING (reactive, spec §4.4): asks the controller to raise this partition's
    /// leader epoch above the source's epoch plus [`LEADER_EPOCH_BUMP_INCREMENT`], with the
    /// same leader; the fetcher waits until metadata shows it (`Step::AwaitEpochBump`), and
    /// the fetch is sent again. The state stays MIRRORING: the late revision persists
    /// EPOCH_FENCING as a state of its own (issue #17), which no invariant here needs.
    fn request_fencing_bump(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        batch_epoch: i32,
    ) {
        let task = &self.mirror.tasks[topic_partition];
        let source_epoch = self
            .mirror
            .sources
            .get(&task.mirror)
            .map_or(-1, |source| source.metadata.leader_epoch(topic_partition));
        let minimum = batch_epoch.max(source_epoch) + LEADER_EPOCH_BUMP_INCREMENT;
        let leader_epoch = task.leader_epoch;
        self.events.push(super::BrokerEvent::MirrorEpochFenced {
            topic_partition: topic_partition.clone(),
            batch_epoch,
            leader_epoch,
            minimum,
        });
        self.request_own_bump(now_ms, topic_partition, minimum);
    }

    /// MIRRORING: asks the controller for BumpLeaderEpochs above `minimum` with the same
    /// leader; the fetcher waits for metadata to show it (`Step::AwaitEpochBump`, after
    /// [`Self::apply_bump`]) and then fetches again.
    fn request_own_bump(&mut self, now_ms: i64, topic_partition: &TopicPartition, minimum: i32) {
        let (broker_id, broker_epoch) = (self.broker_id, self.broker_epoch.unwrap_or(-1));
        let task = self.task_mut(topic_partition);
        task.fencing_bump = true;
        task.step = Step::Waiting;
        let request = Request::BumpLeaderEpochs {
            broker_id,
            broker_epoch,
            partitions: vec![(task.id.topic_id, task.id.partition, minimum)],
        };
        let controller = self.controller;
        self.send_mirror_request(
            now_ms,
            controller,
            request,
            MirrorRequest::Bump(topic_partition.clone()),
        );
    }

    /// The mirror fetcher cut this leader's log back from `sent_offset` (its log end when the
    /// fetch went out): reported as a truncation, and, when the cut removed records, every
    /// follower is fenced until it truncates to the cut (`Partition::fence_after_mirror_cut`).
    fn mirror_cut(&mut self, topic_partition: &TopicPartition, sent_offset: i64) {
        let removed = self
            .partitions
            .get(topic_partition)
            .is_some_and(|partition| partition.log.log_end_offset() < sent_offset);
        self.note_cut_removed(topic_partition, removed);
        if self
            .config
            .mirror_design
            .fences_followers_after_mirror_cut()
        {
            if let Some(partition) = self.partitions.get_mut(topic_partition) {
                if partition.log.log_end_offset() < sent_offset {
                    partition.fence_after_mirror_cut();
                }
            }
        }
        self.push_truncation(
            topic_partition,
            sent_offset,
            TruncationReason::MirrorDivergingEpoch,
        );
    }

    /// A mirroring cut that `removed` records asks for a leader-epoch bump before the next
    /// mirrored append ([`MirrorDesign::verifies_mirrored_tail`]).
    fn note_cut_removed(&mut self, topic_partition: &TopicPartition, removed: bool) {
        if removed && self.config.mirror_design.verifies_mirrored_tail() {
            if let Some(task) = self.mirror.tasks.get_mut(topic_partition) {
                task.bump_before_append = true;
            }
        }
    }

    /// The source leader may have moved: refresh the source metadata and fetch again after
    /// the backoff.
    fn mirror_fetch_failed(&mut self, now_ms: i64, topic_partition: &TopicPartition) {
        let Some(task) = self.mirror.tasks.get_mut(topic_partition) else {
            return;
        };
        task.fetch_not_before_ms = Some(now_ms + MIRROR_RETRY_BACKOFF_MS);
        if let Some(source) = self.mirror.sources.get_mut(&task.mirror) {
            source.metadata.request_update();
        }
    }

    fn refresh_source_metadata(&mut self, now_ms: i64) {
        let mirrors: Vec<String> = self.mirror.sources.keys().cloned().collect();
        for mirror in mirrors {
            let source = self.mirror.sources.get_mut(&mirror).expect("listed");
            if !source.metadata.should_send(now_ms) {
                continue;
            }
            let to = source.metadata.target();
            let request = Request::Metadata {
                topics: Some(source.metadata.requested_topics()),
            };
            source.metadata.on_sent();
            self.send_mirror_request(
                now_ms,
                to,
                request,
                MirrorRequest::SourceMetadata { mirror, to },
            );
        }
    }

    fn apply_source_metadata(
        &mut self,
        now_ms: i64,
        mirror: &str,
        to: NodeId,
        result: Result<(Vec<crate::protocol::BrokerId>, Vec<TopicMetadata>), ErrorCode>,
    ) {
        let Some(source) = self.mirror.sources.get_mut(mirror) else {
            return;
        };
        match result {
            Ok((brokers, topics)) => {
                source.metadata.apply(now_ms, &brokers, &topics);
            }
            Err(_) => source.metadata.on_failed(now_ms, to),
        }
    }

    // ----- STOPPING -----

    fn stopping_start(&mut self, now_ms: i64, topic_partition: &TopicPartition) {
        // Step 1, remove the fetcher: the task no longer fetches, and an answer in flight is
        // dropped (see apply_mirror_fetch). Capture what was mirrored before anything local
        // is written; a re-run after a failover keeps the value persisted the first time.
        let Some(partition) = self.partitions.get(topic_partition) else {
            return;
        };
        let latest_epoch = partition.log.latest_epoch().unwrap_or(-1);
        let log_end = partition.log.log_end_offset();
        let skip_bump = self.config.mirror_design == MirrorDesign::NoEpochBump;
        let task = self.task_mut(topic_partition);
        if task.last_mirrored.is_none() {
            task.last_mirrored = Some((latest_epoch, log_end));
        }
        if skip_bump {
            // The `no-epoch-bump` design: go on in the current leader epoch.
            task.step = Step::AwaitEpochBump { min: -1 };
            task.not_before_ms = now_ms;
            return;
        }
        if self.config.mirror_design.stops_with_abort_markers() {
            // The later revision persists the last mirrored epoch first, before the bump
            // adds an epoch to the log; its answer goes on to the bump.
            self.stopping_persist_last_mirrored(now_ms, topic_partition);
            return;
        }
        self.stopping_request_bump(now_ms, topic_partition);
    }

    /// Step 2: bump the leader epoch.
    fn stopping_request_bump(&mut self, now_ms: i64, topic_partition: &TopicPartition) {
        let Some(partition) = self.partitions.get(topic_partition) else {
            return;
        };
        let latest_epoch = partition.log.latest_epoch().unwrap_or(-1);
        let (broker_id, broker_epoch) = (self.broker_id, self.broker_epoch.unwrap_or(-1));
        let task = self.task_mut(topic_partition);
        // Step 2, bump the leader epoch above every epoch in the log, and above the current
        // leader epoch too: that epoch may already label local writes that a full truncation
        // (a re-mirror from scratch, LME −1) removed from this log but not from a replica
        // outside the ISR; writing new local batches in it again would give one epoch two
        // lineages, and that replica's divergence could never be detected (found by the
        // `delete_mirror` scenario, seed 2).
        let minimum = latest_epoch.max(task.leader_epoch);
        let request = Request::BumpLeaderEpochs {
            broker_id,
            broker_epoch,
            partitions: vec![(task.id.topic_id, task.id.partition, minimum)],
        };
        task.step = Step::Waiting;
        let controller = self.controller;
        self.send_mirror_request(
            now_ms,
            controller,
            request,
            MirrorRequest::Bump(topic_partition.clone()),
        );
    }

    fn apply_bump(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        result: Result<(ErrorCode, i32), ErrorCode>,
    ) {
        match result {
            Ok((ErrorCode::None, bumped_epoch)) => {
                // Go on once metadata shows this broker leading in the bumped epoch.
                let task = self.task_mut(topic_partition);
                task.step = Step::AwaitEpochBump {
                    min: bumped_epoch - 1,
                };
                task.not_before_ms = now_ms;
            }
            _ => self.retry_step_later(now_ms, topic_partition, Step::Act),
        }
    }

    /// Steps 3 and 4: truncate to the LSO, persist the last mirrored epoch.
    fn stopping_after_bump(&mut self, now_ms: i64, topic_partition: &TopicPartition) {
        let Some(partition) = self.partitions.get_mut(topic_partition) else {
            return;
        };
        // The last stable offset is bounded by the high watermark, and a leader's high
        // watermark lags until its ISR has fetched everything of its leadership: truncating to
        // the LSO before that would drop records the ISR had committed (and that a downstream
        // mirror or a consumer already read; `chain` seed 10022, right after a leader change).
        // After the bump the leadership starts at the log end, so this waits until the whole
        // log is replicated; then only open transactions lie above the LSO.
        let caught_up = partition
            .leader_state()
            .is_some_and(|state| partition.log.high_watermark() >= state.leader_epoch_start_offset);
        // A stop of the cluster's own writes cuts nothing: its open transactions are local
        // ones whose markers this partition admits, so it waits for them to end (within the
        // transaction timeout, the coordinator aborts what its producer abandoned).
        // The wait is bounded: a log can hold open transactions that are not local after all
        // (a power loss took an earlier stop's cut and reset, `stopped_single_replica_lost_reset`),
        // and no local marker closes those; past the bound they are cut as before.
        let task = &self.mirror.tasks[topic_partition];
        let waited_out = task
            .own_stop_wait_until_ms
            .is_some_and(|until| now_ms >= until);
        let open_own_transactions = task.stop_own_writes_only
            && !waited_out
            && partition.log.last_stable_offset() < partition.log.log_end_offset();
        if open_own_transactions {
            let task = self.task_mut(topic_partition);
            task.own_stop_wait_until_ms
                .get_or_insert(now_ms + MIRROR_OWN_STOP_TXN_WAIT_MS);
        }
        if !caught_up || open_own_transactions {
            let task = self.task_mut(topic_partition);
            task.not_before_ms = now_ms + MIRROR_RETRY_BACKOFF_MS;
            return;
        }
        if self.config.mirror_design.stops_with_abort_markers() {
            self.stopping_abort_open_transactions(now_ms, topic_partition);
            return;
        }
        let Some(partition) = self.partitions.get_mut(topic_partition) else {
            return;
        };
        let log_end = partition.log.log_end_offset();
        let stable = partition.log.last_stable_offset();
        if stable < log_end {
            if let Err(error) = partition.log.truncate_to(stable) {
                self.fail_mirror_partition(
                    now_ms,
                    topic_partition,
                    format!("truncation to the LSO failed: {error}"),
                    false,
                );
                return;
            }
            self.push_truncation(
                topic_partition,
                log_end,
                TruncationReason::MirrorStopAtLastStableOffset,
            );
        }
        self.stopping_persist_last_mirrored(now_ms, topic_partition);
    }

    /// Persists the last mirrored (epoch, offset) captured when STOPPING began.
    fn stopping_persist_last_mirrored(&mut self, now_ms: i64, topic_partition: &TopicPartition) {
        let task = &self.mirror.tasks[topic_partition];
        let write = MirrorStateWrite {
            id: task.id,
            state: None,
            leader_epoch: task.leader_epoch,
            state_epoch: task.state_epoch,
            error_message: None,
            non_retryable: false,
            last_mirrored: task.last_mirrored,
            own_writes_only: false,
        };
        self.send_write(now_ms, topic_partition, write, WritePurpose::LastMirrored);
    }

    /// The later revision's steps 4 and 5 (`abort-markers`): an ABORT marker for every open
    /// transaction, so read_committed consumers skip their data and the LSO moves past it,
    /// then the reset. `reset-before-txn-resolution` swaps the two: the reset forgets the
    /// open transactions, and the markers written after it close nothing (spec §9 S-5).
    fn stopping_abort_open_transactions(&mut self, now_ms: i64, topic_partition: &TopicPartition) {
        let leader_epoch = self.mirror.tasks[topic_partition].leader_epoch;
        let reset_first = self.config.mirror_design == MirrorDesign::ResetBeforeTxnResolution;
        let Some(partition) = self.partitions.get(topic_partition) else {
            return;
        };
        // Taken before either append: the buggy order still knows what it meant to abort.
        let open = open_transaction_markers(&partition.log);
        if reset_first && self.append_pid_reset(now_ms, topic_partition).is_none() {
            return;
        }
        for (producer, coordinator_epoch) in open {
            let marker = end_transaction_marker(producer, false, coordinator_epoch, now_ms);
            if let Err(error) =
                self.append_stop_batch(now_ms, topic_partition, &marker, leader_epoch)
            {
                let reason = format!("ABORT marker append failed: {error}");
                self.fail_mirror_partition(now_ms, topic_partition, reason, false);
                return;
            }
        }
        if !reset_first && self.append_pid_reset(now_ms, topic_partition).is_none() {
            return;
        }
        // Whichever came last, STOPPED waits until everything the stop wrote is committed.
        let Some(partition) = self.partitions.get(topic_partition) else {
            return;
        };
        let last = partition.log.log_end_offset() - 1;
        self.await_stop_committed(now_ms, topic_partition, last);
    }

    /// Step 5: MIRROR_PID_RESET, then wait for it to commit.
    fn stopping_after_last_mirrored(&mut self, now_ms: i64, topic_partition: &TopicPartition) {
        if let Some(offset) = self.append_pid_reset(now_ms, topic_partition) {
            self.await_stop_committed(now_ms, topic_partition, offset);
        }
    }

    /// Appends MIRROR_PID_RESET unless the log already ends with one this stop wrote (a
    /// re-run of STOPPING) or the design writes none; the offset STOPPED waits for. `None`
    /// when the partition is gone or the append failed (the partition is then FAILED).
    ///
    /// A reset this stop wrote carries an epoch above the last mirrored one (it was appended
    /// after the bump). A mirrored log may also end with the *source's* reset, in the
    /// source's epoch: in a chain (a → b → c, c stops after fetching b's reset) or a failback
    /// (b → a after a → b) when the source wrote nothing after its own stop. That one is
    /// mirrored data and does not stand for this stop's: skipping it would leave the bumped
    /// epoch without a batch and the stop without the reset the seed requires (generated
    /// seeds 1337263765019680, …456, …460: the stopped log ended with the mirrored reset).
    fn append_pid_reset(&mut self, now_ms: i64, topic_partition: &TopicPartition) -> Option<i64> {
        let leader_epoch = self.mirror.tasks[topic_partition].leader_epoch;
        let last_mirrored_epoch = self.mirror.tasks[topic_partition]
            .last_mirrored
            .map_or(-1, |(epoch, _)| epoch);
        let source_cluster_id = self
            .source_of(&self.mirror.tasks[topic_partition].mirror)
            .and_then(|nodes| nodes.first().map(|node| node.cluster()))
            .map_or_else(|| "unknown".to_owned(), ClusterIndex::cluster_id);
        let partition = self.partitions.get(topic_partition)?;
        let ends_with_reset = partition.log.batches().last().is_some_and(|batch| {
            batch.is_mirror_pid_reset() && batch.partition_leader_epoch() > last_mirrored_epoch
        });
        let own_writes_only = self.mirror.tasks[topic_partition].stop_own_writes_only;
        if own_writes_only {
            self.events.push(super::BrokerEvent::StopOfOwnWrites {
                topic_partition: topic_partition.clone(),
            });
        }
        if !self.config.mirror_design.writes_pid_reset() || ends_with_reset || own_writes_only {
            // `no-pid-reset` and `pid-rewrite`: STOPPED once everything up to here is
            // committed.
            return Some(partition.log.log_end_offset() - 1);
        }
        let reset = mirror_pid_reset(&source_cluster_id, now_ms);
        match self.append_stop_batch(now_ms, topic_partition, &reset, leader_epoch) {
            Ok(offset) => Some(offset),
            Err(error) => {
                let reason = format!("MIRROR_PID_RESET append failed: {error}");
                self.fail_mirror_partition(now_ms, topic_partition, reason, false);
                None
            }
        }
    }

    /// Appends a batch STOPPING writes itself (reset, ABORT marker) in `leader_epoch`; its
    /// offset.
    fn append_stop_batch(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        batch: &RecordBatch,
        leader_epoch: i32,
    ) -> Result<i64, String> {
        let partition = self
            .partitions
            .get_mut(topic_partition)
            .ok_or_else(|| "the partition is gone".to_owned())?;
        let info = partition
            .log
            .append_as_leader(batch, leader_epoch, AppendOrigin::Coordinator, now_ms)
            .map_err(|error| error.to_string())?;
        self.events.push(super::BrokerEvent::LeaderAppend {
            topic_partition: topic_partition.clone(),
            first_offset: info.first_offset,
            last_offset: info.last_offset,
            leader_epoch,
            mirror_state: Some(MirrorState::Stopping),
            control: batch.is_control(),
        });
        Ok(info.first_offset)
    }

    /// STOPPED is written once everything up to `offset` is committed.
    fn await_stop_committed(&mut self, now_ms: i64, topic_partition: &TopicPartition, offset: i64) {
        let task = self.task_mut(topic_partition);
        task.step = Step::AwaitResetCommitted { offset };
        task.not_before_ms = now_ms;
        self.maybe_increment_high_watermark(now_ms, topic_partition);
    }

    // ----- answers -----

    /// Routes an answer (or a timeout as `Err`) to the request it belongs to.
    pub(super) fn handle_mirror_response(
        &mut self,
        now_ms: i64,
        correlation_id: u64,
        response: Result<Response, ErrorCode>,
    ) {
        let Some((what, _, sent_by)) = self.mirror.requests.remove(&correlation_id) else {
            return;
        };
        let live = what.task_partition().is_none_or(|tp| {
            self.mirror
                .tasks
                .get(tp)
                .is_some_and(|task| Some(task.generation) == sent_by)
        });
        if !live {
            // The task was dropped while the request was in flight (its leadership ended, or
            // the topic left the mirror); a task created since is another one and did not ask.
            return;
        }
        match what {
            MirrorRequest::Read(tp) => match response {
                Ok(Response::ReadMirrorStates {
                    error: ErrorCode::None,
                    mut partitions,
                    ..
                }) if partitions.len() == 1 && partitions[0].error.is_none() => {
                    let status = partitions.remove(0);
                    let leader_epoch = self.mirror.tasks[&tp].leader_epoch;
                    if status.leader_epoch > leader_epoch {
                        // Persisted by a newer leadership: this broker is a deposed leader
                        // whose metadata has not caught up (the prototype's zombie, S-12, which
                        // drops out). Its log need not hold what that leadership wrote (a
                        // STOPPED's MIRROR_PID_RESET): taking the state as its own would run a
                        // state it never reached. Read again later; the metadata showing the
                        // new leader drops the task.
                        self.events
                            .push(super::BrokerEvent::MirrorStateOfNewerLeader {
                                topic_partition: tp.clone(),
                                leader_epoch,
                                stored_leader_epoch: status.leader_epoch,
                            });
                        self.retry_step_later(now_ms, &tp, Step::Read);
                    } else {
                        self.apply_read(now_ms, &tp, status);
                    }
                }
                _ => self.retry_step_later(now_ms, &tp, Step::Read),
            },
            MirrorRequest::Write(tp, purpose) => {
                let result = match response {
                    Ok(Response::WriteMirrorStates { error, partitions }) => {
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
                self.apply_write(now_ms, &tp, purpose, result);
            }
            MirrorRequest::LmeLookup { partition, to } => {
                let result = match response {
                    Ok(Response::LastMirroredEpochLookup {
                        error,
                        last_mirrored_epoch,
                        last_mirrored_offset,
                    }) => Ok((error, (last_mirrored_epoch, last_mirrored_offset))),
                    Ok(_) => Err(ErrorCode::InvalidRequest),
                    Err(error) => Err(error),
                };
                self.apply_lme(now_ms, &partition, result, to);
            }
            MirrorRequest::Bump(tp) => {
                let result = match response {
                    Ok(Response::BumpLeaderEpochs {
                        error: ErrorCode::None,
                        partitions,
                    }) => partitions
                        .first()
                        .map_or(Err(ErrorCode::InvalidRequest), |(_, _, e, epoch)| {
                            Ok((*e, *epoch))
                        }),
                    Ok(Response::BumpLeaderEpochs { error, .. }) => Err(error),
                    Ok(_) => Err(ErrorCode::InvalidRequest),
                    Err(error) => Err(error),
                };
                self.apply_bump(now_ms, &tp, result);
            }
            MirrorRequest::Fetch {
                partition,
                offset,
                tail_check,
            } => {
                let result = match response {
                    Ok(Response::Fetch { mut partitions }) if partitions.len() == 1 => {
                        Ok(partitions.remove(0))
                    }
                    Ok(_) => Err(ErrorCode::InvalidRequest),
                    Err(error) => Err(error),
                };
                self.apply_mirror_fetch(now_ms, &partition, (offset, tail_check), result);
            }
            MirrorRequest::SourceMetadata { mirror, to } => {
                let result = match response {
                    Ok(Response::Metadata { brokers, topics }) => Ok((brokers, topics)),
                    Ok(_) => Err(ErrorCode::InvalidRequest),
                    Err(error) => Err(error),
                };
                self.apply_source_metadata(now_ms, &mirror, to, result);
            }
            MirrorRequest::LookupRead {
                reply_to,
                correlation_id,
            } => {
                self.answer_lookup_from_coordinator(reply_to, correlation_id, response);
            }
            MirrorRequest::DeleteCheck(delete_id) => {
                self.delete_check_answered(now_ms, delete_id, response)
            }
            MirrorRequest::DeleteTombstones(delete_id) => {
                self.delete_tombstones_answered(delete_id, response)
            }
            MirrorRequest::DeleteForward(delete_id) => {
                self.delete_forward_answered(now_ms, delete_id, response)
            }
        }
        self.poll_mirror(now_ms);
    }

    // ----- source side -----

    /// A LastMirroredEpochLookup from another cluster; see the module doc.
    pub(super) fn handle_last_mirrored_epoch_lookup(
        &mut self,
        now_ms: i64,
        from: NodeId,
        correlation_id: u64,
        requester: ClusterIndex,
        topic: &str,
        partition: i32,
    ) {
        let answer = |error, last_mirrored_epoch| Response::LastMirroredEpochLookup {
            error,
            last_mirrored_epoch,
            last_mirrored_offset: -1,
        };
        // The mirrors here whose source is the requester; the topic's own (its `mirror.name`,
        // kept as `<mirror>.removed` after a stop) holds its state, whichever sorts first: a
        // second mirror from the same cluster with no record of the topic must not answer
        // "nothing mirrored" while the topic's mirror still mirrors from there (generator seed
        // 9960000000000058: a loop went unrefused and cut committed data on both sides).
        let from_requester: Vec<&String> = self
            .image
            .configs
            .iter()
            .filter_map(|(resource, configs)| match resource {
                ConfigResource::Mirror(name) => configs
                    .get(BOOTSTRAP_SERVERS_CONFIG)
                    .and_then(|value| parse_bootstrap_servers(value).ok())
                    .filter(|nodes| nodes.iter().all(|node| node.cluster() == requester))
                    .map(|_| name),
                _ => None,
            })
            .collect();
        let own = self
            .image
            .mirror_desired_state(topic)
            .map(|desired| desired.mirror().to_owned());
        let mirror = own
            .filter(|own| from_requester.contains(&own))
            .or_else(|| from_requester.first().map(|name| (*name).clone()));
        let topic_id = self.image.topic_ids.get(topic).copied();
        let (Some(mirror), Some(topic_id)) = (mirror, topic_id) else {
            self.outbox
                .respond(from, correlation_id, answer(ErrorCode::None, -1));
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
            leader_epoch: -1,
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
            stop_own_writes_only: false,
            own_stop_wait_until_ms: None,
            fencing_bump: false,
            verified_source_epoch: None,
            bump_before_append: false,
            generation: 0,
        };
        let Some((coordinator, coordinator_partition)) = self.mirror_coordinator(&task) else {
            self.outbox.respond(
                from,
                correlation_id,
                answer(ErrorCode::CoordinatorNotAvailable, -1),
            );
            return;
        };
        let request = Request::ReadMirrorStates {
            coordinator_partition,
            mirror,
            partitions: vec![task.id],
        };
        let what = MirrorRequest::LookupRead {
            reply_to: from,
            correlation_id,
        };
        self.send_mirror_request(now_ms, coordinator, request, what);
    }

    fn answer_lookup_from_coordinator(
        &mut self,
        reply_to: NodeId,
        correlation_id: u64,
        response: Result<Response, ErrorCode>,
    ) {
        let none = (-1, -1);
        let (error, (last_mirrored_epoch, last_mirrored_offset)) = match response {
            Ok(Response::ReadMirrorStates {
                error: ErrorCode::None,
                partitions,
                ..
            }) => match partitions.first() {
                Some(status) if !status.error.is_none() => (status.error, none),
                Some(status)
                    if !matches!(status.state, MirrorState::Unknown | MirrorState::Stopped) =>
                {
                    (ErrorCode::InvalidClusterMirrorState, none)
                }
                Some(status) => (ErrorCode::None, status.last_mirrored.unwrap_or(none)),
                None => (ErrorCode::InvalidRequest, none),
            },
            Ok(Response::ReadMirrorStates { error, .. }) => (error, none),
            Ok(_) => (ErrorCode::InvalidRequest, none),
            Err(error) => (error, none),
        };
        self.outbox.respond(
            reply_to,
            correlation_id,
            Response::LastMirroredEpochLookup {
                error,
                last_mirrored_epoch,
                last_mirrored_offset,
            },
        );
    }
}

impl<S: BrokerStorage> super::Broker<S> {
    // ----- DeleteMirror at the admin entry -----

    /// The keys of every partition of `mirror`'s topics, grouped by coordinator partition.
    pub(super) fn mirror_keys_by_coordinator(
        &self,
        mirror: &str,
    ) -> BTreeMap<i32, Vec<MirrorPartitionId>> {
        let partitions = partition_count(&self.image, MIRROR_STATE_TOPIC);
        let mut keys: BTreeMap<i32, Vec<MirrorPartitionId>> = BTreeMap::new();
        if partitions == 0 {
            return keys;
        }
        for (name, topic_id) in &self.image.topic_ids {
            let ours = self
                .image
                .mirror_desired_state(name)
                .is_some_and(|desired| desired.mirror() == mirror);
            if !ours {
                continue;
            }
            let count = self
                .image
                .topics
                .get(topic_id)
                .map_or(0, |topic| topic.partitions.len());
            for partition in 0..count as i32 {
                let id = MirrorPartitionId {
                    topic_id: *topic_id,
                    partition,
                };
                keys.entry(mirror_state_partition(mirror, &id, partitions))
                    .or_default()
                    .push(id);
            }
        }
        keys
    }

    pub(super) fn coordinator_of_partition(&self, coordinator_partition: i32) -> Option<NodeId> {
        let leader = self
            .image
            .partition(&TopicPartition::new(
                MIRROR_STATE_TOPIC,
                coordinator_partition,
            ))?
            .leader?;
        Some(NodeId::Broker(self.node_id.cluster(), leader))
    }

    /// DeleteMirror from an admin; see the module doc.
    pub(super) fn handle_delete_mirror(
        &mut self,
        now_ms: i64,
        from: NodeId,
        correlation_id: u64,
        mirror: String,
    ) {
        let delete_id = self.mirror.next_delete_id;
        self.mirror.next_delete_id += 1;
        let mut pending = PendingDelete {
            reply_to: from,
            correlation_id,
            mirror: mirror.clone(),
            waiting: 0,
            refused: None,
            controller_answer: None,
        };
        let mut reads = Vec::new();
        for (coordinator_partition, ids) in self.mirror_keys_by_coordinator(&mirror) {
            match self.coordinator_of_partition(coordinator_partition) {
                Some(coordinator) => reads.push((coordinator, coordinator_partition, ids)),
                None => pending.refused = Some(ErrorCode::CoordinatorNotAvailable),
            }
        }
        if pending.refused.is_some() {
            self.finish_delete(pending, None);
            return;
        }
        pending.waiting = reads.len();
        self.mirror.deletes.insert(delete_id, pending);
        if reads.is_empty() {
            self.delete_forward(now_ms, delete_id);
            return;
        }
        for (coordinator, coordinator_partition, partitions) in reads {
            let request = Request::ReadMirrorStates {
                coordinator_partition,
                mirror: mirror.clone(),
                partitions,
            };
            let what = MirrorRequest::DeleteCheck(delete_id);
            self.send_mirror_request(now_ms, coordinator, request, what);
        }
    }

    /// Counts one coordinator answer of the current phase; the pending delete once every
    /// answer of the phase is in.
    fn delete_phase_answered(
        &mut self,
        delete_id: u64,
        refusal: Option<ErrorCode>,
    ) -> Option<PendingDelete> {
        let pending = self.mirror.deletes.get_mut(&delete_id)?;
        if pending.refused.is_none() {
            pending.refused = refusal;
        }
        pending.waiting -= 1;
        if pending.waiting > 0 {
            return None;
        }
        if pending.refused.is_some() {
            let pending = self.mirror.deletes.remove(&delete_id).expect("present");
            self.finish_delete(pending, None);
            return None;
        }
        Some(pending.clone())
    }

    fn delete_check_answered(
        &mut self,
        now_ms: i64,
        delete_id: u64,
        response: Result<Response, ErrorCode>,
    ) {
        let refusal = match response {
            Ok(Response::ReadMirrorStates {
                error: ErrorCode::None,
                partitions,
                ..
            }) => partitions.iter().find_map(|status| {
                if !status.error.is_none() {
                    Some(status.error)
                } else if status.state != MirrorState::Stopped {
                    Some(ErrorCode::InvalidClusterMirrorState)
                } else {
                    None
                }
            }),
            Ok(Response::ReadMirrorStates { error, .. }) => Some(error),
            Ok(_) => Some(ErrorCode::InvalidRequest),
            Err(error) => Some(error),
        };
        if self.delete_phase_answered(delete_id, refusal).is_some() {
            self.delete_forward(now_ms, delete_id);
        }
    }

    fn delete_send_tombstones(&mut self, now_ms: i64, delete_id: u64) {
        let partitions = partition_count(&self.image, MIRROR_STATE_TOPIC);
        let coordinators: Option<Vec<(i32, NodeId)>> = (0..partitions)
            .map(|partition| Some((partition, self.coordinator_of_partition(partition)?)))
            .collect();
        // The controller has deleted the mirror: tombstoning is clean-up after it (spec §3.7),
        // and the admin gets the controller's answer whatever becomes of it. A tombstone that
        // cannot be written now is not retried (not modelled: the KIP's periodic clean-up).
        let Some(coordinators) = coordinators.filter(|found| !found.is_empty()) else {
            let pending = self.mirror.deletes.remove(&delete_id).expect("present");
            let answer = pending.controller_answer;
            self.finish_delete(pending, answer);
            return;
        };
        let pending = self.mirror.deletes.get_mut(&delete_id).expect("present");
        pending.waiting = coordinators.len();
        let mirror = pending.mirror.clone();
        for (coordinator_partition, node) in coordinators {
            let request = Request::DeleteMirrorStates {
                coordinator_partition,
                mirror: mirror.clone(),
            };
            let what = MirrorRequest::DeleteTombstones(delete_id);
            self.send_mirror_request(now_ms, node, request, what);
        }
    }

    /// The last phase: once every tombstone write is answered, the admin gets the
    /// controller's acceptance (or the first tombstone error, as before the reorder).
    fn delete_tombstones_answered(
        &mut self,
        delete_id: u64,
        response: Result<Response, ErrorCode>,
    ) {
        let refusal = match response {
            Ok(Response::DeleteMirrorStates { error }) => (!error.is_none()).then_some(error),
            Ok(_) => Some(ErrorCode::InvalidRequest),
            Err(error) => Some(error),
        };
        if refusal.is_some() {
            self.events
                .push(super::BrokerEvent::MirrorTombstonesRefused { delete_id });
        }
        // The controller has deleted the mirror: a refused tombstone (a `__mirror_state`
        // partition short of its ISR) must not turn that into a retriable error, which the
        // admin would retry into ClusterMirrorNotFound (generated seed 9970000000001153).
        let Some(pending) = self.mirror.deletes.get_mut(&delete_id) else {
            return;
        };
        pending.waiting = pending.waiting.saturating_sub(1);
        if pending.waiting == 0 {
            let pending = self.mirror.deletes.remove(&delete_id).expect("present");
            let answer = pending.controller_answer;
            self.finish_delete(pending, answer);
        }
    }

    fn delete_forward(&mut self, now_ms: i64, delete_id: u64) {
        let mirror = self.mirror.deletes[&delete_id].mirror.clone();
        let controller = self.controller;
        let request = Request::DeleteMirror { name: mirror };
        let what = MirrorRequest::DeleteForward(delete_id);
        self.send_mirror_request(now_ms, controller, request, what);
    }

    /// The controller's answer: a refusal is relayed at once and nothing is tombstoned; an
    /// acceptance starts the tombstone phase.
    fn delete_forward_answered(
        &mut self,
        now_ms: i64,
        delete_id: u64,
        response: Result<Response, ErrorCode>,
    ) {
        let error = match response {
            Ok(Response::DeleteMirror { error }) => error,
            Ok(_) => ErrorCode::InvalidRequest,
            Err(error) => error,
        };
        if !error.is_none() {
            if let Some(pending) = self.mirror.deletes.remove(&delete_id) {
                self.finish_delete(pending, Some(error));
            }
            return;
        }
        let Some(pending) = self.mirror.deletes.get_mut(&delete_id) else {
            return;
        };
        pending.controller_answer = Some(error);
        self.delete_send_tombstones(now_ms, delete_id);
    }

    /// Answers the admin: the controller's answer if it got that far, else the refusal.
    fn finish_delete(&mut self, pending: PendingDelete, controller_answer: Option<ErrorCode>) {
        let error = controller_answer
            .or(pending.refused)
            .unwrap_or(ErrorCode::None);
        self.outbox.respond(
            pending.reply_to,
            pending.correlation_id,
            Response::DeleteMirror { error },
        );
    }
}

/// Whether a task's leader epoch moved only by its own bump, STOPPING's or EPOCH_FENCING's
/// (the leader stays).
fn own_bump(task: &MirrorTask, leader_epoch: i32) -> bool {
    leader_epoch > task.leader_epoch
        && (task.fencing_bump
            || matches!(task.step, Step::AwaitEpochBump { .. } | Step::Waiting)
                && task.state == MirrorState::Stopping)
}

/// Read-only views for the simulator's checkers (`single-mirror-fetcher`).
impl<S: BrokerStorage> super::Broker<S> {
    /// The partitions whose mirror fetcher runs (their task is fetching), with the task's
    /// committed mirror state and the leader epoch it leads the partition in.
    pub fn mirror_fetchers(&self) -> impl Iterator<Item = (&TopicPartition, MirrorState, i32)> {
        self.mirror
            .tasks
            .iter()
            .filter(|(_, task)| task.step == Step::Fetching)
            .map(|(topic_partition, task)| (topic_partition, task.state, task.leader_epoch))
    }
}

#[cfg(test)]
#[path = "mirroring_tests.rs"]
mod mirroring_tests;
