//! Unit tests of the idempotent producer. The test plays the brokers: it takes the producer's
//! outbox, checks the exact requests, and answers with `handle_message`.

use bytes::Bytes;

use super::*;
use crate::client::test_support::{
    broker, orders_metadata, produce_error, produce_ok, recreated_orders_metadata, respond,
    take_requests, tp, Sent, CLUSTER, ORDERS_TOPIC_ID,
};
use crate::node::Node;
use crate::protocol::{
    ClientKind, ClusterRequest, ClusterResponse, CoordinatorRequest, CoordinatorResponse, Envelope,
    Message, ReplicaRequest,
};

const PID: i64 = 1000;

/// A metadata answer where broker `leader` leads both partitions of `orders` in `leader_epoch`.
fn metadata(leader: i32, leader_epoch: i32) -> Response {
    orders_metadata(&[1, 2, 3], &[leader, leader], leader_epoch)
}

fn init_answer(producer_id: i64, producer_epoch: i16) -> Response {
    Response::Coordinator(CoordinatorResponse::InitProducerId {
        error: ErrorCode::None,
        producer_id: ProducerId(producer_id),
        producer_epoch: ProducerEpoch(producer_epoch),
    })
}

/// The producer under test plus the test's clock.
struct Harness {
    producer: IdempotentProducer,
    now_ms: i64,
}

impl Harness {
    fn new(config: ProducerConfig) -> Self {
        let node = NodeId::Client(CLUSTER, ClientKind::Producer, 0);
        let producer = IdempotentProducer::new(node, vec![broker(1), broker(2), broker(3)], config)
            .expect("valid config");
        Self {
            producer,
            now_ms: 0,
        }
    }

    /// A producer that sent its first record on `orders-0` at t=0, got metadata (broker 1
    /// leads in epoch 0) and producer id `PID` epoch 0, and has that record's Produce in flight.
    fn ready(config: ProducerConfig) -> (Self, Sent) {
        let mut harness = Self::new(config);
        harness.send(0, "r0");
        let start = harness.sent();
        assert_eq!(start.len(), 2, "{start:?}");
        harness.answer(&start[0], metadata(1, 0));
        harness.answer(&start[1], init_answer(PID, 0));
        let mut produce = harness.sent();
        assert_eq!(produce.len(), 1, "{produce:?}");
        let produce = produce.remove(0);
        assert_eq!(produce.stamp(), (PID, 0, 0, 1));
        harness.producer.take_events();
        (harness, produce)
    }

    fn sent(&mut self) -> Vec<Sent> {
        take_requests(&mut self.producer)
    }

    fn send(&mut self, partition: i32, value: &str) -> SendHandle {
        self.producer.send(
            self.now_ms,
            "orders",
            partition,
            Some(Bytes::from_static(b"key")),
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

    fn events(&mut self) -> Vec<ProducerEvent> {
        self.producer.take_events()
    }
}

fn acked(handle: u64, partition: i32, offset: i64) -> ProducerEvent {
    ProducerEvent::Acked {
        handle: SendHandle(handle),
        topic_partition: tp(partition),
        offset,
    }
}

fn retried(base_sequence: i32, attempts: u32, reason: RetryReason) -> ProducerEvent {
    ProducerEvent::Retried {
        topic_partition: tp(0),
        base_sequence,
        attempts,
        reason,
    }
}

#[test]
fn producer_start_sends_metadata_then_init_producer_id_to_the_first_bootstrap_broker() {
    // Before any input the producer asks to be woken at once; its first step sends Metadata
    // and InitProducerId to the first bootstrap broker, and produces nothing before a pid.
    let mut harness = Harness::new(ProducerConfig::default());
    assert_eq!(harness.producer.poll_timeout(), Some(0));
    harness.send(0, "r0");
    let start = harness.sent();
    assert_eq!(start.len(), 2);
    assert_eq!(start[0].to, broker(1));
    assert!(
        matches!(&start[0].request, Request::Cluster(ClusterRequest::Metadata { topics: Some(topics) }) if topics == &["orders".to_string()])
    );
    assert_eq!(start[1].to, broker(1));
    assert!(matches!(
        start[1].request,
        Request::Coordinator(CoordinatorRequest::InitProducerId {
            transactional_id: None,
            ..
        })
    ));
    harness.answer(&start[0], metadata(2, 4));
    assert!(
        harness.sent().is_empty(),
        "no produce without a producer id"
    );
    assert_eq!(harness.producer.producer_id_and_epoch(), None);
    harness.answer(&start[1], init_answer(PID, 0));
    let produce = harness.sent();
    assert_eq!(produce.len(), 1);
    assert_eq!(produce[0].to, broker(2), "sent to the leader");
    assert_eq!(produce[0].stamp(), (PID, 0, 0, 1));
    assert!(matches!(
        produce[0].request,
        Request::Replica(ReplicaRequest::Produce {
            acks: Acks::All,
            timeout_ms: 30_000,
            ..
        })
    ));
    assert_eq!(
        harness.producer.producer_id_and_epoch(),
        Some(ProducerIdAndEpoch {
            producer_id: PID,
            epoch: 0
        })
    );
    let events = harness.events();
    assert!(events.contains(&ProducerEvent::ProducerIdAssigned {
        producer: ProducerIdAndEpoch {
            producer_id: PID,
            epoch: 0
        }
    }));
}

#[test]
fn producer_bootstrap_rotates_to_the_next_broker_after_timeouts() {
    // Both start-up requests time out; the target moves once (not once per request) and both
    // are retried at the next bootstrap broker after the backoff.
    let mut harness = Harness::new(ProducerConfig::default());
    harness.advance_to(0);
    assert_eq!(harness.sent().len(), 2);
    assert_eq!(harness.producer.poll_timeout(), Some(30_000));
    harness.advance_to(30_000);
    assert!(harness.sent().is_empty(), "backoff first");
    harness.advance_to(30_100);
    let retry = harness.sent();
    assert_eq!(retry.len(), 2);
    assert!(retry.iter().all(|sent| sent.to == broker(2)), "{retry:?}");
}

#[test]
fn producer_batches_get_consecutive_sequences_with_at_most_max_in_flight() {
    // 1. The first batch under a new producer id goes alone: r1 waits until it is acknowledged.
    // 2. Then two batches may be in flight; later records queue and are drained into batches of
    //    at most `batch_records_max` records, each at the partition's next sequence.
    let config = ProducerConfig {
        max_in_flight_per_partition: 2,
        batch_records_max: 2,
        ..ProducerConfig::default()
    };
    let (mut harness, first) = Harness::ready(config);
    harness.send(0, "r1");
    assert!(harness.sent().is_empty(), "the first batch goes alone");
    harness.answer(&first, produce_ok(0));
    let second = harness.sent();
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].stamp(), (PID, 0, 1, 1), "record r1");
    for index in 2..7 {
        harness.send(0, &format!("r{index}"));
    }
    let third = harness.sent();
    assert_eq!(third.len(), 1);
    assert_eq!(
        third[0].stamp(),
        (PID, 0, 2, 1),
        "record r2 fills the second slot"
    );
    assert_eq!(harness.producer.in_flight_batches(&tp(0)), 2);
    assert_eq!(harness.producer.queued_records(&tp(0)), 4);

    harness.answer(&second[0], produce_ok(1));
    let fourth = harness.sent();
    assert_eq!(fourth.len(), 1);
    assert_eq!(fourth[0].stamp(), (PID, 0, 3, 2), "records r3 and r4");
    harness.answer(&third[0], produce_ok(2));
    let fifth = harness.sent();
    assert_eq!(fifth.len(), 1);
    assert_eq!(fifth[0].stamp(), (PID, 0, 5, 2), "records r5 and r6");
    assert!(harness.sent().is_empty());
    harness.answer(&fourth[0], produce_ok(3));
    harness.answer(&fifth[0], produce_ok(5));
    let offsets: Vec<ProducerEvent> = (0..7)
        .map(|handle| acked(handle, 0, handle as i64))
        .collect();
    assert_eq!(harness.events(), offsets);
    assert_eq!(harness.producer.next_sequence(&tp(0)), 7);
    assert_eq!(harness.producer.last_acked_sequence(&tp(0)), 6);
    assert_eq!(harness.producer.in_flight_batches(&tp(0)), 0);
}

#[test]
fn producer_retry_after_not_leader_resends_identical_bytes_after_a_metadata_refresh() {
    // 1. The leader moved: the batch is retried after the backoff, and metadata is refreshed.
    // 2. The refresh names broker 2; the retry goes there with the very same bytes.
    let (mut harness, first) = Harness::ready(ProducerConfig::default());
    harness.advance_to(10);
    harness.answer(&first, produce_error(ErrorCode::NotLeaderOrFollower));
    assert_eq!(
        harness.events(),
        vec![retried(
            0,
            1,
            RetryReason::Broker(ErrorCode::NotLeaderOrFollower)
        )]
    );
    assert!(harness.sent().is_empty());
    assert_eq!(
        harness.producer.poll_timeout(),
        Some(100),
        "metadata backoff"
    );
    harness.advance_to(100);
    let refresh = harness.sent();
    assert_eq!(refresh.len(), 1);
    assert!(matches!(
        refresh[0].request,
        Request::Cluster(ClusterRequest::Metadata { .. })
    ));
    harness.answer(&refresh[0], metadata(2, 1));
    assert!(
        harness.sent().is_empty(),
        "the retry waits for its own backoff"
    );
    harness.advance_to(110);
    let retry = harness.sent();
    assert_eq!(retry.len(), 1);
    assert_eq!(retry[0].to, broker(2));
    assert_eq!(retry[0].produce_partition(), &tp(0));
    assert_eq!(
        retry[0].batch().bytes(),
        first.batch().bytes(),
        "same bytes"
    );
    harness.answer(&retry[0], produce_ok(0));
    let events = harness.events();
    assert_eq!(events.last(), Some(&acked(0, 0, 0)));
}

#[test]
fn producer_out_of_order_on_the_next_expected_batch_bumps_the_epoch_and_restamps_from_zero() {
    // 1. Sequence 0 is acknowledged; batches at sequences 1 and 2 are in flight.
    // 2. Sequence 1, the next expected one, gets OUT_OF_ORDER: an epoch bump is due, but it
    //    waits while sequence 2 is in flight (it could still be written under its stamp).
    // 3. Sequence 2 gets OUT_OF_ORDER too (not the next expected: retried only). Nothing is
    //    out any more, so epoch 0 → 1 locally and the two batches become (1, 0) and (1, 1).
    // 4. The retries go one at a time, oldest first, with the new stamps and the same records.
    let (mut harness, first) = Harness::ready(ProducerConfig::default());
    harness.answer(&first, produce_ok(0));
    harness.send(0, "r1");
    harness.send(0, "r2");
    let batches = harness.sent();
    assert_eq!(batches[0].stamp(), (PID, 0, 1, 1));
    assert_eq!(batches[1].stamp(), (PID, 0, 2, 1));
    harness.answer(
        &batches[0],
        produce_error(ErrorCode::OutOfOrderSequenceNumber),
    );
    let out_of_order = RetryReason::Broker(ErrorCode::OutOfOrderSequenceNumber);
    assert_eq!(
        harness.events(),
        vec![acked(0, 0, 0), retried(1, 1, out_of_order)]
    );
    assert_eq!(harness.producer.producer_id_and_epoch().unwrap().epoch, 0);

    harness.answer(
        &batches[1],
        produce_error(ErrorCode::OutOfOrderSequenceNumber),
    );
    assert_eq!(
        harness.events(),
        vec![
            retried(2, 1, out_of_order),
            ProducerEvent::EpochBumped {
                producer_id: PID,
                previous_epoch: 0,
                epoch: 1,
                topic_partitions: vec![tp(0)],
            },
        ]
    );
    assert_eq!(
        harness.producer.producer_id_and_epoch(),
        Some(ProducerIdAndEpoch {
            producer_id: PID,
            epoch: 1
        })
    );
    assert_eq!(harness.producer.next_sequence(&tp(0)), 2);
    assert_eq!(harness.producer.last_acked_sequence(&tp(0)), -1);

    harness.advance_to(100);
    let retry = harness.sent();
    assert_eq!(retry.len(), 1, "retries go one at a time");
    assert_eq!(retry[0].stamp(), (PID, 1, 0, 1));
    let first_record = retry[0].batch().records().next().unwrap().unwrap();
    assert_eq!(first_record.value.as_deref(), Some(&b"r1"[..]));
    harness.answer(&retry[0], produce_ok(1));
    let retry = harness.sent();
    assert_eq!(retry.len(), 1);
    assert_eq!(retry[0].stamp(), (PID, 1, 1, 1));
    harness.answer(&retry[0], produce_ok(2));
    assert_eq!(harness.events(), vec![acked(1, 0, 1), acked(2, 0, 2)]);
    assert_eq!(harness.producer.last_acked_sequence(&tp(0)), 1);
}

#[test]
fn producer_out_of_order_bump_first_probes_batches_that_may_already_be_written() {
    // Regression found by the model test below. The leader lost its state for the producer
    // id (say an unclean election), so it accepts any sequence: sequence 1 is refused
    // (NotLeaderOrFollower) while sequence 2 is written, but sequence 2's answer is lost.
    // 1. Sequence 1's retry gets OUT_OF_ORDER: a bump is due, but sequence 2 may be in the log.
    // 2. Sequence 2 is resent unchanged (a probe, ahead of sequence 1) and comes back as a
    //    duplicate: success with its original offset.
    // 3. Only now the epoch is bumped, and only sequence 1 is re-stamped: nothing is written
    //    twice.
    let (mut harness, first) = Harness::ready(ProducerConfig::default());
    harness.answer(&first, produce_ok(0));
    harness.send(0, "r1");
    harness.send(0, "r2");
    let batches = harness.sent();
    assert_eq!(batches[1].stamp(), (PID, 0, 2, 1));
    harness.advance_to(10);
    harness.answer(&batches[0], produce_error(ErrorCode::NotLeaderOrFollower));
    harness.advance_to(110);
    let resent: Vec<Sent> = harness
        .sent()
        .into_iter()
        .filter(|sent| {
            matches!(
                sent.request,
                Request::Replica(ReplicaRequest::Produce { .. })
            )
        })
        .collect();
    assert_eq!(resent.len(), 1);
    assert_eq!(resent[0].stamp(), (PID, 0, 1, 1));
    harness.advance_to(200);
    harness.answer(
        &resent[0],
        produce_error(ErrorCode::OutOfOrderSequenceNumber),
    );
    harness.advance_to(30_000);
    let events = harness.events();
    assert!(!events
        .iter()
        .any(|event| matches!(event, ProducerEvent::EpochBumped { .. })));
    assert_eq!(
        events.last(),
        Some(&retried(2, 1, RetryReason::RequestTimeout))
    );
    harness.sent(); // A metadata refresh, unanswered.
    harness.advance_to(30_100);
    let probe = harness.sent();
    assert_eq!(probe.len(), 1, "only the probe: {probe:?}");
    assert_eq!(probe[0].batch().bytes(), batches[1].batch().bytes());
    harness.answer(&probe[0], produce_ok(1));
    assert_eq!(
        harness.events(),
        vec![
            acked(2, 0, 1),
            ProducerEvent::EpochBumped {
                producer_id: PID,
                previous_epoch: 0,
                epoch: 1,
                topic_partitions: vec![tp(0)],
            },
        ]
    );
    let restamped = harness.sent();
    assert_eq!(restamped.len(), 1);
    assert_eq!(restamped[0].stamp(), (PID, 1, 0, 1));
    harness.answer(&restamped[0], produce_ok(2));
    assert_eq!(harness.events(), vec![acked(1, 0, 2)]);
}

#[test]
fn producer_starts_sequences_over_instead_of_probing_in_a_topic_created_again() {
    // Sequence 1 is refused (NotLeaderOrFollower) and sequence 2's answer is lost, so it may be
    // written. Then metadata gives orders another id: the topic was deleted and created again.
    // Every attempt named the old id, which the new leader refuses (Produce v13), so neither
    // batch is in the new log and nothing is probed: a probe of sequence 2, resent unchanged,
    // would be written ahead of sequence 1 by a leader that accepts any first sequence
    // (generated seeds 15300000000000424, 15400000000000210). The sequences start over under
    // a new epoch, the oldest batch first and alone.
    let (mut harness, first) = Harness::ready(ProducerConfig::default());
    harness.answer(&first, produce_ok(0));
    harness.send(0, "r1");
    harness.send(0, "r2");
    let batches = harness.sent();
    assert!(
        matches!(
            &batches[0].request,
            Request::Replica(ReplicaRequest::Produce { topic_id: Some(id), .. }) if *id == ORDERS_TOPIC_ID
        ),
        "a produce names the topic id: {:?}",
        batches[0].request
    );
    harness.advance_to(10);
    harness.answer(&batches[0], produce_error(ErrorCode::NotLeaderOrFollower));
    // A delayed produce that timed out at the leader: it may be in the log.
    harness.answer(&batches[1], produce_error(ErrorCode::RequestTimedOut));
    harness.advance_to(110);
    let sent = harness.sent();
    let refresh = sent
        .iter()
        .find(|sent| matches!(sent.request, Request::Cluster(_)))
        .expect("a metadata refresh");
    let retry = sent
        .iter()
        .find(|sent| matches!(sent.request, Request::Replica(_)))
        .expect("sequence 1 retried");
    assert_eq!(retry.stamp(), (PID, 0, 1, 1));
    harness.answer(retry, produce_error(ErrorCode::NotLeaderOrFollower));
    harness.answer(
        refresh,
        recreated_orders_metadata(&[1, 2, 3], &[1, 1], 0, TopicId(8)),
    );
    harness.events();
    harness.advance_to(300);
    let sent = harness.sent();
    let produces: Vec<&Sent> = sent
        .iter()
        .filter(|sent| {
            matches!(
                sent.request,
                Request::Replica(ReplicaRequest::Produce { .. })
            )
        })
        .collect();
    assert_eq!(produces.len(), 1, "the oldest batch alone: {sent:?}");
    assert_eq!(
        produces[0].stamp(),
        (PID, 1, 0, 1),
        "re-stamped, not probed"
    );
    assert!(matches!(
        &produces[0].request,
        Request::Replica(ReplicaRequest::Produce {
            topic_id: Some(TopicId(8)),
            ..
        })
    ));
}

#[test]
fn producer_out_of_order_on_a_batch_that_is_not_next_expected_only_retries() {
    // Sequence 2 is refused while sequence 1 is still out: an earlier batch probably failed
    // first, so the producer retries sequence 2 unchanged once 1 is done, without a bump.
    let (mut harness, first) = Harness::ready(ProducerConfig::default());
    harness.answer(&first, produce_ok(0));
    harness.send(0, "r1");
    harness.send(0, "r2");
    let batches = harness.sent();
    harness.answer(
        &batches[1],
        produce_error(ErrorCode::OutOfOrderSequenceNumber),
    );
    assert_eq!(
        harness.events(),
        vec![
            acked(0, 0, 0),
            retried(
                2,
                1,
                RetryReason::Broker(ErrorCode::OutOfOrderSequenceNumber)
            )
        ]
    );
    harness.advance_to(200);
    assert!(
        harness.sent().is_empty(),
        "waits until it is the oldest batch"
    );
    harness.answer(&batches[0], produce_ok(1));
    let retry = harness.sent();
    assert_eq!(retry.len(), 1);
    assert_eq!(retry[0].batch().bytes(), batches[1].batch().bytes());
    harness.answer(&retry[0], produce_ok(2));
    assert_eq!(harness.events(), vec![acked(1, 0, 1), acked(2, 0, 2)]);
    assert_eq!(harness.producer.producer_id_and_epoch().unwrap().epoch, 0);
}

#[test]
fn producer_request_timeout_retries_and_ignores_the_late_response() {
    // The produce times out after request_timeout_ms: metadata is refreshed, the batch is
    // retried; the original answer arriving afterwards acknowledges nothing.
    let (mut harness, first) = Harness::ready(ProducerConfig::default());
    assert_eq!(harness.producer.poll_timeout(), Some(30_000));
    harness.advance_to(30_000);
    assert_eq!(
        harness.events(),
        vec![retried(0, 1, RetryReason::RequestTimeout)]
    );
    let refresh = harness.sent();
    assert_eq!(refresh.len(), 1);
    assert!(matches!(
        refresh[0].request,
        Request::Cluster(ClusterRequest::Metadata { .. })
    ));
    harness.advance_to(30_001);
    harness.answer(&first, produce_ok(0));
    assert!(harness.events().is_empty(), "late answer ignored");
    assert_eq!(harness.producer.ignored_responses(), 1);
    harness.answer(&refresh[0], metadata(1, 0));
    harness.advance_to(30_100);
    let retry = harness.sent();
    assert_eq!(retry.len(), 1);
    assert_eq!(retry[0].batch().bytes(), first.batch().bytes());
    assert_ne!(retry[0].correlation_id, first.correlation_id);
    harness.answer(&retry[0], produce_ok(0));
    assert_eq!(harness.events().last(), Some(&acked(0, 0, 0)));
}

#[test]
fn producer_delivery_timeout_fails_with_unknown_outcome_and_resolves_by_epoch_bump() {
    // 1. A batch sent at t=0 times out at 800 and is resent at 900.
    // 2. At 1000 its delivery timeout passes while it is in flight: it fails with an unknown
    //    outcome, and since nothing later was acknowledged the epoch is bumped.
    // 3. A new record starts at (epoch 1, seq 0); the abandoned request's answer is ignored.
    let config = ProducerConfig {
        request_timeout_ms: 800,
        delivery_timeout_ms: 1000,
        ..ProducerConfig::default()
    };
    let (mut harness, _) = Harness::ready(config);
    harness.advance_to(800);
    let refresh = harness.sent();
    harness.answer(&refresh[0], metadata(1, 0));
    harness.advance_to(900);
    let resent = harness.sent();
    assert_eq!(resent.len(), 1);
    assert_eq!(resent[0].stamp(), (PID, 0, 0, 1));
    harness.events();
    harness.advance_to(1000);
    assert_eq!(
        harness.events(),
        vec![
            ProducerEvent::Failed {
                handle: SendHandle(0),
                topic_partition: tp(0),
                error: ProduceError::DeliveryTimeout,
                outcome_unknown: true,
            },
            ProducerEvent::EpochBumped {
                producer_id: PID,
                previous_epoch: 0,
                epoch: 1,
                topic_partitions: vec![tp(0)],
            },
        ]
    );
    harness.answer(&resent[0], produce_ok(0));
    assert!(
        harness.events().is_empty(),
        "the abandoned request's answer is ignored"
    );
    harness.send(0, "r1");
    let next = harness.sent();
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].stamp(), (PID, 1, 0, 1));
}

#[test]
fn producer_record_never_sent_expires_with_a_known_outcome() {
    // Without a leader nothing is sent; the record fails at its delivery timeout and is known
    // not to be in the log.
    let config = ProducerConfig {
        request_timeout_ms: 500,
        delivery_timeout_ms: 500,
        ..ProducerConfig::default()
    };
    let mut harness = Harness::new(config);
    harness.send(0, "r0");
    let start = harness.sent();
    let mut leaderless = metadata(1, 0);
    if let Response::Cluster(ClusterResponse::Metadata { topics, .. }) = &mut leaderless {
        topics[0].partitions[0].leader = None;
    }
    harness.answer(&start[0], leaderless);
    harness.answer(&start[1], init_answer(PID, 0));
    harness.advance_to(500);
    let events = harness.events();
    assert!(events.contains(&ProducerEvent::Failed {
        handle: SendHandle(0),
        topic_partition: tp(0),
        error: ProduceError::DeliveryTimeout,
        outcome_unknown: false,
    }));
    assert!(!events
        .iter()
        .any(|event| matches!(event, ProducerEvent::EpochBumped { .. })));
}

#[test]
fn producer_sequence_wraps_from_int_max_to_zero() {
    // A batch that starts at i32::MAX continues at 0, and the next batch follows it.
    let config = ProducerConfig {
        max_in_flight_per_partition: 1,
        ..ProducerConfig::default()
    };
    let (mut harness, first) = Harness::ready(config);
    harness.answer(&first, produce_ok(0));
    harness
        .producer
        .set_next_sequence_for_test(&tp(0), i32::MAX - 1);
    harness.send(0, "a");
    let single = harness.sent().remove(0);
    assert_eq!(single.stamp(), (PID, 0, i32::MAX - 1, 1));
    for value in ["b", "c", "d"] {
        harness.send(0, value);
    }
    harness.answer(&single, produce_ok(1));
    let wrapping = harness.sent().remove(0);
    assert_eq!(wrapping.stamp(), (PID, 0, i32::MAX, 3));
    assert_eq!(wrapping.batch().header().last_sequence(), 1);
    let sequences: Vec<i32> = wrapping
        .batch()
        .records()
        .map(|record| record.unwrap().sequence)
        .collect();
    assert_eq!(sequences, vec![i32::MAX, 0, 1]);
    assert_eq!(harness.producer.next_sequence(&tp(0)), 2);
    harness.answer(&wrapping, produce_ok(2));
    assert_eq!(harness.producer.last_acked_sequence(&tp(0)), 1);
    harness.send(0, "e");
    assert_eq!(harness.sent()[0].stamp(), (PID, 0, 2, 1));
}

#[test]
fn producer_non_retriable_error_fails_the_batch_and_bumps_the_epoch() {
    // A rejected batch leaves a hole in the sequences, so later batches restart at 0 under a
    // new epoch.
    let (mut harness, first) = Harness::ready(ProducerConfig::default());
    harness.answer(&first, produce_error(ErrorCode::MessageTooLarge));
    assert_eq!(
        harness.events(),
        vec![
            ProducerEvent::Failed {
                handle: SendHandle(0),
                topic_partition: tp(0),
                error: ProduceError::Rejected(ErrorCode::MessageTooLarge),
                outcome_unknown: false,
            },
            ProducerEvent::EpochBumped {
                producer_id: PID,
                previous_epoch: 0,
                epoch: 1,
                topic_partitions: vec![tp(0)],
            },
        ]
    );
    harness.send(0, "r1");
    assert_eq!(harness.sent()[0].stamp(), (PID, 1, 0, 1));
}

#[test]
fn producer_fenced_is_fatal_for_every_record() {
    // ProducerFenced fails the batch, every queued record and every later send.
    let config = ProducerConfig {
        max_in_flight_per_partition: 1,
        ..ProducerConfig::default()
    };
    let (mut harness, first) = Harness::ready(config);
    harness.send(0, "queued");
    harness.answer(&first, produce_error(ErrorCode::ProducerFenced));
    harness.send(1, "later");
    let failed: Vec<(u64, ProduceError, bool)> = harness
        .events()
        .into_iter()
        .map(|event| match event {
            ProducerEvent::Failed {
                handle,
                error,
                outcome_unknown,
                ..
            } => (handle.0, error, outcome_unknown),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    let fenced = ProduceError::ProducerFailed(ErrorCode::ProducerFenced);
    assert_eq!(
        failed,
        vec![(0, fenced, false), (1, fenced, false), (2, fenced, false)]
    );
    assert_eq!(
        harness.producer.fatal_error(),
        Some(ErrorCode::ProducerFenced)
    );
    assert!(harness.sent().is_empty());
    assert_eq!(harness.producer.poll_timeout(), None);
}

#[test]
fn producer_epoch_bump_restarts_other_partitions_only_after_their_batches_drain() {
    // A bump caused by partition 0 leaves partition 1's in-flight batch on the old epoch; a new
    // record for partition 1 waits for it, then starts at (epoch 1, seq 0).
    let (mut harness, first) = Harness::ready(ProducerConfig::default());
    harness.send(1, "p1-a");
    let other = harness.sent().remove(0);
    assert_eq!(other.produce_partition(), &tp(1));
    assert_eq!(other.stamp(), (PID, 0, 0, 1));
    harness.answer(&first, produce_error(ErrorCode::OutOfOrderSequenceNumber));
    assert_eq!(harness.producer.producer_id_and_epoch().unwrap().epoch, 1);
    harness.send(1, "p1-b");
    assert!(
        harness.sent().is_empty(),
        "old-epoch batch still out on partition 1"
    );
    harness.answer(&other, produce_ok(0));
    let next = harness.sent();
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].produce_partition(), &tp(1));
    assert_eq!(next[0].stamp(), (PID, 1, 0, 1));
}

#[test]
fn producer_exhausted_epoch_gets_a_new_producer_id() {
    // At epoch i16::MAX a bump asks InitProducerId for a new id instead, and the partition's
    // batches restart at sequence 0 under it.
    let mut harness = Harness::new(ProducerConfig::default());
    harness.send(0, "r0");
    let start = harness.sent();
    harness.answer(&start[0], metadata(1, 0));
    harness.answer(&start[1], init_answer(PID, i16::MAX));
    let first = harness.sent().remove(0);
    assert_eq!(first.stamp(), (PID, i16::MAX, 0, 1));
    harness.answer(&first, produce_error(ErrorCode::OutOfOrderSequenceNumber));
    assert_eq!(harness.producer.producer_id_and_epoch(), None);
    let init = harness.sent();
    assert_eq!(init.len(), 1);
    assert!(matches!(
        init[0].request,
        Request::Coordinator(CoordinatorRequest::InitProducerId { .. })
    ));
    harness.answer(&init[0], init_answer(PID + 1, 0));
    harness.advance_to(100);
    let retry = harness.sent();
    assert_eq!(retry.len(), 1);
    assert_eq!(retry[0].stamp(), (PID + 1, 0, 0, 1));
}

#[test]
fn producer_config_is_validated() {
    // Out-of-range settings are typed errors, not panics.
    let node = NodeId::Client(CLUSTER, ClientKind::Producer, 0);
    let too_many = ProducerConfig {
        max_in_flight_per_partition: 6,
        ..ProducerConfig::default()
    };
    assert!(matches!(
        IdempotentProducer::new(node, vec![broker(1)], too_many),
        Err(ClientConfigError::InvalidField {
            field: "max_in_flight_per_partition",
            ..
        })
    ));
    let short_delivery = ProducerConfig {
        delivery_timeout_ms: 10,
        ..ProducerConfig::default()
    };
    assert!(short_delivery.validate().is_err());
    assert!(matches!(
        IdempotentProducer::new(node, vec![], ProducerConfig::default()),
        Err(ClientConfigError::InvalidBootstrap { .. })
    ));
}

/// A small end-to-end model: the producer against one leader whose partitions are real
/// [`PartitionLog`]s, over links that lose, duplicate and delay messages. Each direction of a
/// link keeps its order, as TCP does (the producer's module doc says why it must).
mod against_a_real_log {
    use crate::common::LeaderEpoch;
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;

    use super::*;
    use crate::client::test_support::Rng;
    use crate::log::{AppendOrigin, LogConfig, MemoryDisk, PartitionLog};

    /// Faults of one run; they stop at `heal_at_ms`.
    #[derive(Debug, Clone, Copy)]
    struct Faults {
        drop_percent: u64,
        duplicate_percent: u64,
        delay_ms_max: u64,
        /// Answer NotEnoughReplicasAfterAppend after appending (the data is in the log).
        error_after_append_percent: u64,
        /// Answer NotLeaderOrFollower without appending.
        error_before_append_percent: u64,
        heal_at_ms: i64,
    }

    /// What a run went through, for non-vacuity.
    #[derive(Debug, Clone, Copy, Default)]
    struct Coverage {
        epoch_bumps: u64,
        timeout_retries: u64,
        out_of_order_retries: u64,
        unknown_outcomes: u64,
        duplicates_answered: u64,
    }

    struct World {
        rng: Rng,
        faults: Faults,
        now_ms: i64,
        producer: IdempotentProducer,
        logs: BTreeMap<TopicPartition, PartitionLog<MemoryDisk>>,
        /// (delivery time, sequence) → envelope.
        network: BTreeMap<(i64, u64), Envelope>,
        sequence: u64,
        /// Last delivery time per (from, to), to keep each direction in order.
        link_tail_ms: BTreeMap<(NodeId, NodeId), i64>,
        next_producer_id: i64,
        events: Vec<ProducerEvent>,
        coverage: Coverage,
    }

    impl World {
        fn new(seed: u64, faults: Faults, config: ProducerConfig) -> Self {
            let node = NodeId::Client(CLUSTER, ClientKind::Producer, 0);
            let bootstrap = vec![broker(1), broker(2), broker(3)];
            let producer = IdempotentProducer::new(node, bootstrap, config).unwrap();
            let logs = (0..2)
                .map(|partition| {
                    let disk = MemoryDisk::new();
                    let log = PartitionLog::open(disk, LogConfig::default()).unwrap().0;
                    (tp(partition), log)
                })
                .collect();
            Self {
                rng: Rng(seed),
                faults,
                now_ms: 0,
                producer,
                logs,
                network: BTreeMap::new(),
                sequence: 0,
                link_tail_ms: BTreeMap::new(),
                next_producer_id: 0,
                events: Vec::new(),
                coverage: Coverage::default(),
            }
        }

        fn faulty(&self) -> bool {
            self.now_ms < self.faults.heal_at_ms
        }

        fn transmit(&mut self, envelope: Envelope) {
            let faulty = self.faulty();
            if faulty && self.rng.percent(self.faults.drop_percent) {
                return;
            }
            let copies = if faulty && self.rng.percent(self.faults.duplicate_percent) {
                2
            } else {
                1
            };
            for _ in 0..copies {
                let delay = if faulty {
                    1 + self.rng.below(self.faults.delay_ms_max) as i64
                } else {
                    1
                };
                // Never ahead of an earlier message on the same link.
                let tail = self
                    .link_tail_ms
                    .entry((envelope.from, envelope.to))
                    .or_insert(i64::MIN);
                let at = (self.now_ms + delay).max(*tail);
                *tail = at;
                self.sequence += 1;
                self.network.insert((at, self.sequence), envelope.clone());
            }
        }

        fn flush_producer(&mut self) {
            for envelope in self.producer.take_outbox() {
                self.transmit(envelope);
            }
            for event in self.producer.take_events() {
                match &event {
                    ProducerEvent::EpochBumped { .. } => self.coverage.epoch_bumps += 1,
                    ProducerEvent::Retried { reason, .. } => match reason {
                        RetryReason::RequestTimeout => self.coverage.timeout_retries += 1,
                        RetryReason::Broker(ErrorCode::OutOfOrderSequenceNumber) => {
                            self.coverage.out_of_order_retries += 1;
                        }
                        RetryReason::Broker(_) => {}
                    },
                    ProducerEvent::Failed {
                        outcome_unknown: true,
                        ..
                    } => self.coverage.unknown_outcomes += 1,
                    _ => {}
                }
                self.events.push(event);
            }
        }

        /// The leader's answer to one request.
        fn serve(&mut self, request: Request) -> Response {
            match request {
                Request::Cluster(ClusterRequest::Metadata { .. }) => metadata(1, 0),
                Request::Coordinator(CoordinatorRequest::InitProducerId { .. }) => {
                    self.next_producer_id += 1;
                    init_answer(self.next_producer_id, 0)
                }
                Request::Replica(ReplicaRequest::Produce {
                    topic_partition,
                    batch,
                    ..
                }) => self.produce(&topic_partition, &batch),
                other => panic!("unexpected request {other:?}"),
            }
        }

        fn produce(&mut self, topic_partition: &TopicPartition, batch: &RecordBatch) -> Response {
            let faulty = self.faulty();
            if faulty && self.rng.percent(self.faults.error_before_append_percent) {
                return produce_error(ErrorCode::NotLeaderOrFollower);
            }
            let log = self.logs.get_mut(topic_partition).unwrap();
            match log.append_as_leader(batch, LeaderEpoch(0), AppendOrigin::Client, self.now_ms) {
                Ok(info) => {
                    if info.duplicate {
                        self.coverage.duplicates_answered += 1;
                    }
                    let after = faulty && self.rng.percent(self.faults.error_after_append_percent);
                    if after {
                        produce_error(ErrorCode::NotEnoughReplicasAfterAppend)
                    } else {
                        produce_ok(info.first_offset.0)
                    }
                }
                Err(error) => produce_error(ErrorCode::from(&error)),
            }
        }

        fn deliver(&mut self, envelope: Envelope) {
            match envelope.message {
                Message::Request(correlation_id, request) => {
                    let response = self.serve(request);
                    self.transmit(Envelope {
                        from: envelope.to,
                        principal: None,
                        connection: 0,
                        to: envelope.from,
                        message: Message::Response(correlation_id, response),
                    });
                }
                Message::Response(..) => {
                    self.producer.handle_message(self.now_ms, envelope);
                    self.flush_producer();
                }
            }
        }

        /// Runs until `until_ms` (or until nothing is left to do), making the `(time,
        /// partition)` sends on the way.
        fn run(&mut self, until_ms: i64, sends: &mut Vec<(i64, i32)>) {
            // Bounded: every iteration consumes a message, a send or a timer.
            for _ in 0..1_000_000 {
                let next_network = self.network.keys().next().map(|(at, _)| *at);
                let next_send = sends.first().map(|(at, _)| *at);
                let next_timer = self.producer.poll_timeout();
                let Some(next) = [next_network, next_send, next_timer]
                    .into_iter()
                    .flatten()
                    .min()
                else {
                    return;
                };
                if next > until_ms {
                    return;
                }
                self.now_ms = self.now_ms.max(next);
                if next_send == Some(next) {
                    let (_, partition) = sends.remove(0);
                    let value = format!("h{}", self.producer.next_handle);
                    self.producer.send(
                        self.now_ms,
                        "orders",
                        partition,
                        None,
                        Some(Bytes::from(value)),
                    );
                    self.flush_producer();
                } else if next_network == Some(next) {
                    let (_, envelope) = self.network.pop_first().unwrap();
                    self.deliver(envelope);
                } else {
                    self.producer.handle_timeout(self.now_ms);
                    self.flush_producer();
                }
            }
            panic!("the run did not finish within its step bound");
        }

        /// (value, offset) of every record, per partition.
        fn log_contents(&self) -> BTreeMap<TopicPartition, Vec<(String, i64)>> {
            self.logs
                .iter()
                .map(|(topic_partition, log)| {
                    let records = log
                        .batches()
                        .flat_map(|batch| batch.records().map(Result::unwrap).collect::<Vec<_>>())
                        .map(|record| {
                            let value = record.value.unwrap();
                            (String::from_utf8(value.to_vec()).unwrap(), record.offset)
                        })
                        .collect();
                    (topic_partition.clone(), records)
                })
                .collect()
        }
    }

    /// no-duplicates, acks at their true offsets, known failures absent, one outcome per send,
    /// and every send made after healing acknowledged.
    fn check(world: &World, sends: u64, late_from_handle: u64) {
        let mut seen = BTreeMap::new();
        for (topic_partition, records) in world.log_contents() {
            for (value, offset) in records {
                let previous = seen.insert(value.clone(), (topic_partition.clone(), offset));
                assert!(
                    previous.is_none(),
                    "{value} written twice: {previous:?} and {offset}"
                );
            }
        }
        let mut outcomes = BTreeSet::new();
        for event in &world.events {
            match event {
                ProducerEvent::Acked {
                    handle,
                    topic_partition,
                    offset,
                } => {
                    assert!(outcomes.insert(handle.0), "two outcomes for {handle:?}");
                    let value = format!("h{}", handle.0);
                    let expected = (topic_partition.clone(), *offset);
                    assert_eq!(seen.get(&value), Some(&expected), "{value} acked elsewhere");
                }
                ProducerEvent::Failed {
                    handle,
                    outcome_unknown,
                    ..
                } => {
                    assert!(outcomes.insert(handle.0), "two outcomes for {handle:?}");
                    assert!(handle.0 < late_from_handle, "sent after healing: {event:?}");
                    if !outcome_unknown {
                        assert!(!seen.contains_key(&format!("h{}", handle.0)));
                    }
                }
                _ => {}
            }
        }
        assert_eq!(outcomes.len() as u64, sends, "every send has an outcome");
    }

    fn run_case(seed: u64, faults: Faults, config: ProducerConfig) -> Coverage {
        let mut world = World::new(seed, faults, config);
        let mut sends: Vec<(i64, i32)> = (0..80).map(|i| (i * 7, (i % 2) as i32)).collect();
        world.run(faults.heal_at_ms, &mut sends);
        // After healing: more records, which must all be acknowledged.
        world.now_ms = world.now_ms.max(faults.heal_at_ms);
        let late_from_handle = world.producer.next_handle;
        let start = world.now_ms + 1;
        let mut late: Vec<(i64, i32)> = (0..20).map(|i| (start + i * 3, (i % 2) as i32)).collect();
        let sends = late_from_handle + late.len() as u64;
        world.run(start + 1_000_000, &mut late);
        check(&world, sends, late_from_handle);
        world.coverage
    }

    /// Faults and settings drawn from `seed`.
    fn random_case(seed: u64) -> (Faults, ProducerConfig) {
        let mut rng = Rng(seed ^ 0x5EED);
        let faults = Faults {
            drop_percent: rng.below(30),
            duplicate_percent: rng.below(10),
            delay_ms_max: 1 + rng.below(400),
            error_after_append_percent: rng.below(20),
            error_before_append_percent: rng.below(20),
            heal_at_ms: 5_000,
        };
        let config = ProducerConfig {
            request_timeout_ms: 300,
            retry_backoff_ms: 20,
            delivery_timeout_ms: [1_000, 3_000, 120_000][rng.below(3) as usize],
            max_in_flight_per_partition: 1 + rng.below(5) as usize,
            batch_records_max: 1 + rng.below(3) as usize,
            ..ProducerConfig::default()
        };
        (faults, config)
    }

    #[test]
    fn producer_model_over_ordered_lossy_links_never_duplicates_and_reaches_every_path() {
        // 300 seeded runs over ordered links with loss, duplication, delays and leader errors:
        // the checks of `check` hold in each, and together they reach the interesting paths.
        let mut total = Coverage::default();
        for seed in 0..300 {
            let (faults, config) = random_case(seed);
            let coverage = run_case(seed, faults, config);
            total.epoch_bumps += coverage.epoch_bumps;
            total.timeout_retries += coverage.timeout_retries;
            total.out_of_order_retries += coverage.out_of_order_retries;
            total.unknown_outcomes += coverage.unknown_outcomes;
            total.duplicates_answered += coverage.duplicates_answered;
        }
        assert!(total.epoch_bumps > 0, "{total:?}");
        assert!(total.timeout_retries > 0, "{total:?}");
        assert!(total.out_of_order_retries > 0, "{total:?}");
        assert!(total.unknown_outcomes > 0, "{total:?}");
        assert!(total.duplicates_answered > 0, "{total:?}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn producer_against_a_real_log_never_duplicates_and_acks_true_offsets(
            seed in any::<u64>(),
            drop_percent in 0u64..30,
            duplicate_percent in 0u64..10,
            delay_ms_max in 1u64..400,
            error_after_append_percent in 0u64..20,
            error_before_append_percent in 0u64..20,
            max_in_flight in 1usize..=5,
            batch_records_max in 1usize..4,
            delivery_timeout_ms in prop::sample::select(vec![1_000i64, 3_000, 120_000]),
        ) {
            // The same checks with proptest's shrinking, over ordered links.
            let faults = Faults {
                drop_percent,
                duplicate_percent,
                delay_ms_max,
                error_after_append_percent,
                error_before_append_percent,
                heal_at_ms: 5_000,
            };
            let config = ProducerConfig {
                request_timeout_ms: 300,
                retry_backoff_ms: 20,
                delivery_timeout_ms,
                max_in_flight_per_partition: max_in_flight,
                batch_records_max,
                ..ProducerConfig::default()
            };
            run_case(seed, faults, config);
        }
    }
}

#[test]
fn producer_compresses_each_batch_and_keeps_the_codec_when_it_restamps() {
    // `compression.type=zstd`: the records region of every batch is one zstd stream; a batch
    // restamped after an epoch bump is encoded again with the same codec and records.
    let config = ProducerConfig {
        compression: CompressionType::Zstd,
        ..ProducerConfig::default()
    };
    let (mut harness, first) = Harness::ready(config);
    assert_eq!(first.batch().header().compression(), CompressionType::Zstd);
    harness.answer(&first, produce_ok(0));
    harness.send(0, "r1");
    let sent = harness.sent();
    let batch = sent[0].batch();
    assert_eq!(batch.header().compression(), CompressionType::Zstd);
    let record = batch.records().next().unwrap().unwrap();
    assert_eq!(record.value.as_deref(), Some(&b"r1"[..]));
    harness.answer(&sent[0], produce_error(ErrorCode::OutOfOrderSequenceNumber));
    harness.advance_to(100);
    let retry = harness.sent();
    assert_eq!(retry[0].stamp(), (PID, 1, 0, 1), "restamped after the bump");
    let batch = retry[0].batch();
    assert_eq!(batch.header().compression(), CompressionType::Zstd);
    let record = batch.records().next().unwrap().unwrap();
    assert_eq!(record.value.as_deref(), Some(&b"r1"[..]));
}
