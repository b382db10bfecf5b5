//! Unit tests of the consumer. The test plays the brokers: it takes the consumer's outbox,
//! checks the exact requests, and answers with `handle_message`; fetches are served from a real
//! [`PartitionLog`] so that batch boundaries, bounds and aborted-transaction lists are Kafka's.

use bytes::Bytes;

use super::*;
use crate::client::test_support::{
    broker, orders_metadata, recreated_orders_metadata, respond, take_requests, tp, Sent, CLUSTER,
    ORDERS_TOPIC_ID,
};
use crate::log::{AppendOrigin, LogConfig, MemoryDisk, PartitionLog};
use crate::protocol::{ClientKind, ClusterRequest, Message, ReplicaRequest, ReplicaResponse};
use crate::record::{end_transaction_marker, BatchBuilder, MarkerProducer};

const T0: i64 = 1_700_000_000_000;

/// A metadata answer: broker `leader` leads both partitions of `orders` in `leader_epoch`.
fn metadata(leader: i32, leader_epoch: i32) -> Response {
    orders_metadata(&[1, 2], &[leader, leader], leader_epoch)
}

fn offsets(answers: &[i64]) -> Response {
    Response::Replica(ReplicaResponse::ListOffsets {
        partitions: answers
            .iter()
            .map(|offset| ListOffsetsAnswer {
                error: ErrorCode::None,
                offset: Offset(*offset),
                leader_epoch: LeaderEpoch(0),
            })
            .collect(),
    })
}

fn fetch_error(topic_partition: TopicPartition, error: ErrorCode) -> FetchPartitionResponse {
    FetchPartitionResponse::error(&topic_partition, error)
}

/// What a leader answers for one partition of a consumer fetch, read from `log`.
fn serve(
    log: &PartitionLog<MemoryDisk>,
    request: &Request,
    partition: &FetchPartition,
) -> FetchPartitionResponse {
    let Request::Replica(ReplicaRequest::Fetch {
        isolation,
        max_bytes,
        ..
    }) = *request
    else {
        panic!("expected Fetch, got {request:?}");
    };
    match log.read(partition.fetch_offset, max_bytes, isolation, true) {
        Ok(data) => FetchPartitionResponse {
            topic_partition: partition.topic_partition.clone(),
            error: ErrorCode::None,
            high_watermark: data.high_watermark,
            last_stable_offset: data.last_stable_offset,
            log_start_offset: data.log_start_offset,
            diverging_epoch: None,
            aborted_transactions: data.aborted_transactions,
            batches: data.batches,
        },
        Err(_) => fetch_error(
            partition.topic_partition.clone(),
            ErrorCode::OffsetOutOfRange,
        ),
    }
}

fn empty_log() -> PartitionLog<MemoryDisk> {
    PartitionLog::open(MemoryDisk::new(), LogConfig::default())
        .expect("an empty disk opens")
        .0
}

fn data_batch(
    producer_id: i64,
    sequence: i32,
    values: &[&str],
    transactional: bool,
) -> RecordBatch {
    let mut builder = BatchBuilder::idempotent(producer_id, 0, sequence);
    builder.transactional = transactional;
    for value in values {
        builder.append(
            T0,
            None,
            Some(Bytes::copy_from_slice(value.as_bytes())),
            Vec::new(),
        );
    }
    builder.build()
}

fn append(log: &mut PartitionLog<MemoryDisk>, batch: &RecordBatch) {
    log.append_as_leader(batch, LeaderEpoch(0), AppendOrigin::Client, T0)
        .expect("append");
}

fn end_txn(log: &mut PartitionLog<MemoryDisk>, producer_id: i64, committed: bool) {
    let marker = end_transaction_marker(
        MarkerProducer {
            producer_id,
            producer_epoch: 0,
        },
        committed,
        0,
        T0,
    );
    log.append_as_leader(&marker, LeaderEpoch(0), AppendOrigin::Coordinator, T0)
        .expect("marker");
}

struct Harness {
    consumer: Consumer,
    now_ms: i64,
}

impl Harness {
    fn new(config: ConsumerConfig, assignment: Vec<TopicPartition>) -> Self {
        let node = NodeId::Client(CLUSTER, ClientKind::Consumer, 0);
        let consumer = Consumer::new(node, vec![broker(1), broker(2)], config, assignment)
            .expect("valid config");
        Self {
            consumer,
            now_ms: 0,
        }
    }

    /// A consumer of `orders-0` whose leader is broker 1 (epoch 0), positioned at `position`,
    /// with its first Fetch in flight (returned).
    fn fetching(config: ConsumerConfig, position: i64) -> (Self, Sent) {
        let mut harness = Self::new(config, vec![tp(0)]);
        harness.advance_to(0);
        let start = harness.sent();
        harness.answer(&start[0], metadata(1, 0));
        let list = harness.sent();
        harness.answer(&list[0], offsets(&[position]));
        let mut fetch = harness.sent();
        assert_eq!(fetch.len(), 1, "{fetch:?}");
        harness.consumer.take_events();
        (harness, fetch.remove(0))
    }

    fn sent(&mut self) -> Vec<Sent> {
        take_requests(&mut self.consumer)
    }

    fn answer(&mut self, request: &Sent, response: Response) {
        respond(&mut self.consumer, self.now_ms, request, response);
    }

    /// Answers a Fetch by reading `log` for every requested partition.
    fn serve_fetch(&mut self, request: &Sent, log: &PartitionLog<MemoryDisk>) {
        let partitions = request
            .fetch_partitions()
            .iter()
            .map(|partition| serve(log, &request.request, partition))
            .collect();
        self.answer(
            request,
            Response::Replica(ReplicaResponse::Fetch { partitions }),
        );
    }

    fn advance_to(&mut self, now_ms: i64) {
        assert!(now_ms >= self.now_ms);
        self.now_ms = now_ms;
        self.consumer.handle_timeout(now_ms);
    }

    fn events(&mut self) -> Vec<ConsumerEvent> {
        self.consumer.take_events()
    }

    /// Offsets of every record delivered since the last call.
    fn delivered_offsets(&mut self) -> Vec<i64> {
        self.events()
            .into_iter()
            .flat_map(|event| match event {
                ConsumerEvent::Records { records, .. } => records,
                _ => Vec::new(),
            })
            .map(|record| record.offset)
            .collect()
    }
}

#[test]
fn consumer_starts_with_metadata_then_list_offsets_then_fetch() {
    // Metadata to the first bootstrap broker; ListOffsets (earliest) to the leader for both
    // partitions in one request; then one Fetch to the leader carrying both positions.
    let config = ConsumerConfig {
        auto_offset_reset: AutoOffsetReset::Earliest,
        ..ConsumerConfig::default()
    };
    let mut harness = Harness::new(config, vec![tp(0), tp(1)]);
    assert_eq!(harness.consumer.poll_timeout(), Some(0));
    harness.advance_to(0);
    let start = harness.sent();
    assert_eq!(start.len(), 1);
    assert_eq!(start[0].to, broker(1));
    assert!(
        matches!(&start[0].request, Request::Cluster(ClusterRequest::Metadata { topics: Some(topics) }) if topics == &["orders".to_string()])
    );
    harness.answer(&start[0], metadata(2, 3));
    let list = harness.sent();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].to, broker(2));
    let Request::Replica(ReplicaRequest::ListOffsets {
        isolation,
        partitions,
    }) = &list[0].request
    else {
        panic!("expected ListOffsets, got {:?}", list[0].request);
    };
    assert_eq!(*isolation, FetchIsolation::HighWatermark);
    assert_eq!(
        partitions,
        &vec![
            ListOffsetsQuery {
                topic_partition: tp(0),
                current_leader_epoch: LeaderEpoch(3),
                spec: OffsetSpec::Earliest,
            },
            ListOffsetsQuery {
                topic_partition: tp(1),
                current_leader_epoch: LeaderEpoch(3),
                spec: OffsetSpec::Earliest,
            },
        ]
    );
    harness.answer(&list[0], offsets(&[0, 5]));
    let events = harness.events();
    assert!(events.contains(&ConsumerEvent::OffsetReset {
        topic_partition: tp(1),
        previous: None,
        offset: 5,
        policy: AutoOffsetReset::Earliest,
    }));
    let fetch = harness.sent();
    assert_eq!(fetch.len(), 1);
    assert_eq!(fetch[0].to, broker(2));
    let Request::Replica(ReplicaRequest::Fetch {
        replica_id,
        replica_epoch,
        isolation,
        max_wait_ms,
        max_bytes,
        partitions,
    }) = &fetch[0].request
    else {
        panic!("expected Fetch");
    };
    assert_eq!(*replica_id, None);
    assert_eq!(*replica_epoch, -1);
    assert_eq!(*isolation, FetchIsolation::HighWatermark);
    assert_eq!(*max_wait_ms, 500);
    assert_eq!(*max_bytes, 1_048_576);
    assert_eq!(
        partitions,
        &vec![
            FetchPartition {
                topic_id: None,
                topic_partition: tp(0),
                current_leader_epoch: LeaderEpoch(3),
                fetch_offset: Offset(0),
                last_fetched_epoch: LeaderEpoch::NONE,
            },
            FetchPartition {
                topic_id: None,
                topic_partition: tp(1),
                current_leader_epoch: LeaderEpoch(3),
                fetch_offset: Offset(5),
                last_fetched_epoch: LeaderEpoch::NONE,
            },
        ]
    );
    assert_eq!(harness.consumer.position(&tp(1)), Some(5));
}

#[test]
fn consumer_fetch_loop_advances_and_backs_off_when_nothing_is_new() {
    // 1. Two batches below the high watermark come back; the position moves past them and the
    //    next fetch goes out at once.
    // 2. The next answer is empty (at the high watermark): the consumer waits fetch_backoff_ms.
    let mut log = empty_log();
    append(&mut log, &data_batch(1, 0, &["a", "b"], false));
    append(&mut log, &data_batch(1, 2, &["c"], false));
    append(&mut log, &data_batch(1, 3, &["d"], false));
    log.maybe_increment_high_watermark(Offset(3));
    let (mut harness, first) = Harness::fetching(ConsumerConfig::default(), 1);
    harness.serve_fetch(&first, &log);
    assert_eq!(
        harness.delivered_offsets(),
        vec![1, 2],
        "offset 0 dropped, 3 above the HW"
    );
    assert_eq!(harness.consumer.position(&tp(0)), Some(3));
    assert_eq!(harness.consumer.high_watermark(&tp(0)), 3);
    let second = harness.sent();
    assert_eq!(second.len(), 1, "progress: fetch again at once");
    assert_eq!(second[0].fetch_partitions()[0].fetch_offset, Offset(3));
    harness.advance_to(10);
    harness.serve_fetch(&second[0], &log);
    assert!(harness.delivered_offsets().is_empty());
    assert!(harness.sent().is_empty());
    assert_eq!(harness.consumer.poll_timeout(), Some(110));
    log.maybe_increment_high_watermark(Offset(4));
    harness.advance_to(110);
    let third = harness.sent();
    assert_eq!(third.len(), 1);
    harness.serve_fetch(&third[0], &log);
    assert_eq!(harness.delivered_offsets(), vec![3]);
    assert_eq!(harness.consumer.position(&tp(0)), Some(4));
}

#[test]
fn consumer_read_committed_hides_aborted_transactions_and_control_records() {
    // The log holds plain data, an aborted transaction with its ABORT marker, a committed one
    // with its COMMIT marker, and an open one. READ_COMMITTED sees plain and committed data up
    // to the last stable offset; READ_UNCOMMITTED sees all data up to the high watermark; no
    // consumer ever sees a marker.
    let mut log = empty_log();
    append(&mut log, &data_batch(1, 0, &["plain-0", "plain-1"], false)); // 0..=1
    append(
        &mut log,
        &data_batch(2, 0, &["aborted-2", "aborted-3"], true),
    ); // 2..=3
    end_txn(&mut log, 2, false); // 4
    append(&mut log, &data_batch(3, 0, &["committed-5"], true)); // 5
    end_txn(&mut log, 3, true); // 6
    append(&mut log, &data_batch(1, 2, &["plain-7"], false)); // 7
    append(&mut log, &data_batch(4, 0, &["open-8"], true)); // 8, never ended
    log.maybe_increment_high_watermark(Offset(9));
    assert_eq!(log.last_stable_offset(), Offset(8));

    let committed = ConsumerConfig {
        isolation: IsolationLevel::ReadCommitted,
        ..ConsumerConfig::default()
    };
    let (mut harness, fetch) = Harness::fetching(committed, 0);
    let Request::Replica(ReplicaRequest::Fetch { isolation, .. }) = fetch.request else {
        panic!()
    };
    assert_eq!(isolation, FetchIsolation::TxnCommitted);
    harness.serve_fetch(&fetch, &log);
    assert_eq!(harness.delivered_offsets(), vec![0, 1, 5, 7]);
    assert_eq!(
        harness.consumer.position(&tp(0)),
        Some(8),
        "stops at the LSO"
    );
    assert_eq!(harness.consumer.last_stable_offset(&tp(0)), 8);

    let (mut harness, fetch) = Harness::fetching(ConsumerConfig::default(), 0);
    harness.serve_fetch(&fetch, &log);
    assert_eq!(harness.delivered_offsets(), vec![0, 1, 2, 3, 5, 7, 8]);
    assert_eq!(harness.consumer.position(&tp(0)), Some(9));
}

#[test]
fn consumer_offset_out_of_range_resets_by_the_policy() {
    // The leader's log no longer covers the position: the consumer asks ListOffsets (latest)
    // and continues from there, reporting the reset.
    let mut log = empty_log();
    append(&mut log, &data_batch(1, 0, &["a", "b", "c"], false));
    log.maybe_increment_high_watermark(Offset(3));
    let (mut harness, fetch) = Harness::fetching(ConsumerConfig::default(), 10);
    harness.serve_fetch(&fetch, &log);
    assert_eq!(
        harness.events(),
        vec![ConsumerEvent::FetchFailed {
            topic_partition: tp(0),
            error: FetchError::Broker(ErrorCode::OffsetOutOfRange),
        }]
    );
    assert_eq!(harness.consumer.position(&tp(0)), None);
    let list = harness.sent();
    assert_eq!(list.len(), 1);
    assert!(matches!(
        &list[0].request,
        Request::Replica(ReplicaRequest::ListOffsets { partitions, .. }) if partitions[0].spec == OffsetSpec::Latest
    ));
    harness.answer(&list[0], offsets(&[3]));
    assert_eq!(
        harness.events(),
        vec![ConsumerEvent::OffsetReset {
            topic_partition: tp(0),
            previous: Some(10),
            offset: 3,
            policy: AutoOffsetReset::Latest,
        }]
    );
    let fetch = harness.sent();
    assert_eq!(fetch[0].fetch_partitions()[0].fetch_offset, Offset(3));
}

#[test]
fn consumer_leader_change_is_rediscovered_after_not_leader_or_follower() {
    // Broker 1 lost leadership: the consumer refreshes metadata, learns broker 2 leads in
    // epoch 1, and fetches from it at the same position with the new epoch.
    let (mut harness, fetch) = Harness::fetching(ConsumerConfig::default(), 4);
    assert_eq!(fetch.to, broker(1));
    harness.advance_to(50);
    harness.answer(
        &fetch,
        Response::Replica(ReplicaResponse::Fetch {
            partitions: vec![fetch_error(tp(0), ErrorCode::NotLeaderOrFollower)],
        }),
    );
    assert!(harness.sent().is_empty(), "metadata waits for its backoff");
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
        "the partition waits for its retry backoff"
    );
    harness.advance_to(150);
    let fetch = harness.sent();
    assert_eq!(fetch.len(), 1);
    assert_eq!(fetch[0].to, broker(2));
    assert_eq!(
        fetch[0].fetch_partitions(),
        &[FetchPartition {
            topic_id: None,
            topic_partition: tp(0),
            current_leader_epoch: LeaderEpoch(1),
            fetch_offset: Offset(4),
            last_fetched_epoch: LeaderEpoch::NONE,
        }]
    );
}

#[test]
fn consumer_fetch_timeout_retries_and_ignores_the_late_answer() {
    // A fetch unanswered for request_timeout_ms is given up; its late answer delivers nothing
    // and does not move the position.
    let mut log = empty_log();
    append(&mut log, &data_batch(1, 0, &["a"], false));
    log.maybe_increment_high_watermark(Offset(1));
    let (mut harness, fetch) = Harness::fetching(ConsumerConfig::default(), 0);
    harness.advance_to(30_000);
    assert!(harness.events().contains(&ConsumerEvent::FetchFailed {
        topic_partition: tp(0),
        error: FetchError::RequestTimeout,
    }));
    harness.serve_fetch(&fetch, &log);
    assert!(harness.delivered_offsets().is_empty());
    assert_eq!(harness.consumer.ignored_responses(), 1);
    assert_eq!(harness.consumer.position(&tp(0)), Some(0));
}

#[test]
fn consumer_config_is_validated() {
    // A fetch wait at or above the request timeout would time out every idle fetch.
    let config = ConsumerConfig {
        fetch_max_wait_ms: 30_000,
        ..ConsumerConfig::default()
    };
    let node = NodeId::Client(CLUSTER, ClientKind::Consumer, 0);
    assert!(matches!(
        Consumer::new(node, vec![broker(1)], config, vec![tp(0)]),
        Err(ClientConfigError::InvalidField {
            field: "fetch_max_wait_ms",
            ..
        })
    ));
}

/// A small end-to-end model: the consumer against one leader serving a real log, over links
/// that lose, duplicate, delay and reorder messages, with the leader sometimes refusing.
mod against_a_real_log {
    use std::collections::BTreeMap;

    use super::*;
    use crate::client::test_support::Rng;

    /// The offsets a consumer must see, in order, under each isolation level.
    struct Visible {
        read_uncommitted: Vec<i64>,
        read_committed: Vec<i64>,
    }

    impl Visible {
        fn under(&self, isolation: IsolationLevel) -> &[i64] {
            match isolation {
                IsolationLevel::ReadUncommitted => &self.read_uncommitted,
                IsolationLevel::ReadCommitted => &self.read_committed,
            }
        }
    }

    /// A log of plain batches and committed, aborted and open transactions, and what each
    /// isolation level must see of it, worked out from how it was written (not by reading it
    /// back, so the check does not lean on `completed_fetch`).
    fn random_log(rng: &mut Rng) -> (PartitionLog<MemoryDisk>, Visible) {
        let mut log = empty_log();
        let mut sequences: BTreeMap<i64, i32> = BTreeMap::new();
        let mut data_offsets = Vec::new();
        let mut committed_offsets = Vec::new();
        // Offsets of each producer's open transaction.
        let mut open: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
        for step in 0..40 {
            let producer_id = 1 + rng.below(4) as i64;
            let transactional = producer_id > 1;
            let count = 1 + rng.below(3) as usize;
            let sequence = sequences.entry(producer_id).or_insert(0);
            let values: Vec<String> = (0..count).map(|i| format!("s{step}-{i}")).collect();
            let values: Vec<&str> = values.iter().map(String::as_str).collect();
            let base_offset = log.log_end_offset().0;
            append(
                &mut log,
                &data_batch(producer_id, *sequence, &values, transactional),
            );
            *sequence += count as i32;
            let offsets = base_offset..base_offset + count as i64;
            data_offsets.extend(offsets.clone());
            if !transactional {
                committed_offsets.extend(offsets);
                continue;
            }
            open.entry(producer_id).or_default().extend(offsets);
            if rng.percent(40) {
                let committed = rng.percent(50);
                end_txn(&mut log, producer_id, committed);
                let ended = open.remove(&producer_id).expect("opened above");
                if committed {
                    committed_offsets.extend(ended);
                }
            }
        }
        let log_end = log.log_end_offset();
        log.maybe_increment_high_watermark(log_end);
        // READ_COMMITTED stops at the first offset of the oldest open transaction.
        let last_stable = open
            .values()
            .map(|offsets| offsets[0])
            .min()
            .unwrap_or(log_end.0);
        assert_eq!(log.last_stable_offset(), Offset(last_stable));
        committed_offsets.retain(|offset| *offset < last_stable);
        committed_offsets.sort_unstable();
        let visible = Visible {
            read_uncommitted: data_offsets,
            read_committed: committed_offsets,
        };
        (log, visible)
    }

    /// The offsets one clean read of the whole log hands out.
    fn one_read_offsets(log: &PartitionLog<MemoryDisk>, isolation: IsolationLevel) -> Vec<i64> {
        let fetch_isolation = match isolation {
            IsolationLevel::ReadUncommitted => FetchIsolation::HighWatermark,
            IsolationLevel::ReadCommitted => FetchIsolation::TxnCommitted,
        };
        let data = log
            .read(Offset(0), usize::MAX, fetch_isolation, true)
            .unwrap();
        let aborted = data.aborted_transactions.unwrap_or_default();
        completed_fetch(0, &data.batches, &aborted, isolation)
            .unwrap()
            .records
            .iter()
            .map(|record| record.offset)
            .collect()
    }

    fn run_case(seed: u64) {
        let mut rng = Rng(seed);
        let (log, visible) = random_log(&mut rng);
        let isolation = if rng.percent(50) {
            IsolationLevel::ReadCommitted
        } else {
            IsolationLevel::ReadUncommitted
        };
        let config = ConsumerConfig {
            isolation,
            max_bytes: 60 + rng.below(400) as usize,
            fetch_max_wait_ms: 0,
            request_timeout_ms: 300,
            auto_offset_reset: AutoOffsetReset::Earliest,
            retry_backoff_ms: 20,
            ..ConsumerConfig::default()
        };
        let drop_percent = rng.below(30);
        let duplicate_percent = rng.below(10);
        let refuse_percent = rng.below(20);
        let delay_ms_max = 1 + rng.below(400) as i64;
        let heal_at_ms = 5_000;
        let node = NodeId::Client(CLUSTER, ClientKind::Consumer, 0);
        let mut consumer = Consumer::new(node, vec![broker(1)], config, vec![tp(0)]).unwrap();
        let mut network: BTreeMap<(i64, u64), Envelope> = BTreeMap::new();
        let mut sequence = 0u64;
        let mut now_ms = 0;
        let mut delivered = Vec::new();
        // Bounded: each step consumes a message or a timer; time only moves forward.
        for _ in 0..100_000 {
            let faulty = now_ms < heal_at_ms;
            for envelope in consumer.take_outbox() {
                if faulty && rng.percent(drop_percent) {
                    continue;
                }
                let copies = if faulty && rng.percent(duplicate_percent) {
                    2
                } else {
                    1
                };
                for _ in 0..copies {
                    let delay = if faulty {
                        1 + rng.below(delay_ms_max as u64) as i64
                    } else {
                        1
                    };
                    sequence += 1;
                    network.insert((now_ms + delay, sequence), envelope.clone());
                }
            }
            for event in consumer.take_events() {
                if let ConsumerEvent::Records { records, .. } = event {
                    delivered.extend(records.iter().map(|record| record.offset));
                }
            }
            let next_message = network.keys().next().map(|(at, _)| *at);
            let Some(next) = [next_message, consumer.poll_timeout()]
                .into_iter()
                .flatten()
                .min()
            else {
                break;
            };
            if next > 60_000 {
                break;
            }
            now_ms = now_ms.max(next);
            if next_message != Some(next) {
                consumer.handle_timeout(now_ms);
                continue;
            }
            let (_, envelope) = network.pop_first().unwrap();
            let Message::Request(correlation_id, request) = &envelope.message else {
                consumer.handle_message(now_ms, envelope);
                continue;
            };
            let response = match request {
                Request::Cluster(ClusterRequest::Metadata { .. }) => metadata(1, 0),
                Request::Replica(ReplicaRequest::ListOffsets { .. }) => {
                    offsets(&[log.log_start_offset().0])
                }
                Request::Replica(ReplicaRequest::Fetch { .. })
                    if faulty && rng.percent(refuse_percent) =>
                {
                    Response::Replica(ReplicaResponse::Fetch {
                        partitions: vec![fetch_error(tp(0), ErrorCode::NotLeaderOrFollower)],
                    })
                }
                Request::Replica(ReplicaRequest::Fetch { partitions, .. }) => {
                    Response::Replica(ReplicaResponse::Fetch {
                        partitions: partitions.iter().map(|p| serve(&log, request, p)).collect(),
                    })
                }
                other => panic!("unexpected {other:?}"),
            };
            let faulty = now_ms < heal_at_ms;
            if faulty && rng.percent(drop_percent) {
                continue;
            }
            let delay = if faulty {
                1 + rng.below(delay_ms_max as u64) as i64
            } else {
                1
            };
            sequence += 1;
            network.insert(
                (now_ms + delay, sequence),
                Envelope {
                    from: envelope.to,
                    principal: None,
                    connection: 0,
                    to: envelope.from,
                    message: Message::Response(*correlation_id, response),
                },
            );
        }
        let expected = visible.under(isolation);
        assert!(!expected.is_empty());
        assert_eq!(
            one_read_offsets(&log, isolation),
            expected,
            "seed {seed}: one clean read"
        );
        assert_eq!(delivered, expected, "seed {seed}");
        let bound = match isolation {
            IsolationLevel::ReadUncommitted => log.high_watermark(),
            IsolationLevel::ReadCommitted => log.last_stable_offset(),
        };
        assert_eq!(
            consumer.position(&tp(0)),
            Some(bound.0),
            "seed {seed}: caught up"
        );
    }

    #[test]
    fn consumer_model_over_faulty_links_delivers_each_visible_record_once_in_order() {
        // 200 seeded runs: whatever is lost, duplicated, delayed, reordered or refused, the
        // consumer hands out exactly the records one clean read would, once each, in order,
        // and ends at the isolation's bound.
        for seed in 0..200 {
            run_case(seed);
        }
    }
}

/// A consumer of `orders-0` that read `a`, `b`, `c` (offsets 0..3, leader epoch 0) from broker
/// 1, then had its next fetch answered with `error`: returns the harness at 100 ms with the
/// metadata refresh the error asked for, unanswered.
fn read_then_refresh_after(error: ErrorCode) -> (Harness, Sent) {
    let mut log = empty_log();
    append(&mut log, &data_batch(1, 0, &["a", "b", "c"], false));
    log.maybe_increment_high_watermark(Offset(3));
    let (mut harness, fetch) = Harness::fetching(ConsumerConfig::default(), 0);
    harness.serve_fetch(&fetch, &log);
    assert_eq!(harness.delivered_offsets(), vec![0, 1, 2]);
    let fetch = harness.sent();
    harness.advance_to(50);
    harness.answer(
        &fetch[0],
        Response::Replica(ReplicaResponse::Fetch {
            partitions: vec![fetch_error(tp(0), error)],
        }),
    );
    harness.advance_to(100);
    let mut refresh = harness.sent();
    harness.events();
    (harness, refresh.remove(0))
}

/// [`read_then_refresh_after`] a leader change: broker 1 lost leadership and metadata names
/// broker 2 in epoch 2. Returns the harness with the request it sends next.
fn after_leader_change() -> (Harness, Vec<Sent>) {
    let (mut harness, refresh) = read_then_refresh_after(ErrorCode::NotLeaderOrFollower);
    harness.answer(&refresh, metadata(2, 2));
    harness.advance_to(150);
    harness.events();
    let next = harness.sent();
    (harness, next)
}

fn epoch_end(leader_epoch: i32, end_offset: i64) -> Response {
    Response::Replica(ReplicaResponse::OffsetsForLeaderEpoch {
        partitions: vec![EpochAnswer {
            error: ErrorCode::None,
            leader_epoch: LeaderEpoch(leader_epoch),
            end_offset: Offset(end_offset),
        }],
    })
}

#[test]
fn consumer_validates_its_position_after_a_leader_change_and_goes_back_to_a_truncation() {
    // KIP-320: the new leader's log (one replica that lost its unflushed tail, say) ends epoch
    // 0 at offset 1, below the position 3: offsets 1 and 2 may hold other records by now, so
    // the consumer goes back to 1 instead of fetching at 3 and skipping them.
    let (mut harness, validate) = after_leader_change();
    assert_eq!(validate.len(), 1, "{validate:?}");
    assert_eq!(validate[0].to, broker(2));
    let Request::Replica(ReplicaRequest::OffsetsForLeaderEpoch {
        replica_id: None,
        partitions,
    }) = &validate[0].request
    else {
        panic!("expected a client's OffsetsForLeaderEpoch, got {validate:?}");
    };
    assert_eq!(
        partitions,
        &[EpochQuery {
            topic_partition: tp(0),
            current_leader_epoch: LeaderEpoch(2),
            leader_epoch: LeaderEpoch(0),
        }]
    );
    harness.answer(&validate[0], epoch_end(0, 1));
    assert_eq!(
        harness.events(),
        vec![ConsumerEvent::OffsetReset {
            topic_partition: tp(0),
            previous: Some(3),
            offset: 1,
            policy: AutoOffsetReset::Latest,
        }]
    );
    let fetch = harness.sent();
    assert_eq!(fetch.len(), 1);
    assert_eq!(fetch[0].fetch_partitions()[0].fetch_offset, Offset(1));
    assert_eq!(
        fetch[0].fetch_partitions()[0].current_leader_epoch,
        LeaderEpoch(2)
    );
}

#[test]
fn consumer_position_that_survived_the_leader_change_is_fetched_unchanged() {
    // The new leader's epoch 0 ends at the position or past it: nothing was truncated below
    // it, the consumer fetches on from 3 without a reset.
    let (mut harness, validate) = after_leader_change();
    harness.answer(&validate[0], epoch_end(0, 3));
    assert!(harness.events().is_empty());
    let fetch = harness.sent();
    assert_eq!(fetch.len(), 1);
    assert_eq!(fetch[0].fetch_partitions()[0].fetch_offset, Offset(3));
    // An undefined epoch (the leader knows none at or below 0) resets by the policy.
    let (mut harness, validate) = after_leader_change();
    harness.answer(&validate[0], epoch_end(-1, -1));
    assert_eq!(harness.consumer.position(&tp(0)), None);
    let list = harness.sent();
    assert!(matches!(
        list[0].request,
        Request::Replica(ReplicaRequest::ListOffsets { .. })
    ));
}

#[test]
fn a_position_awaiting_validation_is_not_committable() {
    // Kafka's `allConsumed` takes only valid positions: committing 3 before the new leader
    // confirms it would let the next member resume past a truncation nobody read.
    let (mut harness, validate) = after_leader_change();
    assert_eq!(harness.consumer.position(&tp(0)), Some(3));
    assert_eq!(harness.consumer.committable_position(&tp(0)), None);
    harness.answer(&validate[0], epoch_end(0, 3));
    assert_eq!(harness.consumer.committable_position(&tp(0)), Some((3, 0)));
    assert_eq!(
        harness.consumer.position_topic_id(&tp(0)),
        Some(ORDERS_TOPIC_ID)
    );
}

#[test]
fn a_position_in_a_topic_created_again_under_its_name_is_dropped() {
    // The topic was deleted and created again: offset 3 of the old log means nothing in the
    // new one (whose epochs start over at 0, so validation would not notice), and the
    // partition starts over under the reset policy.
    let (mut harness, refresh) = read_then_refresh_after(ErrorCode::UnknownTopicOrPartition);
    harness.answer(
        &refresh,
        recreated_orders_metadata(&[1, 2], &[1, 1], 0, TopicId(8)),
    );
    assert!(harness.events().contains(&ConsumerEvent::TopicRecreated {
        topic_partition: tp(0),
        previous: Some(3),
    }));
    assert_eq!(harness.consumer.position(&tp(0)), None);
    assert_eq!(harness.consumer.committable_position(&tp(0)), None);
    harness.advance_to(150);
    let list = harness.sent();
    assert!(
        matches!(
            list[0].request,
            Request::Replica(ReplicaRequest::ListOffsets { .. })
        ),
        "{list:?}"
    );
    harness.answer(&list[0], offsets(&[0]));
    assert_eq!(harness.consumer.committable_position(&tp(0)), Some((0, -1)));
    assert_eq!(harness.consumer.position_topic_id(&tp(0)), Some(TopicId(8)));
}

#[test]
fn a_consumer_following_a_whole_topic_assigns_the_partitions_a_refresh_shows() {
    // Built with partition 0 only; the first answer shows two partitions, a refresh after the
    // topic grew shows three: each new one is positioned by ListOffsets (earliest) and fetched,
    // while partition 0 keeps its position.
    let config = ConsumerConfig {
        auto_offset_reset: AutoOffsetReset::Earliest,
        metadata_max_age_ms: 1_000,
        ..ConsumerConfig::default()
    };
    let mut harness = Harness::new(config, vec![tp(0)]);
    harness.consumer.follow_whole_topic("orders");
    assert_eq!(harness.consumer.assignment(), vec![tp(0)]);
    harness.advance_to(0);
    let start = harness.sent();
    harness.answer(&start[0], orders_metadata(&[1], &[1, 1], 0));
    assert_eq!(harness.consumer.assignment(), vec![tp(0), tp(1)]);
    let list = harness.sent();
    harness.answer(&list[0], offsets(&[4, 0]));
    assert_eq!(harness.consumer.position(&tp(0)), Some(4));
    harness.sent();
    harness.advance_to(1_000);
    let refresh: Vec<Sent> = harness
        .sent()
        .into_iter()
        .filter(|sent| {
            matches!(
                sent.request,
                Request::Cluster(ClusterRequest::Metadata { .. })
            )
        })
        .collect();
    assert_eq!(refresh.len(), 1, "a refresh after metadata_max_age_ms");
    harness.answer(&refresh[0], orders_metadata(&[1], &[1, 1, 1], 0));
    assert_eq!(harness.consumer.assignment(), vec![tp(0), tp(1), tp(2)]);
    assert_eq!(harness.consumer.position(&tp(0)), Some(4), "kept");
    assert_eq!(
        harness.consumer.position(&tp(2)),
        None,
        "not yet positioned"
    );
    let list = harness.sent();
    let Request::Replica(ReplicaRequest::ListOffsets { partitions, .. }) = &list[0].request else {
        panic!("expected ListOffsets, got {:?}", list[0].request);
    };
    assert_eq!(partitions.len(), 1);
    assert_eq!(partitions[0].topic_partition, tp(2));
    assert_eq!(partitions[0].spec, OffsetSpec::Earliest);
}

#[test]
fn a_consumer_without_followed_topics_keeps_its_assignment_when_a_topic_grows() {
    let mut harness = Harness::new(ConsumerConfig::default(), vec![tp(0)]);
    harness.advance_to(0);
    let start = harness.sent();
    harness.answer(&start[0], orders_metadata(&[1], &[1, 1, 1], 0));
    assert_eq!(harness.consumer.assignment(), vec![tp(0)]);
}
