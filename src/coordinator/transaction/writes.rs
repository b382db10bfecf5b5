//! What a transaction-state write does once it is committed or has failed, and the epoch
//! rules for fencing and bumping a producer.

use super::*;
use crate::protocol::{CoordinatorResponse, ProducerEpoch, ProducerId};

/// The metadata of an Ongoing transaction aborted by the coordinator: PrepareAbort with the
/// epoch bumped, so the producer is fenced (Kafka's `prepareFenceProducerEpoch` followed by
/// `prepareAbortOrCommit`). At `i16::MAX` the epoch cannot move and the abort keeps it.
pub(super) fn fence_metadata(current: &TransactionMetadata, now_ms: i64) -> TransactionMetadata {
    assert_eq!(current.state, TransactionState::Ongoing);
    TransactionMetadata {
        producer_epoch: current.producer_epoch.saturating_add(1),
        last_producer_epoch: NO_PRODUCER_EPOCH,
        state: TransactionState::PrepareAbort,
        last_update_ms: now_ms,
        ..current.clone()
    }
}

/// Kafka's `prepareIncrementProducerEpoch`: (new epoch, new last epoch), or PRODUCER_FENCED.
pub(super) fn increment_epoch(
    current: &TransactionMetadata,
    expected_epoch: Option<i16>,
) -> Result<(i16, i16), ErrorCode> {
    let epoch = current.producer_epoch;
    match expected_epoch {
        // A retry of a bump that succeeded but whose answer was lost: no second bump.
        Some(expected) if expected != epoch && expected == current.last_producer_epoch => {
            Ok((epoch, current.last_producer_epoch))
        }
        _ if is_epoch_exhausted(epoch) => Err(ErrorCode::ProducerFenced),
        None => Ok((epoch + 1, NO_PRODUCER_EPOCH)),
        Some(expected) if expected == epoch => Ok((epoch + 1, epoch)),
        Some(_) => Err(ErrorCode::ProducerFenced),
    }
}

impl TransactionCoordinatorShard {
    pub(super) fn write_succeeded(
        &mut self,
        env: &ShardEnv<'_>,
        write: PendingWrite,
        out: &mut ShardOutput<TransactionRecord>,
    ) {
        let transactional_id = write.transactional_id;
        match write.purpose {
            WritePurpose::Init(reply) => {
                self.in_progress.remove(&transactional_id);
                let metadata = &self.transactions[&transactional_id];
                assert_eq!(metadata.state, TransactionState::Empty);
                let Reply::InitProducerId { to, correlation_id } = reply else {
                    unreachable!("an Init write answers InitProducerId");
                };
                out.responses.push((
                    to,
                    correlation_id,
                    Response::Coordinator(CoordinatorResponse::InitProducerId {
                        error: ErrorCode::None,
                        producer_id: ProducerId(metadata.producer_id),
                        producer_epoch: ProducerEpoch(metadata.producer_epoch),
                    }),
                ));
            }
            WritePurpose::FenceAbort(reply) => {
                self.in_progress.remove(&transactional_id);
                if let Some(reply) = reply {
                    // Kafka's answer once the abort is under way: retry, and get a new epoch.
                    out.responses
                        .push(reply.error(ErrorCode::ConcurrentTransactions));
                }
                self.start_markers(env, &transactional_id, out);
            }
            WritePurpose::AddPartitions(reply) => {
                self.in_progress.remove(&transactional_id);
                out.responses.push(reply.error(ErrorCode::None));
            }
            WritePurpose::EndTxn(reply) => {
                self.in_progress.remove(&transactional_id);
                let metadata = &self.transactions[&transactional_id];
                let version_2 = self.config.transaction_version_2;
                out.responses.push(reply.end_txn(metadata, version_2));
                self.start_markers(env, &transactional_id, out);
            }
            WritePurpose::Complete | WritePurpose::Expire => {
                self.in_progress.remove(&transactional_id);
            }
        }
    }

    pub(super) fn write_failed(
        &mut self,
        env: &ShardEnv<'_>,
        write: PendingWrite,
        error: ErrorCode,
        out: &mut ShardOutput<TransactionRecord>,
    ) {
        let transactional_id = write.transactional_id;
        let error = coordinator_error_for_write(error);
        match write.purpose {
            WritePurpose::Complete => {
                // The markers are written; only the completion is missing. Try again later.
                if let Some(Progress::Completing(job)) = self.in_progress.get_mut(&transactional_id)
                {
                    job.completing = false;
                    job.retry_at_ms = Some(env.now_ms + self.config.retry_backoff_ms);
                }
            }
            WritePurpose::Init(reply)
            | WritePurpose::FenceAbort(Some(reply))
            | WritePurpose::AddPartitions(reply)
            | WritePurpose::EndTxn(reply) => {
                self.in_progress.remove(&transactional_id);
                out.responses.push(reply.error(error));
            }
            WritePurpose::FenceAbort(None) | WritePurpose::Expire => {
                // Nothing changed; try again after the backoff (not at once: the partition
                // refusing writes would turn the timer into a busy loop).
                self.in_progress.remove(&transactional_id);
                let at = env.now_ms + self.config.retry_backoff_ms;
                self.timer_backoff.insert(transactional_id, at);
            }
        }
    }
}
