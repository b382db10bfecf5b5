//! KIP-1279's mirror coordinator as a coordinator shard: the stored state of every mirror
//! partition, one shard per `__mirror_state` partition.
//!
//! Contract (the seed's coordinator, with the prototype's fencing rules, spec §2.4 and §6):
//! - **Keys.** A mirror partition is keyed by (mirror name, topic id, partition) and lives in
//!   `__mirror_state` partition [`mirror_state_partition`] (Kafka's string hash over the
//!   triple: the spec leaves the exact hash open). Requests name the coordinator partition
//!   they were grouped by; a key that does not hash to this shard is answered
//!   `NotCoordinator` for that partition alone.
//! - **Availability.** Before [`Shard::loaded`] every request is answered
//!   `CoordinatorLoadInProgress`; after [`Shard::unloaded`] (and for writes still pending then)
//!   `NotCoordinator`; while the metadata image has no `__mirror_state` partitions
//!   `CoordinatorNotAvailable`.
//! - **Persisted state** ("write, then apply": it changes only in [`Shard::replay`]): per key
//!   the last [`PartitionStateValue`] and the last mirrored (epoch, offset), plus the greatest
//!   leader epoch and state epoch any record carried. A tombstone of the state removes the
//!   state and both epochs; a tombstone of the last mirrored epoch removes that.
//! - **ReadMirrorStates** answers from committed state only (`Unknown`, epochs −1 for a key
//!   without a record), with the coordinator epoch so the reader can compare coordinators.
//! - **WriteMirrorStates** validates each partition against the state as it will be once the
//!   writes already accepted have committed: a leader epoch (≠ −1) below the greatest stored
//!   one is `FencedLeaderEpoch`; a state epoch (≠ −1) below the stored one is
//!   `FencedStateEpoch`; a state change that [`is_valid_transition`] forbids is
//!   `InvalidClusterMirrorState` (the prototype answers success there, spec §9 S-19; this
//!   model reports it). Accepted partitions get state epoch = stored + 1 (0 for the first),
//!   leader epoch = max(stored, request), and for FAILED the retry counter (−1 when
//!   non-retryable, else the previous count + 1) and the state failed from; the other states
//!   keep or clear those failure details as [`keeps_failure_record`] says (a retry keeps them,
//!   the operator's PAUSED and STOPPED clear them), and a write with `recover` clears them
//!   (RecoverMirrorTopics; a retried partition's first mirrored append). A
//!   write may carry only a last mirrored epoch. All accepted partitions of a request are
//!   written as one batch and answered once it commits; refused ones are answered with their error in the same response.
//! - **DeleteMirrorStates** tombstones both records of every key of the mirror in this shard
//!   and answers once the tombstones commit.
//!
//! Not modelled yet: checking that the mirror exists in the metadata image (the image has no
//! mirror resources yet), and the prototype's batching of many coordinator partitions in one
//! request (the sender sends one request per coordinator partition).

use crate::protocol::{
    CoordinatorRequest, CoordinatorResponse, ErrorCode, LeaderEpoch, MirrorPartitionId,
    MirrorPartitionStatus, MirrorStateWrite, NodeId, Offset, Response,
};
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::coordinator::{
    partition_count, partition_for, Shard, ShardEnv, ShardOutput, ShardWrite,
};
use crate::mirror::{is_valid_transition, keeps_failure_record, MirrorState};

/// The mirror coordinator's internal topic.
pub const MIRROR_STATE_TOPIC: &str = "__mirror_state";

/// The string a mirror partition's key hashes as.
pub fn mirror_state_key(mirror: &str, id: &MirrorPartitionId) -> String {
    format!("{mirror}\u{0}{}\u{0}{}", id.topic_id.0, id.partition)
}

/// The `__mirror_state` partition that coordinates a mirror partition.
pub fn mirror_state_partition(mirror: &str, id: &MirrorPartitionId, partitions: i32) -> i32 {
    partition_for(&mirror_state_key(mirror, id), partitions)
}

/// The `__mirror_state` partition whose leader runs a mirror's periodic sync (the mirror's
/// "coordinator broker", spec §7).
pub fn mirror_sync_partition(mirror: &str, partitions: i32) -> i32 {
    partition_for(mirror, partitions)
}

/// The stored state of a mirror partition (KIP-1279 `MirrorPartitionStateValue`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionStateValue {
    /// The state.
    pub state: MirrorState,
    /// The greatest leader epoch of the partition that wrote a state.
    pub leader_epoch: LeaderEpoch,
    /// Increases by one with every accepted state.
    pub state_epoch: i32,
    /// For FAILED: the state it failed in.
    pub previous_state: Option<MirrorState>,
    /// 0: not failed; n ≥ 1: the n-th failure in a row; −1: non-retryable.
    pub retry_attempt: i16,
    /// For FAILED: why.
    pub error_message: Option<String>,
    /// The writer's `MirrorStateWrite::own_writes_only` (absent in older records: false).
    #[serde(default)]
    pub own_writes_only: bool,
    /// The source topic id the partition mirrors (`MirrorStateWrite::source_topic_id`):
    /// kept from the stored value when a write does not carry it, forgotten at STOPPED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_topic_id: Option<crate::protocol::TopicId>,
}

/// One record of a `__mirror_state` partition, stored as JSON; `None` values are tombstones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MirrorStateRecord {
    /// `MirrorPartitionStateKey` / `MirrorPartitionStateValue`.
    PartitionState {
        /// The mirror.
        mirror: String,
        /// The partition.
        id: MirrorPartitionId,
        /// The state, or `None` for a tombstone.
        value: Option<PartitionStateValue>,
    },
    /// `LastMirroredEpochsKey` / `LastMirroredEpochsValue`: written at STOPPING for failback.
    LastMirroredEpoch {
        /// The mirror.
        mirror: String,
        /// The partition.
        id: MirrorPartitionId,
        /// (last mirrored leader epoch, log end offset at the stop), or `None`.
        value: Option<(LeaderEpoch, Offset)>,
    },
}

/// What the coordinator holds for one key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredMirrorPartition {
    /// The last state record, if any.
    pub value: Option<PartitionStateValue>,
    /// The last mirrored (epoch, offset), if persisted.
    pub last_mirrored: Option<(LeaderEpoch, Offset)>,
}

impl StoredMirrorPartition {
    /// The greatest leader epoch a state record carried (−1 without one). Every accepted
    /// record carries `max(stored, request)`, so it is the last record's.
    pub fn max_leader_epoch(&self) -> LeaderEpoch {
        self.value
            .as_ref()
            .map_or(LeaderEpoch::NONE, |v| v.leader_epoch)
    }

    /// The greatest state epoch (−1 without a state): each record's is the previous plus one.
    pub fn max_state_epoch(&self) -> i32 {
        self.value.as_ref().map_or(-1, |v| v.state_epoch)
    }

    fn state(&self) -> MirrorState {
        self.value
            .as_ref()
            .map_or(MirrorState::Unknown, |v| v.state)
    }

    fn is_empty(&self) -> bool {
        self.value.is_none() && self.last_mirrored.is_none()
    }
}

type Key = (String, MirrorPartitionId);
type Table = BTreeMap<Key, StoredMirrorPartition>;

/// Applies one record to a table (replay, and the projection of accepted writes).
fn apply(table: &mut Table, record: &MirrorStateRecord) {
    match record {
        MirrorStateRecord::PartitionState { mirror, id, value } => {
            let key = (mirror.clone(), *id);
            let entry = table.entry(key.clone()).or_default();
            entry.value = value.clone();
            if entry.is_empty() {
                table.remove(&key);
            }
        }
        MirrorStateRecord::LastMirroredEpoch { mirror, id, value } => {
            let key = (mirror.clone(), *id);
            let entry = table.entry(key.clone()).or_default();
            entry.last_mirrored = *value;
            if entry.is_empty() {
                table.remove(&key);
            }
        }
    }
}

/// A request waiting for its write.
#[derive(Debug, Clone)]
enum PendingWrite {
    States {
        to: NodeId,
        correlation_id: u64,
        /// Per partition: `None` if written (takes the write's outcome), else its refusal;
        /// with the state epoch it gets.
        results: Vec<(MirrorPartitionId, Option<ErrorCode>, i32)>,
        records: Vec<MirrorStateRecord>,
    },
    Delete {
        to: NodeId,
        correlation_id: u64,
        records: Vec<MirrorStateRecord>,
    },
}

impl PendingWrite {
    fn records(&self) -> &[MirrorStateRecord] {
        match self {
            Self::States { records, .. } | Self::Delete { records, .. } => records,
        }
    }
}

/// The mirror coordinator shard; see the module doc.
#[derive(Debug, Clone, Default)]
pub struct MirrorCoordinatorShard {
    /// Committed state (replay only).
    committed: Table,
    /// Committed state plus every accepted write still pending, in order: what new writes
    /// are validated against.
    projected: Table,
    pending: BTreeMap<u64, PendingWrite>,
    next_write_id: u64,
    loaded: bool,
    unloaded: bool,
    /// Test-only (`BrokenSwitch::MirrorSkipPreparing`): also accept UNKNOWN → MIRRORING.
    pub accept_skipped_preparing: bool,
    /// Test-only (`BrokenSwitch::MirrorCoordinatorIgnoresEpochs`): no fencing; an accepted
    /// write stores the writer's leader epoch and its state epoch plus one.
    pub ignore_epochs: bool,
}

type Out = ShardOutput<MirrorStateRecord>;

impl MirrorCoordinatorShard {
    /// An empty shard, to be loaded by replay.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every committed key with what is stored for it, in key order.
    pub fn partitions(
        &self,
    ) -> impl Iterator<Item = (&str, &MirrorPartitionId, &StoredMirrorPartition)> {
        self.committed
            .iter()
            .map(|((mirror, id), stored)| (mirror.as_str(), id, stored))
    }

    /// The committed state of one key (`None` without records).
    pub fn stored(&self, mirror: &str, id: &MirrorPartitionId) -> Option<&StoredMirrorPartition> {
        self.committed.get(&(mirror.to_owned(), *id))
    }

    /// Writes waiting to commit.
    pub fn pending_writes(&self) -> usize {
        self.pending.len()
    }

    /// The request-level error for a request now, if any.
    fn unavailable(&self, env: &ShardEnv<'_>) -> Option<ErrorCode> {
        if self.unloaded {
            Some(ErrorCode::NotCoordinator)
        } else if !self.loaded {
            Some(ErrorCode::CoordinatorLoadInProgress)
        } else if partition_count(env.image, MIRROR_STATE_TOPIC) == 0 {
            Some(ErrorCode::CoordinatorNotAvailable)
        } else {
            None
        }
    }

    fn owns(env: &ShardEnv<'_>, mirror: &str, id: &MirrorPartitionId) -> bool {
        env.owns_key(&mirror_state_key(mirror, id)) == Some(true)
    }

    fn handle_read(
        &self,
        env: &ShardEnv<'_>,
        mirror: &str,
        partitions: Vec<MirrorPartitionId>,
    ) -> Response {
        if let Some(error) = self.unavailable(env) {
            return Response::Coordinator(CoordinatorResponse::ReadMirrorStates {
                error,
                coordinator_epoch: env.coordinator_epoch,
                partitions: Vec::new(),
            });
        }
        let partitions = partitions
            .into_iter()
            .map(|id| {
                let mut status = status_of(id, self.stored(mirror, &id));
                if !Self::owns(env, mirror, &id) {
                    status = status_of(id, None);
                    status.error = ErrorCode::NotCoordinator;
                }
                status
            })
            .collect();
        Response::Coordinator(CoordinatorResponse::ReadMirrorStates {
            error: ErrorCode::None,
            coordinator_epoch: env.coordinator_epoch,
            partitions,
        })
    }

    fn handle_write(
        &mut self,
        env: &ShardEnv<'_>,
        (to, correlation_id): (NodeId, u64),
        mirror: &str,
        writes: Vec<MirrorStateWrite>,
        out: &mut Out,
    ) {
        if let Some(error) = self.unavailable(env) {
            let partitions = writes.iter().map(|w| (w.id, error, -1)).collect();
            let response =
                Response::Coordinator(CoordinatorResponse::WriteMirrorStates { error, partitions });
            out.responses.push((to, correlation_id, response));
            return;
        }
        let mut results = Vec::with_capacity(writes.len());
        let mut records = Vec::new();
        for write in writes {
            match self.accept(env, mirror, &write) {
                Ok((state_epoch, accepted)) => {
                    for record in &accepted {
                        apply(&mut self.projected, record);
                    }
                    records.extend(accepted);
                    results.push((write.id, None, state_epoch));
                }
                Err(error) => results.push((write.id, Some(error), -1)),
            }
        }
        if records.is_empty() {
            let partitions = results
                .into_iter()
                .map(|(id, error, epoch)| (id, error.unwrap_or(ErrorCode::None), epoch))
                .collect();
            out.responses.push((
                to,
                correlation_id,
                Response::Coordinator(CoordinatorResponse::WriteMirrorStates {
                    error: ErrorCode::None,
                    partitions,
                }),
            ));
            return;
        }
        let pending = PendingWrite::States {
            to,
            correlation_id,
            results,
            records,
        };
        self.start_write(pending, out);
    }

    /// Validates one partition's write against the projected state; the records to write and
    /// the state epoch the partition will have.
    fn accept(
        &self,
        env: &ShardEnv<'_>,
        mirror: &str,
        write: &MirrorStateWrite,
    ) -> Result<(i32, Vec<MirrorStateRecord>), ErrorCode> {
        if !Self::owns(env, mirror, &write.id) {
            return Err(ErrorCode::NotCoordinator);
        }
        let stored = self
            .projected
            .get(&(mirror.to_owned(), write.id))
            .cloned()
            .unwrap_or_default();
        let fenced = !self.ignore_epochs;
        if fenced
            && write.leader_epoch != LeaderEpoch::NONE
            && stored.max_leader_epoch() > write.leader_epoch
        {
            return Err(ErrorCode::FencedLeaderEpoch);
        }
        if fenced && write.state_epoch != -1 && stored.max_state_epoch() > write.state_epoch {
            return Err(ErrorCode::FencedStateEpoch);
        }
        let mut records = Vec::new();
        let mut state_epoch = stored.max_state_epoch();
        if let Some(target) = write.state {
            let skipped_preparing = self.accept_skipped_preparing
                && stored.state() == MirrorState::Unknown
                && target == MirrorState::Mirroring;
            if !is_valid_transition(stored.state(), target) && !skipped_preparing {
                return Err(ErrorCode::InvalidClusterMirrorState);
            }
            state_epoch = stored.max_state_epoch() + 1;
            let mut value = next_value(&stored, write, target, state_epoch);
            if self.ignore_epochs {
                // Broken on purpose: the writer's epochs are trusted.
                if write.state_epoch != -1 {
                    state_epoch = write.state_epoch + 1;
                    value.state_epoch = state_epoch;
                }
                if write.leader_epoch != LeaderEpoch::NONE {
                    value.leader_epoch = write.leader_epoch;
                }
            }
            records.push(MirrorStateRecord::PartitionState {
                mirror: mirror.to_owned(),
                id: write.id,
                value: Some(value),
            });
            let resumed_stop = stored.state() == MirrorState::Stopping
                || (stored.state() == MirrorState::Failed
                    && stored.value.as_ref().and_then(|v| v.previous_state)
                        == Some(MirrorState::Stopping));
            if target == MirrorState::Stopping
                && !resumed_stop
                && write.last_mirrored.is_none()
                && stored.last_mirrored.is_some()
            {
                // A new stop: the last mirrored epoch an earlier session's stop persisted is
                // not what this one mirrored. Kept, a leader that re-reads the state (after a
                // fenced write, or a failover) would take it for this stop's capture and skip
                // its own MIRROR_PID_RESET behind a mirrored one (generated seed
                // 3307716073686285: c's stale 0@4 over b's mirrored reset at 4 in epoch 1).
                records.push(MirrorStateRecord::LastMirroredEpoch {
                    mirror: mirror.to_owned(),
                    id: write.id,
                    value: None,
                });
            }
        }
        if let Some(last_mirrored) = write.last_mirrored {
            records.push(MirrorStateRecord::LastMirroredEpoch {
                mirror: mirror.to_owned(),
                id: write.id,
                value: Some(last_mirrored),
            });
        }
        if records.is_empty() {
            return Err(ErrorCode::InvalidRequest);
        }
        Ok((state_epoch, records))
    }

    fn handle_delete(
        &mut self,
        env: &ShardEnv<'_>,
        (to, correlation_id): (NodeId, u64),
        mirror: &str,
        out: &mut Out,
    ) {
        if let Some(error) = self.unavailable(env) {
            let response = Response::Coordinator(CoordinatorResponse::DeleteMirrorStates { error });
            out.responses.push((to, correlation_id, response));
            return;
        }
        let mut records = Vec::new();
        for ((key_mirror, id), stored) in &self.projected {
            if key_mirror != mirror {
                continue;
            }
            if stored.value.is_some() {
                records.push(MirrorStateRecord::PartitionState {
                    mirror: mirror.to_owned(),
                    id: *id,
                    value: None,
                });
            }
            if stored.last_mirrored.is_some() {
                records.push(MirrorStateRecord::LastMirroredEpoch {
                    mirror: mirror.to_owned(),
                    id: *id,
                    value: None,
                });
            }
        }
        if records.is_empty() {
            let response = Response::Coordinator(CoordinatorResponse::DeleteMirrorStates {
                error: ErrorCode::None,
            });
            out.responses.push((to, correlation_id, response));
            return;
        }
        for record in &records {
            apply(&mut self.projected, record);
        }
        let pending = PendingWrite::Delete {
            to,
            correlation_id,
            records,
        };
        self.start_write(pending, out);
    }

    fn start_write(&mut self, pending: PendingWrite, out: &mut Out) {
        let write_id = self.next_write_id;
        self.next_write_id += 1;
        out.writes.push(ShardWrite {
            write_id,
            records: pending.records().to_vec(),
        });
        self.pending.insert(write_id, pending);
    }

    /// After a failed write: the projection is the committed state plus the writes still
    /// pending, in the order they were asked for.
    fn rebuild_projection(&mut self) {
        self.projected = self.committed.clone();
        for pending in self.pending.values() {
            for record in pending.records() {
                apply(&mut self.projected, record);
            }
        }
    }
}

/// The new stored value for an accepted state change.
fn next_value(
    stored: &StoredMirrorPartition,
    write: &MirrorStateWrite,
    target: MirrorState,
    state_epoch: i32,
) -> PartitionStateValue {
    let leader_epoch = stored.max_leader_epoch().max(write.leader_epoch);
    let previous = stored.value.clone();
    // A stop ends the mirroring of this source topic: a later add may mirror another one.
    let source_topic_id = match target {
        MirrorState::Stopped => None,
        _ => write
            .source_topic_id
            .or_else(|| previous.as_ref().and_then(|v| v.source_topic_id)),
    };
    let (previous_state, retry_attempt, error_message) = match target {
        MirrorState::Failed => {
            let was = previous.as_ref();
            let retry_attempt = if write.non_retryable {
                -1
            } else {
                match was.map(|v| v.retry_attempt) {
                    Some(-1) => -1,
                    Some(attempt) => attempt.saturating_add(1),
                    None => 1,
                }
            };
            // Re-asserting FAILED keeps the state it first failed in.
            let previous_state = match was {
                Some(v) if v.state == MirrorState::Failed => v.previous_state,
                Some(v) => Some(v.state),
                None => None,
            };
            (previous_state, retry_attempt, write.error_message.clone())
        }
        _ if write.recover => (None, 0, None),
        _ => match previous {
            Some(v) if keeps_failure_record(v.state, target) => {
                (v.previous_state, v.retry_attempt, v.error_message)
            }
            _ => (None, 0, None),
        },
    };
    PartitionStateValue {
        source_topic_id,
        state: target,
        leader_epoch,
        state_epoch,
        previous_state,
        retry_attempt,
        error_message,
        own_writes_only: write.own_writes_only,
    }
}

/// A read answer for one key.
fn status_of(
    id: MirrorPartitionId,
    stored: Option<&StoredMirrorPartition>,
) -> MirrorPartitionStatus {
    let stored = stored.cloned().unwrap_or_default();
    let value = stored.value.as_ref();
    MirrorPartitionStatus {
        source_topic_id: value.and_then(|v| v.source_topic_id),
        id,
        error: ErrorCode::None,
        state: stored.state(),
        leader_epoch: stored.max_leader_epoch(),
        state_epoch: value.map_or(-1, |v| v.state_epoch),
        previous_state: value.and_then(|v| v.previous_state),
        retry_attempt: value.map_or(0, |v| v.retry_attempt),
        error_message: value.and_then(|v| v.error_message.clone()),
        last_mirrored: stored.last_mirrored,
        own_writes_only: value.is_some_and(|v| v.own_writes_only),
    }
}

impl Shard for MirrorCoordinatorShard {
    type Record = MirrorStateRecord;

    fn replay(&mut self, record: &MirrorStateRecord) {
        // After loading, only this shard's own writes are replayed, and the projection
        // already holds them.
        apply(&mut self.committed, record);
    }

    fn loaded(&mut self, _env: &ShardEnv<'_>, _out: &mut Out) {
        self.loaded = true;
        self.projected = self.committed.clone();
    }

    fn handle_request(
        &mut self,
        env: &ShardEnv<'_>,
        from: NodeId,
        correlation_id: u64,
        request: CoordinatorRequest,
        out: &mut Out,
    ) {
        match request {
            CoordinatorRequest::ReadMirrorStates {
                mirror, partitions, ..
            } => {
                let response = self.handle_read(env, &mirror, partitions);
                out.responses.push((from, correlation_id, response));
            }
            CoordinatorRequest::WriteMirrorStates { mirror, writes, .. } => {
                self.handle_write(env, (from, correlation_id), &mirror, writes, out)
            }
            CoordinatorRequest::DeleteMirrorStates { mirror, .. } => {
                self.handle_delete(env, (from, correlation_id), &mirror, out)
            }
            other => panic!("the mirror coordinator was routed {}", other.kind()),
        }
    }

    fn handle_response(
        &mut self,
        _env: &ShardEnv<'_>,
        _token: u64,
        _response: Result<Response, ErrorCode>,
        _out: &mut Out,
    ) {
        // The mirror coordinator sends no requests.
    }

    fn write_completed(
        &mut self,
        _env: &ShardEnv<'_>,
        write_id: u64,
        result: Result<(), ErrorCode>,
        out: &mut Out,
    ) {
        let Some(pending) = self.pending.remove(&write_id) else {
            return;
        };
        let error = match result {
            Ok(()) => ErrorCode::None,
            Err(error) => crate::coordinator::group::normalize_write_error(error),
        };
        if !error.is_none() {
            self.rebuild_projection();
        }
        if self.pending.is_empty() {
            assert_eq!(
                self.projected, self.committed,
                "with no write pending, the projection is the committed state"
            );
        }
        answer_pending(pending, error, out);
    }

    fn handle_timeout(&mut self, _env: &ShardEnv<'_>, _out: &mut Out) {}

    fn poll_timeout(&self) -> Option<i64> {
        None
    }

    fn unloaded(&mut self, out: &mut Out) {
        self.unloaded = true;
        for (_, pending) in std::mem::take(&mut self.pending) {
            answer_pending(pending, ErrorCode::NotCoordinator, out);
        }
    }
}

/// Answers a request whose write completed with `error` (`None` on success): refused
/// partitions keep their refusal, written ones take the write's outcome.
fn answer_pending(pending: PendingWrite, error: ErrorCode, out: &mut Out) {
    match pending {
        PendingWrite::States {
            to,
            correlation_id,
            results,
            ..
        } => {
            let partitions = results
                .into_iter()
                .map(|(id, refused, epoch)| match refused {
                    Some(refusal) => (id, refusal, -1),
                    None if error.is_none() => (id, ErrorCode::None, epoch),
                    None => (id, error, -1),
                })
                .collect();
            let response = Response::Coordinator(CoordinatorResponse::WriteMirrorStates {
                error: ErrorCode::None,
                partitions,
            });
            out.responses.push((to, correlation_id, response));
        }
        PendingWrite::Delete {
            to, correlation_id, ..
        } => {
            out.responses.push((
                to,
                correlation_id,
                Response::Coordinator(CoordinatorResponse::DeleteMirrorStates { error }),
            ));
        }
    }
}

#[cfg(test)]
#[path = "coordinator_tests.rs"]
mod tests;
