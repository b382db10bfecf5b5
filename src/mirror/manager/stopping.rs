//! STOPPING: the seed's steps in order (remove the fetcher, bump the leader epoch, cut to
//! the last stable offset, persist the last mirrored epoch, write MIRROR_PID_RESET, persist
//! STOPPED), and the stop of a log holding this cluster's own writes only.
//!
//! Every step taken is recorded as a [`StopStep`] in the task's journal
//! ([`MirrorManager::stop_journal`]), so a test can hold a path's exact sequence. The paths:
//! - seed: `RemoveFetcher`, `RequestBump`, `Bumped`, `TruncateToLso`, a `RestoreMarker` per
//!   COMMIT or ABORT marker the cut separated from its transaction's records (interleaved
//!   transactions; none under `truncate-at-lso`), `PersistLastMirrored`, `AppendPidReset`,
//!   `AwaitCommitted`, `PersistStopped`;
//! - a log of this cluster's own writes only: the same, with `AwaitOpenTransactions` before
//!   the cut when a transaction is open (the cut then removes nothing unless the wait runs
//!   out), and `SkipPidReset(OwnWritesOnly)`;
//! - `abort-markers`: `PersistLastMirrored` right after `RemoveFetcher`, then the bump, an
//!   `AbortMarker` per open transaction and the reset (`reset-before-txn-resolution`: the reset
//!   first);
//! - `no-epoch-bump`: no `RequestBump`; `Bumped` names the current leader epoch;
//! - `no-pid-reset` / `pid-rewrite`: `SkipPidReset(Design)`;
//! - a re-run (a new leader, or a failed write retried): it starts again at `RemoveFetcher`,
//!   with `kept` when the last mirrored position came from the earlier run, and
//!   `SkipPidReset(AlreadyWritten)` when the log already ends with this stop's reset.
//!
//! A step that must wait (replication up to the bump, a retry after a failed request) records
//! nothing until it completes.

use super::*;
use crate::common::ProducerId;
use crate::protocol::{ControllerRequest, LeaderEpoch, Offset};
use crate::record::ControlRecord;

/// One step STOPPING took; see the module doc for the sequence of each path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopStep {
    /// Step 1: the fetcher is removed; the last mirrored (epoch, offset) is captured now, or
    /// `kept` from an earlier run of this stop (persisted, or read back from the coordinator).
    RemoveFetcher {
        /// The last mirrored (epoch, offset) this stop records.
        last_mirrored: (LeaderEpoch, Offset),
        /// It came from an earlier run.
        kept: bool,
    },
    /// Step 2: BumpLeaderEpochs asked for a leader epoch above `minimum`, same leader.
    RequestBump {
        /// Every epoch in the log and the current leader epoch.
        minimum: LeaderEpoch,
    },
    /// The bump is visible in metadata: this broker leads in `leader_epoch` (under
    /// `no-epoch-bump`, the current epoch).
    Bumped {
        /// The leader epoch the rest of the stop writes in.
        leader_epoch: LeaderEpoch,
    },
    /// A stop of own writes waits (up to `MIRROR_OWN_STOP_TXN_WAIT_MS`) for its open
    /// transactions to end instead of cutting them.
    AwaitOpenTransactions,
    /// Step 3: the log is cut from `from` to the last stable offset `to` (equal: nothing above
    /// the LSO).
    TruncateToLso {
        /// The log end before the cut.
        from: Offset,
        /// The last stable offset.
        to: Offset,
    },
    /// Step 3, second half: a marker the cut removed, of a transaction with records below the
    /// cut, appended again at `offset`.
    RestoreMarker {
        /// The marker's producer.
        producer_id: ProducerId,
        /// Where it now stands.
        offset: Offset,
    },
    /// Step 4: the last mirrored (epoch, offset) is written to the mirror coordinator.
    PersistLastMirrored {
        /// What is written.
        last_mirrored: Option<(LeaderEpoch, Offset)>,
    },
    /// `abort-markers`: an ABORT marker for the open transaction of `producer_id`.
    AbortMarker {
        /// The producer whose transaction is aborted.
        producer_id: ProducerId,
    },
    /// Step 5: MIRROR_PID_RESET appended at `offset`.
    AppendPidReset {
        /// The reset's offset.
        offset: Offset,
    },
    /// Step 5 left out, and why.
    SkipPidReset(ResetSkipped),
    /// STOPPED waits until everything up to `offset` is committed.
    AwaitCommitted {
        /// The last offset the stop wrote or kept.
        offset: Offset,
    },
    /// Step 6: STOPPED is written to the mirror coordinator.
    PersistStopped,
}

/// Why a stop wrote no MIRROR_PID_RESET.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetSkipped {
    /// The design writes none (`no-pid-reset`, `pid-rewrite`).
    Design,
    /// The log already ends with this stop's reset (a re-run).
    AlreadyWritten,
    /// The log holds this cluster's own writes only (spec §5.4's premise is false there).
    OwnWritesOnly,
}

impl MirrorManager {
    // ----- STOPPING -----

    /// Records a step of `topic_partition`'s stop in its journal.
    pub(super) fn note_stop_step(&mut self, topic_partition: &TopicPartition, step: StopStep) {
        if let Some(task) = self.tasks.get_mut(topic_partition) {
            // A step is recorded once, when it completes: a wait in between records nothing,
            // and a re-run starts again at `RemoveFetcher`.
            assert_ne!(
                task.stop_journal.last(),
                Some(&step),
                "{topic_partition}: STOPPING step recorded twice in a row"
            );
            task.stop_journal.push(step);
        }
    }

    pub(super) fn stopping_start(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
    ) {
        // Step 1, remove the fetcher: the task no longer fetches, and an answer in flight is
        // dropped (see apply_mirror_fetch). Capture what was mirrored before anything local
        // is written; a re-run after a failover keeps the value persisted the first time.
        let Some(partition) = host.partitions().get(topic_partition) else {
            return;
        };
        let latest_epoch = partition.log.latest_epoch().unwrap_or(LeaderEpoch(-1));
        let log_end = partition.log.log_end_offset();
        let skip_bump = self.design == MirrorDesign::NoEpochBump;
        let task = self.task_mut(topic_partition);
        let kept = task.last_mirrored.is_some();
        let last_mirrored = *task.last_mirrored.get_or_insert((latest_epoch, log_end));
        self.note_stop_step(
            topic_partition,
            StopStep::RemoveFetcher {
                last_mirrored,
                kept,
            },
        );
        if skip_bump {
            // The `no-epoch-bump` design: go on in the current leader epoch.
            let task = self.task_mut(topic_partition);
            task.step = Step::AwaitEpochBump {
                min: LeaderEpoch(-1),
            };
            task.not_before_ms = now_ms;
            return;
        }
        if self.design.stops_with_abort_markers() {
            // The later revision persists the last mirrored epoch first, before the bump
            // adds an epoch to the log; its answer goes on to the bump.
            self.stopping_persist_last_mirrored(host, now_ms, topic_partition);
            return;
        }
        self.stopping_request_bump(host, now_ms, topic_partition);
    }

    /// Step 2: bump the leader epoch.
    pub(super) fn stopping_request_bump(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
    ) {
        let Some(partition) = host.partitions().get(topic_partition) else {
            return;
        };
        let latest_epoch = partition.log.latest_epoch().unwrap_or(LeaderEpoch(-1));
        let (broker_id, broker_epoch) = (host.broker_id(), host.broker_epoch().unwrap_or(-1));
        let task = self.task_mut(topic_partition);
        // Step 2, bump the leader epoch above every epoch in the log, and above the current
        // leader epoch too: that epoch may already label local writes that a full truncation
        // (a re-mirror from scratch, LME −1) removed from this log but not from a replica
        // outside the ISR; writing new local batches in it again would give one epoch two
        // lineages, and that replica's divergence could never be detected (found by the
        // `delete_mirror` scenario, seed 2).
        let minimum = latest_epoch.max(task.leader_epoch);
        let request = Request::Controller(ControllerRequest::BumpLeaderEpochs {
            broker_id,
            broker_epoch,
            partitions: vec![(task.id.topic_id, task.id.partition, minimum)],
        });
        task.step = Step::Waiting;
        self.note_stop_step(topic_partition, StopStep::RequestBump { minimum });
        let controller = host.controller();
        self.send_mirror_request(
            host,
            now_ms,
            controller,
            request,
            SentRequest::Bump(topic_partition.clone()),
        );
    }

    pub(super) fn apply_bump(
        &mut self,
        now_ms: i64,
        topic_partition: &TopicPartition,
        result: Result<(ErrorCode, LeaderEpoch), ErrorCode>,
    ) {
        match result {
            Ok((ErrorCode::None, bumped_epoch)) => {
                // Go on once metadata shows this broker leading in the bumped epoch.
                let task = self.task_mut(topic_partition);
                task.step = Step::AwaitEpochBump {
                    min: LeaderEpoch(bumped_epoch.0 - 1),
                };
                task.not_before_ms = now_ms;
            }
            _ => self.retry_step_later(now_ms, topic_partition, Step::Act),
        }
    }

    /// Steps 3 and 4: truncate to the LSO, persist the last mirrored epoch.
    pub(super) fn stopping_after_bump(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
    ) {
        let Some(partition) = host.lend().partitions.get_mut(topic_partition) else {
            return;
        };
        // The last stable offset is bounded by the high watermark, and a leader's high
        // watermark lags until its ISR has fetched everything of its leadership: truncating to
        // the LSO before that would drop records the ISR had committed (and that a downstream
        // mirror or a consumer already read; `chain` seed 10022, right after a leader change).
        // After the bump the leadership starts at the log end, so this waits until the whole
        // log is replicated; then only open transactions lie above the LSO.
        let caught_up = partition
            .leader_state()
            .is_some_and(|state| partition.log.high_watermark() >= state.leader_epoch_start_offset);
        // A stop of the cluster's own writes cuts nothing: its open transactions are local
        // ones whose markers this partition admits, so it waits for them to end (within the
        // transaction timeout, the coordinator aborts what its producer abandoned).
        // The wait is bounded: a log can hold open transactions that are not local after all
        // (a power loss took an earlier stop's cut and reset, `stopped_single_replica_lost_reset`),
        // and no local marker closes those; past the bound they are cut as before.
        let task = &self.tasks[topic_partition];
        let waited_out = task
            .own_stop_wait_until_ms
            .is_some_and(|until| now_ms >= until);
        let open_own_transactions = task.stop_own_writes_only
            && !waited_out
            && partition.log.last_stable_offset() < partition.log.log_end_offset();
        if open_own_transactions {
            let task = self.task_mut(topic_partition);
            if task.own_stop_wait_until_ms.is_none() {
                task.own_stop_wait_until_ms = Some(now_ms + MIRROR_OWN_STOP_TXN_WAIT_MS);
                self.note_stop_step(topic_partition, StopStep::AwaitOpenTransactions);
            }
        }
        if !caught_up || open_own_transactions {
            let task = self.task_mut(topic_partition);
            task.not_before_ms = now_ms + MIRROR_RETRY_BACKOFF_MS;
            return;
        }
        if self.design.stops_with_abort_markers() {
            self.stopping_abort_open_transactions(host, now_ms, topic_partition);
            return;
        }
        let Some(partition) = host.lend().partitions.get_mut(topic_partition) else {
            return;
        };
        let log_end = partition.log.log_end_offset();
        let stable = partition.log.last_stable_offset();
        let stable = if self.broken.contains(&BrokenSwitch::MirrorStopCutBelowLso) {
            Offset((stable.0 - 1).max(partition.log.log_start_offset().0))
        } else {
            stable
        };
        let cut = StopStep::TruncateToLso {
            from: log_end,
            to: stable,
        };
        // Only a cut that removes something can separate a marker (the scan reads the log).
        let crossing = if stable < log_end && self.design.restores_markers_cut_at_lso() {
            partition.log.markers_crossing(stable)
        } else {
            Vec::new()
        };
        if stable < log_end {
            if let Err(error) = partition.log.truncate_to(stable) {
                self.fail_mirror_partition(
                    host,
                    now_ms,
                    topic_partition,
                    format!("truncation to the LSO failed: {error}"),
                    false,
                );
                return;
            }
            host.lend().push_truncation(
                topic_partition,
                log_end,
                TruncationReason::MirrorStopAtLastStableOffset,
            );
        }
        self.note_stop_step(topic_partition, cut);
        if !self.restore_crossing_markers(host, now_ms, topic_partition, crossing) {
            return;
        }
        self.stopping_persist_last_mirrored(host, now_ms, topic_partition);
    }

    /// Step 3, second half: appends again the markers the cut separated from their
    /// transactions' records ([`MirrorDesign::restores_markers_cut_at_lso`]), in the bumped
    /// epoch, before the reset forgets their producers. `false` when an append failed (the
    /// partition is then FAILED).
    fn restore_crossing_markers(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        markers: Vec<RecordBatch>,
    ) -> bool {
        let leader_epoch = self.tasks[topic_partition].leader_epoch;
        for marker in markers {
            let producer_id = marker.header().producer_id;
            let committed = matches!(
                marker.control_record(),
                Some(Ok(ControlRecord::EndTransaction {
                    committed: true,
                    ..
                }))
            );
            match self.append_stop_batch(host, now_ms, topic_partition, &marker, leader_epoch) {
                Ok(offset) => {
                    self.note_stop_step(
                        topic_partition,
                        StopStep::RestoreMarker {
                            producer_id: ProducerId(producer_id),
                            offset,
                        },
                    );
                    host.lend().events.push(BrokerEvent::StopMarkerRestored {
                        topic_partition: topic_partition.clone(),
                        producer_id,
                        committed,
                        cut_from: Offset(marker.base_offset()),
                        offset,
                    });
                }
                Err(error) => {
                    let reason = format!("restoring a marker the LSO cut removed failed: {error}");
                    self.fail_mirror_partition(host, now_ms, topic_partition, reason, false);
                    return false;
                }
            }
        }
        true
    }

    /// Persists the last mirrored (epoch, offset) captured when STOPPING began.
    pub(super) fn stopping_persist_last_mirrored(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
    ) {
        let task = &self.tasks[topic_partition];
        let write = MirrorStateWrite {
            source_topic_id: None,
            id: task.id,
            state: None,
            leader_epoch: task.leader_epoch,
            state_epoch: task.state_epoch,
            error_message: None,
            non_retryable: false,
            last_mirrored: task.last_mirrored,
            own_writes_only: false,
            recover: false,
        };
        let last_mirrored = task.last_mirrored;
        self.note_stop_step(
            topic_partition,
            StopStep::PersistLastMirrored { last_mirrored },
        );
        self.send_write(
            host,
            now_ms,
            topic_partition,
            write,
            WritePurpose::LastMirrored,
        );
    }

    /// The later revision's steps 4 and 5 (`abort-markers`): an ABORT marker for every open
    /// transaction, so read_committed consumers skip their data and the LSO moves past it,
    /// then the reset. `reset-before-txn-resolution` swaps the two: the reset forgets the
    /// open transactions, and the markers written after it close nothing (spec §9 S-5).
    pub(super) fn stopping_abort_open_transactions(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
    ) {
        let leader_epoch = self.tasks[topic_partition].leader_epoch;
        let reset_first = self.design == MirrorDesign::ResetBeforeTxnResolution;
        let Some(partition) = host.partitions().get(topic_partition) else {
            return;
        };
        // Taken before either append: the buggy order still knows what it meant to abort.
        let open = open_transaction_markers(&partition.log);
        if reset_first
            && self
                .append_pid_reset(host, now_ms, topic_partition)
                .is_none()
        {
            return;
        }
        for (producer, coordinator_epoch) in open {
            let producer_id = producer.producer_id;
            self.note_stop_step(
                topic_partition,
                StopStep::AbortMarker {
                    producer_id: ProducerId(producer_id),
                },
            );
            let marker = end_transaction_marker(producer, false, coordinator_epoch, now_ms);
            if let Err(error) =
                self.append_stop_batch(host, now_ms, topic_partition, &marker, leader_epoch)
            {
                let reason = format!("ABORT marker append failed: {error}");
                self.fail_mirror_partition(host, now_ms, topic_partition, reason, false);
                return;
            }
        }
        if !reset_first
            && self
                .append_pid_reset(host, now_ms, topic_partition)
                .is_none()
        {
            return;
        }
        // Whichever came last, STOPPED waits until everything the stop wrote is committed.
        let Some(partition) = host.partitions().get(topic_partition) else {
            return;
        };
        let last = partition.log.log_end_offset() - Offset(1);
        self.await_stop_committed(host, now_ms, topic_partition, Offset(last));
    }

    /// Step 5: MIRROR_PID_RESET, then wait for it to commit.
    pub(super) fn stopping_after_last_mirrored(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
    ) {
        if let Some(offset) = self.append_pid_reset(host, now_ms, topic_partition) {
            self.await_stop_committed(host, now_ms, topic_partition, offset);
        }
    }

    /// Appends MIRROR_PID_RESET unless the log already ends with one this stop wrote (a
    /// re-run of STOPPING) or the design writes none; the offset STOPPED waits for. `None`
    /// when the partition is gone or the append failed (the partition is then FAILED).
    ///
    /// A reset this stop wrote carries an epoch above the last mirrored one (it was appended
    /// after the bump). A mirrored log may also end with the *source's* reset, in the
    /// source's epoch: in a chain (a → b → c, c stops after fetching b's reset) or a failback
    /// (b → a after a → b) when the source wrote nothing after its own stop. That one is
    /// mirrored data and does not stand for this stop's: skipping it would leave the bumped
    /// epoch without a batch and the stop without the reset the seed requires (generated
    /// seeds 1337263765019680, …456, …460: the stopped log ended with the mirrored reset).
    pub(super) fn append_pid_reset(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
    ) -> Option<Offset> {
        let leader_epoch = self.tasks[topic_partition].leader_epoch;
        let last_mirrored_epoch = self.tasks[topic_partition]
            .last_mirrored
            .map_or(LeaderEpoch::NONE, |(epoch, _)| epoch);
        // The recorded source (spec §5.4's SourceClusterId), whatever bootstrap.servers
        // names since.
        let source_cluster_id = MirrorDirectory::new(host.image(), host.node_id().cluster())
            .source_cluster_id(&self.tasks[topic_partition].mirror)
            .unwrap_or_else(|| "unknown".to_owned());
        let partition = host.partitions().get(topic_partition)?;
        let ends_with_reset = partition.log.batches().last().is_some_and(|batch| {
            batch.is_mirror_pid_reset()
                && LeaderEpoch(batch.partition_leader_epoch()) > last_mirrored_epoch
        });
        let log_end = partition.log.log_end_offset();
        let own_writes_only = self.tasks[topic_partition].stop_own_writes_only;
        if own_writes_only {
            host.lend().events.push(BrokerEvent::StopOfOwnWrites {
                topic_partition: topic_partition.clone(),
                after_cut_decided: self.tasks[topic_partition].cut_decided,
            });
        }
        let skipped = if !self.design.writes_pid_reset() {
            Some(ResetSkipped::Design)
        } else if ends_with_reset {
            Some(ResetSkipped::AlreadyWritten)
        } else if own_writes_only {
            Some(ResetSkipped::OwnWritesOnly)
        } else {
            None
        };
        if let Some(reason) = skipped {
            // `no-pid-reset` and `pid-rewrite`: STOPPED once everything up to here is
            // committed.
            self.note_stop_step(topic_partition, StopStep::SkipPidReset(reason));
            return Some(log_end - 1);
        }
        let reset = mirror_pid_reset(&source_cluster_id, now_ms);
        match self.append_stop_batch(host, now_ms, topic_partition, &reset, leader_epoch) {
            Ok(offset) => {
                // The reset wipes the leader's producer state (spec §5.4): no producer may
                // survive it, whatever the log held before.
                assert!(
                    host.partitions()
                        .get(topic_partition)
                        .is_none_or(|partition| partition
                            .log
                            .producer_state()
                            .producers()
                            .is_empty()),
                    "{topic_partition}: a producer survived the MIRROR_PID_RESET at {offset}"
                );
                self.note_stop_step(topic_partition, StopStep::AppendPidReset { offset });
                Some(offset)
            }
            Err(error) => {
                let reason = format!("MIRROR_PID_RESET append failed: {error}");
                self.fail_mirror_partition(host, now_ms, topic_partition, reason, false);
                None
            }
        }
    }

    /// Appends a batch STOPPING writes itself (reset, ABORT marker) in `leader_epoch`; its
    /// offset.
    pub(super) fn append_stop_batch(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        batch: &RecordBatch,
        leader_epoch: LeaderEpoch,
    ) -> Result<Offset, String> {
        let partition = host
            .lend()
            .partitions
            .get_mut(topic_partition)
            .ok_or_else(|| "the partition is gone".to_owned())?;
        let info = partition
            .log
            .append_as_leader(batch, leader_epoch, AppendOrigin::Coordinator, now_ms)
            .map_err(|error| error.to_string())?;
        host.lend().events.push(BrokerEvent::LeaderAppend {
            topic_partition: topic_partition.clone(),
            first_offset: info.first_offset,
            last_offset: info.last_offset,
            leader_epoch,
            mirror_state: Some(MirrorState::Stopping),
            control: batch.is_control(),
        });
        Ok(info.first_offset)
    }

    /// STOPPED is written once everything up to `offset` is committed.
    pub(super) fn await_stop_committed(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        offset: Offset,
    ) {
        self.note_stop_step(topic_partition, StopStep::AwaitCommitted { offset });
        let task = self.task_mut(topic_partition);
        task.step = Step::AwaitResetCommitted { offset };
        task.not_before_ms = now_ms;
        host.maybe_increment_high_watermark(now_ms, topic_partition);
    }
}
