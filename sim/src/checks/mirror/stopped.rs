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
        let last = entry.batches.back().map(|batch| batch.last_offset);
        if last.is_some_and(|last| last < Offset(mirrored_end)) {
            out.push(violation(
                Invariant::NoStalePidAfterStopped,
                format!(
                    "{} is STOPPED but its producer state still has producer {producer_id} \
                     from mirrored data (last offset {:?} < {mirrored_end})",
                    view.broker.node_id(),
                    last
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
