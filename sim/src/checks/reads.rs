//! Reading a log as the checks need it: the record a value names, control-batch runs, the
//! logs of the current leaders (`LeaderLogs`).

use bytes::Bytes;
use mirrorsim::broker::MemoryDirDisk;
use mirrorsim::common::Offset;
use mirrorsim::log::PartitionLog;
use mirrorsim::protocol::{ClusterIndex, TopicPartition};
use std::collections::BTreeMap;

use super::view::{current_leader, BrokerView, ControllerView};

/// The cluster a self-describing value was produced in (its producer's cluster letter).
pub(super) fn cluster_of_value(value: &str) -> ClusterIndex {
    let letter = value.as_bytes().first().copied().unwrap_or(b'a');
    ClusterIndex(letter.saturating_sub(b'a'))
}

/// The value of the data record at `offset`, if the log holds one there.
pub(super) fn record_value_at(log: &PartitionLog<MemoryDirDisk>, offset: i64) -> Option<String> {
    record_value_in(log.batches_from(Offset(offset)).next()?, offset)
}

/// The value of `batch`'s data record at `offset`, if it holds one there.
pub(super) fn record_value_in(
    batch: &mirrorsim::record::RecordBatch,
    offset: i64,
) -> Option<String> {
    data_record_in(batch, offset).map(|record| value_text(&record))
}

/// `batch`'s data record at `offset`, if it holds one there.
fn data_record_in(
    batch: &mirrorsim::record::RecordBatch,
    offset: i64,
) -> Option<mirrorsim::record::Record> {
    if batch.base_offset() > offset || batch.is_control() {
        return None;
    }
    batch
        .records()
        .filter_map(Result::ok)
        .find(|record| record.offset == offset)
}

/// A record's value as the checks compare values: UTF-8 with malformed bytes replaced, a null
/// value the empty string.
fn value_text(record: &mirrorsim::record::Record) -> String {
    record
        .value
        .as_deref()
        .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
        .unwrap_or_default()
}

/// [`record_value_at`] for walks that ask one log for many offsets in turn: the batch holding
/// the last offset asked is decoded once and kept (each [`record_value_at`] decodes a batch's
/// records up to the offset again, quadratic in a batch's length over a walk of it). Give each
/// log its own cursor; a log that changed since the cursor read it needs a new one.
#[derive(Debug, Default)]
pub(super) struct ValueCursor {
    /// The kept batch; `None` before the first read.
    batch: Option<KeptBatch>,
}

/// One batch's offsets and its data records' values (none for a control batch).
#[derive(Debug)]
struct KeptBatch {
    base_offset: i64,
    last_offset: i64,
    values: Vec<(i64, String)>,
}

impl ValueCursor {
    /// The value of the data record at `offset` of `log`, exactly as [`record_value_at`] gives it.
    pub(super) fn value_at(
        &mut self,
        log: &PartitionLog<MemoryDirDisk>,
        offset: i64,
    ) -> Option<String> {
        let kept = self
            .batch
            .as_ref()
            .is_some_and(|kept| (kept.base_offset..=kept.last_offset).contains(&offset));
        if !kept {
            let batch = log.batches_from(Offset(offset)).next()?;
            if batch.base_offset() > offset {
                return None;
            }
            let values = if batch.is_control() {
                Vec::new()
            } else {
                batch
                    .records()
                    .filter_map(Result::ok)
                    .map(|record| (record.offset, value_text(&record)))
                    .collect()
            };
            self.batch = Some(KeptBatch {
                base_offset: batch.base_offset(),
                last_offset: batch.last_offset(),
                values,
            });
        }
        self.batch
            .as_ref()?
            .values
            .iter()
            .find(|(at, _)| *at == offset)
            .map(|(_, value)| value.clone())
    }
}

/// Whether `batch`'s data record at `offset` has the value `value` (as [`record_value_in`]
/// would give it, a null value as the empty string), without building the value: the per-step
/// checks ask this for every record a consumer could have read.
pub(super) fn record_value_is(
    batch: &mirrorsim::record::RecordBatch,
    offset: i64,
    value: &str,
) -> bool {
    data_record_in(batch, offset).is_some_and(|record| {
        let bytes = record.value.as_deref().unwrap_or_default();
        match std::str::from_utf8(bytes) {
            Ok(text) => text == value,
            // As record_value_in reads it: malformed bytes replaced.
            Err(_) => String::from_utf8_lossy(bytes) == value,
        }
    })
}

/// Whether the data record at `offset` of `log` has the value `value` ([`record_value_is`]).
pub(super) fn record_value_at_is(
    log: &PartitionLog<MemoryDirDisk>,
    offset: i64,
    value: &str,
) -> bool {
    log.batches_from(Offset(offset))
        .next()
        .is_some_and(|batch| record_value_is(batch, offset, value))
}

/// Where a value sits in the log, if anywhere (for violation details).
pub(super) fn offset_of_value(log: &PartitionLog<MemoryDirDisk>, value: &str) -> Option<i64> {
    log.batches_from(log.log_start_offset())
        .filter(|batch| !batch.is_control())
        .flat_map(|batch| batch.records().filter_map(Result::ok).collect::<Vec<_>>())
        .find(|record| record.value.as_deref() == Some(value.as_bytes()))
        .map(|record| record.offset)
}

/// [`offset_of_value`] over the final logs, each log indexed once on first use: the final
/// checks look up every send of a run, and a scan of the log per lookup made them quadratic
/// in its length.
#[derive(Default)]
pub(super) struct ValueOffsetsMemo {
    offsets: BTreeMap<(ClusterIndex, TopicPartition), BTreeMap<Bytes, i64>>,
}

impl ValueOffsetsMemo {
    /// Where `value` first sits in `log`, the final log of `cluster`'s `topic_partition`.
    pub(super) fn offset_of(
        &mut self,
        cluster: ClusterIndex,
        topic_partition: &TopicPartition,
        log: &PartitionLog<MemoryDirDisk>,
        value: &str,
    ) -> Option<i64> {
        self.offsets
            .entry((cluster, topic_partition.clone()))
            .or_insert_with(|| first_offsets_of_values(log))
            .get(value.as_bytes())
            .copied()
    }
}

/// Every data record's value in `log` with the offset it first sits at.
fn first_offsets_of_values(log: &PartitionLog<MemoryDirDisk>) -> BTreeMap<Bytes, i64> {
    let mut offsets = BTreeMap::new();
    for batch in log.batches_from(log.log_start_offset()) {
        if batch.is_control() {
            continue;
        }
        for record in batch.records().filter_map(Result::ok) {
            if let Some(value) = record.value {
                offsets.entry(value).or_insert(record.offset);
            }
        }
    }
    offsets
}

/// The lowest offset from which `log` holds only control batches, batch after batch without
/// a gap, up to `offset` below its high watermark; `offset` itself when the batch right below
/// it is data, or the log's batches do not end exactly at `offset` below its high watermark.
pub(super) fn control_run_before(log: &PartitionLog<MemoryDirDisk>, offset: i64) -> i64 {
    if offset > log.high_watermark().0 {
        return offset;
    }
    let mut run_from = None;
    let mut at = log.log_start_offset();
    for batch in log.batches_from(log.log_start_offset()) {
        if batch.base_offset() >= offset {
            break;
        }
        let contiguous = Offset(batch.base_offset()) == at;
        run_from = match (batch.is_control(), run_from) {
            (false, _) => None,
            (true, Some(from)) if contiguous => Some(from),
            (true, _) => Some(batch.base_offset()),
        };
        at = Offset(batch.next_offset());
    }
    run_from.filter(|_| at == Offset(offset)).unwrap_or(offset)
}

/// Whether `log` holds `[from, to)` as control batches only, batch after batch from `from`
/// (no gap, no data record).
pub(super) fn control_batches_span(log: &PartitionLog<MemoryDirDisk>, from: i64, to: i64) -> bool {
    let mut at = from;
    for batch in log.batches_from(Offset(from)) {
        if at >= to {
            break;
        }
        if batch.base_offset() != at || !batch.is_control() {
            return false;
        }
        at = batch.next_offset();
    }
    at >= to
}

/// Where the history checks find the current leader's log of a partition.
pub trait LeaderLogs {
    /// The log of the live broker leading `tp` in its current epoch.
    fn leader_log(
        &self,
        cluster: ClusterIndex,
        tp: &TopicPartition,
    ) -> Option<&PartitionLog<MemoryDirDisk>>;
}

/// [`LeaderLogs`] over the running world.
pub(super) struct ViewLeaderLogs<'a, 'b> {
    pub(super) controllers: &'a [ControllerView<'b>],
    pub(super) brokers: &'a [BrokerView<'b>],
}

impl LeaderLogs for ViewLeaderLogs<'_, '_> {
    fn leader_log(
        &self,
        cluster: ClusterIndex,
        tp: &TopicPartition,
    ) -> Option<&PartitionLog<MemoryDirDisk>> {
        current_leader(self.controllers, self.brokers, cluster, tp).map(|(_, log)| log)
    }
}
