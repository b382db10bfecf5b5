//! Kafka's transaction coordinator (`TransactionCoordinator`, `TransactionStateManager`,
//! `TransactionMarkerChannelManager`) as one coordinator [`Shard`] per partition of
//! `__transaction_state`.
//!
//! Contract (kafka-storage.md §2, §3.3, §6.1; transaction version 2, KIP-890 part 2, unless
//! [`TransactionCoordinatorConfig::transaction_version_2`] is off):
//! - **State.** Per transactional id a [`TransactionMetadata`]: producer id and epoch, the
//!   previous ones (KIP-360), timeout, [`TransactionState`], the partitions of the ongoing
//!   transaction and two timestamps. The shard changes it only in [`Shard::replay`]; every
//!   transition is a [`TransactionRecord`] written first ("write, then apply"). While a write or
//!   the marker phase of a transactional id is in progress, every other request for it gets
//!   CONCURRENT_TRANSACTIONS (Kafka's `pendingTransitionInProgress`).
//! - **InitProducerId.** The timeout must be in `1..=max_transaction_timeout_ms`
//!   (INVALID_TRANSACTION_TIMEOUT). A new id gets a fresh producer id at epoch 0; an id in Empty or
//!   Complete* gets epoch + 1 (which fences older instances), or a fresh producer id once the
//!   epoch is exhausted (`epoch >= i16::MAX - 1`). An id in Ongoing is first aborted: PrepareAbort
//!   is written with the epoch bumped (Kafka's PrepareEpochFence, folded into that write here),
//!   the caller gets CONCURRENT_TRANSACTIONS once it is durable, ABORT markers carry the bumped
//!   epoch, and the client's retry bumps the epoch once more. Prepare* → CONCURRENT_TRANSACTIONS.
//!   KIP-360: a request carrying a producer id and epoch is accepted if the id is the current
//!   one (or the previous one with an exhausted epoch); the epoch must be the current one (bump)
//!   or the previous one (a retry of a bump that succeeded: answered without a second bump);
//!   anything else is PRODUCER_FENCED.
//! - **AddPartitionsToTxn.** Unknown id or producer id → INVALID_PRODUCER_ID_MAPPING; other epoch →
//!   PRODUCER_FENCED; Prepare* → CONCURRENT_TRANSACTIONS; partitions already in an Ongoing
//!   transaction → answered at once; otherwise Ongoing with the union is written and the answer
//!   follows the write. Partitions the metadata image does not know get UNKNOWN_TOPIC_OR_PARTITION
//!   and the others OPERATION_NOT_ATTEMPTED (55), as Kafka's `KafkaApis` answers.
//! - **AddPartitionsToTxn with `verify_only`** (KIP-890 part 1, a partition leader's question
//!   before a transaction's first append there): nothing is written; each partition is
//!   answered NONE if it is in the producer's Ongoing transaction, else INVALID_TXN_STATE;
//!   INVALID_PRODUCER_ID_MAPPING and PRODUCER_FENCED as above (no CONCURRENT_TRANSACTIONS:
//!   the answer reads the durable metadata).
//! - **EndTxn, transaction version 2** (Kafka 4.0). Ongoing at the producer's epoch e →
//!   Prepare{Commit,Abort} is written with the epoch bumped to e + 1 (the markers carry it), and
//!   the client is answered once it is durable with the producer id and e + 1, under which its
//!   next transaction runs; at an exhausted epoch (`i16::MAX - 1`) the markers carry `i16::MAX`
//!   and the answer a fresh producer id at epoch 0, which Complete* then installs. A request at
//!   e against e + 1 is a retry: CONCURRENT_TRANSACTIONS while Prepare*, success with the
//!   current id and epoch once Complete* with the same outcome, INVALID_TXN_STATE with the
//!   other. An abort at the current epoch with nothing open (Empty, Complete*) bumps the epoch
//!   with no markers; a commit there is INVALID_TXN_STATE; any other epoch is PRODUCER_FENCED.
//!   So a request of one transaction that arrives late can no longer end the next one (mark
//!   `txn-late-end-txn-fenced`).
//! - **EndTxn, transaction version 1** (Kafka 3.x, `pre-kip-890`, `pre-kip-890-part-2`). Same
//!   producer checks as AddPartitionsToTxn; the epoch stays. Ongoing → Prepare{Commit,Abort},
//!   answered once durable; the markers follow. Complete* with the same outcome → success (a
//!   retry); Prepare* with the same outcome → CONCURRENT_TRANSACTIONS; any other combination,
//!   and Empty → INVALID_TXN_STATE.
//! - **Markers.** One WriteTxnMarkers per partition leader (from [`ShardEnv::image`], resolved
//!   again on every retry) with `coordinator_epoch = ShardEnv::coordinator_epoch`. Partitions that
//!   fail (any error but the two below) or time out are retried after `retry_backoff_ms`; a
//!   partition without a leader waits; a partition the image no longer has is dropped.
//!   INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED means a newer coordinator took over:
//!   the shard stops sending for that transaction (Kafka's `removeMarkersForTxn`).
//!   READ_ONLY_TOPIC (KIP-1279: the partition is a mirror partition that is not STOPPED, and its
//!   leader takes no marker) is retried like any other error, so the transaction stays in
//!   Prepare* until the partition is STOPPED, and for good if it never is. The prototype's
//!   completion handler has no case for it and throws, which leaves the partition's marker
//!   pending with no retry (until a coordinator failover resends it, into the same refusal):
//!   stuck the same way while the partition mirrors; retrying also completes the transaction
//!   once the partition stops. When every
//!   partition acknowledged, Complete{Commit,Abort} is written with the partitions cleared (retried
//!   after `retry_backoff_ms` if the write fails).
//! - **Timeouts.** An Ongoing transaction with `txn_start_ms + timeout_ms < now` is aborted with an
//!   epoch bump, fencing the producer (Kafka's `abortTimedOutTransactions`). An id in Empty or
//!   Complete* idle for `transactional_id_expiration_ms` is removed with a tombstone. If such a
//!   write fails, the shard tries again after `retry_backoff_ms`.
//! - **Failover.** [`Shard::loaded`] resumes every transaction found in Prepare* (markers again,
//!   with the new coordinator epoch). [`Shard::unloaded`] answers every client request waiting for
//!   a write with NOT_COORDINATOR.
//! - **Routing.** A request for a transactional id that `partition_for` maps to another
//!   partition of `__transaction_state` (as many partitions as the image has) → NOT_COORDINATOR.
//!
//! Producer ids: real Kafka draws them from blocks the controller hands out. To stay
//! deterministic and independent of the controller, a shard allocates from its own range,
//! `TRANSACTIONAL_PRODUCER_ID_BASE + partition_index * PRODUCER_IDS_PER_SHARD + counter`, which
//! never meets the ids of idempotent producers (the controller's blocks start at 0). The counter
//! is not written separately: replay keeps it above every id a record of the partition mentions,
//! so it survives failover. (Ids allocated for a write that never committed may be handed out
//! again; they were never returned to a client.)
//!
//! Deliberate differences from Kafka: the PrepareEpochFence and Dead states are not written
//! (the first is the bumped epoch inside the PrepareAbort record, the second is the tombstone);
//! `last_producer_epoch` is persisted, so a KIP-360 retry also works across a failover; timeouts
//! and expirations fire at their exact deadline rather than on a periodic scan; marker errors
//! Kafka treats as impossible (IllegalStateException) are retried.

mod markers;
mod writes;

use crate::protocol::{
    BrokerId, CoordinatorRequest, CoordinatorResponse, ErrorCode, NodeId, ProducerEpoch,
    ProducerId, Request, Response, TopicPartition, TxnMarker,
};
use markers::{MarkerRequest, Progress};
use writes::{fence_metadata, increment_epoch};

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{Shard, ShardEnv, ShardOutput, ShardWrite, TRANSACTION_STATE_TOPIC};

/// First producer id of shard 0's range (2^40).
pub const TRANSACTIONAL_PRODUCER_ID_BASE: i64 = 1 << 40;
/// Size of each shard's producer-id range.
pub const PRODUCER_IDS_PER_SHARD: i64 = 1_000_000;

const NO_PRODUCER_ID: i64 = -1;
const NO_PRODUCER_EPOCH: i16 = -1;
/// Kafka's UNKNOWN_SERVER_ERROR (−1).
const UNKNOWN_SERVER_ERROR: ErrorCode = ErrorCode::Other(-1);
/// Kafka's OPERATION_NOT_ATTEMPTED (55): the request failed for another partition.
pub const OPERATION_NOT_ATTEMPTED: ErrorCode = ErrorCode::Other(55);

/// Whether a producer epoch can no longer be bumped by InitProducerId (Kafka's
/// `isEpochExhausted`: one value is kept for the fence bump).
pub fn is_epoch_exhausted(epoch: i16) -> bool {
    epoch >= i16::MAX - 1
}

/// Settings of the transaction coordinator (broker configs of similar names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionCoordinatorConfig {
    /// `transaction.max.timeout.ms`: the largest transaction timeout a producer may ask for.
    /// Default 900 000.
    pub max_transaction_timeout_ms: i64,
    /// `transactional.id.expiration.ms`: an id idle this long (Empty or Complete*) is removed.
    /// Default 604 800 000 (7 days).
    pub transactional_id_expiration_ms: i64,
    /// Wait before re-sending markers that failed, and before retrying a failed completion
    /// write. Default 100 (Kafka's marker sender retries on its next poll).
    pub retry_backoff_ms: i64,
    /// Transaction version 2 (KIP-890 part 2; the finalized `transaction.version` ≥ 2 in
    /// Kafka 4.0): every EndTxn bumps the producer epoch and answers with it. Default true;
    /// false is Kafka 3.x (`MirrorDesign::transaction_version_2`).
    pub transaction_version_2: bool,
}

impl Default for TransactionCoordinatorConfig {
    fn default() -> Self {
        Self {
            max_transaction_timeout_ms: 900_000,
            transactional_id_expiration_ms: 604_800_000,
            retry_backoff_ms: 100,
            transaction_version_2: true,
        }
    }
}

/// Kafka's `TransactionState`, as written (PrepareEpochFence and Dead are never written; see
/// the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum TransactionState {
    /// A producer id is held, no transaction is open.
    Empty,
    /// A transaction is open on `partitions`.
    Ongoing,
    /// Commit decided and durable; markers are being written.
    PrepareCommit,
    /// Abort decided and durable; markers are being written.
    PrepareAbort,
    /// The last transaction committed.
    CompleteCommit,
    /// The last transaction aborted.
    CompleteAbort,
}

impl TransactionState {
    /// PrepareCommit or PrepareAbort.
    pub fn is_prepare(self) -> bool {
        matches!(self, Self::PrepareCommit | Self::PrepareAbort)
    }

    /// Empty, CompleteCommit or CompleteAbort: no transaction open.
    pub fn is_idle(self) -> bool {
        matches!(
            self,
            Self::Empty | Self::CompleteCommit | Self::CompleteAbort
        )
    }
}

/// What the coordinator keeps per transactional id (Kafka's `TransactionMetadata`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransactionMetadata {
    /// The producer id.
    pub producer_id: i64,
    /// The producer id before the last rotation, or −1.
    pub last_producer_id: i64,
    /// The current producer epoch.
    pub producer_epoch: i16,
    /// The epoch before the last client-requested bump (KIP-360), or −1.
    pub last_producer_epoch: i16,
    /// `transaction.timeout.ms` of the producer.
    pub timeout_ms: i64,
    /// The state.
    pub state: TransactionState,
    /// Partitions of the open (or completing) transaction.
    pub partitions: BTreeSet<TopicPartition>,
    /// When the open transaction added its first partition, or −1.
    pub txn_start_ms: i64,
    /// When the metadata last changed.
    pub last_update_ms: i64,
    /// Transaction version 2, while a transaction whose EndTxn exhausted the epoch completes:
    /// the producer id the producer holds once it is complete (its markers still carry the
    /// old id at `i16::MAX`); −1 otherwise. Not written when −1, so version-1 records keep
    /// their bytes.
    #[serde(default = "no_producer_id", skip_serializing_if = "is_no_producer_id")]
    pub next_producer_id: i64,
}

fn no_producer_id() -> i64 {
    NO_PRODUCER_ID
}

fn is_no_producer_id(producer_id: &i64) -> bool {
    *producer_id == NO_PRODUCER_ID
}

/// One record of a `__transaction_state` partition (stored as JSON by the runtime).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TransactionRecord {
    /// The full metadata of a transactional id after a transition.
    Metadata {
        /// The key.
        transactional_id: String,
        /// The metadata.
        metadata: TransactionMetadata,
    },
    /// The transactional id expired and was removed (Kafka's tombstone; the producer id is kept
    /// so that replay still sees every id the shard allocated).
    Tombstone {
        /// The key.
        transactional_id: String,
        /// Its last producer id.
        producer_id: i64,
    },
}

/// Where the answer to a client request goes once its write completes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reply {
    InitProducerId {
        to: NodeId,
        correlation_id: u64,
    },
    AddPartitionsToTxn {
        to: NodeId,
        correlation_id: u64,
        partitions: Vec<TopicPartition>,
    },
    EndTxn {
        to: NodeId,
        correlation_id: u64,
    },
}

impl Reply {
    fn error(&self, error: ErrorCode) -> (NodeId, u64, Response) {
        match self {
            Self::InitProducerId { to, correlation_id } => (
                *to,
                *correlation_id,
                Response::Coordinator(CoordinatorResponse::InitProducerId {
                    error,
                    producer_id: ProducerId::NONE,
                    producer_epoch: ProducerEpoch::NONE,
                }),
            ),
            Self::AddPartitionsToTxn {
                to,
                correlation_id,
                partitions,
            } => (
                *to,
                *correlation_id,
                Response::Coordinator(CoordinatorResponse::AddPartitionsToTxn {
                    results: partitions.iter().map(|tp| (tp.clone(), error)).collect(),
                }),
            ),
            Self::EndTxn { to, correlation_id } => (
                *to,
                *correlation_id,
                Response::Coordinator(CoordinatorResponse::EndTxn {
                    error,
                    producer_id: ProducerId::NONE,
                    producer_epoch: ProducerEpoch::NONE,
                }),
            ),
        }
    }

    /// The successful answer to EndTxn. Under transaction version 2 it names what the
    /// producer holds from now on: the bumped epoch, or the fresh producer id at epoch 0 once
    /// the old one's epoch was exhausted (KAFKA-18660's answer); version 1 names nothing.
    fn end_txn(&self, metadata: &TransactionMetadata, version_2: bool) -> (NodeId, u64, Response) {
        let Self::EndTxn { to, correlation_id } = self else {
            unreachable!("only an EndTxn is answered with a producer id and epoch");
        };
        let (producer_id, producer_epoch) = match (version_2, metadata.next_producer_id) {
            (false, _) => (ProducerId::NONE, ProducerEpoch::NONE),
            (true, NO_PRODUCER_ID) => (
                ProducerId(metadata.producer_id),
                ProducerEpoch(metadata.producer_epoch),
            ),
            (true, next) => (ProducerId(next), ProducerEpoch(0)),
        };
        let response = CoordinatorResponse::EndTxn {
            error: ErrorCode::None,
            producer_id,
            producer_epoch,
        };
        (*to, *correlation_id, Response::Coordinator(response))
    }
}

/// What an EndTxn asks of the shard.
#[derive(Debug, Clone, PartialEq, Eq)]
enum EndTxnOutcome {
    /// Write this Prepare* metadata; the answer follows the write.
    Prepare(TransactionMetadata),
    /// A retry of an EndTxn that already succeeded: answer NONE from the metadata.
    Retried,
}

/// Prepare{Commit,Abort}.
fn prepare_state(committed: bool) -> TransactionState {
    if committed {
        TransactionState::PrepareCommit
    } else {
        TransactionState::PrepareAbort
    }
}

/// Why a write was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum WritePurpose {
    /// Empty with a new producer id or epoch; answer InitProducerId.
    Init(Reply),
    /// PrepareAbort with a bumped epoch: re-init during Ongoing (answer CONCURRENT_TRANSACTIONS)
    /// or a timed-out transaction (no answer).
    FenceAbort(Option<Reply>),
    /// Ongoing with more partitions.
    AddPartitions(Reply),
    /// Prepare{Commit,Abort} on the client's EndTxn.
    EndTxn(Reply),
    /// Complete{Commit,Abort} after every marker.
    Complete,
    /// The tombstone of an expired id.
    Expire,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct PendingWrite {
    transactional_id: String,
    purpose: WritePurpose,
}

/// The transaction coordinator of one `__transaction_state` partition; see the module doc.
#[derive(Debug, Clone)]
pub struct TransactionCoordinatorShard {
    partition_index: i32,
    config: TransactionCoordinatorConfig,
    /// Committed metadata (changed only by replay).
    transactions: BTreeMap<String, TransactionMetadata>,
    /// The next producer id to allocate.
    next_producer_id: i64,
    in_progress: BTreeMap<String, Progress>,
    /// A coordinator-initiated write (timeout abort, expiration) failed: not again before this.
    timer_backoff: BTreeMap<String, i64>,
    writes: BTreeMap<u64, PendingWrite>,
    marker_requests: BTreeMap<u64, MarkerRequest>,
    next_write_id: u64,
    next_token: u64,
}

impl TransactionCoordinatorShard {
    /// A fresh shard for partition `partition_index` of `__transaction_state`.
    pub fn new(partition_index: i32, config: TransactionCoordinatorConfig) -> Self {
        assert!(partition_index >= 0, "partition index {partition_index}");
        let range_start = Self::range_start(partition_index);
        Self {
            partition_index,
            config,
            transactions: BTreeMap::new(),
            next_producer_id: range_start,
            in_progress: BTreeMap::new(),
            timer_backoff: BTreeMap::new(),
            writes: BTreeMap::new(),
            marker_requests: BTreeMap::new(),
            next_write_id: 0,
            next_token: 0,
        }
    }

    fn range_start(partition_index: i32) -> i64 {
        TRANSACTIONAL_PRODUCER_ID_BASE + i64::from(partition_index) * PRODUCER_IDS_PER_SHARD
    }

    // ----- getters for checkers and tests -----

    /// The committed metadata of `transactional_id`.
    pub fn transaction(&self, transactional_id: &str) -> Option<&TransactionMetadata> {
        self.transactions.get(transactional_id)
    }

    /// Every committed transactional id with its metadata.
    pub fn transactions(&self) -> &BTreeMap<String, TransactionMetadata> {
        &self.transactions
    }

    /// Whether a write or the marker phase of `transactional_id` is in progress.
    pub fn is_in_progress(&self, transactional_id: &str) -> bool {
        self.in_progress.contains_key(transactional_id)
    }

    /// The producer id the next new transactional id gets.
    pub fn next_producer_id(&self) -> i64 {
        self.next_producer_id
    }

    /// The configuration.
    pub fn config(&self) -> &TransactionCoordinatorConfig {
        &self.config
    }

    // ----- helpers -----

    fn allocate_producer_id(&mut self) -> i64 {
        let producer_id = self.next_producer_id;
        let range_end = Self::range_start(self.partition_index) + PRODUCER_IDS_PER_SHARD;
        assert!(
            producer_id < range_end,
            "transaction coordinator shard {} exhausted its producer-id range",
            self.partition_index
        );
        self.next_producer_id += 1;
        producer_id
    }

    /// Keeps the allocation counter above an id a record mentions.
    fn note_producer_id(&mut self, producer_id: i64) {
        let start = Self::range_start(self.partition_index);
        if (start..start + PRODUCER_IDS_PER_SHARD).contains(&producer_id) {
            self.next_producer_id = self.next_producer_id.max(producer_id + 1);
        }
    }

    /// NOT_COORDINATOR unless `transactional_id` belongs to this shard's partition (also while
    /// the image has no `__transaction_state` partitions).
    fn check_coordinator(
        &self,
        env: &ShardEnv<'_>,
        transactional_id: &str,
    ) -> Result<(), ErrorCode> {
        assert_eq!(
            env.partition.topic, TRANSACTION_STATE_TOPIC,
            "a transaction shard on another topic"
        );
        assert_eq!(
            env.partition.partition, self.partition_index,
            "the shard was built for another partition"
        );
        match env.owns_key(transactional_id) {
            Some(true) => Ok(()),
            Some(false) | None => Err(ErrorCode::NotCoordinator),
        }
    }

    /// Asks for a write of `metadata` under `transactional_id`.
    fn write_metadata(
        &mut self,
        transactional_id: &str,
        metadata: TransactionMetadata,
        purpose: WritePurpose,
        out: &mut ShardOutput<TransactionRecord>,
    ) -> u64 {
        let record = TransactionRecord::Metadata {
            transactional_id: transactional_id.to_owned(),
            metadata,
        };
        self.write(transactional_id, record, purpose, out)
    }

    fn write(
        &mut self,
        transactional_id: &str,
        record: TransactionRecord,
        purpose: WritePurpose,
        out: &mut ShardOutput<TransactionRecord>,
    ) -> u64 {
        let write_id = self.next_write_id;
        self.next_write_id += 1;
        if purpose != WritePurpose::Complete {
            let previous = self
                .in_progress
                .insert(transactional_id.to_owned(), Progress::Writing);
            assert!(previous.is_none(), "{transactional_id} was already busy");
        }
        self.writes.insert(
            write_id,
            PendingWrite {
                transactional_id: transactional_id.to_owned(),
                purpose,
            },
        );
        out.writes.push(ShardWrite {
            write_id,
            records: vec![record],
        });
        write_id
    }

    // ----- InitProducerId -----

    #[allow(clippy::too_many_arguments)]
    fn handle_init_producer_id(
        &mut self,
        env: &ShardEnv<'_>,
        reply: Reply,
        transactional_id: Option<String>,
        timeout_ms: i64,
        producer_id: i64,
        producer_epoch: i16,
        out: &mut ShardOutput<TransactionRecord>,
    ) {
        let result = self.prepare_init(
            env,
            transactional_id,
            timeout_ms,
            producer_id,
            producer_epoch,
        );
        match result {
            Err(error) => out.responses.push(reply.error(error)),
            Ok((transactional_id, metadata)) => {
                let purpose = if metadata.state == TransactionState::PrepareAbort {
                    WritePurpose::FenceAbort(Some(reply))
                } else {
                    WritePurpose::Init(reply)
                };
                self.write_metadata(&transactional_id, metadata, purpose, out);
            }
        }
    }

    /// Kafka's `handleInitProducerId` + `prepareInitProducerIdTransit`: the metadata to write.
    fn prepare_init(
        &mut self,
        env: &ShardEnv<'_>,
        transactional_id: Option<String>,
        timeout_ms: i64,
        producer_id: i64,
        producer_epoch: i16,
    ) -> Result<(String, TransactionMetadata), ErrorCode> {
        let Some(transactional_id) = transactional_id.filter(|id| !id.is_empty()) else {
            // Idempotent producers are served by the broker, never by the coordinator.
            return Err(ErrorCode::InvalidRequest);
        };
        self.check_coordinator(env, &transactional_id)?;
        if timeout_ms <= 0 || timeout_ms > self.config.max_transaction_timeout_ms {
            return Err(ErrorCode::InvalidTransactionTimeout);
        }
        let expected = match (producer_id, producer_epoch) {
            (NO_PRODUCER_ID, NO_PRODUCER_EPOCH) => None,
            (id, epoch) if id >= 0 && epoch >= 0 => Some((id, epoch)),
            _ => return Err(ErrorCode::InvalidRequest),
        };
        if self.in_progress.contains_key(&transactional_id) {
            return Err(ErrorCode::ConcurrentTransactions);
        }
        let now_ms = env.now_ms;
        let Some(current) = self.transactions.get(&transactional_id).cloned() else {
            // A new id (with or without a KIP-360 producer id: the old state is gone either way).
            let metadata = TransactionMetadata {
                producer_id: self.allocate_producer_id(),
                last_producer_id: NO_PRODUCER_ID,
                producer_epoch: 0,
                last_producer_epoch: NO_PRODUCER_EPOCH,
                timeout_ms,
                state: TransactionState::Empty,
                partitions: BTreeSet::new(),
                txn_start_ms: -1,
                last_update_ms: now_ms,
                next_producer_id: NO_PRODUCER_ID,
            };
            return Ok((transactional_id, metadata));
        };
        if let Some((expected_id, expected_epoch)) = expected {
            let valid = expected_id == current.producer_id
                || (expected_id == current.last_producer_id && is_epoch_exhausted(expected_epoch));
            if !valid {
                return Err(ErrorCode::ProducerFenced);
            }
        }
        let metadata = match current.state {
            TransactionState::PrepareCommit | TransactionState::PrepareAbort => {
                return Err(ErrorCode::ConcurrentTransactions);
            }
            TransactionState::Ongoing => {
                // Abort the open transaction first, fencing its producer; the epoch is never
                // returned: the client retries (CONCURRENT_TRANSACTIONS) and bumps again.
                fence_metadata(&current, now_ms)
            }
            TransactionState::Empty
            | TransactionState::CompleteCommit
            | TransactionState::CompleteAbort => {
                let expected_epoch = expected.map(|(_, epoch)| epoch);
                if is_epoch_exhausted(current.producer_epoch)
                    && expected_epoch.is_none_or(|epoch| epoch == current.producer_epoch)
                {
                    TransactionMetadata {
                        producer_id: self.allocate_producer_id(),
                        last_producer_id: current.producer_id,
                        producer_epoch: 0,
                        last_producer_epoch: if expected.is_some() {
                            current.producer_epoch
                        } else {
                            NO_PRODUCER_EPOCH
                        },
                        timeout_ms,
                        state: TransactionState::Empty,
                        partitions: BTreeSet::new(),
                        txn_start_ms: -1,
                        last_update_ms: now_ms,
                        next_producer_id: NO_PRODUCER_ID,
                    }
                } else {
                    let (epoch, last_epoch) = increment_epoch(&current, expected_epoch)?;
                    TransactionMetadata {
                        producer_epoch: epoch,
                        last_producer_epoch: last_epoch,
                        timeout_ms,
                        state: TransactionState::Empty,
                        partitions: BTreeSet::new(),
                        txn_start_ms: -1,
                        last_update_ms: now_ms,
                        ..current
                    }
                }
            }
        };
        Ok((transactional_id, metadata))
    }

    // ----- AddPartitionsToTxn -----

    #[allow(clippy::too_many_arguments)]
    fn handle_add_partitions(
        &mut self,
        env: &ShardEnv<'_>,
        to: NodeId,
        correlation_id: u64,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: Vec<TopicPartition>,
        out: &mut ShardOutput<TransactionRecord>,
    ) {
        let routed = self.check_routing(env, transactional_id);
        let unknown: BTreeSet<&TopicPartition> = partitions
            .iter()
            .filter(|tp| env.image.partition(tp).is_none())
            .collect();
        if routed.is_ok() && !unknown.is_empty() {
            let results = partitions
                .iter()
                .map(|tp| {
                    let error = if unknown.contains(tp) {
                        ErrorCode::UnknownTopicOrPartition
                    } else {
                        OPERATION_NOT_ATTEMPTED
                    };
                    (tp.clone(), error)
                })
                .collect();
            let response =
                Response::Coordinator(CoordinatorResponse::AddPartitionsToTxn { results });
            out.responses.push((to, correlation_id, response));
            return;
        }
        let reply = Reply::AddPartitionsToTxn {
            to,
            correlation_id,
            partitions: partitions.clone(),
        };
        let checked = routed
            .and_then(|()| self.check_producer(transactional_id, producer_id, producer_epoch));
        let current = match checked {
            Ok(current) => current.clone(),
            Err(error) => {
                out.responses.push(reply.error(error));
                return;
            }
        };
        if current.state.is_prepare() {
            out.responses
                .push(reply.error(ErrorCode::ConcurrentTransactions));
            return;
        }
        let already_added = partitions.iter().all(|tp| current.partitions.contains(tp));
        if current.state == TransactionState::Ongoing && already_added {
            out.responses.push(reply.error(ErrorCode::None));
            return;
        }
        let now_ms = env.now_ms;
        let mut metadata = current;
        if metadata.state.is_idle() {
            metadata.txn_start_ms = now_ms;
        }
        metadata.state = TransactionState::Ongoing;
        metadata.partitions.extend(partitions.iter().cloned());
        metadata.last_update_ms = now_ms;
        let purpose = WritePurpose::AddPartitions(reply);
        self.write_metadata(transactional_id, metadata, purpose, out);
    }

    /// KIP-890 part 1's question from a partition leader about to append a transaction's first
    /// batch: the partitions of the producer's ongoing transaction (empty when it has none),
    /// or why the producer is not this transactional id's current one. A write in progress
    /// does not delay the answer (Kafka answers from the current metadata too): an ongoing
    /// transaction's partitions are already durable, and one being ended is still Ongoing
    /// until its Prepare* write lands, after which the markers follow the append.
    fn verify_partitions(
        &self,
        transactional_id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
    ) -> Result<BTreeSet<TopicPartition>, ErrorCode> {
        let Some(current) = self.transactions.get(transactional_id) else {
            return Err(ErrorCode::InvalidProducerIdMapping);
        };
        if current.producer_id != producer_id.0 {
            return Err(ErrorCode::InvalidProducerIdMapping);
        }
        if current.producer_epoch != producer_epoch.0 {
            return Err(ErrorCode::ProducerFenced);
        }
        Ok(if current.state == TransactionState::Ongoing {
            current.partitions.clone()
        } else {
            BTreeSet::new()
        })
    }

    /// The routing checks AddPartitionsToTxn and EndTxn share: this shard's key, and a key at
    /// all (in that order; InitProducerId checks for a key first).
    fn check_routing(&self, env: &ShardEnv<'_>, transactional_id: &str) -> Result<(), ErrorCode> {
        self.check_coordinator(env, transactional_id)?;
        if transactional_id.is_empty() {
            return Err(ErrorCode::InvalidRequest);
        }
        Ok(())
    }

    /// The producer checks AddPartitionsToTxn and EndTxn share, then the pending check.
    fn check_producer(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
    ) -> Result<&TransactionMetadata, ErrorCode> {
        let Some(current) = self.transactions.get(transactional_id) else {
            return Err(ErrorCode::InvalidProducerIdMapping);
        };
        if current.producer_id != producer_id {
            return Err(ErrorCode::InvalidProducerIdMapping);
        }
        if current.producer_epoch != producer_epoch {
            // Kafka ≥ 2.7 (KIP-588) says PRODUCER_FENCED where it used to say
            // INVALID_PRODUCER_EPOCH.
            return Err(ErrorCode::ProducerFenced);
        }
        if self.in_progress.contains_key(transactional_id) {
            return Err(ErrorCode::ConcurrentTransactions);
        }
        Ok(current)
    }

    // ----- EndTxn -----

    #[allow(clippy::too_many_arguments)]
    fn handle_end_txn(
        &mut self,
        env: &ShardEnv<'_>,
        reply: Reply,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        committed: bool,
        out: &mut ShardOutput<TransactionRecord>,
    ) {
        let outcome = self.check_routing(env, transactional_id).and_then(|()| {
            if self.config.transaction_version_2 {
                self.end_txn_v2(transactional_id, producer_id, producer_epoch, committed)
            } else {
                self.end_txn_v1(transactional_id, producer_id, producer_epoch, committed)
            }
        });
        if outcome == Err(ErrorCode::ProducerFenced)
            && self.is_late_end_txn(transactional_id, producer_id, producer_epoch)
        {
            out.marks.push("txn-late-end-txn-fenced");
        }
        match outcome {
            Err(error) => out.responses.push(reply.error(error)),
            Ok(EndTxnOutcome::Retried) => {
                let metadata = &self.transactions[transactional_id];
                out.responses
                    .push(reply.end_txn(metadata, self.config.transaction_version_2));
            }
            Ok(EndTxnOutcome::Prepare(metadata)) => {
                let metadata = TransactionMetadata {
                    last_update_ms: env.now_ms,
                    ..metadata
                };
                self.write_metadata(transactional_id, metadata, WritePurpose::EndTxn(reply), out);
            }
        }
    }

    /// Whether an EndTxn names the epoch just before an open transaction's: the producer's
    /// previous transaction's request arriving late, which version 2's bump fences and version
    /// 1 would apply to the open one (`txn-late-end-txn-fenced`).
    fn is_late_end_txn(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
    ) -> bool {
        self.transactions
            .get(transactional_id)
            .is_some_and(|current| {
                current.state == TransactionState::Ongoing
                    && current.producer_id == producer_id
                    && i32::from(current.producer_epoch) == i32::from(producer_epoch) + 1
            })
    }

    /// Transaction version 1: the epoch stays; a retry is recognised by the outcome alone.
    fn end_txn_v1(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        committed: bool,
    ) -> Result<EndTxnOutcome, ErrorCode> {
        let current = self.check_producer(transactional_id, producer_id, producer_epoch)?;
        use TransactionState as S;
        match (current.state, committed) {
            (S::Ongoing, _) => Ok(EndTxnOutcome::Prepare(TransactionMetadata {
                state: prepare_state(committed),
                ..current.clone()
            })),
            (S::CompleteCommit, true) | (S::CompleteAbort, false) => Ok(EndTxnOutcome::Retried),
            (S::PrepareCommit, true) | (S::PrepareAbort, false) => {
                Err(ErrorCode::ConcurrentTransactions)
            }
            _ => Err(ErrorCode::InvalidTxnState),
        }
    }

    /// Transaction version 2 (Kafka 4.0's `TransactionCoordinator.endTransaction` with an
    /// epoch-bumping client): Ongoing at the producer's epoch prepares with the epoch bumped
    /// (a fresh producer id once it is exhausted), so the markers and the producer's next
    /// transaction use e + 1 and nothing sent under e can touch that transaction. A request
    /// at e against e + 1 (or against the fresh id after an overflow) is a retry of the one
    /// that bumped: answered from the completed state. An abort at the current epoch of an
    /// id with no open transaction is an empty abort, which bumps too.
    fn end_txn_v2(
        &mut self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        committed: bool,
    ) -> Result<EndTxnOutcome, ErrorCode> {
        let Some(current) = self.transactions.get(transactional_id) else {
            return Err(ErrorCode::InvalidProducerIdMapping);
        };
        let retry_on_bump = current.producer_id == producer_id
            && i32::from(current.producer_epoch) == i32::from(producer_epoch) + 1;
        let retry_on_overflow = current.last_producer_id == producer_id
            && producer_epoch == i16::MAX - 1
            && current.producer_epoch == 0;
        if current.producer_id != producer_id && !retry_on_overflow {
            return Err(ErrorCode::InvalidProducerIdMapping);
        }
        if self.in_progress.contains_key(transactional_id) {
            return Err(ErrorCode::ConcurrentTransactions);
        }
        let retry = retry_on_bump || retry_on_overflow;
        let at_current_epoch = !retry && current.producer_epoch == producer_epoch;
        use TransactionState as S;
        let (state, current) = (current.state, current.clone());
        match state {
            S::Ongoing if at_current_epoch => Ok(EndTxnOutcome::Prepare(
                self.bumped_for_end(&current, committed),
            )),
            S::PrepareCommit | S::PrepareAbort if retry => Err(ErrorCode::ConcurrentTransactions),
            S::CompleteCommit | S::CompleteAbort if retry => {
                if (state == S::CompleteCommit) == committed {
                    Ok(EndTxnOutcome::Retried)
                } else {
                    Err(ErrorCode::InvalidTxnState)
                }
            }
            S::Empty | S::CompleteCommit | S::CompleteAbort if at_current_epoch => {
                if committed {
                    Err(ErrorCode::InvalidTxnState)
                } else {
                    // Nothing to abort, but the client asked for a new epoch (e.g. after a
                    // batch failed before its partition was ever added).
                    let empty = TransactionMetadata {
                        partitions: BTreeSet::new(),
                        ..current
                    };
                    Ok(EndTxnOutcome::Prepare(self.bumped_for_end(&empty, false)))
                }
            }
            S::PrepareCommit | S::PrepareAbort if at_current_epoch => {
                Err(ErrorCode::InvalidTxnState)
            }
            _ => Err(ErrorCode::ProducerFenced),
        }
    }

    /// Prepare{Commit,Abort} with the epoch bumped for the markers (Kafka's
    /// `prepareAbortOrCommit` under transaction version 2): e + 1, or, when e is exhausted,
    /// `i16::MAX` with a fresh producer id for after the completion.
    fn bumped_for_end(
        &mut self,
        current: &TransactionMetadata,
        committed: bool,
    ) -> TransactionMetadata {
        let exhausted = is_epoch_exhausted(current.producer_epoch);
        TransactionMetadata {
            producer_epoch: if exhausted {
                i16::MAX
            } else {
                current.producer_epoch + 1
            },
            last_producer_epoch: current.producer_epoch,
            state: prepare_state(committed),
            next_producer_id: if exhausted {
                self.allocate_producer_id()
            } else {
                NO_PRODUCER_ID
            },
            ..current.clone()
        }
    }

    // ----- markers -----

    // ----- timers -----
}

/// Kafka's mapping of a failed `__transaction_state` append to the error the client sees
/// (`TransactionStateManager.appendTransactionToLog`).
pub fn coordinator_error_for_write(error: ErrorCode) -> ErrorCode {
    match error {
        ErrorCode::UnknownTopicOrPartition
        | ErrorCode::NotEnoughReplicas
        | ErrorCode::NotEnoughReplicasAfterAppend
        | ErrorCode::RequestTimedOut => ErrorCode::CoordinatorNotAvailable,
        ErrorCode::NotLeaderOrFollower | ErrorCode::KafkaStorageError => ErrorCode::NotCoordinator,
        ErrorCode::MessageTooLarge | ErrorCode::Other(_) => UNKNOWN_SERVER_ERROR,
        other => other,
    }
}

impl Shard for TransactionCoordinatorShard {
    type Record = TransactionRecord;

    fn replay(&mut self, record: &TransactionRecord) {
        match record {
            TransactionRecord::Metadata {
                transactional_id,
                metadata,
            } => {
                self.note_producer_id(metadata.producer_id);
                self.note_producer_id(metadata.last_producer_id);
                self.note_producer_id(metadata.next_producer_id);
                self.timer_backoff.remove(transactional_id);
                self.transactions
                    .insert(transactional_id.clone(), metadata.clone());
            }
            TransactionRecord::Tombstone {
                transactional_id,
                producer_id,
            } => {
                self.note_producer_id(*producer_id);
                self.timer_backoff.remove(transactional_id);
                self.transactions.remove(transactional_id);
            }
        }
    }

    fn loaded(&mut self, env: &ShardEnv<'_>, out: &mut ShardOutput<TransactionRecord>) {
        let preparing: Vec<String> = self
            .transactions
            .iter()
            .filter(|(_, metadata)| metadata.state.is_prepare())
            .map(|(id, _)| id.clone())
            .collect();
        for transactional_id in preparing {
            // The decision is durable; the previous coordinator may not have finished the
            // markers. Write them again under this coordinator's epoch.
            self.start_markers(env, &transactional_id, out);
        }
    }

    fn handle_request(
        &mut self,
        env: &ShardEnv<'_>,
        from: NodeId,
        correlation_id: u64,
        request: CoordinatorRequest,
        out: &mut ShardOutput<TransactionRecord>,
    ) {
        match request {
            CoordinatorRequest::InitProducerId {
                transactional_id,
                transaction_timeout_ms,
                producer_id,
                producer_epoch,
            } => {
                let reply = Reply::InitProducerId {
                    to: from,
                    correlation_id,
                };
                self.handle_init_producer_id(
                    env,
                    reply,
                    transactional_id,
                    transaction_timeout_ms,
                    producer_id.0,
                    producer_epoch.0,
                    out,
                );
            }
            CoordinatorRequest::AddPartitionsToTxn {
                transactional_id,
                producer_id,
                producer_epoch,
                partitions,
                verify_only: true,
            } => {
                let checked = self.check_routing(env, &transactional_id).and_then(|()| {
                    self.verify_partitions(&transactional_id, producer_id, producer_epoch)
                });
                let results = partitions
                    .into_iter()
                    .map(|tp| {
                        let error = match &checked {
                            Ok(joined) if joined.contains(&tp) => ErrorCode::None,
                            Ok(_) => ErrorCode::InvalidTxnState,
                            Err(error) => *error,
                        };
                        (tp, error)
                    })
                    .collect();
                let response =
                    Response::Coordinator(CoordinatorResponse::AddPartitionsToTxn { results });
                out.responses.push((from, correlation_id, response));
            }
            CoordinatorRequest::AddPartitionsToTxn {
                transactional_id,
                producer_id,
                producer_epoch,
                partitions,
                verify_only: false,
            } => {
                self.handle_add_partitions(
                    env,
                    from,
                    correlation_id,
                    &transactional_id,
                    producer_id.0,
                    producer_epoch.0,
                    partitions,
                    out,
                );
            }
            CoordinatorRequest::EndTxn {
                transactional_id,
                producer_id,
                producer_epoch,
                committed,
            } => {
                let reply = Reply::EndTxn {
                    to: from,
                    correlation_id,
                };
                self.handle_end_txn(
                    env,
                    reply,
                    &transactional_id,
                    producer_id.0,
                    producer_epoch.0,
                    committed,
                    out,
                );
            }
            // The runtime routes only transaction requests here; anything else is not ours.
            _ => {}
        }
    }

    fn handle_response(
        &mut self,
        env: &ShardEnv<'_>,
        token: u64,
        response: Result<Response, ErrorCode>,
        out: &mut ShardOutput<TransactionRecord>,
    ) {
        if let Some(request) = self.marker_requests.remove(&token) {
            self.handle_marker_response(env, request, response, out);
        }
    }

    fn write_completed(
        &mut self,
        env: &ShardEnv<'_>,
        write_id: u64,
        result: Result<(), ErrorCode>,
        out: &mut ShardOutput<TransactionRecord>,
    ) {
        let Some(write) = self.writes.remove(&write_id) else {
            return;
        };
        match result {
            Ok(()) => self.write_succeeded(env, write, out),
            Err(error) => self.write_failed(env, write, error, out),
        }
    }

    fn handle_timeout(&mut self, env: &ShardEnv<'_>, out: &mut ShardOutput<TransactionRecord>) {
        self.abort_timed_out(env, out);
        self.expire_transactional_ids(env, out);
        self.retry_due_markers(env, out);
    }

    fn poll_timeout(&self) -> Option<i64> {
        let transaction_deadlines = self
            .transactions
            .iter()
            .filter_map(|(id, metadata)| self.timer_deadline(id, metadata));
        let retries = self
            .in_progress
            .values()
            .filter_map(|progress| match progress {
                Progress::Completing(job) => job.retry_at_ms,
                Progress::Writing => None,
            });
        transaction_deadlines.chain(retries).min()
    }

    fn unloaded(&mut self, out: &mut ShardOutput<TransactionRecord>) {
        for (_, write) in std::mem::take(&mut self.writes) {
            match write.purpose {
                WritePurpose::Init(reply)
                | WritePurpose::FenceAbort(Some(reply))
                | WritePurpose::AddPartitions(reply)
                | WritePurpose::EndTxn(reply) => {
                    out.responses.push(reply.error(ErrorCode::NotCoordinator));
                }
                WritePurpose::FenceAbort(None) | WritePurpose::Complete | WritePurpose::Expire => {}
            }
        }
        self.in_progress.clear();
        self.marker_requests.clear();
    }
}

#[cfg(test)]
#[path = "transaction_tests.rs"]
mod tests;
