//! The Jepsen-style checks of the recorded history of reads: each consumer's polls against the
//! final logs (`inconsistent-offsets`, `nonmonotonic-poll`, `skipped-poll`), acknowledged
//! records no reader saw (`unseen`), the incremental log scans for duplicates and order, and the
//! bookkeeping of committed data a loss removed.

use mirrorsim::common::Offset;
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};

use mirrorsim::broker::MemoryDirDisk;
use mirrorsim::log::PartitionLog;
use mirrorsim::protocol::{BrokerId, ClusterIndex, NodeId, TopicPartition};

use super::invariants::{Invariant, Violation};
use super::outcomes::{transaction_outcomes, TxnOutcome};
use super::reads::{cluster_of_value, LeaderLogs, ValueCursor};
use crate::world::workload::{parse_value, History, PollRecord, RecordId};

/// For a broker still leading a partition in `leader_epoch` with `high_watermark`: the later
/// epoch that began lowest (`epoch_starts`: every (epoch, start offset) seen), when this
/// high watermark passed its start and rose above what was `noted` for this leadership
/// before. Such a leader committed what the later epoch's log never holds (a zombie with an
/// ISR of itself after an unclean election; `note_deposed_commits`).
pub(super) fn deposed_commit_past_successor(
    epoch_starts: &[(i32, i64)],
    leader_epoch: i32,
    high_watermark: i64,
    noted: Option<i64>,
) -> Option<(i32, i64)> {
    let &(epoch, start) = epoch_starts
        .iter()
        .filter(|(epoch, _)| *epoch > leader_epoch)
        .min_by_key(|(_, start)| *start)?;
    (high_watermark > noted.unwrap_or(start)).then_some((epoch, start))
}

/// Acknowledged records no consumer of their cluster ever received, except those `excused`
/// says may be gone from the log (dropped by mirroring by design, or lost as Kafka allows on a
/// topic that is not durable), and, for a group, those the same-named group received on
/// another cluster at the same offset: the mirror's offset sync carries a group's progress
/// from its source to the destination (spec §7), so the group resumes past what it read
/// there (generated seed 9960000000000208: `resume-a-payments` read b's record mirrored to a,
/// and b's sync of a's offsets moved the group on b past it), those the reader's position
/// passed on a history a loss of committed data then replaced ([`jumped_over_loss`]), and
/// those at an offset where the reader read another record of a newer leader epoch than the
/// final log's there (`final_epoch_at`): a later unclean election brought back an older
/// epoch's tail over what the reader read, and KIP-320's validation cannot see it (the older
/// epoch ends above the reader's position on the new leader; generated seed
/// 12600000000000233). A record of a newer epoch than the one the reader read there is the
/// new leader's own: KIP-320's validation sends the reader back to it, and a reader that never
/// read it skipped it (a consumer from before KIP-320, `consumer_past_unclean_leader_end`).
pub(super) fn unseen(
    time_ms: i64,
    history: &History,
    excused: impl Fn(i64, &crate::world::workload::SendRecord, bool) -> bool,
    loss_between: impl Fn(ClusterIndex, &TopicPartition, i64, (i64, i64)) -> bool,
    final_epoch_at: impl Fn(ClusterIndex, &TopicPartition, i64) -> Option<i32>,
) -> UnseenReport {
    // A plain consumer must see everything itself; a group must see everything between its
    // members, whoever held the partition.
    let reader = |consumer: &NodeId| match history.groups.get(consumer) {
        Some(group) => format!("group {group} of cluster {}", consumer.cluster()),
        None => consumer.to_string(),
    };
    // What each reader received: the record as well as its offset, since a loss of committed
    // data may put another record at an offset the reader already read (a consumer from
    // before KIP-320 goes on past the new leader's records below its position).
    let mut seen_by: BTreeMap<String, BTreeSet<(&TopicPartition, i64, &str)>> = BTreeMap::new();
    // Per reader and partition, its reads as (received at, offset), in time order.
    type ReadsByPartition<'a> = BTreeMap<&'a TopicPartition, Vec<(i64, i64)>>;
    let mut reads_of: BTreeMap<String, ReadsByPartition<'_>> = BTreeMap::new();
    // Per reader: the newest leader epoch of what it read at each offset.
    let mut epochs_read: BTreeMap<String, BTreeMap<(&TopicPartition, i64), i32>> = BTreeMap::new();
    // (group, cluster) → what its members received, value included.
    type Reads<'a> = BTreeSet<(&'a TopicPartition, i64, &'a str)>;
    let mut group_reads: BTreeMap<(&str, ClusterIndex), Reads<'_>> = BTreeMap::new();
    for ((consumer, _), polls) in &history.polls {
        let name = reader(consumer);
        let reads = reads_of.entry(name.clone()).or_default();
        let epochs = epochs_read.entry(name.clone()).or_default();
        let set = seen_by.entry(name).or_default();
        for poll in polls {
            set.insert((&poll.topic_partition, poll.offset, poll.value.as_str()));
            let newest = epochs
                .entry((&poll.topic_partition, poll.offset))
                .or_insert(poll.leader_epoch);
            *newest = (*newest).max(poll.leader_epoch);
            reads
                .entry(&poll.topic_partition)
                .or_default()
                .push((poll.received_ms, poll.offset));
        }
        if let Some(group) = history.groups.get(consumer) {
            group_reads
                .entry((group.as_str(), consumer.cluster()))
                .or_default()
                .extend(
                    polls
                        .iter()
                        .map(|poll| (&poll.topic_partition, poll.offset, poll.value.as_str())),
                );
        }
    }
    let read_by_group_elsewhere = |consumer: &NodeId, tp: &TopicPartition, offset, value| {
        history.groups.get(consumer).is_some_and(|group| {
            group_reads.iter().any(|((name, cluster), reads)| {
                *name == group.as_str()
                    && *cluster != consumer.cluster()
                    && reads.contains(&(tp, offset, value))
            })
        })
    };
    for reads in reads_of.values_mut().flat_map(|by_tp| by_tp.values_mut()) {
        reads.sort_unstable();
    }
    let mut report = UnseenReport::default();
    // (a consumer standing for the reader, topics, reads committed data only)
    let mut readers: BTreeMap<String, (NodeId, &Vec<String>, bool)> = BTreeMap::new();
    for (consumer, topics) in &history.subscriptions {
        let read_committed = history.read_committed.contains(consumer);
        readers.insert(reader(consumer), (*consumer, topics, read_committed));
    }
    let nothing = BTreeSet::new();
    let no_reads = BTreeMap::new();
    let no_epochs = BTreeMap::new();
    for (name, (consumer, topics, read_committed)) in readers {
        let cluster = consumer.cluster();
        let seen = seen_by.get(&name).unwrap_or(&nothing);
        let reads = reads_of.get(&name).unwrap_or(&no_reads);
        let epochs = epochs_read.get(&name).unwrap_or(&no_epochs);
        let missing = history
            .acked_sends()
            .filter(|(offset, send)| !excused(*offset, send, read_committed))
            .map(|(offset, send)| (&send.topic_partition, offset, send.value.as_str()))
            .filter(|(_, _, value)| cluster_of_value(value) == cluster)
            .filter(|(tp, _, _)| topics.iter().any(|topic| *topic == tp.topic))
            .filter(|(tp, offset, value)| !seen.contains(&(*tp, *offset, *value)))
            .find(|(tp, offset, value)| {
                if read_by_group_elsewhere(&consumer, tp, *offset, value) {
                    report.read_elsewhere += 1;
                    return false;
                }
                let read_newer = epochs.get(&(*tp, *offset)).is_some_and(|read| {
                    final_epoch_at(cluster, tp, *offset).is_some_and(|there| *read > there)
                });
                if read_newer {
                    report.read_newer_epoch_there += 1;
                    return false;
                }
                let tp_reads = reads.get(tp).map_or(&[][..], Vec::as_slice);
                if jumped_over_loss(tp_reads, *offset, |window| {
                    loss_between(cluster, tp, *offset, window)
                }) {
                    report.jumped_over_loss += 1;
                    return false;
                }
                true
            });
        if let Some((tp, offset, value)) = missing {
            report.violations.push(Violation {
                invariant: Invariant::Unseen,
                cluster: Some(cluster),
                topic_partition: Some(tp.clone()),
                detail: format!("{name} never received acknowledged {value:?} at offset {offset}"),
                time_ms,
            });
        }
    }
    report
}

/// What [`unseen`] found: its violations, and how many missing records each of its own
/// excuses covered (for their coverage marks).
#[derive(Debug, Default, PartialEq)]
pub(super) struct UnseenReport {
    pub violations: Vec<Violation>,
    /// Read by the same-named group on another cluster at the same offset.
    pub read_elsewhere: u64,
    /// Passed on a history a loss then replaced ([`jumped_over_loss`]).
    pub jumped_over_loss: u64,
    /// Another record read at its offset, of a newer leader epoch than the final log's there.
    pub read_newer_epoch_there: u64,
}

/// Whether a reader's position went over `offset` on a history that a loss of committed data
/// then replaced: two of its consecutive reads of the partition (`reads`: received at, offset,
/// in time order) lie on either side of `offset`, and a loss that kept no more than `offset`
/// came between them (`loss_between` is asked for that time window). Before the loss the
/// position passed `offset` over what the log held there then (control batches, or an
/// aborted transaction's records); the loss replaced it with other records, and the reader,
/// validating its position against a leader epoch whose end lies above it (KIP-320 asks the
/// new leader where the reader's last fetched epoch ends), goes on from where it stood.
/// Kafka allows that on a topic that is not durable, the only kind a loss is noted on.
/// Generated seed 12600000000000233: a group read a's orders-4 to 31 and passed a COMMIT
/// marker at 32 from an uncleanly elected leader (epoch 1); the replica elected uncleanly
/// next (epoch 2) held its own 31..35 from epoch 0, whose end (36) lay above the group's
/// position 33, so the group never read the acknowledged record now at 32.
pub(super) fn jumped_over_loss(
    reads: &[(i64, i64)],
    offset: i64,
    loss_between: impl Fn((i64, i64)) -> bool,
) -> bool {
    reads.windows(2).any(|pair| {
        let [(before_ms, before), (after_ms, after)] = [pair[0], pair[1]];
        before < offset && offset < after && loss_between((before_ms, after_ms))
    })
}

/// Compares the follower with the leader from `from` up to their common high watermark;
/// returns the offset up to which they were found equal.
#[allow(clippy::too_many_arguments)]
pub(super) fn compare_range(
    time_ms: i64,
    cluster: ClusterIndex,
    tp: &TopicPartition,
    member: BrokerId,
    leader: &PartitionLog<MemoryDirDisk>,
    follower: &PartitionLog<MemoryDirDisk>,
    from: i64,
    out: &mut Vec<Violation>,
) -> i64 {
    let bound = leader.high_watermark().min(follower.high_watermark());
    let start = from
        .max(leader.log_start_offset().0)
        .max(follower.log_start_offset().0);
    let mut follower_batches = follower.batches_from(Offset(start));
    let mut verified = from;
    for expected in leader
        .batches_from(Offset(start))
        .take_while(|b| b.next_offset() <= bound.0)
    {
        let found = follower_batches.next();
        if found.map(|b| b.bytes()) != Some(expected.bytes()) {
            out.push(Violation {
                invariant: Invariant::ReplicaConvergence,
                cluster: Some(cluster),
                topic_partition: Some(tp.clone()),
                detail: format!(
                    "ISR member {member} differs from the leader at offset {} below high watermark {bound} (follower has a batch at {:?})",
                    expected.base_offset(),
                    found.map(|b| b.base_offset())
                ),
                time_ms,
            });
            return verified;
        }
        verified = expected.next_offset();
    }
    verified
}

/// The lowest offset from which (`cluster`, `topic_partition`) lost committed data, if it
/// did: a leader epoch starting below the high watermark (`losses`) or a leader log ending
/// below it (`lost_tails`), both noted only on a topic that is not durable. A free function
/// so a caller can hold another field of the checkers mutably.
pub(super) fn lost_from(
    losses: &LossMap,
    lost_tails: &LossMap,
    cluster: ClusterIndex,
    topic_partition: &TopicPartition,
) -> Option<i64> {
    let key = (cluster, topic_partition.clone());
    all_losses(losses, lost_tails, &key)
        .map(|(_, kept)| kept)
        .min()
}

/// Losses of committed data per (cluster, partition): (checker time, offset the log kept).
pub(super) type LossMap = BTreeMap<(ClusterIndex, TopicPartition), Vec<(i64, i64)>>;

/// Whether one of `losses` (`(time_ms, kept)`) came at or after `since_ms` and kept less than
/// up to `offset`.
pub(super) fn kept_below(
    mut losses: impl Iterator<Item = (i64, i64)>,
    offset: i64,
    since_ms: i64,
) -> bool {
    losses.any(|(time_ms, kept)| since_ms <= time_ms && offset >= kept)
}

/// Every loss of `key` noted in either map (`Checkers::losses`, `Checkers::lost_tails`).
pub(super) fn all_losses<'a>(
    losses: &'a LossMap,
    lost_tails: &'a LossMap,
    key: &(ClusterIndex, TopicPartition),
) -> impl Iterator<Item = (i64, i64)> + 'a {
    let lost = losses.get(key).into_iter().flatten();
    let tails = lost_tails.get(key).into_iter().flatten();
    lost.chain(tails).copied()
}

/// Scans the batches a leader appended since the last step for duplicates and reordering;
/// returns how many reorderings it excused.
///
/// `lost_from` is the lowest offset from which the log lost committed data, if it did (a topic
/// that is not durable: the only replica's power loss, an unclean election). A producer's
/// first record in the log at or above it may follow a later-sent one of the same producer:
/// the loss took the producer's state with its records, and Kafka's broker accepts any
/// sequence from a producer it holds no state for (`ProducerAppendInfo.checkSequence`, no
/// current producer epoch), so a pipelined later batch that arrives first is appended, and
/// the earlier ones, refused as out of order, are re-sent after the producer's epoch bump.
/// The later batches the producer had in flight are then in sequence and accepted too, so the
/// earlier record may also follow a later one outside the first batch, but only in a higher
/// producer epoch than that record's (re-sent after the bump). A reordering within one producer
/// epoch behind a record outside the first batch, or of a first batch below the loss, is
/// caught: there the broker's producer state orders the sequences.
pub(super) fn scan_new_records(
    time_ms: i64,
    cluster: ClusterIndex,
    tp: &TopicPartition,
    log: &PartitionLog<MemoryDirDisk>,
    scan: &mut LogScan,
    lost_from: Option<i64>,
    out: &mut Vec<Violation>,
) -> u64 {
    let mut excused = 0;
    let from = scan.scanned_to.max(log.log_start_offset().0);
    for batch in log.batches_from(Offset(from)) {
        scan.scanned_to = batch.next_offset();
        if batch.is_control() {
            continue;
        }
        for record in batch.records().filter_map(Result::ok) {
            if record.offset < from {
                continue;
            }
            let Some(id) = record.value.as_deref().and_then(parse_value) else {
                continue;
            };
            let stream = (id.producer.clone(), id.incarnation);
            let batch_range = (batch.base_offset(), batch.next_offset());
            // Looked up before inserting: the key is cloned only for a new stream.
            let first = match scan.first.get(&stream) {
                Some(first) => *first,
                None => {
                    scan.first.insert(stream.clone(), batch_range);
                    batch_range
                }
            };
            let producer_epoch = batch.header().producer_epoch;
            if let Some((previous_n, previous_offset, previous_epoch)) =
                scan.last_n.get(&stream).copied()
            {
                let behind_first_run = (first.0..first.1).contains(&previous_offset)
                    || producer_epoch > previous_epoch;
                let after_lost_state =
                    behind_first_run && lost_from.is_some_and(|lost_from| first.0 >= lost_from);
                if id.n < previous_n && after_lost_state {
                    excused += 1;
                } else if id.n < previous_n {
                    out.push(Violation {
                        invariant: Invariant::ProducerOrder,
                        cluster: Some(cluster),
                        topic_partition: Some(tp.clone()),
                        detail: format!(
                            "{}#{} record {} at offset {} after record {previous_n} at {previous_offset}",
                            id.producer, id.incarnation, id.n, record.offset
                        ),
                        time_ms,
                    });
                }
            }
            scan.last_n
                .insert(stream, (id.n, record.offset, producer_epoch));
            match scan.seen.entry(id) {
                Entry::Vacant(vacant) => {
                    vacant.insert(record.offset);
                }
                Entry::Occupied(mut occupied) => {
                    let id = occupied.key();
                    let detail = format!(
                        "{}#{} record {} at offsets {} and {}",
                        id.producer,
                        id.incarnation,
                        id.n,
                        occupied.get(),
                        record.offset
                    );
                    occupied.insert(record.offset);
                    out.push(Violation {
                        invariant: Invariant::NoDuplicates,
                        cluster: Some(cluster),
                        topic_partition: Some(tp.clone()),
                        detail,
                        time_ms,
                    });
                }
            }
        }
    }
    excused
}

/// Jepsen's consumer checks over the recorded polls: what a consumer read at an offset is what
/// the log holds there (`inconsistent-offsets`), its reads of a partition never go back unless
/// it was repositioned (`nonmonotonic-poll`), and never jump over a record it should have
/// received (`skipped-poll`). A read whose offset a later mirroring truncation rewrote
/// (`rewritten`) is not compared with the final log, nor is a jump over offsets that held no
/// record for the consumer when it read past them and that a later mirroring truncation
/// rewrote (`skip_rewritten`, given the consumer, its incarnation, the poll's index in its
/// history, the poll and the record of the final log jumped over).
pub(super) fn check_polls(
    time_ms: i64,
    logs: &dyn LeaderLogs,
    history: &History,
    rewritten: &RewrittenByMirroring<'_>,
    skip_rewritten: &SkipRewrittenByMirroring<'_>,
) -> Vec<Violation> {
    let mut out = Vec::new();
    // One cursor per log: a consumer's reads of a partition walk its batches in order.
    let mut values: BTreeMap<(ClusterIndex, &TopicPartition), ValueCursor> = BTreeMap::new();
    for ((consumer, incarnation), polls) in &history.polls {
        let mut last: BTreeMap<&TopicPartition, i64> = BTreeMap::new();
        for (index, poll) in polls.iter().enumerate() {
            let cluster = consumer.cluster();
            let previous = last.insert(&poll.topic_partition, poll.offset);
            if let Some(log) = logs.leader_log(cluster, &poll.topic_partition) {
                if poll.offset < log.high_watermark().0 && !rewritten(*consumer, poll) {
                    let found = values
                        .entry((cluster, &poll.topic_partition))
                        .or_default()
                        .value_at(log, poll.offset);
                    if found.as_deref() != Some(poll.value.as_str()) {
                        out.push(Violation {
                            invariant: Invariant::InconsistentOffsets,
                            cluster: Some(cluster),
                            topic_partition: Some(poll.topic_partition.clone()),
                            detail: format!(
                                "{consumer} read {:?} at offset {}, the log has {found:?}",
                                poll.value, poll.offset
                            ),
                            time_ms,
                        });
                    }
                }
                if let Some(previous) = previous.filter(|_| !poll.after_reset) {
                    if poll.offset <= previous {
                        out.push(Violation {
                            invariant: Invariant::NonmonotonicPoll,
                            cluster: Some(cluster),
                            topic_partition: Some(poll.topic_partition.clone()),
                            detail: format!(
                                "{consumer} read offset {} after {previous}",
                                poll.offset
                            ),
                            time_ms,
                        });
                    } else if let Some(skipped) = first_data_offset_between(
                        log,
                        previous + 1,
                        poll.offset,
                        history.read_committed.contains(consumer),
                    )
                    .filter(|skipped| {
                        !skip_rewritten((*consumer, *incarnation, index), poll, *skipped)
                    }) {
                        out.push(Violation {
                            invariant: Invariant::SkippedPoll,
                            cluster: Some(cluster),
                            topic_partition: Some(poll.topic_partition.clone()),
                            detail: format!(
                                "{consumer} jumped from {previous} to {} over record {skipped}",
                                poll.offset
                            ),
                            time_ms,
                        });
                    }
                }
            }
        }
    }
    out
}

/// Whether a mirroring truncation legally rewrote the log where a consumer read a record,
/// after it read it (see `Checkers::rewritten_by_mirroring`).
pub(super) type RewrittenByMirroring<'a> = dyn Fn(NodeId, &PollRecord) -> bool + 'a;

/// Whether a jump of a consumer's poll ((consumer, incarnation, index of the poll), the poll)
/// over a record of the final log (its offset) is excused (see
/// `Checkers::skip_rewritten_by_mirroring`).
pub(super) type SkipRewrittenByMirroring<'a> =
    dyn Fn((NodeId, u64, usize), &PollRecord, i64) -> bool + 'a;

/// Whether the final log's verdict on a transactional record may not be the one a client saw
/// (see [`Checkers::outcome_lost_since`]): (cluster, partition, the record's offset, where the
/// final log decided its transaction, `None` if nowhere yet, since when).
pub(super) type OutcomeLost<'a> =
    dyn Fn(ClusterIndex, &TopicPartition, i64, Option<i64>, i64) -> bool + 'a;

/// Whether a transaction's record the final log decides against the transaction's confirmed
/// outcome may lie outside that outcome's markers because its coordinator lost the
/// partition's enlisting (see [`Checkers::enlist_lost_by_coordinator`]): (producer, the send,
/// when the outcome was confirmed, whether it was a commit).
pub(super) type EnlistLost<'a> =
    dyn Fn(NodeId, &crate::world::workload::SendRecord, Option<i64>, bool) -> bool + 'a;

/// Incremental duplicate and order scan of one leader's log.
#[derive(Debug, Clone, Default)]
pub(super) struct LogScan {
    pub(super) scanned_to: i64,
    pub(super) seen: BTreeMap<RecordId, i64>,
    /// Each producer stream's last record scanned: its number, offset and batch's producer
    /// epoch.
    pub(super) last_n: BTreeMap<(String, u64), (u64, i64, i16)>,
    /// The offsets `[base, next)` of each producer stream's first batch in the scanned log.
    pub(super) first: BTreeMap<(String, u64), (i64, i64)>,
}

/// The first offset in `[from, to)` a consumer must have received: a data record, not of a
/// transaction that did not commit when the consumer reads committed data only.
pub(super) fn first_data_offset_between(
    log: &PartitionLog<MemoryDirDisk>,
    from: i64,
    to: i64,
    read_committed: bool,
) -> Option<i64> {
    let outcomes = read_committed.then(|| transaction_outcomes(log));
    for batch in log.batches_from(Offset(from)) {
        if batch.base_offset() >= to {
            return None;
        }
        if batch.is_control() {
            continue;
        }
        let hidden = outcomes.as_ref().is_some_and(|outcomes| {
            outcomes
                .get(&batch.base_offset())
                .is_some_and(|(_, outcome)| *outcome != TxnOutcome::Committed)
        });
        if hidden {
            continue;
        }
        for record in batch.records().filter_map(Result::ok) {
            if record.offset >= from && record.offset < to {
                return Some(record.offset);
            }
        }
    }
    None
}
