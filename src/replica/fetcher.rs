//! The replica fetcher: how a broker follows the leaders of the partitions it replicates. A
//! component of the broker; each call gets a [`FetcherContext`] with the replicas, the outbox
//! and the event list.
//!
//! Contract:
//! - **Sessions.** One fetch session per leader broker this broker follows a partition on
//!   ([`ReplicaFetcher::follow`]); one fetch in flight per session, for every partition
//!   followed there, each from its log end with its latest epoch as the last fetched epoch. A
//!   fetch unanswered for the request timeout is sent again; a session with nothing left to
//!   fetch is dropped.
//! - **Answers** are applied only if the partition still follows that leader and its log end is
//!   where the fetch started. A diverging epoch truncates per Kafka's rule
//!   ([`super::follower_truncation_offset`]), as does a batch whose epoch goes below the local latest
//!   ([`follower_truncation_for_batches`]); OffsetOutOfRange restarts at the leader's log start
//!   (below it) or truncates to the leader's high watermark (above it). Appended data moves
//!   the follower's high watermark to the leader's (reported when that lowers it) and its log
//!   start up to the leader's, never above its high watermark. A pre-KIP-101 fetcher
//!   ([`FollowerTruncation::HighWatermark`]) sends no epoch and cuts nothing by epochs: its
//!   follower truncated to its high watermark when it began to follow. A pre-KIP-279 one
//!   ([`FollowerTruncation::EpochLookupOnFollow`]) sends its epoch until a fetch since it
//!   began to follow is answered, and cuts a diverging answer at the leader's end offset
//!   whatever epoch that offset ends.
//! - After an answer the session fetches again at once, or after the backoff when a partition's
//!   answer was an error to wait out.

use crate::protocol::{
    BrokerId, ErrorCode, FetchPartition, FetchPartitionResponse, LeaderEpoch, NodeId, Offset,
    ReplicaRequest, Request, TopicPartition,
};
use std::collections::BTreeMap;

use super::{
    end_offset_truncation, follower_truncation_for_batches, report_truncation_among,
    FollowerTruncation, Partition, Role,
};
use crate::events::{BrokerEvent, TruncationReason};
use crate::log::{FetchIsolation, LogDisk};
use crate::node::Outbox;

/// The fetcher's settings, from the broker config.
#[derive(Debug, Clone, Copy)]
pub struct FetcherConfig {
    /// How long a fetch may stay unanswered before it is sent again.
    pub request_timeout_ms: i64,
    /// `replica.fetch.wait.max.ms`: how long a leader may hold a fetch with no data.
    pub wait_max_ms: i64,
    /// `replica.fetch.max.bytes`.
    pub max_bytes: usize,
    /// `replica.fetch.backoff.ms`: the pause after an answer with an error.
    pub backoff_ms: i64,
    /// How the follower finds where its log and the leader's part: with leader epochs (the
    /// fetch carries the last fetched epoch), or, before KIP-101, not at all (the fetch
    /// carries none, and only becoming a follower truncated, to the high watermark).
    pub truncation: FollowerTruncation,
    /// Whether a fetch carries the follower's current leader epoch, so that a leader in
    /// another epoch refuses it (KIP-320); before KIP-320 it carries none (−1).
    pub sends_current_leader_epoch: bool,
    /// Broken on purpose: a diverging epoch is not truncated to.
    pub skip_divergence_truncation: bool,
    /// Broken on purpose: a follower keeps producer state across MIRROR_PID_RESET.
    pub ignores_pid_reset: bool,
}

/// What the broker lends the fetcher for one call.
#[derive(Debug)]
pub struct FetcherContext<'a, D: LogDisk> {
    /// The broker's clock.
    pub now_ms: i64,
    /// The broker's node id.
    pub node_id: NodeId,
    /// The broker's id in its cluster.
    pub broker_id: BrokerId,
    /// The broker's replicas.
    pub partitions: &'a mut BTreeMap<TopicPartition, Partition<D>>,
    /// Where fetches go out.
    pub outbox: &'a mut Outbox,
    /// Where truncations and lowered high watermarks are reported.
    pub events: &'a mut Vec<BrokerEvent>,
}

impl<D: LogDisk> FetcherContext<'_, D> {
    /// Reports a truncation of a followed partition's log from log end `from`.
    fn push_truncation(
        &mut self,
        topic_partition: &TopicPartition,
        from: i64,
        reason: TruncationReason,
    ) {
        report_truncation_among(
            self.partitions,
            self.events,
            topic_partition,
            Offset(from),
            reason,
        );
    }
}

/// A fetch in flight.
#[derive(Debug, Clone, Copy)]
struct PendingFetch {
    correlation_id: u64,
    sent_ms: i64,
}

/// The fetch session with one leader.
#[derive(Debug, Clone, Default)]
struct FetchSession {
    inflight: Option<PendingFetch>,
    /// Partitions in the in-flight request with the fetch offsets sent.
    inflight_offsets: BTreeMap<TopicPartition, i64>,
    next_fetch_ms: i64,
}

/// See the module doc.
#[derive(Debug)]
pub struct ReplicaFetcher {
    config: FetcherConfig,
    sessions: BTreeMap<BrokerId, FetchSession>,
}

impl ReplicaFetcher {
    /// No session yet.
    pub fn new(config: FetcherConfig) -> Self {
        Self {
            config,
            sessions: BTreeMap::new(),
        }
    }

    /// This broker follows a partition on `leader`: keep (or open) a session with it.
    pub fn follow(&mut self, leader: BrokerId) {
        self.sessions.entry(leader).or_default();
    }

    /// A partition this broker no longer holds: an answer for it is ignored.
    pub fn forget(&mut self, topic_partition: &TopicPartition) {
        for session in self.sessions.values_mut() {
            session.inflight_offsets.remove(topic_partition);
        }
    }

    /// When each session next wants a poll: its fetch's timeout, or its next fetch.
    pub fn deadlines(&self) -> impl Iterator<Item = i64> + '_ {
        self.sessions
            .values()
            .map(|session| match session.inflight {
                Some(pending) => pending.sent_ms + self.config.request_timeout_ms,
                None => session.next_fetch_ms,
            })
    }

    /// Sends a fetch to every leader whose session is due (none in flight, or the one in
    /// flight timed out; the backoff after an error passed), as the broker registered in
    /// `broker_epoch`; a leader this broker no longer follows for any partition is dropped.
    pub fn poll<D: LogDisk>(&mut self, ctx: &mut FetcherContext<'_, D>, broker_epoch: i64) {
        let now_ms = ctx.now_ms;
        let leaders: Vec<BrokerId> = self.sessions.keys().copied().collect();
        for leader in leaders {
            let session = self.sessions.get(&leader).expect("listed above");
            if let Some(pending) = session.inflight {
                if now_ms - pending.sent_ms < self.config.request_timeout_ms {
                    continue;
                }
            }
            if now_ms < session.next_fetch_ms {
                continue;
            }
            let requests = follower_fetch_partitions(ctx.partitions, leader, &self.config);
            if requests.is_empty() {
                self.sessions.remove(&leader);
                continue;
            }
            let offsets = requests
                .iter()
                .map(|request| (request.topic_partition.clone(), request.fetch_offset.0))
                .collect();
            let correlation_id = ctx.outbox.request(
                NodeId::Broker(ctx.node_id.cluster(), leader),
                Request::Replica(ReplicaRequest::Fetch {
                    replica_id: Some(ctx.broker_id),
                    replica_epoch: broker_epoch,
                    isolation: FetchIsolation::LogEnd,
                    max_wait_ms: self.config.wait_max_ms,
                    max_bytes: self.config.max_bytes,
                    partitions: requests,
                }),
            );
            let session = self.sessions.get_mut(&leader).expect("listed above");
            session.inflight = Some(PendingFetch {
                correlation_id,
                sent_ms: now_ms,
            });
            session.inflight_offsets = offsets;
        }
    }

    /// A fetch answer from `leader`: each partition applied, and the session's next fetch at
    /// once, or after the backoff when a partition's answer was an error to wait out.
    pub fn handle_response<D: LogDisk>(
        &mut self,
        ctx: &mut FetcherContext<'_, D>,
        leader: BrokerId,
        correlation_id: u64,
        answers: Vec<FetchPartitionResponse>,
    ) {
        let Some(session) = self.sessions.get_mut(&leader) else {
            return;
        };
        if session.inflight.map(|p| p.correlation_id) != Some(correlation_id) {
            return;
        }
        session.inflight = None;
        let offsets = std::mem::take(&mut session.inflight_offsets);
        let mut backoff = false;
        for answer in answers {
            let Some(sent_offset) = offsets.get(&answer.topic_partition).copied() else {
                continue;
            };
            backoff |= !self.apply_answer(ctx, leader, sent_offset, answer);
        }
        let next = if backoff {
            ctx.now_ms + self.config.backoff_ms
        } else {
            ctx.now_ms
        };
        if let Some(session) = self.sessions.get_mut(&leader) {
            session.next_fetch_ms = next;
        }
    }

    /// Applies one partition of a fetch answer; returns false when the fetcher should back off.
    fn apply_answer<D: LogDisk>(
        &self,
        ctx: &mut FetcherContext<'_, D>,
        leader: BrokerId,
        sent_offset: i64,
        answer: FetchPartitionResponse,
    ) -> bool {
        let topic_partition = answer.topic_partition.clone();
        let Some(partition) = ctx.partitions.get_mut(&topic_partition) else {
            return true;
        };
        let following =
            matches!(&partition.role, Role::Follower(role) if role.leader == Some(leader));
        if !following || partition.log.log_end_offset() != Offset(sent_offset) {
            // The role or the log changed while the fetch was in flight: drop the answer.
            return true;
        }
        match answer.error {
            ErrorCode::None => {
                // The leader placed the fetch against its log (diverging or not): before
                // KIP-279 that one lookup is all the follower asks while it follows.
                if let Role::Follower(role) = &mut partition.role {
                    role.epoch_looked_up = true;
                }
            }
            ErrorCode::OffsetOutOfRange => {
                let reason = if answer.log_start_offset > partition.log.log_end_offset() {
                    let _ = partition
                        .log
                        .truncate_fully_and_start_at(answer.log_start_offset);
                    TruncationReason::OffsetOutOfRangeBelowLeaderStart
                } else {
                    let target = answer.high_watermark.min(partition.log.log_end_offset());
                    let _ = partition.log.truncate_to(target);
                    TruncationReason::OffsetOutOfRangeAboveLeader
                };
                ctx.push_truncation(&topic_partition, sent_offset, reason);
                return true;
            }
            _ => return false,
        }
        let target = match answer.diverging_epoch {
            Some(_) if self.config.skip_divergence_truncation => {
                return false;
            }
            Some(diverging) => {
                let log = &partition.log;
                let target = self.config.truncation.truncation_offset(log, diverging);
                // KIP-279's case: the leader's epoch ends past where the follower's own log
                // ends it, and the follower cuts below the leader's end offset.
                let reason = if target < end_offset_truncation(log, diverging) {
                    TruncationReason::DivergingEpochBelowLeaderEnd
                } else {
                    TruncationReason::DivergingEpoch
                };
                Some((target, reason))
            }
            None if self.config.truncation.cuts_by_batch_epochs() => {
                follower_truncation_for_batches(&partition.log, &answer.batches)
                    .map(|target| (target, TruncationReason::DivergingEpoch))
            }
            None => None,
        };
        if let Some((target, reason)) = target {
            let _ = partition.log.truncate_to(target);
            ctx.push_truncation(&topic_partition, sent_offset, reason);
            return true;
        }
        let appended = if self.config.ignores_pid_reset {
            partition
                .log
                .append_as_follower_ignoring_pid_reset(&answer.batches)
        } else {
            partition.log.append_as_follower(&answer.batches)
        };
        if appended.is_err() {
            return false;
        }
        let log = &mut partition.log;
        let high_watermark_before = log.high_watermark();
        let high_watermark = log.update_high_watermark(answer.high_watermark);
        if high_watermark < high_watermark_before {
            // Kafka's follower takes the leader's high watermark as it is; a new leader's may
            // lag its predecessor's until its followers fetch again.
            ctx.events.push(BrokerEvent::FollowerHighWatermarkLowered {
                topic_partition: topic_partition.clone(),
                from: high_watermark_before,
                to: high_watermark,
                leader,
            });
        }
        let log = &mut ctx
            .partitions
            .get_mut(&topic_partition)
            .expect("checked above")
            .log;
        let new_start = answer.log_start_offset.min(log.high_watermark());
        // Raising the start above the high watermark is refused by the log; clamped above.
        let _ = log.maybe_increment_log_start_offset(new_start);
        true
    }
}

/// What this broker fetches from `leader`: every partition it follows there, from its log end
/// (with its latest epoch as the last fetched one, unless the follower truncation uses no
/// epochs; with its current leader epoch, unless the config predates KIP-320).
fn follower_fetch_partitions<D: LogDisk>(
    partitions: &BTreeMap<TopicPartition, Partition<D>>,
    leader: BrokerId,
    config: &FetcherConfig,
) -> Vec<FetchPartition> {
    let no_epoch = LeaderEpoch(-1);
    let truncation = config.truncation;
    partitions
        .values()
        .filter_map(|partition| match &partition.role {
            Role::Follower(role) if role.leader == Some(leader) => Some(FetchPartition {
                topic_id: None,
                topic_partition: partition.topic_partition.clone(),
                current_leader_epoch: if config.sends_current_leader_epoch {
                    role.leader_epoch
                } else {
                    no_epoch
                },
                fetch_offset: partition.log.log_end_offset(),
                last_fetched_epoch: if truncation.fetches_with_epoch(role.epoch_looked_up) {
                    partition.log.latest_epoch().unwrap_or(no_epoch)
                } else {
                    no_epoch
                },
            }),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::common::MirrorState;
    use crate::log::{AppendOrigin, EpochEndOffset, LogConfig, MemoryDisk, PartitionLog};
    use crate::protocol::{ClusterIndex, Envelope, Message, TopicId};
    use crate::record::{BatchBuilder, RecordBatch};
    use crate::replica::FollowerRole;

    const LEADER: BrokerId = BrokerId(2);
    const ME: BrokerId = BrokerId(3);

    fn config() -> FetcherConfig {
        FetcherConfig {
            request_timeout_ms: 1_000,
            wait_max_ms: 100,
            max_bytes: 1 << 20,
            backoff_ms: 50,
            truncation: FollowerTruncation::LeaderEpoch,
            sends_current_leader_epoch: true,
            skip_divergence_truncation: false,
            ignores_pid_reset: false,
        }
    }

    /// orders-0 following LEADER in epoch 1, with one batch in each of `epochs`.
    fn follower(epochs: &[i32]) -> BTreeMap<TopicPartition, Partition<MemoryDisk>> {
        let mut log = PartitionLog::open(MemoryDisk::new(), LogConfig::default())
            .unwrap()
            .0;
        for epoch in epochs {
            let mut builder = BatchBuilder::default();
            builder.append(0, None, Some(Bytes::from_static(b"v")), vec![]);
            log.append_as_leader(
                &builder.build(),
                LeaderEpoch(*epoch),
                AppendOrigin::Client,
                0,
            )
            .unwrap();
        }
        let tp = TopicPartition::new("orders", 0);
        let partition = Partition {
            topic_partition: tp.clone(),
            topic_id: TopicId(1),
            log,
            role: Role::Follower(FollowerRole {
                leader: Some(LEADER),
                leader_epoch: LeaderEpoch(1),
                epoch_looked_up: false,
            }),
            mirror_state: MirrorState::Unknown,
        };
        BTreeMap::from([(tp, partition)])
    }

    fn sent(outbox: &mut Outbox) -> Vec<(u64, Vec<FetchPartition>)> {
        outbox
            .take()
            .into_iter()
            .map(|Envelope { message, .. }| match message {
                Message::Request(
                    correlation_id,
                    Request::Replica(ReplicaRequest::Fetch { partitions, .. }),
                ) => (correlation_id, partitions),
                other => panic!("the fetcher sends fetches only: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn fetches_from_the_log_end_resends_after_the_timeout_and_truncates_on_divergence() {
        let mut partitions = follower(&[0, 0, 1]);
        let mut outbox = Outbox::new(NodeId::Broker(ClusterIndex(1), ME));
        let mut events = Vec::new();
        let mut fetcher = ReplicaFetcher::new(config());
        fetcher.follow(LEADER);
        let mut ctx = FetcherContext {
            now_ms: 0,
            node_id: NodeId::Broker(ClusterIndex(1), ME),
            broker_id: ME,
            partitions: &mut partitions,
            outbox: &mut outbox,
            events: &mut events,
        };
        fetcher.poll(&mut ctx, 5);
        let first = sent(ctx.outbox);
        assert_eq!(first.len(), 1);
        let asked = &first[0].1[0];
        assert_eq!(
            (asked.fetch_offset, asked.last_fetched_epoch),
            (Offset(3), LeaderEpoch(1))
        );
        // One fetch in flight per leader; sent again once the timeout passed.
        ctx.now_ms = 999;
        fetcher.poll(&mut ctx, 5);
        assert!(sent(ctx.outbox).is_empty());
        assert_eq!(fetcher.deadlines().collect::<Vec<_>>(), vec![1_000]);
        ctx.now_ms = 1_000;
        fetcher.poll(&mut ctx, 5);
        let (correlation_id, _) = sent(ctx.outbox)[0].clone();
        // The leader's epoch 0 ended at offset 1: the follower cuts its tail back to it.
        let tp = TopicPartition::new("orders", 0);
        let answer = FetchPartitionResponse {
            topic_partition: tp.clone(),
            error: ErrorCode::None,
            high_watermark: Offset(1),
            last_stable_offset: Offset(1),
            log_start_offset: Offset(0),
            diverging_epoch: Some(EpochEndOffset {
                epoch: LeaderEpoch(0),
                end_offset: Offset(1),
            }),
            aborted_transactions: None,
            batches: Vec::new(),
        };
        ctx.now_ms = 1_010;
        fetcher.handle_response(&mut ctx, LEADER, correlation_id, vec![answer]);
        assert_eq!(ctx.partitions[&tp].log.log_end_offset(), Offset(1));
        assert!(matches!(
            ctx.events.as_slice(),
            [BrokerEvent::Truncated {
                from_log_end_offset: Offset(3),
                to_log_end_offset: Offset(1),
                reason: TruncationReason::DivergingEpoch,
                ..
            }]
        ));
        // Fetches again at once, from the new log end.
        assert_eq!(fetcher.deadlines().collect::<Vec<_>>(), vec![1_010]);
        fetcher.poll(&mut ctx, 5);
        assert_eq!(sent(ctx.outbox)[0].1[0].fetch_offset, Offset(1));
    }

    #[test]
    fn an_answer_for_a_log_that_moved_is_dropped_and_a_leader_followed_for_nothing_is_forgotten() {
        let mut partitions = follower(&[0]);
        let mut outbox = Outbox::new(NodeId::Broker(ClusterIndex(1), ME));
        let mut events = Vec::new();
        let mut fetcher = ReplicaFetcher::new(config());
        fetcher.follow(LEADER);
        let node_id = NodeId::Broker(ClusterIndex(1), ME);
        let mut ctx = FetcherContext {
            now_ms: 0,
            node_id,
            broker_id: ME,
            partitions: &mut partitions,
            outbox: &mut outbox,
            events: &mut events,
        };
        fetcher.poll(&mut ctx, 5);
        let correlation_id = match ctx.outbox.take()[0].message {
            Message::Request(correlation_id, _) => correlation_id,
            Message::Response(..) => unreachable!(),
        };
        // The log grew meanwhile (a stale answer would be applied at the wrong offset).
        let mut builder = BatchBuilder::default();
        builder.append(0, None, Some(Bytes::from_static(b"w")), vec![]);
        let tp = TopicPartition::new("orders", 0);
        let log = &mut ctx.partitions.get_mut(&tp).unwrap().log;
        log.append_as_leader(&builder.build(), LeaderEpoch(0), AppendOrigin::Client, 0)
            .unwrap();
        let stale = FetchPartitionResponse {
            topic_partition: tp.clone(),
            error: ErrorCode::None,
            high_watermark: Offset(0),
            last_stable_offset: Offset(0),
            log_start_offset: Offset(0),
            diverging_epoch: Some(EpochEndOffset {
                epoch: LeaderEpoch(0),
                end_offset: Offset(0),
            }),
            aborted_transactions: None,
            batches: Vec::new(),
        };
        fetcher.handle_response(&mut ctx, LEADER, correlation_id, vec![stale]);
        assert_eq!(ctx.partitions[&tp].log.log_end_offset(), Offset(2));
        assert!(ctx.events.is_empty());
        // The partition now follows another leader: the session with LEADER has nothing left.
        let moved = Role::Follower(FollowerRole {
            leader: Some(BrokerId(9)),
            leader_epoch: LeaderEpoch(2),
            epoch_looked_up: false,
        });
        ctx.partitions.get_mut(&tp).unwrap().role = moved;
        ctx.now_ms = 10;
        fetcher.poll(&mut ctx, 5);
        assert!(ctx.outbox.take().is_empty());
        assert_eq!(fetcher.deadlines().count(), 0);
    }

    /// A fetcher with `truncation` following LEADER on orders-0 (one batch in each of
    /// `epochs`): its first fetch is sent and answered with `answer(that fetch)`; `check` then
    /// gets the fetcher and its context.
    fn first_fetch_answered(
        truncation: FollowerTruncation,
        epochs: &[i32],
        answer: impl FnOnce(&FetchPartition) -> FetchPartitionResponse,
        check: impl FnOnce(&mut ReplicaFetcher, &mut FetcherContext<'_, MemoryDisk>),
    ) {
        let mut partitions = follower(epochs);
        let node_id = NodeId::Broker(ClusterIndex(1), ME);
        let mut outbox = Outbox::new(node_id);
        let mut events = Vec::new();
        let mut fetcher = ReplicaFetcher::new(FetcherConfig {
            truncation,
            ..config()
        });
        fetcher.follow(LEADER);
        let mut ctx = FetcherContext {
            now_ms: 0,
            node_id,
            broker_id: ME,
            partitions: &mut partitions,
            outbox: &mut outbox,
            events: &mut events,
        };
        fetcher.poll(&mut ctx, 5);
        let (correlation_id, asked) = sent(ctx.outbox).remove(0);
        let answer = answer(&asked[0]);
        fetcher.handle_response(&mut ctx, LEADER, correlation_id, vec![answer]);
        check(&mut fetcher, &mut ctx);
    }

    /// A successful answer for orders-0 with high watermark 2.
    fn answer_at_2(
        diverging_epoch: Option<EpochEndOffset>,
        batches: Vec<RecordBatch>,
    ) -> FetchPartitionResponse {
        FetchPartitionResponse {
            topic_partition: TopicPartition::new("orders", 0),
            error: ErrorCode::None,
            high_watermark: Offset(2),
            last_stable_offset: Offset(2),
            log_start_offset: Offset(0),
            diverging_epoch,
            aborted_transactions: None,
            batches,
        }
    }

    #[test]
    fn a_pre_kip_101_follower_fetches_without_an_epoch_and_cuts_nothing_by_epochs() {
        // The same answer to a follower in epoch 2: a batch of epoch 1 at its log end. With
        // leader epochs it cuts its epoch-2 tail (the batch says the leader's history went
        // another way there); before KIP-101 it knows no epochs and appends.
        let tp = TopicPartition::new("orders", 0);
        let mut builder = BatchBuilder::default();
        builder.append(0, None, Some(Bytes::from_static(b"w")), vec![]);
        let older_epoch = builder
            .build()
            .with_base_offset(2)
            .with_partition_leader_epoch(1);
        for (truncation, last_fetched_epoch, log_end_after) in [
            (FollowerTruncation::LeaderEpoch, LeaderEpoch(2), Offset(1)),
            (
                FollowerTruncation::HighWatermark,
                LeaderEpoch(-1),
                Offset(3),
            ),
        ] {
            let answer = |asked: &FetchPartition| {
                assert_eq!(
                    (asked.fetch_offset, asked.last_fetched_epoch),
                    (Offset(2), last_fetched_epoch),
                    "{truncation:?}"
                );
                answer_at_2(None, vec![older_epoch.clone()])
            };
            first_fetch_answered(truncation, &[0, 2], answer, |_, ctx| {
                let log_end = ctx.partitions[&tp].log.log_end_offset();
                assert_eq!(log_end, log_end_after, "{truncation:?}");
                let truncated = ctx
                    .events
                    .iter()
                    .any(|event| matches!(event, BrokerEvent::Truncated { .. }));
                let cuts = truncation.cuts_by_batch_epochs();
                assert_eq!(truncated, cuts, "{truncation:?}");
            });
        }
    }

    #[test]
    fn a_pre_kip_279_follower_cuts_at_the_leaders_end_offset_and_then_fetches_without_an_epoch() {
        // The follower's epoch 0 ends at 2, then it wrote epoch 1 (offsets 2 and 3) as a
        // leader the current one never knew. The leader's epoch 0 ends at 3. Since KIP-279
        // the follower cuts at its own end of epoch 0; before, at the leader's 3, keeping its
        // epoch-1 record at 2, and its next fetch carries no epoch that could tell.
        let tp = TopicPartition::new("orders", 0);
        for (truncation, cut_to, reason, next_epoch) in [
            (
                FollowerTruncation::LeaderEpoch,
                Offset(2),
                TruncationReason::DivergingEpochBelowLeaderEnd,
                LeaderEpoch(0),
            ),
            (
                FollowerTruncation::EpochLookupOnFollow,
                Offset(3),
                TruncationReason::DivergingEpoch,
                LeaderEpoch(-1),
            ),
        ] {
            let answer = |asked: &FetchPartition| {
                assert_eq!(asked.last_fetched_epoch, LeaderEpoch(1), "{truncation:?}");
                let leaders_epoch_0 = EpochEndOffset {
                    epoch: LeaderEpoch(0),
                    end_offset: Offset(3),
                };
                answer_at_2(Some(leaders_epoch_0), Vec::new())
            };
            first_fetch_answered(truncation, &[0, 0, 1, 1], answer, |fetcher, ctx| {
                let log_end = ctx.partitions[&tp].log.log_end_offset();
                assert_eq!(log_end, cut_to, "{truncation:?}");
                assert!(
                    matches!(
                        ctx.events.as_slice(),
                        [BrokerEvent::Truncated { reason: r, .. }] if *r == reason
                    ),
                    "{truncation:?}: {:?}",
                    ctx.events
                );
                fetcher.poll(ctx, 5);
                let asked = sent(ctx.outbox).remove(0).1;
                assert_eq!(
                    (asked[0].fetch_offset, asked[0].last_fetched_epoch),
                    (cut_to, next_epoch),
                    "{truncation:?}"
                );
            });
        }
    }
}
