//! What a broker reports of itself, for checkers and traces: [`BrokerEvent`], one per state
//! change a checker needs (leadership, appends, truncations with their [`TruncationReason`],
//! ISR changes, KIP-1279 mirror transitions and cuts, coordinator loads, admin effects), and
//! its one-line form for traces (its `Display`, written in `summary.rs`).
//!
//! Contract: a broker and each of its components push events in the order the changes happen;
//! the world drains them once per step (`Broker::take_events`). An event describes what
//! happened, never what should: checkers compare events with each other and with the logs.
//! This module sits below every component, so any of them may report.

mod summary;

use crate::common::{LeaderEpoch, Offset};
use crate::log::EpochEndOffset;
use crate::protocol::{BrokerId, ClusterIndex, ErrorCode, NodeId, TopicPartition};

/// Why a replica's log was truncated (reported so checkers can tell legal truncations apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TruncationReason {
    /// A fetch answer carried a diverging epoch.
    DivergingEpoch,
    /// A fetch answer carried a diverging epoch whose end in the follower's own log lies
    /// below the leader's end offset for it (the follower never had the epoch, or ended it
    /// earlier): since KIP-279 it cuts there, below the leader's offset, which a pre-KIP-279
    /// follower took as it was.
    DivergingEpochBelowLeaderEnd,
    /// The follower's log had no epochs; it restarted from its high watermark.
    NoEpochsOnBecomingFollower,
    /// Before KIP-101 (`--design pre-kip-101`): a replica that became a follower cut its log
    /// to its high watermark.
    HighWatermarkOnBecomingFollower,
    /// The leader's log is shorter than the fetch offset.
    OffsetOutOfRangeAboveLeader,
    /// The leader's log starts above the follower's log end.
    OffsetOutOfRangeBelowLeaderStart,
    /// KIP-1279 PREPARING: a mirror leader truncated after its last mirrored epoch.
    MirrorLastMirroredEpoch,
    /// KIP-1279 STOPPING: a mirror leader truncated to its last stable offset.
    MirrorStopAtLastStableOffset,
    /// KIP-1279 MIRRORING: the source answered a mirror fetch with a diverging epoch.
    MirrorDivergingEpoch,
    /// KIP-1279 MIRRORING: the source's log starts above the mirror's log end.
    MirrorBelowSourceLogStart,
}

impl TruncationReason {
    /// Whether KIP-1279 mirroring truncated (the destination's log follows the source's, and
    /// what it drops is lost by design, e.g. a failback's unmirrored writes).
    pub fn is_mirroring(self) -> bool {
        matches!(
            self,
            Self::MirrorLastMirroredEpoch
                | Self::MirrorStopAtLastStableOffset
                | Self::MirrorDivergingEpoch
                | Self::MirrorBelowSourceLogStart
        )
    }

    /// Whether a KIP-1279 mirroring cut follows the source's log: PREPARING's last mirrored
    /// epoch lookup, a diverging epoch, a restart below the source's log start. STOPPING's
    /// cut to the last stable offset is the one the destination decides alone.
    pub fn follows_source(self) -> bool {
        self.is_mirroring() && self != Self::MirrorStopAtLastStableOffset
    }
}

/// Something a checker or a trace wants to know about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrokerEvent {
    /// This broker became leader of a partition in `leader_epoch` at `start_offset`.
    BecameLeader {
        /// The partition.
        topic_partition: TopicPartition,
        /// The leader epoch.
        leader_epoch: LeaderEpoch,
        /// The log end offset at which the epoch starts.
        start_offset: Offset,
        /// The replica's high watermark when it took over (as a follower it learned it from
        /// the previous leader, a fetch round trip late): the records between it and
        /// `start_offset` are the ones a pre-KIP-101 follower cut before it could lead.
        high_watermark: Offset,
    },
    /// This broker now follows `leader` (or waits, when `None`).
    BecameFollower {
        /// The partition.
        topic_partition: TopicPartition,
        /// The new leader.
        leader: Option<BrokerId>,
        /// The leader epoch.
        leader_epoch: LeaderEpoch,
        /// The log end offset before the change (before any truncation it made).
        log_end_offset: Offset,
        /// The high watermark before the change.
        high_watermark: Offset,
    },
    /// A log was truncated.
    Truncated {
        /// The partition.
        topic_partition: TopicPartition,
        /// Log end offset before.
        from_log_end_offset: Offset,
        /// Log end offset after.
        to_log_end_offset: Offset,
        /// High watermark before.
        high_watermark_before: Offset,
        /// Why.
        reason: TruncationReason,
    },
    /// A leader appended a client batch (or a MIRROR_PID_RESET).
    LeaderAppend {
        /// The partition.
        topic_partition: TopicPartition,
        /// First offset.
        first_offset: Offset,
        /// Last offset.
        last_offset: Offset,
        /// The leader epoch stamped.
        leader_epoch: LeaderEpoch,
        /// For a KIP-1279 mirror topic, the partition's mirror state at the append (`None`
        /// for a topic in no mirror).
        mirror_state: Option<crate::common::MirrorState>,
        /// Whether the appended batch is a control batch (STOPPING's MIRROR_PID_RESET). An
        /// observer cannot tell from the log later: PREPARING may have cut it and a mirrored
        /// batch taken its offset by the time the event is read.
        control: bool,
    },
    /// A mirror leader appended batches fetched from the source, as they were (KIP-1279).
    MirrorAppend {
        /// The partition.
        topic_partition: TopicPartition,
        /// First offset.
        first_offset: Offset,
        /// Last offset.
        last_offset: Offset,
    },
    /// This leader moved a partition's log start for a DeleteRecords.
    RecordsDeleted {
        /// The partition.
        topic_partition: TopicPartition,
        /// The new log start offset.
        log_start_offset: Offset,
        /// The leader's mirror state of the partition (`None` for a topic in no mirror).
        mirror_state: Option<crate::common::MirrorState>,
    },
    /// This broker forwarded a DeleteTopics or CreatePartitions for these topics to the
    /// controller (after its KIP-1279 mirror check).
    TopicAdminForwarded {
        /// The topics forwarded.
        topics: Vec<String>,
    },
    /// This broker forwarded an AddTopicsToMirror to the controller, naming these topics as
    /// checked: removed by the mirror given with each, whose stored state it read STOPPED or
    /// UNKNOWN for every partition (`mirror::topic_admin`).
    AddTopicsForwarded {
        /// The forwarded topics (the mirror to add them to is not needed by anyone watching).
        topics: Vec<String>,
        /// `(topic, mirror that removed it)` for each checked topic.
        checked_stopped: Vec<(String, String)>,
    },
    /// A mirror partition's leader persisted a state transition (KIP-1279) and acts on it.
    MirrorTransition {
        /// The partition.
        topic_partition: TopicPartition,
        /// The state before (as this leader knew it).
        from: crate::common::MirrorState,
        /// The state persisted.
        to: crate::common::MirrorState,
    },
    /// The mirror sync (KIP-1279 §7) sent an admin commit of a source group's offset to this
    /// cluster's group coordinator.
    MirrorOffsetSynced {
        /// The group.
        group_id: String,
        /// The partition.
        topic_partition: TopicPartition,
        /// The offset committed.
        offset: Offset,
        /// The source's committed offset it came from.
        source_offset: Offset,
        /// The destination's high watermark the sync read for the partition this round (the
        /// clamp's upper bound), for the checkers; not in the event's summary line.
        high_watermark_read: Offset,
    },
    /// The mirror sync left a source group's offset for a later round: the source committed
    /// it in a leader epoch newer than the epoch at the destination's log end, so where the
    /// two logs agree is not known yet (see `clamp_group_offset`).
    MirrorOffsetSyncDeferred {
        /// The group.
        group_id: String,
        /// The partition.
        topic_partition: TopicPartition,
        /// The source's committed offset.
        source_offset: Offset,
        /// Its leader epoch.
        source_epoch: LeaderEpoch,
        /// The leader epoch at the destination's log end.
        destination_epoch: LeaderEpoch,
    },
    /// This broker loaded the coordinator shard of an internal partition it now leads.
    CoordinatorLoaded {
        /// The internal partition.
        topic_partition: TopicPartition,
        /// Its leader epoch (the coordinator epoch).
        leader_epoch: LeaderEpoch,
    },
    /// A follower lowered its high watermark to its (new) leader's, which lagged.
    FollowerHighWatermarkLowered {
        /// The partition.
        topic_partition: TopicPartition,
        /// High watermark before.
        from: Offset,
        /// High watermark after.
        to: Offset,
        /// The leader it follows.
        leader: BrokerId,
    },
    /// This leader refused a WriteTxnMarkers marker for a KIP-1279 mirror partition that is
    /// not STOPPED (`ReadOnlyTopic`; the transaction coordinator retries it).
    TxnMarkerRefused {
        /// The partition.
        topic_partition: TopicPartition,
        /// Whether the marker was a COMMIT (else ABORT).
        committed: bool,
        /// The partition's mirror state at the refusal.
        mirror_state: crate::common::MirrorState,
    },
    /// This leader acknowledged, without an append, a WriteTxnMarkers marker for a KIP-1279
    /// mirror partition that is not STOPPED and holds nothing of the producer's transaction
    /// (see `MirrorDesign::acknowledges_moot_markers`).
    TxnMarkerMoot {
        /// The partition.
        topic_partition: TopicPartition,
        /// Whether the marker was a COMMIT (else ABORT).
        committed: bool,
        /// The partition's mirror state.
        mirror_state: crate::common::MirrorState,
    },
    /// This leader appended a WriteTxnMarkers marker into a KIP-1279 mirror partition that is
    /// not STOPPED, as its log holds only this cluster's own writes: nothing cut or mirrored
    /// yet (see `MirrorDesign::admits_markers_before_cut`).
    TxnMarkerAdmittedBeforeCut {
        /// The partition.
        topic_partition: TopicPartition,
        /// Whether the marker was a COMMIT (else ABORT).
        committed: bool,
        /// The partition's mirror state.
        mirror_state: crate::common::MirrorState,
    },
    /// The mirror fetcher got batches whose epoch is below this log's latest at the fetch
    /// offset, though the source found no divergence (it re-used the epoch number of this
    /// log's tail): the tail was cut back to `truncated_to` before anything was appended.
    MirrorEpochBelowLocal {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The fetch offset (this log's end).
        offset: Offset,
        /// Where the log was cut.
        truncated_to: Offset,
    },
    /// A `__mirror_state` partition refused the tombstones of a mirror the controller had
    /// deleted; the admin still gets the controller's answer.
    MirrorTombstonesRefused {
        /// Which DeleteMirror.
        delete_id: u64,
    },
    /// STOPPING of a partition whose log held this cluster's own writes only (nothing removed
    /// by a cut or mirrored since it left UNKNOWN or STOPPED): no cut to the LSO, no
    /// MIRROR_PID_RESET.
    StopOfOwnWrites {
        /// The partition.
        topic_partition: TopicPartition,
        /// This leadership's PREPARING had taken the last-mirrored-epoch answer and cut to it,
        /// removing nothing, before the stop (its markers were refused since).
        after_cut_decided: bool,
    },
    /// STOPPING's cut to the last stable offset separated the marker of a completed
    /// transaction from its records (transactions of different producers interleave), and the
    /// marker was appended again after the cut, so the transaction keeps its outcome.
    StopMarkerRestored {
        /// The partition.
        topic_partition: TopicPartition,
        /// The marker's producer.
        producer_id: i64,
        /// COMMIT (`true`) or ABORT.
        committed: bool,
        /// Where the marker stood before the cut.
        cut_from: Offset,
        /// Where it stands now.
        offset: Offset,
    },
    /// An AlterPartition went unanswered: the same proposal is sent again and stays pending
    /// (the high watermark is still computed over the maximal ISR), as Kafka's channel retries.
    AlterPartitionRetried {
        /// The partition.
        topic_partition: TopicPartition,
        /// The proposed ISR.
        isr: Vec<BrokerId>,
    },
    /// The mirror fetcher got a batch whose leader epoch is above this partition's own
    /// (the destination's leader epoch): nothing was appended, and the leader asked the
    /// controller to raise its epoch above `minimum` first
    /// (`MirrorDesign::fences_mirrored_epochs`, the later revision's EPOCH_FENCING).
    MirrorEpochFenced {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The highest epoch among the fetched batches.
        batch_epoch: LeaderEpoch,
        /// The leader epoch the partition is led in.
        leader_epoch: LeaderEpoch,
        /// The minimum asked of the controller.
        minimum: LeaderEpoch,
    },
    /// A mirroring cut of this leadership removed records, and the fetcher is about to append
    /// again: the leader asks the controller to raise its epoch above `leader_epoch` first,
    /// so that a mirror of this log sees the change (`MirrorDesign::verifies_mirrored_tail`).
    MirrorCutEpochBump {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The leader epoch the cut was made in.
        leader_epoch: LeaderEpoch,
    },
    /// A tail check found the log's last batch, at `base_offset`, equal to the source's batch
    /// there in `source_epoch` (`MirrorDesign::verifies_mirrored_tail`).
    MirrorTailChecked {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The base offset of the batch compared.
        base_offset: Offset,
        /// The source leader epoch the fetch named.
        source_epoch: LeaderEpoch,
    },
    /// A tail check found the first batch it compared, at `base_offset`, differing from the
    /// source's batch there (another history in the same epoch numbers), and this log holds
    /// batches below it: nothing is cut yet, the next check starts at `next_check`, further
    /// back from the log end.
    MirrorTailSearchedBack {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The base offset of the batch that differs.
        base_offset: Offset,
        /// Where the next tail check starts.
        next_check: Offset,
        /// The source leader epoch the fetch named.
        source_epoch: LeaderEpoch,
    },
    /// A tail check found the batch at `base_offset` differing from the source's batch there
    /// (another history in the same epoch numbers) and every batch it compared below it
    /// equal (or none below it here): the log was cut at `base_offset`, and the next fetch
    /// checks the tail again.
    MirrorTailDiverged {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The base offset of the first batch that differs, where the log was cut.
        base_offset: Offset,
        /// The source leader epoch the fetch named.
        source_epoch: LeaderEpoch,
    },
    /// MIRRORING: a fetch answer would cut this log below the end the source had already shown
    /// it holds (`MirrorTask::source_confirmed_end`): the source lost records it served, an
    /// unclean leader election there (spec §4.7). With the topic's
    /// `mirror.support.unclean.leader.election=false` the partition goes FAILED,
    /// non-retryable, and nothing is cut; with `true` the cut is made and mirroring goes on.
    MirrorSourceLostRecords {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// Where the source's answer would cut this log.
        cut_to: Offset,
        /// The end the source had shown it holds.
        confirmed_end: Offset,
        /// Whether the topic supports unclean elections (the cut is followed).
        followed: bool,
    },
    /// A new leadership of a mirroring partition had assumed its log end confirmed by the
    /// source, an answer would cut below it, and the source's last mirrored offset for this
    /// cluster told whether the cut removes only this cluster's own history (`own_history`: a
    /// failback's alignment the previous leader had not finished; followed) or records the
    /// source had served (judged by spec §4.7).
    MirrorTakeoverCutChecked {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// Where the answer would cut this log.
        cut_to: Offset,
        /// The source's last mirrored offset for this cluster (−1: none).
        last_mirrored_offset: Offset,
        /// Whether the cut removes only this cluster's own history.
        own_history: bool,
    },
    /// A mirror's `bootstrap.servers` changed: this broker dropped its connection to the
    /// source (its metadata view); the next fetch or lookup makes a new one.
    MirrorSourceConnectionReset {
        /// The mirror.
        mirror: String,
    },
    /// A mirror's `bootstrap.servers` names another cluster than the one the mirror was
    /// created from (spec S-15): the partition fails for good before any request goes there.
    MirrorSourceClusterChanged {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The source cluster id recorded at creation.
        recorded: String,
        /// The cluster `bootstrap.servers` names now.
        named: ClusterIndex,
    },
    /// A follower fetched past a mirror cut it had not yet truncated to, and its epoch check
    /// passed: the leader answered it as diverging at the cut
    /// (`MirrorDesign::fences_followers_after_mirror_cut`), where Kafka's check alone would
    /// have let it keep records the cut removed, or append inside a batch it never had.
    MirrorCutFencedFollower {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The fenced follower.
        follower: BrokerId,
        /// Its fetch offset.
        fetch_offset: Offset,
        /// The cut it must truncate to.
        cut: Offset,
    },
    /// A fetcher named a last fetched epoch above every epoch this leader's log holds (a
    /// KIP-1279 mirror log's cache holds its batches' epochs only, and a mirroring cut removed
    /// the later ones): the fetch diverged at the log end, in the latest epoch left
    /// (`leader_end_offset_for_fetched_epoch`).
    FetchedEpochAboveLatest {
        /// The partition.
        topic_partition: TopicPartition,
        /// The follower that fetched, or `None` for a consumer's fetch (a downstream
        /// cluster's mirror fetcher).
        follower: Option<BrokerId>,
        /// The epoch the fetch named.
        last_fetched_epoch: LeaderEpoch,
        /// The latest epoch of this log, and its log end offset: the answer.
        latest: EpochEndOffset,
    },
    /// A follower outside the ISR reached the leader's high watermark but not the log end the
    /// leadership began at (the high watermark a new leader keeps lags the committed
    /// records): KAFKA-7128's fix keeps it out of the ISR
    /// (`ReplicaConfig::isr_join_waits_for_epoch_start`); Kafka before the fix let it in
    /// (`joined`).
    IsrJoinBelowEpochStart {
        /// The partition.
        topic_partition: TopicPartition,
        /// The follower kept out.
        follower: BrokerId,
        /// Its log end offset (its fetch offset).
        follower_end: Offset,
        /// The leader's high watermark.
        high_watermark: Offset,
        /// The leader's log end when its leadership began.
        epoch_start: Offset,
        /// Whether the follower was proposed for the ISR all the same (`pre-kafka-7128`).
        joined: bool,
    },
    /// PREPARING's cut removed records (or an earlier leadership's may have), and its ISR has
    /// truncated, but a replica outside the ISR has not been seen at or below the cut: the
    /// seed design here waits for it (`MirrorDesign::prepare_awaits_every_replica_after_cut`),
    /// where the KIP's rule would go on to MIRRORING. Reported once per wait.
    PreparingAwaitsReplicaOutsideIsr {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The cut's offset.
        offset: Offset,
        /// Whether this cut removed records; when not, the wait is for what an earlier cut of
        /// the same PREPARING (or an earlier leadership's) removed.
        cut_removed_records: bool,
    },
    /// A request arrived before this incarnation's listeners were open; it is held and handled
    /// once they open (see `Broker::serving_requests`).
    RequestHeldBeforeListening {
        /// Who sent it.
        from: NodeId,
        /// The request's name.
        request: &'static str,
    },
    /// This broker, as the transactional id's coordinator, refused AddPartitionsToTxn for
    /// partitions of topics its metadata has mirroring or paused (`ReadOnlyTopic`, KIP-1279).
    TxnEnlistRefused {
        /// The transactional id.
        transactional_id: String,
        /// The partitions refused as read-only.
        partitions: Vec<TopicPartition>,
    },
    /// A coordinator shard this broker hosts reached a case a checker's precondition needs,
    /// which only the shard sees (`ShardOutput::marks`; e.g. `txn-late-end-txn-fenced`).
    CoordinatorMark {
        /// The coverage mark.
        mark: &'static str,
    },
    /// This broker removed its replica of a partition whose topic its metadata no longer has
    /// (a DeleteTopics; a topic created again under the name is another topic, with another
    /// topic id). Every earlier event of the partition was of the removed replica.
    PartitionRemoved {
        /// The partition.
        topic_partition: TopicPartition,
    },
    /// The ISR of a led partition changed (as confirmed by the controller).
    IsrChanged {
        /// The partition.
        topic_partition: TopicPartition,
        /// The new ISR.
        isr: Vec<BrokerId>,
    },
    /// A leader answered a client batch its producer had already written (a retry or a
    /// duplicated request) with the original offsets, appending nothing.
    DuplicateBatch {
        /// The partition.
        topic_partition: TopicPartition,
        /// The original first offset.
        first_offset: Offset,
    },
    /// The mirror coordinator refused this broker's write of a partition's mirror state as
    /// stale (`FencedStateEpoch`, `FencedLeaderEpoch`) or illegal
    /// (`InvalidClusterMirrorState`), or went unanswered (`RequestTimedOut`: it may have
    /// landed); the broker reads the state again.
    MirrorStateWriteRefused {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The coordinator's error.
        error: ErrorCode,
    },
    /// A mirror's periodic sync asks the controller to grow a mirror topic to its source
    /// topic's partition count.
    MirrorTopicGrowing {
        /// The destination topic.
        topic: String,
        /// The source's partition count.
        partitions: i32,
    },
    /// A mirror partition's BumpLeaderEpochs (STOPPING's, or fencing a mirrored epoch) went
    /// unanswered or was refused; it is asked again (or, with `epoch-fencing-state` in
    /// EPOCH_FENCING, the partition fails).
    MirrorEpochBumpFailed {
        /// The partition.
        topic_partition: TopicPartition,
        /// Its mirror state.
        mirror_state: crate::common::MirrorState,
        /// The controller's error, or `RequestTimedOut`.
        error: ErrorCode,
    },
    /// A leader answered a client's OffsetsForLeaderEpoch (a consumer validating its position
    /// after a leader change or a restart, KIP-320) for a partition that mirrors: the epochs
    /// in its log are the source's.
    ClientEpochValidated {
        /// The partition.
        topic_partition: TopicPartition,
        /// Its mirror state then.
        mirror_state: crate::common::MirrorState,
    },
    /// A mirror's periodic sync removes an active mirror topic that the mirror's
    /// `mirror.topics.exclude` matches (spec §7 item 10): its partitions stop and turn
    /// writable, as after an operator's RemoveTopicsFromMirror.
    MirrorTopicExcluded {
        /// The destination topic.
        topic: String,
    },
    /// A mirror partition's source topic is gone: deleted (source metadata said so for longer
    /// than a refresh) or deleted and created again (`recreated`: another topic id). The
    /// partition fails non-retryably.
    MirrorSourceTopicGone {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The topic exists again under another id.
        recreated: bool,
    },
    /// RecoverMirrorTopics rewrote a FAILED mirror partition's state at its coordinator: it
    /// retries with a fresh budget.
    MirrorPartitionRecovered {
        /// The mirror partition.
        topic_partition: TopicPartition,
    },
    /// A FAILED mirror partition has no retry left (non-retryable, or its
    /// `mirror.failed.retry.max.attempts` used up): it waits for RecoverMirrorTopics or a
    /// failover. Reported once per leadership and failure.
    MirrorAwaitsOperator {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// Its retry count (−1: non-retryable).
        retry_attempt: i16,
    },
    /// A mirror fetcher's tail check got nothing at the tail though the source's high
    /// watermark is past it: its next fetch probes the source's epoch at the log end.
    MirrorTailProbed {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The tail batch's base offset.
        base_offset: Offset,
    },
    /// KIP-890 part 1: a transaction's verification was answered (or timed out) and its
    /// produce was given `error` (NONE: appended as any produce is).
    TxnVerified {
        /// The partition the produce was for.
        topic_partition: TopicPartition,
        /// The producer.
        producer_id: crate::protocol::ProducerId,
        /// The coordinator's answer (REQUEST_TIMED_OUT when none came).
        coordinator_error: crate::protocol::ErrorCode,
        /// What the produce was answered.
        error: crate::protocol::ErrorCode,
    },
    /// A retried mirror partition's first mirrored append since its FAILED: its leader
    /// persisted MIRRORING with the failure record (retry count, last error, state before
    /// FAILED) cleared, a fresh budget for the next failure (the prototype's
    /// `clearFailedStateAndPersist`).
    MirrorFailureRecordCleared {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The retry count the record held.
        retry_attempt: i16,
    },
    /// This broker's authorizer refused a request's principal an operation on a topic (a
    /// KIP-1279 mirror's fetch, metadata or lookup at its source; [`crate::metadata::authorizer`]).
    AuthorizationDenied {
        /// The principal refused.
        principal: String,
        /// The operation (`Read`, `Describe`).
        operation: &'static str,
        /// The topic.
        topic: String,
    },
    /// The source answered nothing for a mirror partition (no fetch, no last-mirrored-epoch
    /// lookup) for `mirror.socket.timeout.ms`: the partition goes FAILED (retryable).
    MirrorSourceSilent {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// Since when the source has been silent (the leader's clock).
        since_ms: i64,
        /// For how long (the leader's clock).
        silent_for_ms: i64,
    },
    /// A mirror partition's leader read a state that a newer leadership persisted (a
    /// greater leader epoch than its own): it is a deposed leader behind on metadata, and
    /// reads again later instead of taking the state as its own.
    MirrorStateOfNewerLeader {
        /// The mirror partition.
        topic_partition: TopicPartition,
        /// The leader epoch this broker leads in, in its own view.
        leader_epoch: LeaderEpoch,
        /// The greatest leader epoch the coordinator accepted a write with.
        stored_leader_epoch: LeaderEpoch,
    },
    /// A leader refused a client batch for a KIP-1279 mirror partition that is not STOPPED
    /// (`ReadOnlyTopic`).
    MirrorWriteRefused {
        /// The partition.
        topic_partition: TopicPartition,
        /// Its mirror state.
        mirror_state: crate::common::MirrorState,
    },
}

impl BrokerEvent {
    /// The partition the event is about, when it is about one.
    pub fn topic_partition(&self) -> Option<&TopicPartition> {
        match self {
            Self::BecameLeader {
                topic_partition, ..
            }
            | Self::BecameFollower {
                topic_partition, ..
            }
            | Self::Truncated {
                topic_partition, ..
            }
            | Self::LeaderAppend {
                topic_partition, ..
            }
            | Self::MirrorAppend {
                topic_partition, ..
            }
            | Self::RecordsDeleted {
                topic_partition, ..
            }
            | Self::MirrorTransition {
                topic_partition, ..
            }
            | Self::MirrorOffsetSynced {
                topic_partition, ..
            }
            | Self::MirrorOffsetSyncDeferred {
                topic_partition, ..
            }
            | Self::CoordinatorLoaded {
                topic_partition, ..
            }
            | Self::FollowerHighWatermarkLowered {
                topic_partition, ..
            }
            | Self::TxnMarkerRefused {
                topic_partition, ..
            }
            | Self::TxnMarkerMoot {
                topic_partition, ..
            }
            | Self::TxnMarkerAdmittedBeforeCut {
                topic_partition, ..
            }
            | Self::MirrorEpochBelowLocal {
                topic_partition, ..
            }
            | Self::StopOfOwnWrites {
                topic_partition, ..
            }
            | Self::StopMarkerRestored {
                topic_partition, ..
            }
            | Self::AlterPartitionRetried {
                topic_partition, ..
            }
            | Self::MirrorEpochFenced {
                topic_partition, ..
            }
            | Self::MirrorCutEpochBump {
                topic_partition, ..
            }
            | Self::MirrorTailChecked {
                topic_partition, ..
            }
            | Self::MirrorTailDiverged {
                topic_partition, ..
            }
            | Self::MirrorTailSearchedBack {
                topic_partition, ..
            }
            | Self::MirrorSourceLostRecords {
                topic_partition, ..
            }
            | Self::MirrorTakeoverCutChecked {
                topic_partition, ..
            }
            | Self::MirrorSourceClusterChanged {
                topic_partition, ..
            }
            | Self::MirrorCutFencedFollower {
                topic_partition, ..
            }
            | Self::FetchedEpochAboveLatest {
                topic_partition, ..
            }
            | Self::IsrJoinBelowEpochStart {
                topic_partition, ..
            }
            | Self::PreparingAwaitsReplicaOutsideIsr {
                topic_partition, ..
            }
            | Self::PartitionRemoved {
                topic_partition, ..
            }
            | Self::IsrChanged {
                topic_partition, ..
            }
            | Self::DuplicateBatch {
                topic_partition, ..
            }
            | Self::MirrorStateWriteRefused {
                topic_partition, ..
            }
            | Self::MirrorEpochBumpFailed {
                topic_partition, ..
            }
            | Self::ClientEpochValidated {
                topic_partition, ..
            }
            | Self::MirrorSourceTopicGone {
                topic_partition, ..
            }
            | Self::MirrorPartitionRecovered {
                topic_partition, ..
            }
            | Self::MirrorAwaitsOperator {
                topic_partition, ..
            }
            | Self::MirrorSourceSilent {
                topic_partition, ..
            }
            | Self::MirrorTailProbed {
                topic_partition, ..
            }
            | Self::MirrorFailureRecordCleared {
                topic_partition, ..
            }
            | Self::TxnVerified {
                topic_partition, ..
            }
            | Self::MirrorStateOfNewerLeader {
                topic_partition, ..
            }
            | Self::MirrorWriteRefused {
                topic_partition, ..
            } => Some(topic_partition),
            _ => None,
        }
    }
}
