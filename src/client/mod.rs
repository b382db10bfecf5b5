//! The simulated Kafka clients and the client-side rules they share.
//!
//! | item | contract |
//! |---|---|
//! | [`IdempotentProducer`] | Kafka's idempotent producer (`enable.idempotence=true`) as a sans-IO [`Node`](crate::node::Node): InitProducerId, per-partition sequences, retries that keep their sequence and bytes, KIP-360 epoch bumps, delivery timeouts with unknown outcome. |
//! | [`Consumer`] | A consumer with a fixed assignment as a sans-IO [`Node`](crate::node::Node): leader discovery by Metadata, start and reset by ListOffsets, a Fetch loop that hands out records through [`completed_fetch`]. |
//! | [`completed_fetch`] | How a consumer turns a fetch response into records (the Java client's `CompletedFetch`). |
//!
//! Both clients follow the same rules: every input carries `now_ms` (no clocks), nothing is
//! random (the broker a bootstrap request goes to rotates in a fixed order), every map is a
//! `BTreeMap`, and a client keeps its own table of requests in flight by correlation id, so a
//! response that arrives after its request timed out is ignored.

mod consumer;
mod error;
mod fetch;
mod group_consumer;
mod in_flight;
mod io;
mod produce_core;
mod producer;
#[cfg(test)]
mod test_support;
mod transactional;

pub use consumer::{AutoOffsetReset, Consumer, ConsumerConfig, ConsumerEvent, FetchError};
pub use error::ClientConfigError;
pub use fetch::{completed_fetch, CompletedFetch, ConsumerRecord, IsolationLevel};
pub use group_consumer::{
    GroupConsumer, GroupConsumerConfig, GroupConsumerEvent, GROUP_CORRELATION_ID_BASE,
};
pub use produce_core::{ProducerIdAndEpoch, SendHandle};
pub use producer::{
    IdempotentProducer, ProduceError, ProducerConfig, ProducerEvent, RetryReason,
    MAX_IN_FLIGHT_PER_PARTITION_LIMIT,
};
pub use transactional::{
    TransactionApiError, TransactionPhase, TransactionalEvent, TransactionalProducer,
    TransactionalProducerConfig, TransactionalSendError,
};
