//! [`completed_fetch`] is how a Kafka consumer turns a fetch response into records (the Java
//! client's `CompletedFetch`): control batches are never returned, READ_COMMITTED skips the
//! batches of aborted transactions using the response's aborted-transaction list and the ABORT
//! markers, records before the fetch offset are dropped, and the next fetch offset always moves
//! past every returned batch, skipped or not.

use crate::common::Offset;
use std::collections::BTreeSet;

use bytes::Bytes;

use crate::log::AbortedTransaction;
use crate::record::{ControlRecord, RecordBatch, RecordError, RecordHeader};

/// The consumer's `isolation.level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum IsolationLevel {
    /// Read up to the high watermark, aborted data included.
    ReadUncommitted,
    /// Read up to the last stable offset and hide aborted transactions.
    ReadCommitted,
}

/// A record as the application sees it, with the batch fields checkers need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerRecord {
    /// The record's offset.
    pub offset: i64,
    /// The record's effective timestamp.
    pub timestamp: i64,
    /// Key (`None` = null).
    pub key: Option<Bytes>,
    /// Value (`None` = null).
    pub value: Option<Bytes>,
    /// Headers.
    pub headers: Vec<RecordHeader>,
    /// Producer id of the batch (−1 if none).
    pub producer_id: i64,
    /// Producer epoch of the batch.
    pub producer_epoch: i16,
    /// The record's sequence (−1 if none).
    pub sequence: i32,
    /// Partition leader epoch of the batch.
    pub partition_leader_epoch: i32,
    /// Whether the batch was transactional.
    pub is_transactional: bool,
}

/// The records of one fetch response and where the next fetch starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletedFetch {
    /// Records handed to the application, in offset order.
    pub records: Vec<ConsumerRecord>,
    /// Offset of the next fetch (past every batch of the response).
    pub next_fetch_offset: i64,
    /// Control batches skipped.
    pub control_batches_skipped: usize,
    /// Aborted transactional batches skipped.
    pub aborted_batches_skipped: usize,
}

/// Converts fetched `batches` into records for a consumer positioned at `fetch_offset`.
pub fn completed_fetch(
    fetch_offset: i64,
    batches: &[RecordBatch],
    aborted_transactions: &[AbortedTransaction],
    isolation: IsolationLevel,
) -> Result<CompletedFetch, RecordError> {
    let mut pending_aborts: Vec<AbortedTransaction> = aborted_transactions.to_vec();
    pending_aborts.sort_by_key(|txn| std::cmp::Reverse(txn.first_offset));
    let mut aborted_producers: BTreeSet<i64> = BTreeSet::new();
    let mut fetch = CompletedFetch {
        records: Vec::new(),
        next_fetch_offset: fetch_offset,
        control_batches_skipped: 0,
        aborted_batches_skipped: 0,
    };
    for batch in batches {
        let header = batch.header();
        fetch.next_fetch_offset = fetch.next_fetch_offset.max(batch.next_offset());
        if isolation == IsolationLevel::ReadCommitted && header.has_producer_id() {
            // Every aborted transaction that starts at or before this batch now applies.
            while pending_aborts
                .last()
                .is_some_and(|txn| txn.first_offset <= Offset(batch.last_offset()))
            {
                let txn = pending_aborts.pop().expect("checked above");
                aborted_producers.insert(txn.producer_id.0);
            }
            if is_abort_marker(batch) {
                aborted_producers.remove(&header.producer_id);
            } else if header.is_transactional() && aborted_producers.contains(&header.producer_id) {
                fetch.aborted_batches_skipped += 1;
                continue;
            }
        }
        if header.is_control() {
            fetch.control_batches_skipped += 1;
            continue;
        }
        for record in batch.records() {
            let record = record?;
            if record.offset < fetch_offset {
                continue;
            }
            fetch.records.push(ConsumerRecord {
                offset: record.offset,
                timestamp: record.timestamp,
                key: record.key,
                value: record.value,
                headers: record.headers,
                producer_id: header.producer_id,
                producer_epoch: header.producer_epoch,
                sequence: record.sequence,
                partition_leader_epoch: header.partition_leader_epoch,
                is_transactional: header.is_transactional(),
            });
        }
    }
    Ok(fetch)
}

fn is_abort_marker(batch: &RecordBatch) -> bool {
    matches!(
        batch.control_record(),
        Some(Ok(ControlRecord::EndTransaction {
            committed: false,
            ..
        }))
    )
}
