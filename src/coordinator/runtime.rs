//! Hosting a [`Shard`] on the broker that leads its partition (the runtime half of the
//! contract in the module above).
//!
//! [`ShardHost`] owns one shard. It loads it by replaying the partition, feeds it requests,
//! answers and timeouts, appends the records it asks for through the partition's log (a leader
//! append with coordinator origin), and completes each write once the partition's high
//! watermark passes it: replay first, then [`Shard::write_completed`]. Loading replays the
//! whole log, the uncommitted tail included (as Kafka's loader does); until the high watermark
//! reaches the loaded log end, answers are held back, so no client sees state a later leader
//! may truncate, and they are dropped if the shard unloads first. [`HostedCoordinator`]
//! erases the shard type so a broker can host several kinds side by side.

use crate::common::{LeaderEpoch, Offset};
use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;

use super::{Shard, ShardEnv, ShardOutput};
use crate::log::{AppendOrigin, LogDisk, PartitionLog};
use crate::metadata::MetadataImage;
use crate::node::Outbox;
use crate::protocol::{CoordinatorRequest, ErrorCode, NodeId, Response, TopicName, TopicPartition};
use crate::record::{BatchBuilder, RecordBatch};

/// How long a request a shard sent may stay unanswered.
const SHARD_REQUEST_TIMEOUT_MS: i64 = 1_000;

/// What the hosting broker lends a shard host for one call.
pub struct HostContext<'a, D: LogDisk> {
    /// The broker's clock.
    pub now_ms: i64,
    /// The broker's metadata image.
    pub image: &'a MetadataImage,
    /// The shard's partition log (this broker leads it).
    pub log: &'a mut PartitionLog<D>,
    /// The partition's leader epoch (the coordinator epoch).
    pub leader_epoch: LeaderEpoch,
    /// The broker's outbox.
    pub outbox: &'a mut Outbox,
    /// The broker.
    pub node_id: NodeId,
    /// Whether the partition's ISR has at least `min.insync.replicas` members now. A
    /// coordinator write is refused while it has not (`NotEnoughReplicas`, nothing appended),
    /// stricter than Kafka's runtime, which appends with `requiredAcks = 1`. Once appended, a
    /// write completes when the high watermark passes it, whatever the ISR is by then: the
    /// record is committed in the log and every later load replays it, so the shard must
    /// apply it too (Kafka's `CoordinatorRuntime` completes writes on the high watermark
    /// alone).
    pub enough_replicas: bool,
    /// The broker's test-only broken switches (shards that honour one say so).
    pub broken: &'a [crate::switches::BrokenSwitch],
    /// Where the shard's coverage marks go (`ShardOutput::marks`).
    pub marks: &'a mut Vec<&'static str>,
}

/// A hosted shard of any kind; see [`ShardHost`].
pub trait HostedCoordinator<D: LogDisk> {
    /// The shard's partition.
    fn partition(&self) -> &TopicPartition;
    /// Routes a request to the shard.
    fn handle_request(
        &mut self,
        context: &mut HostContext<'_, D>,
        from: NodeId,
        correlation_id: u64,
        request: CoordinatorRequest,
    );
    /// Whether this shard sent the request with `correlation_id` and awaits its answer.
    fn awaits(&self, correlation_id: u64) -> bool;
    /// Routes an answer; returns false when the correlation id is not one of this shard's.
    fn handle_response(
        &mut self,
        context: &mut HostContext<'_, D>,
        correlation_id: u64,
        response: Response,
    ) -> bool;
    /// Completes writes the high watermark passed, then runs due timers.
    fn poll(&mut self, context: &mut HostContext<'_, D>);
    /// The earliest time the host wants [`HostedCoordinator::poll`].
    fn poll_timeout(&self) -> Option<i64>;
    /// The broker lost the partition.
    fn unload(&mut self, outbox: &mut Outbox);
    /// The broker's image dropped `topics` ([`Shard::topics_deleted`]).
    fn topics_deleted(&mut self, context: &mut HostContext<'_, D>, topics: &[TopicName]);
    /// The host as `Any`, so checkers can read a known shard type
    /// (`downcast_ref::<ShardHost<GroupCoordinatorShard>>()`).
    fn as_any(&self) -> &dyn std::any::Any;
}

struct PendingWrite<R> {
    write_id: u64,
    /// The offset after the batch, or the append error (reported in turn, so writes always
    /// complete in the order they were asked for).
    end_offset: Result<Offset, ErrorCode>,
    records: Vec<R>,
}

/// Hosts one shard; see the module doc.
pub struct ShardHost<S: Shard> {
    partition: TopicPartition,
    shard: S,
    pending_writes: VecDeque<PendingWrite<S::Record>>,
    outstanding: BTreeMap<u64, (u64, i64)>,
    /// The log end offset when the shard loaded. The records between the high watermark and
    /// it were replayed but are not committed yet: a new leader's tail that a later leader may
    /// still truncate.
    loaded_end_offset: Offset,
    /// Answers held back until the high watermark reaches `loaded_end_offset`, so no client
    /// learns state that may be truncated away (Kafka's runtime holds every write operation's
    /// answer until the last written offset commits).
    deferred_responses: Vec<(NodeId, u64, Response)>,
}

impl<S: Shard> ShardHost<S> {
    /// Loads `shard` from the partition's log (every record from the log start to the log end)
    /// and lets it resume.
    pub fn load<D: LogDisk>(
        partition: TopicPartition,
        mut shard: S,
        context: &mut HostContext<'_, D>,
    ) -> Self {
        let loaded_end_offset = context.log.log_end_offset();
        for batch in context.log.batches_from(context.log.log_start_offset()) {
            for record in decode_records::<S::Record>(batch) {
                shard.replay(&record);
            }
        }
        let mut host = Self {
            partition,
            shard,
            pending_writes: VecDeque::new(),
            outstanding: BTreeMap::new(),
            loaded_end_offset,
            deferred_responses: Vec::new(),
        };
        let mut out = ShardOutput::default();
        {
            let env = env(context, &host.partition);
            host.shard.loaded(&env, &mut out);
        }
        host.carry_out(context, out);
        host
    }

    /// The shard (for checkers). Its state includes the uncommitted tail it loaded until
    /// [`ShardHost::is_committed`] says otherwise.
    pub fn shard(&self) -> &S {
        &self.shard
    }

    /// Whether everything the shard replayed is committed at `high_watermark`: the tail it
    /// loaded is below it (the writes since are replayed only once committed).
    pub fn is_committed(&self, high_watermark: Offset) -> bool {
        high_watermark >= self.loaded_end_offset
    }

    /// Sends an answer, or holds it back while the loaded tail is uncommitted; releases the
    /// held-back answers once it is.
    fn respond<D: LogDisk>(
        &mut self,
        context: &mut HostContext<'_, D>,
        answer: Option<(NodeId, u64, Response)>,
    ) {
        self.deferred_responses.extend(answer);
        if self.is_committed(context.log.high_watermark()) {
            for (to, correlation_id, response) in self.deferred_responses.drain(..) {
                context.outbox.respond(to, correlation_id, response);
            }
        }
    }

    /// Carries out what the shard asked for; loops while completions ask for more.
    fn carry_out<D: LogDisk>(
        &mut self,
        context: &mut HostContext<'_, D>,
        mut out: ShardOutput<S::Record>,
    ) {
        loop {
            context.marks.append(&mut out.marks);
            for answer in std::mem::take(&mut out.responses) {
                self.respond(context, Some(answer));
            }
            for (to, request, token) in out.requests.drain(..) {
                let correlation_id = context.outbox.request(to, request);
                self.outstanding
                    .insert(correlation_id, (token, context.now_ms));
            }
            for write in out.writes.drain(..) {
                let end_offset = append_records(context, &write.records);
                self.pending_writes.push_back(PendingWrite {
                    write_id: write.write_id,
                    end_offset,
                    records: write.records,
                });
            }
            let mut next = ShardOutput::default();
            self.complete_committed_writes(context, &mut next);
            if next.is_empty() {
                return;
            }
            out = next;
        }
    }

    fn complete_committed_writes<D: LogDisk>(
        &mut self,
        context: &mut HostContext<'_, D>,
        out: &mut ShardOutput<S::Record>,
    ) {
        let high_watermark = context.log.high_watermark();
        let env = env(context, &self.partition);
        while let Some(write) = self.pending_writes.front() {
            // A committed write is applied and succeeds even if the ISR shrank below
            // `min.insync.replicas` after the append: failing it without applying it left the
            // shard behind its own log (a `__mirror_state` key whose state epoch the next write
            // reused, generator seeds 18 and 27), and its caller would retry a write that took
            // effect.
            let result = match write.end_offset {
                Ok(end_offset) if end_offset <= high_watermark => Ok(()),
                Ok(_) => break,
                Err(error) => Err(error),
            };
            let write = self.pending_writes.pop_front().expect("checked above");
            if result.is_ok() {
                for record in &write.records {
                    self.shard.replay(record);
                }
            }
            self.shard
                .write_completed(&env, write.write_id, result, out);
        }
    }
}

fn env<'a, D: LogDisk>(
    context: &'a HostContext<'_, D>,
    partition: &'a TopicPartition,
) -> ShardEnv<'a> {
    ShardEnv {
        now_ms: context.now_ms,
        image: context.image,
        // Kafka's coordinator epoch is the leader epoch of the coordinator's partition.
        coordinator_epoch: context.leader_epoch.0,
        node_id: context.node_id,
        partition,
    }
}

/// Appends records as one batch; returns the offset after it.
fn append_records<R: serde::Serialize, D: LogDisk>(
    context: &mut HostContext<'_, D>,
    records: &[R],
) -> Result<Offset, ErrorCode> {
    if !context.enough_replicas {
        return Err(ErrorCode::NotEnoughReplicas);
    }
    let batch = encode_records(records, context.now_ms);
    context
        .log
        .append_as_leader(
            &batch,
            context.leader_epoch,
            AppendOrigin::Coordinator,
            context.now_ms,
        )
        .map(|info| info.last_offset + 1)
        .map_err(|error| ErrorCode::from(&error))
}

/// One batch of coordinator records: the value of each record is the record as JSON.
pub fn encode_records<R: serde::Serialize>(records: &[R], now_ms: i64) -> RecordBatch {
    let mut builder = BatchBuilder::default();
    for record in records {
        let value = serde_json::to_vec(record).expect("coordinator records serialize");
        builder.append(now_ms, None, Some(Bytes::from(value)), Vec::new());
    }
    builder.build()
}

/// The coordinator records of a batch; records that do not parse (another shard kind's, or
/// damaged) are skipped, never trusted.
pub fn decode_records<R: serde::de::DeserializeOwned>(batch: &RecordBatch) -> Vec<R> {
    if batch.is_control() {
        return Vec::new();
    }
    batch
        .records()
        .filter_map(Result::ok)
        .filter_map(|record| {
            record
                .value
                .and_then(|value| serde_json::from_slice(&value).ok())
        })
        .collect()
}

impl<S: Shard + 'static, D: LogDisk> HostedCoordinator<D> for ShardHost<S> {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn partition(&self) -> &TopicPartition {
        &self.partition
    }

    fn handle_request(
        &mut self,
        context: &mut HostContext<'_, D>,
        from: NodeId,
        correlation_id: u64,
        request: CoordinatorRequest,
    ) {
        let mut out = ShardOutput::default();
        {
            let env = env(context, &self.partition);
            self.shard
                .handle_request(&env, from, correlation_id, request, &mut out);
        }
        self.carry_out(context, out);
    }

    fn awaits(&self, correlation_id: u64) -> bool {
        self.outstanding.contains_key(&correlation_id)
    }

    fn handle_response(
        &mut self,
        context: &mut HostContext<'_, D>,
        correlation_id: u64,
        response: Response,
    ) -> bool {
        let Some((token, _)) = self.outstanding.remove(&correlation_id) else {
            return false;
        };
        let mut out = ShardOutput::default();
        {
            let env = env(context, &self.partition);
            self.shard
                .handle_response(&env, token, Ok(response), &mut out);
        }
        self.carry_out(context, out);
        true
    }

    fn poll(&mut self, context: &mut HostContext<'_, D>) {
        self.respond(context, None);
        let mut out = ShardOutput::default();
        self.complete_committed_writes(context, &mut out);
        let now_ms = context.now_ms;
        let expired: Vec<(u64, u64)> = self
            .outstanding
            .iter()
            .filter(|(_, (_, sent_ms))| now_ms - sent_ms >= SHARD_REQUEST_TIMEOUT_MS)
            .map(|(correlation_id, (token, _))| (*correlation_id, *token))
            .collect();
        {
            let env = env(context, &self.partition);
            for (correlation_id, token) in expired {
                self.outstanding.remove(&correlation_id);
                self.shard
                    .handle_response(&env, token, Err(ErrorCode::RequestTimedOut), &mut out);
            }
            if self
                .shard
                .poll_timeout()
                .is_some_and(|deadline| deadline <= now_ms)
            {
                self.shard.handle_timeout(&env, &mut out);
            }
        }
        self.carry_out(context, out);
    }

    fn poll_timeout(&self) -> Option<i64> {
        let requests = self
            .outstanding
            .values()
            .map(|(_, sent_ms)| sent_ms + SHARD_REQUEST_TIMEOUT_MS)
            .min();
        match (requests, self.shard.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn topics_deleted(&mut self, context: &mut HostContext<'_, D>, topics: &[TopicName]) {
        let mut out = ShardOutput::default();
        {
            let env = env(context, &self.partition);
            self.shard.topics_deleted(&env, topics, &mut out);
        }
        self.carry_out(context, out);
    }

    fn unload(&mut self, outbox: &mut Outbox) {
        // Held-back answers are dropped: their state may be truncated away, and the clients
        // retry after their request timeout as they do after any lost answer.
        self.deferred_responses.clear();
        let mut out = ShardOutput::default();
        self.shard.unloaded(&mut out);
        for (to, correlation_id, response) in out.responses {
            outbox.respond(to, correlation_id, response);
        }
    }
}

#[cfg(test)]
mod tests {
    //! The runtime half of the contract, with a toy shard: a counter per group id that an
    //! OffsetCommit request adds to and an OffsetFetch reads.

    use super::*;
    use crate::log::{LogConfig, MemoryDisk};
    use crate::protocol::Offset;
    use crate::protocol::{
        ClusterIndex, CommittedOffset, CoordinatorRequest, CoordinatorResponse, LeaderEpoch,
        Message, OffsetCommitEntry,
    };

    #[derive(Default)]
    struct CounterShard {
        total: i64,
        replayed: usize,
        loaded: bool,
        pending: BTreeMap<u64, (NodeId, u64)>,
        next_write: u64,
    }

    impl Shard for CounterShard {
        type Record = i64;

        fn replay(&mut self, record: &i64) {
            self.total += record;
            self.replayed += 1;
        }

        fn loaded(&mut self, _env: &ShardEnv<'_>, _out: &mut ShardOutput<i64>) {
            self.loaded = true;
        }

        fn handle_request(
            &mut self,
            _env: &ShardEnv<'_>,
            from: NodeId,
            correlation_id: u64,
            request: CoordinatorRequest,
            out: &mut ShardOutput<i64>,
        ) {
            match request {
                CoordinatorRequest::OffsetCommit { offsets, .. } => {
                    self.next_write += 1;
                    self.pending.insert(self.next_write, (from, correlation_id));
                    out.writes.push(super::super::ShardWrite {
                        write_id: self.next_write,
                        records: offsets.iter().map(|entry| entry.offset.0).collect(),
                    });
                }
                _ => out.responses.push((
                    from,
                    correlation_id,
                    Response::Coordinator(CoordinatorResponse::OffsetFetch {
                        error: ErrorCode::None,
                        offsets: vec![CommittedOffset {
                            topic_partition: TopicPartition::new("t", 0),
                            offset: Offset(self.total),
                            leader_epoch: LeaderEpoch::NONE,
                            metadata: String::new(),
                            error: ErrorCode::None,
                        }],
                    }),
                )),
            }
        }

        fn handle_response(
            &mut self,
            _env: &ShardEnv<'_>,
            _token: u64,
            _response: Result<Response, ErrorCode>,
            _out: &mut ShardOutput<i64>,
        ) {
        }

        fn write_completed(
            &mut self,
            _env: &ShardEnv<'_>,
            write_id: u64,
            result: Result<(), ErrorCode>,
            out: &mut ShardOutput<i64>,
        ) {
            let (to, correlation_id) = self.pending.remove(&write_id).expect("known write");
            let error = result.err().unwrap_or(ErrorCode::None);
            out.responses.push((
                to,
                correlation_id,
                Response::Coordinator(CoordinatorResponse::OffsetCommit {
                    results: vec![(TopicPartition::new("t", 0), error)],
                }),
            ));
        }

        fn handle_timeout(&mut self, _env: &ShardEnv<'_>, _out: &mut ShardOutput<i64>) {}

        fn poll_timeout(&self) -> Option<i64> {
            None
        }

        fn unloaded(&mut self, out: &mut ShardOutput<i64>) {
            for (_, (to, correlation_id)) in std::mem::take(&mut self.pending) {
                out.responses.push((
                    to,
                    correlation_id,
                    Response::Coordinator(CoordinatorResponse::OffsetCommit {
                        results: vec![(TopicPartition::new("t", 0), ErrorCode::NotCoordinator)],
                    }),
                ));
            }
        }
    }

    const BROKER: NodeId = NodeId::Broker(ClusterIndex(0), crate::protocol::BrokerId(1));
    const CLIENT: NodeId = NodeId::Client(ClusterIndex(0), crate::protocol::ClientKind::Admin, 1);

    fn commit(amount: i64) -> CoordinatorRequest {
        CoordinatorRequest::OffsetCommit {
            group_id: "g".into(),
            member_id: String::new(),
            member_epoch: -1,
            offsets: vec![OffsetCommitEntry {
                topic_partition: TopicPartition::new("t", 0),
                offset: Offset(amount),
                leader_epoch: LeaderEpoch::NONE,
                metadata: String::new(),
                topic_id: None,
            }],
        }
    }

    fn fetch() -> CoordinatorRequest {
        CoordinatorRequest::OffsetFetch {
            group_id: "g".into(),
            partitions: None,
        }
    }

    /// A toy shard's answer, reduced to what the tests compare.
    #[derive(Debug, PartialEq)]
    enum Answer {
        /// An OffsetCommit answer with this error.
        Committed(ErrorCode),
        /// An OffsetFetch answer showing this total.
        Total(i64),
    }

    /// What a broker lends a host: the partition's log (led in epoch 3), an empty image and the
    /// broker's outbox.
    struct Broker {
        log: PartitionLog<MemoryDisk>,
        image: MetadataImage,
        outbox: Outbox,
        marks: Vec<&'static str>,
    }

    impl Broker {
        fn new() -> Self {
            let (mut log, _) = PartitionLog::open(MemoryDisk::new(), LogConfig::default()).unwrap();
            log.assign_epoch_start_offset(LeaderEpoch(3));
            Self {
                log,
                image: MetadataImage::default(),
                outbox: Outbox::new(BROKER),
                marks: Vec::new(),
            }
        }

        fn context(&mut self) -> HostContext<'_, MemoryDisk> {
            HostContext {
                broken: &[],
                now_ms: 0,
                image: &self.image,
                log: &mut self.log,
                leader_epoch: LeaderEpoch(3),
                outbox: &mut self.outbox,
                node_id: BROKER,
                enough_replicas: true,
                marks: &mut self.marks,
            }
        }

        /// A new leader's host, loaded from the log as it is now.
        fn load(&mut self) -> ShardHost<CounterShard> {
            let partition = TopicPartition::new("__consumer_offsets", 0);
            ShardHost::load(partition, CounterShard::default(), &mut self.context())
        }

        fn send(
            &mut self,
            host: &mut ShardHost<CounterShard>,
            correlation_id: u64,
            request: CoordinatorRequest,
        ) {
            host.handle_request(&mut self.context(), CLIENT, correlation_id, request);
        }

        fn poll(&mut self, host: &mut ShardHost<CounterShard>) {
            HostedCoordinator::poll(host, &mut self.context());
        }

        /// Commits the log up to `offset`.
        fn commit_to(&mut self, offset: i64) {
            self.log.maybe_increment_high_watermark(Offset(offset));
        }

        /// The answers sent since the last call: (correlation id, answer).
        fn answers(&mut self) -> Vec<(u64, Answer)> {
            self.outbox
                .take()
                .into_iter()
                .map(|envelope| match envelope.message {
                    Message::Response(
                        id,
                        Response::Coordinator(CoordinatorResponse::OffsetCommit { results }),
                    ) => (id, Answer::Committed(results[0].1)),
                    Message::Response(
                        id,
                        Response::Coordinator(CoordinatorResponse::OffsetFetch { offsets, .. }),
                    ) => (id, Answer::Total(offsets[0].offset.0)),
                    other => panic!("expected a toy shard's answer, got {other:?}"),
                })
                .collect()
        }
    }

    #[test]
    fn runtime_applies_a_write_only_after_the_high_watermark_passes_it() {
        let mut broker = Broker::new();
        let mut host = broker.load();
        assert!(host.shard().loaded);
        broker.send(&mut host, 7, commit(5));
        assert_eq!(
            broker.log.log_end_offset(),
            Offset(1),
            "the record is appended at once"
        );
        assert_eq!(
            broker
                .log
                .batches()
                .next()
                .unwrap()
                .partition_leader_epoch(),
            3
        );
        assert_eq!(
            host.shard().total,
            0,
            "but not applied before it is committed"
        );
        assert_eq!(broker.answers(), vec![], "and not answered");
        broker.commit_to(1);
        broker.poll(&mut host);
        assert_eq!(host.shard().total, 5);
        assert_eq!(
            broker.answers(),
            vec![(7, Answer::Committed(ErrorCode::None))]
        );
    }

    #[test]
    fn runtime_refuses_writes_below_min_insync_replicas() {
        let mut broker = Broker::new();
        let mut host = broker.load();
        let mut short = broker.context();
        short.enough_replicas = false;
        host.handle_request(&mut short, CLIENT, 1, commit(5));
        assert_eq!(
            broker.log.log_end_offset(),
            Offset(0),
            "nothing appended while the ISR is too small"
        );
        assert_eq!(
            broker.answers(),
            vec![(1, Answer::Committed(ErrorCode::NotEnoughReplicas))]
        );
    }

    #[test]
    fn runtime_applies_a_committed_write_after_the_isr_shrank_below_min_insync_replicas() {
        let mut broker = Broker::new();
        let mut host = broker.load();
        // Appended with enough replicas, but the ISR shrank before the high watermark passed it.
        broker.send(&mut host, 2, commit(7));
        broker.commit_to(1);
        let mut short = broker.context();
        short.enough_replicas = false;
        HostedCoordinator::poll(&mut host, &mut short);
        assert_eq!(host.shard().total, 7, "the committed record is applied");
        assert_eq!(
            broker.answers(),
            vec![(2, Answer::Committed(ErrorCode::None))]
        );
        // The live shard agrees with a new leader's replay of the same log.
        assert_eq!(broker.load().shard().total, host.shard().total);
    }

    #[test]
    fn runtime_loading_replays_every_record_and_unloading_answers_pending_requests() {
        let mut broker = Broker::new();
        let mut host = broker.load();
        broker.send(&mut host, 1, commit(2));
        broker.send(&mut host, 2, commit(3));
        broker.commit_to(broker.log.log_end_offset().0);
        broker.poll(&mut host);
        broker.send(&mut host, 3, commit(100));
        broker.outbox.take();
        HostedCoordinator::<MemoryDisk>::unload(&mut host, &mut broker.outbox);
        assert_eq!(
            broker.answers(),
            vec![(3, Answer::Committed(ErrorCode::NotCoordinator))]
        );
        // A new leader replays the whole partition, the uncommitted tail included.
        let reloaded = broker.load();
        assert_eq!(reloaded.shard().total, 105);
        assert_eq!(reloaded.shard().replayed, 3);
    }

    #[test]
    fn runtime_holds_answers_back_until_the_loaded_tail_commits_and_drops_them_on_unload() {
        let mut broker = Broker::new();
        let mut host = broker.load();
        broker.send(&mut host, 1, commit(7));
        broker.outbox.take();
        // A new leader loads the uncommitted record at offset 0.
        let mut reloaded = broker.load();
        assert!(!reloaded.is_committed(broker.log.high_watermark()));
        broker.send(&mut reloaded, 2, fetch());
        assert_eq!(
            broker.answers(),
            vec![],
            "no answer may show the uncommitted tail"
        );
        broker.commit_to(1);
        broker.poll(&mut reloaded);
        assert!(reloaded.is_committed(broker.log.high_watermark()));
        assert_eq!(broker.answers(), vec![(2, Answer::Total(7))]);
        // Held-back answers die with the shard: a later leader may truncate what they show.
        broker.send(&mut host, 3, commit(1));
        broker.outbox.take();
        let mut third = broker.load();
        assert!(!third.is_committed(broker.log.high_watermark()));
        broker.send(&mut third, 4, fetch());
        // The answer exists and is held back (else the checks below would hold vacuously).
        assert_eq!(third.deferred_responses.len(), 1);
        HostedCoordinator::<MemoryDisk>::unload(&mut third, &mut broker.outbox);
        assert_eq!(
            broker.answers(),
            vec![],
            "unloading sends no held-back answer"
        );
        assert!(third.deferred_responses.is_empty(), "it drops them");
    }
}
