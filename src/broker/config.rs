//! Broker settings. Defaults are Kafka's scaled down so that a simulated minute exercises many
//! timeouts; every field names its unit.

/// A broker's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerConfig {
    /// `broker.heartbeat.interval.ms` (Kafka: 2000).
    pub heartbeat_interval_ms: i64,
    /// How often the broker polls the controller for metadata records (KRaft long-polls).
    pub metadata_fetch_interval_ms: i64,
    /// Metadata records per fetch.
    pub metadata_fetch_max_records: usize,
    /// Timeout of requests to the controller.
    pub controller_request_timeout_ms: i64,
    /// `replica.fetch.wait.max.ms` (Kafka: 500): how long a leader holds an empty fetch.
    pub replica_fetch_wait_max_ms: i64,
    /// `replica.fetch.max.bytes` per partition.
    pub replica_fetch_max_bytes: usize,
    /// `replica.fetch.backoff.ms` after a fetch error.
    pub replica_fetch_backoff_ms: i64,
    /// Timeout of a follower's fetch request (it is re-sent after this).
    pub replica_fetch_timeout_ms: i64,
    /// `replica.lag.time.max.ms` (Kafka: 30000): an ISR member not caught up for this long leaves.
    pub replica_lag_time_max_ms: i64,
    /// `min.insync.replicas` default when the topic does not set it.
    pub default_min_insync_replicas: usize,
    /// How often every log is flushed (fsync) and the high watermarks checkpointed;
    /// `None` leaves durability to replication, as Kafka's default does.
    pub log_flush_interval_ms: Option<i64>,
    /// How often high watermarks are checkpointed
    /// (`replica.high.watermark.checkpoint.interval.ms`, Kafka: 5000).
    pub high_watermark_checkpoint_interval_ms: i64,
    /// `segment.bytes` for new logs.
    pub segment_bytes: usize,
    /// Partitions of `__consumer_offsets` (`offsets.topic.num.partitions`, Kafka: 50).
    pub offsets_topic_partitions: i32,
    /// Partitions of `__transaction_state` (`transaction.state.log.num.partitions`, Kafka: 50).
    pub transaction_state_partitions: i32,
    /// Replication factor of internal topics (`offsets.topic.replication.factor`,
    /// `transaction.state.log.replication.factor`; Kafka: 3). Set it to the cluster size for
    /// clusters of fewer than 3 brokers, as Kafka requires.
    pub internal_topic_replication_factor: i16,
    /// KIP-1279 `mirror.metadata.refresh.interval.ms`: how often the periodic sync (configs,
    /// group offsets, ACLs, topic adoption) runs (Kafka's 60 s scaled down).
    pub mirror_metadata_refresh_interval_ms: i64,
    /// Which KIP-1279 design the mirroring code follows (the seed's by default).
    pub mirror_design: crate::mirror::MirrorDesign,
    /// Deliberate bugs for checker tests only; empty in every real configuration.
    pub broken: Vec<BrokenSwitch>,
}

impl BrokerConfig {
    /// Checks that the broker can work with every value: intervals and timeouts positive (a
    /// zero interval would make a timer fire forever at the same instant), sizes and counts
    /// positive.
    pub fn validate(&self) -> Result<(), BrokerConfigError> {
        let positive_ms = [
            ("heartbeat_interval_ms", self.heartbeat_interval_ms),
            (
                "metadata_fetch_interval_ms",
                self.metadata_fetch_interval_ms,
            ),
            (
                "controller_request_timeout_ms",
                self.controller_request_timeout_ms,
            ),
            ("replica_fetch_timeout_ms", self.replica_fetch_timeout_ms),
            ("replica_lag_time_max_ms", self.replica_lag_time_max_ms),
            (
                "high_watermark_checkpoint_interval_ms",
                self.high_watermark_checkpoint_interval_ms,
            ),
            (
                "mirror_metadata_refresh_interval_ms",
                self.mirror_metadata_refresh_interval_ms,
            ),
            (
                "log_flush_interval_ms",
                self.log_flush_interval_ms.unwrap_or(1),
            ),
        ];
        for (field, value) in positive_ms {
            if value <= 0 {
                return Err(BrokerConfigError::new(field, "must be positive"));
            }
        }
        let non_negative_ms = [
            ("replica_fetch_wait_max_ms", self.replica_fetch_wait_max_ms),
            ("replica_fetch_backoff_ms", self.replica_fetch_backoff_ms),
        ];
        for (field, value) in non_negative_ms {
            if value < 0 {
                return Err(BrokerConfigError::new(field, "must not be negative"));
            }
        }
        let positive_counts = [
            (
                "metadata_fetch_max_records",
                self.metadata_fetch_max_records,
            ),
            ("replica_fetch_max_bytes", self.replica_fetch_max_bytes),
            (
                "default_min_insync_replicas",
                self.default_min_insync_replicas,
            ),
            ("segment_bytes", self.segment_bytes),
        ];
        for (field, value) in positive_counts {
            if value == 0 {
                return Err(BrokerConfigError::new(field, "must be positive"));
            }
        }
        let positive_sizes = [
            (
                "offsets_topic_partitions",
                i64::from(self.offsets_topic_partitions),
            ),
            (
                "transaction_state_partitions",
                i64::from(self.transaction_state_partitions),
            ),
            (
                "internal_topic_replication_factor",
                i64::from(self.internal_topic_replication_factor),
            ),
        ];
        for (field, value) in positive_sizes {
            if value <= 0 {
                return Err(BrokerConfigError::new(field, "must be positive"));
            }
        }
        Ok(())
    }
}

/// A [`BrokerConfig`] value the broker cannot work with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerConfigError {
    /// The field, as [`BrokerConfig`] names it.
    pub field: &'static str,
    /// What is wrong with its value.
    pub reason: &'static str,
}

impl BrokerConfigError {
    fn new(field: &'static str, reason: &'static str) -> Self {
        Self { field, reason }
    }
}

impl std::fmt::Display for BrokerConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid broker config: {} {}", self.field, self.reason)
    }
}

impl std::error::Error for BrokerConfigError {}

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
        ]
        .into_iter()
        .find(|switch| switch.name() == name)
    }
}

impl Default for BrokerConfig {
    fn default() -> Self {
        Self {
            heartbeat_interval_ms: 100,
            metadata_fetch_interval_ms: 20,
            metadata_fetch_max_records: 1000,
            controller_request_timeout_ms: 500,
            replica_fetch_wait_max_ms: 100,
            replica_fetch_max_bytes: 1024 * 1024,
            replica_fetch_backoff_ms: 50,
            replica_fetch_timeout_ms: 1000,
            replica_lag_time_max_ms: 1_000,
            default_min_insync_replicas: 1,
            log_flush_interval_ms: None,
            high_watermark_checkpoint_interval_ms: 500,
            segment_bytes: 64 * 1024,
            offsets_topic_partitions: 4,
            transaction_state_partitions: 4,
            internal_topic_replication_factor: 3,
            mirror_metadata_refresh_interval_ms: 5_000,
            mirror_design: crate::mirror::MirrorDesign::Seed,
            broken: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_config_is_valid_and_each_bad_value_is_named() {
        assert_eq!(BrokerConfig::default().validate(), Ok(()));
        type Break = fn(&mut BrokerConfig);
        let cases: [(Break, &str); 4] = [
            (|c| c.replica_lag_time_max_ms = 0, "replica_lag_time_max_ms"),
            (
                |c| c.log_flush_interval_ms = Some(-5),
                "log_flush_interval_ms",
            ),
            (
                |c| c.replica_fetch_backoff_ms = -1,
                "replica_fetch_backoff_ms",
            ),
            (|c| c.segment_bytes = 0, "segment_bytes"),
        ];
        for (break_it, field) in cases {
            let mut config = BrokerConfig::default();
            break_it(&mut config);
            assert_eq!(config.validate().map_err(|e| e.field), Err(field));
        }
    }
}
