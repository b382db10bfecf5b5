//! Truncation (to an offset, or of everything to start again at an offset) and the rebuilds it
//! needs: the producer state and the leader-epoch cache from the batches that remain.

use super::*;
use crate::record::ControlRecord;
use std::collections::BTreeMap;

impl<D: LogDisk> PartitionLog<D> {
    /// Truncates the log so that `target_offset` becomes the log end offset. Truncation works
    /// on whole batches: a target inside a batch removes that whole batch. Returns the new log
    /// end offset. A target at or beyond the log end changes no data but still drops an epoch
    /// assigned at the log end that never got data, as Kafka does.
    pub fn truncate_to(&mut self, target_offset: Offset) -> Result<Offset, LogError> {
        if target_offset >= self.log_end_offset {
            self.epoch_cache.truncate_from_end(self.log_end_offset);
            return Ok(self.log_end_offset);
        }
        let first_segment_base = Offset(self.segments[0].base_offset);
        if target_offset <= first_segment_base {
            self.truncate_fully_and_start_at(target_offset)?;
            return Ok(target_offset);
        }
        let keep = self
            .batches
            .partition_point(|stored| stored.batch.last() < target_offset);
        let new_end = self
            .batches
            .get(keep)
            .map_or(self.log_end_offset, |stored| stored.batch.base());
        // Whole batches go: the batch holding the target starts at or below it.
        assert!(
            new_end <= target_offset && new_end <= self.log_end_offset,
            "truncation to {target_offset} would end the log at {new_end} (log end {})",
            self.log_end_offset
        );
        self.cut_segments_at(keep)?;
        self.batches.truncate(keep);
        self.log_end_offset = new_end;
        self.epoch_cache.truncate_from_end(new_end);
        self.log_start_offset = self.log_start_offset.min(new_end);
        self.rebuild_producer_state();
        self.high_watermark = self.high_watermark.min(new_end);
        self.producer_state
            .on_high_watermark_updated(self.high_watermark);
        self.assert_offsets_ordered();
        Ok(new_end)
    }

    /// Cuts the segment holding batch `keep` at that batch and deletes later segments.
    pub(super) fn cut_segments_at(&mut self, keep: usize) -> Result<(), LogError> {
        let Some(first_removed) = self.batches.get(keep).cloned() else {
            return Ok(());
        };
        while self
            .segments
            .last()
            .is_some_and(|segment| segment.base_offset > first_removed.segment_base_offset)
        {
            let removed = self.segments.pop().expect("checked above");
            self.disk.delete(&segment_file_name(removed.base_offset))?;
        }
        let active = self.segments.last_mut().expect("the cut segment remains");
        assert_eq!(active.base_offset, first_removed.segment_base_offset);
        self.disk.truncate(
            &segment_file_name(active.base_offset),
            first_removed.position,
        )?;
        active.size_bytes = first_removed.position;
        Ok(())
    }

    /// Deletes everything and restarts the log empty at `new_offset` (log start, high
    /// watermark and log end all become `new_offset`).
    pub fn truncate_fully_and_start_at(&mut self, new_offset: Offset) -> Result<(), LogError> {
        assert!(
            new_offset.is_some(),
            "log restarted at negative offset {new_offset}"
        );
        for segment in std::mem::take(&mut self.segments) {
            self.disk.delete(&segment_file_name(segment.base_offset))?;
        }
        self.batches.clear();
        self.create_segment(new_offset.0)?;
        self.epoch_cache.clear();
        self.producer_state = ProducerStateManager::new(new_offset);
        self.aborted_txns.clear();
        self.log_start_offset = new_offset;
        self.log_end_offset = new_offset;
        self.high_watermark = new_offset;
        self.write_checkpoint(LOG_START_CHECKPOINT, new_offset.0)?;
        self.assert_offsets_ordered();
        Ok(())
    }

    /// Rebuilds producer state and the aborted-transaction index by replaying every retained
    /// batch from the log start with Replication rules. Returns the number of MIRROR_PID_RESET
    /// batches replayed. Stored batches passed validation when they were appended, so a
    /// failure here means the log itself is inconsistent: a broken invariant.
    pub(super) fn rebuild_producer_state(&mut self) -> usize {
        match self.replay_producer_state() {
            Ok(replay) => self.install_replay(replay),
            Err((index, error)) => panic!(
                "stored batch at offset {} fails producer-state replay: {error}",
                self.batches[index].batch.base_offset()
            ),
        }
    }

    /// The producer state a from-scratch rebuild gives: every retained batch replayed from
    /// the log start, as recovery and truncation do. The live state is left alone.
    pub fn rebuilt_producer_state(&self) -> Result<ProducerStateManager, ProducerStateError> {
        self.replay_producer_state()
            .map(|replay| replay.producer_state)
            .map_err(|(_, error)| error)
    }

    pub(super) fn install_replay(&mut self, replay: ProducerStateReplay) -> usize {
        self.producer_state = replay.producer_state;
        self.aborted_txns = replay.aborted_txns;
        replay.resets
    }

    /// Replays every retained batch into a fresh producer state; on failure returns the index
    /// of the first batch that does not replay and why.
    pub(super) fn replay_producer_state(
        &self,
    ) -> Result<ProducerStateReplay, (usize, ProducerStateError)> {
        let mut producer_state = ProducerStateManager::new(self.log_start_offset);
        let mut aborted_txns = Vec::new();
        let mut resets = 0;
        for (index, stored) in self.batches.iter().enumerate() {
            let batch = &stored.batch;
            if batch.last() < self.log_start_offset {
                continue;
            }
            let mut validator = producer_state.begin_append(AppendOrigin::Replication);
            validator
                .append_batch(batch)
                .map_err(|error| (index, error))?;
            let update = validator.finish();
            if update.contains_reset() {
                resets += 1;
            }
            aborted_txns.extend(producer_state.apply(update, batch.last()));
        }
        producer_state.on_log_start_offset_incremented(self.log_start_offset);
        Ok(ProducerStateReplay {
            producer_state,
            aborted_txns,
            resets,
        })
    }

    pub(super) fn rebuild_epoch_cache_from_batches(&mut self) {
        let mut cache = LeaderEpochCache::new();
        for stored in &self.batches {
            let epoch = stored.batch.partition_leader_epoch();
            if epoch >= 0 && cache.latest_epoch().is_none_or(|latest| epoch > latest.0) {
                cache.assign(LeaderEpoch(epoch), Offset(stored.batch.base_offset()));
            }
        }
        cache.truncate_from_end(self.log_end_offset);
        cache.truncate_from_start(self.log_start_offset);
        self.epoch_cache = cache;
    }
}

impl<D: LogDisk> PartitionLog<D> {
    /// The transaction markers a cut at `offset` would separate from their transactions'
    /// records: COMMIT and ABORT markers at or above `offset` that end a transaction with
    /// records below it, oldest first.
    ///
    /// Why it matters: the last stable offset is the first offset of the earliest *open*
    /// transaction, and transactions of different producers interleave. With T1's records at
    /// 61, T2's at 62, T1's COMMIT at 63 and T2 still open, the LSO is 62: T1 is complete and
    /// readable, but a cut at 62 keeps its records and drops its marker, so T1 is open again,
    /// and once a MIRROR_PID_RESET forgets its producer, readable as committed whatever its
    /// marker said (transactions_at_failover seed 5089288179472432, where T1's records were
    /// on two partitions). A MIRROR_PID_RESET in between ends every transaction before it, as
    /// on append.
    pub fn markers_crossing(&self, offset: Offset) -> Vec<RecordBatch> {
        // The first offset of each producer's open transaction, as the scan goes.
        let mut open: BTreeMap<i64, Offset> = BTreeMap::new();
        let mut crossing = Vec::new();
        for stored in &self.batches {
            let batch = &stored.batch;
            let producer_id = batch.header().producer_id;
            match batch.control_record() {
                None if batch.is_transactional() => {
                    open.entry(producer_id).or_insert(stored.batch.base());
                }
                None => {}
                Some(Ok(ControlRecord::EndTransaction { .. })) => {
                    let first = open.remove(&producer_id);
                    if first.is_some_and(|first| first < offset) && stored.batch.base() >= offset {
                        crossing.push(batch.clone());
                    }
                }
                Some(Ok(ControlRecord::MirrorPidReset { .. })) => open.clear(),
                Some(_) => {}
            }
        }
        crossing
    }
}
