//! Where a partition's data came from: its source cluster, the mirrors back to it, deposed
//! leaders, foreign batches, the epochs a range holds.

use super::*;
use mirrorsim::common::Offset;

/// The greatest leader epoch of the batches of a broker's log starting in `[from, below)`
/// (−1 without any).
/// Whether `view`'s broker is a deposed leader of `tp`: its cluster's controller names
/// another leader, or a later leader epoch.
pub(super) fn is_deposed(
    controllers: &[ControllerView<'_>],
    view: &BrokerView<'_>,
    tp: &TopicPartition,
) -> bool {
    let Some(record) = controllers
        .iter()
        .find(|controller| controller.cluster == view.cluster)
        .and_then(|controller| controller.controller.image().partition(tp))
    else {
        return false;
    };
    let own_epoch = match view.partition(tp).map(|partition| &partition.role) {
        Some(Role::Leader(state)) => state.leader_epoch,
        _ => return true,
    };
    record.leader != Some(view.broker.broker_id()) || record.leader_epoch > own_epoch.0
}

/// The batches of `appended` in `[first, last]` that are not byte-identical to `leader`'s
/// batch at the same base offset: where the last of them ends (exclusive) and their greatest
/// leader epoch, or `None` if every one is identical. The range's batches `appended` no
/// longer holds count as foreign (the truncation that removed them lowers the mirrored data).
pub(super) fn foreign_batches(
    appended: &PartitionLog<MemoryDirDisk>,
    leader: &PartitionLog<MemoryDirDisk>,
    first: i64,
    last: i64,
) -> Option<(i64, i32)> {
    let mut foreign: Option<(i64, i32)> = None;
    let mut covered = first;
    for batch in appended
        .batches_from(Offset(first))
        .take_while(|batch| batch.base_offset() <= last)
    {
        covered = batch.last_offset() + 1;
        let own = leader
            .batches_from(Offset(batch.base_offset()))
            .next()
            .is_some_and(|original| original == batch);
        if !own {
            let (end, epoch) = foreign.get_or_insert((0, -1));
            *end = (*end).max(batch.last_offset() + 1);
            *epoch = (*epoch).max(batch.partition_leader_epoch());
        }
    }
    if covered <= last {
        let (end, _) = foreign.get_or_insert((0, -1));
        *end = (*end).max(last + 1);
    }
    foreign
}

pub(super) fn max_epoch(view: &BrokerView<'_>, tp: &TopicPartition, from: i64, below: i64) -> i32 {
    view.partition(tp).map_or(-1, |partition| {
        partition
            .log
            .batches_from(Offset(from))
            .take_while(|batch| batch.base_offset() < below)
            .map(|batch| batch.partition_leader_epoch())
            .max()
            .unwrap_or(-1)
    })
}

/// The view of broker `node` if it is live in its `incarnation`.
pub(super) fn live_incarnation<'a, 'b>(
    brokers: &'a [BrokerView<'b>],
    node: NodeId,
    incarnation: u64,
) -> Option<&'a BrokerView<'b>> {
    brokers.iter().find(|view| {
        view.incarnation == incarnation
            && NodeId::Broker(view.cluster, view.broker.broker_id()) == node
    })
}

/// Whether the source cluster of `topic`'s mirror on `cluster` (as `view`'s image says) itself
/// wants the topic mirrored or paused from `cluster` (its controller's image): a mirror loop.
pub(super) fn mirrors_back(
    controllers: &[ControllerView<'_>],
    cluster: ClusterIndex,
    view: &BrokerView<'_>,
    topic: &str,
) -> bool {
    use mirrorsim::mirror::DesiredState;
    let Some(source) = source_cluster(view, topic) else {
        return false;
    };
    let Some(source_controller) = controllers.iter().find(|c| c.cluster == source) else {
        return false;
    };
    let image = source_controller.controller.image();
    let mirrored = image
        .mirror_desired_state(topic)
        .is_some_and(|desired| !matches!(desired, DesiredState::Stopped { .. }));
    mirrored && mirror_source_in(image, topic) == Some(cluster)
}

/// The source cluster of the mirror `topic` belongs to, as a broker's image says.
pub(crate) fn source_cluster(view: &BrokerView<'_>, topic: &str) -> Option<ClusterIndex> {
    mirror_source_in(view.broker.image(), topic)
}

/// The source cluster of the mirror `topic` belongs to in `image`: the one recorded when the
/// mirror was created, whatever `bootstrap.servers` names since (a mirror that took records
/// from another cluster after a change is judged against its own source, and caught), else
/// the one `bootstrap.servers` names.
pub(crate) fn mirror_source_in(
    image: &mirrorsim::metadata::MetadataImage,
    topic: &str,
) -> Option<ClusterIndex> {
    let desired = image.mirror_desired_state(topic)?;
    mirror_source_of(image, desired.mirror())
}

/// The source cluster of `mirror` in `image` (see [`mirror_source_in`]).
pub(crate) fn mirror_source_of(
    image: &mirrorsim::metadata::MetadataImage,
    mirror: &str,
) -> Option<ClusterIndex> {
    let properties = image
        .configs
        .get(&ConfigResource::Mirror(mirror.to_owned()))?;
    if let Some(recorded) = properties.get(SOURCE_CLUSTER_ID_CONFIG) {
        return ClusterIndex::from_cluster_id(recorded);
    }
    let bootstrap = properties.get(BOOTSTRAP_SERVERS_CONFIG)?;
    Some(parse_bootstrap_servers(bootstrap).ok()?.first()?.cluster())
}
