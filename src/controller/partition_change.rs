//! One partition change: Kafka's `PartitionChangeBuilder` reduced to what this controller
//! does. Given a partition's record and the ISR a change asks for, it elects the leader and
//! keeps KIP-966's eligible leader replicas (ELR) and last known leader, as a pure function
//! that the fence, unfence, registration and AlterPartition paths share.
//!
//! # Eligible leader replicas (KIP-966), when [`ChangeRules::eligible_leader_replicas`]
//!
//! - **Who is eligible.** While the target ISR is below the topic's effective
//!   `min.insync.replicas` (the config, at most the replica count), the ELR is the old ELR
//!   and the old ISR, less the target ISR and less a replica that just shut down uncleanly.
//!   At or above min ISR both the ELR and the last known leader are cleared. A leader does
//!   not move its high watermark while its ISR is below min ISR (`crate::replica`), so every
//!   ELR member holds every record the high watermark ever covered.
//! - **An empty ISR.** The last ISR member leaves the ISR when it is fenced (it is then an
//!   ELR member, if min ISR is above 1); without ELR it stays, so that only it can be
//!   elected cleanly later.
//! - **Election order.** The current leader if it is still in the ISR and acceptable; else
//!   the first replica, in replica order, that is acceptable and in the ISR, or in the ELR
//!   when the ISR is empty (it becomes the ISR, and leaves the ELR); else, with an empty ISR
//!   and ELR, the last known leader if acceptable (Kafka does this whatever
//!   `unclean.leader.election.enable` says, and counts it unclean); else, with unclean
//!   election enabled, the first acceptable replica; else no leader. An unclean election
//!   (the last two cases) makes the ISR the leader alone and clears the ELR.
//! - **The last known leader.** A change that leaves the partition without a leader records
//!   the leader it had, unless one is recorded; a change that gives it a leader clears it.
//!
//! "Acceptable" is the caller's test: an unfenced broker other than one the change removes.

use crate::metadata::PartitionRecord;
use crate::protocol::BrokerId;

/// What a change may do, from the controller's configuration and the topic's.
pub(super) struct ChangeRules<'a> {
    /// KIP-966 is on (Kafka's `eligible.leader.replicas.version` ≥ 1).
    pub eligible_leader_replicas: bool,
    /// The topic's effective `min.insync.replicas`: its config, at most the replica count.
    pub min_insync_replicas: usize,
    /// The topic's `unclean.leader.election.enable`.
    pub unclean_election_enabled: bool,
    /// A replica that shut down uncleanly (its registration without a clean-shutdown record):
    /// it leaves the ELR as well as the ISR.
    pub unclean_shutdown: Option<BrokerId>,
    /// Whether a replica may lead after this change.
    pub acceptable: &'a dyn Fn(BrokerId) -> bool,
}

/// The next state of `current` when a change asks for `target_isr`, or `None` if nothing
/// changes. Bumps `partition_epoch` on any change and `leader_epoch` on a leader change.
pub(super) fn build_partition_change(
    current: &PartitionRecord,
    target_isr: Vec<BrokerId>,
    rules: &ChangeRules<'_>,
) -> Option<PartitionRecord> {
    let mut next = PartitionRecord {
        isr: target_isr,
        ..current.clone()
    };
    populate_eligible_leader_replicas(current, &mut next, rules);
    elect_leader(current, &mut next, rules);
    update_last_known_leader(current, &mut next, rules);
    if next.leader == current.leader
        && next.isr == current.isr
        && next.eligible_leader_replicas == current.eligible_leader_replicas
        && next.last_known_elr == current.last_known_elr
    {
        return None;
    }
    if next.leader != current.leader {
        next.leader_epoch = current
            .leader_epoch
            .checked_add(1)
            .expect("leader epoch overflow");
    }
    next.partition_epoch = current
        .partition_epoch
        .checked_add(1)
        .expect("partition epoch overflow");
    Some(next)
}

/// KIP-966's ELR rule for the target ISR already in `next` (see the module doc).
fn populate_eligible_leader_replicas(
    current: &PartitionRecord,
    next: &mut PartitionRecord,
    rules: &ChangeRules<'_>,
) {
    if !rules.eligible_leader_replicas || next.isr.len() >= rules.min_insync_replicas {
        next.eligible_leader_replicas.clear();
        next.last_known_elr.clear();
        return;
    }
    // In replica order, so that the record is the same whatever order the sets came in.
    next.eligible_leader_replicas = current
        .replicas
        .iter()
        .copied()
        .filter(|replica| {
            (current.eligible_leader_replicas.contains(replica) || current.isr.contains(replica))
                && !next.isr.contains(replica)
                && rules.unclean_shutdown != Some(*replica)
        })
        .collect();
}

/// The election of the module doc, on `next`'s ISR and ELR.
fn elect_leader(current: &PartitionRecord, next: &mut PartitionRecord, rules: &ChangeRules<'_>) {
    let acceptable = |replica: BrokerId| (rules.acceptable)(replica);
    if let Some(leader) = current
        .leader
        .filter(|leader| next.isr.contains(leader) && acceptable(*leader))
    {
        next.leader = Some(leader);
        return;
    }
    let from_empty_isr = next.isr.is_empty();
    let clean = current.replicas.iter().copied().find(|replica| {
        acceptable(*replica)
            && (next.isr.contains(replica)
                || (from_empty_isr && next.eligible_leader_replicas.contains(replica)))
    });
    if let Some(leader) = clean {
        if from_empty_isr {
            next.isr = vec![leader];
            next.eligible_leader_replicas
                .retain(|replica| *replica != leader);
        }
        next.leader = Some(leader);
        return;
    }
    let last_known = match next.last_known_elr.as_slice() {
        [leader]
            if rules.eligible_leader_replicas
                && next.isr.is_empty()
                && next.eligible_leader_replicas.is_empty()
                && acceptable(*leader) =>
        {
            Some(*leader)
        }
        _ => None,
    };
    let unclean = last_known.or_else(|| {
        rules
            .unclean_election_enabled
            .then(|| current.replicas.iter().copied().find(|r| acceptable(*r)))
            .flatten()
    });
    match unclean {
        Some(leader) => {
            next.leader = Some(leader);
            next.isr = vec![leader];
            next.eligible_leader_replicas.clear();
        }
        None => next.leader = None,
    }
}

/// KIP-966's last known leader (see the module doc).
fn update_last_known_leader(
    current: &PartitionRecord,
    next: &mut PartitionRecord,
    rules: &ChangeRules<'_>,
) {
    if !rules.eligible_leader_replicas {
        return;
    }
    match (current.leader, next.leader) {
        (_, Some(_)) => next.last_known_elr.clear(),
        (Some(previous), None) if next.last_known_elr.is_empty() => {
            next.last_known_elr = vec![previous];
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::TopicId;

    fn ids(list: &[i32]) -> Vec<BrokerId> {
        list.iter().map(|id| BrokerId(*id)).collect()
    }

    fn record(leader: Option<i32>, isr: &[i32], elr: &[i32]) -> PartitionRecord {
        PartitionRecord {
            topic_id: TopicId(7),
            partition: 0,
            replicas: ids(&[1, 2, 3]),
            isr: ids(isr),
            leader: leader.map(BrokerId),
            leader_epoch: 5,
            partition_epoch: 9,
            eligible_leader_replicas: ids(elr),
            last_known_elr: Vec::new(),
        }
    }

    /// Rules with ELR `on`, min ISR 2, unclean election off, and `alive` the acceptable ones.
    fn change(
        current: &PartitionRecord,
        target_isr: &[i32],
        on: bool,
        alive: &[i32],
        unclean_shutdown: Option<i32>,
    ) -> Option<PartitionRecord> {
        let alive = ids(alive);
        let acceptable = move |replica: BrokerId| alive.contains(&replica);
        let rules = ChangeRules {
            eligible_leader_replicas: on,
            min_insync_replicas: 2,
            unclean_election_enabled: false,
            unclean_shutdown: unclean_shutdown.map(BrokerId),
            acceptable: &acceptable,
        };
        build_partition_change(current, ids(target_isr), &rules)
    }

    #[test]
    fn a_shrink_below_min_isr_makes_the_removed_members_eligible() {
        // {1,2,3} -> {1,2}: at min ISR, no ELR. {1,2} -> {1}: 2 becomes eligible.
        let first = change(
            &record(Some(1), &[1, 2, 3], &[]),
            &[1, 2],
            true,
            &[1, 2, 3],
            None,
        )
        .expect("a change");
        assert!(first.eligible_leader_replicas.is_empty());
        let second = change(&first, &[1], true, &[1, 2, 3], None).expect("a change");
        assert_eq!(second.eligible_leader_replicas, ids(&[2]));
        assert_eq!((second.leader, second.leader_epoch), (Some(BrokerId(1)), 5));
        assert_eq!(second.partition_epoch, first.partition_epoch + 1);
        // Back at min ISR: the ELR is cleared.
        let third = change(&second, &[1, 3], true, &[1, 2, 3], None).expect("a change");
        assert!(third.eligible_leader_replicas.is_empty());
    }

    #[test]
    fn the_last_isr_member_fenced_leaves_an_empty_isr_and_an_eligible_member_is_elected() {
        // KIP-966's motivation: 2 fell out below min ISR, then leader 1 is fenced.
        let current = record(Some(1), &[1], &[2]);
        let next = change(&current, &[], true, &[2, 3], None).expect("a change");
        assert_eq!(next.leader, Some(BrokerId(2)));
        assert_eq!(next.isr, ids(&[2]));
        assert_eq!(next.eligible_leader_replicas, ids(&[1]));
        assert_eq!(next.leader_epoch, 6);
        assert!(next.last_known_elr.is_empty());
        // Without ELR the ISR keeps its last member and the partition waits for it.
        let before = record(Some(1), &[1], &[]);
        let next = change(&before, &[1], false, &[2, 3], None).expect("a change");
        assert_eq!((next.leader, next.isr), (None, ids(&[1])));
    }

    #[test]
    fn an_unclean_shutdown_leaves_the_elr_and_the_last_known_leader_is_elected_again() {
        // Leader 1 alone, fenced with no one eligible: leaderless, 1 the last known leader.
        let current = record(Some(1), &[1], &[]);
        let leaderless = change(&current, &[], true, &[2, 3], None).expect("a change");
        assert_eq!(leaderless.leader, None);
        assert!(leaderless.isr.is_empty());
        assert_eq!(leaderless.eligible_leader_replicas, ids(&[1]));
        // 1 registers after an unclean shutdown: it leaves the ELR, and may not lead yet.
        let removed = change(&leaderless, &[], true, &[2, 3], Some(1)).expect("a change");
        assert!(removed.eligible_leader_replicas.is_empty());
        assert_eq!(removed.last_known_elr, ids(&[1]));
        assert_eq!(removed.leader, None);
        // Unfenced, it is elected as the last known leader, though unclean election is off.
        let elected = change(&removed, &[], true, &[1, 2, 3], None).expect("a change");
        assert_eq!(
            (elected.leader, elected.isr.clone()),
            (Some(BrokerId(1)), ids(&[1]))
        );
        assert!(elected.last_known_elr.is_empty());
    }

    #[test]
    fn an_eligible_member_is_preferred_to_the_last_known_leader() {
        let mut current = record(None, &[], &[3]);
        current.last_known_elr = ids(&[1]);
        let next = change(&current, &[], true, &[1, 2, 3], None).expect("a change");
        assert_eq!(next.leader, Some(BrokerId(3)));
        assert_eq!(next.isr, ids(&[3]));
    }

    #[test]
    fn nothing_changes_when_nothing_is_asked() {
        let current = record(Some(1), &[1, 2], &[]);
        assert_eq!(change(&current, &[1, 2], true, &[1, 2, 3], None), None);
        assert_eq!(change(&current, &[1, 2], false, &[1, 2, 3], None), None);
    }

    #[test]
    fn without_elr_the_election_is_the_isr_only() {
        let current = record(Some(1), &[1, 2], &[]);
        let next = change(&current, &[2], false, &[2, 3], None).expect("a change");
        assert_eq!(
            (next.leader, next.isr.clone()),
            (Some(BrokerId(2)), ids(&[2]))
        );
        assert!(next.eligible_leader_replicas.is_empty());
        assert!(next.last_known_elr.is_empty());
    }
}
