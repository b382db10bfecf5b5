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

use std::collections::BTreeMap;

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

/// A component's requests in flight: each correlation id with what it was for and when it was
/// sent, all sharing one timeout (`TIMEOUT_MS`). The component reports [`Self::deadline`] as
/// its own, and at `poll` answers every [`Self::expired`] request as timed out itself.
#[derive(Debug)]
pub struct RequestsInFlight<W, const TIMEOUT_MS: i64> {
    sent: BTreeMap<u64, (W, i64)>,
}

impl<W, const TIMEOUT_MS: i64> Default for RequestsInFlight<W, TIMEOUT_MS> {
    fn default() -> Self {
        Self {
            sent: BTreeMap::new(),
        }
    }
}

impl<W, const TIMEOUT_MS: i64> RequestsInFlight<W, TIMEOUT_MS> {
    /// Records a request sent at `sent_ms` under `correlation_id`.
    pub fn insert(&mut self, correlation_id: u64, what: W, sent_ms: i64) {
        self.sent.insert(correlation_id, (what, sent_ms));
    }

    /// What the request was for, once its answer (or its timeout) is taken in.
    pub fn remove(&mut self, correlation_id: u64) -> Option<W> {
        self.sent.remove(&correlation_id).map(|(what, _)| what)
    }

    /// Whether the request with this correlation id is one of these.
    pub fn owns(&self, correlation_id: u64) -> bool {
        self.sent.contains_key(&correlation_id)
    }

    /// The earliest time one of them times out.
    pub fn deadline(&self) -> Option<i64> {
        self.sent
            .values()
            .map(|(_, sent_ms)| sent_ms + TIMEOUT_MS)
            .min()
    }

    /// The requests timed out at `now_ms`, in correlation id order.
    pub fn expired(&self, now_ms: i64) -> Vec<u64> {
        self.sent
            .iter()
            .filter(|(_, (_, sent_ms))| now_ms >= sent_ms + TIMEOUT_MS)
            .map(|(correlation_id, _)| *correlation_id)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_time_out_together_after_their_own_send_time() {
        let mut requests: RequestsInFlight<&str, 100> = RequestsInFlight::default();
        assert_eq!(requests.deadline(), None);
        requests.insert(7, "read", 10);
        requests.insert(3, "write", 50);
        assert_eq!(requests.deadline(), Some(110));
        assert!(requests.expired(109).is_empty());
        assert_eq!(requests.expired(150), [3, 7]);
        assert!(requests.owns(7));
        assert_eq!(requests.remove(7), Some("read"));
        assert!(!requests.owns(7));
        assert_eq!(requests.remove(7), None);
        assert_eq!(requests.deadline(), Some(150));
    }
}
