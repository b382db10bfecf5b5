//! Invariant checkers. They observe the world from outside (`observer.rs`): at every step
//! each [`Checker`] family sees every broker event the world drained once, then reads the
//! state machines through read-only views; at the end they compare the recorded history with
//! the final logs (Jepsen's Kafka anomalies).
//!
//! Safety invariants (exit code 1), by name:
//! - `epochs-monotonic`: a partition's leader epoch never decreases in the controller's
//!   metadata, and batch leader epochs never decrease along any replica's log.
//! - `single-leader-per-epoch`: no two brokers ever lead the same partition in the same epoch.
//! - `hw-monotonic`: within one leader epoch a replica's high watermark never decreases while
//!   its process lives, except through a reported truncation or, on a follower, a reported
//!   adoption of a new leader's lower high watermark (Kafka's behaviour after a leader change).
//! - `replica-convergence`: every ISR member's log equals the leader's below their common high
//!   watermark.
//! - `acked-writes-durable`: an acks=all record acknowledged at an offset is at that offset in
//!   the current leader's log once its high watermark passes it (clean-election topics only).
//! - `no-duplicates`: no self-describing record appears twice in a log.
//! - `producer-order`: one producer's records to a partition appear in the order it sent them.
//! - `inconsistent-offsets`, `nonmonotonic-poll`, `skipped-poll`: a consumer's view agrees with
//!   the final log, never goes backwards and never skips a data record (Jepsen). Besides
//!   mirroring's cuts by design, a read (or a jump over a record sent after it) is excused when
//!   a loss of committed data came after it at or below its offset: on a topic that is not
//!   durable, a leader that began its epoch below the highest high watermark its leaders
//!   reached (an unclean election, or the only replica's power loss: Kafka exposes records
//!   before they are fsync'd), and a mirror's diverging-epoch or PREPARING cut that followed
//!   such a loss, or a failback cut, of its source (`Checkers::losses`).
//! - `no-control-records-delivered`: no consumer ever received a record of a control batch.
//! - `transaction-atomicity`: in the final logs a transaction's records are all committed or
//!   none is; a transaction the coordinator confirmed committed has every record committed, an
//!   aborted one none.
//! - `group-offsets-monotonic`: a group's committed offset for a partition never decreases on
//!   its current coordinator, except by an admin commit (a reset, or mirroring's offset sync),
//!   by a member's first lower commit after a mirroring truncation of the partition (its
//!   consumer's position fell out of range and was reset), or by a member's first lower commit
//!   at or above where a member's consumer moved its position back (position validation
//!   against a leader that had not yet learned it was deposed).
//! - `read-committed`: a READ_COMMITTED consumer never received a record of a transaction that
//!   aborted or never completed (Jepsen's G1a "aborted read" and reads of open transactions),
//!   judged against the final log's markers.
//!
//! Liveness (exit code 2), checked at the end of the heal phase: `liveness` (every partition
//! has a leader, the ISR is complete, no transaction is left open (LSO = HW) or still
//! completing at its coordinator (PrepareCommit/PrepareAbort), every
//! acknowledged record is below the high watermark, every send of a live client was
//! acknowledged or failed, every admin timeline operation finished) and `unseen` (every acknowledged record reached every
//! consumer of its topic, unless it was dropped by mirroring by design or, on a topic that is not
//! durable, is gone from the final log as acks=1 allows).

//!
//! Where each family lives: `log.rs` (leaders, epochs, replica convergence, every step),
//! `durability.rs` (`acked-writes-durable`, whole-log scans), `jepsen.rs` (the history check
//! and its preconditions) with `history.rs` (log scans, `unseen`, poll checks) and `reads.rs`,
//! `transactions.rs` and `outcomes.rs` (atomicity, delivered records, `read-committed`),
//! `groups.rs` (group offsets and resumes), `liveness.rs`, `mirror.rs` (KIP-1279's),
//! `admin.rs` (`admin-outcomes`); what a loss or a mirroring cut excuses is `losses.rs`, and
//! the logs as they were before a deposal or a cut `deposed.rs`. This file holds the
//! [`Checkers`] state, the per-step driver and the event intake.

pub mod admin;
mod caught_up;
mod deposed;
mod durability;
mod groups;
mod history;
mod invariants;
mod jepsen;
mod liveness;
mod log;
mod losses;
pub mod mirror;
mod observer;
mod outcomes;
mod reads;
mod topics;
mod transactions;
mod view;

pub use invariants::{Invariant, Violation, INVARIANTS, PRECONDITION_PREFIX};
pub use observer::{Checker, Step};
pub(crate) use view::{broker_view, current_leader, leader_log_of};
pub use view::{BrokerView, ControllerView};

use history::{
    all_losses, check_polls, compare_range, deposed_commit_past_successor,
    first_data_offset_between, kept_below, lost_from, scan_new_records, unseen, LogScan, LossMap,
};
use liveness::transaction_state_partition;
use outcomes::{
    transaction_end_at, transaction_ends_of, transaction_outcomes, PartitionOutcomes, TxnEndsMemo,
    TxnOutcome,
};
pub use reads::LeaderLogs;
use reads::{
    cluster_of_value, control_batches_span, control_run_before, offset_of_value, record_value_at,
    record_value_is, ValueCursor, ViewLeaderLogs,
};
use transactions::{check_delivered_records, check_transaction_atomicity, commits_confirmed_at};

use std::collections::{BTreeMap, BTreeSet};

use mirrorsim::broker::{BrokerEvent, MemoryDirDisk, Role, TruncationReason};
use mirrorsim::log::PartitionLog;
use mirrorsim::mirror::state::TopicMirrorConfig;
use mirrorsim::protocol::{BrokerId, ClusterIndex, NodeId, TopicName, TopicPartition};

use crate::world::workload::{parse_value, History, PollRecord};

/// How much earlier than the checkers saw a partition enter PREPARING or MIRRORING its
/// leader's silence clock may start and still count as fresh: events reach the checkers up to
/// one heal-phase step (100 ms) late, and a skewed clock measures a silence a few percent long.
const CHECK_STEP_SLACK_MS: i64 = 500;

/// The acknowledged records of one partition of a durable topic, by offset (two records may
/// claim one offset when the system is broken), split by whether the current leader epoch has
/// verified them.
#[derive(Debug, Clone, Default)]
struct AckedRecords {
    /// The leader epoch `verified` was checked in.
    leader_epoch: i32,
    unverified: BTreeSet<(i64, String)>,
    verified: Vec<(i64, String)>,
}

/// What `hw-monotonic` and the log-epoch scan last saw of one replica (a process incarnation's
/// copy of a partition).
#[derive(Default)]
struct ReplicaSeen {
    /// (leader epoch, high watermark) at the last step; `None` after a reported truncation.
    high_watermark: Option<(i32, i64)>,
    /// The log end the epoch scan reached and the highest batch epoch below it.
    epochs_checked: Option<(i64, i32)>,
}

/// The checkers and the state they carry between steps.
#[derive(Default)]
pub struct Checkers {
    metadata_epochs: BTreeMap<(ClusterIndex, TopicPartition), i32>,
    /// KIP-966, per (cluster, partition) the controller last showed with eligible leader
    /// replicas or leaderless with an empty ISR: those replicas, and whether it was
    /// leaderless, to tell the next leader's election (`observe_eligible_leaders`).
    eligible_seen:
        BTreeMap<(ClusterIndex, mirrorsim::protocol::TopicId, i32), (Vec<BrokerId>, bool)>,
    epoch_leaders: BTreeMap<(ClusterIndex, TopicPartition, i32), BrokerId>,
    /// What the per-step replica checks last saw of each replica (one entry, so a step
    /// searches once per replica).
    replicas_seen: BTreeMap<(NodeId, u64, TopicPartition), ReplicaSeen>,
    /// Acknowledged records of durable topics, per partition.
    durable_acked: BTreeMap<(ClusterIndex, TopicPartition), AckedRecords>,
    /// How much of [`History::readable`] `durable_acked` holds.
    readable_seen: usize,
    /// Replica comparison progress: (cluster, partition, member, member incarnation, leader
    /// epoch) → offset below which the member was found equal to the leader.
    converged_to: BTreeMap<(ClusterIndex, TopicPartition, BrokerId, u64, i32), i64>,
    /// Duplicate and order scan of each leader's log: (cluster, partition, leader, leader
    /// incarnation, leader epoch) → scan state.
    scans: BTreeMap<(ClusterIndex, TopicPartition, BrokerId, u64, i32), LogScan>,
    /// Last committed offset seen per (cluster, group, partition) on the current coordinator.
    group_offsets: BTreeMap<(ClusterIndex, String, TopicPartition), GroupOffsetSeen>,
    /// Per (cluster, group, partition): the offsets a member's consumer moved its position
    /// back to that no lower commit has used yet, and how many of the history's
    /// `position_resets` were looked at (`group-offsets-monotonic`'s client-side excuse).
    member_resets: BTreeMap<(ClusterIndex, String, TopicPartition), Vec<i64>>,
    position_resets_seen: usize,
    /// Topics (cluster, name) whose acknowledged writes must be durable.
    pub durable_topics: BTreeSet<(ClusterIndex, TopicName)>,
    /// The clusters' topics at the start, for `admin-outcomes`.
    pub admin_world: crate::checks::admin::AdminWorld,
    /// What each broker's metadata image held of the admin timeline's mirrors, over time.
    mirror_images: crate::checks::admin::MirrorImages,
    /// Counts of events seen, for coverage marks.
    pub marks: BTreeMap<String, u64>,
    /// When each event-driven mark was first reached (simulated ms, the checkers' clock).
    pub marks_first_ms: BTreeMap<String, i64>,
    /// The KIP-1279 checks.
    mirror: crate::checks::mirror::MirrorChecks,
    /// Mirroring truncations per (cluster, partition): (time, offset truncated to, why). Records
    /// sent before one of them at or above its offset were dropped by design (a failback
    /// drops the old primary's unmirrored writes), not lost.
    mirror_truncations: BTreeMap<(ClusterIndex, TopicPartition), Vec<MirrorTruncation>>,
    /// Per (cluster, partition): the highest high watermark its leader in the controller's
    /// current epoch reached since its committed data was last cut (a mirroring truncation, a
    /// loss in [`Checkers::losses`]).
    committed_high: BTreeMap<(ClusterIndex, TopicPartition), i64>,
    /// Losses of committed data per (cluster, partition): (checker time, offset the log kept).
    /// A leader of a topic that is not durable began its epoch below `committed_high` (an
    /// unclean election, or the only replica lost unflushed writes in a power loss: Kafka
    /// acknowledges and exposes records before they are fsync'd, and replication is its only
    /// durability), or a mirror destination's diverging-epoch truncation followed such a loss
    /// of its source (see [`Checkers::note_loss`]).
    losses: LossMap,
    /// The leader epochs of `losses`' leader starts, per (cluster, partition): (leader epoch,
    /// where its log parts from the committed one, below the committed high watermark: the
    /// offset it began at, or lower for a leader lacking whole epochs; see
    /// [`Checkers::observe_leader_start`]).
    lossy_epoch_starts: BTreeMap<(ClusterIndex, TopicPartition), Vec<(i32, i64)>>,
    /// Every leader epoch start seen, per (cluster, partition): (leader epoch, where its
    /// lineage parts from the logs before it: its start offset, or lower for a leader lacking
    /// whole epochs, see [`Checkers::observe_leader_start`]), for
    /// [`Checkers::note_deposed_commits`].
    epoch_starts: BTreeMap<(ClusterIndex, TopicPartition), Vec<(i32, i64)>>,
    /// Per (cluster, partition, deposed leader epoch): the highest high watermark a deposed
    /// leader reached above a later epoch's start, already noted as a loss.
    deposed_commits: BTreeMap<(ClusterIndex, TopicPartition, i32), i64>,
    /// Per (cluster, partition) of `lossy_epoch_starts`: the logs of brokers that still led it
    /// in a lower epoch after such a start, from the start on (see
    /// [`Checkers::note_deposed_leader_logs`]).
    deposed_logs: BTreeMap<(ClusterIndex, TopicPartition), Vec<DeposedLog>>,
    /// The leader epochs of mirroring cuts that may drop this cluster's own writes (a
    /// failback's PREPARING cut or first diverging epoch, STOPPING's cut to the last stable
    /// offset), per (cluster, partition): (the cutting leader's epoch, the offset cut to). A
    /// deposed leader of a lower epoch that has not heard of the election still serves what
    /// the cut dropped (see [`Checkers::read_from_deposed_leader_before_mirror_cut`]).
    mirror_cut_epoch_starts: BTreeMap<(ClusterIndex, TopicPartition), Vec<(i32, i64)>>,
    /// Per (cluster, partition) of `mirror_cut_epoch_starts`: the logs of brokers that still
    /// led it in a lower epoch after such a cut, from the cut on.
    mirror_cut_deposed_logs: BTreeMap<(ClusterIndex, TopicPartition), Vec<DeposedLog>>,
    /// Preconditions noted, by invariant (see [`Checkers::precondition`]).
    preconditions: BTreeMap<Invariant, u64>,
    /// The broker that led each partition last, to notice leadership moving.
    last_leaders: BTreeMap<(ClusterIndex, TopicPartition), BrokerId>,
    /// Partitions whose leader changed during the run.
    leader_changed: BTreeSet<(ClusterIndex, TopicPartition)>,
    /// Groups the mirror sync committed offsets for, by destination cluster.
    synced_groups: BTreeSet<(ClusterIndex, String)>,
    /// Mirror partitions FAILED, non-retryably, because their source lost records it had
    /// served (spec §4.7): reported, so `liveness` accepts them FAILED until they prepare
    /// again (a recovery).
    failed_on_source_loss: BTreeSet<(ClusterIndex, TopicPartition)>,
    /// Mirror partitions whose last failure was a silent source, the silence begun before the
    /// heal phase (the faults' doing); `true` once the partition ran out of attempts and waits
    /// for an operator, which `liveness` then accepts (the KIP's manual intervention). A
    /// retry's PREPARING or MIRRORING forgets it.
    failed_on_fault_silence: BTreeMap<(ClusterIndex, TopicPartition), bool>,
    /// When each mirror partition last entered PREPARING or MIRRORING (the checkers' clock):
    /// a silence its leader says began earlier was measured on a stale clock, and excuses
    /// nothing (generated seed 13600000000000283's bug).
    waiting_for_source_since: BTreeMap<(ClusterIndex, TopicPartition), i64>,
    /// When the heal phase began (the checkers' clock), once it has.
    heal_started_ms: Option<i64>,
    /// `stop-keeps-caught-up`: every stop of a mirror partition seen, in time order.
    stops_seen: BTreeMap<(ClusterIndex, TopicPartition), Vec<caught_up::StopSeen>>,
    /// `stop-keeps-caught-up`: when each mirror partition went FAILED.
    failures_seen: BTreeMap<(ClusterIndex, TopicPartition), Vec<i64>>,
    /// Per (cluster, group, partition): each new offset a member committed, as a current
    /// coordinator showed it (admin commits, the sync's among them, are not a position), with
    /// the control batches the log held right below it then (see [`MemberCommit`]).
    member_commits: BTreeMap<(ClusterIndex, String, TopicPartition), Vec<MemberCommit>>,
    /// `skipped-poll` at read time: per (consumer, incarnation), how many of its polls were
    /// looked at and the offset it last read of each partition.
    polls_seen: BTreeMap<(NodeId, u64), (usize, BTreeMap<TopicPartition, i64>)>,
    /// Jumps (consumer, incarnation, index of the poll in its history) over offsets where the
    /// leader's log held no record for the consumer in the step of the read (see
    /// `note_poll_gaps`).
    empty_gaps: BTreeSet<(NodeId, u64, usize)>,
    /// Per (consumer, incarnation, partition): what the leader's log held past the consumer's
    /// last read before a mirroring truncation rewrote it (see `note_poll_gaps`).
    passed: BTreeMap<(NodeId, u64, TopicPartition), PassedRange>,
    /// Jumps (as in `empty_gaps`) over offsets that held only control batches past the
    /// consumer's previous read, until a mirroring truncation rewrote them before the read.
    passed_then_cut: BTreeSet<(NodeId, u64, usize)>,
    /// Per (cluster, partition) a consumer read: the current leader's log as the checkers saw
    /// it at their last step (see `note_log_versions`).
    log_versions: BTreeMap<(ClusterIndex, TopicPartition), LogVersion>,
    /// The logs of `log_versions` that the leader's log stopped extending (a truncation, or
    /// a leader whose log diverged), each with the checker time the change was seen: a fetch
    /// sent before then may have been answered from it.
    replaced_versions: BTreeMap<(ClusterIndex, TopicPartition), Vec<(i64, LogVersion)>>,
    /// The highest high watermark a current leader of each (cluster, partition) of a topic
    /// that is not durable has shown since its last lost tail or mirroring truncation.
    committed_end: BTreeMap<(ClusterIndex, TopicPartition), i64>,
    /// Committed tails lost outside mirroring, per (cluster, partition) of a topic that is not
    /// durable: (checker time, the current leader's log end offset then), whenever a current
    /// leader's log ended below `committed_end` (an unclean election, or a power loss of the
    /// only replicas holding the unflushed tail: Kafka's rules allow both there).
    lost_tails: LossMap,
    /// PREPARING's last-mirrored-epoch cuts per (cluster, partition), each with the offsets the
    /// mirror fetched back into the log since (see [`Checkers::mirrored_read_cut_not_refetched`]).
    refetch_cuts: BTreeMap<(ClusterIndex, TopicPartition), Vec<RefetchCut>>,
    /// Each topic name's lives (a topic deleted and created again is another topic): what
    /// the checkers remember of a partition is forgotten when its topic's life ends.
    topic_lives: topics::TopicLives,
}

/// A last-mirrored-epoch cut of a mirror partition (checker time, offset truncated to) and the
/// ranges of offsets its leaders appended from the source after it (`MirrorAppend`, inclusive).
#[derive(Debug, Clone, Default)]
struct RefetchCut {
    time_ms: i64,
    to: i64,
    refetched: Vec<(i64, i64)>,
}

/// Offsets `[from, to)` past a consumer's last read (`from` is that offset + 1) that the
/// current leader's log held below its high watermark as control batches only, seen step by
/// step; `cut` once a mirroring truncation went below `to`, after which the range is no longer
/// extended (the log there is another one).
#[derive(Debug, Clone, Copy)]
struct PassedRange {
    from: i64,
    to: i64,
    cut: bool,
    /// The cut was a mirroring truncation (not a loss): it keeps the leader epoch, so the
    /// consumer has no leader change to validate its position at (KIP-320), and the control
    /// batches the rewritten log holds past the range count as passed too.
    mirror_cut: bool,
}

/// One version of a leader's log, batch by batch, as the checkers saw it step by step (what
/// a consumer may have been answered from), and its high watermark then. The batches share
/// their bytes with the log's (a copy costs a reference count), and outlive a truncation.
#[derive(Debug, Clone, Default)]
struct LogVersion {
    high_watermark: i64,
    batches: Vec<mirrorsim::record::RecordBatch>,
}

impl LogVersion {
    /// Whether this version held `value` at `offset` below its high watermark (a consumer
    /// could have read it there).
    fn holds(&self, offset: i64, value: &str) -> bool {
        self.holds_below(offset, value, self.high_watermark)
    }

    /// [`LogVersion::holds`] below `high_watermark` instead of its own.
    fn holds_below(&self, offset: i64, value: &str, high_watermark: i64) -> bool {
        let at = self
            .batches
            .partition_point(|batch| batch.last_offset() < offset);
        offset < high_watermark
            && self
                .batches
                .get(at)
                .is_some_and(|batch| record_value_is(batch, offset, value))
    }

    /// Whether this version held no record a consumer must receive in `[from, to)`: control
    /// batches only, or for READ_COMMITTED also data of transactions this version aborted
    /// (an ABORT marker of its producer follows it before a COMMIT or a reset).
    fn holds_nothing_between(&self, from: i64, to: i64, read_committed: bool) -> bool {
        self.first_data_between(from, to, read_committed).is_none()
    }

    /// The lowest offset in `[from, to)` where this version held a record a consumer must
    /// receive (see [`LogVersion::holds_nothing_between`]).
    fn first_data_between(&self, from: i64, to: i64, read_committed: bool) -> Option<i64> {
        let ends = read_committed.then(|| transaction_ends_of(&self.batches));
        let aborted = |batch: &mirrorsim::record::RecordBatch| {
            ends.as_ref()
                .and_then(|ends| ends.get(&batch.base_offset()))
                .is_some_and(|end| end.outcome == TxnOutcome::Aborted)
        };
        self.batches
            .iter()
            .filter(|batch| {
                !batch.is_control()
                    && batch.last_offset() >= from
                    && batch.base_offset() < to
                    && !aborted(batch)
            })
            .find_map(|batch| {
                batch
                    .records()
                    .filter_map(Result::ok)
                    .map(|record| record.offset)
                    .find(|offset| from <= *offset && *offset < to)
            })
    }
}

/// The log of a deposed leader: a broker that still led a partition in an epoch below one
/// that began below the committed high watermark (an unclean election, or the only replica's
/// power loss), because it had not yet learned of the election. Kafka's leader holds no lease:
/// until metadata reaches it, it appends, advances its high watermark over an ISR it alone
/// makes up and answers fetches of clients whose metadata is as stale as its own.
#[derive(Debug, Clone)]
struct DeposedLog {
    broker: BrokerId,
    incarnation: u64,
    /// The epoch it still led in.
    leader_epoch: i32,
    /// The first and last checker steps it was seen leading in that epoch with this log.
    first_seen_ms: i64,
    last_seen_ms: i64,
    /// Its log from the lowest such start above its epoch on, and its high watermark.
    version: LogVersion,
}

/// A mirroring truncation: (checker time, offset truncated to, why).
type MirrorTruncation = (i64, i64, TruncationReason);

/// A member's commit of a partition's offset as the checkers first saw it: a group member
/// commits its position, so the group's position had passed every offset below `offset` on
/// that cluster by `seen_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MemberCommit {
    /// Checker time of the step that first showed it.
    seen_ms: i64,
    /// The committed offset.
    offset: i64,
    /// The lowest offset from which the current leader's log then held only control batches,
    /// batch after batch, up to `offset` ([`control_run_before`]; `offset` itself when the
    /// batch below it was data or the log did not reach it): what the position passed there
    /// without a record to show for it.
    control_from: i64,
}

/// What `group-offsets-monotonic` remembers of one (cluster, group, partition).
#[derive(Debug, Clone, Copy)]
struct GroupOffsetSeen {
    /// The committed offset last seen.
    offset: i64,
    /// How many of the partition's mirroring truncations (`mirror_truncations`, in the order
    /// noted) cannot excuse a member's lower commit: those noted before the key was first
    /// seen, and one more for each lower commit so excused (each cut excuses one reset);
    /// less the cuts noted before that took the log below the first offset seen.
    cuts_used: usize,
    /// How many cuts were noted when the key was first seen: an excuse with `cuts_used` below
    /// it is one of those (marked apart).
    cuts_at_first_seen: usize,
}

impl Checkers {
    /// Judges mirrored batches against `design`'s stored form (see `MirrorChecks::design`).
    pub fn set_mirror_design(&mut self, design: mirrorsim::mirror::MirrorDesign) {
        self.mirror.design = design;
    }

    /// Records a coverage mark.
    pub fn mark(&mut self, name: &str) {
        *self.marks.entry(name.to_string()).or_default() += 1;
    }

    /// Records a coverage mark `times` times (nothing when `times` is 0); `times` is any
    /// unsigned count.
    fn mark_times(&mut self, name: &str, times: impl TryInto<u64>) {
        let times = times.try_into().unwrap_or(u64::MAX);
        if times > 0 {
            *self.marks.entry(name.to_string()).or_default() += times;
        }
    }

    /// Notes that `invariant`'s case arose (see [`Invariant`]); counted without allocating,
    /// and turned into `precondition:NAME` marks by [`Checkers::take_preconditions`].
    pub fn precondition(&mut self, invariant: Invariant) {
        *self.preconditions.entry(invariant).or_default() += 1;
    }

    /// The heal phase begins now: a source silence that begins from here on is not the
    /// faults' doing.
    pub fn heal_started(&mut self, time_ms: i64) {
        self.heal_started_ms = Some(time_ms);
    }

    /// Moves the preconditions noted so far (the KIP-1279 checkers' too) into the marks.
    pub fn take_preconditions(&mut self) {
        let noted = std::mem::take(&mut self.preconditions);
        let mirror = std::mem::take(&mut self.mirror.preconditions);
        for (invariant, count) in noted.into_iter().chain(mirror) {
            *self
                .marks
                .entry(format!("{PRECONDITION_PREFIX}{invariant}"))
                .or_default() += count;
        }
        for (mark, count) in std::mem::take(&mut self.mirror.marks) {
            *self.marks.entry(mark.to_owned()).or_default() += count;
        }
    }
}

impl Checkers {
    /// One checker step: every event the world drained is observed once, then the state is
    /// judged; returns the safety violations found.
    pub fn run_step(&mut self, step: &Step<'_, '_>) -> Vec<Violation> {
        for (view, event) in step.events() {
            self.observe(step, view, event);
        }
        self.check_step(step)
    }
}

/// The log, durability, history, group and admin families, which share what they learn of
/// losses and cuts; they host the KIP-1279 family ([`mirror::MirrorChecks`]) and feed it each
/// event and step first.
impl Checker for Checkers {
    fn observe(&mut self, step: &Step<'_, '_>, view: &BrokerView<'_>, event: &BrokerEvent) {
        self.mirror.observe(step, view, event);
        self.observe_event(step.time_ms, view, event);
    }

    fn check_step(&mut self, step: &Step<'_, '_>) -> Vec<Violation> {
        let (time_ms, controllers, brokers, history) =
            (step.time_ms, step.controllers, step.brokers, step.history);
        let mut violations = Vec::new();
        self.follow_topic_lives(time_ms, controllers);
        self.check_metadata_epochs(time_ms, controllers, &mut violations);
        self.observe_mirror_images(time_ms, brokers);
        let logs = ViewLeaderLogs {
            controllers,
            brokers,
        };
        self.note_poll_gaps(&logs, history);
        self.note_log_versions(time_ms, &logs);
        self.note_deposed_commits(time_ms, brokers);
        self.note_deposed_leader_logs(time_ms, brokers);
        if self.marks.len() != self.marks_first_ms.len() {
            for mark in self.marks.keys() {
                self.marks_first_ms.entry(mark.clone()).or_insert(time_ms);
            }
        }
        violations.extend(self.mirror.check_step(step));
        self.check_leaders(time_ms, brokers, &mut violations);
        self.check_replica_logs(time_ms, brokers, &mut violations);
        self.check_logs_incremental(time_ms, controllers, brokers, &mut violations);
        self.note_member_resets(history);
        self.check_group_offsets(time_ms, controllers, brokers, &mut violations);
        self.check_acked_durable(
            time_ms,
            controllers,
            brokers,
            history,
            false,
            &mut violations,
        );
        violations
    }
}

impl Checkers {
    /// Notes, for `admin-outcomes`, whether each broker's metadata image holds each mirror of
    /// its cluster that the admin timeline names.
    fn observe_mirror_images(&mut self, time_ms: i64, brokers: &[BrokerView<'_>]) {
        if self.admin_world.mirrors.is_empty() {
            return;
        }
        for view in brokers {
            // A broker that has not yet seen its own registration answers nothing, and its
            // image is no excuse for an answer: a restarted broker answering from the image it
            // is still catching up on is the model bug `describe_at_restarted_broker_before_
            // catch_up` pinned (shown by `serve-before-registration`). Its first look comes
            // once it serves, in a new incarnation, so the version check below sees a change.
            if !view.broker.serving_requests() {
                continue;
            }
            let node = NodeId::Broker(view.cluster, view.broker.broker_id());
            let image = view.broker.image();
            if !self
                .mirror_images
                .image_changed(node, view.incarnation, image.next_offset)
            {
                continue;
            }
            let configs = &image.configs;
            let mirrors = self
                .admin_world
                .mirrors
                .range((view.cluster, String::new())..)
                .take_while(|(cluster, _)| *cluster == view.cluster);
            for (_, mirror) in mirrors {
                let resource = mirrorsim::metadata::ConfigResource::Mirror(mirror.clone());
                let held = configs.contains_key(&resource);
                self.mirror_images.observe(time_ms, node, mirror, held);
            }
            for topic in self.admin_world.topics_of(view.cluster) {
                let desired = image.mirror_desired_state(topic);
                let mirror = desired.as_ref().map_or("", |desired| desired.mirror());
                self.mirror_images
                    .observe_topic(time_ms, node, topic, mirror);
            }
        }
    }

    /// Learns from one event of `view`'s broker: coverage marks, and what the log, loss and
    /// group families remember of truncations, leader starts and mirrored appends.
    fn observe_event(&mut self, time_ms: i64, view: &BrokerView<'_>, event: &BrokerEvent) {
        let node = NodeId::Broker(view.cluster, view.broker.broker_id());
        {
            match event {
                BrokerEvent::Truncated {
                    topic_partition,
                    from_log_end_offset,
                    to_log_end_offset,
                    reason,
                    ..
                } => {
                    let (from_log_end_offset, to_log_end_offset, reason) =
                        (*from_log_end_offset, *to_log_end_offset, *reason);
                    if from_log_end_offset > to_log_end_offset {
                        match reason {
                            TruncationReason::HighWatermarkOnBecomingFollower => {
                                self.mark("follower-truncated-to-high-watermark");
                            }
                            TruncationReason::DivergingEpochBelowLeaderEnd => {
                                self.mark("follower-truncated-below-leader-epoch-end");
                            }
                            TruncationReason::MirrorLastMirroredEpoch => {
                                self.mark("lme-truncation-removed-data");
                            }
                            TruncationReason::MirrorStopAtLastStableOffset => {
                                self.mark("stopping-truncation-removed-data");
                            }
                            _ => {}
                        }
                    }
                    if reason.is_mirroring() {
                        self.note_mirror_truncation(
                            time_ms,
                            view.cluster,
                            topic_partition,
                            to_log_end_offset.0,
                            reason,
                        );
                        self.note_mirror_cut_epoch(view, topic_partition, to_log_end_offset.0);
                        let key = (view.cluster, topic_partition.clone());
                        if let Some(high) = self.committed_high.get_mut(&key) {
                            *high = (*high).min(to_log_end_offset.0);
                        }
                        // The source lost committed data this mirror had fetched, or cut it
                        // by design: the mirror's diverging epoch (or its PREPARING cut, when
                        // it mirrors again) drops it here too, mirrored records included, from
                        // where the source's log changed on.
                        let follows_source = matches!(
                            reason,
                            TruncationReason::MirrorDivergingEpoch
                                | TruncationReason::MirrorLastMirroredEpoch
                        );
                        let source_cut =
                            crate::checks::mirror::source_cluster(view, &topic_partition.topic)
                                .filter(|_| {
                                    follows_source && to_log_end_offset < from_log_end_offset
                                })
                                .and_then(|source| {
                                    self.cut_before(
                                        source,
                                        topic_partition,
                                        from_log_end_offset.0,
                                        time_ms,
                                    )
                                });
                        if let Some(source_kept) = source_cut {
                            self.note_loss(
                                time_ms,
                                view.cluster,
                                topic_partition,
                                to_log_end_offset.0.max(source_kept),
                                None,
                            );
                        }
                    }
                    // A reported truncation may lower the high watermark and rewrite the tail.
                    self.replicas_seen
                        .remove(&(node, view.incarnation, topic_partition.clone()));
                    let broker_id = view.broker.broker_id();
                    self.converged_to.retain(|(cluster, tp, member, _, _), _| {
                        !(*cluster == view.cluster && tp == topic_partition && *member == broker_id)
                    });
                    // A leader may truncate inside its epoch (KIP-1279's PREPARING cut): its
                    // duplicate and order scan starts over, or the offsets it refills would
                    // never be scanned.
                    let incarnation = view.incarnation;
                    self.scans
                        .retain(|(cluster, tp, leader, leader_incarnation, _), _| {
                            !(*cluster == view.cluster
                                && tp == topic_partition
                                && *leader == broker_id
                                && *leader_incarnation == incarnation)
                        });
                    self.mark("follower-truncated");
                }
                BrokerEvent::FollowerHighWatermarkLowered {
                    topic_partition,
                    to,
                    ..
                } => {
                    // Documented: the follower adopted a new leader's lagging high watermark.
                    if let Some((_, high_watermark)) = self
                        .replicas_seen
                        .get_mut(&(node, view.incarnation, topic_partition.clone()))
                        .and_then(|seen| seen.high_watermark.as_mut())
                    {
                        *high_watermark = (*high_watermark).min(to.0);
                    }
                    self.mark("follower-high-watermark-lowered");
                }
                BrokerEvent::BecameLeader {
                    topic_partition,
                    leader_epoch,
                    start_offset,
                    high_watermark,
                } => {
                    let (leader_epoch, start_offset) = (*leader_epoch, *start_offset);
                    self.mark("leader-elected");
                    if start_offset > *high_watermark {
                        // KIP-101's precondition: the new leader holds records above its own
                        // high watermark (it learned it a fetch round trip late), which a
                        // pre-KIP-101 follower cut when it began to follow.
                        self.mark("leader-elected-above-its-high-watermark");
                    }
                    self.forget_refetches_past(view.cluster, topic_partition, start_offset.0);
                    let prior_epoch = view
                        .partition(topic_partition)
                        .and_then(|partition| partition.log.batches_from(start_offset - 1).next())
                        .filter(|batch| batch.base_offset() < start_offset.0)
                        .map(|batch| batch.partition_leader_epoch());
                    self.observe_leader_start(
                        time_ms,
                        view.cluster,
                        topic_partition,
                        (leader_epoch.0, start_offset.0),
                        prior_epoch,
                    );
                }
                BrokerEvent::CoordinatorLoaded { .. } => self.mark("coordinator-loaded"),
                BrokerEvent::IsrChanged { .. } => self.mark("isr-changed"),
                BrokerEvent::PartitionRemoved { topic_partition } => {
                    self.topic_lives
                        .note_removed(view.cluster, &topic_partition.topic, time_ms);
                    self.mark("partition-removed");
                }
                BrokerEvent::MirrorAppend {
                    topic_partition,
                    first_offset,
                    last_offset,
                } => {
                    self.note_mirror_append(
                        view.cluster,
                        topic_partition,
                        (first_offset.0, last_offset.0),
                    );
                    self.mark("mirror-append");
                }
                BrokerEvent::RecordsDeleted { .. } => self.mark("records-deleted"),
                BrokerEvent::TopicAdminForwarded { .. } => self.mark("topic-admin-forwarded"),
                BrokerEvent::AddTopicsForwarded {
                    checked_stopped, ..
                } => {
                    if !checked_stopped.is_empty() {
                        self.mark("removed-topic-add-forwarded");
                        self.precondition(Invariant::ReadOnlyUntilStopped);
                    }
                }
                BrokerEvent::MirrorTransition {
                    from,
                    to,
                    topic_partition,
                } => {
                    if *to == mirrorsim::mirror::MirrorState::Preparing {
                        self.failed_on_source_loss
                            .remove(&(view.cluster, topic_partition.clone()));
                    }
                    if matches!(
                        to,
                        mirrorsim::mirror::MirrorState::Preparing
                            | mirrorsim::mirror::MirrorState::Mirroring
                    ) {
                        self.failed_on_fault_silence
                            .remove(&(view.cluster, topic_partition.clone()));
                        self.waiting_for_source_since
                            .insert((view.cluster, topic_partition.clone()), time_ms);
                    }
                    self.mark(&format!("mirror-transition:{from}->{to}"));
                    self.note_stop_or_failure(time_ms, view, topic_partition, (*from, *to));
                    if *to == mirrorsim::mirror::MirrorState::Stopped {
                        self.mark("mirror-stopped");
                    }
                }
                BrokerEvent::MirrorOffsetSynced {
                    group_id,
                    offset,
                    source_offset,
                    ..
                } => {
                    self.synced_groups.insert((view.cluster, group_id.clone()));
                    self.mark("mirror-offset-synced");
                    if offset != source_offset {
                        self.mark("mirror-offset-clamped");
                        self.precondition(Invariant::OffsetSyncClamped);
                    }
                }
                BrokerEvent::MirrorOffsetSyncDeferred { .. } => {
                    self.mark("mirror-offset-sync-awaits-epoch");
                }
                BrokerEvent::DuplicateBatch { .. } => {
                    self.mark("duplicate-batch-answered");
                    self.precondition(Invariant::NoDuplicates);
                }
                BrokerEvent::MirrorWriteRefused { .. } => {
                    self.mark("mirror-write-refused");
                    self.precondition(Invariant::ReadOnlyUntilStopped);
                }
                BrokerEvent::MirrorStateWriteRefused { error, .. } => {
                    if matches!(
                        error,
                        mirrorsim::protocol::ErrorCode::FencedLeaderEpoch
                            | mirrorsim::protocol::ErrorCode::FencedStateEpoch
                    ) {
                        self.mark("mirror-state-write-fenced");
                        self.precondition(Invariant::CoordinatorFencing);
                    }
                    if *error == mirrorsim::protocol::ErrorCode::RequestTimedOut {
                        self.mark("mirror-state-write-unanswered");
                    }
                }
                BrokerEvent::MirrorAwaitsOperator {
                    retry_attempt,
                    topic_partition,
                } => {
                    if *retry_attempt >= 0 {
                        let key = (view.cluster, topic_partition.clone());
                        if let Some(awaits) = self.failed_on_fault_silence.get_mut(&key) {
                            *awaits = true;
                        }
                    }
                    self.mark(if *retry_attempt < 0 {
                        "mirror-failed-non-retryable"
                    } else {
                        "mirror-retries-exhausted"
                    });
                }
                BrokerEvent::MirrorSourceSilent {
                    topic_partition,
                    silent_for_ms,
                    ..
                } => {
                    self.mark("mirror-source-silent");
                    let key = (view.cluster, topic_partition.clone());
                    let began_ms = time_ms - silent_for_ms;
                    // A check step's slack: events reach the checkers up to one step late.
                    let entered_ms = self.waiting_for_source_since.get(&key).copied();
                    let clock_fresh =
                        entered_ms.is_none_or(|entered| began_ms + CHECK_STEP_SLACK_MS >= entered);
                    if clock_fresh && self.heal_started_ms.is_none_or(|heal| began_ms < heal) {
                        self.failed_on_fault_silence.insert(key, false);
                    } else {
                        self.failed_on_fault_silence.remove(&key);
                    }
                }
                BrokerEvent::MirrorTailProbed { .. } => self.mark("mirror-tail-probed"),
                BrokerEvent::TxnVerified { error, .. } => self.mark(match error {
                    mirrorsim::protocol::ErrorCode::None => "txn-verified",
                    mirrorsim::protocol::ErrorCode::InvalidTxnState
                    | mirrorsim::protocol::ErrorCode::ProducerFenced
                    | mirrorsim::protocol::ErrorCode::InvalidProducerIdMapping => {
                        "txn-verification-refused"
                    }
                    _ => "txn-verification-retried",
                }),
                BrokerEvent::MirrorFailureRecordCleared { .. } => {
                    self.mark("mirror-failure-record-cleared")
                }
                BrokerEvent::AuthorizationDenied { operation, .. } => {
                    self.mark(if *operation == "Read" {
                        "source-denied-mirror-read"
                    } else {
                        "source-denied-mirror-describe"
                    })
                }
                BrokerEvent::MirrorPartitionRecovered { .. } => self.mark("mirror-recovered"),
                BrokerEvent::MirrorTopicGrowing { .. } => self.mark("mirror-topic-grown"),
                BrokerEvent::MirrorTopicExcluded { .. } => self.mark("mirror-topic-excluded"),
                BrokerEvent::MirrorEpochBumpFailed { .. } => self.mark("mirror-epoch-bump-failed"),
                BrokerEvent::ClientEpochValidated { .. } => {
                    self.mark("consumer-validated-while-mirroring")
                }
                BrokerEvent::MirrorSourceTopicGone { recreated, .. } => self.mark(if *recreated {
                    "mirror-source-topic-recreated"
                } else {
                    "mirror-source-topic-deleted"
                }),
                BrokerEvent::MirrorStateOfNewerLeader { .. } => {
                    self.mark("mirror-state-of-newer-leader")
                }
                BrokerEvent::TxnMarkerRefused { mirror_state, .. } => {
                    self.mark("mirror-txn-marker-refused");
                    if *mirror_state == mirrorsim::common::MirrorState::Unknown {
                        // A leader that has not read the partition's state yet (restarted).
                        self.mark("mirror-txn-marker-refused-state-unknown");
                    }
                    if *mirror_state == mirrorsim::common::MirrorState::Stopping {
                        // Writable within moments: no marker is moot there.
                        self.mark("mirror-txn-marker-refused-in-stopping");
                    }
                }
                BrokerEvent::TxnMarkerMoot { .. } => self.mark("mirror-txn-marker-moot"),
                BrokerEvent::TxnMarkerAdmittedBeforeCut { .. } => {
                    self.mark("mirror-txn-marker-before-cut")
                }
                BrokerEvent::TxnEnlistRefused { .. } => self.mark("mirror-txn-enlist-refused"),
                BrokerEvent::CoordinatorMark { mark } => self.mark(mark),
                BrokerEvent::RequestHeldBeforeListening { .. } => {
                    self.mark("request-held-before-listening")
                }
                BrokerEvent::MirrorEpochBelowLocal { .. } => self.mark("mirror-epoch-below-local"),
                BrokerEvent::MirrorEpochFenced { .. } => self.mark("mirror-epoch-fenced"),
                BrokerEvent::MirrorCutEpochBump { .. } => self.mark("mirror-cut-epoch-bump"),
                BrokerEvent::MirrorTailChecked { .. } => self.mark("mirror-tail-checked"),
                BrokerEvent::MirrorTailDiverged { .. } => self.mark("mirror-tail-diverged"),
                BrokerEvent::MirrorTailSearchedBack { .. } => {
                    self.mark("mirror-tail-searched-back")
                }
                BrokerEvent::MirrorSourceLostRecords {
                    followed,
                    topic_partition,
                    ..
                } => {
                    if *followed {
                        self.mark("mirror-source-unclean-followed");
                    } else {
                        self.mark("mirror-source-unclean-failed");
                        self.failed_on_source_loss
                            .insert((view.cluster, topic_partition.clone()));
                    }
                }
                BrokerEvent::MirrorTakeoverCutChecked { own_history, .. } => {
                    self.mark(if *own_history {
                        "mirror-takeover-cut-own-history"
                    } else {
                        "mirror-takeover-cut-loss"
                    })
                }
                BrokerEvent::MirrorSourceConnectionReset { .. } => {
                    self.mark("mirror-connection-reset")
                }
                BrokerEvent::MirrorSourceClusterChanged { .. } => {
                    self.mark("mirror-source-cluster-changed")
                }
                BrokerEvent::StopOfOwnWrites {
                    after_cut_decided, ..
                } => {
                    self.mark("mirror-stop-of-own-writes");
                    if *after_cut_decided {
                        self.mark("mirror-stop-of-own-writes-after-cut-decided");
                    }
                }
                BrokerEvent::StopMarkerRestored { .. } => self.mark("stop-marker-restored"),
                BrokerEvent::MirrorTombstonesRefused { .. } => {
                    self.mark("mirror-tombstones-refused")
                }
                BrokerEvent::AlterPartitionRetried { .. } => self.mark("alter-partition-retried"),
                BrokerEvent::MirrorCutFencedFollower { .. } => {
                    self.mark("mirror-cut-fenced-follower")
                }
                BrokerEvent::PreparingAwaitsReplicaOutsideIsr {
                    cut_removed_records,
                    ..
                } => {
                    self.mark("preparing-awaits-replica-outside-isr");
                    if !cut_removed_records {
                        self.mark("preparing-awaits-replica-outside-isr-after-earlier-cut");
                    }
                }
                // KAFKA-7128's case: a follower at a new leader's stale high watermark, below
                // the committed records the leader's epoch start covers.
                BrokerEvent::IsrJoinBelowEpochStart { joined, .. } => self.mark(if *joined {
                    "isr-joined-below-epoch-start"
                } else {
                    "isr-join-held-below-epoch-start"
                }),
                BrokerEvent::FetchedEpochAboveLatest { follower, .. } => {
                    self.mark(if follower.is_some() {
                        "follower-epoch-above-leader-latest"
                    } else {
                        "mirror-fetch-epoch-above-source-latest"
                    })
                }
                BrokerEvent::BecameFollower {
                    log_end_offset,
                    high_watermark,
                    ..
                } => {
                    if log_end_offset > high_watermark {
                        // What a pre-KIP-101 follower cuts: records it holds above its high
                        // watermark when it begins to follow.
                        self.mark("follower-above-its-high-watermark");
                    }
                }
                BrokerEvent::LeaderAppend { .. } => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::deposed::read_from_deposed_tail;
    use super::history::{jumped_over_loss, OutcomeLost};
    use super::liveness::{above_forgotten_txn, marker_fenced_after_coordinator_rollback};
    use super::reads::record_value_at_is;
    use super::*;
    use bytes::Bytes;
    use mirrorsim::broker::BrokerStorage;
    use mirrorsim::common::LeaderEpoch;
    use mirrorsim::common::Offset;
    use mirrorsim::coordinator::transaction::TransactionMetadata;
    use mirrorsim::log::{AppendOrigin, LogConfig};
    use mirrorsim::protocol::ClientKind;
    use mirrorsim::record::{
        end_transaction_marker, mirror_pid_reset, BatchBuilder, MarkerProducer,
    };

    fn txn_batch(producer_id: i64, sequence: i32) -> mirrorsim::record::RecordBatch {
        let mut builder = BatchBuilder::idempotent(producer_id, 0, sequence);
        builder.transactional = true;
        builder.append(0, None, Some(Bytes::from_static(b"v")), vec![]);
        builder.build()
    }

    fn marker(producer_id: i64, committed: bool) -> mirrorsim::record::RecordBatch {
        end_transaction_marker(
            MarkerProducer {
                producer_id,
                producer_epoch: 0,
            },
            committed,
            0,
            0,
        )
    }

    /// A record sent to `tp` (not failed).
    fn send_record(
        tp: &TopicPartition,
        value: &str,
        sent_ms: i64,
        acked_offset: Option<i64>,
        transaction: Option<u64>,
    ) -> crate::world::workload::SendRecord {
        crate::world::workload::SendRecord {
            topic_partition: tp.clone(),
            value: value.into(),
            sent_ms,
            acked_offset,
            failed: None,
            transaction,
        }
    }

    /// Logs keyed by partition, standing in for the current leaders.
    struct FixedLogs(BTreeMap<TopicPartition, PartitionLog<MemoryDirDisk>>);

    impl LeaderLogs for FixedLogs {
        fn leader_log(
            &self,
            _cluster: ClusterIndex,
            tp: &TopicPartition,
        ) -> Option<&PartitionLog<MemoryDirDisk>> {
            self.0.get(tp)
        }
    }

    pub(super) fn log_with(
        batches: &[(mirrorsim::record::RecordBatch, AppendOrigin)],
    ) -> PartitionLog<MemoryDirDisk> {
        log_committed_to(batches, None)
    }

    /// A log of `batches` whose high watermark is `high_watermark` (`None`: its end).
    fn log_committed_to(
        batches: &[(mirrorsim::record::RecordBatch, AppendOrigin)],
        high_watermark: Option<i64>,
    ) -> PartitionLog<MemoryDirDisk> {
        let mut storage = mirrorsim::broker::MemoryStorage::new();
        let (mut log, _) =
            PartitionLog::open(storage.open_dir("t-0"), LogConfig::default()).unwrap();
        for (batch, origin) in batches {
            log.append_as_leader(batch, LeaderEpoch(0), *origin, 0)
                .unwrap();
        }
        let high_watermark = high_watermark.map_or(log.log_end_offset(), Offset);
        log.maybe_increment_high_watermark(high_watermark);
        log
    }

    fn value_batch(producer_id: i64, value: &str) -> mirrorsim::record::RecordBatch {
        let mut builder = BatchBuilder::idempotent(producer_id, 0, 0);
        builder.transactional = true;
        builder.append(0, None, Some(Bytes::from(value.to_string())), vec![]);
        builder.build()
    }

    const CONSUMER: NodeId = NodeId::Client(
        ClusterIndex(0),
        mirrorsim::protocol::ClientKind::Consumer,
        1,
    );
    const PRODUCER: NodeId = NodeId::Client(
        ClusterIndex(0),
        mirrorsim::protocol::ClientKind::Producer,
        1,
    );

    fn poll(tp: &TopicPartition, offset: i64, value: &str) -> crate::world::workload::PollRecord {
        crate::world::workload::PollRecord {
            topic_partition: tp.clone(),
            offset,
            value: value.into(),
            leader_epoch: 0,
            after_reset: false,
            received_ms: 0,
            fetched_ms: 0,
        }
    }

    /// For [`unseen`]: no final log to ask for epochs.
    fn no_epochs(_: ClusterIndex, _: &TopicPartition, _: i64) -> Option<i32> {
        None
    }

    /// For [`unseen`]: no loss of committed data anywhere.
    fn no_loss(_: ClusterIndex, _: &TopicPartition, _: i64, _: (i64, i64)) -> bool {
        false
    }

    #[test]
    fn unseen_excuses_a_record_the_position_passed_on_a_history_a_loss_replaced() {
        // Generated seed 12600000000000233: the group read 31 (and passed a COMMIT at 32) on
        // an uncleanly elected leader's log; the next unclean election replaced 31.. with
        // another replica's records (a loss keeping 31), and the group went on at 33 without
        // reading the acknowledged record now at 32.
        let tp = TopicPartition::new("t", 0);
        let value = "a-producer-1/1/t-0/20/0";
        let mut history = History::default();
        history.subscriptions.insert(CONSUMER, vec!["t".into()]);
        history
            .sends
            .insert((PRODUCER, 1, 0), send_record(&tp, value, 0, Some(32), None));
        let read = |offset, received_ms| PollRecord {
            leader_epoch: 0,
            received_ms,
            ..poll(&tp, offset, "a-producer-2/1/t-0/0/0")
        };
        history
            .polls
            .insert((CONSUMER, 1), vec![read(31, 4_655), read(33, 5_719)]);
        let (a, mut checkers) = (ClusterIndex(0), Checkers::default());
        let judge = |checkers: &Checkers| {
            unseen(
                0,
                &history,
                |_, _, _| false,
                |cluster, tp, offset, window| checkers.lost_between(cluster, tp, offset, window),
                no_epochs,
            )
        };
        // No loss: the jump from 31 to 33 went over it, unseen.
        assert_eq!(judge(&checkers).violations.len(), 1);
        // A loss before the first read, or after the second, replaced nothing passed.
        checkers.note_loss(4_000, a, &tp, 31, Some(1));
        checkers.note_loss(6_000, a, &tp, 31, Some(1));
        assert_eq!(judge(&checkers).violations.len(), 1);
        // A loss between the reads that kept more than 32 left 32 where it was.
        checkers.note_loss(5_275, a, &tp, 33, Some(1));
        assert_eq!(judge(&checkers).violations.len(), 1);
        // Between them, keeping 31: excused, and counted.
        checkers.note_loss(5_275, a, &tp, 31, Some(1));
        let report = judge(&checkers);
        assert!(report.violations.is_empty());
        assert_eq!(report.jumped_over_loss, 1);
        // Reads that never went over 32 are no jump over it.
        assert!(!jumped_over_loss(&[(4_655, 31), (5_719, 32)], 32, |_| true));
        assert!(jumped_over_loss(&[(4_655, 31), (5_719, 33)], 32, |_| true));
    }

    fn never_rewritten(_: NodeId, _: &PollRecord) -> bool {
        false
    }

    fn never_lost(_: ClusterIndex, _: &TopicPartition, _: i64, _: Option<i64>, _: i64) -> bool {
        false
    }

    fn never_enlist_lost(
        _: NodeId,
        _: &crate::world::workload::SendRecord,
        _: Option<i64>,
        _: bool,
    ) -> bool {
        false
    }

    #[test]
    fn every_invariant_is_reported_and_has_its_precondition_noted() {
        // The type ties every reported invariant to the table; what it cannot see is an entry
        // no check reports or whose case nothing notes (a dead or vacuous entry). Read from the
        // checks' sources, their test modules left out.
        let directory = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
        let mut files = Vec::new();
        let mut folders = vec![std::path::PathBuf::from(format!("{directory}/checks"))];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(folder).expect("checks folder") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    folders.push(path);
                } else {
                    files.push(path);
                }
            }
        }
        files.sort();
        files.push(format!("{directory}/commands/runner/mod.rs").into());
        let mut code = String::new();
        for file in files {
            let text = std::fs::read_to_string(&file).expect("source");
            code.push_str(
                text.split("\n#[cfg(test)]\nmod tests")
                    .next()
                    .unwrap_or_default(),
            );
        }
        let code = code.split_whitespace().collect::<String>();
        for invariant in Invariant::ALL {
            let path = format!("Invariant::{invariant:?}");
            let noted = [format!("precondition({path})"), format!(".entry({path})")];
            let notes = noted
                .iter()
                .map(|form| code.matches(form).count())
                .sum::<usize>();
            let uses = code.matches(&path).count();
            assert!(notes > 0, "{invariant}: its precondition is never noted");
            assert!(uses > notes, "{invariant}: never reported");
        }
        let names: BTreeSet<&str> = Invariant::ALL.iter().map(|i| i.name()).collect();
        assert_eq!(names.len(), Invariant::ALL.len(), "a name is listed twice");
        assert_eq!(INVARIANTS.len(), Invariant::ALL.len());
        for invariant in Invariant::ALL {
            assert_eq!(Invariant::from_name(invariant.name()), Some(*invariant));
        }
    }

    /// b's final log for the group-resume tests: two mirrored records (a's 0 and 1), then
    /// two b wrote itself (2 and 3); the partition, the logs, b, and a consumer of group `g`
    /// on a and on b.
    fn group_resume_fixture() -> (TopicPartition, FixedLogs, ClusterIndex, NodeId, NodeId) {
        let tp = TopicPartition::new("orders", 0);
        let log = log_with(&[
            (plain_batch("a/1/orders-0/0/x"), AppendOrigin::Client),
            (plain_batch("a/1/orders-0/1/x"), AppendOrigin::Client),
            (plain_batch("b/1/orders-0/0/y"), AppendOrigin::Client),
            (plain_batch("b/1/orders-0/1/y"), AppendOrigin::Client),
        ]);
        let logs = FixedLogs([(tp.clone(), log)].into_iter().collect());
        let b = ClusterIndex(1);
        let on_a = NodeId::Client(ClusterIndex(0), ClientKind::Consumer, 1);
        let on_b = NodeId::Client(b, ClientKind::Consumer, 1);
        (tp, logs, b, on_a, on_b)
    }

    /// A history where group `g` has both consumers and `on_a` read a's records 0 and 1.
    fn group_read_on_a(tp: &TopicPartition, on_a: NodeId, on_b: NodeId) -> History {
        let mut history = History::default();
        history.groups.insert(on_a, "g".into());
        history.groups.insert(on_b, "g".into());
        history.polls.insert(
            (on_a, 1),
            vec![
                poll(tp, 0, "a/1/orders-0/0/x"),
                poll(tp, 1, "a/1/orders-0/1/x"),
            ],
        );
        history
    }

    #[test]
    fn group_resume_checker_catches_a_group_resuming_past_records_it_never_read() {
        // b's log: two mirrored records the group read on a, then two b wrote itself after a
        // truncation cut below the synced offset 3.
        let (tp, logs, b, on_a, on_b) = group_resume_fixture();
        let judge = |resume_at: i64, b_read: &str| {
            let mut history = group_read_on_a(&tp, on_a, on_b);
            history
                .polls
                .insert((on_b, 1), vec![poll(&tp, resume_at, b_read)]);
            let mut checkers = Checkers::default();
            checkers.synced_groups.insert((b, "g".to_owned()));
            checkers.check_group_resumes(0, &logs, &history)
        };
        // Resuming at 2 skips nothing: everything below was read on a.
        assert!(judge(2, "b/1/orders-0/0/y").is_empty());
        // Resuming at 3 (an offset synced before the truncation) skips b's record at 2.
        let found = judge(3, "b/1/orders-0/1/y");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].invariant, "group-resume-no-skip");
        assert!(
            found[0].detail.contains("at offset 2"),
            "{}",
            found[0].detail
        );
    }

    #[test]
    fn group_resume_checker_excuses_records_written_after_the_group_resumed() {
        // b's final log: two mirrored records the group read on a, then b's own record at 2
        // and 3. The group resumed on b at 3 (received at 10 ms). A record of b's producer at
        // 2 first sent after that (a power loss cut b below 3 after the resume, the producer
        // wrote 2 anew) is no skip of the resume; one sent before it, or never sent by a
        // producer the history knows, is.
        let (tp, logs, b, on_a, on_b) = group_resume_fixture();
        let producer = NodeId::Client(b, ClientKind::Producer, 1);
        let judge = |sent_ms: Option<i64>| {
            let mut history = group_read_on_a(&tp, on_a, on_b);
            let resumed = PollRecord {
                received_ms: 10,
                fetched_ms: 5,
                ..poll(&tp, 3, "b/1/orders-0/1/y")
            };
            history.polls.insert((on_b, 1), vec![resumed]);
            if let Some(sent_ms) = sent_ms {
                history.sends.insert(
                    (producer, 1, 0),
                    crate::world::workload::SendRecord {
                        topic_partition: tp.clone(),
                        value: "b/1/orders-0/0/y".into(),
                        sent_ms,
                        acked_offset: Some(2),
                        failed: None,
                        transaction: None,
                    },
                );
            }
            let mut checkers = Checkers::default();
            checkers.synced_groups.insert((b, "g".to_owned()));
            let found = checkers.check_group_resumes(0, &logs, &history);
            let marked = checkers
                .marks
                .contains_key("resume-over-record-written-later");
            (found, marked)
        };
        let (found, marked) = judge(Some(20));
        assert!(found.is_empty(), "{found:?}");
        assert!(marked);
        for sent_ms in [Some(10), Some(3), None] {
            let (found, marked) = judge(sent_ms);
            assert_eq!(found.len(), 1, "sent at {sent_ms:?}: {found:?}");
            assert_eq!(found[0].invariant, "group-resume-no-skip");
            assert!(
                found[0].detail.contains("at offset 2"),
                "{}",
                found[0].detail
            );
            assert!(!marked);
        }
    }

    #[test]
    fn group_resume_checker_excuses_offsets_a_mirroring_cut_replaced_behind_the_position() {
        // c mirrors b. The group read b's own record at 0, then (after b's reset at 1, a
        // control batch) the cut of b to 0 re-mirrored a's records, and it read a's record at
        // 2 on b. Resuming on c at 3, the final log's 0 and 1 are a's records it never read:
        // excused when the cut came after the read and at or below the position there.
        let tp = TopicPartition::new("orders", 0);
        let log = log_with(&[
            (plain_batch("a/1/orders-0/0/x"), AppendOrigin::Client),
            (plain_batch("a/1/orders-0/1/x"), AppendOrigin::Client),
            (plain_batch("a/1/orders-0/2/x"), AppendOrigin::Client),
            (plain_batch("c/1/orders-0/0/y"), AppendOrigin::Client),
        ]);
        let logs = FixedLogs([(tp.clone(), log)].into_iter().collect());
        let (b, c) = (ClusterIndex(1), ClusterIndex(2));
        let on_b = NodeId::Client(b, ClientKind::Consumer, 1);
        let on_c = NodeId::Client(c, ClientKind::Consumer, 1);
        let judge = |cut_at_ms: i64, cut_to: i64| {
            let mut history = History::default();
            history.groups.insert(on_b, "g".into());
            history.groups.insert(on_c, "g".into());
            let after_cut = crate::world::workload::PollRecord {
                fetched_ms: 10,
                received_ms: 11,
                ..poll(&tp, 2, "a/1/orders-0/2/x")
            };
            history.polls.insert(
                (on_b, 1),
                vec![poll(&tp, 0, "b/1/orders-0/0/old"), after_cut],
            );
            history
                .polls
                .insert((on_c, 1), vec![poll(&tp, 3, "c/1/orders-0/0/y")]);
            let mut checkers = Checkers::default();
            checkers.synced_groups.insert((c, "g".to_owned()));
            checkers.mirror_truncations.insert(
                (b, tp.clone()),
                vec![(cut_at_ms, cut_to, TruncationReason::MirrorLastMirroredEpoch)],
            );
            let found = checkers.check_group_resumes(20, &logs, &history);
            let marked = checkers
                .marks
                .contains_key("resume-over-offset-rewritten-by-mirroring");
            (found, marked)
        };
        let (found, marked) = judge(5, 0);
        assert!(found.is_empty(), "{found:?}");
        assert!(marked);
        // A cut before the group's read replaced nothing it had passed.
        let (found, _) = judge(-1, 0);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].detail.contains("at offset 0"),
            "{}",
            found[0].detail
        );
        // A cut above the position (the group had not passed 0..1 where it cut) excuses
        // nothing below it.
        let (found, _) = judge(5, 2);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].detail.contains("at offset 0"),
            "{}",
            found[0].detail
        );
    }

    #[test]
    fn control_run_before_finds_the_control_batches_right_below_an_offset() {
        // 0: data, 1 and 2: control batches, 3: data; high watermark 4.
        let log = log_with(&[
            (plain_batch("a-v0"), AppendOrigin::Client),
            (mirror_pid_reset("b", 0), AppendOrigin::Coordinator),
            (mirror_pid_reset("b", 0), AppendOrigin::Coordinator),
            (plain_batch("a-v3"), AppendOrigin::Client),
        ]);
        assert_eq!(control_run_before(&log, 3), 1);
        assert_eq!(control_run_before(&log, 2), 1);
        // Data right below: no control run.
        assert_eq!(control_run_before(&log, 1), 1);
        assert_eq!(control_run_before(&log, 4), 4);
        assert_eq!(control_run_before(&log, 0), 0);
        // Past the log end (and the high watermark): the log does not reach it.
        assert_eq!(control_run_before(&log, 6), 6);
    }

    /// Generator seed 185, chain a -> b -> c: the member on b read a's record at 0 (the same
    /// record b's final log holds there), passed b's MIRROR_PID_RESET at 1 and committed 2;
    /// b's re-add cut b to 0, below the record it read, and mirrored a's records, a's 1 among
    /// them; another member read on at 2, and the group resumed on c at 3. Only the controls'
    /// offsets are excused: a record at 0 the member never read is still a skip.
    #[test]
    fn group_resume_checker_excuses_controls_passed_above_records_read_before_a_lower_cut() {
        let tp = TopicPartition::new("payments", 4);
        let final_log = |first: &str| {
            FixedLogs(BTreeMap::from([(
                tp.clone(),
                log_with(&[
                    (plain_batch(first), AppendOrigin::Client),
                    (plain_batch("a/1/payments-4/1/x"), AppendOrigin::Client),
                    (plain_batch("a/1/payments-4/2/x"), AppendOrigin::Client),
                    (plain_batch("a/1/payments-4/3/x"), AppendOrigin::Client),
                ]),
            )]))
        };
        let commit_log = log_with(&[
            (plain_batch("a/1/payments-4/0/x"), AppendOrigin::Client),
            (mirror_pid_reset("a", 0), AppendOrigin::Coordinator),
        ]);
        let (b, c) = (ClusterIndex(1), ClusterIndex(2));
        let on_b = NodeId::Client(b, ClientKind::Consumer, 1);
        let on_c = NodeId::Client(c, ClientKind::Consumer, 1);
        let mut history = History::default();
        history.groups.insert(on_b, "g".into());
        history.groups.insert(on_c, "g".into());
        // After the cut another member took the partition over and read on from the
        // committed position, at 2 (so no read of the first member's shows its position).
        let other_on_b = NodeId::Client(b, ClientKind::Consumer, 2);
        history.groups.insert(other_on_b, "g".into());
        let after_cut = PollRecord {
            fetched_ms: 25,
            received_ms: 26,
            ..poll(&tp, 2, "a/1/payments-4/2/x")
        };
        history
            .polls
            .insert((on_b, 1), vec![poll(&tp, 0, "a/1/payments-4/0/x")]);
        history.polls.insert((other_on_b, 1), vec![after_cut]);
        history.polls.insert(
            (on_c, 1),
            vec![PollRecord {
                fetched_ms: 40,
                received_ms: 41,
                ..poll(&tp, 3, "a/1/payments-4/3/x")
            }],
        );
        let judge = |final_log: &FixedLogs, history: &History| {
            let mut checkers = Checkers::default();
            checkers.synced_groups.insert((c, "g".to_owned()));
            let key = (b, "g".to_owned(), tp.clone());
            checkers.note_member_commit(10, key, 2, || Some(&commit_log));
            checkers.mirror_truncations.insert(
                (b, tp.clone()),
                vec![(20, 0, TruncationReason::MirrorLastMirroredEpoch)],
            );
            let found = checkers.check_group_resumes(50, final_log, history);
            let marked = checkers
                .marks
                .contains_key("resume-over-passed-controls-rewritten");
            (found, marked)
        };
        let final_log = final_log("a/1/payments-4/0/x");
        let (found, marked) = judge(&final_log, &history);
        assert!(found.is_empty(), "{found:?}");
        assert!(marked);
        // Had the member not read the record at 0, that one is a skip: caught.
        let mut unread = history.clone();
        unread.polls.remove(&(on_b, 1));
        let (found, marked) = judge(&final_log, &unread);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].detail.contains("at offset 0"),
            "{}",
            found[0].detail
        );
        assert!(!marked, "the scan stops at the first skip");
    }

    #[test]
    fn group_resume_checker_excuses_controls_a_commit_passed_before_a_mirroring_cut() {
        // Generator seed 9800000000000294, chain a -> b -> c: the group's member on b passed
        // b's MIRROR_PID_RESET at 0 and committed 1 (seen at 10 ms) without a record to show
        // for it; PREPARING cut b to 0 (at `cut_ms`) and mirrored a's records from 0; the
        // member read a's 1 on b, and the group resumed on c at 2. a's record at 0 is below
        // the position: excused only when the commit passed control batches only there, was
        // the last one seen before the cut, and no other cut or loss came in between.
        let tp = TopicPartition::new("payments", 1);
        let final_log = FixedLogs(BTreeMap::from([(
            tp.clone(),
            log_with(&[
                (plain_batch("a/1/payments-1/0/x"), AppendOrigin::Client),
                (plain_batch("a/1/payments-1/1/x"), AppendOrigin::Client),
                (plain_batch("a/1/payments-1/2/x"), AppendOrigin::Client),
            ]),
        )]));
        let reset_only = log_with(&[(mirror_pid_reset("a", 0), AppendOrigin::Coordinator)]);
        let data_at_0 = log_with(&[(plain_batch("b/1/payments-1/0/y"), AppendOrigin::Client)]);
        let (b, c) = (ClusterIndex(1), ClusterIndex(2));
        let on_b = NodeId::Client(b, ClientKind::Consumer, 1);
        let on_c = NodeId::Client(c, ClientKind::Consumer, 1);
        let judge = |commit_log: &PartitionLog<MemoryDirDisk>,
                     cut_ms: i64,
                     later_commit_ms: Option<i64>,
                     loss_ms: Option<i64>| {
            let mut history = History::default();
            history.groups.insert(on_b, "g".into());
            history.groups.insert(on_c, "g".into());
            // Fetched after the cut (the real run's first read there).
            let after_cut = PollRecord {
                fetched_ms: 25,
                received_ms: 26,
                ..poll(&tp, 1, "a/1/payments-1/1/x")
            };
            history.polls.insert((on_b, 1), vec![after_cut]);
            history
                .polls
                .insert((on_c, 1), vec![poll(&tp, 2, "a/1/payments-1/2/x")]);
            let mut checkers = Checkers::default();
            checkers.synced_groups.insert((c, "g".to_owned()));
            let key = (b, "g".to_owned(), tp.clone());
            checkers.note_member_commit(10, key.clone(), 1, || Some(commit_log));
            // The same offset seen again is no new commit.
            checkers.note_member_commit(12, key.clone(), 1, || None);
            if let Some(later_ms) = later_commit_ms {
                checkers.note_member_commit(later_ms, key, 0, || Some(commit_log));
            }
            if let Some(loss_ms) = loss_ms {
                checkers.note_loss(loss_ms, b, &tp, 0, Some(1));
            }
            checkers.mirror_truncations.insert(
                (b, tp.clone()),
                vec![(cut_ms, 0, TruncationReason::MirrorLastMirroredEpoch)],
            );
            let found = checkers.check_group_resumes(30, &final_log, &history);
            let marked = checkers
                .marks
                .contains_key("resume-over-passed-controls-rewritten");
            (found, marked)
        };
        let (found, marked) = judge(&reset_only, 20, None, None);
        assert!(found.is_empty(), "{found:?}");
        assert!(marked);
        let caught = |(found, marked): (Vec<Violation>, bool)| {
            assert_eq!(found.len(), 1, "{found:?}");
            assert!(
                found[0].detail.contains("at offset 0"),
                "{}",
                found[0].detail
            );
            assert!(!marked);
        };
        // The position passed a data record there: a real skip, whatever the cut did since.
        caught(judge(&data_at_0, 20, None, None));
        // A cut before the commit (or in its step) replaced nothing the commit had passed.
        caught(judge(&reset_only, 5, None, None));
        caught(judge(&reset_only, 10, None, None));
        // A later commit (at 0) was the position at the cut.
        caught(judge(&reset_only, 20, Some(15), None));
        // A loss in between comes with a leader change the position is validated at.
        caught(judge(&reset_only, 20, None, Some(15)));
    }

    #[test]
    fn group_resume_checker_excuses_a_record_the_group_passed_aborted_before_its_abort_was_lost() {
        // Generator seed 9800000000000175, b mirrors a: the group's READ_COMMITTED member on
        // a read 0, then 3 past producer 1's aborted record at 1 (ABORT at 2); a power loss of
        // a's only replica kept 0..1, the coordinator's COMMIT of the producer's next
        // transaction landed at 2, b mirrored that log, and the group resumed on b at 3.
        let tp = TopicPartition::new("orders", 0);
        let (a, b) = (ClusterIndex(0), ClusterIndex(1));
        let new = "a-producer-1/1/orders-0/9/new";
        let log = |committed| {
            log_with(&[
                (plain_batch("a-v0"), AppendOrigin::Client),
                (value_batch(1, "a-t3"), AppendOrigin::Client),
                (marker(1, committed), AppendOrigin::Coordinator),
                (plain_batch(new), AppendOrigin::Client),
            ])
        };
        let final_log = FixedLogs(BTreeMap::from([(tp.clone(), log(true))]));
        let on_b = NodeId::Client(b, ClientKind::Consumer, 1);
        let read = |offset, value: &str| PollRecord {
            leader_epoch: 0,
            received_ms: 4_000,
            fetched_ms: 4_000,
            ..poll(&tp, offset, value)
        };
        let judge = |aborted: bool, read_committed: bool, loss_ms: Option<i64>| {
            let mut history = History::default();
            history.groups.insert(CONSUMER, "g".into());
            history.groups.insert(on_b, "g".into());
            history.read_committed.insert(on_b);
            if read_committed {
                history.read_committed.insert(CONSUMER);
            }
            history
                .polls
                .insert((CONSUMER, 1), vec![read(0, "a-v0"), read(3, new)]);
            history.polls.insert((on_b, 1), vec![poll(&tp, 3, new)]);
            let mut checkers = Checkers::default();
            checkers.synced_groups.insert((b, "g".to_owned()));
            let read_time = FixedLogs(BTreeMap::from([(tp.clone(), log(!aborted))]));
            checkers.note_poll_gaps(&read_time, &history);
            if let Some(loss_ms) = loss_ms {
                checkers.note_loss(loss_ms, a, &tp, 2, Some(1));
            }
            let found = checkers.check_group_resumes(9_000, &final_log, &history);
            let marked = checkers
                .marks
                .contains_key("resume-over-outcome-lost-not-durable");
            (found, marked)
        };
        let (found, marked) = judge(true, true, Some(5_000));
        assert!(found.is_empty(), "{found:?}");
        assert!(marked);
        let caught = |(found, marked): (Vec<Violation>, bool)| {
            assert_eq!(found.len(), 1, "{found:?}");
            assert!(
                found[0].detail.contains("at offset 1"),
                "{}",
                found[0].detail
            );
            assert!(!marked);
        };
        // No loss, or one before the read: the final verdict is the one the member read past.
        caught(judge(true, true, None));
        caught(judge(true, true, Some(3_000)));
        // Committed when the member jumped over it, or jumped over by a READ_UNCOMMITTED
        // member: a real skip.
        caught(judge(false, true, Some(5_000)));
        caught(judge(true, false, Some(5_000)));
    }

    #[test]
    fn delivered_records_checker_catches_a_delivered_control_record_and_an_aborted_read() {
        let tp = TopicPartition::new("t", 0);
        // Offset 0: producer 1's transaction, aborted at offset 1.
        let logs = FixedLogs(BTreeMap::from([(
            tp.clone(),
            log_with(&[
                (value_batch(1, "x"), AppendOrigin::Client),
                (marker(1, false), AppendOrigin::Coordinator),
            ]),
        )]));
        let mut history = History::default();
        history.polls.insert((CONSUMER, 1), vec![poll(&tp, 0, "x")]);
        // READ_UNCOMMITTED may read aborted data.
        assert!(check_delivered_records(
            0,
            &logs,
            &history,
            (&never_rewritten, &never_rewritten),
            &never_lost
        )
        .is_empty());
        // READ_COMMITTED may not.
        history.read_committed.insert(CONSUMER);
        let found = check_delivered_records(
            0,
            &logs,
            &history,
            (&never_rewritten, &never_rewritten),
            &never_lost,
        );
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].invariant, "read-committed");
        // Nobody may receive the marker.
        history.polls.insert((CONSUMER, 1), vec![poll(&tp, 1, "")]);
        let found = check_delivered_records(
            0,
            &logs,
            &history,
            (&never_rewritten, &never_rewritten),
            &never_lost,
        );
        assert_eq!(found[0].invariant, "no-control-records-delivered");
    }

    /// Generator seed 3307716073686263: a's only replica of orders-0 lost its unflushed tail
    /// in a power loss, the COMMIT marker of a transaction whose records it kept among it. A
    /// READ_COMMITTED consumer had read them; the rebuilt producer state held the transaction
    /// open, and the producer's next ABORT closed it. The final log's verdict (aborted) is
    /// decided at or above a loss after the read or send, so neither `read-committed` nor
    /// `transaction-atomicity` may judge by it; a loss before, at or below the record, above
    /// the marker, or on another partition leaves the verdict to them.
    #[test]
    fn a_verdict_a_later_loss_may_have_replaced_is_not_judged() {
        let tp = TopicPartition::new("t", 0);
        let a = ClusterIndex(0);
        // Offset 0: producer 1's record; offset 1: the ABORT written after the loss.
        let logs = FixedLogs(BTreeMap::from([(
            tp.clone(),
            log_with(&[
                (value_batch(1, "a-committed"), AppendOrigin::Client),
                (marker(1, false), AppendOrigin::Coordinator),
            ]),
        )]));
        let mut history = History::default();
        history.read_committed.insert(CONSUMER);
        let mut read = poll(&tp, 0, "a-committed");
        read.fetched_ms = 100;
        history.polls.insert((CONSUMER, 1), vec![read]);
        history.sends.insert(
            (PRODUCER, 1, 0),
            send_record(&tp, "a-committed", 100, Some(0), Some(3)),
        );
        history.transactions.insert(
            (PRODUCER, 1, 3),
            crate::world::workload::TransactionRecord {
                handles: vec![0],
                intended_commit: true,
                committed: Some(true),
                completed_ms: None,
            },
        );
        let check = |losses: &[(TopicPartition, i64, i64)]| {
            let mut checkers = Checkers::default();
            for (tp, time_ms, kept) in losses {
                checkers.note_loss(*time_ms, a, tp, *kept, Some(1));
            }
            let outcome_lost = |cluster, tp: &TopicPartition, offset, decided_at, since_ms| {
                checkers.outcome_lost_since(cluster, tp, offset, decided_at, since_ms)
            };
            let mut found = check_delivered_records(
                0,
                &logs,
                &history,
                (&never_rewritten, &never_rewritten),
                &outcome_lost,
            );
            found.extend(check_transaction_atomicity(
                0,
                &logs,
                &history,
                &|_| false,
                &outcome_lost,
                &outcome_lost,
                &never_enlist_lost,
            ));
            found.iter().map(|v| v.invariant).collect::<Vec<_>>()
        };
        let caught = vec!["read-committed", "transaction-atomicity"];
        assert_eq!(check(&[]), caught);
        // The loss after the read and send kept the record (offset 0) and not the marker's
        // offset 1: excused.
        assert!(check(&[(tp.clone(), 200, 1)]).is_empty());
        // Before the read and send, at or below the record, above the marker, elsewhere: not.
        let other = TopicPartition::new("t", 1);
        for (tp, time_ms, kept) in [(&tp, 50, 1), (&tp, 200, 0), (&tp, 200, 2), (&other, 200, 1)] {
            assert_eq!(
                check(&[(tp.clone(), time_ms, kept)]),
                caught,
                "{tp} {time_ms} {kept}"
            );
        }
        // A loss of a transaction left open: no marker at all in the final log.
        let open = FixedLogs(BTreeMap::from([(
            tp.clone(),
            log_with(&[(value_batch(1, "a-committed"), AppendOrigin::Client)]),
        )]));
        let outcome_lost = |cluster, tp: &TopicPartition, offset, decided_at, since_ms| {
            let mut checkers = Checkers::default();
            checkers.note_loss(200, a, &TopicPartition::new("t", 0), 1, Some(1));
            checkers.outcome_lost_since(cluster, tp, offset, decided_at, since_ms)
        };
        let found = check_delivered_records(
            0,
            &open,
            &history,
            (&never_rewritten, &never_rewritten),
            &outcome_lost,
        );
        assert!(found.is_empty(), "{found:?}");
    }

    /// KIP-890 part 2's torn and aborted reads: a late EndTxn(commit) of the producer's previous
    /// transaction commits the open one. If the producer had aborted that one, its answer is
    /// a fatal error (the coordinator says the transaction is already committed), so no
    /// confirmed outcome exists; but the producer never asked for a commit, so a committed
    /// record of it is a violation. A transaction the producer meant to commit whose answer
    /// it never got may end either way, as long as it ends whole.
    #[test]
    fn a_committed_record_of_a_transaction_its_producer_aborted_is_caught_without_an_answer() {
        let tp = TopicPartition::new("t", 0);
        let logs = FixedLogs(BTreeMap::from([(
            tp.clone(),
            log_with(&[
                (value_batch(1, "v"), AppendOrigin::Client),
                (marker(1, true), AppendOrigin::Coordinator),
            ]),
        )]));
        let judge = |intended_commit: bool, committed: Option<bool>| {
            let mut history = History::default();
            history.sends.insert(
                (PRODUCER, 1, 0),
                send_record(&tp, "v", 100, Some(0), Some(7)),
            );
            history.transactions.insert(
                (PRODUCER, 1, 7),
                crate::world::workload::TransactionRecord {
                    handles: vec![0],
                    intended_commit,
                    committed,
                    completed_ms: None,
                },
            );
            check_transaction_atomicity(
                0,
                &logs,
                &history,
                &|_| false,
                &never_lost,
                &never_lost,
                &never_enlist_lost,
            )
        };
        let found = judge(false, None);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].detail.contains("aborted by its producer"),
            "{}",
            found[0].detail
        );
        assert!(
            judge(true, None).is_empty(),
            "meant to commit, unanswered: either way"
        );
        assert!(judge(true, Some(true)).is_empty());
        assert_eq!(judge(false, Some(false)).len(), 1, "confirmed aborted");
    }

    /// Generator seed 11 (`mirrorsim generate --seed 11`): c's only replica of payments-0 lost
    /// its unflushed tail in a power loss, the ABORT marker of a transaction confirmed aborted
    /// whose record it kept; the rebuilt producer state held the transaction open, and the
    /// producer's next COMMIT (same producer id and epoch) closed it. A committed record of a
    /// transaction confirmed aborted is excused only when the final log decides it at or above
    /// a loss after the send that kept the record (`abort_lost`); a loss before the send, at or
    /// below the record, above the marker or on another partition is not, and `outcome_lost`
    /// (the excuse for a verdict left uncommitted) never excuses a committed one.
    #[test]
    fn a_commit_verdict_a_later_loss_may_have_put_for_a_lost_abort_is_not_judged() {
        let tp = TopicPartition::new("t", 0);
        let a = ClusterIndex(0);
        // Offset 0: producer 1's record; offset 1: the next transaction's COMMIT, written after
        // the loss took the ABORT that stood there.
        let logs = FixedLogs(BTreeMap::from([(
            tp.clone(),
            log_with(&[
                (value_batch(1, "a-aborted"), AppendOrigin::Client),
                (marker(1, true), AppendOrigin::Coordinator),
            ]),
        )]));
        let mut history = History::default();
        history.sends.insert(
            (PRODUCER, 1, 0),
            send_record(&tp, "a-aborted", 100, Some(0), Some(31)),
        );
        let aborted = crate::world::workload::TransactionRecord {
            handles: vec![0],
            intended_commit: false,
            committed: Some(false),
            completed_ms: None,
        };
        history.transactions.insert((PRODUCER, 1, 31), aborted);
        let check = |losses: &[(TopicPartition, i64, i64)], only_outcome_lost: bool| {
            let mut checkers = Checkers::default();
            for (tp, time_ms, kept) in losses {
                checkers.note_loss(*time_ms, a, tp, *kept, Some(1));
            }
            let lost = |cluster, tp: &TopicPartition, offset, decided_at, since_ms| {
                checkers.outcome_lost_since(cluster, tp, offset, decided_at, since_ms)
            };
            let abort_lost: &OutcomeLost<'_> = if only_outcome_lost {
                &never_lost
            } else {
                &lost
            };
            let found = check_transaction_atomicity(
                0,
                &logs,
                &history,
                &|_| false,
                &lost,
                abort_lost,
                &never_enlist_lost,
            );
            found.iter().map(|v| v.invariant).collect::<Vec<_>>()
        };
        let caught = vec!["transaction-atomicity"];
        assert_eq!(check(&[], false), caught);
        // The loss after the send kept the record (offset 0) and not the marker's offset 1.
        assert!(check(&[(tp.clone(), 200, 1)], false).is_empty());
        // Only the abort excuse covers it.
        assert_eq!(check(&[(tp.clone(), 200, 1)], true), caught);
        // Before the send, at or below the record, above the marker, elsewhere: caught.
        let other = TopicPartition::new("t", 1);
        for (tp, time_ms, kept) in [(&tp, 50, 1), (&tp, 200, 0), (&tp, 200, 2), (&other, 200, 1)] {
            assert_eq!(
                check(&[(tp.clone(), time_ms, kept)], false),
                caught,
                "{tp} {time_ms} {kept}"
            );
        }
    }

    #[test]
    fn transaction_atomicity_checker_catches_a_half_committed_transaction() {
        let committed_tp = TopicPartition::new("t", 0);
        let aborted_tp = TopicPartition::new("t", 1);
        let logs = FixedLogs(BTreeMap::from([
            (
                committed_tp.clone(),
                log_with(&[
                    (value_batch(1, "a"), AppendOrigin::Client),
                    (marker(1, true), AppendOrigin::Coordinator),
                ]),
            ),
            (
                aborted_tp.clone(),
                log_with(&[
                    (value_batch(1, "b"), AppendOrigin::Client),
                    (marker(1, false), AppendOrigin::Coordinator),
                ]),
            ),
        ]));
        let mut history = History::default();
        for (handle, (tp, value)) in [(&committed_tp, "a"), (&aborted_tp, "b")]
            .into_iter()
            .enumerate()
        {
            history.sends.insert(
                (PRODUCER, 1, handle as u64),
                send_record(tp, value, 0, Some(0), Some(7)),
            );
        }
        let transaction = crate::world::workload::TransactionRecord {
            handles: vec![0, 1],
            intended_commit: true,
            committed: None,
            completed_ms: None,
        };
        history.transactions.insert((PRODUCER, 1, 7), transaction);
        let found = check_transaction_atomicity(
            0,
            &logs,
            &history,
            &|_| false,
            &never_lost,
            &never_lost,
            &never_enlist_lost,
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].invariant, "transaction-atomicity");
        assert_eq!(found[0].topic_partition, Some(aborted_tp.clone()));
        // A transaction whose records all committed is fine.
        history
            .transactions
            .get_mut(&(PRODUCER, 1, 7))
            .unwrap()
            .handles = vec![0];
        assert!(check_transaction_atomicity(
            0,
            &logs,
            &history,
            &|_| false,
            &never_lost,
            &never_lost,
            &never_enlist_lost,
        )
        .is_empty());
    }

    /// A transaction confirmed committed whose record on one partition is gone from the final
    /// log (another record took its offset) fails `transaction-atomicity`, unless a failback
    /// cut it (a mirroring truncation of its own cluster that follows a source, after the send,
    /// at or below its offset) or its topic is not durable. STOPPING's cut to the LSO, a cut
    /// before the send, above the offset or on another cluster excuse nothing, and neither
    /// excuse covers a record the final log still holds uncommitted.
    /// The committed transaction 3 of [`PRODUCER`], sent at 100 ms with one record on each of
    /// t-0 and t-1 acknowledged at offset 0, and final logs where its record on t-1 is gone: a
    /// record of another producer sits at its offset, committed as t-0's.
    fn committed_txn_with_a_record_gone() -> (History, FixedLogs) {
        let (kept_tp, cut_tp) = (TopicPartition::new("t", 0), TopicPartition::new("t", 1));
        let gone = FixedLogs(BTreeMap::from([
            (kept_tp.clone(), committed_log("a-kept")),
            (cut_tp.clone(), committed_log("a-other")),
        ]));
        let mut history = History::default();
        for (handle, (tp, value)) in [(&kept_tp, "a-kept"), (&cut_tp, "a-cut")]
            .into_iter()
            .enumerate()
        {
            history.sends.insert(
                (PRODUCER, 1, handle as u64),
                send_record(tp, value, 100, Some(0), Some(3)),
            );
        }
        history.transactions.insert(
            (PRODUCER, 1, 3),
            crate::world::workload::TransactionRecord {
                handles: vec![0, 1],
                intended_commit: true,
                committed: Some(true),
                completed_ms: Some(1_000),
            },
        );
        (history, gone)
    }

    /// A log of one transactional record of producer 1 and its COMMIT marker.
    fn committed_log(value: &str) -> PartitionLog<MemoryDirDisk> {
        log_with(&[
            (value_batch(1, value), AppendOrigin::Client),
            (marker(1, true), AppendOrigin::Coordinator),
        ])
    }

    /// The `transaction-atomicity` invariants `checkers` report over `logs`, with their
    /// excuses for gone records.
    fn atomicity_found(
        checkers: &Checkers,
        logs: &FixedLogs,
        history: &History,
    ) -> Vec<&'static str> {
        let gone_legally = |send: &crate::world::workload::SendRecord| {
            checkers.txn_send_gone_legally(logs, send).is_some()
        };
        // Every transactional id's state on `STATE_PARTITION` of its producer's cluster.
        let enlist_lost =
            |producer: NodeId, send: &crate::world::workload::SendRecord, completed_ms, _| {
                let state = TopicPartition::new("__transaction_state", STATE_PARTITION);
                checkers.enlist_lost_by_coordinator(producer.cluster(), &state, send, completed_ms)
            };
        let found = check_transaction_atomicity(
            0,
            logs,
            history,
            &gone_legally,
            &never_lost,
            &never_lost,
            &enlist_lost,
        );
        found.iter().map(|v| v.invariant.name()).collect()
    }

    /// The `__transaction_state` partition `atomicity_found` takes every producer's state in.
    const STATE_PARTITION: i32 = 2;

    /// Generator seed 9800000000000076: a READ_COMMITTED reader may miss a record of a
    /// transaction confirmed committed when the coordinator's `__transaction_state` partition
    /// lost committed data between the send and the confirmation and the final log aborted the
    /// record; not when the log commits it, no longer holds it at its offset, or the loss came
    /// before the send or after the confirmation, nor on another state partition.
    #[test]
    fn unseen_excuses_a_record_aborted_after_its_enlisting_was_lost() {
        let (mut history, _) = committed_txn_with_a_record_gone();
        assert_eq!(commits_confirmed_at(&history).get("a-cut"), Some(&1_000));
        history
            .transactions
            .get_mut(&(PRODUCER, 1, 3))
            .unwrap()
            .committed = Some(false);
        assert!(commits_confirmed_at(&history).is_empty());
        let tp = TopicPartition::new("t", 1);
        let value = "a-producer-1/1/t-1/0/0000000000000000";
        let send = send_record(&tp, value, 100, Some(0), Some(3));
        let logs = |log| FixedLogs(BTreeMap::from([(tp.clone(), log)]));
        let aborted = logs(log_with(&[
            (value_batch(1, value), AppendOrigin::Client),
            (marker(1, false), AppendOrigin::Coordinator),
        ]));
        let committed = logs(committed_log(value));
        let replaced = logs(committed_log("a-producer-2/1/t-1/0/0000000000000000"));
        let with_loss = |time_ms| {
            let mut checkers = Checkers::default();
            let state = TopicPartition::new("__transaction_state", STATE_PARTITION);
            checkers
                .losses
                .insert((ClusterIndex(0), state), vec![(time_ms, 0)]);
            checkers
        };
        let excused = |checkers: &Checkers, logs: &FixedLogs, partition: i32| {
            let state = |id: &str| {
                assert_eq!(id, "a-producer-1-txn");
                Some(TopicPartition::new("__transaction_state", partition))
            };
            checkers.aborted_after_enlist_lost(
                state,
                logs,
                &mut TxnEndsMemo::default(),
                0,
                &send,
                Some(1_000),
            )
        };
        assert!(excused(&with_loss(500), &aborted, STATE_PARTITION));
        assert!(!excused(&with_loss(500), &committed, STATE_PARTITION));
        assert!(!excused(&with_loss(500), &replaced, STATE_PARTITION));
        assert!(!excused(&with_loss(50), &aborted, STATE_PARTITION));
        assert!(!excused(&with_loss(1_500), &aborted, STATE_PARTITION));
        assert!(!excused(&with_loss(500), &aborted, STATE_PARTITION + 1));
        assert!(!excused(&Checkers::default(), &aborted, STATE_PARTITION));
    }

    #[test]
    fn transaction_atomicity_excuses_only_a_failback_cut_or_a_non_durable_loss() {
        let (kept_tp, cut_tp) = (TopicPartition::new("t", 0), TopicPartition::new("t", 1));
        let a = ClusterIndex(0);
        let (history, gone) = committed_txn_with_a_record_gone();
        // The record on t-1 is still there, aborted.
        let aborted = FixedLogs(BTreeMap::from([
            (kept_tp.clone(), committed_log("a-kept")),
            (
                cut_tp.clone(),
                log_with(&[
                    (value_batch(1, "a-cut"), AppendOrigin::Client),
                    (marker(1, false), AppendOrigin::Coordinator),
                ]),
            ),
        ]));
        let check =
            |checkers: &Checkers, logs: &FixedLogs| atomicity_found(checkers, logs, &history);
        let durable = || {
            let mut checkers = Checkers::default();
            checkers.durable_topics.insert((a, "t".into()));
            checkers
        };
        // No cut on a durable topic: caught.
        assert_eq!(check(&durable(), &gone), vec!["transaction-atomicity"]);
        // A failback's cuts after the send, at or below the offset: excused.
        for reason in [
            TruncationReason::MirrorLastMirroredEpoch,
            TruncationReason::MirrorDivergingEpoch,
            TruncationReason::MirrorBelowSourceLogStart,
        ] {
            let mut checkers = durable();
            checkers.note_mirror_truncation(200, a, &cut_tp, 0, reason);
            assert!(check(&checkers, &gone).is_empty(), "{reason:?}");
            assert_eq!(
                checkers.txn_send_gone_legally(&gone, &history.sends[&(PRODUCER, 1, 1)]),
                Some("txn-record-cut-by-failback")
            );
            // The record still in the log, aborted, is never excused.
            assert_eq!(check(&checkers, &aborted), vec!["transaction-atomicity"]);
        }
        // STOPPING's cut, a cut before the send, above the offset, on another cluster or on
        // another partition: caught.
        for (time_ms, cluster, tp, to, reason) in [
            (
                200,
                a,
                &cut_tp,
                0,
                TruncationReason::MirrorStopAtLastStableOffset,
            ),
            (50, a, &cut_tp, 0, TruncationReason::MirrorDivergingEpoch),
            (200, a, &cut_tp, 1, TruncationReason::MirrorDivergingEpoch),
            (
                200,
                ClusterIndex(1),
                &cut_tp,
                0,
                TruncationReason::MirrorDivergingEpoch,
            ),
            (200, a, &kept_tp, 0, TruncationReason::MirrorDivergingEpoch),
        ] {
            let mut checkers = durable();
            checkers.note_mirror_truncation(time_ms, cluster, tp, to, reason);
            assert_eq!(
                check(&checkers, &gone),
                vec!["transaction-atomicity"],
                "{time_ms} {cluster:?} {tp:?} {to} {reason:?}"
            );
        }
        // A topic that is not durable may lose the record to a loss of committed data after
        // the send at or below its offset (a leader's power loss), not keep it uncommitted.
        let cut_send = &history.sends[&(PRODUCER, 1, 1)];
        let mut not_durable = Checkers::default();
        not_durable.note_loss(200, a, &cut_tp, 0, None);
        assert!(check(&not_durable, &gone).is_empty());
        assert_eq!(
            not_durable.txn_send_gone_legally(&gone, cut_send),
            Some("txn-record-lost-not-durable")
        );
        assert_eq!(check(&not_durable, &aborted), vec!["transaction-atomicity"]);
        // A lost tail counts as such a loss.
        let mut tail_lost = Checkers::default();
        tail_lost
            .lost_tails
            .entry((a, cut_tp.clone()))
            .or_default()
            .push((200, 0));
        assert!(check(&tail_lost, &gone).is_empty());
        // Not durable, but no loss took it (generator seed 5 under
        // `markers-refused-before-cut`: STOPPING's cut to the last stable offset), or the loss
        // came before the send, above the offset, or on another partition: caught.
        for (lost_ms, tp, kept) in [(50, &cut_tp, 0), (200, &cut_tp, 1), (200, &kept_tp, 0)] {
            let mut checkers = Checkers::default();
            checkers.note_loss(lost_ms, a, tp, kept, None);
            assert_eq!(checkers.txn_send_gone_legally(&gone, cut_send), None);
            assert_eq!(
                check(&checkers, &gone),
                vec!["transaction-atomicity"],
                "{lost_ms} {tp:?} {kept}"
            );
        }
        assert_eq!(
            check(&Checkers::default(), &gone),
            vec!["transaction-atomicity"]
        );
    }

    /// A confirmed commit whose record the final log holds aborted is excused only when its
    /// producer's `__transaction_state` partition lost committed data seen between the send
    /// and the commit's confirmation: the coordinator reloaded a state without the record's
    /// partition, and the producer's next ABORT closed the record (generator seeds
    /// 9400000000000169 and 9400000000002055). A loss before the send or after the
    /// confirmation, of another cluster or another state partition, a commit with no
    /// confirmation time, and a committed record gone from the log are not.
    #[test]
    fn transaction_atomicity_excuses_a_record_outside_the_commit_only_after_its_coordinators_loss()
    {
        let (kept_tp, cut_tp) = (TopicPartition::new("t", 0), TopicPartition::new("t", 1));
        let (a, b) = (ClusterIndex(0), ClusterIndex(1));
        let (history, gone) = committed_txn_with_a_record_gone();
        let aborted = FixedLogs(BTreeMap::from([
            (kept_tp.clone(), committed_log("a-kept")),
            (
                cut_tp.clone(),
                log_with(&[
                    (value_batch(1, "a-cut"), AppendOrigin::Client),
                    (marker(1, false), AppendOrigin::Coordinator),
                ]),
            ),
        ]));
        let state = |partition| TopicPartition::new("__transaction_state", partition);
        // (loss time, cluster, state partition); sent at 100, confirmed at 1 000.
        let checkers_with = |(lost_ms, cluster, partition): (i64, ClusterIndex, i32)| {
            let mut checkers = Checkers::default();
            checkers.note_loss(lost_ms, cluster, &state(partition), 7, None);
            checkers
        };
        let caught = vec!["transaction-atomicity"];
        assert_eq!(
            atomicity_found(&Checkers::default(), &aborted, &history),
            caught,
            "the coordinator lost nothing"
        );
        // The seeds' case, the loss seen at the send and at the confirmation: excused.
        for lost_ms in [500, 100, 1_000] {
            let excused = checkers_with((lost_ms, a, STATE_PARTITION));
            assert!(
                atomicity_found(&excused, &aborted, &history).is_empty(),
                "{lost_ms}"
            );
        }
        for loss in [
            (50, a, STATE_PARTITION),      // before the send
            (1_500, a, STATE_PARTITION),   // after the confirmation
            (500, b, STATE_PARTITION),     // another cluster's
            (500, a, STATE_PARTITION + 1), // another transactional id's partition
        ] {
            assert_eq!(
                atomicity_found(&checkers_with(loss), &aborted, &history),
                caught,
                "{loss:?}"
            );
        }
        // No confirmation time: caught.
        let mut unknown_time = history.clone();
        for transaction in unknown_time.transactions.values_mut() {
            transaction.completed_ms = None;
        }
        let lost = checkers_with((500, a, STATE_PARTITION));
        assert_eq!(atomicity_found(&lost, &aborted, &unknown_time), caught);
        // A committed record gone from a durable topic's log is the record's own loss.
        let mut durable = checkers_with((500, a, STATE_PARTITION));
        durable.durable_topics.insert((a, "t".into()));
        assert_eq!(atomicity_found(&durable, &gone, &history), caught);
    }

    /// A confirmed abort whose record the final log holds committed is excused only when its
    /// producer's `__transaction_state` partition lost committed data seen between the send
    /// and the abort's confirmation, and the COMMIT that decides the record also commits a
    /// record of another transaction of the producer that was confirmed committed: the
    /// reloaded coordinator's ABORT skipped the partition and the next transaction's COMMIT
    /// closed the record (generator seed 9800000000000909). Without the loss, with a loss
    /// outside that window, or with a COMMIT no confirmed commit shares, it is caught.
    #[test]
    fn transaction_atomicity_excuses_a_record_outside_the_abort_only_when_a_later_commit_closed_it()
    {
        let (kept_tp, orphan_tp) = (TopicPartition::new("t", 0), TopicPartition::new("t", 1));
        let a = ClusterIndex(0);
        let record = |sequence, value: &str| {
            let mut builder = BatchBuilder::idempotent(1, 0, sequence);
            builder.transactional = true;
            builder.append(0, None, Some(Bytes::from(value.to_string())), vec![]);
            (builder.build(), AppendOrigin::Client)
        };
        let end = |committed| (marker(1, committed), AppendOrigin::Coordinator);
        // Transaction 3, sent at 100 and confirmed aborted at 1 000, wrote t-0 and t-1;
        // transaction 4, sent at 1 100 and confirmed committed at 1 200, wrote t-1 after it.
        let mut history = History::default();
        for (handle, tp, value, sent_ms, number) in [
            (0, &kept_tp, "a-kept", 100, 3),
            (1, &orphan_tp, "a-orphan", 100, 3),
            (2, &orphan_tp, "a-next", 1_100, 4),
        ] {
            history.sends.insert(
                (PRODUCER, 1, handle),
                send_record(tp, value, sent_ms, Some(0), Some(number)),
            );
        }
        for (number, handles, committed, completed_ms) in
            [(3, vec![0, 1], false, 1_000), (4, vec![2], true, 1_200)]
        {
            history.transactions.insert(
                (PRODUCER, 1, number),
                crate::world::workload::TransactionRecord {
                    handles,
                    intended_commit: committed,
                    committed: Some(committed),
                    completed_ms: Some(completed_ms),
                },
            );
        }
        let logs_with = |orphan_log| {
            FixedLogs(BTreeMap::from([
                (
                    kept_tp.clone(),
                    log_with(&[record(0, "a-kept"), end(false)]),
                ),
                (orphan_tp.clone(), orphan_log),
            ]))
        };
        // The seed's log: the orphan, the next transaction's record, its COMMIT.
        let swept = logs_with(log_with(&[
            record(1, "a-orphan"),
            record(2, "a-next"),
            end(true),
        ]));
        let state = TopicPartition::new("__transaction_state", STATE_PARTITION);
        let lost_at = |lost_ms| {
            let mut checkers = Checkers::default();
            checkers.durable_topics.insert((a, "t".into()));
            checkers.note_loss(lost_ms, a, &state, 7, None);
            checkers
        };
        let caught = vec!["transaction-atomicity"];
        let mut no_loss = Checkers::default();
        no_loss.durable_topics.insert((a, "t".into()));
        assert_eq!(atomicity_found(&no_loss, &swept, &history), caught);
        for lost_ms in [100, 500, 1_000] {
            assert!(
                atomicity_found(&lost_at(lost_ms), &swept, &history).is_empty(),
                "{lost_ms}"
            );
        }
        for lost_ms in [50, 1_500] {
            assert_eq!(
                atomicity_found(&lost_at(lost_ms), &swept, &history),
                caught,
                "{lost_ms}"
            );
        }
        // A COMMIT that decides the orphan alone, before the next transaction's own.
        let committed_alone = logs_with(log_with(&[
            record(1, "a-orphan"),
            end(true),
            record(2, "a-next"),
            end(true),
        ]));
        assert_eq!(
            atomicity_found(&lost_at(500), &committed_alone, &history),
            caught
        );
        // The transaction sharing the COMMIT was not confirmed committed.
        for unconfirmed in [None, Some(false)] {
            let mut history = history.clone();
            let next = history.transactions.get_mut(&(PRODUCER, 1, 4)).unwrap();
            next.committed = unconfirmed;
            let found = atomicity_found(&lost_at(500), &swept, &history);
            assert!(found.contains(&"transaction-atomicity"), "{unconfirmed:?}");
        }
    }

    /// A confirmed commit whose record STOPPING's cut to the last stable offset removed is
    /// excused only when a loss of committed data of the same partition and cluster came
    /// between the send and the cut and kept the record but not everything above it (its
    /// marker): generator seed 9200000000000275, where a's failback followed b's torn power
    /// loss to 152 and a's STOPPING cut to 150. A loss before the send, one at the record's
    /// offset, one after the cut or on another cluster, and a cut above the offset excuse
    /// nothing.
    #[test]
    fn transaction_atomicity_excuses_a_stopping_cut_only_after_a_loss_left_the_transaction_open() {
        let cut_tp = TopicPartition::new("t", 1);
        let (a, b) = (ClusterIndex(0), ClusterIndex(1));
        let (history, gone) = committed_txn_with_a_record_gone();
        // (loss time, cluster, offset kept), (cut time, cut to).
        let checkers_with = |(lost_ms, cluster, kept): (i64, ClusterIndex, i64), cut| {
            checkers_with_stop_cut(|c| c.note_loss(lost_ms, cluster, &cut_tp, kept, None), cut)
        };
        // The seed's case: excused, with its mark.
        let excused = checkers_with((200, a, 1), (300, 0));
        assert!(atomicity_found(&excused, &gone, &history).is_empty());
        assert_eq!(
            excused.txn_send_gone_legally(&gone, &history.sends[&(PRODUCER, 1, 1)]),
            Some("txn-record-stop-cut-after-outcome-lost")
        );
        // The loss and the cut at the same time, both after the send: excused.
        assert!(atomicity_found(&checkers_with((200, a, 1), (200, 0)), &gone, &history).is_empty());
        for (loss, cut) in [
            ((50, a, 1), (300, 0)),  // the loss came before the send
            ((200, a, 0), (300, 0)), // the loss took the record itself
            ((400, a, 1), (300, 0)), // the cut came before the loss
            ((200, b, 1), (300, 0)), // the loss was another cluster's
            ((200, a, 2), (300, 1)), // the cut left the record's offset
        ] {
            let case = format!("{loss:?} {cut:?}");
            assert_atomicity_caught(&checkers_with(loss, cut), &gone, &history, &case);
        }
    }

    #[test]
    fn transaction_atomicity_excuses_a_stopping_cut_only_after_a_failback_cut_above_the_record() {
        let cut_tp = TopicPartition::new("t", 1);
        let (history, gone) = committed_txn_with_a_record_gone();
        let a = ClusterIndex(0);
        let stop = TruncationReason::MirrorStopAtLastStableOffset;
        // (failback cut time, reason, cut to), (stop time, stop to); the record is at 0, sent
        // at 100.
        let checkers_with = |(cut_ms, reason, to): (i64, TruncationReason, i64), stop_cut| {
            checkers_with_stop_cut(
                |c| c.note_mirror_truncation(cut_ms, a, &cut_tp, to, reason),
                stop_cut,
            )
        };
        let lme = TruncationReason::MirrorLastMirroredEpoch;
        let excused = checkers_with((200, lme, 1), (300, 0));
        assert!(atomicity_found(&excused, &gone, &history).is_empty());
        assert_eq!(
            excused.txn_send_gone_legally(&gone, &history.sends[&(PRODUCER, 1, 1)]),
            Some("txn-record-stop-cut-after-failback-cut")
        );
        let diverging = TruncationReason::MirrorDivergingEpoch;
        assert!(atomicity_found(
            &checkers_with((200, diverging, 1), (300, 0)),
            &gone,
            &history
        )
        .is_empty());
        for (cut, stop_cut) in [
            ((50, lme, 1), (300, 0)),   // the failback cut came before the send
            ((400, lme, 1), (300, 0)),  // the stop came before the failback cut
            ((200, lme, 1), (300, 1)),  // the stop left the record's offset
            ((200, stop, 1), (300, 0)), // two stop cuts: no failback took the marker
        ] {
            let case = format!("{cut:?} {stop_cut:?}");
            assert_atomicity_caught(&checkers_with(cut, stop_cut), &gone, &history, &case);
        }
    }

    /// Checkers of cluster a's durable topic `t` where `earlier` noted what came before
    /// STOPPING's cut of `t-1` to `stop_to` (its last stable offset) at `stop_ms`.
    fn checkers_with_stop_cut(
        earlier: impl FnOnce(&mut Checkers),
        (stop_ms, stop_to): (i64, i64),
    ) -> Checkers {
        let a = ClusterIndex(0);
        let mut checkers = Checkers::default();
        checkers.durable_topics.insert((a, "t".into()));
        earlier(&mut checkers);
        let stop = TruncationReason::MirrorStopAtLastStableOffset;
        checkers.note_mirror_truncation(stop_ms, a, &TopicPartition::new("t", 1), stop_to, stop);
        checkers
    }

    /// `transaction-atomicity`, and only it, caught the record `gone`.
    fn assert_atomicity_caught(
        checkers: &Checkers,
        gone: &FixedLogs,
        history: &History,
        case: &str,
    ) {
        let found = atomicity_found(checkers, gone, history);
        assert_eq!(found, vec!["transaction-atomicity"], "{case}");
    }

    #[test]
    fn group_offsets_checker_catches_a_committed_offset_going_back() {
        let mut checkers = Checkers::default();
        let tp = TopicPartition::new("t", 0);
        let observe = |checkers: &mut Checkers, offset| {
            checkers.observe_group_offset(0, (ClusterIndex(0), "g", tp.clone(), offset), false)
        };
        assert!(observe(&mut checkers, 10).is_none());
        assert!(observe(&mut checkers, 10).is_none());
        assert!(observe(&mut checkers, 25).is_none());
        let violation = observe(&mut checkers, 20).expect("25 then 20 goes back");
        assert_eq!(violation.invariant, "group-offsets-monotonic");
        assert_eq!(checkers.marks["group-offset-committed"], 3);
        // An admin reset may move it back; member commits are judged from there on.
        let reset = (ClusterIndex(0), "g", tp.clone(), 5);
        assert!(checkers.observe_group_offset(0, reset, true).is_none());
        assert!(observe(&mut checkers, 8).is_none());
        assert!(
            observe(&mut checkers, 6).is_some(),
            "a member's commit going back"
        );
    }

    #[test]
    fn a_group_offset_tombstoned_with_its_topic_is_forgotten_and_only_that_one() {
        // The coordinator deleted t's offsets with t (a tombstone): the group's next commit of
        // t-0 is of t's next life. u-0, still held, is judged as before.
        use mirrorsim::coordinator::group::OffsetAndMetadata;
        let mut checkers = Checkers::default();
        let (t, u) = (TopicPartition::new("t", 0), TopicPartition::new("u", 0));
        let cluster = ClusterIndex(0);
        let observe = |checkers: &mut Checkers, tp: &TopicPartition, offset| {
            checkers.observe_group_offset(0, (cluster, "g", tp.clone(), offset), false)
        };
        assert!(observe(&mut checkers, &t, 250).is_none());
        assert!(observe(&mut checkers, &u, 40).is_none());
        let held = OffsetAndMetadata {
            offset: 40,
            leader_epoch: 0,
            metadata: String::new(),
            commit_timestamp_ms: 0,
            by_admin: false,
            topic_id: None,
        };
        let still_held = BTreeMap::from([(u.clone(), held)]);
        checkers.forget_tombstoned_offsets(cluster, "g", &still_held);
        assert_eq!(checkers.marks["group-offsets-deleted-with-topic"], 1);
        assert!(observe(&mut checkers, &t, 49).is_none(), "t's next life");
        assert!(
            observe(&mut checkers, &u, 30).is_some(),
            "u's offset, still held, going back"
        );
        // Another group's offsets are not this group's to forget.
        let other = (cluster, "h", t.clone(), 300);
        assert!(checkers.observe_group_offset(0, other, false).is_none());
        checkers.forget_tombstoned_offsets(cluster, "g", &BTreeMap::new());
        let back = (cluster, "h", t.clone(), 299);
        assert!(checkers.observe_group_offset(0, back, false).is_some());
    }

    #[test]
    fn group_offsets_checker_excuses_one_reset_per_mirroring_truncation() {
        // Generator seeds 4, 22 and 28: b's stopped topic mirrors a again, PREPARING cuts b's
        // log to 0 below the group's committed offset, the member's fetch is out of range and
        // its next commit is the reset position.
        let mut checkers = Checkers::default();
        let (b, tp) = (ClusterIndex(1), TopicPartition::new("orders", 1));
        let observe = |checkers: &mut Checkers, time_ms, offset| {
            checkers.observe_group_offset(time_ms, (b, "g-b-orders", tp.clone(), offset), false)
        };
        assert!(observe(&mut checkers, 1_000, 30).is_none());
        let reason = TruncationReason::MirrorLastMirroredEpoch;
        checkers.note_mirror_truncation(3_570, b, &tp, 0, reason);
        // A position read before the cut may still be committed after it.
        assert!(observe(&mut checkers, 3_580, 38).is_none());
        assert!(
            observe(&mut checkers, 3_850, 0).is_none(),
            "reset after the cut"
        );
        assert_eq!(checkers.marks["mirror-truncation-reset-group-offset"], 1);
        assert!(observe(&mut checkers, 4_000, 20).is_none());
        // The cut excused one reset; a second lower commit without a new cut is caught.
        let violation = observe(&mut checkers, 4_500, 10).expect("no cut since the reset");
        assert_eq!(violation.invariant, "group-offsets-monotonic");
        // Generator seed 42: two cuts before the first reset was seen excuse two resets.
        let reason = TruncationReason::MirrorDivergingEpoch;
        checkers.note_mirror_truncation(4_600, b, &tp, 5, reason);
        checkers.note_mirror_truncation(4_600, b, &tp, 3, reason);
        assert!(observe(&mut checkers, 4_700, 5).is_none());
        assert!(observe(&mut checkers, 4_800, 3).is_none());
        assert!(observe(&mut checkers, 4_900, 2).is_some(), "both cuts used");
        // A cut of another partition, or on another cluster, excuses nothing here.
        checkers.note_mirror_truncation(5_000, b, &TopicPartition::new("orders", 0), 0, reason);
        checkers.note_mirror_truncation(5_000, ClusterIndex(0), &tp, 0, reason);
        assert!(observe(&mut checkers, 5_100, 15).is_none());
        assert!(observe(&mut checkers, 5_200, 12).is_some());
        // A cut before the group's key was first seen excuses nothing either.
        let (late, seen_from) = (TopicPartition::new("orders", 2), 6_000);
        checkers.note_mirror_truncation(5_500, b, &late, 0, reason);
        let observe_late = |checkers: &mut Checkers, time_ms, offset| {
            checkers.observe_group_offset(time_ms, (b, "g-b-orders", late.clone(), offset), false)
        };
        assert!(observe_late(&mut checkers, seen_from, 9).is_none());
        assert!(observe_late(&mut checkers, seen_from + 100, 3).is_some());
    }

    #[test]
    fn group_offsets_checker_excuses_one_lower_commit_per_member_position_reset() {
        // Generator seed 9900000000000186: a member validated the synced offset 113 against a
        // deposed leader, went back to its end offset 99 and committed 99.
        use crate::world::workload::PositionReset;
        use mirrorsim::protocol::ClientKind;
        let (b, tp) = (ClusterIndex(1), TopicPartition::new("orders", 2));
        let member = NodeId::Client(b, ClientKind::Consumer, 2);
        let outsider = NodeId::Client(b, ClientKind::Consumer, 3);
        let mut history = History::default();
        history.groups.insert(member, "resume-a-orders".into());
        let mut checkers = Checkers::default();
        let observe = |checkers: &mut Checkers, history: &History, offset| {
            checkers.note_member_resets(history);
            checkers.observe_group_offset(0, (b, "resume-a-orders", tp.clone(), offset), false)
        };
        let reset = |consumer, topic_partition: &TopicPartition, offset| PositionReset {
            consumer,
            topic_partition: topic_partition.clone(),
            previous: 113,
            offset,
        };
        assert!(observe(&mut checkers, &history, 113).is_none());
        // A reset of a consumer outside the group, of another partition, or above the commit
        // excuses nothing.
        history.position_resets.push(reset(outsider, &tp, 99));
        history
            .position_resets
            .push(reset(member, &TopicPartition::new("orders", 1), 99));
        history.position_resets.push(reset(member, &tp, 105));
        assert!(observe(&mut checkers, &history, 100).is_some());
        assert!(observe(&mut checkers, &history, 113).is_none());
        // The member's own reset to 99 excuses its commit of 99, once.
        history.position_resets.push(reset(member, &tp, 99));
        assert!(observe(&mut checkers, &history, 99).is_none());
        assert_eq!(checkers.marks["consumer-reset-group-offset"], 1);
        assert!(observe(&mut checkers, &history, 110).is_none());
        assert!(
            observe(&mut checkers, &history, 104).is_some(),
            "the reset was used"
        );
    }

    #[test]
    fn a_lost_tail_excuses_a_reset_of_a_position_first_committed_after_it() {
        // Generator seed 9200000000000275 (`regressions/group_commit_read_before_lost_tail`
        // is a shrink of it): b's orders-0 (one replica) lost everything above 71 in a power
        // loss of its leader, also g-b-orders's coordinator; the member's first commit, of the
        // position 361 it had read before, came after the restart, then its truncation check
        // moved it back and it committed 99.
        let mut checkers = Checkers::default();
        let (b, tp) = (ClusterIndex(1), TopicPartition::new("orders", 0));
        let observe = |checkers: &mut Checkers, time_ms, tp: &TopicPartition, offset| {
            checkers.observe_group_offset(time_ms, (b, "g-b-orders", tp.clone(), offset), false)
        };
        checkers.note_committed_end(11_600, b, &tp, (361, 361));
        checkers.note_committed_end(12_700, b, &tp, (71, 71));
        checkers.note_committed_end(12_800, b, &tp, (74, 74));
        assert!(observe(&mut checkers, 12_840, &tp, 361).is_none());
        assert!(
            observe(&mut checkers, 13_840, &tp, 99).is_none(),
            "reset after the loss"
        );
        assert_eq!(
            checkers.marks["cut-before-first-commit-reset-group-offset"],
            1
        );
        assert!(
            observe(&mut checkers, 14_000, &tp, 80).is_some(),
            "one loss, one reset"
        );
        // First seen at an offset the log held since the loss: read after it, not excused.
        let other = TopicPartition::new("orders", 1);
        checkers.note_committed_end(11_600, b, &other, (359, 359));
        checkers.note_committed_end(12_700, b, &other, (47, 47));
        checkers.note_committed_end(12_800, b, &other, (60, 60));
        assert!(observe(&mut checkers, 12_840, &other, 60).is_none());
        assert!(observe(&mut checkers, 13_840, &other, 50).is_some());
        // Nor without a loss: a first offset above the high watermark excuses nothing.
        let third = TopicPartition::new("orders", 2);
        checkers.note_committed_end(11_600, b, &third, (40, 40));
        assert!(observe(&mut checkers, 12_840, &third, 90).is_none());
        assert!(observe(&mut checkers, 13_840, &third, 30).is_some());
    }

    #[test]
    fn a_committed_tail_lost_on_a_topic_that_is_not_durable_excuses_one_reset() {
        // Generator seeds 1337263765019564 and …610: a's payments-1 (one replica) lost its
        // unflushed tail in a power loss of its leader, whose log came back ending at 83 below
        // the group's committed 97; the member's fetch was out of range, it reset to the log
        // start and committed 0. Seed …643: an unclean election did the same (81 below 83).
        let mut checkers = Checkers::default();
        let (a, tp) = (ClusterIndex(0), TopicPartition::new("payments", 1));
        let observe = |checkers: &mut Checkers, time_ms, offset| {
            checkers.observe_group_offset(time_ms, (a, "g-a-payments", tp.clone(), offset), false)
        };
        checkers.note_committed_end(1_000, a, &tp, (100, 98));
        assert!(observe(&mut checkers, 1_000, 97).is_none());
        // A new leader whose log reaches the high watermark seen lost nothing committed.
        checkers.note_committed_end(2_000, a, &tp, (98, 90));
        assert!(checkers.lost_tails.is_empty());
        assert!(
            observe(&mut checkers, 2_100, 50).is_some(),
            "a lower commit without a loss is caught"
        );
        assert!(observe(&mut checkers, 2_200, 97).is_none());
        // The log now ends at 83, below the 98 committed before: one reset is excused.
        checkers.note_committed_end(7_800, a, &tp, (83, 83));
        assert_eq!(checkers.lost_tails[&(a, tp.clone())], vec![(7_800, 83)]);
        assert!(
            observe(&mut checkers, 7_860, 0).is_none(),
            "reset after the loss"
        );
        assert!(observe(&mut checkers, 8_000, 40).is_none());
        assert!(
            observe(&mut checkers, 8_100, 20).is_some(),
            "one loss, one reset"
        );
        // The log growing again from there is no further loss.
        checkers.note_committed_end(8_200, a, &tp, (95, 95));
        assert_eq!(checkers.lost_tails[&(a, tp.clone())].len(), 1);
        // A mirroring truncation is noted as such, not as a lost tail too.
        let reason = TruncationReason::MirrorLastMirroredEpoch;
        checkers.note_mirror_truncation(9_000, a, &tp, 10, reason);
        checkers.note_committed_end(9_000, a, &tp, (10, 10));
        assert_eq!(checkers.lost_tails[&(a, tp.clone())].len(), 1);
        // A durable topic never loses a committed tail by the rules: nothing is excused.
        let durable = TopicPartition::new("orders", 0);
        checkers.durable_topics.insert((a, "orders".into()));
        checkers.note_committed_end(1_000, a, &durable, (100, 100));
        checkers.note_committed_end(2_000, a, &durable, (50, 50));
        assert!(!checkers.lost_tails.contains_key(&(a, durable.clone())));
        let seen = (a, "g", durable.clone(), 90);
        assert!(checkers.observe_group_offset(1_000, seen, false).is_none());
        let seen = (a, "g", durable, 0);
        assert!(checkers.observe_group_offset(2_100, seen, false).is_some());
        // A coordinator partition's lost tail excuses one lower offset per partition too.
        let (g, coordinator_losses) = (TopicPartition::new("orders", 7), 1);
        let seen = |offset| (a, "g", g.clone(), offset);
        assert!(checkers
            .observe_group_offset_with(3_000, seen(50), false, 0)
            .is_none());
        assert!(checkers
            .observe_group_offset_with(3_100, seen(40), false, coordinator_losses)
            .is_none());
        assert!(checkers
            .observe_group_offset_with(3_200, seen(30), false, coordinator_losses)
            .is_some());
        // A read the lost tail took after it was read is not held against the final log; one
        // read after the loss, or below the cut, is.
        let poll = |offset, fetched_ms| PollRecord {
            leader_epoch: 0,
            topic_partition: tp.clone(),
            offset,
            value: "a-producer-3/1/payments-1/39/x".into(),
            after_reset: false,
            received_ms: fetched_ms + 1,
            fetched_ms,
        };
        let on_b = NodeId::Client(
            ClusterIndex(1),
            mirrorsim::protocol::ClientKind::Consumer,
            1,
        );
        assert!(checkers.lost_with_tail(CONSUMER, &poll(90, 7_000)));
        assert!(!checkers.lost_with_tail(CONSUMER, &poll(90, 7_900)));
        assert!(!checkers.lost_with_tail(CONSUMER, &poll(80, 7_000)));
        assert!(!checkers.lost_with_tail(on_b, &poll(90, 7_000)));
    }

    /// A mirrored record read on b is excused only when b's mirroring cut (one that follows
    /// the source) and a loss on the cluster that wrote it both came at or below its offset
    /// after the read (generator seed 3307716073686385); either alone excuses nothing.
    #[test]
    fn mirrored_read_lost_at_origin_needs_the_cut_and_the_origins_loss_after_it() {
        let (a, b) = (ClusterIndex(0), ClusterIndex(1));
        let tp = TopicPartition::new("orders", 1);
        let on_b = NodeId::Client(b, mirrorsim::protocol::ClientKind::Consumer, 1);
        let poll = |offset, fetched_ms, value: &str| PollRecord {
            leader_epoch: 0,
            topic_partition: tp.clone(),
            offset,
            value: value.into(),
            after_reset: false,
            received_ms: fetched_ms + 1,
            fetched_ms,
        };
        let mirrored = "a-producer-1/1/orders-1/57/x";
        let mut checkers = Checkers::default();
        // b's PREPARING cut to 0 at 15 s: by design, and alone no excuse for a mirrored record.
        checkers.note_mirror_truncation(
            15_000,
            b,
            &tp,
            0,
            TruncationReason::MirrorLastMirroredEpoch,
        );
        assert!(!checkers.mirrored_read_lost_at_origin(on_b, &poll(57, 9_000, mirrored)));
        // a then loses the partition from 0 (its only replica's power loss).
        checkers.note_loss(16_000, a, &tp, 0, Some(2));
        assert!(checkers.mirrored_read_lost_at_origin(on_b, &poll(57, 9_000, mirrored)));
        // Not for a read after the cut (b fetched the record again from a), nor for b's own
        // writes (failback's rules judge those), nor for a read on a itself.
        assert!(!checkers.mirrored_read_lost_at_origin(on_b, &poll(57, 15_500, mirrored)));
        let own = "b-producer-1/1/orders-1/3/x";
        assert!(!checkers.mirrored_read_lost_at_origin(on_b, &poll(57, 9_000, own)));
        assert!(!checkers.mirrored_read_lost_at_origin(CONSUMER, &poll(57, 9_000, mirrored)));
        // STOPPING's cut to the last stable offset does not follow the source.
        let mut stopping = Checkers::default();
        stopping.note_mirror_truncation(
            15_000,
            b,
            &tp,
            0,
            TruncationReason::MirrorStopAtLastStableOffset,
        );
        stopping.note_loss(16_000, a, &tp, 0, Some(2));
        assert!(!stopping.mirrored_read_lost_at_origin(on_b, &poll(57, 9_000, mirrored)));
        // A loss at the origin above the offset read keeps the record there.
        let mut above = Checkers::default();
        above.note_mirror_truncation(15_000, b, &tp, 0, TruncationReason::MirrorLastMirroredEpoch);
        above.note_loss(16_000, a, &tp, 60, Some(2));
        assert!(!above.mirrored_read_lost_at_origin(on_b, &poll(57, 9_000, mirrored)));
        // The origin's leader log ending below its high watermark (`lost_tails`) counts too.
        let mut tail = Checkers::default();
        tail.note_mirror_truncation(15_000, b, &tp, 0, TruncationReason::MirrorLastMirroredEpoch);
        assert!(!tail.mirrored_read_lost_at_origin(on_b, &poll(57, 9_000, mirrored)));
        tail.lost_tails
            .entry((a, tp.clone()))
            .or_default()
            .push((14_900, 0));
        assert!(tail.mirrored_read_lost_at_origin(on_b, &poll(57, 9_000, mirrored)));
        assert!(!tail.mirrored_read_lost_at_origin(on_b, &poll(57, 15_000, mirrored)));
        // The origin's own mirroring cut of the record (generated seed 10100000000001314: a
        // added its own written topic to a mirror, and PREPARING cut it to 0): a follows-source
        // cut after the read, at or below the offset, counts; STOPPING's, one above the
        // offset, or one before the read does not.
        for (reason, to, cut_ms, excused) in [
            (TruncationReason::MirrorLastMirroredEpoch, 0, 16_000, true),
            (TruncationReason::MirrorDivergingEpoch, 57, 16_000, true),
            (
                TruncationReason::MirrorStopAtLastStableOffset,
                0,
                16_000,
                false,
            ),
            (TruncationReason::MirrorLastMirroredEpoch, 58, 16_000, false),
            (TruncationReason::MirrorLastMirroredEpoch, 0, 8_000, false),
        ] {
            let mut origin_cut = Checkers::default();
            let lme = TruncationReason::MirrorLastMirroredEpoch;
            origin_cut.note_mirror_truncation(15_000, b, &tp, 0, lme);
            origin_cut.note_mirror_truncation(cut_ms, a, &tp, to, reason);
            let poll = poll(57, 9_000, mirrored);
            let found = origin_cut.mirrored_read_lost_at_origin(on_b, &poll);
            assert_eq!(found, excused, "{reason:?} {to} {cut_ms}");
        }
    }

    /// A mirrored record read on b is excused when b's last-mirrored-epoch cut took its offset
    /// after the read and b never fetched the offset back from the source before the topic
    /// stopped again (generator seed 2292223553896714); a refetch, a read after the cut, a cut
    /// of another reason or b's own record excuses nothing.
    #[test]
    fn mirrored_read_cut_and_never_fetched_back_is_excused_and_only_that() {
        let b = ClusterIndex(1);
        let tp = TopicPartition::new("orders", 1);
        let on_b = NodeId::Client(b, mirrorsim::protocol::ClientKind::Consumer, 1);
        let poll = |offset, fetched_ms, value: &str| PollRecord {
            leader_epoch: 0,
            topic_partition: tp.clone(),
            offset,
            value: value.into(),
            after_reset: false,
            received_ms: fetched_ms + 1,
            fetched_ms,
        };
        let mirrored = "a-producer-1/1/orders-1/0/x";
        let mut checkers = Checkers::default();
        assert!(!checkers.mirrored_read_cut_not_refetched(on_b, &poll(0, 2_000, mirrored)));
        // b's PREPARING cut to 0 at 8 s (the lookup on a found no last mirrored epoch).
        checkers.note_mirror_truncation(
            8_000,
            b,
            &tp,
            0,
            TruncationReason::MirrorLastMirroredEpoch,
        );
        assert!(checkers.mirrored_read_cut_not_refetched(on_b, &poll(0, 2_000, mirrored)));
        assert!(checkers.mirrored_read_cut_not_refetched(on_b, &poll(5, 2_000, mirrored)));
        // Not a read after the cut, nor b's own record, nor a read on another cluster.
        assert!(!checkers.mirrored_read_cut_not_refetched(on_b, &poll(0, 8_500, mirrored)));
        let own = "b-producer-1/1/orders-1/0/x";
        assert!(!checkers.mirrored_read_cut_not_refetched(on_b, &poll(0, 2_000, own)));
        assert!(!checkers.mirrored_read_cut_not_refetched(CONSUMER, &poll(0, 2_000, mirrored)));
        // The mirror fetched 0..=3 back: those offsets are judged again, 5 still is excused.
        checkers.note_mirror_append(b, &tp, (0, 3));
        assert!(!checkers.mirrored_read_cut_not_refetched(on_b, &poll(0, 2_000, mirrored)));
        assert!(!checkers.mirrored_read_cut_not_refetched(on_b, &poll(3, 2_000, mirrored)));
        assert!(checkers.mirrored_read_cut_not_refetched(on_b, &poll(5, 2_000, mirrored)));
        // A new leader whose epoch starts at 2 never had 2..=3: they are not fetched back.
        let refetched = || {
            let mut checkers = Checkers::default();
            let reason = TruncationReason::MirrorLastMirroredEpoch;
            checkers.note_mirror_truncation(8_000, b, &tp, 0, reason);
            checkers.note_mirror_append(b, &tp, (0, 3));
            checkers
        };
        let mut elected = refetched();
        elected.forget_refetches_past(b, &tp, 2);
        assert!(elected.mirrored_read_cut_not_refetched(on_b, &poll(3, 2_000, mirrored)));
        assert!(elected.mirrored_read_cut_not_refetched(on_b, &poll(2, 2_000, mirrored)));
        assert!(!elected.mirrored_read_cut_not_refetched(on_b, &poll(1, 2_000, mirrored)));
        assert_eq!(elected.marks.get("refetch-lost-at-election"), Some(&1));
        // One starting at or past the refetched offsets keeps them.
        let mut kept = refetched();
        kept.forget_refetches_past(b, &tp, 4);
        assert!(!kept.mirrored_read_cut_not_refetched(on_b, &poll(3, 2_000, mirrored)));
        assert_eq!(kept.marks.get("refetch-lost-at-election"), None);
        // A second cut below the refetched offsets, not followed by a refetch, excuses again.
        checkers.note_mirror_truncation(
            9_000,
            b,
            &tp,
            2,
            TruncationReason::MirrorLastMirroredEpoch,
        );
        assert!(checkers.mirrored_read_cut_not_refetched(on_b, &poll(3, 2_000, mirrored)));
        assert!(!checkers.mirrored_read_cut_not_refetched(on_b, &poll(1, 2_000, mirrored)));
        // Other cuts never: STOPPING's, a diverging epoch's, a restart below the log start.
        for reason in [
            TruncationReason::MirrorStopAtLastStableOffset,
            TruncationReason::MirrorDivergingEpoch,
            TruncationReason::MirrorBelowSourceLogStart,
        ] {
            let mut other = Checkers::default();
            other.note_mirror_truncation(8_000, b, &tp, 0, reason);
            assert!(!other.mirrored_read_cut_not_refetched(on_b, &poll(0, 2_000, mirrored)));
        }
    }

    fn plain_batch(value: &str) -> mirrorsim::record::RecordBatch {
        let mut builder = BatchBuilder::default();
        builder.append(0, None, Some(Bytes::from(value.to_string())), vec![]);
        builder.build()
    }

    #[test]
    fn a_value_cursor_reads_what_record_value_at_reads_at_every_offset() {
        // Batches of several records (one with a null value), a commit marker between them,
        // a single-record batch: every offset, in order and out of order, past the end.
        let mut three = BatchBuilder::idempotent(7, 0, 0);
        three.transactional = true;
        for value in [Some("a"), None, Some("c")] {
            three.append(0, None, value.map(|v| Bytes::from(v.to_string())), vec![]);
        }
        let mut two = BatchBuilder::default();
        two.append(0, None, Some(Bytes::from_static(b"d")), vec![]);
        two.append(0, None, Some(Bytes::from_static(b"\xffe")), vec![]);
        let log = log_committed_to(
            &[
                (three.build(), AppendOrigin::Client),
                (marker(7, true), AppendOrigin::Coordinator),
                (two.build(), AppendOrigin::Client),
                (plain_batch("f"), AppendOrigin::Client),
            ],
            None,
        );
        let offsets: Vec<i64> = (-1..9).chain([5, 0, 6, 2, 7, 3, 1]).collect();
        let mut cursor = ValueCursor::default();
        for offset in offsets {
            assert_eq!(
                cursor.value_at(&log, offset),
                record_value_at(&log, offset),
                "offset {offset}"
            );
        }
        assert_eq!(
            cursor.value_at(&log, 1),
            Some(String::new()),
            "a null value"
        );
        assert_eq!(cursor.value_at(&log, 3), None, "the marker");
        assert_eq!(cursor.value_at(&log, 5), Some("\u{fffd}e".to_string()));
        assert!(record_value_at_is(&log, 5, "\u{fffd}e"));
        assert!(record_value_at_is(&log, 1, ""));
        assert!(!record_value_at_is(&log, 3, ""));
        assert!(!record_value_at_is(&log, 0, "c"));
    }

    #[test]
    fn replica_convergence_checker_catches_a_follower_that_differs_below_the_high_watermark() {
        let leader = log_with(&[
            (plain_batch("a"), AppendOrigin::Client),
            (plain_batch("b"), AppendOrigin::Client),
        ]);
        let same = log_with(&[
            (plain_batch("a"), AppendOrigin::Client),
            (plain_batch("b"), AppendOrigin::Client),
        ]);
        let different = log_with(&[
            (plain_batch("a"), AppendOrigin::Client),
            (plain_batch("X"), AppendOrigin::Client),
        ]);
        let tp = TopicPartition::new("t", 0);
        let mut out = Vec::new();
        assert_eq!(
            compare_range(
                0,
                ClusterIndex(0),
                &tp,
                BrokerId(2),
                &leader,
                &same,
                0,
                &mut out
            ),
            2
        );
        assert!(out.is_empty());
        assert_eq!(
            compare_range(
                0,
                ClusterIndex(0),
                &tp,
                BrokerId(2),
                &leader,
                &different,
                0,
                &mut out
            ),
            1
        );
        assert_eq!(out[0].invariant, "replica-convergence");
    }

    #[test]
    fn duplicate_and_order_scan_catches_a_record_written_twice_and_a_reordering() {
        let tp = TopicPartition::new("t", 0);
        let value = |n: u64| format!("a-producer-1/1/t-0/{n}/0");
        let scan_lost = |log: &PartitionLog<MemoryDirDisk>, lost_from| {
            let mut out = Vec::new();
            let excused = scan_new_records(
                0,
                ClusterIndex(0),
                &tp,
                log,
                &mut LogScan::default(),
                lost_from,
                &mut out,
            );
            (
                out.into_iter().map(|v| v.invariant).collect::<Vec<_>>(),
                excused,
            )
        };
        let scan = |log: &PartitionLog<MemoryDirDisk>| scan_lost(log, None).0;
        let in_order = log_with(&[
            (plain_batch(&value(0)), AppendOrigin::Client),
            (plain_batch(&value(1)), AppendOrigin::Client),
        ]);
        assert!(scan(&in_order).is_empty());
        let duplicated = log_with(&[
            (plain_batch(&value(0)), AppendOrigin::Client),
            (plain_batch(&value(0)), AppendOrigin::Client),
        ]);
        assert_eq!(scan(&duplicated), vec!["no-duplicates"]);
        let reordered = log_with(&[
            (plain_batch(&value(1)), AppendOrigin::Client),
            (plain_batch(&value(0)), AppendOrigin::Client),
        ]);
        assert_eq!(scan(&reordered), vec!["producer-order"]);
        // Generator seed 3307716073686358: the only replica lost the producer's records and
        // state; its pipelined record 1 came first and was accepted (no state, any sequence),
        // record 0 was re-sent after the epoch bump. Excused when record 1 is in the
        // producer's first batch in the log, at or above the loss.
        assert_eq!(scan_lost(&reordered, Some(0)), (vec![], 1));
        // The first batch may hold several records (the seed's had 113 and 114).
        let mut first_batch = BatchBuilder::default();
        for (delta, n) in [(0, 2), (1, 3)] {
            first_batch.append(delta, None, Some(Bytes::from(value(n))), vec![]);
        }
        let reordered_batch = log_with(&[
            (first_batch.build(), AppendOrigin::Client),
            (plain_batch(&value(1)), AppendOrigin::Client),
        ]);
        assert_eq!(scan_lost(&reordered_batch, Some(0)), (vec![], 1));
        // Below the loss the broker held the producer's state: caught.
        assert_eq!(scan_lost(&reordered, Some(1)).0, vec!["producer-order"]);
        // Behind a record outside the producer's first batch in the log: caught.
        let reordered_later = log_with(&[
            (plain_batch(&value(0)), AppendOrigin::Client),
            (plain_batch(&value(2)), AppendOrigin::Client),
            (plain_batch(&value(1)), AppendOrigin::Client),
        ]);
        assert_eq!(
            scan_lost(&reordered_later, Some(0)).0,
            vec!["producer-order"]
        );
        // Generator seed 9200000000000057: after the loss the broker took the producer's
        // pipelined 33 (no state) and then 34 (in sequence), and 31 came re-sent in the bumped
        // epoch: excused behind 34 although 34 is not in the first batch...
        let idempotent = |epoch: i16, sequence: i32, n: u64| {
            let mut builder = BatchBuilder::idempotent(7, epoch, sequence);
            builder.append(0, None, Some(Bytes::from(value(n))), vec![]);
            builder.build()
        };
        let resent_after_bump = log_with(&[
            (idempotent(0, 33, 33), AppendOrigin::Client),
            (idempotent(0, 34, 34), AppendOrigin::Client),
            (idempotent(1, 0, 31), AppendOrigin::Client),
        ]);
        assert_eq!(scan_lost(&resent_after_bump, Some(0)), (vec![], 1));
        // ...but not in the same producer epoch, nor without a loss.
        let same_epoch = log_with(&[
            (idempotent(0, 33, 33), AppendOrigin::Client),
            (idempotent(0, 34, 34), AppendOrigin::Client),
            (idempotent(0, 35, 31), AppendOrigin::Client),
        ]);
        assert_eq!(scan_lost(&same_epoch, Some(0)).0, vec!["producer-order"]);
        assert_eq!(
            scan_lost(&resent_after_bump, None).0,
            vec!["producer-order"]
        );
    }

    #[test]
    fn log_epoch_checker_catches_a_batch_epoch_going_back() {
        let mut storage = mirrorsim::broker::MemoryStorage::new();
        let (mut log, _) =
            PartitionLog::open(storage.open_dir("t-0"), LogConfig::default()).unwrap();
        log.append_as_leader(&plain_batch("a"), LeaderEpoch(5), AppendOrigin::Client, 0)
            .unwrap();
        // A follower-style append keeps the (lower) epoch it is given.
        log.append_as_follower(&[plain_batch("b")
            .with_base_offset(1)
            .with_partition_leader_epoch(3)])
            .unwrap();
        let mut checkers = Checkers::default();
        let node = NodeId::Broker(ClusterIndex(0), BrokerId(1));
        let mut out = Vec::new();
        checkers.check_log_epochs(0, (node, 1, TopicPartition::new("t", 0)), &log, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].invariant, "epochs-monotonic");
    }

    #[test]
    fn acked_durable_checker_catches_a_wrong_record_whenever_its_ack_arrives() {
        let tp = TopicPartition::new("t", 0);
        let log = log_with(&[
            (plain_batch("a-producer-1/1/t-0/0/0"), AppendOrigin::Client),
            (plain_batch("a-producer-2/1/t-0/0/0"), AppendOrigin::Client),
        ]);
        let mut checkers = Checkers::default();
        checkers
            .durable_topics
            .insert((ClusterIndex(0), "t".into()));
        let mut history = History::default();
        let producer = |index| NodeId::Client(ClusterIndex(0), ClientKind::Producer, index);
        // Producer 1 claims offset 1, which holds producer 2's record: a lost write.
        for (index, value) in [(1, "a-producer-1/1/t-0/0/0"), (2, "a-producer-2/1/t-0/0/0")] {
            history.sends.insert(
                (producer(index), 1, 0),
                send_record(&tp, value, 0, None, None),
            );
        }
        let step = |checkers: &mut Checkers, history: &History, full| {
            let mut out = Vec::new();
            checkers.verify_acked(0, history, full, |_, _| Some((0, &log)), &mut out);
            out.into_iter().map(|v| v.invariant).collect::<Vec<_>>()
        };
        history.record_ack((producer(2), 1, 0), 1);
        assert!(step(&mut checkers, &history, false).is_empty());
        // Acknowledged later but ordered first among the sends: still checked at once.
        history.record_ack((producer(1), 1, 0), 1);
        assert_eq!(
            step(&mut checkers, &history, false),
            vec!["acked-writes-durable"]
        );
        assert!(step(&mut checkers, &history, false).is_empty());
        // The end-of-run check looks at everything again.
        assert_eq!(
            step(&mut checkers, &history, true),
            vec!["acked-writes-durable"]
        );
    }

    #[test]
    fn unseen_checker_catches_an_acknowledged_record_no_consumer_received() {
        let tp = TopicPartition::new("t", 0);
        let mut history = History::default();
        history.subscriptions.insert(CONSUMER, vec!["t".into()]);
        history.sends.insert(
            (PRODUCER, 1, 0),
            send_record(&tp, "a-producer-1/1/t-0/0/0", 0, Some(0), None),
        );
        let found = unseen(0, &history, |_, _, _| false, no_loss, no_epochs).violations;
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].invariant, "unseen");
        history
            .polls
            .insert((CONSUMER, 1), vec![poll(&tp, 0, "a-producer-1/1/t-0/0/0")]);
        assert!(unseen(0, &history, |_, _, _| false, no_loss, no_epochs)
            .violations
            .is_empty());
    }

    #[test]
    fn a_skip_is_excused_only_when_the_log_was_rewritten_after_both_fetches() {
        // Generated seed 15600000000000068: the consumer read 58 and 60 past the reset batch at
        // 59, then PREPARING cut the log to 0 and mirrored a record to 59.
        let tp = TopicPartition::new("payments", 0);
        let consumer = CONSUMER;
        let mut checkers = Checkers::default();
        checkers.mirror_truncations.insert(
            (consumer.cluster(), tp.clone()),
            vec![(5_239, 0, TruncationReason::MirrorLastMirroredEpoch)],
        );
        let read = |fetched_ms| PollRecord {
            fetched_ms,
            received_ms: fetched_ms + 2,
            ..poll(&tp, 60, "b/1/payments-0/60/x")
        };
        assert!(checkers.skip_before_rewrite(consumer, &read(5_237), 59));
        // Fetched after the cut: the answer came from the rewritten log, which held the record.
        assert!(!checkers.skip_before_rewrite(consumer, &read(5_240), 59));
        // A cut above the skipped offset rewrote nothing there.
        checkers.mirror_truncations.insert(
            (consumer.cluster(), tp.clone()),
            vec![(5_239, 60, TruncationReason::MirrorLastMirroredEpoch)],
        );
        assert!(!checkers.skip_before_rewrite(consumer, &read(5_237), 59));
    }

    #[test]
    fn unseen_tells_another_record_read_at_the_offset_by_its_leader_epoch() {
        // The consumer read offset 5 of one history; the final log holds the acknowledged
        // record there from another. Read by offset alone, it would count as seen.
        let tp = TopicPartition::new("t", 0);
        let mut history = History::default();
        history.subscriptions.insert(CONSUMER, vec!["t".into()]);
        history.sends.insert(
            (PRODUCER, 1, 0),
            send_record(&tp, "a-producer-1/1/t-0/9/0", 0, Some(5), None),
        );
        let read_in = |leader_epoch| PollRecord {
            leader_epoch,
            ..poll(&tp, 5, "a-producer-1/1/t-0/4/0")
        };
        let final_epoch_1 =
            |_: ClusterIndex, _: &TopicPartition, offset: i64| (offset == 5).then_some(1);
        // Read in epoch 0, the final log's record there is of epoch 1: the new leader's own,
        // which KIP-320's validation sends a reader back to (`consumer_past_unclean_leader_end`
        // under `pre-kip-320`).
        history.polls.insert((CONSUMER, 1), vec![read_in(0)]);
        let report = unseen(0, &history, |_, _, _| false, no_loss, final_epoch_1);
        assert_eq!(report.violations.len(), 1, "{report:?}");
        // Read in epoch 2 over the final log's epoch 1: an older epoch's tail came back over
        // what it read, which no validation can see (generated seed 12600000000000233).
        history.polls.insert((CONSUMER, 1), vec![read_in(2)]);
        let report = unseen(0, &history, |_, _, _| false, no_loss, final_epoch_1);
        assert!(report.violations.is_empty(), "{report:?}");
        assert_eq!(report.read_newer_epoch_there, 1);
    }

    #[test]
    fn unseen_excuses_a_record_the_same_group_read_on_another_cluster_at_the_same_offset() {
        // Generated seed 9960000000000208: group `g` on b never polled b's record at offset 0;
        // `g` on a read it there (mirrored, same offset), and b's offset sync moved `g` past.
        let tp = TopicPartition::new("t", 0);
        let value = "a-producer-1/1/t-0/0/0";
        let on_b = NodeId::Client(
            ClusterIndex(1),
            mirrorsim::protocol::ClientKind::Consumer,
            1,
        );
        let mut history = History::default();
        history
            .sends
            .insert((PRODUCER, 1, 0), send_record(&tp, value, 0, Some(0), None));
        history.subscriptions.insert(CONSUMER, vec!["t".into()]);
        history.groups.insert(CONSUMER, "g".into());
        let other = |history: &History| {
            let report = unseen(0, &history.clone(), |_, _, _| false, no_loss, no_epochs);
            (report.violations, report.read_elsewhere)
        };
        // No one received it: unseen, nothing excused.
        assert_eq!(other(&history).0.len(), 1);
        assert_eq!(other(&history).1, 0);
        // Another group on b received it: still unseen for `g`.
        history.groups.insert(on_b, "h".into());
        history.polls.insert((on_b, 1), vec![poll(&tp, 0, value)]);
        assert_eq!(other(&history).0.len(), 1);
        // `g` on b received another value at that offset: still unseen.
        history.groups.insert(on_b, "g".into());
        history
            .polls
            .insert((on_b, 1), vec![poll(&tp, 0, "b-producer-1/1/t-0/0/0")]);
        assert_eq!(other(&history).0.len(), 1);
        // `g` on b received it at another offset: still unseen.
        history.polls.insert((on_b, 1), vec![poll(&tp, 1, value)]);
        assert_eq!(other(&history).0.len(), 1);
        // `g` on b received it at the same offset: excused, and counted.
        history.polls.insert((on_b, 1), vec![poll(&tp, 0, value)]);
        assert_eq!(other(&history), (vec![], 1));
    }

    #[test]
    fn a_hanging_transaction_is_excused_only_above_a_loss_on_a_topic_that_is_not_durable() {
        // Generator seed 3307716073686216: a one-replica leader's power loss kept the records
        // of a transaction at 53 but not its marker; the LSO stays there for good, as Kafka's
        // does for a hanging transaction, and READ_COMMITTED readers never get past it.
        let tp = TopicPartition::new("t", 0);
        let open = log_with(&[
            (txn_batch(4, 0), AppendOrigin::Client),
            (
                value_batch(9, "a-producer-1/1/t-0/0/0"),
                AppendOrigin::Client,
            ),
        ]);
        assert!(open.last_stable_offset() < open.high_watermark());
        let (a, mut checkers) = (ClusterIndex(0), Checkers::default());
        assert!(
            !checkers.hanging_after_loss(a, &tp, &open),
            "no loss: an open transaction is a liveness failure"
        );
        checkers.note_loss(5_000, a, &tp, 0, None);
        assert!(
            !checkers.hanging_after_loss(a, &tp, &open),
            "the loss kept nothing of the transaction: it began after the loss"
        );
        checkers.note_loss(6_000, a, &tp, 1, None);
        assert!(checkers.hanging_after_loss(a, &tp, &open));
        let send = send_record(&tp, "a-producer-1/1/t-0/0/0", 0, Some(1), None);
        let logs = FixedLogs([(tp.clone(), open)].into());
        assert!(checkers.above_hanging_txn(&logs, 1, &send));
        checkers.durable_topics.insert((a, "t".into()));
        assert!(
            !checkers.hanging_after_loss(a, &tp, &logs.0[&tp]),
            "durable: never"
        );
        assert!(!checkers.above_hanging_txn(&logs, 1, &send));
    }

    #[test]
    fn a_prepared_transaction_is_excused_only_when_a_rolled_back_coordinator_is_fenced() {
        // Generator seed 9400000000000963: b's only broker re-loaded `__transaction_state`
        // after a power loss kept it up to a PrepareCommit at producer epoch 0; events-0 kept
        // the later fencing abort's ABORT marker at epoch 1, so the resent COMMIT marker got
        // INVALID_PRODUCER_EPOCH and the coordinator dropped it, as Kafka's does.
        use mirrorsim::coordinator::transaction::TransactionState;
        let (events, audit) = (
            TopicPartition::new("events", 0),
            TopicPartition::new("audit", 0),
        );
        let metadata = TransactionMetadata {
            producer_id: 1 << 40,
            last_producer_id: -1,
            producer_epoch: 0,
            last_producer_epoch: -1,
            timeout_ms: 1_800,
            state: TransactionState::PrepareCommit,
            partitions: [events.clone()].into(),
            txn_start_ms: 0,
            last_update_ms: 0,
            next_producer_id: -1,
        };
        let bumped = |_: &TopicPartition| Some(1);
        assert!(marker_fenced_after_coordinator_rollback(
            &metadata, true, bumped
        ));
        assert!(
            !marker_fenced_after_coordinator_rollback(&metadata, false, bumped),
            "no loss at the coordinator: a stuck marker is a liveness failure"
        );
        let same = |_: &TopicPartition| Some(0);
        assert!(
            !marker_fenced_after_coordinator_rollback(&metadata, true, same),
            "the partition would take the marker: nothing fences it"
        );
        assert!(
            !marker_fenced_after_coordinator_rollback(&metadata, true, |_| None),
            "the partition knows no such producer"
        );
        let both = TransactionMetadata {
            partitions: [events.clone(), audit.clone()].into(),
            ..metadata.clone()
        };
        let one_bumped = |tp: &TopicPartition| Some(if *tp == events { 1 } else { 0 });
        assert!(
            !marker_fenced_after_coordinator_rollback(&both, true, one_bumped),
            "a partition still at the markers' epoch"
        );
    }

    #[test]
    fn a_transaction_is_excused_as_forgotten_only_after_its_coordinators_loss() {
        // Generator seed 2292223553896731: b's only broker lost, in a power loss, the
        // `__transaction_state` record enlisting a partition; the producer's records there then
        // opened a transaction (at 0 of the emptied log) its coordinator never knew of.
        use mirrorsim::coordinator::transaction::TransactionState;
        let (b, tp) = (ClusterIndex(1), TopicPartition::new("orders", 3));
        let state = TopicPartition::new("__transaction_state", 2);
        let open = log_with(&[(
            value_batch(7, "b-producer-1/1/orders-3/30/0"),
            AppendOrigin::Client,
        )]);
        assert!(open.last_stable_offset() < open.high_watermark());
        let metadata = |producer_id, state, partitions: &[&TopicPartition]| TransactionMetadata {
            producer_id,
            last_producer_id: -1,
            producer_epoch: 0,
            last_producer_epoch: -1,
            timeout_ms: 60_000,
            state,
            partitions: partitions.iter().map(|tp| (*tp).clone()).collect(),
            txn_start_ms: 0,
            last_update_ms: 0,
            next_producer_id: -1,
        };
        let (other, mut checkers) = (TopicPartition::new("orders", 4), Checkers::default());
        let judge = |checkers: &Checkers, known: Option<&TransactionMetadata>| {
            checkers.hanging_after_coordinator_loss(b, &tp, &open, |id| {
                assert_eq!(id, "b-producer-1-txn");
                Some((state.clone(), known))
            })
        };
        assert!(
            !judge(&checkers, None),
            "the coordinator lost nothing: a marker it never wrote is a liveness failure"
        );
        checkers.note_loss(
            5_000,
            b,
            &TopicPartition::new("__transaction_state", 1),
            0,
            None,
        );
        assert!(!judge(&checkers, None), "another coordinator's loss");
        checkers.note_loss(5_000, b, &state, 163, None);
        assert!(
            judge(&checkers, None),
            "the coordinator knows no such transactional id"
        );
        let completed = metadata(7, TransactionState::CompleteCommit, &[]);
        assert!(
            judge(&checkers, Some(&completed)),
            "it kept an older, completed state"
        );
        let without = metadata(7, TransactionState::Ongoing, &[&other]);
        assert!(
            judge(&checkers, Some(&without)),
            "its open transaction lacks the partition"
        );
        let rotated = metadata(8, TransactionState::Ongoing, &[&tp]);
        assert!(
            judge(&checkers, Some(&rotated)),
            "another producer id's transaction"
        );
        for state in [TransactionState::Ongoing, TransactionState::PrepareCommit] {
            let held = metadata(7, state, &[&tp, &other]);
            assert!(
                !judge(&checkers, Some(&held)),
                "the coordinator holds it open ({state:?}): it times it out or completes it"
            );
        }
        assert!(
            !checkers.hanging_after_coordinator_loss(b, &tp, &open, |_| None),
            "no loaded coordinator"
        );
        let closed = log_with(&[
            (
                value_batch(7, "b-producer-1/1/orders-3/30/0"),
                AppendOrigin::Client,
            ),
            (marker(7, true), AppendOrigin::Coordinator),
        ]);
        assert!(!checkers
            .hanging_after_coordinator_loss(b, &tp, &closed, |_| { Some((state.clone(), None)) }));
        let send = send_record(&tp, "b-producer-1/1/orders-3/30/0", 0, Some(0), None);
        let logs = FixedLogs([(tp.clone(), open)].into());
        let forgotten = BTreeSet::from([(b, tp.clone())]);
        assert!(above_forgotten_txn(&logs, &forgotten, 0, &send));
        assert!(!above_forgotten_txn(&logs, &BTreeSet::new(), 0, &send));
    }

    #[test]
    fn unseen_excuses_only_a_record_a_non_durable_topic_lost() {
        // Generator seed 12: b's acks=1 producer had offset 483 acknowledged by a leader that
        // was then cut off; the new leader's epoch started at 483 and the old leader truncated.
        let tp = TopicPartition::new("t", 0);
        let value = "a-producer-1/1/t-0/0/0";
        let send = send_record(&tp, value, 0, Some(0), None);
        let mut history = History::default();
        history.subscriptions.insert(CONSUMER, vec!["t".into()]);
        history.sends.insert((PRODUCER, 1, 0), send.clone());
        let plain = |value: &str| {
            let mut builder = BatchBuilder::idempotent(9, 0, 0);
            builder.append(0, None, Some(Bytes::from(value.to_string())), vec![]);
            (builder.build(), AppendOrigin::Client)
        };
        let replaced = FixedLogs([(tp.clone(), log_with(&[plain("another record")]))].into());
        let kept = FixedLogs([(tp.clone(), log_with(&[plain(value)]))].into());
        let mut checkers = Checkers::default();
        let lost = |checkers: &Checkers, logs: &FixedLogs| {
            unseen(
                0,
                &history,
                |offset, send, _| checkers.lost_legally(logs, offset, send),
                no_loss,
                no_epochs,
            )
            .violations
        };
        assert!(checkers.lost_legally(&replaced, 0, &send));
        assert!(
            lost(&checkers, &replaced).is_empty(),
            "gone from a non-durable topic"
        );
        // Still in the log: it must be seen, durable topic or not.
        assert_eq!(lost(&checkers, &kept)[0].invariant, "unseen");
        // A durable topic's acknowledged record is never excused.
        checkers
            .durable_topics
            .insert((ClusterIndex(0), "t".into()));
        assert!(!checkers.lost_legally(&replaced, 0, &send));
        assert_eq!(lost(&checkers, &replaced)[0].invariant, "unseen");
    }

    /// Generator seed 9300000000000389: a's only replica of orders-2 held a committed
    /// transaction's record at 116 and its COMMIT at 117; a torn power loss kept 0..117, and the
    /// producer's next transaction, under the same producer epoch, wrote 117 and an ABORT that
    /// aborted 116 too. A READ_COMMITTED group never receives 116: excused only on a topic that
    /// is not durable, for a loss after the send that kept the record and not the marker that
    /// now decides it; a READ_UNCOMMITTED reader must still receive it.
    #[test]
    fn unseen_excuses_a_committed_record_whose_commit_a_non_durable_loss_took() {
        let tp = TopicPartition::new("t", 0);
        let a = ClusterIndex(0);
        let value = "a-producer-2/1/t-0/38/t51";
        let logs = FixedLogs(BTreeMap::from([(
            tp.clone(),
            log_with(&[
                (value_batch(1, value), AppendOrigin::Client),
                (marker(1, false), AppendOrigin::Coordinator),
            ]),
        )]));
        let mut history = History::default();
        history.subscriptions.insert(CONSUMER, vec!["t".into()]);
        history.read_committed.insert(CONSUMER);
        history.sends.insert(
            (PRODUCER, 1, 0),
            send_record(&tp, value, 100, Some(0), Some(51)),
        );
        history.transactions.insert(
            (PRODUCER, 1, 51),
            crate::world::workload::TransactionRecord {
                handles: vec![0],
                intended_commit: true,
                committed: Some(true),
                completed_ms: None,
            },
        );
        let check = |losses: &[(i64, i64)], durable: bool, read_committed: bool| {
            let mut history = history.clone();
            if !read_committed {
                history.read_committed.clear();
            }
            let mut checkers = Checkers::default();
            for &(time_ms, kept) in losses {
                checkers.note_loss(time_ms, a, &tp, kept, Some(1));
            }
            if durable {
                checkers.durable_topics.insert((a, "t".into()));
            }
            unseen(
                0,
                &history,
                |offset, send, read_committed| {
                    read_committed
                        && checkers.commit_lost_not_durable(
                            &logs,
                            &mut TxnEndsMemo::default(),
                            offset,
                            send,
                        )
                },
                no_loss,
                no_epochs,
            )
            .violations
            .iter()
            .map(|v| v.invariant)
            .collect::<Vec<_>>()
        };
        assert_eq!(check(&[], false, true), vec!["unseen"]);
        // The loss after the send kept the record (offset 0) and not the marker's offset 1.
        assert!(check(&[(200, 1)], false, true).is_empty());
        // A durable topic, a READ_UNCOMMITTED reader, a loss before the send, at or below the
        // record, or above the marker: not excused.
        assert_eq!(check(&[(200, 1)], true, true), vec!["unseen"]);
        assert_eq!(check(&[(200, 1)], false, false), vec!["unseen"]);
        for loss in [(50, 1), (200, 0), (200, 2)] {
            assert_eq!(check(&[loss], false, true), vec!["unseen"], "{loss:?}");
        }
    }

    #[test]
    fn step_checkers_catch_epoch_regressions_double_leaders_and_falling_high_watermarks() {
        let mut checkers = Checkers::default();
        let cluster = ClusterIndex(0);
        let tp = TopicPartition::new("t", 0);
        assert!(checkers
            .observe_metadata_epoch(0, cluster, tp.clone(), 3)
            .is_none());
        assert!(checkers
            .observe_metadata_epoch(0, cluster, tp.clone(), 4)
            .is_none());
        let found = checkers
            .observe_metadata_epoch(0, cluster, tp.clone(), 2)
            .expect("4 then 2");
        assert_eq!(found.invariant, "epochs-monotonic");

        assert!(checkers
            .observe_leader(0, cluster, &tp, 7, BrokerId(1))
            .is_none());
        assert!(checkers
            .observe_leader(0, cluster, &tp, 7, BrokerId(1))
            .is_none());
        assert!(checkers
            .observe_leader(0, cluster, &tp, 8, BrokerId(2))
            .is_none());
        let found = checkers
            .observe_leader(0, cluster, &tp, 7, BrokerId(3))
            .expect("two leaders in 7");
        assert_eq!(found.invariant, "single-leader-per-epoch");

        let key = (NodeId::Broker(cluster, BrokerId(1)), 1, tp.clone());
        assert!(checkers
            .observe_high_watermark(0, key.clone(), (7, 10))
            .is_none());
        assert!(checkers
            .observe_high_watermark(0, key.clone(), (7, 12))
            .is_none());
        // A new leader epoch may start lower (Kafka's follower adopts its new leader's).
        assert!(checkers
            .observe_high_watermark(0, key.clone(), (8, 11))
            .is_none());
        let found = checkers
            .observe_high_watermark(0, key, (8, 9))
            .expect("11 then 9 in epoch 8");
        assert_eq!(found.invariant, "hw-monotonic");
    }

    /// Generator seed 9800000000000371: a read from a deposed leader's tail above the start of
    /// the epoch that replaced it uncleanly is excused; one below that start, one of a value
    /// the deposed log did not hold below its high watermark, one before the deposed log was
    /// seen or after it was last seen leading, and one from a deposed leader of an epoch not
    /// below the lossy one, are not.
    #[test]
    fn a_deposed_leaders_commit_counts_only_past_a_later_epochs_start_and_once_per_rise() {
        // Generated seed 9970000000000769: a-broker-3 led in epoch 0; epoch 1 began at 39 on
        // a-broker-1 (unclean); a-broker-3, told of its own ISR shrink to itself, moved its
        // high watermark to 43.
        let starts = [(0, 0), (1, 39), (2, 50)];
        assert_eq!(
            deposed_commit_past_successor(&starts, 0, 43, None),
            Some((1, 39))
        );
        // At the start, or below it: nothing committed past it.
        assert_eq!(deposed_commit_past_successor(&starts, 0, 39, None), None);
        // Already noted up to 43: only a further rise counts.
        assert_eq!(
            deposed_commit_past_successor(&starts, 0, 43, Some(43)),
            None
        );
        assert_eq!(
            deposed_commit_past_successor(&starts, 0, 44, Some(43)),
            Some((1, 39))
        );
        // The current epoch's leader, or one with no later epoch, is no zombie.
        assert_eq!(deposed_commit_past_successor(&starts, 2, 60, None), None);
        // The later epoch that began lowest is the one that lost it.
        assert_eq!(
            deposed_commit_past_successor(&[(0, 0), (2, 30), (1, 39)], 0, 43, None),
            Some((2, 30))
        );
    }

    #[test]
    fn read_from_deposed_tail_needs_its_log_above_a_lossy_start() {
        let log = log_with(&[
            (value_batch(1, "old-0"), AppendOrigin::Client),
            (value_batch(2, "old-1"), AppendOrigin::Client),
            (value_batch(3, "old-2"), AppendOrigin::Client),
            (value_batch(4, "old-3"), AppendOrigin::Client),
        ]);
        let deposed = |leader_epoch, high_watermark| DeposedLog {
            broker: BrokerId(3),
            incarnation: 1,
            leader_epoch,
            first_seen_ms: 9_950,
            last_seen_ms: 12_600,
            version: LogVersion {
                high_watermark,
                batches: log.batches_from(Offset(0)).cloned().collect(),
            },
        };
        let tp = TopicPartition::new("payments", 0);
        let read = |offset, value: &str, fetched_ms, received_ms| PollRecord {
            leader_epoch: 0,
            fetched_ms,
            received_ms,
            ..poll(&tp, offset, value)
        };
        // Epoch 1 began uncleanly at 2; the deposed leader of epoch 0 exposed up to 3.
        let starts = [(1, 2)];
        let zombie = [deposed(0, 4)];
        let excused =
            |starts: &[(i32, i64)], logs: &[DeposedLog], offset, value, fetched_ms, received_ms| {
                read_from_deposed_tail(
                    starts,
                    logs,
                    &read(offset, value, fetched_ms, received_ms),
                    |_| 0,
                )
            };
        assert!(excused(&starts, &zombie, 2, "old-2", 10_000, 10_010));
        assert!(excused(&starts, &zombie, 3, "old-3", 12_590, 12_600));
        // Below the lossy start: the new epoch's lineage holds it (or a loss excuses it).
        assert!(!excused(&starts, &zombie, 1, "old-1", 10_000, 10_010));
        // Not what the deposed log held there, or not below its high watermark.
        assert!(!excused(&starts, &zombie, 2, "new-2", 10_000, 10_010));
        let below_hw = [deposed(0, 3)];
        assert!(!excused(&starts, &below_hw, 3, "old-3", 10_000, 10_010));
        // Unless the deposed leader may have raised its high watermark past what the checks
        // saw (its successor held 0..=3 when elected), and only for the epoch given.
        let read_3 = read(3, "old-3", 10_000, 10_010);
        assert!(read_from_deposed_tail(
            &starts,
            &below_hw,
            &read_3,
            |epoch| {
                if epoch == 0 {
                    4
                } else {
                    0
                }
            }
        ));
        assert!(!read_from_deposed_tail(&starts, &below_hw, &read_3, |_| 3));
        // Outside the steps it was seen leading in its old epoch.
        assert!(!excused(&starts, &zombie, 2, "old-2", 12_700, 12_710));
        assert!(!excused(&starts, &zombie, 2, "old-2", 9_000, 9_010));
        // A leader of the lossy epoch itself (or a later one) is not deposed by it.
        let current = [deposed(1, 4)];
        assert!(!excused(&starts, &current, 2, "old-2", 10_000, 10_010));
        assert!(!excused(&[], &zombie, 2, "old-2", 10_000, 10_010));
    }

    #[test]
    fn a_jump_into_a_deposed_leaders_tail_is_excused_only_over_what_that_tail_held_nothing_at() {
        // Epoch 1 began uncleanly at 2. The deposed leader of epoch 0, not yet aware, served
        // a consumer that had read 1: its log held two COMMIT markers at 2 and 3, then "old-4".
        // The final log holds the successor's record at 2, which the consumer never saw in the
        // log it read.
        let tp = TopicPartition::new("payments", 0);
        let deposed_log = |at_3: (mirrorsim::record::RecordBatch, AppendOrigin)| {
            let log = log_with(&[
                (value_batch(1, "old-0"), AppendOrigin::Client),
                (value_batch(2, "old-1"), AppendOrigin::Client),
                (marker(1, true), AppendOrigin::Coordinator),
                at_3,
                (value_batch(3, "old-4"), AppendOrigin::Client),
            ]);
            DeposedLog {
                broker: BrokerId(3),
                incarnation: 1,
                leader_epoch: 0,
                first_seen_ms: 9_950,
                last_seen_ms: 12_600,
                version: LogVersion {
                    high_watermark: 5,
                    batches: log.batches_from(Offset(0)).cloned().collect(),
                },
            }
        };
        let key = (ClusterIndex(0), tp.clone());
        let checkers = |lossy_start: i64, at_3| {
            let mut checkers = Checkers::default();
            checkers
                .lossy_epoch_starts
                .insert(key.clone(), vec![(1, lossy_start)]);
            checkers
                .deposed_logs
                .insert(key.clone(), vec![deposed_log(at_3)]);
            checkers
        };
        let previous = poll(&tp, 1, "old-1");
        let landing = PollRecord {
            fetched_ms: 10_000,
            received_ms: 10_010,
            ..poll(&tp, 4, "old-4")
        };
        let commit_2 = || (marker(2, true), AppendOrigin::Coordinator);
        let excused = |checkers: Checkers, skipped| {
            checkers.skip_into_deposed_tail(CONSUMER, false, (&previous, &landing), skipped)
        };
        assert!(excused(checkers(2, commit_2()), 2));
        // The deposed log held a record for the consumer in the gap: a real skip there.
        let data_at_3 = (value_batch(4, "old-3"), AppendOrigin::Client);
        assert!(!excused(checkers(2, data_at_3), 2));
        // The record jumped over is below the successor's start: both lineages hold it.
        assert!(!excused(checkers(3, commit_2()), 2));
        // A landing read the deposed log does not hold is no read of its tail.
        let elsewhere = PollRecord {
            value: "new-4".into(),
            ..landing.clone()
        };
        let checkers = checkers(2, commit_2());
        assert!(!checkers.skip_into_deposed_tail(CONSUMER, false, (&previous, &elsewhere), 2));
    }

    #[test]
    fn a_deposed_leaders_read_after_a_mirror_cut_is_excused_for_own_writes_only() {
        // Generated seed 9960000000000233: c-broker-3's PREPARING in epoch 3 cut c's orders-0
        // to 0; c-broker-1, deposed in epoch 2 and not yet told, served c's own record at 1.
        let log = log_with(&[
            (
                value_batch(1, "c-producer-1/1/orders-0/0/x"),
                AppendOrigin::Client,
            ),
            (
                value_batch(2, "c-producer-1/1/orders-0/1/y"),
                AppendOrigin::Client,
            ),
            (
                value_batch(3, "a-producer-1/1/orders-0/2/z"),
                AppendOrigin::Client,
            ),
        ]);
        let tp = TopicPartition::new("orders", 0);
        let c = ClusterIndex(2);
        let consumer = NodeId::Client(c, ClientKind::Consumer, 1);
        let deposed = |leader_epoch| DeposedLog {
            broker: BrokerId(1),
            incarnation: 1,
            leader_epoch,
            first_seen_ms: 12_500,
            last_seen_ms: 12_550,
            version: LogVersion {
                high_watermark: 3,
                batches: log.batches_from(Offset(0)).cloned().collect(),
            },
        };
        let read = |offset, value: &str| PollRecord {
            leader_epoch: 0,
            fetched_ms: 12_544,
            received_ms: 12_553,
            ..poll(&tp, offset, value)
        };
        let mut checkers = Checkers::default();
        let own = read(1, "c-producer-1/1/orders-0/1/y");
        assert!(
            !checkers.read_from_deposed_leader_before_mirror_cut(consumer, &own),
            "no cut, nothing excused"
        );
        checkers
            .mirror_cut_epoch_starts
            .insert((c, tp.clone()), vec![(3, 0)]);
        checkers
            .mirror_cut_deposed_logs
            .insert((c, tp.clone()), vec![deposed(2)]);
        assert!(checkers.read_from_deposed_leader_before_mirror_cut(consumer, &own));
        // A mirrored record (a's) is never excused so, nor one the deposed log did not hold.
        let mirrored = read(2, "a-producer-1/1/orders-0/2/z");
        assert!(!checkers.read_from_deposed_leader_before_mirror_cut(consumer, &mirrored));
        let other = read(1, "c-producer-1/1/orders-0/1/other");
        assert!(!checkers.read_from_deposed_leader_before_mirror_cut(consumer, &other));
        // A leader of the cutting epoch is not deposed by it.
        checkers
            .mirror_cut_deposed_logs
            .insert((c, tp.clone()), vec![deposed(3)]);
        assert!(!checkers.read_from_deposed_leader_before_mirror_cut(consumer, &own));
    }

    #[test]
    fn poll_checkers_catch_inconsistent_backward_and_skipping_reads() {
        let tp = TopicPartition::new("t", 0);
        let logs = FixedLogs(BTreeMap::from([(
            tp.clone(),
            log_with(&[
                (plain_batch("v0"), AppendOrigin::Client),
                (plain_batch("v1"), AppendOrigin::Client),
                (plain_batch("v2"), AppendOrigin::Client),
            ]),
        )]));
        let invariants = |polls: Vec<crate::world::workload::PollRecord>| {
            let mut history = History::default();
            history.polls.insert((CONSUMER, 1), polls);
            check_polls(0, &logs, &history, &never_rewritten, &|_, _, _| false)
                .into_iter()
                .map(|v| v.invariant)
                .collect::<Vec<_>>()
        };
        assert!(invariants(vec![
            poll(&tp, 0, "v0"),
            poll(&tp, 1, "v1"),
            poll(&tp, 2, "v2")
        ])
        .is_empty());
        assert_eq!(
            invariants(vec![poll(&tp, 1, "other")]),
            vec!["inconsistent-offsets"]
        );
        assert_eq!(
            invariants(vec![poll(&tp, 1, "v1"), poll(&tp, 0, "v0")]),
            vec!["nonmonotonic-poll"]
        );
        assert_eq!(
            invariants(vec![poll(&tp, 0, "v0"), poll(&tp, 2, "v2")]),
            vec!["skipped-poll"]
        );
        // A repositioned consumer may go back.
        let mut reset = poll(&tp, 0, "v0");
        reset.after_reset = true;
        assert!(invariants(vec![poll(&tp, 1, "v1"), reset]).is_empty());
    }

    #[test]
    fn reads_a_later_failback_truncation_rewrote_are_excused_and_only_those() {
        let tp = TopicPartition::new("t", 0);
        // The final log of cluster a after a truncation rewrote everything from offset 1.
        let logs = FixedLogs(BTreeMap::from([(
            tp.clone(),
            log_with(&[
                (plain_batch("a-v0"), AppendOrigin::Client),
                (plain_batch("b-mirrored"), AppendOrigin::Client),
            ]),
        )]));
        // a's own write and a record mirrored in from b, both read at offset 1.
        let local = "a-producer-1/1/t-0/1/x";
        let mirrored = "b-producer-1/1/t-0/1/x";
        let read = |offset, value: &str, received_ms| {
            let mut record = poll(&tp, offset, value);
            record.received_ms = received_ms;
            record.fetched_ms = received_ms;
            record
        };
        let invariants = |reason, read_committed, polls: Vec<PollRecord>| {
            let mut checkers = Checkers::default();
            checkers.note_mirror_truncation(5_000, ClusterIndex(0), &tp, 1, reason);
            let rewritten = |consumer: NodeId, poll: &PollRecord| {
                checkers.rewritten_by_mirroring(consumer, read_committed, poll)
            };
            let mut history = History::default();
            history.polls.insert((CONSUMER, 1), polls);
            let mut found = check_polls(0, &logs, &history, &rewritten, &|_, _, _| false);
            found.extend(check_delivered_records(
                0,
                &logs,
                &history,
                (&rewritten, &rewritten),
                &never_lost,
            ));
            found.into_iter().map(|v| v.invariant).collect::<Vec<_>>()
        };
        let diverging = TruncationReason::MirrorDivergingEpoch;
        let before = |value| vec![read(0, "a-v0", 4_000), read(1, value, 4_000)];
        // a's own write, read before a failback cut it: the log was rewritten there by design.
        assert!(invariants(diverging, true, before(local)).is_empty());
        assert!(invariants(
            TruncationReason::MirrorLastMirroredEpoch,
            true,
            before(local)
        )
        .is_empty());
        // The same read after the cut is a real inconsistency.
        assert_eq!(
            invariants(diverging, true, vec![read(1, local, 6_000)]),
            vec!["inconsistent-offsets"]
        );
        // So is a read below the cut, whenever it happened.
        assert_eq!(
            invariants(diverging, true, vec![read(0, local, 4_000)]),
            vec!["inconsistent-offsets"]
        );
        // A mirrored record was committed at its source, which never rewrites it: a cut of it
        // while mirroring is lost committed data, never excused.
        assert_eq!(
            invariants(diverging, false, before(mirrored)),
            vec!["inconsistent-offsets"]
        );
        // STOPPING's cut to the LSO drops only open transactions, which READ_UNCOMMITTED
        // consumers may have read and READ_COMMITTED ones may not.
        let stop = TruncationReason::MirrorStopAtLastStableOffset;
        assert!(invariants(stop, false, before(mirrored)).is_empty());
        assert_eq!(
            invariants(stop, true, before(mirrored)),
            vec!["inconsistent-offsets"]
        );
    }

    /// Generator seeds 8368442226905498 and 2292223553896339: a's READ_COMMITTED consumer read
    /// a transactional record mirrored from b at offset 1; a's only replica then lost
    /// everything from offset 2 in a power loss, the transaction's COMMIT marker with it, and
    /// STOPPING cut to the last stable offset, 1, and wrote `MIRROR_PID_RESET` there. The
    /// consumer never received that control batch (it came after the read), and the record
    /// went with the lost tail. A control batch at an offset nothing rewrote after the read is
    /// still a delivered control record; a STOPPING cut with no loss between the read and it,
    /// after a loss before the read, before the loss, or after a loss at or below the record's
    /// offset (that loss's own excuse) is not excused here.
    #[test]
    fn a_stopping_cut_after_a_loss_took_the_marker_is_no_delivered_control_record() {
        let tp = TopicPartition::new("t", 0);
        let a = ClusterIndex(0);
        let logs = FixedLogs(BTreeMap::from([(
            tp.clone(),
            log_with(&[
                (plain_batch("a-v0"), AppendOrigin::Client),
                (mirror_pid_reset("b", 0), AppendOrigin::Coordinator),
            ]),
        )]));
        let mirrored = "b-producer-2/1/t-0/1/t1";
        let read = |offset, value: &str| {
            let mut record = poll(&tp, offset, value);
            record.received_ms = 4_000;
            record.fetched_ms = 4_000;
            record
        };
        let stop = TruncationReason::MirrorStopAtLastStableOffset;
        // (loss time, offset kept), (cut time, cut to, reason).
        type Loss = Option<(i64, i64)>;
        type Cut = Option<(i64, i64, TruncationReason)>;
        let checkers_with = |loss: Loss, cut: Cut| {
            let mut checkers = Checkers::default();
            if let Some((time_ms, kept)) = loss {
                checkers.note_loss(time_ms, a, &tp, kept, Some(1));
            }
            if let Some((time_ms, to, reason)) = cut {
                checkers.note_mirror_truncation(time_ms, a, &tp, to, reason);
            }
            checkers
        };
        let invariants = |loss: Loss, cut: Cut| {
            let checkers = checkers_with(loss, cut);
            let rewritten = |consumer: NodeId, poll: &PollRecord| {
                checkers.rewritten_by_mirroring(consumer, true, poll)
                    || checkers.lost_after_read(consumer, poll)
                    || checkers.stop_cut_after_outcome_lost(consumer, poll)
            };
            let replaced = |consumer: NodeId, poll: &PollRecord| {
                checkers.log_rewritten_since_read(consumer, poll)
            };
            let mut history = History::default();
            history.read_committed.insert(CONSUMER);
            history
                .polls
                .insert((CONSUMER, 1), vec![read(0, "a-v0"), read(1, mirrored)]);
            let mut found = check_polls(0, &logs, &history, &rewritten, &|_, _, _| false);
            found.extend(check_delivered_records(
                0,
                &logs,
                &history,
                (&rewritten, &replaced),
                &never_lost,
            ));
            found.into_iter().map(|v| v.invariant).collect::<Vec<_>>()
        };
        let inconsistent = vec!["inconsistent-offsets"];
        // The seeds' case: excused.
        assert!(invariants(Some((6_000, 2)), Some((7_000, 1, stop))).is_empty());
        assert!(checkers_with(Some((6_000, 2)), Some((6_000, 1, stop)))
            .stop_cut_after_outcome_lost(CONSUMER, &read(1, mirrored)));
        // Nothing rewrote offset 1 after the read: the consumer received the control record.
        assert_eq!(
            invariants(None, None),
            vec!["inconsistent-offsets", "no-control-records-delivered"]
        );
        assert_eq!(
            invariants(Some((6_000, 2)), None),
            vec!["inconsistent-offsets", "no-control-records-delivered"]
        );
        assert_eq!(
            invariants(None, Some((3_000, 1, stop))),
            vec!["inconsistent-offsets", "no-control-records-delivered"]
        );
        // The log was rewritten there after the read, but not legally: only the lost read.
        assert_eq!(invariants(None, Some((7_000, 1, stop))), inconsistent);
        assert_eq!(
            invariants(Some((3_000, 2)), Some((7_000, 1, stop))),
            inconsistent
        );
        assert_eq!(
            invariants(Some((8_000, 2)), Some((7_000, 1, stop))),
            inconsistent
        );
        let diverging = TruncationReason::MirrorDivergingEpoch;
        assert_eq!(
            invariants(Some((6_000, 2)), Some((7_000, 1, diverging))),
            inconsistent
        );
        // A loss at the record's offset is the record's own, excused as such, not by this.
        assert!(!checkers_with(Some((6_000, 1)), Some((7_000, 1, stop)))
            .stop_cut_after_outcome_lost(CONSUMER, &read(1, mirrored)));
        assert!(invariants(Some((6_000, 1)), Some((7_000, 1, stop))).is_empty());
    }

    #[test]
    fn an_unclean_leader_lacking_whole_epochs_loses_committed_data_from_where_its_log_parts() {
        // Generated seed 10100000000000735: epoch 1 began at 106 and committed up to 107; the
        // replica elected uncleanly in epoch 2 was deposed in epoch 0 and wrote on in it to
        // 143. Its start is above what was committed, but its log holds none of epoch 1.
        let tp = TopicPartition::new("t", 0);
        let a = ClusterIndex(0);
        let elected = |durable: bool, prior_epoch| {
            let mut checkers = Checkers::default();
            if durable {
                checkers.durable_topics.insert((a, "t".into()));
            }
            checkers.observe_leader_start(0, a, &tp, (0, 0), None);
            checkers.observe_leader_start(1_000, a, &tp, (1, 106), Some(0));
            checkers.committed_high.insert((a, tp.clone()), 107);
            checkers.observe_leader_start(5_000, a, &tp, (2, 143), prior_epoch);
            checkers
        };
        let unclean = elected(false, Some(0));
        assert_eq!(unclean.losses[&(a, tp.clone())], vec![(5_000, 106)]);
        assert_eq!(unclean.lossy_epoch_starts[&(a, tp.clone())], vec![(2, 106)]);
        assert_eq!(
            unclean.epoch_starts[&(a, tp.clone())].last(),
            Some(&(2, 106))
        );
        assert!(unclean
            .marks
            .contains_key("loss-kept-below-unclean-leader-start"));
        // A leader that holds epoch 1 (its batch below its start is of epoch 1), or whose
        // batch there is unknown, parts nowhere below its start: nothing committed was lost.
        for prior_epoch in [Some(1), None] {
            let clean = elected(false, prior_epoch);
            assert!(
                !clean.losses.contains_key(&(a, tp.clone())),
                "{prior_epoch:?}"
            );
            assert_eq!(clean.epoch_starts[&(a, tp.clone())].last(), Some(&(2, 143)));
        }
        // A durable topic notes no loss (acked-writes-durable judges it).
        assert!(!elected(true, Some(0)).losses.contains_key(&(a, tp.clone())));
    }

    #[test]
    fn an_unclean_leader_of_a_stopped_mirror_lacking_a_local_epoch_loses_it() {
        // Generated seed 10200000000000671: c's orders-1 mirrored up to 121 (source epochs up
        // to 1), stopped (epoch 2 from 121), and its paused leader, deposed in epoch 2 at
        // 124, wrote on to 130; epoch 3 (from 124) committed up to 160 and was lost when the
        // paused one was elected uncleanly in epoch 4 at 130.
        let tp = TopicPartition::new("t", 1);
        let c = ClusterIndex(2);
        let elected = |mirrored_end: i64, (start_offset, prior_epoch): (i64, i32)| {
            let mut checkers = Checkers::default();
            checkers.observe_leader_start(0, c, &tp, (0, 0), None);
            checkers.mirror.fold_mirrored(c, &tp, mirrored_end, 1);
            checkers.observe_leader_start(1_000, c, &tp, (2, 121), Some(1));
            checkers.observe_leader_start(2_000, c, &tp, (3, 124), Some(2));
            checkers.committed_high.insert((c, tp.clone()), 160);
            checkers.observe_leader_start(5_000, c, &tp, (4, start_offset), Some(prior_epoch));
            checkers
        };
        let unclean = elected(121, (130, 2));
        assert_eq!(unclean.losses[&(c, tp.clone())], vec![(5_000, 124)]);
        assert!(unclean
            .marks
            .contains_key("loss-kept-below-unclean-leader-start"));
        // The batch below the start is mirrored (below the mirrored end, or of a source's
        // epoch): its epoch says nothing of c's, and the loss is judged from the start.
        for (mirrored_end, below_start) in [(130, (130, 2)), (121, (130, 1))] {
            let judged = elected(mirrored_end, below_start);
            assert_eq!(
                judged.losses[&(c, tp.clone())],
                vec![(5_000, 130)],
                "{mirrored_end} {below_start:?}"
            );
            assert!(!judged
                .marks
                .contains_key("loss-kept-below-unclean-leader-start"));
        }
    }

    #[test]
    fn reads_and_jumps_a_later_loss_of_committed_data_removed_are_excused_and_only_those() {
        let tp = TopicPartition::new("t", 0);
        let a = ClusterIndex(0);
        // The final log of cluster a after its only replica lost everything from offset 1 in
        // a power loss and took new writes there.
        let logs = FixedLogs(BTreeMap::from([(
            tp.clone(),
            log_with(&[
                (plain_batch("a-v0"), AppendOrigin::Client),
                (
                    plain_batch("a-producer-1/1/t-0/9/new"),
                    AppendOrigin::Client,
                ),
            ]),
        )]));
        let read = |offset, value: &str, fetched_ms| {
            let mut record = poll(&tp, offset, value);
            record.received_ms = fetched_ms;
            record.fetched_ms = fetched_ms;
            record
        };
        // A leader starting its epoch at 1 after its leaders had committed up to 3.
        let lost_at = |durable: bool, start_offset| {
            let mut checkers = Checkers::default();
            if durable {
                checkers.durable_topics.insert((a, "t".into()));
            }
            checkers.committed_high.insert((a, tp.clone()), 3);
            checkers.observe_leader_start(5_000, a, &tp, (1, start_offset), None);
            checkers
        };
        let invariants = |checkers: &Checkers, polls: Vec<PollRecord>| {
            let rewritten = |consumer: NodeId, poll: &PollRecord| {
                checkers.rewritten_by_mirroring(consumer, false, poll)
                    || checkers.lost_after_read(consumer, poll)
            };
            let mut history = History::default();
            history.polls.insert((CONSUMER, 1), polls);
            let found = check_polls(0, &logs, &history, &rewritten, &|_, _, _| false);
            found.into_iter().map(|v| v.invariant).collect::<Vec<_>>()
        };
        let old = "b-producer-1/1/t-0/1/x"; // mirrored in: no mirroring cut excuses it
        let lost = lost_at(false, 1);
        assert_eq!(lost.losses[&(a, tp.clone())], vec![(5_000, 1)]);
        // Read before the loss, at or above what the log kept: excused, whoever wrote it.
        assert!(invariants(&lost, vec![read(1, old, 4_000)]).is_empty());
        // The same read after the loss, or below what was kept, is a real inconsistency.
        assert_eq!(
            invariants(&lost, vec![read(1, old, 6_000)]),
            vec!["inconsistent-offsets"]
        );
        assert_eq!(
            invariants(&lost, vec![read(0, old, 4_000)]),
            vec!["inconsistent-offsets"]
        );
        // A durable topic's loss, or a leader starting at the committed end, excuses nothing.
        for checkers in [lost_at(true, 1), lost_at(false, 3)] {
            assert!(checkers.losses.is_empty());
            assert_eq!(
                invariants(&checkers, vec![read(1, old, 4_000)]),
                vec!["inconsistent-offsets"]
            );
        }
        // A mirror of a's partition that cut below its log end after the loss follows it, from
        // what a kept on; one that cut before the loss does not.
        assert_eq!(lost.cut_before(a, &tp, 4, 5_000), Some(1));
        assert_eq!(lost.cut_before(a, &tp, 4, 4_999), None);
        assert_eq!(lost.cut_before(a, &tp, 1, 5_000), None);
        // So does a mirror of a source whose failback cut its own writes (a chain's middle
        // cluster mirroring again): a's PREPARING cut to 2 before the mirror's truncation.
        let mut failback = Checkers::default();
        let lme = TruncationReason::MirrorLastMirroredEpoch;
        failback.note_mirror_truncation(5_000, a, &tp, 2, lme);
        assert_eq!(failback.cut_before(a, &tp, 4, 5_000), Some(2));
        assert_eq!(failback.cut_before(a, &tp, 2, 5_000), None);
        // A jump over the new record at 1, which was sent after the read: excused only with
        // the loss after the read; a record that existed when the consumer read past it never.
        let jump = read(2, "a-v2", 4_000);
        assert!(lost.skip_over_later_write(CONSUMER, &jump, 1, Some(4_500)));
        assert!(!lost.skip_over_later_write(CONSUMER, &jump, 1, Some(3_500)));
        assert!(!lost.skip_over_later_write(CONSUMER, &jump, 1, None));
        assert!(!lost_at(false, 3).skip_over_later_write(CONSUMER, &jump, 1, Some(4_500)));
        assert!(!lost.skip_over_later_write(CONSUMER, &read(2, "a-v2", 5_500), 1, Some(5_600)));
    }

    #[test]
    fn jumps_over_a_control_batch_a_later_mirroring_truncation_rewrote_are_excused_and_only_those()
    {
        let tp = TopicPartition::new("t", 0);
        // Issue #14 with the clusters' roles swapped: cluster a's consumer read a-v0 at 0 and
        // a's own write at 2, past the MIRROR_PID_RESET a's failover wrote at 1.
        let local = "a-producer-1/1/t-0/1/x";
        let with_reset = || {
            log_with(&[
                (plain_batch("a-v0"), AppendOrigin::Client),
                (mirror_pid_reset("b", 0), AppendOrigin::Coordinator),
                (plain_batch(local), AppendOrigin::Client),
            ])
        };
        // The same jump over a data record, mirrored in from b and committed there.
        let with_record = || {
            log_with(&[
                (plain_batch("a-v0"), AppendOrigin::Client),
                (plain_batch("b-producer-1/1/t-0/0/x"), AppendOrigin::Client),
                (plain_batch(local), AppendOrigin::Client),
            ])
        };
        // The final log: when a mirrored b again, a truncation (to `cut_to`) rewrote the log
        // with b's records, so a data record now sits at 1.
        let rewritten_log = FixedLogs(BTreeMap::from([(
            tp.clone(),
            log_with(&[
                (plain_batch("a-v0"), AppendOrigin::Client),
                (plain_batch("b-producer-1/1/t-0/0/x"), AppendOrigin::Client),
                (plain_batch("b-producer-1/1/t-0/1/x"), AppendOrigin::Client),
            ]),
        )]));
        let read = |offset, value: &str| {
            let mut record = poll(&tp, offset, value);
            record.received_ms = 4_000;
            record.fetched_ms = 4_000;
            record
        };
        let invariants = |read_time_log: PartitionLog<MemoryDirDisk>, cut_ms, cut_to| {
            let mut checkers = Checkers::default();
            let mut history = History::default();
            history
                .polls
                .insert((CONSUMER, 1), vec![read(0, "a-v0"), read(2, local)]);
            // The step of the reads sees the log they were served from.
            let read_time = FixedLogs(BTreeMap::from([(tp.clone(), read_time_log)]));
            checkers.note_poll_gaps(&read_time, &history);
            let reason = TruncationReason::MirrorLastMirroredEpoch;
            checkers.note_mirror_truncation(cut_ms, ClusterIndex(0), &tp, cut_to, reason);
            let rewritten = |consumer: NodeId, poll: &PollRecord| {
                checkers.rewritten_by_mirroring(consumer, false, poll)
            };
            let skip_rewritten = |key, poll: &PollRecord, skipped| {
                checkers.skip_rewritten_by_mirroring(key, poll, skipped)
            };
            check_polls(0, &rewritten_log, &history, &rewritten, &skip_rewritten)
                .into_iter()
                .map(|v| v.invariant)
                .collect::<Vec<_>>()
        };
        // The reset was legitimately skipped, then cut after the reads (a's own write at 2 with
        // it): the record now at 1 was never in the log the consumer read.
        assert!(invariants(with_reset(), 5_000, 0).is_empty());
        assert!(invariants(with_reset(), 5_000, 1).is_empty());
        // A record the log held when the consumer jumped over it is a real skip, even though a
        // truncation later rewrote it: never excused, mirrored (committed at its source) or not.
        assert_eq!(invariants(with_record(), 5_000, 0), vec!["skipped-poll"]);
        // Without a cut after the reads, the final log is what the consumer read past.
        assert_eq!(
            invariants(with_reset(), 3_000, 0),
            vec!["inconsistent-offsets", "skipped-poll"]
        );
        // A cut above the record jumped over did not rewrite it.
        assert_eq!(invariants(with_reset(), 5_000, 2), vec!["skipped-poll"]);
    }

    /// The skip excuses for a record whose transaction's outcome changed after the read: a
    /// READ_COMMITTED consumer (or not, `read_committed`) read 0, then 3, past producer 1's
    /// record at 1 whose marker at 2 was an ABORT (`aborted`) or a COMMIT when it read; the
    /// final log has a COMMIT there. `after` notes what came after the read (a loss, a cut);
    /// `excuse` is the excuse under test. The invariants found.
    fn jump_over_a_record_decided_after_the_read(
        aborted: bool,
        read_committed: bool,
        after: impl FnOnce(&mut Checkers, ClusterIndex, &TopicPartition),
        excuse: impl Fn(&Checkers, (NodeId, u64, usize), &PollRecord, i64, Option<i64>) -> bool,
    ) -> Vec<Invariant> {
        let tp = TopicPartition::new("t", 0);
        let new = "a-producer-1/1/t-0/9/new";
        let log = |committed| {
            log_with(&[
                (plain_batch("a-v0"), AppendOrigin::Client),
                (value_batch(1, "a-aborted"), AppendOrigin::Client),
                (marker(1, committed), AppendOrigin::Coordinator),
                (plain_batch(new), AppendOrigin::Client),
            ])
        };
        let final_log = FixedLogs(BTreeMap::from([(tp.clone(), log(true))]));
        let read = |offset, value: &str| {
            let mut record = poll(&tp, offset, value);
            record.received_ms = 4_000;
            record.fetched_ms = 4_000;
            record
        };
        let mut checkers = Checkers::default();
        let mut history = History::default();
        if read_committed {
            history.read_committed.insert(CONSUMER);
        }
        history
            .polls
            .insert((CONSUMER, 1), vec![read(0, "a-v0"), read(3, new)]);
        let read_time = FixedLogs(BTreeMap::from([(tp.clone(), log(!aborted))]));
        checkers.note_poll_gaps(&read_time, &history);
        after(&mut checkers, ClusterIndex(0), &tp);
        let skip = |key, poll: &PollRecord, skipped| {
            let end = transaction_end_at(&final_log.0[&tp], skipped);
            checkers.skip_rewritten_by_mirroring(key, poll, skipped)
                || end.is_some_and(|end| excuse(&checkers, key, poll, skipped, end.decided_at))
        };
        assert_eq!(transaction_end_at(&final_log.0[&tp], 2), None);
        let found = check_polls(0, &final_log, &history, &|_, _| false, &skip);
        found.into_iter().map(|v| v.invariant).collect()
    }

    #[test]
    fn jumps_over_an_aborted_record_whose_abort_a_later_loss_took_are_excused_and_only_those() {
        // Seeds 9400000000000713, 9400000000000338: the only replica's power loss kept the
        // record at 1 but not the ABORT at 2, and the coordinator's COMMIT of the producer's
        // next transaction landed there, committing the record. A loss at `loss_ms` kept the
        // log up to `kept`.
        let invariants = |aborted, read_committed, loss: Option<(i64, i64)>| {
            let after = |checkers: &mut Checkers, a, tp: &TopicPartition| {
                if let Some((loss_ms, kept)) = loss {
                    checkers.note_loss(loss_ms, a, tp, kept, Some(1));
                }
            };
            let excuse = |checkers: &Checkers, key, poll: &PollRecord, skipped, decided_at| {
                checkers.skip_over_lost_outcome(key, poll, skipped, decided_at)
            };
            jump_over_a_record_decided_after_the_read(aborted, read_committed, after, excuse)
        };
        let caught = vec!["skipped-poll"];
        // The loss after the read kept the record and not its ABORT: excused.
        assert!(invariants(true, true, Some((5_000, 2))).is_empty());
        // No loss, a loss before the read, or one that kept the marker: caught.
        assert_eq!(invariants(true, true, None), caught);
        assert_eq!(invariants(true, true, Some((3_000, 2))), caught);
        assert_eq!(invariants(true, true, Some((5_000, 3))), caught);
        // A record committed when the consumer read past it, or one a READ_UNCOMMITTED consumer
        // jumped over, was skipped whatever the loss did since.
        assert_eq!(invariants(false, true, Some((5_000, 2))), caught);
        assert_eq!(invariants(true, false, Some((5_000, 2))), caught);
    }

    #[test]
    fn jumps_over_an_aborted_record_a_failback_then_committed_are_excused_and_only_those() {
        // Generated seed 15700000000000057: a failback cut a's log above the record and
        // mirrored the new primary's COMMIT back at 2. A mirroring truncation (`cut`: time,
        // offset, reason) came after the read.
        let invariants = |aborted, read_committed, cut: Option<(i64, i64, TruncationReason)>| {
            let after = |checkers: &mut Checkers, a, tp: &TopicPartition| {
                if let Some((cut_ms, to, reason)) = cut {
                    checkers.note_mirror_truncation(cut_ms, a, tp, to, reason);
                }
            };
            let excuse = |checkers: &Checkers, key, poll: &PollRecord, skipped, decided_at| {
                checkers.skip_over_failback_decided_outcome(key, poll, skipped, decided_at)
            };
            jump_over_a_record_decided_after_the_read(aborted, read_committed, after, excuse)
        };
        let failback = TruncationReason::MirrorLastMirroredEpoch;
        let caught = vec!["skipped-poll"];
        // PREPARING's cut after the read, above the record and at the marker: excused.
        assert!(invariants(true, true, Some((5_000, 2, failback))).is_empty());
        // No cut, a cut before the read, one above the marker, or STOPPING's cut to the last
        // stable offset (it follows no source): caught.
        assert_eq!(invariants(true, true, None), caught);
        assert_eq!(invariants(true, true, Some((3_000, 2, failback))), caught);
        assert_eq!(invariants(true, true, Some((5_000, 3, failback))), caught);
        let stop = TruncationReason::MirrorStopAtLastStableOffset;
        assert_eq!(invariants(true, true, Some((5_000, 2, stop))), caught);
        // A record committed when the consumer read past it, or one a READ_UNCOMMITTED consumer
        // jumped over, was skipped whatever the failback did since.
        assert_eq!(invariants(false, true, Some((5_000, 2, failback))), caught);
        assert_eq!(invariants(true, false, Some((5_000, 2, failback))), caught);
    }

    #[test]
    fn jumps_over_a_log_a_mirroring_cut_replaced_while_the_fetch_travelled_are_excused() {
        // Generator seed 3307716073686192: a READ_COMMITTED consumer read c's 466, then a fetch
        // was answered with the aborted transaction at 467 and c's 468, and PREPARING cut c's
        // log to 0 before the answer arrived, so the step of the read saw an empty log; the
        // final log holds a's mirrored records there.
        let tp = TopicPartition::new("t", 0);
        let local = "a-producer-1/1/t-0/1/x";
        // `seen_high_watermark`: the read version's high watermark as the checkers' last step
        // before the cut saw it.
        let read_version = |committed, seen_high_watermark| {
            log_committed_to(
                &[
                    (plain_batch("a-v0"), AppendOrigin::Client),
                    (
                        value_batch(7, "a-producer-2/1/t-0/0/t"),
                        AppendOrigin::Client,
                    ),
                    (marker(7, committed), AppendOrigin::Coordinator),
                    (plain_batch(local), AppendOrigin::Client),
                ],
                seen_high_watermark,
            )
        };
        let final_log = FixedLogs(BTreeMap::from([(
            tp.clone(),
            log_with(&[
                (plain_batch("b-producer-1/1/t-0/0/x"), AppendOrigin::Client),
                (plain_batch("b-producer-1/1/t-0/1/x"), AppendOrigin::Client),
                (plain_batch("b-producer-1/1/t-0/2/x"), AppendOrigin::Client),
                (plain_batch("b-producer-1/1/t-0/3/x"), AppendOrigin::Client),
            ]),
        )]));
        let read = |offset, value: &str, fetched_ms| {
            let mut record = poll(&tp, offset, value);
            record.fetched_ms = fetched_ms;
            record.received_ms = fetched_ms + 10;
            record
        };
        // `answered_ms`: the last step that saw the read's log; `cut_ms`: the truncation.
        let invariants_seen = |committed, read_committed, answered_ms, cut_ms, with_fix, seen| {
            let mut checkers = Checkers::default();
            let mut history = History::default();
            if read_committed {
                history.read_committed.insert(CONSUMER);
            }
            let version = FixedLogs(BTreeMap::from([(
                tp.clone(),
                read_version(committed, seen),
            )]));
            history
                .polls
                .insert((CONSUMER, 1), vec![read(0, "a-v0", 3_000)]);
            checkers.note_poll_gaps(&version, &history);
            checkers.note_log_versions(3_010, &version);
            checkers.note_log_versions(answered_ms, &version);
            let reason = TruncationReason::MirrorLastMirroredEpoch;
            checkers.note_mirror_truncation(cut_ms, ClusterIndex(0), &tp, 0, reason);
            let empty = FixedLogs(BTreeMap::from([(tp.clone(), log_with(&[]))]));
            history
                .polls
                .get_mut(&(CONSUMER, 1))
                .unwrap()
                .push(read(3, local, 4_000));
            checkers.note_poll_gaps(&empty, &history);
            checkers.note_log_versions(4_010, &empty);
            let rewritten = |consumer: NodeId, poll: &PollRecord| {
                checkers.rewritten_by_mirroring(consumer, read_committed, poll)
            };
            let skip = |(consumer, incarnation, index): (NodeId, u64, usize),
                        poll: &PollRecord,
                        skipped| {
                let previous = &history.polls[&(consumer, incarnation)][index - 1];
                checkers.skip_rewritten_by_mirroring((consumer, incarnation, index), poll, skipped)
                    || (with_fix
                        && checkers.skip_over_replaced_log(
                            consumer,
                            read_committed,
                            previous,
                            poll,
                            skipped,
                        ))
            };
            check_polls(0, &final_log, &history, &rewritten, &skip)
                .into_iter()
                .map(|v| v.invariant)
                .collect::<Vec<_>>()
        };
        let invariants = |committed, read_committed, answered_ms, cut_ms, with_fix| {
            invariants_seen(
                committed,
                read_committed,
                answered_ms,
                cut_ms,
                with_fix,
                None,
            )
        };
        // The aborted transaction held nothing for READ_COMMITTED in the log it read.
        assert!(invariants(false, true, 4_000, 4_005, true).is_empty());
        // Also when the last step before the cut saw the high watermark below the reads: the
        // reads show it had passed them when the leader answered (generated seed
        // 13600000000000283).
        assert!(invariants_seen(false, true, 4_000, 4_005, true, Some(1)).is_empty());
        assert_eq!(
            invariants_seen(true, true, 4_000, 4_005, true, Some(1)),
            vec!["skipped-poll"]
        );
        // What the step of the read saw (an empty log) excuses nothing by itself.
        assert_eq!(
            invariants(false, true, 4_000, 4_005, false),
            vec!["skipped-poll"]
        );
        // A committed transaction, or any data for READ_UNCOMMITTED, is a real skip.
        assert_eq!(
            invariants(true, true, 4_000, 4_005, true),
            vec!["skipped-poll"]
        );
        assert_eq!(
            invariants(false, false, 4_000, 4_005, true),
            vec!["skipped-poll"]
        );
        // A log replaced before the fetch was sent cannot have answered it (and the read of 3
        // after that cut is not excused either).
        assert_eq!(
            invariants(false, true, 3_010, 3_500, true),
            vec!["inconsistent-offsets", "skipped-poll"]
        );
    }

    #[test]
    fn jumps_across_a_log_a_mirroring_cut_replaced_between_the_reads_are_excused() {
        // Generator seeds 2292223553896316 and …411: the consumer read 0 and passed the
        // MIRROR_PID_RESET at 1; PREPARING cut the log to 0 and mirrored it from scratch
        // (a's 0 and 1, an ABORT marker at 2, a's 3) before its next fetch, from 2, read 3.
        let tp = TopicPartition::new("t", 0);
        let after = "a-producer-1/1/t-0/3/x";
        let before = |reset: bool| {
            let passed = if reset {
                (mirror_pid_reset("b", 0), AppendOrigin::Coordinator)
            } else {
                (plain_batch("b-producer-1/1/t-0/1/x"), AppendOrigin::Client)
            };
            log_with(&[(plain_batch("a-v0"), AppendOrigin::Client), passed])
        };
        let rewritten = |at_two: mirrorsim::record::RecordBatch| {
            log_with(&[
                (plain_batch("a-v0"), AppendOrigin::Client),
                (plain_batch("a-producer-1/1/t-0/1/x"), AppendOrigin::Client),
                (at_two, AppendOrigin::Coordinator),
                (plain_batch(after), AppendOrigin::Client),
            ])
        };
        let read = |offset, value: &str, fetched_ms| {
            let mut record = poll(&tp, offset, value);
            record.fetched_ms = fetched_ms;
            record.received_ms = fetched_ms + 10;
            record
        };
        // `cut`: a mirroring truncation (else a loss of committed data) at `cut_ms`.
        let invariants = |reset, marker_at_two, cut: bool, cut_ms, with_fix| {
            let mut checkers = Checkers::default();
            let mut history = History::default();
            let first = FixedLogs(BTreeMap::from([(tp.clone(), before(reset))]));
            history
                .polls
                .insert((CONSUMER, 1), vec![read(0, "a-v0", 1_000)]);
            checkers.note_poll_gaps(&first, &history);
            checkers.note_log_versions(1_010, &first);
            checkers.note_log_versions(2_000, &first);
            if cut {
                let reason = TruncationReason::MirrorLastMirroredEpoch;
                checkers.note_mirror_truncation(cut_ms, ClusterIndex(0), &tp, 0, reason);
            } else {
                checkers.note_loss(cut_ms, ClusterIndex(0), &tp, 0, Some(1));
            }
            let at_two = if marker_at_two {
                marker(7, false)
            } else {
                plain_batch("a-producer-1/1/t-0/2/x")
            };
            let second = FixedLogs(BTreeMap::from([(tp.clone(), rewritten(at_two))]));
            checkers.note_log_versions(3_000, &second);
            history
                .polls
                .get_mut(&(CONSUMER, 1))
                .unwrap()
                .push(read(3, after, 4_000));
            checkers.note_poll_gaps(&second, &history);
            checkers.note_log_versions(4_010, &second);
            let rewritten_read = |consumer: NodeId, poll: &PollRecord| {
                checkers.rewritten_by_mirroring(consumer, false, poll)
            };
            let skip = |(consumer, incarnation, index): (NodeId, u64, usize),
                        poll: &PollRecord,
                        skipped| {
                let previous = &history.polls[&(consumer, incarnation)][index - 1];
                let log = second.leader_log(ClusterIndex(0), &tp);
                checkers.skip_rewritten_by_mirroring((consumer, incarnation, index), poll, skipped)
                    || (with_fix
                        && checkers.skip_across_replaced_log(
                            consumer,
                            false,
                            (previous, poll),
                            skipped,
                            log,
                        ))
            };
            check_polls(0, &second, &history, &rewritten_read, &skip)
                .into_iter()
                .map(|v| v.invariant)
                .collect::<Vec<_>>()
        };
        assert!(invariants(true, true, true, 2_500, true).is_empty());
        // Without this excuse, `note_poll_gaps`' passed-then-cut rule excuses this shape too
        // since it also accepts control batches a mirroring cut's rewritten log holds up to
        // the read (the `retried_delete_mirror_took_effect` regression); the cases below are
        // refused by both (a loss comes with a leader change: neither rule takes it).
        assert!(invariants(true, true, true, 2_500, false).is_empty());
        // Data where the consumer's position stood in either version is a real skip.
        assert_eq!(
            invariants(false, true, true, 2_500, true),
            vec!["skipped-poll"]
        );
        assert_eq!(
            invariants(true, false, true, 2_500, true),
            vec!["skipped-poll"]
        );
        // A loss of committed data comes with a new leader epoch, at which a Kafka consumer
        // validates its position (KIP-320): not excused.
        assert_eq!(
            invariants(true, true, false, 2_500, true),
            vec!["skipped-poll"]
        );
        // (A cut before the first read's fetch did not replace the log it read; this harness
        // notes the cut after that read, which the passed-then-cut rule, seeing cuts in step
        // order, takes as a cut after it, so the case is not shown here: issue #14's note.)
    }

    #[test]
    fn jumps_over_control_batches_passed_before_a_cut_and_read_after_it_are_excused() {
        // Generator seed 5: the consumer read 0, fetched the MIRROR_PID_RESET at 1 (no poll),
        // then a truncation rewrote the log with b's records and its next read was b's at 2.
        let tp = TopicPartition::new("t", 0);
        let passed_reset = || {
            log_with(&[
                (plain_batch("a-v0"), AppendOrigin::Client),
                (mirror_pid_reset("b", 0), AppendOrigin::Coordinator),
            ])
        };
        let passed_data = || {
            log_with(&[
                (plain_batch("a-v0"), AppendOrigin::Client),
                (plain_batch("a-producer-1/1/t-0/1/x"), AppendOrigin::Client),
            ])
        };
        let after = "b-producer-1/1/t-0/2/x";
        let rewritten = || {
            log_with(&[
                (plain_batch("a-v0"), AppendOrigin::Client),
                (plain_batch("b-producer-1/1/t-0/1/x"), AppendOrigin::Client),
                (plain_batch(after), AppendOrigin::Client),
            ])
        };
        let read = |offset, value: &str, received_ms| {
            let mut record = poll(&tp, offset, value);
            record.received_ms = received_ms;
            record
        };
        let invariants = |before: PartitionLog<MemoryDirDisk>, cut_to: Option<i64>| {
            let mut checkers = Checkers::default();
            let mut history = History::default();
            history
                .polls
                .insert((CONSUMER, 1), vec![read(0, "a-v0", 1_000)]);
            // The steps after the first read see the log the consumer then fetched from.
            checkers.note_poll_gaps(&FixedLogs(BTreeMap::from([(tp.clone(), before)])), &history);
            if let Some(cut_to) = cut_to {
                let reason = TruncationReason::MirrorLastMirroredEpoch;
                checkers.note_mirror_truncation(3_000, ClusterIndex(0), &tp, cut_to, reason);
            }
            let rewritten = FixedLogs(BTreeMap::from([(tp.clone(), rewritten())]));
            history
                .polls
                .get_mut(&(CONSUMER, 1))
                .unwrap()
                .push(read(2, after, 4_000));
            checkers.note_poll_gaps(&rewritten, &history);
            let rewritten_read = |consumer: NodeId, poll: &PollRecord| {
                checkers.rewritten_by_mirroring(consumer, false, poll)
            };
            let skip_rewritten = |key, poll: &PollRecord, skipped| {
                checkers.skip_rewritten_by_mirroring(key, poll, skipped)
            };
            check_polls(0, &rewritten, &history, &rewritten_read, &skip_rewritten)
                .into_iter()
                .map(|v| v.invariant)
                .collect::<Vec<_>>()
        };
        assert!(invariants(passed_reset(), Some(1)).is_empty());
        assert!(invariants(passed_reset(), Some(0)).is_empty());
        // A data record past the first read is a real skip, cut or not.
        assert_eq!(invariants(passed_data(), Some(1)), vec!["skipped-poll"]);
        // Without a cut in between, the log the consumer jumped over holds data there.
        assert_eq!(invariants(passed_reset(), None), vec!["skipped-poll"]);
        // A cut above the passed range did not rewrite it.
        assert_eq!(invariants(passed_reset(), Some(2)), vec!["skipped-poll"]);
    }

    #[test]
    fn transaction_outcomes_follow_the_markers_and_resets() {
        let mut storage = mirrorsim::broker::MemoryStorage::new();
        let (mut log, _) =
            PartitionLog::open(storage.open_dir("t-0"), LogConfig::default()).unwrap();
        let mut append = |batch: &mirrorsim::record::RecordBatch, origin| {
            log.append_as_leader(batch, LeaderEpoch(0), origin, 0)
                .unwrap()
                .first_offset
        };
        let committed = append(&txn_batch(1, 0), AppendOrigin::Client);
        let aborted = append(&txn_batch(2, 0), AppendOrigin::Client);
        append(&marker(1, true), AppendOrigin::Coordinator);
        append(&marker(2, false), AppendOrigin::Coordinator);
        let orphaned = append(&txn_batch(3, 0), AppendOrigin::Client);
        append(&mirror_pid_reset("a", 0), AppendOrigin::Coordinator);
        let open = append(&txn_batch(4, 0), AppendOrigin::Client);
        let outcomes = transaction_outcomes(&log);
        assert_eq!(outcomes[&committed.0], (1, TxnOutcome::Committed));
        assert_eq!(outcomes[&aborted.0], (2, TxnOutcome::Aborted));
        assert_eq!(outcomes[&orphaned.0], (3, TxnOutcome::Open));
        assert_eq!(outcomes[&open.0], (4, TxnOutcome::Open));
        assert_eq!(outcomes.len(), 4);
    }

    #[test]
    fn liveness_catches_an_admin_op_that_never_finished() {
        use crate::scenario::AdminOpKind;
        use crate::world::admin::{AdminAction, AdminOp, AdminOpRecord, AdminOutcome};
        use mirrorsim::protocol::ErrorCode;

        let op = |index| AdminOp {
            index,
            cluster: ClusterIndex(1),
            kind: AdminOpKind::DeleteMirror,
            at_ms: 0,
            mirror: "m".into(),
            action: AdminAction::DeleteMirror,
        };
        let history = History {
            admin_ops: vec![
                AdminOpRecord {
                    op: op(0),
                    outcome: Some(AdminOutcome::answered(
                        ErrorCode::InvalidClusterMirrorState,
                        Vec::new(),
                        5,
                    )),
                },
                AdminOpRecord {
                    op: op(1),
                    outcome: None,
                },
            ],
            ..History::default()
        };
        let violations = Checkers::default().check_liveness(100, &[], &[], &history);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(violations[0].invariant, "liveness");
        assert_eq!(violations[0].cluster, Some(ClusterIndex(1)));
        assert!(
            violations[0]
                .detail
                .starts_with("admin op #1 b delete_mirror"),
            "{}",
            violations[0].detail
        );
    }
}
