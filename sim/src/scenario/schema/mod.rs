//! The scenario file's schema: one serde type per table of the file (`scenarios/README.md` is
//! the reference for every key). Deserialising checks types, unknown keys and missing ones;
//! everything else is checked by [`super::validate`], so a value of these types built by
//! [`super::Scenario::load`] is always valid.
//!
//! | module | holds |
//! |---|---|
//! | this one | the scenario, its clusters, topics and workloads |
//! | [`faults`] | `[faults]`: swarm mode and the scripted faults, one table type per fault kind |
//! | [`admin`] | the admin timeline, one table type per admin operation |
//! | `entries` | per-kind arrays of tables (`[[faults.kill]]`, `[[admin.create_mirror]]`) read and written in one order |

use mirrorsim::broker::BrokerConfig;
use mirrorsim::controller::ControllerConfig;
use mirrorsim::metadata::authorizer::AuthorizerConfig;
use mirrorsim::mirror::MirrorDesign;
use mirrorsim::switches::BrokenSwitch;
use serde::{Deserialize, Serialize};
use toml::Spanned;

pub mod admin;
mod entries;
pub mod faults;

pub use admin::{
    AclSpec, AclsOp, AddTopicsOp, AdminOpKind, AdminOpSpec, AlterMirrorOp, CreateMirrorOp,
    CreatePartitionsOp, MirrorOp, MirrorTopicsOp, TopicConfigsOp, TopicsOp,
};
pub(super) use entries::{entry_paths, write_entries};
pub use faults::{
    ClockSkewFault, FaultSpec, HoldBackFault, KillFault, LatencySpikeFault, NodeFault,
    PartitionFault, ProbabilityFault, ScriptedFault, DEFAULT_FAULT_DURATION_MS,
    DEFAULT_HOLD_BACK_PROBABILITY, FAULT_KINDS, RECOVERY_MARGIN_MS,
};

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
    /// Faults. Serialising writes only its swarm settings: [`Scenario::to_toml`] writes the
    /// scripted faults after the rest, one table each, to keep their order.
    #[serde(default, skip_serializing_if = "FaultSpec::has_no_settings")]
    pub faults: FaultSpec,
    /// The admin timeline: KIP-1279 mirror operations at fixed times, in file order (the order
    /// of their tables, whatever their kind). Not serialised with the rest:
    /// [`Scenario::to_toml`] writes them one table each, to keep their order.
    #[serde(
        default,
        deserialize_with = "admin::deserialize_in_file_order",
        skip_serializing
    )]
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
    /// `replica.fetch.max.bytes`: how many bytes of a partition a follower's fetch brings at
    /// most (the first batch always comes whole, KIP-74); `None`: Kafka's 1 MiB. A small value
    /// makes a lagging follower catch up a batch or a few at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_fetch_max_bytes: Option<u32>,
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
    /// Whether the brokers run Kafka's StandardAuthorizer (`authorizer.class.name`): a KIP-1279
    /// mirror reading from this cluster is then authorized by the cluster's ACLs, as the
    /// principal of its `sasl.jaas.config` (`mirrorsim::metadata::authorizer`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub authorizer: bool,
    /// `allow.everyone.if.no.acl.found` (only with `authorizer`; Kafka's default `false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_everyone_if_no_acl_found: Option<bool>,
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
    pub fn controller_config(&self, design: MirrorDesign) -> ControllerConfig {
        ControllerConfig {
            broker_session_timeout_ms: self.broker_session_timeout_ms,
            eligible_leader_replicas: design.eligible_leader_replicas(),
            default_min_insync_replicas: BrokerConfig::default().default_min_insync_replicas,
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
            replica_fetch_max_bytes: self
                .replica_fetch_max_bytes
                .map_or(BrokerConfig::default().replica_fetch_max_bytes, |bytes| {
                    bytes as usize
                }),
            log_flush_interval_ms: self.log_flush_interval_ms,
            internal_topic_replication_factor: i16::from(self.brokers.min(3)),
            mirror_metadata_refresh_interval_ms: self.mirror_metadata_refresh_interval_ms,
            mirror_design: design,
            authorizer: self.authorizer.then(|| AuthorizerConfig {
                allow_everyone_if_no_acl_found: self
                    .allow_everyone_if_no_acl_found
                    .unwrap_or(false),
            }),
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
    /// Not created at the start: an admin `create_topics` on its cluster creates it (a
    /// source-side change a mirror's `mirror.topics.include` may adopt).
    #[serde(default, skip_serializing_if = "is_false")]
    pub deferred: bool,
}

impl TopicSpec {
    /// The CreateTopics entry that creates this topic: its partitions, replication factor
    /// and configs (`mirror.support.unclean.leader.election` only when set, so that other
    /// scenarios' metadata stays as it was).
    pub fn new_topic(&self) -> mirrorsim::protocol::NewTopic {
        let configs = [
            (
                "min.insync.replicas".to_owned(),
                self.min_insync_replicas.to_string(),
            ),
            (
                "unclean.leader.election.enable".to_owned(),
                self.unclean_leader_election.to_string(),
            ),
        ]
        .into_iter()
        .chain(self.mirror_support_unclean_leader_election.then(|| {
            (
                mirrorsim::mirror::state::MIRROR_SUPPORT_UNCLEAN_CONFIG.to_owned(),
                "true".to_owned(),
            )
        }))
        .collect();
        mirrorsim::protocol::NewTopic {
            name: self.name.clone(),
            partitions: self.partitions,
            replication_factor: self.replication_factor,
            configs,
            topic_id: None,
        }
    }
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

/// A producer workload's `compression.type`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompressionSpec {
    /// Batches written uncompressed (Kafka's default).
    #[default]
    None,
    /// gzip.
    Gzip,
    /// snappy, in the xerial framing Kafka's Java producer writes.
    Snappy,
    /// lz4, one LZ4 frame per batch.
    Lz4,
    /// zstd.
    Zstd,
}

impl CompressionSpec {
    fn is_none(&self) -> bool {
        *self == Self::None
    }
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
    /// distinct partitions, one in five aborted on purpose once its records reached the log.
    /// Transactional id `NODE-txn`, so a restarted producer fences its previous incarnation.
    #[serde(default, skip_serializing_if = "is_false")]
    pub transactional: bool,
    /// When the producers start, in ms from the start of the fault phase (`None`: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ms: Option<Spanned<u64>>,
    /// When the producers stop creating records, in ms from the start of the fault phase
    /// (`None`: at the heal phase, as every producer). What was already sent still finishes:
    /// retries go on, an open transaction commits or aborts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_ms: Option<Spanned<u64>>,
    /// Transactional producers only: `transaction.timeout.ms`, after which the coordinator
    /// aborts an open transaction and fences the producer (`None`: the simulated 10 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction_timeout_ms: Option<i64>,
    /// `compression.type`: `none` (default), `gzip`, `snappy`, `lz4` or `zstd`. Brokers keep a
    /// producer's compressed batches as they come (Kafka's `compression.type=producer`), and a
    /// mirror copies them byte for byte.
    #[serde(default, skip_serializing_if = "CompressionSpec::is_none")]
    pub compression: CompressionSpec,
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

fn is_false(value: &bool) -> bool {
    !*value
}

/// The internal topics a `leader:` fault target may name before they exist (they are
/// created on first use): the coordinators' topics have 4 partitions each.
pub(super) const COORDINATOR_TOPICS: &[&str] = &["__consumer_offsets", "__transaction_state"];
