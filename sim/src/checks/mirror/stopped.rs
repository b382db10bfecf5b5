//! `no-stale-pid-after-stopped`: a STOPPED partition's log ends its mirrored history with the
//! stop's own MIRROR_PID_RESET, above every mirrored producer.

use super::*;
use mirrorsim::common::Offset;

/// Where the mirrored data of a STOPPED leader's log ends: at its last MIRROR_PID_RESET, the
/// one its own stop wrote (resets mirrored in by a failback come earlier). The cluster-wide
/// end of mirrored data is no help when this leader had less, or more, mirrored data than
/// another replica that died (`fan_out` seed 7000, `failover_under_faults` seeds 1026 and
/// 7575123). A log without a reset (the `no-pid-reset` and `pid-rewrite` designs) ends its
/// mirrored data where its first epoch above the greatest mirrored one (`mirrored_epoch`)
/// starts (the stop's bump), else at its end: it is first judged when it turns STOPPED,
/// before any local write. The cluster-wide end (`lower_bound`) is used only when the log
/// has no epoch at or below `mirrored_epoch`.
///
/// A reset below `lower_bound` in an epoch at or below `mirrored_epoch` is mirrored data
/// itself (a failback's source stopped before, and its reset was mirrored in with the rest),
/// not this leader's stop, which wrote its reset after the mirrored data in the bumped epoch.
/// When such a reset is the last one, the stop's own reset is gone: a power loss of the only
/// replica took the mirrored tail above it with the stop's reset (generator seed
/// 9300000000000056: a's log torn from 92 to 59 kept b's reset at 38 and mirrored epochs 1
/// and 3), and the log is judged as one without a reset. The second value says so.
pub(super) fn mirrored_boundary(
    log: &mirrorsim::log::PartitionLog<mirrorsim::broker::MemoryDirDisk>,
    lower_bound: i64,
    mirrored_epoch: i32,
) -> (i64, bool) {
    let mirrored_in = |batch: &mirrorsim::record::RecordBatch| {
        batch.base_offset() < lower_bound && batch.partition_leader_epoch() <= mirrored_epoch
    };
    let last_reset = log
        .batches_from(log.log_start_offset())
        .filter(|batch| batch.is_mirror_pid_reset())
        .last();
    match last_reset {
        Some(reset) if !mirrored_in(reset) => (reset.base_offset(), false),
        last_reset => {
            let end = log
                .end_offset_for_epoch(LeaderEpoch(mirrored_epoch))
                .end_offset;
            let bound = if end.is_some() {
                end
            } else {
                Offset(lower_bound)
            };
            (bound.min(log.log_end_offset()).0, last_reset.is_some())
        }
    }
}

/// The last offset below `mirrored_end` of a producer whose entry comes from mirrored data
/// (INV-5's stale producer), or `None` when the entry is the partition's own. An entry's
/// remembered batches name its last write; a marker that moves the producer to a new epoch
/// (every EndTxn under transaction version 2) clears them, so an entry without batches is the
/// partition's own only if the producer wrote (data or a marker) at or above `mirrored_end`.
pub(super) fn stale_producer_last_offset(
    log: &PartitionLog<MemoryDirDisk>,
    entry: &mirrorsim::log::ProducerStateEntry,
    mirrored_end: i64,
) -> Option<Offset> {
    if let Some(batch) = entry.batches.back() {
        return (batch.last_offset < Offset(mirrored_end)).then_some(batch.last_offset);
    }
    let producer_id = entry.producer_id.0;
    let of_producer =
        |batch: &&mirrorsim::record::RecordBatch| batch.header().producer_id == producer_id;
    // The partition's own part first (short, and where the answer usually is).
    if log
        .batches_from(Offset(mirrored_end))
        .any(|batch| of_producer(&batch))
    {
        return None;
    }
    let last = log
        .batches_from(log.log_start_offset())
        .take_while(|batch| batch.base_offset() < mirrored_end)
        .filter(of_producer)
        .last()
        .map(|batch| Offset(batch.last_offset()));
    // No batch of it at all (the log start moved past them): its entry came from the data
    // below `mirrored_end`, as nothing above holds it.
    Some(last.unwrap_or(Offset(mirrored_end - 1)))
}

/// INV-5 and INV-6 on a STOPPED partition whose mirrored data ends at `mirrored.0` with
/// greatest epoch `mirrored.1`; local batches from `*scanned` on are checked (and `*scanned`
/// moves to the log end).
/// Whether the mirrored data below `mirrored_end` holds batches of a producer (idempotent or
/// transactional): their producer entries are what the STOPPED partition's reset must clear.
pub(super) fn has_mirrored_producers(log: &PartitionLog<MemoryDirDisk>, mirrored_end: i64) -> bool {
    log.batches_from(log.log_start_offset())
        .take_while(|batch| batch.base_offset() < mirrored_end)
        .any(|batch| !batch.is_control() && batch.header().has_producer_id())
}

/// The STOPPED checks of one partition; also whether a batch written after the mirrored data
/// was compared with the mirrored epoch.
pub(super) fn check_stopped(
    time_ms: i64,
    view: &BrokerView<'_>,
    topic_partition: &TopicPartition,
    (mirrored_end, mirrored_epoch): (i64, i32),
    scanned: &mut i64,
) -> (Vec<Violation>, bool) {
    let mut out = Vec::new();
    let Some(partition) = view.partition(topic_partition) else {
        return (out, false); // A stale replica of a deleted topic (see `BrokerView`).
    };
    let log = &partition.log;
    let violation = |invariant, detail| Violation {
        invariant,
        cluster: Some(view.cluster),
        topic_partition: Some(topic_partition.clone()),
        detail,
        time_ms,
    };
    for (producer_id, entry) in log.producer_state().producers() {
        if let Some(last) = stale_producer_last_offset(log, entry, mirrored_end) {
            out.push(violation(
                Invariant::NoStalePidAfterStopped,
                format!(
                    "{} is STOPPED but its producer state still has producer {producer_id} \
                     from mirrored data (last offset {last:?} < {mirrored_end})",
                    view.broker.node_id(),
                ),
            ));
            break;
        }
    }
    let from = (*scanned).max(mirrored_end);
    *scanned = log.log_end_offset().0;
    let local_checked = log.batches_from(Offset(from)).next().is_some();
    if let Some(local) = log
        .batches_from(Offset(from))
        .find(|batch| batch.partition_leader_epoch() <= mirrored_epoch)
    {
        out.push(violation(
            Invariant::LocalEpochAboveMirrored,
            format!(
                "{} wrote offset {} in epoch {}, not above the mirrored epoch {mirrored_epoch}",
                view.broker.node_id(),
                local.base_offset(),
                local.partition_leader_epoch()
            ),
        ));
    }
    (out, local_checked)
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use mirrorsim::log::AppendOrigin;
    use mirrorsim::record::{end_transaction_marker, BatchBuilder, MarkerProducer, RecordBatch};

    use super::*;
    use crate::checks::tests::log_with;

    const PRODUCER: i64 = 7;

    fn data(epoch: i16, sequence: i32) -> RecordBatch {
        let mut builder = BatchBuilder::idempotent(PRODUCER, epoch, sequence);
        builder.transactional = true;
        builder.append(0, None, Some(Bytes::from_static(b"v")), vec![]);
        builder.build()
    }

    fn commit(epoch: i16) -> RecordBatch {
        let producer = MarkerProducer {
            producer_id: PRODUCER,
            producer_epoch: epoch,
        };
        end_transaction_marker(producer, true, 0, 0)
    }

    /// Transaction version 2's COMMIT moves the producer to epoch 1 and clears its remembered
    /// batches: the entry is still the mirrored producer's (generated by the full variants
    /// table: `no-pid-reset` went uncaught in six files whose sources write only
    /// transactionally), unless the producer wrote at or above the mirrored end since.
    #[test]
    fn a_producer_whose_last_marker_cleared_its_batches_is_judged_by_its_last_write() {
        let mirrored = [
            (data(0, 0), AppendOrigin::Client),
            (commit(1), AppendOrigin::Coordinator),
        ];
        let log = log_with(&mirrored);
        let entry = log
            .producer_state()
            .producer(mirrorsim::common::ProducerId(PRODUCER));
        let entry = entry.expect("the producer is known");
        assert!(
            entry.batches.is_empty(),
            "the marker's new epoch cleared them"
        );
        assert_eq!(
            stale_producer_last_offset(&log, entry, 2),
            Some(Offset(1)),
            "its last write, the COMMIT at 1, is mirrored"
        );
        let mut own = mirrored.to_vec();
        own.push((data(1, 0), AppendOrigin::Client));
        own.push((commit(2), AppendOrigin::Coordinator));
        let log = log_with(&own);
        let entry = log
            .producer_state()
            .producer(mirrorsim::common::ProducerId(PRODUCER));
        assert_eq!(
            stale_producer_last_offset(&log, entry.unwrap(), 2),
            None,
            "it wrote at 2 and 3 since"
        );
        // With batches remembered, the last one decides, as before.
        let log = log_with(&[(data(0, 0), AppendOrigin::Client)]);
        let entry = log
            .producer_state()
            .producer(mirrorsim::common::ProducerId(PRODUCER));
        assert_eq!(
            stale_producer_last_offset(&log, entry.unwrap(), 1),
            Some(Offset(0))
        );
        assert_eq!(stale_producer_last_offset(&log, entry.unwrap(), 0), None);
    }
}
