//! The invariants' stable names with their preconditions, and the violation a check reports:
//! what every check family and the commands that count them share.

use std::fmt;

use mirrorsim::protocol::{ClusterIndex, TopicPartition};

/// Every invariant the checkers hold, by its stable name, with the case that must arise in a
/// run for the check to test anything (its precondition, stateright's `Sometimes`). A checker
/// notes its case with [`Checkers::precondition`] where it meets it; `mirrorsim soak` counts
/// the seeds that reached each and reports `VACUOUS invariant=NAME` for one no seed reached.
pub const INVARIANTS: &[(&str, &str)] = &[
    (
        "acked-writes-durable",
        "an acknowledged acks=all record was verified again by the leader of a later epoch",
    ),
    (
        "no-duplicates",
        "a leader answered a batch its producer had already written (a retry or a duplicate)",
    ),
    (
        "producer-order",
        "a producer sent a batch again (a retry) to a partition whose log was scanned",
    ),
    (
        "replica-convergence",
        "a follower's log was compared with the leader's after a restart or a leader change",
    ),
    (
        "epochs-monotonic",
        "a partition's leader epoch moved in the controller's metadata",
    ),
    (
        "hw-monotonic",
        "a replica's high watermark moved within one leader epoch of a live process",
    ),
    (
        "single-leader-per-epoch",
        "a partition's leadership moved to another broker",
    ),
    (
        "inconsistent-offsets",
        "a consumer's read was compared with the final log of a partition whose leader changed",
    ),
    (
        "nonmonotonic-poll",
        "a consumer read a partition again after its leader changed",
    ),
    (
        "skipped-poll",
        "a consumer's consecutive reads of a partition jumped over offsets, which were checked",
    ),
    (
        "unseen",
        "an acknowledged record had to reach a reader that restarted or whose group spread the \
         partition over two members",
    ),
    (
        "no-control-records-delivered",
        "a consumer read past a control batch (a transaction marker or MIRROR_PID_RESET)",
    ),
    (
        "read-committed",
        "a READ_COMMITTED consumer read past an aborted or open transaction's records",
    ),
    (
        "transaction-atomicity",
        "a transaction the coordinator confirmed aborted left records in the final log",
    ),
    (
        "group-offsets-monotonic",
        "a group's committed offset moved on its coordinator",
    ),
    (
        "offset-identity",
        "a mirrored batch was compared with the source's batch at its offset",
    ),
    (
        "read-only-until-stopped",
        "a client write to a mirror partition that was not STOPPED was refused",
    ),
    (
        "no-stale-pid-after-stopped",
        "a partition went STOPPED with mirrored records of a producer before its reset",
    ),
    (
        "local-epoch-above-mirrored",
        "a batch written after STOPPED on a partition with mirrored data was compared",
    ),
    (
        "legal-transitions",
        "a persisted mirror state record followed an earlier state of its partition",
    ),
    (
        "coordinator-fencing",
        "the mirror coordinator refused a stale state write (fenced by leader or state epoch)",
    ),
    (
        "mirror-prefix",
        "a destination log was compared with the source's while mirroring",
    ),
    (
        "single-mirror-fetcher",
        "a mirror partition's fetcher ran on two brokers over the run (leadership moved)",
    ),
    (
        "psm-replica-agreement",
        "producer states holding a producer were compared between a leader and a replica",
    ),
    (
        "offset-sync-clamped",
        "the mirror sync clamped a group offset",
    ),
    (
        "group-resume-no-skip",
        "a group whose offsets the mirror sync committed read on the destination from above \
         its log start",
    ),
    (
        "admin-outcomes",
        "an admin operation the seed's rules refuse was tried (and had to be refused)",
    ),
    (
        "liveness",
        "the heal phase began with the system short of liveness (it had to converge)",
    ),
];

/// The coverage-mark prefix of a precondition: `precondition:NAME`.
pub const PRECONDITION_PREFIX: &str = "precondition:";

/// Whether `name` is one of [`INVARIANTS`].
pub fn is_invariant(name: &str) -> bool {
    INVARIANTS.iter().any(|(known, _)| *known == name)
}

/// A broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The invariant's stable name.
    pub invariant: &'static str,
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
