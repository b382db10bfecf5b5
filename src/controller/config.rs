//! Controller configuration and the controller's operating errors.

use std::fmt;

use crate::log::DiskError;

/// Controller settings. Every field states its unit and default; [`ControllerConfig::default`]
/// gives those defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerConfig {
    /// A broker that sends no valid heartbeat for this long is fenced (Kafka's
    /// `broker.session.timeout.ms`, which defaults to 9000 there). Milliseconds of the
    /// controller's clock. Default 1_000.
    pub broker_session_timeout_ms: i64,
    /// Producer ids per `AllocateProducerIds` block (Kafka's fixed block of 1000). Default 1_000.
    pub producer_id_block_size: i64,
    /// Partition count used when a `CreateTopics` entry asks for −1 (Kafka's `num.partitions`).
    /// Default 1.
    pub default_partition_count: i32,
    /// Replication factor used when a `CreateTopics` entry asks for −1 (Kafka's
    /// `default.replication.factor`). Default 1.
    pub default_replication_factor: i16,
    /// Largest partition count a `CreateTopics` entry may ask for (bounds the work of one
    /// request). Default 10_000.
    pub topic_partition_count_max: i32,
    /// Most records one `FetchMetadata` answer carries, whatever the request asks.
    /// Default 1_000.
    pub fetch_metadata_records_max: usize,
    /// Partitions of `__mirror_state`, created with the first mirror (KIP-1279's
    /// `mirror.state.topic.num.partitions`). Default 50.
    pub mirror_state_partitions: i32,
    /// Replication factor of `__mirror_state` (`mirror.state.topic.replication.factor`).
    /// Default 3.
    pub mirror_state_replication_factor: i16,
    /// KIP-966's eligible leader replicas (Kafka's `eligible.leader.replicas.version` ≥ 1):
    /// the last ISR member leaves the ISR when fenced, a shrink below min ISR keeps the
    /// removed members eligible, a registration after an unclean shutdown (every restart
    /// here: no controlled shutdown is modelled) removes the broker from ISRs and ELRs, and an
    /// empty ISR elects from the ELR (see `partition_change`). `false` is Kafka before
    /// KIP-966 (`pre-kip-966`). Default true.
    pub eligible_leader_replicas: bool,
    /// `min.insync.replicas` of topics that do not set it (the cluster-level value; Kafka's
    /// default 1). Default 1.
    pub default_min_insync_replicas: usize,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        Self {
            broker_session_timeout_ms: 1_000,
            producer_id_block_size: 1_000,
            default_partition_count: 1,
            default_replication_factor: 1,
            topic_partition_count_max: 10_000,
            fetch_metadata_records_max: 1_000,
            mirror_state_partitions: 50,
            mirror_state_replication_factor: 3,
            eligible_leader_replicas: true,
            default_min_insync_replicas: 1,
        }
    }
}

impl ControllerConfig {
    /// Checks that every value is usable.
    pub fn validate(&self) -> Result<(), ControllerError> {
        let invalid = |reason: &str| Err(ControllerError::InvalidConfig(reason.to_string()));
        if self.broker_session_timeout_ms <= 0 {
            return invalid("broker_session_timeout_ms must be positive");
        }
        if self.producer_id_block_size <= 0 {
            return invalid("producer_id_block_size must be positive");
        }
        if self.default_partition_count <= 0 {
            return invalid("default_partition_count must be positive");
        }
        if self.default_replication_factor <= 0 {
            return invalid("default_replication_factor must be positive");
        }
        if self.topic_partition_count_max < self.default_partition_count {
            return invalid("topic_partition_count_max must be at least default_partition_count");
        }
        if self.fetch_metadata_records_max == 0 {
            return invalid("fetch_metadata_records_max must be positive");
        }
        if self.mirror_state_partitions <= 0
            || self.mirror_state_partitions > self.topic_partition_count_max
        {
            return invalid("mirror_state_partitions must be in 1..=topic_partition_count_max");
        }
        if self.default_min_insync_replicas == 0 {
            return invalid("default_min_insync_replicas must be positive");
        }
        if self.mirror_state_replication_factor <= 0 {
            return invalid("mirror_state_replication_factor must be positive");
        }
        Ok(())
    }
}

/// An operating error of the controller. After a disk error the controller stops serving (see
/// [`super::Controller::fatal_error`]); it must be rebuilt from its disk, as Kafka's controller
/// process exits on a metadata-log fault and is restarted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControllerError {
    /// Reading, writing or flushing the metadata log failed.
    Disk(DiskError),
    /// A [`ControllerConfig`] value is unusable.
    InvalidConfig(String),
}

impl fmt::Display for ControllerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Disk(error) => write!(f, "controller metadata log: {error}"),
            Self::InvalidConfig(reason) => write!(f, "invalid controller config: {reason}"),
        }
    }
}

impl std::error::Error for ControllerError {}

impl From<DiskError> for ControllerError {
    fn from(error: DiskError) -> Self {
        Self::Disk(error)
    }
}
