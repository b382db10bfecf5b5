//! KIP-890 part 1, transaction verification, on a partition leader: before it appends the
//! first batch of a transaction to a partition, the leader asks the transaction's coordinator
//! whether the partition is in the producer's ongoing transaction.
//!
//! Contract (Kafka ≥ 3.6 `ReplicaManager.appendRecords` with `AddPartitionsToTxnManager`;
//! kafka-storage.md §3.2 step 2):
//! - **When.** A Produce of a transactional data batch whose producer has no transaction open
//!   in the partition's producer state (the transaction's first batch there), sent with a
//!   transactional id, to the partition's leader, in every design but `pre-kip-890`. A batch
//!   of an open transaction, an idempotent or plain batch, and a produce this broker refuses
//!   anyway (not the leader, KIP-1279's read-only gate) are handled at once, as before.
//! - **How.** AddPartitionsToTxn with `verify_only` to the leader of the transactional id's
//!   `__transaction_state` partition (this broker's own coordinator through the loopback),
//!   one request per produce. The produce waits for the answer, under a verification guard
//!   kept per (partition, producer id): a transaction marker for the producer appended here
//!   drops the guard, and so does nothing else; a change of this broker's leader epoch for
//!   the partition is caught when the answer comes.
//! - **Answer.** NONE with the guard still held and the same leader epoch: the batch is
//!   appended as any produce is (its own checks follow). NONE with the guard dropped (a
//!   marker ended the transaction meanwhile): INVALID_TXN_STATE, unless the producer has a
//!   transaction open here by then (a retry whose first attempt was verified and appended
//!   first: appended, a duplicate, as Kafka appends every batch of an open transaction). INVALID_TXN_STATE (the
//!   partition is not in an ongoing transaction of this producer: the transaction ended and
//!   this is a late or retried produce), PRODUCER_FENCED and INVALID_PRODUCER_ID_MAPPING are
//!   returned to the producer as they come; coordinator errors (NOT_COORDINATOR,
//!   COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS) and no
//!   answer within [`VERIFY_TIMEOUT_MS`] become NOT_ENOUGH_REPLICAS, which every client
//!   retries (Kafka maps them so for clients older than transaction version 2). A leader
//!   epoch that changed: NOT_LEADER_OR_FOLLOWER.
//! - **Why.** Without it (`pre-kip-890`), a produce delayed in the network past the
//!   transaction's end (the coordinator's timeout abort, or the client's own abort after its
//!   delivery timeout) is appended after the ABORT marker: a transaction the coordinator no
//!   longer knows, open in the partition for good, its last stable offset stuck (a hanging
//!   transaction, KAFKA-14402), or, worse, counted in the producer's next transaction.
//!
//! Events: [`BrokerEvent::TxnVerified`] for every answer taken in (with the error the
//! produce was given, NONE when it was appended).

use std::collections::BTreeMap;

use super::{Broker, BrokerStorage, Role};
use crate::common::LeaderEpoch;
use crate::component::RequestsInFlight;
use crate::events::BrokerEvent;
use crate::protocol::{
    CoordinatorRequest, CoordinatorResponse, CoordinatorType, ErrorCode, NodeId, Offset,
    ProducerEpoch, ProducerId, ReplicaResponse, Request, Response, TopicPartition,
};
use crate::replica::ProduceRequest;

/// How long a produce waits for its verification.
pub const VERIFY_TIMEOUT_MS: i64 = 1_000;

/// One produce waiting for the coordinator's answer.
#[derive(Debug, Clone)]
struct Verification {
    request: ProduceRequest,
    guard: u64,
    leader_epoch: LeaderEpoch,
}

/// The produces waiting for their verification, and the guards they wait under.
#[derive(Debug, Default)]
pub struct TxnVerifications {
    requests: RequestsInFlight<Verification, VERIFY_TIMEOUT_MS>,
    guards: BTreeMap<(TopicPartition, ProducerId), u64>,
    next_guard: u64,
}

impl TxnVerifications {
    /// The earliest time a verification times out.
    pub fn deadline(&self) -> Option<i64> {
        self.requests.deadline()
    }

    /// Whether a request with this correlation id is a verification's.
    pub fn owns(&self, correlation_id: u64) -> bool {
        self.requests.owns(correlation_id)
    }

    /// A marker for `producer_id` was appended to `topic_partition` here: its transaction
    /// there ended, and a verification still in flight for it proves nothing any more.
    pub fn drop_guard(&mut self, topic_partition: &TopicPartition, producer_id: ProducerId) {
        self.guards.remove(&(topic_partition.clone(), producer_id));
    }

    /// The guard a new verification of (partition, producer) waits under: the one in force,
    /// or a new one (a retried produce shares its first attempt's).
    fn guard(&mut self, topic_partition: &TopicPartition, producer_id: ProducerId) -> u64 {
        let next = &mut self.next_guard;
        *self
            .guards
            .entry((topic_partition.clone(), producer_id))
            .or_insert_with(|| {
                *next += 1;
                *next
            })
    }

    /// The (partition, producer) key `verification` is guarded under.
    fn key_of(verification: &Verification) -> (TopicPartition, ProducerId) {
        (
            verification.request.topic_partition.clone(),
            ProducerId(verification.request.batch.header().producer_id),
        )
    }

    /// Whether `verification`'s guard is still in force.
    fn holds_guard(&self, verification: &Verification) -> bool {
        self.guards.get(&Self::key_of(verification)) == Some(&verification.guard)
    }

    /// Lets `verification`'s guard go once its batch is appended: the append opens the
    /// transaction here, so the next batch needs no verification. A refused one keeps it for
    /// a retry of the same batch still waiting under it.
    fn release_guard(&mut self, verification: &Verification) {
        if self.holds_guard(verification) {
            self.guards.remove(&Self::key_of(verification));
        }
    }
}

/// What the produce is answered after the coordinator's `error` (see the module doc).
fn produce_error_after(error: ErrorCode) -> ErrorCode {
    match error {
        ErrorCode::None
        | ErrorCode::InvalidTxnState
        | ErrorCode::ProducerFenced
        | ErrorCode::InvalidProducerIdMapping => error,
        _ => ErrorCode::NotEnoughReplicas,
    }
}

impl<S: BrokerStorage> Broker<S> {
    /// A Produce: verified first when it opens a transaction here (see the module doc),
    /// else appended (or refused) at once.
    pub(super) fn handle_produce(
        &mut self,
        now_ms: i64,
        request: ProduceRequest,
        transactional_id: Option<String>,
    ) {
        match self.verification_needed(&request, transactional_id) {
            Some((transactional_id, leader_epoch)) => {
                self.send_verification(now_ms, request, transactional_id, leader_epoch)
            }
            None => self.append_produce(now_ms, request),
        }
    }

    /// The transactional id and this leader's epoch when `request` must be verified first.
    fn verification_needed(
        &self,
        request: &ProduceRequest,
        transactional_id: Option<String>,
    ) -> Option<(String, LeaderEpoch)> {
        let header = request.batch.header();
        if !self.config.mirror_design.verifies_transactions()
            || !header.is_transactional()
            || header.is_control()
        {
            return None;
        }
        let transactional_id = transactional_id?;
        let partition = self.replicas.partitions().get(&request.topic_partition)?;
        let Role::Leader(state) = &partition.role else {
            return None;
        };
        let producer_id = ProducerId(header.producer_id);
        if self.transaction_open(&request.topic_partition, producer_id)
            || self
                .write_gate(&request.topic_partition)
                .refused_in
                .is_some()
        {
            return None;
        }
        Some((transactional_id, state.leader_epoch))
    }

    /// Whether `producer_id` has a transaction open in `topic_partition`'s producer state
    /// here: its batches need no verification (Kafka's `hasOngoingTransaction`).
    fn transaction_open(&self, topic_partition: &TopicPartition, producer_id: ProducerId) -> bool {
        self.replicas
            .partitions()
            .get(topic_partition)
            .and_then(|partition| partition.log.producer_state().producer(producer_id))
            .is_some_and(|entry| entry.current_txn_first_offset.is_some())
    }

    /// Asks the transactional id's coordinator about `request`'s partition; the produce
    /// waits for the answer.
    fn send_verification(
        &mut self,
        now_ms: i64,
        request: ProduceRequest,
        transactional_id: String,
        leader_epoch: LeaderEpoch,
    ) {
        let header = request.batch.header();
        let (producer_id, producer_epoch) = (header.producer_id, header.producer_epoch);
        let coordinator = self
            .coordinators
            .coordinator_partition(&self.image, CoordinatorType::Transaction, &transactional_id)
            .and_then(|partition| self.image.partition(&partition))
            .and_then(|record| record.leader)
            .map(|leader| NodeId::Broker(self.node_id.cluster(), leader));
        let Some(coordinator) = coordinator else {
            // Kafka's COORDINATOR_NOT_AVAILABLE, as a produce error a client retries.
            self.answer_produce(&request, ErrorCode::NotEnoughReplicas);
            return;
        };
        let guard = self
            .txn_verifications
            .guard(&request.topic_partition, ProducerId(producer_id));
        let verify = Request::Coordinator(CoordinatorRequest::AddPartitionsToTxn {
            transactional_id,
            producer_id: ProducerId(producer_id),
            producer_epoch: ProducerEpoch(producer_epoch),
            partitions: vec![request.topic_partition.clone()],
            verify_only: true,
        });
        let correlation_id = self.outbox.request(coordinator, verify);
        let verification = Verification {
            request,
            guard,
            leader_epoch,
        };
        self.txn_verifications
            .requests
            .insert(correlation_id, verification, now_ms);
    }

    /// Answers every verification that timed out.
    pub(super) fn expire_txn_verifications(&mut self, now_ms: i64) {
        for correlation_id in self.txn_verifications.requests.expired(now_ms) {
            self.handle_verification_answer(
                now_ms,
                correlation_id,
                Err(ErrorCode::RequestTimedOut),
            );
        }
    }

    /// The coordinator's answer to a verification (or its timeout as `Err`).
    pub(super) fn handle_verification_answer(
        &mut self,
        now_ms: i64,
        correlation_id: u64,
        answer: Result<Response, ErrorCode>,
    ) {
        let Some(verification) = self.txn_verifications.requests.remove(correlation_id) else {
            return;
        };
        let topic_partition = verification.request.topic_partition.clone();
        let coordinator_error = match answer {
            Ok(Response::Coordinator(CoordinatorResponse::AddPartitionsToTxn { results })) => {
                results
                    .into_iter()
                    .find(|(tp, _)| *tp == topic_partition)
                    .map_or(ErrorCode::InvalidTxnState, |(_, error)| error)
            }
            Ok(_) => ErrorCode::InvalidRequest,
            Err(error) => error,
        };
        let still_leader = self
            .replicas
            .partitions()
            .get(&topic_partition)
            .is_some_and(|partition| {
                matches!(&partition.role, Role::Leader(state)
                    if state.leader_epoch == verification.leader_epoch)
            });
        let guarded = self.txn_verifications.holds_guard(&verification);
        // A retry whose first attempt's append opened the transaction here meanwhile needs no
        // guard: it is appended as any batch of an open transaction is (a duplicate then).
        let producer_id = ProducerId(verification.request.batch.header().producer_id);
        let open_now = self.transaction_open(&topic_partition, producer_id);
        let error = match produce_error_after(coordinator_error) {
            ErrorCode::None if !still_leader => ErrorCode::NotLeaderOrFollower,
            ErrorCode::None if !guarded && !open_now => ErrorCode::InvalidTxnState,
            error => error,
        };
        self.events.push(BrokerEvent::TxnVerified {
            topic_partition,
            producer_id,
            coordinator_error,
            error,
        });
        if error == ErrorCode::None {
            self.txn_verifications.release_guard(&verification);
            self.append_produce(now_ms, verification.request);
        } else {
            self.answer_produce(&verification.request, error);
        }
    }

    /// Answers `request` with `error`, nothing appended.
    fn answer_produce(&mut self, request: &ProduceRequest, error: ErrorCode) {
        let response = Response::Replica(ReplicaResponse::Produce {
            error,
            base_offset: Offset(-1),
            log_start_offset: Offset(-1),
            log_append_time_ms: None,
        });
        self.outbox
            .respond(request.from, request.correlation_id, response);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinator_errors_become_retriable_and_verdicts_pass_through() {
        for passed in [
            ErrorCode::None,
            ErrorCode::InvalidTxnState,
            ErrorCode::ProducerFenced,
            ErrorCode::InvalidProducerIdMapping,
        ] {
            assert_eq!(produce_error_after(passed), passed);
        }
        for retried in [
            ErrorCode::NotCoordinator,
            ErrorCode::CoordinatorNotAvailable,
            ErrorCode::CoordinatorLoadInProgress,
            ErrorCode::ConcurrentTransactions,
            ErrorCode::RequestTimedOut,
        ] {
            assert_eq!(produce_error_after(retried), ErrorCode::NotEnoughReplicas);
        }
    }
}
