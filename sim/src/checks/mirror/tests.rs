//! Tests of the mirroring checkers.

use super::offsets::cut_below_synced_offset;
use super::state_records::state_log_lost;
use mirrorsim::mirror::coordinator::PartitionStateValue;
use mirrorsim::protocol::TopicId;

use super::*;

fn state(state: MirrorState, state_epoch: i32, leader_epoch: i32) -> MirrorStateRecord {
    MirrorStateRecord::PartitionState {
        mirror: "m".into(),
        id: MirrorPartitionId {
            topic_id: TopicId(1),
            partition: 0,
        },
        value: Some(PartitionStateValue {
            source_topic_id: None,
            state,
            leader_epoch: LeaderEpoch(leader_epoch),
            state_epoch,
            previous_state: None,
            retry_attempt: 0,
            error_message: None,
            own_writes_only: false,
        }),
    }
}

fn feed(records: Vec<MirrorStateRecord>) -> Vec<&'static str> {
    let mut checks = MirrorChecks::default();
    let tp = TopicPartition::new(MIRROR_STATE_TOPIC, 0);
    records
        .into_iter()
        .filter_map(|record| checks.check_state_record(0, ClusterIndex(1), &tp, record))
        .map(|violation| violation.invariant.name())
        .collect()
}

#[test]
fn synced_offset_above_a_recent_fetcher_cut_is_excused_only_as_that_race() {
    // c's leader 2 of orders-1 held 0..57 when the sync read its high watermark 57 and
    // committed 57; its fetcher then cut the log to 0 on the source's diverging epoch
    // (generator seed 9400000000000315).
    let c = ClusterIndex(2);
    let tp = TopicPartition::new("orders", 1);
    let cut = FetcherCut {
        cluster: c,
        leader: BrokerId(2),
        topic_partition: tp.clone(),
        from: 57,
        to: 0,
        seen_ms: 4_190,
    };
    let excused = |cuts: &[FetcherCut], leader: i32, offset: i64, read: i64, end: i64| {
        cut_below_synced_offset(cuts, (c, BrokerId(leader), &tp), offset, (read, end))
    };
    let one = std::slice::from_ref(&cut);
    assert!(excused(one, 2, 57, 57, 0));
    assert!(excused(one, 2, 1, 57, 0));
    // Above the high watermark the sync read: the clamp was bypassed
    // (`unclamped-offset-sync`), whatever the cut.
    assert!(!excused(one, 2, 57, 40, 0));
    // Above the log before the cut too.
    assert!(!excused(one, 2, 58, 60, 0));
    // No recent cut, or a cut by another broker (a deposed leader), or of another
    // partition: judged as it is.
    assert!(!excused(&[], 2, 57, 57, 0));
    assert!(!excused(one, 3, 57, 57, 0));
    let other = FetcherCut {
        topic_partition: TopicPartition::new("orders", 0),
        ..cut.clone()
    };
    assert!(!excused(&[other], 2, 57, 57, 0));
    // An offset still in the log needs no excuse; a cut that kept the log at or above the
    // offset cannot explain it.
    assert!(!excused(one, 2, 0, 57, 0));
    let short = FetcherCut { to: 57, ..cut };
    assert!(!excused(&[short], 2, 57, 57, 50));
}

#[test]
fn state_records_of_the_seed_workflow_pass() {
    use MirrorState::*;
    let records = vec![
        state(Preparing, 0, 1),
        state(Mirroring, 1, 1),
        state(Mirroring, 2, 3), // a new leader re-enters the state
        state(Stopping, 3, 3),
        state(Stopped, 4, 4),
    ];
    assert!(feed(records).is_empty());
}

#[test]
fn legal_transitions_catches_a_skipped_state() {
    use MirrorState::*;
    assert_eq!(
        feed(vec![state(Mirroring, 0, 1)]),
        vec!["legal-transitions"],
        "UNKNOWN → MIRRORING skips PREPARING"
    );
    assert_eq!(
        feed(vec![
            state(Preparing, 0, 1),
            state(Mirroring, 1, 1),
            state(Stopped, 2, 1)
        ]),
        vec!["legal-transitions"]
    );
}

#[test]
fn coordinator_fencing_catches_a_reused_state_epoch_and_a_lower_leader_epoch() {
    use MirrorState::*;
    assert_eq!(
        feed(vec![state(Preparing, 0, 1), state(Mirroring, 0, 1)]),
        vec!["coordinator-fencing"],
        "two accepted writes with one state epoch"
    );
    assert_eq!(
        feed(vec![state(Preparing, 0, 5), state(Mirroring, 1, 4)]),
        vec!["coordinator-fencing"],
        "a deposed leader's write accepted"
    );
    // A tombstone starts the key over (DeleteMirror, then the name reused).
    let tombstone = MirrorStateRecord::PartitionState {
        mirror: "m".into(),
        id: MirrorPartitionId {
            topic_id: TopicId(1),
            partition: 0,
        },
        value: None,
    };
    assert!(feed(vec![
        state(Preparing, 0, 5),
        tombstone,
        state(Preparing, 0, 0)
    ])
    .is_empty());
}

/// An empty log in a fresh in-memory directory `dir`.
fn empty_log(dir: &str) -> PartitionLog<MemoryDirDisk> {
    use mirrorsim::broker::BrokerStorage;
    let mut storage = mirrorsim::broker::MemoryStorage::new();
    let (log, _) =
        PartitionLog::open(storage.open_dir(dir), mirrorsim::log::LogConfig::default()).unwrap();
    log
}

/// A batch of one record holding `value`.
fn one_record(value: &'static str) -> mirrorsim::record::RecordBatch {
    let mut builder = mirrorsim::record::BatchBuilder::default();
    builder.append(
        0,
        None,
        Some(bytes::Bytes::from_static(value.as_bytes())),
        vec![],
    );
    builder.build()
}

/// A `__mirror_state` log of one batch per record, appended by its leader in epoch 0.
fn state_log(records: &[MirrorStateRecord], at_ms: i64) -> PartitionLog<MemoryDirDisk> {
    let mut log = empty_log("__mirror_state-0");
    for record in records {
        let batch =
            mirrorsim::coordinator::runtime::encode_records(std::slice::from_ref(record), at_ms);
        log.append_as_leader(
            &batch,
            LeaderEpoch(0),
            mirrorsim::log::AppendOrigin::Coordinator,
            at_ms,
        )
        .unwrap();
    }
    log.maybe_increment_high_watermark(log.log_end_offset());
    log
}

/// A destination log written batch by batch, each `(leader epoch, reset?)`: a
/// MIRROR_PID_RESET or a plain record (what a mirror fetcher would have appended keeps its
/// source's epoch; only the stamped epoch matters to the boundary).
fn stamped_log(batches: &[(i32, bool)]) -> PartitionLog<MemoryDirDisk> {
    let mut log = empty_log("orders-4");
    for &(epoch, reset) in batches {
        let batch = if reset {
            mirrorsim::record::mirror_pid_reset("b", 0)
        } else {
            one_record("v")
        };
        log.append_as_leader(
            &batch,
            LeaderEpoch(epoch),
            mirrorsim::log::AppendOrigin::Coordinator,
            0,
        )
        .unwrap();
    }
    log
}

/// A log of one-record batches, each `(leader epoch, value)`.
fn valued_log(batches: &[(i32, &'static str)]) -> PartitionLog<MemoryDirDisk> {
    let mut log = empty_log("orders-1");
    for &(epoch, value) in batches {
        log.append_as_leader(
            &one_record(value),
            LeaderEpoch(epoch),
            mirrorsim::log::AppendOrigin::Client,
            0,
        )
        .unwrap();
    }
    log
}

#[test]
fn a_deposed_leaders_append_of_the_leaders_own_batches_is_not_mirrored_data() {
    // b's leader wrote 0..=1 in epoch 0 (mirrored) and 2..=3 in epoch 2 (its own); a
    // deposed leader appended 2..=3 back from a mirror loop: the leader's own batches.
    let leader = valued_log(&[(0, "a0"), (0, "a1"), (2, "b2"), (2, "b3")]);
    let looped = valued_log(&[(0, "a0"), (0, "a1"), (2, "b2"), (2, "b3")]);
    assert_eq!(foreign_batches(&looped, &leader, 2, 3), None);
    // A batch the leader holds otherwise (9400000000000375: the source's records in an
    // epoch the leader's own writes reuse) is mirrored data, with its epoch.
    let foreign = valued_log(&[(0, "a0"), (0, "a1"), (2, "a2"), (2, "b3")]);
    assert_eq!(foreign_batches(&foreign, &leader, 2, 3), Some((3, 2)));
    let beyond = valued_log(&[(0, "a0"), (0, "a1"), (2, "b2"), (2, "b3"), (3, "a4")]);
    assert_eq!(foreign_batches(&beyond, &leader, 2, 4), Some((5, 3)));
    // Batches the appender no longer holds count as foreign up to the range's end.
    let short = valued_log(&[(0, "a0"), (0, "a1"), (2, "b2")]);
    assert_eq!(foreign_batches(&short, &leader, 2, 3), Some((4, -1)));
}

#[test]
fn a_stop_of_own_writes_is_excused_only_after_a_mirror_state_loss_since_mirroring() {
    // Generated seed 10000000000000633: b mirrored orders-0 from 4264 ms, lost its whole
    // `__mirror_state` at 9877 ms, and its next leadership stopped as of its own writes.
    let (b, c) = (ClusterIndex(1), ClusterIndex(2));
    let tp = TopicPartition::new("orders", 0);
    let node = NodeId::Broker(b, BrokerId(1));
    let checks_with = |mirrored_ms: i64, (lost_cluster, lost_ms): (ClusterIndex, i64)| {
        let mut checks = MirrorChecks::default();
        checks
            .first_mirror_append_ms
            .insert((b, tp.clone()), mirrored_ms);
        checks.own_write_stops.insert((node, 2, tp.clone()), 10_883);
        checks.note_mirror_state_loss(lost_ms, lost_cluster);
        checks
    };
    assert!(checks_with(4_264, (b, 9_877)).own_write_stop_after_state_loss(node, 2, &tp));
    for (mirrored_ms, loss, incarnation) in [
        (4_264, (b, 2_000), 2),  // the state was lost before mirroring began
        (4_264, (b, 11_000), 2), // the stop came before the loss
        (4_264, (c, 9_877), 2),  // another cluster's state was lost
        (4_264, (b, 9_877), 3),  // another incarnation stopped (its own reads judged)
    ] {
        let checks = checks_with(mirrored_ms, loss);
        assert!(
            !checks.own_write_stop_after_state_loss(node, incarnation, &tp),
            "{loss:?} {incarnation}"
        );
    }
    // No stop of own writes at all (the stop wrote its reset, or never ran): no excuse.
    let mut no_stop = checks_with(4_264, (b, 9_877));
    no_stop.own_write_stops.clear();
    assert!(!no_stop.own_write_stop_after_state_loss(node, 2, &tp));
}

#[test]
fn stopped_boundary_is_the_stops_own_reset_not_a_mirrored_one() {
    // a's log: its own records 0..=1 (epoch 0), then b's data mirrored back: b's reset at
    // 2 and a record in b's epoch 1, two records in b's epoch 3 (mirrored data ends at 6,
    // greatest mirrored epoch 3).
    let mirrored = [
        (0, false),
        (0, false),
        (1, true),
        (1, false),
        (3, false),
        (3, false),
    ];
    // a's stop bumped to 4 and wrote its reset at 6: the boundary.
    let mut stopped = mirrored.to_vec();
    stopped.extend([(4, true), (4, false)]);
    assert_eq!(mirrored_boundary(&stamped_log(&stopped), 6, 3), (6, false));
    // A power loss of a's only replica tore the log to 5, taking the stop's reset: b's
    // reset at 2 is mirrored data, what is left of the mirrored data ends at the log end.
    assert_eq!(
        mirrored_boundary(&stamped_log(&mirrored[..5]), 6, 3),
        (5, true)
    );
    // The `no-epoch-bump` design writes its reset at the mirrored data's end in epoch 3:
    // still its own, so its local writes in epoch 3 are judged.
    let mut unbumped = mirrored.to_vec();
    unbumped.extend([(3, true), (3, false)]);
    assert_eq!(mirrored_boundary(&stamped_log(&unbumped), 6, 3), (6, false));
}

/// Reads `log` as `check_state_records` does (losses noticed), the invariants found.
fn read(
    checks: &mut MirrorChecks,
    log: &PartitionLog<MemoryDirDisk>,
    replicas: usize,
) -> Vec<&'static str> {
    let tp = TopicPartition::new(MIRROR_STATE_TOPIC, 0);
    let progress = checks
        .state_log_checked
        .entry((ClusterIndex(1), tp.clone()))
        .or_default();
    if state_log_lost(log, progress, replicas) {
        *progress = StateLogProgress::default();
        checks.stored.clear();
    }
    let progress = checks.state_log_checked[&(ClusterIndex(1), tp.clone())];
    let mut found = Vec::new();
    let mut progress_after = progress;
    for batch in log.batches_from(Offset(progress.checked)) {
        for record in decode_records::<MirrorStateRecord>(batch) {
            found.extend(
                checks
                    .check_state_record(0, ClusterIndex(1), &tp, record)
                    .map(|violation| violation.invariant.name()),
            );
        }
        progress_after.checked = batch.next_offset();
        progress_after.last_batch = Some((batch.base_offset(), batch.header().crc));
    }
    checks
        .state_log_checked
        .insert((ClusterIndex(1), tp), progress_after);
    found
}

#[test]
fn a_single_replica_state_log_that_lost_committed_records_is_read_again_from_its_start() {
    use MirrorState::*;
    // Read: PREPARING, MIRRORING (state epochs 0, 1). Then the only replica loses its
    // unflushed MIRRORING in a power loss, and the coordinator, reloaded from PREPARING,
    // accepts a new leader's STOPPING with state epoch 1 again, then STOPPED: read on
    // from where it was, the checker would see MIRRORING → STOPPED (generated seed
    // 1337263765019815).
    let before = [state(Preparing, 0, 0), state(Mirroring, 1, 0)];
    let after = [
        state(Preparing, 0, 0),
        state(Stopping, 1, 2),
        state(Stopped, 2, 2),
    ];
    let mut checks = MirrorChecks::default();
    assert!(read(&mut checks, &state_log(&before, 0), 1).is_empty());
    assert!(
        read(&mut checks, &state_log(&after, 1), 1).is_empty(),
        "judged on the log the coordinator reloaded"
    );
    // With three replicas a committed record is never lost: the log is judged as it is.
    let mut checks = MirrorChecks::default();
    assert!(read(&mut checks, &state_log(&before, 0), 3).is_empty());
    assert_eq!(
        read(&mut checks, &state_log(&after, 1), 3),
        vec!["legal-transitions"]
    );
    // And on a single replica whose log kept what was read, a reused state epoch is
    // still caught.
    let mut checks = MirrorChecks::default();
    let reused = [
        state(Preparing, 0, 0),
        state(Mirroring, 1, 0),
        state(Mirroring, 1, 2),
    ];
    assert!(read(&mut checks, &state_log(&reused[..2], 0), 1).is_empty());
    assert_eq!(
        read(&mut checks, &state_log(&reused, 0), 1),
        vec!["coordinator-fencing"]
    );
}

#[test]
fn a_stop_committed_in_the_step_counts_for_an_add_forwarded_in_it() {
    // An AddTopicsToMirror's check read STOPPED at some point of the step; by the end of it
    // the partition may already be PREPARING again (added back to the same mirror). The
    // check remembers every STOPPED (or tombstone) it read in the step, and only those.
    let mut checks = MirrorChecks::default();
    let tp = TopicPartition::new(MIRROR_STATE_TOPIC, 0);
    let key = (
        ClusterIndex(1),
        "m".to_owned(),
        MirrorPartitionId {
            topic_id: TopicId(1),
            partition: 0,
        },
    );
    for record in [
        state(MirrorState::Preparing, 0, 0),
        state(MirrorState::Mirroring, 1, 0),
        state(MirrorState::Stopping, 2, 1),
    ] {
        checks.check_state_record(0, ClusterIndex(1), &tp, record);
    }
    assert!(!checks.stopped_seen.contains(&key), "never STOPPED yet");
    checks.check_state_record(0, ClusterIndex(1), &tp, state(MirrorState::Stopped, 3, 1));
    checks.check_state_record(0, ClusterIndex(1), &tp, state(MirrorState::Preparing, 4, 1));
    assert!(checks.stopped_seen.contains(&key));
    assert_eq!(
        checks.stored_state(key.0, &key.1, &key.2),
        MirrorState::Preparing
    );
}

#[test]
fn a_source_life_ended_after_the_destination_prepared_counts_without_an_append() {
    // Generated seed 15400000000000201: d's payments-0 went PREPARING (its lookup learned c's
    // topic id), c deleted payments before d appended anything, and d failed on the new id.
    let (d, c) = (ClusterIndex(3), ClusterIndex(2));
    let tp = TopicPartition::new("payments", 0);
    let mut checks = MirrorChecks::default();
    checks
        .source_lives_ended
        .insert((c, "payments".into()), 7_364);
    assert!(!checks.source_life_ended_under(d, &tp, c), "never mirrored");
    checks.first_prepare_ms.insert((d, tp.clone()), 7_400);
    assert!(
        !checks.source_life_ended_under(d, &tp, c),
        "prepared after the end"
    );
    checks.first_prepare_ms.insert((d, tp.clone()), 4_468);
    assert!(checks.source_life_ended_under(d, &tp, c));
    checks.first_prepare_ms.clear();
    checks.first_mirror_append_ms.insert((d, tp.clone()), 5_000);
    assert!(
        checks.source_life_ended_under(d, &tp, c),
        "appended before the end"
    );
}

#[test]
fn a_life_ended_after_the_destination_prepared_is_mirrored_once_past_preparing() {
    // Generated seed 16000000000000032: c's orders-0 went PREPARING at 5.36 s and MIRRORING at
    // 5.44 s; a's controller removed orders at 6.73 s, before c's first append (7.58 s, served
    // by a-broker-1, whose metadata lagged): c's log holds the ended life.
    use super::prefix::mirrored_ended_life;
    use MirrorState::*;
    let ended = 6_729;
    assert!(mirrored_ended_life((None, Some(5_360)), ended, Mirroring));
    assert!(mirrored_ended_life((None, Some(5_360)), ended, Paused));
    // Still PREPARING: its lookup may yet learn the next life's id, and mirror it rightly.
    assert!(!mirrored_ended_life((None, Some(5_360)), ended, Preparing));
    assert!(!mirrored_ended_life((None, Some(5_360)), ended, Failed));
    // Prepared after the end: the next life, or none.
    assert!(!mirrored_ended_life((None, Some(7_000)), ended, Mirroring));
    // Appended before the end: mirrored the ended life, in any state but STOPPED.
    assert!(mirrored_ended_life(
        (Some(6_000), Some(5_360)),
        ended,
        Preparing
    ));
    assert!(mirrored_ended_life((Some(6_000), None), ended, Failed));
    assert!(!mirrored_ended_life(
        (Some(6_000), Some(5_360)),
        ended,
        Stopped
    ));
    assert!(!mirrored_ended_life((None, None), ended, Mirroring));
}
