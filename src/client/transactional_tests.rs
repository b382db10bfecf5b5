//! Unit tests of the transactional producer. The scripted tests play the brokers and the
//! coordinator: they take the producer's outbox, check the exact requests and answer them. The
//! last test runs the producer against the real transaction coordinator shard and real
//! partition logs, and reads the result back as a READ_COMMITTED consumer.

use bytes::Bytes;

use super::*;
use crate::client::test_support::{
    broker, orders_metadata, produce_error, produce_ok, respond, take_requests, tp, Sent, CLUSTER,
};
use crate::node::Node;
use crate::protocol::{
    ClientKind, ClusterRequest, CoordinatorRequest, CoordinatorResponse, Envelope, Message,
    ReplicaRequest, ReplicaResponse,
};

const TXN_ID: &str = "orders-app";
const PID: i64 = 5_000;

/// `orders-0` led by broker 1 and `orders-1` by broker 3, in `leader_epoch`.
fn metadata(leader_epoch: i32) -> Response {
    orders_metadata(&[1, 2, 3], &[1, 3], leader_epoch)
}

fn coordinator_is(id: i32) -> Response {
    Response::Coordinator(CoordinatorResponse::FindCoordinator {
        error: ErrorCode::None,
        coordinator: Some(broker(id)),
    })
}

fn init_ok(producer_id: i64, producer_epoch: i16) -> Response {
    Response::Coordinator(CoordinatorResponse::InitProducerId {
        error: ErrorCode::None,
        producer_id: ProducerId(producer_id),
        producer_epoch: ProducerEpoch(producer_epoch),
    })
}

fn init_error(error: ErrorCode) -> Response {
    Response::Coordinator(CoordinatorResponse::InitProducerId {
        error,
        producer_id: ProducerId::NONE,
        producer_epoch: ProducerEpoch::NONE,
    })
}

fn add_answer(request: &Sent, error: ErrorCode) -> Response {
    let Request::Coordinator(CoordinatorRequest::AddPartitionsToTxn { partitions, .. }) =
        &request.request
    else {
        panic!("expected AddPartitionsToTxn, got {:?}", request.request);
    };
    Response::Coordinator(CoordinatorResponse::AddPartitionsToTxn {
        results: partitions.iter().map(|tp| (tp.clone(), error)).collect(),
    })
}

/// A transaction-version-1 EndTxn answer (no producer id or epoch in it).
fn end_answer(error: ErrorCode) -> Response {
    Response::Coordinator(CoordinatorResponse::EndTxn {
        error,
        producer_id: ProducerId::NONE,
        producer_epoch: ProducerEpoch::NONE,
    })
}

/// A transaction-version-2 EndTxn answer: NONE with the epoch the next transaction uses.
fn end_answer_v2(producer_epoch: i16) -> Response {
    Response::Coordinator(CoordinatorResponse::EndTxn {
        error: ErrorCode::None,
        producer_id: ProducerId(PID),
        producer_epoch: ProducerEpoch(producer_epoch),
    })
}

/// (producer id, epoch, base sequence, record count, transactional) of a Produce.
fn txn_stamp(sent: &Sent) -> (i64, i16, i32, i32, bool) {
    let (producer_id, epoch, base_sequence, records) = sent.stamp();
    let transactional = sent.batch().header().is_transactional();
    (producer_id, epoch, base_sequence, records, transactional)
}

struct Harness {
    producer: TransactionalProducer,
    now_ms: i64,
}

fn test_config() -> TransactionalProducerConfig {
    TransactionalProducerConfig {
        transaction_timeout_ms: 30_000,
        request_timeout_ms: 1_000,
        retry_backoff_ms: 100,
        delivery_timeout_ms: 10_000,
        ..TransactionalProducerConfig::new(TXN_ID)
    }
}

impl Harness {
    fn new(config: TransactionalProducerConfig) -> Self {
        let node = NodeId::Client(CLUSTER, ClientKind::Producer, 0);
        let producer =
            TransactionalProducer::new(node, vec![broker(1), broker(2), broker(3)], config)
                .expect("valid config");
        Self {
            producer,
            now_ms: 0,
        }
    }

    /// A producer that found its coordinator (broker 2), got metadata and `PID` epoch 0.
    fn ready() -> Self {
        let mut harness = Self::new(test_config());
        harness.advance_to(0);
        let start = harness.sent();
        assert_eq!(kinds(&start), vec!["Metadata", "FindCoordinator"]);
        assert_eq!(start[1].to, broker(1), "any broker: the bootstrap rotation");
        let Request::Coordinator(CoordinatorRequest::FindCoordinator { key_type, key }) =
            &start[1].request
        else {
            unreachable!();
        };
        assert_eq!(
            (*key_type, key.as_str()),
            (CoordinatorType::Transaction, TXN_ID)
        );
        harness.answer(&start[0], metadata(1));
        harness.answer(&start[1], coordinator_is(2));
        let init = harness.sent_one();
        assert_eq!(init.to, broker(2));
        let Request::Coordinator(CoordinatorRequest::InitProducerId {
            transactional_id,
            transaction_timeout_ms,
            producer_id,
            producer_epoch,
        }) = &init.request
        else {
            panic!("expected InitProducerId, got {:?}", init.request);
        };
        assert_eq!(transactional_id.as_deref(), Some(TXN_ID));
        assert_eq!(*transaction_timeout_ms, 30_000);
        assert_eq!((producer_id.0, producer_epoch.0), (-1, -1));
        harness.answer(&init, init_ok(PID, 0));
        assert!(harness.producer.is_ready());
        assert_eq!(
            harness.events(),
            vec![
                TransactionalEvent::CoordinatorFound {
                    coordinator: broker(2)
                },
                TransactionalEvent::ProducerIdAssigned {
                    producer: ProducerIdAndEpoch {
                        producer_id: PID,
                        epoch: 0
                    }
                },
            ]
        );
        harness
    }

    fn sent(&mut self) -> Vec<Sent> {
        take_requests(&mut self.producer)
    }

    /// Requests sent, Metadata requests answered (broker 1 and 3 lead, epoch 1) and left out.
    fn requests(&mut self) -> Vec<Sent> {
        let mut others = Vec::new();
        loop {
            let sent = self.sent();
            if sent.is_empty() {
                return others;
            }
            for request in sent {
                if request.request.kind() == "Metadata" {
                    self.answer(&request, metadata(1));
                } else {
                    others.push(request);
                }
            }
        }
    }

    fn sent_one(&mut self) -> Sent {
        let mut sent = self.requests();
        assert_eq!(sent.len(), 1, "{sent:?}");
        sent.remove(0)
    }

    fn send(&mut self, partition: i32, value: &str) -> SendHandle {
        self.producer.send(
            self.now_ms,
            "orders",
            partition,
            None,
            Some(Bytes::copy_from_slice(value.as_bytes())),
        )
    }

    fn answer(&mut self, request: &Sent, response: Response) {
        respond(&mut self.producer, self.now_ms, request, response);
    }

    fn advance_to(&mut self, now_ms: i64) {
        assert!(now_ms >= self.now_ms);
        self.now_ms = now_ms;
        self.producer.handle_timeout(now_ms);
    }

    fn events(&mut self) -> Vec<TransactionalEvent> {
        self.producer.take_events()
    }

    /// Sends `values` to `orders-0` in the open transaction, answers AddPartitionsToTxn;
    /// returns the Produce in flight.
    fn open_with_records_after_begin(&mut self, values: &[&str]) -> Sent {
        for value in values {
            self.send(0, value);
        }
        let add = self.sent_one();
        assert_eq!(add.request.kind(), "AddPartitionsToTxn");
        self.answer(&add, add_answer(&add, ErrorCode::None));
        self.sent_one()
    }

    /// Opens a transaction, sends `values` to `orders-0`, answers AddPartitionsToTxn; returns
    /// the Produce in flight.
    fn open_with_records(&mut self, values: &[&str]) -> Sent {
        self.producer.begin_transaction().expect("begin");
        let produce = self.open_with_records_after_begin(values);
        assert_eq!(produce.produce_partition(), &tp(0));
        produce
    }
}

fn kinds(sent: &[Sent]) -> Vec<&'static str> {
    sent.iter().map(|s| s.request.kind()).collect()
}

fn acked(handle: u64, partition: i32, offset: i64) -> TransactionalEvent {
    TransactionalEvent::Acked {
        handle: SendHandle(handle),
        topic_partition: tp(partition),
        offset,
    }
}

fn failed(handle: u64, error: TransactionalSendError, outcome_unknown: bool) -> TransactionalEvent {
    TransactionalEvent::Failed {
        handle: SendHandle(handle),
        topic_partition: tp(0),
        error,
        outcome_unknown,
    }
}

fn producer(epoch: i16) -> Option<ProducerIdAndEpoch> {
    Some(ProducerIdAndEpoch {
        producer_id: PID,
        epoch,
    })
}

#[test]
fn happy_path_find_coordinator_init_add_partitions_produce_end_txn() {
    let mut h = Harness::ready();
    assert_eq!(h.producer.begin_transaction(), Ok(0));
    h.send(0, "a");
    h.send(0, "b");
    h.send(1, "c");
    let add = h.sent_one();
    assert_eq!(add.to, broker(2), "to the coordinator");
    let Request::Coordinator(CoordinatorRequest::AddPartitionsToTxn {
        transactional_id,
        producer_id,
        producer_epoch,
        partitions,
        verify_only: false,
    }) = &add.request
    else {
        panic!("expected AddPartitionsToTxn, got {:?}", add.request);
    };
    assert_eq!(transactional_id, TXN_ID);
    assert_eq!((producer_id.0, producer_epoch.0), (PID, 0));
    assert_eq!(partitions, &vec![tp(0)], "sent with the first record");
    // orders-1 waits for the answer: one coordinator request at a time.
    h.answer(&add, add_answer(&add, ErrorCode::None));
    let sent = h.requests();
    assert_eq!(kinds(&sent), vec!["Produce", "AddPartitionsToTxn"]);
    let produce_0 = sent[0].clone();
    assert_eq!(produce_0.to, broker(1), "the partition leader");
    assert_eq!(txn_stamp(&produce_0), (PID, 0, 0, 2, true));
    let Request::Replica(ReplicaRequest::Produce { acks, .. }) = &produce_0.request else {
        unreachable!();
    };
    assert_eq!(*acks, Acks::All);
    h.answer(&sent[1], add_answer(&sent[1], ErrorCode::None));
    let produce_1 = h.sent_one();
    assert_eq!(produce_1.to, broker(3));
    assert_eq!(txn_stamp(&produce_1), (PID, 0, 0, 1, true));

    h.producer.commit_transaction(h.now_ms).expect("commit");
    assert!(h.requests().is_empty(), "EndTxn waits for every record");
    h.answer(&produce_0, produce_ok(10));
    assert!(h.requests().is_empty());
    h.answer(&produce_1, produce_ok(4));
    let end = h.sent_one();
    assert_eq!(end.to, broker(2));
    let Request::Coordinator(CoordinatorRequest::EndTxn {
        producer_id,
        producer_epoch,
        committed,
        ..
    }) = &end.request
    else {
        panic!("expected EndTxn, got {:?}", end.request);
    };
    assert_eq!(
        (producer_id.0, producer_epoch.0, *committed),
        (PID, 0, true)
    );
    h.answer(&end, end_answer(ErrorCode::None));
    assert_eq!(
        h.events(),
        vec![
            acked(0, 0, 10),
            acked(1, 0, 11),
            acked(2, 1, 4),
            TransactionalEvent::TransactionCompleted {
                transaction: 0,
                committed: true,
                producer: producer(0),
            },
        ]
    );

    // The next transaction adds its partitions again; sequences continue under the epoch.
    assert_eq!(h.producer.begin_transaction(), Ok(1));
    let produce = h.open_with_records_after_begin(&["d"]);
    assert_eq!(txn_stamp(&produce), (PID, 0, 2, 1, true));
}

#[test]
fn api_misuse_is_refused() {
    let mut h = Harness::ready();
    let outside = h.send(0, "x");
    assert_eq!(
        h.events(),
        vec![failed(
            outside.0,
            TransactionalSendError::NotInTransaction,
            false
        )]
    );
    assert_eq!(
        h.producer.commit_transaction(0),
        Err(TransactionApiError::NoTransaction)
    );
    assert_eq!(h.producer.begin_transaction(), Ok(0));
    assert_eq!(
        h.producer.begin_transaction(),
        Err(TransactionApiError::TransactionInProgress)
    );
    h.producer.abort_transaction(0).expect("abort");
    assert_eq!(
        h.producer.commit_transaction(0),
        Err(TransactionApiError::NoTransaction),
        "an empty abort completes at once"
    );
    assert!(h.requests().is_empty(), "the coordinator never heard of it");
    assert_eq!(
        h.events(),
        vec![TransactionalEvent::TransactionCompleted {
            transaction: 0,
            committed: false,
            producer: producer(0),
        }]
    );
    let config = TransactionalProducerConfig::new("");
    assert!(config.validate().is_err());
}

#[test]
fn retriable_produce_error_retries_the_same_bytes_after_the_backoff() {
    let mut h = Harness::ready();
    let produce = h.open_with_records(&["a"]);
    h.answer(&produce, produce_error(ErrorCode::NotLeaderOrFollower));
    assert!(h.sent().is_empty(), "after the backoff");
    h.advance_to(100);
    let sent = h.sent();
    assert_eq!(
        kinds(&sent),
        vec!["Metadata", "Produce"],
        "the leader is probably wrong: metadata is refreshed"
    );
    let retry = sent[1].clone();
    let (
        Request::Replica(ReplicaRequest::Produce { batch: first, .. }),
        Request::Replica(ReplicaRequest::Produce { batch: again, .. }),
    ) = (&produce.request, &retry.request)
    else {
        panic!("expected two Produce requests");
    };
    assert_eq!(first.bytes(), again.bytes(), "retries keep their bytes");
    h.answer(&retry, produce_ok(0));
    assert_eq!(h.events(), vec![acked(0, 0, 0)]);
}

#[test]
fn producer_fenced_by_the_coordinator_is_fatal() {
    let mut h = Harness::ready();
    h.producer.begin_transaction().unwrap();
    let handle = h.send(0, "a");
    let add = h.sent_one();
    h.answer(&add, add_answer(&add, ErrorCode::ProducerFenced));
    assert_eq!(h.producer.fatal_error(), Some(ErrorCode::ProducerFenced));
    assert_eq!(
        h.events(),
        vec![
            failed(
                handle.0,
                TransactionalSendError::ProducerFailed(ErrorCode::ProducerFenced),
                false
            ),
            TransactionalEvent::TransactionFailed {
                transaction: Some(0),
                fatal: true,
                error: ErrorCode::ProducerFenced,
            },
            TransactionalEvent::Fenced {
                error: ErrorCode::ProducerFenced
            },
        ]
    );
    assert_eq!(
        h.producer.begin_transaction(),
        Err(TransactionApiError::Fatal(ErrorCode::ProducerFenced))
    );
    let later = h.send(0, "b");
    assert_eq!(
        h.events(),
        vec![failed(
            later.0,
            TransactionalSendError::ProducerFailed(ErrorCode::ProducerFenced),
            false
        )]
    );
    assert_eq!(h.producer.poll_timeout(), None);
}

#[test]
fn invalid_producer_epoch_from_the_coordinator_and_producer_fenced_on_produce_are_fatal() {
    let mut h = Harness::ready();
    let produce = h.open_with_records(&["a"]);
    h.answer(&produce, produce_error(ErrorCode::ProducerFenced));
    let events = h.events();
    assert_eq!(
        events[0],
        failed(
            0,
            TransactionalSendError::ProducerFailed(ErrorCode::ProducerFenced),
            false
        ),
        "a definite refusal: not written"
    );
    assert!(events.contains(&TransactionalEvent::Fenced {
        error: ErrorCode::ProducerFenced
    }));

    let mut h = Harness::ready();
    let produce = h.open_with_records(&["a"]);
    h.answer(&produce, produce_ok(0));
    h.producer.commit_transaction(h.now_ms).unwrap();
    let end = h.sent_one();
    h.answer(&end, end_answer(ErrorCode::InvalidProducerEpoch));
    let events = h.events();
    assert_eq!(
        &events[1..],
        &[
            TransactionalEvent::TransactionFailed {
                transaction: Some(0),
                fatal: true,
                error: ErrorCode::InvalidProducerEpoch,
            },
            TransactionalEvent::Fenced {
                error: ErrorCode::InvalidProducerEpoch
            },
        ]
    );
}

#[test]
fn coordinator_move_is_followed_by_rediscovery() {
    let mut h = Harness::ready();
    let produce = h.open_with_records(&["a"]);
    h.answer(&produce, produce_ok(0));
    h.producer.commit_transaction(h.now_ms).unwrap();
    let end = h.sent_one();
    h.answer(&end, end_answer(ErrorCode::NotCoordinator));
    assert!(h.requests().is_empty(), "after the backoff");
    assert_eq!(h.producer.coordinator(), None);
    h.advance_to(100);
    let find = h.sent_one();
    assert_eq!(find.request.kind(), "FindCoordinator");
    h.answer(&find, coordinator_is(3));
    let end = h.sent_one();
    assert_eq!(end.to, broker(3), "EndTxn goes to the new coordinator");
    // The new coordinator is still completing: retry after the backoff, same coordinator.
    h.answer(&end, end_answer(ErrorCode::ConcurrentTransactions));
    h.advance_to(200);
    let end = h.sent_one();
    assert_eq!((end.to, end.request.kind()), (broker(3), "EndTxn"));
    h.answer(&end, end_answer(ErrorCode::None));
    assert!(h
        .events()
        .contains(&TransactionalEvent::TransactionCompleted {
            transaction: 0,
            committed: true,
            producer: producer(0),
        }));
}

#[test]
fn init_retries_concurrent_transactions_and_rediscovers_after_not_coordinator_or_timeout() {
    let mut h = Harness::new(test_config());
    h.advance_to(0);
    let find = h.sent_one();
    h.answer(&find, coordinator_is(2));
    let init = h.sent_one();
    h.answer(&init, init_error(ErrorCode::ConcurrentTransactions));
    assert!(h.requests().is_empty());
    h.advance_to(100);
    let init = h.sent_one();
    assert_eq!(
        (init.to, init.request.kind()),
        (broker(2), "InitProducerId")
    );
    h.answer(&init, init_error(ErrorCode::NotCoordinator));
    h.advance_to(200);
    let find = h.sent_one();
    assert_eq!(find.request.kind(), "FindCoordinator");
    h.answer(&find, coordinator_is(1));
    let init = h.sent_one();
    assert_eq!(init.to, broker(1));
    // No answer: the request times out, and the coordinator is looked up again.
    h.advance_to(1_200);
    assert!(h.requests().is_empty(), "after the backoff");
    h.advance_to(1_300);
    let find = h.sent_one();
    assert_eq!(find.request.kind(), "FindCoordinator");
    h.answer(&find, coordinator_is(1));
    let init = h.sent_one();
    h.answer(&init, init_ok(PID, 3));
    assert_eq!(h.producer.producer_id_and_epoch(), producer(3));
}

#[test]
fn abort_fails_unsent_records_waits_for_batches_in_flight_then_ends_the_transaction() {
    let mut h = Harness::ready();
    let produce = h.open_with_records(&["a"]);
    // Queued behind the batch in flight (one batch per partition in flight).
    let queued = h.send(0, "b");
    assert!(h.requests().is_empty());
    h.producer.abort_transaction(h.now_ms).unwrap();
    assert_eq!(
        h.events(),
        vec![failed(queued.0, TransactionalSendError::Aborted, false)]
    );
    assert!(
        h.requests().is_empty(),
        "EndTxn waits for the batch in flight"
    );
    assert_eq!(
        h.producer.commit_transaction(h.now_ms),
        Err(TransactionApiError::Completing)
    );
    h.answer(&produce, produce_ok(0));
    let end = h.sent_one();
    let Request::Coordinator(CoordinatorRequest::EndTxn { committed, .. }) = &end.request else {
        panic!("expected EndTxn, got {:?}", end.request);
    };
    assert!(!committed);
    h.answer(&end, end_answer(ErrorCode::None));
    assert_eq!(
        h.events(),
        vec![
            acked(0, 0, 0),
            TransactionalEvent::TransactionCompleted {
                transaction: 0,
                committed: false,
                producer: producer(0),
            },
        ]
    );
    // Nothing failed after being sent: no epoch bump, sequences continue.
    assert!(h.producer.is_ready());
    h.producer.begin_transaction().unwrap();
    let produce = h.open_with_records_after_begin(&["c"]);
    assert_eq!(txn_stamp(&produce), (PID, 0, 1, 1, true));
}

#[test]
fn v2_end_txn_answer_moves_the_next_transaction_to_the_bumped_epoch_from_sequence_0() {
    let mut h = Harness::ready();
    let produce = h.open_with_records(&["a", "b"]);
    assert_eq!(txn_stamp(&produce), (PID, 0, 0, 2, true));
    h.answer(&produce, produce_ok(10));
    h.producer.commit_transaction(h.now_ms).unwrap();
    let end = h.sent_one();
    h.answer(&end, end_answer_v2(1));
    assert_eq!(
        h.events(),
        vec![
            acked(0, 0, 10),
            acked(1, 0, 11),
            TransactionalEvent::TransactionCompleted {
                transaction: 0,
                committed: true,
                producer: producer(0),
            },
            TransactionalEvent::ProducerIdAssigned {
                producer: producer(1).unwrap()
            },
        ]
    );
    // The partition is added again (a new transaction) and written at epoch 1 from 0.
    h.producer.begin_transaction().unwrap();
    let produce = h.open_with_records_after_begin(&["c"]);
    assert_eq!(txn_stamp(&produce), (PID, 1, 0, 1, true));
    h.answer(&produce, produce_ok(13));
    h.producer.commit_transaction(h.now_ms).unwrap();
    let end = h.sent_one();
    let Request::Coordinator(CoordinatorRequest::EndTxn { producer_epoch, .. }) = &end.request
    else {
        panic!("expected EndTxn, got {:?}", end.request);
    };
    assert_eq!(
        producer_epoch.0, 1,
        "EndTxn names the epoch the transaction ran under"
    );
}

#[test]
fn v2_abort_after_a_failed_batch_needs_no_separate_epoch_bump() {
    // KAFKA-17898: the abort's own bump restarts every sequence, so no InitProducerId.
    let mut h = Harness::ready();
    let produce = h.open_with_records(&["a"]);
    h.answer(&produce, produce_error(ErrorCode::OutOfOrderSequenceNumber));
    h.events();
    h.producer.abort_transaction(h.now_ms).unwrap();
    let end = h.sent_one();
    h.answer(&end, end_answer_v2(1));
    assert!(h.requests().is_empty(), "no InitProducerId follows");
    h.producer.begin_transaction().unwrap();
    let produce = h.open_with_records_after_begin(&["b"]);
    assert_eq!(txn_stamp(&produce), (PID, 1, 0, 1, true));
}

#[test]
fn abortable_produce_error_requires_abort_and_bumps_the_epoch_afterwards() {
    let mut h = Harness::ready();
    let produce = h.open_with_records(&["a"]);
    h.answer(&produce, produce_error(ErrorCode::OutOfOrderSequenceNumber));
    assert_eq!(
        h.events(),
        vec![
            failed(
                0,
                TransactionalSendError::Rejected(ErrorCode::OutOfOrderSequenceNumber),
                false
            ),
            TransactionalEvent::TransactionFailed {
                transaction: Some(0),
                fatal: false,
                error: ErrorCode::OutOfOrderSequenceNumber,
            },
        ]
    );
    assert_eq!(
        h.producer.commit_transaction(h.now_ms),
        Err(TransactionApiError::Abortable(
            ErrorCode::OutOfOrderSequenceNumber
        ))
    );
    let late = h.send(0, "late");
    h.producer.abort_transaction(h.now_ms).unwrap();
    let end = h.sent_one();
    assert_eq!(end.request.kind(), "EndTxn");
    h.answer(&end, end_answer(ErrorCode::None));
    // KIP-360: the epoch is bumped with the producer id and epoch held, before anything else.
    let bump = h.sent_one();
    let Request::Coordinator(CoordinatorRequest::InitProducerId {
        producer_id,
        producer_epoch,
        ..
    }) = &bump.request
    else {
        panic!("expected InitProducerId, got {:?}", bump.request);
    };
    assert_eq!((producer_id.0, producer_epoch.0), (PID, 0));
    h.producer.begin_transaction().unwrap();
    h.send(0, "b");
    assert!(
        h.requests().is_empty(),
        "the new transaction waits for the bump"
    );
    h.answer(&bump, init_ok(PID, 1));
    assert_eq!(
        h.events(),
        vec![
            failed(late.0, TransactionalSendError::Aborted, false),
            TransactionalEvent::TransactionCompleted {
                transaction: 0,
                committed: false,
                producer: producer(0),
            },
            TransactionalEvent::ProducerIdAssigned {
                producer: producer(1).unwrap()
            },
        ]
    );
    let add = h.sent_one();
    h.answer(&add, add_answer(&add, ErrorCode::None));
    let produce = h.sent_one();
    assert_eq!(
        txn_stamp(&produce),
        (PID, 1, 0, 1, true),
        "sequence 0 under the new epoch"
    );
}

#[test]
fn delivery_timeout_makes_the_transaction_abortable() {
    let mut h = Harness::ready();
    let produce = h.open_with_records(&["a"]);
    // The leader never answers; retries follow request timeouts until the delivery timeout.
    let mut last = produce;
    for _ in 0..20 {
        let deadline = h.now_ms + 1_000;
        h.advance_to(deadline);
        for sent in h.requests() {
            if sent.request.kind() == "Metadata" {
                h.answer(&sent, metadata(1));
            }
        }
        h.advance_to(h.now_ms + 100);
        for sent in h.requests() {
            match sent.request.kind() {
                "Produce" => last = sent,
                "Metadata" => h.answer(&sent, metadata(1)),
                _ => {}
            }
        }
        if h.producer.transaction().map(|t| t.1) != Some(TransactionPhase::Open) {
            break;
        }
    }
    assert_eq!(
        h.producer.transaction(),
        Some((
            0,
            TransactionPhase::AbortableError(ErrorCode::RequestTimedOut)
        ))
    );
    let events = h.events();
    assert!(events.contains(&failed(0, TransactionalSendError::DeliveryTimeout, true)));
    // A late answer of the abandoned request changes nothing.
    h.answer(&last, produce_ok(0));
    assert!(h.events().is_empty());
    h.producer.abort_transaction(h.now_ms).unwrap();
    let end = h.sent_one();
    h.answer(&end, end_answer(ErrorCode::None));
    let bump = h.sent_one();
    assert_eq!(
        bump.request.kind(),
        "InitProducerId",
        "the sequence may have a hole"
    );
}

#[test]
fn unanswered_add_partitions_is_resent_before_the_abort() {
    let mut h = Harness::ready();
    h.producer.begin_transaction().unwrap();
    let handle = h.send(0, "a");
    let add = h.sent_one();
    h.advance_to(1_000);
    assert!(
        h.requests().is_empty(),
        "the coordinator is looked up after the backoff"
    );
    h.producer.abort_transaction(h.now_ms).unwrap();
    assert_eq!(
        h.events(),
        vec![failed(handle.0, TransactionalSendError::Aborted, false)]
    );
    h.advance_to(1_100);
    let find = h.sent_one();
    h.answer(&find, coordinator_is(2));
    // The first AddPartitionsToTxn may have been applied: tell the coordinator again, so the
    // EndTxn(abort) that follows finds the transaction.
    let add_again = h.sent_one();
    let (
        Request::Coordinator(CoordinatorRequest::AddPartitionsToTxn { partitions: a, .. }),
        Request::Coordinator(CoordinatorRequest::AddPartitionsToTxn { partitions: b, .. }),
    ) = (&add.request, &add_again.request)
    else {
        panic!(
            "expected AddPartitionsToTxn twice, got {:?}",
            add_again.request
        );
    };
    assert_eq!(a, b);
    h.answer(&add_again, add_answer(&add_again, ErrorCode::None));
    let end = h.sent_one();
    assert_eq!(end.request.kind(), "EndTxn");
}

#[test]
fn empty_commit_completes_without_requests() {
    let mut h = Harness::ready();
    h.producer.begin_transaction().unwrap();
    h.producer.commit_transaction(h.now_ms).unwrap();
    assert!(h.requests().is_empty());
    assert_eq!(
        h.events(),
        vec![TransactionalEvent::TransactionCompleted {
            transaction: 0,
            committed: true,
            producer: producer(0),
        }]
    );
}

/// The producer, the real coordinator shard and real partition logs together. The test is the
/// broker: it appends produce batches as leader, writes markers with coordinator origin, and
/// reads back with READ_COMMITTED.
mod end_to_end {
    use crate::common::LeaderEpoch;
    use crate::protocol::Offset;
    use std::collections::BTreeMap;

    use super::*;
    use crate::client::{completed_fetch, IsolationLevel};
    use crate::coordinator::transaction::{
        TransactionCoordinatorConfig, TransactionCoordinatorShard, TransactionRecord,
    };
    use crate::coordinator::{
        partition_for, Shard, ShardEnv, ShardOutput, TRANSACTION_STATE_TOPIC,
    };
    use crate::log::{AppendOrigin, FetchIsolation, LogConfig, MemoryDisk, PartitionLog};
    use crate::metadata::{MetadataImage, MetadataRecord, PartitionRecord};
    use crate::protocol::TopicId;
    use crate::record::{end_transaction_marker, MarkerProducer};

    const LEADER_EPOCH: i32 = 0;
    const COORDINATOR_EPOCH: i32 = 3;

    struct Cluster {
        image: MetadataImage,
        coordinator_partition: TopicPartition,
        shard: TransactionCoordinatorShard,
        logs: BTreeMap<TopicPartition, PartitionLog<MemoryDisk>>,
        /// Messages for clients: (to, envelope).
        to_clients: Vec<Envelope>,
        now_ms: i64,
        markers_written: usize,
    }

    impl Cluster {
        fn new() -> Self {
            let mut image = MetadataImage::default();
            let apply = |image: &mut MetadataImage, record: MetadataRecord| {
                let offset = image.next_offset;
                image.apply(offset, &record);
            };
            for (name, id, leaders) in [
                (TRANSACTION_STATE_TOPIC, 1, vec![1, 1]),
                ("orders", 7, vec![1, 3]),
            ] {
                let topic_id = TopicId(id);
                apply(
                    &mut image,
                    MetadataRecord::Topic {
                        name: name.into(),
                        topic_id,
                    },
                );
                for (partition, leader) in leaders.into_iter().enumerate() {
                    apply(
                        &mut image,
                        MetadataRecord::Partition(PartitionRecord {
                            topic_id,
                            partition: partition as i32,
                            replicas: vec![BrokerId(leader)],
                            isr: vec![BrokerId(leader)],
                            leader: Some(BrokerId(leader)),
                            leader_epoch: LEADER_EPOCH,
                            partition_epoch: 0,
                            eligible_leader_replicas: Vec::new(),
                            last_known_elr: Vec::new(),
                        }),
                    );
                }
            }
            let index = partition_for(TXN_ID, 2);
            let mut logs = BTreeMap::new();
            for partition in 0..2 {
                let log = PartitionLog::open(MemoryDisk::new(), LogConfig::default())
                    .expect("empty log")
                    .0;
                logs.insert(tp(partition), log);
            }
            let mut cluster = Self {
                image,
                coordinator_partition: TopicPartition::new(TRANSACTION_STATE_TOPIC, index),
                shard: TransactionCoordinatorShard::new(
                    index,
                    TransactionCoordinatorConfig::default(),
                ),
                logs,
                to_clients: Vec::new(),
                now_ms: 0,
                markers_written: 0,
            };
            cluster.with_shard(|shard, env, out| shard.loaded(env, out));
            cluster
        }

        fn coordinator_node(&self) -> NodeId {
            broker(1)
        }

        /// Calls the shard and carries out its output: writes commit at once (a one-replica
        /// `__transaction_state`), markers are appended to the data logs and answered.
        fn with_shard(
            &mut self,
            action: impl FnOnce(
                &mut TransactionCoordinatorShard,
                &ShardEnv<'_>,
                &mut ShardOutput<TransactionRecord>,
            ),
        ) {
            let mut out = ShardOutput::default();
            {
                let env = ShardEnv {
                    now_ms: self.now_ms,
                    image: &self.image,
                    coordinator_epoch: COORDINATOR_EPOCH,
                    node_id: self.coordinator_node(),
                    partition: &self.coordinator_partition,
                };
                action(&mut self.shard, &env, &mut out);
            }
            while !out.is_empty() {
                let mut next = ShardOutput::default();
                let env = ShardEnv {
                    now_ms: self.now_ms,
                    image: &self.image,
                    coordinator_epoch: COORDINATOR_EPOCH,
                    node_id: self.coordinator_node(),
                    partition: &self.coordinator_partition,
                };
                for write in out.writes.drain(..) {
                    for record in &write.records {
                        self.shard.replay(record);
                    }
                    self.shard
                        .write_completed(&env, write.write_id, Ok(()), &mut next);
                }
                for (to, correlation_id, response) in out.responses.drain(..) {
                    self.to_clients.push(Envelope {
                        from: self.coordinator_node(),
                        principal: None,
                        connection: 0,
                        to,
                        message: Message::Response(correlation_id, response),
                    });
                }
                for (_, request, token) in out.requests.drain(..) {
                    let response = write_markers(&mut self.logs, &request, self.now_ms);
                    self.markers_written += 1;
                    self.shard
                        .handle_response(&env, token, Ok(response), &mut next);
                }
                out = next;
            }
        }

        /// Handles one request from a client.
        fn handle(&mut self, envelope: Envelope) {
            let Message::Request(correlation_id, request) = envelope.message else {
                panic!("clients send requests");
            };
            let from = envelope.from;
            let response = match request {
                Request::Cluster(ClusterRequest::Metadata { .. }) => metadata(LEADER_EPOCH),
                Request::Coordinator(CoordinatorRequest::FindCoordinator { .. }) => {
                    Response::Coordinator(CoordinatorResponse::FindCoordinator {
                        error: ErrorCode::None,
                        coordinator: Some(self.coordinator_node()),
                    })
                }
                Request::Replica(ReplicaRequest::Produce {
                    topic_partition,
                    batch,
                    ..
                }) => {
                    let log = self.logs.get_mut(&topic_partition).expect("a data log");
                    let appended = log.append_as_leader(
                        &batch,
                        LeaderEpoch(LEADER_EPOCH),
                        AppendOrigin::Client,
                        0,
                    );
                    let (error, base_offset) = match appended {
                        Ok(info) => (ErrorCode::None, info.first_offset),
                        Err(error) => (ErrorCode::from(&error), Offset(-1)),
                    };
                    let end = log.log_end_offset();
                    log.maybe_increment_high_watermark(end);
                    Response::Replica(ReplicaResponse::Produce {
                        error,
                        base_offset,
                        log_append_time_ms: None,
                        log_start_offset: Offset(0),
                    })
                }
                Request::Coordinator(coordinator_request) => {
                    self.with_shard(|shard, env, out| {
                        shard.handle_request(env, from, correlation_id, coordinator_request, out)
                    });
                    return;
                }
                // Nothing else answers in this harness.
                Request::Replica(_)
                | Request::Controller(_)
                | Request::Mirror(_)
                | Request::Cluster(_) => return,
            };
            self.to_clients.push(Envelope {
                from: envelope.to,
                principal: None,
                connection: 0,
                to: from,
                message: Message::Response(correlation_id, response),
            });
        }

        /// Delivers messages until nobody has anything to say.
        fn run(&mut self, producers: &mut [&mut TransactionalProducer]) {
            for _ in 0..1_000 {
                let mut quiet = true;
                for producer in producers.iter_mut() {
                    producer.handle_timeout(self.now_ms);
                    for envelope in producer.take_outbox() {
                        quiet = false;
                        self.handle(envelope);
                    }
                }
                for envelope in std::mem::take(&mut self.to_clients) {
                    quiet = false;
                    let producer = producers
                        .iter_mut()
                        .find(|p| p.node_id() == envelope.to)
                        .expect("a known client");
                    producer.handle_message(self.now_ms, envelope);
                }
                if quiet {
                    // Let backoffs pass.
                    let next = producers
                        .iter()
                        .filter_map(|p| p.poll_timeout())
                        .chain(self.shard.poll_timeout())
                        .min();
                    match next {
                        Some(at) if at <= self.now_ms + 1_000 => {
                            self.now_ms = self.now_ms.max(at);
                            self.with_shard(|shard, env, out| shard.handle_timeout(env, out));
                        }
                        _ => return,
                    }
                }
            }
            panic!("the exchange did not settle");
        }

        fn read(&self, partition: i32, isolation: IsolationLevel) -> Vec<String> {
            let log = &self.logs[&tp(partition)];
            let fetch_isolation = match isolation {
                IsolationLevel::ReadCommitted => FetchIsolation::TxnCommitted,
                IsolationLevel::ReadUncommitted => FetchIsolation::HighWatermark,
            };
            let data = log
                .read(Offset(0), usize::MAX, fetch_isolation, true)
                .expect("in range");
            let aborted = data.aborted_transactions.unwrap_or_default();
            let fetch = completed_fetch(0, &data.batches, &aborted, isolation).expect("valid");
            fetch
                .records
                .into_iter()
                .map(|record| {
                    String::from_utf8(record.value.expect("a value").to_vec()).expect("utf-8")
                })
                .collect()
        }
    }

    /// A partition leader's WriteTxnMarkers: append each marker with coordinator origin.
    fn write_markers(
        logs: &mut BTreeMap<TopicPartition, PartitionLog<MemoryDisk>>,
        request: &Request,
        now_ms: i64,
    ) -> Response {
        let Request::Replica(ReplicaRequest::WriteTxnMarkers { markers }) = request else {
            panic!("the shard sends only markers, got {request:?}");
        };
        let mut results = Vec::new();
        for marker in markers {
            let mut partitions = Vec::new();
            for topic_partition in &marker.partitions {
                let batch = end_transaction_marker(
                    MarkerProducer {
                        producer_id: marker.producer_id.0,
                        producer_epoch: marker.producer_epoch.0,
                    },
                    marker.committed,
                    marker.coordinator_epoch,
                    now_ms,
                );
                let log = logs.get_mut(topic_partition).expect("a data log");
                let error = match log.append_as_leader(
                    &batch,
                    LeaderEpoch(LEADER_EPOCH),
                    AppendOrigin::Coordinator,
                    now_ms,
                ) {
                    Ok(_) => ErrorCode::None,
                    Err(error) => ErrorCode::from(&error),
                };
                let end = log.log_end_offset();
                log.maybe_increment_high_watermark(end);
                partitions.push((topic_partition.clone(), error));
            }
            results.push((marker.producer_id, partitions));
        }
        Response::Replica(ReplicaResponse::WriteTxnMarkers { results })
    }

    fn new_producer(index: u16) -> TransactionalProducer {
        let node = NodeId::Client(CLUSTER, ClientKind::Producer, index);
        TransactionalProducer::new(node, vec![broker(1)], test_config()).expect("valid")
    }

    fn completed(events: &[TransactionalEvent]) -> Vec<(u64, bool)> {
        events
            .iter()
            .filter_map(|event| match event {
                TransactionalEvent::TransactionCompleted {
                    transaction,
                    committed,
                    ..
                } => Some((*transaction, *committed)),
                _ => None,
            })
            .collect()
    }

    fn send(cluster: &Cluster, producer: &mut TransactionalProducer, partition: i32, value: &str) {
        producer.send(
            cluster.now_ms,
            "orders",
            partition,
            None,
            Some(Bytes::copy_from_slice(value.as_bytes())),
        );
    }

    #[test]
    fn committed_data_is_visible_to_read_committed_and_aborted_or_fenced_data_is_not() {
        let mut cluster = Cluster::new();
        let mut first = new_producer(0);
        cluster.run(&mut [&mut first]);
        assert!(first.is_ready());

        // Transaction 0 commits on both partitions.
        first.begin_transaction().unwrap();
        send(&cluster, &mut first, 0, "c1");
        send(&cluster, &mut first, 1, "c2");
        cluster.run(&mut [&mut first]);
        first.commit_transaction(cluster.now_ms).unwrap();
        cluster.run(&mut [&mut first]);
        // Transaction 1 aborts.
        first.begin_transaction().unwrap();
        send(&cluster, &mut first, 0, "a1");
        send(&cluster, &mut first, 1, "a2");
        cluster.run(&mut [&mut first]);
        first.abort_transaction(cluster.now_ms).unwrap();
        cluster.run(&mut [&mut first]);
        // Transaction 2 commits on one partition.
        first.begin_transaction().unwrap();
        send(&cluster, &mut first, 0, "c3");
        first.commit_transaction(cluster.now_ms).unwrap();
        cluster.run(&mut [&mut first]);
        assert_eq!(
            completed(&first.take_events()),
            vec![(0, true), (1, false), (2, true)]
        );
        assert_eq!(
            cluster.markers_written, 5,
            "one request per leader per transaction"
        );

        // Transaction 3 is left open; a second instance fences it (the coordinator aborts it
        // under a bumped epoch), and the zombie's commit is refused.
        first.begin_transaction().unwrap();
        send(&cluster, &mut first, 1, "z1");
        cluster.run(&mut [&mut first]);
        let mut second = new_producer(1);
        cluster.run(&mut [&mut first, &mut second]);
        assert!(second.is_ready());
        let zombie = first.producer_id_and_epoch().unwrap();
        let successor = second.producer_id_and_epoch().unwrap();
        assert_eq!(successor.producer_id, zombie.producer_id);
        assert_eq!(
            successor.epoch,
            zombie.epoch + 2,
            "fence bump, then re-init bump"
        );
        first.commit_transaction(cluster.now_ms).unwrap();
        cluster.run(&mut [&mut first, &mut second]);
        assert!(first.take_events().contains(&TransactionalEvent::Fenced {
            error: ErrorCode::ProducerFenced
        }));
        // The successor writes and commits.
        second.begin_transaction().unwrap();
        send(&cluster, &mut second, 1, "c4");
        second.commit_transaction(cluster.now_ms).unwrap();
        cluster.run(&mut [&mut second]);
        assert_eq!(completed(&second.take_events()), vec![(0, true)]);

        assert_eq!(
            cluster.read(0, IsolationLevel::ReadCommitted),
            vec!["c1", "c3"]
        );
        assert_eq!(
            cluster.read(1, IsolationLevel::ReadCommitted),
            vec!["c2", "c4"]
        );
        assert_eq!(
            cluster.read(1, IsolationLevel::ReadUncommitted),
            vec!["c2", "a2", "z1", "c4"],
            "aborted data is in the log, only hidden"
        );
        for partition in 0..2 {
            let log = &cluster.logs[&tp(partition)];
            assert_eq!(
                log.last_stable_offset(),
                log.high_watermark(),
                "nothing open"
            );
        }
    }
}

#[test]
fn a_mirror_partition_refused_by_add_partitions_makes_the_transaction_abortable() {
    // KIP-1279: AddPartitionsToTxn refuses a mirror partition that is not stopped with
    // READ_ONLY_TOPIC. As Java does with a partition error it has no case for, the transaction
    // becomes abortable (not fatal): its records fail, the abort needs no EndTxn (nothing was
    // added), and the next transaction may try again.
    let mut h = Harness::ready();
    h.producer.begin_transaction().unwrap();
    let refused = h.send(0, "a");
    let add = h.sent_one();
    assert_eq!(add.request.kind(), "AddPartitionsToTxn");
    h.answer(&add, add_answer(&add, ErrorCode::ReadOnlyTopic));
    assert_eq!(
        h.events(),
        vec![
            TransactionalEvent::TransactionFailed {
                transaction: Some(0),
                fatal: false,
                error: ErrorCode::ReadOnlyTopic,
            },
            failed(refused.0, TransactionalSendError::Aborted, false),
        ]
    );
    assert!(h.producer.fatal_error().is_none());
    h.producer.abort_transaction(h.now_ms).unwrap();
    assert!(
        h.requests().is_empty(),
        "no EndTxn for an empty transaction"
    );
    assert_eq!(
        h.events(),
        vec![TransactionalEvent::TransactionCompleted {
            transaction: 0,
            committed: false,
            producer: producer(0),
        }]
    );
    h.producer.begin_transaction().unwrap();
    h.send(0, "b");
    assert_eq!(h.sent_one().request.kind(), "AddPartitionsToTxn");
}
