//! Deliberately broken behaviours, switched on only by tests and by `--broken` runs that
//! prove a checker catches them. A layer reads the switches it owns from its configuration;
//! this module sits below every layer so any of them may name one (the broker's replica and
//! mirroring code, the coordinators it hosts).

/// A deliberately broken broker behaviour, switched on only by tests that prove a checker
/// catches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokenSwitch {
    /// acks=all produces are answered as soon as the leader appended, before the ISR has them.
    AckBeforeReplication,
    /// A follower ignores diverging epochs instead of truncating.
    SkipDivergenceTruncation,
    /// The last stable offset ignores open transactions (READ_COMMITTED reads up to the high
    /// watermark).
    LsoIgnoresOpenTransactions,
    /// Mirror partitions take client writes before they are STOPPED.
    MirrorWritableBeforeStopped,
    /// The mirror state machine has an extra edge UNKNOWN → MIRRORING (no PREPARING, so no
    /// last-mirrored-epoch truncation), taken by the MirrorMetadataManager and accepted by the
    /// mirror coordinator.
    MirrorSkipPreparing,
    /// KIP-1279 PAUSING keeps the mirror fetcher running (it is never removed, so the
    /// partition never reaches PAUSED while its fetcher sends fetches).
    MirrorFetchWhilePaused,
    /// A follower's append keeps the producer state a MIRROR_PID_RESET it appends should
    /// clear (the leader and log recovery clear it).
    FollowerIgnoresPidReset,
    /// The mirror coordinator accepts WriteMirrorStates with stale leader or state epochs and
    /// stores the writer's epochs (no fencing: the pre-fencing design that trusts the writer).
    MirrorCoordinatorIgnoresEpochs,
    /// DeleteRecords, DeleteTopics and CreatePartitions skip the broker's KIP-1279 check that
    /// a mirror topic's partitions are STOPPED (the controller still refuses topics that
    /// `mirror.name` asks to mirror or pause).
    MirrorTopicAdminUnchecked,
    /// PREPARING's last-mirrored-epoch truncation keeps one record too many (an off-by-one at
    /// the end of the last mirrored epoch).
    MirrorLmeTruncationOffByOne,
    /// WriteTxnMarkers appends markers into KIP-1279 mirror partitions that are not STOPPED
    /// (no read-only check on the marker path: the behaviour before issue #14).
    MirrorMarkersUnchecked,
    /// A (re)started broker answers requests before its metadata image shows its own
    /// registration, from whatever image it has (the behaviour before issue #8's fix, whose
    /// regression is `describe_at_restarted_broker_before_catch_up`).
    ServeBeforeRegistration,
    /// STOPPING cuts its log one offset below the last stable offset (an off-by-one in the
    /// seed's step 3), dropping a committed mirrored record a caught-up stop promised to keep.
    MirrorStopCutBelowLso,
    /// A mirror's periodic sync reads its source but copies nothing of what changed there: no
    /// topic adopted by `mirror.topics.include`, no topic config, no ACL (partition counts,
    /// exclusion and group offsets are still synced).
    MirrorSyncIgnoresSourceChanges,
    /// A mirror's periodic sync adopts again a source topic its operator removed from the
    /// mirror (`mirror.name` `<mirror>.removed`), as if it were in no mirror.
    MirrorSyncReadoptsRemoved,
    /// A mirror fetcher that finds its source lost records it had served (spec §4.7) neither
    /// fails the partition nor cuts them: it stays MIRRORING over records its source no
    /// longer has.
    MirrorKeepsSourceLostRecords,
    /// The mirror knows its source topic by name only (the behaviour before it kept the
    /// source topic id): its fetches and last-mirrored-epoch lookups name no topic id, a new
    /// leader does not learn the id from the stored state, and a lookup answer naming another
    /// id is taken as is, so a source topic deleted and created again is fetched as if it were
    /// the same topic (its diverging epochs read as an unclean election of the source).
    MirrorIgnoresSourceTopicId,
}

impl BrokenSwitch {
    /// The name used on the command line and in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Self::AckBeforeReplication => "ack-before-replication",
            Self::SkipDivergenceTruncation => "skip-divergence-truncation",
            Self::LsoIgnoresOpenTransactions => "lso-ignores-open-transactions",
            Self::MirrorWritableBeforeStopped => "mirror-writable-before-stopped",
            Self::MirrorSkipPreparing => "mirror-skip-preparing",
            Self::MirrorFetchWhilePaused => "mirror-fetch-while-paused",
            Self::FollowerIgnoresPidReset => "follower-ignores-pid-reset",
            Self::MirrorCoordinatorIgnoresEpochs => "mirror-coordinator-ignores-epochs",
            Self::MirrorTopicAdminUnchecked => "mirror-topic-admin-unchecked",
            Self::MirrorLmeTruncationOffByOne => "mirror-lme-truncation-off-by-one",
            Self::MirrorMarkersUnchecked => "mirror-markers-unchecked",
            Self::ServeBeforeRegistration => "serve-before-registration",
            Self::MirrorStopCutBelowLso => "mirror-stop-cut-below-lso",
            Self::MirrorSyncIgnoresSourceChanges => "mirror-sync-ignores-source-changes",
            Self::MirrorSyncReadoptsRemoved => "mirror-sync-readopts-removed",
            Self::MirrorKeepsSourceLostRecords => "mirror-keeps-source-lost-records",
            Self::MirrorIgnoresSourceTopicId => "mirror-ignores-source-topic-id",
        }
    }

    /// Parses a name.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            Self::AckBeforeReplication,
            Self::SkipDivergenceTruncation,
            Self::LsoIgnoresOpenTransactions,
            Self::MirrorWritableBeforeStopped,
            Self::MirrorSkipPreparing,
            Self::MirrorFetchWhilePaused,
            Self::FollowerIgnoresPidReset,
            Self::MirrorCoordinatorIgnoresEpochs,
            Self::MirrorTopicAdminUnchecked,
            Self::MirrorLmeTruncationOffByOne,
            Self::MirrorMarkersUnchecked,
            Self::ServeBeforeRegistration,
            Self::MirrorStopCutBelowLso,
            Self::MirrorSyncIgnoresSourceChanges,
            Self::MirrorSyncReadoptsRemoved,
            Self::MirrorKeepsSourceLostRecords,
            Self::MirrorIgnoresSourceTopicId,
        ]
        .into_iter()
        .find(|switch| switch.name() == name)
    }
}
