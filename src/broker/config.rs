//! Broker settings. Defaults are Kafka's scaled down so that a simulated minute exercises many
//! timeouts; every field names its unit.

use crate::switches::BrokenSwitch;

/// A broker's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerConfig {
    /// `broker.heartbeat.interval.ms` (Kafka: 2000).
    pub heartbeat_interval_ms: i64,
    /// How long the controller may hold the broker's metadata fetch while it has no new
    /// record (KRaft's fetch of the metadata log is a long poll; Kafka waits up to 500 ms with
    /// a 2000 ms request timeout). Must stay below `controller_request_timeout_ms`.
    pub metadata_fetch_wait_max_ms: i64,
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
    /// The StandardAuthorizer (`authorizer.class.name`) and its settings; `None`: no
    /// authorizer, every request allowed (Kafka's default).
    pub authorizer: Option<crate::metadata::authorizer::AuthorizerConfig>,
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
                "metadata_fetch_wait_max_ms",
                self.metadata_fetch_wait_max_ms,
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
        if self.metadata_fetch_wait_max_ms >= self.controller_request_timeout_ms {
            // The broker would re-send every held fetch before the controller answers it.
            return Err(BrokerConfigError::new(
                "metadata_fetch_wait_max_ms",
                "must be below controller_request_timeout_ms",
            ));
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

impl Default for BrokerConfig {
    fn default() -> Self {
        Self {
            heartbeat_interval_ms: 100,
            metadata_fetch_wait_max_ms: 200,
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
            authorizer: None,
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
