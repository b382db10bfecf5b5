//! Producer state (Kafka's `ProducerStateManager` and `ProducerAppendInfo`).
//!
//! For every producer id seen in a partition the manager keeps the producer epoch, the metadata
//! of its last five batches (for duplicate detection), the coordinator epoch of its last marker,
//! its last timestamp and the first offset of its open transaction. It also keeps the open
//! transactions ordered by first offset, the completed transactions whose markers are not yet
//! below the high watermark, and from those two the first unstable offset that bounds the last
//! stable offset (LSO).
//!
//! Appends are validated before anything changes: [`ProducerStateManager::begin_append`] returns
//! an [`AppendValidator`] that checks batches one by one against the stored state plus what
//! earlier batches of the same append did, and [`ProducerStateManager::apply`] commits the result.
//! A failed validation leaves the manager untouched, so a rejected produce writes nothing.
//!
//! Rules per append origin (kafka-storage.md §3.3):
//! - **Client**: epoch fencing, sequence checks (a new epoch restarts at 0, an unknown producer
//!   may start anywhere, otherwise `last + 1` with wrap-around), transaction-state checks.
//! - **Coordinator** (markers, MIRROR_PID_RESET): epoch and coordinator-epoch fencing, no sequence
//!   checks.
//! - **Replication** (followers, mirror fetchers, log recovery, rebuild after truncation): no
//!   sequence checks and regressions only tolerated, state adopted as written; the
//!   transaction-state check still applies.
//!
//! KIP-1279: a `MIRROR_PID_RESET` control batch removes every producer entry and every open
//! transaction, whatever the origin, at the batch's position in the append. (Completed
//! transactions still waiting for the high watermark keep holding the LSO.)

use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use crate::common::{Offset, ProducerEpoch, ProducerId};
use crate::record::{decrement_sequence, in_sequence, ControlRecord, RecordBatch, NO_SEQUENCE};

/// How many batches per producer the duplicate check remembers (Kafka's `NUM_BATCHES_TO_RETAIN`).
pub const NUM_BATCHES_TO_RETAIN: usize = 5;

/// Who is appending; decides which producer-state rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AppendOrigin {
    /// A client produce on the partition leader.
    Client,
    /// A broker-written batch on the leader: transaction markers, MIRROR_PID_RESET.
    Coordinator,
    /// A copy of batches that were validated elsewhere: follower fetch, mirror fetch, recovery.
    Replication,
}

/// What the duplicate check remembers about one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    /// Sequence of the batch's last record.
    pub last_sequence: i32,
    /// Offset of the batch's last record.
    pub last_offset: Offset,
    /// `last_offset - first_offset` (also the sequence span).
    pub offset_delta: i32,
    /// The batch's max timestamp.
    pub timestamp: i64,
}

impl BatchMetadata {
    /// Sequence of the batch's first record.
    pub fn first_sequence(&self) -> i32 {
        decrement_sequence(self.last_sequence, self.offset_delta)
    }

    /// Offset of the batch's first record.
    pub fn first_offset(&self) -> Offset {
        self.last_offset - i64::from(self.offset_delta)
    }
}

/// State kept for one producer id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerStateEntry {
    /// The producer id.
    pub producer_id: ProducerId,
    /// Current producer epoch (−1 before any batch).
    pub producer_epoch: ProducerEpoch,
    /// Up to [`NUM_BATCHES_TO_RETAIN`] most recent batches of the current epoch, oldest first.
    pub batches: VecDeque<BatchMetadata>,
    /// Coordinator epoch of the last marker, or −1.
    pub coordinator_epoch: i32,
    /// Timestamp of the last batch or marker.
    pub last_timestamp: i64,
    /// First offset of the producer's open transaction in this partition.
    pub current_txn_first_offset: Option<Offset>,
}

impl ProducerStateEntry {
    fn empty(producer_id: ProducerId) -> Self {
        Self {
            producer_id,
            producer_epoch: ProducerEpoch::NONE,
            batches: VecDeque::new(),
            coordinator_epoch: -1,
            last_timestamp: -1,
            current_txn_first_offset: None,
        }
    }

    /// Sequence of the last remembered batch's last record, or −1.
    pub fn last_sequence(&self) -> i32 {
        self.batches.back().map_or(NO_SEQUENCE, |b| b.last_sequence)
    }

    /// Sequence of the oldest remembered batch's first record, or −1.
    pub fn first_sequence(&self) -> i32 {
        self.batches
            .front()
            .map_or(NO_SEQUENCE, |b| b.first_sequence())
    }

    /// The remembered batch with exactly this epoch and sequence range, if any.
    pub fn find_duplicate(
        &self,
        producer_epoch: ProducerEpoch,
        first_sequence: i32,
        last_sequence: i32,
    ) -> Option<BatchMetadata> {
        if producer_epoch != self.producer_epoch {
            return None;
        }
        self.batches
            .iter()
            .find(|b| b.first_sequence() == first_sequence && b.last_sequence == last_sequence)
            .copied()
    }

    fn adopt_epoch(&mut self, producer_epoch: ProducerEpoch) {
        if producer_epoch != self.producer_epoch {
            self.batches.clear();
            self.producer_epoch = producer_epoch;
        }
    }

    fn add_batch(&mut self, producer_epoch: ProducerEpoch, metadata: BatchMetadata) {
        self.adopt_epoch(producer_epoch);
        if self.batches.len() == NUM_BATCHES_TO_RETAIN {
            self.batches.pop_front();
        }
        self.batches.push_back(metadata);
        self.last_timestamp = metadata.timestamp;
    }
}

/// An open (or completed but not yet replicated) transaction in this partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnMetadata {
    /// The transaction's producer id.
    pub producer_id: ProducerId,
    /// Offset of its first batch in this partition.
    pub first_offset: Offset,
    /// Offset of its marker once completed.
    pub last_offset: Option<Offset>,
}

/// A transaction completed by a marker in the current append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTxn {
    /// The transaction's producer id.
    pub producer_id: ProducerId,
    /// Offset of its first batch.
    pub first_offset: Offset,
    /// Offset of its marker.
    pub last_offset: Offset,
    /// Whether the marker was ABORT.
    pub is_aborted: bool,
}

/// One entry of the aborted-transaction index (Kafka's `AbortedTxn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    /// The aborted transaction's producer id.
    pub producer_id: ProducerId,
    /// Offset of its first batch.
    pub first_offset: Offset,
    /// Offset of its ABORT marker.
    pub last_offset: Offset,
    /// The LSO when it completed: the first offset of the earliest open transaction of another
    /// producer, or the marker offset + 1.
    pub last_stable_offset: Offset,
}

/// Why a batch was rejected by producer-state validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProducerStateError {
    /// The batch's epoch is older than the producer's (`INVALID_PRODUCER_EPOCH`, 47).
    InvalidProducerEpoch {
        /// Producer id.
        producer_id: ProducerId,
        /// Epoch in the batch.
        batch_epoch: ProducerEpoch,
        /// Epoch in producer state.
        current_epoch: ProducerEpoch,
    },
    /// The batch does not follow the last sequence (`OUT_OF_ORDER_SEQUENCE_NUMBER`, 45).
    OutOfOrderSequence {
        /// Producer id.
        producer_id: ProducerId,
        /// Epoch in the batch.
        batch_epoch: ProducerEpoch,
        /// Last sequence known for the producer (−1 if none).
        last_sequence: i32,
        /// First sequence of the batch.
        first_sequence: i32,
    },
    /// A non-transactional batch while a transaction is open (`INVALID_TXN_STATE`, 48).
    InvalidTxnState {
        /// Producer id.
        producer_id: ProducerId,
        /// Offset of the open transaction's first batch.
        open_txn_first_offset: Offset,
    },
    /// A marker from an older coordinator (`TRANSACTION_COORDINATOR_FENCED`, 52).
    TransactionCoordinatorFenced {
        /// Producer id.
        producer_id: ProducerId,
        /// Coordinator epoch in the marker.
        marker_coordinator_epoch: i32,
        /// Coordinator epoch in producer state.
        current_coordinator_epoch: i32,
    },
}

impl ProducerStateError {
    /// Kafka's error code for this error.
    pub fn error_code(&self) -> i16 {
        match self {
            Self::InvalidProducerEpoch { .. } => 47,
            Self::OutOfOrderSequence { .. } => 45,
            Self::InvalidTxnState { .. } => 48,
            Self::TransactionCoordinatorFenced { .. } => 52,
        }
    }
}

impl fmt::Display for ProducerStateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidProducerEpoch {
                producer_id,
                batch_epoch,
                current_epoch,
            } => write!(
                f,
                "INVALID_PRODUCER_EPOCH: producer {producer_id} epoch {batch_epoch} is older than {current_epoch}"
            ),
            Self::OutOfOrderSequence {
                producer_id,
                batch_epoch,
                last_sequence,
                first_sequence,
            } => write!(
                f,
                "OUT_OF_ORDER_SEQUENCE_NUMBER: producer {producer_id} epoch {batch_epoch} sent sequence {first_sequence} after {last_sequence}"
            ),
            Self::InvalidTxnState {
                producer_id,
                open_txn_first_offset,
            } => write!(
                f,
                "INVALID_TXN_STATE: producer {producer_id} sent a non-transactional batch while its transaction from offset {open_txn_first_offset} is open"
            ),
            Self::TransactionCoordinatorFenced {
                producer_id,
                marker_coordinator_epoch,
                current_coordinator_epoch,
            } => write!(
                f,
                "TRANSACTION_COORDINATOR_FENCED: producer {producer_id} marker from coordinator epoch {marker_coordinator_epoch} after {current_coordinator_epoch}"
            ),
        }
    }
}

impl std::error::Error for ProducerStateError {}

/// The producer state of one partition replica.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerStateManager {
    producers: BTreeMap<ProducerId, ProducerStateEntry>,
    ongoing_txns: BTreeMap<Offset, TxnMetadata>,
    unreplicated_txns: BTreeMap<Offset, TxnMetadata>,
    map_end_offset: Offset,
}

/// The part of an append between two MIRROR_PID_RESET batches.
#[derive(Debug, Clone, Default)]
struct Phase {
    /// A MIRROR_PID_RESET precedes this phase: everything stored before it is removed.
    reset_before: bool,
    entries: BTreeMap<ProducerId, WorkingEntry>,
    /// Transaction starts and completions in log order. Applying them in that order (rather
    /// than all starts first, as Kafka's `UnifiedLog.append` does) makes the aborted index's
    /// LSO field the same on the leader, on followers whatever their fetch chunking, and after
    /// recovery.
    txn_events: Vec<TxnEvent>,
}

#[derive(Debug, Clone, Copy)]
enum TxnEvent {
    Started(TxnMetadata),
    Completed(CompletedTxn),
}

#[derive(Debug, Clone)]
struct WorkingEntry {
    /// Epoch of the stored entry before this append (−1 if none); Kafka's `currentEntry`.
    stored_epoch: ProducerEpoch,
    entry: ProducerStateEntry,
}

/// Validated, not yet applied, producer-state changes of one append.
#[derive(Debug, Clone)]
pub struct ProducerStateUpdate {
    phases: Vec<Phase>,
}

impl ProducerStateUpdate {
    /// Whether the append contained a MIRROR_PID_RESET batch.
    pub fn contains_reset(&self) -> bool {
        self.phases.iter().any(|phase| phase.reset_before)
    }
}

/// Validates the batches of one append against a [`ProducerStateManager`]; see the module doc.
pub struct AppendValidator<'a> {
    manager: &'a ProducerStateManager,
    origin: AppendOrigin,
    phases: Vec<Phase>,
}

impl AppendValidator<'_> {
    /// Validates `batch` (whose offsets are final) and records its effect.
    pub fn append_batch(&mut self, batch: &RecordBatch) -> Result<(), ProducerStateError> {
        let header = batch.header();
        if header.is_control() {
            match batch.control_record() {
                Some(Ok(ControlRecord::MirrorPidReset { .. })) => {
                    self.phases.push(Phase {
                        reset_before: true,
                        ..Phase::default()
                    });
                    return Ok(());
                }
                Some(Ok(ControlRecord::EndTransaction {
                    committed,
                    coordinator_epoch,
                })) if header.has_producer_id() => {
                    return self.append_end_txn_marker(batch, committed, coordinator_epoch);
                }
                // Empty control batches, KRaft or unknown control types and unreadable control
                // records carry no producer state; they are ignored rather than trusted.
                _ => return Ok(()),
            }
        }
        if !header.has_producer_id() {
            return Ok(());
        }
        self.append_data_batch(batch)
    }

    /// Finishes validation; the update can now be applied.
    pub fn finish(self) -> ProducerStateUpdate {
        ProducerStateUpdate {
            phases: self.phases,
        }
    }

    /// The phase the next batch belongs to (the one after the latest MIRROR_PID_RESET).
    fn current_phase(&mut self) -> &mut Phase {
        self.phases.last_mut().expect("at least one phase")
    }

    fn working_entry(&mut self, producer_id: ProducerId) -> &mut WorkingEntry {
        let base_visible = self.phases.len() == 1;
        let manager = self.manager;
        self.current_phase()
            .entries
            .entry(producer_id)
            .or_insert_with(|| {
                let stored = base_visible
                    .then(|| manager.producers.get(&producer_id))
                    .flatten();
                match stored {
                    Some(entry) => WorkingEntry {
                        stored_epoch: entry.producer_epoch,
                        entry: entry.clone(),
                    },
                    None => WorkingEntry {
                        stored_epoch: ProducerEpoch::NONE,
                        entry: ProducerStateEntry::empty(producer_id),
                    },
                }
            })
    }

    fn append_data_batch(&mut self, batch: &RecordBatch) -> Result<(), ProducerStateError> {
        let header = *batch.header();
        let origin = self.origin;
        let working = self.working_entry(ProducerId(header.producer_id));
        let entry = &mut working.entry;
        // (a) Epoch fencing. Replication keeps whatever the leader accepted.
        if header.producer_epoch < entry.producer_epoch.0 && origin != AppendOrigin::Replication {
            return Err(ProducerStateError::InvalidProducerEpoch {
                producer_id: ProducerId(header.producer_id),
                batch_epoch: ProducerEpoch(header.producer_epoch),
                current_epoch: entry.producer_epoch,
            });
        }
        // (b) Sequence check, client produce only.
        if origin == AppendOrigin::Client {
            check_sequence(working.stored_epoch, entry, &header)?;
        }
        // (d) Transaction state, every origin. Checked before recording the batch so a
        // rejected append leaves the working entry as it was.
        if let Some(open) = entry.current_txn_first_offset {
            if !header.is_transactional() {
                return Err(ProducerStateError::InvalidTxnState {
                    producer_id: ProducerId(header.producer_id),
                    open_txn_first_offset: open,
                });
            }
        }
        // (c) Record the batch; a new epoch clears the remembered batches.
        entry.add_batch(
            ProducerEpoch(header.producer_epoch),
            BatchMetadata {
                last_sequence: header.last_sequence(),
                last_offset: Offset(header.last_offset()),
                offset_delta: header.last_offset_delta,
                timestamp: header.max_timestamp,
            },
        );
        let started = if header.is_transactional() && entry.current_txn_first_offset.is_none() {
            entry.current_txn_first_offset = Some(Offset(header.base_offset));
            Some(TxnMetadata {
                producer_id: ProducerId(header.producer_id),
                first_offset: Offset(header.base_offset),
                last_offset: None,
            })
        } else {
            None
        };
        if let Some(txn) = started {
            self.current_phase().txn_events.push(TxnEvent::Started(txn));
        }
        Ok(())
    }

    fn append_end_txn_marker(
        &mut self,
        batch: &RecordBatch,
        committed: bool,
        coordinator_epoch: i32,
    ) -> Result<(), ProducerStateError> {
        let header = *batch.header();
        let origin = self.origin;
        let entry = &mut self.working_entry(ProducerId(header.producer_id)).entry;
        if origin != AppendOrigin::Replication {
            if header.producer_epoch < entry.producer_epoch.0 {
                return Err(ProducerStateError::InvalidProducerEpoch {
                    producer_id: ProducerId(header.producer_id),
                    batch_epoch: ProducerEpoch(header.producer_epoch),
                    current_epoch: entry.producer_epoch,
                });
            }
            if entry.coordinator_epoch > coordinator_epoch {
                return Err(ProducerStateError::TransactionCoordinatorFenced {
                    producer_id: ProducerId(header.producer_id),
                    marker_coordinator_epoch: coordinator_epoch,
                    current_coordinator_epoch: entry.coordinator_epoch,
                });
            }
        }
        let completed = entry
            .current_txn_first_offset
            .map(|first_offset| CompletedTxn {
                producer_id: ProducerId(header.producer_id),
                first_offset,
                last_offset: Offset(header.base_offset),
                is_aborted: !committed,
            });
        entry.adopt_epoch(ProducerEpoch(header.producer_epoch));
        entry.coordinator_epoch = coordinator_epoch;
        entry.current_txn_first_offset = None;
        entry.last_timestamp = header.max_timestamp;
        if let Some(txn) = completed {
            self.current_phase()
                .txn_events
                .push(TxnEvent::Completed(txn));
        }
        Ok(())
    }
}

/// Kafka's `checkSequence` for a client batch against the working entry.
fn check_sequence(
    stored_epoch: ProducerEpoch,
    entry: &ProducerStateEntry,
    header: &crate::record::BatchHeader,
) -> Result<(), ProducerStateError> {
    let first_sequence = header.base_sequence;
    let out_of_order = || ProducerStateError::OutOfOrderSequence {
        producer_id: ProducerId(header.producer_id),
        batch_epoch: ProducerEpoch(header.producer_epoch),
        last_sequence: entry.last_sequence(),
        first_sequence,
    };
    if ProducerEpoch(header.producer_epoch) != entry.producer_epoch {
        // A bumped epoch must restart at sequence 0 unless the producer was unknown.
        if first_sequence != 0 && entry.producer_epoch != ProducerEpoch::NONE {
            return Err(out_of_order());
        }
        return Ok(());
    }
    // With no stored state (e.g. lost to retention) any sequence is accepted (KIP-360).
    if stored_epoch == ProducerEpoch::NONE || in_sequence(entry.last_sequence(), first_sequence) {
        Ok(())
    } else {
        Err(out_of_order())
    }
}

impl ProducerStateManager {
    /// An empty manager whose map end offset is `start_offset`.
    pub fn new(start_offset: Offset) -> Self {
        Self {
            map_end_offset: start_offset,
            ..Self::default()
        }
    }

    /// Starts validating an append with the rules of `origin`.
    pub fn begin_append(&self, origin: AppendOrigin) -> AppendValidator<'_> {
        AppendValidator {
            manager: self,
            origin,
            phases: vec![Phase::default()],
        }
    }

    /// Applies a validated update whose batches end at `last_offset`. Returns the entries the
    /// aborted-transaction index gains, in marker order.
    pub fn apply(&mut self, update: ProducerStateUpdate, last_offset: Offset) -> Vec<AbortedTxn> {
        assert!(
            last_offset >= self.map_end_offset - 1,
            "producer state applied backwards: last offset {last_offset}, map end {}",
            self.map_end_offset
        );
        let mut aborted = Vec::new();
        for phase in update.phases {
            if phase.reset_before {
                self.remove_all_producers();
            }
            for (producer_id, working) in phase.entries {
                self.producers.insert(producer_id, working.entry);
            }
            for event in phase.txn_events {
                match event {
                    TxnEvent::Started(txn) => {
                        let previous = self.ongoing_txns.insert(txn.first_offset, txn);
                        assert!(
                            previous.is_none(),
                            "two transactions start at {}",
                            txn.first_offset
                        );
                    }
                    TxnEvent::Completed(txn) => aborted.extend(self.complete_txn(txn)),
                }
            }
        }
        self.map_end_offset = last_offset + 1;
        aborted
    }

    fn complete_txn(&mut self, txn: CompletedTxn) -> Option<AbortedTxn> {
        let last_stable_offset = self
            .ongoing_txns
            .values()
            .find(|open| open.producer_id != txn.producer_id)
            .map_or(txn.last_offset + 1, |open| open.first_offset);
        let mut metadata = self
            .ongoing_txns
            .remove(&txn.first_offset)
            .unwrap_or_else(|| panic!("completed transaction {txn:?} was never started"));
        assert_eq!(
            metadata.producer_id, txn.producer_id,
            "transaction owner mismatch"
        );
        metadata.last_offset = Some(txn.last_offset);
        self.unreplicated_txns.insert(txn.first_offset, metadata);
        txn.is_aborted.then_some(AbortedTxn {
            producer_id: txn.producer_id,
            first_offset: txn.first_offset,
            last_offset: txn.last_offset,
            last_stable_offset,
        })
    }

    /// MIRROR_PID_RESET: forget every producer and every open transaction. Completed
    /// transactions whose markers are not yet below the high watermark stay: they are not
    /// producer state, and they must keep holding the LSO until their markers are replicated.
    fn remove_all_producers(&mut self) {
        self.producers.clear();
        self.ongoing_txns.clear();
    }

    /// Test-only broken behaviour: puts back every entry of `before` that is missing now (see
    /// `PartitionLog::append_as_follower_ignoring_pid_reset`).
    pub(crate) fn restore_missing_producers(
        &mut self,
        before: BTreeMap<ProducerId, ProducerStateEntry>,
    ) {
        for (producer_id, entry) in before {
            self.producers.entry(producer_id).or_insert(entry);
        }
    }

    /// The duplicate check a leader runs before a client append: the cached batch with the
    /// same producer, epoch and sequence range, if any.
    pub fn find_duplicate(
        &self,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        first_sequence: i32,
        last_sequence: i32,
    ) -> Option<BatchMetadata> {
        self.producers.get(&producer_id)?.find_duplicate(
            producer_epoch,
            first_sequence,
            last_sequence,
        )
    }

    /// The entry for `producer_id`.
    pub fn producer(&self, producer_id: ProducerId) -> Option<&ProducerStateEntry> {
        self.producers.get(&producer_id)
    }

    /// All entries, by producer id.
    pub fn producers(&self) -> &BTreeMap<ProducerId, ProducerStateEntry> {
        &self.producers
    }

    /// Open transactions, by first offset.
    pub fn ongoing_txns(&self) -> &BTreeMap<Offset, TxnMetadata> {
        &self.ongoing_txns
    }

    /// Completed transactions whose markers are not yet below the high watermark.
    pub fn unreplicated_txns(&self) -> &BTreeMap<Offset, TxnMetadata> {
        &self.unreplicated_txns
    }

    /// The offset after the last batch applied.
    pub fn map_end_offset(&self) -> Offset {
        self.map_end_offset
    }

    /// The smaller of the earliest open transaction's first offset and the earliest
    /// unreplicated transaction's first offset.
    pub fn first_unstable_offset(&self) -> Option<Offset> {
        let ongoing = self.ongoing_txns.keys().next().copied();
        let unreplicated = self.unreplicated_txns.keys().next().copied();
        match (ongoing, unreplicated) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The high watermark moved to `high_watermark`: completed transactions whose markers are
    /// below it no longer hold the LSO back.
    pub fn on_high_watermark_updated(&mut self, high_watermark: Offset) {
        self.unreplicated_txns.retain(|_, txn| {
            txn.last_offset
                .is_none_or(|last_offset| last_offset >= high_watermark)
        });
    }

    /// The log start offset moved: completed transactions entirely below it are dropped.
    /// Producer entries are kept, as in Kafka.
    pub fn on_log_start_offset_incremented(&mut self, log_start_offset: Offset) {
        self.unreplicated_txns.retain(|_, txn| {
            txn.last_offset
                .is_none_or(|last_offset| last_offset >= log_start_offset)
        });
        self.map_end_offset = self.map_end_offset.max(log_start_offset);
    }

    /// Removes producers with no open transaction whose last timestamp is at least
    /// `expiration_ms` old; returns how many were removed.
    pub fn remove_expired_producers(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers.retain(|_, entry| {
            entry.current_txn_first_offset.is_some()
                || now_ms.saturating_sub(entry.last_timestamp) < expiration_ms
        });
        before - self.producers.len()
    }
}
