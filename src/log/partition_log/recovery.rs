//! Opening a log after a crash: segments scanned and cut at the first damaged batch, the
//! checkpoints read, the producer state rebuilt from the snapshot and the batches above it.

use super::*;

/// Why recovery rejects a batch that decoded with a valid CRC, if it does.
pub(super) fn recovery_rejection(
    batch: &RecordBatch,
    position: u64,
    segment_base_offset: i64,
    expected_offset: Option<Offset>,
) -> Option<String> {
    if let Err(error) = batch.validate_records(position) {
        return Some(error.to_string());
    }
    if batch.last_offset() < batch.base_offset() {
        return Some(format!(
            "batch at byte {position} has negative last offset delta"
        ));
    }
    match expected_offset {
        Some(expected) if batch.base() != expected => Some(format!(
            "batch at byte {position} starts at offset {}, expected {expected}",
            batch.base_offset()
        )),
        // Segments are rolled at the log end offset and never compacted, so a segment's first
        // batch starts exactly at its base offset; anything else is a corrupt base offset (a
        // field the CRC does not cover).
        None if batch.base_offset() != segment_base_offset => Some(format!(
            "batch at byte {position} starts at offset {}, its segment's base is {segment_base_offset}",
            batch.base_offset()
        )),
        _ => None,
    }
}

impl<D: LogDisk> PartitionLog<D> {
    pub(super) fn recover(&mut self) -> Result<RecoveryReport, LogError> {
        let mut report = RecoveryReport::default();
        let mut segment_names: Vec<(i64, String)> = self
            .disk
            .list_files()
            .into_iter()
            .filter_map(|name| parse_segment_file_name(&name).map(|base| (base, name)))
            .collect();
        segment_names.sort();
        report.segments_found = segment_names.len();
        let checkpointed_start = self.read_checkpoint(LOG_START_CHECKPOINT);
        let mut expected_offset: Option<i64> = None;
        let mut stop_index = segment_names.len();
        for (index, (base_offset, name)) in segment_names.iter().enumerate() {
            if expected_offset.is_some_and(|expected| expected != *base_offset) {
                // A segment that does not continue its predecessor cannot be trusted: it goes
                // with every later one.
                stop_index = index;
                report.truncation = Some(RecoveryTruncation {
                    segment_file: name.clone(),
                    position: 0,
                    discarded_bytes: self.disk.read_file(name)?.len() as u64,
                    reason: format!(
                        "segment starts at offset {base_offset}, expected {}",
                        expected_offset.unwrap_or_default()
                    ),
                });
                break;
            }
            let complete = self.recover_segment(*base_offset, name, &mut report)?;
            expected_offset = Some(self.log_end_offset.0);
            if !complete {
                stop_index = index + 1;
                break;
            }
        }
        for (_, name) in &segment_names[stop_index..] {
            self.disk.delete(name)?;
            report.deleted_segments.push(name.clone());
        }
        if self.segments.is_empty() {
            let start = checkpointed_start.unwrap_or(0).max(0);
            self.create_segment(start)?;
            self.log_start_offset = Offset(start);
            self.log_end_offset = Offset(start);
        }
        let first_base = self.segments[0].base_offset;
        let start = checkpointed_start.unwrap_or(first_base).max(first_base);
        if start > self.log_end_offset.0 {
            // The checkpointed start lies beyond the data that survived: nothing below it may be
            // served, so the log restarts empty there.
            self.truncate_fully_and_start_at(Offset(start))?;
        } else {
            self.log_start_offset = Offset(start);
        }
        // Until the checkpoint is read, the high watermark sits at the log start so that the
        // offset-order assertions hold during a truncation below.
        self.high_watermark = self.log_start_offset;
        report.pid_resets_replayed = self.recover_producer_state(&mut report)?;
        report.batches_recovered = self.batches.len();
        self.rebuild_epoch_cache_from_batches();
        let high_watermark = self
            .read_checkpoint(HIGH_WATERMARK_CHECKPOINT)
            .map_or(self.log_start_offset, Offset);
        self.high_watermark = high_watermark.clamp(self.log_start_offset, self.log_end_offset);
        self.producer_state
            .on_high_watermark_updated(self.high_watermark);
        self.assert_offsets_ordered();
        Ok(report)
    }

    /// Replays producer state over the recovered batches. A batch that decodes but breaks the
    /// producer-state rules cannot have been written by a correct broker, so recovery treats it
    /// like corruption: the log is truncated before it.
    pub(super) fn recover_producer_state(
        &mut self,
        report: &mut RecoveryReport,
    ) -> Result<usize, LogError> {
        match self.replay_producer_state() {
            Ok(replay) => Ok(self.install_replay(replay)),
            Err((index, error)) => {
                let bad = self.batches[index].clone();
                let segment_file = segment_file_name(bad.segment_base_offset);
                let discarded_bytes: u64 = self.batches[index..]
                    .iter()
                    .map(|stored| stored.batch.size_in_bytes() as u64)
                    .sum();
                self.truncate_to(bad.batch.base())?;
                report.truncation = Some(RecoveryTruncation {
                    segment_file,
                    position: bad.position,
                    discarded_bytes,
                    reason: format!("producer state rejects the batch: {error}"),
                });
                Ok(self.rebuild_producer_state())
            }
        }
    }

    /// Loads one segment; returns false if it had to be truncated (later segments are dropped).
    pub(super) fn recover_segment(
        &mut self,
        base_offset: i64,
        name: &str,
        report: &mut RecoveryReport,
    ) -> Result<bool, LogError> {
        let bytes = self.disk.read_file(name)?;
        let total = bytes.len() as u64;
        let mut expected = if self.segments.is_empty() {
            None
        } else {
            Some(self.log_end_offset)
        };
        let mut failure: Option<(u64, String)> = None;
        let mut kept: Vec<StoredBatch> = Vec::new();
        for item in BatchReader::new(bytes, 0) {
            let (position, batch) = match item {
                Ok(found) => found,
                Err(error) => {
                    failure = Some((error.position, error.to_string()));
                    break;
                }
            };
            if let Some(reason) = recovery_rejection(&batch, position, base_offset, expected) {
                failure = Some((position, reason));
                break;
            }
            expected = Some(batch.end());
            kept.push(StoredBatch {
                batch,
                segment_base_offset: base_offset,
                position,
            });
        }
        let valid_bytes = kept
            .last()
            .map_or(0, |b| b.position + b.batch.size_in_bytes() as u64);
        if self.segments.is_empty() {
            self.log_start_offset = Offset(base_offset);
            self.log_end_offset = Offset(base_offset);
        }
        self.log_end_offset = kept
            .last()
            .map_or(self.log_end_offset.max(Offset(base_offset)), |b| {
                b.batch.end()
            });
        self.segments.push(Segment {
            base_offset,
            size_bytes: valid_bytes,
        });
        self.batches.extend(kept);
        match failure {
            None => Ok(true),
            Some((position, reason)) => {
                // Errors name the first bad byte; the cut is at the end of the last good batch.
                self.disk.truncate(name, valid_bytes)?;
                report.truncation = Some(RecoveryTruncation {
                    segment_file: name.to_string(),
                    position: valid_bytes,
                    discarded_bytes: total - valid_bytes,
                    reason: format!("{reason} (bad bytes found at {position})"),
                });
                Ok(false)
            }
        }
    }

    pub(super) fn read_checkpoint(&self, name: &str) -> Option<i64> {
        let bytes = self.disk.read_file(name).ok()?;
        std::str::from_utf8(&bytes).ok()?.trim().parse().ok()
    }

    pub(super) fn write_checkpoint(&mut self, name: &str, value: i64) -> Result<(), LogError> {
        self.disk
            .write_atomically(name, format!("{value}\n").as_bytes())?;
        Ok(())
    }
}
