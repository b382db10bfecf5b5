//! What a broker lends one of its components for one call.
//!
//! A broker is a host of components, each owning its own state. The KIP-1279 describer,
//! periodic sync and topic admin entry take a [`BrokerContext`]; the replica manager, the
//! replica fetcher and the mirror manager, which may touch replicas, get their own contexts
//! (`crate::replica::ReplicaContext`, `crate::replica::FetcherContext`,
//! `crate::mirror::manager::MirrorContext`). A component never holds a reference to the
//! broker: every `handle_*`, `poll` call gets a [`BrokerContext`] with exactly what the
//! component may read (the clock, the ids, the metadata image) and touch (the outbox, the
//! event list), and reports when it next wants `poll` through its own `deadline()`. The broker
//! routes each request or answer to the component that owns it and merges the deadlines.
//!
//! Contract: the context is valid for one call only; `now_ms` is the broker's clock for that
//! call; whatever the component sends goes out with the broker's node id, in the order queued.

use crate::events::BrokerEvent;
use crate::metadata::MetadataImage;
use crate::node::Outbox;
use crate::protocol::{BrokerId, NodeId};

/// The broker's parts a component may use for one call; see the module doc.
#[derive(Debug)]
pub struct BrokerContext<'a> {
    /// The broker's clock.
    pub now_ms: i64,
    /// The broker's node id.
    pub node_id: NodeId,
    /// The broker's id in its cluster (the id in `node_id`).
    pub broker_id: BrokerId,
    /// The controller of the broker's cluster.
    pub controller: NodeId,
    /// The broker's metadata image, as of now.
    pub image: &'a MetadataImage,
    /// Where requests and answers go out.
    pub outbox: &'a mut Outbox,
    /// Where the component reports what checkers and traces need.
    pub events: &'a mut Vec<BrokerEvent>,
}
