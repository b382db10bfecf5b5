//! How each transaction of a log ended, judged from the control batches after its records:
//! what the transaction checks and the read checks both ask of a final log.

use std::collections::BTreeMap;

use mirrorsim::common::Offset;

use mirrorsim::broker::MemoryDirDisk;
use mirrorsim::log::PartitionLog;
use mirrorsim::protocol::{ClusterIndex, TopicPartition};

/// How a transactional batch ended, judged from the markers after it in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TxnOutcome {
    Committed,
    Aborted,
    Open,
}

/// The transaction outcomes of each partition's final log (see [`transaction_outcomes`]),
/// computed when first needed.
pub(super) type PartitionOutcomes =
    BTreeMap<(ClusterIndex, TopicPartition), BTreeMap<i64, (i64, TxnOutcome)>>;

/// How the transaction of a transactional data batch ended in a log, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TxnEnd {
    pub(super) producer_id: i64,
    pub(super) outcome: TxnOutcome,
    /// The offset of the control batch that decided `outcome`: the transaction's marker, or
    /// the `MIRROR_PID_RESET` that left it open for good; `None` while it is still open.
    pub(super) decided_at: Option<i64>,
}

/// The outcome of every transactional data batch of a log, by base offset: (producer id,
/// outcome).
pub(super) fn transaction_outcomes(
    log: &PartitionLog<MemoryDirDisk>,
) -> BTreeMap<i64, (i64, TxnOutcome)> {
    transaction_ends(log)
        .into_iter()
        .map(|(base, end)| (base, (end.producer_id, end.outcome)))
        .collect()
}

/// How every transactional data batch of a log ended, by base offset (see [`TxnEnd`]).
pub(super) fn transaction_ends(log: &PartitionLog<MemoryDirDisk>) -> BTreeMap<i64, TxnEnd> {
    transaction_ends_of(log.batches_from(log.log_start_offset()))
}

/// How the transaction of the transactional data batch holding `offset` ended in a log, if a
/// transactional data batch holds it.
pub(super) fn transaction_end_at(log: &PartitionLog<MemoryDirDisk>, offset: i64) -> Option<TxnEnd> {
    let base = data_batch_base(log, offset)?;
    transaction_ends(log).get(&base).copied()
}

/// The base offset of the data batch holding `offset`, if one does.
fn data_batch_base(log: &PartitionLog<MemoryDirDisk>, offset: i64) -> Option<i64> {
    log.batches_from(Offset(offset))
        .next()
        .filter(|batch| batch.base_offset() <= offset && !batch.is_control())
        .map(|batch| batch.base_offset())
}

/// [`transaction_ends`] of final logs that do not change while a check asks many questions of
/// them (one check of the whole history): each partition's log is scanned once, when first
/// asked, where [`transaction_end_at`] scans it at every call.
#[derive(Debug, Default)]
pub(super) struct TxnEndsMemo {
    ends: BTreeMap<(ClusterIndex, TopicPartition), BTreeMap<i64, TxnEnd>>,
}

impl TxnEndsMemo {
    /// [`transaction_ends`] of `log`, the final log of `cluster`'s `topic_partition`.
    pub(super) fn ends(
        &mut self,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        log: &PartitionLog<MemoryDirDisk>,
    ) -> &BTreeMap<i64, TxnEnd> {
        self.ends
            .entry((cluster, topic_partition.clone()))
            .or_insert_with(|| transaction_ends(log))
    }

    /// [`transaction_end_at`] of `log`, the final log of `cluster`'s `topic_partition`.
    pub(super) fn end_at(
        &mut self,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        log: &PartitionLog<MemoryDirDisk>,
        offset: i64,
    ) -> Option<TxnEnd> {
        let base = data_batch_base(log, offset)?;
        self.ends(cluster, topic_partition, log).get(&base).copied()
    }
}

/// [`transaction_ends`] of a sequence of batches in log order.
pub(super) fn transaction_ends_of<'a>(
    batches: impl IntoIterator<Item = &'a mirrorsim::record::RecordBatch>,
) -> BTreeMap<i64, TxnEnd> {
    use mirrorsim::record::ControlRecord;
    let mut ends = BTreeMap::new();
    let mut pending: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for batch in batches {
        let header = batch.header();
        let decided_at = Some(header.base_offset);
        match batch.control_record() {
            Some(Ok(ControlRecord::EndTransaction { committed, .. })) => {
                let outcome = if committed {
                    TxnOutcome::Committed
                } else {
                    TxnOutcome::Aborted
                };
                for base in pending.remove(&header.producer_id).unwrap_or_default() {
                    let producer_id = header.producer_id;
                    let end = TxnEnd {
                        producer_id,
                        outcome,
                        decided_at,
                    };
                    ends.insert(base, end);
                }
            }
            // A reset forgets open transactions: their data never gets a marker.
            Some(Ok(ControlRecord::MirrorPidReset { .. })) => {
                for base in std::mem::take(&mut pending).into_values().flatten() {
                    if let Some(end) = ends.get_mut(&base) {
                        end.decided_at = decided_at;
                    }
                }
            }
            _ if header.is_transactional() && !header.is_control() => {
                pending
                    .entry(header.producer_id)
                    .or_default()
                    .push(header.base_offset);
                let end = TxnEnd {
                    producer_id: header.producer_id,
                    outcome: TxnOutcome::Open,
                    decided_at: None,
                };
                ends.insert(header.base_offset, end);
            }
            _ => {}
        }
    }
    ends
}
