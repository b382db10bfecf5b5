//! The KIP-1279 checkers (design.md §5) that look at mirrored logs:
//!
//! - `offset-identity` (INV-2): every batch a mirror leader appends is byte-identical to the
//!   source leader's batch at the same offset (checked when the append is reported, against
//!   the source's current leader; offsets the source no longer has are not judged, nor the
//!   first append after the source's own mirroring cut at offsets that cut removed: it may
//!   answer a fetch served before the cut, mark `identity-answered-before-source-cut`).
//! - `read-only-until-stopped` (INV-1): a client batch is appended to a mirror topic's
//!   partition only by a leader whose partition is STOPPED; so is a DeleteRecords carried
//!   out; and a DeleteTopics or CreatePartitions of a mirror topic reaches the controller only
//!   while every partition's committed state in `__mirror_state` is STOPPED (or absent).
//! - `no-stale-pid-after-stopped` (INV-5): once a mirror partition's leader is STOPPED, its
//!   producer state holds no producer whose last batch is mirrored data.
//! - `local-epoch-above-mirrored` (INV-6): on a STOPPED leader, every batch written after the
//!   mirrored data carries a leader epoch above every mirrored batch's.
//! - `legal-transitions` (INV-11) and `coordinator-fencing` (INV-10): read in log order from
//!   the committed part of every `__mirror_state` partition (its current leader's log up to
//!   the high watermark), every state record of a key is a legal transition from the key's
//!   previous state (UNKNOWN without one, or after a tombstone), its state epoch is the
//!   previous one plus one, and its leader epoch is not below the previous one. When a
//!   single-replica partition's leader no longer holds the last batch read (its unflushed
//!   tail lost in a power loss, as acks=all to an ISR of one allows), the partition is read
//!   again from its start, as its coordinator reloaded it.
//! - `mirror-prefix` (INV-3): while a destination leader's partition is MIRRORING or PAUSED,
//!   every batch of its log at or above the source's log start has a batch with the same base
//!   offset and identical bytes in the log of the source cluster's current leader (so the
//!   destination's log is a prefix of the source's). Checked incrementally: per (node,
//!   incarnation, partition) the offset up to which the log was found equal is remembered,
//!   lowered by a truncation, and only batches above it are compared when the log grows.
//! - `single-mirror-fetcher` (INV-12): every mirror fetcher
//!   ([`mirrorsim::broker::Broker::mirror_fetchers`]) runs on a broker that leads the
//!   partition in the latest leader epoch it knows (its role and
//!   its metadata image agree with the fetcher's epoch), only while the task's state is
//!   MIRRORING, and no two fetchers of one cluster share a (partition, leader epoch). A
//!   deposed leader that has not heard of its successor still fetches in its own, older epoch
//!   (Kafka's zombie, fenced by epochs everywhere it writes): that is allowed.
//! - `psm-replica-agreement` (INV-7): the leader's producer state, the producer state a
//!   from-scratch rebuild of the leader's log gives (the log module's replay, as in recovery),
//!   and that of every follower whose log ends where the leader's does (with the same last
//!   batch) agree, per producer id, on the producer epoch, the last sequence, the last offset
//!   and the open transaction's first offset. Entries whose last remembered batch lies below
//!   the log start compared from are left out (a replica whose log starts later never saw
//!   them, and Kafka keeps such entries when the log start moves). Checked when a mirror
//!   partition is first seen STOPPED (once a follower has caught up, or after
//!   [`PSM_WAIT_MS`]), for each partition of a restarted broker once that replica has caught
//!   up with its leader (within [`PSM_WAIT_MS`]), and for every partition at the end of a run.
//!
//! - `offset-sync-clamped` (INV-15): every group offset the mirror sync commits lies in
//!   [log start, log end] of the destination partition's current leader when the commit is
//!   sent (the sync clamps with the high watermark, which is at most the log end). An offset
//!   above the log end is excused when it is at most the high watermark the sync read, and
//!   that leader's mirror fetcher cut its log, on the source's diverging epoch, from at or
//!   above the offset to below it since the sync could have read it ([`SYNC_BOUNDS_AGE_MS`];
//!   mark `offset-sync-raced-mirror-fetcher-cut`). Such a cut moves no mirror state, so the
//!   sync's second state read still finds MIRRORING in the same state epoch, and no
//!   read-then-commit can see a cut that lands between its read and the coordinator's write
//!   (generator seed 9400000000000315, chain a → b → c: after b's PREPARING cut to 0, c's sync
//!   clamped b's stale 57 to c's high watermark 57, and c's fetcher cut c to 0 on b's diverging
//!   epoch; `regressions/sync_commit_raced_mirror_fetcher_cut`). Where the group resumes is
//!   `group-resume-no-skip`'s to judge.
//!
//! "Mirrored data" of a destination partition is what its leaders reported appending from the
//! source (`MirrorAppend`), up to the lowest later truncation; of a deposed leader's appends,
//! only the batches that differ from the current leader's (a mirror loop brings the leader's
//! own batches back to a deposed leader: `MirrorChecks::fold_deposed_appends`).
//!
//! `mirror-prefix` leaves out, by design, the transients the seed's design goes through:
//! - Before a destination leader's first successful mirror append in its leader epoch, its log
//!   is not judged: after PREPARING the log may still hold a suffix the source does not have
//!   (a failback's unmirrored writes beyond the source's end of the last mirrored epoch), which
//!   the fetcher's diverging-epoch answer cuts before anything is appended. A successful
//!   append means the source accepted the fetch's last fetched epoch at the log end, so the
//!   log is aligned from then on; a new leader epoch (another leader, STOPPING's bump) or a
//!   PREPARING or STOPPING truncation starts the wait again.
//! - Batches below the source's log start cannot be compared (the fetcher restarts at the
//!   source's log start when it meets them).
//! - While the source has no live leader in its controller's current epoch (a leader change in
//!   progress), nothing is compared; a new source leader was in the ISR, so it holds every
//!   batch the old one served up to its last stable offset, which is all a fetch returns.
//! - After the source lost committed data (an unclean election or its only replica's power
//!   loss, on a topic that is not durable: `Checkers::losses`), the batches the mirror held
//!   then at or above what the source kept are not judged until a truncation removes them
//!   (the fetcher's next fetch meets the diverging epoch): the source no longer has them
//!   (generator seed 1337263765019451, an unclean election in a).
//! - After the source, itself a mirror destination, cut its log by design (a PREPARING
//!   truncation, or its fetcher meeting its own source's diverging epoch), the batches the
//!   cut removed are not judged through one more append, the answer to a fetch the source
//!   served before the cut (`MirrorChecks::note_source_mirror_cut`; marks
//!   `mirror-prefix-source-prepare-cut`, `mirror-prefix-source-fetcher-cut`).
//! - Already compared batches are not compared again when the source leader changes: their
//!   bytes were the source's, and the source's own checkers judge its replicas.

use std::collections::{BTreeMap, BTreeSet};

use mirrorsim::broker::{BrokerEvent, MemoryDirDisk, Role, TruncationReason};
use mirrorsim::coordinator::runtime::decode_records;
use mirrorsim::log::{PartitionLog, ProducerStateManager};
use mirrorsim::metadata::ConfigResource;
use mirrorsim::mirror::coordinator::{MirrorStateRecord, MIRROR_STATE_TOPIC};
use mirrorsim::mirror::is_valid_transition;
use mirrorsim::mirror::sync::BOOTSTRAP_SERVERS_CONFIG;
use mirrorsim::mirror::TopicMirrorConfig;
use mirrorsim::mirror::{parse_bootstrap_servers, MirrorState};
use mirrorsim::node::Node;
use mirrorsim::protocol::MirrorPartitionId;
use mirrorsim::protocol::{BrokerId, ClusterIndex, NodeId, TopicPartition};

use super::invariants::{Invariant, Violation};
use super::view::{current_leader, BrokerView, ControllerView};

/// A mirrored append waiting for its identity check.
#[derive(Debug, Clone)]
struct MirroredAppend {
    node: NodeId,
    topic_partition: TopicPartition,
    first_offset: i64,
    last_offset: i64,
    /// `[from, to)` of a source's own cut this append may answer a fetch from before (the
    /// `mirror-prefix` excuse of [`PrefixProgress::source_cut`], read when the append was
    /// seen): `offset-identity` does not judge its batches there.
    answered_before_source_cut: Option<(i64, i64)>,
}

/// How long a `psm-replica-agreement` check waits for a replica to catch up with its leader.
pub const PSM_WAIT_MS: i64 = 5_000;

/// A mirror append by a deposed destination leader (one the controller's current epoch no
/// longer names), waiting to be folded into the mirrored data.
#[derive(Debug, Clone)]
struct DeposedAppend {
    node: NodeId,
    incarnation: u64,
    topic_partition: TopicPartition,
    first_offset: i64,
    last_offset: i64,
    /// The greatest leader epoch of the appended batches when the append was reported.
    epoch: i32,
}

/// `mirror-prefix` progress of one destination leader.
#[derive(Debug, Clone, Copy)]
struct PrefixProgress {
    /// The leader epoch in which the leader appended from its source (its log is judged only
    /// while it leads in this epoch).
    leader_epoch: i32,
    /// Offset below which the log was found equal to the source's.
    checked_to: i64,
    /// `(from, to, below_epoch)`: batches in `[from, to)` with a leader epoch below
    /// `below_epoch` belong to what the source lost above `from` (see
    /// [`MirrorChecks::note_source_loss`]); not judged until a truncation cuts them.
    stale: Option<(i64, i64, i32)>,
    /// `(from, to, appends, mark)`: the source's own cut as a mirror destination (a chain's
    /// middle cluster mirroring again, or a failback's old primary following its new source)
    /// removed its batches in `[from, to)`; this leader's batches there are not judged while
    /// its fetcher has not yet fetched from the cut log: through at most one more append
    /// (`appends` counts them), the answer to a fetch the source served before the cut (see
    /// [`MirrorChecks::note_source_mirror_cut`]). `mark` names the excuse by the cut's kind.
    source_cut: Option<(i64, i64, u32, &'static str)>,
}

/// A cut a destination leader's mirror fetcher made on the source's diverging epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FetcherCut {
    cluster: ClusterIndex,
    leader: BrokerId,
    topic_partition: TopicPartition,
    /// The log end before and after.
    from: i64,
    to: i64,
    /// When the checkers saw it.
    seen_ms: i64,
}

/// A group offset the mirror sync committed, waiting for `offset-sync-clamped`.
#[derive(Debug, Clone)]
struct SyncedOffset {
    cluster: ClusterIndex,
    group_id: String,
    topic_partition: TopicPartition,
    offset: i64,
    /// The destination high watermark the sync read this round.
    high_watermark_read: i64,
}

/// How long before the checkers see a synced offset the sync may have read the destination's
/// bounds: a round reads them (ListOffsets) and then the partitions' states again, each
/// waiting at most [`mirrorsim::broker::SYNC_REQUEST_TIMEOUT_MS`] for its answers, and commits
/// right after; plus the runner's check interval, by which the checkers may see the cut late.
pub const SYNC_BOUNDS_AGE_MS: i64 = 2 * mirrorsim::broker::SYNC_REQUEST_TIMEOUT_MS + 10;

/// (cluster, `__mirror_state` partition, mirror, key) of a partition's mirror state.
type StoredKey = (ClusterIndex, i32, String, MirrorPartitionId);

/// How far `legal-transitions` and `coordinator-fencing` read one `__mirror_state` partition.
#[derive(Debug, Default, Clone, Copy)]
struct StateLogProgress {
    /// Offset up to which its records were checked.
    checked: i64,
    /// (base offset, CRC) of the last batch read, to notice that the log lost it.
    last_batch: Option<(i64, u32)>,
}

/// Whether the current leader's `log` of a `__mirror_state` partition no longer holds the
/// last batch read from it (`progress`), and the partition has a single replica
/// (`replicas`): its committed records were lost with that replica's unflushed tail, which
/// an acks=all write to an ISR of one allows (no fsync), so the coordinator rebuilt its state
/// from a shorter log (generated seeds 1337263765019463, …784, …815 and …974: a one-broker
/// destination's power loss). With more replicas a committed record is never lost, and a
/// log that lost one is judged as it is.
fn state_log_lost(
    log: &PartitionLog<MemoryDirDisk>,
    progress: &StateLogProgress,
    replicas: usize,
) -> bool {
    let Some((base, crc)) = progress.last_batch else {
        return false;
    };
    let still_there = log
        .batches_from(base)
        .next()
        .is_some_and(|batch| batch.base_offset() == base && batch.header().crc == crc);
    replicas == 1 && !still_there
}

/// The state the mirror checkers carry between steps.
#[derive(Debug, Default)]
pub struct MirrorChecks {
    /// The design run: its stored form of a mirrored batch is what identity is judged
    /// against (the seed's: the source's bytes).
    pub design: mirrorsim::mirror::MirrorDesign,
    /// `mirror-prefix`: (node, incarnation, partition) → progress, for destination leaders
    /// that appended from their source.
    prefix: BTreeMap<(NodeId, u64, TopicPartition), PrefixProgress>,
    /// `mirror-prefix`: source cuts (kept, cut from, mark) noted for a destination leader with
    /// no prefix entry in its current leader epoch; seeded into its next entry.
    unmet_source_cuts: BTreeMap<(NodeId, u64, TopicPartition), (i64, i64, &'static str)>,
    /// `psm-replica-agreement`: the last incarnation seen per broker.
    incarnations: BTreeMap<NodeId, u64>,
    /// `psm-replica-agreement`: restarted brokers (node, incarnation) → when the restart was
    /// seen; their partitions are checked once caught up.
    restarted: BTreeMap<(NodeId, u64), i64>,
    /// `psm-replica-agreement`: (node, incarnation, partition) of restarted brokers already
    /// checked.
    restart_checked: BTreeSet<(NodeId, u64, TopicPartition)>,
    /// `psm-replica-agreement`: STOPPED partitions waiting for a follower to catch up, with
    /// the time after which they are checked with whatever has caught up.
    psm_pending: BTreeMap<(ClusterIndex, TopicPartition), i64>,
    pending: Vec<MirroredAppend>,
    /// (destination cluster, partition) → end offset (exclusive) and greatest leader epoch of
    /// the mirrored data.
    mirrored: BTreeMap<(ClusterIndex, TopicPartition), (i64, i32)>,
    /// Mirror appends by deposed leaders, folded into `mirrored` at the next check once
    /// compared with the current leader's log (see [`MirrorChecks::fold_deposed_appends`]).
    deposed_appends: Vec<DeposedAppend>,
    /// (node, incarnation, partition) → where a STOPPED log's mirrored data ends on that
    /// broker, and the offset from which its local batches are still to be checked.
    stopped_scanned: BTreeMap<(NodeId, u64, TopicPartition), (i64, i64)>,
    /// Violations found while consuming events, reported at the next check.
    found: Vec<Violation>,
    /// (cluster, `__mirror_state` partition) → offset up to which its records were checked,
    /// and the (base offset, CRC) of the last batch read there.
    state_log_checked: BTreeMap<(ClusterIndex, TopicPartition), StateLogProgress>,
    /// (cluster, `__mirror_state` partition, mirror, key) → (state, state epoch, leader
    /// epoch) of its last record.
    stored: BTreeMap<StoredKey, (MirrorState, i32, i32)>,
    /// Preconditions noted, by invariant (merged into the marks by the checkers; see
    /// [`super::INVARIANTS`]).
    pub preconditions: BTreeMap<Invariant, u64>,
    /// `single-mirror-fetcher`: the brokers seen running a fetcher, per mirror partition.
    fetcher_brokers: BTreeMap<(ClusterIndex, TopicPartition), BTreeSet<BrokerId>>,
    /// Mirror topics a broker forwarded a DeleteTopics or CreatePartitions for, waiting for
    /// their check: (cluster, topic, who forwarded).
    forwarded_topic_admin: Vec<(ClusterIndex, String, NodeId)>,
    /// Synced group offsets waiting for their check.
    synced_offsets: Vec<SyncedOffset>,
    /// Cuts destination leaders' mirror fetchers made on the source's diverging epoch in the
    /// last [`SYNC_BOUNDS_AGE_MS`].
    fetcher_cuts: Vec<FetcherCut>,
    /// Losses of committed data not yet applied to `prefix`: (cluster, partition, offset the
    /// log kept, the leader epoch that began there, if one did).
    source_losses: Vec<(ClusterIndex, TopicPartition, i64, Option<i32>)>,
    /// Mirroring cuts of mirror sources not yet applied to `prefix`: (cluster, partition,
    /// offset the log kept, where it ended before, the excuse's mark).
    source_mirror_cuts: Vec<(ClusterIndex, TopicPartition, i64, i64, &'static str)>,
    /// Mirror destination partitions that lost committed data (see `note_source_loss`): the
    /// lowest offset a loss kept. A loss at or below the mirrored data's end took STOPPING's
    /// MIRROR_PID_RESET with it.
    destination_losses: BTreeMap<(ClusterIndex, TopicPartition), i64>,
    /// When each cluster's `__mirror_state` lost committed data (see
    /// [`MirrorChecks::note_mirror_state_loss`]).
    mirror_state_losses: BTreeMap<ClusterIndex, Vec<i64>>,
    /// (destination cluster, partition) → when a leader first appended mirrored data.
    first_mirror_append_ms: BTreeMap<(ClusterIndex, TopicPartition), i64>,
    /// (node, incarnation, partition) of the stops a leader made as stops of its cluster's
    /// own writes (no cut to the LSO, no MIRROR_PID_RESET), when they began.
    own_write_stops: BTreeMap<(NodeId, u64, TopicPartition), i64>,
    /// Marks of excuses used (merged into the checkers' marks).
    pub marks: BTreeMap<&'static str, u64>,
}

impl MirrorChecks {
    /// Where the mirrored data of a destination partition ends (exclusive), if it has any.
    pub fn mirrored_end(&self, cluster: ClusterIndex, tp: &TopicPartition) -> Option<i64> {
        self.mirrored
            .get(&(cluster, tp.clone()))
            .map(|(end, _)| *end)
    }

    /// Where the mirrored data of a destination partition ends (exclusive) and the greatest
    /// leader epoch of its batches (a source's epoch), if it has any.
    pub fn mirrored_extent(
        &self,
        cluster: ClusterIndex,
        tp: &TopicPartition,
    ) -> Option<(i64, i32)> {
        self.mirrored.get(&(cluster, tp.clone())).copied()
    }

    /// A partition of `cluster` lost committed data above `kept` (an unclean election or a
    /// power loss of its only replica on a topic that is not durable, or a mirror's cut that
    /// followed one, see `Checkers::losses`). A mirror of it may hold batches fetched before
    /// that its source no longer has, until its fetcher meets the diverging epoch and truncates
    /// them: `mirror-prefix` leaves those batches unjudged until a truncation removes them.
    /// When the loss is a new leader epoch beginning at `kept` (`epoch`), they are the batches
    /// at or above `kept` with a lower epoch, fetched before the loss or after it from the
    /// deposed leader, which still serves its epoch until it hears of the new one (generator
    /// seed 1337263765019451, shrunk); otherwise (a mirror's cut that followed its source's)
    /// the batches the mirror held then at or above `kept`.
    pub fn note_source_loss(
        &mut self,
        cluster: ClusterIndex,
        tp: &TopicPartition,
        kept: i64,
        epoch: Option<i32>,
    ) {
        self.source_losses.push((cluster, tp.clone(), kept, epoch));
        let key = (cluster, tp.clone());
        if self.mirrored.contains_key(&key) {
            let lowest = self.destination_losses.entry(key).or_insert(kept);
            *lowest = (*lowest).min(kept);
        }
    }

    /// `cluster`'s `__mirror_state` lost committed data at `time_ms` (its only replica's
    /// power loss, or an unclean election: a topic that is not durable). A leader that reads a
    /// key's state afterwards may find an earlier state than the last one written, or none:
    /// UNKNOWN, or a PREPARING written before the cut that followed, both of which say the
    /// log holds the cluster's own writes only, while it holds mirrored data. Its stop then
    /// writes no MIRROR_PID_RESET, as the state it read allows; `no-stale-pid-after-stopped`
    /// excuses that stop (mark `stale-pid-after-mirror-state-lost`; generated seed
    /// 10000000000000633: b's single broker lost its whole `__mirror_state` and kept 671
    /// mirrored records of `orders-0`; the next leadership read UNKNOWN, the topic was removed
    /// during PREPARING, and the stop kept a's producer 0).
    pub fn note_mirror_state_loss(&mut self, time_ms: i64, cluster: ClusterIndex) {
        self.mirror_state_losses
            .entry(cluster)
            .or_default()
            .push(time_ms);
    }

    /// Whether a stop of own writes by (`node`, `incarnation`) of `tp` followed a loss of its
    /// cluster's `__mirror_state` that came after the partition's first mirrored append (see
    /// [`MirrorChecks::note_mirror_state_loss`]).
    fn own_write_stop_after_state_loss(
        &self,
        node: NodeId,
        incarnation: u64,
        tp: &TopicPartition,
    ) -> bool {
        let cluster = node.cluster();
        let Some(&stop_ms) = self.own_write_stops.get(&(node, incarnation, tp.clone())) else {
            return false;
        };
        let Some(&mirrored_ms) = self.first_mirror_append_ms.get(&(cluster, tp.clone())) else {
            return false;
        };
        self.mirror_state_losses
            .get(&cluster)
            .into_iter()
            .flatten()
            .any(|&lost_ms| mirrored_ms <= lost_ms && lost_ms <= stop_ms)
    }

    /// A mirror destination partition of `cluster` cut its log from `before` down to `kept`
    /// by design: in PREPARING (its last-mirrored-epoch lookup: −1 cuts everything; the
    /// middle of a chain mirroring again) or when its fetcher met its own source's diverging
    /// epoch (a failback's old primary dropping the writes it took after its last mirrored
    /// epoch). A mirror of it may still hold the removed batches, and may append once more
    /// from a fetch the source answered before the cut (generator seed 9200000000000311: c
    /// appended b's batch 131 just after b's PREPARING cut to 0; generator seed
    /// 9700000000000442: b's deposed mirror leader appended a's 40..=94, answered 23 ms
    /// before a's fetcher cut a to 74): `mirror-prefix` leaves those batches unjudged until
    /// its fetcher's next fetch meets the cut log, which must truncate them (a later append
    /// while they remain is judged). `mark` names the excuse when it is used.
    pub fn note_source_mirror_cut(
        &mut self,
        cluster: ClusterIndex,
        tp: &TopicPartition,
        kept: i64,
        before: i64,
        mark: &'static str,
    ) {
        self.source_mirror_cuts
            .push((cluster, tp.clone(), kept, before, mark));
    }

    /// Notes that `invariant`'s case arose (see [`Invariant`]).
    fn precondition(&mut self, invariant: Invariant) {
        *self.preconditions.entry(invariant).or_default() += 1;
    }

    /// Looks at one broker event (called for every event the checkers consume).
    pub fn observe(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        view: &BrokerView<'_>,
        event: &BrokerEvent,
    ) {
        let node = NodeId::Broker(view.cluster, view.broker.broker_id());
        match event {
            BrokerEvent::StopOfOwnWrites { topic_partition } => {
                self.own_write_stops
                    .entry((node, view.incarnation, topic_partition.clone()))
                    .or_insert(time_ms);
            }
            BrokerEvent::MirrorAppend {
                topic_partition,
                first_offset,
                last_offset,
            } => {
                self.first_mirror_append_ms
                    .entry((view.cluster, topic_partition.clone()))
                    .or_insert(time_ms);
                let appended_epoch =
                    max_epoch(view, topic_partition, *first_offset, last_offset + 1);
                if is_deposed(controllers, view, topic_partition) {
                    self.deposed_appends.push(DeposedAppend {
                        node,
                        incarnation: view.incarnation,
                        topic_partition: topic_partition.clone(),
                        first_offset: *first_offset,
                        last_offset: *last_offset,
                        epoch: appended_epoch,
                    });
                } else {
                    self.fold_mirrored(
                        view.cluster,
                        topic_partition,
                        last_offset + 1,
                        appended_epoch,
                    );
                }
                self.note_aligned(view, topic_partition);
                let mut answered_before_source_cut = None;
                if let Some(progress) =
                    self.prefix
                        .get_mut(&(node, view.incarnation, topic_partition.clone()))
                {
                    // A second append after the source's cut answers a fetch sent after it:
                    // the fetcher met the cut log, so what it still holds is judged.
                    progress.source_cut = progress
                        .source_cut
                        .map(|(from, to, appends, mark)| (from, to, appends + 1, mark))
                        .filter(|(_, _, appends, _)| *appends < 2);
                    answered_before_source_cut =
                        progress.source_cut.map(|(from, to, _, _)| (from, to));
                }
                self.pending.push(MirroredAppend {
                    node,
                    topic_partition: topic_partition.clone(),
                    first_offset: *first_offset,
                    last_offset: *last_offset,
                    answered_before_source_cut,
                });
                // Mirroring again after a STOPPED a broker of this cluster was judged in (a
                // failback whose PREPARING truncated nothing, so no `Truncated` reset it): the
                // next STOPPED has new mirrored data, so its boundary is found anew, on every
                // replica, not only this appender: the one judged before may be elected again
                // and stop over what another leader mirrored meanwhile (generator seed
                // 9960000000000437).
                let before = self.stopped_scanned.len();
                self.stopped_scanned.retain(|(scanned_node, _, tp), _| {
                    !(scanned_node.cluster() == view.cluster
                        && tp == topic_partition
                        && *scanned_node != node)
                });
                if self.stopped_scanned.len() < before {
                    *self
                        .marks
                        .entry("stopped-boundary-renewed-after-other-replica-mirrored")
                        .or_default() += 1;
                }
                self.stopped_scanned
                    .remove(&(node, view.incarnation, topic_partition.clone()));
            }
            BrokerEvent::Truncated {
                topic_partition,
                from_log_end_offset,
                to_log_end_offset,
                reason,
                ..
            } => {
                let cut_mark = match reason {
                    TruncationReason::MirrorLastMirroredEpoch => {
                        Some("mirror-prefix-source-prepare-cut")
                    }
                    TruncationReason::MirrorDivergingEpoch => {
                        Some("mirror-prefix-source-fetcher-cut")
                    }
                    _ => None,
                };
                if let Some(mark) = cut_mark.filter(|_| to_log_end_offset < from_log_end_offset) {
                    self.note_source_mirror_cut(
                        view.cluster,
                        topic_partition,
                        *to_log_end_offset,
                        *from_log_end_offset,
                        mark,
                    );
                }
                if *reason == TruncationReason::MirrorDivergingEpoch
                    && to_log_end_offset < from_log_end_offset
                {
                    self.fetcher_cuts.push(FetcherCut {
                        cluster: view.cluster,
                        leader: view.broker.broker_id(),
                        topic_partition: topic_partition.clone(),
                        from: *from_log_end_offset,
                        to: *to_log_end_offset,
                        seen_ms: time_ms,
                    });
                }
                let key = (node, view.incarnation, topic_partition.clone());
                if matches!(
                    reason,
                    TruncationReason::MirrorLastMirroredEpoch
                        | TruncationReason::MirrorStopAtLastStableOffset
                ) {
                    self.prefix.remove(&key);
                } else if let Some(progress) = self.prefix.get_mut(&key) {
                    progress.checked_to = progress.checked_to.min(*to_log_end_offset);
                    progress.stale = progress
                        .stale
                        .map(|(from, to, epoch)| (from, to.min(*to_log_end_offset), epoch))
                        .filter(|(from, to, _)| from < to);
                    progress.source_cut = progress
                        .source_cut
                        .map(|(from, to, appends, mark)| {
                            (from, to.min(*to_log_end_offset), appends, mark)
                        })
                        .filter(|(from, to, _, _)| from < to);
                }
                for deposed in &mut self.deposed_appends {
                    if deposed.node.cluster() == view.cluster
                        && deposed.topic_partition == *topic_partition
                    {
                        deposed.last_offset = deposed.last_offset.min(to_log_end_offset - 1);
                    }
                }
                self.deposed_appends
                    .retain(|deposed| deposed.first_offset <= deposed.last_offset);
                let key = (view.cluster, topic_partition.clone());
                if let Some((end, epoch)) = self.mirrored.get_mut(&key) {
                    if *to_log_end_offset < *end {
                        // Rare: recompute what is left of the mirrored data.
                        *end = *to_log_end_offset;
                        *epoch = max_epoch(view, topic_partition, 0, *end);
                    }
                }
                self.stopped_scanned.retain(|(scanned_node, _, tp), _| {
                    !(*scanned_node == node && tp == topic_partition)
                });
            }
            BrokerEvent::LeaderAppend {
                topic_partition,
                first_offset,
                mirror_state: Some(state),
                control,
                ..
            } => self.check_read_only(
                time_ms,
                view,
                topic_partition,
                *first_offset,
                *state,
                *control,
            ),
            BrokerEvent::RecordsDeleted {
                topic_partition,
                log_start_offset,
                mirror_state: Some(state),
            } if *state != MirrorState::Stopped => self.found.push(Violation {
                invariant: Invariant::ReadOnlyUntilStopped,
                cluster: Some(view.cluster),
                topic_partition: Some(topic_partition.clone()),
                detail: format!("{node} deleted records up to {log_start_offset} while {state}"),
                time_ms,
            }),
            BrokerEvent::TopicAdminForwarded { topics } => {
                for topic in topics {
                    if view.broker.image().mirror_desired_state(topic).is_some() {
                        self.forwarded_topic_admin
                            .push((view.cluster, topic.clone(), node));
                    }
                }
            }
            BrokerEvent::MirrorOffsetSynced {
                group_id,
                topic_partition,
                offset,
                high_watermark_read,
                ..
            } => self.synced_offsets.push(SyncedOffset {
                cluster: view.cluster,
                group_id: group_id.clone(),
                topic_partition: topic_partition.clone(),
                offset: *offset,
                high_watermark_read: *high_watermark_read,
            }),
            _ => {}
        }
    }

    /// A destination leader appended from its source: its log is aligned with the source's
    /// (see the module doc), so `mirror-prefix` judges it from now on in this leader epoch.
    fn note_aligned(&mut self, view: &BrokerView<'_>, topic_partition: &TopicPartition) {
        let Some(Role::Leader(state)) = view
            .broker
            .partitions()
            .get(topic_partition)
            .map(|partition| &partition.role)
        else {
            return;
        };
        let node = NodeId::Broker(view.cluster, view.broker.broker_id());
        let progress = self
            .prefix
            .entry((node, view.incarnation, topic_partition.clone()))
            .or_insert(PrefixProgress {
                leader_epoch: state.leader_epoch,
                checked_to: 0,
                stale: None,
                source_cut: self
                    .unmet_source_cuts
                    .get(&(node, view.incarnation, topic_partition.clone()))
                    .map(|(from, to, mark)| (*from, *to, 0, *mark)),
            });
        if progress.leader_epoch != state.leader_epoch {
            *progress = PrefixProgress {
                leader_epoch: state.leader_epoch,
                checked_to: 0,
                stale: None,
                source_cut: self
                    .unmet_source_cuts
                    .get(&(node, view.incarnation, topic_partition.clone()))
                    .map(|(from, to, mark)| (*from, *to, 0, *mark)),
            };
        }
        let seeded = progress
            .source_cut
            .is_some_and(|(_, _, appends, _)| appends == 0);
        if self
            .unmet_source_cuts
            .remove(&(node, view.incarnation, topic_partition.clone()))
            .is_some()
            && seeded
        {
            *self
                .marks
                .entry("mirror-prefix-source-cut-before-entry")
                .or_default() += 1;
        }
    }

    /// A source's mirroring cut of `cut_tp` (kept, cut from, excuse mark) reached no prefix
    /// entry of a destination leader that mirrors it from `cluster`, because that leader has no
    /// entry in its current leader epoch yet (a leader-epoch change, e.g. a DLE ≥ SLE bump,
    /// reset it): kept for the entry [`Self::note_aligned`] creates next, so the answer to a
    /// fetch served before the cut is excused as it would have been (generated seed
    /// 9980000000001084: the check judged c against b's log, legitimately empty mid-refill).
    fn note_unmet_source_cut(
        &mut self,
        brokers: &[BrokerView<'_>],
        cluster: ClusterIndex,
        cut_tp: &TopicPartition,
        (kept, before, mark): (i64, i64, &'static str),
    ) {
        for view in brokers {
            let Some(Role::Leader(state)) = view.broker.partitions().get(cut_tp).map(|p| &p.role)
            else {
                continue;
            };
            if source_cluster(view, &cut_tp.topic) != Some(cluster) {
                continue;
            }
            let key = (
                NodeId::Broker(view.cluster, view.broker.broker_id()),
                view.incarnation,
                cut_tp.clone(),
            );
            if self
                .prefix
                .get(&key)
                .is_some_and(|progress| progress.leader_epoch == state.leader_epoch)
            {
                continue;
            }
            let entry = self
                .unmet_source_cuts
                .entry(key)
                .or_insert((kept, before, mark));
            *entry = (entry.0.min(kept), entry.1.max(before), mark);
        }
    }

    fn check_read_only(
        &mut self,
        time_ms: i64,
        view: &BrokerView<'_>,
        topic_partition: &TopicPartition,
        first_offset: i64,
        state: MirrorState,
        control: bool,
    ) {
        // The event says what was appended: the log may hold another batch there by now
        // (generator seed 9700000000001605: STOPPING's reset at 12, cut by the PREPARING of a
        // re-added mirror and replaced by a mirrored batch before the check read the log).
        if !control && state != MirrorState::Stopped {
            self.found.push(Violation {
                invariant: Invariant::ReadOnlyUntilStopped,
                cluster: Some(view.cluster),
                topic_partition: Some(topic_partition.clone()),
                detail: format!(
                    "{} appended a client batch at offset {first_offset} while {state}",
                    view.broker.node_id(),
                ),
                time_ms,
            });
        }
    }

    /// The per-step checks.
    pub fn check(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
    ) -> Vec<Violation> {
        let mut out = std::mem::take(&mut self.found);
        self.fold_deposed_appends(controllers, brokers);
        out.extend(self.check_state_records(time_ms, controllers, brokers));
        for append in std::mem::take(&mut self.pending) {
            out.extend(self.check_identity(time_ms, controllers, brokers, &append));
        }
        self.note_fetchers(brokers);
        for (cluster, topic, node) in std::mem::take(&mut self.forwarded_topic_admin) {
            out.extend(self.check_forwarded_topic_admin(
                time_ms,
                controllers,
                cluster,
                &topic,
                node,
            ));
        }
        self.fetcher_cuts
            .retain(|cut| cut.seen_ms >= time_ms - SYNC_BOUNDS_AGE_MS);
        for synced in std::mem::take(&mut self.synced_offsets) {
            match check_synced_offset(time_ms, controllers, brokers, &self.fetcher_cuts, synced) {
                SyncedOffsetVerdict::Clamped => {}
                SyncedOffsetVerdict::RacedFetcherCut => {
                    *self
                        .marks
                        .entry("offset-sync-raced-mirror-fetcher-cut")
                        .or_default() += 1;
                }
                SyncedOffsetVerdict::Outside(violation) => out.push(violation),
            }
        }
        self.check_prefix(time_ms, controllers, brokers, &mut out);
        check_single_fetcher(time_ms, brokers, &mut out);
        self.note_restarts(time_ms, brokers);
        self.check_pending_producer_states(time_ms, controllers, brokers, &mut out);
        // Without mirrored data (most scenarios) there is no STOPPED partition to judge: skip
        // the walk over every partition of every broker each step.
        let brokers = if self.mirrored.is_empty() {
            &[]
        } else {
            brokers
        };
        for view in brokers {
            for (topic_partition, partition) in view.broker.partitions() {
                if partition.mirror_state != MirrorState::Stopped {
                    continue;
                }
                let Some(&mirrored) = self.mirrored.get(&(view.cluster, topic_partition.clone()))
                else {
                    continue;
                };
                let node = NodeId::Broker(view.cluster, view.broker.broker_id());
                let key = (node, view.incarnation, topic_partition.clone());
                if !self.stopped_scanned.contains_key(&key) {
                    // First seen STOPPED: its replicas' producer states are compared once a
                    // follower has the whole log.
                    self.psm_pending.insert(
                        (view.cluster, topic_partition.clone()),
                        time_ms + PSM_WAIT_MS,
                    );
                    if has_mirrored_producers(&partition.log, mirrored.0) {
                        *self
                            .preconditions
                            .entry(Invariant::NoStalePidAfterStopped)
                            .or_default() += 1;
                    }
                }
                if !self.stopped_scanned.contains_key(&key) {
                    let (boundary, own_reset_lost) =
                        mirrored_boundary(&partition.log, mirrored.0, mirrored.1);
                    if own_reset_lost {
                        *self
                            .marks
                            .entry("stopped-boundary-past-mirrored-reset")
                            .or_default() += 1;
                    }
                    self.stopped_scanned
                        .insert(key.clone(), (boundary, boundary));
                }
                let (boundary, scanned) =
                    self.stopped_scanned.get_mut(&key).expect("inserted above");
                let (mut found, local_checked) = check_stopped(
                    time_ms,
                    view,
                    topic_partition,
                    (*boundary, mirrored.1),
                    scanned,
                );
                let reset_lost = self
                    .destination_losses
                    .get(&(view.cluster, topic_partition.clone()))
                    .is_some_and(|&kept| kept <= mirrored.0);
                if reset_lost {
                    // A topic that is not durable (one replica, a power loss of unflushed
                    // writes, or an unclean election) lost the mirrored tail and STOPPING's
                    // MIRROR_PID_RESET after it: the stop's reset is gone with the data, as
                    // any acknowledged record may be there; INV-5 held when it went STOPPED.
                    let before = found.len();
                    found.retain(|v| v.invariant != Invariant::NoStalePidAfterStopped);
                    if found.len() < before {
                        *self.marks.entry("stale-pid-after-reset-lost").or_default() += 1;
                    }
                }
                // Looked up only for a violation: this loop runs every step.
                let stale_pid = |v: &Violation| v.invariant == Invariant::NoStalePidAfterStopped;
                if found.iter().any(stale_pid)
                    && self.own_write_stop_after_state_loss(node, view.incarnation, topic_partition)
                {
                    found.retain(|v| !stale_pid(v));
                    *self
                        .marks
                        .entry("stale-pid-after-mirror-state-lost")
                        .or_default() += 1;
                }
                if is_deposed(controllers, view, topic_partition) {
                    // A paused or partitioned leader that stopped in its own epoch writes on in
                    // it after its controller elected another: those batches never commit and
                    // are truncated when it fetches from the new leader, whose epochs (and the
                    // later mirrors' data it holds) are what INV-6 judges (generator seed 392).
                    // Its producer state is rebuilt from the new leader's log as well, so the
                    // mirrored data of a later mirror on the new leader does not judge it.
                    let before = found.len();
                    found.retain(|v| {
                        v.invariant != Invariant::LocalEpochAboveMirrored
                            && v.invariant != Invariant::NoStalePidAfterStopped
                    });
                    if found.len() < before {
                        *self
                            .marks
                            .entry("stopped-write-by-deposed-leader")
                            .or_default() += 1;
                    }
                }
                out.extend(found);
                if local_checked {
                    *self
                        .preconditions
                        .entry(Invariant::LocalEpochAboveMirrored)
                        .or_default() += 1;
                }
            }
        }
        out
    }

    fn check_identity(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
        append: &MirroredAppend,
    ) -> Option<Violation> {
        let cluster = append.node.cluster();
        let destination = brokers
            .iter()
            .find(|view| NodeId::Broker(view.cluster, view.broker.broker_id()) == append.node)?;
        let source = source_cluster(destination, &append.topic_partition.topic)?;
        let (_, source_log) =
            current_leader(controllers, brokers, source, &append.topic_partition)?;
        let log = &destination
            .broker
            .partitions()
            .get(&append.topic_partition)?
            .log;
        for batch in log
            .batches_from(append.first_offset)
            .take_while(|batch| batch.base_offset() <= append.last_offset)
        {
            let Some(original) = source_log.batches_from(batch.base_offset()).next() else {
                continue; // The source no longer has it: nothing to compare with.
            };
            if original.base_offset() > batch.last_offset() {
                continue;
            }
            *self
                .preconditions
                .entry(Invariant::OffsetIdentity)
                .or_default() += 1;
            if self.design.is_stored_form_of(original, batch) {
                continue;
            }
            let base = batch.base_offset();
            if append
                .answered_before_source_cut
                .is_some_and(|(from, to)| from <= base && base < to)
            {
                // The source's own cut removed what it served this fetch, and refilled the
                // offsets before the answer was appended (generated seed 10000000000000274:
                // c's deposed leader, paused for 3.6 s with b's answer in flight, appended
                // b's batch 80 after b's PREPARING cut to 0 and re-mirror from a). The next
                // fetch meets the cut log, as `mirror-prefix` judges.
                *self
                    .marks
                    .entry("identity-answered-before-source-cut")
                    .or_default() += 1;
                continue;
            }
            return Some(Violation {
                invariant: Invariant::OffsetIdentity,
                cluster: Some(cluster),
                topic_partition: Some(append.topic_partition.clone()),
                detail: format!(
                    "{} mirrored a batch at offset {} (epoch {}) that differs from the \
                         source's batch there (offset {}, epoch {})",
                    append.node,
                    batch.base_offset(),
                    batch.partition_leader_epoch(),
                    original.base_offset(),
                    original.partition_leader_epoch()
                ),
                time_ms,
            });
        }
        None
    }
}

impl MirrorChecks {
    /// Adds an append ending at `end` (exclusive) with greatest leader epoch `epoch` to the
    /// mirrored data of (`cluster`, `topic_partition`).
    pub(crate) fn fold_mirrored(
        &mut self,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        end: i64,
        epoch: i32,
    ) {
        let (mirrored_end, mirrored_epoch) = self
            .mirrored
            .entry((cluster, topic_partition.clone()))
            .or_insert((0, -1));
        *mirrored_end = (*mirrored_end).max(end);
        *mirrored_epoch = (*mirrored_epoch).max(epoch);
    }

    /// Folds the appends deposed leaders reported into the mirrored data, leaving out every
    /// batch byte-identical to the current leader's batch at the same offset. A deposed
    /// leader still fetches from its source until it hears of its successor; in a mirror
    /// loop (a failback whose old primary mirrors back while the new primary's deposed leader
    /// still mirrors it) what it fetches is the current leader's own writes, mirrored back
    /// (generator seed 9700000000000442: b-broker-4, deposed in b's epoch 0, appended b's
    /// epoch-2 batches 74..=113 from a, and b-broker-2, STOPPED in epoch 2, then wrote 120 in
    /// epoch 2). Those batches are the leader's own records: the replica holds what the
    /// leader holds, with the leader's epochs, and no fetch can keep them over the leader's.
    /// They are not mirrored data (mark `mirrored-own-records-by-deposed-leader`); a batch
    /// that differs, or one the leader lacks, is (9400000000000375's hazard). With no current
    /// leader to compare with, or the appender gone, the append counts whole.
    fn fold_deposed_appends(
        &mut self,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
    ) {
        for deposed in std::mem::take(&mut self.deposed_appends) {
            let cluster = deposed.node.cluster();
            let tp = &deposed.topic_partition;
            let whole = (deposed.last_offset + 1, deposed.epoch);
            let appender_log = live_incarnation(brokers, deposed.node, deposed.incarnation)
                .and_then(|view| view.broker.partitions().get(tp))
                .map(|partition| &partition.log);
            let leader_log = current_leader(controllers, brokers, cluster, tp).map(|(_, log)| log);
            let (end, epoch) = match (appender_log, leader_log) {
                (Some(appended), Some(leader)) => {
                    match foreign_batches(
                        appended,
                        leader,
                        deposed.first_offset,
                        deposed.last_offset,
                    ) {
                        Some(foreign) => foreign,
                        None => {
                            *self
                                .marks
                                .entry("mirrored-own-records-by-deposed-leader")
                                .or_default() += 1;
                            continue;
                        }
                    }
                }
                _ => whole,
            };
            self.fold_mirrored(cluster, tp, end, epoch);
        }
    }

    /// `mirror-prefix` over every aligned destination leader whose log grew.
    fn check_prefix(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
        out: &mut Vec<Violation>,
    ) {
        let design = self.design;
        let mut compared = 0;
        for (cluster, lost_tp, kept, epoch) in std::mem::take(&mut self.source_losses) {
            for ((node, incarnation, topic_partition), progress) in &mut self.prefix {
                if *topic_partition != lost_tp {
                    continue;
                }
                let Some(view) = live_incarnation(brokers, *node, *incarnation) else {
                    continue;
                };
                let Some(partition) = view.broker.partitions().get(topic_partition) else {
                    continue;
                };
                let end = partition.log.log_end_offset();
                if source_cluster(view, &topic_partition.topic) != Some(cluster) {
                    continue;
                }
                let stale = match epoch {
                    Some(epoch) => (kept, i64::MAX, epoch),
                    None if kept < end => (kept, end, i32::MAX),
                    None => continue,
                };
                progress.stale = Some(match progress.stale {
                    Some((from, to, below)) => {
                        (from.min(stale.0), to.max(stale.1), below.max(stale.2))
                    }
                    None => stale,
                });
            }
        }
        for (cluster, cut_tp, kept, before, mark) in std::mem::take(&mut self.source_mirror_cuts) {
            self.note_unmet_source_cut(brokers, cluster, &cut_tp, (kept, before, mark));
            for ((node, incarnation, topic_partition), progress) in &mut self.prefix {
                if *topic_partition != cut_tp {
                    continue;
                }
                let Some(view) = live_incarnation(brokers, *node, *incarnation) else {
                    continue;
                };
                if source_cluster(view, &topic_partition.topic) != Some(cluster) {
                    continue;
                }
                progress.source_cut = Some(match progress.source_cut {
                    Some((from, to, _, _)) => (from.min(kept), to.max(before), 0, mark),
                    None => (kept, before, 0, mark),
                });
                // What this leader holds above the cut was checked against batches the source
                // no longer has: judge it again against what the source holds now (after the
                // excuse's one append), or an alias refilled in the same epoch numbers is seen
                // only after a leader-epoch change of this mirror restarts its progress
                // (generated seed 9970000000000596).
                progress.checked_to = progress.checked_to.min(kept);
            }
        }
        let mut cut_excused: BTreeMap<&'static str, u64> = BTreeMap::new();
        self.prefix
            .retain(|(node, incarnation, topic_partition), progress| {
                let Some(view) = live_incarnation(brokers, *node, *incarnation) else {
                    return false; // That incarnation is gone.
                };
                let Some(partition) = view.broker.partitions().get(topic_partition) else {
                    return false;
                };
                match &partition.role {
                    Role::Leader(state) if state.leader_epoch == progress.leader_epoch => {}
                    _ => return false, // A new epoch must align again.
                }
                let log = &partition.log;
                if log.log_end_offset() <= progress.checked_to
                    || !matches!(
                        partition.mirror_state,
                        MirrorState::Mirroring | MirrorState::Paused
                    )
                {
                    return true;
                }
                let Some(source) = source_cluster(view, &topic_partition.topic) else {
                    return true;
                };
                let Some((_, source_log)) =
                    current_leader(controllers, brokers, source, topic_partition)
                else {
                    return true; // The source's leadership is moving.
                };
                let from = progress
                    .checked_to
                    .max(log.log_start_offset())
                    .max(source_log.log_start_offset());
                compared += 1;
                let mut checked_to = progress.checked_to;
                let mismatch = prefix_mismatch(design, log, source_log, from, &mut checked_to);
                // The mismatching batch starts at `checked_to`.
                let batch_epoch = log
                    .batches_from(checked_to)
                    .next()
                    .map_or(i32::MAX, |batch| batch.partition_leader_epoch());
                let stale = mismatch.is_some()
                    && progress.stale.is_some_and(|(stale_from, stale_to, below)| {
                        stale_from <= checked_to && checked_to < stale_to && batch_epoch < below
                    });
                let cut = progress
                    .source_cut
                    .filter(|(from, to, _, _)| {
                        mismatch.is_some() && *from <= checked_to && checked_to < *to
                    })
                    .map(|(_, _, _, mark)| mark);
                progress.checked_to = checked_to;
                if let Some(mark) = cut {
                    *cut_excused.entry(mark).or_default() += 1;
                    return true;
                }
                if stale {
                    // Fetched before its source lost it: compared again from here each step,
                    // until a truncation removes it.
                    return true;
                }
                if let Some(detail) = mismatch {
                    out.push(Violation {
                        invariant: Invariant::MirrorPrefix,
                        cluster: Some(node.cluster()),
                        topic_partition: Some(topic_partition.clone()),
                        detail: format!(
                            "{node} is {} and {detail} (source cluster {source})",
                            partition.mirror_state
                        ),
                        time_ms,
                    });
                    progress.checked_to = log.log_end_offset();
                }
                true
            });
        if compared > 0 {
            self.precondition(Invariant::MirrorPrefix);
        }
        for (mark, count) in cut_excused {
            *self.marks.entry(mark).or_default() += count;
        }
    }

    /// `single-mirror-fetcher`'s case: a mirror partition's fetcher ran on a second broker
    /// (its leadership moved while it mirrored, so the old leader had to stop fetching).
    fn note_fetchers(&mut self, brokers: &[BrokerView<'_>]) {
        let mut moved = false;
        for view in brokers {
            for (topic_partition, _, _) in view.broker.mirror_fetchers() {
                let seen = self
                    .fetcher_brokers
                    .entry((view.cluster, topic_partition.clone()))
                    .or_default();
                if seen.insert(view.broker.broker_id()) && seen.len() > 1 {
                    moved = true;
                }
            }
        }
        if moved {
            self.precondition(Invariant::SingleMirrorFetcher);
        }
    }

    /// Notes brokers whose incarnation changed (restarted) for `psm-replica-agreement`.
    fn note_restarts(&mut self, time_ms: i64, brokers: &[BrokerView<'_>]) {
        for view in brokers {
            let node = NodeId::Broker(view.cluster, view.broker.broker_id());
            let previous = self.incarnations.insert(node, view.incarnation);
            if previous.is_some_and(|previous| previous != view.incarnation) {
                self.restarted.insert((node, view.incarnation), time_ms);
            }
        }
        self.restarted
            .retain(|_, seen_ms| time_ms - *seen_ms <= PSM_WAIT_MS);
        self.restart_checked
            .retain(|(node, incarnation, _)| self.restarted.contains_key(&(*node, *incarnation)));
    }

    /// `psm-replica-agreement` for STOPPED partitions and restarted replicas that caught up.
    fn check_pending_producer_states(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
        out: &mut Vec<Violation>,
    ) {
        let mut done = Vec::new();
        for ((cluster, topic_partition), until_ms) in &self.psm_pending {
            let expired = time_ms >= *until_ms;
            let Some(comparison) =
                PsmComparison::gather(controllers, brokers, *cluster, topic_partition)
            else {
                if expired {
                    done.push((*cluster, topic_partition.clone()));
                }
                continue;
            };
            if comparison.followers.is_empty() && !expired {
                continue; // No follower has the whole log yet.
            }
            if comparison.compares_a_producer(None) {
                *self
                    .preconditions
                    .entry(Invariant::PsmReplicaAgreement)
                    .or_default() += 1;
            }
            out.extend(comparison.check(time_ms, *cluster, topic_partition, None));
            done.push((*cluster, topic_partition.clone()));
        }
        for key in done {
            self.psm_pending.remove(&key);
        }
        for (node, incarnation) in self.restarted.keys() {
            let Some(view) = live_incarnation(brokers, *node, *incarnation) else {
                continue;
            };
            for topic_partition in view.broker.partitions().keys() {
                let key = (*node, *incarnation, topic_partition.clone());
                if self.restart_checked.contains(&key) {
                    continue;
                }
                let Some(comparison) =
                    PsmComparison::gather(controllers, brokers, view.cluster, topic_partition)
                else {
                    continue;
                };
                let replica = view.broker.broker_id();
                let caught_up = comparison.leader == replica
                    || comparison.followers.iter().any(|(id, _)| *id == replica);
                if caught_up {
                    let only = Some(replica).filter(|id| *id != comparison.leader);
                    if comparison.compares_a_producer(only) {
                        *self
                            .preconditions
                            .entry(Invariant::PsmReplicaAgreement)
                            .or_default() += 1;
                    }
                    out.extend(comparison.check(time_ms, view.cluster, topic_partition, only));
                    self.restart_checked.insert(key);
                }
            }
        }
    }

    /// `psm-replica-agreement` for every led partition (at the end of a run).
    pub fn check_producer_states_everywhere(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
    ) -> Vec<Violation> {
        let mut out = Vec::new();
        for controller in controllers {
            for (topic_partition, _) in controller.controller.image().all_partitions() {
                if let Some(comparison) = PsmComparison::gather(
                    controllers,
                    brokers,
                    controller.cluster,
                    &topic_partition,
                ) {
                    if comparison.compares_a_producer(None) {
                        *self
                            .preconditions
                            .entry(Invariant::PsmReplicaAgreement)
                            .or_default() += 1;
                    }
                    out.extend(comparison.check(
                        time_ms,
                        controller.cluster,
                        &topic_partition,
                        None,
                    ));
                }
            }
        }
        out
    }

    /// INV-10 and INV-11 over the newly committed `__mirror_state` records.
    fn check_state_records(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
    ) -> Vec<Violation> {
        let mut out = Vec::new();
        for controller in controllers {
            let cluster = controller.cluster;
            // Only `__mirror_state`'s partitions, not every partition of the image each step.
            let partitions = mirrorsim::coordinator::partition_count(
                controller.controller.image(),
                MIRROR_STATE_TOPIC,
            );
            for partition in 0..partitions {
                let tp = TopicPartition::new(MIRROR_STATE_TOPIC, partition);
                let Some((_, log)) = current_leader(controllers, brokers, cluster, &tp) else {
                    continue;
                };
                let replicas = controller
                    .controller
                    .image()
                    .partition(&tp)
                    .map_or(0, |record| record.replicas.len());
                let progress = self
                    .state_log_checked
                    .entry((cluster, tp.clone()))
                    .or_default();
                if state_log_lost(log, progress, replicas) {
                    // The records read are gone: judge the log the coordinator reloaded,
                    // from its start.
                    *progress = StateLogProgress::default();
                    self.stored
                        .retain(|(c, p, _, _), _| !(*c == cluster && *p == partition));
                }
                let progress = self
                    .state_log_checked
                    .get_mut(&(cluster, tp.clone()))
                    .expect("inserted above");
                let from = progress.checked.max(log.log_start_offset());
                let committed = log.high_watermark();
                let mut records = Vec::new();
                for batch in log.batches_from(from) {
                    if batch.next_offset() > committed {
                        break;
                    }
                    if batch.base_offset() >= from && !batch.is_control() {
                        records.extend(decode_records::<MirrorStateRecord>(batch));
                    }
                    progress.checked = batch.next_offset();
                    progress.last_batch = Some((batch.base_offset(), batch.header().crc));
                }
                for record in records {
                    out.extend(self.check_state_record(time_ms, cluster, &tp, record));
                }
            }
        }
        out
    }

    fn check_state_record(
        &mut self,
        time_ms: i64,
        cluster: ClusterIndex,
        state_partition: &TopicPartition,
        record: MirrorStateRecord,
    ) -> Option<Violation> {
        let MirrorStateRecord::PartitionState { mirror, id, value } = record else {
            return None; // Last-mirrored-epoch records carry no state.
        };
        let key = (cluster, state_partition.partition, mirror.clone(), id);
        let Some(value) = value else {
            self.stored.remove(&key);
            return None;
        };
        let previous = self
            .stored
            .insert(key, (value.state, value.state_epoch, value.leader_epoch));
        if previous.is_some() {
            self.precondition(Invariant::LegalTransitions);
        }
        let (state, state_epoch, leader_epoch) = previous.unwrap_or((MirrorState::Unknown, -1, -1));
        let violation = |invariant, detail| {
            Some(Violation {
                invariant,
                cluster: Some(cluster),
                topic_partition: Some(state_partition.clone()),
                detail,
                time_ms,
            })
        };
        let what = format!(
            "mirror {mirror} topic {} partition {}",
            id.topic_id, id.partition
        );
        if !is_valid_transition(state, value.state) {
            return violation(
                Invariant::LegalTransitions,
                format!(
                    "{what} went {state} → {} (state epoch {})",
                    value.state, value.state_epoch
                ),
            );
        }
        if value.state_epoch != state_epoch + 1 || value.leader_epoch < leader_epoch {
            return violation(
                Invariant::CoordinatorFencing,
                format!(
                    "{what}: state epoch {state_epoch} → {}, leader epoch {leader_epoch} → {}",
                    value.state_epoch, value.leader_epoch
                ),
            );
        }
        None
    }
}

/// The first batch of `log` from `from` on that the source's log does not hold at the same
/// base offset in the design's stored form (the seed's: the same bytes), described; `*checked_to` moves past every batch found
/// equal.
fn prefix_mismatch(
    design: mirrorsim::mirror::MirrorDesign,
    log: &PartitionLog<MemoryDirDisk>,
    source_log: &PartitionLog<MemoryDirDisk>,
    from: i64,
    checked_to: &mut i64,
) -> Option<String> {
    let mut source_batches = source_log.batches_from(from).peekable();
    for batch in log.batches_from(from) {
        if batch.base_offset() < from {
            continue; // Straddles the source's log start: nothing to compare with.
        }
        while source_batches
            .peek()
            .is_some_and(|original| original.base_offset() < batch.base_offset())
        {
            source_batches.next();
        }
        match source_batches.next() {
            Some(original)
                if original.base_offset() == batch.base_offset()
                    && design.is_stored_form_of(original, batch) => {}
            Some(original) if original.base_offset() == batch.base_offset() => {
                return Some(format!(
                    "its batch at offset {} (epoch {}) differs from the source's there (epoch {})",
                    batch.base_offset(),
                    batch.partition_leader_epoch(),
                    original.partition_leader_epoch()
                ));
            }
            _ => {
                return Some(format!(
                    "its batch at offset {} (epoch {}) is not a source batch (the source's log \
                     spans [{}, {}))",
                    batch.base_offset(),
                    batch.partition_leader_epoch(),
                    source_log.log_start_offset(),
                    source_log.log_end_offset()
                ));
            }
        }
        *checked_to = batch.next_offset();
    }
    None
}

/// `single-mirror-fetcher` (INV-12) over every broker's running mirror fetchers.
fn check_single_fetcher(time_ms: i64, brokers: &[BrokerView<'_>], out: &mut Vec<Violation>) {
    let mut fetchers: Vec<(ClusterIndex, &TopicPartition, i32, BrokerId)> = Vec::new();
    for view in brokers {
        let broker = &*view.broker;
        for (topic_partition, state, leader_epoch) in broker.mirror_fetchers() {
            let broker_id = broker.broker_id();
            let role_epoch = broker
                .partitions()
                .get(topic_partition)
                .and_then(|partition| partition.leader_state())
                .map(|leader| leader.leader_epoch);
            let known = broker
                .image()
                .partition(topic_partition)
                .map(|record| (record.leader, record.leader_epoch));
            let problem = if state != MirrorState::Mirroring {
                Some(format!("while {state}"))
            } else if role_epoch != Some(leader_epoch) {
                Some(format!(
                    "in leader epoch {leader_epoch}, but its role's leader epoch is {role_epoch:?}"
                ))
            } else if known != Some((Some(broker_id), leader_epoch)) {
                Some(format!(
                    "in leader epoch {leader_epoch}, but its metadata has (leader, epoch) {known:?}"
                ))
            } else if let Some((_, _, _, other)) = fetchers.iter().find(|(c, tp, e, _)| {
                *c == view.cluster && *tp == topic_partition && *e == leader_epoch
            }) {
                Some(format!(
                    "in leader epoch {leader_epoch}, as broker {other} does too"
                ))
            } else {
                None
            };
            fetchers.push((view.cluster, topic_partition, leader_epoch, broker_id));
            if let Some(problem) = problem {
                out.push(Violation {
                    invariant: Invariant::SingleMirrorFetcher,
                    cluster: Some(view.cluster),
                    topic_partition: Some(topic_partition.clone()),
                    detail: format!("{} runs a mirror fetcher {problem}", broker.node_id()),
                    time_ms,
                });
            }
        }
    }
}

/// What `psm-replica-agreement` compares for one partition: its current leader's log and
/// the followers whose log ends where the leader's does, with the same last batch.
struct PsmComparison<'a> {
    leader: BrokerId,
    leader_log: &'a PartitionLog<MemoryDirDisk>,
    followers: Vec<(BrokerId, &'a PartitionLog<MemoryDirDisk>)>,
}

/// Per producer id: (producer epoch, last sequence, last offset, open transaction's first
/// offset).
type ProducerSummary = BTreeMap<i64, (i16, i32, i64, Option<i64>)>;

impl<'a> PsmComparison<'a> {
    fn gather(
        controllers: &[ControllerView<'_>],
        brokers: &'a [BrokerView<'_>],
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
    ) -> Option<Self> {
        let (epoch, leader_log) = current_leader(controllers, brokers, cluster, topic_partition)?;
        let mut leader = None;
        let mut followers = Vec::new();
        for view in brokers.iter().filter(|view| view.cluster == cluster) {
            let Some(partition) = view.broker.partitions().get(topic_partition) else {
                continue;
            };
            match &partition.role {
                Role::Leader(state) if state.leader_epoch == epoch => {
                    leader = Some(view.broker.broker_id());
                }
                Role::Follower(_) if caught_up(&partition.log, leader_log) => {
                    followers.push((view.broker.broker_id(), &partition.log));
                }
                _ => {}
            }
        }
        Some(Self {
            leader: leader?,
            leader_log,
            followers,
        })
    }

    /// Whether [`PsmComparison::check`] compares something: the leader's producer state holds
    /// a producer and a follower (only `only`, if given) is compared with it.
    fn compares_a_producer(&self, only: Option<BrokerId>) -> bool {
        !self.leader_log.producer_state().producers().is_empty()
            && self
                .followers
                .iter()
                .any(|(follower, _)| only.is_none_or(|only| only == *follower))
    }

    /// Compares the leader's producer state with its rebuild and with the followers' (only
    /// `only`'s, if given).
    fn check(
        &self,
        time_ms: i64,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        only: Option<BrokerId>,
    ) -> Option<Violation> {
        let violation = |detail| {
            Some(Violation {
                invariant: Invariant::PsmReplicaAgreement,
                cluster: Some(cluster),
                topic_partition: Some(topic_partition.clone()),
                detail,
                time_ms,
            })
        };
        let leader_start = self.leader_log.log_start_offset();
        let live = summary(self.leader_log.producer_state(), leader_start);
        match self.leader_log.rebuilt_producer_state() {
            Err(error) => {
                return violation(format!(
                    "the leader (broker {})'s log does not replay: {error}",
                    self.leader
                ))
            }
            Ok(rebuilt) => {
                let rebuilt = summary(&rebuilt, leader_start);
                if let Some(difference) = first_difference(&live, &rebuilt) {
                    return violation(format!(
                        "the leader (broker {}) and a rebuild of its log (end {}) differ: \
                         {difference}",
                        self.leader,
                        self.leader_log.log_end_offset()
                    ));
                }
            }
        }
        for (follower, log) in &self.followers {
            if only.is_some_and(|only| only != *follower) {
                continue;
            }
            let start = leader_start.max(log.log_start_offset());
            let theirs = summary(log.producer_state(), start);
            let ours = if start == leader_start {
                live.clone()
            } else {
                summary(self.leader_log.producer_state(), start)
            };
            if let Some(difference) = first_difference(&ours, &theirs) {
                return violation(format!(
                    "the leader (broker {}) and follower broker {follower}, both at log end {}, \
                     differ: {difference}",
                    self.leader,
                    self.leader_log.log_end_offset()
                ));
            }
        }
        None
    }
}

/// Whether a follower's log ends where the leader's does, with the same last batch.
fn caught_up(log: &PartitionLog<MemoryDirDisk>, leader_log: &PartitionLog<MemoryDirDisk>) -> bool {
    if log.log_end_offset() != leader_log.log_end_offset() {
        return false;
    }
    let last = log.log_end_offset() - 1;
    let theirs = log.batches_from(last).next();
    let ours = leader_log.batches_from(last).next();
    match (theirs, ours) {
        (Some(theirs), Some(ours)) => theirs.bytes() == ours.bytes(),
        (None, None) => true,
        _ => false,
    }
}

/// The compared part of a producer state: entries whose last remembered batch is at or above
/// `from`.
fn summary(state: &ProducerStateManager, from: i64) -> ProducerSummary {
    state
        .producers()
        .iter()
        .filter_map(|(producer_id, entry)| {
            let last = entry.batches.back()?;
            (last.last_offset >= from).then_some((
                *producer_id,
                (
                    entry.producer_epoch,
                    last.last_sequence,
                    last.last_offset,
                    entry.current_txn_first_offset,
                ),
            ))
        })
        .collect()
}

/// The first producer id on which two summaries differ, described.
fn first_difference(ours: &ProducerSummary, theirs: &ProducerSummary) -> Option<String> {
    let ids: BTreeSet<i64> = ours.keys().chain(theirs.keys()).copied().collect();
    ids.into_iter().find_map(|producer_id| {
        let (a, b) = (ours.get(&producer_id), theirs.get(&producer_id));
        (a != b).then(|| {
            format!(
                "producer {producer_id}: (epoch, last sequence, last offset, open transaction) \
                 {a:?} vs {b:?}"
            )
        })
    })
}

/// Liveness of mirroring after the heal phase (part of `liveness`): the leader of every
/// partition of a mirror topic is in the state the topic's `mirror.name` asks for (MIRRORING,
/// PAUSED or STOPPED), and a MIRRORING one has copied everything its source has committed
/// below the source's last stable offset. A partition whose source mirrors the topic back
/// from here (a mirror loop) may instead retry between PREPARING and FAILED; the second
/// value counts those (mark `liveness-mirror-loop-retrying`).
pub fn check_mirror_liveness(
    time_ms: i64,
    controllers: &[ControllerView<'_>],
    brokers: &[BrokerView<'_>],
) -> (Vec<Violation>, u64) {
    use mirrorsim::mirror::DesiredState;
    let mut out = Vec::new();
    let mut loops = 0;
    for controller in controllers {
        let image = controller.controller.image();
        for (tp, record) in image.all_partitions() {
            let Some(desired) = image.mirror_desired_state(&tp.topic) else {
                continue;
            };
            let Some(view) = record
                .leader
                .and_then(|leader| super::view::broker_view(brokers, controller.cluster, leader))
            else {
                continue; // The general liveness check reports a partition without a leader.
            };
            let Some(partition) = view.broker.partitions().get(&tp) else {
                continue;
            };
            let expected = match desired {
                DesiredState::Mirror { .. } => MirrorState::Mirroring,
                DesiredState::Paused { .. } => MirrorState::Paused,
                DesiredState::Stopped { .. } => MirrorState::Stopped,
            };
            if expected == MirrorState::Mirroring
                && mirrors_back(controllers, controller.cluster, view, &tp.topic)
                && matches!(
                    partition.mirror_state,
                    MirrorState::Preparing | MirrorState::Failed
                )
            {
                // A mirror loop: the source mirrors this topic from here, so PREPARING's
                // last-mirrored-epoch lookup is refused ("the source still mirrors this
                // partition from here") and the partition retries between FAILED and
                // PREPARING for as long as both wishes stand, as the KIP wants. A generated
                // admin timeline can end with both in place.
                loops += 1;
                continue;
            }
            let problem = if partition.mirror_state != expected {
                Some(format!(
                    "{} is {} but mirror.name asks for {expected}",
                    view.broker.node_id(),
                    partition.mirror_state
                ))
            } else if expected == MirrorState::Mirroring {
                source_stable_end(controllers, brokers, view, &tp)
                    .filter(|stable| partition.log.log_end_offset() < *stable)
                    .map(|stable| {
                        format!(
                            "{} mirrored up to {} of the source's {stable}",
                            view.broker.node_id(),
                            partition.log.log_end_offset()
                        )
                    })
            } else {
                None
            };
            if let Some(problem) = problem {
                out.push(Violation {
                    invariant: Invariant::Liveness,
                    cluster: Some(controller.cluster),
                    topic_partition: Some(tp.clone()),
                    detail: problem,
                    time_ms,
                });
            }
        }
    }
    (out, loops)
}

impl MirrorChecks {
    /// INV-1 for a DeleteTopics or CreatePartitions of mirror topic `topic` that `node`
    /// forwarded to the controller: every partition's committed state in `__mirror_state`
    /// (read by `check_state_records` this step) must be STOPPED, or absent (never mirrored).
    /// The committed state, not the leaders' own: a leader learns that its STOPPED was
    /// committed one answer later than the coordinator knows it.
    fn check_forwarded_topic_admin(
        &self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        cluster: ClusterIndex,
        topic: &str,
        node: NodeId,
    ) -> Option<Violation> {
        let controller = controllers.iter().find(|view| view.cluster == cluster)?;
        let image = controller.controller.image();
        let mirror = image.mirror_desired_state(topic)?.mirror().to_owned();
        let topic_id = *image.topic_ids.get(topic)?;
        for partition in image.topics.get(&topic_id)?.partitions.keys() {
            let id = MirrorPartitionId {
                topic_id,
                partition: *partition,
            };
            let state = self
                .stored
                .iter()
                .find(|((c, _, m, i), _)| *c == cluster && *m == mirror && *i == id)
                .map_or(MirrorState::Unknown, |(_, (state, _, _))| *state);
            if !matches!(state, MirrorState::Stopped | MirrorState::Unknown) {
                return Some(Violation {
                    invariant: Invariant::ReadOnlyUntilStopped,
                    cluster: Some(cluster),
                    topic_partition: Some(TopicPartition::new(topic, *partition)),
                    detail: format!(
                        "{node} forwarded a DeleteTopics or CreatePartitions of mirror topic \
                         {topic} while the partition's committed state is {state}"
                    ),
                    time_ms,
                });
            }
        }
        None
    }
}

/// What `offset-sync-clamped` makes of one synced group offset.
#[derive(Debug)]
enum SyncedOffsetVerdict {
    /// In the current leader's log (or no current leader to judge by).
    Clamped,
    /// Above the log end only because the leader's mirror fetcher cut the log below it after
    /// the sync read the high watermark (see the module doc).
    RacedFetcherCut,
    /// Outside the log.
    Outside(Violation),
}

/// INV-15 for one synced group offset (see the module doc).
fn check_synced_offset(
    time_ms: i64,
    controllers: &[ControllerView<'_>],
    brokers: &[BrokerView<'_>],
    fetcher_cuts: &[FetcherCut],
    synced: SyncedOffset,
) -> SyncedOffsetVerdict {
    let SyncedOffset {
        cluster,
        group_id,
        topic_partition,
        offset,
        high_watermark_read,
    } = synced;
    let Some((leader_epoch, log)) = current_leader(controllers, brokers, cluster, &topic_partition)
    else {
        return SyncedOffsetVerdict::Clamped;
    };
    let (start, end) = (log.log_start_offset(), log.log_end_offset());
    if (start..=end).contains(&offset) {
        return SyncedOffsetVerdict::Clamped;
    }
    let leader = controllers
        .iter()
        .find(|view| view.cluster == cluster)
        .and_then(|view| view.controller.image().partition(&topic_partition)?.leader);
    if leader.is_some_and(|leader| {
        cut_below_synced_offset(
            fetcher_cuts,
            (cluster, leader, &topic_partition),
            offset,
            (high_watermark_read, end),
        )
    }) {
        return SyncedOffsetVerdict::RacedFetcherCut;
    }
    SyncedOffsetVerdict::Outside(Violation {
        invariant: Invariant::OffsetSyncClamped,
        cluster: Some(cluster),
        detail: format!(
            "the mirror sync committed offset {offset} for group {group_id}, outside \
             [{start}, {end}] of the current leader's log (epoch {leader_epoch})"
        ),
        topic_partition: Some(topic_partition),
        time_ms,
    })
}

/// Whether a synced `offset` above the current `leader`'s log end (`end`), and at most the
/// high watermark the sync read (`high_watermark_read`: the clamp held), was in its log until
/// its mirror fetcher cut the log below it lately (`cuts`, those of the last
/// [`SYNC_BOUNDS_AGE_MS`]): the log ended at or above the offset before the cut and below it
/// after.
fn cut_below_synced_offset(
    cuts: &[FetcherCut],
    (cluster, leader, tp): (ClusterIndex, BrokerId, &TopicPartition),
    offset: i64,
    (high_watermark_read, end): (i64, i64),
) -> bool {
    offset > end
        && offset <= high_watermark_read
        && cuts.iter().any(|cut| {
            cut.cluster == cluster
                && cut.leader == leader
                && cut.topic_partition == *tp
                && cut.from >= offset
                && cut.to < offset
        })
}

/// The last stable offset of the source leader of a mirrored partition, if known.
fn source_stable_end(
    controllers: &[ControllerView<'_>],
    brokers: &[BrokerView<'_>],
    destination: &BrokerView<'_>,
    tp: &TopicPartition,
) -> Option<i64> {
    let source = source_cluster(destination, &tp.topic)?;
    let (_, log) = current_leader(controllers, brokers, source, tp)?;
    Some(log.last_stable_offset())
}

/// The greatest leader epoch of the batches of a broker's log starting in `[from, below)`
/// (−1 without any).
/// Whether `view`'s broker is a deposed leader of `tp`: its cluster's controller names
/// another leader, or a later leader epoch.
fn is_deposed(
    controllers: &[ControllerView<'_>],
    view: &BrokerView<'_>,
    tp: &TopicPartition,
) -> bool {
    let Some(record) = controllers
        .iter()
        .find(|controller| controller.cluster == view.cluster)
        .and_then(|controller| controller.controller.image().partition(tp))
    else {
        return false;
    };
    let own_epoch = match view
        .broker
        .partitions()
        .get(tp)
        .map(|partition| &partition.role)
    {
        Some(Role::Leader(state)) => state.leader_epoch,
        _ => return true,
    };
    record.leader != Some(view.broker.broker_id()) || record.leader_epoch > own_epoch
}

/// The batches of `appended` in `[first, last]` that are not byte-identical to `leader`'s
/// batch at the same base offset: where the last of them ends (exclusive) and their greatest
/// leader epoch, or `None` if every one is identical. The range's batches `appended` no
/// longer holds count as foreign (the truncation that removed them lowers the mirrored data).
fn foreign_batches(
    appended: &PartitionLog<MemoryDirDisk>,
    leader: &PartitionLog<MemoryDirDisk>,
    first: i64,
    last: i64,
) -> Option<(i64, i32)> {
    let mut foreign: Option<(i64, i32)> = None;
    let mut covered = first;
    for batch in appended
        .batches_from(first)
        .take_while(|batch| batch.base_offset() <= last)
    {
        covered = batch.last_offset() + 1;
        let own = leader
            .batches_from(batch.base_offset())
            .next()
            .is_some_and(|original| original == batch);
        if !own {
            let (end, epoch) = foreign.get_or_insert((0, -1));
            *end = (*end).max(batch.last_offset() + 1);
            *epoch = (*epoch).max(batch.partition_leader_epoch());
        }
    }
    if covered <= last {
        let (end, _) = foreign.get_or_insert((0, -1));
        *end = (*end).max(last + 1);
    }
    foreign
}

fn max_epoch(view: &BrokerView<'_>, tp: &TopicPartition, from: i64, below: i64) -> i32 {
    view.broker.partitions().get(tp).map_or(-1, |partition| {
        partition
            .log
            .batches_from(from)
            .take_while(|batch| batch.base_offset() < below)
            .map(|batch| batch.partition_leader_epoch())
            .max()
            .unwrap_or(-1)
    })
}

/// The view of broker `node` if it is live in its `incarnation`.
fn live_incarnation<'a, 'b>(
    brokers: &'a [BrokerView<'b>],
    node: NodeId,
    incarnation: u64,
) -> Option<&'a BrokerView<'b>> {
    brokers.iter().find(|view| {
        view.incarnation == incarnation
            && NodeId::Broker(view.cluster, view.broker.broker_id()) == node
    })
}

/// Whether the source cluster of `topic`'s mirror on `cluster` (as `view`'s image says) itself
/// wants the topic mirrored or paused from `cluster` (its controller's image): a mirror loop.
fn mirrors_back(
    controllers: &[ControllerView<'_>],
    cluster: ClusterIndex,
    view: &BrokerView<'_>,
    topic: &str,
) -> bool {
    use mirrorsim::mirror::DesiredState;
    let Some(source) = source_cluster(view, topic) else {
        return false;
    };
    let Some(source_controller) = controllers.iter().find(|c| c.cluster == source) else {
        return false;
    };
    let image = source_controller.controller.image();
    let mirrored = image
        .mirror_desired_state(topic)
        .is_some_and(|desired| !matches!(desired, DesiredState::Stopped { .. }));
    mirrored && mirror_source_in(image, topic) == Some(cluster)
}

/// The source cluster of the mirror `topic` belongs to, as a broker's image says.
pub(crate) fn source_cluster(view: &BrokerView<'_>, topic: &str) -> Option<ClusterIndex> {
    mirror_source_in(view.broker.image(), topic)
}

/// The source cluster of the mirror `topic` belongs to in `image` (its `bootstrap.servers`).
pub(crate) fn mirror_source_in(
    image: &mirrorsim::metadata::MetadataImage,
    topic: &str,
) -> Option<ClusterIndex> {
    let desired = image.mirror_desired_state(topic)?;
    let bootstrap = image
        .configs
        .get(&ConfigResource::Mirror(desired.mirror().to_owned()))?
        .get(BOOTSTRAP_SERVERS_CONFIG)?;
    Some(parse_bootstrap_servers(bootstrap).ok()?.first()?.cluster())
}

/// Where the mirrored data of a STOPPED leader's log ends: at its last MIRROR_PID_RESET, the
/// one its own stop wrote (resets mirrored in by a failback come earlier). The cluster-wide
/// end of mirrored data is no help when this leader had less, or more, mirrored data than
/// another replica that died (`fan_out` seed 7000, `failover_under_faults` seeds 1026 and
/// 7575123). A log without a reset (the `no-pid-reset` and `pid-rewrite` designs) ends its
/// mirrored data where its first epoch above the greatest mirrored one (`mirrored_epoch`)
/// starts (the stop's bump), else at its end: it is first judged when it turns STOPPED,
/// before any local write. The cluster-wide end (`lower_bound`) is used only when the log
/// has no epoch at or below `mirrored_epoch`.
///
/// A reset below `lower_bound` in an epoch at or below `mirrored_epoch` is mirrored data
/// itself (a failback's source stopped before, and its reset was mirrored in with the rest),
/// not this leader's stop, which wrote its reset after the mirrored data in the bumped epoch.
/// When such a reset is the last one, the stop's own reset is gone: a power loss of the only
/// replica took the mirrored tail above it with the stop's reset (generator seed
/// 9300000000000056: a's log torn from 92 to 59 kept b's reset at 38 and mirrored epochs 1
/// and 3), and the log is judged as one without a reset. The second value says so.
fn mirrored_boundary(
    log: &mirrorsim::log::PartitionLog<mirrorsim::broker::MemoryDirDisk>,
    lower_bound: i64,
    mirrored_epoch: i32,
) -> (i64, bool) {
    let mirrored_in = |batch: &mirrorsim::record::RecordBatch| {
        batch.base_offset() < lower_bound && batch.partition_leader_epoch() <= mirrored_epoch
    };
    let last_reset = log
        .batches_from(log.log_start_offset())
        .filter(|batch| batch.is_mirror_pid_reset())
        .last();
    match last_reset {
        Some(reset) if !mirrored_in(reset) => (reset.base_offset(), false),
        last_reset => {
            let end = log.end_offset_for_epoch(mirrored_epoch).end_offset;
            let bound = if end >= 0 { end } else { lower_bound };
            (bound.min(log.log_end_offset()), last_reset.is_some())
        }
    }
}

/// INV-5 and INV-6 on a STOPPED partition whose mirrored data ends at `mirrored.0` with
/// greatest epoch `mirrored.1`; local batches from `*scanned` on are checked (and `*scanned`
/// moves to the log end).
/// Whether the mirrored data below `mirrored_end` holds batches of a producer (idempotent or
/// transactional): their producer entries are what the STOPPED partition's reset must clear.
fn has_mirrored_producers(log: &PartitionLog<MemoryDirDisk>, mirrored_end: i64) -> bool {
    log.batches_from(log.log_start_offset())
        .take_while(|batch| batch.base_offset() < mirrored_end)
        .any(|batch| !batch.is_control() && batch.header().has_producer_id())
}

/// The STOPPED checks of one partition; also whether a batch written after the mirrored data
/// was compared with the mirrored epoch.
fn check_stopped(
    time_ms: i64,
    view: &BrokerView<'_>,
    topic_partition: &TopicPartition,
    (mirrored_end, mirrored_epoch): (i64, i32),
    scanned: &mut i64,
) -> (Vec<Violation>, bool) {
    let mut out = Vec::new();
    let log = &view.broker.partitions()[topic_partition].log;
    let violation = |invariant, detail| Violation {
        invariant,
        cluster: Some(view.cluster),
        topic_partition: Some(topic_partition.clone()),
        detail,
        time_ms,
    };
    for (producer_id, entry) in log.producer_state().producers() {
        let last = entry.batches.back().map(|batch| batch.last_offset);
        if last.is_some_and(|last| last < mirrored_end) {
            out.push(violation(
                Invariant::NoStalePidAfterStopped,
                format!(
                    "{} is STOPPED but its producer state still has producer {producer_id} \
                     from mirrored data (last offset {:?} < {mirrored_end})",
                    view.broker.node_id(),
                    last
                ),
            ));
            break;
        }
    }
    let from = (*scanned).max(mirrored_end);
    *scanned = log.log_end_offset();
    let local_checked = log.batches_from(from).next().is_some();
    if let Some(local) = log
        .batches_from(from)
        .find(|batch| batch.partition_leader_epoch() <= mirrored_epoch)
    {
        out.push(violation(
            Invariant::LocalEpochAboveMirrored,
            format!(
                "{} wrote offset {} in epoch {}, not above the mirrored epoch {mirrored_epoch}",
                view.broker.node_id(),
                local.base_offset(),
                local.partition_leader_epoch()
            ),
        ));
    }
    (out, local_checked)
}

#[cfg(test)]
mod tests {
    use mirrorsim::mirror::coordinator::PartitionStateValue;
    use mirrorsim::protocol::TopicId;

    use super::*;

    fn state(state: MirrorState, state_epoch: i32, leader_epoch: i32) -> MirrorStateRecord {
        MirrorStateRecord::PartitionState {
            mirror: "m".into(),
            id: MirrorPartitionId {
                topic_id: TopicId(1),
                partition: 0,
            },
            value: Some(PartitionStateValue {
                state,
                leader_epoch,
                state_epoch,
                previous_state: None,
                retry_attempt: 0,
                error_message: None,
                own_writes_only: false,
            }),
        }
    }

    fn feed(records: Vec<MirrorStateRecord>) -> Vec<&'static str> {
        let mut checks = MirrorChecks::default();
        let tp = TopicPartition::new(MIRROR_STATE_TOPIC, 0);
        records
            .into_iter()
            .filter_map(|record| checks.check_state_record(0, ClusterIndex(1), &tp, record))
            .map(|violation| violation.invariant.name())
            .collect()
    }

    #[test]
    fn synced_offset_above_a_recent_fetcher_cut_is_excused_only_as_that_race() {
        // c's leader 2 of orders-1 held 0..57 when the sync read its high watermark 57 and
        // committed 57; its fetcher then cut the log to 0 on the source's diverging epoch
        // (generator seed 9400000000000315).
        let c = ClusterIndex(2);
        let tp = TopicPartition::new("orders", 1);
        let cut = FetcherCut {
            cluster: c,
            leader: BrokerId(2),
            topic_partition: tp.clone(),
            from: 57,
            to: 0,
            seen_ms: 4_190,
        };
        let excused = |cuts: &[FetcherCut], leader: i32, offset: i64, read: i64, end: i64| {
            cut_below_synced_offset(cuts, (c, BrokerId(leader), &tp), offset, (read, end))
        };
        let one = std::slice::from_ref(&cut);
        assert!(excused(one, 2, 57, 57, 0));
        assert!(excused(one, 2, 1, 57, 0));
        // Above the high watermark the sync read: the clamp was bypassed
        // (`unclamped-offset-sync`), whatever the cut.
        assert!(!excused(one, 2, 57, 40, 0));
        // Above the log before the cut too.
        assert!(!excused(one, 2, 58, 60, 0));
        // No recent cut, or a cut by another broker (a deposed leader), or of another
        // partition: judged as it is.
        assert!(!excused(&[], 2, 57, 57, 0));
        assert!(!excused(one, 3, 57, 57, 0));
        let other = FetcherCut {
            topic_partition: TopicPartition::new("orders", 0),
            ..cut.clone()
        };
        assert!(!excused(&[other], 2, 57, 57, 0));
        // An offset still in the log needs no excuse; a cut that kept the log at or above the
        // offset cannot explain it.
        assert!(!excused(one, 2, 0, 57, 0));
        let short = FetcherCut { to: 57, ..cut };
        assert!(!excused(&[short], 2, 57, 57, 50));
    }

    #[test]
    fn state_records_of_the_seed_workflow_pass() {
        use MirrorState::*;
        let records = vec![
            state(Preparing, 0, 1),
            state(Mirroring, 1, 1),
            state(Mirroring, 2, 3), // a new leader re-enters the state
            state(Stopping, 3, 3),
            state(Stopped, 4, 4),
        ];
        assert!(feed(records).is_empty());
    }

    #[test]
    fn legal_transitions_catches_a_skipped_state() {
        use MirrorState::*;
        assert_eq!(
            feed(vec![state(Mirroring, 0, 1)]),
            vec!["legal-transitions"],
            "UNKNOWN → MIRRORING skips PREPARING"
        );
        assert_eq!(
            feed(vec![
                state(Preparing, 0, 1),
                state(Mirroring, 1, 1),
                state(Stopped, 2, 1)
            ]),
            vec!["legal-transitions"]
        );
    }

    #[test]
    fn coordinator_fencing_catches_a_reused_state_epoch_and_a_lower_leader_epoch() {
        use MirrorState::*;
        assert_eq!(
            feed(vec![state(Preparing, 0, 1), state(Mirroring, 0, 1)]),
            vec!["coordinator-fencing"],
            "two accepted writes with one state epoch"
        );
        assert_eq!(
            feed(vec![state(Preparing, 0, 5), state(Mirroring, 1, 4)]),
            vec!["coordinator-fencing"],
            "a deposed leader's write accepted"
        );
        // A tombstone starts the key over (DeleteMirror, then the name reused).
        let tombstone = MirrorStateRecord::PartitionState {
            mirror: "m".into(),
            id: MirrorPartitionId {
                topic_id: TopicId(1),
                partition: 0,
            },
            value: None,
        };
        assert!(feed(vec![
            state(Preparing, 0, 5),
            tombstone,
            state(Preparing, 0, 0)
        ])
        .is_empty());
    }

    /// An empty log in a fresh in-memory directory `dir`.
    fn empty_log(dir: &str) -> PartitionLog<MemoryDirDisk> {
        use mirrorsim::broker::BrokerStorage;
        let mut storage = mirrorsim::broker::MemoryStorage::new();
        let (log, _) =
            PartitionLog::open(storage.open_dir(dir), mirrorsim::log::LogConfig::default())
                .unwrap();
        log
    }

    /// A batch of one record holding `value`.
    fn one_record(value: &'static str) -> mirrorsim::record::RecordBatch {
        let mut builder = mirrorsim::record::BatchBuilder::default();
        builder.append(
            0,
            None,
            Some(bytes::Bytes::from_static(value.as_bytes())),
            vec![],
        );
        builder.build()
    }

    /// A `__mirror_state` log of one batch per record, appended by its leader in epoch 0.
    fn state_log(records: &[MirrorStateRecord], at_ms: i64) -> PartitionLog<MemoryDirDisk> {
        let mut log = empty_log("__mirror_state-0");
        for record in records {
            let batch = mirrorsim::coordinator::runtime::encode_records(
                std::slice::from_ref(record),
                at_ms,
            );
            log.append_as_leader(&batch, 0, mirrorsim::log::AppendOrigin::Coordinator, at_ms)
                .unwrap();
        }
        log.maybe_increment_high_watermark(log.log_end_offset());
        log
    }

    /// A destination log written batch by batch, each `(leader epoch, reset?)`: a
    /// MIRROR_PID_RESET or a plain record (what a mirror fetcher would have appended keeps its
    /// source's epoch; only the stamped epoch matters to the boundary).
    fn stamped_log(batches: &[(i32, bool)]) -> PartitionLog<MemoryDirDisk> {
        let mut log = empty_log("orders-4");
        for &(epoch, reset) in batches {
            let batch = if reset {
                mirrorsim::record::mirror_pid_reset("b", 0)
            } else {
                one_record("v")
            };
            log.append_as_leader(&batch, epoch, mirrorsim::log::AppendOrigin::Coordinator, 0)
                .unwrap();
        }
        log
    }

    /// A log of one-record batches, each `(leader epoch, value)`.
    fn valued_log(batches: &[(i32, &'static str)]) -> PartitionLog<MemoryDirDisk> {
        let mut log = empty_log("orders-1");
        for &(epoch, value) in batches {
            log.append_as_leader(
                &one_record(value),
                epoch,
                mirrorsim::log::AppendOrigin::Client,
                0,
            )
            .unwrap();
        }
        log
    }

    #[test]
    fn a_deposed_leaders_append_of_the_leaders_own_batches_is_not_mirrored_data() {
        // b's leader wrote 0..=1 in epoch 0 (mirrored) and 2..=3 in epoch 2 (its own); a
        // deposed leader appended 2..=3 back from a mirror loop: the leader's own batches.
        let leader = valued_log(&[(0, "a0"), (0, "a1"), (2, "b2"), (2, "b3")]);
        let looped = valued_log(&[(0, "a0"), (0, "a1"), (2, "b2"), (2, "b3")]);
        assert_eq!(foreign_batches(&looped, &leader, 2, 3), None);
        // A batch the leader holds otherwise (9400000000000375: the source's records in an
        // epoch the leader's own writes reuse) is mirrored data, with its epoch.
        let foreign = valued_log(&[(0, "a0"), (0, "a1"), (2, "a2"), (2, "b3")]);
        assert_eq!(foreign_batches(&foreign, &leader, 2, 3), Some((3, 2)));
        let beyond = valued_log(&[(0, "a0"), (0, "a1"), (2, "b2"), (2, "b3"), (3, "a4")]);
        assert_eq!(foreign_batches(&beyond, &leader, 2, 4), Some((5, 3)));
        // Batches the appender no longer holds count as foreign up to the range's end.
        let short = valued_log(&[(0, "a0"), (0, "a1"), (2, "b2")]);
        assert_eq!(foreign_batches(&short, &leader, 2, 3), Some((4, -1)));
    }

    #[test]
    fn a_stop_of_own_writes_is_excused_only_after_a_mirror_state_loss_since_mirroring() {
        // Generated seed 10000000000000633: b mirrored orders-0 from 4264 ms, lost its whole
        // `__mirror_state` at 9877 ms, and its next leadership stopped as of its own writes.
        let (b, c) = (ClusterIndex(1), ClusterIndex(2));
        let tp = TopicPartition::new("orders", 0);
        let node = NodeId::Broker(b, BrokerId(1));
        let checks_with = |mirrored_ms: i64, (lost_cluster, lost_ms): (ClusterIndex, i64)| {
            let mut checks = MirrorChecks::default();
            checks
                .first_mirror_append_ms
                .insert((b, tp.clone()), mirrored_ms);
            checks.own_write_stops.insert((node, 2, tp.clone()), 10_883);
            checks.note_mirror_state_loss(lost_ms, lost_cluster);
            checks
        };
        assert!(checks_with(4_264, (b, 9_877)).own_write_stop_after_state_loss(node, 2, &tp));
        for (mirrored_ms, loss, incarnation) in [
            (4_264, (b, 2_000), 2),  // the state was lost before mirroring began
            (4_264, (b, 11_000), 2), // the stop came before the loss
            (4_264, (c, 9_877), 2),  // another cluster's state was lost
            (4_264, (b, 9_877), 3),  // another incarnation stopped (its own reads judged)
        ] {
            let checks = checks_with(mirrored_ms, loss);
            assert!(
                !checks.own_write_stop_after_state_loss(node, incarnation, &tp),
                "{loss:?} {incarnation}"
            );
        }
        // No stop of own writes at all (the stop wrote its reset, or never ran): no excuse.
        let mut no_stop = checks_with(4_264, (b, 9_877));
        no_stop.own_write_stops.clear();
        assert!(!no_stop.own_write_stop_after_state_loss(node, 2, &tp));
    }

    #[test]
    fn stopped_boundary_is_the_stops_own_reset_not_a_mirrored_one() {
        // a's log: its own records 0..=1 (epoch 0), then b's data mirrored back: b's reset at
        // 2 and a record in b's epoch 1, two records in b's epoch 3 (mirrored data ends at 6,
        // greatest mirrored epoch 3).
        let mirrored = [
            (0, false),
            (0, false),
            (1, true),
            (1, false),
            (3, false),
            (3, false),
        ];
        // a's stop bumped to 4 and wrote its reset at 6: the boundary.
        let mut stopped = mirrored.to_vec();
        stopped.extend([(4, true), (4, false)]);
        assert_eq!(mirrored_boundary(&stamped_log(&stopped), 6, 3), (6, false));
        // A power loss of a's only replica tore the log to 5, taking the stop's reset: b's
        // reset at 2 is mirrored data, what is left of the mirrored data ends at the log end.
        assert_eq!(
            mirrored_boundary(&stamped_log(&mirrored[..5]), 6, 3),
            (5, true)
        );
        // The `no-epoch-bump` design writes its reset at the mirrored data's end in epoch 3:
        // still its own, so its local writes in epoch 3 are judged.
        let mut unbumped = mirrored.to_vec();
        unbumped.extend([(3, true), (3, false)]);
        assert_eq!(mirrored_boundary(&stamped_log(&unbumped), 6, 3), (6, false));
    }

    /// Reads `log` as `check_state_records` does (losses noticed), the invariants found.
    fn read(
        checks: &mut MirrorChecks,
        log: &PartitionLog<MemoryDirDisk>,
        replicas: usize,
    ) -> Vec<&'static str> {
        let tp = TopicPartition::new(MIRROR_STATE_TOPIC, 0);
        let progress = checks
            .state_log_checked
            .entry((ClusterIndex(1), tp.clone()))
            .or_default();
        if state_log_lost(log, progress, replicas) {
            *progress = StateLogProgress::default();
            checks.stored.clear();
        }
        let progress = checks.state_log_checked[&(ClusterIndex(1), tp.clone())];
        let mut found = Vec::new();
        let mut progress_after = progress;
        for batch in log.batches_from(progress.checked) {
            for record in decode_records::<MirrorStateRecord>(batch) {
                found.extend(
                    checks
                        .check_state_record(0, ClusterIndex(1), &tp, record)
                        .map(|violation| violation.invariant.name()),
                );
            }
            progress_after.checked = batch.next_offset();
            progress_after.last_batch = Some((batch.base_offset(), batch.header().crc));
        }
        checks
            .state_log_checked
            .insert((ClusterIndex(1), tp), progress_after);
        found
    }

    #[test]
    fn a_single_replica_state_log_that_lost_committed_records_is_read_again_from_its_start() {
        use MirrorState::*;
        // Read: PREPARING, MIRRORING (state epochs 0, 1). Then the only replica loses its
        // unflushed MIRRORING in a power loss, and the coordinator, reloaded from PREPARING,
        // accepts a new leader's STOPPING with state epoch 1 again, then STOPPED: read on
        // from where it was, the checker would see MIRRORING → STOPPED (generated seed
        // 1337263765019815).
        let before = [state(Preparing, 0, 0), state(Mirroring, 1, 0)];
        let after = [
            state(Preparing, 0, 0),
            state(Stopping, 1, 2),
            state(Stopped, 2, 2),
        ];
        let mut checks = MirrorChecks::default();
        assert!(read(&mut checks, &state_log(&before, 0), 1).is_empty());
        assert!(
            read(&mut checks, &state_log(&after, 1), 1).is_empty(),
            "judged on the log the coordinator reloaded"
        );
        // With three replicas a committed record is never lost: the log is judged as it is.
        let mut checks = MirrorChecks::default();
        assert!(read(&mut checks, &state_log(&before, 0), 3).is_empty());
        assert_eq!(
            read(&mut checks, &state_log(&after, 1), 3),
            vec!["legal-transitions"]
        );
        // And on a single replica whose log kept what was read, a reused state epoch is
        // still caught.
        let mut checks = MirrorChecks::default();
        let reused = [
            state(Preparing, 0, 0),
            state(Mirroring, 1, 0),
            state(Mirroring, 1, 2),
        ];
        assert!(read(&mut checks, &state_log(&reused[..2], 0), 1).is_empty());
        assert_eq!(
            read(&mut checks, &state_log(&reused, 0), 1),
            vec!["coordinator-fencing"]
        );
    }
}
