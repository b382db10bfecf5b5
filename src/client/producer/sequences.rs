//! Sequence numbers after a failure: which batches are resolved, when the epoch is bumped,
//! which partitions' unsent batches are re-stamped, and what a partition does next.

use super::*;

/// What `partition` can do next under `producer` (Java's `shouldStopDrainBatchesForPartition`,
/// plus the probing that precedes a re-stamp).
pub(super) fn next_action(
    partition: &mut PartitionState,
    producer: ProducerIdAndEpoch,
    now_ms: i64,
    rewrite_pending: bool,
    max_in_flight: usize,
) -> PartitionAction {
    if rewrite_pending {
        // Before re-stamping, learn the fate of batches that may be written under their stamp:
        // resent unchanged, each comes back as a duplicate (success) or OUT_OF_ORDER (absent).
        let probe = partition
            .batches
            .iter()
            .position(|batch| batch.maybe_written && batch.is_due(now_ms));
        return probe.map_or(PartitionAction::Wait, PartitionAction::Resend);
    }
    if let Some(index) = partition.batches.iter().position(|b| !b.is_in_flight()) {
        // A retry goes only once it is the oldest unfinished batch, so sequences stay in order.
        return if index == 0 && partition.batches[0].is_due(now_ms) {
            PartitionAction::Resend(0)
        } else {
            PartitionAction::Wait
        };
    }
    if partition.queued.is_empty() || partition.unresolved_next_sequence.is_some() {
        return PartitionAction::Wait;
    }
    let window_full = partition.batches.front().is_some_and(|oldest| {
        partition.drained_batches - oldest.meta.drain_index >= max_in_flight as u64
    });
    if window_full {
        // Answers can arrive out of order (a lost answer, later ones acknowledged): count every
        // batch drained since the oldest unfinished one, so that if that one was written it is
        // still among the leader's five remembered batches when it is retried, and its retry
        // comes back as a duplicate rather than OUT_OF_ORDER.
        return PartitionAction::Wait;
    }
    if partition.last_acked_sequence < 0 && !partition.batches.is_empty() {
        // The first batch under a (producer id, epoch) goes alone: a leader with no state for
        // the producer accepts any sequence, so a later batch could be written ahead of a lost
        // first one, and the epoch bump that follows would write it a second time.
        return PartitionAction::Wait;
    }
    if partition.sequence_owner != Some(producer) {
        if !partition.batches.is_empty() {
            // Batches of the old epoch are still out; a seq-0 batch could overtake them.
            return PartitionAction::Wait;
        }
        partition.restart_sequences(producer);
    }
    PartitionAction::DrainNew
}

impl IdempotentProducer {
    /// An unresolved partition whose batches all finished either lines up (the expired batch
    /// was written, since later ones were acknowledged) or needs an epoch bump.
    pub(super) fn resolve_sequences(&mut self) {
        for (topic_partition, partition) in &mut self.partitions {
            if partition.unresolved_next_sequence.is_none() || !partition.batches.is_empty() {
                continue;
            }
            partition.unresolved_next_sequence = None;
            if !partition.sequences_line_up() {
                self.partitions_to_rewrite.insert(topic_partition.clone());
            }
        }
    }

    /// Carries out a requested epoch bump (KIP-360), or asks for a new producer id when the
    /// epoch is exhausted.
    pub(super) fn maybe_bump_epoch(&mut self) {
        if self.settled_partitions_to_rewrite().is_empty() {
            return; // Nothing asked, or still probing batches that may be written.
        }
        let Some(current) = self.producer else {
            return; // The rewrite happens when the new producer id arrives.
        };
        if current.epoch == i16::MAX {
            // Java resets the producer id here; the partitions are rewritten under the new one.
            self.producer = None;
            return;
        }
        let bumped = ProducerIdAndEpoch {
            producer_id: current.producer_id,
            epoch: current.epoch + 1,
        };
        self.producer = Some(bumped);
        let topic_partitions = self.rewrite_partitions(bumped);
        self.events.push(ProducerEvent::EpochBumped {
            producer_id: bumped.producer_id,
            previous_epoch: current.epoch,
            epoch: bumped.epoch,
            topic_partitions,
        });
    }

    /// Partitions that asked for a rewrite and hold no batch that may already be in the log.
    pub(super) fn settled_partitions_to_rewrite(&self) -> Vec<TopicPartition> {
        self.partitions_to_rewrite
            .iter()
            .filter(|topic_partition| {
                !self
                    .partitions
                    .get(*topic_partition)
                    .is_some_and(PartitionState::has_unsettled_batches)
            })
            .cloned()
            .collect()
    }

    /// Restarts the sequences of every settled partition that asked for a rewrite under
    /// `owner`; unsettled ones stay asked and get a bump of their own once settled.
    pub(super) fn rewrite_partitions(&mut self, owner: ProducerIdAndEpoch) -> Vec<TopicPartition> {
        let topic_partitions = self.settled_partitions_to_rewrite();
        for topic_partition in &topic_partitions {
            self.partitions_to_rewrite.remove(topic_partition);
            if let Some(partition) = self.partitions.get_mut(topic_partition) {
                partition.restart_sequences(owner);
            }
        }
        topic_partitions
    }
}
