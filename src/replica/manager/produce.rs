//! Produce on a leader: client writes (acks=1 and acks=all with `min.insync.replicas`), the
//! read-only gate of KIP-1279 mirror topics, and the acks=all produces waiting for the high
//! watermark.

use super::{ReplicaContext, ReplicaManager};
use crate::common::{LeaderEpoch, MirrorState, TopicId};
use crate::events::BrokerEvent;
use crate::log::AppendOrigin;
use crate::protocol::{Acks, ErrorCode, NodeId, Offset, ReplicaResponse, Response, TopicPartition};
use crate::record::RecordBatch;
use crate::replica::storage::BrokerStorage;
use crate::replica::Role;
use crate::switches::BrokenSwitch;

/// An acks=all produce waiting for the high watermark to pass its records.
#[derive(Debug, Clone)]
pub(super) struct DelayedProduce {
    pub(super) reply_to: NodeId,
    pub(super) correlation_id: u64,
    pub(super) topic_partition: TopicPartition,
    pub(super) leader_epoch: LeaderEpoch,
    pub(super) base_offset: Offset,
    pub(super) required_offset: Offset,
    pub(super) log_append_time_ms: Option<i64>,
    pub(super) deadline_ms: i64,
}

/// What a Produce request did to the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProduceOutcome {
    /// Refused or failed: answered, the log unchanged.
    Refused,
    /// Appended (or recognised as a duplicate): the high watermark may move now, and fetches
    /// waiting for data may complete.
    Appended,
}

/// What KIP-1279's read-only gate says of a client write to a partition. The gate belongs to
/// the mirroring layer above the replicas (`crate::mirror::gate`), so the broker decides it
/// and the replica manager applies it, after the leadership checks and before the append.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriteGate {
    /// The partition's mirror state as the append's event reports it; `None` for a topic
    /// outside every mirror.
    pub mirror_state: Option<MirrorState>,
    /// The mirror state that refuses the write (READ_ONLY_TOPIC), if the gate refuses it.
    pub refused_in: Option<MirrorState>,
}

/// One Produce request's fields.
#[derive(Debug, Clone)]
pub struct ProduceRequest {
    /// Who asked.
    pub from: NodeId,
    /// Its correlation id.
    pub correlation_id: u64,
    /// acks=1 or acks=all.
    pub acks: Acks,
    /// How long an acks=all produce may wait for the ISR.
    pub timeout_ms: i64,
    /// The partition written.
    pub topic_partition: TopicPartition,
    /// The batch.
    pub batch: RecordBatch,
    /// The topic id the producer means, if it names one (Produce v13).
    pub topic_id: Option<TopicId>,
}

impl<S: BrokerStorage> ReplicaManager<S> {
    /// Appends a client batch as the partition's leader, or answers why not (not the leader,
    /// refused by `gate`, too small an ISR for acks=all, a log error). An acks=1 produce is
    /// answered at once, an acks=all one waits for the high watermark.
    pub fn handle_produce(
        &mut self,
        context: &mut ReplicaContext<'_>,
        request: ProduceRequest,
        gate: WriteGate,
    ) -> ProduceOutcome {
        let ProduceRequest {
            from,
            correlation_id,
            acks,
            timeout_ms,
            topic_partition,
            batch,
            topic_id,
        } = request;
        let refuse = |context: &mut ReplicaContext<'_>, error, log_start_offset| {
            respond_produce(
                context,
                from,
                correlation_id,
                error,
                Offset::NONE,
                None,
                log_start_offset,
            );
            ProduceOutcome::Refused
        };
        let min_insync = self.min_insync_replicas(context.image, &topic_partition.topic);
        let Some(partition) = self.partitions.get_mut(&topic_partition) else {
            return refuse(context, ErrorCode::NotLeaderOrFollower, Offset::NONE);
        };
        let Role::Leader(state) = &partition.role else {
            return refuse(context, ErrorCode::NotLeaderOrFollower, Offset::NONE);
        };
        if topic_id.is_some_and(|id| id != partition.topic_id) {
            // Produce v13: the producer means a topic of this name that was deleted since;
            // its sequences are not this partition's.
            return refuse(context, ErrorCode::UnknownTopicId, Offset::NONE);
        }
        let leader_epoch = state.leader_epoch;
        let mirror_state = gate.mirror_state;
        if let Some(state) = gate.refused_in {
            // KIP-1279: a mirror topic is read-only until its partition is STOPPED.
            context.events.push(BrokerEvent::MirrorWriteRefused {
                topic_partition: topic_partition.clone(),
                mirror_state: state,
            });
            let log_start = partition.log.log_start_offset();
            return refuse(context, ErrorCode::ReadOnlyTopic, log_start);
        }
        if acks == Acks::All && state.isr.len() < min_insync {
            let log_start = partition.log.log_start_offset();
            return refuse(context, ErrorCode::NotEnoughReplicas, log_start);
        }
        let appended = partition.log.append_as_leader(
            &batch,
            leader_epoch,
            AppendOrigin::Client,
            context.now_ms,
        );
        let info = match appended {
            Ok(info) => info,
            Err(error) => {
                let log_start = partition.log.log_start_offset();
                return refuse(context, ErrorCode::from(&error), log_start);
            }
        };
        if info.duplicate {
            context.events.push(BrokerEvent::DuplicateBatch {
                topic_partition: topic_partition.clone(),
                first_offset: info.first_offset,
            });
        } else {
            context.events.push(BrokerEvent::LeaderAppend {
                topic_partition: topic_partition.clone(),
                first_offset: info.first_offset,
                last_offset: info.last_offset,
                leader_epoch,
                mirror_state,
                control: batch.is_control(),
            });
        }
        let ack_at_once = acks == Acks::Leader
            || self
                .config
                .broken
                .contains(&BrokenSwitch::AckBeforeReplication);
        match if ack_at_once { Acks::Leader } else { acks } {
            Acks::Leader => respond_produce(
                context,
                from,
                correlation_id,
                ErrorCode::None,
                info.first_offset,
                info.log_append_time_ms,
                info.log_start_offset,
            ),
            Acks::All => self.delayed_produces.push(DelayedProduce {
                reply_to: from,
                correlation_id,
                topic_partition,
                leader_epoch,
                base_offset: info.first_offset,
                required_offset: info.last_offset + 1,
                log_append_time_ms: info.log_append_time_ms,
                deadline_ms: context.now_ms + timeout_ms,
            }),
        }
        ProduceOutcome::Appended
    }

    /// Answers every acks=all produce whose offsets the high watermark passed, and fails those
    /// whose partition this broker no longer leads in the same epoch.
    pub fn complete_delayed_produces(&mut self, context: &mut ReplicaContext<'_>) {
        let pending = std::mem::take(&mut self.delayed_produces);
        for produce in pending {
            let partition = self.partitions.get(&produce.topic_partition);
            let leader = partition.and_then(|p| p.leader_state().map(|s| (p, s)));
            let (error, base_offset, append_time, log_start) = match leader {
                Some((partition, state)) if state.leader_epoch == produce.leader_epoch => {
                    if partition.log.high_watermark() >= produce.required_offset {
                        let min_insync =
                            self.min_insync_replicas(context.image, &produce.topic_partition.topic);
                        let error = if state.isr.len() < min_insync {
                            ErrorCode::NotEnoughReplicasAfterAppend
                        } else {
                            ErrorCode::None
                        };
                        let log_start = partition.log.log_start_offset();
                        (
                            error,
                            produce.base_offset,
                            produce.log_append_time_ms,
                            log_start,
                        )
                    } else if context.now_ms >= produce.deadline_ms {
                        (ErrorCode::RequestTimedOut, Offset::NONE, None, Offset::NONE)
                    } else {
                        self.delayed_produces.push(produce);
                        continue;
                    }
                }
                _ => (
                    ErrorCode::NotLeaderOrFollower,
                    Offset::NONE,
                    None,
                    Offset::NONE,
                ),
            };
            respond_produce(
                context,
                produce.reply_to,
                produce.correlation_id,
                error,
                base_offset,
                append_time,
                log_start,
            );
        }
    }

    /// Fails every produce waiting on `topic_partition` with `error` (its leadership left).
    pub fn fail_delayed_produces(
        &mut self,
        context: &mut ReplicaContext<'_>,
        topic_partition: &TopicPartition,
        error: ErrorCode,
    ) {
        let (failed, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.delayed_produces)
            .into_iter()
            .partition(|produce| &produce.topic_partition == topic_partition);
        self.delayed_produces = kept;
        for produce in failed {
            respond_produce(
                context,
                produce.reply_to,
                produce.correlation_id,
                error,
                Offset::NONE,
                None,
                Offset::NONE,
            );
        }
    }
}

fn respond_produce(
    context: &mut ReplicaContext<'_>,
    to: NodeId,
    correlation_id: u64,
    error: ErrorCode,
    base_offset: Offset,
    log_append_time_ms: Option<i64>,
    log_start_offset: Offset,
) {
    context.outbox.respond(
        to,
        correlation_id,
        Response::Replica(ReplicaResponse::Produce {
            error,
            base_offset,
            log_append_time_ms,
            log_start_offset,
        }),
    );
}
