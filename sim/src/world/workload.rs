//! Workloads that check themselves, and the history they record.
//!
//! Every produced value describes itself: `producer/incarnation/topic-partition/n/digest`, where
//! `n` counts the records that producer incarnation sent to that partition and `digest` is a
//! hash of the previous value it sent there. A checker can therefore find lost, duplicated and
//! reordered records from the data alone (FoundationDB's Cycle idea), without trusting any
//! component's bookkeeping. The [`History`] records every send, acknowledgement, failure and
//! consumed record, and the outcome of every admin operation; it lives outside the nodes so it
//! survives their crashes.

use std::collections::BTreeMap;

use bytes::Bytes;
use mirrorsim::client::{
    Consumer, ConsumerEvent, GroupConsumer, GroupConsumerEvent, IdempotentProducer, ProducerEvent,
    SendHandle, TransactionPhase, TransactionalEvent, TransactionalProducer,
};
use mirrorsim::node::Node;
use mirrorsim::protocol::{Envelope, NodeId, TopicPartition};

/// A parsed self-describing value.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RecordId {
    /// The producer node.
    pub producer: String,
    /// Its incarnation.
    pub incarnation: u64,
    /// The partition it was sent to.
    pub topic_partition: String,
    /// Its position in that producer's stream to that partition.
    pub n: u64,
}

/// Formats a self-describing value.
pub fn format_value(
    producer: NodeId,
    incarnation: u64,
    topic_partition: &TopicPartition,
    n: u64,
    previous_digest: u64,
) -> String {
    format!("{producer}/{incarnation}/{topic_partition}/{n}/{previous_digest:016x}")
}

/// The `transactional.id` of the simulated transactional producer `producer` (the node's
/// name with `-txn`): how the checkers find a producer's transaction coordinator from a
/// record it wrote (see [`RecordId::producer`]).
pub fn transactional_id(producer: impl std::fmt::Display) -> String {
    format!("{producer}-txn")
}

/// Parses a self-describing value; `None` for anything else.
pub fn parse_value(value: &[u8]) -> Option<RecordId> {
    let text = std::str::from_utf8(value).ok()?;
    let mut parts = text.split('/');
    let producer = parts.next()?.to_string();
    let incarnation = parts.next()?.parse().ok()?;
    let topic_partition = parts.next()?.to_string();
    let n = parts.next()?.parse().ok()?;
    let _digest = parts.next()?;
    if parts.next().is_some() {
        return None;
    }
    Some(RecordId {
        producer,
        incarnation,
        topic_partition,
        n,
    })
}

/// FNV-1a over bytes: the chain digest of values, and the trace hash's mixer.
pub fn fnv1a(state: u64, bytes: &[u8]) -> u64 {
    let mut hash = state;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// FNV-1a offset basis.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// One send as the workload recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendRecord {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// The value sent.
    pub value: String,
    /// When it was sent, on the simulation's clock (ms since the run started, the checkers'
    /// clock; not the producer's possibly skewed local clock).
    pub sent_ms: i64,
    /// Offset once acknowledged.
    pub acked_offset: Option<i64>,
    /// Failed; `Some(true)` when the outcome is unknown (it may be in the log).
    pub failed: Option<bool>,
    /// The transaction (number) the record was sent in, for transactional producers.
    pub transaction: Option<u64>,
}

/// One transaction as a transactional workload ran it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TransactionRecord {
    /// Handles of its sends.
    pub handles: Vec<u64>,
    /// Whether the workload asked to commit (else abort).
    pub intended_commit: bool,
    /// The coordinator's confirmed outcome; `None` while unknown (or forever after a fatal
    /// producer error).
    pub committed: Option<bool>,
    /// When the producer learned `committed` (the checkers' clock); `None` while unknown.
    pub completed_ms: Option<i64>,
}

/// The oldest a fetch can be when its answer arrives: the simulated consumers' request timeout
/// (`runner::simulated_consumer_config`), after which a fetch is given up.
const FETCH_AGE_MAX_MS: i64 = 1_000;

/// One record a consumer received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PollRecord {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// Its offset.
    pub offset: i64,
    /// Its value (lossy UTF-8).
    pub value: String,
    /// The partition leader epoch of the batch it came in.
    pub leader_epoch: i32,
    /// Whether the consumer was repositioned right before this record.
    pub after_reset: bool,
    /// When the consumer received it, on the simulation's clock (see [`History::clock_ms`]).
    pub received_ms: i64,
    /// When the fetch that brought it was sent, on the same clock: the broker read its log
    /// between then and `received_ms`, so a truncation from then on may have cut what it read.
    pub fetched_ms: i64,
}

/// Everything the workloads did.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// The simulation's clock (ms since the run started, the checkers' clock) when the
    /// workloads record: the world sets it before each workload step, so sends and polls are
    /// stamped on the same clock as the checkers' events whatever the nodes' clock skew.
    pub clock_ms: i64,
    /// Sends by (producer, incarnation, handle).
    pub sends: BTreeMap<(NodeId, u64, u64), SendRecord>,
    /// Records received, per consumer (and incarnation), in arrival order.
    pub polls: BTreeMap<(NodeId, u64), Vec<PollRecord>>,
    /// Producer events worth a coverage mark (epoch bumps, retries).
    pub producer_epoch_bumps: u64,
    /// Batches idempotent producers sent again (their `Retried` events).
    pub batch_retries: u64,
    /// Transactional producers fenced while alive (a coordinator's timeout abort bumped the
    /// epoch under their open transaction).
    pub transactional_fenced: u64,
    /// Partitions whose idempotent producer started its sequences over because the topic was
    /// deleted and created again (their `TopicCreatedAgain` events).
    pub producer_sequences_restarted_with_topic: u64,
    /// Positions consumers dropped because their topic was deleted and created again under
    /// its name (their `TopicRecreated` events).
    pub consumer_positions_dropped_with_topic: u64,
    /// Topics each consumer reads (every partition, from the earliest offset).
    pub subscriptions: BTreeMap<NodeId, Vec<String>>,
    /// Consumers that read with READ_COMMITTED.
    pub read_committed: std::collections::BTreeSet<NodeId>,
    /// The group of each consumer that is a group member.
    pub groups: BTreeMap<NodeId, String>,
    /// Client incarnations that were killed (their unresolved sends stay unresolved).
    pub dead_incarnations: std::collections::BTreeSet<(NodeId, u64)>,
    /// Transactions by (producer, incarnation, transaction number).
    pub transactions: BTreeMap<(NodeId, u64, u64), TransactionRecord>,
    /// Keys of the sends [`History::acked`] yields, in the order they joined it (acknowledged,
    /// and for a transactional send also committed), so a per-step checker can look at the new
    /// ones only instead of every send of the run.
    pub readable: Vec<(NodeId, u64, u64)>,
    /// Every operation of the scenario's admin timeline, in file order, with its outcome once
    /// it finished.
    pub admin_ops: Vec<crate::world::admin::AdminOpRecord>,
    /// Admin requests the network delivered twice: (admin client, correlation id).
    pub duplicated_admin_requests: std::collections::BTreeSet<(NodeId, u64)>,
    /// Every time a consumer moved its position back (position validation found the log
    /// truncated below it, or `auto.offset.reset` placed it lower), in the order they happened.
    pub position_resets: Vec<PositionReset>,
}

/// A consumer moving its position of a partition back: what its next commit may show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PositionReset {
    /// The consumer.
    pub consumer: NodeId,
    /// The partition.
    pub topic_partition: TopicPartition,
    /// The position before.
    pub previous: i64,
    /// The position after, below `previous`.
    pub offset: i64,
}

impl History {
    /// Acknowledged sends that must be readable: (partition, offset, value). A transactional
    /// record counts only once its transaction is known to have committed.
    pub fn acked(&self) -> impl Iterator<Item = (&TopicPartition, i64, &str)> {
        self.acked_sends()
            .map(|(offset, send)| (&send.topic_partition, offset, send.value.as_str()))
    }

    /// [`History::acked`] with the whole send record: (offset, send).
    pub fn acked_sends(&self) -> impl Iterator<Item = (i64, &SendRecord)> {
        self.sends
            .iter()
            .filter_map(|((producer, incarnation, _), send)| {
                if let Some(transaction) = send.transaction {
                    let committed = self
                        .transactions
                        .get(&(*producer, *incarnation, transaction))
                        .and_then(|txn| txn.committed);
                    if committed != Some(true) {
                        return None;
                    }
                }
                send.acked_offset.map(|offset| (offset, send))
            })
    }

    /// Records a finished admin operation's outcome.
    pub(crate) fn record_admin(&mut self, finished: crate::world::admin::AdminOpRecord) {
        match self
            .admin_ops
            .iter_mut()
            .find(|record| record.op.index == finished.op.index)
        {
            Some(record) => *record = finished,
            None => self.admin_ops.push(finished),
        }
    }

    /// Records the acknowledgement of send `key` at `offset`.
    pub(crate) fn record_ack(&mut self, key: (NodeId, u64, u64), offset: i64) {
        let Some(send) = self.sends.get_mut(&key) else {
            return;
        };
        let first = send.acked_offset.is_none();
        send.acked_offset = Some(offset);
        let readable = match send.transaction {
            Some(number) => self.transaction_committed((key.0, key.1, number)),
            None => true,
        };
        if first && readable {
            self.readable.push(key);
        }
    }

    /// Records the failure of send `key`; `outcome_unknown` when it may still be in the log.
    fn record_failure(&mut self, key: (NodeId, u64, u64), outcome_unknown: bool) {
        if let Some(send) = self.sends.get_mut(&key) {
            send.failed = Some(outcome_unknown);
        }
    }

    /// Records a transaction's confirmed outcome; a commit makes its acknowledged sends readable.
    fn record_transaction_outcome(&mut self, transaction: (NodeId, u64, u64), committed: bool) {
        let newly_committed = committed && !self.transaction_committed(transaction);
        let record = self.transactions.entry(transaction).or_default();
        record.committed = Some(committed);
        record.completed_ms = Some(self.clock_ms);
        if !newly_committed {
            return;
        }
        let (producer, incarnation, number) = transaction;
        // A transaction's sends are that incarnation's latest ones when it completes: walk back
        // from the newest send past later transactions' sends, then over this one's.
        let sends = self
            .sends
            .range((producer, incarnation, 0)..=(producer, incarnation, u64::MAX))
            .rev()
            .skip_while(|(_, send)| send.transaction.is_some_and(|n| n > number))
            .take_while(|(_, send)| send.transaction == Some(number));
        let acked: Vec<(NodeId, u64, u64)> = sends
            .filter(|(_, send)| send.acked_offset.is_some())
            .map(|(key, _)| *key)
            .collect();
        self.readable.extend(acked.into_iter().rev());
    }

    fn transaction_committed(&self, transaction: (NodeId, u64, u64)) -> bool {
        self.transactions
            .get(&transaction)
            .is_some_and(|txn| txn.committed == Some(true))
    }
}

/// A producer node: the idempotent producer client plus a steady stream of records.
pub struct ProducerWorkload {
    /// The client.
    pub producer: IdempotentProducer,
    node_id: NodeId,
    incarnation: u64,
    topic: String,
    partitions: i32,
    interval_ms: i64,
    next_send_ms: i64,
    next_partition: i32,
    counters: BTreeMap<i32, (u64, u64)>,
    /// Whether new records are produced (off before set-up and during the heal phase).
    pub enabled: bool,
}

impl ProducerWorkload {
    /// A producer workload over all `partitions` of `topic` (and over the partitions added to
    /// it later, once its metadata shows them).
    pub fn new(
        producer: IdempotentProducer,
        incarnation: u64,
        topic: String,
        partitions: i32,
        interval_ms: i64,
        now_ms: i64,
    ) -> Self {
        Self {
            node_id: producer.node_id(),
            producer,
            incarnation,
            topic,
            partitions,
            interval_ms,
            next_send_ms: now_ms,
            next_partition: 0,
            counters: BTreeMap::new(),
            enabled: false,
        }
    }

    /// Sends the records that are due, recording them in `history`.
    pub fn send_due(&mut self, now_ms: i64, history: &mut History) {
        while self.enabled && now_ms >= self.next_send_ms {
            // A topic grown since (CreatePartitions, a mirror's sync) is written to whole
            // once the producer's metadata shows the new partitions.
            self.partitions = self
                .partitions
                .max(self.producer.known_partitions(&self.topic));
            let partition = self.next_partition;
            self.next_partition = (self.next_partition + 1) % self.partitions;
            let topic_partition = TopicPartition::new(self.topic.clone(), partition);
            let (n, digest) = self.counters.entry(partition).or_insert((0, FNV_OFFSET));
            let value = format_value(
                self.node_id,
                self.incarnation,
                &topic_partition,
                *n,
                *digest,
            );
            *digest = fnv1a(FNV_OFFSET, value.as_bytes());
            *n += 1;
            let SendHandle(handle) = self.producer.send(
                now_ms,
                &self.topic,
                partition,
                Some(Bytes::from(format!("k{partition}"))),
                Some(Bytes::from(value.clone())),
            );
            history.sends.insert(
                (self.node_id, self.incarnation, handle),
                SendRecord {
                    topic_partition,
                    value,
                    sent_ms: history.clock_ms,
                    acked_offset: None,
                    failed: None,
                    transaction: None,
                },
            );
            self.next_send_ms = self.next_send_ms.saturating_add(self.interval_ms);
        }
        if !self.enabled {
            self.next_send_ms = self.next_send_ms.max(now_ms);
        }
    }

    /// Records the producer's outcomes in `history`.
    pub fn record_events(&mut self, history: &mut History) {
        for event in self.producer.take_events() {
            let key = |handle: SendHandle| (self.node_id, self.incarnation, handle.0);
            match event {
                ProducerEvent::Acked { handle, offset, .. } => {
                    history.record_ack(key(handle), offset);
                }
                ProducerEvent::Failed {
                    handle,
                    outcome_unknown,
                    ..
                } => history.record_failure(key(handle), outcome_unknown),
                ProducerEvent::EpochBumped { .. } => history.producer_epoch_bumps += 1,
                ProducerEvent::Retried { .. } => history.batch_retries += 1,
                ProducerEvent::TopicCreatedAgain { .. } => {
                    history.producer_sequences_restarted_with_topic += 1;
                }
                _ => {}
            }
        }
    }

    /// Next time a record is due (when enabled).
    pub fn next_send_ms(&self) -> Option<i64> {
        self.enabled.then_some(self.next_send_ms)
    }

    /// The node's outbox.
    pub fn take_outbox(&mut self) -> Vec<Envelope> {
        self.producer.take_outbox()
    }
}

/// A transactional producer node: transactions of a few records to distinct partitions, most
/// committed and one in five aborted on purpose (a deterministic choice per transaction
/// number). A transaction meant to commit asks for the commit right after its sends (the
/// client flushes first). One meant to abort is aborted only once its records reached the
/// log: when one of them is acknowledged, or [`ABORT_AFTER_MS`] after it began, so that its
/// batches are in the partitions and the coordinator writes ABORT markers there (an abort
/// before any partition was added ends inside the client, as Kafka's does, and tests
/// nothing).
pub struct TransactionalWorkload {
    /// The client.
    pub producer: TransactionalProducer,
    node_id: NodeId,
    incarnation: u64,
    topic: String,
    partitions: i32,
    interval_ms: i64,
    next_transaction_ms: i64,
    next_partition: i32,
    counters: BTreeMap<i32, u64>,
    /// The transaction begun and not yet ended by the workload, with its plan.
    open: Option<PlannedTransaction>,
    /// Whether new transactions start (off before set-up and during the heal phase).
    pub enabled: bool,
}

/// A begun transaction the workload has not asked to end yet.
struct PlannedTransaction {
    number: u64,
    began_ms: i64,
    record: TransactionRecord,
}

/// Records per transaction (on distinct partitions, at most the partition count).
const RECORDS_PER_TRANSACTION: i32 = 3;

/// The longest a transaction meant to abort waits for one of its records to be acknowledged
/// before it is aborted anyway (under faults its records may not be written at all).
pub const ABORT_AFTER_MS: i64 = 300;

impl TransactionalWorkload {
    /// A transactional workload over `partitions` of `topic`, one transaction every
    /// `interval_ms`.
    pub fn new(
        producer: TransactionalProducer,
        incarnation: u64,
        topic: String,
        partitions: i32,
        interval_ms: i64,
        now_ms: i64,
    ) -> Self {
        Self {
            node_id: producer.node_id(),
            producer,
            incarnation,
            topic,
            partitions,
            interval_ms,
            next_transaction_ms: now_ms,
            next_partition: 0,
            counters: BTreeMap::new(),
            open: None,
            enabled: false,
        }
    }

    /// Starts the next transaction when one is due, ends the open one when its plan says so,
    /// and aborts after an abortable error.
    pub fn send_due(&mut self, now_ms: i64, history: &mut History) {
        match self.producer.transaction() {
            Some((_, TransactionPhase::AbortableError(_))) => {
                // The only way forward after an abortable error.
                let ended = self.producer.abort_transaction(now_ms).is_ok();
                self.end_planned(history, ended);
            }
            Some((_, TransactionPhase::Open)) => self.maybe_abort(now_ms, history),
            Some(_) => {}
            None if self.enabled
                && self.producer.is_ready()
                && now_ms >= self.next_transaction_ms =>
            {
                self.run_transaction(now_ms, history);
                self.next_transaction_ms = now_ms.saturating_add(self.interval_ms);
            }
            None => {}
        }
    }

    fn run_transaction(&mut self, now_ms: i64, history: &mut History) {
        let Ok(number) = self.producer.begin_transaction() else {
            return;
        };
        let mut record = TransactionRecord {
            intended_commit: intends_commit(self.node_id, self.incarnation, number),
            ..TransactionRecord::default()
        };
        for _ in 0..RECORDS_PER_TRANSACTION.min(self.partitions) {
            let partition = self.next_partition;
            self.next_partition = (self.next_partition + 1) % self.partitions;
            let topic_partition = TopicPartition::new(self.topic.clone(), partition);
            let n = self.counters.entry(partition).or_insert(0);
            let value = format!(
                "{}/{}/{topic_partition}/{n}/t{number}",
                self.node_id, self.incarnation
            );
            *n += 1;
            let SendHandle(handle) = self.producer.send(
                now_ms,
                &self.topic,
                partition,
                None,
                Some(Bytes::from(value.clone())),
            );
            record.handles.push(handle);
            history.sends.insert(
                (self.node_id, self.incarnation, handle),
                SendRecord {
                    topic_partition,
                    value,
                    sent_ms: history.clock_ms,
                    acked_offset: None,
                    failed: None,
                    transaction: Some(number),
                },
            );
        }
        self.open = Some(PlannedTransaction {
            number,
            began_ms: now_ms,
            record,
        });
        if self.open.as_ref().is_some_and(|t| t.record.intended_commit) {
            let ended = self.producer.commit_transaction(now_ms).is_ok();
            self.end_planned(history, ended);
        }
    }

    /// Aborts the open transaction meant to abort once one of its records is acknowledged (it
    /// is in a partition's log), or [`ABORT_AFTER_MS`] after it began.
    fn maybe_abort(&mut self, now_ms: i64, history: &mut History) {
        let Some(planned) = &self.open else {
            return;
        };
        if planned.record.intended_commit {
            return;
        }
        let acked = planned.record.handles.iter().any(|handle| {
            history
                .sends
                .get(&(self.node_id, self.incarnation, *handle))
                .is_some_and(|send| send.acked_offset.is_some())
        });
        if acked || now_ms >= planned.began_ms.saturating_add(ABORT_AFTER_MS) {
            let ended = self.producer.abort_transaction(now_ms).is_ok();
            self.end_planned(history, ended);
        }
    }

    /// The workload asked to end the open transaction: it goes into the history when the
    /// client took the request (`ended`), as the checkers judge only those.
    fn end_planned(&mut self, history: &mut History, ended: bool) {
        let Some(planned) = self.open.take() else {
            return;
        };
        if ended {
            history.transactions.insert(
                (self.node_id, self.incarnation, planned.number),
                planned.record,
            );
        }
    }

    /// Records the producer's outcomes in `history`.
    pub fn record_events(&mut self, history: &mut History) {
        for event in self.producer.take_events() {
            let key = |handle: SendHandle| (self.node_id, self.incarnation, handle.0);
            match event {
                TransactionalEvent::Acked { handle, offset, .. } => {
                    history.record_ack(key(handle), offset);
                }
                TransactionalEvent::Failed {
                    handle,
                    outcome_unknown,
                    ..
                } => history.record_failure(key(handle), outcome_unknown),
                // Only a live producer hears this: the coordinator bumped its epoch under an
                // open transaction (it timed out), as a restart of this node would fence a
                // dead incarnation instead.
                TransactionalEvent::Fenced { .. } => history.transactional_fenced += 1,
                TransactionalEvent::TransactionCompleted {
                    transaction,
                    committed,
                    ..
                } => history.record_transaction_outcome(
                    (self.node_id, self.incarnation, transaction),
                    committed,
                ),
                _ => {}
            }
        }
    }

    /// Next time the workload acts: a transaction meant to abort reaches its abort time, or
    /// (when enabled) the next transaction is due.
    pub fn next_transaction_ms(&self) -> Option<i64> {
        let abort_at = self
            .open
            .as_ref()
            .filter(|planned| !planned.record.intended_commit)
            .map(|planned| planned.began_ms.saturating_add(ABORT_AFTER_MS));
        let next = self.enabled.then_some(self.next_transaction_ms);
        abort_at.into_iter().chain(next).min()
    }
}

/// Whether a transaction is meant to commit: one in five aborts, chosen from its identity so
/// that runs stay deterministic without drawing random numbers in the node.
fn intends_commit(node: NodeId, incarnation: u64, number: u64) -> bool {
    let identity = format!("{node}/{incarnation}/{number}");
    fnv1a(FNV_OFFSET, identity.as_bytes()) % 5 != 0
}

/// The client inside a consumer node: a plain consumer of fixed partitions, or a member of a
/// consumer group.
pub enum ConsumerClient {
    /// Reads every partition of its topics itself.
    Plain(Box<Consumer>),
    /// Reads what its group assigns, starting at committed offsets, and commits.
    Group(Box<GroupConsumer>),
}

/// A consumer node recording everything it receives.
pub struct ConsumerWorkload {
    /// The client.
    pub client: ConsumerClient,
    node_id: NodeId,
    incarnation: u64,
    reset_pending: BTreeMap<TopicPartition, bool>,
}

impl ConsumerWorkload {
    /// Wraps a consumer client.
    pub fn new(client: ConsumerClient, incarnation: u64) -> Self {
        let node_id = match &client {
            ConsumerClient::Plain(consumer) => consumer.node_id(),
            ConsumerClient::Group(member) => member.node_id(),
        };
        Self {
            node_id,
            client,
            incarnation,
            reset_pending: BTreeMap::new(),
        }
    }

    /// The client as a node.
    pub fn node(&mut self) -> &mut dyn mirrorsim::node::Node {
        match &mut self.client {
            ConsumerClient::Plain(consumer) => consumer.as_mut(),
            ConsumerClient::Group(member) => member.as_mut(),
        }
    }

    /// Records received records in `history`.
    pub fn record_events(&mut self, now_ms: i64, history: &mut History) {
        let events: Vec<ConsumerEvent> = match &mut self.client {
            ConsumerClient::Plain(consumer) => consumer.take_events(),
            ConsumerClient::Group(member) => {
                let mut consumer_events = Vec::new();
                for event in member.take_events() {
                    match event {
                        GroupConsumerEvent::Consumer(event) => consumer_events.push(event),
                        // A partition (re)started from its committed offset: the next read may
                        // go back to it, legitimately.
                        GroupConsumerEvent::Started {
                            topic_partition, ..
                        } => {
                            self.reset_pending.insert(topic_partition, true);
                        }
                        _ => {}
                    }
                }
                consumer_events
            }
        };
        for event in events {
            self.record_consumer_event(now_ms, event, history);
        }
    }

    fn record_consumer_event(&mut self, now_ms: i64, event: ConsumerEvent, history: &mut History) {
        match event {
            ConsumerEvent::Records {
                topic_partition,
                records,
                fetch_sent_ms,
            } => {
                let clock_ms = history.clock_ms;
                // The node's clock may be skewed: only the fetch's age is taken from it, and no
                // fetch is older than the consumer's request timeout (a clock jump in between
                // must not stretch it).
                let fetched_ms = clock_ms - (now_ms - fetch_sent_ms).clamp(0, FETCH_AGE_MAX_MS);
                let polls = history
                    .polls
                    .entry((self.node_id, self.incarnation))
                    .or_default();
                let mut after_reset = self.reset_pending.remove(&topic_partition).unwrap_or(false);
                for record in records {
                    let value = record
                        .value
                        .as_deref()
                        .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
                        .unwrap_or_default();
                    polls.push(PollRecord {
                        topic_partition: topic_partition.clone(),
                        offset: record.offset,
                        leader_epoch: record.partition_leader_epoch,
                        value,
                        after_reset,
                        received_ms: clock_ms,
                        fetched_ms,
                    });
                    after_reset = false;
                }
            }
            ConsumerEvent::OffsetReset {
                topic_partition,
                previous,
                offset,
                ..
            } => {
                if let Some(previous) = previous.filter(|previous| *previous > offset) {
                    history.position_resets.push(PositionReset {
                        consumer: self.node_id,
                        topic_partition: topic_partition.clone(),
                        previous,
                        offset,
                    });
                }
                self.reset_pending.insert(topic_partition, true);
            }
            ConsumerEvent::TopicRecreated { .. } => {
                history.consumer_positions_dropped_with_topic += 1;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirrorsim::protocol::{ClientKind, ClusterIndex};

    #[test]
    fn workload_values_parse_back() {
        let node = NodeId::Client(ClusterIndex(0), ClientKind::Producer, 2);
        let value = format_value(node, 3, &TopicPartition::new("orders", 1), 42, 7);
        assert_eq!(value, "a-producer-2/3/orders-1/42/0000000000000007");
        let id = parse_value(value.as_bytes()).unwrap();
        assert_eq!(
            (
                id.producer.as_str(),
                id.incarnation,
                id.topic_partition.as_str(),
                id.n
            ),
            ("a-producer-2", 3, "orders-1", 42)
        );
        assert!(parse_value(b"not a value").is_none());
    }
}
