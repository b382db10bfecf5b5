//! KIP-1279 cluster mirroring on the destination cluster.
//!
//! Where each part lives (rules first, then the components built on them):
//! - [`state`]: the mirror partition state machine (legal transitions, the desired state a
//!   topic's `mirror.name` asks for, what a leader does next) — pure rules;
//! - [`design`]: the seed design and the named variants of later revisions or broken designs;
//! - [`properties`]: which properties a mirror may carry, its recorded source cluster id, and
//!   which changes reset the connection to the source;
//! - [`failure`]: how a mirror partition fails and retries (backoff, attempts, how long a
//!   silent source is waited for), read from the mirror's properties;
//! - [`sync`]: the periodic sync's pure rules (which topics, configs, ACLs and groups a mirror
//!   syncs, and how a group offset is clamped into the destination log);
//! - [`directory`]: where a mirror's parts are, read from a broker's metadata image (source
//!   bootstrap brokers, the mirror's topics, the `__mirror_state` partition of each key);
//! - [`coordinator`]: the mirror coordinator, a coordinator shard per `__mirror_state`
//!   partition holding every mirror partition's stored state;
//! - [`manager`]: the MirrorMetadataManager, a broker component: one task per led mirror
//!   partition driving PREPARING, MIRRORING (the mirror fetcher), PAUSING and STOPPING, each
//!   step in its own file; the source side of PREPARING; DeleteMirror's admin entry;
//! - [`periodic_sync`]: the broker component that runs a mirror's sync rounds;
//! - [`describe`]: the broker component that answers DescribeMirror;
//! - [`recover`]: the broker component that answers RecoverMirrorTopics (FAILED partitions
//!   get a fresh budget of retries);
//! - [`topic_admin`]: the broker component that checks DeleteTopics and CreatePartitions of a
//!   mirror's topics against their partitions' states before forwarding them to the controller;
//! - [`gate`]: the read-only gate, asked before a client write (produce) and before a
//!   transaction marker (WriteTxnMarkers) is appended to a mirror partition.
//!
//! Elsewhere, by the layer it belongs to: the controller's handling of mirror records (CreateMirror, AlterMirrorTopics, epoch bumps)
//! is `crate::controller::mirrors`.
//!
//! The seed design is the default everywhere (`../shared/seed/kip-1279-excerpt.txt`); later
//! revisions become named design variants.

pub mod coordinator;
pub mod describe;
pub mod design;
pub mod directory;
pub mod failure;
pub mod gate;
pub mod manager;
pub mod periodic_sync;
pub mod properties;
pub mod recover;
pub mod state;
pub mod sync;
pub mod topic_admin;

pub use design::MirrorDesign;
pub use state::{
    decide, is_valid_transition, keeps_failure_record, retry_target, supports_unclean_mirroring,
    DesiredState, MirrorState, TopicMirrorConfig,
};

use crate::protocol::{BrokerId, ClusterIndex, NodeId};

/// Reads a mirror's `bootstrap.servers`: a comma-separated list of the source cluster's
/// brokers by node name (`a-broker-1,a-broker-2`), the simulation's host names. All must be
/// brokers of one cluster.
pub fn parse_bootstrap_servers(value: &str) -> Result<Vec<NodeId>, String> {
    let mut nodes = Vec::new();
    for name in value
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
    {
        let node = parse_broker_name(name)
            .ok_or_else(|| format!("{name:?} is not a broker name like a-broker-1"))?;
        if nodes
            .first()
            .is_some_and(|first: &NodeId| first.cluster() != node.cluster())
        {
            return Err(format!("{name:?} is in another cluster than {}", nodes[0]));
        }
        nodes.push(node);
    }
    if nodes.is_empty() {
        return Err("no broker named".into());
    }
    Ok(nodes)
}

fn parse_broker_name(name: &str) -> Option<NodeId> {
    let (letter, id) = name.split_once("-broker-")?;
    let mut chars = letter.chars();
    let letter = chars.next().filter(|c| c.is_ascii_lowercase())?;
    if chars.next().is_some() {
        return None;
    }
    let id: i32 = id.parse().ok().filter(|id| *id >= 0)?;
    Some(NodeId::Broker(
        ClusterIndex(letter as u8 - b'a'),
        BrokerId(id),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_servers_name_brokers_of_one_cluster() {
        assert_eq!(
            parse_bootstrap_servers("a-broker-1, a-broker-3"),
            Ok(vec![
                NodeId::Broker(ClusterIndex(0), BrokerId(1)),
                NodeId::Broker(ClusterIndex(0), BrokerId(3)),
            ])
        );
        for bad in [
            "",
            "a",
            "a-broker-x",
            "ab-broker-1",
            "a-broker-1,b-broker-1",
            "A-broker-1",
        ] {
            assert!(parse_bootstrap_servers(bad).is_err(), "{bad:?}");
        }
    }
}
