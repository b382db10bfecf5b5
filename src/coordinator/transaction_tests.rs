//! Unit tests of the transaction coordinator shard, one per rule. The test plays the runtime:
//! it calls the shard only through the [`Shard`] trait, commits writes by replaying their
//! records (after a JSON round trip, as the partition stores them) and then calling
//! `write_completed`, and answers the marker requests itself.

use crate::common::LeaderEpoch;
use std::collections::VecDeque;

use super::*;
use crate::coordinator::partition_for;
use crate::coordinator::runtime::{decode_records, encode_records};
use crate::metadata::{MetadataImage, MetadataRecord, PartitionRecord};
use crate::protocol::{
    ClientKind, ClusterIndex, CoordinatorRequest, CoordinatorResponse, ReplicaRequest,
    ReplicaResponse, TopicId,
};

const CLUSTER: ClusterIndex = ClusterIndex(0);
const STATE_PARTITIONS: i32 = 4;
const COORDINATOR_EPOCH: i32 = 5;
const TXN: &str = "txn-a";
const TIMEOUT_MS: i64 = 60_000;

fn broker(id: i32) -> NodeId {
    NodeId::Broker(CLUSTER, BrokerId(id))
}

fn client(index: u16) -> NodeId {
    NodeId::Client(CLUSTER, ClientKind::Producer, index)
}

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition::new(topic, partition)
}

/// The shard partition that coordinates [`TXN`].
fn shard_partition() -> i32 {
    partition_for(TXN, STATE_PARTITIONS)
}

/// A transactional id another shard coordinates.
fn foreign_key() -> String {
    (0..100)
        .map(|i| format!("other-{i}"))
        .find(|key| partition_for(key, STATE_PARTITIONS) != shard_partition())
        .expect("some key hashes elsewhere")
}

/// Transactional ids this shard coordinates, in a fixed order.
fn own_keys() -> impl Iterator<Item = String> {
    (0..200)
        .map(|i| format!("id-{i}"))
        .filter(|id| partition_for(id, STATE_PARTITIONS) == shard_partition())
}

/// Kafka 3.x's coordinator: EndTxn keeps the producer epoch (`pre-kip-890-part-2`).
fn version_1() -> TransactionCoordinatorConfig {
    TransactionCoordinatorConfig {
        transaction_version_2: false,
        ..TransactionCoordinatorConfig::default()
    }
}

fn first_producer_id() -> i64 {
    TRANSACTIONAL_PRODUCER_ID_BASE + i64::from(shard_partition()) * PRODUCER_IDS_PER_SHARD
}

/// Builds an image from (topic, [(partition, leader)]) with the given leader epoch.
struct ImageBuilder {
    image: MetadataImage,
    topics: BTreeMap<String, TopicId>,
}

impl ImageBuilder {
    fn new() -> Self {
        Self {
            image: MetadataImage::default(),
            topics: BTreeMap::new(),
        }
    }

    fn apply(&mut self, record: MetadataRecord) {
        let offset = self.image.next_offset;
        self.image.apply(offset, &record);
    }

    fn topic(&mut self, name: &str, leaders: &[Option<i32>]) -> &mut Self {
        let topic_id = TopicId(self.topics.len() as u128 + 1);
        self.topics.insert(name.to_owned(), topic_id);
        self.apply(MetadataRecord::Topic {
            name: name.to_owned(),
            topic_id,
        });
        for (partition, leader) in leaders.iter().enumerate() {
            self.set_leader(name, partition as i32, *leader, 0);
        }
        self
    }

    fn set_leader(&mut self, topic: &str, partition: i32, leader: Option<i32>, epoch: i32) {
        let topic_id = self.topics[topic];
        self.apply(MetadataRecord::Partition(PartitionRecord {
            topic_id,
            partition,
            replicas: vec![BrokerId(1), BrokerId(2), BrokerId(3)],
            isr: vec![BrokerId(1), BrokerId(2), BrokerId(3)],
            leader: leader.map(BrokerId),
            leader_epoch: epoch,
            partition_epoch: epoch,
            eligible_leader_replicas: Vec::new(),
            last_known_elr: Vec::new(),
        }));
    }
}

/// `__transaction_state` (4 partitions on broker 1), `orders` (p0 on broker 1, p1 on broker 2)
/// and `payments` (p0 on broker 3).
fn standard_image() -> ImageBuilder {
    let mut builder = ImageBuilder::new();
    builder
        .topic(
            TRANSACTION_STATE_TOPIC,
            &[Some(1); STATE_PARTITIONS as usize],
        )
        .topic("orders", &[Some(1), Some(2)])
        .topic("payments", &[Some(3)]);
    builder
}

fn init(transactional_id: &str, timeout_ms: i64) -> CoordinatorRequest {
    CoordinatorRequest::InitProducerId {
        transactional_id: Some(transactional_id.to_owned()),
        transaction_timeout_ms: timeout_ms,
        producer_id: ProducerId::NONE,
        producer_epoch: ProducerEpoch::NONE,
    }
}

fn reinit(producer_id: i64, producer_epoch: i16) -> CoordinatorRequest {
    CoordinatorRequest::InitProducerId {
        transactional_id: Some(TXN.to_owned()),
        transaction_timeout_ms: TIMEOUT_MS,
        producer_id: ProducerId(producer_id),
        producer_epoch: ProducerEpoch(producer_epoch),
    }
}

fn add(producer_id: i64, producer_epoch: i16, partitions: &[TopicPartition]) -> CoordinatorRequest {
    CoordinatorRequest::AddPartitionsToTxn {
        transactional_id: TXN.to_owned(),
        producer_id: ProducerId(producer_id),
        producer_epoch: ProducerEpoch(producer_epoch),
        partitions: partitions.to_vec(),
        verify_only: false,
    }
}

fn end(producer_id: i64, producer_epoch: i16, committed: bool) -> CoordinatorRequest {
    CoordinatorRequest::EndTxn {
        transactional_id: TXN.to_owned(),
        producer_id: ProducerId(producer_id),
        producer_epoch: ProducerEpoch(producer_epoch),
        committed,
    }
}

fn markers_ok(request: &Request) -> Response {
    markers_error(request, ErrorCode::None)
}

/// The answer to a WriteTxnMarkers request with `error` for every partition.
fn markers_error(request: &Request, error: ErrorCode) -> Response {
    let Request::Replica(ReplicaRequest::WriteTxnMarkers { markers }) = request else {
        panic!("expected WriteTxnMarkers, got {request:?}");
    };
    Response::Replica(ReplicaResponse::WriteTxnMarkers {
        results: markers
            .iter()
            .map(|marker| {
                let partitions = marker
                    .partitions
                    .iter()
                    .map(|tp| (tp.clone(), error))
                    .collect();
                (marker.producer_id, partitions)
            })
            .collect(),
    })
}

/// The one marker of a WriteTxnMarkers request.
fn marker_of(request: &Request) -> &TxnMarker {
    let Request::Replica(ReplicaRequest::WriteTxnMarkers { markers }) = request else {
        panic!("expected WriteTxnMarkers, got {request:?}");
    };
    assert_eq!(markers.len(), 1);
    &markers[0]
}

/// The test's runtime: the shard, its environment, committed records and pending writes.
struct Runtime {
    shard: TransactionCoordinatorShard,
    image: MetadataImage,
    partition: TopicPartition,
    coordinator_epoch: i32,
    now_ms: i64,
    /// Every committed record, in order: what a new coordinator replays.
    log: Vec<TransactionRecord>,
    pending: VecDeque<ShardWrite<TransactionRecord>>,
    responses: Vec<(NodeId, u64, Response)>,
    requests: Vec<(NodeId, Request, u64)>,
    /// Coverage marks the shard reported.
    marks: Vec<&'static str>,
    next_correlation_id: u64,
}

impl Runtime {
    fn new(config: TransactionCoordinatorConfig) -> Self {
        Self::load(
            config,
            standard_image().image,
            Vec::new(),
            COORDINATOR_EPOCH,
            0,
        )
    }

    /// A shard loaded from `log` (replayed through the trait, then `loaded`).
    fn load(
        config: TransactionCoordinatorConfig,
        image: MetadataImage,
        log: Vec<TransactionRecord>,
        coordinator_epoch: i32,
        now_ms: i64,
    ) -> Self {
        let mut shard = TransactionCoordinatorShard::new(shard_partition(), config);
        for record in &log {
            shard.replay(record);
        }
        let mut runtime = Self {
            shard,
            image,
            partition: TopicPartition::new(TRANSACTION_STATE_TOPIC, shard_partition()),
            coordinator_epoch,
            now_ms,
            log,
            pending: VecDeque::new(),
            responses: Vec::new(),
            requests: Vec::new(),
            marks: Vec::new(),
            next_correlation_id: 100,
        };
        runtime.call(|shard, env, out| shard.loaded(env, out));
        runtime
    }

    /// The same partition's records loaded by a new coordinator in `coordinator_epoch`.
    fn failover(&self, coordinator_epoch: i32) -> Self {
        let config = self.shard.config().clone();
        let log = self.log.clone();
        Self::load(
            config,
            self.image.clone(),
            log,
            coordinator_epoch,
            self.now_ms,
        )
    }

    fn call(
        &mut self,
        action: impl FnOnce(
            &mut TransactionCoordinatorShard,
            &ShardEnv<'_>,
            &mut ShardOutput<TransactionRecord>,
        ),
    ) {
        let env = ShardEnv {
            now_ms: self.now_ms,
            image: &self.image,
            coordinator_epoch: self.coordinator_epoch,
            node_id: broker(1),
            partition: &self.partition,
        };
        let mut out = ShardOutput::default();
        action(&mut self.shard, &env, &mut out);
        self.pending.extend(out.writes);
        self.responses.extend(out.responses);
        self.requests.extend(out.requests);
        self.marks.extend(out.marks);
    }

    /// Sends `request` from `from`; returns its correlation id.
    fn send_from(&mut self, from: NodeId, request: CoordinatorRequest) -> u64 {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        self.call(|shard, env, out| shard.handle_request(env, from, correlation_id, request, out));
        correlation_id
    }

    fn send(&mut self, request: CoordinatorRequest) -> u64 {
        self.send_from(client(0), request)
    }

    /// Sends `request` and returns the answer given at once.
    fn ask(&mut self, request: CoordinatorRequest) -> Response {
        let correlation_id = self.send(request);
        self.take_response(correlation_id)
            .expect("an answer without a write")
    }

    /// Sends `request`, commits every write, and returns the answer.
    fn ask_committed(&mut self, request: CoordinatorRequest) -> Response {
        let correlation_id = self.send(request);
        self.commit_all();
        self.take_response(correlation_id).expect("an answer")
    }

    fn take_response(&mut self, correlation_id: u64) -> Option<Response> {
        let index = self
            .responses
            .iter()
            .position(|(_, id, _)| *id == correlation_id)?;
        Some(self.responses.remove(index).2)
    }

    fn take_requests(&mut self) -> Vec<(NodeId, Request, u64)> {
        std::mem::take(&mut self.requests)
    }

    /// The records of the oldest pending write (without committing it).
    fn next_write(&self) -> &[TransactionRecord] {
        &self.pending.front().expect("a pending write").records
    }

    /// Commits the oldest pending write: its records, stored as the partition stores them,
    /// are replayed, then the write completes.
    fn commit_next(&mut self) {
        let write = self.pending.pop_front().expect("a pending write");
        let batch = encode_records(&write.records, self.now_ms);
        let stored: Vec<TransactionRecord> = decode_records(&batch);
        assert_eq!(stored, write.records, "records survive their JSON form");
        for record in &stored {
            self.shard.replay(record);
        }
        self.log.extend(stored);
        self.call(|shard, env, out| shard.write_completed(env, write.write_id, Ok(()), out));
    }

    fn commit_all(&mut self) {
        while !self.pending.is_empty() {
            self.commit_next();
        }
    }

    fn fail_next(&mut self, error: ErrorCode) {
        let write = self.pending.pop_front().expect("a pending write");
        self.call(|shard, env, out| shard.write_completed(env, write.write_id, Err(error), out));
    }

    fn answer(&mut self, token: u64, response: Result<Response, ErrorCode>) {
        self.call(|shard, env, out| shard.handle_response(env, token, response, out));
    }

    /// Acknowledges every marker request sent so far.
    fn ack_all_markers(&mut self) {
        for (_, request, token) in self.take_requests() {
            let response = markers_ok(&request);
            self.answer(token, Ok(response));
        }
    }

    fn advance_to(&mut self, now_ms: i64) {
        self.now_ms = now_ms;
        self.call(|shard, env, out| shard.handle_timeout(env, out));
    }

    fn state(&self) -> &TransactionMetadata {
        self.shard.transaction(TXN).expect("the id exists")
    }

    /// InitProducerId for [`TXN`], committed: (producer id, epoch).
    fn init_producer(&mut self) -> (i64, i16) {
        match self.ask_committed(init(TXN, TIMEOUT_MS)) {
            Response::Coordinator(CoordinatorResponse::InitProducerId {
                error: ErrorCode::None,
                producer_id,
                producer_epoch,
            }) => (producer_id.0, producer_epoch.0),
            other => panic!("InitProducerId failed: {other:?}"),
        }
    }

    /// Adds `partitions` (committed) and checks the answer.
    fn add_partitions(&mut self, producer: (i64, i16), partitions: &[TopicPartition]) {
        let response = self.ask_committed(add(producer.0, producer.1, partitions));
        assert_add_answer(&response, partitions, ErrorCode::None);
    }
}

fn assert_add_answer(response: &Response, partitions: &[TopicPartition], error: ErrorCode) {
    let Response::Coordinator(CoordinatorResponse::AddPartitionsToTxn { results }) = response
    else {
        panic!("expected AddPartitionsToTxn, got {response:?}");
    };
    let expected: Vec<(TopicPartition, ErrorCode)> =
        partitions.iter().map(|tp| (tp.clone(), error)).collect();
    assert_eq!(results, &expected);
}

fn end_error(response: Response) -> ErrorCode {
    match response {
        Response::Coordinator(CoordinatorResponse::EndTxn { error, .. }) => error,
        other => panic!("expected EndTxn, got {other:?}"),
    }
}

fn init_answer(response: Response) -> (ErrorCode, i64, i16) {
    match response {
        Response::Coordinator(CoordinatorResponse::InitProducerId {
            error,
            producer_id,
            producer_epoch,
        }) => (error, producer_id.0, producer_epoch.0),
        other => panic!("expected InitProducerId, got {other:?}"),
    }
}

fn metadata_of(records: &[TransactionRecord]) -> &TransactionMetadata {
    match records {
        [TransactionRecord::Metadata {
            transactional_id,
            metadata,
        }] if transactional_id == TXN => metadata,
        other => panic!("expected one metadata record of {TXN}, got {other:?}"),
    }
}

#[test]
fn init_of_a_new_id_answers_epoch_zero_only_after_its_write_commits() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let correlation_id = rt.send(init(TXN, TIMEOUT_MS));
    assert!(
        rt.responses.is_empty(),
        "no answer before the write commits"
    );
    assert!(rt.shard.transaction(TXN).is_none(), "write, then apply");
    let written = metadata_of(rt.next_write()).clone();
    assert_eq!(written.producer_id, first_producer_id());
    assert_eq!(written.producer_epoch, 0);
    assert_eq!(written.state, TransactionState::Empty);
    assert_eq!(written.timeout_ms, TIMEOUT_MS);
    // A second InitProducerId while the first is being written must wait.
    let concurrent = rt.ask(init(TXN, TIMEOUT_MS));
    assert_eq!(init_answer(concurrent).0, ErrorCode::ConcurrentTransactions);
    rt.commit_all();
    let answer = rt.take_response(correlation_id).expect("answered");
    assert_eq!(
        init_answer(answer),
        (ErrorCode::None, first_producer_id(), 0)
    );
    assert_eq!(rt.state(), &written);
}

#[test]
fn producer_ids_of_new_ids_come_from_the_shard_range_and_never_repeat() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let ids: Vec<String> = own_keys().take(3).collect();
    let mut producer_ids = Vec::new();
    for id in &ids {
        let (error, producer_id, epoch) = init_answer(rt.ask_committed(init(id, TIMEOUT_MS)));
        assert_eq!((error, epoch), (ErrorCode::None, 0));
        producer_ids.push(producer_id);
    }
    let first = first_producer_id();
    assert_eq!(producer_ids, vec![first, first + 1, first + 2]);
    assert!(first >= 1 << 40, "never an idempotent producer's id");
}

#[test]
fn reinit_bumps_the_epoch_and_fences_the_previous_instance() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let (producer_id, epoch) = rt.init_producer();
    let (second_id, second_epoch) = rt.init_producer();
    assert_eq!((second_id, second_epoch), (producer_id, epoch + 1));
    let orders = [tp("orders", 0)];
    let stale_add = rt.ask(add(producer_id, epoch, &orders));
    assert_add_answer(&stale_add, &orders, ErrorCode::ProducerFenced);
    let stale_end = rt.ask(end(producer_id, epoch, true));
    assert_eq!(end_error(stale_end), ErrorCode::ProducerFenced);
    rt.add_partitions((producer_id, second_epoch), &orders);
    assert_eq!(rt.state().state, TransactionState::Ongoing);
}

#[test]
fn reinit_during_ongoing_aborts_with_markers_first_and_answers_concurrent_transactions() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let (producer_id, epoch) = rt.init_producer();
    let partitions = [tp("orders", 0), tp("orders", 1)];
    rt.add_partitions((producer_id, epoch), &partitions);

    // A second instance starts: the open transaction is aborted under a bumped epoch first.
    let correlation_id = rt.send_from(client(1), init(TXN, TIMEOUT_MS));
    let fence = metadata_of(rt.next_write()).clone();
    assert_eq!(fence.state, TransactionState::PrepareAbort);
    assert_eq!(fence.producer_epoch, epoch + 1);
    assert!(
        rt.take_requests().is_empty(),
        "no marker before PrepareAbort is durable"
    );
    rt.commit_next();
    let answer = rt.take_response(correlation_id).expect("answered");
    assert_eq!(init_answer(answer).0, ErrorCode::ConcurrentTransactions);

    let requests = rt.take_requests();
    let destinations: Vec<NodeId> = requests.iter().map(|(to, _, _)| *to).collect();
    assert_eq!(destinations, vec![broker(1), broker(2)]);
    for (_, request, _) in &requests {
        let marker = marker_of(request);
        assert!(!marker.committed, "ABORT");
        assert_eq!(marker.producer_id, ProducerId(producer_id));
        assert_eq!(
            marker.producer_epoch,
            ProducerEpoch(epoch + 1),
            "the bumped epoch"
        );
        assert_eq!(marker.coordinator_epoch, COORDINATOR_EPOCH);
    }
    // While the markers are out, the retry must wait.
    let early = rt.ask(init(TXN, TIMEOUT_MS));
    assert_eq!(init_answer(early).0, ErrorCode::ConcurrentTransactions);
    for (_, request, token) in requests {
        rt.answer(token, Ok(markers_ok(&request)));
    }
    let complete = metadata_of(rt.next_write()).clone();
    assert_eq!(complete.state, TransactionState::CompleteAbort);
    assert!(complete.partitions.is_empty());
    rt.commit_all();

    let (new_id, new_epoch) = rt.init_producer();
    assert_eq!((new_id, new_epoch), (producer_id, epoch + 2));
    let zombie = rt.ask(end(producer_id, epoch, true));
    assert_eq!(end_error(zombie), ErrorCode::ProducerFenced);
}

#[test]
fn commit_answers_once_prepare_is_durable_sends_markers_to_leaders_and_completes_after_all_acks() {
    // Transaction version 1: the markers carry the producer's own epoch (version 2's bump:
    // `v2_end_txn_bumps_the_epoch_for_the_markers_and_the_next_transaction`).
    let mut rt = Runtime::new(version_1());
    let producer = rt.init_producer();
    let partitions = [tp("orders", 0), tp("orders", 1), tp("payments", 0)];
    rt.add_partitions(producer, &partitions[..2]);
    rt.add_partitions(producer, &partitions[2..]);
    assert_eq!(
        rt.state().partitions,
        partitions.iter().cloned().collect::<BTreeSet<_>>()
    );

    let correlation_id = rt.send(end(producer.0, producer.1, true));
    assert!(
        rt.responses.is_empty(),
        "no answer before PrepareCommit is durable"
    );
    assert_eq!(
        metadata_of(rt.next_write()).state,
        TransactionState::PrepareCommit
    );
    assert!(
        rt.take_requests().is_empty(),
        "no marker before PrepareCommit is durable"
    );
    rt.commit_next();
    let answer = rt.take_response(correlation_id).expect("answered");
    assert_eq!(end_error(answer), ErrorCode::None);
    assert_eq!(rt.state().state, TransactionState::PrepareCommit);

    let requests = rt.take_requests();
    let sent: Vec<(NodeId, Vec<TopicPartition>)> = requests
        .iter()
        .map(|(to, request, _)| (*to, marker_of(request).partitions.clone()))
        .collect();
    assert_eq!(
        sent,
        vec![
            (broker(1), vec![tp("orders", 0)]),
            (broker(2), vec![tp("orders", 1)]),
            (broker(3), vec![tp("payments", 0)]),
        ]
    );
    for (_, request, _) in &requests {
        let marker = marker_of(request);
        assert!(marker.committed);
        assert_eq!((marker.producer_id.0, marker.producer_epoch.0), producer);
        assert_eq!(marker.coordinator_epoch, COORDINATOR_EPOCH);
    }
    // Requests during the marker phase wait.
    let during = rt.ask(end(producer.0, producer.1, true));
    assert_eq!(end_error(during), ErrorCode::ConcurrentTransactions);
    let add_during = rt.ask(add(producer.0, producer.1, &[tp("orders", 0)]));
    assert_add_answer(
        &add_during,
        &[tp("orders", 0)],
        ErrorCode::ConcurrentTransactions,
    );

    let mut requests = requests.into_iter();
    for (_, request, token) in requests.by_ref().take(2) {
        rt.answer(token, Ok(markers_ok(&request)));
        assert!(rt.pending.is_empty(), "not complete before every ack");
    }
    let (_, last, token) = requests.next().expect("three markers");
    rt.answer(token, Ok(markers_ok(&last)));
    let complete = metadata_of(rt.next_write()).clone();
    assert_eq!(complete.state, TransactionState::CompleteCommit);
    assert!(complete.partitions.is_empty());
    rt.commit_all();
    assert_eq!(rt.state().state, TransactionState::CompleteCommit);
    assert!(!rt.shard.is_in_progress(TXN));

    // A retry of the same EndTxn succeeds; the opposite outcome is an invalid transition.
    let retry = rt.ask(end(producer.0, producer.1, true));
    assert_eq!(end_error(retry), ErrorCode::None);
    let opposite = rt.ask(end(producer.0, producer.1, false));
    assert_eq!(end_error(opposite), ErrorCode::InvalidTxnState);
}

#[test]
fn end_txn_without_an_open_transaction_is_an_invalid_transition() {
    // Transaction version 1 (version 2 bumps on an empty abort:
    // `v2_abort_without_an_open_transaction_bumps_the_epoch`).
    let mut rt = Runtime::new(version_1());
    let producer = rt.init_producer();
    for committed in [true, false] {
        let answer = rt.ask(end(producer.0, producer.1, committed));
        assert_eq!(end_error(answer), ErrorCode::InvalidTxnState);
    }
}

#[test]
fn marker_retry_after_not_leader_goes_to_the_new_leader() {
    let mut builder = standard_image();
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let producer = rt.init_producer();
    rt.add_partitions(producer, &[tp("orders", 0)]);
    rt.ask_committed(end(producer.0, producer.1, true));
    let (to, request, token) = rt.take_requests().pop().expect("a marker");
    assert_eq!(to, broker(1));

    // Leadership moved to broker 3; the old leader refuses.
    builder.set_leader("orders", 0, Some(3), 1);
    rt.image = builder.image.clone();
    let refused = markers_error(&request, ErrorCode::NotLeaderOrFollower);
    rt.answer(token, Ok(refused));
    assert!(
        rt.take_requests().is_empty(),
        "retried after the backoff, not at once"
    );
    assert!(rt.pending.is_empty());
    let retry_at = rt.now_ms + rt.shard.config().retry_backoff_ms;
    assert_eq!(rt.shard.poll_timeout(), Some(retry_at));
    rt.advance_to(retry_at - 1);
    assert!(rt.take_requests().is_empty());
    rt.advance_to(retry_at);
    let (to, retried, token) = rt.take_requests().pop().expect("retried");
    assert_eq!(to, broker(3), "leaders are resolved again for every retry");
    assert_eq!(marker_of(&retried).partitions, vec![tp("orders", 0)]);
    assert_eq!(marker_of(&retried).coordinator_epoch, COORDINATOR_EPOCH);
    rt.answer(token, Ok(markers_ok(&retried)));
    rt.commit_all();
    assert_eq!(rt.state().state, TransactionState::CompleteCommit);
}

#[test]
fn marker_timeouts_are_retried_leaderless_partitions_wait_and_deleted_partitions_are_dropped() {
    let mut builder = standard_image();
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let producer = rt.init_producer();
    let partitions = [tp("orders", 0), tp("orders", 1), tp("payments", 0)];
    rt.add_partitions(producer, &partitions);
    rt.ask_committed(end(producer.0, producer.1, false));
    let requests = rt.take_requests();
    assert_eq!(requests.len(), 3);
    for (_, _, token) in requests {
        rt.answer(token, Err(ErrorCode::RequestTimedOut));
    }
    // orders-1 loses its leader; `payments` disappears from the image.
    builder.set_leader("orders", 1, None, 1);
    let mut image = builder.image.clone();
    let payments = image.topic_ids.remove("payments").expect("exists");
    image.topics.remove(&payments);
    rt.image = image;

    let backoff = rt.shard.config().retry_backoff_ms;
    rt.advance_to(rt.now_ms + backoff);
    let retried = rt.take_requests();
    let sent: Vec<(NodeId, Vec<TopicPartition>)> = retried
        .iter()
        .map(|(to, request, _)| (*to, marker_of(request).partitions.clone()))
        .collect();
    assert_eq!(sent, vec![(broker(1), vec![tp("orders", 0)])]);
    for (_, request, token) in retried {
        rt.answer(token, Ok(markers_ok(&request)));
    }
    assert!(rt.pending.is_empty(), "orders-1 still waits for a leader");

    builder.set_leader("orders", 1, Some(2), 2);
    let mut image = builder.image.clone();
    image.topic_ids.remove("payments");
    image.topics.remove(&payments);
    rt.image = image;
    rt.advance_to(rt.now_ms + backoff);
    let (to, request, token) = rt.take_requests().pop().expect("orders-1 at last");
    assert_eq!(to, broker(2));
    rt.answer(token, Ok(markers_ok(&request)));
    rt.commit_all();
    assert_eq!(rt.state().state, TransactionState::CompleteAbort);
}

#[test]
fn marker_refused_as_fenced_stops_the_marker_phase() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let producer = rt.init_producer();
    rt.add_partitions(producer, &[tp("orders", 0)]);
    rt.ask_committed(end(producer.0, producer.1, true));
    let (_, request, token) = rt.take_requests().pop().expect("a marker");
    let fenced = markers_error(&request, ErrorCode::TransactionCoordinatorFenced);
    rt.answer(token, Ok(fenced));
    assert!(rt.pending.is_empty());
    assert_eq!(rt.shard.poll_timeout(), None, "nothing is retried");
    assert_eq!(rt.state().state, TransactionState::PrepareCommit);
    let waiting = rt.ask(end(producer.0, producer.1, true));
    assert_eq!(end_error(waiting), ErrorCode::ConcurrentTransactions);
}

#[test]
fn a_fenced_marker_leaves_only_the_unacknowledged_partitions_in_prepare() {
    // orders-1's leader writes its marker; orders-0's answers INVALID_PRODUCER_EPOCH (its
    // producer state moved on), which ends the marker phase with orders-0 unwritten.
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let producer = rt.init_producer();
    rt.add_partitions(producer, &[tp("orders", 0), tp("orders", 1)]);
    rt.ask_committed(end(producer.0, producer.1, true));
    let mut requests = rt.take_requests();
    requests.sort_by_key(|(_, request, _)| marker_of(request).partitions.clone());
    let [(_, to_orders_0, fenced_token), (_, to_orders_1, ok_token)] = &requests[..] else {
        panic!("one marker request per leader: {requests:?}");
    };
    assert_eq!(marker_of(to_orders_0).partitions, vec![tp("orders", 0)]);
    rt.answer(*ok_token, Ok(markers_ok(to_orders_1)));
    assert_eq!(
        rt.state().partitions,
        BTreeSet::from([tp("orders", 0)]),
        "the acknowledged partition is dropped"
    );
    let fenced = markers_error(to_orders_0, ErrorCode::InvalidProducerEpoch);
    rt.answer(*fenced_token, Ok(fenced));
    assert_eq!(rt.state().state, TransactionState::PrepareCommit);
    assert_eq!(rt.state().partitions, BTreeSet::from([tp("orders", 0)]));
    assert_eq!(rt.shard.poll_timeout(), None, "nothing is retried");
    // The log keeps the Prepare record whole: a reloaded coordinator sends both again.
    let reloaded = rt.failover(rt.coordinator_epoch + 1);
    assert_eq!(
        reloaded.state().partitions,
        BTreeSet::from([tp("orders", 0), tp("orders", 1)])
    );
}

#[test]
fn timed_out_transaction_is_aborted_with_an_epoch_bump_that_fences_the_producer() {
    // Transaction version 1 (version 2 takes the producer's EndTxn at the old epoch for a
    // retry: `v2_after_a_timeout_abort_the_old_epoch_reads_as_a_retry`).
    let mut rt = Runtime::new(version_1());
    let correlation_id = rt.send(init(TXN, 1_000));
    rt.commit_all();
    let (_, producer_id, epoch) = init_answer(rt.take_response(correlation_id).unwrap());
    assert_eq!(
        rt.shard.poll_timeout(),
        Some(604_800_000),
        "expiration only"
    );
    rt.now_ms = 10;
    rt.add_partitions((producer_id, epoch), &[tp("orders", 0)]);
    assert_eq!(rt.state().txn_start_ms, 10);
    assert_eq!(
        rt.shard.poll_timeout(),
        Some(1_011),
        "start + timeout, exclusive"
    );

    rt.advance_to(1_010);
    assert!(rt.pending.is_empty(), "not yet timed out");
    rt.advance_to(1_011);
    let fence = metadata_of(rt.next_write()).clone();
    assert_eq!(fence.state, TransactionState::PrepareAbort);
    assert_eq!(fence.producer_epoch, epoch + 1);
    rt.commit_next();
    let (_, request, token) = rt.take_requests().pop().expect("an ABORT marker");
    let marker = marker_of(&request);
    assert!(!marker.committed);
    assert_eq!(marker.producer_epoch, ProducerEpoch(epoch + 1));
    rt.answer(token, Ok(markers_ok(&request)));
    rt.commit_all();
    assert_eq!(rt.state().state, TransactionState::CompleteAbort);

    // The producer that let its transaction time out is fenced.
    let commit = rt.ask(end(producer_id, epoch, true));
    assert_eq!(end_error(commit), ErrorCode::ProducerFenced);
    let more = rt.ask(add(producer_id, epoch, &[tp("orders", 1)]));
    assert_add_answer(&more, &[tp("orders", 1)], ErrorCode::ProducerFenced);
}

#[test]
fn failover_replays_the_records_and_finishes_a_prepare_commit_under_the_new_epoch() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let producer = rt.init_producer();
    rt.add_partitions(producer, &[tp("orders", 0), tp("orders", 1)]);
    rt.ask_committed(end(producer.0, producer.1, true));
    let old_markers = rt.take_requests();
    assert_eq!(
        old_markers.len(),
        2,
        "sent, never answered: the coordinator died"
    );

    let mut next = rt.failover(COORDINATOR_EPOCH + 1);
    assert_eq!(next.state().state, TransactionState::PrepareCommit);
    assert!(next.shard.is_in_progress(TXN));
    let requests = next.take_requests();
    let sent: Vec<(NodeId, Vec<TopicPartition>, i32, bool)> = requests
        .iter()
        .map(|(to, request, _)| {
            let marker = marker_of(request);
            (
                *to,
                marker.partitions.clone(),
                marker.coordinator_epoch,
                marker.committed,
            )
        })
        .collect();
    assert_eq!(
        sent,
        vec![
            (
                broker(1),
                vec![tp("orders", 0)],
                COORDINATOR_EPOCH + 1,
                true
            ),
            (
                broker(2),
                vec![tp("orders", 1)],
                COORDINATOR_EPOCH + 1,
                true
            ),
        ]
    );
    for (_, request, token) in requests {
        next.answer(token, Ok(markers_ok(&request)));
    }
    next.commit_all();
    assert_eq!(next.state().state, TransactionState::CompleteCommit);
    // The allocation counter survived too: a new id does not reuse the first one's producer id.
    let other = own_keys().next().expect("an id of this shard");
    let (_, producer_id, _) = init_answer(next.ask_committed(init(&other, TIMEOUT_MS)));
    assert_eq!(producer_id, first_producer_id() + 1);
}

#[test]
fn failover_keeps_ongoing_transactions_and_their_timeouts() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let producer = rt.init_producer();
    rt.add_partitions(producer, &[tp("orders", 0)]);
    let mut next = rt.failover(COORDINATOR_EPOCH + 1);
    assert!(
        next.take_requests().is_empty(),
        "an Ongoing transaction sends no marker"
    );
    assert_eq!(next.shard.poll_timeout(), Some(TIMEOUT_MS + 1));
    // The producer carries on with the new coordinator.
    let answer = next.ask_committed(end(producer.0, producer.1, false));
    assert_eq!(end_error(answer), ErrorCode::None);
    let (_, request, _) = next.take_requests().pop().expect("a marker");
    assert_eq!(marker_of(&request).coordinator_epoch, COORDINATOR_EPOCH + 1);
}

#[test]
fn stale_or_unknown_producers_are_rejected_as_kafka_does() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let orders = [tp("orders", 0)];
    let unknown = rt.ask(add(77, 0, &orders));
    assert_add_answer(&unknown, &orders, ErrorCode::InvalidProducerIdMapping);
    assert_eq!(
        end_error(rt.ask(end(77, 0, true))),
        ErrorCode::InvalidProducerIdMapping
    );
    let (producer_id, epoch) = rt.init_producer();
    let wrong_id = rt.ask(add(producer_id + 1, epoch, &orders));
    assert_add_answer(&wrong_id, &orders, ErrorCode::InvalidProducerIdMapping);
    for stale in [epoch + 1, epoch + 5] {
        let answer = rt.ask(add(producer_id, stale, &orders));
        assert_add_answer(&answer, &orders, ErrorCode::ProducerFenced);
        let answer = rt.ask(end(producer_id, stale, false));
        assert_eq!(end_error(answer), ErrorCode::ProducerFenced);
    }
    // KIP-360: an InitProducerId naming another producer id is fenced.
    let (error, _, _) = init_answer(rt.ask(reinit(producer_id + 1, 0)));
    assert_eq!(error, ErrorCode::ProducerFenced);
    let (error, _, _) = init_answer(rt.ask(reinit(producer_id, -1)));
    assert_eq!(error, ErrorCode::InvalidRequest, "id without epoch");
}

#[test]
fn kip360_reinit_with_the_current_epoch_bumps_once_and_a_retry_gets_the_same_epoch() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let (producer_id, epoch) = rt.init_producer();
    let bumped = init_answer(rt.ask_committed(reinit(producer_id, epoch)));
    assert_eq!(bumped, (ErrorCode::None, producer_id, epoch + 1));
    assert_eq!(rt.state().last_producer_epoch, epoch);
    // The answer was lost; the producer asks again with its old epoch: no second bump.
    let retried = init_answer(rt.ask_committed(reinit(producer_id, epoch)));
    assert_eq!(retried, (ErrorCode::None, producer_id, epoch + 1));
    let (error, _, _) = init_answer(rt.ask(reinit(producer_id, epoch + 7)));
    assert_eq!(
        error,
        ErrorCode::ProducerFenced,
        "neither current nor previous"
    );
    // A fresh instance (no producer id) bumps and forgets the previous epoch, fencing both.
    let (_, _, fresh_epoch) = init_answer(rt.ask_committed(init(TXN, TIMEOUT_MS)));
    assert_eq!(fresh_epoch, epoch + 2);
    let (error, _, _) = init_answer(rt.ask(reinit(producer_id, epoch + 1)));
    assert_eq!(error, ErrorCode::ProducerFenced);
}

/// Replays [`TXN`]'s metadata at the exhausted epoch (`i16::MAX - 1`) in `state`, with
/// `partitions` open since 0 (if any); returns its producer id.
fn replay_exhausted(
    rt: &mut Runtime,
    state: TransactionState,
    partitions: &[TopicPartition],
) -> i64 {
    let producer_id = first_producer_id() + 7;
    rt.shard.replay(&TransactionRecord::Metadata {
        transactional_id: TXN.to_owned(),
        metadata: TransactionMetadata {
            producer_id,
            last_producer_id: -1,
            producer_epoch: i16::MAX - 1,
            last_producer_epoch: -1,
            timeout_ms: TIMEOUT_MS,
            state,
            partitions: partitions.iter().cloned().collect(),
            txn_start_ms: if partitions.is_empty() { -1 } else { 0 },
            last_update_ms: 0,
            next_producer_id: -1,
        },
    });
    producer_id
}

#[test]
fn exhausted_epoch_rotates_to_a_new_producer_id() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let exhausted = i16::MAX - 1;
    let old_id = replay_exhausted(&mut rt, TransactionState::CompleteCommit, &[]);
    assert_eq!(
        rt.shard.next_producer_id(),
        old_id + 1,
        "replay moves the counter"
    );
    let rotated = init_answer(rt.ask_committed(reinit(old_id, exhausted)));
    assert_eq!(rotated, (ErrorCode::None, old_id + 1, 0));
    assert_eq!(rt.state().last_producer_id, old_id);
    // A retry with the old id and its exhausted epoch gets the same answer.
    let retried = init_answer(rt.ask_committed(reinit(old_id, exhausted)));
    assert_eq!(retried, (ErrorCode::None, old_id + 1, 0));
}

#[test]
fn requests_for_keys_of_another_partition_get_not_coordinator() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let key = foreign_key();
    let (error, _, _) = init_answer(rt.ask(init(&key, TIMEOUT_MS)));
    assert_eq!(error, ErrorCode::NotCoordinator);
    let add_request = CoordinatorRequest::AddPartitionsToTxn {
        transactional_id: key.clone(),
        producer_id: ProducerId(1),
        producer_epoch: ProducerEpoch(0),
        partitions: vec![tp("orders", 0)],
        verify_only: false,
    };
    assert_add_answer(
        &rt.ask(add_request),
        &[tp("orders", 0)],
        ErrorCode::NotCoordinator,
    );
    let end_request = CoordinatorRequest::EndTxn {
        transactional_id: key,
        producer_id: ProducerId(1),
        producer_epoch: ProducerEpoch(0),
        committed: true,
    };
    assert_eq!(end_error(rt.ask(end_request)), ErrorCode::NotCoordinator);
    assert!(rt.pending.is_empty());
}

#[test]
fn transaction_timeout_must_be_positive_and_at_most_the_maximum() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    for timeout_ms in [0, -1, 900_001] {
        let (error, _, _) = init_answer(rt.ask(init(TXN, timeout_ms)));
        assert_eq!(error, ErrorCode::InvalidTransactionTimeout, "{timeout_ms}");
    }
    let (error, _, _) = init_answer(rt.ask_committed(init(TXN, 900_000)));
    assert_eq!(error, ErrorCode::None);
}

#[test]
fn unknown_partitions_are_refused_and_nothing_is_written() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let producer = rt.init_producer();
    let partitions = [tp("orders", 0), tp("orders", 9), tp("nope", 0)];
    let answer = rt.ask(add(producer.0, producer.1, &partitions));
    let Response::Coordinator(CoordinatorResponse::AddPartitionsToTxn { results }) = answer else {
        panic!("expected AddPartitionsToTxn");
    };
    assert_eq!(
        results,
        vec![
            (tp("orders", 0), OPERATION_NOT_ATTEMPTED),
            (tp("orders", 9), ErrorCode::UnknownTopicOrPartition),
            (tp("nope", 0), ErrorCode::UnknownTopicOrPartition),
        ]
    );
    assert!(rt.pending.is_empty());
    assert_eq!(rt.state().state, TransactionState::Empty);
}

#[test]
fn adding_partitions_already_in_the_transaction_answers_without_a_write() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let producer = rt.init_producer();
    rt.add_partitions(producer, &[tp("orders", 0), tp("orders", 1)]);
    let answer = rt.ask(add(producer.0, producer.1, &[tp("orders", 1)]));
    assert_add_answer(&answer, &[tp("orders", 1)], ErrorCode::None);
    assert!(rt.pending.is_empty());
}

#[test]
fn failed_write_changes_nothing_and_answers_kafkas_coordinator_error() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let producer = rt.init_producer();
    let orders = [tp("orders", 0)];
    let correlation_id = rt.send(add(producer.0, producer.1, &orders));
    rt.fail_next(ErrorCode::NotEnoughReplicas);
    let answer = rt.take_response(correlation_id).expect("answered");
    assert_add_answer(&answer, &orders, ErrorCode::CoordinatorNotAvailable);
    assert_eq!(rt.state().state, TransactionState::Empty);
    assert!(!rt.shard.is_in_progress(TXN));

    let correlation_id = rt.send(add(producer.0, producer.1, &orders));
    rt.fail_next(ErrorCode::NotLeaderOrFollower);
    let answer = rt.take_response(correlation_id).expect("answered");
    assert_add_answer(&answer, &orders, ErrorCode::NotCoordinator);
    rt.add_partitions(producer, &orders);
}

#[test]
fn failed_completion_write_is_retried_after_the_backoff() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let producer = rt.init_producer();
    rt.add_partitions(producer, &[tp("orders", 0)]);
    rt.ask_committed(end(producer.0, producer.1, true));
    rt.ack_all_markers();
    rt.fail_next(ErrorCode::RequestTimedOut);
    assert_eq!(rt.state().state, TransactionState::PrepareCommit);
    let retry_at = rt.now_ms + rt.shard.config().retry_backoff_ms;
    assert_eq!(rt.shard.poll_timeout(), Some(retry_at));
    rt.advance_to(retry_at);
    assert!(
        rt.take_requests().is_empty(),
        "the markers are not sent again"
    );
    assert_eq!(
        metadata_of(rt.next_write()).state,
        TransactionState::CompleteCommit
    );
    rt.commit_all();
    assert_eq!(rt.state().state, TransactionState::CompleteCommit);
}

#[test]
fn unloaded_answers_requests_waiting_for_writes_with_not_coordinator() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let producer = rt.init_producer();
    let orders = [tp("orders", 0)];
    let add_id = rt.send(add(producer.0, producer.1, &orders));
    let other = own_keys().next().expect("an id of this shard");
    let init_id = rt.send(init(&other, TIMEOUT_MS));
    rt.call(|shard, _, out| shard.unloaded(out));
    let add_answer = rt.take_response(add_id).expect("answered");
    assert_add_answer(&add_answer, &orders, ErrorCode::NotCoordinator);
    let (error, _, _) = init_answer(rt.take_response(init_id).expect("answered"));
    assert_eq!(error, ErrorCode::NotCoordinator);
}

#[test]
fn idle_transactional_id_expires_with_a_tombstone() {
    let config = TransactionCoordinatorConfig {
        transactional_id_expiration_ms: 10_000,
        ..TransactionCoordinatorConfig::default()
    };
    let mut rt = Runtime::new(config);
    let (producer_id, _) = rt.init_producer();
    assert_eq!(rt.shard.poll_timeout(), Some(10_000));
    rt.advance_to(10_000);
    assert_eq!(
        rt.next_write(),
        &[TransactionRecord::Tombstone {
            transactional_id: TXN.to_owned(),
            producer_id,
        }]
    );
    rt.commit_all();
    assert!(rt.shard.transaction(TXN).is_none());
    // A later instance starts over with a new producer id, also after a failover.
    let mut next = rt.failover(COORDINATOR_EPOCH + 1);
    let (new_id, epoch) = next.init_producer();
    assert_eq!((new_id, epoch), (producer_id + 1, 0));
}

#[test]
fn record_json_form_is_stable() {
    let record = TransactionRecord::Metadata {
        transactional_id: "t".into(),
        metadata: TransactionMetadata {
            producer_id: 5,
            last_producer_id: -1,
            producer_epoch: 2,
            last_producer_epoch: 1,
            timeout_ms: 60_000,
            state: TransactionState::Ongoing,
            partitions: [tp("orders", 1)].into_iter().collect(),
            txn_start_ms: 10,
            last_update_ms: 11,
            next_producer_id: -1,
        },
    };
    let json = serde_json::to_string(&record).unwrap();
    assert_eq!(
        json,
        concat!(
            r#"{"Metadata":{"transactional_id":"t","metadata":{"producer_id":5,"#,
            r#""last_producer_id":-1,"producer_epoch":2,"last_producer_epoch":1,"#,
            r#""timeout_ms":60000,"state":"Ongoing","partitions":[{"topic":"orders","#,
            r#""partition":1}],"txn_start_ms":10,"last_update_ms":11}}}"#
        )
    );
    let tombstone = TransactionRecord::Tombstone {
        transactional_id: "t".into(),
        producer_id: 5,
    };
    assert_eq!(
        serde_json::to_string(&tombstone).unwrap(),
        r#"{"Tombstone":{"transactional_id":"t","producer_id":5}}"#
    );
}

#[test]
fn shard_runs_inside_the_runtime_host_over_a_real_partition_log() {
    use crate::coordinator::runtime::{HostContext, HostedCoordinator, ShardHost};
    use crate::log::{LogConfig, MemoryDisk, PartitionLog};
    use crate::node::Outbox;
    use crate::protocol::Message;

    let image = standard_image().image;
    let partition = TopicPartition::new(TRANSACTION_STATE_TOPIC, shard_partition());
    let mut log = PartitionLog::open(MemoryDisk::new(), LogConfig::default())
        .expect("empty log")
        .0;
    let mut outbox = Outbox::new(broker(1));
    let mut marks = Vec::new();
    let mut context = HostContext {
        broken: &[],
        now_ms: 0,
        image: &image,
        log: &mut log,
        leader_epoch: LeaderEpoch(COORDINATOR_EPOCH),
        outbox: &mut outbox,
        node_id: broker(1),
        enough_replicas: true,
        marks: &mut marks,
    };
    let shard = TransactionCoordinatorShard::new(shard_partition(), Default::default());
    let mut host: Box<dyn HostedCoordinator<MemoryDisk> + Send> =
        Box::new(ShardHost::load(partition.clone(), shard, &mut context));
    host.handle_request(&mut context, client(0), 9, init(TXN, TIMEOUT_MS));
    assert!(
        context.outbox.is_empty(),
        "answered once the write is committed"
    );
    let end = context.log.log_end_offset();
    context.log.maybe_increment_high_watermark(end);
    host.poll(&mut context);
    let answers = context.outbox.take();
    let [answer] = answers.as_slice() else {
        panic!("one answer, got {answers:?}");
    };
    let Message::Response(
        9,
        Response::Coordinator(CoordinatorResponse::InitProducerId {
            error,
            producer_id,
            producer_epoch,
        }),
    ) = &answer.message
    else {
        panic!("expected the InitProducerId answer, got {answer:?}");
    };
    assert_eq!(
        (*error, producer_id.0, producer_epoch.0),
        (ErrorCode::None, first_producer_id(), 0)
    );

    // A new leader loads the same log and knows the id.
    let mut context = HostContext {
        broken: &[],
        now_ms: 0,
        image: &image,
        log: &mut log,
        leader_epoch: LeaderEpoch(COORDINATOR_EPOCH + 1),
        outbox: &mut outbox,
        node_id: broker(2),
        enough_replicas: true,
        marks: &mut marks,
    };
    let shard = TransactionCoordinatorShard::new(shard_partition(), Default::default());
    let host = ShardHost::load(partition, shard, &mut context);
    let loaded = host.shard().transaction(TXN).expect("replayed");
    assert_eq!(loaded.producer_id, first_producer_id());
    assert_eq!(host.shard().next_producer_id(), first_producer_id() + 1);
}

#[test]
fn failed_timeout_abort_is_retried_after_the_backoff_not_in_a_busy_loop() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let producer = rt.init_producer();
    rt.add_partitions(producer, &[tp("orders", 0)]);
    let deadline = TIMEOUT_MS + 1;
    rt.advance_to(deadline);
    rt.fail_next(ErrorCode::NotEnoughReplicas);
    let retry_at = deadline + rt.shard.config().retry_backoff_ms;
    assert_eq!(rt.shard.poll_timeout(), Some(retry_at));
    rt.advance_to(retry_at - 1);
    assert!(rt.pending.is_empty());
    rt.advance_to(retry_at);
    assert_eq!(
        metadata_of(rt.next_write()).state,
        TransactionState::PrepareAbort
    );
}

fn verify(
    producer_id: i64,
    producer_epoch: i16,
    partitions: &[TopicPartition],
) -> CoordinatorRequest {
    CoordinatorRequest::AddPartitionsToTxn {
        transactional_id: TXN.to_owned(),
        producer_id: ProducerId(producer_id),
        producer_epoch: ProducerEpoch(producer_epoch),
        partitions: partitions.to_vec(),
        verify_only: true,
    }
}

#[test]
fn verification_answers_from_the_ongoing_transaction_and_adds_nothing() {
    // KIP-890 part 1: a partition leader asks before a transaction's first append there.
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let producer = rt.init_producer();
    let (orders_0, orders_1) = ([tp("orders", 0)], [tp("orders", 1)]);
    let answer = rt.ask(verify(producer.0, producer.1, &orders_0));
    assert_add_answer(&answer, &orders_0, ErrorCode::InvalidTxnState);
    rt.add_partitions(producer, &orders_0);
    let answer = rt.ask(verify(producer.0, producer.1, &orders_0));
    assert_add_answer(&answer, &orders_0, ErrorCode::None);
    let answer = rt.ask(verify(producer.0, producer.1, &orders_1));
    assert_add_answer(&answer, &orders_1, ErrorCode::InvalidTxnState);
    assert!(rt.pending.is_empty(), "a verification writes nothing");
    assert_eq!(rt.state().partitions.len(), 1, "and adds nothing");
    let answer = rt.ask(verify(producer.0, producer.1 + 1, &orders_0));
    assert_add_answer(&answer, &orders_0, ErrorCode::ProducerFenced);
    let answer = rt.ask(verify(producer.0 + 1, producer.1, &orders_0));
    assert_add_answer(&answer, &orders_0, ErrorCode::InvalidProducerIdMapping);
    // Ended (aborted, markers written): a late produce of the transaction is not in one.
    rt.ask_committed(end(producer.0, producer.1, false));
    for (_, request, token) in rt.take_requests() {
        rt.answer(token, Ok(markers_ok(&request)));
    }
    rt.commit_all();
    assert_eq!(rt.state().state, TransactionState::CompleteAbort);
    // Transaction version 2 bumped the epoch at the abort: the late produce is fenced.
    let answer = rt.ask(verify(producer.0, producer.1, &orders_0));
    assert_add_answer(&answer, &orders_0, ErrorCode::ProducerFenced);
}

#[test]
fn v1_verification_refuses_a_late_produce_at_the_same_epoch_as_not_in_a_transaction() {
    let mut rt = Runtime::new(version_1());
    let producer = rt.init_producer();
    let orders_0 = [tp("orders", 0)];
    rt.add_partitions(producer, &orders_0);
    rt.ask_committed(end(producer.0, producer.1, false));
    rt.ack_all_markers();
    rt.commit_all();
    let answer = rt.ask(verify(producer.0, producer.1, &orders_0));
    assert_add_answer(&answer, &orders_0, ErrorCode::InvalidTxnState);
    // ... but once the next transaction (same epoch) added the partition, the late produce
    // is verified into it: what part 2's bump closes.
    rt.add_partitions(producer, &orders_0);
    let answer = rt.ask(verify(producer.0, producer.1, &orders_0));
    assert_add_answer(&answer, &orders_0, ErrorCode::None);
}

// ----- transaction version 2 (KIP-890 part 2) -----

/// The whole answer to EndTxn: (error, producer id, epoch).
fn end_answer(response: Response) -> (ErrorCode, i64, i16) {
    match response {
        Response::Coordinator(CoordinatorResponse::EndTxn {
            error,
            producer_id,
            producer_epoch,
        }) => (error, producer_id.0, producer_epoch.0),
        other => panic!("expected EndTxn, got {other:?}"),
    }
}

/// Runs the marker phase to its completion write.
fn finish_markers(rt: &mut Runtime) {
    rt.ack_all_markers();
    rt.commit_all();
}

#[test]
fn v2_end_txn_bumps_the_epoch_for_the_markers_and_the_next_transaction() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let (producer_id, epoch) = rt.init_producer();
    rt.add_partitions((producer_id, epoch), &[tp("orders", 0), tp("orders", 1)]);
    let correlation_id = rt.send(end(producer_id, epoch, true));
    let prepare = metadata_of(rt.next_write()).clone();
    assert_eq!(prepare.state, TransactionState::PrepareCommit);
    assert_eq!(
        (prepare.producer_epoch, prepare.last_producer_epoch),
        (epoch + 1, epoch)
    );
    rt.commit_next();
    let answer = rt.take_response(correlation_id).expect("answered");
    assert_eq!(
        end_answer(answer),
        (ErrorCode::None, producer_id, epoch + 1),
        "the answer names the epoch the next transaction uses"
    );
    let requests = rt.take_requests();
    assert_eq!(requests.len(), 2);
    for (_, request, _) in &requests {
        let marker = marker_of(request);
        assert_eq!(
            (marker.producer_id.0, marker.producer_epoch.0),
            (producer_id, epoch + 1),
            "markers carry the bumped epoch"
        );
    }
    // While the markers are written, the retry waits.
    let during = rt.ask(end(producer_id, epoch, true));
    assert_eq!(end_error(during), ErrorCode::ConcurrentTransactions);
    for (_, request, token) in requests {
        rt.answer(token, Ok(markers_ok(&request)));
    }
    rt.commit_all();
    assert_eq!(rt.state().state, TransactionState::CompleteCommit);
    assert_eq!(rt.state().producer_epoch, epoch + 1);

    // A retry at the old epoch is answered from the completed state; the opposite outcome
    // is refused.
    let retry = rt.ask(end(producer_id, epoch, true));
    assert_eq!(end_answer(retry), (ErrorCode::None, producer_id, epoch + 1));
    let opposite = rt.ask(end(producer_id, epoch, false));
    assert_eq!(end_error(opposite), ErrorCode::InvalidTxnState);

    // The next transaction runs at e + 1; the previous one's late requests (at e) cannot
    // touch it: a held EndTxn(commit) is fenced, and so is a late produce's verification.
    rt.add_partitions((producer_id, epoch + 1), &[tp("orders", 0)]);
    assert!(rt.marks.is_empty());
    let late_commit = rt.ask(end(producer_id, epoch, true));
    assert_eq!(end_error(late_commit), ErrorCode::ProducerFenced);
    assert_eq!(rt.marks, vec!["txn-late-end-txn-fenced"]);
    assert!(rt.pending.is_empty(), "nothing written for it");
    assert_eq!(rt.state().state, TransactionState::Ongoing);
    let late_produce = rt.ask(verify(producer_id, epoch, &[tp("orders", 0)]));
    assert_add_answer(&late_produce, &[tp("orders", 0)], ErrorCode::ProducerFenced);
    let late_add = rt.ask(add(producer_id, epoch, &[tp("orders", 1)]));
    assert_add_answer(&late_add, &[tp("orders", 1)], ErrorCode::ProducerFenced);
}

#[test]
fn v1_a_late_end_txn_of_one_transaction_ends_the_next() {
    // What part 2 fixes: under version 1 both transactions share the epoch.
    let mut rt = Runtime::new(version_1());
    let producer = rt.init_producer();
    rt.add_partitions(producer, &[tp("orders", 0)]);
    rt.ask_committed(end(producer.0, producer.1, true));
    finish_markers(&mut rt);
    rt.add_partitions(producer, &[tp("orders", 1)]);
    let late_commit = rt.ask_committed(end(producer.0, producer.1, true));
    assert_eq!(end_answer(late_commit), (ErrorCode::None, -1, -1));
    assert_eq!(rt.state().state, TransactionState::PrepareCommit);
}

#[test]
fn v2_abort_without_an_open_transaction_bumps_the_epoch() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let (producer_id, epoch) = rt.init_producer();
    let commit = rt.ask(end(producer_id, epoch, true));
    assert_eq!(end_error(commit), ErrorCode::InvalidTxnState);
    let correlation_id = rt.send(end(producer_id, epoch, false));
    let prepare = metadata_of(rt.next_write()).clone();
    assert_eq!(prepare.state, TransactionState::PrepareAbort);
    assert!(prepare.partitions.is_empty());
    rt.commit_all();
    assert!(rt.take_requests().is_empty(), "no partition, no marker");
    let answer = rt.take_response(correlation_id).expect("answered");
    assert_eq!(
        end_answer(answer),
        (ErrorCode::None, producer_id, epoch + 1)
    );
    assert_eq!(rt.state().state, TransactionState::CompleteAbort);
    assert_eq!(rt.state().producer_epoch, epoch + 1);
    let stale = rt.ask(end(producer_id, epoch - 1, false));
    assert_eq!(end_error(stale), ErrorCode::ProducerFenced);
    let unknown = rt.ask(end(producer_id + 1, epoch, false));
    assert_eq!(end_error(unknown), ErrorCode::InvalidProducerIdMapping);
}

#[test]
fn v2_after_a_timeout_abort_the_old_epoch_reads_as_a_retry() {
    // Kafka 4.0's rule: the fence's bump and an EndTxn's bump are the same e + 1, so the
    // producer's abort at e is answered as a retry and it goes on at e + 1; its commit is
    // refused, and so is any AddPartitionsToTxn at e.
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let correlation_id = rt.send(init(TXN, 1_000));
    rt.commit_all();
    let (_, producer_id, epoch) = init_answer(rt.take_response(correlation_id).unwrap());
    rt.add_partitions((producer_id, epoch), &[tp("orders", 0)]);
    rt.advance_to(rt.now_ms + 1_001);
    rt.commit_all();
    finish_markers(&mut rt);
    assert_eq!(rt.state().state, TransactionState::CompleteAbort);
    let commit = rt.ask(end(producer_id, epoch, true));
    assert_eq!(end_error(commit), ErrorCode::InvalidTxnState);
    let more = rt.ask(add(producer_id, epoch, &[tp("orders", 1)]));
    assert_add_answer(&more, &[tp("orders", 1)], ErrorCode::ProducerFenced);
    let abort = rt.ask(end(producer_id, epoch, false));
    assert_eq!(end_answer(abort), (ErrorCode::None, producer_id, epoch + 1));
}

#[test]
fn v2_exhausted_epoch_completes_under_the_old_id_and_answers_a_fresh_one() {
    let mut rt = Runtime::new(TransactionCoordinatorConfig::default());
    let exhausted = i16::MAX - 1;
    let old_id = replay_exhausted(&mut rt, TransactionState::Ongoing, &[tp("orders", 0)]);
    let correlation_id = rt.send(end(old_id, exhausted, true));
    let prepare = metadata_of(rt.next_write()).clone();
    let new_id = old_id + 1;
    assert_eq!(
        (
            prepare.producer_id,
            prepare.producer_epoch,
            prepare.next_producer_id
        ),
        (old_id, i16::MAX, new_id)
    );
    rt.commit_next();
    let answer = rt.take_response(correlation_id).expect("answered");
    assert_eq!(end_answer(answer), (ErrorCode::None, new_id, 0));
    let (_, request, _) = rt.requests.first().expect("a marker").clone();
    let marker = marker_of(&request);
    assert_eq!(
        (marker.producer_id.0, marker.producer_epoch.0),
        (old_id, i16::MAX),
        "the markers still name the records' producer id"
    );
    finish_markers(&mut rt);
    let state = rt.state().clone();
    assert_eq!(
        (
            state.state,
            state.producer_id,
            state.producer_epoch,
            state.last_producer_id,
            state.next_producer_id
        ),
        (TransactionState::CompleteCommit, new_id, 0, old_id, -1)
    );
    // A retry from the old id at the exhausted epoch is recognised.
    let retry = rt.ask(end(old_id, exhausted, true));
    assert_eq!(end_answer(retry), (ErrorCode::None, new_id, 0));
    // The fresh id survives a reload: replay keeps the allocation counter above it.
    assert!(rt.shard.next_producer_id() > new_id);
}
