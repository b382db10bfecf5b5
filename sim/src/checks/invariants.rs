//! The invariants' stable names with their preconditions, and the violation a check reports:
//! what every check family and the commands that count them share.

use std::fmt;

use mirrorsim::protocol::{ClusterIndex, TopicPartition};

/// Declares [`Invariant`] and [`INVARIANTS`] from one table: each invariant's stable name
/// (what violation lines, soak reports and `--require-preconditions` print) and the case that
/// must arise in a run for its check to test anything.
macro_rules! invariants {
    ($($variant:ident { $name:literal, $precondition:literal $(,)? })*) => {
        /// Every invariant the checkers hold. A check reports a [`Violation`] of one, and notes
        /// its precondition (stateright's `Sometimes`) with `Checkers::precondition` where it
        /// meets it; `mirrorsim soak` counts the seeds that reached each and reports
        /// `VACUOUS invariant=NAME` for one no seed reached.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Invariant {
            $(
                #[doc = concat!("`", $name, "`; its precondition: ", $precondition, ".")]
                $variant,
            )*
        }

        impl Invariant {
            /// Every invariant, in the table's order.
            pub const ALL: &'static [Invariant] = &[$(Invariant::$variant,)*];

            /// Its stable name.
            pub fn name(self) -> &'static str {
                match self {
                    $(Invariant::$variant => $name,)*
                }
            }

            /// The case that must arise for its check to test anything.
            pub fn precondition(self) -> &'static str {
                match self {
                    $(Invariant::$variant => $precondition,)*
                }
            }
        }

        /// Every invariant as (stable name, precondition), in the table's order.
        pub const INVARIANTS: &[(&str, &str)] = &[$(($name, $precondition),)*];
    };
}

invariants! {
    AckedWritesDurable {
        "acked-writes-durable",
        "an acknowledged acks=all record was verified again by the leader of a later epoch",
    }
    NoDuplicates {
        "no-duplicates",
        "a leader answered a batch its producer had already written (a retry or a duplicate)",
    }
    ProducerOrder {
        "producer-order",
        "a producer sent a batch again (a retry) to a partition whose log was scanned",
    }
    ReplicaConvergence {
        "replica-convergence",
        "a follower's log was compared with the leader's after a restart or a leader change",
    }
    EpochsMonotonic {
        "epochs-monotonic",
        "a partition's leader epoch moved in the controller's metadata",
    }
    HwMonotonic {
        "hw-monotonic",
        "a replica's high watermark moved within one leader epoch of a live process",
    }
    SingleLeaderPerEpoch {
        "single-leader-per-epoch",
        "a partition's leadership moved to another broker",
    }
    InconsistentOffsets {
        "inconsistent-offsets",
        "a consumer's read was compared with the final log of a partition whose leader changed",
    }
    NonmonotonicPoll {
        "nonmonotonic-poll",
        "a consumer read a partition again after its leader changed",
    }
    SkippedPoll {
        "skipped-poll",
        "a consumer's consecutive reads of a partition jumped over offsets, which were checked",
    }
    Unseen {
        "unseen",
        "an acknowledged record had to reach a reader that restarted or whose group spread the \
         partition over two members",
    }
    NoControlRecordsDelivered {
        "no-control-records-delivered",
        "a consumer read past a control batch (a transaction marker or MIRROR_PID_RESET)",
    }
    ReadCommitted {
        "read-committed",
        "a READ_COMMITTED consumer read past an aborted or open transaction's records",
    }
    TransactionAtomicity {
        "transaction-atomicity",
        "a transaction the coordinator confirmed aborted left records in the final log",
    }
    GroupOffsetsMonotonic {
        "group-offsets-monotonic",
        "a group's committed offset moved on its coordinator",
    }
    OffsetIdentity {
        "offset-identity",
        "a mirrored batch was compared with the source's batch at its offset",
    }
    ReadOnlyUntilStopped {
        "read-only-until-stopped",
        "a client write to a mirror partition that was not STOPPED was refused",
    }
    NoStalePidAfterStopped {
        "no-stale-pid-after-stopped",
        "a partition went STOPPED with mirrored records of a producer before its reset",
    }
    LocalEpochAboveMirrored {
        "local-epoch-above-mirrored",
        "a batch written after STOPPED on a partition with mirrored data was compared",
    }
    LegalTransitions {
        "legal-transitions",
        "a persisted mirror state record followed an earlier state of its partition",
    }
    CoordinatorFencing {
        "coordinator-fencing",
        "the mirror coordinator refused a stale state write (fenced by leader or state epoch)",
    }
    MirrorPrefix {
        "mirror-prefix",
        "a destination log was compared with the source's while mirroring",
    }
    SingleMirrorFetcher {
        "single-mirror-fetcher",
        "a mirror partition's fetcher ran on two brokers over the run (leadership moved)",
    }
    PsmReplicaAgreement {
        "psm-replica-agreement",
        "producer states holding a producer were compared between a leader and a replica",
    }
    OffsetSyncClamped {
        "offset-sync-clamped",
        "the mirror sync clamped a group offset",
    }
    GroupResumeNoSkip {
        "group-resume-no-skip",
        "a group whose offsets the mirror sync committed read on the destination from above \
         its log start",
    }
    MirrorLossFollowed {
        "mirror-loss-followed",
        "a mirroring partition's source lost records it had served (a fetch answer said so)",
    }
    StopKeepsCaughtUp {
        "stop-keeps-caught-up",
        "a partition a describe had shown caught up to its source (lag 0) went STOPPED",
    }
    AdminOutcomes {
        "admin-outcomes",
        "an admin operation the seed's rules refuse was tried (and had to be refused)",
    }
    Liveness {
        "liveness",
        "the heal phase began with the system short of liveness (it had to converge)",
    }
}

impl Invariant {
    /// The invariant named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|invariant| invariant.name() == name)
    }
}

/// An invariant equals its stable name (what reports and tests name it by).
impl PartialEq<&str> for Invariant {
    fn eq(&self, name: &&str) -> bool {
        self.name() == *name
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The coverage-mark prefix of a precondition: `precondition:NAME`.
pub const PRECONDITION_PREFIX: &str = "precondition:";

/// A broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The invariant broken.
    pub invariant: Invariant,
    /// The cluster, if one is concerned.
    pub cluster: Option<ClusterIndex>,
    /// The partition, if one is concerned.
    pub topic_partition: Option<TopicPartition>,
    /// What was seen.
    pub detail: String,
    /// Simulated time of detection, in ms since the start.
    pub time_ms: i64,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VIOLATION invariant={}", self.invariant)?;
        if let Some(cluster) = self.cluster {
            write!(f, " cluster={cluster}")?;
        }
        if let Some(tp) = &self.topic_partition {
            write!(f, " topic={} partition={}", tp.topic, tp.partition)?;
        }
        write!(f, " {}", self.detail)
    }
}

impl Violation {
    /// The one-line form of design.md §5, with the run's seed and the detection time.
    pub fn report_line(&self, seed: u64) -> String {
        format!(
            "{self} seed={seed} time={:.3}s",
            self.time_ms as f64 / 1000.0
        )
    }
}
