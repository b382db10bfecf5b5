//! Consumer groups: committed offsets never going back but for the resets a loss or a
//! mirroring cut excuses, and a group resuming (on either cluster) never skipping records it
//! did not read.

use super::*;
use mirrorsim::common::LeaderEpoch;

impl Checkers {
    /// Takes the consumers' new position resets of group members into `member_resets`.
    pub(super) fn note_member_resets(&mut self, history: &History) {
        for reset in &history.position_resets[self.position_resets_seen..] {
            let (NodeId::Client(cluster, ..), Some(group)) =
                (reset.consumer, history.groups.get(&reset.consumer))
            else {
                continue;
            };
            let key = (cluster, group.clone(), reset.topic_partition.clone());
            self.member_resets
                .entry(key)
                .or_default()
                .push(reset.offset);
        }
        self.position_resets_seen = history.position_resets.len();
    }

    /// Committed group offsets never move backwards on the current coordinator of a group,
    /// unless an admin commit moved them (see `observe_group_offset`).
    pub(super) fn check_group_offsets(
        &mut self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        brokers: &[BrokerView<'_>],
        out: &mut Vec<Violation>,
    ) {
        use mirrorsim::coordinator::group::GroupCoordinatorShard;
        use mirrorsim::coordinator::runtime::ShardHost;
        use mirrorsim::coordinator::CONSUMER_OFFSETS_TOPIC;
        for controller in controllers {
            let cluster = controller.cluster;
            let image = controller.controller.image();
            for (tp, record) in image
                .all_partitions()
                .filter(|(tp, _)| tp.topic == CONSUMER_OFFSETS_TOPIC)
            {
                let Some(leader) = record.leader else {
                    continue;
                };
                let Some(view) = broker_view(brokers, cluster, leader) else {
                    continue;
                };
                let Some(high_watermark) = view.partition(&tp).and_then(|p| {
                    matches!(&p.role, Role::Leader(state) if state.leader_epoch == LeaderEpoch(record.leader_epoch))
                        .then(|| p.log.high_watermark())
                }) else {
                    continue;
                };
                let host = view
                    .broker
                    .hosted_coordinators()
                    .find(|(partition, _)| **partition == tp)
                    .and_then(|(_, host)| host.downcast_ref::<ShardHost<GroupCoordinatorShard>>());
                // A new leader's shard replays its uncommitted tail too; only what is
                // committed counts (a later leader may truncate the rest).
                let Some(host) = host.filter(|host| host.is_committed(high_watermark)) else {
                    continue;
                };
                // The coordinator's own log losing a committed tail (a power loss of the only
                // replicas of a `__consumer_offsets` partition) reloads older commits.
                let coordinator_losses = self
                    .lost_tails
                    .get(&(cluster, tp.clone()))
                    .map_or(0, Vec::len);
                for group in host.shard().group_ids() {
                    let offsets = host.shard().committed_offsets(&group);
                    self.forget_tombstoned_offsets(cluster, &group, &offsets);
                    for (partition, committed) in offsets {
                        if !committed.by_admin {
                            let key = (cluster, group.to_string(), partition.clone());
                            let log = || {
                                current_leader(controllers, brokers, cluster, &partition)
                                    .map(|(_, log)| log)
                            };
                            self.note_member_commit(time_ms, key, committed.offset, log);
                        }
                        let seen = (cluster, group.as_str(), partition, committed.offset);
                        out.extend(self.observe_group_offset_with(
                            time_ms,
                            seen,
                            committed.by_admin,
                            coordinator_losses,
                        ));
                    }
                }
            }
        }
    }

    /// Forgets what was seen of `group`'s offsets on `cluster` that its current coordinator no
    /// longer holds: a tombstone removed them when their topic was deleted (Kafka's group
    /// coordinator deletes a deleted topic's offsets), so the next commit of the partition is
    /// of the topic's next life, whatever its offset. The checkers forget a topic when its
    /// life ends, but a coordinator that learns of the deletion a metadata fetch later shows
    /// the old offsets again meanwhile.
    pub(super) fn forget_tombstoned_offsets(
        &mut self,
        cluster: ClusterIndex,
        group: &str,
        offsets: &BTreeMap<TopicPartition, mirrorsim::coordinator::group::OffsetAndMetadata>,
    ) {
        let gone: Vec<(ClusterIndex, String, TopicPartition)> = self
            .group_offsets
            .range((cluster, group.to_owned(), TopicPartition::new("", 0))..)
            .map(|(key, _)| key)
            .take_while(|(seen_cluster, seen_group, _)| {
                *seen_cluster == cluster && seen_group == group
            })
            .filter(|(_, _, partition)| !offsets.contains_key(partition))
            .cloned()
            .collect();
        for key in &gone {
            self.group_offsets.remove(key);
            self.member_commits.remove(key);
            self.mark("group-offsets-deleted-with-topic");
        }
    }

    /// Notes a member's committed `offset` of (cluster, group, partition) in
    /// `member_commits` when it differs from the last one noted, with the control batches
    /// `log` (the partition's current leader's, if any) holds right below it. The log is
    /// looked up only then: the same commit shows every step.
    pub(super) fn note_member_commit<'l>(
        &mut self,
        time_ms: i64,
        key: (ClusterIndex, String, TopicPartition),
        offset: i64,
        log: impl FnOnce() -> Option<&'l PartitionLog<MemoryDirDisk>>,
    ) {
        let commits = self.member_commits.entry(key).or_default();
        if commits.last().is_some_and(|last| last.offset == offset) {
            return;
        }
        commits.push(MemberCommit {
            seen_ms: time_ms,
            offset,
            control_from: log().map_or(offset, |log| control_run_before(log, offset)),
        });
    }

    /// Records the committed offset a current coordinator shows for (cluster, group,
    /// partition); a lower value than last time is a violation unless
    /// - an admin commit (to a group without members: a reset, or mirroring's offset sync)
    ///   wrote it, or
    /// - a member wrote it after a mirroring truncation of the partition on this cluster
    ///   (PREPARING's cut to the last mirrored epoch, the mirror fetch's diverging epoch,
    ///   STOPPING's cut to the LSO) noted since the key was first seen and not yet used to
    ///   excuse one (two cuts in quick succession may reset the consumer twice, generator seed
    ///   42: a failback's PREPARING cut, then its first fetch's diverging epoch). Such a cut
    ///   may take the log below a consumer's position —
    ///   a full one when a stopped topic mirrors again and the source knows no last mirrored
    ///   epoch for it —, its fetch gets OffsetOutOfRange, `auto.offset.reset` moves it, and
    ///   its next commit is lower; Kafka's group coordinator takes any offset from a member of
    ///   the current epoch. A position read from the log before the cut may still be committed
    ///   after it, so the cut need not come after the higher commit. Without a cut, a member's
    ///   lower commit is a coordinator fault (lost commits, a fenced member's write) and stays
    ///   a violation, or
    /// - a member wrote it at or above an offset a member's consumer moved its position of the
    ///   partition back to, not yet used to excuse one ([`Checkers::take_member_reset`]).
    ///
    /// Observations are snapshots: an admin reset followed by a member's lower commit between
    /// two of them would be judged by the member's commit alone.
    #[cfg(test)]
    pub(super) fn observe_group_offset(
        &mut self,
        time_ms: i64,
        seen: (ClusterIndex, &str, TopicPartition, i64),
        by_admin: bool,
    ) -> Option<Violation> {
        self.observe_group_offset_with(time_ms, seen, by_admin, 0)
    }

    /// [`Checkers::observe_group_offset`], where the group's `__consumer_offsets` partition has
    /// lost `coordinator_losses` committed tails (see `lost_tails`): each may also excuse one
    /// lower offset of every partition of its groups (older commits reloaded, generator seeds
    /// 1337263765019609 and …845: a 1-broker cluster's power loss).
    pub(super) fn observe_group_offset_with(
        &mut self,
        time_ms: i64,
        (cluster, group, partition, offset): (ClusterIndex, &str, TopicPartition, i64),
        by_admin: bool,
        coordinator_losses: usize,
    ) -> Option<Violation> {
        let key = (cluster, group.to_string(), partition.clone());
        let seen = self.group_offsets.get(&key).copied();
        let cuts = self
            .mirror_truncations
            .get(&(cluster, partition.clone()))
            .map_or(0, Vec::len)
            + self
                .lost_tails
                .get(&(cluster, partition.clone()))
                .map_or(0, Vec::len)
            + coordinator_losses;
        // First seen above every high watermark shown since the partition's last cut: the
        // member read that position before the cut (a consumer reads below the high
        // watermark), so the cut may still excuse one lower commit, as for a key seen before
        // it. Generator seed 9200000000000275: b's one-replica orders lost its unflushed tail
        // in a power loss of its leader after the member had read to 25; its first commit, of
        // that position, came after the restart, the log now ending at 1
        // (`regressions/group_commit_read_before_lost_tail`).
        let cuts_used = seen.map_or_else(
            || {
                cuts - usize::from(
                    cuts > 0 && self.read_before_last_cut(cluster, &partition, offset),
                )
            },
            |seen| seen.cuts_used,
        );
        let cuts_at_first_seen = seen.map_or(cuts, |seen| seen.cuts_at_first_seen);
        self.group_offsets.insert(
            key.clone(),
            GroupOffsetSeen {
                offset,
                cuts_used,
                cuts_at_first_seen,
            },
        );
        let previous = seen.map(|seen| seen.offset);
        if previous != Some(offset) {
            self.mark("group-offset-committed");
        }
        if previous.is_some_and(|previous| previous != offset) {
            self.precondition(Invariant::GroupOffsetsMonotonic);
        }
        let previous = previous.filter(|previous| *previous > offset)?;
        if by_admin {
            self.mark("group-offset-admin-reset");
            return None;
        }
        if cuts_used < cuts {
            self.mark("mirror-truncation-reset-group-offset");
            if cuts_used < cuts_at_first_seen {
                self.mark("cut-before-first-commit-reset-group-offset");
            }
            if let Some(seen) = self.group_offsets.get_mut(&key) {
                seen.cuts_used += 1;
            }
            return None;
        }
        // After the cuts (which also move positions back), so a cut's own reset does not
        // leave the cut to excuse a second lower commit.
        if self.take_member_reset(&key, offset) {
            self.mark("consumer-reset-group-offset");
            return None;
        }
        Some(Violation {
            invariant: Invariant::GroupOffsetsMonotonic,
            cluster: Some(cluster),
            topic_partition: Some(partition),
            detail: format!("group {group}'s committed offset went from {previous} to {offset}"),
            time_ms,
        })
    }

    /// Whether a member's consumer of `key`'s group moved its position of the partition back
    /// to `offset` or below and no lower commit used that yet; if so, uses it. Kafka's
    /// position validation (KIP-320) goes back to the end offset the leader it believes
    /// current gives for the position's epoch, and a deposed leader that has not yet learned
    /// of its successor answers with its own shorter log: generator seed 9900000000000186
    /// (fan-out, b's leader of orders-2 isolated at 7.8 s and back with metadata 17 records
    /// behind; a member starting on b after the failover took its metadata and validated the
    /// synced offset 113 against it, end offset 99, and committed 99). The coordinator takes
    /// any offset from a member of the current epoch, so the commit is Kafka's behaviour, not a
    /// coordinator fault.
    pub(super) fn take_member_reset(
        &mut self,
        key: &(ClusterIndex, String, TopicPartition),
        offset: i64,
    ) -> bool {
        let Some(resets) = self.member_resets.get_mut(key) else {
            return false;
        };
        let Some(index) = resets.iter().position(|reset| *reset <= offset) else {
            return false;
        };
        resets.remove(index);
        true
    }

    /// Whether `offset` lies above every high watermark a current leader of (`cluster`,
    /// `partition`) showed since its last lost tail or mirroring truncation (`committed_end`,
    /// kept for topics that are not durable): no consumer read it from the log as it is since.
    pub(super) fn read_before_last_cut(
        &self,
        cluster: ClusterIndex,
        partition: &TopicPartition,
        offset: i64,
    ) -> bool {
        self.committed_end
            .get(&(cluster, partition.clone()))
            .is_some_and(|end| offset > *end)
    }

    /// `group-resume-no-skip`: a consumer group that reads a destination cluster after the
    /// mirror sync committed offsets for it there (a failover's consumers resuming where they
    /// stopped on the source) must not skip a record: every data record of the destination's
    /// final log below the first offset the group read there (above the log start) must be a
    /// record the group read somewhere, on the source or here. A synced offset that a later
    /// truncation (a leader change, STOPPING's cut to the last stable offset) left above the
    /// log, refilled by the destination's own writes, makes the group resume past them. An
    /// offset the group's position had passed on a cluster when a mirroring truncation there
    /// replaced it (from the cut's offset up to the last offset the group had read there) is
    /// excused (mark `resume-over-offset-rewritten-by-mirroring`), as `skipped-poll`'s
    /// `skip-rewritten-by-mirroring` excuses the jump on that cluster; so are the offsets a
    /// loss of committed data there replaced after the group read them (an unclean election
    /// on a source that allows it; mark `resume-over-offset-lost-at-source`). So is a record first
    /// sent after the group's first read there (mark `resume-over-record-written-later`):
    /// it was not in the log the group resumed on, only a later cut below the resume offset
    /// (a one-replica topic's power loss) let a producer write it there, and whether the
    /// group's position then skips it is the reads' checkers' to judge (generator seed
    /// 9400000000001911: the group resumed on c at the synced 170 over records it had read on
    /// a; c's power loss cut payments-0 to 62 and its group offsets back to that 170, c's
    /// producer wrote 62 anew, and the member, reset to 62 by its epoch validation, was held
    /// below it by a transaction the loss left hanging). Two more legitimate passes: offsets a
    /// member's commit passed over control batches only before a mirroring cut replaced them,
    /// where the group had no read to show for its position
    /// ([`Checkers::controls_passed_before_cut`], mark `resume-over-passed-controls-rewritten`),
    /// and a record a READ_COMMITTED member passed while it was aborted, whose ABORT a loss on
    /// a topic that is not durable took since ([`Checkers::group_passed_over_lost_outcome`],
    /// mark `resume-over-outcome-lost-not-durable`).
    pub(super) fn check_group_resumes(
        &mut self,
        time_ms: i64,
        logs: &dyn LeaderLogs,
        history: &History,
    ) -> Vec<Violation> {
        let mut out = Vec::new();
        for (cluster, group) in &self.synced_groups.clone() {
            let members: Vec<NodeId> = history
                .groups
                .iter()
                .filter(|(node, name)| node.cluster() == *cluster && *name == group)
                .map(|(node, _)| *node)
                .collect();
            if members.is_empty() {
                continue;
            }
            // Values the group read anywhere (a group name is the same on every cluster).
            let read: BTreeSet<&str> = history
                .polls
                .iter()
                .filter(|((node, _), _)| history.groups.get(node) == Some(group))
                .flat_map(|(_, polls)| polls.iter().map(|poll| poll.value.as_str()))
                .collect();
            // The first offset the group read here, per partition (earliest read first).
            let mut first: BTreeMap<&TopicPartition, (i64, i64)> = BTreeMap::new();
            for ((node, _), polls) in &history.polls {
                if !members.contains(node) {
                    continue;
                }
                for poll in polls {
                    let entry = first
                        .entry(&poll.topic_partition)
                        .or_insert((poll.received_ms, poll.offset));
                    if poll.received_ms < entry.0 {
                        *entry = (poll.received_ms, poll.offset);
                    }
                }
            }
            let read_committed = members.iter().any(|m| history.read_committed.contains(m));
            // When each value was first sent.
            let mut sent: BTreeMap<&str, i64> = BTreeMap::new();
            for send in history.sends.values() {
                let first_sent = sent.entry(send.value.as_str()).or_insert(send.sent_ms);
                *first_sent = (*first_sent).min(send.sent_ms);
            }
            // Offsets the group's position had passed on a cluster when a mirroring truncation
            // there replaced them (a topic added back to its mirror: PREPARING cuts the
            // cluster's own records, a MIRROR_PID_RESET among them, and re-mirrors the source's
            // at the same offsets): from the cut's offset up to the last offset the group had
            // read there. Its position legitimately passed them; on that cluster the jump is
            // `skip-rewritten-by-mirroring`, and the sync carried the position on.
            // The same for a loss of committed data there (an unclean election on a source
            // whose topic allows it): the group read records the loss replaced, and the records
            // now at those offsets were never there to read for it, on that cluster or after
            // the sync (mark `resume-over-offset-lost-at-source`; generated seed
            // 12600000000000233: a's orders-4 re-elected a stale replica after the group had
            // read 34 from its successor).
            let mut rewritten: Vec<(&TopicPartition, i64, i64, bool)> = Vec::new();
            for ((node, _), polls) in &history.polls {
                if history.groups.get(node) != Some(group) {
                    continue;
                }
                for (index, poll) in polls.iter().enumerate() {
                    let key = (node.cluster(), poll.topic_partition.clone());
                    let lost = self.losses.get(&key).into_iter().flatten();
                    // The position after this read: up to the next record this consumer read
                    // of the partition (a control batch in between, say the cut's
                    // MIRROR_PID_RESET, moved it on without a record).
                    let passed_to = polls[index + 1..]
                        .iter()
                        .find(|next| next.topic_partition == poll.topic_partition)
                        .map_or(poll.offset, |next| (next.offset - 1).max(poll.offset));
                    let cuts = self.mirror_truncations.get(&key).into_iter().flatten();
                    let cut_points = cuts
                        .map(|(at_ms, to, _)| (*at_ms, *to, false))
                        .chain(lost.map(|(at_ms, kept)| (*at_ms, *kept, true)));
                    for (at_ms, to, by_loss) in cut_points {
                        if at_ms >= poll.fetched_ms && to <= poll.offset + 1 {
                            rewritten.push((&poll.topic_partition, to, passed_to, by_loss));
                        }
                    }
                }
            }
            let passed_controls = self.controls_passed_before_cut(group);
            for (tp, (resumed_ms, resumed_at)) in first {
                let Some(log) = logs.leader_log(*cluster, tp) else {
                    continue;
                };
                if resumed_at <= log.log_start_offset().0 {
                    continue;
                }
                self.precondition(Invariant::GroupResumeNoSkip);
                let mut excused = 0u64;
                let mut lost_at_source = 0u64;
                let mut written_later = 0u64;
                let mut controls_rewritten = 0u64;
                let mut outcome_lost = 0u64;
                let outcomes = read_committed.then(|| transaction_outcomes(log));
                let skipped = log
                    .batches_from(log.log_start_offset())
                    .take_while(|batch| batch.base_offset() < resumed_at)
                    .filter(|batch| !batch.is_control())
                    .filter(|batch| {
                        outcomes.as_ref().is_none_or(|outcomes| {
                            outcomes
                                .get(&batch.base_offset())
                                .is_none_or(|(_, outcome)| *outcome == TxnOutcome::Committed)
                        })
                    })
                    .flat_map(|batch| batch.records().filter_map(Result::ok))
                    .filter(|record| record.offset < resumed_at)
                    .filter_map(|record| {
                        let value = record.value.as_deref().map(String::from_utf8_lossy)?;
                        (!read.contains(value.as_ref()))
                            .then(|| (record.offset, value.into_owned()))
                    })
                    .find(|(offset, value)| {
                        let in_range = |by_loss: bool| {
                            rewritten.iter().any(|(cut_tp, from, to, loss)| {
                                *loss == by_loss && *cut_tp == tp && (*from..=*to).contains(offset)
                            })
                        };
                        let replaced = in_range(false);
                        excused += u64::from(replaced);
                        let later = !replaced
                            && sent
                                .get(value.as_str())
                                .is_some_and(|sent_ms| *sent_ms > resumed_ms);
                        written_later += u64::from(later);
                        let lost_there = !replaced && !later && in_range(true);
                        lost_at_source += u64::from(lost_there);
                        let replaced = replaced || lost_there;
                        // The same record as the cut cluster's final log holds there: the
                        // one the cut put below the position (mirrored on to here).
                        let controls = !replaced
                            && !later
                            && passed_controls
                                .iter()
                                .any(|(cut_cluster, cut_tp, from, until)| {
                                    cut_tp == tp
                                        && (*from..*until).contains(offset)
                                        && logs
                                            .leader_log(*cut_cluster, tp)
                                            .and_then(|log| record_value_at(log, *offset))
                                            .is_some_and(|there| there == *value)
                                });
                        controls_rewritten += u64::from(controls);
                        let lost = !replaced
                            && !later
                            && !controls
                            && self.group_passed_over_lost_outcome(logs, history, group, tp, value);
                        outcome_lost += u64::from(lost);
                        !replaced && !later && !controls && !lost
                    });
                for _ in 0..excused {
                    self.mark("resume-over-offset-rewritten-by-mirroring");
                }
                for _ in 0..lost_at_source {
                    self.mark("resume-over-offset-lost-at-source");
                }
                for _ in 0..written_later {
                    self.mark("resume-over-record-written-later");
                }
                for _ in 0..controls_rewritten {
                    self.mark("resume-over-passed-controls-rewritten");
                }
                for _ in 0..outcome_lost {
                    self.mark("resume-over-outcome-lost-not-durable");
                }
                if let Some((offset, value)) = skipped {
                    out.push(Violation {
                        invariant: Invariant::GroupResumeNoSkip,
                        cluster: Some(*cluster),
                        topic_partition: Some(tp.clone()),
                        detail: format!(
                            "group {group} resumed at offset {resumed_at} over {value:?} at offset \
                             {offset}, which it never read (the mirror sync committed its offsets \
                             here)"
                        ),
                        time_ms,
                    });
                }
            }
        }
        out
    }

    /// The offsets `[from, until)` of a partition (with the cluster) that `group`'s position
    /// had passed on that cluster over control batches only, without a record to show for
    /// it, when a mirroring truncation there replaced them (for `group-resume-no-skip`): a
    /// member's commit of `until` ([`MemberCommit`]), the last one seen before the cut, with
    /// the log holding only control batches from `from` up to it then, where `from` is the
    /// cut's offset or, when the cut came lower (below records the member read, the same
    /// records the source holds there or judged by the reads' own excuses), the first of those
    /// controls (generator seed 185, chain: the group read a's records 0..23 on b, passed b's
    /// MIRROR_PID_RESET at 24 and committed 25; b's re-add cut b to 0 and mirrored a's records,
    /// a's record at 24 among them), and the cut the first of the partition since, with no loss of committed data
    /// below `until` in between (a loss comes with a leader change the position is validated
    /// at; a second cut replaces a log the commit never saw). A mirroring cut keeps the
    /// leader epoch, so the member fetches on from its position over what the cut put below
    /// it, as `resume-over-offset-rewritten-by-mirroring` excuses after a read; this is the
    /// same position known from a commit where the group had read nothing of the partition yet
    /// (generator seed 9800000000000294, chain a → b → c: the group passed b's
    /// `MIRROR_PID_RESET` at payments-1 offset 0 and committed 1; b's payments, re-added,
    /// PREPARING cut b to 0 (no last mirrored epoch) and mirrored a's records from 0; the
    /// member read on at 1, c mirrored b, and the group resumed on c at the synced 48).
    pub(super) fn controls_passed_before_cut(
        &self,
        group: &str,
    ) -> Vec<(ClusterIndex, TopicPartition, i64, i64)> {
        let mut passed = Vec::new();
        for ((cluster, name, tp), commits) in &self.member_commits {
            if name != group {
                continue;
            }
            let key = (*cluster, tp.clone());
            let cuts = self.mirror_truncations.get(&key).into_iter().flatten();
            for (index, commit) in commits.iter().enumerate() {
                let next_seen_ms = commits.get(index + 1).map_or(i64::MAX, |next| next.seen_ms);
                let Some((cut_ms, to, _)) = cuts.clone().find(|cut| cut.0 > commit.seen_ms) else {
                    continue;
                };
                let lost = kept_below(
                    all_losses(&self.losses, &self.lost_tails, &key),
                    commit.offset - 1,
                    commit.seen_ms,
                );
                // What the position passed over controls only, from the cut up: the cut may
                // come lower, where the member read records (the reads' own excuses judge
                // those offsets).
                let from = commit.control_from.max(*to);
                if *cut_ms < next_seen_ms && from < commit.offset && !lost {
                    passed.push((*cluster, tp.clone(), from, commit.offset));
                }
            }
        }
        passed
    }

    /// Whether a READ_COMMITTED member of `group` jumped over `value` (a record of `tp`) on
    /// its own cluster where `skipped-poll` excuses the jump as
    /// `skip-over-outcome-lost-not-durable` ([`Checkers::skip_over_lost_outcome`]): the
    /// record's transaction was aborted when the member read past it, and a loss of committed
    /// data on that topic, which is not durable, kept the record but not its ABORT, so a later
    /// marker decides it in the final log. The group's position passed it legitimately there,
    /// and the sync carried that position to a mirror whose copy of the log now commits it
    /// (generator seed 9800000000000175, b mirrors a: the group read a's orders-0 past the
    /// aborted record at 16 (ABORT at 18); a power loss of a's only replica kept 0..17, the
    /// coordinator's COMMIT of the producer's next transaction landed at 18, b's fetcher cut
    /// to 18 and mirrored it, and the group resumed on b at the synced 47). A record the group
    /// jumped over while the log held it for the group is never excused here.
    pub(super) fn group_passed_over_lost_outcome(
        &self,
        logs: &dyn LeaderLogs,
        history: &History,
        group: &str,
        tp: &TopicPartition,
        value: &str,
    ) -> bool {
        for (&(consumer, incarnation), polls) in &history.polls {
            if history.groups.get(&consumer).map(String::as_str) != Some(group)
                || !history.read_committed.contains(&consumer)
            {
                continue;
            }
            let Some(log) = logs.leader_log(consumer.cluster(), tp) else {
                continue;
            };
            let Some(offset) = offset_of_value(log, value) else {
                continue;
            };
            let Some(end) = transaction_end_at(log, offset) else {
                continue;
            };
            let mut previous = None;
            for (index, poll) in polls.iter().enumerate() {
                if poll.topic_partition != *tp {
                    continue;
                }
                let jumped = previous.is_some_and(|previous| {
                    !poll.after_reset && previous < offset && offset < poll.offset
                });
                previous = Some(poll.offset);
                let key = (consumer, incarnation, index);
                if jumped && self.skip_over_lost_outcome(key, poll, offset, end.decided_at) {
                    return true;
                }
            }
        }
        false
    }
}
