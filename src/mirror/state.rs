//! The mirror partition state machine of the seed design (KIP-1279 seed; spec §2).
//!
//! Contract:
//! - [`MirrorState`] holds the seed's states. `Unknown` means "nothing known" (a new leader, a
//!   partition never mirrored) and is never the target of a transition.
//! - [`is_valid_transition`] is the seed's transition table (the mid prototype's shape with
//!   PREPARING, spec §2.2): every state may be re-entered (re-running its action, e.g. a new
//!   leader re-creating fetchers), FAILED is reachable from everywhere, and the only ways out
//!   of FAILED are PREPARING and STOPPING. The late revision's ULE_RECOVERY and EPOCH_FENCING
//!   (the latter only under `epoch-fencing-state`) come from MIRRORING and lead back to it or
//!   to STOPPING (spec §2.7); FAILED → EPOCH_FENCING is not a transition, as in the
//!   prototype's table. The mirror coordinator refuses every other write,
//!   and the `legal-transitions` checker holds every persisted change to it.
//! - [`DesiredState`] is what the controller asked for, carried by the topic config
//!   `mirror.name` (`<mirror>`, `<mirror>.paused`, `<mirror>.removed`); [`decide`] turns the
//!   coordinator's current state and the desired state into the next target (spec §2.3). A
//!   target that is not a legal transition from the current state is not taken: the partition
//!   waits in its state until the state's own work ends, then the decision runs again (a pause
//!   asked for while PREPARING takes effect once MIRRORING is reached).
//! - [`retry_target`] is where a FAILED partition goes when its retry timer fires: to STOPPING
//!   when its topic has been removed from the mirror meanwhile, retries left or not (the
//!   prototype retries the failed state first, and a PREPARING refused because the source
//!   still mirrors from here would keep the removed partition read-only forever); else, while
//!   retries are left, back to STOPPING if it failed while stopping (a failover must finish),
//!   or to PREPARING (the log is realigned from the source before mirroring again).
//! - [`keeps_failure_record`] says which transitions keep a failure's retry count: retries
//!   do, progress does not, so a cause that persists (a source down for good) runs out of
//!   retries and the partition waits for RecoverMirrorTopics or a failover.

pub use crate::common::MirrorState;

/// The suffix of `mirror.name` that asks for a failover (RemoveTopicsFromMirror).
pub const REMOVED_SUFFIX: &str = ".removed";
/// The suffix of `mirror.name` that asks for a pause (PauseMirrorTopics).
pub const PAUSED_SUFFIX: &str = ".paused";
/// The topic config that makes a topic a mirror topic.
pub const MIRROR_NAME_CONFIG: &str = "mirror.name";

/// The topic config (`true`/`false`, default false) that makes PREPARING wait for every
/// replica to truncate, not only the ISR, so that an unclean election on the destination
/// cannot bring back a log tail the last mirrored epoch cut (spec §8).
pub const MIRROR_SUPPORT_UNCLEAN_CONFIG: &str = "mirror.support.unclean.leader.election";

/// Where a topic's desired mirror state is read: the metadata image's topic configs (a trait
/// here, so the image knows nothing of KIP-1279 and the rules stay in this module).
pub trait TopicMirrorConfig {
    /// The KIP-1279 desired mirror state of `topic`, from its `mirror.name` config (`None`
    /// for a topic in no mirror).
    fn mirror_desired_state(&self, topic: &str) -> Option<DesiredState>;
}

impl TopicMirrorConfig for crate::metadata::MetadataImage {
    fn mirror_desired_state(&self, topic: &str) -> Option<DesiredState> {
        DesiredState::parse(self.topic_config(topic, MIRROR_NAME_CONFIG, ""))
    }
}

/// Whether a mirror partition may go from `source` to `target` (the seed's table; see the
/// module doc).
pub fn is_valid_transition(source: MirrorState, target: MirrorState) -> bool {
    use MirrorState::*;
    if target == Unknown {
        return false;
    }
    if source == target || target == Failed {
        return true;
    }
    match target {
        Preparing => matches!(source, Unknown | Stopped | Failed),
        Mirroring => matches!(source, Preparing | Paused | UleRecovery | EpochFencing),
        UleRecovery | EpochFencing => source == Mirroring,
        Pausing => source == Mirroring,
        Paused => source == Pausing,
        Stopping => matches!(
            source,
            Preparing | Mirroring | Pausing | Paused | Failed | UleRecovery | EpochFencing
        ),
        Stopped => source == Stopping,
        Unknown | Failed => unreachable!("handled above"),
    }
}

/// Whether `topic` has `mirror.support.unclean.leader.election=true` in `image` (PREPARING
/// then waits for every replica; a source's loss of served records is followed into
/// ULE_RECOVERY instead of failing the partition).
pub fn supports_unclean_mirroring(image: &crate::metadata::MetadataImage, topic: &str) -> bool {
    image
        .configs
        .get(&crate::metadata::ConfigResource::Topic(topic.to_string()))
        .and_then(|configs| configs.get(MIRROR_SUPPORT_UNCLEAN_CONFIG))
        .is_some_and(|value| value == "true")
}

/// What the controller asked for a mirror topic, read from its `mirror.name` config.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum DesiredState {
    /// `mirror.name = <mirror>`: mirror it.
    Mirror {
        /// The mirror.
        mirror: String,
    },
    /// `mirror.name = <mirror>.paused`.
    Paused {
        /// The mirror.
        mirror: String,
    },
    /// `mirror.name = <mirror>.removed`: fail over.
    Stopped {
        /// The mirror.
        mirror: String,
    },
}

impl DesiredState {
    /// Reads a `mirror.name` value; `None` for an empty value or a bare suffix.
    pub fn parse(mirror_name: &str) -> Option<Self> {
        let (mirror, make): (&str, fn(String) -> Self) =
            if let Some(mirror) = mirror_name.strip_suffix(REMOVED_SUFFIX) {
                (mirror, |mirror| Self::Stopped { mirror })
            } else if let Some(mirror) = mirror_name.strip_suffix(PAUSED_SUFFIX) {
                (mirror, |mirror| Self::Paused { mirror })
            } else {
                (mirror_name, |mirror| Self::Mirror { mirror })
            };
        (!mirror.is_empty()).then(|| make(mirror.to_owned()))
    }

    /// The mirror the topic belongs to.
    pub fn mirror(&self) -> &str {
        match self {
            Self::Mirror { mirror } | Self::Paused { mirror } | Self::Stopped { mirror } => mirror,
        }
    }

    /// The `mirror.name` value that asks for this state.
    pub fn config_value(&self) -> String {
        match self {
            Self::Mirror { mirror } => mirror.clone(),
            Self::Paused { mirror } => format!("{mirror}{PAUSED_SUFFIX}"),
            Self::Stopped { mirror } => format!("{mirror}{REMOVED_SUFFIX}"),
        }
    }
}

/// The next target for a partition whose coordinator state is `current` while the controller
/// asks for `desired` (spec §2.3, seed states). The caller takes it only if
/// [`is_valid_transition`] allows it.
pub fn decide(current: MirrorState, desired: &DesiredState) -> MirrorState {
    use MirrorState::*;
    match (current, desired) {
        // FAILED is re-asserted (re-arming its retry timer); a new wish does not bypass it.
        (Failed, _) => Failed,
        (Stopped, DesiredState::Stopped { .. }) => Stopped,
        (_, DesiredState::Stopped { .. }) => Stopping,
        (Paused, DesiredState::Paused { .. }) => Paused,
        // ULE_RECOVERY ends in MIRRORING (spec §2.2: no pause from it); the pause follows.
        (UleRecovery, DesiredState::Paused { .. }) => UleRecovery,
        // EPOCH_FENCING too (spec §2.7: only MIRRORING, STOPPING or FAILED follow it).
        (EpochFencing, DesiredState::Paused { .. }) => EpochFencing,
        // Never mirrored: align and mirror first; the pause follows from MIRRORING.
        (Unknown | Stopped, DesiredState::Paused { .. }) => Preparing,
        (_, DesiredState::Paused { .. }) => Pausing,
        (Paused, DesiredState::Mirror { .. }) => Mirroring,
        (Unknown | Stopped, DesiredState::Mirror { .. }) => Preparing,
        // Re-enter the current state: its action runs again (e.g. fetchers on a new leader).
        (state, DesiredState::Mirror { .. }) => state,
    }
}

/// Where a FAILED partition goes when its retry fires, given the state it failed in, what
/// `mirror.name` asks for now, and whether retries are left; `None`: it stays FAILED.
pub fn retry_target(
    previous: Option<MirrorState>,
    desired: &DesiredState,
    retries_left: bool,
) -> Option<MirrorState> {
    match (desired, previous) {
        (DesiredState::Stopped { .. }, _) => Some(MirrorState::Stopping),
        _ if !retries_left => None,
        (_, Some(MirrorState::Stopping)) => Some(MirrorState::Stopping),
        _ => Some(MirrorState::Preparing),
    }
}

/// Whether a transition from the stored state `stored` to `target` (not FAILED) keeps the
/// failure record (retry count, last error, state before FAILED), which decides when retries
/// run out. A retry keeps it (FAILED → PREPARING or STOPPING: the seed's retries realign the
/// log, and a source that stays down must exhaust the retries as the late revision's FAILED →
/// MIRRORING retries do, spec §2.6), and so does the MIRRORING the retry's PREPARING reaches:
/// only the first mirrored append shows the cause gone (spec §2.6's `clearFailedStateAndPersist`,
/// a MIRRORING written again with `recover`; a source that answers the lookup but refuses every
/// fetch must still run out of attempts). The operator's PAUSED and STOPPED clear it, and a
/// PREPARING begun afresh starts without one.
pub fn keeps_failure_record(stored: MirrorState, target: MirrorState) -> bool {
    use MirrorState::*;
    match target {
        Preparing => stored == Failed,
        Mirroring => true,
        Paused | Stopped | Unknown => false,
        Pausing | Stopping | Failed | UleRecovery | EpochFencing => true,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use MirrorState::*;

    #[test]
    fn retries_keep_the_failure_record_and_progress_clears_it() {
        assert!(keeps_failure_record(Failed, Preparing), "a retry");
        assert!(keeps_failure_record(Failed, Stopping), "a retried stop");
        assert!(!keeps_failure_record(Unknown, Preparing), "a fresh start");
        assert!(!keeps_failure_record(Stopped, Preparing), "added again");
        assert!(
            keeps_failure_record(Preparing, Mirroring),
            "aligned, but nothing mirrored yet"
        );
        assert!(keeps_failure_record(Mirroring, Mirroring), "a new leader");
        assert!(keeps_failure_record(Paused, Mirroring));
        for cleared in [Paused, Stopped] {
            assert!(!keeps_failure_record(Pausing, cleared));
            assert!(!keeps_failure_record(Stopping, cleared));
        }
    }

    #[test]
    fn seed_transitions_are_legal_and_the_rest_are_not() {
        let legal = [
            (Unknown, Preparing),
            (Preparing, Mirroring),
            (Mirroring, Pausing),
            (Pausing, Paused),
            (Paused, Mirroring),
            (Mirroring, Stopping),
            (Paused, Stopping),
            (Stopping, Stopped),
            (Stopped, Preparing),
            (Failed, Preparing),
            (Failed, Stopping),
            (Mirroring, Failed),
            (Stopped, Failed),
        ];
        for (source, target) in legal {
            assert!(is_valid_transition(source, target), "{source} → {target}");
        }
        let illegal = [
            (Unknown, Mirroring),
            (Unknown, Stopping),
            (Unknown, Stopped),
            (Preparing, Paused),
            (Mirroring, Stopped),
            (Mirroring, Paused),
            (Pausing, Mirroring),
            (Paused, Preparing),
            (Stopping, Mirroring),
            (Stopped, Mirroring),
            (Stopped, Stopping),
            (Failed, Mirroring),
            (Failed, Stopped),
            (Mirroring, Unknown),
            (Unknown, Unknown),
        ];
        for (source, target) in illegal {
            assert!(!is_valid_transition(source, target), "{source} → {target}");
        }
    }

    #[test]
    fn mirror_name_config_parses_suffixes() {
        let mirror = |m: &str| DesiredState::Mirror { mirror: m.into() };
        assert_eq!(DesiredState::parse("m1"), Some(mirror("m1")));
        assert_eq!(
            DesiredState::parse("m1.paused"),
            Some(DesiredState::Paused {
                mirror: "m1".into()
            })
        );
        assert_eq!(
            DesiredState::parse("m1.removed"),
            Some(DesiredState::Stopped {
                mirror: "m1".into()
            })
        );
        assert_eq!(DesiredState::parse(""), None);
        assert_eq!(DesiredState::parse(".removed"), None);
        // A mirror whose own name ends in a suffix-looking word keeps it.
        assert_eq!(
            DesiredState::parse("a.paused.removed"),
            Some(DesiredState::Stopped {
                mirror: "a.paused".into()
            })
        );
        for value in ["m", "m.paused", "m.removed"] {
            assert_eq!(DesiredState::parse(value).unwrap().config_value(), value);
        }
    }

    #[test]
    fn decisions_follow_the_seed_workflows() {
        let mirror = DesiredState::Mirror { mirror: "m".into() };
        let paused = DesiredState::Paused { mirror: "m".into() };
        let stopped = DesiredState::Stopped { mirror: "m".into() };
        assert_eq!(decide(Unknown, &mirror), Preparing, "AddTopicsToMirror");
        assert_eq!(
            decide(Preparing, &mirror),
            Preparing,
            "re-run on a new leader"
        );
        assert_eq!(decide(Mirroring, &mirror), Mirroring, "re-create fetchers");
        assert_eq!(decide(Mirroring, &paused), Pausing);
        assert_eq!(decide(Pausing, &paused), Pausing);
        assert_eq!(decide(Paused, &paused), Paused);
        assert_eq!(
            decide(Paused, &mirror),
            Mirroring,
            "resume without truncation"
        );
        assert_eq!(decide(Mirroring, &stopped), Stopping, "failover");
        assert_eq!(decide(Paused, &stopped), Stopping);
        assert_eq!(
            decide(Stopping, &stopped),
            Stopping,
            "finish on a new leader"
        );
        assert_eq!(decide(Stopped, &stopped), Stopped);
        assert_eq!(decide(Stopped, &mirror), Preparing, "re-added after a stop");
        assert_eq!(
            decide(Failed, &stopped),
            Failed,
            "FAILED waits for its retry"
        );
        assert_eq!(decide(Unknown, &paused), Preparing, "align before pausing");
        let mirror = DesiredState::Mirror { mirror: "m".into() };
        assert_eq!(retry_target(Some(Stopping), &mirror, true), Some(Stopping));
        assert_eq!(
            retry_target(Some(Mirroring), &mirror, true),
            Some(Preparing)
        );
        assert_eq!(retry_target(None, &paused, true), Some(Preparing));
        assert_eq!(retry_target(Some(Preparing), &mirror, false), None);
        // A removed topic stops, whatever it failed in and whatever budget is left.
        assert_eq!(
            retry_target(Some(Preparing), &stopped, true),
            Some(Stopping)
        );
        assert_eq!(
            retry_target(Some(Preparing), &stopped, false),
            Some(Stopping)
        );
    }

    fn any_desired() -> impl Strategy<Value = DesiredState> {
        prop_oneof![
            Just(DesiredState::Mirror { mirror: "m".into() }),
            Just(DesiredState::Paused { mirror: "m".into() }),
            Just(DesiredState::Stopped { mirror: "m".into() }),
        ]
    }

    /// The step a state's own work ends with, if it has one.
    fn work_done(state: MirrorState) -> Option<MirrorState> {
        match state {
            Preparing => Some(Mirroring),
            Pausing => Some(Paused),
            Stopping => Some(Stopped),
            _ => None,
        }
    }

    proptest! {
        /// Driving the machine by decisions alone (legal targets taken, each state's work
        /// ending by its forward edge, a failure and its retry in between) never takes an
        /// illegal step and reaches what each wish asks for, starting as AddTopicsToMirror
        /// does (the admin checks refuse a pause or stop of a partition never mirrored).
        #[test]
        fn decisions_only_take_legal_steps_and_converge(
            wishes in prop::collection::vec((any_desired(), any::<bool>()), 1..20),
        ) {
            let mut state = Unknown;
            let mut previous = None;
            let wishes = std::iter::once((DesiredState::Mirror { mirror: "m".into() }, false))
                .chain(wishes);
            for (wish, fail) in wishes {
                if fail && state != Failed {
                    prop_assert!(is_valid_transition(state, Failed));
                    previous = Some(state);
                    state = Failed;
                }
                for _ in 0..8 {
                    let target = match decide(state, &wish) {
                        Failed => retry_target(previous, &wish, true).expect("retries left"),
                        target => target,
                    };
                    if !is_valid_transition(state, target) {
                        prop_assert!(work_done(state).is_some(), "stuck in {}", state);
                    } else {
                        state = target;
                    }
                    if let Some(next) = work_done(state) {
                        prop_assert!(is_valid_transition(state, next));
                        state = next;
                    }
                }
                let expected = match wish {
                    DesiredState::Mirror { .. } => Mirroring,
                    DesiredState::Paused { .. } => Paused,
                    DesiredState::Stopped { .. } => Stopped,
                };
                prop_assert_eq!(state, expected);
            }
        }
    }
}
