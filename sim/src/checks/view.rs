//! The nodes as the checks see them: a live broker (read only, with the events the world
//! drained from it for this step) and a controller, and the lookups every check family makes
//! through them.

use mirrorsim::broker::{Broker, BrokerEvent, MemoryDirDisk, MemoryStorage, Role};
use mirrorsim::common::LeaderEpoch;
use mirrorsim::controller::Controller;
use mirrorsim::log::PartitionLog;
use mirrorsim::metadata::PartitionRecord;
use mirrorsim::protocol::{BrokerId, ClusterIndex, TopicPartition};

/// A broker as the checkers see it.
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

/// [`current_leader`] for a partition whose metadata record the caller already holds.
pub(crate) fn leader_log_of<'a>(
    brokers: &'a [BrokerView<'_>],
    cluster: ClusterIndex,
    tp: &TopicPartition,
    record: &PartitionRecord,
) -> Option<(i32, &'a PartitionLog<MemoryDirDisk>)> {
    let leader = record.leader?;
    let view = broker_view(brokers, cluster, leader)?;
    let partition = view.broker.partitions().get(tp)?;
    match &partition.role {
        Role::Leader(state) if state.leader_epoch == LeaderEpoch(record.leader_epoch) => {
            Some((state.leader_epoch.0, &partition.log))
        }
        _ => None,
    }
}
