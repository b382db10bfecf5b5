//! Kafka's idempotent producer (`enable.idempotence=true`, no transactional id) as a sans-IO
//! [`Node`].
//!
//! Contract (kafka-storage.md §6; Java's `Sender`, `RecordAccumulator`, `TransactionManager`):
//! - **Start.** On its first input the producer sends Metadata for the topics it knows and
//!   InitProducerId, both to the current rotation target (a bootstrap broker at first; the
//!   target rotates on failure or timeout). Nothing is produced before a producer id is held.
//! - **Send.** [`IdempotentProducer::send`] queues one record and returns its [`SendHandle`].
//!   A partition's queued records are drained into a batch of at most `batch_records_max`
//!   records when its leader is known, a producer id is held and fewer than
//!   `max_in_flight_per_partition` batches were drained since its oldest unfinished one (so at
//!   most that many are in flight; there is no linger). A batch is
//!   stamped once with `(producer id, epoch, base sequence = the partition's next sequence)`;
//!   sequences advance by the record count and wrap at `i32::MAX`. Retries resend the same
//!   bytes; only an epoch bump re-stamps a batch.
//! - **Ordering.** A batch that must be retried is resent only once it is the partition's
//!   oldest unfinished batch, and no new batch is drained while a retry is pending. This is
//!   Java's "in-flight requests drop to one while retrying" rule, which keeps sequences in order.
//!   The first batch of a partition under a (producer id, epoch) is sent alone, until it is
//!   acknowledged (see the differences below).
//! - **Answers.** Success acknowledges each record at `base_offset + index`. Retriable errors
//!   and request timeouts retry after `retry_backoff_ms`; errors that mean the cached leader is
//!   wrong (and timeouts) also refresh metadata. OUT_OF_ORDER_SEQUENCE_NUMBER follows
//!   `TransactionManager.canRetry`: a batch that is not the next expected one is retried as is;
//!   the next expected one triggers a local epoch bump (KIP-360) and is retried re-stamped.
//!   ProducerFenced is fatal. Any other error fails the batch and bumps the epoch, because the
//!   failed batch leaves a hole in the partition's sequences.
//! - **Epoch bump.** Local, no broker round trip: epoch + 1 (at `i16::MAX` a new producer id is
//!   requested instead). The partitions that asked for it restart at sequence 0: every unfinished
//!   batch is re-stamped with the new epoch and sequences 0, 1, … A partition is re-stamped only
//!   once it is *settled*: no batch in flight, and every batch whose earlier attempt may have
//!   been written was resent unchanged as a probe and came back acknowledged (a duplicate) or
//!   OUT_OF_ORDER (absent). Other partitions keep their sequences until their unfinished
//!   batches drain, then restart at 0 under the new epoch (new batches wait for that).
//! - **A topic created again.** Each produce names the topic id metadata gives (Produce v13),
//!   which a leader of another topic of the name refuses (`UnknownTopicId`). When metadata
//!   gives the topic another id than the partition's batches went out under, none of them is
//!   in the new topic's log: nothing is probed, and the partition's sequences start over under
//!   a new epoch ([`ProducerEvent::TopicCreatedAgain`]), as the new leader knows nothing of
//!   them.
//! - **Delivery timeout.** A record not acknowledged `delivery_timeout_ms` after `send` fails
//!   with [`ProduceError::DeliveryTimeout`]. If it was never sent the outcome is known (not
//!   written); a batch that was sent fails with `outcome_unknown = true`, its request is
//!   abandoned, and the partition becomes "unresolved": no new batches drain until its other
//!   batches finish, and then, unless the later batches were acknowledged (proving the expired
//!   one was written), the epoch is bumped.
//! - **Outputs.** Requests through [`Node::take_outbox`]; outcomes through
//!   [`IdempotentProducer::take_events`]. Every `send` gets exactly one `Acked` or `Failed`.
//!
//! Differences from the Java client, on purpose:
//! - `max_in_flight_per_partition` limits batches per partition (Java limits requests per
//!   connection, each carrying many partitions); one Produce request carries one batch; there
//!   is no linger and no byte-size batching.
//! - Three rules close duplicate windows that the model test (`producer_tests.rs`) found and
//!   that the Java client has too, once single messages can be lost (the simulator drops
//!   messages one by one; TCP would reset the connection and lose everything after):
//!   1. The first batch under a (producer id, epoch) goes alone. A leader with no state for a
//!      producer accepts *any* sequence (kafka-storage.md §3.3), so a later batch could be
//!      written ahead of a lost first one, and the epoch bump that follows would write it again.
//!   2. A re-stamp waits until the partition is settled (above). Java re-stamps in-flight
//!      batches at once and judges their late answers as "sequence reset"; that path is kept for
//!      answers to a stamp that is no longer current, but it cannot arise any more.
//!   3. New batches count against the window from the oldest *unfinished* batch, not just those
//!      in flight: when its answer is lost but later ones arrive, a retry must still find it
//!      among the leader's five remembered batches (a duplicate) instead of OUT_OF_ORDER.
//! - The links are assumed to keep each direction in order (as TCP does); the rule "an
//!   OUT_OF_ORDER answer means no earlier attempt of this batch was written" depends on it.
//!   Over links that reorder, a duplicated request can be refused and then written by its
//!   second copy, and the re-stamp writes it again (the model test therefore keeps each
//!   direction of a link in order).

mod answers;
mod sequences;

use crate::protocol::{
    Acks, BrokerId, ClusterResponse, CoordinatorRequest, CoordinatorResponse, ErrorCode, NodeId,
    ProducerEpoch, ProducerId, ReplicaRequest, ReplicaResponse, Request, Response, TopicId,
    TopicMetadata, TopicPartition,
};
use sequences::next_action;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use bytes::Bytes;

use super::error::{require_positive_ms, ClientConfigError};
use super::io::{invalidates_metadata, ClientIo, WakeupAfter};
use super::produce_core::{
    ack_records, encode_batch, fail_records, queued_wakeup, take_expired_records, BatchState,
    PendingRecord, ProducerBatch, ProducerIdAndEpoch, ProducerNode, RecordEvent, SendHandle,
    DUPLICATE_SEQUENCE_NUMBER,
};
use crate::log::NUM_BATCHES_TO_RETAIN;
use crate::record::{in_sequence, increment_sequence, CompressionType, RecordBatch};

/// The largest `max_in_flight_per_partition`: the broker deduplicates only a producer's last
/// five batches per partition, so more in flight could turn a retry into a duplicate.
pub const MAX_IN_FLIGHT_PER_PARTITION_LIMIT: usize = 5;
const _: () = assert!(MAX_IN_FLIGHT_PER_PARTITION_LIMIT == NUM_BATCHES_TO_RETAIN);

/// Kafka's UNKNOWN_PRODUCER_ID (59), raised only by brokers before 2.5.
const UNKNOWN_PRODUCER_ID: ErrorCode = ErrorCode::Other(59);

/// Producer settings (Kafka producer configs of similar names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerConfig {
    /// `acks`. Default [`Acks::All`], which idempotence needs for its guarantees.
    pub acks: Acks,
    /// `request.timeout.ms`: the client gives up on a request after this long; also the Produce
    /// request's `timeout_ms`. Default 30 000.
    pub request_timeout_ms: i64,
    /// `retry.backoff.ms`: wait before a retry and between metadata refreshes. Default 100.
    pub retry_backoff_ms: i64,
    /// `delivery.timeout.ms`: a record not acknowledged this long after `send` fails. Must be at
    /// least `request_timeout_ms`. Default 120 000.
    pub delivery_timeout_ms: i64,
    /// Batches of one partition in flight at once, 1..=5. Default 5.
    pub max_in_flight_per_partition: usize,
    /// `metadata.max.age.ms`: refresh metadata at least this often. Default 300 000.
    pub metadata_max_age_ms: i64,
    /// Records per batch at most (stands in for `batch.size`). Default 100.
    pub batch_records_max: usize,
    /// `compression.type`: how each batch's records are compressed. Default none.
    pub compression: CompressionType,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        Self {
            acks: Acks::All,
            request_timeout_ms: 30_000,
            retry_backoff_ms: 100,
            delivery_timeout_ms: 120_000,
            max_in_flight_per_partition: MAX_IN_FLIGHT_PER_PARTITION_LIMIT,
            metadata_max_age_ms: 300_000,
            batch_records_max: 100,
            compression: CompressionType::None,
        }
    }
}

impl ProducerConfig {
    /// Checks every field's range.
    pub fn validate(&self) -> Result<(), ClientConfigError> {
        require_positive_ms("request_timeout_ms", self.request_timeout_ms)?;
        require_positive_ms("retry_backoff_ms", self.retry_backoff_ms)?;
        require_positive_ms("delivery_timeout_ms", self.delivery_timeout_ms)?;
        require_positive_ms("metadata_max_age_ms", self.metadata_max_age_ms)?;
        if self.delivery_timeout_ms < self.request_timeout_ms {
            // Kafka refuses this too: a batch would expire before its first request could time out.
            return Err(ClientConfigError::field(
                "delivery_timeout_ms",
                "must be at least request_timeout_ms",
            ));
        }
        if !(1..=MAX_IN_FLIGHT_PER_PARTITION_LIMIT).contains(&self.max_in_flight_per_partition) {
            return Err(ClientConfigError::field(
                "max_in_flight_per_partition",
                format!("must be in 1..={MAX_IN_FLIGHT_PER_PARTITION_LIMIT}"),
            ));
        }
        if self.batch_records_max == 0 || self.batch_records_max > i32::MAX as usize {
            return Err(ClientConfigError::field(
                "batch_records_max",
                "must be in 1..=i32::MAX",
            ));
        }
        Ok(())
    }
}

/// Why a record failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProduceError {
    /// The partition leader rejected the batch with this error, which is not retried.
    Rejected(ErrorCode),
    /// `delivery_timeout_ms` passed before the record was acknowledged.
    DeliveryTimeout,
    /// The producer hit this fatal error (e.g. ProducerFenced) and fails every record since.
    ProducerFailed(ErrorCode),
}

/// Why a batch is sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryReason {
    /// The leader answered with this (retriable) error.
    Broker(ErrorCode),
    /// No answer within `request_timeout_ms`.
    RequestTimeout,
}

/// What the producer reports; see [`IdempotentProducer::take_events`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProducerEvent {
    /// The record is in the partition's log at `offset` (−1 if the broker confirmed a
    /// duplicate without an offset, which only pre-2.x brokers do).
    Acked {
        /// The record's send.
        handle: SendHandle,
        /// Its partition.
        topic_partition: TopicPartition,
        /// Its offset.
        offset: i64,
    },
    /// The record failed. With `outcome_unknown` it may nevertheless be in the log.
    Failed {
        /// The record's send.
        handle: SendHandle,
        /// Its partition.
        topic_partition: TopicPartition,
        /// Why.
        error: ProduceError,
        /// Whether a request carrying the record may have been written.
        outcome_unknown: bool,
    },
    /// A producer id was assigned by InitProducerId.
    ProducerIdAssigned {
        /// The id and its epoch.
        producer: ProducerIdAndEpoch,
    },
    /// Metadata gave the partition's topic another id than the one its batches were sent
    /// under (deleted and created again): its sequences start over under a new epoch.
    TopicCreatedAgain {
        /// The partition.
        topic_partition: TopicPartition,
    },
    /// The epoch was bumped locally (KIP-360) and these partitions restarted at sequence 0.
    EpochBumped {
        /// The producer id.
        producer_id: i64,
        /// The epoch before.
        previous_epoch: i16,
        /// The epoch now.
        epoch: i16,
        /// Partitions whose unfinished batches were re-stamped.
        topic_partitions: Vec<TopicPartition>,
    },
    /// A Metadata answer was applied.
    MetadataRefreshed {
        /// The broker that answered.
        broker: NodeId,
        /// Partitions whose cached leader changed.
        leaders_changed: Vec<TopicPartition>,
    },
    /// A batch will be sent again (with the same bytes unless an epoch bump re-stamps it).
    Retried {
        /// The partition.
        topic_partition: TopicPartition,
        /// The batch's base sequence in the attempt that failed.
        base_sequence: i32,
        /// Attempts so far, the failed one included.
        attempts: u32,
        /// Why.
        reason: RetryReason,
    },
}

/// The identity fields a batch is stamped with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    producer: ProducerIdAndEpoch,
    base_sequence: i32,
}

/// What the idempotent producer keeps about a drained batch: it owns sequence numbers until it
/// finishes.
#[derive(Debug, Clone)]
struct Sequencing {
    /// Position among the partition's drained batches (0 for the first ever).
    drain_index: u64,
    stamp: Stamp,
    /// The producer's `compression.type`, kept to encode the batch again after a restamp.
    compression: CompressionType,
}

/// A drained batch of the idempotent producer.
type SequencedBatch = ProducerBatch<Sequencing>;

impl SequencedBatch {
    /// Batch `id`, the partition's `drain_index`-th, of `records` stamped `stamp`.
    fn stamped(
        id: u64,
        drain_index: u64,
        records: Vec<PendingRecord>,
        (stamp, compression): (Stamp, CompressionType),
        now_ms: i64,
    ) -> Self {
        let encoded = encode(&records, stamp, compression);
        let sequencing = Sequencing {
            drain_index,
            stamp,
            compression,
        };
        Self::new(id, records, encoded, sequencing, now_ms)
    }

    fn stamp(&self) -> Stamp {
        self.meta.stamp
    }

    fn record_count(&self) -> i32 {
        self.records.len() as i32
    }

    fn last_sequence(&self) -> i32 {
        increment_sequence(self.stamp().base_sequence, self.record_count() - 1)
    }

    /// Gives the batch a new identity after an epoch bump; the records stay as they are.
    fn restamp(&mut self, stamp: Stamp) {
        self.meta.stamp = stamp;
        self.encoded = encode(&self.records, stamp, self.meta.compression);
    }
}

/// The bytes of `records` stamped `stamp` (not transactional), compressed with `compression`.
fn encode(records: &[PendingRecord], stamp: Stamp, compression: CompressionType) -> RecordBatch {
    encode_batch(
        records,
        stamp.producer,
        stamp.base_sequence,
        false,
        compression,
    )
}

/// Whether `candidate` comes after `current` in wrapping sequence order (−1 = nothing yet).
fn sequence_is_after(candidate: i32, current: i32) -> bool {
    if current < 0 {
        return true;
    }
    let modulus = i64::from(i32::MAX) + 1;
    let distance = (i64::from(candidate) - i64::from(current)).rem_euclid(modulus);
    distance > 0 && distance < modulus / 2
}

/// One partition's queue, batches and sequence bookkeeping (Java's `TxnPartitionEntry`).
#[derive(Debug, Clone)]
struct PartitionState {
    /// Records not yet in a batch, in send order.
    queued: VecDeque<PendingRecord>,
    /// Drained, unfinished batches in sequence order.
    batches: VecDeque<SequencedBatch>,
    /// The producer id and epoch the partition's sequences belong to.
    sequence_owner: Option<ProducerIdAndEpoch>,
    /// Base sequence of the next drained batch.
    next_sequence: i32,
    /// Last sequence of the newest acknowledged batch, −1 if none.
    last_acked_sequence: i32,
    /// Set when a sent batch expired: the sequence after it. New batches wait until resolved.
    unresolved_next_sequence: Option<i32>,
    /// Batches drained so far (the next batch's `drain_index`).
    drained_batches: u64,
    /// The topic id the partition's batches were last sent under (`None` before the first
    /// send, or while metadata gave none).
    topic_id: Option<TopicId>,
}

impl PartitionState {
    fn new() -> Self {
        Self {
            queued: VecDeque::new(),
            batches: VecDeque::new(),
            sequence_owner: None,
            next_sequence: 0,
            last_acked_sequence: -1,
            unresolved_next_sequence: None,
            drained_batches: 0,
            topic_id: None,
        }
    }

    fn in_flight_count(&self) -> usize {
        self.batches.iter().filter(|b| b.is_in_flight()).count()
    }

    fn batch_index(&self, batch_id: u64) -> Option<usize> {
        self.batches.iter().position(|batch| batch.id == batch_id)
    }

    fn has_work(&self) -> bool {
        !self.queued.is_empty() || !self.batches.is_empty()
    }

    /// Restarts the partition's sequences at 0 under `owner`, re-stamping unfinished batches.
    fn restart_sequences(&mut self, owner: ProducerIdAndEpoch) {
        self.sequence_owner = Some(owner);
        self.last_acked_sequence = -1;
        self.unresolved_next_sequence = None;
        let mut sequence = 0;
        for batch in &mut self.batches {
            batch.restamp(Stamp {
                producer: owner,
                base_sequence: sequence,
            });
            sequence = increment_sequence(sequence, batch.record_count());
        }
        self.next_sequence = sequence;
    }

    /// Whether some unfinished batch may be in the log under its current stamp: it is in
    /// flight, or an earlier attempt ended without a definite answer. Re-stamping such a batch
    /// could write it twice (the broker accepts any sequence from a producer it has no state
    /// for), so an epoch bump waits until no such batch is left.
    fn has_unsettled_batches(&self) -> bool {
        self.batches
            .iter()
            .any(|batch| batch.is_in_flight() || batch.maybe_written)
    }

    /// Sequences line up when everything drained so far is acknowledged.
    fn sequences_line_up(&self) -> bool {
        in_sequence(self.last_acked_sequence, self.next_sequence)
    }
}

/// What a partition can do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PartitionAction {
    /// Resend this unfinished batch unchanged.
    Resend(usize),
    /// Drain a new batch from the queue.
    DrainNew,
    /// Nothing until an answer, a timer or a state change.
    Wait,
}

/// What the producer remembers about a request in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum PendingRequest {
    Metadata,
    InitProducerId,
    Produce {
        topic_partition: TopicPartition,
        batch_id: u64,
        stamp: Stamp,
    },
}

/// An idempotent producer; see the module doc.
#[derive(Debug, Clone)]
pub struct IdempotentProducer {
    node_id: NodeId,
    config: ProducerConfig,
    io: ClientIo<PendingRequest>,
    /// The time of the last input; `None` before the first one.
    now_ms: Option<i64>,
    producer: Option<ProducerIdAndEpoch>,
    init_in_flight: bool,
    init_not_before_ms: i64,
    /// Partitions that asked for an epoch bump (KIP-360) not yet carried out.
    partitions_to_rewrite: BTreeSet<TopicPartition>,
    partitions: BTreeMap<TopicPartition, PartitionState>,
    fatal_error: Option<ErrorCode>,
    next_handle: u64,
    next_batch_id: u64,
    events: Vec<ProducerEvent>,
}

impl IdempotentProducer {
    /// A producer that bootstraps from `bootstrap` (brokers of one cluster).
    pub fn new(
        node_id: NodeId,
        bootstrap: Vec<NodeId>,
        config: ProducerConfig,
    ) -> Result<Self, ClientConfigError> {
        config.validate()?;
        let io = ClientIo::new(
            node_id,
            &bootstrap,
            config.metadata_max_age_ms,
            config.retry_backoff_ms,
            config.request_timeout_ms,
        )?;
        Ok(Self {
            node_id,
            config,
            io,
            now_ms: None,
            producer: None,
            init_in_flight: false,
            init_not_before_ms: i64::MIN,
            partitions_to_rewrite: BTreeSet::new(),
            partitions: BTreeMap::new(),
            fatal_error: None,
            next_handle: 0,
            next_batch_id: 0,
            events: Vec::new(),
        })
    }

    // ----- application API -----

    /// Queues one record for `topic`/`partition`; its outcome arrives later as an event with
    /// the returned handle. Take the outbox afterwards: the record may have been sent at once.
    pub fn send(
        &mut self,
        now_ms: i64,
        topic: &str,
        partition: i32,
        key: Option<Bytes>,
        value: Option<Bytes>,
    ) -> SendHandle {
        let handle = SendHandle(self.next_handle);
        self.next_handle += 1;
        let topic_partition = TopicPartition::new(topic, partition);
        if let Some(error) = self.fatal_error {
            self.events.push(ProducerEvent::Failed {
                handle,
                topic_partition,
                error: ProduceError::ProducerFailed(error),
                outcome_unknown: false,
            });
            return handle;
        }
        self.io.metadata.add_topic(topic);
        self.partitions
            .entry(topic_partition)
            .or_insert_with(PartitionState::new)
            .queued
            .push_back(PendingRecord {
                handle,
                created_ms: now_ms,
                key,
                value,
            });
        self.pump(now_ms);
        handle
    }

    /// Outcomes and informational events since the last call, in the order they happened.
    pub fn take_events(&mut self) -> Vec<ProducerEvent> {
        std::mem::take(&mut self.events)
    }

    // ----- getters for checkers -----

    /// The producer id and epoch in use, if one is held.
    pub fn producer_id_and_epoch(&self) -> Option<ProducerIdAndEpoch> {
        self.producer
    }

    /// How many partitions `topic` has as this producer's metadata knows it (0 before an answer
    /// named it): a topic grown by CreatePartitions shows here at the next metadata refresh, as
    /// a Kafka producer's partitioner sees it.
    pub fn known_partitions(&self, topic: &str) -> i32 {
        self.io.metadata.partition_count(topic)
    }

    /// The configuration.
    pub fn config(&self) -> &ProducerConfig {
        &self.config
    }

    /// Batches of `topic_partition` in flight now.
    pub fn in_flight_batches(&self, topic_partition: &TopicPartition) -> usize {
        self.partitions
            .get(topic_partition)
            .map_or(0, PartitionState::in_flight_count)
    }

    /// Requests of any kind in flight now.
    pub fn in_flight_requests(&self) -> usize {
        self.io.in_flight.len()
    }

    /// Drained batches of `topic_partition` not yet acknowledged or failed.
    pub fn unfinished_batches(&self, topic_partition: &TopicPartition) -> usize {
        self.partitions
            .get(topic_partition)
            .map_or(0, |partition| partition.batches.len())
    }

    /// Records of `topic_partition` not yet drained into a batch.
    pub fn queued_records(&self, topic_partition: &TopicPartition) -> usize {
        self.partitions
            .get(topic_partition)
            .map_or(0, |partition| partition.queued.len())
    }

    /// Base sequence the next batch of `topic_partition` will get.
    pub fn next_sequence(&self, topic_partition: &TopicPartition) -> i32 {
        self.partitions
            .get(topic_partition)
            .map_or(0, |partition| partition.next_sequence)
    }

    /// Last acknowledged sequence of `topic_partition`, −1 if none under the current epoch.
    pub fn last_acked_sequence(&self, topic_partition: &TopicPartition) -> i32 {
        self.partitions
            .get(topic_partition)
            .map_or(-1, |partition| partition.last_acked_sequence)
    }

    /// The fatal error the producer stopped on, if any.
    pub fn fatal_error(&self) -> Option<ErrorCode> {
        self.fatal_error
    }

    /// Responses ignored because their request had timed out or was abandoned.
    pub fn ignored_responses(&self) -> u64 {
        self.io.ignored_responses
    }

    // ----- the step function -----

    /// A request got no usable answer (timeout, or an answer of the wrong kind).
    fn fail_request(&mut self, now_ms: i64, broker: NodeId, request: PendingRequest) {
        match request {
            PendingRequest::Metadata => self.io.metadata.on_failed(now_ms, broker),
            PendingRequest::InitProducerId => self.init_failed(now_ms, broker),
            PendingRequest::Produce {
                topic_partition,
                batch_id,
                stamp,
            } => {
                // A timed-out produce may still be written: keep the sequence, retry the bytes.
                self.io.metadata.request_update();
                self.retry_batch(
                    now_ms,
                    &topic_partition,
                    batch_id,
                    stamp,
                    RetryReason::RequestTimeout,
                );
            }
        }
    }

    fn expire_deliveries(&mut self, now_ms: i64) {
        let delivery_timeout_ms = self.config.delivery_timeout_ms;
        for (topic_partition, partition) in &mut self.partitions {
            let expired = take_expired_records(&mut partition.queued, delivery_timeout_ms, now_ms);
            // Never sent, so certainly not written.
            let error = ProduceError::DeliveryTimeout;
            fail_records(&mut self.events, topic_partition, expired, error, false);
            while partition
                .batches
                .front()
                .is_some_and(|batch| batch.delivery_deadline_ms(delivery_timeout_ms) <= now_ms)
            {
                let batch = partition.batches.pop_front().expect("checked above");
                if let BatchState::InFlight { correlation_id } = batch.state {
                    // Abandon the request: an answer that still arrives is ignored.
                    self.io.in_flight.take(correlation_id);
                }
                let after = increment_sequence(batch.last_sequence(), 1);
                partition.unresolved_next_sequence = Some(after);
                fail_records(
                    &mut self.events,
                    topic_partition,
                    batch.records,
                    ProduceError::DeliveryTimeout,
                    true,
                );
            }
        }
    }

    fn maybe_send_init_producer_id(&mut self, now_ms: i64) {
        if self.producer.is_some() || self.init_in_flight || now_ms < self.init_not_before_ms {
            return;
        }
        let broker = self.io.metadata.target();
        let request = Request::Coordinator(CoordinatorRequest::InitProducerId {
            transactional_id: None,
            transaction_timeout_ms: -1,
            producer_id: ProducerId::NONE,
            producer_epoch: ProducerEpoch::NONE,
        });
        self.io
            .send_request(now_ms, broker, request, PendingRequest::InitProducerId);
        self.init_in_flight = true;
    }

    fn send_produce_requests(&mut self, now_ms: i64) {
        let Some(producer) = self.producer else {
            return; // Nothing is produced without a producer id.
        };
        let topic_partitions: Vec<TopicPartition> = self.partitions.keys().cloned().collect();
        for topic_partition in topic_partitions {
            self.send_partition(now_ms, &topic_partition, producer);
        }
    }

    fn send_partition(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        producer: ProducerIdAndEpoch,
    ) {
        let has_work = self.partitions[topic_partition].has_work();
        let Some((leader, _)) = self.io.metadata.leader(topic_partition) else {
            if has_work {
                self.io.metadata.request_update();
            }
            return;
        };
        let rewrite_pending = self.partitions_to_rewrite.contains(topic_partition);
        // Bounded: each pass sends one batch, and at most `max_in_flight` can be in flight.
        for _ in 0..self.config.max_in_flight_per_partition {
            let partition = self.partitions.get_mut(topic_partition).expect("listed");
            if partition.in_flight_count() >= self.config.max_in_flight_per_partition {
                return;
            }
            let max_in_flight = self.config.max_in_flight_per_partition;
            let index =
                match next_action(partition, producer, now_ms, rewrite_pending, max_in_flight) {
                    PartitionAction::Wait => return,
                    PartitionAction::Resend(index) => index,
                    PartitionAction::DrainNew => {
                        self.drain_batch(now_ms, topic_partition, producer);
                        self.partitions[topic_partition].batches.len() - 1
                    }
                };
            self.send_batch(now_ms, topic_partition, index, leader);
        }
    }

    /// Moves up to `batch_records_max` queued records into a new batch stamped with the
    /// partition's next sequence.
    fn drain_batch(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        producer: ProducerIdAndEpoch,
    ) {
        let partition = self.partitions.get_mut(topic_partition).expect("listed");
        assert_eq!(partition.sequence_owner, Some(producer));
        assert!(partition.unresolved_next_sequence.is_none());
        let count = partition.queued.len().min(self.config.batch_records_max);
        assert!(count > 0, "drain with an empty queue");
        let records: Vec<PendingRecord> = partition.queued.drain(..count).collect();
        let stamp = Stamp {
            producer,
            base_sequence: partition.next_sequence,
        };
        partition.next_sequence = increment_sequence(partition.next_sequence, count as i32);
        let batch = SequencedBatch::stamped(
            self.next_batch_id,
            partition.drained_batches,
            records,
            (stamp, self.config.compression),
            now_ms,
        );
        self.next_batch_id += 1;
        partition.drained_batches += 1;
        partition.batches.push_back(batch);
    }

    /// Sends batch `index` of the partition (the one `next_action` chose) to `leader`.
    fn send_batch(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        index: usize,
        leader: NodeId,
    ) {
        let batch = &self.partitions[topic_partition].batches[index];
        assert!(!batch.is_in_flight(), "a batch is in at most one request");
        let topic_id = self.io.metadata.topic_id(&topic_partition.topic);
        let request = Request::Replica(ReplicaRequest::Produce {
            acks: self.config.acks,
            timeout_ms: self.config.request_timeout_ms,
            topic_partition: topic_partition.clone(),
            batch: batch.encoded.clone(),
            transactional_id: None,
            topic_id,
        });
        let pending = PendingRequest::Produce {
            topic_partition: topic_partition.clone(),
            batch_id: batch.id,
            stamp: batch.stamp(),
        };
        let correlation_id = self.io.send_request(now_ms, leader, request, pending);
        let partition = self.partitions.get_mut(topic_partition).expect("listed");
        partition.batches[index].state = BatchState::InFlight { correlation_id };
        partition.topic_id = topic_id.or(partition.topic_id);
    }

    // ----- answers -----

    #[cfg(test)]
    pub(crate) fn set_next_sequence_for_test(
        &mut self,
        topic_partition: &TopicPartition,
        sequence: i32,
    ) {
        let partition = self
            .partitions
            .get_mut(topic_partition)
            .expect("known partition");
        assert!(partition.batches.is_empty(), "only between batches");
        partition.next_sequence = sequence;
        partition.last_acked_sequence = crate::record::decrement_sequence(sequence, 1);
    }
}

impl RecordEvent for ProducerEvent {
    type Error = ProduceError;

    fn acked(handle: SendHandle, topic_partition: TopicPartition, offset: i64) -> Self {
        Self::Acked {
            handle,
            topic_partition,
            offset,
        }
    }

    fn failed(
        handle: SendHandle,
        topic_partition: TopicPartition,
        error: ProduceError,
        outcome_unknown: bool,
    ) -> Self {
        Self::Failed {
            handle,
            topic_partition,
            error,
            outcome_unknown,
        }
    }
}

impl ProducerNode for IdempotentProducer {
    type Pending = PendingRequest;

    fn client_id(&self) -> NodeId {
        self.node_id
    }

    fn io(&self) -> &ClientIo<PendingRequest> {
        &self.io
    }

    fn io_mut(&mut self) -> &mut ClientIo<PendingRequest> {
        &mut self.io
    }

    fn last_pump_ms(&self) -> Option<i64> {
        self.now_ms
    }

    fn has_fatal_error(&self) -> bool {
        self.fatal_error.is_some()
    }

    /// Does everything that is due at `now_ms`, in a fixed order.
    fn pump(&mut self, now_ms: i64) {
        self.now_ms = Some(now_ms);
        if self.fatal_error.is_some() {
            return;
        }
        self.expire_requests(now_ms);
        self.expire_deliveries(now_ms);
        self.resolve_sequences();
        self.maybe_bump_epoch();
        self.io
            .maybe_send_metadata(now_ms, PendingRequest::Metadata);
        self.maybe_send_init_producer_id(now_ms);
        self.send_produce_requests(now_ms);
    }

    fn expire_requests(&mut self, now_ms: i64) {
        for (_, entry) in self.io.in_flight.take_expired(now_ms) {
            self.fail_request(now_ms, entry.broker, entry.request);
        }
    }

    fn handle_response(
        &mut self,
        now_ms: i64,
        request: PendingRequest,
        broker: NodeId,
        response: Response,
    ) {
        match (request, response) {
            (
                PendingRequest::Metadata,
                Response::Cluster(ClusterResponse::Metadata { brokers, topics }),
            ) => {
                self.handle_metadata(now_ms, broker, &brokers, &topics);
            }
            (
                PendingRequest::InitProducerId,
                Response::Coordinator(CoordinatorResponse::InitProducerId {
                    error,
                    producer_id,
                    producer_epoch,
                }),
            ) => {
                self.handle_init_producer_id(now_ms, broker, error, producer_id.0, producer_epoch.0)
            }
            (
                PendingRequest::Produce {
                    topic_partition,
                    batch_id,
                    stamp,
                },
                Response::Replica(ReplicaResponse::Produce {
                    error, base_offset, ..
                }),
            ) => self.handle_produce(
                now_ms,
                &topic_partition,
                batch_id,
                stamp,
                error,
                base_offset.0,
            ),
            (request, _) => {
                // An answer of the wrong kind is a broker-model bug; treat it as no answer.
                self.io.ignored_responses += 1;
                self.fail_request(now_ms, broker, request);
            }
        }
    }

    fn own_wakeups(&self, wakeups: &mut WakeupAfter) {
        if self.producer.is_none() && !self.init_in_flight {
            wakeups.push(self.init_not_before_ms);
        }
        for partition in self.partitions.values() {
            wakeups.extend(queued_wakeup(
                &partition.queued,
                self.config.delivery_timeout_ms,
            ));
            for batch in &partition.batches {
                wakeups.extend(batch.wakeups(self.config.delivery_timeout_ms));
            }
        }
    }
}

#[cfg(test)]
#[path = "producer_tests.rs"]
mod tests;
