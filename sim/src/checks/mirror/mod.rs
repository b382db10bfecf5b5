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
//! - `mirror-loss-followed` (spec §4.7, `source_loss.rs`): a MIRRORING partition never cuts
//!   records its leaders mirrored since its last PREPARING, on its source's diverging answer,
//!   unless the topic has `mirror.support.unclean.leader.election=true`.
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
//!   (generator seed 1337263765019451, an unclean election in a). A partition still
//!   MIRRORING at the end of the heal phase is judged for them by `liveness`
//!   ([`check_source_loss_kept`], spec §4.7).
//! - After the source, itself a mirror destination, cut its log by design (a PREPARING
//!   truncation, or its fetcher meeting its own source's diverging epoch), the batches the
//!   cut removed are not judged through one more append, the answer to a fetch the source
//!   served before the cut (`MirrorChecks::note_source_mirror_cut`; marks
//!   `mirror-prefix-source-prepare-cut`, `mirror-prefix-source-fetcher-cut`).
//! - Already compared batches are not compared again when the source leader changes: their
//!   bytes were the source's, and the source's own checkers judge its replicas.

mod lineage;
mod liveness;
mod offsets;
mod prefix;
mod producer_states;
mod source_loss;
pub mod source_sync;
mod state_records;
mod stopped;

use lineage::{foreign_batches, is_deposed, live_incarnation, max_epoch, mirrors_back};
pub(crate) use lineage::{mirror_source_in, source_cluster};
pub use liveness::{check_mirror_liveness, check_source_loss_kept};
use mirrorsim::common::Offset;
use offsets::{check_synced_offset, source_stable_end, SyncedOffsetVerdict};
use state_records::check_single_fetcher;
use stopped::{check_stopped, has_mirrored_producers, mirrored_boundary};

use std::collections::{BTreeMap, BTreeSet};

use mirrorsim::broker::{BrokerEvent, MemoryDirDisk, Role, TruncationReason};
use mirrorsim::coordinator::runtime::decode_records;
use mirrorsim::log::{PartitionLog, ProducerStateManager};
use mirrorsim::metadata::ConfigResource;
use mirrorsim::mirror::coordinator::{MirrorStateRecord, MIRROR_STATE_TOPIC};
use mirrorsim::mirror::is_valid_transition;
use mirrorsim::mirror::properties::SOURCE_CLUSTER_ID_CONFIG;
use mirrorsim::mirror::sync::BOOTSTRAP_SERVERS_CONFIG;
use mirrorsim::mirror::TopicMirrorConfig;
use mirrorsim::mirror::{parse_bootstrap_servers, MirrorState};
use mirrorsim::node::Node;
use mirrorsim::protocol::{
    BrokerId, ClusterIndex, LeaderEpoch, MirrorPartitionId, NodeId, TopicPartition,
};

use crate::checks::invariants::{Invariant, Violation};
use crate::checks::observer::{Checker, Step};
use crate::checks::view::{current_leader, BrokerView, ControllerView};

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
    stored: BTreeMap<StoredKey, (MirrorState, i32, LeaderEpoch)>,
    /// Preconditions noted, by invariant (merged into the marks by the checkers; see
    /// [`crate::checks::INVARIANTS`]).
    pub preconditions: BTreeMap<Invariant, u64>,
    /// `single-mirror-fetcher`: the brokers seen running a fetcher, per mirror partition.
    fetcher_brokers: BTreeMap<(ClusterIndex, TopicPartition), BTreeSet<BrokerId>>,
    /// Mirror topics a broker forwarded a DeleteTopics or CreatePartitions for, or an
    /// AddTopicsToMirror naming them checked in a mirror that removed them, waiting for their
    /// check: (cluster, topic, who forwarded, the mirror checked: `None` for the topic's
    /// mirror in the controller's image).
    forwarded_topic_admin: Vec<(ClusterIndex, String, NodeId, Option<String>)>,
    /// (cluster, mirror, partition) whose stored state was STOPPED or absent at some point of
    /// the current step: before its newly committed records, or after one of them (see
    /// [`MirrorChecks::check_forwarded_topic_admin`]).
    stopped_seen: BTreeSet<(ClusterIndex, String, MirrorPartitionId)>,
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
    /// (destination cluster, partition) → when it first went PREPARING: its last-mirrored-epoch
    /// lookup then learned the source topic's id, even if nothing was ever appended.
    first_prepare_ms: BTreeMap<(ClusterIndex, TopicPartition), i64>,
    /// (node, incarnation, partition) of the stops a leader made as stops of its cluster's
    /// own writes (no cut to the LSO, no MIRROR_PID_RESET), when they began.
    own_write_stops: BTreeMap<(NodeId, u64, TopicPartition), i64>,
    /// `mirror-loss-followed`: (destination cluster, partition) → where the records its
    /// leaders mirrored since its last PREPARING end (exclusive), lowered by cuts.
    mirrored_since_prepare: BTreeMap<(ClusterIndex, TopicPartition), i64>,
    /// `mirror-loss-followed`: (destination cluster, partition) → the leader that appended
    /// mirrored records last, and the highest high watermark it had at its appends (see
    /// `observe_source_loss`).
    mirroring_leaders: BTreeMap<(ClusterIndex, TopicPartition), (NodeId, i64)>,
    /// `mirror-loss-followed`: (destination cluster, partition) → the broker that took its
    /// latest leader epoch, and that epoch.
    latest_leaders: BTreeMap<(ClusterIndex, TopicPartition), (NodeId, i32)>,
    /// Marks of excuses used (merged into the checkers' marks).
    pub marks: BTreeMap<&'static str, u64>,
    /// (cluster, topic) → when the checkers last saw a life of that topic end (deleted, or
    /// created again under another topic id; `checks::topics`). `offset-identity` is not
    /// judged against such a source (its log may be the next life's).
    source_lives_ended: BTreeMap<(ClusterIndex, String), i64>,
    /// Lives ended under a mirror: (source cluster, topic) whose life ended, waiting to be
    /// matched with the destination partitions that had mirrored it (`prefix::note_lives`).
    lives_to_match: Vec<(ClusterIndex, String, i64)>,
    /// Destination partitions ((cluster, partition) → their source cluster) that mirrored a
    /// life of their source topic that has ended, until they stop: their logs hold what the
    /// source no longer has, so `mirror-prefix` judges them by what they must never hold, a
    /// batch of the topic's next life; a STOPPED partition added again later mirrors afresh.
    /// The value's second field is the offset below which the log was judged already.
    mirrored_ended_lives: BTreeMap<(ClusterIndex, TopicPartition), (ClusterIndex, i64)>,
}

impl MirrorChecks {
    /// Forgets what is remembered per partition of `topic` on `cluster` (its life ended:
    /// `checks::topics`); the source's losses and cuts noted there are kept, since the mirrors
    /// that fetched them still hold what they fetched.
    /// Whether the life of `source`'s topic that `destination`'s `tp` mirrored has ended: the
    /// checkers saw it end after the destination first appended from the source, or first went
    /// PREPARING (whose lookup learned the source topic id: a partition that met the source's
    /// deletion before its first append fails on the new id too; generated seed
    /// 15400000000000201).
    pub(crate) fn source_life_ended_under(
        &self,
        destination: ClusterIndex,
        tp: &TopicPartition,
        source: ClusterIndex,
    ) -> bool {
        let Some(&ended) = self.source_lives_ended.get(&(source, tp.topic.to_string())) else {
            return false;
        };
        let key = (destination, tp.clone());
        [
            self.first_mirror_append_ms.get(&key),
            self.first_prepare_ms.get(&key),
        ]
        .into_iter()
        .flatten()
        .any(|&since| since <= ended)
    }

    pub(crate) fn forget_topic(&mut self, time_ms: i64, cluster: ClusterIndex, topic: &str) {
        self.source_lives_ended
            .insert((cluster, topic.to_owned()), time_ms);
        self.lives_to_match
            .push((cluster, topic.to_owned(), time_ms));
        use crate::checks::topics::{forget_in, forget_in_set};
        forget_in(&mut self.prefix, cluster, topic);
        forget_in(&mut self.unmet_source_cuts, cluster, topic);
        forget_in_set(&mut self.restart_checked, cluster, topic);
        forget_in(&mut self.psm_pending, cluster, topic);
        forget_in(&mut self.mirrored, cluster, topic);
        forget_in(&mut self.stopped_scanned, cluster, topic);
        forget_in(&mut self.fetcher_brokers, cluster, topic);
        forget_in(&mut self.first_mirror_append_ms, cluster, topic);
        forget_in(&mut self.first_prepare_ms, cluster, topic);
        forget_in(&mut self.own_write_stops, cluster, topic);
        forget_in(&mut self.mirrored_since_prepare, cluster, topic);
        forget_in(&mut self.mirroring_leaders, cluster, topic);
        forget_in(&mut self.latest_leaders, cluster, topic);
        forget_in(&mut self.destination_losses, cluster, topic);
    }
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
    fn observe_event(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        view: &BrokerView<'_>,
        event: &BrokerEvent,
    ) {
        self.observe_source_loss(time_ms, view, event);
        let node = NodeId::Broker(view.cluster, view.broker.broker_id());
        match event {
            BrokerEvent::StopOfOwnWrites {
                topic_partition, ..
            } => {
                self.own_write_stops
                    .entry((node, view.incarnation, topic_partition.clone()))
                    .or_insert(time_ms);
            }
            BrokerEvent::MirrorTransition {
                topic_partition,
                to: MirrorState::Preparing,
                ..
            } => {
                self.first_prepare_ms
                    .entry((view.cluster, topic_partition.clone()))
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
                    max_epoch(view, topic_partition, first_offset.0, last_offset.0 + 1);
                if is_deposed(controllers, view, topic_partition) {
                    self.deposed_appends.push(DeposedAppend {
                        node,
                        incarnation: view.incarnation,
                        topic_partition: topic_partition.clone(),
                        first_offset: first_offset.0,
                        last_offset: last_offset.0,
                        epoch: appended_epoch,
                    });
                } else {
                    self.fold_mirrored(
                        view.cluster,
                        topic_partition,
                        last_offset.0 + 1,
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
                    first_offset: first_offset.0,
                    last_offset: last_offset.0,
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
                        to_log_end_offset.0,
                        from_log_end_offset.0,
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
                        from: from_log_end_offset.0,
                        to: to_log_end_offset.0,
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
                    progress.checked_to = progress.checked_to.min(to_log_end_offset.0);
                    progress.stale = progress
                        .stale
                        .map(|(from, to, epoch)| (from, to.min(to_log_end_offset.0), epoch))
                        .filter(|(from, to, _)| from < to);
                    progress.source_cut = progress
                        .source_cut
                        .map(|(from, to, appends, mark)| {
                            (from, to.min(to_log_end_offset.0), appends, mark)
                        })
                        .filter(|(from, to, _, _)| from < to);
                }
                for deposed in &mut self.deposed_appends {
                    if deposed.node.cluster() == view.cluster
                        && deposed.topic_partition == *topic_partition
                    {
                        deposed.last_offset = deposed.last_offset.min(to_log_end_offset.0 - 1);
                    }
                }
                self.deposed_appends
                    .retain(|deposed| deposed.first_offset <= deposed.last_offset);
                let key = (view.cluster, topic_partition.clone());
                if let Some((end, epoch)) = self.mirrored.get_mut(&key) {
                    if *to_log_end_offset < Offset(*end) {
                        // Rare: recompute what is left of the mirrored data.
                        *end = to_log_end_offset.0;
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
                first_offset.0,
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
                            .push((view.cluster, topic.clone(), node, None));
                    }
                }
            }
            BrokerEvent::AddTopicsForwarded {
                checked_stopped, ..
            } => {
                for (topic, mirror) in checked_stopped {
                    self.forwarded_topic_admin.push((
                        view.cluster,
                        topic.clone(),
                        node,
                        Some(mirror.clone()),
                    ));
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
                offset: offset.0,
                high_watermark_read: high_watermark_read.0,
            }),
            _ => {}
        }
    }

    /// A destination leader appended from its source: its log is aligned with the source's
    /// (see the module doc), so `mirror-prefix` judges it from now on in this leader epoch.
    fn note_aligned(&mut self, view: &BrokerView<'_>, topic_partition: &TopicPartition) {
        let Some(Role::Leader(state)) = view
            .partition(topic_partition)
            .map(|partition| &partition.role)
        else {
            return;
        };
        let node = NodeId::Broker(view.cluster, view.broker.broker_id());
        let progress = self
            .prefix
            .entry((node, view.incarnation, topic_partition.clone()))
            .or_insert(PrefixProgress {
                leader_epoch: state.leader_epoch.0,
                checked_to: 0,
                stale: None,
                source_cut: self
                    .unmet_source_cuts
                    .get(&(node, view.incarnation, topic_partition.clone()))
                    .map(|(from, to, mark)| (*from, *to, 0, *mark)),
            });
        if progress.leader_epoch != state.leader_epoch.0 {
            // An excuse the old epoch had not spent stays: the answer to a fetch the source
            // served before its cut may be appended after this process's own leader-epoch
            // change, seen in the same check step (generated seed 11600000000000065: c's
            // leader, paused across b's PREPARING cut with b's answer in flight, appended it
            // on waking and was re-elected in a bump 6 ms later; the append was judged in the
            // new epoch against b's refilled log).
            let unspent = progress.source_cut;
            *progress = PrefixProgress {
                leader_epoch: state.leader_epoch.0,
                checked_to: 0,
                stale: None,
                source_cut: self
                    .unmet_source_cuts
                    .get(&(node, view.incarnation, topic_partition.clone()))
                    .map(|(from, to, mark)| (*from, *to, 0, *mark))
                    .or(unspent),
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
    /// The same for a destination follower: it holds what its leader fetched before the cut
    /// and may lead next (generated seed 10800000000000196: c's leader was down at b's cut;
    /// c-broker-3, elected after it, appended one batch from b's deposed leader, which still
    /// held the pre-cut log, and was judged against b's current, empty one).
    fn note_unmet_source_cut(
        &mut self,
        brokers: &[BrokerView<'_>],
        cluster: ClusterIndex,
        cut_tp: &TopicPartition,
        (kept, before, mark): (i64, i64, &'static str),
    ) {
        for view in brokers {
            let Some(role) = view.partition(cut_tp).map(|p| &p.role) else {
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
            let aligned = match role {
                Role::Leader(state) => self
                    .prefix
                    .get(&key)
                    .is_some_and(|progress| progress.leader_epoch == state.leader_epoch.0),
                _ => false,
            };
            if aligned {
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
    fn check_state(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
    ) -> Vec<Violation> {
        let mut out = std::mem::take(&mut self.found);
        self.fold_deposed_appends(controllers, brokers);
        self.note_stopped_before_records(controllers);
        out.extend(self.check_state_records(time_ms, controllers, brokers));
        for append in std::mem::take(&mut self.pending) {
            out.extend(self.check_identity(time_ms, controllers, brokers, &append));
        }
        self.note_fetchers(brokers);
        for (cluster, topic, node, mirror) in std::mem::take(&mut self.forwarded_topic_admin) {
            out.extend(self.check_forwarded_topic_admin(
                time_ms,
                controllers,
                (cluster, &topic, mirror.as_deref()),
                node,
            ));
        }
        self.stopped_seen.clear();
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
            for (topic_partition, partition) in view.partitions() {
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
}

/// KIP-1279's family: it learns mirrored appends, cuts, fetcher moves and state records from
/// the events, and judges them against both clusters' logs each step.
impl Checker for MirrorChecks {
    fn observe(&mut self, step: &Step<'_, '_>, view: &BrokerView<'_>, event: &BrokerEvent) {
        self.observe_event(step.time_ms, step.controllers, view, event);
    }

    fn check_step(&mut self, step: &Step<'_, '_>) -> Vec<Violation> {
        self.check_state(step.time_ms, step.controllers, step.brokers)
    }
}

#[cfg(test)]
mod tests;
