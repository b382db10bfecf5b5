//! Unit tests of the partition log, one per rule, named after the rule.

use crate::common::{LeaderEpoch, Offset, ProducerEpoch, ProducerId};
use bytes::Bytes;

use super::*;
use crate::client::{completed_fetch, IsolationLevel};
use crate::record::{
    encode_batch, end_transaction_marker, mirror_pid_reset, BatchBuilder, MarkerProducer,
    RecordBatch, TimestampType, LOG_OVERHEAD,
};

const T0: i64 = 1_700_000_000_000;

fn empty_log() -> PartitionLog<MemoryDisk> {
    PartitionLog::open(MemoryDisk::new(), LogConfig::default())
        .expect("empty disk opens")
        .0
}

fn small_segment_log() -> PartitionLog<MemoryDisk> {
    let config = LogConfig {
        segment_bytes: 200,
        ..LogConfig::default()
    };
    PartitionLog::open(MemoryDisk::new(), config).unwrap().0
}

fn data_batch(producer_id: i64, epoch: i16, sequence: i32, records: usize) -> RecordBatch {
    let mut builder = BatchBuilder::idempotent(producer_id, epoch, sequence);
    for index in 0..records {
        builder.append(
            T0 + index as i64,
            Some(Bytes::from(format!("k{index}"))),
            Some(Bytes::from(format!("p{producer_id}-s{sequence}-{index}"))),
            Vec::new(),
        );
    }
    builder.build()
}

fn txn_batch(producer_id: i64, epoch: i16, sequence: i32, records: usize) -> RecordBatch {
    let mut builder = BatchBuilder::idempotent(producer_id, epoch, sequence);
    builder.transactional = true;
    for _ in 0..records {
        builder.append(
            T0,
            None,
            Some(Bytes::from(format!("t{producer_id}-{sequence}"))),
            vec![],
        );
    }
    builder.build()
}

fn plain_batch(records: usize) -> RecordBatch {
    let mut builder = BatchBuilder::default();
    for _ in 0..records {
        builder.append(T0, None, Some(Bytes::from_static(b"plain")), vec![]);
    }
    builder.build()
}

fn marker(producer_id: i64, epoch: i16, committed: bool, coordinator_epoch: i32) -> RecordBatch {
    end_transaction_marker(
        MarkerProducer {
            producer_id,
            producer_epoch: epoch,
        },
        committed,
        coordinator_epoch,
        T0,
    )
}

fn produce(
    log: &mut PartitionLog<MemoryDisk>,
    batch: &RecordBatch,
) -> Result<LogAppendInfo, AppendError> {
    log.append_as_leader(batch, LeaderEpoch(0), AppendOrigin::Client, T0)
}

/// A client produce on a leader in `leader_epoch`.
fn produce_in(
    log: &mut PartitionLog<MemoryDisk>,
    batch: &RecordBatch,
    leader_epoch: i32,
) -> Result<LogAppendInfo, AppendError> {
    log.append_as_leader(batch, LeaderEpoch(leader_epoch), AppendOrigin::Client, T0)
}

fn coordinator(
    log: &mut PartitionLog<MemoryDisk>,
    batch: &RecordBatch,
) -> Result<LogAppendInfo, AppendError> {
    log.append_as_leader(batch, LeaderEpoch(0), AppendOrigin::Coordinator, T0)
}

fn producer_state_error(result: Result<LogAppendInfo, AppendError>) -> ProducerStateError {
    match result {
        Err(AppendError::ProducerState(error)) => error,
        other => panic!("expected a producer-state error, got {other:?}"),
    }
}

#[test]
fn leader_append_assigns_offsets_and_stamps_leader_epoch() {
    let mut log = empty_log();
    log.assign_epoch_start_offset(LeaderEpoch(3));
    let first = log
        .append_as_leader(
            &data_batch(1, 0, 0, 2),
            LeaderEpoch(3),
            AppendOrigin::Client,
            T0,
        )
        .unwrap();
    let second = log
        .append_as_leader(
            &data_batch(1, 0, 2, 3),
            LeaderEpoch(3),
            AppendOrigin::Client,
            T0,
        )
        .unwrap();
    assert_eq!(
        (first.first_offset, first.last_offset),
        (Offset(0), Offset(1))
    );
    assert_eq!(
        (second.first_offset, second.last_offset),
        (Offset(2), Offset(4))
    );
    assert_eq!(log.log_end_offset(), Offset(5));
    let stored: Vec<_> = log.batches().cloned().collect();
    assert_eq!(stored[1].base_offset(), 2);
    assert_eq!(stored[1].partition_leader_epoch(), 3);
    // The stamped batch still has a valid CRC: only CRC-free fields changed.
    assert!(RecordBatch::decode_exact(stored[1].bytes().clone()).is_ok());
    assert_eq!(
        log.epoch_cache().entries(),
        &[EpochEntry {
            epoch: LeaderEpoch(3),
            start_offset: Offset(0)
        }]
    );
}

#[test]
fn follower_append_keeps_bytes_offsets_and_epochs() {
    let mut leader = empty_log();
    leader
        .append_as_leader(
            &data_batch(7, 0, 0, 2),
            LeaderEpoch(1),
            AppendOrigin::Client,
            T0,
        )
        .unwrap();
    leader
        .append_as_leader(
            &data_batch(7, 0, 2, 1),
            LeaderEpoch(4),
            AppendOrigin::Client,
            T0,
        )
        .unwrap();
    let fetched = leader
        .read(Offset(0), usize::MAX, FetchIsolation::LogEnd, true)
        .unwrap();
    let mut follower = empty_log();
    follower.append_as_follower(&fetched.batches).unwrap();
    assert_eq!(follower.to_segment_bytes(), leader.to_segment_bytes());
    assert_eq!(follower.epoch_cache(), leader.epoch_cache());
    assert_eq!(follower.producer_state(), leader.producer_state());
    // Appending the same batches again starts below the log end.
    assert!(matches!(
        follower.append_as_follower(&fetched.batches),
        Err(AppendError::UnexpectedAppendOffset {
            first_offset: Offset(0),
            log_end_offset: Offset(3)
        })
    ));
    // A gap is refused: compaction is not modelled.
    let gap = fetched.batches[0].with_base_offset(10);
    assert!(matches!(
        follower.append_as_follower(&[gap]),
        Err(AppendError::NonContiguousOffsets {
            expected_offset: Offset(3),
            found_offset: Offset(10)
        })
    ));
}

#[test]
fn client_produce_rules_reject_malformed_batches() {
    let mut log = empty_log();
    let nonzero_base = data_batch(1, 0, 0, 1).with_base_offset(5);
    assert!(matches!(
        produce(&mut log, &nonzero_base),
        Err(AppendError::InvalidRecord(_))
    ));
    assert!(matches!(
        produce(&mut log, &marker(1, 0, true, 0)),
        Err(AppendError::InvalidRecord(_))
    ));
    let no_sequence = BatchBuilder::idempotent(1, 0, -1)
        .append(T0, None, None, vec![])
        .build();
    assert!(matches!(
        produce(&mut log, &no_sequence),
        Err(AppendError::InvalidRecord(_))
    ));
    let small = LogConfig {
        max_message_bytes: 50,
        ..LogConfig::default()
    };
    let mut limited = PartitionLog::open(MemoryDisk::new(), small).unwrap().0;
    assert!(matches!(
        produce(&mut limited, &data_batch(1, 0, 0, 1)),
        Err(AppendError::RecordTooLarge { .. })
    ));
    assert_eq!(
        log.log_end_offset(),
        Offset(0),
        "rejected produces write nothing"
    );
    assert!(log
        .disk()
        .read_file(&segment_file_name(0))
        .unwrap()
        .is_empty());
}

#[test]
fn client_records_must_carry_their_offset_delta_and_corruption_is_reported_first() {
    let mut log = empty_log();
    let batch = data_batch(1, 0, 0, 3);
    let mut records: Vec<_> = batch.records().map(Result::unwrap).collect();
    records.swap(1, 2);
    let misplaced = encode_batch(batch.header(), &records);
    match produce(&mut log, &misplaced) {
        Err(AppendError::InvalidRecord(reason)) => {
            assert_eq!(reason, "record 1 has offset delta 2")
        }
        other => panic!("expected INVALID_RECORD, got {other:?}"),
    }
    // The same batch with one stray byte after its records (length and CRC made consistent):
    // the structural error wins over the misplaced record.
    let mut bytes = misplaced.bytes().to_vec();
    bytes.push(0);
    let batch_length = (bytes.len() - LOG_OVERHEAD) as i32;
    bytes[8..12].copy_from_slice(&batch_length.to_be_bytes());
    let crc = crc32c::crc32c(&bytes[21..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    let trailing = RecordBatch::decode(&Bytes::from(bytes), 0).expect("header and CRC are valid");
    assert!(matches!(
        produce(&mut log, &trailing),
        Err(AppendError::CorruptMessage(_))
    ));
    assert_eq!(
        log.log_end_offset(),
        Offset(0),
        "rejected produces write nothing"
    );
}

#[test]
fn duplicate_within_last_five_batches_returns_original_offsets_and_appends_nothing() {
    let mut log = empty_log();
    for index in 0..6 {
        produce(&mut log, &data_batch(1, 0, index * 2, 2)).unwrap();
    }
    let end = log.log_end_offset();
    // Batch index 1 (sequences 2..3, offsets 2..3) is still among the last five.
    let retry = produce(&mut log, &data_batch(1, 0, 2, 2)).unwrap();
    assert!(retry.duplicate);
    assert_eq!(
        (retry.first_offset, retry.last_offset),
        (Offset(2), Offset(3))
    );
    assert_eq!(log.log_end_offset(), end);
    // Batch index 0 fell out of the window: its retry is out of order.
    let error = producer_state_error(produce(&mut log, &data_batch(1, 0, 0, 2)));
    assert_eq!(error.error_code(), 45);
    assert_eq!(log.log_end_offset(), end);
}

#[test]
fn epoch_fencing_rejects_older_epoch_on_client_but_not_replication() {
    let mut leader = empty_log();
    produce(&mut leader, &data_batch(1, 5, 0, 1)).unwrap();
    let error = producer_state_error(produce(&mut leader, &data_batch(1, 4, 1, 1)));
    assert!(matches!(
        error,
        ProducerStateError::InvalidProducerEpoch {
            batch_epoch: ProducerEpoch(4),
            current_epoch: ProducerEpoch(5),
            ..
        }
    ));
    let mut follower = empty_log();
    let older = data_batch(1, 4, 1, 1);
    follower
        .append_as_follower(&[data_batch(1, 5, 0, 1)])
        .unwrap();
    follower
        .append_as_follower(&[older.with_base_offset(1)])
        .unwrap();
    assert_eq!(
        follower
            .producer_state()
            .producer(ProducerId(1))
            .unwrap()
            .producer_epoch,
        ProducerEpoch(4)
    );
}

#[test]
fn sequence_rules_new_epoch_restarts_at_zero_unknown_producer_starts_anywhere() {
    let mut log = empty_log();
    produce(&mut log, &data_batch(1, 0, 40, 1))
        .expect("unknown producer may start at any sequence");
    produce(&mut log, &data_batch(1, 0, 41, 2)).unwrap();
    assert_eq!(
        producer_state_error(produce(&mut log, &data_batch(1, 0, 44, 1))).error_code(),
        45
    );
    assert_eq!(
        producer_state_error(produce(&mut log, &data_batch(1, 1, 5, 1))).error_code(),
        45
    );
    produce(&mut log, &data_batch(1, 1, 0, 1)).expect("a bumped epoch restarts at 0");
    assert_eq!(
        log.producer_state()
            .producer(ProducerId(1))
            .unwrap()
            .batches
            .len(),
        1
    );
}

#[test]
fn sequence_wraps_from_int_max_to_zero() {
    let mut log = empty_log();
    produce(&mut log, &data_batch(1, 0, i32::MAX - 1, 2)).unwrap();
    assert_eq!(
        log.producer_state()
            .producer(ProducerId(1))
            .unwrap()
            .last_sequence(),
        i32::MAX
    );
    assert_eq!(
        producer_state_error(produce(&mut log, &data_batch(1, 0, 1, 1))).error_code(),
        45
    );
    produce(&mut log, &data_batch(1, 0, 0, 1)).expect("MAX is followed by 0");
    let retry = produce(&mut log, &data_batch(1, 0, i32::MAX - 1, 2)).unwrap();
    assert!(
        retry.duplicate,
        "a batch spanning the wrap is still recognised as a duplicate"
    );
}

#[test]
fn marker_only_producer_entry_needs_sequence_zero() {
    let mut log = empty_log();
    produce(&mut log, &txn_batch(9, 2, 0, 1)).unwrap();
    coordinator(&mut log, &marker(9, 2, false, 0)).unwrap();
    // The ABORT keeps epoch 2 and the batch; a new transaction at epoch 3 must start at 0.
    assert_eq!(
        producer_state_error(produce(&mut log, &txn_batch(9, 3, 17, 1))).error_code(),
        45
    );
    produce(&mut log, &txn_batch(9, 3, 0, 1)).unwrap();
}

#[test]
fn transaction_state_rejects_non_transactional_batch_while_open() {
    let mut log = empty_log();
    produce(&mut log, &txn_batch(3, 0, 0, 1)).unwrap();
    let error = producer_state_error(produce(&mut log, &data_batch(3, 0, 1, 1)));
    assert!(matches!(
        error,
        ProducerStateError::InvalidTxnState {
            open_txn_first_offset: Offset(0),
            ..
        }
    ));
    assert_eq!(error.error_code(), 48);
}

#[test]
fn coordinator_epoch_fencing_rejects_markers_from_older_coordinator() {
    let mut log = empty_log();
    produce(&mut log, &txn_batch(3, 0, 0, 1)).unwrap();
    coordinator(&mut log, &marker(3, 0, true, 7)).unwrap();
    produce(&mut log, &txn_batch(3, 0, 1, 1)).unwrap();
    let error = producer_state_error(coordinator(&mut log, &marker(3, 0, true, 6)));
    assert_eq!(error.error_code(), 52);
    let error = producer_state_error(coordinator(&mut log, &marker(3, -1, true, 8)));
    assert_eq!(
        error.error_code(),
        47,
        "a marker from an older producer epoch is fenced"
    );
}

#[test]
fn last_stable_offset_waits_for_markers_below_high_watermark() {
    // Kafka's testFirstUnstableOffset shape: T1 and T2 open, T1 commits, then T2 aborts.
    let mut log = empty_log();
    produce(&mut log, &plain_batch(2)).unwrap(); // offsets 0..1
    produce(&mut log, &txn_batch(1, 0, 0, 1)).unwrap(); // T1 at 2
    produce(&mut log, &txn_batch(2, 0, 0, 1)).unwrap(); // T2 at 3
    coordinator(&mut log, &marker(1, 0, true, 0)).unwrap(); // COMMIT T1 at 4
    assert_eq!(log.first_unstable_offset(), Some(Offset(2)));
    log.maybe_increment_high_watermark(Offset(3));
    assert_eq!(log.last_stable_offset(), Offset(2));
    log.maybe_increment_high_watermark(Offset(5));
    assert_eq!(
        log.first_unstable_offset(),
        Some(Offset(3)),
        "T1's marker is below the HW"
    );
    coordinator(&mut log, &marker(2, 0, false, 0)).unwrap(); // ABORT T2 at 5
    assert_eq!(
        log.last_stable_offset(),
        Offset(3),
        "T2 completed but its marker is not replicated"
    );
    log.maybe_increment_high_watermark(Offset(6));
    assert_eq!(log.first_unstable_offset(), None);
    assert_eq!(log.last_stable_offset(), Offset(6));
    assert_eq!(
        log.aborted_txns(),
        &[AbortedTxn {
            producer_id: ProducerId(2),
            first_offset: Offset(3),
            last_offset: Offset(5),
            last_stable_offset: Offset(6)
        }]
    );
}

#[test]
fn aborted_index_records_lso_of_other_open_transactions() {
    let mut log = empty_log();
    produce(&mut log, &txn_batch(1, 0, 0, 1)).unwrap(); // 0
    produce(&mut log, &txn_batch(2, 0, 0, 1)).unwrap(); // 1
    coordinator(&mut log, &marker(2, 0, false, 0)).unwrap(); // 2: abort T2 while T1 open
    assert_eq!(log.aborted_txns()[0].last_stable_offset, Offset(0));
    // A marker for a producer with no open transaction completes nothing.
    coordinator(&mut log, &marker(5, 0, false, 0)).unwrap();
    assert_eq!(log.aborted_txns().len(), 1);
}

#[test]
fn read_bounds_follow_isolation_and_skip_control_records() {
    let mut log = empty_log();
    produce(&mut log, &data_batch(1, 0, 0, 2)).unwrap(); // 0..1
    produce(&mut log, &txn_batch(2, 0, 0, 2)).unwrap(); // 2..3 aborted
    coordinator(&mut log, &marker(2, 0, false, 0)).unwrap(); // 4
    produce(&mut log, &txn_batch(3, 0, 0, 1)).unwrap(); // 5 open
    produce(&mut log, &data_batch(1, 0, 2, 1)).unwrap(); // 6
    log.maybe_increment_high_watermark(Offset(7));
    assert_eq!(log.last_stable_offset(), Offset(5));
    let all = log
        .read(Offset(0), usize::MAX, FetchIsolation::LogEnd, true)
        .unwrap();
    assert_eq!(all.batches.len(), 5);
    let committed = log
        .read(Offset(0), usize::MAX, FetchIsolation::TxnCommitted, true)
        .unwrap();
    assert_eq!(committed.batches.last().unwrap().next_offset(), 5);
    let aborted = committed.aborted_transactions.clone().unwrap();
    assert_eq!(
        aborted,
        vec![AbortedTransaction {
            producer_id: ProducerId(2),
            first_offset: Offset(2)
        }]
    );
    let fetch = completed_fetch(
        0,
        &committed.batches,
        &aborted,
        IsolationLevel::ReadCommitted,
    )
    .unwrap();
    let offsets: Vec<i64> = fetch.records.iter().map(|r| r.offset).collect();
    assert_eq!(
        offsets,
        vec![0, 1],
        "aborted data and the marker are hidden"
    );
    assert_eq!(fetch.next_fetch_offset, 5);
    let uncommitted = log
        .read(Offset(0), usize::MAX, FetchIsolation::HighWatermark, true)
        .unwrap();
    let fetch = completed_fetch(
        0,
        &uncommitted.batches,
        &[],
        IsolationLevel::ReadUncommitted,
    )
    .unwrap();
    let offsets: Vec<i64> = fetch.records.iter().map(|r| r.offset).collect();
    assert_eq!(
        offsets,
        vec![0, 1, 2, 3, 5, 6],
        "control records never reach a consumer"
    );
    assert_eq!(fetch.control_batches_skipped, 1);
    // Fetch from the middle of a batch returns the whole batch; the consumer drops the head.
    let middle = log
        .read(Offset(1), usize::MAX, FetchIsolation::HighWatermark, true)
        .unwrap();
    assert_eq!(middle.batches[0].base_offset(), 0);
    let fetch = completed_fetch(1, &middle.batches, &[], IsolationLevel::ReadUncommitted).unwrap();
    assert_eq!(fetch.records[0].offset, 1);
    // A fetch at the bound is empty, above the log end is out of range.
    assert!(log
        .read(Offset(7), usize::MAX, FetchIsolation::HighWatermark, true)
        .unwrap()
        .batches
        .is_empty());
    assert!(log
        .read(Offset(8), usize::MAX, FetchIsolation::LogEnd, true)
        .is_err());
    // max_bytes 1 still returns one batch with min_one_message, none without.
    assert_eq!(
        log.read(Offset(0), 1, FetchIsolation::LogEnd, true)
            .unwrap()
            .batches
            .len(),
        1
    );
    assert_eq!(
        log.read(Offset(0), 1, FetchIsolation::LogEnd, false)
            .unwrap()
            .batches
            .len(),
        0
    );
}

#[test]
fn mirror_pid_reset_on_leader_append_removes_every_producer() {
    let mut log = empty_log();
    produce(&mut log, &data_batch(1000, 0, 0, 3)).unwrap();
    produce(&mut log, &data_batch(1001, 2, 7, 1)).unwrap();
    let info = log
        .append_as_leader(
            &mirror_pid_reset("source", T0),
            LeaderEpoch(5),
            AppendOrigin::Coordinator,
            T0,
        )
        .unwrap();
    assert!(info.producer_state_reset);
    assert!(log.producer_state().producers().is_empty());
    // The seed's motivating case: a new producer handed the same id starts at sequence 0.
    produce(&mut log, &data_batch(1000, 0, 0, 1))
        .expect("same pid from sequence 0 after the reset");
    let stored: Vec<_> = log.batches().cloned().collect();
    assert_eq!(stored[2].partition_leader_epoch(), 5);
    assert!(stored[2].is_mirror_pid_reset());
}

#[test]
fn mirror_pid_reset_inside_a_replicated_append_splits_producer_state() {
    let mut source = empty_log();
    produce(&mut source, &data_batch(1, 0, 0, 1)).unwrap();
    source
        .append_as_leader(
            &mirror_pid_reset("a", T0),
            LeaderEpoch(1),
            AppendOrigin::Coordinator,
            T0,
        )
        .unwrap();
    source
        .append_as_leader(
            &data_batch(2, 0, 0, 1),
            LeaderEpoch(1),
            AppendOrigin::Client,
            T0,
        )
        .unwrap();
    let batches = source
        .read(Offset(0), usize::MAX, FetchIsolation::LogEnd, true)
        .unwrap()
        .batches;
    let mut follower = empty_log();
    let info = follower.append_as_follower(&batches).unwrap();
    assert!(info.producer_state_reset);
    let ids: Vec<i64> = follower
        .producer_state()
        .producers()
        .keys()
        .map(|producer_id| producer_id.0)
        .collect();
    assert_eq!(
        ids,
        vec![2],
        "producer 1 was wiped by the reset, producer 2 came after it"
    );
    assert_eq!(follower.producer_state(), source.producer_state());
}

#[test]
fn mirror_pid_reset_is_replayed_in_recovery() {
    let mut log = empty_log();
    produce(&mut log, &data_batch(1, 0, 0, 1)).unwrap();
    log.append_as_leader(
        &mirror_pid_reset("a", T0),
        LeaderEpoch(1),
        AppendOrigin::Coordinator,
        T0,
    )
    .unwrap();
    produce(&mut log, &data_batch(5, 0, 0, 1)).unwrap();
    log.flush().unwrap();
    let expected = log.producer_state().clone();
    let (recovered, report) = PartitionLog::open(log.into_disk(), LogConfig::default()).unwrap();
    assert_eq!(report.pid_resets_replayed, 1);
    assert_eq!(recovered.producer_state(), &expected);
    assert!(recovered.producer_state().producer(ProducerId(1)).is_none());
}

#[test]
fn truncate_to_rebuilds_producer_state_and_epoch_cache() {
    let mut log = empty_log();
    produce_in(&mut log, &data_batch(1, 0, 0, 2), 1).unwrap(); // 0..1
    produce_in(&mut log, &data_batch(1, 0, 2, 2), 2).unwrap(); // 2..3
    produce_in(&mut log, &data_batch(2, 0, 0, 1), 3).unwrap(); // 4
    assert_eq!(log.truncate_to(Offset(2)).unwrap(), Offset(2));
    assert_eq!(log.log_end_offset(), Offset(2));
    assert_eq!(
        log.producer_state()
            .producer(ProducerId(1))
            .unwrap()
            .last_sequence(),
        1
    );
    assert!(log.producer_state().producer(ProducerId(2)).is_none());
    assert_eq!(
        log.epoch_cache().entries(),
        &[EpochEntry {
            epoch: LeaderEpoch(1),
            start_offset: Offset(0)
        }]
    );
    // Truncation is by whole batches: a target inside a batch removes all of it.
    produce_in(&mut log, &data_batch(1, 0, 2, 3), 4).unwrap(); // 2..4
    assert_eq!(log.truncate_to(Offset(3)).unwrap(), Offset(2));
    // At or past the end no data changes, but an epoch with no data is dropped.
    log.assign_epoch_start_offset(LeaderEpoch(9));
    assert_eq!(log.truncate_to(Offset(10)).unwrap(), Offset(2));
    assert_eq!(log.latest_epoch(), Some(LeaderEpoch(1)));
}

#[test]
fn truncate_to_last_stable_offset_removes_open_transactions() {
    let mut log = empty_log();
    produce(&mut log, &data_batch(1, 0, 0, 1)).unwrap(); // 0
    produce(&mut log, &txn_batch(2, 0, 0, 1)).unwrap(); // 1, open
    produce(&mut log, &data_batch(1, 0, 1, 1)).unwrap(); // 2
    log.maybe_increment_high_watermark(Offset(3));
    let lso = log.last_stable_offset();
    assert_eq!(lso, Offset(1));
    log.truncate_to(lso).unwrap();
    assert_eq!(log.log_end_offset(), Offset(1));
    assert_eq!(log.high_watermark(), Offset(1));
    assert!(log.producer_state().ongoing_txns().is_empty());
    assert_eq!(log.last_stable_offset(), Offset(1));
}

#[test]
fn markers_crossing_names_the_markers_an_lso_cut_separates_from_their_records() {
    let mut log = empty_log();
    produce(&mut log, &txn_batch(1, 0, 0, 1)).unwrap(); // 0: T1
    produce(&mut log, &txn_batch(2, 0, 0, 1)).unwrap(); // 1: T2
    coordinator(&mut log, &marker(1, 0, true, 0)).unwrap(); // 2: T1 commits
    produce(&mut log, &txn_batch(3, 0, 0, 1)).unwrap(); // 3: T3
    coordinator(&mut log, &marker(3, 0, false, 0)).unwrap(); // 4: T3 aborts, wholly above
    log.maybe_increment_high_watermark(Offset(5));
    // T2 is open: the LSO is its first offset, between T1's records and T1's COMMIT.
    let lso = log.last_stable_offset();
    assert_eq!(lso, Offset(1));
    let crossing = log.markers_crossing(lso);
    assert_eq!(
        crossing.len(),
        1,
        "T1's COMMIT only; T3 lies wholly above the cut"
    );
    assert_eq!(crossing[0].base_offset(), 2);
    assert_eq!(crossing[0].header().producer_id, 1);
    // The cut alone leaves T1 open again; appending its marker again closes it.
    log.truncate_to(lso).unwrap();
    assert_eq!(
        log.last_stable_offset(),
        Offset(0),
        "T1 reopened by the cut"
    );
    coordinator(&mut log, &crossing[0]).unwrap();
    log.maybe_increment_high_watermark(Offset(2));
    assert!(log.producer_state().ongoing_txns().is_empty());
    assert_eq!(log.last_stable_offset(), Offset(2));
    // Nothing crosses a cut at the log end, or below every transaction.
    assert!(log.markers_crossing(Offset(2)).is_empty());
    assert!(log.markers_crossing(Offset(0)).is_empty());
}

#[test]
fn markers_crossing_stops_at_a_mirror_pid_reset() {
    let mut log = empty_log();
    produce(&mut log, &txn_batch(1, 0, 0, 1)).unwrap(); // 0: T1, never closed
    coordinator(&mut log, &mirror_pid_reset("a", T0)).unwrap(); // 1: the reset ends it
    produce(&mut log, &txn_batch(2, 0, 0, 1)).unwrap(); // 2: T2
                                                        // A marker of producer 1 above the reset closes nothing that began before it.
    produce(&mut log, &txn_batch(1, 0, 0, 1)).unwrap(); // 3: T1'
    coordinator(&mut log, &marker(1, 0, true, 0)).unwrap(); // 4
    assert!(log.markers_crossing(Offset(2)).is_empty());
    assert_eq!(log.markers_crossing(Offset(4)).len(), 1, "T1' crosses 4");
}

#[test]
fn truncate_fully_and_start_at_resets_everything() {
    let mut log = small_segment_log();
    for sequence in 0..10 {
        produce(&mut log, &data_batch(1, 0, sequence, 1)).unwrap();
    }
    assert!(log.segment_count() > 1);
    log.truncate_fully_and_start_at(Offset(42)).unwrap();
    assert_eq!(
        (
            log.log_start_offset(),
            log.high_watermark(),
            log.log_end_offset()
        ),
        (Offset(42), Offset(42), Offset(42))
    );
    assert!(log.producer_state().producers().is_empty());
    assert!(log.epoch_cache().entries().is_empty());
    assert_eq!(
        log.disk()
            .list_files()
            .iter()
            .filter(|f| f.ends_with(".log"))
            .count(),
        1
    );
    let (reopened, _) = PartitionLog::open(log.into_disk(), LogConfig::default()).unwrap();
    assert_eq!(reopened.log_end_offset(), Offset(42));
    assert_eq!(reopened.log_start_offset(), Offset(42));
}

#[test]
fn high_watermark_moves_only_forward_on_leader_and_clamps_on_follower() {
    let mut log = empty_log();
    produce(&mut log, &data_batch(1, 0, 0, 3)).unwrap();
    assert!(log.maybe_increment_high_watermark(Offset(2)));
    assert!(!log.maybe_increment_high_watermark(Offset(1)));
    assert_eq!(log.high_watermark(), Offset(2));
    assert_eq!(log.update_high_watermark(Offset(100)), Offset(3));
    assert_eq!(log.update_high_watermark(Offset(1)), Offset(1));
}

#[test]
#[should_panic(expected = "above log end offset")]
fn high_watermark_above_log_end_is_a_broken_invariant() {
    let mut log = empty_log();
    log.maybe_increment_high_watermark(Offset(1));
}

#[test]
fn log_start_moves_up_to_high_watermark_and_deletes_whole_segments() {
    let mut log = small_segment_log();
    for sequence in 0..12 {
        produce(&mut log, &data_batch(1, 0, sequence, 1)).unwrap();
    }
    let segments_before = log.segment_count();
    assert!(
        segments_before >= 3,
        "small segments roll: {segments_before}"
    );
    assert!(matches!(
        log.maybe_increment_log_start_offset(Offset(5)),
        Err(LogError::LogStartAboveHighWatermark { .. })
    ));
    log.maybe_increment_high_watermark(Offset(12));
    assert!(log.maybe_increment_log_start_offset(Offset(7)).unwrap());
    assert!(log.segment_count() < segments_before);
    assert!(log
        .read(Offset(6), usize::MAX, FetchIsolation::HighWatermark, true)
        .is_err());
    // Producer entries survive a log start move, as in Kafka.
    assert!(log.producer_state().producer(ProducerId(1)).is_some());
    log.flush().unwrap();
    let (reopened, _) =
        PartitionLog::open(log.into_disk(), small_segment_log().config().clone()).unwrap();
    assert_eq!(reopened.log_start_offset(), Offset(7));
    assert_eq!(reopened.log_end_offset(), Offset(12));
}

#[test]
fn recovery_loses_unflushed_tail_on_crash() {
    let mut log = empty_log();
    produce(&mut log, &data_batch(1, 0, 0, 1)).unwrap();
    log.flush().unwrap();
    produce(&mut log, &data_batch(1, 0, 1, 1)).unwrap();
    let mut disk = log.into_disk();
    disk.crash(|_, _| TailFate::LOST);
    let (recovered, report) = PartitionLog::open(disk, LogConfig::default()).unwrap();
    assert_eq!(recovered.log_end_offset(), Offset(1));
    assert!(report.truncation.is_none());
    assert_eq!(
        recovered
            .producer_state()
            .producer(ProducerId(1))
            .unwrap()
            .last_sequence(),
        0
    );
}

#[test]
fn recovery_truncates_a_torn_tail_at_the_last_whole_batch() {
    let mut log = empty_log();
    produce(&mut log, &data_batch(1, 0, 0, 1)).unwrap();
    log.flush().unwrap();
    let flushed = log.to_segment_bytes().len() as u64;
    produce(&mut log, &data_batch(1, 0, 1, 1)).unwrap();
    let mut disk = log.into_disk();
    disk.crash(|_, tail| TailFate {
        kept_bytes: tail - 3,
        corruption: None,
    });
    let (recovered, report) = PartitionLog::open(disk, LogConfig::default()).unwrap();
    assert_eq!(recovered.log_end_offset(), Offset(1));
    let truncation = report.truncation.expect("torn batch detected");
    assert_eq!(truncation.position, flushed);
    assert!(
        truncation.reason.contains("truncated"),
        "{}",
        truncation.reason
    );
    let on_disk = recovered.disk().read_file(&segment_file_name(0)).unwrap();
    assert_eq!(
        on_disk.len() as u64,
        flushed,
        "the torn bytes are cut from the file"
    );
}

#[test]
fn recovery_stops_at_corruption_and_deletes_later_segments() {
    let mut log = small_segment_log();
    for sequence in 0..12 {
        produce(&mut log, &data_batch(1, 0, sequence, 1)).unwrap();
    }
    log.flush().unwrap();
    let segments = log.segment_count();
    let mut disk = log.into_disk();
    // Flip a byte inside the second batch of the first segment (past byte 21, so the CRC
    // catches it).
    let first_batch_size = data_batch(1, 0, 0, 1).size_in_bytes();
    assert!(disk.corrupt_byte(&segment_file_name(0), first_batch_size + 30, 0x01));
    let (recovered, report) =
        PartitionLog::open(disk, small_segment_log().config().clone()).unwrap();
    assert_eq!(recovered.log_end_offset(), Offset(1));
    assert_eq!(report.deleted_segments.len(), segments - 1);
    assert!(report.truncation.unwrap().reason.contains("CRC"));
    assert_eq!(recovered.segment_count(), 1);
}

#[test]
fn recovery_restores_checkpointed_high_watermark_clamped_to_log_end() {
    let mut log = empty_log();
    produce(&mut log, &data_batch(1, 0, 0, 4)).unwrap();
    log.maybe_increment_high_watermark(Offset(4));
    log.checkpoint_high_watermark().unwrap();
    let mut disk = log.into_disk();
    disk.crash(|_, _| TailFate::LOST);
    let (recovered, _) = PartitionLog::open(disk, LogConfig::default()).unwrap();
    assert_eq!(recovered.log_end_offset(), Offset(0));
    assert_eq!(recovered.high_watermark(), Offset(0));
}

#[test]
fn flush_interval_messages_makes_appends_durable() {
    let config = LogConfig {
        flush_interval_messages: Some(1),
        ..LogConfig::default()
    };
    let mut log = PartitionLog::open(MemoryDisk::new(), config.clone())
        .unwrap()
        .0;
    produce(&mut log, &data_batch(1, 0, 0, 1)).unwrap();
    assert_eq!(log.disk().total_unflushed_bytes(), 0);
    let mut disk = log.into_disk();
    disk.crash(|_, _| TailFate::LOST);
    assert_eq!(
        PartitionLog::open(disk, config).unwrap().0.log_end_offset(),
        Offset(1)
    );
}

#[test]
fn log_append_time_replaces_timestamps_and_recomputes_crc() {
    let config = LogConfig {
        timestamp_type: TimestampType::LogAppendTime,
        ..LogConfig::default()
    };
    let mut log = PartitionLog::open(MemoryDisk::new(), config).unwrap().0;
    let info = log
        .append_as_leader(
            &data_batch(1, 0, 0, 2),
            LeaderEpoch(0),
            AppendOrigin::Client,
            42,
        )
        .unwrap();
    assert_eq!(info.log_append_time_ms, Some(42));
    let stored = log.batches().next().unwrap().clone();
    let redecoded = RecordBatch::decode_exact(stored.bytes().clone()).expect("CRC recomputed");
    assert!(redecoded.records().all(|r| r.unwrap().timestamp == 42));
}

#[test]
fn expired_producers_are_removed_unless_a_transaction_is_open() {
    let config = LogConfig {
        producer_id_expiration_ms: 1000,
        ..LogConfig::default()
    };
    let mut log = PartitionLog::open(MemoryDisk::new(), config).unwrap().0;
    produce(&mut log, &data_batch(1, 0, 0, 1)).unwrap();
    produce(&mut log, &txn_batch(2, 0, 0, 1)).unwrap();
    assert_eq!(log.remove_expired_producers(T0 + 999), 0);
    assert_eq!(log.remove_expired_producers(T0 + 5000), 1);
    assert!(log.producer_state().producer(ProducerId(2)).is_some());
}

#[test]
fn recovery_of_empty_disk_gives_empty_log() {
    let (log, report) = PartitionLog::open(MemoryDisk::new(), LogConfig::default()).unwrap();
    assert_eq!(log.log_end_offset(), Offset(0));
    assert_eq!(report.segments_found, 0);
}

#[test]
fn broken_lso_switch_exposes_open_transactions_to_read_committed() {
    // The switch exists only to prove the read-committed checker catches it; this pins what
    // it breaks.
    let config = LogConfig {
        broken_lso_ignores_open_transactions: true,
        ..LogConfig::default()
    };
    let mut log = PartitionLog::open(MemoryDisk::new(), config).unwrap().0;
    produce(&mut log, &txn_batch(1, 0, 0, 1)).unwrap();
    log.maybe_increment_high_watermark(Offset(1));
    assert_eq!(log.first_unstable_offset(), Some(Offset(0)));
    assert_eq!(
        log.last_stable_offset(),
        Offset(1),
        "broken: the open transaction is readable"
    );
}
