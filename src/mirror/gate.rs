//! KIP-1279's read-only gate on the destination: a mirror topic's partition refuses client
//! writes (`READ_ONLY_TOPIC`) until it is STOPPED, so nothing but the mirror fetcher writes a
//! log that is still to be a copy of the source's.
//!
//! Contract: the gate is decided by the leader's view alone: the topic is a mirror topic in
//! the leader's metadata image (its `mirror.name` is set, whatever its desired state) and the
//! partition's `mirror_state` (set by the [`manager`](super::manager)) is not writable
//! ([`MirrorState::is_writable`]); a topic outside every mirror is never gated.

use super::{MirrorState, TopicMirrorConfig};
use crate::metadata::MetadataImage;
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
    mirror_state.filter(|state| {
        !state.is_writable() && !broken.contains(&BrokenSwitch::MirrorWritableBeforeStopped)
    })
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
    fn other_topics_and_the_broken_switch_pass_the_gate() {
        let image = image_with_mirror_topic("orders", "m");
        let other = mirror_state_of(&image, "payments", MirrorState::Unknown);
        assert_eq!(other, None);
        assert_eq!(refuses_client_write(other, &[]), None);
        let mirroring = mirror_state_of(&image, "orders", MirrorState::Mirroring);
        let broken = [BrokenSwitch::MirrorWritableBeforeStopped];
        assert_eq!(refuses_client_write(mirroring, &broken), None);
    }
}
