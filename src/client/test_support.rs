//! Helpers shared by the producer unit tests (`producer_tests.rs`, `transactional_tests.rs`):
//! the test cluster's brokers and partitions, and the Produce answers a test plays back.
//! Test-only; nothing here holds state.

use crate::protocol::{BrokerId, ClusterIndex, ErrorCode, NodeId, Response, TopicPartition};

/// The one cluster the tests run.
pub(crate) const CLUSTER: ClusterIndex = ClusterIndex(0);

/// Broker `id` of the test cluster.
pub(crate) fn broker(id: i32) -> NodeId {
    NodeId::Broker(CLUSTER, BrokerId(id))
}

/// Partition `partition` of the test topic `orders`.
pub(crate) fn tp(partition: i32) -> TopicPartition {
    TopicPartition::new("orders", partition)
}

/// A successful Produce answer: the batch starts at `base_offset`.
pub(crate) fn produce_ok(base_offset: i64) -> Response {
    Response::Produce {
        error: ErrorCode::None,
        base_offset,
        log_append_time_ms: None,
        log_start_offset: 0,
    }
}

/// A Produce answer refusing the batch with `error`.
pub(crate) fn produce_error(error: ErrorCode) -> Response {
    Response::Produce {
        error,
        base_offset: -1,
        log_append_time_ms: None,
        log_start_offset: 0,
    }
}
