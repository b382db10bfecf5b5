//! Invariant checkers. They observe the world from outside: after every step they read the
//! state machines (never changing them, except to take the brokers' event lists), and at the
//! end they compare the recorded history with the final logs (Jepsen's Kafka anomalies).
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

pub mod admin;
mod history;
mod invariants;
mod liveness;
pub mod mirror;
mod outcomes;
mod reads;
mod transactions;
mod view;

pub use invariants::{Invariant, Violation, INVARIANTS, PRECONDITION_PREFIX};
pub(crate) use view::{broker_view, current_leader};
pub use view::{BrokerView, ControllerView};

use history::{
    all_losses, check_polls, compare_range, deposed_commit_past_successor,
    first_data_offset_between, kept_below, lost_from, scan_new_records, unseen, LogScan, LossMap,
};
use liveness::{
    above_forgotten_txn, hanging_mirrored_from_source, transaction_coordinator_view,
    transaction_state_partition, unfinished_admin_ops, unfinished_transactions,
};
use outcomes::{
    transaction_end_at, transaction_ends_of, transaction_outcomes, PartitionOutcomes, TxnOutcome,
};
pub use reads::LeaderLogs;
use reads::{
    cluster_of_value, control_batches_span, control_run_before, offset_of_value, record_value_at,
    record_value_in, ViewLeaderLogs,
};
use transactions::{check_delivered_records, check_transaction_atomicity, commits_confirmed_at};

use std::collections::{BTreeMap, BTreeSet};

use mirrorsim::broker::{BrokerEvent, MemoryDirDisk, Role, TruncationReason};
use mirrorsim::coordinator::transaction::TransactionMetadata;
use mirrorsim::log::PartitionLog;
use mirrorsim::protocol::{BrokerId, ClusterIndex, NodeId, TopicPartition};

use crate::world::workload::{parse_value, History, PollRecord};

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

/// The checkers and the state they carry between steps.
#[derive(Default)]
pub struct Checkers {
    metadata_epochs: BTreeMap<(ClusterIndex, TopicPartition), i32>,
    epoch_leaders: BTreeMap<(ClusterIndex, TopicPartition, i32), BrokerId>,
    high_watermarks: BTreeMap<(NodeId, u64, TopicPartition), (i32, i64)>,
    log_epochs_checked: BTreeMap<(NodeId, u64, TopicPartition), (i64, i32)>,
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
    pub durable_topics: BTreeSet<(ClusterIndex, String)>,
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
        let at = self
            .batches
            .partition_point(|batch| batch.last_offset() < offset);
        offset < self.high_watermark
            && self
                .batches
                .get(at)
                .and_then(|batch| record_value_in(batch, offset))
                == Some(value.to_owned())
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

/// Whether `poll` read a record a deposed leader's log held below its high watermark at an
/// offset at or above the start of a later leader epoch (`lossy_starts`: (epoch, start offset)
/// of epochs that began below the committed high watermark), while it was seen leading: the
/// later epoch's lineage holds its own records from that start on, so no later log holds
/// what the deposed leader exposed there, and its truncation on learning of the election
/// drops it as the loss dropped the rest. Records below the start, or a deposed leader of an
/// epoch not below the lossy one, excuse nothing.
fn read_from_deposed_tail(
    lossy_starts: &[(i32, i64)],
    deposed: &[DeposedLog],
    poll: &PollRecord,
) -> bool {
    deposed.iter().any(|log| {
        poll.fetched_ms <= log.last_seen_ms
            && log.first_seen_ms <= poll.received_ms
            && lossy_starts
                .iter()
                .any(|&(epoch, start)| log.leader_epoch < epoch && start <= poll.offset)
            && log.version.holds(poll.offset, &poll.value)
    })
}

/// Adds what `view`'s broker, still leading in `leader_epoch`, holds in `log` from `from` on to
/// the deposed logs `kept` of its partition (see [`Checkers::note_deposed_leader_logs`]): to
/// the one it extends, or as another when its log no longer extends any (a deposed mirror
/// leader's fetcher may still cut it).
fn note_deposed_log(
    kept: &mut Vec<DeposedLog>,
    time_ms: i64,
    view: &BrokerView<'_>,
    leader_epoch: i32,
    log: &PartitionLog<MemoryDirDisk>,
    from: i64,
) {
    let broker = view.broker.broker_id();
    let extends = |deposed: &DeposedLog| {
        deposed.broker == broker
            && deposed.incarnation == view.incarnation
            && deposed.leader_epoch == leader_epoch
            && deposed.version.batches.last().is_none_or(|last| {
                log.batches_from(last.base_offset())
                    .next()
                    .is_some_and(|batch| {
                        batch.base_offset() == last.base_offset()
                            && batch.header().crc == last.header().crc
                    })
            })
    };
    let deposed = match kept.iter().position(extends) {
        Some(at) => &mut kept[at],
        None => {
            kept.push(DeposedLog {
                broker,
                incarnation: view.incarnation,
                leader_epoch,
                first_seen_ms: time_ms,
                last_seen_ms: time_ms,
                version: LogVersion::default(),
            });
            kept.last_mut().expect("just pushed")
        }
    };
    let last_base = deposed
        .version
        .batches
        .last()
        .map(|last| last.base_offset());
    for batch in log.batches_from(from) {
        if last_base.is_none_or(|base| batch.base_offset() > base) {
            deposed.version.batches.push(batch.clone());
        }
    }
    deposed.version.high_watermark = log.high_watermark();
    deposed.last_seen_ms = time_ms;
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

    /// Records a coverage mark `times` times (nothing when `times` is 0).
    fn mark_times(&mut self, name: &str, times: usize) {
        if times > 0 {
            *self.marks.entry(name.to_string()).or_default() += times as u64;
        }
    }

    /// Notes that `invariant`'s case arose (see [`Invariant`]); counted without allocating,
    /// and turned into `precondition:NAME` marks by [`Checkers::take_preconditions`].
    pub fn precondition(&mut self, invariant: Invariant) {
        *self.preconditions.entry(invariant).or_default() += 1;
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

    /// Records a mirroring truncation and forgets the acknowledged records it dropped.
    fn note_mirror_truncation(
        &mut self,
        time_ms: i64,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        to_offset: i64,
        reason: TruncationReason,
    ) {
        self.mirror_truncations
            .entry((cluster, topic_partition.clone()))
            .or_default()
            .push((time_ms, to_offset, reason));
        if reason == TruncationReason::MirrorLastMirroredEpoch {
            self.refetch_cuts
                .entry((cluster, topic_partition.clone()))
                .or_default()
                .push(RefetchCut {
                    time_ms,
                    to: to_offset,
                    refetched: Vec::new(),
                });
        }
        // A mirroring cut is noted as such, never again as a lost tail.
        if let Some(end) = self
            .committed_end
            .get_mut(&(cluster, topic_partition.clone()))
        {
            *end = (*end).min(to_offset);
        }
        for ((consumer, _, tp), passed) in &mut self.passed {
            if consumer.cluster() == cluster && tp == topic_partition && to_offset < passed.to {
                passed.cut = true;
                passed.mirror_cut = true;
            }
        }
        if let Some(records) = self
            .durable_acked
            .get_mut(&(cluster, topic_partition.clone()))
        {
            records.unverified.retain(|(offset, _)| *offset < to_offset);
            records.verified.retain(|(offset, _)| *offset < to_offset);
        }
        self.mark("mirror-truncated");
    }

    /// Notes a committed tail lost outside mirroring (see `lost_tails`): the current leader's
    /// log of a partition of a topic that is not durable ends below a high watermark a current
    /// leader showed before. A clean election never does that (every ISR member's log reaches
    /// the leader's high watermark), nor does a leader inside its epoch but for mirroring.
    fn note_committed_end(
        &mut self,
        time_ms: i64,
        cluster: ClusterIndex,
        tp: &TopicPartition,
        (log_end, high_watermark): (i64, i64),
    ) {
        if self.durable_topics.contains(&(cluster, tp.topic.clone())) {
            return;
        }
        let end = self
            .committed_end
            .entry((cluster, tp.clone()))
            .or_insert(high_watermark);
        if log_end < *end {
            *end = high_watermark;
            self.lost_tails
                .entry((cluster, tp.clone()))
                .or_default()
                .push((time_ms, log_end));
            self.mark("committed-tail-lost");
        } else {
            *end = (*end).max(high_watermark);
        }
    }

    /// Records a loss of committed data of (`cluster`, `topic_partition`) above `kept` (see
    /// [`Checkers::losses`]): reads and jumps over what the log held there before are judged
    /// against a log that no longer holds it, and a mirror of the partition may hold batches
    /// its source lost.
    fn note_loss(
        &mut self,
        time_ms: i64,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        kept: i64,
        epoch: Option<i32>,
    ) {
        self.losses
            .entry((cluster, topic_partition.clone()))
            .or_default()
            .push((time_ms, kept));
        for ((consumer, _, tp), passed) in &mut self.passed {
            if consumer.cluster() == cluster && tp == topic_partition && kept < passed.to {
                passed.cut = true;
            }
        }
        self.mirror
            .note_source_loss(cluster, topic_partition, kept, epoch);
        if topic_partition.topic == mirrorsim::mirror::coordinator::MIRROR_STATE_TOPIC {
            self.mirror.note_mirror_state_loss(time_ms, cluster);
        }
        self.mark("committed-data-lost");
    }

    /// A leader of (`cluster`, `topic_partition`) began its epoch at `start_offset`: below the
    /// highest high watermark its leaders reached (`committed_high`), committed data is gone.
    /// A clean election with intact disks never does that (every ISR member holds what the
    /// leader committed); an unclean one, or the only replica's power loss, does. On a topic
    /// that is not durable it is noted as a loss ([`Checkers::note_loss`]); on a durable one
    /// it is a lost acknowledged write, which `acked-writes-durable` reports, and nothing is
    /// excused. The epoch and its start are kept too (`lossy_epoch_starts`), for a deposed
    /// leader of a lower epoch that goes on serving (see [`Checkers::note_deposed_leader_logs`]).
    ///
    /// What the loss kept is where the new leader's log and the committed one part, which is
    /// below `start_offset` when the new leader lacks whole epochs (an unclean election of a
    /// replica that was deposed before them): `prior_epoch`, the epoch of the new leader's
    /// batch just below its start, says which it holds, and the committed log is kept only up
    /// to the start of the first later epoch, as its followers' divergence check truncates
    /// them (generated seed 10100000000000735: a-broker-2, deposed in epoch 0 at 106 and
    /// writing on to 143 in it, was elected uncleanly in epoch 2; broker 3's committed epoch
    /// 1 from 106 was lost, not only what lay above 143).
    fn observe_leader_start(
        &mut self,
        time_ms: i64,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        (leader_epoch, start_offset): (i32, i64),
        prior_epoch: Option<i32>,
    ) {
        let key = (cluster, topic_partition.clone());
        // The epoch's start as far as the logs before it are concerned: where its lineage
        // parts from theirs.
        let kept = self.kept_by_new_leader(cluster, topic_partition, start_offset, prior_epoch);
        self.epoch_starts
            .entry(key.clone())
            .or_default()
            .push((leader_epoch, kept));
        let Some(high) = self.committed_high.get_mut(&key) else {
            return;
        };
        if kept >= *high {
            return;
        }
        *high = (*high).min(start_offset);
        if !self
            .durable_topics
            .contains(&(cluster, topic_partition.topic.clone()))
        {
            self.lossy_epoch_starts
                .entry(key)
                .or_default()
                .push((leader_epoch, kept));
            if kept < start_offset {
                self.mark("loss-kept-below-unclean-leader-start");
            }
            let epoch = Some(leader_epoch);
            self.note_loss(time_ms, cluster, topic_partition, kept, epoch);
        }
    }

    /// Where a new leader's log starting its epoch at `start_offset`, whose batch below it is
    /// of `prior_epoch`, parts from the logs of the epochs it lacks: the lowest start of an
    /// epoch above `prior_epoch` seen begin below `start_offset` (see
    /// [`Checkers::observe_leader_start`]); `start_offset` when it lacks none. On a partition
    /// holding mirrored data the batch below the start tells only when it is the cluster's own,
    /// above the mirrored data and of an epoch above every mirrored one (written after the
    /// stop's bump); otherwise the loss is left at `start_offset`: mirrored batches carry the
    /// source's leader epochs, whose numbers say nothing of this cluster's (the fetcher keeps
    /// them below its own, DLE ≥ SLE). Generated seed 10200000000000671: c's orders-1 had
    /// stopped mirroring; its leader, paused and deposed in epoch 2 at 124, wrote on there to
    /// 130 and was elected uncleanly in epoch 4, lacking epoch 3's committed 124..160.
    fn kept_by_new_leader(
        &self,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        start_offset: i64,
        prior_epoch: Option<i32>,
    ) -> i64 {
        let Some(prior_epoch) = prior_epoch else {
            return start_offset;
        };
        if let Some((mirrored_end, mirrored_epoch)) =
            self.mirror.mirrored_extent(cluster, topic_partition)
        {
            if start_offset <= mirrored_end || prior_epoch <= mirrored_epoch {
                return start_offset;
            }
        }
        self.epoch_starts
            .get(&(cluster, topic_partition.clone()))
            .into_iter()
            .flatten()
            .filter(|&&(epoch, start)| epoch > prior_epoch && start < start_offset)
            .map(|&(_, start)| start)
            .fold(start_offset, i64::min)
    }

    /// Whether a loss of committed data (see [`Checkers::losses`]) of (`cluster`,
    /// `topic_partition`) at or after `since_ms` kept less than up to `offset`, so the log no
    /// longer holds what was at `offset` then.
    fn lost_since(
        &self,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        offset: i64,
        since_ms: i64,
    ) -> bool {
        let key = (cluster, topic_partition.clone());
        kept_below(
            self.losses.get(&key).into_iter().flatten().copied(),
            offset,
            since_ms,
        )
    }

    /// [`Self::lost_since`] counting committed tails lost outside mirroring too (`lost_tails`).
    fn lost_or_tail_lost_since(
        &self,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        offset: i64,
        since_ms: i64,
    ) -> bool {
        let key = (cluster, topic_partition.clone());
        kept_below(
            all_losses(&self.losses, &self.lost_tails, &key),
            offset,
            since_ms,
        )
    }

    /// Whether a loss of committed data of (`cluster`, `topic_partition`) at or after
    /// `since_ms` (a leader starting its epoch below the high watermark, `losses`, or a leader
    /// log ending below it, `lost_tails`: only on a topic that is not durable) kept the
    /// transactional record at `offset` but nothing from `decided_at` on, where the final log
    /// decides its transaction (`None`: nowhere yet). The marker a client saw decide it then
    /// (a READ_COMMITTED read past the record needs one below the last stable offset; a
    /// coordinator's commit writes one) may be what the loss took, and the final log's marker
    /// is another written since: with one replica and its unflushed tail lost, the broker's
    /// rebuilt producer state still holds the transaction open from the record on, and the
    /// producer's next marker (an abort, say) closes it, as in Kafka. A loss at or below the
    /// record's offset is the record's own, judged by the excuses for a lost record; a loss
    /// above the marker left the verdict in place.
    fn outcome_lost_since(
        &self,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        offset: i64,
        decided_at: Option<i64>,
        since_ms: i64,
    ) -> bool {
        let key = (cluster, topic_partition.clone());
        let decided_at = decided_at.unwrap_or(i64::MAX);
        all_losses(&self.losses, &self.lost_tails, &key)
            .any(|(time_ms, kept)| since_ms <= time_ms && offset < kept && kept <= decided_at)
    }

    /// The lowest offset from which (`cluster`, `topic_partition`) lost committed data, if it
    /// did (see [`lost_from`]).
    fn lost_from(&self, cluster: ClusterIndex, topic_partition: &TopicPartition) -> Option<i64> {
        lost_from(&self.losses, &self.lost_tails, cluster, topic_partition)
    }

    /// The lowest offset below `log_end` from which (`source`, `topic_partition`) dropped its
    /// data at or before `time_ms`, if it did: a loss of committed data, or a mirroring
    /// truncation (a failback of the source cutting its own unmirrored writes, which a mirror
    /// of it may have fetched).
    fn cut_before(
        &self,
        source: ClusterIndex,
        topic_partition: &TopicPartition,
        log_end: i64,
        time_ms: i64,
    ) -> Option<i64> {
        let key = (source, topic_partition.clone());
        let lost = self.losses.get(&key).into_iter().flatten().copied();
        let cut = (self.mirror_truncations.get(&key).into_iter().flatten())
            .map(|&(cut_ms, to, _)| (cut_ms, to));
        lost.chain(cut)
            .filter(|&(cut_ms, kept)| cut_ms <= time_ms && kept < log_end)
            .map(|(_, kept)| kept)
            .min()
    }

    /// Whether a mirroring truncation of (`cluster`, `topic_partition`) for which `legal`
    /// holds cut at or below `offset` at or after `since_ms`.
    fn cut_by_mirroring(
        &self,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        offset: i64,
        since_ms: i64,
        legal: impl Fn(TruncationReason) -> bool,
    ) -> bool {
        self.mirror_truncations
            .get(&(cluster, topic_partition.clone()))
            .is_some_and(|truncations| {
                truncations.iter().any(|&(time_ms, to, reason)| {
                    since_ms <= time_ms && offset >= to && legal(reason)
                })
            })
    }

    /// Whether mirroring dropped this acknowledged send by design (see `mirror_truncations`).
    fn dropped_by_mirroring(&self, offset: i64, send: &crate::world::workload::SendRecord) -> bool {
        let cluster = cluster_of_value(&send.value);
        self.cut_by_mirroring(cluster, &send.topic_partition, offset, send.sent_ms, |_| {
            true
        })
    }

    /// Whether a failback cut this acknowledged transactional send out of its own cluster's log
    /// by design: a mirroring truncation of the producer's cluster that follows a source
    /// (PREPARING's last-mirrored-epoch cut, the first mirror fetch's diverging epoch, or a
    /// restart below the source's log start) came at or below the offset it was acknowledged
    /// at, after it was sent. KIP-1279's failback drops the old primary's unmirrored writes,
    /// committed transactions included (the coordinator confirms a commit once PrepareCommit
    /// is written; the partitions' markers are refused from PREPARING on, and the records go
    /// with the cut). STOPPING's cut to the last stable offset is not one of them: it drops
    /// open transactions only, never one the coordinator confirmed, unless a loss of committed
    /// data took its marker first (`txn_send_stop_cut_after_outcome_lost`). The caller checks
    /// that the record is gone from the final log (a record the failback mirrored back is
    /// judged by its markers as any other).
    fn txn_send_cut_by_failback(&self, send: &crate::world::workload::SendRecord) -> bool {
        let Some(offset) = send.acked_offset else {
            return false;
        };
        let cluster = cluster_of_value(&send.value);
        let legal = |reason| {
            matches!(
                reason,
                TruncationReason::MirrorLastMirroredEpoch
                    | TruncationReason::MirrorDivergingEpoch
                    | TruncationReason::MirrorBelowSourceLogStart
            )
        };
        self.cut_by_mirroring(cluster, &send.topic_partition, offset, send.sent_ms, legal)
    }

    /// Whether STOPPING's cut to the last stable offset dropped this acknowledged
    /// transactional send from its own cluster's log after a loss of committed data there had
    /// left its transaction open: a loss at or after the send kept the record's offset but not
    /// its COMMIT marker, so the transaction is open from the record on, the last stable
    /// offset stays at or below it, and STOPPING drops open transactions by design
    /// ([`Checkers::stop_cut_after_loss`], the send's counterpart of
    /// `stop_cut_after_outcome_lost`). On a durable topic such a loss comes only from a source
    /// mirrored in: a failback's diverging-epoch cut following the new primary's own loss
    /// (`consume_events` notes it, `note_loss`). Generator seed 9200000000000275: b mirrored
    /// a's committed transaction whole (record at 150, COMMIT at 153 of orders-1), b's only
    /// replica (replication factor 1) came back from a torn power loss ending at 152, so b
    /// held the record open; a's failback cut to b's diverging epoch at 152, taking a's own
    /// COMMIT, and a's STOPPING cut to its last stable offset 150 took the record. The
    /// failback reproduced what b held, and b's topic was not durable. A STOPPING cut with no
    /// such loss between the send and the cut excuses nothing, nor a loss at or below the
    /// record's offset (the record's own, judged by the other excuses).
    fn txn_send_stop_cut_after_outcome_lost(
        &self,
        send: &crate::world::workload::SendRecord,
    ) -> bool {
        let Some(offset) = send.acked_offset else {
            return false;
        };
        let key = (cluster_of_value(&send.value), send.topic_partition.clone());
        self.stop_cut_after_loss(&key, offset, send.sent_ms)
    }

    /// Whether STOPPING's cut to the last stable offset dropped this acknowledged
    /// transactional send from its own cluster's log after a failback's cut (one that follows
    /// the source: last-mirrored-epoch lookup, diverging epoch, restart below the source's log
    /// start) had come above the record, after the send: that cut removed the old primary's
    /// unmirrored marker and kept the record, so its transaction was open from the record on,
    /// and STOPPING drops open transactions, finishing the failback's cut (the next mirror
    /// fetch would have: the record was never mirrored either). Generated seed
    /// 9990000000000710 under `tail-unverified`: a's epoch 0 held both the prefix b mirrored
    /// (..=66) and a's own later transaction (records 67, 68, COMMIT 69 written by a's next
    /// leader); PREPARING's lookup gave epoch 0 and the cut went to the end of a's epoch 0 (69),
    /// taking the COMMIT only; a's topic was removed before its first fetch, and STOPPING's
    /// cut to its last stable offset 67 took the records of a transaction a's coordinator had
    /// confirmed. A STOPPING cut with no such failback cut between the send and it excuses
    /// nothing, nor a failback cut at or below the record (`txn_send_cut_by_failback` judges
    /// that one).
    fn txn_send_stop_cut_after_failback_cut(
        &self,
        send: &crate::world::workload::SendRecord,
    ) -> bool {
        let Some(offset) = send.acked_offset else {
            return false;
        };
        let key = (cluster_of_value(&send.value), send.topic_partition.clone());
        let Some(cuts) = self.mirror_truncations.get(&key) else {
            return false;
        };
        cuts.iter().any(|&(stop_ms, stop_to, reason)| {
            reason == TruncationReason::MirrorStopAtLastStableOffset
                && send.sent_ms <= stop_ms
                && stop_to <= offset
                && cuts.iter().any(|&(cut_ms, to, reason)| {
                    reason.follows_source()
                        && send.sent_ms <= cut_ms
                        && cut_ms <= stop_ms
                        && offset < to
                })
        })
    }

    /// Whether a failback decided how the transaction of the record at `offset` (sent at
    /// `since_ms`) ended in its own cluster's log: a mirroring cut that follows the source
    /// (PREPARING's last-mirrored-epoch cut, a diverging epoch, a restart below the source's log
    /// start) came after the send, above the record and at or below the control batch that
    /// decided it (`decided_at`). That batch is then the new primary's, mirrored back: under
    /// `abort-markers` its stop ABORTs the transactions it had mirrored open (the fetcher reads
    /// up to the source's high watermark), and the failback cuts the old primary's own COMMIT
    /// with the rest of its unmirrored writes, as the seed's cut to the last stable offset
    /// loses the same commit by removing the records (`txn-record-cut-by-failback`; generated
    /// seeds 7 and 20 under `abort-markers`).
    fn outcome_decided_by_failback_source(
        &self,
        cluster: ClusterIndex,
        tp: &TopicPartition,
        offset: i64,
        decided_at: Option<i64>,
        since_ms: i64,
    ) -> bool {
        let Some(marker) = decided_at else {
            return false;
        };
        self.mirror_truncations
            .get(&(cluster, tp.clone()))
            .is_some_and(|cuts| {
                cuts.iter().any(|&(time_ms, to, reason)| {
                    since_ms <= time_ms && offset < to && to <= marker && reason.follows_source()
                })
            })
    }

    /// Whether a transactional send gone from its final log may be gone by design, and then
    /// the coverage mark saying why: `txn-record-cut-by-failback`
    /// ([`Checkers::txn_send_cut_by_failback`]), `txn-record-stop-cut-after-outcome-lost`
    /// ([`Checkers::txn_send_stop_cut_after_outcome_lost`]),
    /// `txn-record-stop-cut-after-failback-cut`
    /// ([`Checkers::txn_send_stop_cut_after_failback_cut`]) or `txn-record-lost-not-durable`
    /// ([`Checkers::txn_send_lost_not_durable`]: its topic is not durable, a loss of committed
    /// data came at or below its offset after the send, and the log no longer holds it there).
    fn txn_send_gone_legally(
        &self,
        logs: &dyn LeaderLogs,
        send: &crate::world::workload::SendRecord,
    ) -> Option<&'static str> {
        if self.txn_send_cut_by_failback(send) {
            Some("txn-record-cut-by-failback")
        } else if self.txn_send_stop_cut_after_outcome_lost(send) {
            Some("txn-record-stop-cut-after-outcome-lost")
        } else if self.txn_send_stop_cut_after_failback_cut(send) {
            Some("txn-record-stop-cut-after-failback-cut")
        } else if self.txn_send_lost_not_durable(logs, send) {
            Some("txn-record-lost-not-durable")
        } else {
            None
        }
    }

    /// Whether a loss of committed data took this acknowledged transactional send from a topic
    /// that is not durable: the log no longer holds it at its offset ([`Checkers::lost_legally`])
    /// and a loss was seen at or below that offset after the send (a leader starting its epoch
    /// below the high watermark, or a leader's log ending below it: `losses`, `lost_tails`). A
    /// transactional producer always acknowledges with acks=all, so its record was committed
    /// and only such a loss takes it; a topic that is not durable permits the loss but is not
    /// its cause. Without the loss the record went another way, which the other excuses judge:
    /// generator seed 5 under `markers-refused-before-cut` (a reverse mirror on b while c still
    /// mirrored payments from b; the COMMIT markers of b's transaction were refused, PREPARING
    /// failed on the loop without cutting, and STOPPING's cut to the last stable offset took the
    /// records of a transaction its producer was told was committed) was excused here because
    /// b's payments has `min.insync.replicas` 1.
    fn txn_send_lost_not_durable(
        &self,
        logs: &dyn LeaderLogs,
        send: &crate::world::workload::SendRecord,
    ) -> bool {
        let Some(offset) = send.acked_offset else {
            return false;
        };
        let cluster = cluster_of_value(&send.value);
        self.lost_legally(logs, offset, send)
            && self.lost_or_tail_lost_since(cluster, &send.topic_partition, offset, send.sent_ms)
    }

    /// Whether a truncation that may legally cut what `consumer` read in `poll` came at or
    /// below its offset at or after the read, so the final log may hold other data there:
    /// - any mirroring truncation, when the record was written on the consumer's own cluster:
    ///   a failback drops the old primary's writes since it stopped, which its consumers may
    ///   have read (KIP-1279 §failback; the cut comes from the last-mirrored-epoch lookup or the
    ///   first mirror fetch's diverging epoch);
    /// - STOPPING's cut to the last stable offset, for a READ_UNCOMMITTED consumer, which may
    ///   have read the open transactions it drops.
    ///
    /// A record the cluster mirrored in is never excused otherwise: the mirror copies only what
    /// the source committed, which a clean source never rewrites. That is how chain seed
    /// 10022's lost committed records were caught.
    fn rewritten_by_mirroring(
        &self,
        consumer: NodeId,
        read_committed: bool,
        poll: &PollRecord,
    ) -> bool {
        let cluster = consumer.cluster();
        let local_write = cluster_of_value(&poll.value) == cluster;
        let legal = |reason| match reason {
            TruncationReason::MirrorStopAtLastStableOffset => local_write || !read_committed,
            _ => local_write,
        };
        let (tp, offset) = (&poll.topic_partition, poll.offset);
        // From the fetch's sending on: the broker may have read its log at any time before
        // the answer arrived, so a truncation while it travelled counts as after the read.
        self.cut_by_mirroring(cluster, tp, offset, poll.fetched_ms, legal)
    }

    /// Whether a committed tail lost outside mirroring (see `lost_tails`: a topic that is not
    /// durable, an unclean election or a power loss of the replicas holding the tail) took the
    /// offset `consumer` read, after it read it: Kafka lets such a topic lose records its
    /// consumers already received, and the offset may hold another record since.
    fn lost_with_tail(&self, consumer: NodeId, poll: &PollRecord) -> bool {
        let key = (consumer.cluster(), poll.topic_partition.clone());
        let tails = self.lost_tails.get(&key).into_iter().flatten().copied();
        kept_below(tails, poll.offset, poll.fetched_ms)
    }

    /// Whether a loss of committed data ([`Checkers::losses`]) of the partition `consumer` read
    /// in `poll` came at or below its offset at or after the read: whatever cluster wrote the
    /// record, the log read no longer holds it (a topic that is not durable, or the mirror of
    /// one, lost it). A loss before the read, or above its offset, excuses nothing.
    fn lost_after_read(&self, consumer: NodeId, poll: &PollRecord) -> bool {
        self.lost_since(
            consumer.cluster(),
            &poll.topic_partition,
            poll.offset,
            poll.fetched_ms,
        )
    }

    /// Whether a mirrored record `consumer` read in `poll` was cut from its cluster's log by a
    /// mirroring truncation that follows the source (PREPARING's last-mirrored-epoch cut or a
    /// diverging epoch) at or below its offset after the read, and the cluster that wrote it
    /// lost committed data at or below that offset after the read too (a topic that is not
    /// durable: a leader epoch starting below its high watermark, [`Checkers::losses`], or a
    /// leader log ending below it, `lost_tails`). The mirror then fetches the offset again from a log
    /// that no longer holds the record, as KIP-1279 mirrors whatever the source holds
    /// (generator seed 3307716073686385: b's topic stopped, then was mirrored again, and the
    /// PREPARING cut took b to 0, as its last-mirrored-epoch lookup on a found nothing; before
    /// b fetched the old records back, a's only replica of the partition lost them in a power
    /// loss, and b mirrored a's new records at their offsets). The mirror's own truncation alone never excuses a
    /// mirrored record (a clean source rewrites nothing), nor does a loss of the source alone
    /// (the mirror still holds what the consumer read), nor a loss before the read. When the
    /// loss came before the cut, [`Checkers::note_loss`] already noted it on the mirror.
    fn mirrored_read_lost_at_origin(&self, consumer: NodeId, poll: &PollRecord) -> bool {
        let cluster = consumer.cluster();
        let origin = cluster_of_value(&poll.value);
        let (tp, offset) = (&poll.topic_partition, poll.offset);
        let follows_source = |reason| {
            matches!(
                reason,
                TruncationReason::MirrorLastMirroredEpoch | TruncationReason::MirrorDivergingEpoch
            )
        };
        origin != cluster
            && self.cut_by_mirroring(cluster, tp, offset, poll.fetched_ms, follows_source)
            && (self.origin_lost_since_read(poll)
                || self.origin_cut_own_write(origin, tp, offset, poll.fetched_ms))
    }

    /// Whether the cluster that wrote the record read in `poll` lost committed data at or
    /// below its offset after the read (see [`Checkers::lost_or_tail_lost_since`]).
    fn origin_lost_since_read(&self, poll: &PollRecord) -> bool {
        let origin = cluster_of_value(&poll.value);
        self.lost_or_tail_lost_since(origin, &poll.topic_partition, poll.offset, poll.fetched_ms)
    }

    /// Whether the cluster that wrote a record (`origin`) cut it from its own log by a
    /// mirroring truncation that follows a source, at or below `offset`, at or after
    /// `since_ms`: a destination with a history of its own drops it by design when it starts
    /// mirroring (PREPARING's cut, a diverging epoch), and a mirror of that cluster follows
    /// (the second way a mirrored read is gone at its origin, mark
    /// `mirrored-read-cut-by-origin-mirroring`; generated seeds 10100000000001314 and …1415,
    /// chain a → b → c: c mirrored and served b's own records, b's topics were then added to
    /// its mirror of a and PREPARING cut them to 0, and c, cut by its own PREPARING, mirrored
    /// a's records at those offsets).
    fn origin_cut_own_write(
        &self,
        origin: ClusterIndex,
        tp: &TopicPartition,
        offset: i64,
        since_ms: i64,
    ) -> bool {
        self.cut_by_mirroring(
            origin,
            tp,
            offset,
            since_ms,
            TruncationReason::follows_source,
        )
    }

    /// Notes offsets a mirror leader of (`cluster`, `topic_partition`) appended from its
    /// source: every last-mirrored-epoch cut noted before holds them as fetched back.
    fn note_mirror_append(
        &mut self,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        range: (i64, i64),
    ) {
        if let Some(cuts) = self
            .refetch_cuts
            .get_mut(&(cluster, topic_partition.clone()))
        {
            for cut in cuts {
                cut.refetched.push(range);
            }
        }
    }

    /// A new leader of `topic_partition` starts its epoch at `start_offset`: what the mirror
    /// had fetched back above it after a last-mirrored-epoch cut is not in this leader's log
    /// (an uncommitted tail the old leader took with it, e.g. in a power loss), so it no
    /// longer counts as fetched back (generator seed 9500000000000348: b's cut to 0, a's
    /// records re-mirrored by b-broker-2, its power loss 0.3 s later before b-broker-1 had
    /// fetched any, b-broker-1 elected with an empty log and the topic stopped there).
    fn forget_refetches_past(
        &mut self,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        start_offset: i64,
    ) {
        let Some(cuts) = self
            .refetch_cuts
            .get_mut(&(cluster, topic_partition.clone()))
        else {
            return;
        };
        let mut forgot = false;
        for cut in cuts {
            let kept: Vec<(i64, i64)> = cut
                .refetched
                .iter()
                .filter(|&&(first, _)| first < start_offset)
                .map(|&(first, last)| (first, last.min(start_offset - 1)))
                .collect();
            forgot |= kept != cut.refetched;
            cut.refetched = kept;
        }
        if forgot {
            self.mark("refetch-lost-at-election");
        }
    }

    /// Whether a mirrored record `consumer` read in `poll` was cut from its cluster's log by
    /// PREPARING's last-mirrored-epoch cut at or below its offset after the read, and the
    /// mirror never fetched that offset back from the source since (no `MirrorAppend` of the
    /// partition covered it after the cut): the topic left the mirror again (STOPPING) first,
    /// so the final log holds something else there or nothing. KIP-1279 mirroring a stopped
    /// topic again from the same source asks the source for its last mirrored epoch, which a
    /// source that never mirrored from this cluster does not have: it answers −1, and the
    /// destination truncates everything to mirror from scratch (kip1279-spec S-24, "not a bug
    /// per design, but a data-loss hazard"); a stop before the mirror caught up keeps the
    /// truncated log (generator seed 2292223553896714: b's orders stopped, was added back and
    /// cut to 0, and was removed again within 110 ms, so STOPPING wrote its `MIRROR_PID_RESET`
    /// at offset 0 where b's consumer had read a's record). A record the mirror fetched back
    /// is judged as any other (a clean source rewrites nothing), and so is a read after the
    /// cut, a cut of another reason, and a record the cluster wrote itself (failback's rules
    /// judge those, see [`Checkers::rewritten_by_mirroring`]).
    fn mirrored_read_cut_not_refetched(&self, consumer: NodeId, poll: &PollRecord) -> bool {
        let cluster = consumer.cluster();
        let (tp, offset) = (&poll.topic_partition, poll.offset);
        cluster_of_value(&poll.value) != cluster
            && self
                .refetch_cuts
                .get(&(cluster, tp.clone()))
                .is_some_and(|cuts| {
                    cuts.iter().any(|cut| {
                        poll.fetched_ms <= cut.time_ms
                            && offset >= cut.to
                            && !cut
                                .refetched
                                .iter()
                                .any(|&(first, last)| first <= offset && offset <= last)
                    })
                })
    }

    /// Whether a transactional record `consumer` read in `poll` was cut by STOPPING's truncation
    /// to the last stable offset after a loss of committed data had left its transaction
    /// undecided: a loss at or after the read (a leader epoch starting below the high
    /// watermark, `losses`, or a leader log ending below it, `lost_tails`: only on a topic
    /// that is not durable) kept the record's offset but nothing above it from some offset on,
    /// and then, at or after that loss, STOPPING cut at or below the record's offset. The
    /// COMMIT marker the consumer's READ_COMMITTED read relied on (or the mirror's copy of it)
    /// went with the lost tail, so the rebuilt producer state holds the transaction open from
    /// the record on, the last stable offset stays below it, and STOPPING drops open
    /// transactions by design (KIP-1279: the source's marker will never come). The record is
    /// lost with the tail as any committed record of such a topic may be (generator seeds
    /// 8368442226905498, 2292223553896339: b's only replica of a mirrored partition came back
    /// from a torn power loss just past a committed transaction's first record, and STOPPING
    /// cut to it and wrote `MIRROR_PID_RESET` there). A STOPPING cut with no such loss between
    /// the read and the cut excuses nothing here (`rewritten_by_mirroring` judges it), nor does
    /// a loss at or below the record's offset (the loss excuses judge that), nor a cut before
    /// the loss.
    fn stop_cut_after_outcome_lost(&self, consumer: NodeId, poll: &PollRecord) -> bool {
        let key = (consumer.cluster(), poll.topic_partition.clone());
        self.stop_cut_after_loss(&key, poll.offset, poll.fetched_ms)
    }

    /// Whether, at or after `since_ms`, a loss of committed data of `key` (`losses`,
    /// `lost_tails`) kept `offset` but not everything above it, and then, at or after that
    /// loss, STOPPING's cut to the last stable offset came at or below `offset`: the loss
    /// left the transaction at `offset` open, and STOPPING dropped it as such (see
    /// [`Checkers::stop_cut_after_outcome_lost`]).
    fn stop_cut_after_loss(
        &self,
        key: &(ClusterIndex, TopicPartition),
        offset: i64,
        since_ms: i64,
    ) -> bool {
        let Some(cuts) = self.mirror_truncations.get(key) else {
            return false;
        };
        cuts.iter().any(|&(cut_ms, to, reason)| {
            reason == TruncationReason::MirrorStopAtLastStableOffset
                && since_ms <= cut_ms
                && to <= offset
                && all_losses(&self.losses, &self.lost_tails, key).any(|(lost_ms, kept)| {
                    since_ms <= lost_ms && lost_ms <= cut_ms && offset < kept
                })
        })
    }

    /// Whether the log of the partition `consumer` read in `poll` may hold another batch at its
    /// offset than the one the consumer read: a mirroring truncation of any reason, or a loss
    /// of committed data (`losses`, `lost_tails`), at or below the offset at or after the read.
    /// Whether that rewrite was legal is the poll checks' question (`inconsistent-offsets`);
    /// what the final log holds there since says nothing of what the consumer received.
    fn log_rewritten_since_read(&self, consumer: NodeId, poll: &PollRecord) -> bool {
        let (cluster, tp) = (consumer.cluster(), &poll.topic_partition);
        self.cut_by_mirroring(cluster, tp, poll.offset, poll.fetched_ms, |_| true)
            || self.lost_or_tail_lost_since(cluster, tp, poll.offset, poll.fetched_ms)
    }

    /// Whether the jump of `consumer`'s poll number `index` over `skipped`, a data record of
    /// the final log, is excused: when the consumer read past it, the leader's log held no
    /// record for it there (control batches, such as the `MIRROR_PID_RESET` a failover wrote,
    /// or for READ_COMMITTED aborted data; seen in the step of the read, see `note_poll_gaps`),
    /// and a mirroring truncation at or below `skipped` came after the read, so the record
    /// there now was not in the log the consumer read. A jump over a data record the log held
    /// is never excused, mirrored or not.
    fn skip_rewritten_by_mirroring(
        &self,
        (consumer, incarnation, index): (NodeId, u64, usize),
        poll: &PollRecord,
        skipped: i64,
    ) -> bool {
        let tp = &poll.topic_partition;
        let key = (consumer, incarnation, index);
        let cluster = consumer.cluster();
        (self.empty_gaps.contains(&key)
            && (self.cut_by_mirroring(cluster, tp, skipped, poll.fetched_ms, |_| true)
                || self.lost_since(cluster, tp, skipped, poll.fetched_ms)))
            || self.passed_then_cut.contains(&key)
    }

    /// Whether the jump of a READ_COMMITTED consumer's poll (`key`, `poll`) over `skipped`, a
    /// transactional record the final log decides at `decided_at` (`None`: nowhere yet), is
    /// excused because a loss of committed data on a topic that is not durable took the marker
    /// that hid it: when the consumer read past it, the log held nothing there for it (seen in
    /// the step of the read, `note_poll_gaps`: the record's transaction was aborted), and a
    /// loss after the read kept the record but not that marker
    /// ([`Checkers::outcome_lost_since`]), so the broker's rebuilt producer state held the
    /// transaction open from the record on and the producer's next marker, a COMMIT the
    /// coordinator wrote for a later transaction, closed it, as in Kafka (generator seeds
    /// 9400000000000713 and 9400000000000338: a's only replica kept the aborted record at 296
    /// but not its ABORT at 297 in a torn power loss; the coordinator's reloaded PrepareCommit
    /// wrote a COMMIT at 297). A jump over a record its transaction committed when the consumer
    /// read past it is never excused.
    fn skip_over_lost_outcome(
        &self,
        key: (NodeId, u64, usize),
        poll: &PollRecord,
        skipped: i64,
        decided_at: Option<i64>,
    ) -> bool {
        let (cluster, tp) = (key.0.cluster(), &poll.topic_partition);
        self.empty_gaps.contains(&key)
            && self.outcome_lost_since(cluster, tp, skipped, decided_at, poll.fetched_ms)
    }

    /// Whether the jump of `consumer`'s `poll` over `skipped`, a data record of the final log
    /// first sent at `sent_ms`, is excused because that record did not exist when the consumer
    /// read past its offset: it was sent after the read's fetch, and a mirroring truncation or
    /// a loss of committed data (see [`Checkers::losses`]) at or below `skipped` came after the
    /// read, so the log the consumer read held something else there (generator seed
    /// 1337263765019505: the read past an aborted transaction came just before the only
    /// replica's power loss, with no leader left in the step to see the log it read). A record
    /// that existed at the read is judged as before.
    fn skip_over_later_write(
        &self,
        consumer: NodeId,
        poll: &PollRecord,
        skipped: i64,
        sent_ms: Option<i64>,
    ) -> bool {
        let (cluster, tp) = (consumer.cluster(), &poll.topic_partition);
        sent_ms.is_some_and(|sent_ms| sent_ms > poll.fetched_ms)
            && (self.cut_by_mirroring(cluster, tp, skipped, poll.fetched_ms, |_| true)
                || self.lost_since(cluster, tp, skipped, poll.fetched_ms))
    }

    /// In the step of each read: notes the jumps over offsets for which the current leader's
    /// log holds no record the consumer must receive, while no mirroring truncation has cut
    /// them since the read (so the log still holds what the consumer read past). `check_polls`
    /// judges jumps against the final log, which a later mirroring truncation may have
    /// rewritten there (`skip_rewritten_by_mirroring`).
    ///
    /// The consumer passes control batches between two reads without a poll to show for it, so
    /// the log it passed may be rewritten before its next read, not after (generator seed 5:
    /// c's consumer read 22, fetched the ABORT marker at 23 and the `MIRROR_PID_RESET` at 24,
    /// then PREPARING cut c's log to 0 and mirrored a from scratch past 25, and the consumer's
    /// next read was a's 25). So every step also extends, per consumer and partition, the range
    /// past its last read that the leader's log held as control batches only below its high
    /// watermark ([`PassedRange`]); a jump that stays inside it after a mirroring truncation
    /// cut it is noted in `passed_then_cut`. Only control batches count there, for
    /// READ_COMMITTED consumers too (an aborted transaction's data is not excused this way).
    fn note_poll_gaps(&mut self, logs: &dyn LeaderLogs, history: &History) {
        let mut polls_seen = std::mem::take(&mut self.polls_seen);
        for (&(consumer, incarnation), polls) in &history.polls {
            let (seen, last) = polls_seen.entry((consumer, incarnation)).or_default();
            for (index, poll) in polls.iter().enumerate().skip(*seen) {
                let tp = &poll.topic_partition;
                let previous = match last.get_mut(tp) {
                    Some(last) => Some(std::mem::replace(last, poll.offset)),
                    None => last.insert(tp.clone(), poll.offset),
                };
                let next = PassedRange {
                    from: poll.offset + 1,
                    to: poll.offset + 1,
                    cut: false,
                    mirror_cut: false,
                };
                let passed = self
                    .passed
                    .insert((consumer, incarnation, tp.clone()), next);
                if passed.is_none() {
                    self.log_versions
                        .entry((consumer.cluster(), tp.clone()))
                        .or_default();
                }
                let Some(previous) =
                    previous.filter(|previous| !poll.after_reset && poll.offset > previous + 1)
                else {
                    continue;
                };
                let cluster = consumer.cluster();
                let log = logs.leader_log(cluster, tp);
                // Past the range, the rewritten log may hold control batches only up to the
                // read (a marker the new log has where the old one ended): the consumer passed
                // those too (regression `retried_delete_mirror_took_effect`, seed
                // 3307716073686212: passed the COMMIT at 38 of a log ending at 39, PREPARING
                // cut it to 0 and mirrored a's log, whose 38 is data and 39 a COMMIT; the
                // consumer read on at 40).
                let control_only_past = |passed: &PassedRange| {
                    poll.offset <= passed.to
                        || (passed.mirror_cut
                            && log.is_some_and(|log| {
                                control_batches_span(log, passed.to, poll.offset)
                            }))
                };
                if passed.is_some_and(|passed| {
                    passed.cut && passed.from == previous + 1 && control_only_past(&passed)
                }) {
                    self.passed_then_cut.insert((consumer, incarnation, index));
                }
                let Some(log) = log else {
                    continue;
                };
                let gap = (previous + 1, poll.offset);
                let holds_data = |read_committed| {
                    first_data_offset_between(log, gap.0, gap.1, read_committed).is_some()
                };
                // The transaction outcomes of READ_COMMITTED cost a walk of the whole log: only
                // when the gap holds data at all.
                let empty = log.log_start_offset() <= gap.0
                    && gap.1 <= log.log_end_offset()
                    && (!holds_data(false)
                        || (history.read_committed.contains(&consumer) && !holds_data(true)));
                let cut_since =
                    self.cut_by_mirroring(cluster, tp, gap.1 - 1, poll.fetched_ms, |_| true)
                        || self.lost_since(cluster, tp, gap.1 - 1, poll.fetched_ms);
                if empty && !cut_since {
                    self.empty_gaps.insert((consumer, incarnation, index));
                }
            }
            *seen = polls.len();
        }
        self.polls_seen = polls_seen;
        for ((consumer, _, tp), passed) in &mut self.passed {
            if passed.cut {
                continue;
            }
            let Some(log) = logs.leader_log(consumer.cluster(), tp) else {
                continue;
            };
            for batch in log.batches_from(passed.to) {
                let next = batch.next_offset();
                if !batch.is_control()
                    || next > log.high_watermark()
                    || batch.base_offset() > passed.to
                {
                    break;
                }
                passed.to = next;
            }
        }
    }

    /// In each step: extends, per (cluster, partition) a consumer read, the version of the
    /// current leader's log the checkers saw ([`LogVersion`]), and keeps a version the log
    /// stopped extending (its last batch seen is gone or another) in `replaced_versions`.
    /// A broker answers a fetch from its log as it is when the fetch arrives, which a
    /// truncation may rewrite before the answer reaches the consumer, so the step of the read
    /// may already see another log (generator seeds 3307716073686192 and …194: PREPARING's
    /// and the first mirror fetch's cuts landed while a READ_COMMITTED fetch travelled).
    fn note_log_versions(&mut self, time_ms: i64, logs: &dyn LeaderLogs) {
        // One entry per partition a consumer has read (`note_poll_gaps` adds it).
        for (key, version) in &mut self.log_versions {
            let Some(log) = logs.leader_log(key.0, &key.1) else {
                continue;
            };
            let extends = version.batches.last().is_none_or(|last| {
                log.batches_from(last.base_offset())
                    .next()
                    .is_some_and(|batch| {
                        batch.base_offset() == last.base_offset()
                            && batch.header().crc == last.header().crc
                    })
            });
            if !extends {
                let replaced = std::mem::take(version);
                self.replaced_versions
                    .entry(key.clone())
                    .or_default()
                    .push((time_ms, replaced));
            }
            let from = version
                .batches
                .last()
                .map_or(log.log_start_offset(), |last| last.base_offset() + 1);
            for batch in log.batches_from(from) {
                if batch.base_offset() >= from {
                    version.batches.push(batch.clone());
                }
            }
            version.high_watermark = log.high_watermark();
        }
    }

    /// Per step: a leader still leading a partition of a topic that is not durable in an epoch
    /// below a later epoch's start (a zombie that has not heard of the election: paused, or
    /// its own ISR shrink to itself answered after the controller moved on) whose high
    /// watermark passed that start committed what the later epoch never holds: a loss of
    /// committed data (`losses`, with the later epoch, as `observe_leader_start` notes one),
    /// noted again each time that high watermark rises. `committed_high` only follows the
    /// leader of the controller's current epoch, which cannot see it.
    fn note_deposed_commits(&mut self, time_ms: i64, brokers: &[BrokerView<'_>]) {
        let mut found = Vec::new();
        for view in brokers {
            for (tp, partition) in view.broker.partitions() {
                let Role::Leader(state) = &partition.role else {
                    continue;
                };
                if self
                    .durable_topics
                    .contains(&(view.cluster, tp.topic.clone()))
                {
                    continue;
                }
                let key = (view.cluster, tp.clone());
                let Some(starts) = self.epoch_starts.get(&key) else {
                    continue;
                };
                let noted = self
                    .deposed_commits
                    .get(&(view.cluster, tp.clone(), state.leader_epoch))
                    .copied();
                let high = partition.log.high_watermark();
                if let Some((epoch, start)) =
                    deposed_commit_past_successor(starts, state.leader_epoch, high, noted)
                {
                    self.deposed_commits
                        .insert((view.cluster, tp.clone(), state.leader_epoch), high);
                    found.push((key, epoch, start));
                }
            }
        }
        for ((cluster, tp), epoch, start) in found {
            let starts = self
                .lossy_epoch_starts
                .entry((cluster, tp.clone()))
                .or_default();
            if !starts.contains(&(epoch, start)) {
                starts.push((epoch, start));
            }
            self.note_loss(time_ms, cluster, &tp, start, Some(epoch));
            self.mark("deposed-leader-committed-past-successor");
        }
    }

    /// Per step: for each partition a leader epoch of began below its committed high watermark
    /// (`lossy_epoch_starts`, a topic that is not durable), keeps the log of every broker still
    /// leading it in a lower epoch, from the lowest such start above that epoch on, with its
    /// high watermark (`deposed_logs`): what it may answer a consumer whose metadata is as
    /// stale as its own. A log that no longer extends the one kept (a deposed mirror leader's
    /// fetcher may still cut it) is kept as another.
    fn note_deposed_leader_logs(&mut self, time_ms: i64, brokers: &[BrokerView<'_>]) {
        keep_deposed_logs(
            &self.lossy_epoch_starts,
            &mut self.deposed_logs,
            time_ms,
            brokers,
        );
        keep_deposed_logs(
            &self.mirror_cut_epoch_starts,
            &mut self.mirror_cut_deposed_logs,
            time_ms,
            brokers,
        );
    }

    /// A leader of `view`'s cluster cut `topic_partition` to `to` by mirroring: noted with its
    /// leader epoch (see `mirror_cut_epoch_starts`). A cut by a follower (a deposed leader's
    /// fetcher, say) starts no epoch and is not noted.
    fn note_mirror_cut_epoch(&mut self, view: &BrokerView<'_>, tp: &TopicPartition, to: i64) {
        let Some(Role::Leader(state)) = view.broker.partitions().get(tp).map(|p| &p.role) else {
            return;
        };
        let starts = self
            .mirror_cut_epoch_starts
            .entry((view.cluster, tp.clone()))
            .or_default();
        if !starts.contains(&(state.leader_epoch, to)) {
            starts.push((state.leader_epoch, to));
        }
    }

    /// Whether `consumer` read its own cluster's record `poll` from a deposed leader after a
    /// leader of a later epoch cut it by mirroring (a failback's cut of the old primary's
    /// writes): the deposed leader, not yet told of the election, serves what it holds, as
    /// Kafka's does, and truncates it on learning of it (generated seed 9960000000000233:
    /// c-broker-1, isolated and deposed in epoch 2, answered c-consumer-1's fetch at 630 after
    /// c-broker-3's PREPARING in epoch 3 had cut c's log to 0). A mirrored record is never
    /// excused so: every later log holds it at the same offset.
    fn read_from_deposed_leader_before_mirror_cut(
        &self,
        consumer: NodeId,
        poll: &PollRecord,
    ) -> bool {
        let key = (consumer.cluster(), poll.topic_partition.clone());
        if cluster_of_value(&poll.value) != consumer.cluster() {
            return false;
        }
        let (Some(starts), Some(deposed)) = (
            self.mirror_cut_epoch_starts.get(&key),
            self.mirror_cut_deposed_logs.get(&key),
        ) else {
            return false;
        };
        read_from_deposed_tail(starts, deposed, poll)
    }
}

/// Keeps, for each partition with an epoch start in `starts`, the log of every broker still
/// leading it in a lower epoch, from the lowest such start above that epoch on (see
/// [`Checkers::note_deposed_leader_logs`]). Only the few partitions with a start are looked
/// at, not every partition of every broker: this runs every step once one happened.
fn keep_deposed_logs(
    starts_by_partition: &BTreeMap<(ClusterIndex, TopicPartition), Vec<(i32, i64)>>,
    deposed_logs: &mut BTreeMap<(ClusterIndex, TopicPartition), Vec<DeposedLog>>,
    time_ms: i64,
    brokers: &[BrokerView<'_>],
) {
    for (key, starts) in starts_by_partition {
        let (cluster, tp) = key;
        for view in brokers.iter().filter(|view| view.cluster == *cluster) {
            let Some(partition) = view.broker.partitions().get(tp) else {
                continue;
            };
            let Role::Leader(state) = &partition.role else {
                continue;
            };
            let Some(from) = (starts.iter())
                .filter(|(epoch, _)| *epoch > state.leader_epoch)
                .map(|(_, start)| *start)
                .min()
            else {
                continue;
            };
            let kept = deposed_logs.entry(key.clone()).or_default();
            note_deposed_log(
                kept,
                time_ms,
                view,
                state.leader_epoch,
                &partition.log,
                from,
            );
        }
    }
}

impl Checkers {
    /// Whether `consumer` read `poll` from a deposed leader's tail (see
    /// [`read_from_deposed_tail`]): a read after the loss its epoch's successor began with, of
    /// a record that loss dooms as well. Generator seed 9800000000000371: a held-back
    /// AlterPartition stalled c-broker-3's link to its controller (everything behind it on
    /// the link waited), the controller fenced it at 9.92 s and elected c-broker-2, outside
    /// the ISR, uncleanly at 379 (payments-0, `unclean.leader.election.enable`); c-broker-3,
    /// ISR [3] in its own view, went on taking c-producer-1's records up to 536 in epoch 0,
    /// and c-consumer-1, still fetching in epoch 0, read 488..535 from it after the election
    /// until c-broker-3 learned of it at 12.6 s and truncated to 379.
    fn read_from_deposed_leader(&self, consumer: NodeId, poll: &PollRecord) -> bool {
        let key = (consumer.cluster(), poll.topic_partition.clone());
        let (Some(starts), Some(deposed)) = (
            self.lossy_epoch_starts.get(&key),
            self.deposed_logs.get(&key),
        ) else {
            return false;
        };
        read_from_deposed_tail(starts, deposed, poll)
    }

    /// Whether the jump of `consumer`'s `poll` from its `previous` read of the partition over
    /// `skipped`, a data record of the final log, is excused because it read both from a
    /// version of the leader's log that held no record for it in between and that the log
    /// stopped extending after the fetch was sent (see `note_log_versions`), and a mirroring
    /// truncation (or a loss of committed data) at or below `skipped` came after the read,
    /// so the record there now was not in the log it read. Both reads must be of that
    /// version (their values at their offsets): a jump over a record the log read held is
    /// never excused.
    fn skip_over_replaced_log(
        &self,
        consumer: NodeId,
        read_committed: bool,
        previous: &PollRecord,
        poll: &PollRecord,
        skipped: i64,
    ) -> bool {
        let (cluster, tp) = (consumer.cluster(), &poll.topic_partition);
        let read_from_replaced = self
            .replaced_versions
            .get(&(cluster, tp.clone()))
            .is_some_and(|versions| {
                versions.iter().any(|(replaced_ms, version)| {
                    *replaced_ms >= poll.fetched_ms
                        && version.holds(previous.offset, &previous.value)
                        && version.holds(poll.offset, &poll.value)
                        && version.holds_nothing_between(
                            previous.offset + 1,
                            poll.offset,
                            read_committed,
                        )
                })
            });
        read_from_replaced
            && (self.cut_by_mirroring(cluster, tp, skipped, poll.fetched_ms, |_| true)
                || self.lost_since(cluster, tp, skipped, poll.fetched_ms))
    }

    /// Whether the jump of `consumer`'s `poll` from its `previous` read of the partition over
    /// `skipped`, the first data record of the final log in between, is excused because the
    /// consumer passed the jump's offsets in two versions of the leader's log (see
    /// `note_log_versions`): the version `previous` was read from held no record for it from
    /// there up to some offset `s` (the `MIRROR_PID_RESET` a failover wrote, say), and was
    /// replaced between the two reads' fetches; the version `poll` was read from (replaced
    /// after its fetch was sent, or still the current one) held no record for it in `[s, poll)`
    /// (an ABORT marker the new log holds where the consumer's position stood). Every data
    /// record of the final log in the jump must have come by a mirroring truncation at or
    /// below it, after the read of the version that held nothing there (generator seeds
    /// 2292223553896316 and …411: c's consumer passed the reset at 28, then PREPARING cut c's
    /// log to 0 and mirrored a from scratch past 29 before its next fetch, which read 30 over
    /// a's ABORT marker at 29). Only a mirroring cut: it keeps the leader epoch, so a consumer
    /// has no leader change to validate its position at (KIP-320), whereas a loss of committed
    /// data between the reads comes with a new leader epoch, and a Kafka consumer validates
    /// its position against the new leader's log and rewinds below the divergence. A jump over
    /// a record either version held is never excused.
    fn skip_across_replaced_log(
        &self,
        consumer: NodeId,
        read_committed: bool,
        (previous, poll): (&PollRecord, &PollRecord),
        skipped: i64,
        final_log: Option<&PartitionLog<MemoryDirDisk>>,
    ) -> bool {
        let (cluster, tp) = (consumer.cluster(), &poll.topic_partition);
        let key = (cluster, tp.clone());
        let Some(replaced) = self.replaced_versions.get(&key) else {
            return false;
        };
        let from = previous.offset + 1;
        let rewritten =
            |offset, since_ms| self.cut_by_mirroring(cluster, tp, offset, since_ms, |_| true);
        let read_from = |version: &LogVersion, split| {
            version.holds(poll.offset, &poll.value)
                && version.holds_nothing_between(split, poll.offset, read_committed)
        };
        replaced.iter().any(|(replaced_ms, version)| {
            if !(previous.fetched_ms <= *replaced_ms
                && *replaced_ms < poll.fetched_ms
                && version.holds(previous.offset, &previous.value))
            {
                return false;
            }
            // How far the version `previous` was read from held nothing for the consumer.
            let end = version.high_watermark.min(poll.offset);
            let split = version
                .first_data_between(from, end, read_committed)
                .unwrap_or(end);
            if split <= from {
                return false;
            }
            let poll_version = self
                .log_versions
                .get(&key)
                .is_some_and(|current| read_from(current, split))
                || replaced.iter().any(|(later_ms, later)| {
                    *later_ms >= poll.fetched_ms && read_from(later, split)
                });
            // The final log's first data record where the poll's version held nothing.
            let past_split = if skipped >= split {
                Some(skipped)
            } else {
                final_log.and_then(|log| {
                    first_data_offset_between(log, split, poll.offset, read_committed)
                })
            };
            poll_version
                && (skipped >= split || rewritten(skipped, previous.fetched_ms))
                && past_split.is_none_or(|offset| rewritten(offset, poll.fetched_ms))
        })
    }

    /// The per-step safety checks.
    pub fn check_step(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &mut [BrokerView<'_>],
        history: &History,
    ) -> Vec<Violation> {
        let mut violations = Vec::new();
        self.check_metadata_epochs(time_ms, controllers, &mut violations);
        for view in brokers.iter_mut() {
            self.consume_events(time_ms, controllers, view);
        }
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
        violations.extend(self.mirror.check(time_ms, controllers, brokers));
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
        }
    }

    fn check_metadata_epochs(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        out: &mut Vec<Violation>,
    ) {
        for view in controllers {
            for (tp, record) in view.controller.image().all_partitions() {
                out.extend(self.observe_metadata_epoch(
                    time_ms,
                    view.cluster,
                    tp,
                    record.leader_epoch,
                ));
            }
        }
    }

    fn consume_events(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        view: &mut BrokerView<'_>,
    ) {
        let node = NodeId::Broker(view.cluster, view.broker.broker_id());
        for event in view.broker.take_events() {
            self.mirror.observe(time_ms, controllers, view, &event);
            match event {
                BrokerEvent::Truncated {
                    topic_partition,
                    from_log_end_offset,
                    to_log_end_offset,
                    reason,
                    ..
                } => {
                    if from_log_end_offset > to_log_end_offset {
                        match reason {
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
                            &topic_partition,
                            to_log_end_offset,
                            reason,
                        );
                        self.note_mirror_cut_epoch(view, &topic_partition, to_log_end_offset);
                        let key = (view.cluster, topic_partition.clone());
                        if let Some(high) = self.committed_high.get_mut(&key) {
                            *high = (*high).min(to_log_end_offset);
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
                                        &topic_partition,
                                        from_log_end_offset,
                                        time_ms,
                                    )
                                });
                        if let Some(source_kept) = source_cut {
                            self.note_loss(
                                time_ms,
                                view.cluster,
                                &topic_partition,
                                to_log_end_offset.max(source_kept),
                                None,
                            );
                        }
                    }
                    // A reported truncation may lower the high watermark and rewrite the tail.
                    self.high_watermarks
                        .remove(&(node, view.incarnation, topic_partition.clone()));
                    let broker_id = view.broker.broker_id();
                    self.converged_to.retain(|(cluster, tp, member, _, _), _| {
                        !(*cluster == view.cluster
                            && *tp == topic_partition
                            && *member == broker_id)
                    });
                    // A leader may truncate inside its epoch (KIP-1279's PREPARING cut): its
                    // duplicate and order scan starts over, or the offsets it refills would
                    // never be scanned.
                    let incarnation = view.incarnation;
                    self.scans
                        .retain(|(cluster, tp, leader, leader_incarnation, _), _| {
                            !(*cluster == view.cluster
                                && *tp == topic_partition
                                && *leader == broker_id
                                && *leader_incarnation == incarnation)
                        });
                    self.log_epochs_checked
                        .remove(&(node, view.incarnation, topic_partition));
                    self.mark("follower-truncated");
                }
                BrokerEvent::FollowerHighWatermarkLowered {
                    topic_partition,
                    to,
                    ..
                } => {
                    // Documented: the follower adopted a new leader's lagging high watermark.
                    if let Some(entry) =
                        self.high_watermarks
                            .get_mut(&(node, view.incarnation, topic_partition))
                    {
                        entry.1 = entry.1.min(to);
                    }
                    self.mark("follower-high-watermark-lowered");
                }
                BrokerEvent::BecameLeader {
                    topic_partition,
                    leader_epoch,
                    start_offset,
                } => {
                    self.mark("leader-elected");
                    self.forget_refetches_past(view.cluster, &topic_partition, start_offset);
                    let prior_epoch = view
                        .broker
                        .partitions()
                        .get(&topic_partition)
                        .and_then(|partition| partition.log.batches_from(start_offset - 1).next())
                        .filter(|batch| batch.base_offset() < start_offset)
                        .map(|batch| batch.partition_leader_epoch());
                    self.observe_leader_start(
                        time_ms,
                        view.cluster,
                        &topic_partition,
                        (leader_epoch, start_offset),
                        prior_epoch,
                    );
                }
                BrokerEvent::CoordinatorLoaded { .. } => self.mark("coordinator-loaded"),
                BrokerEvent::IsrChanged { .. } => self.mark("isr-changed"),
                BrokerEvent::MirrorAppend {
                    topic_partition,
                    first_offset,
                    last_offset,
                } => {
                    self.note_mirror_append(
                        view.cluster,
                        &topic_partition,
                        (first_offset, last_offset),
                    );
                    self.mark("mirror-append");
                }
                BrokerEvent::RecordsDeleted { .. } => self.mark("records-deleted"),
                BrokerEvent::TopicAdminForwarded { .. } => self.mark("topic-admin-forwarded"),
                BrokerEvent::MirrorTransition { from, to, .. } => {
                    self.mark(&format!("mirror-transition:{from}->{to}"));
                    if to == mirrorsim::mirror::MirrorState::Stopped {
                        self.mark("mirror-stopped");
                    }
                }
                BrokerEvent::MirrorOffsetSynced {
                    group_id,
                    offset,
                    source_offset,
                    ..
                } => {
                    self.synced_groups.insert((view.cluster, group_id));
                    self.mark("mirror-offset-synced");
                    if offset != source_offset {
                        self.mark("mirror-offset-clamped");
                        self.precondition(Invariant::OffsetSyncClamped);
                    }
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
                }
                BrokerEvent::MirrorStateOfNewerLeader { .. } => {
                    self.mark("mirror-state-of-newer-leader")
                }
                BrokerEvent::TxnMarkerRefused { .. } => self.mark("mirror-txn-marker-refused"),
                BrokerEvent::TxnMarkerMoot { .. } => self.mark("mirror-txn-marker-moot"),
                BrokerEvent::TxnMarkerAdmittedBeforeCut { .. } => {
                    self.mark("mirror-txn-marker-before-cut")
                }
                BrokerEvent::TxnEnlistRefused { .. } => self.mark("mirror-txn-enlist-refused"),
                BrokerEvent::RequestHeldBeforeListening { .. } => {
                    self.mark("request-held-before-listening")
                }
                BrokerEvent::MirrorEpochBelowLocal { .. } => self.mark("mirror-epoch-below-local"),
                BrokerEvent::MirrorEpochFenced { .. } => self.mark("mirror-epoch-fenced"),
                BrokerEvent::MirrorCutEpochBump { .. } => self.mark("mirror-cut-epoch-bump"),
                BrokerEvent::MirrorTailChecked { .. } => self.mark("mirror-tail-checked"),
                BrokerEvent::MirrorTailDiverged { .. } => self.mark("mirror-tail-diverged"),
                BrokerEvent::StopOfOwnWrites { .. } => self.mark("mirror-stop-of-own-writes"),
                BrokerEvent::MirrorTombstonesRefused { .. } => {
                    self.mark("mirror-tombstones-refused")
                }
                BrokerEvent::AlterPartitionRetried { .. } => self.mark("alter-partition-retried"),
                BrokerEvent::MirrorCutFencedFollower { .. } => {
                    self.mark("mirror-cut-fenced-follower")
                }
                BrokerEvent::PreparingAwaitsReplicaOutsideIsr { .. } => {
                    self.mark("preparing-awaits-replica-outside-isr")
                }
                BrokerEvent::FetchedEpochAboveLatest { follower, .. } => {
                    self.mark(if follower.is_some() {
                        "follower-epoch-above-leader-latest"
                    } else {
                        "mirror-fetch-epoch-above-source-latest"
                    })
                }
                BrokerEvent::BecameFollower { .. } | BrokerEvent::LeaderAppend { .. } => {}
            }
        }
    }

    fn check_leaders(
        &mut self,
        time_ms: i64,
        brokers: &[BrokerView<'_>],
        out: &mut Vec<Violation>,
    ) {
        for view in brokers {
            for (tp, partition) in view.broker.partitions() {
                let Role::Leader(state) = &partition.role else {
                    continue;
                };
                let broker_id = view.broker.broker_id();
                let epoch = state.leader_epoch;
                out.extend(self.observe_leader(time_ms, view.cluster, tp, epoch, broker_id));
            }
        }
    }

    fn check_replica_logs(
        &mut self,
        time_ms: i64,
        brokers: &[BrokerView<'_>],
        out: &mut Vec<Violation>,
    ) {
        for view in brokers {
            let node = NodeId::Broker(view.cluster, view.broker.broker_id());
            for (tp, partition) in view.broker.partitions() {
                let current_leader = matches!(&partition.role, Role::Leader(state)
                    if self.metadata_epochs.get(&(view.cluster, tp.clone())) == Some(&state.leader_epoch));
                if current_leader {
                    let high = self
                        .committed_high
                        .entry((view.cluster, tp.clone()))
                        .or_insert(0);
                    *high = (*high).max(partition.log.high_watermark());
                }
                let key = (node, view.incarnation, tp.clone());
                let seen = (partition.leader_epoch(), partition.log.high_watermark());
                out.extend(self.observe_high_watermark(time_ms, key.clone(), seen));
                self.check_log_epochs(time_ms, key, &partition.log, out);
            }
        }
    }

    /// A partition's leader epoch in the controller's metadata never decreases.
    fn observe_metadata_epoch(
        &mut self,
        time_ms: i64,
        cluster: ClusterIndex,
        tp: TopicPartition,
        epoch: i32,
    ) -> Option<Violation> {
        let previous = self.metadata_epochs.insert((cluster, tp.clone()), epoch)?;
        if previous < epoch {
            self.precondition(Invariant::EpochsMonotonic);
            self.leader_changed.insert((cluster, tp.clone()));
        }
        (previous > epoch).then(|| Violation {
            invariant: Invariant::EpochsMonotonic,
            cluster: Some(cluster),
            topic_partition: Some(tp),
            detail: format!("metadata leader epoch went from {previous} to {epoch}"),
            time_ms,
        })
    }

    /// No two brokers ever lead one partition in one leader epoch.
    fn observe_leader(
        &mut self,
        time_ms: i64,
        cluster: ClusterIndex,
        tp: &TopicPartition,
        epoch: i32,
        broker_id: BrokerId,
    ) -> Option<Violation> {
        let last = self.last_leaders.insert((cluster, tp.clone()), broker_id);
        if last.is_some_and(|last| last != broker_id) {
            self.precondition(Invariant::SingleLeaderPerEpoch);
        }
        let first = *self
            .epoch_leaders
            .entry((cluster, tp.clone(), epoch))
            .or_insert(broker_id);
        (first != broker_id).then(|| Violation {
            invariant: Invariant::SingleLeaderPerEpoch,
            cluster: Some(cluster),
            topic_partition: Some(tp.clone()),
            detail: format!("brokers {first} and {broker_id} both led epoch {epoch}"),
            time_ms,
        })
    }

    /// Within one leader epoch a replica's high watermark only grows while its process lives,
    /// except through a reported truncation or a reported adoption of a new leader's lagging
    /// one (both reset what was seen).
    fn observe_high_watermark(
        &mut self,
        time_ms: i64,
        key: (NodeId, u64, TopicPartition),
        (epoch, high_watermark): (i32, i64),
    ) -> Option<Violation> {
        let (previous_epoch, previous) = self
            .high_watermarks
            .insert(key.clone(), (epoch, high_watermark))?;
        if previous_epoch == epoch && high_watermark > previous {
            self.precondition(Invariant::HwMonotonic);
        }
        let (node, _, tp) = key;
        (previous_epoch == epoch && high_watermark < previous).then(|| Violation {
            invariant: Invariant::HwMonotonic,
            cluster: Some(node.cluster()),
            topic_partition: Some(tp),
            detail: format!(
                "{node} high watermark went from {previous} to {high_watermark} in leader epoch {epoch} without a truncation"
            ),
            time_ms,
        })
    }

    /// Batch epochs never decrease along a log; checks only batches appended since last time.
    fn check_log_epochs(
        &mut self,
        time_ms: i64,
        key: (NodeId, u64, TopicPartition),
        log: &PartitionLog<MemoryDirDisk>,
        out: &mut Vec<Violation>,
    ) {
        let (checked_to, mut last_epoch) = match self.log_epochs_checked.get(&key) {
            Some(&(checked_to, last_epoch)) if checked_to <= log.log_end_offset() => {
                (checked_to, last_epoch)
            }
            _ => (0, -1),
        };
        for batch in log.batches_from(checked_to) {
            let epoch = batch.partition_leader_epoch();
            if epoch < last_epoch {
                out.push(Violation {
                    invariant: Invariant::EpochsMonotonic,
                    cluster: Some(key.0.cluster()),
                    topic_partition: Some(key.2.clone()),
                    detail: format!(
                        "{} log: batch at offset {} has epoch {epoch} after epoch {last_epoch}",
                        key.0,
                        batch.base_offset()
                    ),
                    time_ms,
                });
            }
            last_epoch = last_epoch.max(epoch);
        }
        self.log_epochs_checked
            .insert(key, (log.log_end_offset(), last_epoch));
    }

    /// Acknowledged acks=all records are in the current leader's log below its high watermark.
    /// Takes in the acknowledgements new since last time, checks each once its leader's high
    /// watermark passes it, and everything again after a leader change (or when `full`).
    pub fn check_acked_durable(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
        history: &History,
        full: bool,
        out: &mut Vec<Violation>,
    ) {
        let leader =
            |cluster, tp: &TopicPartition| current_leader(controllers, brokers, cluster, tp);
        self.verify_acked(time_ms, history, full, leader, out);
    }

    /// [`Checkers::check_acked_durable`] with the current leaders' (epoch, log) from `leader`.
    fn verify_acked<'a>(
        &mut self,
        time_ms: i64,
        history: &History,
        full: bool,
        leader: impl Fn(ClusterIndex, &TopicPartition) -> Option<(i32, &'a PartitionLog<MemoryDirDisk>)>,
        out: &mut Vec<Violation>,
    ) {
        for key in &history.readable[self.readable_seen..] {
            let send = &history.sends[key];
            let offset = send.acked_offset.expect("a readable send was acknowledged");
            let cluster = cluster_of_value(&send.value);
            let tp = &send.topic_partition;
            if self.durable_topics.contains(&(cluster, tp.topic.clone()))
                && !self.dropped_by_mirroring(offset, send)
            {
                self.durable_acked
                    .entry((cluster, tp.clone()))
                    .or_default()
                    .unverified
                    .insert((offset, send.value.clone()));
            }
        }
        self.readable_seen = history.readable.len();
        let mut reverified = 0;
        for ((cluster, tp), records) in &mut self.durable_acked {
            let Some((epoch, log)) = leader(*cluster, tp) else {
                continue;
            };
            if full || records.leader_epoch != epoch {
                // A new leader may have lost what the previous one had: check everything again.
                let moved = records.leader_epoch != epoch && !records.verified.is_empty();
                records.leader_epoch = epoch;
                let verified = std::mem::take(&mut records.verified);
                if moved {
                    reverified += verified.len();
                }
                records.unverified.extend(verified);
            }
            while records
                .unverified
                .first()
                .is_some_and(|(offset, _)| *offset < log.high_watermark())
            {
                let (offset, value) = records.unverified.pop_first().expect("checked above");
                match record_value_at(log, offset) {
                    Some(found) if found == value => {}
                    found => out.push(Violation {
                        invariant: Invariant::AckedWritesDurable,
                        cluster: Some(*cluster),
                        topic_partition: Some(tp.clone()),
                        detail: format!(
                            "acknowledged {value:?} at offset {offset}, leader (epoch {epoch}) has {found:?} there, below its high watermark {}; the acknowledged record is {}",
                            log.high_watermark(),
                            offset_of_value(log, &value).map_or("absent".to_string(), |at| format!("at offset {at}"))
                        ),
                        time_ms,
                    }),
                }
                records.verified.push((offset, value));
            }
        }
        if reverified > 0 {
            self.precondition(Invariant::AckedWritesDurable);
        }
    }

    /// Per step: every ISR member's log equals the leader's below their common high watermark
    /// (only the newly covered range is compared), and the leader's log holds no duplicate and
    /// no reordered record of one producer (only new batches are scanned).
    fn check_logs_incremental(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
        out: &mut Vec<Violation>,
    ) {
        for controller in controllers {
            let cluster = controller.cluster;
            for (tp, record) in controller.controller.image().all_partitions() {
                let Some(leader_id) = record.leader else {
                    continue;
                };
                let Some((epoch, leader_log)) = current_leader(controllers, brokers, cluster, &tp)
                else {
                    continue;
                };
                let ends = (leader_log.log_end_offset(), leader_log.high_watermark());
                self.note_committed_end(time_ms, cluster, &tp, ends);
                let leader_incarnation =
                    broker_view(brokers, cluster, leader_id).map_or(0, |view| view.incarnation);
                let scan = self
                    .scans
                    .entry((cluster, tp.clone(), leader_id, leader_incarnation, epoch))
                    .or_default();
                let lost_from = lost_from(&self.losses, &self.lost_tails, cluster, &tp);
                let reordered =
                    scan_new_records(time_ms, cluster, &tp, leader_log, scan, lost_from, out);
                if reordered > 0 {
                    *self
                        .marks
                        .entry("reorder-after-lost-producer-state".into())
                        .or_default() += reordered;
                }
                for member in record.isr.iter().filter(|member| **member != leader_id) {
                    let Some(view) = brokers
                        .iter()
                        .find(|view| view.cluster == cluster && view.broker.broker_id() == *member)
                    else {
                        continue;
                    };
                    let Some(partition) = view.broker.partitions().get(&tp) else {
                        continue;
                    };
                    if partition.leader_epoch() != epoch {
                        continue;
                    }
                    let key = (cluster, tp.clone(), *member, view.incarnation, epoch);
                    let from = self.converged_to.get(&key).copied().unwrap_or(0);
                    let verified = compare_range(
                        time_ms,
                        cluster,
                        &tp,
                        *member,
                        leader_log,
                        &partition.log,
                        from,
                        out,
                    );
                    if verified > from && (view.incarnation > 1 || epoch > 0) {
                        self.precondition(Invariant::ReplicaConvergence);
                    }
                    self.converged_to.insert(key, verified);
                }
            }
        }
    }

    /// Takes the consumers' new position resets of group members into `member_resets`.
    fn note_member_resets(&mut self, history: &History) {
        for reset in &history.position_resets[self.position_resets_seen..] {
            let (NodeId::Client(cluster, ..), Some(group)) =
                (reset.consumer, history.groups.get(&reset.consumer))
            else {
                continue;
            };
            let key = (cluster, group.clone(), reset.topic_partition.clone());
            self.member_resets
                .entry(key)
                .or_default()
                .push(reset.offset);
        }
        self.position_resets_seen = history.position_resets.len();
    }

    /// Committed group offsets never move backwards on the current coordinator of a group,
    /// unless an admin commit moved them (see `observe_group_offset`).
    fn check_group_offsets(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
        out: &mut Vec<Violation>,
    ) {
        use mirrorsim::coordinator::group::GroupCoordinatorShard;
        use mirrorsim::coordinator::runtime::ShardHost;
        use mirrorsim::coordinator::CONSUMER_OFFSETS_TOPIC;
        for controller in controllers {
            let cluster = controller.cluster;
            let image = controller.controller.image();
            for (tp, record) in image
                .all_partitions()
                .filter(|(tp, _)| tp.topic == CONSUMER_OFFSETS_TOPIC)
            {
                let Some(leader) = record.leader else {
                    continue;
                };
                let Some(view) = broker_view(brokers, cluster, leader) else {
                    continue;
                };
                let Some(high_watermark) = view.broker.partitions().get(&tp).and_then(|p| {
                    matches!(&p.role, Role::Leader(state) if state.leader_epoch == record.leader_epoch)
                        .then(|| p.log.high_watermark())
                }) else {
                    continue;
                };
                let host = view
                    .broker
                    .hosted_coordinators()
                    .find(|(partition, _)| **partition == tp)
                    .and_then(|(_, host)| host.downcast_ref::<ShardHost<GroupCoordinatorShard>>());
                // A new leader's shard replays its uncommitted tail too; only what is
                // committed counts (a later leader may truncate the rest).
                let Some(host) = host.filter(|host| host.is_committed(high_watermark)) else {
                    continue;
                };
                // The coordinator's own log losing a committed tail (a power loss of the only
                // replicas of a `__consumer_offsets` partition) reloads older commits.
                let coordinator_losses = self
                    .lost_tails
                    .get(&(cluster, tp.clone()))
                    .map_or(0, Vec::len);
                for group in host.shard().group_ids() {
                    for (partition, committed) in host.shard().committed_offsets(&group) {
                        if !committed.by_admin {
                            let key = (cluster, group.to_string(), partition.clone());
                            let log = || {
                                current_leader(controllers, brokers, cluster, &partition)
                                    .map(|(_, log)| log)
                            };
                            self.note_member_commit(time_ms, key, committed.offset, log);
                        }
                        let seen = (cluster, group.as_str(), partition, committed.offset);
                        out.extend(self.observe_group_offset_with(
                            time_ms,
                            seen,
                            committed.by_admin,
                            coordinator_losses,
                        ));
                    }
                }
            }
        }
    }

    /// Notes a member's committed `offset` of (cluster, group, partition) in
    /// `member_commits` when it differs from the last one noted, with the control batches
    /// `log` (the partition's current leader's, if any) holds right below it. The log is
    /// looked up only then: the same commit shows every step.
    fn note_member_commit<'l>(
        &mut self,
        time_ms: i64,
        key: (ClusterIndex, String, TopicPartition),
        offset: i64,
        log: impl FnOnce() -> Option<&'l PartitionLog<MemoryDirDisk>>,
    ) {
        let commits = self.member_commits.entry(key).or_default();
        if commits.last().is_some_and(|last| last.offset == offset) {
            return;
        }
        commits.push(MemberCommit {
            seen_ms: time_ms,
            offset,
            control_from: log().map_or(offset, |log| control_run_before(log, offset)),
        });
    }

    /// Records the committed offset a current coordinator shows for (cluster, group,
    /// partition); a lower value than last time is a violation unless
    /// - an admin commit (to a group without members: a reset, or mirroring's offset sync)
    ///   wrote it, or
    /// - a member wrote it after a mirroring truncation of the partition on this cluster
    ///   (PREPARING's cut to the last mirrored epoch, the mirror fetch's diverging epoch,
    ///   STOPPING's cut to the LSO) noted since the key was first seen and not yet used to
    ///   excuse one (two cuts in quick succession may reset the consumer twice, generator seed
    ///   42: a failback's PREPARING cut, then its first fetch's diverging epoch). Such a cut
    ///   may take the log below a consumer's position —
    ///   a full one when a stopped topic mirrors again and the source knows no last mirrored
    ///   epoch for it —, its fetch gets OffsetOutOfRange, `auto.offset.reset` moves it, and
    ///   its next commit is lower; Kafka's group coordinator takes any offset from a member of
    ///   the current epoch. A position read from the log before the cut may still be committed
    ///   after it, so the cut need not come after the higher commit. Without a cut, a member's
    ///   lower commit is a coordinator fault (lost commits, a fenced member's write) and stays
    ///   a violation, or
    /// - a member wrote it at or above an offset a member's consumer moved its position of the
    ///   partition back to, not yet used to excuse one ([`Checkers::take_member_reset`]).
    ///
    /// Observations are snapshots: an admin reset followed by a member's lower commit between
    /// two of them would be judged by the member's commit alone.
    #[cfg(test)]
    fn observe_group_offset(
        &mut self,
        time_ms: i64,
        seen: (ClusterIndex, &str, TopicPartition, i64),
        by_admin: bool,
    ) -> Option<Violation> {
        self.observe_group_offset_with(time_ms, seen, by_admin, 0)
    }

    /// [`Checkers::observe_group_offset`], where the group's `__consumer_offsets` partition has
    /// lost `coordinator_losses` committed tails (see `lost_tails`): each may also excuse one
    /// lower offset of every partition of its groups (older commits reloaded, generator seeds
    /// 1337263765019609 and …845: a 1-broker cluster's power loss).
    fn observe_group_offset_with(
        &mut self,
        time_ms: i64,
        (cluster, group, partition, offset): (ClusterIndex, &str, TopicPartition, i64),
        by_admin: bool,
        coordinator_losses: usize,
    ) -> Option<Violation> {
        let key = (cluster, group.to_string(), partition.clone());
        let seen = self.group_offsets.get(&key).copied();
        let cuts = self
            .mirror_truncations
            .get(&(cluster, partition.clone()))
            .map_or(0, Vec::len)
            + self
                .lost_tails
                .get(&(cluster, partition.clone()))
                .map_or(0, Vec::len)
            + coordinator_losses;
        // First seen above every high watermark shown since the partition's last cut: the
        // member read that position before the cut (a consumer reads below the high
        // watermark), so the cut may still excuse one lower commit, as for a key seen before
        // it. Generator seed 9200000000000275: b's one-replica orders lost its unflushed tail
        // in a power loss of its leader after the member had read to 25; its first commit, of
        // that position, came after the restart, the log now ending at 1
        // (`regressions/group_commit_read_before_lost_tail`).
        let cuts_used = seen.map_or_else(
            || {
                cuts - usize::from(
                    cuts > 0 && self.read_before_last_cut(cluster, &partition, offset),
                )
            },
            |seen| seen.cuts_used,
        );
        let cuts_at_first_seen = seen.map_or(cuts, |seen| seen.cuts_at_first_seen);
        self.group_offsets.insert(
            key.clone(),
            GroupOffsetSeen {
                offset,
                cuts_used,
                cuts_at_first_seen,
            },
        );
        let previous = seen.map(|seen| seen.offset);
        if previous != Some(offset) {
            self.mark("group-offset-committed");
        }
        if previous.is_some_and(|previous| previous != offset) {
            self.precondition(Invariant::GroupOffsetsMonotonic);
        }
        let previous = previous.filter(|previous| *previous > offset)?;
        if by_admin {
            self.mark("group-offset-admin-reset");
            return None;
        }
        if cuts_used < cuts {
            self.mark("mirror-truncation-reset-group-offset");
            if cuts_used < cuts_at_first_seen {
                self.mark("cut-before-first-commit-reset-group-offset");
            }
            if let Some(seen) = self.group_offsets.get_mut(&key) {
                seen.cuts_used += 1;
            }
            return None;
        }
        // After the cuts (which also move positions back), so a cut's own reset does not
        // leave the cut to excuse a second lower commit.
        if self.take_member_reset(&key, offset) {
            self.mark("consumer-reset-group-offset");
            return None;
        }
        Some(Violation {
            invariant: Invariant::GroupOffsetsMonotonic,
            cluster: Some(cluster),
            topic_partition: Some(partition),
            detail: format!("group {group}'s committed offset went from {previous} to {offset}"),
            time_ms,
        })
    }

    /// Whether a member's consumer of `key`'s group moved its position of the partition back
    /// to `offset` or below and no lower commit used that yet; if so, uses it. Kafka's
    /// position validation (KIP-320) goes back to the end offset the leader it believes
    /// current gives for the position's epoch, and a deposed leader that has not yet learned
    /// of its successor answers with its own shorter log: generator seed 9900000000000186
    /// (fan-out, b's leader of orders-2 isolated at 7.8 s and back with metadata 17 records
    /// behind; a member starting on b after the failover took its metadata and validated the
    /// synced offset 113 against it, end offset 99, and committed 99). The coordinator takes
    /// any offset from a member of the current epoch, so the commit is Kafka's behaviour, not a
    /// coordinator fault.
    fn take_member_reset(
        &mut self,
        key: &(ClusterIndex, String, TopicPartition),
        offset: i64,
    ) -> bool {
        let Some(resets) = self.member_resets.get_mut(key) else {
            return false;
        };
        let Some(index) = resets.iter().position(|reset| *reset <= offset) else {
            return false;
        };
        resets.remove(index);
        true
    }

    /// Whether `offset` lies above every high watermark a current leader of (`cluster`,
    /// `partition`) showed since its last lost tail or mirroring truncation (`committed_end`,
    /// kept for topics that are not durable): no consumer read it from the log as it is since.
    fn read_before_last_cut(
        &self,
        cluster: ClusterIndex,
        partition: &TopicPartition,
        offset: i64,
    ) -> bool {
        self.committed_end
            .get(&(cluster, partition.clone()))
            .is_some_and(|end| offset > *end)
    }

    /// Full replica comparison, duplicate and order scans, and `psm-replica-agreement` on
    /// every partition; run at the end of a run.
    pub fn check_logs_deep(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
    ) -> Vec<Violation> {
        let mut out = self
            .mirror
            .check_producer_states_everywhere(time_ms, controllers, brokers);
        for controller in controllers {
            for (tp, record) in controller.controller.image().all_partitions() {
                let Some((epoch, leader_log)) =
                    current_leader(controllers, brokers, controller.cluster, &tp)
                else {
                    continue;
                };
                for member in &record.isr {
                    let follower = brokers.iter().find(|view| {
                        view.cluster == controller.cluster && view.broker.broker_id() == *member
                    });
                    let Some(follower) = follower else {
                        continue;
                    };
                    let Some(partition) = follower.broker.partitions().get(&tp) else {
                        continue;
                    };
                    let in_epoch = partition.leader_epoch() == epoch;
                    if in_epoch {
                        let (cluster, log) = (controller.cluster, &partition.log);
                        compare_range(time_ms, cluster, &tp, *member, leader_log, log, 0, &mut out);
                    }
                }
                let mut scan = LogScan::default();
                let lost_from = self.lost_from(controller.cluster, &tp);
                scan_new_records(
                    time_ms,
                    controller.cluster,
                    &tp,
                    leader_log,
                    &mut scan,
                    lost_from,
                    &mut out,
                );
            }
        }
        out
    }

    /// End-of-run comparison of the history with the final logs.
    pub fn check_history(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
        history: &History,
    ) -> Vec<Violation> {
        let logs = ViewLeaderLogs {
            controllers,
            brokers,
        };
        let lost_reads;
        let lost_at_origin_reads;
        let cut_at_origin_reads;
        let not_refetched_reads;
        let stop_cut_reads;
        let deposed_reads;
        let deposed_cut_reads;
        let outcome_lost_reads = std::cell::Cell::new(0u64);
        let failback_decided_reads = std::cell::Cell::new(0u64);
        let outcome_lost_skips = std::cell::Cell::new(0u64);
        let (mut out, (rewritten_reads, rewritten_skips, across_skips)) = {
            let by_mirroring = |consumer: NodeId, poll: &PollRecord| {
                self.rewritten_by_mirroring(
                    consumer,
                    history.read_committed.contains(&consumer),
                    poll,
                )
            };
            // Two views of a loss of committed data on a topic that is not durable: a leader
            // log ending below a high watermark seen before (`lost_tails`), and a leader epoch
            // starting below it or a mirror following such a source (`losses`).
            let lost = |consumer: NodeId, poll: &PollRecord| {
                self.lost_with_tail(consumer, poll) || self.lost_after_read(consumer, poll)
            };
            let lost_at_origin = |consumer: NodeId, poll: &PollRecord| {
                self.mirrored_read_lost_at_origin(consumer, poll)
            };
            let not_refetched = |consumer: NodeId, poll: &PollRecord| {
                self.mirrored_read_cut_not_refetched(consumer, poll)
            };
            let stop_cut = |consumer: NodeId, poll: &PollRecord| {
                self.stop_cut_after_outcome_lost(consumer, poll)
            };
            let deposed =
                |consumer: NodeId, poll: &PollRecord| self.read_from_deposed_leader(consumer, poll);
            let deposed_cut = |consumer: NodeId, poll: &PollRecord| {
                self.read_from_deposed_leader_before_mirror_cut(consumer, poll)
            };
            // Every excuse but the last, which is counted on its own below.
            let rewritten_before_deposed_cut = |consumer: &NodeId, poll: &PollRecord| {
                by_mirroring(*consumer, poll)
                    || lost(*consumer, poll)
                    || lost_at_origin(*consumer, poll)
                    || not_refetched(*consumer, poll)
                    || stop_cut(*consumer, poll)
                    || deposed(*consumer, poll)
            };
            let rewritten = |consumer: NodeId, poll: &PollRecord| {
                rewritten_before_deposed_cut(&consumer, poll) || deposed_cut(consumer, poll)
            };
            let reads = || {
                history.polls.iter().flat_map(|((consumer, _), polls)| {
                    polls.iter().map(move |poll| (*consumer, poll))
                })
            };
            let rewritten_reads = reads()
                .filter(|(consumer, poll)| by_mirroring(*consumer, poll))
                .count();
            lost_reads = reads()
                .filter(|(consumer, poll)| !by_mirroring(*consumer, poll) && lost(*consumer, poll))
                .count();
            lost_at_origin_reads = reads()
                .filter(|(consumer, poll)| {
                    !by_mirroring(*consumer, poll)
                        && !lost(*consumer, poll)
                        && lost_at_origin(*consumer, poll)
                })
                .count();
            cut_at_origin_reads = reads()
                .filter(|(consumer, poll)| {
                    !by_mirroring(*consumer, poll)
                        && !lost(*consumer, poll)
                        && lost_at_origin(*consumer, poll)
                        && !self.origin_lost_since_read(poll)
                })
                .count();
            not_refetched_reads = reads()
                .filter(|(consumer, poll)| {
                    !by_mirroring(*consumer, poll)
                        && !lost(*consumer, poll)
                        && !lost_at_origin(*consumer, poll)
                        && not_refetched(*consumer, poll)
                })
                .count();
            stop_cut_reads = reads()
                .filter(|(consumer, poll)| {
                    !by_mirroring(*consumer, poll)
                        && !lost(*consumer, poll)
                        && !lost_at_origin(*consumer, poll)
                        && !not_refetched(*consumer, poll)
                        && stop_cut(*consumer, poll)
                })
                .count();
            deposed_reads = reads()
                .filter(|(consumer, poll)| {
                    !by_mirroring(*consumer, poll)
                        && !lost(*consumer, poll)
                        && !lost_at_origin(*consumer, poll)
                        && !not_refetched(*consumer, poll)
                        && !stop_cut(*consumer, poll)
                        && deposed(*consumer, poll)
                })
                .count();
            deposed_cut_reads = reads()
                .filter(|(consumer, poll)| {
                    !rewritten_before_deposed_cut(consumer, poll) && deposed_cut(*consumer, poll)
                })
                .count();
            let rewritten_skips = std::cell::Cell::new(0u64);
            let across_skips = std::cell::Cell::new(0u64);
            let sent_ms: BTreeMap<&str, i64> = history
                .sends
                .values()
                .map(|send| (send.value.as_str(), send.sent_ms))
                .collect();
            let skip_rewritten = |key: (NodeId, u64, usize), poll: &PollRecord, skipped| {
                let written_later = logs
                    .leader_log(key.0.cluster(), &poll.topic_partition)
                    .and_then(|log| record_value_at(log, skipped))
                    .and_then(|value| sent_ms.get(value.as_str()).copied());
                let previous = history.polls[&(key.0, key.1)][..key.2]
                    .iter()
                    .rev()
                    .find(|earlier| earlier.topic_partition == poll.topic_partition);
                let read_committed = history.read_committed.contains(&key.0);
                let excused = self.skip_rewritten_by_mirroring(key, poll, skipped)
                    || self.skip_over_later_write(key.0, poll, skipped, written_later)
                    || previous.is_some_and(|previous| {
                        self.skip_over_replaced_log(key.0, read_committed, previous, poll, skipped)
                    });
                let across = !excused
                    && previous.is_some_and(|previous| {
                        let log = logs.leader_log(key.0.cluster(), &poll.topic_partition);
                        let reads = (previous, poll);
                        self.skip_across_replaced_log(key.0, read_committed, reads, skipped, log)
                    });
                let outcome_lost = !excused
                    && !across
                    && read_committed
                    && logs
                        .leader_log(key.0.cluster(), &poll.topic_partition)
                        .and_then(|log| transaction_end_at(log, skipped))
                        .is_some_and(|end| {
                            self.skip_over_lost_outcome(key, poll, skipped, end.decided_at)
                        });
                rewritten_skips.set(rewritten_skips.get() + u64::from(excused));
                across_skips.set(across_skips.get() + u64::from(across));
                outcome_lost_skips.set(outcome_lost_skips.get() + u64::from(outcome_lost));
                excused || across || outcome_lost
            };
            let mut out = check_polls(time_ms, &logs, history, &rewritten, &skip_rewritten);
            let outcome_lost = |cluster, tp: &TopicPartition, offset, decided_at, since_ms| {
                if self
                    .outcome_decided_by_failback_source(cluster, tp, offset, decided_at, since_ms)
                {
                    failback_decided_reads.set(failback_decided_reads.get() + 1);
                    return true;
                }
                let lost = self.outcome_lost_since(cluster, tp, offset, decided_at, since_ms);
                outcome_lost_reads.set(outcome_lost_reads.get() + u64::from(lost));
                lost
            };
            let replaced =
                |consumer: NodeId, poll: &PollRecord| self.log_rewritten_since_read(consumer, poll);
            out.extend(check_delivered_records(
                time_ms,
                &logs,
                history,
                (&rewritten, &replaced),
                &outcome_lost,
            ));
            (
                out,
                (rewritten_reads, rewritten_skips.get(), across_skips.get()),
            )
        };
        self.mark_times("read-rewritten-by-mirroring", rewritten_reads);
        self.mark_times("read-lost-with-committed-tail", lost_reads);
        self.mark_times("mirrored-read-lost-at-origin", lost_at_origin_reads);
        self.mark_times("mirrored-read-cut-by-origin-mirroring", cut_at_origin_reads);
        self.mark_times("mirrored-read-cut-not-refetched", not_refetched_reads);
        self.mark_times("read-cut-at-stop-after-outcome-lost", stop_cut_reads);
        self.mark_times("read-from-deposed-leader-past-lossy-start", deposed_reads);
        if failback_decided_reads.get() > 0 {
            *self
                .marks
                .entry("read-outcome-decided-by-failback-source".into())
                .or_default() += failback_decided_reads.get();
        }
        self.mark_times(
            "read-from-deposed-leader-after-mirror-cut",
            deposed_cut_reads,
        );
        if outcome_lost_reads.get() > 0 {
            *self
                .marks
                .entry("read-committed-outcome-lost".into())
                .or_default() += outcome_lost_reads.get();
        }
        if rewritten_skips > 0 {
            *self
                .marks
                .entry("skip-rewritten-by-mirroring".into())
                .or_default() += rewritten_skips;
        }
        if across_skips > 0 {
            *self
                .marks
                .entry("skip-across-replaced-log".into())
                .or_default() += across_skips;
        }
        if outcome_lost_skips.get() > 0 {
            *self
                .marks
                .entry("skip-over-outcome-lost-not-durable".into())
                .or_default() += outcome_lost_skips.get();
        }
        let gone_marks = std::cell::RefCell::new(Vec::new());
        let gone_legally = |send: &crate::world::workload::SendRecord| {
            let mark = self.txn_send_gone_legally(&logs, send);
            gone_marks.borrow_mut().extend(mark);
            mark.is_some()
        };
        let lost_marked = |mark, cluster, tp: &TopicPartition, offset, decided_at, since_ms| {
            let lost = self.outcome_lost_since(cluster, tp, offset, decided_at, since_ms);
            if lost {
                gone_marks.borrow_mut().push(mark);
            }
            lost
        };
        let outcome_lost = |cluster, tp: &TopicPartition, offset, decided_at, since_ms| {
            if self.outcome_decided_by_failback_source(cluster, tp, offset, decided_at, since_ms) {
                gone_marks
                    .borrow_mut()
                    .push("txn-outcome-decided-by-failback-source");
                return true;
            }
            let mark = "txn-outcome-lost-not-durable";
            lost_marked(mark, cluster, tp, offset, decided_at, since_ms)
        };
        let abort_lost = |cluster, tp: &TopicPartition, offset, decided_at, since_ms| {
            let mark = "txn-abort-marker-lost-not-durable";
            lost_marked(mark, cluster, tp, offset, decided_at, since_ms)
        };
        let enlist_lost = |producer: NodeId,
                           send: &crate::world::workload::SendRecord,
                           completed_ms,
                           committed: bool| {
            let cluster = producer.cluster();
            let transactional_id = crate::world::workload::transactional_id(producer);
            let lost = transaction_state_partition(controllers, cluster, &transactional_id)
                .is_some_and(|state| {
                    self.enlist_lost_by_coordinator(cluster, &state, send, completed_ms)
                });
            if lost {
                gone_marks.borrow_mut().push(if committed {
                    "txn-record-outside-commit-after-coordinator-loss"
                } else {
                    "txn-record-outside-abort-after-coordinator-loss"
                });
            }
            lost
        };
        out.extend(check_transaction_atomicity(
            time_ms,
            &logs,
            history,
            &gone_legally,
            &outcome_lost,
            &abort_lost,
            &enlist_lost,
        ));
        for mark in gone_marks.into_inner() {
            self.mark(mark);
        }
        self.note_history_preconditions(&logs, history);
        out.extend(self.check_group_resumes(time_ms, &logs, history));
        let (admin, refusals, excuses) = crate::checks::admin::check_admin_outcomes(
            time_ms,
            &self.admin_world,
            &self.mirror_images,
            &history.admin_ops,
        );
        out.extend(admin);
        if refusals > 0 {
            self.precondition(Invariant::AdminOutcomes);
        }
        for _ in 0..excuses.stale_images {
            self.mark("admin-answered-from-stale-image");
        }
        for _ in 0..excuses.duplicated {
            self.mark("admin-request-duplicated");
        }
        for _ in 0..excuses.landed_late {
            self.mark("admin-delete-landed-late");
        }
        let mut full = Vec::new();
        self.check_acked_durable(time_ms, controllers, brokers, history, true, &mut full);
        out.extend(full);
        out.extend(self.lost_writes(time_ms, controllers, brokers, history));
        out
    }

    /// `group-resume-no-skip`: a consumer group that reads a destination cluster after the
    /// mirror sync committed offsets for it there (a failover's consumers resuming where they
    /// stopped on the source) must not skip a record: every data record of the destination's
    /// final log below the first offset the group read there (above the log start) must be a
    /// record the group read somewhere, on the source or here. A synced offset that a later
    /// truncation (a leader change, STOPPING's cut to the last stable offset) left above the
    /// log, refilled by the destination's own writes, makes the group resume past them. An
    /// offset the group's position had passed on a cluster when a mirroring truncation there
    /// replaced it (from the cut's offset up to the last offset the group had read there) is
    /// excused (mark `resume-over-offset-rewritten-by-mirroring`), as `skipped-poll`'s
    /// `skip-rewritten-by-mirroring` excuses the jump on that cluster. So is a record first
    /// sent after the group's first read there (mark `resume-over-record-written-later`):
    /// it was not in the log the group resumed on, only a later cut below the resume offset
    /// (a one-replica topic's power loss) let a producer write it there, and whether the
    /// group's position then skips it is the reads' checkers' to judge (generator seed
    /// 9400000000001911: the group resumed on c at the synced 170 over records it had read on
    /// a; c's power loss cut payments-0 to 62 and its group offsets back to that 170, c's
    /// producer wrote 62 anew, and the member, reset to 62 by its epoch validation, was held
    /// below it by a transaction the loss left hanging). Two more legitimate passes: offsets a
    /// member's commit passed over control batches only before a mirroring cut replaced them,
    /// where the group had no read to show for its position
    /// ([`Checkers::controls_passed_before_cut`], mark `resume-over-passed-controls-rewritten`),
    /// and a record a READ_COMMITTED member passed while it was aborted, whose ABORT a loss on
    /// a topic that is not durable took since ([`Checkers::group_passed_over_lost_outcome`],
    /// mark `resume-over-outcome-lost-not-durable`).
    fn check_group_resumes(
        &mut self,
        time_ms: i64,
        logs: &dyn LeaderLogs,
        history: &History,
    ) -> Vec<Violation> {
        let mut out = Vec::new();
        for (cluster, group) in &self.synced_groups.clone() {
            let members: Vec<NodeId> = history
                .groups
                .iter()
                .filter(|(node, name)| node.cluster() == *cluster && *name == group)
                .map(|(node, _)| *node)
                .collect();
            if members.is_empty() {
                continue;
            }
            // Values the group read anywhere (a group name is the same on every cluster).
            let read: BTreeSet<&str> = history
                .polls
                .iter()
                .filter(|((node, _), _)| history.groups.get(node) == Some(group))
                .flat_map(|(_, polls)| polls.iter().map(|poll| poll.value.as_str()))
                .collect();
            // The first offset the group read here, per partition (earliest read first).
            let mut first: BTreeMap<&TopicPartition, (i64, i64)> = BTreeMap::new();
            for ((node, _), polls) in &history.polls {
                if !members.contains(node) {
                    continue;
                }
                for poll in polls {
                    let entry = first
                        .entry(&poll.topic_partition)
                        .or_insert((poll.received_ms, poll.offset));
                    if poll.received_ms < entry.0 {
                        *entry = (poll.received_ms, poll.offset);
                    }
                }
            }
            let read_committed = members.iter().any(|m| history.read_committed.contains(m));
            // When each value was first sent.
            let mut sent: BTreeMap<&str, i64> = BTreeMap::new();
            for send in history.sends.values() {
                let first_sent = sent.entry(send.value.as_str()).or_insert(send.sent_ms);
                *first_sent = (*first_sent).min(send.sent_ms);
            }
            // Offsets the group's position had passed on a cluster when a mirroring truncation
            // there replaced them (a topic added back to its mirror: PREPARING cuts the
            // cluster's own records, a MIRROR_PID_RESET among them, and re-mirrors the source's
            // at the same offsets): from the cut's offset up to the last offset the group had
            // read there. Its position legitimately passed them; on that cluster the jump is
            // `skip-rewritten-by-mirroring`, and the sync carried the position on.
            let mut rewritten: Vec<(&TopicPartition, i64, i64)> = Vec::new();
            for ((node, _), polls) in &history.polls {
                if history.groups.get(node) != Some(group) {
                    continue;
                }
                for (index, poll) in polls.iter().enumerate() {
                    let key = (node.cluster(), poll.topic_partition.clone());
                    let Some(cuts) = self.mirror_truncations.get(&key) else {
                        continue;
                    };
                    // The position after this read: up to the next record this consumer read
                    // of the partition (a control batch in between, say the cut's
                    // MIRROR_PID_RESET, moved it on without a record).
                    let passed_to = polls[index + 1..]
                        .iter()
                        .find(|next| next.topic_partition == poll.topic_partition)
                        .map_or(poll.offset, |next| (next.offset - 1).max(poll.offset));
                    for (at_ms, to, _) in cuts {
                        if *at_ms >= poll.fetched_ms && *to <= poll.offset + 1 {
                            rewritten.push((&poll.topic_partition, *to, passed_to));
                        }
                    }
                }
            }
            let passed_controls = self.controls_passed_before_cut(group);
            for (tp, (resumed_ms, resumed_at)) in first {
                let Some(log) = logs.leader_log(*cluster, tp) else {
                    continue;
                };
                if resumed_at <= log.log_start_offset() {
                    continue;
                }
                self.precondition(Invariant::GroupResumeNoSkip);
                let mut excused = 0u64;
                let mut written_later = 0u64;
                let mut controls_rewritten = 0u64;
                let mut outcome_lost = 0u64;
                let outcomes = read_committed.then(|| transaction_outcomes(log));
                let skipped = log
                    .batches_from(log.log_start_offset())
                    .take_while(|batch| batch.base_offset() < resumed_at)
                    .filter(|batch| !batch.is_control())
                    .filter(|batch| {
                        outcomes.as_ref().is_none_or(|outcomes| {
                            outcomes
                                .get(&batch.base_offset())
                                .is_none_or(|(_, outcome)| *outcome == TxnOutcome::Committed)
                        })
                    })
                    .flat_map(|batch| batch.records().filter_map(Result::ok))
                    .filter(|record| record.offset < resumed_at)
                    .filter_map(|record| {
                        let value = record.value.as_deref().map(String::from_utf8_lossy)?;
                        (!read.contains(value.as_ref()))
                            .then(|| (record.offset, value.into_owned()))
                    })
                    .find(|(offset, value)| {
                        let replaced = rewritten.iter().any(|(cut_tp, from, to)| {
                            *cut_tp == tp && (*from..=*to).contains(offset)
                        });
                        excused += u64::from(replaced);
                        let later = !replaced
                            && sent
                                .get(value.as_str())
                                .is_some_and(|sent_ms| *sent_ms > resumed_ms);
                        written_later += u64::from(later);
                        // The same record as the cut cluster's final log holds there: the
                        // one the cut put below the position (mirrored on to here).
                        let controls = !replaced
                            && !later
                            && passed_controls
                                .iter()
                                .any(|(cut_cluster, cut_tp, from, until)| {
                                    cut_tp == tp
                                        && (*from..*until).contains(offset)
                                        && logs
                                            .leader_log(*cut_cluster, tp)
                                            .and_then(|log| record_value_at(log, *offset))
                                            .is_some_and(|there| there == *value)
                                });
                        controls_rewritten += u64::from(controls);
                        let lost = !replaced
                            && !later
                            && !controls
                            && self.group_passed_over_lost_outcome(logs, history, group, tp, value);
                        outcome_lost += u64::from(lost);
                        !replaced && !later && !controls && !lost
                    });
                for _ in 0..excused {
                    self.mark("resume-over-offset-rewritten-by-mirroring");
                }
                for _ in 0..written_later {
                    self.mark("resume-over-record-written-later");
                }
                for _ in 0..controls_rewritten {
                    self.mark("resume-over-passed-controls-rewritten");
                }
                for _ in 0..outcome_lost {
                    self.mark("resume-over-outcome-lost-not-durable");
                }
                if let Some((offset, value)) = skipped {
                    out.push(Violation {
                        invariant: Invariant::GroupResumeNoSkip,
                        cluster: Some(*cluster),
                        topic_partition: Some(tp.clone()),
                        detail: format!(
                            "group {group} resumed at offset {resumed_at} over {value:?} at offset \
                             {offset}, which it never read (the mirror sync committed its offsets \
                             here)"
                        ),
                        time_ms,
                    });
                }
            }
        }
        out
    }

    /// The offsets `[from, until)` of a partition (with the cluster) that `group`'s position
    /// had passed on that cluster over control batches only, without a record to show for
    /// it, when a mirroring truncation there replaced them (for `group-resume-no-skip`): a
    /// member's commit of `until` ([`MemberCommit`]), the last one seen before the cut, with
    /// the log holding only control batches from `from` up to it then, where `from` is the
    /// cut's offset or, when the cut came lower (below records the member read, the same
    /// records the source holds there or judged by the reads' own excuses), the first of those
    /// controls (generator seed 185, chain: the group read a's records 0..23 on b, passed b's
    /// MIRROR_PID_RESET at 24 and committed 25; b's re-add cut b to 0 and mirrored a's records,
    /// a's record at 24 among them), and the cut the first of the partition since, with no loss of committed data
    /// below `until` in between (a loss comes with a leader change the position is validated
    /// at; a second cut replaces a log the commit never saw). A mirroring cut keeps the
    /// leader epoch, so the member fetches on from its position over what the cut put below
    /// it, as `resume-over-offset-rewritten-by-mirroring` excuses after a read; this is the
    /// same position known from a commit where the group had read nothing of the partition yet
    /// (generator seed 9800000000000294, chain a → b → c: the group passed b's
    /// `MIRROR_PID_RESET` at payments-1 offset 0 and committed 1; b's payments, re-added,
    /// PREPARING cut b to 0 (no last mirrored epoch) and mirrored a's records from 0; the
    /// member read on at 1, c mirrored b, and the group resumed on c at the synced 48).
    fn controls_passed_before_cut(
        &self,
        group: &str,
    ) -> Vec<(ClusterIndex, TopicPartition, i64, i64)> {
        let mut passed = Vec::new();
        for ((cluster, name, tp), commits) in &self.member_commits {
            if name != group {
                continue;
            }
            let key = (*cluster, tp.clone());
            let cuts = self.mirror_truncations.get(&key).into_iter().flatten();
            for (index, commit) in commits.iter().enumerate() {
                let next_seen_ms = commits.get(index + 1).map_or(i64::MAX, |next| next.seen_ms);
                let Some((cut_ms, to, _)) = cuts.clone().find(|cut| cut.0 > commit.seen_ms) else {
                    continue;
                };
                let lost = kept_below(
                    all_losses(&self.losses, &self.lost_tails, &key),
                    commit.offset - 1,
                    commit.seen_ms,
                );
                // What the position passed over controls only, from the cut up: the cut may
                // come lower, where the member read records (the reads' own excuses judge
                // those offsets).
                let from = commit.control_from.max(*to);
                if *cut_ms < next_seen_ms && from < commit.offset && !lost {
                    passed.push((*cluster, tp.clone(), from, commit.offset));
                }
            }
        }
        passed
    }

    /// Whether a READ_COMMITTED member of `group` jumped over `value` (a record of `tp`) on
    /// its own cluster where `skipped-poll` excuses the jump as
    /// `skip-over-outcome-lost-not-durable` ([`Checkers::skip_over_lost_outcome`]): the
    /// record's transaction was aborted when the member read past it, and a loss of committed
    /// data on that topic, which is not durable, kept the record but not its ABORT, so a later
    /// marker decides it in the final log. The group's position passed it legitimately there,
    /// and the sync carried that position to a mirror whose copy of the log now commits it
    /// (generator seed 9800000000000175, b mirrors a: the group read a's orders-0 past the
    /// aborted record at 16 (ABORT at 18); a power loss of a's only replica kept 0..17, the
    /// coordinator's COMMIT of the producer's next transaction landed at 18, b's fetcher cut
    /// to 18 and mirrored it, and the group resumed on b at the synced 47). A record the group
    /// jumped over while the log held it for the group is never excused here.
    fn group_passed_over_lost_outcome(
        &self,
        logs: &dyn LeaderLogs,
        history: &History,
        group: &str,
        tp: &TopicPartition,
        value: &str,
    ) -> bool {
        for (&(consumer, incarnation), polls) in &history.polls {
            if history.groups.get(&consumer).map(String::as_str) != Some(group)
                || !history.read_committed.contains(&consumer)
            {
                continue;
            }
            let Some(log) = logs.leader_log(consumer.cluster(), tp) else {
                continue;
            };
            let Some(offset) = offset_of_value(log, value) else {
                continue;
            };
            let Some(end) = transaction_end_at(log, offset) else {
                continue;
            };
            let mut previous = None;
            for (index, poll) in polls.iter().enumerate() {
                if poll.topic_partition != *tp {
                    continue;
                }
                let jumped = previous.is_some_and(|previous| {
                    !poll.after_reset && previous < offset && offset < poll.offset
                });
                previous = Some(poll.offset);
                let key = (consumer, incarnation, index);
                if jumped && self.skip_over_lost_outcome(key, poll, offset, end.decided_at) {
                    return true;
                }
            }
        }
        false
    }

    /// The preconditions of the history checks, judged on the same final logs: which cases
    /// the recorded reads, transactions and retries reached (see [`INVARIANTS`]), and the
    /// transaction outcomes the final logs hold, as coverage marks.
    fn note_history_preconditions(&mut self, logs: &dyn LeaderLogs, history: &History) {
        if history.batch_retries > 0 {
            self.precondition(Invariant::ProducerOrder);
        }
        let mut outcomes: BTreeMap<
            (ClusterIndex, TopicPartition),
            BTreeMap<i64, (i64, TxnOutcome)>,
        > = BTreeMap::new();
        for ((consumer, _), polls) in &history.polls {
            let cluster = consumer.cluster();
            let read_committed = history.read_committed.contains(consumer);
            let mut last: BTreeMap<&TopicPartition, i64> = BTreeMap::new();
            let mut ranges: BTreeMap<&TopicPartition, (i64, i64)> = BTreeMap::new();
            for poll in polls {
                let tp = &poll.topic_partition;
                let moved = self.leader_changed.contains(&(cluster, tp.clone()));
                if let Some(previous) = last.insert(tp, poll.offset).filter(|_| !poll.after_reset) {
                    if poll.offset > previous + 1 {
                        self.precondition(Invariant::SkippedPoll);
                    }
                    if moved {
                        self.precondition(Invariant::NonmonotonicPoll);
                    }
                }
                if moved {
                    self.precondition(Invariant::InconsistentOffsets);
                }
                let range = ranges.entry(tp).or_insert((poll.offset, poll.offset));
                *range = (range.0.min(poll.offset), range.1.max(poll.offset));
            }
            for (tp, (low, high)) in ranges {
                let Some(log) = logs.leader_log(cluster, tp) else {
                    continue;
                };
                let partition_outcomes = outcomes
                    .entry((cluster, tp.clone()))
                    .or_insert_with(|| transaction_outcomes(log));
                for batch in log
                    .batches_from(low)
                    .take_while(|b| b.base_offset() <= high)
                {
                    if batch.base_offset() < low {
                        continue;
                    }
                    if batch.is_control() {
                        self.precondition(Invariant::NoControlRecordsDelivered);
                    } else if read_committed && batch.is_transactional() {
                        match partition_outcomes.get(&batch.base_offset()) {
                            Some((_, TxnOutcome::Aborted)) => {
                                self.precondition(Invariant::ReadCommitted);
                                self.mark("read-committed-skipped-aborted");
                            }
                            Some((_, TxnOutcome::Open)) => {
                                self.precondition(Invariant::ReadCommitted);
                                self.mark("read-committed-skipped-open");
                            }
                            _ => {}
                        }
                    }
                }
            }
        }
        self.note_transaction_preconditions(logs, history, &mut outcomes);
        self.note_unseen_precondition(history);
    }

    /// `transaction-atomicity`'s aborted branch, and marks for the markers the final logs hold:
    /// `txn-commit-marker`, `txn-abort-marker`, `txn-fence-abort` (an ABORT at a producer epoch
    /// above its transaction's records: the coordinator fenced the producer, on a timeout or a
    /// new instance's InitProducerId) and `aborted-index-from-mirrored-data` (a destination's
    /// aborted-transaction index holds a transaction it mirrored).
    fn note_transaction_preconditions(
        &mut self,
        logs: &dyn LeaderLogs,
        history: &History,
        outcomes: &mut PartitionOutcomes,
    ) {
        for ((producer, incarnation, _), transaction) in &history.transactions {
            if transaction.committed != Some(false) {
                continue;
            }
            let cluster = producer.cluster();
            let left_records = transaction.handles.iter().any(|handle| {
                let Some(send) = history.sends.get(&(*producer, *incarnation, *handle)) else {
                    return false;
                };
                let Some(log) = logs.leader_log(cluster, &send.topic_partition) else {
                    return false;
                };
                let partition_outcomes = outcomes
                    .entry((cluster, send.topic_partition.clone()))
                    .or_insert_with(|| transaction_outcomes(log));
                offset_of_value(log, &send.value)
                    .and_then(|offset| log.batches_from(offset).next())
                    .and_then(|batch| partition_outcomes.get(&batch.base_offset()))
                    .is_some_and(|(_, outcome)| *outcome == TxnOutcome::Aborted)
            });
            if left_records {
                self.precondition(Invariant::TransactionAtomicity);
                self.mark("txn-aborted-records-in-log");
            }
        }
        // Every partition a transactional producer wrote to, on its own cluster and on those
        // that mirror it (the partitions read above).
        let mut partitions: BTreeSet<(ClusterIndex, TopicPartition)> =
            outcomes.keys().cloned().collect();
        partitions.extend(
            history
                .sends
                .values()
                .filter(|send| send.transaction.is_some())
                .map(|send| (cluster_of_value(&send.value), send.topic_partition.clone())),
        );
        for (cluster, tp) in partitions {
            let Some(log) = logs.leader_log(cluster, &tp) else {
                continue;
            };
            self.note_markers(cluster, &tp, log);
        }
    }

    /// Marks for the transaction markers of one final log (see
    /// [`Checkers::note_transaction_preconditions`]).
    fn note_markers(
        &mut self,
        cluster: ClusterIndex,
        tp: &TopicPartition,
        log: &PartitionLog<MemoryDirDisk>,
    ) {
        use mirrorsim::record::ControlRecord;
        // Producer id → the epoch of its latest batch (data or marker): an ABORT above it was
        // written for an epoch the producer never wrote with, a fence.
        let mut epochs: BTreeMap<i64, i16> = BTreeMap::new();
        for batch in log.batches_from(log.log_start_offset()) {
            let header = batch.header();
            match batch.control_record() {
                Some(Ok(ControlRecord::EndTransaction { committed, .. })) => {
                    self.mark(if committed {
                        "txn-commit-marker"
                    } else {
                        "txn-abort-marker"
                    });
                    let fenced = epochs
                        .insert(header.producer_id, header.producer_epoch)
                        .is_some_and(|epoch| epoch < header.producer_epoch);
                    if fenced && !committed {
                        self.mark("txn-fence-abort");
                    }
                }
                _ if header.is_transactional() && !header.is_control() => {
                    epochs.insert(header.producer_id, header.producer_epoch);
                }
                _ => {}
            }
        }
        if let Some(mirrored_end) = self.mirror.mirrored_end(cluster, tp) {
            if log
                .aborted_txns()
                .iter()
                .any(|aborted| aborted.last_offset < mirrored_end)
            {
                self.mark("aborted-index-from-mirrored-data");
            }
        }
    }

    /// `unseen`'s case: a reader (a plain consumer, or a group as a whole) whose reads came
    /// from two or more incarnations or members had to see an acknowledged record.
    fn note_unseen_precondition(&mut self, history: &History) {
        let reader = |consumer: &NodeId| match history.groups.get(consumer) {
            Some(group) => format!("group {group} of cluster {}", consumer.cluster()),
            None => consumer.to_string(),
        };
        let mut sources: BTreeMap<String, BTreeSet<(NodeId, u64)>> = BTreeMap::new();
        for ((consumer, incarnation), polls) in &history.polls {
            if !polls.is_empty() {
                sources
                    .entry(reader(consumer))
                    .or_default()
                    .insert((*consumer, *incarnation));
            }
        }
        let spread: BTreeSet<&String> = sources
            .iter()
            .filter(|(_, from)| from.len() > 1)
            .map(|(name, _)| name)
            .collect();
        let required = history.subscriptions.iter().any(|(consumer, topics)| {
            spread.contains(&reader(consumer))
                && history.acked_sends().any(|(_, send)| {
                    cluster_of_value(&send.value) == consumer.cluster()
                        && topics.contains(&send.topic_partition.topic)
                })
        });
        if required {
            self.precondition(Invariant::Unseen);
        }
    }

    /// Jepsen's lost write: an acknowledged acks=all record whose offset is beyond the end of a
    /// fully replicated log (high watermark = log end) can never appear: it was truncated away.
    fn lost_writes(
        &self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
        history: &History,
    ) -> Vec<Violation> {
        let mut out = Vec::new();
        for (offset, send) in history.acked_sends() {
            let (tp, value) = (&send.topic_partition, &send.value);
            let cluster = cluster_of_value(value);
            if !self.durable_topics.contains(&(cluster, tp.topic.clone()))
                || self.dropped_by_mirroring(offset, send)
            {
                continue;
            }
            let Some((_, log)) = current_leader(controllers, brokers, cluster, tp) else {
                continue;
            };
            let replicated = log.high_watermark() == log.log_end_offset();
            if replicated && offset >= log.log_end_offset() {
                out.push(Violation {
                    invariant: Invariant::AckedWritesDurable,
                    cluster: Some(cluster),
                    topic_partition: Some(tp.clone()),
                    detail: format!(
                        "lost write: acknowledged {value:?} at offset {offset}, the leader's replicated log ends at {}",
                        log.log_end_offset()
                    ),
                    time_ms,
                });
                break;
            }
        }
        out
    }

    /// Liveness at the end of the heal phase.
    pub fn check_liveness(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
        history: &History,
    ) -> Vec<Violation> {
        let (mut out, loops) =
            crate::checks::mirror::check_mirror_liveness(time_ms, controllers, brokers);
        if loops > 0 {
            *self
                .marks
                .entry("liveness-mirror-loop-retrying".into())
                .or_default() += loops;
        }
        // Partitions held by a transaction its coordinator lost (see
        // `hanging_after_coordinator_loss`).
        let mut forgotten_txns = BTreeSet::new();
        // Partitions whose open transaction nothing will close, with their last stable offset.
        let mut hung: BTreeMap<(ClusterIndex, TopicPartition), i64> = BTreeMap::new();
        for controller in controllers {
            for (tp, _) in controller.controller.image().all_partitions() {
                let Some((_, log)) = current_leader(controllers, brokers, controller.cluster, &tp)
                else {
                    continue;
                };
                let hanging = self.hanging_after_loss(controller.cluster, &tp, log);
                if hanging {
                    self.mark("hanging-txn-after-loss");
                }
                let forgotten = !hanging
                    && self.hanging_after_coordinator_loss(controller.cluster, &tp, log, |id| {
                        transaction_coordinator_view(controllers, brokers, controller.cluster, id)
                    });
                if forgotten {
                    self.mark("hanging-txn-after-coordinator-loss");
                    forgotten_txns.insert((controller.cluster, tp.clone()));
                }
                if hanging || forgotten {
                    hung.insert((controller.cluster, tp), log.last_stable_offset());
                }
            }
        }
        let inherited = hanging_mirrored_from_source(controllers, brokers, &hung);
        if !inherited.is_empty() {
            *self
                .marks
                .entry("hanging-txn-mirrored-from-source".into())
                .or_default() += inherited.len() as u64;
        }
        for controller in controllers {
            for (tp, record) in controller.controller.image().all_partitions() {
                let leader_log = current_leader(controllers, brokers, controller.cluster, &tp);
                let key = (controller.cluster, tp.clone());
                let hanging = hung.contains_key(&key) || inherited.contains(&key);
                let problem = if record.leader.is_none() {
                    Some("no leader".to_string())
                } else if let Some((_, log)) = leader_log
                    .filter(|(_, log)| log.last_stable_offset() < log.high_watermark())
                    .filter(|_| !hanging)
                {
                    Some(format!(
                        "a transaction is still open: last stable offset {} below high watermark {}",
                        log.last_stable_offset(),
                        log.high_watermark()
                    ))
                } else if record.isr.len() != record.replicas.len() {
                    Some(format!(
                        "ISR {:?} short of replicas {:?}",
                        record.isr, record.replicas
                    ))
                } else {
                    None
                };
                if let Some(problem) = problem {
                    out.push(Violation {
                        invariant: Invariant::Liveness,
                        cluster: Some(controller.cluster),
                        topic_partition: Some(tp),
                        detail: problem,
                        time_ms,
                    });
                }
            }
        }
        for (tp, offset, value) in history.acked() {
            let cluster = cluster_of_value(value);
            let Some((_, log)) = current_leader(controllers, brokers, cluster, tp) else {
                continue;
            };
            if offset >= log.high_watermark() && log.high_watermark() < log.log_end_offset() {
                out.push(Violation {
                    invariant: Invariant::Liveness,
                    cluster: Some(cluster),
                    topic_partition: Some(tp.clone()),
                    detail: format!(
                        "acknowledged offset {offset} still above the high watermark {}",
                        log.high_watermark()
                    ),
                    time_ms,
                });
                break;
            }
        }
        // A killed client's outstanding sends never resolve: its process is gone.
        let alive = |key: &(NodeId, u64, u64)| !history.dead_incarnations.contains(&(key.0, key.1));
        let unresolved = history
            .sends
            .iter()
            .filter(|(key, send)| {
                alive(key) && send.acked_offset.is_none() && send.failed.is_none()
            })
            .count();
        if unresolved > 0 {
            let ((producer, incarnation, _), first) = history
                .sends
                .iter()
                .find(|(key, send)| {
                    alive(key) && send.acked_offset.is_none() && send.failed.is_none()
                })
                .expect("counted above");
            out.push(Violation {
                invariant: Invariant::Liveness,
                cluster: Some(producer.cluster()),
                topic_partition: Some(first.topic_partition.clone()),
                detail: format!(
                    "{unresolved} sends neither acknowledged nor failed after healing; first: {producer}#{incarnation} {:?} sent at {} ms",
                    first.value,
                    first.sent_ms
                ),
                time_ms,
            });
        }
        out.extend(unfinished_admin_ops(time_ms, history));
        let (stuck, rolled_back) =
            unfinished_transactions(time_ms, controllers, brokers, |cluster, tp| {
                self.lost_from(cluster, tp).is_some()
            });
        out.extend(stuck);
        if rolled_back > 0 {
            *self
                .marks
                .entry("stuck-txn-after-coordinator-rollback".into())
                .or_default() += rolled_back;
        }
        let logs = ViewLeaderLogs {
            controllers,
            brokers,
        };
        let outcome_lost_sends = std::cell::Cell::new(0);
        let enlist_lost_sends = std::cell::Cell::new(0);
        let commits_confirmed = commits_confirmed_at(history);
        let (unseen_violations, read_elsewhere) =
            unseen(time_ms, history, |offset, send, read_committed| {
                let outcome_lost = || {
                    let lost = self.commit_lost_not_durable(&logs, offset, send);
                    outcome_lost_sends.set(outcome_lost_sends.get() + u64::from(lost));
                    lost
                };
                let enlist_lost = || {
                    let completed_ms = commits_confirmed.get(send.value.as_str()).copied();
                    let cluster = cluster_of_value(&send.value);
                    let state = |id: &str| transaction_state_partition(controllers, cluster, id);
                    let lost =
                        self.aborted_after_enlist_lost(state, &logs, offset, send, completed_ms);
                    enlist_lost_sends.set(enlist_lost_sends.get() + u64::from(lost));
                    lost
                };
                self.dropped_by_mirroring(offset, send)
                    || self.lost_legally(&logs, offset, send)
                    || (read_committed && self.above_hanging_txn(&logs, offset, send))
                    || (read_committed && above_forgotten_txn(&logs, &forgotten_txns, offset, send))
                    || (read_committed && outcome_lost())
                    || (read_committed && enlist_lost())
            });
        out.extend(unseen_violations);
        if read_elsewhere > 0 {
            *self
                .marks
                .entry("unseen-read-by-group-on-other-cluster".into())
                .or_default() += read_elsewhere;
        }
        if outcome_lost_sends.get() > 0 {
            *self
                .marks
                .entry("unseen-commit-lost-not-durable".into())
                .or_default() += outcome_lost_sends.get();
        }
        if enlist_lost_sends.get() > 0 {
            *self
                .marks
                .entry("unseen-outside-commit-after-coordinator-loss".into())
                .or_default() += enlist_lost_sends.get();
        }
        out
    }

    /// Whether a READ_COMMITTED reader may never receive `send`'s transactional record although
    /// its transaction was confirmed committed, because the COMMIT marker is gone: the topic is
    /// not durable, the final log still holds the record at its offset but not as committed,
    /// and a loss of committed data after the send kept the log above the record and at or
    /// below the control batch that now decides it. The loss took the COMMIT with the unflushed
    /// tail; the partition's leader then held the producer's transaction open from the record
    /// on, and the producer's next transaction under the same producer epoch (transaction
    /// version 1, no epoch bump per transaction) appended to it, so that transaction's ABORT
    /// aborted the record too, as it would in Kafka. The same loss excuses the record in
    /// `transaction-atomicity` (`txn-outcome-lost-not-durable`). Generator seed
    /// 9300000000000389: a's only replica of orders-2 held the record at 116 and its COMMIT at
    /// 117; a torn power loss at 3.75 s kept 0..117, and the producer's next transaction wrote
    /// 117 and an ABORT covering 116.
    fn commit_lost_not_durable(
        &self,
        logs: &dyn LeaderLogs,
        offset: i64,
        send: &crate::world::workload::SendRecord,
    ) -> bool {
        let (tp, value) = (&send.topic_partition, send.value.as_str());
        let cluster = cluster_of_value(value);
        if self.durable_topics.contains(&(cluster, tp.topic.clone())) {
            return false;
        }
        let Some(log) = logs.leader_log(cluster, tp) else {
            return false;
        };
        let holds_it = log
            .batches_from(offset)
            .next()
            .is_some_and(|batch| record_value_in(batch, offset).as_deref() == Some(value));
        let Some(end) = transaction_end_at(log, offset).filter(|_| holds_it) else {
            return false;
        };
        end.outcome != TxnOutcome::Committed
            && self.outcome_lost_since(cluster, tp, offset, end.decided_at, send.sent_ms)
    }

    /// Whether a READ_COMMITTED reader may never receive `send`'s transactional record although
    /// its transaction was confirmed committed (at `completed_ms`), because its coordinator lost
    /// the partition's enlisting (see [`Checkers::enlist_lost_by_coordinator`]: a loss of the
    /// producer's `__transaction_state` partition between the send and the confirmation) and
    /// the final log holds the record at its offset in a transaction its producer's next ABORT
    /// there aborted: the COMMIT went only to the partitions the reloaded coordinator knew of,
    /// and the record stayed open until that ABORT, as `transaction-atomicity` excuses too
    /// (`txn-record-outside-commit-after-coordinator-loss`). Generator seed 9800000000000076:
    /// b-broker-1, b's only broker, answered b-producer-2's AddPartitionsToTxn of payments-0 at
    /// 4.619 s and lost that state record in a power loss at 4.620 s; after the restart the
    /// producer wrote t77 at payments-0 offset 0 (7.34 s), its EndTxn COMMIT (7.39 s) wrote
    /// markers to payments-1 and payments-2 only, and the next transaction's ABORT on
    /// payments-0 aborted t77 with its own records. A record the final log commits, does not
    /// hold at its offset or leaves open (`above_forgotten_txn` judges that), or a
    /// coordinator that lost nothing in that window, excuses nothing.
    /// `state_partition` gives a transactional id's `__transaction_state` partition.
    fn aborted_after_enlist_lost(
        &self,
        state_partition: impl FnOnce(&str) -> Option<TopicPartition>,
        logs: &dyn LeaderLogs,
        offset: i64,
        send: &crate::world::workload::SendRecord,
        completed_ms: Option<i64>,
    ) -> bool {
        let (tp, value) = (&send.topic_partition, send.value.as_str());
        let cluster = cluster_of_value(value);
        let Some(writer) = parse_value(value.as_bytes()) else {
            return false;
        };
        let transactional_id = crate::world::workload::transactional_id(&writer.producer);
        let enlist_lost = state_partition(&transactional_id).is_some_and(|state| {
            self.enlist_lost_by_coordinator(cluster, &state, send, completed_ms)
        });
        if !enlist_lost {
            return false;
        }
        let Some(log) = logs.leader_log(cluster, tp) else {
            return false;
        };
        let holds_it = log
            .batches_from(offset)
            .next()
            .is_some_and(|batch| record_value_in(batch, offset).as_deref() == Some(value));
        holds_it
            && transaction_end_at(log, offset).is_some_and(|end| end.outcome == TxnOutcome::Aborted)
    }

    /// Whether the open transaction that holds `log`'s last stable offset below its high
    /// watermark may be one whose marker a loss of committed data took: the topic is not
    /// durable, and a loss kept the log above the transaction's first record (the LSO), so
    /// its records survived and what came after them, its COMMIT or ABORT among it, may not
    /// have. Kafka leaves such a "hanging transaction" open until an operator aborts it
    /// (`kafka-transactions.sh abort`, KIP-664): its producer's coordinator has finished it and
    /// writes no marker again (generator seed 3307716073686216, a one-replica leader's power
    /// loss at 9.3 s keeping 0..54 with the transaction open at 53).
    fn hanging_after_loss(
        &self,
        cluster: ClusterIndex,
        tp: &TopicPartition,
        log: &PartitionLog<MemoryDirDisk>,
    ) -> bool {
        let lso = log.last_stable_offset();
        lso < log.high_watermark()
            && !self.durable_topics.contains(&(cluster, tp.topic.clone()))
            && self
                .losses
                .get(&(cluster, tp.clone()))
                .is_some_and(|losses| losses.iter().any(|&(_, kept)| lso < kept))
    }

    /// Whether a confirmed commit may have left `send`'s record, which the final log holds,
    /// outside the commit because its transaction coordinator lost the partition's enlisting:
    /// the producer's `__transaction_state` partition (`state_partition` of its cluster) lost
    /// committed data (its only replica's power loss, an unclean election) seen after the send
    /// and no later than the commit was confirmed (`completed_ms`). The coordinator had
    /// answered the AddPartitionsToTxn from a state record the loss took, and reloaded an
    /// older state without the partition; the producer's records there still went to the
    /// partition's leader, which appended them as Kafka does before KIP-890 (transaction
    /// version 1: no verification with the coordinator), and the EndTxn it confirmed wrote
    /// COMMIT markers to the partitions the coordinator knew of only. The record then stays
    /// open until the same producer epoch's next marker there closes it: an ABORT aborts it.
    /// `hanging_after_coordinator_loss` is the case no marker ever comes. Generator seeds
    /// 9400000000000169 and 9400000000002055: b's only broker lost, in a torn power loss, the
    /// record enlisting orders-1 it had answered just before; after the restart transaction
    /// 68 (39) wrote orders-1 at 86 (275), committed, and the next transaction's ABORT at 87
    /// (276) aborted the record. A loss seen before the send (the coordinator the producer
    /// enlisted with had already reloaded), after the confirmation (the coordinator that
    /// decided the commit knew what it had enlisted), of another cluster or of another
    /// transactional id's partition excuses nothing.
    ///
    /// The same loss leaves a confirmed abort's record outside the ABORT markers, open until
    /// the producer's next marker there: a COMMIT commits it (mark
    /// `txn-record-outside-abort-after-coordinator-loss`). `transaction-atomicity` asks this
    /// only when that COMMIT also commits a record of a transaction the producer was confirmed
    /// committed, so the COMMIT is that transaction's own. Generator seed 9800000000000909:
    /// a's only broker lost, in a power loss at 10.77 s, the `__transaction_state` record
    /// enlisting orders-2 for transaction 138 and all of orders-2; after the restart the
    /// producer's retried record landed at orders-2 offset 0, the reloaded coordinator's ABORT
    /// went to orders-0 and orders-3 only, and the producer's next transaction (epoch 1, after
    /// its epoch bump) wrote orders-2 at 1 and committed at 3, committing offset 0 with it, as
    /// Kafka's producer state does before KIP-890 (an open transaction's first offset survives
    /// an epoch bump; no verification with the coordinator).
    fn enlist_lost_by_coordinator(
        &self,
        cluster: ClusterIndex,
        state_partition: &TopicPartition,
        send: &crate::world::workload::SendRecord,
        completed_ms: Option<i64>,
    ) -> bool {
        let Some(completed_ms) = completed_ms else {
            return false;
        };
        let key = (cluster, state_partition.clone());
        all_losses(&self.losses, &self.lost_tails, &key)
            .any(|(time_ms, _)| send.sent_ms <= time_ms && time_ms <= completed_ms)
    }

    /// Whether the open transaction that holds `log`'s last stable offset below its high
    /// watermark is one its transaction coordinator lost: the coordinator's `__transaction_state`
    /// partition lost committed data (its only replica's power loss, an unclean election), and
    /// the coordinator (`coordinator` gives, for a transactional id, its partition and what its
    /// loaded shard holds for it) does not hold this producer id's transaction open on the
    /// partition. The producer's AddPartitionsToTxn was answered from a state record the loss
    /// took, so its produce still went to the partition's leader, which appended it as Kafka
    /// does before KIP-890 (transaction version 1: no verification with the coordinator; a
    /// producer id the leader holds no state for may start at any sequence), and its EndTxn then
    /// found no such transaction (INVALID_PRODUCER_ID_MAPPING): no coordinator ever writes a
    /// marker or times the transaction out, and the LSO stays there until an operator aborts it
    /// (`kafka-transactions.sh abort`, KIP-664). Or the loss kept an older state of the
    /// producer id, the producer's next AddPartitionsToTxn opened a transaction there without
    /// the lost partition, and its EndTxn wrote markers to the others only. Generator seed
    /// 2292223553896731: b's only broker lost, in a power loss at 18.7 s, the Ongoing record
    /// enlisting orders-1 and orders-2 (and those partitions' records); after the restart the
    /// producer's first records there opened a transaction at offset 0 that nothing closes
    /// (`regressions/hanging_txn_after_coordinator_power_loss`, the second case, on orders-3).
    /// A coordinator that still holds the transaction open on the partition times it out or
    /// completes it, and one that lost nothing is trusted to have written every marker: neither
    /// is excused.
    fn hanging_after_coordinator_loss<'m>(
        &self,
        cluster: ClusterIndex,
        tp: &TopicPartition,
        log: &PartitionLog<MemoryDirDisk>,
        coordinator: impl FnOnce(&str) -> Option<(TopicPartition, Option<&'m TransactionMetadata>)>,
    ) -> bool {
        let lso = log.last_stable_offset();
        if lso >= log.high_watermark() {
            return false;
        }
        let Some(open) = log
            .producer_state()
            .ongoing_txns()
            .values()
            .min_by_key(|txn| txn.first_offset)
        else {
            return false;
        };
        let Some(writer) = record_value_at(log, lso.max(open.first_offset))
            .and_then(|value| parse_value(value.as_bytes()))
        else {
            return false;
        };
        let transactional_id = crate::world::workload::transactional_id(&writer.producer);
        let Some((state_partition, metadata)) = coordinator(&transactional_id) else {
            return false; // no loaded coordinator: the liveness check reports its partition
        };
        let held_open = metadata.is_some_and(|metadata| {
            metadata.producer_id == open.producer_id
                && !metadata.state.is_idle()
                && metadata.partitions.contains(tp)
        });
        !held_open && self.lost_from(cluster, &state_partition).is_some()
    }

    /// Whether a READ_COMMITTED reader could not reach `send`'s record because a hanging
    /// transaction (see [`Checkers::hanging_after_loss`]) holds the last stable offset below it.
    fn above_hanging_txn(
        &self,
        logs: &dyn LeaderLogs,
        offset: i64,
        send: &crate::world::workload::SendRecord,
    ) -> bool {
        let tp = &send.topic_partition;
        let cluster = cluster_of_value(&send.value);
        logs.leader_log(cluster, tp).is_some_and(|log| {
            offset >= log.last_stable_offset() && self.hanging_after_loss(cluster, tp, log)
        })
    }

    /// Whether an acknowledged record may be gone from the final log by Kafka's rules: its
    /// topic is not durable (an acks=1 producer, unclean election or `min.insync.replicas` < 2:
    /// an acknowledgement from a leader that then lost its leadership does not survive the
    /// follower's truncation) and the current leader's log no longer holds it at its offset.
    /// A record the log still holds must be seen, on every topic.
    fn lost_legally(
        &self,
        logs: &dyn LeaderLogs,
        offset: i64,
        send: &crate::world::workload::SendRecord,
    ) -> bool {
        let (tp, value) = (&send.topic_partition, send.value.as_str());
        let cluster = cluster_of_value(value);
        !self.durable_topics.contains(&(cluster, tp.topic.clone()))
            && logs
                .leader_log(cluster, tp)
                .is_some_and(|log| record_value_at(log, offset).as_deref() != Some(value))
    }
}

#[cfg(test)]
mod tests {
    use super::history::OutcomeLost;
    use super::liveness::marker_fenced_after_coordinator_rollback;
    use super::*;
    use bytes::Bytes;
    use mirrorsim::broker::BrokerStorage;
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

    fn log_with(
        batches: &[(mirrorsim::record::RecordBatch, AppendOrigin)],
    ) -> PartitionLog<MemoryDirDisk> {
        let mut storage = mirrorsim::broker::MemoryStorage::new();
        let (mut log, _) =
            PartitionLog::open(storage.open_dir("t-0"), LogConfig::default()).unwrap();
        for (batch, origin) in batches {
            log.append_as_leader(batch, 0, *origin, 0).unwrap();
        }
        log.maybe_increment_high_watermark(log.log_end_offset());
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
            after_reset: false,
            received_ms: 0,
            fetched_ms: 0,
        }
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
        let mut files: Vec<_> = std::fs::read_dir(format!("{directory}/checks"))
            .expect("checks folder")
            .map(|entry| entry.expect("entry").path())
            .collect();
        files.sort();
        files.push(format!("{directory}/commands/runner.rs").into());
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
            checkers.aborted_after_enlist_lost(state, logs, 0, &send, Some(1_000))
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
        log.append_as_leader(&plain_batch("a"), 5, AppendOrigin::Client, 0)
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
        let (found, _) = unseen(0, &history, |_, _, _| false);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].invariant, "unseen");
        history
            .polls
            .insert((CONSUMER, 1), vec![poll(&tp, 0, "a-producer-1/1/t-0/0/0")]);
        assert!(unseen(0, &history, |_, _, _| false).0.is_empty());
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
        let other = |history: &History| unseen(0, &history.clone(), |_, _, _| false);
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
            unseen(0, &history, |offset, send, _| {
                checkers.lost_legally(logs, offset, send)
            })
            .0
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
            unseen(0, &history, |offset, send, read_committed| {
                read_committed && checkers.commit_lost_not_durable(&logs, offset, send)
            })
            .0
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
                batches: log.batches_from(0).cloned().collect(),
            },
        };
        let tp = TopicPartition::new("payments", 0);
        let read = |offset, value: &str, fetched_ms, received_ms| PollRecord {
            fetched_ms,
            received_ms,
            ..poll(&tp, offset, value)
        };
        // Epoch 1 began uncleanly at 2; the deposed leader of epoch 0 exposed up to 3.
        let starts = [(1, 2)];
        let zombie = [deposed(0, 4)];
        let excused =
            |starts: &[(i32, i64)], logs: &[DeposedLog], offset, value, fetched_ms, received_ms| {
                read_from_deposed_tail(starts, logs, &read(offset, value, fetched_ms, received_ms))
            };
        assert!(excused(&starts, &zombie, 2, "old-2", 10_000, 10_010));
        assert!(excused(&starts, &zombie, 3, "old-3", 12_590, 12_600));
        // Below the lossy start: the new epoch's lineage holds it (or a loss excuses it).
        assert!(!excused(&starts, &zombie, 1, "old-1", 10_000, 10_010));
        // Not what the deposed log held there, or not below its high watermark.
        assert!(!excused(&starts, &zombie, 2, "new-2", 10_000, 10_010));
        let below_hw = [deposed(0, 3)];
        assert!(!excused(&starts, &below_hw, 3, "old-3", 10_000, 10_010));
        // Outside the steps it was seen leading in its old epoch.
        assert!(!excused(&starts, &zombie, 2, "old-2", 12_700, 12_710));
        assert!(!excused(&starts, &zombie, 2, "old-2", 9_000, 9_010));
        // A leader of the lossy epoch itself (or a later one) is not deposed by it.
        let current = [deposed(1, 4)];
        assert!(!excused(&starts, &current, 2, "old-2", 10_000, 10_010));
        assert!(!excused(&[], &zombie, 2, "old-2", 10_000, 10_010));
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
                batches: log.batches_from(0).cloned().collect(),
            },
        };
        let read = |offset, value: &str| PollRecord {
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

    #[test]
    fn jumps_over_an_aborted_record_whose_abort_a_later_loss_took_are_excused_and_only_those() {
        let tp = TopicPartition::new("t", 0);
        let a = ClusterIndex(0);
        let new = "a-producer-1/1/t-0/9/new";
        // Producer 1's record at 1, then its transaction's marker at 2 (`committed`), and a
        // record at 3.
        let log = |committed| {
            log_with(&[
                (plain_batch("a-v0"), AppendOrigin::Client),
                (value_batch(1, "a-aborted"), AppendOrigin::Client),
                (marker(1, committed), AppendOrigin::Coordinator),
                (plain_batch(new), AppendOrigin::Client),
            ])
        };
        // The final log (seeds 9400000000000713, 9400000000000338): the only replica's power
        // loss kept the record at 1 but not the ABORT at 2, and the coordinator's COMMIT of
        // the producer's next transaction landed there, committing the record.
        let final_log = FixedLogs(BTreeMap::from([(tp.clone(), log(true))]));
        let read = |offset, value: &str| {
            let mut record = poll(&tp, offset, value);
            record.received_ms = 4_000;
            record.fetched_ms = 4_000;
            record
        };
        // A READ_COMMITTED consumer read 0, then 3 past the transaction the read-time log held
        // (`aborted`); a loss at `loss_ms` kept the log up to `kept`.
        let invariants = |aborted: bool, read_committed: bool, loss: Option<(i64, i64)>| {
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
            if let Some((loss_ms, kept)) = loss {
                checkers.note_loss(loss_ms, a, &tp, kept, Some(1));
            }
            let skip = |key, poll: &PollRecord, skipped| {
                let end = transaction_end_at(&final_log.0[&tp], skipped);
                checkers.skip_rewritten_by_mirroring(key, poll, skipped)
                    || end.is_some_and(|end| {
                        checkers.skip_over_lost_outcome(key, poll, skipped, end.decided_at)
                    })
            };
            let found = check_polls(0, &final_log, &history, &|_, _| false, &skip);
            found.into_iter().map(|v| v.invariant).collect::<Vec<_>>()
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
        assert_eq!(transaction_end_at(&final_log.0[&tp], 2), None);
    }

    #[test]
    fn jumps_over_a_log_a_mirroring_cut_replaced_while_the_fetch_travelled_are_excused() {
        // Generator seed 3307716073686192: a READ_COMMITTED consumer read c's 466, then a fetch
        // was answered with the aborted transaction at 467 and c's 468, and PREPARING cut c's
        // log to 0 before the answer arrived, so the step of the read saw an empty log; the
        // final log holds a's mirrored records there.
        let tp = TopicPartition::new("t", 0);
        let local = "a-producer-1/1/t-0/1/x";
        let read_version = |committed| {
            log_with(&[
                (plain_batch("a-v0"), AppendOrigin::Client),
                (
                    value_batch(7, "a-producer-2/1/t-0/0/t"),
                    AppendOrigin::Client,
                ),
                (marker(7, committed), AppendOrigin::Coordinator),
                (plain_batch(local), AppendOrigin::Client),
            ])
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
        let invariants = |committed, read_committed, answered_ms, cut_ms, with_fix| {
            let mut checkers = Checkers::default();
            let mut history = History::default();
            if read_committed {
                history.read_committed.insert(CONSUMER);
            }
            let version = FixedLogs(BTreeMap::from([(tp.clone(), read_version(committed))]));
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
        // The aborted transaction held nothing for READ_COMMITTED in the log it read.
        assert!(invariants(false, true, 4_000, 4_005, true).is_empty());
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
            log.append_as_leader(batch, 0, origin, 0)
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
        assert_eq!(outcomes[&committed], (1, TxnOutcome::Committed));
        assert_eq!(outcomes[&aborted], (2, TxnOutcome::Aborted));
        assert_eq!(outcomes[&orphaned], (3, TxnOutcome::Open));
        assert_eq!(outcomes[&open], (4, TxnOutcome::Open));
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
                    outcome: Some(AdminOutcome {
                        error: ErrorCode::InvalidClusterMirrorState,
                        topics: Vec::new(),
                        started_ms: 0,
                        finished_ms: 5,
                        attempts: 1,
                        unanswered: 0,
                        described: Vec::new(),
                        answered_by: None,
                        final_attempt_ms: 0,
                        answered_at_ms: 0,
                        requests: Vec::new(),
                        duplicated: 0,
                    }),
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
