//! Unit tests of the mirror coordinator shard. The test plays the runtime through the
//! [`Shard`] trait only: each write is appended to an in-memory "partition" and replayed, then
//! `write_completed` is called (at once, or when the test releases held writes); a failover is
//! a new shard that replays every committed record.

use proptest::prelude::*;

use super::*;
use crate::metadata::{MetadataImage, MetadataRecord, PartitionRecord};
use crate::protocol::{
    BrokerId, ClusterIndex, CoordinatorRequest, CoordinatorResponse, TopicId, TopicPartition,
};
use MirrorState::*;

const CLUSTER: ClusterIndex = ClusterIndex(1);
const COORDINATOR: NodeId = NodeId::Broker(CLUSTER, BrokerId(1));
const LEADER: NodeId = NodeId::Broker(CLUSTER, BrokerId(2));
/// `__mirror_state` partitions in these tests.
const PARTITIONS: i32 = 3;

/// An image with `__mirror_state` of [`PARTITIONS`] partitions, all led by broker 1.
fn image() -> MetadataImage {
    let mut image = MetadataImage::default();
    let topic_id = TopicId(77);
    let mut records = vec![MetadataRecord::Topic {
        name: MIRROR_STATE_TOPIC.into(),
        topic_id,
    }];
    records.extend((0..PARTITIONS).map(|partition| {
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
    }));
    for (offset, record) in records.iter().enumerate() {
        image.apply(offset as i64, record);
    }
    image
}

/// Partitions of topic 9 whose keys (mirror "m") hash to coordinator partition `shard`.
fn owned_by(shard: i32, count: usize) -> Vec<MirrorPartitionId> {
    (0..)
        .map(|partition| MirrorPartitionId {
            topic_id: TopicId(9),
            partition,
        })
        .filter(|id| mirror_state_partition("m", id, PARTITIONS) == shard)
        .take(count)
        .collect()
}

fn write(
    id: MirrorPartitionId,
    state: MirrorState,
    leader_epoch: i32,
    state_epoch: i32,
) -> MirrorStateWrite {
    MirrorStateWrite {
        source_topic_id: None,
        id,
        state: Some(state),
        leader_epoch: LeaderEpoch(leader_epoch),
        state_epoch,
        error_message: None,
        non_retryable: false,
        last_mirrored: None,
        own_writes_only: false,
        recover: false,
    }
}

fn failed(id: MirrorPartitionId, state_epoch: i32, non_retryable: bool) -> MirrorStateWrite {
    MirrorStateWrite {
        error_message: Some("boom".into()),
        non_retryable,
        ..write(id, Failed, 5, state_epoch)
    }
}

/// The shard's environment (from the runtime's fields, so the shard can be borrowed mutably
/// beside it).
fn env<'a>(
    image: &'a MetadataImage,
    partition: &'a TopicPartition,
    coordinator_epoch: i32,
) -> ShardEnv<'a> {
    ShardEnv {
        now_ms: 0,
        image,
        coordinator_epoch,
        node_id: COORDINATOR,
        partition,
    }
}

/// The test's runtime: a partition of committed records and the shard hosted on it.
struct Runtime {
    shard: MirrorCoordinatorShard,
    image: MetadataImage,
    partition: TopicPartition,
    coordinator_epoch: i32,
    log: Vec<MirrorStateRecord>,
    held: Vec<ShardWrite<MirrorStateRecord>>,
    hold_writes: bool,
    fail_writes: Option<ErrorCode>,
    responses: Vec<(NodeId, u64, Response)>,
    next_correlation_id: u64,
}

impl Runtime {
    /// A loaded shard for `__mirror_state` partition 0.
    fn new() -> Self {
        let mut runtime = Self {
            shard: MirrorCoordinatorShard::new(),
            image: image(),
            partition: TopicPartition::new(MIRROR_STATE_TOPIC, 0),
            coordinator_epoch: 4,
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
        let mut out = ShardOutput::default();
        let env = env(&self.image, &self.partition, self.coordinator_epoch);
        self.shard.loaded(&env, &mut out);
        self.carry_out(out);
    }

    /// A new coordinator: the old shard is unloaded (held writes are lost with the old
    /// leader's uncommitted tail) and a fresh one replays the committed records.
    fn failover(&mut self) {
        let mut out = ShardOutput::default();
        self.shard.unloaded(&mut out);
        self.carry_out(out);
        self.held.clear();
        self.coordinator_epoch += 1;
        self.shard = MirrorCoordinatorShard::new();
        self.load();
    }

    fn carry_out(&mut self, out: ShardOutput<MirrorStateRecord>) {
        assert!(
            out.requests.is_empty(),
            "the mirror shard sends no requests"
        );
        self.responses.extend(out.responses);
        for write in out.writes {
            if self.hold_writes {
                self.held.push(write);
            } else {
                self.complete(write);
            }
        }
    }

    fn complete(&mut self, write: ShardWrite<MirrorStateRecord>) {
        let result = match self.fail_writes {
            Some(error) => Err(error),
            None => {
                for record in &write.records {
                    self.shard.replay(record);
                    self.log.push(record.clone());
                }
                Ok(())
            }
        };
        let mut out = ShardOutput::default();
        let env = env(&self.image, &self.partition, self.coordinator_epoch);
        self.shard
            .write_completed(&env, write.write_id, result, &mut out);
        self.carry_out(out);
    }

    fn release_writes(&mut self) {
        self.hold_writes = false;
        for write in std::mem::take(&mut self.held) {
            self.complete(write);
        }
    }

    /// Sends `request`; the correlation id.
    fn send(&mut self, request: CoordinatorRequest) -> u64 {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        let mut out = ShardOutput::default();
        let env = env(&self.image, &self.partition, self.coordinator_epoch);
        self.shard
            .handle_request(&env, LEADER, correlation_id, request, &mut out);
        self.carry_out(out);
        correlation_id
    }

    fn answer(&mut self, correlation_id: u64) -> Option<Response> {
        let index = self
            .responses
            .iter()
            .position(|(_, id, _)| *id == correlation_id)?;
        Some(self.responses.remove(index).2)
    }

    /// Writes and returns the per-partition results (the write must be answered).
    fn write_states(&mut self, writes: Vec<MirrorStateWrite>) -> Vec<(ErrorCode, i32)> {
        let id = self.send(CoordinatorRequest::WriteMirrorStates {
            coordinator_partition: 0,
            mirror: "m".into(),
            writes,
        });
        match self.answer(id) {
            Some(Response::Coordinator(CoordinatorResponse::WriteMirrorStates {
                error,
                partitions,
            })) => {
                assert_eq!(error, ErrorCode::None);
                partitions
                    .into_iter()
                    .map(|(_, e, epoch)| (e, epoch))
                    .collect()
            }
            other => panic!("expected a WriteMirrorStates answer, got {other:?}"),
        }
    }

    fn write_one(&mut self, write: MirrorStateWrite) -> (ErrorCode, i32) {
        self.write_states(vec![write])[0]
    }

    fn read(
        &mut self,
        partitions: Vec<MirrorPartitionId>,
    ) -> (ErrorCode, i32, Vec<MirrorPartitionStatus>) {
        let id = self.send(CoordinatorRequest::ReadMirrorStates {
            coordinator_partition: 0,
            mirror: "m".into(),
            partitions,
        });
        match self.answer(id) {
            Some(Response::Coordinator(CoordinatorResponse::ReadMirrorStates {
                error,
                coordinator_epoch,
                partitions,
            })) => (error, coordinator_epoch, partitions),
            other => panic!("expected a ReadMirrorStates answer, got {other:?}"),
        }
    }

    fn read_one(&mut self, id: MirrorPartitionId) -> MirrorPartitionStatus {
        self.read(vec![id]).2.remove(0)
    }
}

#[test]
fn a_key_without_records_reads_as_unknown_and_writes_start_at_state_epoch_zero() {
    let mut runtime = Runtime::new();
    let id = owned_by(0, 1)[0];
    let (error, coordinator_epoch, statuses) = runtime.read(vec![id]);
    assert_eq!((error, coordinator_epoch), (ErrorCode::None, 4));
    assert_eq!(statuses[0].state, Unknown);
    assert_eq!(
        (statuses[0].leader_epoch, statuses[0].state_epoch),
        (LeaderEpoch::NONE, -1)
    );

    assert_eq!(
        runtime.write_one(write(id, Preparing, 3, -1)),
        (ErrorCode::None, 0)
    );
    assert_eq!(
        runtime.write_one(write(id, Mirroring, 3, 0)),
        (ErrorCode::None, 1)
    );
    let status = runtime.read_one(id);
    assert_eq!(
        (status.state, status.leader_epoch, status.state_epoch),
        (Mirroring, LeaderEpoch(3), 1)
    );
}

#[test]
fn stale_leader_and_state_epochs_are_fenced() {
    let mut runtime = Runtime::new();
    let id = owned_by(0, 1)[0];
    runtime.write_one(write(id, Preparing, 5, -1));
    assert_eq!(
        runtime.write_one(write(id, Mirroring, 4, 0)),
        (ErrorCode::FencedLeaderEpoch, -1),
        "a deposed leader"
    );
    runtime.write_one(write(id, Mirroring, 5, 0));
    assert_eq!(
        runtime.write_one(write(id, Pausing, 5, 0)),
        (ErrorCode::FencedStateEpoch, -1),
        "a writer that did not see the last state"
    );
    assert_eq!(
        runtime.write_one(write(id, Pausing, 6, 1)),
        (ErrorCode::None, 2)
    );
    assert_eq!(
        runtime.read_one(id).leader_epoch,
        LeaderEpoch(6),
        "the greatest leader epoch"
    );
}

#[test]
fn two_writers_with_the_same_state_epoch_cannot_both_win_while_the_first_is_pending() {
    let mut runtime = Runtime::new();
    let id = owned_by(0, 1)[0];
    runtime.write_one(write(id, Preparing, 5, -1));
    runtime.hold_writes = true;
    let first = runtime.send(CoordinatorRequest::WriteMirrorStates {
        coordinator_partition: 0,
        mirror: "m".into(),
        writes: vec![write(id, Mirroring, 5, 0)],
    });
    assert!(runtime.answer(first).is_none(), "answered once committed");
    assert_eq!(
        runtime.write_one(write(id, Stopping, 5, 0)),
        (ErrorCode::FencedStateEpoch, -1),
        "validated against the pending write too"
    );
    assert_eq!(
        runtime.read_one(id).state,
        Preparing,
        "reads see committed state only"
    );
    runtime.release_writes();
    assert!(matches!(
        runtime.answer(first),
        Some(Response::Coordinator(CoordinatorResponse::WriteMirrorStates { partitions, .. })) if partitions[0].1 == ErrorCode::None
    ));
    assert_eq!(runtime.read_one(id).state, Mirroring);
}

#[test]
fn illegal_transitions_are_refused_and_write_nothing() {
    let mut runtime = Runtime::new();
    let id = owned_by(0, 1)[0];
    for target in [Mirroring, Stopping, Stopped, Paused, Pausing, Unknown] {
        assert_eq!(
            runtime.write_one(write(id, target, 1, -1)),
            (ErrorCode::InvalidClusterMirrorState, -1),
            "UNKNOWN → {target}"
        );
    }
    assert!(runtime.log.is_empty());
    runtime.write_one(write(id, Preparing, 1, -1));
    runtime.write_one(write(id, Mirroring, 1, 0));
    assert_eq!(
        runtime.write_one(write(id, Stopped, 1, 1)).0,
        ErrorCode::InvalidClusterMirrorState,
        "STOPPED only through STOPPING"
    );
}

#[test]
fn failures_count_retries_keep_the_failed_state_and_preparing_clears_them() {
    let mut runtime = Runtime::new();
    let id = owned_by(0, 1)[0];
    runtime.write_one(write(id, Preparing, 5, -1));
    runtime.write_one(write(id, Mirroring, 5, 0));
    runtime.write_one(write(id, Stopping, 5, 1));
    runtime.write_one(failed(id, 2, false));
    let status = runtime.read_one(id);
    assert_eq!(
        (status.state, status.previous_state, status.retry_attempt),
        (Failed, Some(Stopping), 1)
    );
    assert_eq!(status.error_message.as_deref(), Some("boom"));
    runtime.write_one(failed(id, 3, false));
    let status = runtime.read_one(id);
    assert_eq!(
        (status.previous_state, status.retry_attempt),
        (Some(Stopping), 2),
        "re-asserting FAILED keeps the state it failed in"
    );
    runtime.write_one(failed(id, 4, true));
    assert_eq!(runtime.read_one(id).retry_attempt, -1, "non-retryable");
    runtime.write_one(write(id, Stopping, 5, 5));
    assert_eq!(runtime.read_one(id).retry_attempt, -1, "kept until cleared");
    runtime.write_one(write(id, Stopped, 5, 6));
    let status = runtime.read_one(id);
    assert_eq!(
        (
            status.retry_attempt,
            status.previous_state,
            status.error_message
        ),
        (0, None, None)
    );
}

#[test]
fn a_retry_keeps_the_count_until_a_mirrored_append_clears_it_and_a_recovery_resets_it() {
    let mut runtime = Runtime::new();
    let id = owned_by(0, 1)[0];
    let count = |runtime: &mut Runtime| {
        let status = runtime.read_one(id);
        (status.state, status.retry_attempt)
    };
    runtime.write_one(write(id, Preparing, 5, -1));
    runtime.write_one(write(id, Mirroring, 5, 0));
    runtime.write_one(failed(id, 1, false));
    // The retry realigns through PREPARING and keeps the count, so a cause that persists
    // (the source down) runs out of attempts.
    runtime.write_one(write(id, Preparing, 5, 2));
    assert_eq!(count(&mut runtime), (Preparing, 1));
    assert_eq!(
        runtime.read_one(id).error_message.as_deref(),
        Some("boom"),
        "the last error stays on record while the retry runs"
    );
    runtime.write_one(failed(id, 3, false));
    assert_eq!(count(&mut runtime), (Failed, 2));
    assert_eq!(runtime.read_one(id).previous_state, Some(Preparing));
    // MIRRORING reached from PREPARING keeps it (nothing mirrored yet); the first mirrored
    // append's MIRRORING written with `recover` clears it.
    runtime.write_one(write(id, Preparing, 5, 4));
    runtime.write_one(write(id, Mirroring, 5, 5));
    assert_eq!(count(&mut runtime), (Mirroring, 2));
    let cleared = MirrorStateWrite {
        recover: true,
        ..write(id, Mirroring, 5, 6)
    };
    runtime.write_one(cleared);
    let status = runtime.read_one(id);
    assert_eq!(
        (
            status.state,
            status.retry_attempt,
            status.previous_state,
            status.error_message
        ),
        (Mirroring, 0, None, None)
    );
    // A recovery (any writer, leader epoch unchecked) resets a FAILED record for good.
    runtime.write_one(failed(id, 7, false));
    runtime.write_one(failed(id, 8, false));
    assert_eq!(count(&mut runtime), (Failed, 2));
    let recover = MirrorStateWrite {
        recover: true,
        ..write(id, Preparing, -1, 9)
    };
    assert_eq!(runtime.write_one(recover), (ErrorCode::None, 10));
    let status = runtime.read_one(id);
    assert_eq!(
        (status.state, status.retry_attempt, status.error_message),
        (Preparing, 0, None)
    );
    // A recovery carrying a stale state epoch (the leader moved the partition on) is fenced.
    let stale = MirrorStateWrite {
        recover: true,
        ..write(id, Preparing, -1, 9)
    };
    assert_eq!(runtime.write_one(stale).0, ErrorCode::FencedStateEpoch);
}

#[test]
fn a_states_own_writes_only_bit_is_read_back_until_the_next_state_replaces_it() {
    // The next leader learns from the stored state that nothing was cut or mirrored since the
    // partition left UNKNOWN or STOPPED (the stop of such a log removes and resets nothing).
    let mut runtime = Runtime::new();
    let id = owned_by(0, 1)[0];
    let own = MirrorStateWrite {
        own_writes_only: true,
        ..write(id, Preparing, 0, -1)
    };
    assert_eq!(runtime.write_one(own), (ErrorCode::None, 0));
    assert!(runtime.read_one(id).own_writes_only);
    assert_eq!(
        runtime.write_one(write(id, Mirroring, 0, 0)),
        (ErrorCode::None, 1)
    );
    assert!(!runtime.read_one(id).own_writes_only);
}

#[test]
fn last_mirrored_epoch_is_written_alone_or_with_a_state() {
    let mut runtime = Runtime::new();
    let id = owned_by(0, 1)[0];
    runtime.write_one(write(id, Preparing, 5, -1));
    runtime.write_one(write(id, Mirroring, 5, 0));
    runtime.write_one(write(id, Stopping, 5, 1));
    let lme_only = MirrorStateWrite {
        state: None,
        last_mirrored: Some((LeaderEpoch(4), Offset(120))),
        ..write(id, Stopping, 5, 2)
    };
    assert_eq!(
        runtime.write_one(lme_only),
        (ErrorCode::None, 2),
        "state epoch unchanged"
    );
    let status = runtime.read_one(id);
    assert_eq!(
        (status.state, status.last_mirrored),
        (Stopping, Some((LeaderEpoch(4), Offset(120))))
    );
    let empty = MirrorStateWrite {
        state: None,
        ..write(id, Stopping, 5, 2)
    };
    assert_eq!(runtime.write_one(empty).0, ErrorCode::InvalidRequest);
}

#[test]
fn a_new_stop_clears_the_last_mirrored_epoch_of_an_earlier_session() {
    // Generated seed 3307716073686285: a leader that re-read a new stop's state (after a
    // fenced write) took the first session's 0@4 for this stop's capture.
    let mut runtime = Runtime::new();
    let id = owned_by(0, 1)[0];
    runtime.write_one(write(id, Preparing, 1, -1));
    runtime.write_one(write(id, Mirroring, 1, 0));
    runtime.write_one(write(id, Stopping, 1, 1));
    let lme = MirrorStateWrite {
        state: None,
        last_mirrored: Some((LeaderEpoch(0), Offset(4))),
        ..write(id, Stopping, 1, 2)
    };
    runtime.write_one(lme);
    runtime.write_one(write(id, Stopped, 1, 2));
    let status = runtime.read_one(id);
    assert_eq!(
        (status.state, status.last_mirrored),
        (Stopped, Some((LeaderEpoch(0), Offset(4))))
    );
    runtime.write_one(write(id, Preparing, 1, 3));
    runtime.write_one(write(id, Mirroring, 1, 4));
    let status = runtime.read_one(id);
    assert_eq!(
        status.last_mirrored,
        Some((LeaderEpoch(0), Offset(4))),
        "kept while mirroring again"
    );
    runtime.write_one(write(id, Stopping, 1, 5));
    let status = runtime.read_one(id);
    assert_eq!((status.state, status.last_mirrored), (Stopping, None));
    let lme = MirrorStateWrite {
        state: None,
        last_mirrored: Some((LeaderEpoch(1), Offset(5))),
        ..write(id, Stopping, 1, 6)
    };
    runtime.write_one(lme);
    assert_eq!(
        runtime.read_one(id).last_mirrored,
        Some((LeaderEpoch(1), Offset(5)))
    );
}

#[test]
fn keys_of_other_coordinator_partitions_are_refused_one_by_one() {
    let mut runtime = Runtime::new();
    let mine = owned_by(0, 1)[0];
    let other = owned_by(1, 1)[0];
    let results = runtime.write_states(vec![
        write(other, Preparing, 1, -1),
        write(mine, Preparing, 1, -1),
    ]);
    assert_eq!(
        results,
        vec![(ErrorCode::NotCoordinator, -1), (ErrorCode::None, 0)]
    );
    let (_, _, statuses) = runtime.read(vec![other, mine]);
    assert_eq!(statuses[0].error, ErrorCode::NotCoordinator);
    assert_eq!(statuses[1].state, Preparing);
}

#[test]
fn delete_tombstones_every_record_of_the_mirror_and_survives_a_failover() {
    let mut runtime = Runtime::new();
    let ids = owned_by(0, 2);
    for id in &ids {
        runtime.write_one(write(*id, Preparing, 1, -1));
    }
    let lme = MirrorStateWrite {
        state: None,
        last_mirrored: Some((LeaderEpoch(1), Offset(10))),
        ..write(ids[0], Preparing, 1, 0)
    };
    runtime.write_one(lme);
    // Another mirror's key in the same shard stays.
    let other_mirror = (0..)
        .map(|partition| MirrorPartitionId {
            topic_id: TopicId(9),
            partition,
        })
        .find(|id| mirror_state_partition("n", id, PARTITIONS) == 0)
        .unwrap();
    let id = runtime.send(CoordinatorRequest::WriteMirrorStates {
        coordinator_partition: 0,
        mirror: "n".into(),
        writes: vec![write(other_mirror, Preparing, 1, -1)],
    });
    runtime.answer(id).unwrap();

    let id = runtime.send(CoordinatorRequest::DeleteMirrorStates {
        coordinator_partition: 0,
        mirror: "m".into(),
    });
    assert!(matches!(
        runtime.answer(id),
        Some(Response::Coordinator(
            CoordinatorResponse::DeleteMirrorStates {
                error: ErrorCode::None
            }
        ))
    ));
    let tombstones = runtime.log[runtime.log.len() - 3..].to_vec();
    assert!(tombstones.iter().all(|record| matches!(
        record,
        MirrorStateRecord::PartitionState { value: None, .. }
            | MirrorStateRecord::LastMirroredEpoch { value: None, .. }
    )));
    runtime.failover();
    assert!(runtime.shard.stored("m", &ids[0]).is_none());
    assert!(runtime.shard.stored("m", &ids[1]).is_none());
    assert!(runtime.shard.stored("n", &other_mirror).is_some());
    assert_eq!(
        runtime.write_one(write(ids[0], Preparing, 0, -1)),
        (ErrorCode::None, 0),
        "the name is reusable: epochs start again"
    );
}

#[test]
fn a_failed_write_changes_nothing_and_the_same_write_succeeds_later() {
    let mut runtime = Runtime::new();
    let id = owned_by(0, 1)[0];
    runtime.write_one(write(id, Preparing, 1, -1));
    runtime.fail_writes = Some(ErrorCode::NotEnoughReplicas);
    assert_eq!(
        runtime.write_one(write(id, Mirroring, 1, 0)),
        (ErrorCode::CoordinatorNotAvailable, -1)
    );
    runtime.fail_writes = None;
    assert_eq!(runtime.read_one(id).state, Preparing);
    assert_eq!(
        runtime.write_one(write(id, Mirroring, 1, 0)),
        (ErrorCode::None, 1)
    );
}

#[test]
fn loading_and_unloaded_shards_answer_with_coordinator_errors() {
    let mut runtime = Runtime::new();
    let id = owned_by(0, 1)[0];
    runtime.shard = MirrorCoordinatorShard::new();
    assert_eq!(
        runtime.read(vec![id]).0,
        ErrorCode::CoordinatorLoadInProgress
    );
    runtime.load();
    runtime.hold_writes = true;
    let pending = runtime.send(CoordinatorRequest::WriteMirrorStates {
        coordinator_partition: 0,
        mirror: "m".into(),
        writes: vec![write(id, Preparing, 1, -1)],
    });
    runtime.failover();
    assert!(matches!(
        runtime.answer(pending),
        Some(Response::Coordinator(CoordinatorResponse::WriteMirrorStates { partitions, .. })) if partitions[0].1 == ErrorCode::NotCoordinator
    ));
    assert_eq!(
        runtime.read_one(id).state,
        Unknown,
        "the held write was lost"
    );
    let mut out = ShardOutput::default();
    runtime.shard.unloaded(&mut out);
    runtime.carry_out(out);
    assert_eq!(runtime.read(vec![id]).0, ErrorCode::NotCoordinator);
}

proptest! {
    /// Random writers (stale and current epochs, any target, failures) against one shard with
    /// failovers: the committed records of every key have strictly increasing state epochs,
    /// never a lower leader epoch, and only legal transitions (INV-10, INV-11); a failover
    /// shows exactly the state before it.
    #[test]
    fn committed_records_obey_fencing_and_the_transition_table(
        steps in prop::collection::vec(
            (0usize..2, prop::sample::select(MirrorState::ALL.to_vec()), 0i32..4, -1i32..6, 0u8..10),
            1..60,
        ),
    ) {
        let mut runtime = Runtime::new();
        let ids = owned_by(0, 2);
        for (key, target, leader_epoch, state_epoch, action) in steps {
            match action {
                0 => runtime.failover(),
                1 => runtime.fail_writes = Some(ErrorCode::NotEnoughReplicas),
                _ => runtime.fail_writes = None,
            }
            runtime.write_one(write(ids[key], target, leader_epoch, state_epoch));
        }
        runtime.failover();
        let mut last: BTreeMap<MirrorPartitionId, (MirrorState, i32, LeaderEpoch)> = BTreeMap::new();
        for record in &runtime.log {
            if let MirrorStateRecord::PartitionState { id, value: Some(value), .. } = record {
                let (state, state_epoch, leader_epoch) =
                    last.get(id).copied().unwrap_or((Unknown, -1, LeaderEpoch::NONE));
                prop_assert!(is_valid_transition(state, value.state), "{} → {}", state, value.state);
                prop_assert_eq!(value.state_epoch, state_epoch + 1);
                prop_assert!(value.leader_epoch >= leader_epoch);
                last.insert(*id, (value.state, value.state_epoch, value.leader_epoch));
            }
        }
        for (id, (state, state_epoch, leader_epoch)) in last {
            let status = runtime.read_one(id);
            prop_assert_eq!((status.state, status.state_epoch, status.leader_epoch), (state, state_epoch, leader_epoch));
        }
    }
}

#[test]
fn the_source_topic_id_is_kept_across_writes_until_the_partition_stops() {
    // The next leader learns which source topic the partition mirrors (this model's
    // destination topics need not have the source's topic id), until a stop ends that
    // mirroring: a later add may mirror a topic created again under another id.
    let mut runtime = Runtime::new();
    let id = owned_by(0, 1)[0];
    let source = Some(TopicId(42));
    let named = MirrorStateWrite {
        source_topic_id: source,
        ..write(id, Preparing, 0, -1)
    };
    assert_eq!(runtime.write_one(named), (ErrorCode::None, 0));
    assert_eq!(runtime.read_one(id).source_topic_id, source);
    // A write that does not name it keeps it.
    assert_eq!(
        runtime.write_one(write(id, Mirroring, 0, 0)),
        (ErrorCode::None, 1)
    );
    assert_eq!(runtime.read_one(id).source_topic_id, source);
    assert_eq!(
        runtime.write_one(failed(id, 1, false)),
        (ErrorCode::None, 2)
    );
    assert_eq!(runtime.read_one(id).source_topic_id, source);
    // STOPPED forgets it, whatever the write says.
    // (`failed` writes with leader epoch 5.)
    assert_eq!(
        runtime.write_one(write(id, Stopping, 5, 2)),
        (ErrorCode::None, 3)
    );
    let stopped = MirrorStateWrite {
        source_topic_id: source,
        ..write(id, Stopped, 5, 3)
    };
    assert_eq!(runtime.write_one(stopped), (ErrorCode::None, 4));
    assert_eq!(runtime.read_one(id).source_topic_id, None);
}
