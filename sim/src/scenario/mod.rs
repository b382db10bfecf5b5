//! Scenario files: what a run builds, what load it drives, which faults it injects and for how
//! long. TOML; the reference is `scenarios/README.md`.
//!
//! Contract: [`Scenario::load`] either returns a fully validated scenario or a
//! [`ScenarioError`] naming the file, the line and the field (exit code 64). Nothing later in a
//! run re-validates, so every cross-reference (cluster letters, topic names, node names) is
//! checked here. [`Scenario::to_toml`] writes a scenario back: parsing its output gives an equal
//! scenario (the round trip `mirrorsim shrink` relies on).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use mirrorsim::coordinator::mirror::MIRROR_STATE_TOPIC;
use mirrorsim::mirror::MirrorDesign;
use mirrorsim::protocol::MirrorTopicOperation;
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
    /// distinct partitions, one in five aborted on purpose. Transactional id `NODE-txn`, so a
    /// restarted producer fences its previous incarnation.
    #[serde(default, skip_serializing_if = "is_false")]
    pub transactional: bool,
    /// When the producers start, in ms from the start of the fault phase (`None`: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ms: Option<Spanned<u64>>,
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

/// One scripted fault.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedFault {
    /// When, in simulated ms from the start of the fault phase.
    pub at_ms: u64,
    /// What: `kill`, `pause`, `partition`, `isolate`, `packet_loss`, `latency_spike`,
    /// `duplicate`, `hold_back`, `clock_skew`.
    pub kind: Spanned<String>,
    /// Target nodes (`a-broker-1`, `a-controller`, `a-producer-1`, `a-consumer-2`, or
    /// `a-leader:TOPIC:P` for the current leader of a partition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<Spanned<String>>,
    /// The other side of a partition (`partition` only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other: Vec<Spanned<String>>,
    /// How long the fault lasts (kill: downtime before the restart).
    #[serde(default = "default_fault_duration_ms")]
    pub duration_ms: u64,
    /// Loss/duplication probability, clock offset (ms), extra latency (ms) or hold (ms), by
    /// kind.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub amount: f64,
    /// One-way partition (only `nodes` → `other` is cut).
    #[serde(default, skip_serializing_if = "is_false")]
    pub asymmetric: bool,
    /// kill only: lose (and sometimes tear) unflushed disk writes.
    #[serde(default, skip_serializing_if = "is_false")]
    pub lose_unflushed: bool,
    /// hold_back only: the probability that a message is held back (`None`:
    /// [`DEFAULT_HOLD_BACK_PROBABILITY`]); swarm mode draws it per fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<Spanned<f64>>,
    /// clock_skew only: clock drift in parts per million (`None`: none); swarm mode draws it
    /// per fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_ppm: Option<Spanned<i64>>,
}

/// A scripted `hold_back`'s probability per message when the file names none.
pub const DEFAULT_HOLD_BACK_PROBABILITY: f64 = 0.05;

/// The largest clock drift a scripted `clock_skew` may name, in ppm: beyond a million the
/// clock would run backwards.
pub const MAX_DRIFT_PPM: i64 = 999_999;

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_zero(value: &f64) -> bool {
    *value == 0.0
}

fn default_fault_duration_ms() -> u64 {
    2_000
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
const COORDINATOR_TOPICS: &[&str] = &["__consumer_offsets", "__transaction_state"];

/// The mirror property naming the source cluster's brokers (KIP-1279 CreateMirror).
pub const BOOTSTRAP_SERVERS: &str = "bootstrap.servers";

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

/// A scenario that could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The field path, e.g. `faults.scripted[2].kind`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": field `{}`: {}", self.field, self.message)
    }
}

impl std::error::Error for ScenarioError {}

struct Source<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Source<'_> {
    fn line_of(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())]
            .matches('\n')
            .count()
            + 1
    }

    fn error_at<T>(&self, spanned: &Spanned<T>, field: String, message: String) -> ScenarioError {
        ScenarioError {
            file: self.file.to_path_buf(),
            line: Some(self.line_of(spanned.span().start)),
            field,
            message,
        }
    }

    fn error(&self, field: &str, message: String) -> ScenarioError {
        ScenarioError {
            file: self.file.to_path_buf(),
            line: self.find_key_line(field),
            field: field.to_string(),
            message,
        }
    }

    /// Best-effort line of the last path segment's key (for fields without spans).
    fn find_key_line(&self, field: &str) -> Option<usize> {
        let key = field.rsplit('.').next()?.split('[').next()?;
        self.text
            .lines()
            .position(|line| line.trim_start().starts_with(key))
            .map(|index| index + 1)
    }
}

impl Scenario {
    /// Reads, parses and validates a scenario file.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|error| ScenarioError {
            file: path.to_path_buf(),
            line: None,
            field: "(file)".into(),
            message: format!("cannot read: {error}"),
        })?;
        Self::parse(path, &text)
    }

    /// The scenario as TOML that [`Scenario::parse`] reads back as an equal scenario: every
    /// field that differs from "absent" is written, defaults with a value included, so the
    /// file says what runs (used by `mirrorsim shrink`).
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        toml::to_string(self)
    }

    /// Parses and validates scenario text; `path` is used in errors and for the default name.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ScenarioError> {
        let source = Source { file: path, text };
        let mut scenario: Scenario = toml::from_str(text).map_err(|error| ScenarioError {
            file: path.to_path_buf(),
            line: error.span().map(|span| source.line_of(span.start)),
            field: toml_error_field(&error),
            message: error.message().to_string(),
        })?;
        if scenario.name.is_empty() {
            scenario.name = path.file_stem().map_or("scenario".into(), |stem| {
                stem.to_string_lossy().into_owned()
            });
        }
        scenario.validate(&source)?;
        Ok(scenario)
    }

    fn validate(&self, source: &Source<'_>) -> Result<(), ScenarioError> {
        if self.duration_ms == 0 {
            return Err(source.error("duration_ms", "must be positive".into()));
        }
        for (index, name) in self.broken.iter().enumerate() {
            if mirrorsim::broker::BrokenSwitch::from_name(name).is_none() {
                return Err(source.error(
                    &format!("broken[{index}]"),
                    format!("unknown broken switch `{name}`"),
                ));
            }
        }
        if let Some(design) = &self.design {
            if MirrorDesign::from_name(design.get_ref()).is_none() {
                return Err(source.error_at(
                    design,
                    "design".into(),
                    format!(
                        "unknown design `{}` (known: {})",
                        design.get_ref(),
                        MirrorDesign::names()
                    ),
                ));
            }
        }
        if self.clusters.is_empty() || self.clusters.len() > 26 {
            return Err(source.error("clusters", "between 1 and 26 clusters".into()));
        }
        for (index, cluster) in self.clusters.iter().enumerate() {
            self.validate_cluster(source, index, cluster)?;
        }
        for (index, topic) in self.topics.iter().enumerate() {
            let cluster =
                self.check_cluster(source, &topic.cluster, &format!("topics[{index}].cluster"))?;
            let brokers = i16::from(self.clusters[cluster].brokers);
            if topic.replication_factor < 1 || topic.replication_factor > brokers {
                return Err(source.error(
                    &format!("topics[{index}].replication_factor"),
                    format!("must be between 1 and the cluster's {brokers} brokers"),
                ));
            }
            if topic.min_insync_replicas < 1 || topic.min_insync_replicas > topic.replication_factor
            {
                return Err(source.error(
                    &format!("topics[{index}].min_insync_replicas"),
                    "must be between 1 and the replication factor".into(),
                ));
            }
            if topic.partitions < 1 || topic.partitions > 64 {
                return Err(source.error(
                    &format!("topics[{index}].partitions"),
                    "must be between 1 and 64".into(),
                ));
            }
        }
        for (index, producer) in self.producers.iter().enumerate() {
            let field = format!("producers[{index}]");
            self.check_cluster(source, &producer.cluster, &format!("{field}.cluster"))?;
            self.check_topic(
                source,
                &producer.cluster,
                &producer.topic,
                &format!("{field}.topic"),
            )?;
            if producer.interval_ms == 0 {
                return Err(
                    source.error(&format!("{field}.interval_ms"), "must be positive".into())
                );
            }
            self.check_start_ms(source, producer.start_ms.as_ref(), &field)?;
        }
        for (index, consumer) in self.consumers.iter().enumerate() {
            let field = format!("consumers[{index}]");
            self.check_cluster(source, &consumer.cluster, &format!("{field}.cluster"))?;
            self.check_topic(
                source,
                &consumer.cluster,
                &consumer.topic,
                &format!("{field}.topic"),
            )?;
            self.check_start_ms(source, consumer.start_ms.as_ref(), &field)?;
        }
        for (index, kind) in self.faults.swarm_kinds.iter().enumerate() {
            if !FAULT_KINDS.contains(&kind.get_ref().as_str()) {
                return Err(source.error_at(
                    kind,
                    format!("faults.swarm_kinds[{index}]"),
                    format!(
                        "unknown fault kind `{}` (known: {})",
                        kind.get_ref(),
                        FAULT_KINDS.join(", ")
                    ),
                ));
            }
        }
        for (index, fault) in self.faults.scripted.iter().enumerate() {
            self.validate_fault(source, index, fault)?;
        }
        self.validate_admin_timeline(source)
    }

    fn validate_cluster(
        &self,
        source: &Source<'_>,
        index: usize,
        cluster: &ClusterSpec,
    ) -> Result<(), ScenarioError> {
        let field = format!("clusters[{index}]");
        if cluster.brokers == 0 || cluster.brokers > 50 {
            return Err(source.error(
                &format!("{field}.brokers"),
                "between 1 and 50 brokers".into(),
            ));
        }
        if !(1..=64).contains(&cluster.mirror_state_partitions) {
            return Err(source.error(
                &format!("{field}.mirror_state_partitions"),
                "must be between 1 and 64".into(),
            ));
        }
        let replication_factor = cluster.mirror_state_replication_factor();
        if replication_factor < 1 || replication_factor > i16::from(cluster.brokers) {
            return Err(source.error(
                &format!("{field}.mirror_state_replication_factor"),
                format!(
                    "must be between 1 and the cluster's {} brokers",
                    cluster.brokers
                ),
            ));
        }
        if !(100..=600_000).contains(&cluster.mirror_metadata_refresh_interval_ms) {
            return Err(source.error(
                &format!("{field}.mirror_metadata_refresh_interval_ms"),
                "must be between 100 and 600000 ms".into(),
            ));
        }
        Ok(())
    }

    /// A workload's `start_ms` must fall inside the fault phase, where load runs.
    fn check_start_ms(
        &self,
        source: &Source<'_>,
        start_ms: Option<&Spanned<u64>>,
        field: &str,
    ) -> Result<(), ScenarioError> {
        match start_ms {
            Some(start) if *start.get_ref() >= self.duration_ms => Err(source.error_at(
                start,
                format!("{field}.start_ms"),
                format!(
                    "must be before the end of the fault phase (duration_ms = {})",
                    self.duration_ms
                ),
            )),
            _ => Ok(()),
        }
    }

    fn validate_admin_timeline(&self, source: &Source<'_>) -> Result<(), ScenarioError> {
        // A cluster's operations run one at a time in file order, so their times must not go
        // backwards; this keeps each cluster's latest time.
        let mut latest: BTreeMap<usize, u64> = BTreeMap::new();
        for (index, spec) in self.admin.iter().enumerate() {
            let field = format!("admin[{index}]");
            let cluster = self.check_cluster(source, &spec.cluster, &format!("{field}.cluster"))?;
            let kind = AdminOpKind::from_name(spec.op.get_ref()).ok_or_else(|| {
                let known: Vec<&str> = AdminOpKind::ALL.iter().map(|k| k.name()).collect();
                source.error_at(
                    &spec.op,
                    format!("{field}.op"),
                    format!(
                        "unknown admin op `{}` (known: {})",
                        spec.op.get_ref(),
                        known.join(", ")
                    ),
                )
            })?;
            let at_ms = *spec.at_ms.get_ref();
            if at_ms >= self.duration_ms {
                return Err(source.error_at(
                    &spec.at_ms,
                    format!("{field}.at_ms"),
                    format!(
                        "must be before the end of the fault phase (duration_ms = {})",
                        self.duration_ms
                    ),
                ));
            }
            if let Some(previous) = latest.insert(cluster, at_ms).filter(|p| *p > at_ms) {
                return Err(source.error_at(
                    &spec.at_ms,
                    format!("{field}.at_ms"),
                    format!(
                        "earlier than cluster `{}`'s previous admin op (at_ms = {previous}); a \
                         cluster's ops run in file order",
                        spec.cluster.get_ref()
                    ),
                ));
            }
            self.validate_admin_source(source, &field, spec, kind)?;
            self.validate_admin_topics(source, &field, spec, kind)?;
            validate_admin_mirror_and_partitions(source, &field, spec, kind)?;
        }
        Ok(())
    }

    /// `source` and `configs` belong to `create_mirror`, which needs a source cluster other
    /// than its own.
    fn validate_admin_source(
        &self,
        source: &Source<'_>,
        field: &str,
        spec: &AdminOpSpec,
        kind: AdminOpKind,
    ) -> Result<(), ScenarioError> {
        if kind != AdminOpKind::CreateMirror {
            if let Some(mirror_source) = &spec.source {
                return Err(source.error_at(
                    mirror_source,
                    format!("{field}.source"),
                    "only `create_mirror` takes a source".into(),
                ));
            }
            if !spec.configs.is_empty() {
                return Err(source.error_at(
                    &spec.op,
                    format!("{field}.configs"),
                    "only `create_mirror` takes configs".into(),
                ));
            }
            return Ok(());
        }
        let Some(mirror_source) = &spec.source else {
            return Err(source.error_at(
                &spec.op,
                format!("{field}.source"),
                "`create_mirror` needs the source cluster".into(),
            ));
        };
        self.check_cluster(source, mirror_source, &format!("{field}.source"))?;
        if mirror_source.get_ref() == spec.cluster.get_ref() {
            return Err(source.error_at(
                mirror_source,
                format!("{field}.source"),
                format!(
                    "the source must differ from the destination cluster `{}`",
                    spec.cluster.get_ref()
                ),
            ));
        }
        if spec.configs.contains_key(BOOTSTRAP_SERVERS) {
            return Err(source.error_at(
                &spec.op,
                format!("{field}.configs"),
                format!("`{BOOTSTRAP_SERVERS}` comes from `source`"),
            ));
        }
        Ok(())
    }

    /// Topic operations need distinct topics declared on the destination cluster; the others
    /// take none.
    fn validate_admin_topics(
        &self,
        source: &Source<'_>,
        field: &str,
        spec: &AdminOpSpec,
        kind: AdminOpKind,
    ) -> Result<(), ScenarioError> {
        if !kind.takes_topics() {
            return match spec.topics.first() {
                Some(topic) => Err(source.error_at(
                    topic,
                    format!("{field}.topics[0]"),
                    format!("`{}` takes no topics", kind.name()),
                )),
                None => Ok(()),
            };
        }
        if spec.topics.is_empty() {
            return Err(source.error_at(
                &spec.op,
                format!("{field}.topics"),
                format!("`{}` needs topics", kind.name()),
            ));
        }
        let mut seen = BTreeSet::new();
        for (position, topic) in spec.topics.iter().enumerate() {
            let topic_field = format!("{field}.topics[{position}]");
            self.check_topic(source, &spec.cluster, topic, &topic_field)?;
            if !seen.insert(topic.get_ref()) {
                return Err(source.error_at(
                    topic,
                    topic_field,
                    format!("topic `{}` is listed twice", topic.get_ref()),
                ));
            }
        }
        Ok(())
    }

    fn validate_fault(
        &self,
        source: &Source<'_>,
        index: usize,
        fault: &ScriptedFault,
    ) -> Result<(), ScenarioError> {
        let field = format!("faults.scripted[{index}]");
        let kind = fault.kind.get_ref().as_str();
        if !FAULT_KINDS.contains(&kind) {
            return Err(source.error_at(
                &fault.kind,
                format!("{field}.kind"),
                format!(
                    "unknown fault kind `{kind}` (known: {})",
                    FAULT_KINDS.join(", ")
                ),
            ));
        }
        let needs_nodes = !matches!(
            kind,
            "packet_loss" | "latency_spike" | "duplicate" | "hold_back"
        );
        if needs_nodes && fault.nodes.is_empty() {
            return Err(source.error(
                &format!("{field}.nodes"),
                format!("`{kind}` needs target nodes"),
            ));
        }
        if kind == "partition" && fault.other.is_empty() {
            return Err(source.error(
                &format!("{field}.other"),
                "`partition` needs the other side".into(),
            ));
        }
        for (list, name) in [(&fault.nodes, "nodes"), (&fault.other, "other")] {
            for (position, node) in list.iter().enumerate() {
                if let Err(message) = self.check_node_name(node.get_ref()) {
                    return Err(source.error_at(
                        node,
                        format!("{field}.{name}[{position}]"),
                        message,
                    ));
                }
            }
        }
        if matches!(kind, "packet_loss" | "duplicate") && !(0.0..=1.0).contains(&fault.amount) {
            return Err(source.error(&format!("{field}.amount"), "a probability in [0, 1]".into()));
        }
        validate_fault_extras(source, &field, kind, fault)
    }

    fn check_cluster(
        &self,
        source: &Source<'_>,
        cluster: &Spanned<String>,
        field: &str,
    ) -> Result<usize, ScenarioError> {
        cluster_index(cluster.get_ref())
            .filter(|index| *index < self.clusters.len())
            .ok_or_else(|| {
                source.error_at(
                    cluster,
                    field.to_string(),
                    format!(
                        "unknown cluster `{}` (this scenario has {} cluster(s): a..)",
                        cluster.get_ref(),
                        self.clusters.len()
                    ),
                )
            })
    }

    fn check_topic(
        &self,
        source: &Source<'_>,
        cluster: &Spanned<String>,
        topic: &Spanned<String>,
        field: &str,
    ) -> Result<(), ScenarioError> {
        if self
            .topic_partitions(cluster.get_ref(), topic.get_ref())
            .is_some()
        {
            Ok(())
        } else {
            Err(source.error_at(
                topic,
                field.to_string(),
                format!(
                    "topic `{}` is not declared on cluster `{}`",
                    topic.get_ref(),
                    cluster.get_ref()
                ),
            ))
        }
    }

    /// Checks a node name such as `a-broker-2`, `b-controller` or `a-leader:orders:0`.
    fn check_node_name(&self, name: &str) -> Result<(), String> {
        let (cluster, rest) = name
            .split_once('-')
            .ok_or_else(|| format!("`{name}` is not a node name like `a-broker-1`"))?;
        let index = cluster_index(cluster)
            .filter(|index| *index < self.clusters.len())
            .ok_or_else(|| format!("`{name}`: unknown cluster `{cluster}`"))?;
        if rest == "controller" {
            return Ok(());
        }
        if let Some(id) = rest.strip_prefix("broker-") {
            let id: u8 = id.parse().map_err(|_| format!("`{name}`: bad broker id"))?;
            if id == 0 || id > self.clusters[index].brokers {
                return Err(format!(
                    "`{name}`: cluster `{cluster}` has brokers 1..={}",
                    self.clusters[index].brokers
                ));
            }
            return Ok(());
        }
        for (kind, count) in [
            ("producer-", self.client_count(cluster, true)),
            ("consumer-", self.client_count(cluster, false)),
        ] {
            if let Some(index) = rest.strip_prefix(kind) {
                let index: u16 = index
                    .parse()
                    .map_err(|_| format!("`{name}`: bad client index"))?;
                return if index >= 1 && index <= count {
                    Ok(())
                } else {
                    Err(format!(
                        "`{name}`: cluster `{cluster}` has {kind}1..={count}"
                    ))
                };
            }
        }
        if let Some(target) = rest.strip_prefix("leader:") {
            let (topic, partition) = target
                .rsplit_once(':')
                .ok_or_else(|| format!("`{name}`: use `{cluster}-leader:TOPIC:PARTITION`"))?;
            let partition: i32 = partition
                .parse()
                .map_err(|_| format!("`{name}`: bad partition"))?;
            // Internal topics exist once a coordinator is first used (4 partitions each), and
            // `__mirror_state` once the cluster's first mirror is created.
            let internal = (COORDINATOR_TOPICS.contains(&topic) && (0..4).contains(&partition))
                || (topic == MIRROR_STATE_TOPIC
                    && (0..self.clusters[index].mirror_state_partitions).contains(&partition));
            let declared = internal
                || self
                    .topic_partitions(cluster, topic)
                    .is_some_and(|partitions| (0..partitions).contains(&partition));
            return if declared {
                Ok(())
            } else {
                Err(format!(
                    "`{name}`: no such topic partition on cluster `{cluster}`"
                ))
            };
        }
        Err(format!(
            "`{name}` is not a controller, broker or `leader:` target"
        ))
    }
}

/// The per-kind fields a swarm fault needs to be written out as a scripted one:
/// `probability` (hold_back) and `drift_ppm` (clock_skew).
fn validate_fault_extras(
    source: &Source<'_>,
    field: &str,
    kind: &str,
    fault: &ScriptedFault,
) -> Result<(), ScenarioError> {
    if let Some(probability) = &fault.probability {
        let probability_field = format!("{field}.probability");
        if kind != "hold_back" {
            return Err(source.error_at(
                probability,
                probability_field,
                format!("only `hold_back` takes a probability (`{kind}` uses `amount`)"),
            ));
        }
        if !(0.0..=1.0).contains(probability.get_ref()) {
            return Err(source.error_at(
                probability,
                probability_field,
                "a probability in [0, 1]".into(),
            ));
        }
    }
    if let Some(drift) = &fault.drift_ppm {
        let drift_field = format!("{field}.drift_ppm");
        if kind != "clock_skew" {
            return Err(source.error_at(
                drift,
                drift_field,
                "only `clock_skew` takes a drift".into(),
            ));
        }
        if drift.get_ref().abs() > MAX_DRIFT_PPM {
            return Err(source.error_at(
                drift,
                drift_field,
                format!("must be between -{MAX_DRIFT_PPM} and {MAX_DRIFT_PPM} ppm"),
            ));
        }
    }
    Ok(())
}

/// Mirror operations need `mirror`; the topic admin operations take none, and
/// `create_partitions` alone takes (and needs) a positive `partitions`.
fn validate_admin_mirror_and_partitions(
    source: &Source<'_>,
    field: &str,
    spec: &AdminOpSpec,
    kind: AdminOpKind,
) -> Result<(), ScenarioError> {
    match (&spec.mirror, kind.is_topic_admin()) {
        (None, false) => {
            return Err(source.error_at(
                &spec.op,
                format!("{field}.mirror"),
                format!("`{}` needs the mirror's name", kind.name()),
            ))
        }
        (Some(mirror), true) => {
            return Err(source.error_at(
                mirror,
                format!("{field}.mirror"),
                format!("`{}` is about topics and takes no mirror", kind.name()),
            ))
        }
        _ => {}
    }
    match (&spec.partitions, kind == AdminOpKind::CreatePartitions) {
        (None, true) => Err(source.error_at(
            &spec.op,
            format!("{field}.partitions"),
            "`create_partitions` needs the new partition count".into(),
        )),
        (Some(partitions), true) if !(1..=64).contains(partitions.get_ref()) => Err(source
            .error_at(
                partitions,
                format!("{field}.partitions"),
                "must be between 1 and 64".into(),
            )),
        (Some(partitions), false) => Err(source.error_at(
            partitions,
            format!("{field}.partitions"),
            "only `create_partitions` takes a partition count".into(),
        )),
        _ => Ok(()),
    }
}

impl Scenario {
    /// The design variant the file asks for (`seed` when it names none; names are validated
    /// at load).
    pub fn mirror_design(&self) -> MirrorDesign {
        self.design
            .as_ref()
            .and_then(|name| MirrorDesign::from_name(name.get_ref()))
            .unwrap_or_default()
    }

    /// The partition count of a topic on a cluster: a declared topic's, or that of a source
    /// topic a mirror created on the cluster adopts (`mirror.topics.include`), which the
    /// mirror's periodic sync creates with the source's partition count.
    fn topic_partitions(&self, cluster: &str, topic: &str) -> Option<i32> {
        let declared = |cluster: &str| {
            self.topics
                .iter()
                .find(|t| t.cluster.get_ref() == cluster && t.name == topic)
                .map(|t| t.partitions)
        };
        declared(cluster).or_else(|| {
            self.admin
                .iter()
                .filter(|spec| {
                    spec.kind() == AdminOpKind::CreateMirror && spec.cluster.get_ref() == cluster
                })
                .filter(|spec| {
                    spec.configs
                        .get(mirrorsim::mirror::sync::TOPICS_INCLUDE_CONFIG)
                        .and_then(|value| mirrorsim::mirror::sync::NameFilter::parse(value).ok())
                        .is_some_and(|include| include.matches(topic))
                })
                .find_map(|spec| declared(spec.source.as_ref()?.get_ref()))
        })
    }

    /// How many producer (or consumer) nodes a cluster has.
    fn client_count(&self, cluster: &str, producers: bool) -> u16 {
        if producers {
            self.producers
                .iter()
                .filter(|p| p.cluster.get_ref() == cluster)
                .map(|p| p.count)
                .sum()
        } else {
            self.consumers
                .iter()
                .filter(|c| c.cluster.get_ref() == cluster)
                .map(|c| c.count)
                .sum()
        }
    }
}

/// `a` → 0, `b` → 1, …
pub fn cluster_index(letter: &str) -> Option<usize> {
    let mut chars = letter.chars();
    let first = chars.next()?;
    if chars.next().is_some() || !first.is_ascii_lowercase() {
        return None;
    }
    Some(first as usize - 'a' as usize)
}

fn toml_error_field(error: &toml::de::Error) -> String {
    // toml reports unknown or missing fields in its message; the key is between backticks.
    let message = error.message();
    message
        .split('`')
        .nth(1)
        .map_or_else(|| "(syntax)".to_string(), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
duration_ms = 1000
[[clusters]]
brokers = 3
[[topics]]
cluster = "a"
name = "orders"
partitions = 2
replication_factor = 3
min_insync_replicas = 2
[[producers]]
cluster = "a"
topic = "orders"
"#;

    fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse(Path::new("test.toml"), text)
    }

    #[test]
    fn scenario_minimal_file_parses_with_defaults() {
        let scenario = parse(MINIMAL).unwrap();
        assert_eq!(scenario.name, "test");
        assert_eq!(scenario.heal_ms, 10_000);
        assert_eq!(scenario.producers[0].acks, AcksSpec::All);
        assert_eq!(scenario.mirror_design(), MirrorDesign::Seed);
    }

    #[test]
    fn scenario_broken_switches_are_checked() {
        let scenario = parse(&format!("broken = [\"ack-before-replication\"]\n{MINIMAL}")).unwrap();
        assert_eq!(scenario.broken, vec!["ack-before-replication".to_owned()]);
        let error = parse(&format!("broken = [\"nope\"]\n{MINIMAL}")).unwrap_err();
        assert_eq!(error.field, "broken[0]");
        assert!(
            error.to_string().contains("unknown broken switch `nope`"),
            "{error}"
        );
    }

    #[test]
    fn scenario_design_is_read_and_unknown_designs_are_refused_at_their_line() {
        let scenario = parse(&format!("design = \"abort-markers\"\n{MINIMAL}")).unwrap();
        assert_eq!(scenario.mirror_design(), MirrorDesign::AbortMarkers);
        let error = parse(&format!("design = \"lmo\"\n{MINIMAL}")).unwrap_err();
        assert_eq!(error.field, "design");
        assert_eq!(error.line, Some(1));
        assert!(
            error.to_string().contains("unknown design `lmo`"),
            "{error}"
        );
    }

    #[test]
    fn scenario_errors_name_file_line_and_field() {
        let error = parse(&format!(
            "{MINIMAL}\n[[consumers]]\ncluster = \"b\"\ntopic = \"orders\"\n"
        ))
        .unwrap_err();
        assert_eq!(error.field, "consumers[0].cluster");
        assert_eq!(error.line, Some(16));
        assert!(
            error
                .to_string()
                .starts_with("test.toml:16: field `consumers[0].cluster`"),
            "{error}"
        );

        let error = parse(&MINIMAL.replace("replication_factor = 3", "replication_factor = 4"))
            .unwrap_err();
        assert_eq!(error.field, "topics[0].replication_factor");
        assert_eq!(error.line, Some(9));

        let error =
            parse(&MINIMAL.replace("duration_ms = 1000", "duration_ms = \"soon\"")).unwrap_err();
        assert_eq!(error.line, Some(2));

        let error = parse(&format!("{MINIMAL}\nbogus = 1\n")).unwrap_err();
        assert_eq!(error.field, "bogus");
    }

    #[test]
    fn scenario_fault_targets_are_checked() {
        let text = format!(
            "{MINIMAL}\n[[faults.scripted]]\nat_ms = 10\nkind = \"kill\"\nnodes = [\"a-broker-4\"]\n"
        );
        let error = parse(&text).unwrap_err();
        assert_eq!(error.field, "faults.scripted[0].nodes[0]");
        assert_eq!(error.line, Some(18));
        let text = format!("{MINIMAL}\n[[faults.scripted]]\nat_ms = 10\nkind = \"explode\"\nnodes = [\"a-broker-1\"]\n");
        assert_eq!(parse(&text).unwrap_err().field, "faults.scripted[0].kind");
        let text = format!("{MINIMAL}\n[[faults.scripted]]\nat_ms = 10\nkind = \"kill\"\nnodes = [\"a-leader:orders:1\"]\n");
        assert!(parse(&text).is_ok());
    }

    /// Two clusters, `orders` on b; admin entries are appended from line 13.
    const TWO_CLUSTERS: &str = r#"
duration_ms = 5000
[[clusters]]
brokers = 3
[[clusters]]
brokers = 3
mirror_state_partitions = 3
[[topics]]
cluster = "b"
name = "orders"
partitions = 1
replication_factor = 3
"#;

    /// Parses [`TWO_CLUSTERS`] with `tail` appended; returns the error's field, line and text.
    fn error_of(tail: &str) -> (String, Option<usize>, String) {
        let error = parse(&format!("{TWO_CLUSTERS}{tail}")).unwrap_err();
        (error.field.clone(), error.line, error.to_string())
    }

    #[test]
    fn scenario_admin_timeline_parses() {
        let scenario = parse(&format!(
            "{TWO_CLUSTERS}[[admin]]\nat_ms = 0\ncluster = \"b\"\nop = \"create_mirror\"\n\
             mirror = \"m\"\nsource = \"a\"\n\
             [[admin]]\nat_ms = 0\ncluster = \"b\"\nop = \"add_topics\"\nmirror = \"m\"\n\
             topics = [\"orders\"]\n\
             [[admin]]\nat_ms = 10\ncluster = \"b\"\nop = \"delete_mirror\"\nmirror = \"m\"\n"
        ))
        .unwrap();
        let kinds: Vec<AdminOpKind> = scenario.admin.iter().map(AdminOpSpec::kind).collect();
        assert_eq!(
            kinds,
            [
                AdminOpKind::CreateMirror,
                AdminOpKind::AddTopics,
                AdminOpKind::DeleteMirror
            ]
        );
        assert_eq!(scenario.clusters[1].mirror_state_replication_factor(), 3);
        assert_eq!(scenario.clusters[0].mirror_state_partitions, 50);
    }

    #[test]
    fn scenario_admin_errors_name_file_line_and_field() {
        let entry = |body: &str| format!("[[admin]]\nat_ms = 100\ncluster = \"b\"\n{body}");
        // (body after at_ms and cluster, field, line, words of the message)
        let cases = [
            (
                "op = \"explode\"\nmirror = \"m\"\n",
                "admin[0].op",
                16,
                "unknown admin op `explode`",
            ),
            (
                "op = \"create_mirror\"\nmirror = \"m\"\n",
                "admin[0].source",
                16,
                "needs the source cluster",
            ),
            (
                "op = \"create_mirror\"\nmirror = \"m\"\nsource = \"b\"\n",
                "admin[0].source",
                18,
                "must differ from the destination cluster `b`",
            ),
            (
                "op = \"create_mirror\"\nmirror = \"m\"\nsource = \"c\"\n",
                "admin[0].source",
                18,
                "unknown cluster `c`",
            ),
            (
                "op = \"create_mirror\"\nmirror = \"m\"\nsource = \"a\"\n\
                 configs = { \"bootstrap.servers\" = \"x\" }\n",
                "admin[0].configs",
                16,
                "comes from `source`",
            ),
            (
                "op = \"create_mirror\"\nmirror = \"m\"\nsource = \"a\"\ntopics = [\"orders\"]\n",
                "admin[0].topics[0]",
                19,
                "`create_mirror` takes no topics",
            ),
            (
                "op = \"add_topics\"\nmirror = \"m\"\ntopics = [\"orders\", \"payments\"]\n",
                "admin[0].topics[1]",
                18,
                "topic `payments` is not declared on cluster `b`",
            ),
            (
                "op = \"pause_topics\"\nmirror = \"m\"\ntopics = [\"orders\", \"orders\"]\n",
                "admin[0].topics[1]",
                18,
                "listed twice",
            ),
            (
                "op = \"remove_topics\"\nmirror = \"m\"\n",
                "admin[0].topics",
                16,
                "`remove_topics` needs topics",
            ),
            (
                "op = \"delete_mirror\"\nmirror = \"m\"\nsource = \"a\"\n",
                "admin[0].source",
                18,
                "only `create_mirror` takes a source",
            ),
            (
                "op = \"delete_mirror\"\nmirror = \"m\"\nconfigs = { \"k\" = \"v\" }\n",
                "admin[0].configs",
                16,
                "only `create_mirror` takes configs",
            ),
        ];
        for (body, field, line, words) in cases {
            let (error_field, error_line, text) = error_of(&entry(body));
            assert_eq!(error_field, field, "{text}");
            assert_eq!(error_line, Some(line), "{text}");
            assert!(
                text.starts_with(&format!("test.toml:{line}: field `{field}`: ")),
                "{text}"
            );
            assert!(text.contains(words), "{text}");
        }
    }

    #[test]
    fn scenario_admin_cluster_and_times_are_checked() {
        let (field, line, _) = error_of(
            "[[admin]]\nat_ms = 0\ncluster = \"c\"\nop = \"delete_mirror\"\nmirror = \"m\"\n",
        );
        assert_eq!((field.as_str(), line), ("admin[0].cluster", Some(15)));
        let (field, line, text) = error_of(
            "[[admin]]\nat_ms = 5000\ncluster = \"b\"\nop = \"delete_mirror\"\nmirror = \"m\"\n",
        );
        assert_eq!((field.as_str(), line), ("admin[0].at_ms", Some(14)));
        assert!(text.contains("duration_ms = 5000"), "{text}");
        // A cluster's operations run in file order; another cluster's times are independent.
        let two = |first: &str, second: &str| {
            format!(
                "[[admin]]\nat_ms = 200\ncluster = \"b\"\nop = \"delete_mirror\"\nmirror = \"m\"\n\
                 [[admin]]\nat_ms = 100\ncluster = \"{first}\"\nop = \"delete_mirror\"\nmirror = \"{second}\"\n"
            )
        };
        let (field, line, text) = error_of(&two("b", "m"));
        assert_eq!(
            (field.as_str(), line),
            ("admin[1].at_ms", Some(19)),
            "{text}"
        );
        assert!(text.contains("previous admin op (at_ms = 200)"), "{text}");
        assert!(parse(&format!("{TWO_CLUSTERS}{}", two("a", "m"))).is_ok());
        // A mirror operation needs the mirror; a topic operation takes none, and only
        // create_partitions takes (and needs) a partition count.
        let (field, _, _) =
            error_of("[[admin]]\nat_ms = 0\ncluster = \"b\"\nop = \"delete_mirror\"\n");
        assert_eq!(field, "admin[0].mirror");
        let topic_op = |extra: &str| {
            format!("[[admin]]\nat_ms = 0\ncluster = \"b\"\ntopics = [\"orders\"]\n{extra}")
        };
        for (extra, expected) in [
            (
                "op = \"delete_topics\"\nmirror = \"m\"\n",
                "admin[0].mirror",
            ),
            ("op = \"create_partitions\"\n", "admin[0].partitions"),
            (
                "op = \"create_partitions\"\npartitions = 0\n",
                "admin[0].partitions",
            ),
            (
                "op = \"delete_records\"\npartitions = 3\n",
                "admin[0].partitions",
            ),
        ] {
            let (field, _, text) = error_of(&topic_op(extra));
            assert_eq!(field, expected, "{extra}: {text}");
        }
        for extra in [
            "op = \"delete_topics\"\n",
            "op = \"delete_records\"\n",
            "op = \"create_partitions\"\npartitions = 4\n",
        ] {
            assert!(
                parse(&format!("{TWO_CLUSTERS}{}", topic_op(extra))).is_ok(),
                "{extra}"
            );
        }
    }

    #[test]
    fn scenario_start_ms_and_mirror_state_sizes_are_checked() {
        let (field, line, _) =
            error_of("[[producers]]\ncluster = \"b\"\ntopic = \"orders\"\nstart_ms = 5000\n");
        assert_eq!((field.as_str(), line), ("producers[0].start_ms", Some(16)));
        let (field, line, _) =
            error_of("[[consumers]]\ncluster = \"b\"\ntopic = \"orders\"\nstart_ms = 9000\n");
        assert_eq!((field.as_str(), line), ("consumers[0].start_ms", Some(16)));
        assert!(parse(&format!(
            "{TWO_CLUSTERS}[[consumers]]\ncluster = \"b\"\ntopic = \"orders\"\nstart_ms = 4999\n"
        ))
        .is_ok());

        let error = parse(&TWO_CLUSTERS.replace(
            "mirror_state_partitions = 3",
            "mirror_state_replication_factor = 4",
        ))
        .unwrap_err();
        assert_eq!(error.field, "clusters[1].mirror_state_replication_factor");
        assert_eq!(error.line, Some(7));
        let error = parse(
            &TWO_CLUSTERS.replace("mirror_state_partitions = 3", "mirror_state_partitions = 0"),
        )
        .unwrap_err();
        assert_eq!(error.field, "clusters[1].mirror_state_partitions");
        assert_eq!(error.line, Some(7));
        // A small cluster gets a small replication factor unless told otherwise.
        let scenario =
            parse(&TWO_CLUSTERS.replace("brokers = 3\n[[clusters]]", "brokers = 1\n[[clusters]]"))
                .unwrap();
        assert_eq!(scenario.clusters[0].mirror_state_replication_factor(), 1);
    }

    #[test]
    fn scenario_hold_back_probability_and_clock_drift_are_checked() {
        let fault = |body: &str| format!("{MINIMAL}\n[[faults.scripted]]\nat_ms = 10\n{body}");
        let scenario = parse(&fault(
            "kind = \"hold_back\"\nnodes = [\"a-broker-1\"]\namount = 900\nprobability = 0.25\n\
             [[faults.scripted]]\nat_ms = 20\nkind = \"clock_skew\"\nnodes = [\"a-broker-2\"]\n\
             amount = -300\ndrift_ppm = -1500\n",
        ))
        .unwrap();
        let [hold, skew] = &scenario.faults.scripted[..] else {
            panic!("two faults")
        };
        assert_eq!(hold.probability.as_ref().map(|p| *p.get_ref()), Some(0.25));
        assert_eq!(skew.drift_ppm.as_ref().map(|d| *d.get_ref()), Some(-1500));
        // (fault body, field, line of the offending value, words of the message); the fault
        // starts on line 15, its kind is on line 17.
        let cases = [
            (
                "kind = \"hold_back\"\nprobability = 1.5\n",
                "faults.scripted[0].probability",
                18,
                "a probability in [0, 1]",
            ),
            (
                "kind = \"packet_loss\"\namount = 0.1\nprobability = 0.5\n",
                "faults.scripted[0].probability",
                19,
                "only `hold_back` takes a probability",
            ),
            (
                "kind = \"kill\"\nnodes = [\"a-broker-1\"]\ndrift_ppm = 5\n",
                "faults.scripted[0].drift_ppm",
                19,
                "only `clock_skew` takes a drift",
            ),
            (
                "kind = \"clock_skew\"\nnodes = [\"a-broker-1\"]\ndrift_ppm = 1000000\n",
                "faults.scripted[0].drift_ppm",
                19,
                "between -999999 and 999999",
            ),
        ];
        for (body, field, line, words) in cases {
            let error = parse(&fault(body)).unwrap_err();
            let text = error.to_string();
            assert_eq!(error.field, field, "{text}");
            assert_eq!(error.line, Some(line), "{text}");
            assert!(text.contains(words), "{text}");
        }
    }

    #[test]
    fn every_shipped_scenario_reads_back_from_its_own_toml() {
        let directory = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios"));
        let mut count = 0;
        for entry in std::fs::read_dir(directory).expect("scenarios/") {
            let path = entry.expect("a directory entry").path();
            if path.extension().is_none_or(|ext| ext != "toml") {
                continue;
            }
            let scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
            let text = scenario.to_toml().expect("serialises");
            let again = Scenario::parse(Path::new("again.toml"), &text)
                .unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()));
            assert_eq!(again, scenario, "{}:\n{text}", path.display());
            count += 1;
        }
        assert!(count >= 20, "only {count} scenarios");
    }

    #[test]
    fn scenario_mirror_state_leaders_are_fault_targets() {
        let kill = |node: &str| {
            format!(
                "{TWO_CLUSTERS}[[faults.scripted]]\nat_ms = 10\nkind = \"kill\"\nnodes = [\"{node}\"]\n"
            )
        };
        assert!(parse(&kill("b-leader:__mirror_state:2")).is_ok());
        let error = parse(&kill("b-leader:__mirror_state:3")).unwrap_err();
        assert_eq!(error.field, "faults.scripted[0].nodes[0]");
        assert!(parse(&kill("a-leader:__mirror_state:49")).is_ok());
    }
}
