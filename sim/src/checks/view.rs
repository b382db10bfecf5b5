//! The nodes as the checks see them: a live broker (read only, with the events the world
//! drained from it for this step) and a controller, and the lookups every check family makes
//! through them.

use std::collections::{BTreeMap, BTreeSet};

use mirrorsim::broker::{Broker, BrokerEvent, MemoryDirDisk, MemoryStorage, Role};
use mirrorsim::common::LeaderEpoch;
use mirrorsim::controller::Controller;
use mirrorsim::log::PartitionLog;
use mirrorsim::metadata::PartitionRecord;
use mirrorsim::protocol::{BrokerId, ClusterIndex, TopicPartition};
use mirrorsim::replica::Partition;

/// A broker as the checkers see it.
///
/// The checkers know a partition by its name, and a topic deleted and created again is
/// another topic under the same name (`checks::topics`). A broker whose metadata lags keeps
/// its replica of the deleted topic until its image catches up: such a replica of a topic
/// life that has ended is *stale*, and the view hides it ([`BrokerView::partition`],
/// [`BrokerView::partitions`]), as it drops the events of a replica removed since
/// ([`BrokerView::new`]): what the checkers judge is the topic the controller has now.
pub struct BrokerView<'a> {
    /// Its cluster.
    pub cluster: ClusterIndex,
    /// Its process incarnation.
    pub incarnation: u64,
    /// The state machine.
    pub broker: &'a Broker<MemoryStorage>,
    /// What it reported since the checkers' last step, in order: the world drains each
    /// broker's events once per step ([`Broker::take_events`]) and every checker sees each of
    /// them once. Empty in the end-of-run checks, which judge state, not events.
    pub events: Vec<BrokerEvent>,
    /// Its replicas of topics whose life has ended (the controller's image has another topic
    /// id for the name, or none): hidden from the checkers.
    stale: BTreeSet<TopicPartition>,
}

impl<'a> BrokerView<'a> {
    /// The view of `broker`, with the `events` drained from it since the last step, its stale
    /// replicas taken from `controller`'s image (none while the controller is down) and the
    /// events of a replica removed in this batch dropped up to its removal: they are of the
    /// topic's ended life.
    pub fn new(
        cluster: ClusterIndex,
        incarnation: u64,
        broker: &'a Broker<MemoryStorage>,
        mut events: Vec<BrokerEvent>,
        controller: Option<&Controller<MemoryDirDisk>>,
    ) -> Self {
        let stale = controller.map_or_else(BTreeSet::new, |controller| {
            let image = controller.image();
            broker
                .partitions()
                .iter()
                .filter(|(tp, partition)| {
                    image.topic_ids.get(tp.topic.as_str()) != Some(&partition.topic_id)
                })
                .map(|(tp, _)| tp.clone())
                .collect()
        });
        drop_events_before_removal(&mut events);
        Self {
            cluster,
            incarnation,
            broker,
            events,
            stale,
        }
    }

    /// Its replica of `tp`, unless stale.
    pub fn partition(&self, tp: &TopicPartition) -> Option<&'a Partition<MemoryDirDisk>> {
        if self.stale.contains(tp) {
            return None;
        }
        self.broker.partitions().get(tp)
    }

    /// Its replicas but the stale ones, in partition order.
    pub fn partitions(
        &self,
    ) -> impl Iterator<Item = (&'a TopicPartition, &'a Partition<MemoryDirDisk>)> + '_ {
        self.broker
            .partitions()
            .iter()
            .filter(|(tp, _)| !self.stale.contains(*tp))
    }
}

/// Drops from one broker's batch of events every event of a partition that comes before the
/// partition's last `PartitionRemoved` in the batch.
fn drop_events_before_removal(events: &mut Vec<BrokerEvent>) {
    let mut removed: BTreeMap<TopicPartition, usize> = BTreeMap::new();
    for (index, event) in events.iter().enumerate() {
        if let BrokerEvent::PartitionRemoved { topic_partition } = event {
            removed.insert(topic_partition.clone(), index);
        }
    }
    if removed.is_empty() {
        return;
    }
    let mut index = 0;
    events.retain(|event| {
        let keep = event
            .topic_partition()
            .and_then(|tp| removed.get(tp))
            .is_none_or(|removal| index >= *removal);
        index += 1;
        keep
    });
}

/// A controller as the checkers see it.
pub struct ControllerView<'a> {
    /// Its cluster.
    pub cluster: ClusterIndex,
    /// The state machine.
    pub controller: &'a Controller<MemoryDirDisk>,
}

/// The view of `broker` of `cluster`, if it is live.
pub(crate) fn broker_view<'a, 'b>(
    brokers: &'a [BrokerView<'b>],
    cluster: ClusterIndex,
    broker: BrokerId,
) -> Option<&'a BrokerView<'b>> {
    brokers
        .iter()
        .find(|view| view.cluster == cluster && view.broker.broker_id() == broker)
}

/// The live broker leading `tp` in the controller's current epoch, with its log.
pub(crate) fn current_leader<'a>(
    controllers: &[ControllerView<'_>],
    brokers: &'a [BrokerView<'_>],
    cluster: ClusterIndex,
    tp: &TopicPartition,
) -> Option<(i32, &'a PartitionLog<MemoryDirDisk>)> {
    let controller = controllers.iter().find(|view| view.cluster == cluster)?;
    let record = controller.controller.image().partition(tp)?;
    leader_log_of(brokers, cluster, tp, record)
}

/// [`current_leader`]'s partition as a whole (its mirror state among the rest).
pub(crate) fn current_leader_partition<'a>(
    controllers: &[ControllerView<'_>],
    brokers: &'a [BrokerView<'_>],
    cluster: ClusterIndex,
    tp: &TopicPartition,
) -> Option<&'a Partition<MemoryDirDisk>> {
    let controller = controllers.iter().find(|view| view.cluster == cluster)?;
    let record = controller.controller.image().partition(tp)?;
    leader_partition_of(brokers, cluster, tp, record)
}

/// [`current_leader`] for a partition whose metadata record the caller already holds.
pub(crate) fn leader_log_of<'a>(
    brokers: &'a [BrokerView<'_>],
    cluster: ClusterIndex,
    tp: &TopicPartition,
    record: &PartitionRecord,
) -> Option<(i32, &'a PartitionLog<MemoryDirDisk>)> {
    let partition = leader_partition_of(brokers, cluster, tp, record)?;
    Some((record.leader_epoch, &partition.log))
}

/// The partition of the live broker `record` names leader, if it leads in `record`'s epoch.
fn leader_partition_of<'a>(
    brokers: &'a [BrokerView<'_>],
    cluster: ClusterIndex,
    tp: &TopicPartition,
    record: &PartitionRecord,
) -> Option<&'a Partition<MemoryDirDisk>> {
    let leader = record.leader?;
    let partition = broker_view(brokers, cluster, leader)?.partition(tp)?;
    match &partition.role {
        Role::Leader(state) if state.leader_epoch == LeaderEpoch(record.leader_epoch) => {
            Some(partition)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirrorsim::protocol::BrokerId;

    fn isr_changed(topic: &str) -> BrokerEvent {
        BrokerEvent::IsrChanged {
            topic_partition: TopicPartition::new(topic, 0),
            isr: vec![BrokerId(1)],
        }
    }

    fn removed(topic: &str) -> BrokerEvent {
        BrokerEvent::PartitionRemoved {
            topic_partition: TopicPartition::new(topic, 0),
        }
    }

    #[test]
    fn events_of_a_removed_replica_before_its_removal_are_dropped() {
        let mut events = vec![
            isr_changed("orders"),
            isr_changed("audit"),
            removed("orders"),
            isr_changed("orders"),
        ];
        drop_events_before_removal(&mut events);
        assert_eq!(
            events,
            vec![
                isr_changed("audit"),
                removed("orders"),
                isr_changed("orders")
            ]
        );
        let mut untouched = vec![isr_changed("orders"), isr_changed("audit")];
        drop_events_before_removal(&mut untouched);
        assert_eq!(untouched.len(), 2);
    }
}
