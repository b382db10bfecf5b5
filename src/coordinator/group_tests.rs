//! Unit tests of the group coordinator shard. The test plays the runtime through the [`Shard`]
//! trait only: it appends each write to an in-memory "partition", replays its records and then
//! calls `write_completed` (at once, or when the test releases held writes), and a failover is a
//! new shard that replays every committed record.

use super::*;
use crate::coordinator::{partition_for, CONSUMER_OFFSETS_TOPIC};
use crate::metadata::{MetadataRecord, PartitionRecord};
use crate::protocol::{
    BrokerId, ClientKind, ClusterIndex, CoordinatorRequest, CoordinatorResponse, LeaderEpoch,
    Offset, TopicId,
};

const CLUSTER: ClusterIndex = ClusterIndex(0);
const BROKER: NodeId = NodeId::Broker(CLUSTER, BrokerId(1));
const ADMIN: NodeId = NodeId::Client(CLUSTER, ClientKind::Admin, 0);

fn client(index: u16) -> NodeId {
    NodeId::Client(CLUSTER, ClientKind::Consumer, index)
}

fn orders(partition: i32) -> TopicPartition {
    TopicPartition::new("orders", partition)
}

fn orders_range(range: std::ops::Range<i32>) -> Vec<TopicPartition> {
    range.map(orders).collect()
}

/// A partition of `topic_id` whose only replica, broker 1, leads it in epoch 0.
fn led_by_broker_1(topic_id: TopicId, partition: i32) -> MetadataRecord {
    MetadataRecord::Partition(PartitionRecord {
        topic_id,
        partition,
        replicas: vec![BrokerId(1)],
        isr: vec![BrokerId(1)],
        leader: Some(BrokerId(1)),
        leader_epoch: 0,
        partition_epoch: 0,
        eligible_leader_replicas: Vec::new(),
        last_known_elr: Vec::new(),
    })
}

/// An image with `__consumer_offsets` of `offsets_partitions` partitions and the given topics,
/// every partition led by broker 1.
fn image(offsets_partitions: i32, topics: &[(&str, i32)]) -> MetadataImage {
    let mut image = MetadataImage::default();
    let mut offset = 0;
    let all = [(CONSUMER_OFFSETS_TOPIC, offsets_partitions)]
        .into_iter()
        .chain(topics.iter().copied());
    for (index, (name, partitions)) in all.enumerate() {
        let topic_id = TopicId(index as u128 + 1);
        let mut records = vec![MetadataRecord::Topic {
            name: name.to_string(),
            topic_id,
        }];
        records.extend((0..partitions).map(|partition| led_by_broker_1(topic_id, partition)));
        for record in records {
            image.apply(offset, &record);
            offset += 1;
        }
    }
    image
}

/// The shard's environment at `now_ms` (from the runtime's fields, so that the shard can be
/// borrowed mutably beside it).
fn env<'a>(
    now_ms: i64,
    coordinator_epoch: i32,
    image: &'a MetadataImage,
    partition: &'a TopicPartition,
) -> ShardEnv<'a> {
    ShardEnv {
        now_ms,
        image,
        coordinator_epoch,
        node_id: BROKER,
        partition,
    }
}

/// What a heartbeat answered.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Beat {
    error: ErrorCode,
    member_id: String,
    member_epoch: i32,
    assignment: Option<Vec<TopicPartition>>,
}

/// The test's runtime: a partition of committed records and the shard hosted on it.
struct Runtime {
    shard: GroupCoordinatorShard,
    image: MetadataImage,
    partition: TopicPartition,
    now_ms: i64,
    /// The leader epoch of the shard's partition; every failover raises it.
    coordinator_epoch: i32,
    /// Committed records, in order.
    log: Vec<GroupRecord>,
    /// Writes appended but not yet committed (while `hold_writes`).
    held: Vec<ShardWrite<GroupRecord>>,
    hold_writes: bool,
    /// Every write fails with this error.
    fail_writes: Option<ErrorCode>,
    responses: Vec<(NodeId, u64, Response)>,
    next_correlation_id: u64,
}

impl Runtime {
    /// A loaded shard for partition 0 of a one-partition `__consumer_offsets`, with `orders`
    /// (4 partitions) and `payments` (2).
    fn new() -> Self {
        Self::with(image(1, &[("orders", 4), ("payments", 2)]), 0)
    }

    fn with(image: MetadataImage, partition: i32) -> Self {
        let mut runtime = Self {
            shard: GroupCoordinatorShard::new(GroupCoordinatorConfig::default()),
            image,
            partition: TopicPartition::new(CONSUMER_OFFSETS_TOPIC, partition),
            now_ms: 1_000,
            coordinator_epoch: 0,
            log: Vec::new(),
            held: Vec::new(),
            hold_writes: false,
            fail_writes: None,
            responses: Vec::new(),
            next_correlation_id: 1,
        };
        runtime.load();
        runtime
    }

    fn load(&mut self) {
        for record in self.log.clone() {
            self.shard.replay(&record);
        }
        self.call(|shard, env, out| shard.loaded(env, out));
    }

    /// Calls the shard through the trait and carries out what it asked for.
    fn call(
        &mut self,
        action: impl FnOnce(&mut GroupCoordinatorShard, &ShardEnv<'_>, &mut ShardOutput<GroupRecord>),
    ) {
        let mut out = ShardOutput::default();
        let env = env(
            self.now_ms,
            self.coordinator_epoch,
            &self.image,
            &self.partition,
        );
        action(&mut self.shard, &env, &mut out);
        self.carry_out(out);
    }

    /// A new coordinator for the same partition: a fresh shard that replays every committed
    /// record (writes still held are lost with the old leader's uncommitted tail).
    fn failover(&mut self) {
        let mut out = ShardOutput::default();
        self.shard.unloaded(&mut out);
        self.carry_out(out);
        self.held.clear();
        self.coordinator_epoch += 1;
        self.shard = GroupCoordinatorShard::new(GroupCoordinatorConfig::default());
        self.load();
    }

    /// A failover after the partition lost its tail (an unreplicated `__consumer_offsets`
    /// partition whose leader lost unflushed writes): only the first `kept` records survive.
    fn failover_keeping(&mut self, kept: usize) {
        self.log.truncate(kept);
        self.failover();
    }

    fn carry_out(&mut self, out: ShardOutput<GroupRecord>) {
        let mut queue = vec![out];
        while let Some(out) = queue.pop() {
            assert!(out.requests.is_empty(), "the group shard sends no requests");
            self.responses.extend(out.responses);
            for write in out.writes {
                let mut next = ShardOutput::default();
                let env = env(
                    self.now_ms,
                    self.coordinator_epoch,
                    &self.image,
                    &self.partition,
                );
                if let Some(error) = self.fail_writes {
                    self.shard
                        .write_completed(&env, write.write_id, Err(error), &mut next);
                } else if self.hold_writes {
                    self.held.push(write);
                } else {
                    for record in &write.records {
                        self.shard.replay(record);
                        self.log.push(record.clone());
                    }
                    self.shard
                        .write_completed(&env, write.write_id, Ok(()), &mut next);
                }
                queue.push(next);
            }
        }
    }

    /// Commits the held writes in order.
    fn release_writes(&mut self) {
        self.hold_writes = false;
        let held = std::mem::take(&mut self.held);
        let out = ShardOutput {
            writes: held,
            responses: Vec::new(),
            requests: Vec::new(),
            marks: Vec::new(),
        };
        self.carry_out(out);
    }

    /// Sends `request`; returns its answer if one was sent.
    fn send(&mut self, from: NodeId, request: CoordinatorRequest) -> Option<Response> {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        self.call(|shard, env, out| shard.handle_request(env, from, correlation_id, request, out));
        self.answer(correlation_id)
    }

    /// Takes the answer to `correlation_id`, if sent.
    fn answer(&mut self, correlation_id: u64) -> Option<Response> {
        let index = self
            .responses
            .iter()
            .position(|(_, id, _)| *id == correlation_id)?;
        Some(self.responses.remove(index).2)
    }

    /// Moves the clock, firing the shard's timer if it is due.
    fn advance_to(&mut self, now_ms: i64) {
        self.now_ms = now_ms;
        if self
            .shard
            .poll_timeout()
            .is_some_and(|deadline| deadline <= now_ms)
        {
            self.call(|shard, env, out| shard.handle_timeout(env, out));
        }
    }

    fn heartbeat(
        &mut self,
        from: NodeId,
        member_id: &str,
        member_epoch: i32,
        topics: Option<&[&str]>,
    ) -> Option<Beat> {
        let request = CoordinatorRequest::ConsumerGroupHeartbeat {
            group_id: "g".into(),
            member_id: member_id.into(),
            member_epoch,
            subscribed_topics: topics.map(|topics| topics.iter().map(|t| t.to_string()).collect()),
        };
        self.send(from, request).map(beat_of)
    }

    /// Joins group `g` subscribed to `orders`; the answer must be immediate.
    fn join(&mut self, from: NodeId) -> Beat {
        let beat = self
            .heartbeat(from, "", 0, Some(&["orders"]))
            .expect("answered once written");
        assert_eq!(beat.error, ErrorCode::None);
        beat
    }

    fn commit(
        &mut self,
        from: NodeId,
        member_id: &str,
        member_epoch: i32,
        entries: &[(TopicPartition, i64)],
    ) -> Option<Vec<(TopicPartition, ErrorCode)>> {
        let offsets = entries
            .iter()
            .map(|(topic_partition, offset)| OffsetCommitEntry {
                topic_partition: topic_partition.clone(),
                offset: Offset(*offset),
                leader_epoch: LeaderEpoch(4),
                metadata: format!("m{offset}"),
                topic_id: None,
            })
            .collect();
        let request = CoordinatorRequest::OffsetCommit {
            group_id: "g".into(),
            member_id: member_id.into(),
            member_epoch,
            offsets,
        };
        match self.send(from, request)? {
            Response::Coordinator(CoordinatorResponse::OffsetCommit { results }) => Some(results),
            other => panic!("expected a commit answer, got {other:?}"),
        }
    }

    /// Committed offsets of `g` for `partitions` as OffsetFetch returns them.
    fn fetch_offsets(&mut self, partitions: &[TopicPartition]) -> Vec<(i64, i32, String)> {
        let request = CoordinatorRequest::OffsetFetch {
            group_id: "g".into(),
            partitions: Some(partitions.to_vec()),
        };
        match self.send(ADMIN, request) {
            Some(Response::Coordinator(CoordinatorResponse::OffsetFetch { error, offsets })) => {
                assert_eq!(error, ErrorCode::None);
                offsets
                    .into_iter()
                    .map(|offset| (offset.offset.0, offset.leader_epoch.0, offset.metadata))
                    .collect()
            }
            other => panic!("expected an OffsetFetch answer, got {other:?}"),
        }
    }

    fn describe(&mut self, group_ids: &[&str]) -> (ErrorCode, Vec<GroupDescription>) {
        let request = CoordinatorRequest::DescribeGroups {
            group_ids: group_ids.iter().map(|id| id.to_string()).collect(),
        };
        match self.send(ADMIN, request) {
            Some(Response::Coordinator(CoordinatorResponse::DescribeGroups { error, groups })) => {
                (error, groups)
            }
            other => panic!("expected a DescribeGroups answer, got {other:?}"),
        }
    }

    fn state(&mut self) -> String {
        let (error, groups) = self.describe(&["g"]);
        assert_eq!(error, ErrorCode::None);
        groups[0].state.clone()
    }
}

fn all_ok(results: &[(TopicPartition, ErrorCode)]) -> bool {
    results.iter().all(|(_, error)| error.is_none())
}

/// Two members of `g` on `orders`, settled: member-0 owns 0..2 and member-1 owns 2..4, both at
/// epoch 2.
fn two_stable_members(runtime: &mut Runtime) -> (String, String) {
    let first = runtime.join(client(1));
    let second = runtime.join(client(2));
    runtime.heartbeat(client(1), &first.member_id, 1, None); // revokes 2..4
    runtime.heartbeat(client(1), &first.member_id, 2, None); // acknowledges
    let beat = runtime
        .heartbeat(client(2), &second.member_id, 2, None)
        .unwrap();
    assert_eq!(beat.assignment, Some(orders_range(2..4)));
    assert_eq!(runtime.state(), "Stable");
    (first.member_id, second.member_id)
}

#[test]
fn join_assigns_a_persisted_member_id_and_deterministic_ranges() {
    // A join is answered once the member's record is written: id `g-member-0-0` (coordinator epoch 0, counter 0), epoch 1 (the
    // group epoch after the join), every partition of its topics. The same inputs give the same
    // records and answers in a second coordinator.
    let mut runtime = Runtime::new();
    runtime.hold_writes = true;
    assert_eq!(
        runtime.heartbeat(client(1), "", 0, Some(&["orders", "payments"])),
        None
    );
    assert!(
        runtime.shard.members("g").is_empty(),
        "not applied before it is written"
    );
    runtime.release_writes();
    let mut expected = orders_range(0..4);
    expected.extend([
        TopicPartition::new("payments", 0),
        TopicPartition::new("payments", 1),
    ]);
    let beat = runtime.answer(1).expect("answered after the write");
    assert_eq!(
        beat_of(beat),
        Beat {
            error: ErrorCode::None,
            member_id: "g-member-0-0".into(),
            member_epoch: 1,
            assignment: Some(expected),
        }
    );
    assert_eq!(
        runtime.log,
        vec![GroupRecord::Member {
            group_id: "g".into(),
            member_id: "g-member-0-0".into(),
            member_index: 0,
            subscribed_topics: vec!["orders".into(), "payments".into()],
        }]
    );
    // Three members on 4 partitions: ranges of 2, 1, 1 in member-id order.
    let mut members = BTreeMap::new();
    for (member, topics) in [
        ("b", vec!["orders"]),
        ("a", vec!["orders"]),
        ("c", vec!["orders", "payments"]),
    ] {
        members.insert(
            member.to_string(),
            topics.into_iter().map(String::from).collect(),
        );
    }
    let target = range_assignment(&members, &runtime.image);
    assert_eq!(target["a"], orders_range(0..2).into_iter().collect());
    assert_eq!(target["b"], orders_range(2..3).into_iter().collect());
    let c: Vec<TopicPartition> = target["c"].iter().cloned().collect();
    assert_eq!(
        c,
        vec![
            orders(3),
            TopicPartition::new("payments", 0),
            TopicPartition::new("payments", 1)
        ]
    );
    let mut again = Runtime::new();
    again.heartbeat(client(1), "", 0, Some(&["payments", "orders", "orders"]));
    assert_eq!(
        again.log, runtime.log,
        "topics are normalized, records identical"
    );
}

fn beat_of(response: Response) -> Beat {
    match response {
        Response::Coordinator(CoordinatorResponse::ConsumerGroupHeartbeat {
            error,
            member_id,
            member_epoch,
            assignment,
            ..
        }) => Beat {
            error,
            member_id,
            member_epoch,
            assignment,
        },
        other => panic!("expected a heartbeat answer, got {other:?}"),
    }
}

#[test]
fn second_member_bumps_the_epoch_and_gets_partitions_once_the_owner_acknowledges() {
    // 1. A owns all four partitions at epoch 1. B joins: epoch 2, target 2..4, but A may still
    //    fetch them, so B's first assignment is empty.
    // 2. A's next heartbeat moves it to epoch 2 and takes 2..4 away (Reconciling).
    // 3. Until A acknowledges with epoch 2, B still gets nothing; afterwards B gets 2..4.
    let mut runtime = Runtime::new();
    let a = runtime.join(client(1));
    assert_eq!(
        (a.member_epoch, a.assignment.clone()),
        (1, Some(orders_range(0..4)))
    );
    let b = runtime.join(client(2));
    assert_eq!(b.member_id, "g-member-0-1");
    assert_eq!((b.member_epoch, b.assignment), (2, Some(Vec::new())));
    assert_eq!(runtime.shard.group_epoch("g"), 2);
    assert_eq!(runtime.state(), "Reconciling");
    let a2 = runtime.heartbeat(client(1), &a.member_id, 1, None).unwrap();
    assert_eq!(
        (a2.member_epoch, a2.assignment),
        (2, Some(orders_range(0..2)))
    );
    assert_eq!(runtime.state(), "Reconciling", "A has not acknowledged yet");
    let b2 = runtime.heartbeat(client(2), &b.member_id, 2, None).unwrap();
    assert_eq!(
        (b2.member_epoch, b2.assignment),
        (2, None),
        "2..4 not released yet"
    );
    let a3 = runtime.heartbeat(client(1), &a.member_id, 2, None).unwrap();
    assert_eq!((a3.error, a3.assignment), (ErrorCode::None, None));
    let b3 = runtime.heartbeat(client(2), &b.member_id, 2, None).unwrap();
    assert_eq!(b3.assignment, Some(orders_range(2..4)));
    assert_eq!(runtime.state(), "Stable");
    assert_eq!(
        runtime.shard.member_assignment("g", &a.member_id),
        orders_range(0..2)
    );
}

#[test]
fn subscription_change_is_written_and_bumps_the_epoch() {
    let mut runtime = Runtime::new();
    let a = runtime.join(client(1));
    let beat = runtime
        .heartbeat(client(1), &a.member_id, 1, Some(&["payments"]))
        .unwrap();
    assert_eq!(beat.member_epoch, 2);
    assert_eq!(
        beat.assignment,
        Some(vec![
            TopicPartition::new("payments", 0),
            TopicPartition::new("payments", 1)
        ])
    );
    assert_eq!(runtime.log.len(), 2);
    let same = runtime
        .heartbeat(client(1), &a.member_id, 2, Some(&["payments"]))
        .unwrap();
    assert_eq!(
        (same.member_epoch, same.assignment),
        (
            2,
            Some(vec![
                TopicPartition::new("payments", 0),
                TopicPartition::new("payments", 1)
            ])
        ),
        "a full heartbeat (with the subscription) gets the whole assignment"
    );
    assert_eq!(
        runtime.log.len(),
        2,
        "an unchanged subscription writes nothing"
    );
    let light = runtime.heartbeat(client(1), &a.member_id, 2, None).unwrap();
    assert_eq!((light.member_epoch, light.assignment), (2, None));
}

#[test]
fn session_timeout_removes_a_silent_member() {
    // B stops heartbeating; a session timeout after its last heartbeat its tombstone is
    // written, the epoch moves, B is unknown, and A gets every partition.
    let mut runtime = Runtime::new();
    let (a, b) = two_stable_members(&mut runtime);
    let session_ms = runtime.shard.config().session_timeout_ms;
    let b_deadline = runtime.now_ms + session_ms;
    runtime.advance_to(runtime.now_ms + 600);
    runtime.heartbeat(client(1), &a, 2, None).unwrap();
    assert_eq!(runtime.shard.poll_timeout(), Some(b_deadline));
    runtime.advance_to(b_deadline - 1);
    assert_eq!(runtime.shard.members("g").len(), 2);
    runtime.advance_to(b_deadline);
    assert_eq!(runtime.shard.members("g"), vec![a.clone()]);
    assert_eq!(
        runtime.log.last(),
        Some(&GroupRecord::MemberRemoved {
            group_id: "g".into(),
            member_id: b.clone(),
        })
    );
    assert_eq!(runtime.shard.group_epoch("g"), 3);
    let late = runtime.heartbeat(client(2), &b, 2, None).unwrap();
    assert_eq!(late.error, ErrorCode::UnknownMemberId);
    let beat = runtime.heartbeat(client(1), &a, 2, None).unwrap();
    assert_eq!(
        (beat.member_epoch, beat.assignment),
        (3, Some(orders_range(0..4)))
    );
}

#[test]
fn leave_removes_the_member_once_its_tombstone_is_written() {
    let mut runtime = Runtime::new();
    let (a, b) = two_stable_members(&mut runtime);
    runtime.hold_writes = true;
    assert_eq!(
        runtime.heartbeat(client(2), &b, -1, None),
        None,
        "waits for the write"
    );
    assert_eq!(runtime.shard.members("g").len(), 2);
    runtime.release_writes();
    let left = beat_of(runtime.answer(runtime.next_correlation_id - 1).unwrap());
    assert_eq!((left.error, left.member_epoch), (ErrorCode::None, -1));
    assert_eq!(runtime.shard.members("g"), vec![a.clone()]);
    let beat = runtime.heartbeat(client(1), &a, 2, None).unwrap();
    assert_eq!(
        (beat.member_epoch, beat.assignment),
        (3, Some(orders_range(0..4)))
    );
    runtime.heartbeat(client(1), &a, -1, None).unwrap();
    assert_eq!(runtime.state(), "Empty");
    let again = runtime.heartbeat(client(1), &a, -1, None).unwrap();
    assert_eq!(again.error, ErrorCode::UnknownMemberId);
}

#[test]
fn heartbeat_with_a_wrong_epoch_is_fenced_and_a_rejoin_keeps_the_member_id() {
    let mut runtime = Runtime::new();
    let (a, _b) = two_stable_members(&mut runtime);
    for epoch in [1, 3] {
        let beat = runtime.heartbeat(client(1), &a, epoch, None).unwrap();
        assert_eq!(beat.error, ErrorCode::FencedMemberEpoch, "epoch {epoch}");
    }
    let unknown = runtime.heartbeat(client(3), "g-member-9", 1, None).unwrap();
    assert_eq!(unknown.error, ErrorCode::UnknownMemberId);
    // Kafka's fenced member rejoins with its id and epoch 0; it owns nothing now.
    let rejoined = runtime.heartbeat(client(1), &a, 0, None).unwrap();
    assert_eq!(
        (
            rejoined.error,
            rejoined.member_id,
            rejoined.member_epoch,
            rejoined.assignment
        ),
        (ErrorCode::None, a.clone(), 2, Some(orders_range(0..2)))
    );
    let invalid = runtime.heartbeat(client(1), "", 0, None).unwrap();
    assert_eq!(
        invalid.error,
        ErrorCode::InvalidRequest,
        "a join names its topics"
    );
}

#[test]
fn commits_are_answered_after_their_write_and_survive_a_failover() {
    // A member's commit is one record per partition, applied and answered only once written;
    // OffsetFetch reads replayed state (−1 for none) but waits for the writes asked for before
    // it (Kafka's requireStable), and a new coordinator that replays the partition answers
    // the same.
    let mut runtime = Runtime::new();
    let a = runtime.join(client(1));
    runtime.hold_writes = true;
    let entries = [(orders(0), 10), (orders(1), 20)];
    assert_eq!(runtime.commit(client(1), &a.member_id, 1, &entries), None);
    let commit_id = runtime.next_correlation_id - 1;
    let fetch = CoordinatorRequest::OffsetFetch {
        group_id: "g".into(),
        partitions: Some(vec![orders(0)]),
    };
    assert!(
        runtime.send(ADMIN, fetch).is_none(),
        "a fetch behind a pending commit waits for it"
    );
    let fetch_id = runtime.next_correlation_id - 1;
    runtime.release_writes();
    let results = runtime.answer(commit_id).unwrap();
    assert!(
        matches!(&results, Response::Coordinator(CoordinatorResponse::OffsetCommit { results }) if all_ok(results) && results.len() == 2)
    );
    assert!(matches!(
        runtime.answer(fetch_id),
        Some(Response::Coordinator(CoordinatorResponse::OffsetFetch { error: ErrorCode::None, offsets }))
            if offsets.len() == 1 && offsets[0].offset == Offset(10)
    ));
    let expected = vec![
        (10, 4, "m10".to_string()),
        (20, 4, "m20".to_string()),
        (-1, -1, String::new()),
    ];
    assert_eq!(
        runtime.fetch_offsets(&[orders(0), orders(1), orders(2)]),
        expected
    );
    assert!(matches!(
        &runtime.log[1],
        GroupRecord::OffsetCommit {
            offset: 10,
            leader_epoch: 4,
            commit_timestamp_ms: 1_000,
            ..
        }
    ));
    runtime.failover();
    assert_eq!(
        runtime.fetch_offsets(&[orders(0), orders(1), orders(2)]),
        expected
    );
    let all = CoordinatorRequest::OffsetFetch {
        group_id: "g".into(),
        partitions: None,
    };
    let Some(Response::Coordinator(CoordinatorResponse::OffsetFetch { offsets, .. })) =
        runtime.send(ADMIN, all)
    else {
        panic!("expected OffsetFetch");
    };
    assert_eq!(
        offsets
            .iter()
            .map(|o| o.topic_partition.clone())
            .collect::<Vec<_>>(),
        orders_range(0..2)
    );
    assert_eq!(runtime.shard.committed_offsets("g")[&orders(1)].offset, 20);
}

#[test]
fn members_survive_a_failover_and_commit_again_after_their_first_heartbeat() {
    let mut runtime = Runtime::new();
    let (a, b) = two_stable_members(&mut runtime);
    runtime.failover();
    assert_eq!(runtime.shard.members("g"), vec![a.clone(), b.clone()]);
    assert_eq!(runtime.shard.group_epoch("g"), 2);
    let fenced = runtime.commit(client(1), &a, 2, &[(orders(0), 5)]).unwrap();
    assert_eq!(
        fenced[0].1,
        ErrorCode::FencedMemberEpoch,
        "epoch unknown until it heartbeats"
    );
    let beat = runtime.heartbeat(client(1), &a, 2, None).unwrap();
    assert_eq!(
        (beat.member_epoch, beat.assignment),
        (2, Some(orders_range(0..2)))
    );
    let ok = runtime.commit(client(1), &a, 2, &[(orders(0), 5)]).unwrap();
    assert!(all_ok(&ok));
    // Loaded members get a fresh session from the load time: B, silent, expires then.
    let deadline = runtime.now_ms + runtime.shard.config().session_timeout_ms;
    runtime.advance_to(deadline - 1);
    runtime.heartbeat(client(1), &a, 2, None).unwrap();
    runtime.advance_to(deadline);
    assert_eq!(runtime.shard.members("g"), vec![a]);
}

#[test]
fn member_ids_never_repeat_after_a_failover_or_a_failed_write() {
    let mut runtime = Runtime::new();
    let a = runtime.join(client(1));
    runtime
        .heartbeat(client(1), &a.member_id, -1, None)
        .unwrap();
    runtime.fail_writes = Some(ErrorCode::NotLeaderOrFollower);
    let failed = runtime
        .heartbeat(client(2), "", 0, Some(&["orders"]))
        .unwrap();
    assert_eq!(
        failed.error,
        ErrorCode::NotCoordinator,
        "normalized write error"
    );
    runtime.fail_writes = None;
    assert_eq!(runtime.join(client(2)).member_id, "g-member-0-2");
    runtime.failover();
    assert_eq!(runtime.join(client(3)).member_id, "g-member-1-3");
}

#[test]
fn member_ids_never_repeat_after_a_failover_that_lost_the_tail() {
    // Seeds 9300000000000112 and 9300000000000831: the only replica of `__consumer_offsets`
    // lost its unflushed tail, which held the join of a live member. The new coordinator's
    // counter restarted below that member's index and handed its id to a second consumer; the
    // first one, fenced, rejoined under the same id, and both committed the same partitions,
    // so the committed offset went backwards. The coordinator epoch in the id keeps ids unique
    // as Kafka's random UUIDs are.
    let mut runtime = Runtime::new();
    let a = runtime.join(client(1));
    let kept = runtime.log.len();
    let b = runtime.join(client(2));
    runtime.failover_keeping(kept);
    assert_eq!(runtime.shard.members("g"), vec![a.member_id.clone()]);
    let c = runtime.join(client(3));
    assert_ne!(
        c.member_id, b.member_id,
        "a lost join's id is not handed out again"
    );
    let fenced = runtime.heartbeat(client(2), &b.member_id, 2, None).unwrap();
    assert_eq!(fenced.error, ErrorCode::UnknownMemberId);
    let rejoin = runtime
        .heartbeat(client(2), &b.member_id, 0, Some(&["orders"]))
        .unwrap();
    assert_eq!(
        rejoin.error,
        ErrorCode::UnknownMemberId,
        "the lost member must join anew"
    );
}

#[test]
fn admin_commit_is_refused_while_the_group_has_members_and_accepted_when_empty() {
    // KIP-1279 §7 item 6: an offset sync (empty member id, epoch −1) into a group with members
    // gets UnknownMemberId, as Kafka's coordinator answers; into an empty or unknown group it is
    // written. Members are persisted, so the refusal holds across a failover too.
    let mut runtime = Runtime::new();
    let results = runtime.commit(ADMIN, "", -1, &[(orders(0), 7)]).unwrap();
    assert!(all_ok(&results), "{results:?}");
    assert_eq!(runtime.state(), "Empty");
    let a = runtime.join(client(1));
    let refused = runtime.commit(ADMIN, "", -1, &[(orders(0), 8)]).unwrap();
    assert_eq!(refused, vec![(orders(0), ErrorCode::UnknownMemberId)]);
    runtime.failover();
    let refused = runtime.commit(ADMIN, "", -1, &[(orders(0), 8)]).unwrap();
    assert_eq!(refused, vec![(orders(0), ErrorCode::UnknownMemberId)]);
    runtime.heartbeat(client(1), &a.member_id, 1, None).unwrap();
    runtime
        .heartbeat(client(1), &a.member_id, -1, None)
        .unwrap();
    let accepted = runtime.commit(ADMIN, "", -1, &[(orders(0), 9)]).unwrap();
    assert!(all_ok(&accepted));
    assert_eq!(runtime.fetch_offsets(&[orders(0)])[0].0, 9);
    assert!(
        runtime.shard.committed_offsets("g")[&orders(0)].by_admin,
        "marked as an admin commit, which may move the offset back"
    );
    runtime.failover();
    assert!(
        runtime.shard.committed_offsets("g")[&orders(0)].by_admin,
        "persisted"
    );
}

#[test]
fn member_commit_with_a_stale_epoch_is_fenced() {
    let mut runtime = Runtime::new();
    let a = runtime.join(client(1));
    assert!(all_ok(
        &runtime
            .commit(client(1), &a.member_id, 1, &[(orders(0), 1)])
            .unwrap()
    ));
    runtime.join(client(2));
    runtime.heartbeat(client(1), &a.member_id, 1, None).unwrap(); // now epoch 2
    let stale = runtime
        .commit(client(1), &a.member_id, 1, &[(orders(0), 2)])
        .unwrap();
    assert_eq!(stale, vec![(orders(0), ErrorCode::FencedMemberEpoch)]);
    let unknown = runtime
        .commit(client(3), "g-member-7", 2, &[(orders(0), 2)])
        .unwrap();
    assert_eq!(unknown, vec![(orders(0), ErrorCode::UnknownMemberId)]);
    let request = CoordinatorRequest::OffsetCommit {
        group_id: "nope".into(),
        member_id: "x".into(),
        member_epoch: 1,
        offsets: vec![OffsetCommitEntry {
            topic_partition: orders(0),
            offset: Offset(1),
            leader_epoch: LeaderEpoch::NONE,
            metadata: String::new(),
            topic_id: None,
        }],
    };
    let Some(Response::Coordinator(CoordinatorResponse::OffsetCommit { results })) =
        runtime.send(client(3), request)
    else {
        panic!("expected a commit answer");
    };
    assert_eq!(results[0].1, ErrorCode::GroupIdNotFound);
    assert!(all_ok(
        &runtime
            .commit(client(1), &a.member_id, 2, &[(orders(0), 2)])
            .unwrap()
    ));
    assert_eq!(runtime.fetch_offsets(&[orders(0)])[0].0, 2);
}

#[test]
fn commit_of_an_unknown_topic_or_partition_is_refused_per_partition() {
    let mut runtime = Runtime::new();
    let results = runtime
        .commit(
            ADMIN,
            "",
            -1,
            &[
                (orders(0), 1),
                (TopicPartition::new("nope", 0), 1),
                (orders(9), 1),
            ],
        )
        .unwrap();
    assert_eq!(
        results,
        vec![
            (orders(0), ErrorCode::None),
            (
                TopicPartition::new("nope", 0),
                ErrorCode::UnknownTopicOrPartition
            ),
            (orders(9), ErrorCode::UnknownTopicOrPartition),
        ]
    );
    assert_eq!(runtime.log.len(), 1);
}

#[test]
fn keys_of_another_partition_get_not_coordinator_and_so_does_an_unloaded_shard() {
    let image = image(3, &[("orders", 4)]);
    let home = partition_for("g", 3);
    let mut runtime = Runtime::with(image, home);
    let foreign = (0..100)
        .map(|index| format!("other-{index}"))
        .find(|group_id| partition_for(group_id, 3) != home)
        .expect("some group hashes elsewhere");
    let requests = [
        CoordinatorRequest::ConsumerGroupHeartbeat {
            group_id: foreign.clone(),
            member_id: String::new(),
            member_epoch: 0,
            subscribed_topics: Some(vec!["orders".into()]),
        },
        CoordinatorRequest::OffsetCommit {
            group_id: foreign.clone(),
            member_id: String::new(),
            member_epoch: -1,
            offsets: vec![OffsetCommitEntry {
                topic_partition: orders(0),
                offset: Offset(1),
                leader_epoch: LeaderEpoch::NONE,
                metadata: String::new(),
                topic_id: None,
            }],
        },
        CoordinatorRequest::OffsetFetch {
            group_id: foreign.clone(),
            partitions: None,
        },
        CoordinatorRequest::DescribeGroups {
            group_ids: vec!["g".into(), foreign.clone()],
        },
    ];
    for request in requests {
        let error = match runtime.send(client(1), request) {
            Some(Response::Coordinator(CoordinatorResponse::ConsumerGroupHeartbeat {
                error,
                ..
            }))
            | Some(Response::Coordinator(CoordinatorResponse::OffsetFetch { error, .. }))
            | Some(Response::Coordinator(CoordinatorResponse::DescribeGroups { error, .. })) => {
                error
            }
            Some(Response::Coordinator(CoordinatorResponse::OffsetCommit { results })) => {
                results[0].1
            }
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(error, ErrorCode::NotCoordinator);
    }
    assert!(runtime.log.is_empty());
    // Unloading answers a request waiting for its write, and every later one.
    runtime.hold_writes = true;
    assert_eq!(runtime.heartbeat(client(1), "", 0, Some(&["orders"])), None);
    let mut out = ShardOutput::default();
    runtime.shard.unloaded(&mut out);
    assert_eq!(out.responses.len(), 1);
    assert!(matches!(
        &out.responses[0].2,
        Response::Coordinator(CoordinatorResponse::ConsumerGroupHeartbeat {
            error: ErrorCode::NotCoordinator,
            ..
        })
    ));
    let after = runtime.commit(ADMIN, "", -1, &[(orders(0), 1)]).unwrap();
    assert_eq!(after[0].1, ErrorCode::NotCoordinator);
}

#[test]
fn describe_groups_reports_empty_reconciling_stable_and_dead() {
    let mut runtime = Runtime::new();
    assert_eq!(runtime.state(), "Dead");
    runtime.commit(ADMIN, "", -1, &[(orders(0), 1)]).unwrap();
    assert_eq!(runtime.state(), "Empty");
    let (a, b) = two_stable_members(&mut runtime);
    let (error, groups) = runtime.describe(&[]);
    assert_eq!(error, ErrorCode::None);
    assert_eq!(
        groups,
        vec![GroupDescription {
            group_id: "g".into(),
            state: "Stable".into(),
            members: vec![a, b],
        }]
    );
    runtime.join(client(3));
    assert_eq!(runtime.state(), "Reconciling");
}

#[test]
fn a_fetch_behind_pending_writes_is_answered_on_failover_with_not_coordinator() {
    let mut runtime = Runtime::new();
    let a = runtime.join(client(1));
    runtime.hold_writes = true;
    assert_eq!(
        runtime.commit(client(1), &a.member_id, 1, &[(orders(0), 10)]),
        None
    );
    let fetch = CoordinatorRequest::OffsetFetch {
        group_id: "g".into(),
        partitions: None,
    };
    assert!(runtime.send(ADMIN, fetch).is_none());
    let fetch_id = runtime.next_correlation_id - 1;
    runtime.failover();
    assert!(matches!(
        runtime.answer(fetch_id),
        Some(Response::Coordinator(CoordinatorResponse::OffsetFetch {
            error: ErrorCode::NotCoordinator,
            ..
        }))
    ));
}

#[test]
fn partitions_a_topic_gains_are_handed_out_without_an_epoch_bump() {
    // `orders` grows from 4 to 6 partitions under two settled members: the next heartbeats
    // hand the new partitions out (to the member whose range they fall in, nobody else holding
    // them), keep everything already owned, and leave the group epoch alone.
    let mut runtime = Runtime::new();
    let (first, second) = two_stable_members(&mut runtime);
    for partition in 4..6 {
        let offset = runtime.image.next_offset;
        runtime
            .image
            .apply(offset, &led_by_broker_1(TopicId(2), partition));
    }
    let beat = runtime.heartbeat(client(1), &first, 2, None).unwrap();
    assert_eq!(beat.assignment, None, "partition 2 is still the second's");
    let beat = runtime.heartbeat(client(2), &second, 2, None).unwrap();
    assert_eq!(beat.member_epoch, 2);
    assert_eq!(beat.assignment, Some(orders_range(2..6)));
    assert_eq!(runtime.shard.group_epoch("g"), 2);
}

#[test]
fn a_deleted_topics_offsets_are_tombstoned_and_stay_deleted_after_a_failover() {
    // Kafka's onPartitionsDeleted: a topic created again under a deleted one's name must not
    // hand its groups the old topic's offsets.
    let mut runtime = Runtime::new();
    let payments = TopicPartition::new("payments", 1);
    let committed = runtime
        .commit(
            ADMIN,
            "",
            -1,
            &[(orders(0), 7), (orders(3), 9), (payments.clone(), 4)],
        )
        .unwrap();
    assert!(all_ok(&committed), "{committed:?}");
    runtime.call(|shard, env, out| shard.topics_deleted(env, &["orders".into()], out));
    let tombstones: Vec<&GroupRecord> = runtime
        .log
        .iter()
        .filter(|record| matches!(record, GroupRecord::OffsetDeleted { .. }))
        .collect();
    assert_eq!(tombstones.len(), 2, "one per committed partition of orders");
    let expected = vec![
        (-1, -1, String::new()),
        (-1, -1, String::new()),
        (4, 4, "m4".into()),
    ];
    let asked = [orders(0), orders(3), payments.clone()];
    assert_eq!(runtime.fetch_offsets(&asked), expected);
    runtime.failover();
    assert_eq!(runtime.fetch_offsets(&asked), expected);
    assert_eq!(partitions_with_offsets(&runtime), vec![payments.clone()]);
    // A shard that is not loaded (still loading, or handed over) writes nothing.
    let before = runtime.log.len();
    runtime.shard.unloaded(&mut ShardOutput::default());
    runtime.call(|shard, env, out| shard.topics_deleted(env, &["payments".into()], out));
    assert_eq!(runtime.log.len(), before);
}

/// The partitions group `g` has committed offsets for, in order.
fn partitions_with_offsets(runtime: &Runtime) -> Vec<TopicPartition> {
    runtime.shard.committed_offsets("g").into_keys().collect()
}

/// `orders` deleted and created again under a new id in the runtime's image, without telling
/// the shard (its coordinator was failing over when brokers applied the deletion).
fn recreate_orders_unnoticed(runtime: &mut Runtime) -> TopicId {
    let old = runtime.image.topic_ids["orders"];
    let new = TopicId(99);
    let mut records = vec![
        MetadataRecord::RemoveTopic { topic_id: old },
        MetadataRecord::Topic {
            name: "orders".into(),
            topic_id: new,
        },
    ];
    records.extend((0..4).map(|partition| led_by_broker_1(new, partition)));
    let first = runtime.image.next_offset;
    for (offset, record) in (first..).zip(records) {
        runtime.image.apply(offset, &record);
    }
    new
}

#[test]
fn a_shard_loaded_after_a_deletion_it_missed_deletes_the_old_topics_offsets() {
    // Kafka's onPartitionsDeleted reaches only shards loaded at that moment; the recorded
    // topic id (KAFKA-19141) lets a shard loaded later tell the old topic's offsets apart.
    let mut runtime = Runtime::new();
    let payments = TopicPartition::new("payments", 1);
    let committed = runtime
        .commit(ADMIN, "", -1, &[(orders(0), 7), (payments.clone(), 4)])
        .unwrap();
    assert!(all_ok(&committed), "{committed:?}");
    recreate_orders_unnoticed(&mut runtime);
    // Before any tombstone is written, OffsetFetch already hides the old topic's offset.
    let asked = [orders(0), payments.clone()];
    let expected = vec![(-1, -1, String::new()), (4, 4, "m4".to_string())];
    let fetched = runtime.shard.handle_offset_fetch(
        &env(runtime.now_ms, 0, &runtime.image, &runtime.partition),
        "g",
        Some(asked.to_vec()),
    );
    let Response::Coordinator(CoordinatorResponse::OffsetFetch { offsets, .. }) = fetched else {
        panic!("expected an OffsetFetch answer, got {fetched:?}");
    };
    assert_eq!(
        offsets
            .into_iter()
            .map(|offset| (offset.offset.0, offset.leader_epoch.0, offset.metadata))
            .collect::<Vec<_>>(),
        expected
    );
    runtime.failover();
    let tombstones = runtime
        .log
        .iter()
        .filter(|record| matches!(record, GroupRecord::OffsetDeleted { topic_partition, .. } if *topic_partition == orders(0)))
        .count();
    assert_eq!(tombstones, 1, "the load tombstones the old topic's offset");
    assert_eq!(partitions_with_offsets(&runtime), vec![payments.clone()]);
    assert_eq!(runtime.fetch_offsets(&asked), expected);
}

#[test]
fn a_commit_naming_a_deleted_topics_id_is_refused_and_one_by_name_records_the_current_id() {
    let mut runtime = Runtime::new();
    let old = runtime.image.topic_ids["orders"];
    let new = recreate_orders_unnoticed(&mut runtime);
    let commit = |topic_partition: TopicPartition, offset: i64, topic_id: Option<TopicId>| {
        CoordinatorRequest::OffsetCommit {
            group_id: "g".into(),
            member_id: String::new(),
            member_epoch: -1,
            offsets: vec![OffsetCommitEntry {
                topic_partition,
                offset: Offset(offset),
                leader_epoch: LeaderEpoch(1),
                metadata: String::new(),
                topic_id,
            }],
        }
    };
    let results = |response: Option<Response>| match response {
        Some(Response::Coordinator(CoordinatorResponse::OffsetCommit { results })) => results,
        other => panic!("expected a commit answer, got {other:?}"),
    };
    // OffsetCommit v10: a member whose position is of the deleted topic.
    let refused = results(runtime.send(ADMIN, commit(orders(0), 449, Some(old))));
    assert_eq!(refused, vec![(orders(0), ErrorCode::UnknownTopicId)]);
    let accepted = results(runtime.send(ADMIN, commit(orders(1), 3, Some(new))));
    assert!(all_ok(&accepted), "{accepted:?}");
    let by_name = results(runtime.send(ADMIN, commit(orders(2), 5, None)));
    assert!(all_ok(&by_name), "{by_name:?}");
    let offsets = runtime.shard.committed_offsets("g");
    assert!(!offsets.contains_key(&orders(0)));
    assert_eq!(offsets[&orders(1)].topic_id, Some(new));
    assert_eq!(
        offsets[&orders(2)].topic_id,
        Some(new),
        "recorded from the image"
    );
}
