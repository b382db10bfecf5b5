//! KIP-1279 cluster mirroring on the destination cluster: the partition state machine, and
//! (as they land) the MirrorMetadataManager, the mirror fetcher and the periodic sync.
//!
//! The seed design is the default everywhere (`../shared/seed/kip-1279-excerpt.txt`); later
//! revisions become named design variants.

pub mod state;

pub use state::{decide, is_valid_transition, retry_target, DesiredState, MirrorState};
