//! One partition replica on a broker: its log plus its role (leader, follower or offline).
//!
//! As leader it tracks every follower's log end offset and last caught-up time, computes the
//! high watermark over the (maximal) ISR, and proposes ISR changes: a follower that fetched up
//! to the high watermark (and past the leader's epoch start) joins, an ISR member that has not
//! caught up for `replica.lag.time.max.ms` leaves. Only one ISR change is in flight at a time;
//! while it is, the high watermark uses the larger of the current and proposed ISR, as Kafka's
//! "maximal ISR" does, so an expansion never lets the high watermark run ahead of a member.

use std::collections::BTreeMap;

use crate::common::{LeaderEpoch, Offset};

use crate::log::{LogDisk, PartitionLog};
use crate::metadata::PartitionRecord;
use crate::protocol::{BrokerId, TopicId, TopicPartition};
use crate::replica::FollowerTruncation;

/// What the leader knows about one follower.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowerState {
    /// The follower's log end offset (its last fetch offset), −1 until it fetches.
    pub log_end_offset: Offset,
    /// Last time the follower was caught up to the leader's log end offset.
    pub last_caught_up_ms: i64,
    /// Time of its previous fetch.
    pub last_fetch_ms: i64,
    /// Leader log end offset at its previous fetch.
    pub last_fetch_leader_log_end_offset: Offset,
    /// Set when a mirror fetcher's cut removed records from the leader's log: the offset
    /// this follower must truncate to, as it may hold the removed records (or have them in
    /// flight). Its fetch beyond it is answered as diverging even where its epoch check
    /// passes, since the batches mirrored at those offsets may carry the same epoch numbers;
    /// cleared by its first fetch at or below it. See [`Partition::fence_after_mirror_cut`].
    pub must_truncate_to: Option<Offset>,
}

/// What [`Partition::maybe_expand_isr`] decided for a follower's fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IsrExpansion {
    /// The ISR stays: the follower is in it, behind the high watermark, or a change is pending.
    Unchanged,
    /// The follower joins: the ISR proposed to the controller.
    Proposed(Vec<BrokerId>),
    /// The follower reached the high watermark but not the log end this leadership began at
    /// (KAFKA-7128's case): it stays out, or, before the fix, joins (`proposed`).
    BelowEpochStart {
        /// The ISR proposed to the controller, if the follower joins all the same.
        proposed: Option<Vec<BrokerId>>,
        /// The follower's log end offset.
        follower_end: Offset,
        /// The leader's high watermark.
        high_watermark: Offset,
        /// The leader's log end when its leadership began.
        epoch_start: Offset,
    },
}

/// Leader-side state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderState {
    /// Leader epoch in which this broker leads.
    pub leader_epoch: LeaderEpoch,
    /// Partition epoch of the ISR the leader works with.
    pub partition_epoch: i32,
    /// Committed ISR (as the controller last confirmed it).
    pub isr: Vec<BrokerId>,
    /// All assigned replicas.
    pub replicas: Vec<BrokerId>,
    /// ISR proposed to the controller and not yet answered.
    pub pending_isr: Option<Vec<BrokerId>>,
    /// Log end offset when this leadership began.
    pub leader_epoch_start_offset: Offset,
    /// Followers by id.
    pub followers: BTreeMap<BrokerId, FollowerState>,
}

impl LeaderState {
    /// The ISR used for the high watermark: current ∪ pending expansion.
    pub fn maximal_isr(&self) -> Vec<BrokerId> {
        let mut members = self.isr.clone();
        if let Some(pending) = &self.pending_isr {
            for member in pending {
                if !members.contains(member) {
                    members.push(*member);
                }
            }
        }
        members.sort();
        members
    }
}

/// Follower-side state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowerRole {
    /// The leader to fetch from (`None`: the partition has no leader right now).
    pub leader: Option<BrokerId>,
    /// Leader epoch of the partition as last seen in metadata.
    pub leader_epoch: LeaderEpoch,
    /// Whether a fetch since this replica began to follow was answered without an error:
    /// before KIP-279 ([`FollowerTruncation::EpochLookupOnFollow`]) the follower's epoch
    /// lookup is then done, and its fetches carry no epoch any more.
    pub epoch_looked_up: bool,
}

/// The replica's role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// This broker leads the partition.
    Leader(LeaderState),
    /// This broker follows (or waits for a leader).
    Follower(FollowerRole),
}

/// A partition replica.
#[derive(Debug)]
pub struct Partition<D: LogDisk> {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// Its topic id.
    pub topic_id: TopicId,
    /// The local log.
    pub log: PartitionLog<D>,
    /// Current role.
    pub role: Role,
    /// The KIP-1279 state this broker's MirrorMetadataManager last persisted for the
    /// partition (`Unknown` until it did). Only `Stopped` lets clients write to a topic that
    /// has `mirror.name`.
    pub mirror_state: crate::common::MirrorState,
}

impl<D: LogDisk> Partition<D> {
    /// The leader state, if leading.
    pub fn leader_state(&self) -> Option<&LeaderState> {
        match &self.role {
            Role::Leader(state) => Some(state),
            Role::Follower(_) => None,
        }
    }

    /// The leader epoch this replica acts in.
    pub fn leader_epoch(&self) -> LeaderEpoch {
        match &self.role {
            Role::Leader(state) => state.leader_epoch,
            Role::Follower(role) => role.leader_epoch,
        }
    }

    /// Takes leadership in `record.leader_epoch`: the epoch starts at the log end offset, and
    /// every ISR member counts as caught up now so none is dropped before it can fetch.
    ///
    /// The leader epoch starts at the log end in the epoch cache (Kafka's `makeLeader`),
    /// except on a KIP-1279 mirror topic (`mirror_topic`): there the cache holds the source's
    /// epochs, fed by the mirrored batches, and a local epoch enters it only with the first
    /// batch this leader writes itself (spec §4.2).
    pub fn become_leader(
        &mut self,
        record: &PartitionRecord,
        self_id: BrokerId,
        now_ms: i64,
        mirror_topic: bool,
    ) {
        assert_eq!(
            record.leader,
            Some(self_id),
            "become_leader on a non-leader record"
        );
        if !mirror_topic {
            self.log
                .assign_epoch_start_offset(LeaderEpoch(record.leader_epoch));
        }
        // A leader re-elected in a higher epoch (a mirror partition's own bump, STOPPING's or
        // EPOCH_FENCING's) keeps its mirror-cut fences: its log did not change, and a follower
        // still holding what the cut removed must truncate before it counts again.
        let fences: BTreeMap<BrokerId, Offset> = match &self.role {
            Role::Leader(state) => state
                .followers
                .iter()
                .filter_map(|(replica, follower)| Some((*replica, follower.must_truncate_to?)))
                .collect(),
            Role::Follower(_) => BTreeMap::new(),
        };
        let followers = record
            .replicas
            .iter()
            .filter(|replica| **replica != self_id)
            .map(|replica| {
                let caught_up = if record.isr.contains(replica) {
                    now_ms
                } else {
                    -1
                };
                (
                    *replica,
                    FollowerState {
                        log_end_offset: Offset::NONE,
                        last_caught_up_ms: caught_up,
                        last_fetch_ms: -1,
                        last_fetch_leader_log_end_offset: Offset::NONE,
                        must_truncate_to: fences.get(replica).copied(),
                    },
                )
            })
            .collect();
        self.role = Role::Leader(LeaderState {
            leader_epoch: LeaderEpoch(record.leader_epoch),
            partition_epoch: record.partition_epoch,
            isr: record.isr.clone(),
            replicas: record.replicas.clone(),
            pending_isr: None,
            leader_epoch_start_offset: self.log.log_end_offset(),
            followers,
        });
    }

    /// Follows `record.leader` (or waits, when there is none). A log with data but no epochs
    /// cannot use truncation-on-fetch, so it is truncated to the high watermark first, as
    /// Kafka's follower start-up does; before KIP-101 every log was
    /// ([`FollowerTruncation::HighWatermark`]).
    pub fn become_follower(&mut self, record: &PartitionRecord, truncation: FollowerTruncation) {
        let by_high_watermark =
            self.log.latest_epoch().is_none() || truncation.truncates_to_high_watermark();
        if by_high_watermark && self.log.log_end_offset() > self.log.high_watermark() {
            let high_watermark = self.log.high_watermark();
            // The disk error case leaves the log as it was; the next fetch retries.
            let _ = self.log.truncate_to(high_watermark);
        }
        self.role = Role::Follower(FollowerRole {
            leader: record.leader,
            leader_epoch: LeaderEpoch(record.leader_epoch),
            epoch_looked_up: false,
        });
    }

    /// The leader adopts a newer ISR from metadata or an AlterPartition answer.
    pub fn update_isr(&mut self, record: &PartitionRecord) {
        if let Role::Leader(state) = &mut self.role {
            if LeaderEpoch(record.leader_epoch) == state.leader_epoch
                && record.partition_epoch > state.partition_epoch
            {
                state.isr = record.isr.clone();
                state.partition_epoch = record.partition_epoch;
                state.pending_isr = None;
            }
        }
    }

    /// Leader: records a follower's fetch at `fetch_offset`, Kafka's `updateFollowerFetchState`.
    pub fn record_follower_fetch(&mut self, follower: BrokerId, fetch_offset: Offset, now_ms: i64) {
        let leader_log_end_offset = self.log.log_end_offset();
        let Role::Leader(state) = &mut self.role else {
            return;
        };
        let Some(follower_state) = state.followers.get_mut(&follower) else {
            return;
        };
        if fetch_offset >= leader_log_end_offset {
            follower_state.last_caught_up_ms = now_ms;
        } else if fetch_offset >= follower_state.last_fetch_leader_log_end_offset
            && follower_state.last_fetch_ms >= 0
        {
            follower_state.last_caught_up_ms = follower_state
                .last_caught_up_ms
                .max(follower_state.last_fetch_ms);
        }
        if follower_state
            .must_truncate_to
            .is_some_and(|cut| fetch_offset <= cut)
        {
            follower_state.must_truncate_to = None;
        }
        follower_state.log_end_offset = fetch_offset;
        follower_state.last_fetch_ms = now_ms;
        follower_state.last_fetch_leader_log_end_offset = leader_log_end_offset;
    }

    /// Leader: raises the high watermark to the smallest log end offset in the maximal ISR.
    /// Returns whether it moved. With `min_insync_replicas` above 1 (KIP-966's strict rule,
    /// Kafka's `isUnderMinIsr`) it does not move while the committed ISR is smaller than it
    /// (at most the replica count): so a record is committed only once min ISR replicas hold
    /// it, and every replica KIP-966 keeps eligible after the ISR shrank holds all of them.
    pub fn maybe_increment_high_watermark(
        &mut self,
        self_id: BrokerId,
        min_insync_replicas: usize,
    ) -> bool {
        let Role::Leader(state) = &self.role else {
            return false;
        };
        if state.isr.len() < min_insync_replicas.min(state.replicas.len()) {
            return false;
        }
        let mut candidate = self.log.log_end_offset();
        for member in state.maximal_isr() {
            if member == self_id {
                continue;
            }
            let follower_end = state
                .followers
                .get(&member)
                .map_or(Offset::NONE, |follower| follower.log_end_offset);
            candidate = candidate.min(follower_end);
        }
        candidate.is_some() && self.log.maybe_increment_high_watermark(candidate)
    }

    /// Leader: a follower outside the ISR that reached the high watermark and, when
    /// `waits_for_epoch_start`, the log end this leadership began at (KAFKA-7128) should join.
    /// Proposes the grown ISR (recording it as pending), or says that only the epoch start
    /// held the follower back.
    ///
    /// Why the epoch start: a new leader keeps the high watermark it had as a follower, which
    /// lags the old leader's by a fetch round trip, and it cannot move it until its followers
    /// fetch in the new epoch; the records between are committed all the same. A follower
    /// that reached only that stale high watermark would join the ISR without them, and, once
    /// elected, lose them. Every committed record lies below the leader's log end at its
    /// election, so a follower past that holds them all.
    pub fn maybe_expand_isr(
        &mut self,
        follower: BrokerId,
        waits_for_epoch_start: bool,
    ) -> IsrExpansion {
        let high_watermark = self.log.high_watermark();
        let Role::Leader(state) = &mut self.role else {
            return IsrExpansion::Unchanged;
        };
        if state.pending_isr.is_some() || state.isr.contains(&follower) {
            return IsrExpansion::Unchanged;
        }
        let Some(follower_state) = state.followers.get(&follower) else {
            return IsrExpansion::Unchanged;
        };
        let follower_end = follower_state.log_end_offset;
        if follower_end < high_watermark {
            return IsrExpansion::Unchanged;
        }
        let epoch_start = state.leader_epoch_start_offset;
        let below_epoch_start = follower_end < epoch_start;
        if below_epoch_start && waits_for_epoch_start {
            return IsrExpansion::BelowEpochStart {
                proposed: None,
                follower_end,
                high_watermark,
                epoch_start,
            };
        }
        let mut proposed = state.isr.clone();
        proposed.push(follower);
        proposed.sort();
        state.pending_isr = Some(proposed.clone());
        if below_epoch_start {
            return IsrExpansion::BelowEpochStart {
                proposed: Some(proposed),
                follower_end,
                high_watermark,
                epoch_start,
            };
        }
        IsrExpansion::Proposed(proposed)
    }

    /// A leader truncated its own log (KIP-1279: a mirror leader's last-mirrored-epoch,
    /// diverging-epoch or last-stable-offset truncation): the current leadership cannot have
    /// begun beyond the new log end, else no follower could ever catch up to its start and
    /// rejoin the ISR.
    ///
    /// What the leader knew of a follower that had fetched past the new log end no longer
    /// holds: that follower still has the records the leader just removed. Its log end becomes
    /// unknown (−1, as before its first fetch), so the high watermark cannot advance over the
    /// offsets the leader now fills with other records, and PREPARING's wait for its replicas
    /// to truncate (a known log end at or below the cut) cannot pass, until the
    /// follower has truncated (its next fetch meets the diverging epoch) and fetched again.
    pub fn leader_log_truncated(&mut self) {
        let log_end = self.log.log_end_offset();
        if let Role::Leader(state) = &mut self.role {
            state.leader_epoch_start_offset = state.leader_epoch_start_offset.min(log_end);
            for follower in state.followers.values_mut() {
                if follower.log_end_offset > log_end {
                    follower.log_end_offset = Offset::NONE;
                }
            }
        }
    }

    /// Leader: the mirror fetcher cut this log back to its log end (a diverging source, or a
    /// source batch below the local epoch), removing records. Every follower must truncate to
    /// the cut before it fetches past it again.
    ///
    /// Kafka's divergence check cannot be trusted with this: it compares the follower's last
    /// fetched epoch with the leader's log, and the batches the fetcher mirrors at the cut
    /// offsets carry the source's epochs, which may be the very numbers of the removed
    /// records (the source re-used them after a cut of its own). A follower that was not
    /// fetching at the cut (paused, cut off, outside the ISR) then keeps records the leader
    /// no longer has, or lands inside a batch of the new history and can append nothing
    /// (generator seed 9400000000000529: a follower paused across the cut truncated to 261,
    /// inside the leader's re-mirrored batch 255..277, and never rejoined the ISR).
    /// Every follower is fenced, not only those known past the cut: one with a fetch
    /// answered just before the cut has the removed records in flight.
    pub fn fence_after_mirror_cut(&mut self) {
        let cut = self.log.log_end_offset();
        if let Role::Leader(state) = &mut self.role {
            for follower in state.followers.values_mut() {
                follower.must_truncate_to =
                    Some(follower.must_truncate_to.map_or(cut, |at| at.min(cut)));
            }
        }
    }

    /// Leader: where `follower`, fetching at `fetch_offset`, must truncate to first because
    /// of an earlier mirror cut ([`Self::fence_after_mirror_cut`]); `None` when there was
    /// none, or the fetch is at or below it (its [`Self::record_follower_fetch`] then clears
    /// the fence).
    pub fn mirror_cut_fence(&self, follower: BrokerId, fetch_offset: Offset) -> Option<Offset> {
        let cut = self
            .leader_state()?
            .followers
            .get(&follower)?
            .must_truncate_to?;
        (fetch_offset > cut).then_some(cut)
    }

    /// Leader: ISR members (other than itself) that have not caught up within `lag_time_ms`
    /// leave. Returns the proposed ISR, if any (and records it as pending).
    pub fn maybe_shrink_isr(
        &mut self,
        self_id: BrokerId,
        now_ms: i64,
        lag_time_ms: i64,
    ) -> Option<Vec<BrokerId>> {
        let Role::Leader(state) = &mut self.role else {
            return None;
        };
        if state.pending_isr.is_some() {
            return None;
        }
        let lagging: Vec<BrokerId> = state
            .isr
            .iter()
            .copied()
            .filter(|member| *member != self_id)
            .filter(|member| {
                state
                    .followers
                    .get(member)
                    .is_none_or(|f| now_ms - f.last_caught_up_ms > lag_time_ms)
            })
            .collect();
        if lagging.is_empty() {
            return None;
        }
        let proposed: Vec<BrokerId> = state
            .isr
            .iter()
            .copied()
            .filter(|member| !lagging.contains(member))
            .collect();
        state.pending_isr = Some(proposed.clone());
        Some(proposed)
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::common::MirrorState;
    use crate::log::{AppendOrigin, LogConfig, MemoryDisk};
    use crate::record::BatchBuilder;

    const LEADER: BrokerId = BrokerId(2);
    const FOLLOWER: BrokerId = BrokerId(3);

    fn leader_partition() -> Partition<MemoryDisk> {
        let log = PartitionLog::open(MemoryDisk::new(), LogConfig::default())
            .unwrap()
            .0;
        let mut partition = Partition {
            topic_partition: TopicPartition::new("orders", 5),
            topic_id: TopicId(1),
            log,
            role: Role::Follower(FollowerRole {
                leader: None,
                leader_epoch: LeaderEpoch(0),
                epoch_looked_up: false,
            }),
            mirror_state: MirrorState::Unknown,
        };
        let record = PartitionRecord {
            topic_id: TopicId(1),
            partition: 5,
            replicas: vec![LEADER, FOLLOWER],
            isr: vec![LEADER, FOLLOWER],
            leader: Some(LEADER),
            leader_epoch: 1,
            partition_epoch: 1,
            eligible_leader_replicas: Vec::new(),
            last_known_elr: Vec::new(),
        };
        partition.become_leader(&record, LEADER, 0, false);
        partition
    }

    /// Appends `batches` one-record batches.
    fn append(partition: &mut Partition<MemoryDisk>, batches: usize) {
        for _ in 0..batches {
            let mut builder = BatchBuilder::default();
            builder.append(0, None, Some(Bytes::from_static(b"v")), vec![]);
            partition
                .log
                .append_as_leader(&builder.build(), LeaderEpoch(1), AppendOrigin::Client, 0)
                .unwrap();
        }
    }

    #[test]
    fn below_min_isr_the_high_watermark_stays_where_the_isr_last_held_it() {
        // KIP-966's strict rule: a leader alone in its ISR with min ISR 2 commits nothing it
        // alone holds; with min ISR 1 (or before KIP-966) it does.
        let mut partition = leader_partition();
        append(&mut partition, 10);
        partition.record_follower_fetch(FOLLOWER, Offset(10), 10);
        assert!(partition.maybe_increment_high_watermark(LEADER, 2));
        let mut alone = partition
            .leader_state()
            .map(|state| PartitionRecord {
                topic_id: TopicId(1),
                partition: 5,
                replicas: state.replicas.clone(),
                isr: vec![LEADER],
                leader: Some(LEADER),
                leader_epoch: 1,
                partition_epoch: 2,
                eligible_leader_replicas: vec![FOLLOWER],
                last_known_elr: Vec::new(),
            })
            .unwrap();
        partition.update_isr(&alone);
        append(&mut partition, 5);
        assert!(!partition.maybe_increment_high_watermark(LEADER, 2));
        assert_eq!(partition.log.high_watermark(), Offset(10));
        assert!(partition.maybe_increment_high_watermark(LEADER, 1));
        assert_eq!(partition.log.high_watermark(), Offset(15));
        // Min ISR above the replica count counts as the replica count.
        alone.isr = vec![LEADER, FOLLOWER];
        alone.partition_epoch = 3;
        partition.update_isr(&alone);
        append(&mut partition, 1);
        partition.record_follower_fetch(FOLLOWER, Offset(16), 20);
        assert!(partition.maybe_increment_high_watermark(LEADER, 3));
        assert_eq!(partition.log.high_watermark(), Offset(16));
    }

    #[test]
    fn a_follower_at_a_new_leaders_stale_high_watermark_joins_the_isr_only_before_kafka_7128() {
        // KAFKA-7128: the leader's high watermark stood at 5 with 10 records in its log when
        // it was elected again (epoch 2), alone in the ISR; the records above 5 may have been
        // committed by the leader before it. A follower at 5 has reached the high watermark
        // but not the log end the leadership began at.
        let elected_again = || {
            let mut partition = leader_partition();
            append(&mut partition, 10);
            partition.record_follower_fetch(FOLLOWER, Offset(5), 10);
            assert!(partition.maybe_increment_high_watermark(LEADER, 1));
            let alone = PartitionRecord {
                topic_id: TopicId(1),
                partition: 5,
                replicas: vec![LEADER, FOLLOWER],
                isr: vec![LEADER],
                leader: Some(LEADER),
                leader_epoch: 2,
                partition_epoch: 2,
                eligible_leader_replicas: Vec::new(),
                last_known_elr: Vec::new(),
            };
            partition.become_leader(&alone, LEADER, 20, false);
            assert_eq!(partition.log.high_watermark(), Offset(5));
            partition
        };
        let below = |proposed| IsrExpansion::BelowEpochStart {
            proposed,
            follower_end: Offset(5),
            high_watermark: Offset(5),
            epoch_start: Offset(10),
        };
        // Behind the high watermark it joins in neither design.
        let mut before_fix = elected_again();
        before_fix.record_follower_fetch(FOLLOWER, Offset(4), 30);
        assert_eq!(
            before_fix.maybe_expand_isr(FOLLOWER, false),
            IsrExpansion::Unchanged
        );
        // Before the fix it joins at the high watermark; the proposal is then pending.
        before_fix.record_follower_fetch(FOLLOWER, Offset(5), 40);
        assert_eq!(
            before_fix.maybe_expand_isr(FOLLOWER, false),
            below(Some(vec![LEADER, FOLLOWER]))
        );
        assert_eq!(
            before_fix.maybe_expand_isr(FOLLOWER, false),
            IsrExpansion::Unchanged
        );
        // With it, it stays out until it reached the epoch start.
        let mut partition = elected_again();
        partition.record_follower_fetch(FOLLOWER, Offset(5), 40);
        assert_eq!(partition.maybe_expand_isr(FOLLOWER, true), below(None));
        partition.record_follower_fetch(FOLLOWER, Offset(9), 50);
        assert!(matches!(
            partition.maybe_expand_isr(FOLLOWER, true),
            IsrExpansion::BelowEpochStart { proposed: None, .. }
        ));
        partition.record_follower_fetch(FOLLOWER, Offset(10), 60);
        assert_eq!(
            partition.maybe_expand_isr(FOLLOWER, true),
            IsrExpansion::Proposed(vec![LEADER, FOLLOWER])
        );
    }

    #[test]
    fn a_leader_truncation_forgets_what_followers_had_fetched_past_it() {
        // Generated seed 2292223553896607: a mirror leader cut 40 → 5 (the source's diverging
        // epoch) while a follower's last fetch stood at 40; the 25 mirrored records appended
        // next were counted as replicated by the follower that still held the old ones.
        let mut partition = leader_partition();
        append(&mut partition, 40);
        partition.record_follower_fetch(FOLLOWER, Offset(40), 10);
        assert!(partition.maybe_increment_high_watermark(LEADER, 1));
        assert_eq!(partition.log.high_watermark(), Offset(40));

        partition.log.truncate_to(Offset(5)).unwrap();
        partition.leader_log_truncated();
        append(&mut partition, 25);
        partition.maybe_increment_high_watermark(LEADER, 1);
        assert_eq!(
            partition.log.high_watermark(),
            Offset(5),
            "the follower has not fetched the new records"
        );

        assert_eq!(
            partition.leader_state().unwrap().followers[&FOLLOWER].log_end_offset,
            Offset(-1),
            "unknown, so no wait for the follower's truncation passes before it fetches again"
        );

        partition.record_follower_fetch(FOLLOWER, Offset(5), 20);
        partition.maybe_increment_high_watermark(LEADER, 1);
        assert_eq!(partition.log.high_watermark(), Offset(5));
        partition.record_follower_fetch(FOLLOWER, Offset(30), 30);
        assert!(partition.maybe_increment_high_watermark(LEADER, 1));
        assert_eq!(partition.log.high_watermark(), Offset(30));
    }

    #[test]
    fn a_leader_truncation_keeps_what_it_knew_of_followers_below_the_cut() {
        let mut partition = leader_partition();
        append(&mut partition, 40);
        partition.record_follower_fetch(FOLLOWER, Offset(3), 10);
        partition.log.truncate_to(Offset(5)).unwrap();
        partition.leader_log_truncated();
        assert_eq!(
            partition.leader_state().unwrap().followers[&FOLLOWER].log_end_offset,
            Offset(3)
        );
    }

    #[test]
    fn a_mirror_cut_fences_every_follower_until_it_fetches_at_or_below_the_cut() {
        // Generator seed 9400000000000529: a follower paused across a mirror cut came back
        // past it with an epoch the re-mirrored batches re-used, so its epoch check passed.
        let mut partition = leader_partition();
        append(&mut partition, 40);
        assert_eq!(
            partition.mirror_cut_fence(FOLLOWER, Offset(40)),
            None,
            "no cut yet"
        );
        partition.record_follower_fetch(FOLLOWER, Offset(3), 10);
        partition.log.truncate_to(Offset(20)).unwrap();
        partition.fence_after_mirror_cut();
        // Even a follower last seen below the cut is fenced: its answer may be in flight.
        assert_eq!(
            partition.mirror_cut_fence(FOLLOWER, Offset(40)),
            Some(Offset(20))
        );
        assert_eq!(
            partition.mirror_cut_fence(FOLLOWER, Offset(21)),
            Some(Offset(20))
        );
        // A second cut lowers the fence; a later, higher one does not raise it.
        partition.log.truncate_to(Offset(10)).unwrap();
        partition.fence_after_mirror_cut();
        append(&mut partition, 20);
        partition.fence_after_mirror_cut();
        assert_eq!(
            partition.mirror_cut_fence(FOLLOWER, Offset(25)),
            Some(Offset(10))
        );
        // A fetch at the cut is no fence, and once it was read, later fetches past it go
        // through.
        assert_eq!(partition.mirror_cut_fence(FOLLOWER, Offset(10)), None);
        assert_eq!(
            partition.mirror_cut_fence(FOLLOWER, Offset(30)),
            Some(Offset(10))
        );
        partition.record_follower_fetch(FOLLOWER, Offset(10), 40);
        assert_eq!(partition.mirror_cut_fence(FOLLOWER, Offset(30)), None);
        assert_eq!(
            partition.mirror_cut_fence(BrokerId(9), Offset(30)),
            None,
            "not a replica"
        );
    }
}
