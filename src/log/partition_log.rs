//! One partition replica's log (Kafka's `UnifiedLog` with its `LocalLog` and segments).
//!
//! Contract:
//! - Batches are stored exactly as they arrive. Only a leader's append (origin Client or
//!   Coordinator) assigns offsets and stamps its leader epoch (and, under LogAppendTime, the
//!   append time); a replicated append (followers, mirror fetchers) keeps every byte.
//! - `log_start_offset ≤ last_stable_offset ≤ high_watermark ≤ log_end_offset` holds after every
//!   operation (asserted).
//! - Every append, truncation and start-offset move is written through the [`LogDisk`] in Kafka's
//!   segment form: files named by their 20-digit base offset with suffix `.log`, each holding
//!   concatenated batches. Data becomes durable only through [`PartitionLog::flush`] or the
//!   `flush_interval_messages` policy; the log start offset and the high watermark are kept in
//!   small checkpoint files replaced atomically (the high watermark on every flush).
//! - [`PartitionLog::open`] recovers from whatever the disk holds: it stops at the first torn,
//!   corrupt or out-of-order batch, truncates there, deletes later segments, and rebuilds the
//!   leader-epoch cache, the producer state and the aborted-transaction index by replaying the
//!   batches (a MIRROR_PID_RESET wipes the producer state during the replay as it did on append).
//! - Truncation ([`PartitionLog::truncate_to`], [`PartitionLog::truncate_fully_and_start_at`])
//!   truncates the epoch cache from the end and rebuilds producer state by replay, as Kafka does.
//!
//! Modelling limits (written down so nobody relies on them): no compaction (compressed batches,
//! which producers write when a scenario sets `compression`, are stored and replicated as they
//! came, validation decompressing their records); no producer-state snapshot files (producer state is rebuilt by replaying every retained batch,
//! so after a restart the duplicate window still holds five batches per producer where Kafka
//! keeps one), and the epoch cache is rebuilt from batches rather than read from a checkpoint.

mod recovery;
mod truncation;

use crate::common::{LeaderEpoch, Offset, ProducerEpoch, ProducerId};
use bytes::Bytes;

use super::disk::LogDisk;
use super::epoch_cache::{EpochEndOffset, LeaderEpochCache};
use super::error::{AppendError, LogError, OffsetOutOfRange};
use super::producer_state::{AbortedTxn, AppendOrigin, ProducerStateError, ProducerStateManager};
use crate::record::{BatchReader, RecordBatch, TimestampType};

const LOG_START_CHECKPOINT: &str = "log-start-offset.checkpoint";
const HIGH_WATERMARK_CHECKPOINT: &str = "high-watermark.checkpoint";
const SEGMENT_SUFFIX: &str = ".log";

/// Per-topic log settings (Kafka topic configs of the same names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// `segment.bytes`: roll a new segment when the active one would grow past this.
    pub segment_bytes: usize,
    /// `max.message.bytes`: the largest batch a client may produce.
    pub max_message_bytes: usize,
    /// `message.timestamp.type`.
    pub timestamp_type: TimestampType,
    /// `flush.messages`: fsync after this many appended batches; `None` leaves durability to
    /// replication and explicit flushes, as Kafka's default does.
    pub flush_interval_messages: Option<u64>,
    /// `producer.id.expiration.ms`.
    pub producer_id_expiration_ms: i64,
    /// Test-only broken behaviour: the last stable offset ignores open transactions (it is
    /// the high watermark), so READ_COMMITTED readers see undecided data. Never set outside the
    /// tests that prove the `read-committed` checker catches it.
    pub broken_lso_ignores_open_transactions: bool,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            segment_bytes: 1024 * 1024,
            max_message_bytes: 1_048_588,
            timestamp_type: TimestampType::CreateTime,
            flush_interval_messages: None,
            producer_id_expiration_ms: 86_400_000,
            broken_lso_ignores_open_transactions: false,
        }
    }
}

/// Upper bound of what a fetch may return (kafka-storage.md §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchIsolation {
    /// Followers and mirror appends read to the log end offset.
    LogEnd,
    /// READ_UNCOMMITTED consumers read to the high watermark.
    HighWatermark,
    /// READ_COMMITTED consumers read to the last stable offset.
    TxnCommitted,
}

/// An aborted transaction as a fetch response lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct AbortedTransaction {
    /// Producer id of the aborted transaction.
    pub producer_id: ProducerId,
    /// Offset of its first batch.
    pub first_offset: Offset,
}

/// What a read returns: whole batches plus the partition's offsets captured before the read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchDataInfo {
    /// Whole batches, the first one containing the fetch offset.
    pub batches: Vec<RecordBatch>,
    /// High watermark at the time of the read.
    pub high_watermark: Offset,
    /// Last stable offset at the time of the read.
    pub last_stable_offset: Offset,
    /// Log start offset at the time of the read.
    pub log_start_offset: Offset,
    /// Log end offset at the time of the read.
    pub log_end_offset: Offset,
    /// For READ_COMMITTED reads, the aborted transactions overlapping the returned range.
    pub aborted_transactions: Option<Vec<AbortedTransaction>>,
}

/// The outcome of a successful append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogAppendInfo {
    /// Offset of the first record appended (or of the duplicate's original first record).
    pub first_offset: Offset,
    /// Offset of the last record appended (or of the duplicate's original last record).
    pub last_offset: Offset,
    /// The broker's append time when the topic uses LogAppendTime.
    pub log_append_time_ms: Option<i64>,
    /// The log start offset after the append.
    pub log_start_offset: Offset,
    /// The batch was a retry of one already in the log; nothing was written.
    pub duplicate: bool,
    /// The append contained a MIRROR_PID_RESET, so producer state was wiped.
    pub producer_state_reset: bool,
}

/// Where recovery stopped trusting the disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryTruncation {
    /// The segment file that held the bad bytes.
    pub segment_file: String,
    /// Byte position in that file where the valid prefix ends.
    pub position: u64,
    /// Bytes discarded from that file.
    pub discarded_bytes: u64,
    /// Why the bytes at `position` were rejected.
    pub reason: String,
}

/// What [`PartitionLog::open`] found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Segments found on disk.
    pub segments_found: usize,
    /// Batches that passed validation and were kept.
    pub batches_recovered: usize,
    /// MIRROR_PID_RESET batches replayed into producer state.
    pub pid_resets_replayed: usize,
    /// The truncation, if any bytes were rejected.
    pub truncation: Option<RecoveryTruncation>,
    /// Segment files deleted because they followed the bad bytes.
    pub deleted_segments: Vec<String>,
}

struct ProducerStateReplay {
    producer_state: ProducerStateManager,
    aborted_txns: Vec<AbortedTxn>,
    resets: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Segment {
    base_offset: i64,
    size_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct StoredBatch {
    batch: RecordBatch,
    segment_base_offset: i64,
    position: u64,
}

/// One partition replica's log; see the module doc.
#[derive(Debug)]
pub struct PartitionLog<D: LogDisk> {
    config: LogConfig,
    disk: D,
    segments: Vec<Segment>,
    batches: Vec<StoredBatch>,
    log_start_offset: Offset,
    log_end_offset: Offset,
    high_watermark: Offset,
    epoch_cache: LeaderEpochCache,
    producer_state: ProducerStateManager,
    aborted_txns: Vec<AbortedTxn>,
    batches_since_flush: u64,
}

/// A batch's offsets in the log's vocabulary (the record codec keeps the wire's integers).
trait BatchOffsets {
    /// Offset of the batch's first record.
    fn base(&self) -> Offset;
    /// Offset of its last record.
    fn last(&self) -> Offset;
    /// The offset after it: where the next batch starts.
    fn end(&self) -> Offset;
}

impl BatchOffsets for RecordBatch {
    fn base(&self) -> Offset {
        Offset(self.base_offset())
    }

    fn last(&self) -> Offset {
        Offset(self.last_offset())
    }

    fn end(&self) -> Offset {
        Offset(self.next_offset())
    }
}

/// The file name of the segment starting at `base_offset`.
pub fn segment_file_name(base_offset: i64) -> String {
    format!("{base_offset:020}{SEGMENT_SUFFIX}")
}

fn parse_segment_file_name(name: &str) -> Option<i64> {
    let digits = name.strip_suffix(SEGMENT_SUFFIX)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

impl<D: LogDisk> PartitionLog<D> {
    /// Opens the log in `disk`, recovering whatever is there (an empty directory gives an empty
    /// log starting at offset 0).
    pub fn open(disk: D, config: LogConfig) -> Result<(Self, RecoveryReport), LogError> {
        let mut log = Self {
            config,
            disk,
            segments: Vec::new(),
            batches: Vec::new(),
            log_start_offset: Offset(0),
            log_end_offset: Offset(0),
            high_watermark: Offset(0),
            epoch_cache: LeaderEpochCache::new(),
            producer_state: ProducerStateManager::new(Offset(0)),
            aborted_txns: Vec::new(),
            batches_since_flush: 0,
        };
        let report = log.recover()?;
        Ok((log, report))
    }

    fn create_segment(&mut self, base_offset: i64) -> Result<(), LogError> {
        self.disk.create(&segment_file_name(base_offset))?;
        self.segments.push(Segment {
            base_offset,
            size_bytes: 0,
        });
        Ok(())
    }

    // ----- getters -----

    /// The topic settings this log runs with.
    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    /// The disk the log writes through.
    pub fn disk(&self) -> &D {
        &self.disk
    }

    /// Consumes the log, returning its disk (to simulate a restart).
    pub fn into_disk(self) -> D {
        self.disk
    }

    /// First offset readable.
    pub fn log_start_offset(&self) -> Offset {
        self.log_start_offset
    }

    /// Offset the next batch will get.
    pub fn log_end_offset(&self) -> Offset {
        self.log_end_offset
    }

    /// Offset below which records are committed (replicated to the ISR).
    pub fn high_watermark(&self) -> Offset {
        self.high_watermark
    }

    /// The first offset of the earliest open (or not yet replicated) transaction, clamped to
    /// the log start offset.
    pub fn first_unstable_offset(&self) -> Option<Offset> {
        self.producer_state
            .first_unstable_offset()
            .map(|offset| offset.max(self.log_start_offset))
    }

    /// Bound of READ_COMMITTED reads: the first unstable offset if it is below the high
    /// watermark, else the high watermark.
    pub fn last_stable_offset(&self) -> Offset {
        if self.config.broken_lso_ignores_open_transactions {
            return self.high_watermark;
        }
        match self.first_unstable_offset() {
            Some(offset) if offset < self.high_watermark => offset,
            _ => self.high_watermark,
        }
    }

    /// The leader-epoch cache.
    pub fn epoch_cache(&self) -> &LeaderEpochCache {
        &self.epoch_cache
    }

    /// The newest leader epoch in the cache.
    pub fn latest_epoch(&self) -> Option<LeaderEpoch> {
        self.epoch_cache.latest_epoch()
    }

    /// The producer state.
    pub fn producer_state(&self) -> &ProducerStateManager {
        &self.producer_state
    }

    /// The aborted-transaction index, in marker order.
    pub fn aborted_txns(&self) -> &[AbortedTxn] {
        &self.aborted_txns
    }

    /// All retained batches, oldest first.
    pub fn batches(&self) -> impl Iterator<Item = &RecordBatch> {
        self.batches.iter().map(|stored| &stored.batch)
    }

    /// Retained batches whose last offset is at or after `offset`, oldest first.
    pub fn batches_from(&self, offset: Offset) -> impl Iterator<Item = &RecordBatch> {
        let first = self
            .batches
            .partition_point(|stored| stored.batch.last() < offset);
        self.batches[first..].iter().map(|stored| &stored.batch)
    }

    /// Number of retained batches.
    pub fn batch_count(&self) -> usize {
        self.batches.len()
    }

    /// Number of segment files.
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// OffsetsForLeaderEpoch against this replica.
    pub fn end_offset_for_epoch(&self, leader_epoch: LeaderEpoch) -> EpochEndOffset {
        self.epoch_cache
            .end_offset_for(leader_epoch, self.log_end_offset)
    }

    // ----- appends -----

    /// A leader appends one batch (a client produce, a transaction marker or a
    /// MIRROR_PID_RESET). Offsets are assigned from the log end offset and the batch is stamped
    /// with `leader_epoch`. Client batches are validated as Kafka's `LogValidator` does, and a
    /// retry of one of a producer's last five batches returns the original offsets without
    /// writing anything.
    pub fn append_as_leader(
        &mut self,
        batch: &RecordBatch,
        leader_epoch: LeaderEpoch,
        origin: AppendOrigin,
        now_ms: i64,
    ) -> Result<LogAppendInfo, AppendError> {
        assert!(
            leader_epoch.is_some(),
            "leader append with epoch {leader_epoch}"
        );
        assert_ne!(origin, AppendOrigin::Replication, "use append_as_follower");
        if origin == AppendOrigin::Client {
            self.validate_client_batch(batch)?;
            if let Some(duplicate) = self.find_duplicate(batch) {
                return Ok(duplicate);
            }
        }
        let log_append_time_ms =
            (self.config.timestamp_type == TimestampType::LogAppendTime).then_some(now_ms);
        let stamped =
            batch.stamped_by_leader(self.log_end_offset.0, leader_epoch.0, log_append_time_ms);
        let mut validator = self.producer_state.begin_append(origin);
        validator.append_batch(&stamped)?;
        let update = validator.finish();
        let producer_state_reset = update.contains_reset();
        self.write_batches(std::slice::from_ref(&stamped))?;
        self.epoch_cache.assign(leader_epoch, stamped.base());
        let aborted = self.producer_state.apply(update, stamped.last());
        self.aborted_txns.extend(aborted);
        self.assert_offsets_ordered();
        Ok(LogAppendInfo {
            first_offset: stamped.base(),
            last_offset: stamped.last(),
            log_append_time_ms,
            log_start_offset: self.log_start_offset,
            duplicate: false,
            producer_state_reset,
        })
    }

    /// A follower (or a mirror fetcher on a destination leader) appends batches exactly as the
    /// leader (or source) wrote them. The first batch must start at the log end offset and the
    /// batches must be contiguous. Producer state is updated with the Replication rules.
    pub fn append_as_follower(
        &mut self,
        batches: &[RecordBatch],
    ) -> Result<LogAppendInfo, AppendError> {
        let Some(first) = batches.first() else {
            return Ok(LogAppendInfo {
                first_offset: self.log_end_offset,
                last_offset: self.log_end_offset - 1,
                log_append_time_ms: None,
                log_start_offset: self.log_start_offset,
                duplicate: false,
                producer_state_reset: false,
            });
        };
        if first.base() < self.log_end_offset {
            return Err(AppendError::UnexpectedAppendOffset {
                first_offset: first.base(),
                log_end_offset: self.log_end_offset,
            });
        }
        let mut expected_offset = self.log_end_offset;
        let mut validator = self.producer_state.begin_append(AppendOrigin::Replication);
        for batch in batches {
            if batch.base() != expected_offset || batch.last() < batch.base() {
                return Err(AppendError::NonContiguousOffsets {
                    expected_offset,
                    found_offset: batch.base(),
                });
            }
            batch
                .validate_records(0)
                .map_err(AppendError::CorruptMessage)?;
            validator.append_batch(batch)?;
            expected_offset = batch.end();
        }
        let update = validator.finish();
        let producer_state_reset = update.contains_reset();
        self.write_batches(batches)?;
        for batch in batches {
            if batch.partition_leader_epoch() >= 0 {
                self.epoch_cache
                    .assign(LeaderEpoch(batch.partition_leader_epoch()), batch.base());
            }
        }
        let last_offset = expected_offset - 1;
        let aborted = self.producer_state.apply(update, last_offset);
        self.aborted_txns.extend(aborted);
        self.assert_offsets_ordered();
        Ok(LogAppendInfo {
            first_offset: first.base(),
            last_offset,
            log_append_time_ms: None,
            log_start_offset: self.log_start_offset,
            duplicate: false,
            producer_state_reset,
        })
    }

    /// Test-only broken behaviour (`follower-ignores-pid-reset`): [`Self::append_as_follower`],
    /// except that the producer entries a MIRROR_PID_RESET in `batches` removed come back
    /// (unless a later batch of the append wrote them anew).
    pub fn append_as_follower_ignoring_pid_reset(
        &mut self,
        batches: &[RecordBatch],
    ) -> Result<LogAppendInfo, AppendError> {
        let before = self.producer_state.producers().clone();
        let info = self.append_as_follower(batches)?;
        if info.producer_state_reset {
            self.producer_state.restore_missing_producers(before);
        }
        Ok(info)
    }

    /// Kafka's client-produce rules (kafka-storage.md §1.6).
    fn validate_client_batch(&self, batch: &RecordBatch) -> Result<(), AppendError> {
        let header = batch.header();
        if batch.size_in_bytes() > self.config.max_message_bytes {
            return Err(AppendError::RecordTooLarge {
                size: batch.size_in_bytes(),
                max_message_bytes: self.config.max_message_bytes,
            });
        }
        if header.base_offset != 0 {
            return Err(AppendError::InvalidRecord(format!(
                "client batch has base offset {}, must be 0",
                header.base_offset
            )));
        }
        if header.is_control() {
            return Err(AppendError::InvalidRecord(
                "clients may not produce control batches".into(),
            ));
        }
        if header.records_count <= 0 || header.records_count != header.last_offset_delta + 1 {
            return Err(AppendError::InvalidRecord(format!(
                "record count {} does not match last offset delta {}",
                header.records_count, header.last_offset_delta
            )));
        }
        if header.has_producer_id() && header.base_sequence < 0 {
            return Err(AppendError::InvalidRecord(format!(
                "producer {} sent base sequence {}",
                header.producer_id, header.base_sequence
            )));
        }
        // The offset-delta check rides along with the structural validation so that every
        // client batch is decoded once; a corrupt record still wins over a misplaced one.
        let mut index = 0;
        let mut misplaced = None;
        batch
            .validate_records_with(0, |record| {
                if misplaced.is_none() && record.offset_delta != index {
                    misplaced = Some((index, record.offset_delta));
                }
                index += 1;
            })
            .map_err(AppendError::CorruptMessage)?;
        match misplaced {
            Some((index, offset_delta)) => Err(AppendError::InvalidRecord(format!(
                "record {index} has offset delta {offset_delta}"
            ))),
            None => Ok(()),
        }
    }

    fn find_duplicate(&self, batch: &RecordBatch) -> Option<LogAppendInfo> {
        let header = batch.header();
        if !header.has_producer_id() {
            return None;
        }
        let original = self.producer_state.find_duplicate(
            ProducerId(header.producer_id),
            ProducerEpoch(header.producer_epoch),
            header.base_sequence,
            header.last_sequence(),
        )?;
        Some(LogAppendInfo {
            first_offset: original.first_offset(),
            last_offset: original.last_offset,
            log_append_time_ms: (self.config.timestamp_type == TimestampType::LogAppendTime)
                .then_some(original.timestamp),
            log_start_offset: self.log_start_offset,
            duplicate: true,
            producer_state_reset: false,
        })
    }

    /// Writes batches to the active segment (rolling first when it would overflow) and adds
    /// them to the in-memory index. Disk errors leave memory unchanged for the failed batch.
    fn write_batches(&mut self, batches: &[RecordBatch]) -> Result<(), AppendError> {
        for batch in batches {
            assert_eq!(batch.base(), self.log_end_offset, "append out of order");
            self.maybe_roll(batch.size_in_bytes())?;
            let active = self
                .segments
                .last_mut()
                .expect("a log always has a segment");
            let name = segment_file_name(active.base_offset);
            self.disk.append(&name, batch.bytes())?;
            let position = active.size_bytes;
            active.size_bytes += batch.size_in_bytes() as u64;
            let segment_base_offset = active.base_offset;
            self.batches.push(StoredBatch {
                batch: batch.clone(),
                segment_base_offset,
                position,
            });
            self.log_end_offset = batch.end();
            self.batches_since_flush += 1;
        }
        if let Some(interval) = self.config.flush_interval_messages {
            if self.batches_since_flush >= interval {
                self.flush().map_err(|error| match error {
                    LogError::Disk(error) => AppendError::Disk(error),
                    other => unreachable!("flush only fails on disk errors: {other}"),
                })?;
            }
        }
        Ok(())
    }

    fn maybe_roll(&mut self, incoming_bytes: usize) -> Result<(), AppendError> {
        let active = self.segments.last().expect("a log always has a segment");
        if active.size_bytes == 0
            || active.size_bytes as usize + incoming_bytes <= self.config.segment_bytes
        {
            return Ok(());
        }
        // Kafka flushes the segment it rolls away from; the new one starts at the log end.
        let previous = segment_file_name(active.base_offset);
        self.disk.flush(&previous)?;
        self.disk
            .create(&segment_file_name(self.log_end_offset.0))?;
        self.segments.push(Segment {
            base_offset: self.log_end_offset.0,
            size_bytes: 0,
        });
        Ok(())
    }

    /// Makes every segment durable (fsync), then checkpoints the high watermark (which is at
    /// most the now-durable log end, so recovery never starts above its data).
    pub fn flush(&mut self) -> Result<(), LogError> {
        for segment in &self.segments {
            self.disk.flush(&segment_file_name(segment.base_offset))?;
        }
        self.batches_since_flush = 0;
        self.checkpoint_high_watermark()
    }

    /// Writes the high-watermark checkpoint that recovery starts from.
    pub fn checkpoint_high_watermark(&mut self) -> Result<(), LogError> {
        self.write_checkpoint(HIGH_WATERMARK_CHECKPOINT, self.high_watermark.0)
    }

    // ----- epochs -----

    /// A replica becoming leader (or a destination partition bumping its epoch) records that
    /// `leader_epoch` starts at the current log end offset.
    pub fn assign_epoch_start_offset(&mut self, leader_epoch: LeaderEpoch) {
        self.epoch_cache.assign(leader_epoch, self.log_end_offset);
    }

    // ----- high watermark and log start -----

    /// Leader: raises the high watermark to `new_high_watermark` if it is higher. Returns
    /// whether it moved. A value above the log end offset is a programming error.
    pub fn maybe_increment_high_watermark(&mut self, new_high_watermark: Offset) -> bool {
        assert!(
            new_high_watermark <= self.log_end_offset,
            "high watermark {new_high_watermark} above log end offset {}",
            self.log_end_offset
        );
        if new_high_watermark <= self.high_watermark {
            return false;
        }
        self.set_high_watermark(new_high_watermark);
        true
    }

    /// Follower: adopts the leader's high watermark clamped to `[log start, log end]`; this may
    /// lower it (after a truncation). Returns the new value.
    pub fn update_high_watermark(&mut self, leader_high_watermark: Offset) -> Offset {
        let clamped = leader_high_watermark.clamp(self.log_start_offset, self.log_end_offset);
        self.set_high_watermark(clamped);
        clamped
    }

    fn set_high_watermark(&mut self, high_watermark: Offset) {
        self.high_watermark = high_watermark;
        self.producer_state
            .on_high_watermark_updated(high_watermark);
        self.assert_offsets_ordered();
    }

    /// DeleteRecords or retention: moves the log start offset up to `new_start` (at most the
    /// high watermark), drops segments entirely below it and checkpoints it.
    pub fn maybe_increment_log_start_offset(
        &mut self,
        new_start: Offset,
    ) -> Result<bool, LogError> {
        if new_start > self.high_watermark {
            return Err(LogError::LogStartAboveHighWatermark {
                requested: new_start,
                high_watermark: self.high_watermark,
            });
        }
        if new_start <= self.log_start_offset {
            return Ok(false);
        }
        self.log_start_offset = new_start;
        self.epoch_cache.truncate_from_start(new_start);
        self.producer_state
            .on_log_start_offset_incremented(new_start);
        self.aborted_txns.retain(|txn| txn.last_offset >= new_start);
        self.write_checkpoint(LOG_START_CHECKPOINT, new_start.0)?;
        self.delete_segments_below_log_start()?;
        self.assert_offsets_ordered();
        Ok(true)
    }

    fn delete_segments_below_log_start(&mut self) -> Result<(), LogError> {
        // A segment can go once the next segment starts at or below the log start offset.
        while self.segments.len() > 1 && self.segments[1].base_offset <= self.log_start_offset.0 {
            let removed = self.segments.remove(0);
            self.disk.delete(&segment_file_name(removed.base_offset))?;
            self.batches
                .retain(|stored| stored.segment_base_offset != removed.base_offset);
        }
        Ok(())
    }

    /// Removes expired producers (`producer.id.expiration.ms`); returns how many.
    pub fn remove_expired_producers(&mut self, now_ms: i64) -> usize {
        let expiration_ms = self.config.producer_id_expiration_ms;
        self.producer_state
            .remove_expired_producers(now_ms, expiration_ms)
    }

    // ----- truncation -----

    // ----- reads -----

    /// Reads whole batches from `fetch_offset` up to the bound of `isolation`, at most
    /// `max_bytes` unless `min_one_message` lets the first batch exceed it (KIP-74).
    pub fn read(
        &self,
        fetch_offset: Offset,
        max_bytes: usize,
        isolation: FetchIsolation,
        min_one_message: bool,
    ) -> Result<FetchDataInfo, OffsetOutOfRange> {
        if fetch_offset < self.log_start_offset || fetch_offset > self.log_end_offset {
            return Err(OffsetOutOfRange {
                fetch_offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: self.log_end_offset,
            });
        }
        let upper_bound = match isolation {
            FetchIsolation::LogEnd => self.log_end_offset,
            FetchIsolation::HighWatermark => self.high_watermark,
            FetchIsolation::TxnCommitted => self.last_stable_offset(),
        };
        let first = self
            .batches
            .partition_point(|stored| stored.batch.last() < fetch_offset);
        let mut batches = Vec::new();
        let mut bytes = 0usize;
        let mut index = first;
        while let Some(stored) = self.batches.get(index) {
            let batch = &stored.batch;
            if fetch_offset >= upper_bound || batch.last() >= upper_bound {
                break;
            }
            let fits = bytes + batch.size_in_bytes() <= max_bytes;
            let first_despite_size = batches.is_empty() && min_one_message;
            if !fits && !first_despite_size {
                break;
            }
            bytes += batch.size_in_bytes();
            batches.push(batch.clone());
            index += 1;
        }
        let aborted_transactions = (isolation == FetchIsolation::TxnCommitted).then(|| {
            if batches.is_empty() {
                return Vec::new();
            }
            let range_end = self
                .batches
                .get(index)
                .map_or(self.log_end_offset, |stored| stored.batch.base());
            self.collect_aborted_txns(fetch_offset, range_end)
        });
        Ok(FetchDataInfo {
            batches,
            high_watermark: self.high_watermark,
            last_stable_offset: self.last_stable_offset(),
            log_start_offset: self.log_start_offset,
            log_end_offset: self.log_end_offset,
            aborted_transactions,
        })
    }

    /// Aborted transactions that overlap `[fetch_offset, upper_bound)`.
    fn collect_aborted_txns(
        &self,
        fetch_offset: Offset,
        upper_bound: Offset,
    ) -> Vec<AbortedTransaction> {
        self.aborted_txns
            .iter()
            .filter(|txn| txn.last_offset >= fetch_offset && txn.first_offset < upper_bound)
            .map(|txn| AbortedTransaction {
                producer_id: txn.producer_id,
                first_offset: txn.first_offset,
            })
            .collect()
    }

    /// The concatenated bytes of every retained batch, as the segment files hold them.
    pub fn to_segment_bytes(&self) -> Bytes {
        let mut out = Vec::new();
        for stored in &self.batches {
            out.extend_from_slice(stored.batch.bytes());
        }
        Bytes::from(out)
    }

    fn assert_offsets_ordered(&self) {
        let last_stable_offset = self.last_stable_offset();
        assert!(
            self.log_start_offset <= last_stable_offset,
            "log start {} above LSO {last_stable_offset}",
            self.log_start_offset
        );
        assert!(
            last_stable_offset <= self.high_watermark,
            "LSO {last_stable_offset} above high watermark {}",
            self.high_watermark
        );
        assert!(
            self.high_watermark <= self.log_end_offset,
            "high watermark {} above log end {}",
            self.high_watermark,
            self.log_end_offset
        );
    }
}
