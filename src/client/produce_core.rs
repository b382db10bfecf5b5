//! What the idempotent and the transactional producer share: records waiting for a batch,
//! the batch they are drained into, and how outcomes become events. (Their request plumbing
//! is the [`ClientIo`](super::io::ClientIo) every client shares.)
//!
//! Contract:
//! - Everything here is policy-free: it never decides *when* a batch is drained, sent, retried
//!   or failed. Those rules differ on purpose between the two producers (the transactional one
//!   keeps one batch in flight per partition, the idempotent one up to five, with its own
//!   probing and re-stamping) and stay in `producer.rs` and `transactional.rs`.
//! - [`ProducerBatch`] is a drained batch: its records in send order, the bytes every attempt
//!   sends (re-encoded only by a re-stamp), and whether it is waiting or in flight.
//! - [`RecordEvent`] is how an outcome becomes a producer's own event type: every record gets
//!   exactly one `Acked` (through [`ack_records`]) or `Failed` (through [`fail_records`]).
//! - [`ProducerNode`] is the node loop both run, written once: expire what is overdue, take
//!   the answer, pump; wake at the earliest of the plumbing's and the producer's own times.
//!   What differs (the pump's order, whether an expiry stops at a fatal error, the waits before
//!   InitProducerId or FindCoordinator) is the hooks each producer implements.
//! - Nothing here reads a clock: every time is an input (`now_ms`).

use std::collections::VecDeque;

use bytes::Bytes;

use super::io::{ClientIo, WakeupAfter};
use crate::node::Node;
use crate::protocol::{Envelope, ErrorCode, NodeId, Response, TopicPartition};
use crate::record::{BatchBuilder, CompressionType, RecordBatch};

/// Identifies one `send`; its outcome event carries the same handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SendHandle(pub u64);

/// A producer id with the epoch it is used at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProducerIdAndEpoch {
    /// The producer id.
    pub producer_id: i64,
    /// The producer epoch.
    pub epoch: i16,
}

/// Kafka's DUPLICATE_SEQUENCE_NUMBER (46). Current brokers never send it; old ones meant
/// "already written" by it, so it counts as success without an offset.
pub(super) const DUPLICATE_SEQUENCE_NUMBER: ErrorCode = ErrorCode::Other(46);

/// A record waiting for its batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PendingRecord {
    pub handle: SendHandle,
    /// The `send` time: the record's timestamp and the start of its delivery timeout.
    pub created_ms: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
}

/// Where a drained batch is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BatchState {
    /// Waiting to be (re)sent, not before this time.
    Ready { not_before_ms: i64 },
    /// Sent in the request with this correlation id.
    InFlight { correlation_id: u64 },
}

/// A batch drained from a partition's queue, with the bytes every attempt sends, and `M`: what
/// a producer keeps about it beyond that (the idempotent producer: its stamp and drain index;
/// the transactional producer: nothing).
#[derive(Debug, Clone)]
pub(super) struct ProducerBatch<M = ()> {
    /// Unique within the producer; names the batch in the requests that carry it.
    pub id: u64,
    /// At least one record, in send order.
    pub records: Vec<PendingRecord>,
    pub encoded: RecordBatch,
    pub attempts: u32,
    /// An attempt ended without a definite rejection, so the batch may be in the log.
    pub maybe_written: bool,
    pub state: BatchState,
    /// The producer's own bookkeeping.
    pub meta: M,
}

impl<M> ProducerBatch<M> {
    /// A batch of `records` encoded as `encoded`, ready to be sent at `now_ms`.
    pub fn new(
        id: u64,
        records: Vec<PendingRecord>,
        encoded: RecordBatch,
        meta: M,
        now_ms: i64,
    ) -> Self {
        assert!(!records.is_empty(), "a batch holds at least one record");
        Self {
            id,
            meta,
            records,
            encoded,
            attempts: 0,
            maybe_written: false,
            state: BatchState::Ready {
                not_before_ms: now_ms,
            },
        }
    }

    /// When the batch fails for good: its oldest record's delivery deadline.
    pub fn delivery_deadline_ms(&self, delivery_timeout_ms: i64) -> i64 {
        self.records[0].created_ms + delivery_timeout_ms
    }

    pub fn is_in_flight(&self) -> bool {
        matches!(self.state, BatchState::InFlight { .. })
    }

    /// Not in flight, and its retry backoff has passed.
    pub fn is_due(&self, now_ms: i64) -> bool {
        matches!(self.state, BatchState::Ready { not_before_ms } if not_before_ms <= now_ms)
    }

    /// The times the batch needs a wake-up: its delivery deadline and, while it waits, the end
    /// of its backoff.
    pub fn wakeups(&self, delivery_timeout_ms: i64) -> impl Iterator<Item = i64> {
        let not_before = match self.state {
            BatchState::Ready { not_before_ms } => Some(not_before_ms),
            BatchState::InFlight { .. } => None,
        };
        std::iter::once(self.delivery_deadline_ms(delivery_timeout_ms)).chain(not_before)
    }
}

/// Encodes `records` as one batch stamped `(producer, base_sequence)`; `transactional` sets the
/// batch's transactional flag; `compression` is the producer's `compression.type` (the records
/// region compressed as one stream, the 61-byte header plain, as Kafka's producer writes it).
pub(super) fn encode_batch(
    records: &[PendingRecord],
    producer: ProducerIdAndEpoch,
    base_sequence: i32,
    transactional: bool,
    compression: CompressionType,
) -> RecordBatch {
    let mut builder = BatchBuilder::idempotent(producer.producer_id, producer.epoch, base_sequence);
    builder.transactional = transactional;
    builder.compression = compression;
    for record in records {
        builder.append(
            record.created_ms,
            record.key.clone(),
            record.value.clone(),
            Vec::new(),
        );
    }
    builder.build()
}

/// Removes the queued records whose delivery timeout has passed at `now_ms` (the oldest first;
/// the queue is in send order, so they are at its front).
pub(super) fn take_expired_records(
    queued: &mut VecDeque<PendingRecord>,
    delivery_timeout_ms: i64,
    now_ms: i64,
) -> Vec<PendingRecord> {
    let expired = queued
        .iter()
        .take_while(|record| record.created_ms + delivery_timeout_ms <= now_ms)
        .count();
    queued.drain(..expired).collect()
}

/// When the oldest queued record's delivery timeout passes, if any record is queued.
pub(super) fn queued_wakeup(
    queued: &VecDeque<PendingRecord>,
    delivery_timeout_ms: i64,
) -> Option<i64> {
    queued
        .front()
        .map(|record| record.created_ms + delivery_timeout_ms)
}

/// A producer's event type, seen as the outcome of one record.
pub(super) trait RecordEvent {
    /// Why a record failed.
    type Error: Copy;

    /// The record is in the partition's log at `offset` (−1: a duplicate without an offset).
    fn acked(handle: SendHandle, topic_partition: TopicPartition, offset: i64) -> Self;

    /// The record failed; with `outcome_unknown` it may nevertheless be in the log.
    fn failed(
        handle: SendHandle,
        topic_partition: TopicPartition,
        error: Self::Error,
        outcome_unknown: bool,
    ) -> Self;
}

/// Acknowledges `records` at `base_offset + index`, or all at −1 if `base_offset` is negative.
pub(super) fn ack_records<E: RecordEvent>(
    events: &mut Vec<E>,
    topic_partition: &TopicPartition,
    records: Vec<PendingRecord>,
    base_offset: i64,
) {
    for (delta, record) in records.into_iter().enumerate() {
        let offset = if base_offset < 0 {
            -1
        } else {
            base_offset + delta as i64
        };
        events.push(E::acked(record.handle, topic_partition.clone(), offset));
    }
}

/// Fails every one of `records` with `error`.
pub(super) fn fail_records<E: RecordEvent>(
    events: &mut Vec<E>,
    topic_partition: &TopicPartition,
    records: impl IntoIterator<Item = PendingRecord>,
    error: E::Error,
    outcome_unknown: bool,
) {
    for record in records {
        events.push(E::failed(
            record.handle,
            topic_partition.clone(),
            error,
            outcome_unknown,
        ));
    }
}

/// What a producer lends the node loop both producers share (the [`Node`] implementation
/// below): its plumbing, whether it has stopped on a fatal error, and its own hooks.
pub(super) trait ProducerNode {
    /// What the producer remembers of each request in flight.
    type Pending;
    /// This client's node id.
    fn client_id(&self) -> NodeId;
    /// The request plumbing.
    fn io(&self) -> &ClientIo<Self::Pending>;
    /// The request plumbing, to take answers and the outbox.
    fn io_mut(&mut self) -> &mut ClientIo<Self::Pending>;
    /// The time of the last pump; `None` before the first, when the producer has not started.
    fn last_pump_ms(&self) -> Option<i64>;
    /// Whether a fatal error stopped the producer (it then ignores answers and never wakes).
    fn has_fatal_error(&self) -> bool;
    /// Fails every request whose deadline passed by `now_ms`.
    fn expire_requests(&mut self, now_ms: i64);
    /// `response` answers `request`, sent to `broker`.
    fn handle_response(
        &mut self,
        now_ms: i64,
        request: Self::Pending,
        broker: NodeId,
        response: Response,
    );
    /// Does everything that is due at `now_ms`, in the producer's fixed order.
    fn pump(&mut self, now_ms: i64);
    /// The producer's own wake-ups beyond the plumbing's: its next lookup and every batch's
    /// retry time and delivery deadline.
    fn own_wakeups(&self, wakeups: &mut WakeupAfter);
}

impl<P: ProducerNode> Node for P {
    fn node_id(&self) -> NodeId {
        self.client_id()
    }

    fn handle_message(&mut self, now_ms: i64, envelope: Envelope) {
        // Deadlines that passed first, so an answer after its timeout is ignored.
        if !self.has_fatal_error() {
            self.expire_requests(now_ms);
        }
        let accept = !self.has_fatal_error();
        if let Some((_, entry, response)) = self.io_mut().receive(envelope, accept) {
            self.handle_response(now_ms, entry.request, entry.broker, response);
        }
        self.pump(now_ms);
    }

    fn handle_timeout(&mut self, now_ms: i64) {
        self.pump(now_ms);
    }

    fn poll_timeout(&self) -> Option<i64> {
        let Some(now_ms) = self.last_pump_ms() else {
            return Some(0); // Not started: wake at once (0 is never after a simulated clock).
        };
        if self.has_fatal_error() {
            return None;
        }
        let mut wakeups = WakeupAfter::new(now_ms);
        wakeups.extend(self.io().wakeups());
        self.own_wakeups(&mut wakeups);
        wakeups.earliest()
    }

    fn take_outbox(&mut self) -> Vec<Envelope> {
        self.io_mut().outbox.take()
    }
}
