//! DeleteRecords at the partition leader.
//!
//! Contract, partition by partition: not the leader → `NotLeaderOrFollower`; a mirror partition
//! (its topic has `mirror.name`) that this leader has not seen STOPPED →
//! `MirrorTopicNotStopped` (KIP-1279, spec §3.8; `MirrorTopicAdminUnchecked` skips the check on
//! purpose); an offset above the high watermark or below −1 → `OffsetOutOfRange`; otherwise the
//! log start moves up to the offset (−1: the high watermark) and the answer carries the new log
//! start. Followers follow the leader's log start through their fetches. (Kafka answers once
//! every replica's low watermark has moved; this model answers at the leader.)

use super::BrokerStorage;
use crate::mirror::{MirrorState, TopicMirrorConfig};
use crate::protocol::{ErrorCode, NodeId, Response, TopicPartition};
use crate::switches::BrokenSwitch;

impl<S: BrokerStorage> super::Broker<S> {
    /// DeleteRecords; see the module doc.
    pub(super) fn handle_delete_records(
        &mut self,
        from: NodeId,
        correlation_id: u64,
        partitions: Vec<(TopicPartition, i64)>,
    ) {
        let results = partitions
            .into_iter()
            .map(|(tp, offset)| match self.delete_records(&tp, offset) {
                Ok(low_watermark) => (tp, ErrorCode::None, low_watermark),
                Err(error) => (tp, error, -1),
            })
            .collect();
        self.outbox
            .respond(from, correlation_id, Response::DeleteRecords { results });
    }

    fn delete_records(&mut self, tp: &TopicPartition, offset: i64) -> Result<i64, ErrorCode> {
        let (partition, _) = self.replicas.led_partition(tp, -1)?;
        let mirrored = self.image.mirror_desired_state(&tp.topic).is_some();
        let unchecked = self
            .config
            .broken
            .contains(&BrokenSwitch::MirrorTopicAdminUnchecked);
        if mirrored && partition.mirror_state != MirrorState::Stopped && !unchecked {
            return Err(ErrorCode::MirrorTopicNotStopped);
        }
        let mirror_state = mirrored.then_some(partition.mirror_state);
        let high_watermark = partition.log.high_watermark();
        let target = match offset {
            -1 => high_watermark,
            offset if (0..=high_watermark).contains(&offset) => offset,
            _ => return Err(ErrorCode::OffsetOutOfRange),
        };
        let log = &mut self
            .replicas
            .partitions_mut()
            .get_mut(tp)
            .expect("led above")
            .log;
        log.maybe_increment_log_start_offset(target)
            .map_err(|_| ErrorCode::KafkaStorageError)?;
        let log_start_offset = log.log_start_offset();
        self.events.push(super::BrokerEvent::RecordsDeleted {
            topic_partition: tp.clone(),
            log_start_offset,
            mirror_state,
        });
        Ok(log_start_offset)
    }
}
