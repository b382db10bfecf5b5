//! DeleteRecords at the partition leader.
//!
//! Contract, partition by partition: not the leader → `NotLeaderOrFollower` (an unknown
//! partition `UnknownTopicOrPartition`); refused by KIP-1279's gate (a mirror partition this
//! leader has not seen STOPPED, spec §3.8) → `MirrorTopicNotStopped`; an offset above the high
//! watermark or below −1 → `OffsetOutOfRange`; otherwise the log start moves up to the offset
//! (−1: the high watermark) and the answer carries the new log start. Followers follow the
//! leader's log start through their fetches. (Kafka answers once every replica's low
//! watermark has moved; this model answers at the leader.)

use super::{ReplicaContext, ReplicaManager, WriteGate};
use crate::common::LeaderEpoch;
use crate::events::BrokerEvent;
use crate::protocol::{ErrorCode, NodeId, Offset, ReplicaResponse, Response, TopicPartition};
use crate::replica::storage::BrokerStorage;
use crate::replica::Partition;

impl<S: BrokerStorage> ReplicaManager<S> {
    /// Answers DeleteRecords (see the module doc); `gate` is asked about each led partition.
    pub fn handle_delete_records(
        &mut self,
        context: &mut ReplicaContext<'_>,
        from: NodeId,
        correlation_id: u64,
        partitions: Vec<(TopicPartition, Offset)>,
        mut gate: impl FnMut(&TopicPartition, &Partition<S::Disk>) -> WriteGate,
    ) {
        let results = partitions
            .into_iter()
            .map(
                |(tp, offset)| match self.delete_records(context, &tp, offset, &mut gate) {
                    Ok(low_watermark) => (tp, ErrorCode::None, low_watermark),
                    Err(error) => (tp, error, Offset::NONE),
                },
            )
            .collect();
        context.outbox.respond(
            from,
            correlation_id,
            Response::Replica(ReplicaResponse::DeleteRecords { results }),
        );
    }

    fn delete_records(
        &mut self,
        context: &mut ReplicaContext<'_>,
        tp: &TopicPartition,
        offset: Offset,
        gate: &mut impl FnMut(&TopicPartition, &Partition<S::Disk>) -> WriteGate,
    ) -> Result<Offset, ErrorCode> {
        let (partition, _) = self.led_partition(tp, LeaderEpoch::NONE)?;
        let gate = gate(tp, partition);
        if gate.refused_in.is_some() {
            return Err(ErrorCode::MirrorTopicNotStopped);
        }
        let high_watermark = partition.log.high_watermark();
        // Kafka's DeleteRecords names the high watermark as offset -1.
        let target = match offset {
            Offset(-1) => high_watermark,
            offset if (Offset(0)..=high_watermark).contains(&offset) => offset,
            _ => return Err(ErrorCode::OffsetOutOfRange),
        };
        let log = &mut self.partitions.get_mut(tp).expect("led above").log;
        log.maybe_increment_log_start_offset(target)
            .map_err(|_| ErrorCode::KafkaStorageError)?;
        let log_start_offset = log.log_start_offset();
        context.events.push(BrokerEvent::RecordsDeleted {
            topic_partition: tp.clone(),
            log_start_offset,
            mirror_state: gate.mirror_state,
        });
        Ok(log_start_offset)
    }
}
