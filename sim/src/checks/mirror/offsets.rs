//! `offset-sync-clamped`: a synced group offset lies within the destination log the sync
//! read, but for a fetcher cut racing the sync.

use super::*;

/// What `offset-sync-clamped` makes of one synced group offset.
#[derive(Debug)]
pub(super) enum SyncedOffsetVerdict {
    /// In the current leader's log (or no current leader to judge by).
    Clamped,
    /// Above the log end only because the leader's mirror fetcher cut the log below it after
    /// the sync read the high watermark (see the module doc).
    RacedFetcherCut,
    /// Outside the log.
    Outside(Violation),
}

/// INV-15 for one synced group offset (see the module doc).
pub(super) fn check_synced_offset(
    time_ms: i64,
    controllers: &[ControllerView<'_>],
    brokers: &[BrokerView<'_>],
    fetcher_cuts: &[FetcherCut],
    synced: SyncedOffset,
) -> SyncedOffsetVerdict {
    let SyncedOffset {
        cluster,
        group_id,
        topic_partition,
        offset,
        high_watermark_read,
    } = synced;
    let Some((leader_epoch, log)) = current_leader(controllers, brokers, cluster, &topic_partition)
    else {
        return SyncedOffsetVerdict::Clamped;
    };
    let (start, end) = (log.log_start_offset(), log.log_end_offset());
    if (start.0..=end.0).contains(&offset) {
        return SyncedOffsetVerdict::Clamped;
    }
    let leader = controllers
        .iter()
        .find(|view| view.cluster == cluster)
        .and_then(|view| view.controller.image().partition(&topic_partition)?.leader);
    if leader.is_some_and(|leader| {
        cut_below_synced_offset(
            fetcher_cuts,
            (cluster, leader, &topic_partition),
            offset,
            (high_watermark_read, end.0),
        )
    }) {
        return SyncedOffsetVerdict::RacedFetcherCut;
    }
    SyncedOffsetVerdict::Outside(Violation {
        invariant: Invariant::OffsetSyncClamped,
        cluster: Some(cluster),
        detail: format!(
            "the mirror sync committed offset {offset} for group {group_id}, outside \
             [{start}, {end}] of the current leader's log (epoch {leader_epoch})"
        ),
        topic_partition: Some(topic_partition),
        time_ms,
    })
}

/// Whether a synced `offset` above the current `leader`'s log end (`end`), and at most the
/// high watermark the sync read (`high_watermark_read`: the clamp held), was in its log until
/// its mirror fetcher cut the log below it lately (`cuts`, those of the last
/// [`SYNC_BOUNDS_AGE_MS`]): the log ended at or above the offset before the cut and below it
/// after.
pub(super) fn cut_below_synced_offset(
    cuts: &[FetcherCut],
    (cluster, leader, tp): (ClusterIndex, BrokerId, &TopicPartition),
    offset: i64,
    (high_watermark_read, end): (i64, i64),
) -> bool {
    offset > end
        && offset <= high_watermark_read
        && cuts.iter().any(|cut| {
            cut.cluster == cluster
                && cut.leader == leader
                && cut.topic_partition == *tp
                && cut.from >= offset
                && cut.to < offset
        })
}

/// The last stable offset of the source leader of a mirrored partition, if known.
pub(super) fn source_stable_end(
    controllers: &[ControllerView<'_>],
    brokers: &[BrokerView<'_>],
    destination: &BrokerView<'_>,
    tp: &TopicPartition,
) -> Option<i64> {
    let source = source_cluster(destination, &tp.topic)?;
    let (_, log) = current_leader(controllers, brokers, source, tp)?;
    Some(log.last_stable_offset().0)
}
