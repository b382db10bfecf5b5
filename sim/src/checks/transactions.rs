//! The transaction checks over the final logs: each transaction's outcome as its markers
//! decide it, what a consumer may be handed (`no-control-records-delivered`,
//! `read-committed`), and `transaction-atomicity`.

use mirrorsim::common::Offset;
use std::collections::BTreeMap;

use mirrorsim::broker::MemoryDirDisk;
use mirrorsim::log::PartitionLog;
use mirrorsim::protocol::{NodeId, TopicPartition};

use super::history::{EnlistLost, OutcomeLost, RewrittenByMirroring};
use super::invariants::{Invariant, Violation};
use super::outcomes::{TxnEnd, TxnEndsMemo, TxnOutcome};
use super::reads::{LeaderLogs, ValueOffsetsMemo};
use crate::world::workload::History;

/// When the producer learned that the transaction of each transactional send committed, by
/// the send's value (a value names one send): only sends of transactions confirmed committed.
pub(super) fn commits_confirmed_at(history: &History) -> BTreeMap<&str, i64> {
    (history.sends.iter())
        .filter_map(|((producer, incarnation, _), send)| {
            let transaction =
                history
                    .transactions
                    .get(&(*producer, *incarnation, send.transaction?))?;
            let completed_ms = transaction
                .completed_ms
                .filter(|_| transaction.committed == Some(true))?;
            Some((send.value.as_str(), completed_ms))
        })
        .collect()
}

/// No consumer received control records; READ_COMMITTED consumers received no aborted or open
/// transactional data. Judged on the final log, so reads that a later mirroring truncation
/// rewrote are skipped, and so are reads of a transaction whose deciding marker in the final
/// log a later loss may have put in place of the one the consumer's read relied on
/// (`outcome_lost`). A control batch the final log holds at an offset the log was rewritten
/// at after the read (`replaced`: a truncation or a loss there, legal or not) is not what the
/// consumer received: it read the batch of the log before, whose loss `inconsistent-offsets`
/// judges (generator seeds 8368442226905498 and 2292223553896339: the consumer read a
/// transactional record, and the `MIRROR_PID_RESET` at its offset came seconds later).
pub(super) fn check_delivered_records(
    time_ms: i64,
    logs: &dyn LeaderLogs,
    history: &History,
    (rewritten, replaced): (&RewrittenByMirroring<'_>, &RewrittenByMirroring<'_>),
    outcome_lost: &OutcomeLost<'_>,
) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut outcomes = TxnEndsMemo::default();
    for ((consumer, _), polls) in &history.polls {
        let cluster = consumer.cluster();
        let read_committed = history.read_committed.contains(consumer);
        for poll in polls {
            if rewritten(*consumer, poll) {
                continue;
            }
            let Some(log) = logs.leader_log(cluster, &poll.topic_partition) else {
                continue;
            };
            let Some(batch) = log
                .batches_from(Offset(poll.offset))
                .next()
                .filter(|b| b.base_offset() <= poll.offset)
            else {
                continue;
            };
            if batch.is_control() {
                if replaced(*consumer, poll) {
                    continue;
                }
                out.push(Violation {
                    invariant: Invariant::NoControlRecordsDelivered,
                    cluster: Some(cluster),
                    topic_partition: Some(poll.topic_partition.clone()),
                    detail: format!(
                        "{consumer} received the control record at offset {}",
                        poll.offset
                    ),
                    time_ms,
                });
                continue;
            }
            if !read_committed || !batch.is_transactional() {
                continue;
            }
            let partition_outcomes = outcomes.ends(cluster, &poll.topic_partition, log);
            if let Some(end) = partition_outcomes.get(&batch.base_offset()) {
                let (producer_id, outcome) = (&end.producer_id, &end.outcome);
                let tp = &poll.topic_partition;
                let lost =
                    || outcome_lost(cluster, tp, poll.offset, end.decided_at, poll.fetched_ms);
                if *outcome != TxnOutcome::Committed && !lost() {
                    out.push(Violation {
                        invariant: Invariant::ReadCommitted,
                        cluster: Some(cluster),
                        topic_partition: Some(poll.topic_partition.clone()),
                        detail: format!(
                            "READ_COMMITTED {consumer} received offset {} of producer {producer_id}'s transaction, which {}",
                            poll.offset,
                            if *outcome == TxnOutcome::Aborted { "aborted" } else { "never completed" }
                        ),
                        time_ms,
                    });
                }
            }
        }
    }
    out
}

/// Whether the COMMIT marker at `commit_at` in `log` (the final log of `tp`, whose
/// transaction ends are `ends`; `values` indexes it) also commits a record of another transaction of `producer` than `aborted`
/// ((incarnation, number)), one the producer was confirmed committed: the marker is that
/// transaction's own, written by a coordinator that knew the partition was in it, not one
/// written for the aborted transaction.
pub(super) fn commits_a_confirmed_commit(
    history: &History,
    producer: NodeId,
    aborted: (u64, u64),
    (tp, log, values): (
        &TopicPartition,
        &PartitionLog<MemoryDirDisk>,
        &mut ValueOffsetsMemo,
    ),
    ends: &BTreeMap<i64, TxnEnd>,
    commit_at: i64,
) -> bool {
    let cluster = producer.cluster();
    history
        .transactions
        .range((producer, 0, 0)..=(producer, u64::MAX, u64::MAX))
        .filter(|((_, incarnation, number), transaction)| {
            (*incarnation, *number) != aborted && transaction.committed == Some(true)
        })
        .flat_map(|((_, incarnation, _), transaction)| {
            transaction
                .handles
                .iter()
                .filter_map(move |handle| history.sends.get(&(producer, *incarnation, *handle)))
        })
        .filter(|send| send.topic_partition == *tp)
        .filter_map(|send| values.offset_of(cluster, tp, log, &send.value))
        .filter_map(|offset| log.batches_from(Offset(offset)).next())
        .any(|batch| {
            ends.get(&batch.base_offset())
                .is_some_and(|end| end.decided_at == Some(commit_at))
        })
}

/// Whether each record of each recorded transaction ended up committed in the final logs. A
/// record gone from its final log that `gone_legally` excuses counts as neither committed nor
/// not: its loss is a durability matter, not an atomicity one, and it was legal there (a
/// failback dropped it with the old primary's unmirrored writes, see
/// `Checkers::txn_send_cut_by_failback`, or the topic is not durable and a leader lost it, as
/// `unseen` and the lost-writes check allow, see `Checkers::lost_legally`). A record gone
/// otherwise is not committed. A record the final log holds whose transaction was decided at
/// or above a loss of committed data after the send counts as neither too: the marker that
/// decided it then may be the one the loss took. That excuses a record the final log leaves
/// uncommitted (`outcome_lost`: a lost COMMIT, the producer's next ABORT closing it) and, of a
/// transaction confirmed aborted only, one the final log commits (`abort_lost`: a lost ABORT,
/// the producer's next COMMIT closing it); a confirmed commit's committed record needs none.
/// A record whose partition's enlisting its coordinator lost (`enlist_lost`) counts as neither
/// when the final log leaves a confirmed commit's record uncommitted, or commits a confirmed
/// abort's record with the COMMIT of another transaction of the producer confirmed committed.
pub(super) fn check_transaction_atomicity(
    time_ms: i64,
    logs: &dyn LeaderLogs,
    history: &History,
    gone_legally: &dyn Fn(&crate::world::workload::SendRecord) -> bool,
    outcome_lost: &OutcomeLost<'_>,
    abort_lost: &OutcomeLost<'_>,
    enlist_lost: &EnlistLost<'_>,
) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut outcomes = TxnEndsMemo::default();
    let mut values = ValueOffsetsMemo::default();
    for ((producer, incarnation, number), transaction) in &history.transactions {
        let cluster = producer.cluster();
        // A transaction its producer aborted never had EndTxn(commit) sent for it: whatever
        // answer the producer got (none, a fatal error), only a commit could make its records
        // readable, and nothing asked for one (Jepsen's aborted read).
        let aborted_by_producer = transaction.committed.is_none() && !transaction.intended_commit;
        let expected = transaction
            .committed
            .or((!transaction.intended_commit).then_some(false));
        let mut committed = Vec::new();
        let mut not_committed = Vec::new();
        let mut still_open = false;
        for handle in &transaction.handles {
            let Some(send) = history.sends.get(&(*producer, *incarnation, *handle)) else {
                continue;
            };
            let Some(log) = logs.leader_log(cluster, &send.topic_partition) else {
                continue;
            };
            if log.last_stable_offset() < log.high_watermark() {
                // A transaction there is still completing: the liveness check judges that.
                still_open = true;
            }
            let partition_outcomes = outcomes.ends(cluster, &send.topic_partition, log);
            let Some(offset) = values.offset_of(cluster, &send.topic_partition, log, &send.value)
            else {
                if !gone_legally(send) {
                    not_committed.push(send.topic_partition.clone());
                }
                continue;
            };
            let end = log
                .batches_from(Offset(offset))
                .next()
                .and_then(|batch| partition_outcomes.get(&batch.base_offset()));
            let outcome = end.map(|end| end.outcome);
            let decided_at = end.and_then(|end| end.decided_at);
            let tp = &send.topic_partition;
            let since_ms = send.sent_ms;
            if outcome != Some(TxnOutcome::Committed)
                && outcome_lost(cluster, tp, offset, decided_at, since_ms)
            {
                continue;
            }
            if outcome == Some(TxnOutcome::Committed)
                && expected == Some(false)
                && abort_lost(cluster, tp, offset, decided_at, since_ms)
            {
                continue;
            }
            if outcome != Some(TxnOutcome::Committed)
                && transaction.committed == Some(true)
                && enlist_lost(*producer, send, transaction.completed_ms, true)
            {
                continue;
            }
            if outcome == Some(TxnOutcome::Committed)
                && expected == Some(false)
                && decided_at.is_some_and(|commit_at| {
                    let aborted = (*incarnation, *number);
                    let ends = partition_outcomes;
                    let final_log = (tp, log, &mut values);
                    commits_a_confirmed_commit(
                        history, *producer, aborted, final_log, ends, commit_at,
                    )
                })
                && enlist_lost(*producer, send, transaction.completed_ms, false)
            {
                continue;
            }
            if outcome == Some(TxnOutcome::Committed) {
                committed.push(send.topic_partition.clone());
            } else {
                not_committed.push(send.topic_partition.clone());
            }
        }
        if still_open {
            continue;
        }
        let problem = match expected {
            Some(true) if !not_committed.is_empty() => {
                Some("was confirmed committed but records on")
            }
            Some(false) if !committed.is_empty() && aborted_by_producer => {
                Some("was aborted by its producer (outcome unconfirmed) but records on")
            }
            Some(false) if !committed.is_empty() => Some("was confirmed aborted but records on"),
            None if !committed.is_empty() && !not_committed.is_empty() => {
                Some("is partly committed: records on")
            }
            _ => None,
        };
        if let Some(problem) = problem {
            let (listed, state) = if expected == Some(false) {
                (&committed, "are committed")
            } else {
                (&not_committed, "are not committed")
            };
            out.push(Violation {
                invariant: Invariant::TransactionAtomicity,
                cluster: Some(cluster),
                topic_partition: listed.first().cloned(),
                detail: format!(
                    "{producer}#{incarnation} transaction {number} {problem} {listed:?} {state}"
                ),
                time_ms,
            });
        }
    }
    out
}
