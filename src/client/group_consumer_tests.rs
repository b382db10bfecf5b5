//! Unit tests of the group member. Scripted tests play the coordinator and the partition leader
//! by hand and check the exact requests; the end-to-end tests run the member against the real
//! [`GroupCoordinatorShard`] (writes commit at once) and partition logs, with every message
//! delivered at once.

use bytes::Bytes;

use super::*;
use crate::client::consumer::AutoOffsetReset;
use crate::client::test_support::{
    orders_metadata, respond, take_requests, tp, Sent, CLUSTER, ORDERS_TOPIC_ID,
};
use crate::coordinator::group::{GroupCoordinatorConfig, GroupCoordinatorShard};
use crate::coordinator::{Shard, ShardEnv, ShardOutput, CONSUMER_OFFSETS_TOPIC};
use crate::log::{AppendOrigin, FetchIsolation, LogConfig, MemoryDisk, PartitionLog};
use crate::metadata::{MetadataImage, MetadataRecord, PartitionRecord};
use crate::protocol::{
    BrokerId, ClientKind, ClusterRequest, CoordinatorRequest, CoordinatorResponse, EpochAnswer,
    FetchPartition, FetchPartitionResponse, ListOffsetsAnswer, OffsetSpec, ReplicaRequest,
    ReplicaResponse, TopicId,
};
use crate::record::BatchBuilder;

/// The partition leader of `orders` in every test.
const LEADER: NodeId = NodeId::Broker(CLUSTER, BrokerId(1));
/// The group coordinator in every test.
const COORDINATOR: NodeId = NodeId::Broker(CLUSTER, BrokerId(2));
/// Leader epoch of `orders` and of its batches.
const EPOCH: i32 = 3;
/// An epoch end offset past every test log's end: nothing was truncated below a position.
const NOT_TRUNCATED: i64 = 1_000;
/// The heartbeat interval scripted coordinator answers give.
const HEARTBEAT_MS: i64 = 200;

fn member_node(index: u16) -> NodeId {
    NodeId::Client(CLUSTER, ClientKind::Consumer, index)
}

fn config() -> GroupConsumerConfig {
    let mut config = GroupConsumerConfig::new("g", vec!["orders".into()]);
    config.consumer.auto_offset_reset = AutoOffsetReset::Earliest;
    config.auto_commit_interval_ms = 1_000;
    config
}

/// A metadata answer: broker 1 leads both partitions of `orders` in [`EPOCH`].
fn metadata() -> Response {
    orders_metadata(&[1, 2], &[1, 1], EPOCH)
}

/// A log of `orders` partition with `count` one-record batches in [`EPOCH`], all committed.
fn log_with(count: usize) -> PartitionLog<MemoryDisk> {
    let mut log = PartitionLog::open(MemoryDisk::new(), LogConfig::default())
        .expect("an empty disk opens")
        .0;
    log.assign_epoch_start_offset(LeaderEpoch(EPOCH));
    append(&mut log, count);
    log
}

fn append(log: &mut PartitionLog<MemoryDisk>, count: usize) {
    for _ in 0..count {
        let mut builder = BatchBuilder::default();
        builder.append(0, None, Some(Bytes::from_static(b"v")), Vec::new());
        log.append_as_leader(
            &builder.build(),
            LeaderEpoch(EPOCH),
            AppendOrigin::Client,
            0,
        )
        .expect("append");
    }
    let end = log.log_end_offset();
    log.maybe_increment_high_watermark(end);
}

fn serve_fetch(logs: &[PartitionLog<MemoryDisk>], partitions: &[FetchPartition]) -> Response {
    let partitions = partitions
        .iter()
        .map(|partition| {
            let log = &logs[partition.topic_partition.partition as usize];
            let data = log
                .read(
                    partition.fetch_offset,
                    1 << 20,
                    FetchIsolation::HighWatermark,
                    true,
                )
                .expect("positions stay in range");
            FetchPartitionResponse {
                topic_partition: partition.topic_partition.clone(),
                error: ErrorCode::None,
                high_watermark: data.high_watermark,
                last_stable_offset: data.last_stable_offset,
                log_start_offset: data.log_start_offset,
                diverging_epoch: None,
                aborted_transactions: None,
                batches: data.batches,
            }
        })
        .collect();
    Response::Replica(ReplicaResponse::Fetch { partitions })
}

fn list_offsets(logs: &[PartitionLog<MemoryDisk>], request: &Request) -> Response {
    let Request::Replica(ReplicaRequest::ListOffsets { partitions, .. }) = request else {
        panic!("expected ListOffsets, got {request:?}");
    };
    let partitions = partitions
        .iter()
        .map(|query| {
            let log = &logs[query.topic_partition.partition as usize];
            let offset = match query.spec {
                OffsetSpec::Earliest => log.log_start_offset(),
                OffsetSpec::Latest => log.high_watermark(),
            };
            ListOffsetsAnswer {
                error: ErrorCode::None,
                offset,
                leader_epoch: LeaderEpoch(EPOCH),
            }
        })
        .collect();
    Response::Replica(ReplicaResponse::ListOffsets { partitions })
}

fn heartbeat_answer(
    member_id: &str,
    member_epoch: i32,
    assignment: Option<Vec<TopicPartition>>,
) -> Response {
    Response::Coordinator(CoordinatorResponse::ConsumerGroupHeartbeat {
        error: ErrorCode::None,
        member_id: member_id.into(),
        member_epoch,
        heartbeat_interval_ms: HEARTBEAT_MS,
        assignment,
    })
}

fn heartbeat_error(error: ErrorCode) -> Response {
    Response::Coordinator(CoordinatorResponse::ConsumerGroupHeartbeat {
        error,
        member_id: String::new(),
        member_epoch: 0,
        heartbeat_interval_ms: 0,
        assignment: None,
    })
}

fn committed(entries: &[(i32, i64, i32)]) -> Response {
    Response::Coordinator(CoordinatorResponse::OffsetFetch {
        error: ErrorCode::None,
        offsets: entries
            .iter()
            .map(|(partition, offset, leader_epoch)| CommittedOffset {
                topic_partition: tp(*partition),
                offset: Offset(*offset),
                leader_epoch: LeaderEpoch(*leader_epoch),
                metadata: String::new(),
                error: ErrorCode::None,
            })
            .collect(),
    })
}

struct Harness {
    member: GroupConsumer,
    now_ms: i64,
    /// The heartbeat interval the join answer gives.
    heartbeat_ms: i64,
}

impl Harness {
    fn new(config: GroupConsumerConfig) -> Self {
        let member = GroupConsumer::new(member_node(0), vec![LEADER, COORDINATOR], config)
            .expect("valid config");
        Self {
            member,
            now_ms: 0,
            heartbeat_ms: HEARTBEAT_MS,
        }
    }

    fn sent(&mut self) -> Vec<Sent> {
        take_requests(&mut self.member)
    }

    /// The only request sent since the last call.
    fn one(&mut self) -> Sent {
        let mut sent = self.sent();
        assert_eq!(sent.len(), 1, "{sent:#?}");
        sent.remove(0)
    }

    fn answer(&mut self, request: &Sent, response: Response) {
        respond(&mut self.member, self.now_ms, request, response);
    }

    fn advance_to(&mut self, now_ms: i64) {
        assert!(now_ms >= self.now_ms);
        self.now_ms = now_ms;
        self.member.handle_timeout(now_ms);
    }

    fn events(&mut self) -> Vec<GroupConsumerEvent> {
        self.member.take_events()
    }

    fn delivered_offsets(&mut self) -> Vec<(i32, i64)> {
        delivered(self.events())
    }

    /// Discovery and join: the member `g-member-0` at epoch 1 with `assignment`; returns the
    /// OffsetFetch it sends (if the assignment is not empty).
    fn joined(&mut self, assignment: Vec<TopicPartition>) -> Vec<Sent> {
        self.advance_to(0);
        let find = self.one();
        self.answer(
            &find,
            Response::Coordinator(CoordinatorResponse::FindCoordinator {
                error: ErrorCode::None,
                coordinator: Some(COORDINATOR),
            }),
        );
        let join = self.one();
        let mut answer = heartbeat_answer("g-member-0", 1, Some(assignment));
        if let Response::Coordinator(CoordinatorResponse::ConsumerGroupHeartbeat {
            heartbeat_interval_ms,
            ..
        }) = &mut answer
        {
            *heartbeat_interval_ms = self.heartbeat_ms;
        }
        self.answer(&join, answer);
        self.sent()
    }

    /// Joined with `orders-0` starting at committed offset `start` (epoch 2), metadata answered
    /// and the position validated; returns the first Fetch.
    fn fetching(&mut self, start: i64) -> Sent {
        let fetch_offsets = self.joined(vec![tp(0)]);
        self.answer(&fetch_offsets[0], committed(&[(0, start, 2)]));
        let metadata_request = self.one();
        self.answer(&metadata_request, metadata());
        let validation = self.one();
        let fetch = self.validated(&validation);
        self.events();
        fetch
    }

    /// Answers a position validation (KIP-320: a committed offset with its epoch is checked
    /// before the first fetch) with "nothing truncated below it"; returns the next request.
    fn validated(&mut self, validation: &Sent) -> Sent {
        self.answer_validation(validation);
        self.one()
    }

    /// Answers a position validation with "nothing truncated below it".
    fn answer_validation(&mut self, validation: &Sent) {
        let Request::Replica(ReplicaRequest::OffsetsForLeaderEpoch {
            replica_id: None,
            partitions,
        }) = &validation.request
        else {
            panic!("expected a position validation, got {validation:?}");
        };
        let partitions = partitions
            .iter()
            .map(|query| EpochAnswer {
                error: ErrorCode::None,
                leader_epoch: query.leader_epoch,
                end_offset: Offset(NOT_TRUNCATED),
            })
            .collect();
        self.answer(
            validation,
            Response::Replica(ReplicaResponse::OffsetsForLeaderEpoch { partitions }),
        );
    }
}

fn commit_offsets(sent: &Sent) -> (String, i32, Vec<(TopicPartition, i64, i32)>) {
    match &sent.request {
        Request::Coordinator(CoordinatorRequest::OffsetCommit {
            group_id,
            member_id,
            member_epoch,
            offsets,
        }) => {
            assert_eq!(group_id, "g");
            let offsets = offsets
                .iter()
                .map(|entry| {
                    (
                        entry.topic_partition.clone(),
                        entry.offset.0,
                        entry.leader_epoch.0,
                    )
                })
                .collect();
            (member_id.clone(), *member_epoch, offsets)
        }
        other => panic!("expected OffsetCommit, got {other:?}"),
    }
}

fn heartbeat_fields(sent: &Sent) -> (String, i32, Option<Vec<String>>) {
    match &sent.request {
        Request::Coordinator(CoordinatorRequest::ConsumerGroupHeartbeat {
            group_id,
            member_id,
            member_epoch,
            subscribed_topics,
        }) => {
            assert_eq!(group_id, "g");
            (member_id.clone(), *member_epoch, subscribed_topics.clone())
        }
        other => panic!("expected ConsumerGroupHeartbeat, got {other:?}"),
    }
}

#[test]
fn group_consumer_discovers_joins_and_starts_at_committed_offsets() {
    // FindCoordinator(Group, g) to the first bootstrap broker; the join (epoch 0, the topics)
    // to the coordinator; OffsetFetch for the assignment; orders-0 starts at its committed
    // offset, orders-1 (none committed) by ListOffsets under the reset policy.
    let mut harness = Harness::new(config());
    assert_eq!(harness.member.poll_timeout(), Some(0));
    harness.advance_to(0);
    let find = harness.one();
    assert_eq!(
        find.to, LEADER,
        "the first bootstrap broker in sorted order"
    );
    assert!(find.correlation_id >= GROUP_CORRELATION_ID_BASE);
    assert!(matches!(
        &find.request,
        Request::Coordinator(CoordinatorRequest::FindCoordinator { key_type: CoordinatorType::Group, key }) if key == "g"
    ));
    harness.answer(
        &find,
        Response::Coordinator(CoordinatorResponse::FindCoordinator {
            error: ErrorCode::None,
            coordinator: Some(COORDINATOR),
        }),
    );
    let join = harness.one();
    assert_eq!(join.to, COORDINATOR);
    assert_eq!(
        heartbeat_fields(&join),
        (String::new(), 0, Some(vec!["orders".to_string()]))
    );
    harness.answer(
        &join,
        heartbeat_answer("g-member-0", 1, Some(vec![tp(0), tp(1)])),
    );
    let offset_fetch = harness.one();
    assert_eq!(offset_fetch.to, COORDINATOR);
    assert!(matches!(
        &offset_fetch.request,
        Request::Coordinator(CoordinatorRequest::OffsetFetch { group_id, partitions: Some(partitions) })
            if group_id == "g" && partitions == &vec![tp(0), tp(1)]
    ));
    assert_eq!(harness.member.member_id(), Some("g-member-0"));
    assert_eq!(
        harness.member.positions()[&tp(0)],
        None,
        "waits for OffsetFetch"
    );
    harness.answer(&offset_fetch, committed(&[(0, 5, 2), (1, -1, -1)]));
    let events = harness.events();
    assert!(events.contains(&GroupConsumerEvent::Joined {
        member_id: "g-member-0".into(),
        member_epoch: 1,
    }));
    assert!(events.contains(&GroupConsumerEvent::Started {
        topic_partition: tp(0),
        committed: Some(5),
    }));
    assert!(events.contains(&GroupConsumerEvent::Started {
        topic_partition: tp(1),
        committed: None,
    }));
    let metadata_request = harness.one();
    assert!(metadata_request.correlation_id < GROUP_CORRELATION_ID_BASE);
    harness.answer(&metadata_request, metadata());
    let sent = harness.sent();
    assert_eq!(sent.len(), 2, "{sent:#?}");
    assert!(matches!(
        &sent[0].request,
        Request::Replica(ReplicaRequest::ListOffsets { partitions, .. })
            if partitions.len() == 1 && partitions[0].topic_partition == tp(1)
                && partitions[0].spec == OffsetSpec::Earliest
    ));
    // The committed offset carries epoch 2: validated first (KIP-320), then fetched.
    let fetch = harness.validated(&sent[1]);
    assert_eq!(fetch.fetch_partitions()[0].topic_partition, tp(0));
    assert_eq!(fetch.fetch_partitions()[0].fetch_offset, Offset(5));
    assert_eq!(harness.member.committed(&tp(0)), Some((5, 2)));
}

#[test]
fn group_consumer_does_not_fetch_from_a_leader_older_than_the_committed_epoch() {
    // Found by swarm_transactions seed 5207: a member started at offset 321 committed in
    // epoch 1 while its metadata still named the deposed (isolated) epoch-0 leader. That
    // zombie answered OffsetOutOfRange, the member reset to 0 and committed 0. Kafka's
    // refreshCommittedOffsets marks the commit's epoch as seen, so the older leader is
    // unknown until metadata catches up.
    let mut harness = Harness::new(config());
    let fetch_offsets = harness.joined(vec![tp(0)]);
    harness.answer(&fetch_offsets[0], committed(&[(0, 7, EPOCH + 1)]));
    let metadata_request = harness.one();
    harness.answer(&metadata_request, metadata()); // Still epoch EPOCH.
    assert!(
        harness.sent().is_empty(),
        "no Fetch (and no reset) from a leader older than the committed epoch"
    );
    harness.advance_to(harness.now_ms + 100);
    let refresh = harness.one();
    assert!(
        matches!(
            refresh.request,
            Request::Cluster(ClusterRequest::Metadata { .. })
        ),
        "the cache asks again after the backoff: {refresh:?}"
    );
    harness.answer(&refresh, orders_metadata(&[1, 2], &[2, 1], EPOCH + 1));
    let validation = harness.one();
    assert_eq!(validation.to, NodeId::Broker(CLUSTER, BrokerId(2)));
    let fetch = harness.validated(&validation);
    assert_eq!(fetch.to, NodeId::Broker(CLUSTER, BrokerId(2)));
    let partition = &fetch.fetch_partitions()[0];
    assert_eq!(
        (partition.fetch_offset, partition.current_leader_epoch),
        (Offset(7), LeaderEpoch(EPOCH + 1))
    );
}

#[test]
fn group_consumer_commits_consumed_positions_with_the_record_leader_epoch_every_interval() {
    // Records 5..8 (epoch 3) are delivered; at the auto-commit time the member commits 8 with
    // epoch 3 under its member id and epoch; with nothing new, the next interval commits
    // nothing.
    let mut harness = Harness::new(config());
    harness.heartbeat_ms = 60_000; // Heartbeats are not the point here.
    let fetch = harness.fetching(5);
    let logs = [log_with(8)];
    harness.answer(&fetch, serve_fetch(&logs, fetch.fetch_partitions()));
    assert_eq!(harness.delivered_offsets(), vec![(0, 5), (0, 6), (0, 7)]);
    let next_fetch = harness.one();
    harness.advance_to(999);
    assert!(harness.sent().is_empty(), "not before the interval");
    harness.advance_to(1_000);
    let commit = harness.one();
    assert_eq!(commit.to, COORDINATOR);
    assert_eq!(
        commit_offsets(&commit),
        ("g-member-0".into(), 1, vec![(tp(0), 8, EPOCH)])
    );
    harness.answer(
        &commit,
        Response::Coordinator(CoordinatorResponse::OffsetCommit {
            results: vec![(tp(0), ErrorCode::None)],
        }),
    );
    assert!(harness.events().contains(&GroupConsumerEvent::Committed {
        offsets: vec![(tp(0), 8, EPOCH)],
    }));
    assert_eq!(harness.member.committed(&tp(0)), Some((8, EPOCH)));
    harness.answer(
        &next_fetch,
        serve_fetch(&logs, next_fetch.fetch_partitions()),
    );
    harness.advance_to(2_000);
    let sent = harness.sent();
    assert!(
        sent.iter().all(|sent| !matches!(
            sent.request,
            Request::Coordinator(CoordinatorRequest::OffsetCommit { .. })
        )),
        "nothing new to commit: {sent:#?}"
    );
}

#[test]
fn group_consumer_commits_revoked_partitions_before_acknowledging_the_revocation() {
    // The coordinator moves the member to epoch 2 and takes orders-1 away: the member commits
    // orders-1's position at epoch 2 and stops fetching it; only the commit's answer lets the
    // acknowledging heartbeat (epoch 2) go out.
    let mut harness = Harness::new(config());
    let fetch_offsets = harness.joined(vec![tp(0), tp(1)]);
    harness.answer(&fetch_offsets[0], committed(&[(0, 0, -1), (1, 0, -1)]));
    let metadata_request = harness.one();
    harness.answer(&metadata_request, metadata());
    let fetch = harness.one();
    let logs = [log_with(2), log_with(3)];
    harness.answer(&fetch, serve_fetch(&logs, fetch.fetch_partitions()));
    harness.one(); // the next fetch
    harness.advance_to(HEARTBEAT_MS);
    let heartbeat = harness.one();
    assert_eq!(heartbeat_fields(&heartbeat), ("g-member-0".into(), 1, None));
    harness.answer(
        &heartbeat,
        heartbeat_answer("g-member-0", 2, Some(vec![tp(0)])),
    );
    let commit = harness.one();
    assert_eq!(
        commit_offsets(&commit),
        ("g-member-0".into(), 2, vec![(tp(1), 3, EPOCH)])
    );
    assert_eq!(
        harness.member.consumer().position(&tp(1)),
        None,
        "no longer fetched"
    );
    assert_eq!(harness.member.assignment(), vec![tp(0)]);
    harness.answer(
        &commit,
        Response::Coordinator(CoordinatorResponse::OffsetCommit {
            results: vec![(tp(1), ErrorCode::None)],
        }),
    );
    let ack = harness.one();
    assert_eq!(heartbeat_fields(&ack), ("g-member-0".into(), 2, None));
}

#[test]
fn group_consumer_rejoins_after_unknown_member_id_and_resumes_from_committed_offsets() {
    // UnknownMemberId: every partition is dropped uncommitted and the member joins afresh
    // (empty id); FencedMemberEpoch: it rejoins under its id. Each time the new assignment
    // starts from the coordinator's committed offsets.
    let mut harness = Harness::new(config());
    let fetch = harness.fetching(5);
    let logs = [log_with(9)];
    harness.answer(&fetch, serve_fetch(&logs, fetch.fetch_partitions()));
    let pending_fetch = harness.one();
    harness.events();
    harness.advance_to(HEARTBEAT_MS);
    let heartbeat = harness.one();
    harness.answer(&heartbeat, heartbeat_error(ErrorCode::UnknownMemberId));
    assert!(harness.events().contains(&GroupConsumerEvent::Left {
        member_id: "g-member-0".into(),
        error: ErrorCode::UnknownMemberId,
    }));
    assert!(harness.member.assignment().is_empty());
    assert_eq!(harness.member.consumer().position(&tp(0)), None);
    let join = harness.one();
    assert_eq!(
        heartbeat_fields(&join),
        (String::new(), 0, Some(vec!["orders".to_string()]))
    );
    harness.answer(&join, heartbeat_answer("g-member-1", 4, Some(vec![tp(0)])));
    let offset_fetch = harness.one();
    harness.answer(&offset_fetch, committed(&[(0, 7, EPOCH)]));
    let validation = harness.one();
    harness.answer_validation(&validation);
    assert!(
        harness.sent().is_empty(),
        "the leader still has our old fetch"
    );
    // The old fetch (from offset 8) comes back: stale, dropped; the next one starts at 7.
    harness.answer(
        &pending_fetch,
        serve_fetch(&logs, pending_fetch.fetch_partitions()),
    );
    assert!(harness.delivered_offsets().is_empty());
    let fetch = harness.one();
    assert_eq!(fetch.fetch_partitions()[0].fetch_offset, Offset(7));
    harness.answer(&fetch, serve_fetch(&logs, fetch.fetch_partitions()));
    assert_eq!(harness.delivered_offsets(), vec![(0, 7), (0, 8)]);
    let _ = harness.one();
    harness.advance_to(2 * HEARTBEAT_MS);
    let heartbeat = harness
        .sent()
        .into_iter()
        .find(|sent| {
            matches!(
                sent.request,
                Request::Coordinator(CoordinatorRequest::ConsumerGroupHeartbeat { .. })
            )
        })
        .expect("a heartbeat");
    assert_eq!(heartbeat_fields(&heartbeat), ("g-member-1".into(), 4, None));
    harness.answer(&heartbeat, heartbeat_error(ErrorCode::FencedMemberEpoch));
    let rejoin = harness.one();
    assert_eq!(
        heartbeat_fields(&rejoin),
        ("g-member-1".into(), 0, Some(vec!["orders".to_string()]))
    );
}

#[test]
fn group_consumer_rediscovers_the_coordinator_on_not_coordinator_and_timeouts() {
    // NotCoordinator on a heartbeat: the coordinator is forgotten and looked up again after
    // the backoff; the member keeps its id, epoch and partitions. A heartbeat that times out
    // does the same, and a FindCoordinator that times out moves to the next bootstrap broker.
    let mut harness = Harness::new(config());
    harness.fetching(0);
    harness.advance_to(200);
    let heartbeat = harness.one();
    harness.answer(&heartbeat, heartbeat_error(ErrorCode::NotCoordinator));
    assert!(harness
        .events()
        .contains(&GroupConsumerEvent::CoordinatorLost {
            coordinator: COORDINATOR,
            error: ErrorCode::NotCoordinator,
        }));
    assert!(harness.sent().is_empty());
    assert_eq!(harness.member.poll_timeout(), Some(300), "retry_backoff_ms");
    harness.advance_to(300);
    let find = harness.one();
    harness.answer(
        &find,
        Response::Coordinator(CoordinatorResponse::FindCoordinator {
            error: ErrorCode::None,
            coordinator: Some(LEADER),
        }),
    );
    let heartbeat = harness.one();
    assert_eq!(heartbeat.to, LEADER);
    assert_eq!(
        heartbeat_fields(&heartbeat),
        ("g-member-0".into(), 1, Some(vec!["orders".to_string()])),
        "after a failed heartbeat a full one: the lost answer may have changed the assignment"
    );
    assert_eq!(harness.member.assignment(), vec![tp(0)]);
    // No answer: after group_request_timeout_ms (500) the coordinator is forgotten again.
    harness.advance_to(800);
    assert!(harness
        .events()
        .contains(&GroupConsumerEvent::CoordinatorLost {
            coordinator: LEADER,
            error: ErrorCode::RequestTimedOut,
        }));
    harness.advance_to(900);
    let find = harness.one();
    assert_eq!(find.to, LEADER);
    harness.advance_to(1_400);
    assert!(harness.sent().is_empty(), "no commit without a coordinator");
    harness.advance_to(1_500);
    let find = harness.one();
    assert_eq!(find.to, COORDINATOR, "rotated after the timeout");
}

#[test]
fn group_consumer_leave_commits_then_sends_the_leave_heartbeat() {
    let mut harness = Harness::new(config());
    let fetch = harness.fetching(0);
    let logs = [log_with(4)];
    harness.answer(&fetch, serve_fetch(&logs, fetch.fetch_partitions()));
    harness.sent();
    harness.member.leave(10);
    let commit = harness.one();
    assert_eq!(commit_offsets(&commit).2, vec![(tp(0), 4, EPOCH)]);
    assert!(harness.member.assignment().is_empty());
    harness.answer(
        &commit,
        Response::Coordinator(CoordinatorResponse::OffsetCommit {
            results: vec![(tp(0), ErrorCode::None)],
        }),
    );
    let leave = harness.one();
    assert_eq!(heartbeat_fields(&leave), ("g-member-0".into(), -1, None));
    harness.answer(&leave, heartbeat_answer("g-member-0", -1, None));
    assert!(harness.events().contains(&GroupConsumerEvent::Left {
        member_id: "g-member-0".into(),
        error: ErrorCode::None,
    }));
    assert!(harness.member.has_left());
    harness.advance_to(100_000);
    assert!(harness.sent().is_empty(), "a member that left does nothing");
}

#[test]
fn group_consumer_config_is_validated() {
    let node = member_node(0);
    let mut bad = config();
    bad.group_id.clear();
    assert!(GroupConsumer::new(node, vec![LEADER], bad).is_err());
    let mut bad = config();
    bad.topics.clear();
    assert!(GroupConsumer::new(node, vec![LEADER], bad).is_err());
    let mut bad = config();
    bad.auto_commit_interval_ms = 0;
    assert!(GroupConsumer::new(node, vec![LEADER], bad).is_err());
    assert!(GroupConsumer::new(node, vec![], config()).is_err());
}

// ----- end to end, against the real coordinator shard -----

/// The coordinator broker (hosting the real shard, writes committing at once) and the leader
/// of `orders` (two partitions served from logs), answering every request at once.
struct World {
    shard: GroupCoordinatorShard,
    image: MetadataImage,
    logs: Vec<PartitionLog<MemoryDisk>>,
    now_ms: i64,
}

impl World {
    fn new() -> Self {
        let mut image = MetadataImage::default();
        let mut offset = 0;
        for (index, (name, partitions)) in [(CONSUMER_OFFSETS_TOPIC, 1), ("orders", 2)]
            .into_iter()
            .enumerate()
        {
            // The id the scripted Metadata answers give `orders`: the coordinator refuses
            // commits naming another.
            let topic_id = if name == "orders" {
                ORDERS_TOPIC_ID
            } else {
                TopicId(index as u128 + 1)
            };
            let mut records = vec![MetadataRecord::Topic {
                name: name.to_string(),
                topic_id,
            }];
            records.extend((0..partitions).map(|partition| {
                MetadataRecord::Partition(PartitionRecord {
                    topic_id,
                    partition,
                    replicas: vec![BrokerId(1)],
                    isr: vec![BrokerId(1)],
                    leader: Some(BrokerId(1)),
                    leader_epoch: EPOCH,
                    partition_epoch: 0,
                    eligible_leader_replicas: Vec::new(),
                    last_known_elr: Vec::new(),
                })
            }));
            for record in records {
                image.apply(offset, &record);
                offset += 1;
            }
        }
        let mut shard = GroupCoordinatorShard::new(GroupCoordinatorConfig::default());
        let partition = TopicPartition::new(CONSUMER_OFFSETS_TOPIC, 0);
        let env = ShardEnv {
            now_ms: 0,
            image: &image,
            coordinator_epoch: 0,
            node_id: COORDINATOR,
            partition: &partition,
        };
        shard.loaded(&env, &mut ShardOutput::default());
        Self {
            shard,
            image,
            logs: vec![log_with(3), log_with(2)],
            now_ms: 0,
        }
    }

    /// Runs the shard with `call`, committing its writes at once; returns its responses.
    fn shard_call(
        &mut self,
        call: impl FnOnce(
            &mut GroupCoordinatorShard,
            &ShardEnv<'_>,
            &mut ShardOutput<crate::coordinator::group::GroupRecord>,
        ),
    ) -> Vec<(NodeId, u64, Response)> {
        let partition = TopicPartition::new(CONSUMER_OFFSETS_TOPIC, 0);
        let env = ShardEnv {
            now_ms: self.now_ms,
            image: &self.image,
            coordinator_epoch: 0,
            node_id: COORDINATOR,
            partition: &partition,
        };
        let mut out = ShardOutput::default();
        call(&mut self.shard, &env, &mut out);
        let mut responses = Vec::new();
        let mut queue = vec![out];
        while let Some(out) = queue.pop() {
            responses.extend(out.responses);
            for write in out.writes {
                for record in &write.records {
                    self.shard.replay(record);
                }
                let mut next = ShardOutput::default();
                self.shard
                    .write_completed(&env, write.write_id, Ok(()), &mut next);
                queue.push(next);
            }
        }
        responses
    }

    fn answer(&mut self, envelope: Envelope) -> Option<Envelope> {
        let Message::Request(correlation_id, request) = envelope.message else {
            panic!("members send requests");
        };
        let response = match request {
            Request::Coordinator(CoordinatorRequest::FindCoordinator { .. }) => {
                Response::Coordinator(CoordinatorResponse::FindCoordinator {
                    error: ErrorCode::None,
                    coordinator: Some(COORDINATOR),
                })
            }
            Request::Cluster(ClusterRequest::Metadata { .. }) => metadata(),
            Request::Replica(ReplicaRequest::ListOffsets { .. }) => {
                list_offsets(&self.logs, &request)
            }
            Request::Replica(ReplicaRequest::Fetch { partitions, .. }) => {
                serve_fetch(&self.logs, &partitions)
            }
            Request::Replica(ReplicaRequest::OffsetsForLeaderEpoch { partitions, .. }) => {
                Response::Replica(ReplicaResponse::OffsetsForLeaderEpoch {
                    partitions: partitions
                        .iter()
                        .map(|query| {
                            let log = &self.logs[query.topic_partition.partition as usize];
                            let end = log.end_offset_for_epoch(query.leader_epoch);
                            EpochAnswer {
                                error: ErrorCode::None,
                                leader_epoch: end.epoch,
                                end_offset: end.end_offset,
                            }
                        })
                        .collect(),
                })
            }
            Request::Coordinator(group_request) => {
                let from = envelope.from;
                let mut responses = self.shard_call(|shard, env, out| {
                    shard.handle_request(env, from, correlation_id, group_request, out)
                });
                assert!(responses.len() <= 1);
                responses.pop()?.2
            }
            // Nothing else answers in this harness.
            Request::Replica(_)
            | Request::Controller(_)
            | Request::Mirror(_)
            | Request::Cluster(_) => return None,
        };
        Some(Envelope {
            from: envelope.to,
            principal: None,
            connection: 0,
            to: envelope.from,
            message: Message::Response(correlation_id, response),
        })
    }

    /// Runs `members` (those not `None`) until `until_ms`, delivering every message at once.
    fn run(&mut self, members: &mut [&mut GroupConsumer], until_ms: i64) {
        loop {
            let mut delivered = false;
            for member in members.iter_mut() {
                for envelope in member.take_outbox() {
                    if let Some(response) = self.answer(envelope) {
                        member.handle_message(self.now_ms, response);
                        delivered = true;
                    }
                }
            }
            if delivered {
                continue;
            }
            let next = members
                .iter()
                .filter_map(|member| member.poll_timeout())
                .chain(self.shard.poll_timeout())
                .filter(|at| *at <= until_ms)
                .min();
            let Some(next) = next else {
                self.now_ms = until_ms;
                return;
            };
            self.now_ms = self.now_ms.max(next);
            let now_ms = self.now_ms;
            self.shard_call(|shard, env, out| {
                if shard.poll_timeout().is_some_and(|at| at <= now_ms) {
                    shard.handle_timeout(env, out);
                }
            });
            for member in members.iter_mut() {
                if member.poll_timeout().is_some_and(|at| at <= now_ms) {
                    member.handle_timeout(now_ms);
                }
            }
        }
    }
}

/// (partition, offset) of every record among `events`.
fn delivered(events: Vec<GroupConsumerEvent>) -> Vec<(i32, i64)> {
    events
        .into_iter()
        .flat_map(|event| match event {
            GroupConsumerEvent::Consumer(ConsumerEvent::Records {
                topic_partition,
                records,
                ..
            }) => records
                .into_iter()
                .map(|record| (topic_partition.partition, record.offset))
                .collect(),
            _ => Vec::new(),
        })
        .collect()
}

fn new_member(index: u16) -> GroupConsumer {
    GroupConsumer::new(member_node(index), vec![LEADER, COORDINATOR], config())
        .expect("valid config")
}

#[test]
fn restarted_group_consumer_resumes_from_the_committed_offsets() {
    // A member consumes everything, commits, and leaves. A new instance joins later, after
    // more records were written, and gets only the new ones: it starts at the committed
    // offsets.
    let mut world = World::new();
    let mut first = new_member(1);
    world.run(&mut [&mut first], 1_500);
    assert_eq!(
        delivered(first.take_events()),
        vec![(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]
    );
    let committed = world.shard.committed_offsets("g");
    assert_eq!(committed[&tp(0)].offset, 3, "auto-committed");
    assert_eq!(committed[&tp(0)].leader_epoch, EPOCH);
    assert_eq!(committed[&tp(1)].offset, 2);
    first.leave(world.now_ms);
    world.run(&mut [&mut first], 1_600);
    assert!(first.has_left());
    assert!(world.shard.members("g").is_empty());
    append(&mut world.logs[0], 2);
    append(&mut world.logs[1], 1);
    let mut second = new_member(2);
    world.run(&mut [&mut second], 3_000);
    let events = second.take_events();
    assert!(events.contains(&GroupConsumerEvent::Joined {
        member_id: "g-member-0-1".into(),
        member_epoch: 3,
    }));
    assert_eq!(delivered(events), vec![(0, 3), (0, 4), (1, 2)]);
    assert_eq!(world.shard.committed_offsets("g")[&tp(0)].offset, 5);
}

#[test]
fn crashed_member_partitions_move_after_its_session_and_resume_from_its_last_commit() {
    // Two members share the topic, one partition each. One stops (a crash: no leave). After
    // its session times out the survivor gets its partition and starts at its last commit.
    let mut world = World::new();
    let mut first = new_member(1);
    let mut second = new_member(2);
    world.run(&mut [&mut first, &mut second], 1_500);
    assert_eq!(first.assignment(), vec![tp(0)]);
    assert_eq!(second.assignment(), vec![tp(1)]);
    assert_eq!(world.shard.group_epoch("g"), 2);
    let mut seen = delivered(first.take_events());
    seen.extend(delivered(second.take_events()));
    seen.sort();
    assert_eq!(seen, vec![(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]);
    assert_eq!(world.shard.committed_offsets("g")[&tp(1)].offset, 2);
    append(&mut world.logs[1], 2);
    // `second` crashes: it is no longer run.
    world.run(&mut [&mut first], 4_000);
    assert_eq!(world.shard.members("g"), vec!["g-member-0-0".to_string()]);
    assert_eq!(first.assignment(), vec![tp(0), tp(1)]);
    assert_eq!(delivered(first.take_events()), vec![(1, 2), (1, 3)]);
}
