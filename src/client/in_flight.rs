//! The table of requests a client has sent and not yet seen answered or timed out.
//!
//! A client owns its request timeouts (Kafka's `request.timeout.ms`): each entry carries the
//! broker it went to and the time after which the client gives up on it. An entry leaves the
//! table exactly once, either through [`InFlightRequests::take`] when the response arrives or
//! through [`InFlightRequests::take_expired`] when its deadline passes. A response whose
//! correlation id is no longer in the table is therefore late (or unknown) and is ignored.

use std::collections::BTreeMap;

use crate::protocol::NodeId;

/// One request in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InFlight<T> {
    /// The broker the request went to.
    pub broker: NodeId,
    /// The client gives up on the request at this time (inclusive).
    pub deadline_ms: i64,
    /// What the client needs to remember to handle the answer.
    pub request: T,
}

/// Requests in flight by correlation id; see the module doc.
#[derive(Debug, Clone)]
pub(crate) struct InFlightRequests<T> {
    entries: BTreeMap<u64, InFlight<T>>,
}

impl<T> Default for InFlightRequests<T> {
    fn default() -> Self {
        Self {
            entries: BTreeMap::new(),
        }
    }
}

impl<T> InFlightRequests<T> {
    /// Records a request that was just queued in the outbox.
    pub fn insert(&mut self, correlation_id: u64, broker: NodeId, deadline_ms: i64, request: T) {
        let previous = self.entries.insert(
            correlation_id,
            InFlight {
                broker,
                deadline_ms,
                request,
            },
        );
        assert!(
            previous.is_none(),
            "correlation id {correlation_id} reused while in flight"
        );
    }

    /// Removes and returns the request answered by `correlation_id`, if it is still in flight.
    pub fn take(&mut self, correlation_id: u64) -> Option<InFlight<T>> {
        self.entries.remove(&correlation_id)
    }

    /// Removes and returns every request whose deadline is at or before `now_ms`, in
    /// correlation-id (that is, sending) order.
    pub fn take_expired(&mut self, now_ms: i64) -> Vec<(u64, InFlight<T>)> {
        self.take_where(|entry| entry.deadline_ms <= now_ms)
    }

    /// Removes and returns every request sent to `broker`, in correlation-id order.
    pub fn take_to(&mut self, broker: NodeId) -> Vec<(u64, InFlight<T>)> {
        self.take_where(|entry| entry.broker == broker)
    }

    fn take_where(&mut self, taken: impl Fn(&InFlight<T>) -> bool) -> Vec<(u64, InFlight<T>)> {
        let ids: Vec<u64> = self
            .entries
            .iter()
            .filter(|(_, entry)| taken(entry))
            .map(|(correlation_id, _)| *correlation_id)
            .collect();
        ids.into_iter()
            .map(|correlation_id| {
                let entry = self.entries.remove(&correlation_id).expect("listed above");
                (correlation_id, entry)
            })
            .collect()
    }

    /// The earliest deadline in the table.
    pub fn next_deadline(&self) -> Option<i64> {
        self.entries.values().map(|entry| entry.deadline_ms).min()
    }

    /// Every request in flight, in correlation-id order.
    pub fn iter(&self) -> impl Iterator<Item = (&u64, &InFlight<T>)> {
        self.entries.iter()
    }

    /// Number of requests in flight.
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{BrokerId, ClusterIndex};

    #[test]
    fn expired_requests_leave_the_table_once_and_late_answers_find_nothing() {
        let broker = NodeId::Broker(ClusterIndex(0), BrokerId(1));
        let mut table = InFlightRequests::default();
        table.insert(1, broker, 100, "a");
        table.insert(2, broker, 50, "b");
        assert_eq!(table.next_deadline(), Some(50));
        let expired = table.take_expired(50);
        assert_eq!(expired.len(), 1);
        assert_eq!(expired[0].0, 2);
        assert!(table.take(2).is_none(), "a late answer finds nothing");
        assert_eq!(table.take(1).map(|entry| entry.request), Some("a"));
        assert_eq!(table.len(), 0);
    }
}
