//! KIP-1279 design variants: the seed's design and the alternatives its reviewers weighed.
//!
//! A variant is one named switch read by the destination broker's mirroring code (fetcher,
//! STOPPING, PREPARING, periodic sync) and by its read-only checks on the transaction paths
//! (AddPartitionsToTxn, WriteTxnMarkers); issue #18's designs from Kafka's own history are on
//! the same switch, read by the partition leader's transaction verification (`pre-kip-890`)
//! and by the replica layer's follower truncation (`pre-kip-101`, `pre-kip-279`:
//! [`MirrorDesign::follower_truncation`]), and by the clients and followers (`pre-kip-320`:
//! [`MirrorDesign::fences_by_leader_epoch`]). Everything else — the clusters, the workloads, the
//! checkers — is the same for every variant, so running a scenario under two designs shows
//! which invariant the difference breaks. `../shared/docs/kip1279-spec.md` §0 and §9 describe
//! each one; the README's variants table records what the simulator found.
//!
//! Contract: [`MirrorDesign::Seed`] is the default and the reference; every variant changes
//! only what its doc says.

use crate::common::LeaderEpoch;
use std::fmt;

use crate::log::FetchIsolation;
use crate::record::RecordBatch;
use crate::replica::FollowerTruncation;

/// How far above the source's leader epoch a fencing bump raises the destination's (the
/// prototype's `LEADER_EPOCH_BUMP_INCREMENT`), so that the next source elections need no bump.
pub const LEADER_EPOCH_BUMP_INCREMENT: i32 = 10;

/// Which design the mirroring code follows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MirrorDesign {
    /// The seed revision: batches stored as-is; STOPPING removes the fetcher, bumps the leader
    /// epoch, truncates to the LSO, persists the last mirrored epoch, writes MIRROR_PID_RESET.
    #[default]
    Seed,
    /// The later revision's stop: persist the last mirrored epoch first, bump, append an ABORT
    /// marker for every open transaction instead of truncating to the LSO, then the reset. Its
    /// fetcher reads up to the source's high watermark, open transactions included.
    AbortMarkers,
    /// The rejected early design: mirrored batches carry producer id −(pid+2) (CRC recomputed)
    /// and STOPPING writes no reset.
    PidRewrite,
    /// Producer ids kept, but STOPPING writes no MIRROR_PID_RESET.
    NoPidReset,
    /// The later revision (as `AbortMarkers`) with the reset appended before the ABORT markers
    /// that resolve open transactions (the ordering bug of spec §9 S-5).
    ResetBeforeTxnResolution,
    /// STOPPING does not bump the leader epoch.
    NoEpochBump,
    /// PREPARING aligns a failback by the last mirrored offset (the early KIP's LMO) instead of
    /// the end of the last mirrored epoch in the local log.
    OffsetAlignment,
    /// The periodic sync copies source group offsets without clamping them into the
    /// destination log.
    UnclampedOffsetSync,
    /// Mirrored batches take the destination's leader epoch (the early KIP's JR1).
    EpochRewrite,
    /// The prototype's AddPartitionsToTxn: a destination producer may enlist a mirror
    /// partition that is not STOPPED (neither AddPartitionsToTxn nor the KIP-890 verification
    /// path checks read-only there). Its produce is refused, and so is the marker that would
    /// end the transaction, which then never completes (issue #14).
    TxnEnlistUnchecked,
    /// The prototype's origin rule in STOPPING: an ABORT marker from the local transaction
    /// coordinator (WriteTxnMarkers, coordinator origin) is appended into a STOPPING
    /// partition, as the abort-markers stop's own ABORT markers are.
    StoppingAdmitsTxnAbort,
    /// The KIP's sync rule (spec §7, the prototype): group offsets are synced for every
    /// partition of a topic whose desired state is to mirror, whatever its partition's state.
    /// The seed design (issue #14) syncs only partitions read MIRRORING before and after the
    /// bounds: a re-added partition that is still STOPPED or PREPARING holds the destination's
    /// own log, which PREPARING is about to cut.
    SyncByTopicState,
    /// The KIP's PREPARING wait (spec §4.3, the seed's step 7): PREPARING waits for the ISR
    /// only to truncate (every replica only with `mirror.support.unclean.leader.election`),
    /// even when its cut removed records. A replica outside the ISR then keeps records the
    /// leader no longer has; where the batches mirrored at their offsets carry the same epoch
    /// number, its divergence check cannot tell, and it rejoins the ISR with a log the leader
    /// never had (issue #14's finding, `replica-convergence`). The seed design here waits
    /// for every replica when the cut removed records (or an earlier leadership may have).
    PrepareAwaitsIsr,
    /// The spec's clamp for synced group offsets (§7): `max(log start, min(source committed,
    /// log end offset))`. The seed design here clamps to the high watermark instead: an offset
    /// between the two points at records the destination's ISR may not hold, which a leader
    /// change can replace, and a group resuming there after the failover skips what replaced
    /// them (`group-resume-no-skip`).
    LeoClampedOffsetSync,
    /// The KIP's read-only rule taken literally on WriteTxnMarkers: from the moment the topic
    /// is in a mirror, the local transaction coordinator's markers are refused, even while the
    /// log still holds only this cluster's own writes (before PREPARING's cut, before anything
    /// was mirrored). A transaction the coordinator committed just as the topic turned
    /// read-only keeps its records open there; if PREPARING never cuts them (it failed: a
    /// mirror loop, an unreachable source) and the topic is removed, STOPPING's cut to the LSO
    /// drops a transaction its producer was told was committed (`transaction-atomicity`).
    MarkersRefusedBeforeCut,
    /// Kafka's follower rules alone after the mirror fetcher cuts a destination leader's log
    /// (a diverging source, a source batch below the local epoch): each follower finds its
    /// divergence by its last fetched epoch. The seed is silent here; the batches mirrored
    /// after the cut carry the source's epochs, which may be the removed records' own numbers,
    /// so a follower that was not fetching at the cut keeps records the leader no longer has,
    /// or truncates inside a re-mirrored batch and can append nothing again (`liveness`,
    /// generator seed 9400000000000529). The seed design here answers every follower's fetch
    /// past the cut as diverging until it has truncated to the cut.
    MirrorCutUnfenced,
    /// The seed's fetcher: a fetched batch whose leader epoch is above the destination's own
    /// leader epoch is appended as it comes. The destination's epochs then trail the source's,
    /// and STOPPING's bump, above every epoch in the leader's log, can land on a number a
    /// replica's unreplicated mirrored tail or a synced group offset already carries (spec
    /// §9 S-6; generator seeds 151, 397, 9400000000000375). The seed design here keeps the
    /// later revision's DLE ≥ SLE invariant reactively (spec §4.4): such a batch is not
    /// appended until the controller raised the destination's leader epoch above it
    /// ([`MirrorDesign::fences_mirrored_epochs`]).
    EpochsUnfenced,
    /// The seed's fetcher trusts a source's epoch numbers to name its history: it fetches at
    /// its log end with its last fetched epoch and appends what comes. A source that is itself
    /// a mirror (a chain's middle cluster) can cut its log and refill the same offsets with
    /// another cluster's batches in the same epoch number (mirrored batches keep their
    /// source's epochs), and the downstream mirror then appends the new history over the old
    /// one (`mirror-prefix`, generated seed 9970000000000596). The seed design here closes
    /// it from both ends ([`MirrorDesign::verifies_mirrored_tail`]): a mirroring cut that
    /// removed records raises the cutting leader's epoch before its next append, and a
    /// fetcher that sees its source's leader epoch change compares its last batch with the
    /// source's before it appends again.
    TailUnverified,
    /// The seed's STOPPING step 3 taken literally: the log is cut at its last stable offset and
    /// nothing more. Transactions of different producers interleave, so a completed
    /// transaction's marker can lie above the first offset of one still open (T1's records,
    /// T2's records, T1's COMMIT, T2 open): the cut at the LSO drops T1's marker and keeps its
    /// records, and after MIRROR_PID_RESET nothing marks them undecided any more
    /// (`read-committed`, transactions_at_failover seed 5089288179472432, found by a CI
    /// soak). The seed design here appends such markers again after the cut
    /// ([`MirrorDesign::restores_markers_cut_at_lso`]).
    TruncateAtLso,
    /// The seed's AddTopicsToMirror check (spec §3.2, step 2): the controller's alone, "not
    /// already in a mirror", so a topic another mirror removed may be added at once, whatever
    /// its partitions' states. A removal whose stop has not run yet (the leader fenced or cut
    /// off) then leaves the partition in the first mirror's state while the topic joins a
    /// second; removed from that one too, its leader reads UNKNOWN there, takes the partition
    /// as never mirrored and skips the stop, keeping the first mirror's producer state
    /// (`no-stale-pid-after-stopped`, generated seed 10500000000000289). The seed design here
    /// checks as the prototype's broker does ([`MirrorDesign::checks_add_against_stored_state`]).
    AddUnchecked,
    /// The prototype's FAILED: a retry goes back to the state the partition failed in,
    /// whatever `mirror.name` asks for now, and its admin refuses StopMirrorTopics for a
    /// FAILED partition; so a failover waits until the partition leaves FAILED on its own
    /// (the source back before its retries ran out) or an operator recovers it. With the
    /// source down for longer than the retries last, the failover never happens (L-2,
    /// `liveness`: `source_outage_fails_and_recovers`). The seed design here stops a removed
    /// topic's FAILED partitions at their next retry, retries left or not
    /// ([`MirrorDesign::stops_from_failed`]).
    FailedRefusesStop,
    /// The seed's periodic sync, which says nothing of a source topic's partition count: a
    /// source topic grown by CreatePartitions keeps its old count on the destination, and what
    /// the source writes to the new partitions is never mirrored (`liveness`:
    /// `source_topic_grows`). The seed design here grows the destination topic from the sync
    /// as the prototype's MirrorSourceSyncer does ([`MirrorDesign::grows_mirror_topics`]).
    SyncIgnoresGrowth,
    /// The seed's fetcher on a source that lost records it had served (an unclean leader
    /// election there, or a chain's middle cluster re-aligning a history its next hop had
    /// mirrored): the destination cuts what the source no longer has and mirrors on, whatever
    /// `mirror.support.unclean.leader.election` says, so destination consumers saw records
    /// that are silently replaced (`mirror-loss-followed`: `source_unclean_election`). The
    /// seed design here follows the later revision (spec §4.7): without the topic's
    /// `mirror.support.unclean.leader.election` the partition goes FAILED, non-retryable,
    /// keeping what it has ([`MirrorDesign::fails_on_source_loss`]).
    FollowsSourceLoss,
    /// The seed's brokers, which never compare the source with the one the mirror was created
    /// from: a `bootstrap.servers` altered to name another cluster is fetched from like the
    /// source. The seed design here records the source cluster id at creation and fails the
    /// mirror's partitions for good when `bootstrap.servers` names another (spec S-15,
    /// [`MirrorDesign::checks_source_cluster`]).
    SourceClusterUnchecked,
    /// The seed's sync, which reads `mirror.topics.exclude` only when it adopts a topic: a
    /// topic the mirror already mirrors keeps mirroring when an `alter_mirror` excludes it
    /// (`liveness`: `mirror_exclude_update`). The seed design here enforces the exclude as
    /// the later revision's coordinator-broker sync does (spec §7 item 10): an active topic
    /// the exclude matches is removed from the mirror, so it stops and turns writable
    /// ([`MirrorDesign::enforces_topics_exclude`]).
    ExcludeUnenforced,
    /// The later revision's EPOCH_FENCING (spec §2.5, §2.7) as the prototype runs it: a fetched
    /// batch above the partition's leader epoch moves it to EPOCH_FENCING, a persisted state,
    /// whose action asks the controller for the bump and goes back to MIRRORING once metadata
    /// shows it; a bump that fails (unanswered, refused) fails the partition, and its retry
    /// goes to the state it failed in, as the prototype's does, though FAILED → EPOCH_FENCING
    /// is not a legal transition: the retry is skipped, no attempt is used, and the partition
    /// stays FAILED until an operator recovers it (spec §9's "FAILED with prevState
    /// EPOCH_FENCING" finding). The seed design here fences inside MIRRORING (the fetcher
    /// waits for the bump, retrying it) and retries a FAILED partition through PREPARING
    /// ([`MirrorDesign::persists_epoch_fencing`]).
    EpochFencingState,
    /// Kafka before KIP-890 part 1 (transaction verification, Kafka 3.6; KAFKA-14402): a
    /// partition leader appends a transaction's first batch without asking the coordinator
    /// whether the partition is in the producer's ongoing transaction. A produce delayed past
    /// the transaction's end (the coordinator's timeout abort, the client's abort after its
    /// delivery timeout) then lands after the ABORT marker and opens a transaction nobody
    /// will end: the partition's last stable offset hangs (`liveness`). Before part 2 as
    /// well: one producer epoch across transactions (as `pre-kip-890-part-2`). Not a KIP-1279
    /// choice: a replication/transaction-layer design of issue #18, on the same switch
    /// ([`MirrorDesign::verifies_transactions`], [`MirrorDesign::transaction_version_2`]).
    PreKip890,
    /// Kafka before KIP-101 (Kafka 0.11; KAFKA-1211): a replica that becomes a follower (a
    /// leader change, a restart) truncates its log to its high watermark and fetches from
    /// there without a leader epoch, so no divergence is ever detected. A follower's high
    /// watermark lags the leader's by a fetch round trip: a follower cut so and elected
    /// before it fetched again loses acknowledged records (`acked-writes-durable`), and a
    /// replica whose high watermark is above its new leader's log end keeps records the
    /// leader replaced (`replica-convergence`). A replication-layer design of issue #18
    /// ([`MirrorDesign::follower_truncation`]).
    PreKip101,
    /// Kafka between KIP-101 and KIP-279 (0.11 to 1.1; KAFKA-6361): a replica that begins to
    /// follow asks the leader once for the end of its own latest epoch and truncates to the
    /// offset the leader gives, without checking which epoch that offset ends; then it fetches
    /// by offset alone. After two leader changes in quick succession (an unclean election
    /// among them), the leader never had the follower's latest epoch and answers with the end
    /// of an older one that the follower's log ended earlier: the follower keeps records of its
    /// own in between and appends the leader's after them (`replica-convergence`).
    /// ([`MirrorDesign::follower_truncation`]).
    PreKip279,
    /// Kafka before KIP-320 (2.0 and older; KAFKA-6880, KAFKA-7395): clients and followers
    /// fetch without their current leader epoch, so a leader whose epoch is not the asker's
    /// answers anyway; a consumer's position carries no leader epoch, is never validated
    /// after a leader change, and commits record none. After an unclean election a consumer
    /// whose position lies past the new leader's log end at election time fetches on from it
    /// once the new leader's log has grown there, and never reads the new leader's records
    /// below it (`unseen`). The mirror fetcher keeps KIP-320 (KIP-1279 builds on it)
    /// ([`MirrorDesign::fences_by_leader_epoch`]).
    PreKip320,
    /// Kafka before KIP-966 (3.6 and older; the KIP's "last replica standing"): a leader
    /// alone in its ISR moves its high watermark on what it alone holds, the last ISR member
    /// stays in the ISR when it is fenced, and a restart (an unclean shutdown) is elected
    /// again as that member. Two brokers impaired at once (a follower cut off, then the
    /// leader's power loss) then lose acknowledged records: the restarted leader lost its
    /// unflushed tail, and the replica that had it is not in the ISR
    /// (`acked-writes-durable`). A replication-layer design of issue #18
    /// ([`MirrorDesign::eligible_leader_replicas`]).
    PreKip966,
    /// Kafka between KIP-890's two parts (3.6 to 3.9; part 2 is KAFKA-14562, transaction
    /// version 2 in Kafka 4.0): transaction verification, but one producer epoch across
    /// transactions — EndTxn does not bump it, the markers carry the producer's own epoch and
    /// the client keeps its epoch and sequences. A request of one transaction that arrives
    /// late then acts on the next one, which has the same producer id and epoch: an
    /// EndTxn(commit) held in the network past the client's retry commits the producer's next
    /// transaction halfway, so records of a transaction its producer aborted are read
    /// (`transaction-atomicity`). With it the model is exactly what it was before part 2
    /// became the default (the same seed, the same trace hash). A transaction-layer design
    /// of issue #18 ([`MirrorDesign::transaction_version_2`]).
    PreKip890Part2,
    /// Kafka before KAFKA-7128's fix (2.0.0 and older; fixed in 2.0.1 and 2.1.0): a follower
    /// outside the ISR joins it once it reaches the leader's high watermark. A new leader
    /// keeps the high watermark it had as a follower, which lags the committed records by a
    /// fetch round trip, until its followers fetch in its epoch; a follower that reached only
    /// that stale high watermark joins without the records between, and, elected when the
    /// leader fails before it fetched them, loses them (`acked-writes-durable`). The fix also
    /// asks for the log end the leadership began at. A replication-layer design of issue #18
    /// ([`MirrorDesign::isr_join_waits_for_epoch_start`]).
    PreKafka7128,
}

impl MirrorDesign {
    /// Every design, the seed first.
    pub const ALL: [Self; 33] = [
        Self::Seed,
        Self::AbortMarkers,
        Self::PidRewrite,
        Self::NoPidReset,
        Self::ResetBeforeTxnResolution,
        Self::NoEpochBump,
        Self::OffsetAlignment,
        Self::UnclampedOffsetSync,
        Self::EpochRewrite,
        Self::TxnEnlistUnchecked,
        Self::StoppingAdmitsTxnAbort,
        Self::SyncByTopicState,
        Self::PrepareAwaitsIsr,
        Self::LeoClampedOffsetSync,
        Self::MarkersRefusedBeforeCut,
        Self::MirrorCutUnfenced,
        Self::EpochsUnfenced,
        Self::TailUnverified,
        Self::TruncateAtLso,
        Self::AddUnchecked,
        Self::FailedRefusesStop,
        Self::SyncIgnoresGrowth,
        Self::FollowsSourceLoss,
        Self::SourceClusterUnchecked,
        Self::ExcludeUnenforced,
        Self::EpochFencingState,
        Self::PreKip890,
        Self::PreKip101,
        Self::PreKip279,
        Self::PreKip320,
        Self::PreKip966,
        Self::PreKip890Part2,
        Self::PreKafka7128,
    ];

    /// The name on the command line (`--design`) and in scenario files (`design = "…"`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Seed => "seed",
            Self::AbortMarkers => "abort-markers",
            Self::PidRewrite => "pid-rewrite",
            Self::NoPidReset => "no-pid-reset",
            Self::ResetBeforeTxnResolution => "reset-before-txn-resolution",
            Self::NoEpochBump => "no-epoch-bump",
            Self::OffsetAlignment => "offset-alignment",
            Self::UnclampedOffsetSync => "unclamped-offset-sync",
            Self::EpochRewrite => "epoch-rewrite",
            Self::TxnEnlistUnchecked => "txn-enlist-unchecked",
            Self::StoppingAdmitsTxnAbort => "stopping-admits-txn-abort",
            Self::SyncByTopicState => "sync-by-topic-state",
            Self::PrepareAwaitsIsr => "prepare-awaits-isr",
            Self::LeoClampedOffsetSync => "leo-clamped-offset-sync",
            Self::MarkersRefusedBeforeCut => "markers-refused-before-cut",
            Self::MirrorCutUnfenced => "mirror-cut-unfenced",
            Self::EpochsUnfenced => "epochs-unfenced",
            Self::TailUnverified => "tail-unverified",
            Self::TruncateAtLso => "truncate-at-lso",
            Self::AddUnchecked => "add-unchecked",
            Self::FailedRefusesStop => "failed-refuses-stop",
            Self::SyncIgnoresGrowth => "sync-ignores-growth",
            Self::FollowsSourceLoss => "follows-source-loss",
            Self::SourceClusterUnchecked => "source-cluster-unchecked",
            Self::ExcludeUnenforced => "exclude-unenforced",
            Self::EpochFencingState => "epoch-fencing-state",
            Self::PreKip890 => "pre-kip-890",
            Self::PreKip101 => "pre-kip-101",
            Self::PreKip279 => "pre-kip-279",
            Self::PreKip320 => "pre-kip-320",
            Self::PreKip966 => "pre-kip-966",
            Self::PreKip890Part2 => "pre-kip-890-part-2",
            Self::PreKafka7128 => "pre-kafka-7128",
        }
    }

    /// Parses a name; `None` for an unknown one.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|design| design.name() == name)
    }

    /// The known names, comma-separated, for error messages.
    pub fn names() -> String {
        Self::ALL.map(Self::name).join(", ")
    }

    /// What the design changes, in one line.
    pub fn summary(self) -> &'static str {
        match self {
            Self::Seed => "the seed's design",
            Self::AbortMarkers => {
                "stop: persist LME, bump, ABORT markers for open transactions, then the reset"
            }
            Self::PidRewrite => {
                "mirrored batches get producer id -(pid+2), CRC recomputed; no reset, no tail check"
            }
            Self::NoPidReset => "producer ids kept, no MIRROR_PID_RESET at stop",
            Self::ResetBeforeTxnResolution => {
                "the reset is written before open transactions are resolved"
            }
            Self::NoEpochBump => "STOPPING does not bump the leader epoch",
            Self::OffsetAlignment => "failback aligns by last mirrored offset instead of LME",
            Self::UnclampedOffsetSync => "group offsets are copied without the clamp",
            Self::EpochRewrite => {
                "mirrored batches take the destination's leader epoch (no tail check)"
            }
            Self::TxnEnlistUnchecked => {
                "AddPartitionsToTxn enlists mirror partitions that are not STOPPED (the prototype)"
            }
            Self::StoppingAdmitsTxnAbort => {
                "STOPPING appends the local coordinator's ABORT markers (the prototype)"
            }
            Self::SyncByTopicState => {
                "group offsets synced for a mirrored topic's partitions in any state (the KIP)"
            }
            Self::PrepareAwaitsIsr => {
                "PREPARING waits for the ISR only, even when its cut removed records (the KIP)"
            }
            Self::LeoClampedOffsetSync => {
                "group offsets clamped to the destination's log end offset (the spec's clamp)"
            }
            Self::MarkersRefusedBeforeCut => {
                "transaction markers refused as soon as the topic mirrors, before any cut (the KIP)"
            }
            Self::MirrorCutUnfenced => {
                "followers find a mirror cut by their epochs alone, no tail check (Kafka's rule)"
            }
            Self::EpochsUnfenced => {
                "batches above the destination's leader epoch appended as they come (the seed)"
            }
            Self::TailUnverified => {
                "a source's epoch numbers trusted to name its history; no bump after a cut (the seed)"
            }
            Self::TruncateAtLso => {
                "STOPPING cuts at the LSO, dropping markers of transactions it separates (the seed)"
            }
            Self::AddUnchecked => {
                "a removed topic joins a mirror before its partitions are STOPPED (the seed)"
            }
            Self::FailedRefusesStop => {
                "a FAILED partition is not stopped until it leaves FAILED (the prototype)"
            }
            Self::SyncIgnoresGrowth => {
                "the sync does not grow a mirror topic when its source topic grows (the seed)"
            }
            Self::FollowsSourceLoss => {
                "a source's loss of served records is cut and mirrored over, unreported (the seed)"
            }
            Self::SourceClusterUnchecked => {
                "a bootstrap.servers naming another cluster is mirrored from (the seed)"
            }
            Self::ExcludeUnenforced => {
                "an exclude added later leaves already mirrored topics mirroring (the seed)"
            }
            Self::EpochFencingState => {
                "EPOCH_FENCING persisted; a failed bump FAILED, retried to it (the prototype)"
            }
            Self::PreKip890 => {
                "first batch unverified, one epoch across transactions (Kafka before KIP-890)"
            }
            Self::PreKip101 => {
                "a new follower truncates to its high watermark, no epochs (Kafka before KIP-101)"
            }
            Self::PreKip279 => {
                "one epoch lookup per follow, cut at the leader's end offset (Kafka before KIP-279)"
            }
            Self::PreKip320 => {
                "fetches without the current leader epoch, no position validation (before KIP-320)"
            }
            Self::PreKip966 => {
                "no eligible leader replicas, HW moves below min ISR (Kafka before KIP-966)"
            }
            Self::PreKip890Part2 => {
                "one producer epoch across transactions, no bump at EndTxn (before KIP-890 part 2)"
            }
            Self::PreKafka7128 => {
                "a follower joins the ISR at the leader's high watermark alone (before KAFKA-7128)"
            }
        }
    }

    /// Whether a MIRRORING partition whose source lost records it had served (a fetch answer
    /// would cut the log below the end the source had shown it holds) goes FAILED,
    /// non-retryable, unless its topic has `mirror.support.unclean.leader.election=true`
    /// (spec §4.7, the later revision); `follows-source-loss` cuts and mirrors on. So does
    /// `epoch-rewrite`, judged with the seed's fetcher: its batches carry the destination's
    /// epochs, so every divergence looks like a loss at the source, and a FAILED partition
    /// would hide what its rule breaks (S-23, consumers seeing rewritten offsets).
    pub fn fails_on_source_loss(self) -> bool {
        !matches!(self, Self::FollowsSourceLoss | Self::EpochRewrite)
    }

    /// Whether a broker refuses to mirror from a `bootstrap.servers` that names another
    /// cluster than the one recorded when the mirror was created (spec S-15); only
    /// `source-cluster-unchecked` (the seed) fetches from it.
    pub fn checks_source_cluster(self) -> bool {
        self != Self::SourceClusterUnchecked
    }

    /// Whether AddPartitionsToTxn refuses, with `ReadOnlyTopic`, partitions of a topic the
    /// broker's metadata has in a mirror that is not removed (`mirror.name` `<m>` or
    /// `<m>.paused`): the seed's read-only rule on the first step of a transactional write.
    /// Only `txn-enlist-unchecked` (the prototype) enlists them.
    pub fn checks_txn_enlist(self) -> bool {
        self != Self::TxnEnlistUnchecked
    }

    /// Whether a mirror partition that is not STOPPED acknowledges, without an append, a
    /// transaction marker for a producer with no open transaction in its log (a choice where
    /// the seed is silent). Such a marker closes nothing there: the transaction's records on
    /// that partition were refused, or cut by the mirroring's truncation (PREPARING's cut to
    /// the last mirrored epoch, a diverging fetch, STOPPING's cut to the last stable offset).
    /// Refusing it would leave the transaction in PrepareCommit or PrepareAbort for as long
    /// as the partition mirrors, and its producer getting CONCURRENT_TRANSACTIONS: a
    /// transaction open on a failback's old primary when its reverse mirror starts (generated
    /// soak, issue #14). The prototype's two rules refuse it, as its marker handler has no
    /// case for `READ_ONLY_TOPIC`.
    pub fn acknowledges_moot_markers(self) -> bool {
        !matches!(
            self,
            Self::TxnEnlistUnchecked | Self::StoppingAdmitsTxnAbort
        )
    }

    /// Whether a partition leader verifies a transaction's first batch with the coordinator
    /// before appending it (KIP-890 part 1; `crate::broker`'s `txn_verification`); only
    /// `pre-kip-890` does not.
    pub fn verifies_transactions(self) -> bool {
        self != Self::PreKip890
    }

    /// Whether clients and coordinators speak transaction version 2 (KIP-890 part 2, Kafka
    /// 4.0's `transaction.version=2`): every EndTxn bumps the producer epoch, the markers
    /// carry the bumped epoch, and the client starts its next transaction at that epoch from
    /// sequence 0 (`crate::coordinator::transaction`, `crate::client::transactional`).
    /// `pre-kip-890` (neither part) and `pre-kip-890-part-2` speak version 1.
    pub fn transaction_version_2(self) -> bool {
        !matches!(self, Self::PreKip890 | Self::PreKip890Part2)
    }

    /// How a replica that becomes a follower finds where its log and the leader's part: by
    /// leader epochs (KIP-101, with KIP-279 and KIP-595's truncation on fetch), by one lookup
    /// when it begins to follow (`pre-kip-279`), or by truncating to its high watermark
    /// (`pre-kip-101`).
    pub fn follower_truncation(self) -> FollowerTruncation {
        match self {
            Self::PreKip101 => FollowerTruncation::HighWatermark,
            Self::PreKip279 => FollowerTruncation::EpochLookupOnFollow,
            _ => FollowerTruncation::LeaderEpoch,
        }
    }

    /// Whether consumers and followers fence by leader epoch (KIP-320): their Fetch and
    /// ListOffsets carry the current leader epoch, a consumer's position carries the epoch of
    /// the last batch consumed below it, is validated with OffsetsForLeaderEpoch after a
    /// leader change, and commits record it. Only `pre-kip-320` does none of it.
    pub fn fences_by_leader_epoch(self) -> bool {
        self != Self::PreKip320
    }

    /// Whether the clusters have KIP-966: eligible leader replicas in the controller
    /// (`crate::controller`'s `partition_change`) and a leader high watermark that waits for
    /// min ISR (`crate::replica`). Only `pre-kip-966` has neither.
    pub fn eligible_leader_replicas(self) -> bool {
        self != Self::PreKip966
    }

    /// Whether a follower outside the ISR joins it only once it reached the log end its
    /// leader's leadership began at, besides the leader's high watermark (KAFKA-7128's fix;
    /// `crate::replica`'s `Partition::maybe_expand_isr`). Only `pre-kafka-7128` lets it join
    /// at the high watermark alone.
    pub fn isr_join_waits_for_epoch_start(self) -> bool {
        self != Self::PreKafka7128
    }

    /// Whether a STOPPING partition appends an ABORT marker WriteTxnMarkers brings (the
    /// prototype admits every coordinator-origin ABORT there, its own stop's and the local
    /// transaction coordinator's alike); every other design refuses every marker until STOPPED.
    pub fn stopping_admits_txn_abort(self) -> bool {
        self == Self::StoppingAdmitsTxnAbort
    }

    /// Whether STOPPING resolves open transactions with ABORT markers (the later revision)
    /// rather than by truncating to the last stable offset.
    pub fn stops_with_abort_markers(self) -> bool {
        matches!(self, Self::AbortMarkers | Self::ResetBeforeTxnResolution)
    }

    /// How far the mirror fetcher reads the source: the seed's fetcher reads committed data
    /// only (up to the source's last stable offset), so no open transaction is ever mirrored;
    /// the later revision reads READ_UNCOMMITTED up to the source's high watermark and aborts
    /// what is still open at the stop (spec §0, "Fetch isolation").
    pub fn mirror_fetch_isolation(self) -> FetchIsolation {
        if self.stops_with_abort_markers() {
            FetchIsolation::HighWatermark
        } else {
            FetchIsolation::TxnCommitted
        }
    }

    /// Whether the periodic sync commits group offsets only for partitions it read MIRRORING
    /// before and after their bounds (the seed design, issue #14) rather than for every
    /// partition of a topic in the mirror (the KIP's rule).
    pub fn syncs_mirroring_partitions_only(self) -> bool {
        self != Self::SyncByTopicState
    }

    /// Whether PREPARING waits for every replica, not only the ISR, to truncate when its cut
    /// removed records from the leader's log, or when the partition re-entered PREPARING (a
    /// new leader re-running it, a FAILED one retrying it), where an earlier leadership's cut
    /// may have removed them. The seed is silent on replicas outside the ISR; its rule (wait
    /// for the ISR) leaves them holding the cut records, and a Kafka follower's divergence
    /// check keeps them wherever the re-mirrored batch at their offset carries the same epoch
    /// number (two clusters' epochs, or one cluster's epochs before and after the cut, are
    /// only numbers). A cut that removed nothing waits for the ISR only (a first PREPARING
    /// onto an empty log must not wait for an offline replica); a replica outside the ISR may
    /// still hold records the leader never had (a zombie leader's queued produce), so every
    /// PREPARING cut also fences every follower (`fences_followers_after_mirror_cut`, generator
    /// seed 169; and a cut that removed records, since a follower's fetch answered just before
    /// it may carry records above it, generated seed 9970000000000940).
    /// The cost: an offline replica holds a PREPARING that removed records until it returns,
    /// as `mirror.support.unclean.leader.election` always does.
    pub fn prepare_awaits_every_replica_after_cut(self) -> bool {
        self != Self::PrepareAwaitsIsr
    }

    /// Whether a destination leader whose mirror fetcher cut records from its log answers each
    /// follower's fetch past the cut as diverging until that follower has truncated to it
    /// (the seed design here), rather than trusting the follower's epoch check alone
    /// (`mirror-cut-unfenced`, Kafka's rule).
    pub fn fences_followers_after_mirror_cut(self) -> bool {
        self != Self::MirrorCutUnfenced
    }

    /// Whether the mirror fetcher keeps the destination's leader epoch (DLE) at or above every
    /// epoch it appends (the later revision's DLE ≥ SLE, spec §4.4, reactive part only): a
    /// fetched batch above the DLE is not appended; the leader asks the controller for
    /// `BumpLeaderEpochs` above the source's epoch plus [`LEADER_EPOCH_BUMP_INCREMENT`],
    /// waits for metadata to show it, and fetches again. Every local epoch a later stop bumps
    /// to is then above every mirrored epoch any replica holds and any synced offset carries.
    /// `epochs-unfenced` is the seed's fetcher.
    pub fn fences_mirrored_epochs(self) -> bool {
        self != Self::EpochsUnfenced
    }

    /// Whether a mirror's history changes come with a leader-epoch change a downstream
    /// mirror sees, and whether that mirror checks its tail when it sees one: a mirroring cut
    /// that removed records (PREPARING's, or the fetcher's on a diverging source) raises the
    /// leader's epoch (BumpLeaderEpochs, same leader) before the next mirrored append; and a
    /// fetcher whose source leader epoch differs from the one its log was last checked
    /// against (or that starts in a new leadership) first fetches from its last batch's base
    /// offset and compares that batch with the source's, byte for byte, cutting it and
    /// trying the one before on a difference. An epoch number alone cannot tell a chain
    /// middle's refilled log from the one it replaced. `tail-unverified` is the seed's
    /// fetcher. Three older rows run without it too, since the tail check repairs what each
    /// one's own rule breaks and so hides it: `pid-rewrite` and `epoch-rewrite` (the KIP's
    /// rejected alternatives, judged with the KIP's fetcher: with the check, a's failback
    /// finds its own batches differ from b's rewritten copies and re-mirrors them, hiding S-4,
    /// and the cuts hide S-23 in `active_passive`) and `mirror-cut-unfenced` (the bump
    /// after a cut gives every follower a new epoch, so Kafka's rule alone truncates it
    /// right: the follower fence matters where no such bump comes).
    pub fn verifies_mirrored_tail(self) -> bool {
        !matches!(
            self,
            Self::TailUnverified | Self::PidRewrite | Self::EpochRewrite | Self::MirrorCutUnfenced
        )
    }

    /// How the periodic sync reads the destination's end for its group-offset clamp: the high
    /// watermark (the seed design here, what a consumer can read) or the log end offset (the
    /// spec's formula, `leo-clamped-offset-sync`).
    pub fn offset_sync_end_isolation(self) -> FetchIsolation {
        if self == Self::LeoClampedOffsetSync {
            FetchIsolation::LogEnd
        } else {
            FetchIsolation::HighWatermark
        }
    }

    /// Whether a mirror partition that is not STOPPED appends the local transaction
    /// coordinator's markers while its log holds only this cluster's own writes: its leader
    /// read the partition UNKNOWN or STOPPED from `__mirror_state`, and since then it has
    /// neither cut its log (PREPARING's cut to the last mirrored epoch) nor mirrored into it,
    /// only gone PREPARING and FAILED (a choice where the seed is silent). Such a marker
    /// completes a transaction the coordinator decided for records written while the topic was
    /// writable, and the seed's premise for its stop ("all PSM entries originate from mirrored
    /// data") does not hold for them: refused, they stay open until STOPPING's cut to the LSO
    /// drops them, though nothing ever replaced them with the source's data (a reverse mirror
    /// whose PREPARING fails on the mirror loop, then is removed; generator seed
    /// 9200000000000275). Admitted, the marker is one more local batch for PREPARING's cut or
    /// the fetch's divergence check to remove, like the records it ends. After the cut, or
    /// once anything is mirrored, markers are refused as before (issue #14): the log is then
    /// a prefix of the source's, and a producer id of this cluster may name a mirrored
    /// producer. `markers-refused-before-cut` refuses them from the start.
    pub fn admits_markers_before_cut(self) -> bool {
        self != Self::MarkersRefusedBeforeCut
    }

    /// Whether STOPPING's cut to the last stable offset appends again, right after the cut,
    /// every COMMIT or ABORT marker it removed whose transaction has records below the cut
    /// (`PartitionLog::markers_crossing`), in their order and with their producer, epoch and
    /// coordinator epoch: the cut keeps everything a READ_COMMITTED consumer could read, and
    /// each transaction it keeps records of keeps its outcome. The alternative, cutting lower
    /// to the first offset of such a transaction, would remove records consumers may already
    /// have read as committed. `truncate-at-lso` drops the markers (the seed's text).
    pub fn restores_markers_cut_at_lso(self) -> bool {
        self != Self::TruncateAtLso
    }

    /// Whether AddTopicsToMirror, at the broker that receives it, reads the state of every
    /// partition of a topic a mirror removed in that mirror, and refuses the topic
    /// (`InvalidClusterMirrorState`) unless each is STOPPED or UNKNOWN: the prototype's
    /// broker-side validation (spec §3.2, late). A partition's stop runs on its leader after
    /// the removal; until it has, the log holds that mirror's batches and producer state, and
    /// only that mirror's state says so. `add-unchecked` leaves the check to the controller's
    /// membership rule (the seed's step 2).
    pub fn checks_add_against_stored_state(self) -> bool {
        self != Self::AddUnchecked
    }

    /// Whether a FAILED partition whose topic was removed from its mirror goes to STOPPING at
    /// its next retry, retries left or not (the seed design here; L-2: a failover must not
    /// wait on the source). `failed-refuses-stop` retries the failed state first and, with no
    /// retry left, waits for an operator.
    pub fn stops_from_failed(self) -> bool {
        self != Self::FailedRefusesStop
    }

    /// Whether the periodic sync grows a mirror topic to its source topic's partition count
    /// (the prototype's "scale partitions"; not the seed's sync, `sync-ignores-growth`).
    pub fn grows_mirror_topics(self) -> bool {
        self != Self::SyncIgnoresGrowth
    }

    /// Whether the periodic sync removes from the mirror an active topic that
    /// `mirror.topics.exclude` matches (spec §7 item 10, the later revision's exclude
    /// enforcement; not the seed's sync, `exclude-unenforced`).
    pub fn enforces_topics_exclude(self) -> bool {
        self != Self::ExcludeUnenforced
    }

    /// Whether fencing a mirrored epoch goes through the persisted EPOCH_FENCING state, a
    /// failed bump failing the partition and its retry aiming at the state it failed in (the
    /// later revision and its prototype, `epoch-fencing-state`); the seed design here fences
    /// inside MIRRORING.
    pub fn persists_epoch_fencing(self) -> bool {
        self == Self::EpochFencingState
    }

    /// Whether STOPPING writes a MIRROR_PID_RESET.
    pub fn writes_pid_reset(self) -> bool {
        !matches!(self, Self::PidRewrite | Self::NoPidReset)
    }
}

impl MirrorDesign {
    /// A fetched batch as this design stores it on the destination: as fetched (the seed and
    /// its later revisions), with the destination's `leader_epoch` (`epoch-rewrite`), or with
    /// producer id −(pid+2) and a recomputed CRC (`pid-rewrite`; a batch without a producer,
    /// or one an earlier hop already rewrote, keeps its negative id).
    pub fn stored_form(self, leader_epoch: LeaderEpoch, batch: &RecordBatch) -> RecordBatch {
        match self {
            Self::EpochRewrite => batch.with_partition_leader_epoch(leader_epoch.0),
            Self::PidRewrite if batch.header().producer_id >= 0 => {
                batch.with_producer_id(-(batch.header().producer_id + 2))
            }
            _ => batch.clone(),
        }
    }

    /// Fetched batches as this design stores them; the seed and its later revisions hand the
    /// fetched batches on untouched (no copy on the mirror fetcher's path).
    pub fn store_fetched(
        self,
        leader_epoch: LeaderEpoch,
        batches: Vec<RecordBatch>,
    ) -> Vec<RecordBatch> {
        if !self.rewrites_batches() {
            return batches;
        }
        batches
            .iter()
            .map(|batch| self.stored_form(leader_epoch, batch))
            .collect()
    }

    /// Whether mirrored batches are stored other than as fetched.
    fn rewrites_batches(self) -> bool {
        matches!(self, Self::EpochRewrite | Self::PidRewrite)
    }

    /// Whether `stored` is `original` as this design stores a mirrored batch, whatever
    /// destination epoch it was stamped with. The seed's answer is byte identity (INV-2); the
    /// rewrite designs' checks accept their documented rewrite, so a run shows what else
    /// breaks rather than stopping at the rewrite itself.
    pub fn is_stored_form_of(self, original: &RecordBatch, stored: &RecordBatch) -> bool {
        self.stored_form(LeaderEpoch(stored.partition_leader_epoch()), original)
            .bytes()
            == stored.bytes()
    }
}

impl fmt::Display for MirrorDesign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_and_unknown_names_do_not() {
        for design in MirrorDesign::ALL {
            assert_eq!(MirrorDesign::from_name(design.name()), Some(design));
        }
        assert_eq!(MirrorDesign::from_name("Seed"), None);
        assert_eq!(MirrorDesign::from_name("lmo"), None);
        assert_eq!(MirrorDesign::default(), MirrorDesign::Seed);
        assert!(MirrorDesign::names().starts_with("seed, abort-markers"));
    }

    #[test]
    fn stored_forms_rewrite_only_what_each_design_says() {
        let mut builder = crate::record::BatchBuilder::idempotent(5, 0, 0);
        builder.append(0, None, Some(bytes::Bytes::from_static(b"v")), vec![]);
        let original = builder.build().with_partition_leader_epoch(3);
        let seed = MirrorDesign::Seed.stored_form(LeaderEpoch(9), &original);
        assert_eq!(seed.bytes(), original.bytes());
        let epoch = MirrorDesign::EpochRewrite.stored_form(LeaderEpoch(9), &original);
        assert_eq!(epoch.partition_leader_epoch(), 9);
        let pid = MirrorDesign::PidRewrite.stored_form(LeaderEpoch(9), &original);
        assert_eq!(pid.header().producer_id, -7);
        // A second hop leaves a rewritten id alone (spec §9 S-3).
        let twice = MirrorDesign::PidRewrite.stored_form(LeaderEpoch(9), &pid);
        assert_eq!(twice.header().producer_id, -7);
        for design in MirrorDesign::ALL {
            let stored = design.stored_form(LeaderEpoch(9), &original);
            assert!(design.is_stored_form_of(&original, &stored), "{design}");
        }
        assert!(!MirrorDesign::Seed.is_stored_form_of(&original, &pid));
        assert!(!MirrorDesign::Seed.is_stored_form_of(&original, &epoch));
        assert!(!MirrorDesign::PidRewrite.is_stored_form_of(&original, &seed));
    }
}
