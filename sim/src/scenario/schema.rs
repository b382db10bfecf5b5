//! The scenario file's schema: one serde type per table of the file (`scenarios/README.md` is
//! the reference for every key). Deserialising checks types and unknown keys; everything else
//! is checked by [`super::validate`], so a value of these types built by [`super::Scenario::load`]
//! is always valid.

use std::collections::BTreeMap;

use mirrorsim::broker::BrokerConfig;
use mirrorsim::controller::ControllerConfig;
use mirrorsim::mirror::MirrorDesign;
use mirrorsim::protocol::MirrorTopicOperation;
use mirrorsim::switches::BrokenSwitch;
use serde::{Deserialize, Serialize};
use toml::Spanned;

/// A parsed and validated scenario.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name (defaults to the file stem).
    #[serde(default)]
    pub name: String,
    /// What the scenario exercises.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Length of the fault phase in simulated milliseconds.
    pub duration_ms: u64,
    /// Length of the heal phase (faults stopped, liveness checked at its end).
    #[serde(default = "default_heal_ms")]
    pub heal_ms: u64,
    /// Clusters, named `a`, `b`, … in order.
    pub clusters: Vec<ClusterSpec>,
    /// Topics to create before the load starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topics: Vec<TopicSpec>,
    /// Producer workloads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub producers: Vec<ProducerSpec>,
    /// Consumer workloads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub consumers: Vec<ConsumerSpec>,
    /// Faults.
    #[serde(default, skip_serializing_if = "FaultSpec::is_empty")]
    pub faults: FaultSpec,
    /// The admin timeline: KIP-1279 mirror operations at fixed times.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub admin: Vec<AdminOpSpec>,
    /// Coverage marks the scenario must reach (reported as vacuous otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub coverage: Vec<String>,
    /// Test-only broken switches (`BrokenSwitch` names), added to the command line's `--broken`;
    /// never set in shipped scenarios.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub broken: Vec<String>,
    /// The KIP-1279 design variant to run (`seed` when absent; `--design` overrides it).
    #[serde(default)]
    pub design: Option<Spanned<String>>,
}

fn default_heal_ms() -> u64 {
    10_000
}

/// One cluster.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    /// Number of brokers (ids 1..=n).
    pub brokers: u8,
    /// Broker session timeout at the controller.
    #[serde(default = "default_session_timeout_ms")]
    pub broker_session_timeout_ms: i64,
    /// `replica.lag.time.max.ms`.
    #[serde(default = "default_replica_lag_time_max_ms")]
    pub replica_lag_time_max_ms: i64,
    /// Flush every log at this interval (`None`: never, as Kafka's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_flush_interval_ms: Option<i64>,
    /// Partitions of `__mirror_state`, created with the cluster's first mirror.
    #[serde(default = "default_mirror_state_partitions")]
    pub mirror_state_partitions: i32,
    /// Replication factor of `__mirror_state` (`None`: the broker count, at most 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror_state_replication_factor: Option<i16>,
    /// `mirror.metadata.refresh.interval.ms`: the KIP-1279 periodic sync's interval.
    #[serde(default = "default_mirror_sync_interval_ms")]
    pub mirror_metadata_refresh_interval_ms: i64,
}

impl ClusterSpec {
    /// The replication factor of `__mirror_state`: as configured, else Kafka's 3 capped by the
    /// broker count (as the runner caps the other internal topics), so a mirror can be created
    /// on a small cluster without configuring anything.
    pub fn mirror_state_replication_factor(&self) -> i16 {
        self.mirror_state_replication_factor
            .unwrap_or_else(|| i16::from(self.brokers.min(3)))
    }

    /// The configuration of this cluster's controller (validated at load with
    /// [`ControllerConfig::validate`], so the runner can build it without checking again).
    pub fn controller_config(&self) -> ControllerConfig {
        ControllerConfig {
            broker_session_timeout_ms: self.broker_session_timeout_ms,
            mirror_state_partitions: self.mirror_state_partitions,
            mirror_state_replication_factor: self.mirror_state_replication_factor(),
            ..ControllerConfig::default()
        }
    }

    /// The configuration of this cluster's brokers (validated at load with
    /// [`BrokerConfig::validate`]).
    pub fn broker_config(&self, design: MirrorDesign, broken: Vec<BrokenSwitch>) -> BrokerConfig {
        BrokerConfig {
            replica_lag_time_max_ms: self.replica_lag_time_max_ms,
            log_flush_interval_ms: self.log_flush_interval_ms,
            internal_topic_replication_factor: i16::from(self.brokers.min(3)),
            mirror_metadata_refresh_interval_ms: self.mirror_metadata_refresh_interval_ms,
            mirror_design: design,
            broken,
            ..BrokerConfig::default()
        }
    }
}

fn default_session_timeout_ms() -> i64 {
    1_000
}

fn default_replica_lag_time_max_ms() -> i64 {
    1_000
}

fn default_mirror_sync_interval_ms() -> i64 {
    mirrorsim::broker::BrokerConfig::default().mirror_metadata_refresh_interval_ms
}

/// Kafka's `mirror.state.topic.num.partitions` default.
fn default_mirror_state_partitions() -> i32 {
    50
}

/// One topic.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TopicSpec {
    /// Cluster letter.
    pub cluster: Spanned<String>,
    /// Topic name.
    pub name: String,
    /// Partition count.
    pub partitions: i32,
    /// Replication factor.
    pub replication_factor: i16,
    /// `min.insync.replicas`.
    #[serde(default = "default_min_insync")]
    pub min_insync_replicas: i16,
    /// `unclean.leader.election.enable`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unclean_leader_election: bool,
    /// `mirror.support.unclean.leader.election` (KIP-1279): PREPARING waits for every replica,
    /// not only the ISR, to truncate.
    #[serde(default, skip_serializing_if = "is_false")]
    pub mirror_support_unclean_leader_election: bool,
}

fn default_min_insync() -> i16 {
    1
}

/// Acknowledgement mode of a producer workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AcksSpec {
    /// acks=all.
    All,
    /// acks=1.
    Leader,
}

/// Idempotent producers writing self-describing records.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProducerSpec {
    /// Cluster letter.
    pub cluster: Spanned<String>,
    /// Topic (all its partitions, round robin).
    pub topic: Spanned<String>,
    /// How many producer nodes.
    #[serde(default = "one")]
    pub count: u16,
    /// One record every this many milliseconds per producer.
    #[serde(default = "default_interval_ms")]
    pub interval_ms: u64,
    /// acks.
    #[serde(default = "default_acks")]
    pub acks: AcksSpec,
    /// Transactional producers: every `interval_ms` a transaction of up to 3 records on
    /// distinct partitions, one in five aborted on purpose once its records reached the log. Transactional id `NODE-txn`, so a
    /// restarted producer fences its previous incarnation.
    #[serde(default, skip_serializing_if = "is_false")]
    pub transactional: bool,
    /// When the producers start, in ms from the start of the fault phase (`None`: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ms: Option<Spanned<u64>>,
    /// Transactional producers only: `transaction.timeout.ms`, after which the coordinator
    /// aborts an open transaction and fences the producer (`None`: the simulated 10 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction_timeout_ms: Option<i64>,
}

fn one() -> u16 {
    1
}

fn default_interval_ms() -> u64 {
    10
}

fn default_acks() -> AcksSpec {
    AcksSpec::All
}

/// Consumer isolation in a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IsolationSpec {
    /// read_uncommitted.
    ReadUncommitted,
    /// read_committed.
    ReadCommitted,
}

/// Consumers reading every partition of a topic and recording what they see.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ConsumerSpec {
    /// Cluster letter.
    pub cluster: Spanned<String>,
    /// Topic.
    pub topic: Spanned<String>,
    /// How many consumer nodes (each reads all partitions).
    #[serde(default = "one")]
    pub count: u16,
    /// Isolation level.
    #[serde(default = "default_isolation")]
    pub isolation: IsolationSpec,
    /// Join this consumer group (partitions assigned by the group coordinator, offsets
    /// committed); without it every consumer reads every partition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// When the consumers start, in ms from the start of the fault phase (`None`: they start
    /// with the world, before the fault phase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ms: Option<Spanned<u64>>,
}

fn default_isolation() -> IsolationSpec {
    IsolationSpec::ReadUncommitted
}

/// Faults of the fault phase.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// Let the seed choose fault kinds and rates (swarm testing).
    #[serde(default, skip_serializing_if = "is_false")]
    pub swarm: bool,
    /// Fault kinds swarm mode may choose from (default: all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub swarm_kinds: Vec<Spanned<String>>,
    /// Faults at fixed times.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scripted: Vec<ScriptedFault>,
}

impl FaultSpec {
    /// Nothing set: no swarm mode, no swarm kinds, no scripted fault.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// One scripted fault. Each kind takes only the keys it uses (the table in `scenarios/README.md`,
/// checked by `validate`); a key of
/// another kind is refused at load rather than ignored, so the optional fields here are `None`
/// exactly when the file leaves them out.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedFault {
    /// When, in simulated ms from the start of the fault phase (before `duration_ms`).
    pub at_ms: u64,
    /// What: one of [`FAULT_KINDS`].
    pub kind: Spanned<String>,
    /// Target nodes (`a-broker-1`, `a-controller`, `a-producer-1`, `a-consumer-2`, or
    /// `a-leader:TOPIC:P` for the current leader of a partition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<Spanned<String>>,
    /// The other side of a partition (`partition` only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other: Vec<Spanned<String>>,
    /// How long the fault lasts (kill: downtime before the restart); `None`:
    /// [`DEFAULT_FAULT_DURATION_MS`]. A clock skew takes none: it stays until the heal phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Loss/duplication probability, clock jump (ms, forward: never negative), extra latency
    /// (ms) or hold (ms), by kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<f64>,
    /// One-way partition (only `nodes` → `other` is cut; `partition` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asymmetric: Option<bool>,
    /// kill only: lose (and sometimes tear) unflushed disk writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lose_unflushed: Option<bool>,
    /// hold_back only: the probability that a message is held back (`None`:
    /// [`DEFAULT_HOLD_BACK_PROBABILITY`]); swarm mode draws it per fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<Spanned<f64>>,
    /// clock_skew only: clock drift in parts per million (`None`: none); swarm mode draws it
    /// per fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_ppm: Option<Spanned<i64>>,
}

impl ScriptedFault {
    /// How long the fault lasts.
    pub fn duration_ms(&self) -> u64 {
        self.duration_ms.unwrap_or(DEFAULT_FAULT_DURATION_MS)
    }

    /// The kind's amount (0 when absent: only kinds that may leave it out do).
    pub fn amount(&self) -> f64 {
        self.amount.unwrap_or(0.0)
    }

    /// `partition` only: one way.
    pub fn asymmetric(&self) -> bool {
        self.asymmetric.unwrap_or(false)
    }

    /// `kill` only: power loss.
    pub fn lose_unflushed(&self) -> bool {
        self.lose_unflushed.unwrap_or(false)
    }
}

/// How long a scripted fault lasts when the file names no `duration_ms`.
pub const DEFAULT_FAULT_DURATION_MS: u64 = 2_000;

/// A scripted `hold_back`'s probability per message when the file names none.
pub const DEFAULT_HOLD_BACK_PROBABILITY: f64 = 0.05;

/// How long after a broker fault ends the fault plans keep the next one away from that
/// cluster, for the broker to rejoin the ISR (swarm mode in `crate::faults`, the generator's
/// aimed episodes in [`crate::scenario::generate`]).
pub const RECOVERY_MARGIN_MS: u64 = 3_000;

/// The largest clock drift a scripted `clock_skew` may name, in ppm: beyond a million the
/// clock would run backwards.
pub const MAX_DRIFT_PPM: i64 = 999_999;

fn is_false(value: &bool) -> bool {
    !*value
}

/// One operation of the admin timeline, sent to the controller of `cluster` (the mirror's
/// destination).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdminOpSpec {
    /// When, in simulated ms from the start of the fault phase (the earliest time: the
    /// cluster's operations run one at a time, in file order).
    pub at_ms: Spanned<u64>,
    /// The destination cluster letter.
    pub cluster: Spanned<String>,
    /// What: one of [`AdminOpKind::ALL`], spelled as [`AdminOpKind::name`].
    pub op: Spanned<String>,
    /// The mirror's name (mirror operations only, and required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror: Option<Spanned<String>>,
    /// The topics (topic operations only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topics: Vec<Spanned<String>>,
    /// The new partition count (`create_partitions` only, and required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitions: Option<Spanned<i32>>,
    /// The source cluster letter (`create_mirror` only): `bootstrap.servers` lists its brokers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Spanned<String>>,
    /// Further mirror properties (`create_mirror` only), in key order.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub configs: BTreeMap<String, String>,
}

impl AdminOpSpec {
    /// The operation. Only valid on a loaded scenario (validation checked the name).
    pub fn kind(&self) -> AdminOpKind {
        AdminOpKind::from_name(self.op.get_ref()).expect("validated by Scenario::load")
    }
}

/// The operations an admin timeline may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AdminOpKind {
    /// CreateMirror.
    CreateMirror,
    /// AddTopicsToMirror.
    AddTopics,
    /// RemoveTopicsFromMirror (failover).
    RemoveTopics,
    /// PauseMirrorTopics.
    PauseTopics,
    /// ResumeMirrorTopics.
    ResumeTopics,
    /// DeleteMirror.
    DeleteMirror,
    /// DescribeMirror: every partition's state, lag and last mirrored epoch, printed with the
    /// outcome.
    DescribeMirror,
    /// DeleteRecords up to the high watermark of every partition of the topics (to their
    /// leaders, found with a Metadata request).
    DeleteRecords,
    /// DeleteTopics (to a broker, which checks mirror topics before forwarding).
    DeleteTopics,
    /// CreatePartitions to `partitions` (to a broker, as DeleteTopics).
    CreatePartitions,
}

impl AdminOpKind {
    /// Every operation.
    pub const ALL: [Self; 10] = [
        Self::CreateMirror,
        Self::AddTopics,
        Self::RemoveTopics,
        Self::PauseTopics,
        Self::ResumeTopics,
        Self::DeleteMirror,
        Self::DescribeMirror,
        Self::DeleteRecords,
        Self::DeleteTopics,
        Self::CreatePartitions,
    ];

    /// The name scenario files and reports use.
    pub fn name(self) -> &'static str {
        match self {
            Self::CreateMirror => "create_mirror",
            Self::AddTopics => "add_topics",
            Self::RemoveTopics => "remove_topics",
            Self::PauseTopics => "pause_topics",
            Self::ResumeTopics => "resume_topics",
            Self::DeleteMirror => "delete_mirror",
            Self::DescribeMirror => "describe_mirror",
            Self::DeleteRecords => "delete_records",
            Self::DeleteTopics => "delete_topics",
            Self::CreatePartitions => "create_partitions",
        }
    }

    /// The operation called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// The AlterMirrorTopics operation of a topic operation; `None` for the others.
    pub fn topic_operation(self) -> Option<MirrorTopicOperation> {
        match self {
            Self::AddTopics => Some(MirrorTopicOperation::Add),
            Self::RemoveTopics => Some(MirrorTopicOperation::Remove),
            Self::PauseTopics => Some(MirrorTopicOperation::Pause),
            Self::ResumeTopics => Some(MirrorTopicOperation::Resume),
            Self::CreateMirror
            | Self::DeleteMirror
            | Self::DescribeMirror
            | Self::DeleteRecords
            | Self::DeleteTopics
            | Self::CreatePartitions => None,
        }
    }

    /// Whether the operation names topics (the mirror topic operations and the topic admin
    /// operations).
    pub fn takes_topics(self) -> bool {
        self.topic_operation().is_some() || self.is_topic_admin()
    }

    /// DeleteRecords, DeleteTopics or CreatePartitions: about topics, not a mirror.
    pub fn is_topic_admin(self) -> bool {
        matches!(
            self,
            Self::DeleteRecords | Self::DeleteTopics | Self::CreatePartitions
        )
    }
}

/// The internal topics a `leader:` fault target may name before they exist (they are
/// created on first use): the coordinators' topics have 4 partitions each.
pub(super) const COORDINATOR_TOPICS: &[&str] = &["__consumer_offsets", "__transaction_state"];

/// Every fault kind name, as scenario files and swarm output spell it.
pub const FAULT_KINDS: &[&str] = &[
    "kill",
    "pause",
    "partition",
    "isolate",
    "packet_loss",
    "latency_spike",
    "duplicate",
    "hold_back",
    "clock_skew",
    "disk_tear",
];
