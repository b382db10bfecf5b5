//! KIP-1279's read-only gate on the destination: a mirror topic's partition refuses client
//! writes (`READ_ONLY_TOPIC`) until it is STOPPED, so nothing but the mirror fetcher writes a
//! log that is still to be a copy of the source's.
//!
//! Contract: the gate is decided by the leader's view alone: the topic is a mirror topic in
//! the leader's metadata image (its `mirror.name` is set, whatever its desired state) and the
//! partition's `mirror_state` (set by the [`manager`](super::manager)) is not writable
//! ([`MirrorState::is_writable`]); a topic outside every mirror is never gated. The same
//! holds for DeleteRecords ([`refuses_delete_records`]) and, with the designs' exceptions, for
//! a coordinator's transaction markers ([`marker_gate`]). One rule is decided by the
//! transaction coordinator's broker instead, before a transactional producer's first write:
//! which partitions it may not enlist ([`refuses_txn_enlist`]).

use super::{DesiredState, MirrorDesign, MirrorState, TopicMirrorConfig};
use crate::common::TopicPartition;
use crate::metadata::MetadataImage;
pub use crate::replica::MarkerGate;
use crate::switches::BrokenSwitch;

/// A partition's mirror state as the gate and the broker's events see it: `partition_state`
/// when `topic` is a mirror topic in `image`, `None` for any other topic.
pub fn mirror_state_of(
    image: &MetadataImage,
    topic: &str,
    partition_state: MirrorState,
) -> Option<MirrorState> {
    image.mirror_desired_state(topic).map(|_| partition_state)
}

/// The mirror state that refuses a client's write to a partition whose leader holds it in
/// `mirror_state` (from [`mirror_state_of`]), if the gate refuses it; `broken` may switch the
/// gate off on purpose (`MirrorWritableBeforeStopped`).
pub fn refuses_client_write(
    mirror_state: Option<MirrorState>,
    broken: &[BrokenSwitch],
) -> Option<MirrorState> {
    refuses_until_stopped(
        mirror_state,
        broken,
        BrokenSwitch::MirrorWritableBeforeStopped,
    )
}

/// The mirror state that refuses DeleteRecords on a partition whose leader holds it in
/// `mirror_state` (from [`mirror_state_of`]): a mirror topic's records are deleted only once
/// its partition is STOPPED (spec §3.8); `broken` may switch the check off on purpose
/// (`MirrorTopicAdminUnchecked`).
pub fn refuses_delete_records(
    mirror_state: Option<MirrorState>,
    broken: &[BrokenSwitch],
) -> Option<MirrorState> {
    refuses_until_stopped(
        mirror_state,
        broken,
        BrokenSwitch::MirrorTopicAdminUnchecked,
    )
}

/// The read-only rule the client write and DeleteRecords share: a mirror partition's state
/// refuses until it is writable (STOPPED), unless `switch` turns the check off on purpose.
fn refuses_until_stopped(
    mirror_state: Option<MirrorState>,
    broken: &[BrokenSwitch],
    switch: BrokenSwitch,
) -> Option<MirrorState> {
    mirror_state.filter(|state| !state.is_writable() && !broken.contains(&switch))
}

/// The partitions of an AddPartitionsToTxn that KIP-1279 refuses to enlist
/// (`READ_ONLY_TOPIC`), in request order: those of topics whose `mirror.name` in `image` asks
/// to mirror or to pause them, unless `design` enlists them unchecked
/// (`txn-enlist-unchecked`, the prototype). A topic being removed (`<m>.removed`) is enlisted:
/// its partitions may still be STOPPING, and their leaders refuse the produce and the marker
/// until STOPPED, which STOPPING reaches on its own (see `broker/coordinators.rs`).
pub fn refuses_txn_enlist(
    image: &MetadataImage,
    design: MirrorDesign,
    partitions: &[TopicPartition],
) -> Vec<TopicPartition> {
    if !design.checks_txn_enlist() {
        return Vec::new();
    }
    partitions
        .iter()
        .filter(|tp| {
            matches!(
                image.mirror_desired_state(&tp.topic),
                Some(DesiredState::Mirror { .. } | DesiredState::Paused { .. })
            )
        })
        .cloned()
        .collect()
}

/// What the marker gate looks at for one marker on one led partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarkerFacts {
    /// The topic is a mirror topic in the leader's image.
    pub mirror_topic: bool,
    /// The partition's mirror state.
    pub mirror_state: MirrorState,
    /// The marker commits (else it aborts).
    pub committed: bool,
    /// The marker's producer has a transaction open in this log.
    pub open_transaction: bool,
    /// The mirror manager leads the partition while its log holds only this cluster's own
    /// writes (nothing cut or mirrored yet).
    pub own_writes_only: bool,
    /// `MirrorMarkersUnchecked`: the gate is switched off on purpose.
    pub unchecked: bool,
}

/// The read-only gate on a coordinator's marker. A mirror partition takes no marker until it
/// is STOPPED, as the prototype's `ReplicaManager.appendToLocalLog` refuses every append origin
/// into a mirroring partition with READ_ONLY_TOPIC (before this check the local transaction
/// coordinator's markers landed between mirrored batches, at offsets the source later filled
/// with its own: issue #14). STOPPING too refuses them: what STOPPING writes itself is
/// appended by the mirror manager directly, never through WriteTxnMarkers. The exceptions, by
/// design: a log holding only this cluster's own writes admits the marker that ends a
/// transaction written while the topic was writable (`admits_markers_before_cut`); the
/// `stopping-admits-txn-abort` design admits ABORT markers in STOPPING (the prototype cannot
/// tell its own stop's ABORT markers from the coordinator's); and a design that acknowledges
/// moot markers answers a marker for a transaction this log does not hold without appending,
/// once the partition's state is known: a leader that has not yet read it (UNKNOWN, e.g. just
/// restarted) may lead a STOPPED, writable partition, where the transaction's produce retried
/// later would land after an ABORT acknowledged unappended and hang the partition's last
/// stable offset (generated seed 13300000000000199); it refuses, and the coordinator retries.
/// STOPPING refuses a moot marker for the same reason: it turns writable within moments, and a
/// produce the transaction's producer is still retrying lands there after the coordinator's
/// timeout ABORT — whose epoch bump, never appended, fences nothing (generated seed
/// 14200000000000179). Refused, the marker lands once the partition is STOPPED and fences
/// the producer's old epoch. The hazard remains, narrower, for a retry that straddles a whole
/// stop from MIRRORING or PAUSED; only KIP-890's transaction verification closes it.
pub fn marker_gate(design: MirrorDesign, facts: MarkerFacts) -> MarkerGate {
    let own_writes_only =
        facts.mirror_topic && design.admits_markers_before_cut() && facts.own_writes_only;
    let admitted_in_stopping = facts.mirror_state == MirrorState::Stopping
        && !facts.committed
        && design.stopping_admits_txn_abort();
    let gated = facts.mirror_topic
        && !facts.mirror_state.is_writable()
        && !facts.unchecked
        && !admitted_in_stopping
        && !own_writes_only;
    if !gated {
        return MarkerGate::Append {
            admitted_before_cut: own_writes_only && !facts.mirror_state.is_writable(),
        };
    }
    let about_to_be_writable = matches!(
        facts.mirror_state,
        MirrorState::Unknown | MirrorState::Stopping
    );
    if design.acknowledges_moot_markers() && !facts.open_transaction && !about_to_be_writable {
        MarkerGate::Moot
    } else {
        MarkerGate::Refuse
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::ConfigResource;
    use crate::mirror::state::MIRROR_NAME_CONFIG;

    fn image_with_mirror_topic(topic: &str, mirror_name: &str) -> MetadataImage {
        let mut image = MetadataImage::default();
        let configs = [(MIRROR_NAME_CONFIG.to_owned(), mirror_name.to_owned())];
        image
            .configs
            .insert(ConfigResource::Topic(topic.into()), configs.into());
        image
    }

    #[test]
    fn a_transaction_may_not_enlist_a_mirrored_or_paused_partition_unless_unchecked() {
        let mut image = image_with_mirror_topic("orders", "m");
        for (topic, name) in [("paused", "m.paused"), ("removed", "m.removed")] {
            let configs = [(MIRROR_NAME_CONFIG.to_owned(), name.to_owned())];
            image
                .configs
                .insert(ConfigResource::Topic(topic.into()), configs.into());
        }
        let partitions = ["payments", "orders", "removed", "paused"]
            .map(|topic| TopicPartition::new(topic, 0))
            .to_vec();
        let refused = |design| refuses_txn_enlist(&image, design, &partitions);
        assert_eq!(
            refused(MirrorDesign::Seed),
            vec![
                TopicPartition::new("orders", 0),
                TopicPartition::new("paused", 0)
            ],
            "mirrored and paused topics are read-only; a removed or plain topic is not"
        );
        assert!(refused(MirrorDesign::TxnEnlistUnchecked).is_empty());
    }

    #[test]
    fn a_mirror_topic_refuses_client_writes_until_stopped() {
        let image = image_with_mirror_topic("orders", "m");
        for state in [
            MirrorState::Unknown,
            MirrorState::Preparing,
            MirrorState::Mirroring,
            MirrorState::Pausing,
            MirrorState::Paused,
            MirrorState::Stopping,
            MirrorState::Failed,
        ] {
            let seen = mirror_state_of(&image, "orders", state);
            assert_eq!(seen, Some(state));
            assert_eq!(refuses_client_write(seen, &[]), Some(state), "{state:?}");
        }
        let stopped = mirror_state_of(&image, "orders", MirrorState::Stopped);
        assert_eq!(refuses_client_write(stopped, &[]), None);
        // A removed topic (`<mirror>.removed`) is still a mirror topic until its partitions
        // are STOPPED.
        let removed = image_with_mirror_topic("orders", "m.removed");
        let seen = mirror_state_of(&removed, "orders", MirrorState::Stopping);
        assert_eq!(refuses_client_write(seen, &[]), Some(MirrorState::Stopping));
    }

    #[test]
    fn delete_records_waits_for_stopped_unless_the_check_is_switched_off() {
        let image = image_with_mirror_topic("orders", "m");
        let mirroring = mirror_state_of(&image, "orders", MirrorState::Mirroring);
        assert_eq!(
            refuses_delete_records(mirroring, &[]),
            Some(MirrorState::Mirroring)
        );
        let stopped = mirror_state_of(&image, "orders", MirrorState::Stopped);
        assert_eq!(refuses_delete_records(stopped, &[]), None);
        let other = mirror_state_of(&image, "payments", MirrorState::Unknown);
        assert_eq!(refuses_delete_records(other, &[]), None);
        let unchecked = [BrokenSwitch::MirrorTopicAdminUnchecked];
        assert_eq!(refuses_delete_records(mirroring, &unchecked), None);
        // The produce gate's switch is another one.
        let writable = [BrokenSwitch::MirrorWritableBeforeStopped];
        assert_eq!(
            refuses_delete_records(mirroring, &writable),
            Some(MirrorState::Mirroring)
        );
    }

    #[test]
    fn other_topics_and_the_broken_switch_pass_the_gate() {
        let image = image_with_mirror_topic("orders", "m");
        let other = mirror_state_of(&image, "payments", MirrorState::Unknown);
        assert_eq!(other, None);
        assert_eq!(refuses_client_write(other, &[]), None);
        let mirroring = mirror_state_of(&image, "orders", MirrorState::Mirroring);
        let broken = [BrokenSwitch::MirrorWritableBeforeStopped];
        assert_eq!(refuses_client_write(mirroring, &broken), None);
    }

    fn facts(mirror_state: MirrorState) -> MarkerFacts {
        MarkerFacts {
            mirror_topic: true,
            mirror_state,
            committed: true,
            open_transaction: true,
            own_writes_only: false,
            unchecked: false,
        }
    }

    #[test]
    fn a_mirror_partition_refuses_markers_until_stopped_and_acknowledges_moot_ones() {
        let append = MarkerGate::Append {
            admitted_before_cut: false,
        };
        for state in [
            MirrorState::Preparing,
            MirrorState::Mirroring,
            MirrorState::Paused,
        ] {
            assert_eq!(
                marker_gate(MirrorDesign::Seed, facts(state)),
                MarkerGate::Refuse
            );
            let moot = MarkerFacts {
                open_transaction: false,
                ..facts(state)
            };
            assert_eq!(marker_gate(MirrorDesign::Seed, moot), MarkerGate::Moot);
            // The prototype's rules refuse a moot marker too.
            assert_eq!(
                marker_gate(MirrorDesign::TxnEnlistUnchecked, moot),
                MarkerGate::Refuse
            );
        }
        assert_eq!(
            marker_gate(MirrorDesign::Seed, facts(MirrorState::Stopped)),
            append
        );
        // A leader that does not know the state yet (just restarted) may lead a STOPPED,
        // writable partition: a marker there is never moot, it waits for the state.
        let unknown = MarkerFacts {
            open_transaction: false,
            ..facts(MirrorState::Unknown)
        };
        assert_eq!(marker_gate(MirrorDesign::Seed, unknown), MarkerGate::Refuse);
        // STOPPING is writable within moments: a marker acknowledged unappended there would
        // leave the producer's old epoch unfenced for a produce it is still retrying.
        let stopping = MarkerFacts {
            open_transaction: false,
            ..facts(MirrorState::Stopping)
        };
        assert_eq!(
            marker_gate(MirrorDesign::Seed, stopping),
            MarkerGate::Refuse
        );
        assert_eq!(
            marker_gate(MirrorDesign::Seed, facts(MirrorState::Stopping)),
            MarkerGate::Refuse
        );
        let other_topic = MarkerFacts {
            mirror_topic: false,
            ..facts(MirrorState::Unknown)
        };
        assert_eq!(marker_gate(MirrorDesign::Seed, other_topic), append);
        let unchecked = MarkerFacts {
            unchecked: true,
            ..facts(MirrorState::Mirroring)
        };
        assert_eq!(marker_gate(MirrorDesign::Seed, unchecked), append);
    }

    #[test]
    fn the_designs_exceptions_admit_markers_the_seed_refuses() {
        let own = MarkerFacts {
            own_writes_only: true,
            ..facts(MirrorState::Preparing)
        };
        assert_eq!(
            marker_gate(MirrorDesign::Seed, own),
            MarkerGate::Append {
                admitted_before_cut: true
            }
        );
        assert_eq!(
            marker_gate(MirrorDesign::MarkersRefusedBeforeCut, own),
            MarkerGate::Refuse
        );
        let abort_in_stopping = MarkerFacts {
            committed: false,
            ..facts(MirrorState::Stopping)
        };
        assert_eq!(
            marker_gate(MirrorDesign::StoppingAdmitsTxnAbort, abort_in_stopping),
            MarkerGate::Append {
                admitted_before_cut: false
            }
        );
        assert_eq!(
            marker_gate(MirrorDesign::Seed, abort_in_stopping),
            MarkerGate::Refuse
        );
        let commit_in_stopping = facts(MirrorState::Stopping);
        assert_eq!(
            marker_gate(MirrorDesign::StoppingAdmitsTxnAbort, commit_in_stopping),
            MarkerGate::Refuse
        );
    }
}
