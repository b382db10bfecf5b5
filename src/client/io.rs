//! A client's request plumbing, shared by every client (the consumer and both producers): its
//! outbox, metadata cache and table of requests in flight, and the wake-up rule.
//!
//! Contract:
//! - Every request goes out through [`ClientIo::send_request`] with the deadline
//!   `now_ms + request_timeout_ms`, and every answer comes in through [`ClientIo::receive`],
//!   which hands back the request it answers or counts it as ignored (late, unknown, a
//!   request, or refused by the caller).
//! - Metadata requests go out through [`ClientIo::maybe_send_metadata`] only when the cache
//!   says one is due, so at most one is in flight.
//! - Nothing here reads a clock: every time is an input (`now_ms`).

use super::error::ClientConfigError;
use super::in_flight::{InFlight, InFlightRequests};
use crate::metadata::cache::MetadataCache;
use crate::node::Outbox;
use crate::protocol::{ClusterRequest, Envelope, ErrorCode, Message, NodeId, Request, Response};

/// A client's connection to its cluster: outbox, metadata cache and the requests in flight,
/// each remembered as a `P`.
#[derive(Debug, Clone)]
pub(super) struct ClientIo<P> {
    pub outbox: Outbox,
    pub metadata: MetadataCache,
    pub in_flight: InFlightRequests<P>,
    request_timeout_ms: i64,
    /// Responses ignored: late, unknown, of the wrong kind, or after a fatal error.
    pub ignored_responses: u64,
}

impl<P> ClientIo<P> {
    /// The plumbing of client `node_id`, bootstrapping from `bootstrap`.
    pub fn new(
        node_id: NodeId,
        bootstrap: &[NodeId],
        metadata_max_age_ms: i64,
        retry_backoff_ms: i64,
        request_timeout_ms: i64,
    ) -> Result<Self, ClientConfigError> {
        let metadata = MetadataCache::new(bootstrap, metadata_max_age_ms, retry_backoff_ms)
            .map_err(|invalid| ClientConfigError::InvalidBootstrap { reason: invalid.0 })?;
        Ok(Self {
            outbox: Outbox::new(node_id),
            metadata,
            in_flight: InFlightRequests::default(),
            request_timeout_ms,
            ignored_responses: 0,
        })
    }

    /// Queues `request` to `broker` and remembers it as `pending` until
    /// `now_ms + request_timeout_ms`; returns its correlation id.
    pub fn send_request(
        &mut self,
        now_ms: i64,
        broker: NodeId,
        request: Request,
        pending: P,
    ) -> u64 {
        let correlation_id = self.outbox.request(broker, request);
        let deadline_ms = now_ms + self.request_timeout_ms;
        self.in_flight
            .insert(correlation_id, broker, deadline_ms, pending);
        correlation_id
    }

    /// Removes every request whose deadline passed, and every other request in flight to the
    /// same brokers with it: the client gives up on a request by closing its connection to
    /// the broker, as Java's `NetworkClient` does, which fails everything that connection
    /// carried. Later requests to the broker travel on a new connection (`Outbox::reconnect`),
    /// so one still held in the network on the old connection may reach the broker after
    /// them; an answer to it is ignored (its correlation id is no longer in flight). In
    /// correlation-id order.
    pub fn take_timed_out(&mut self, now_ms: i64) -> Vec<(u64, InFlight<P>)> {
        let mut out = self.in_flight.take_expired(now_ms);
        let brokers: std::collections::BTreeSet<NodeId> =
            out.iter().map(|(_, entry)| entry.broker).collect();
        for broker in brokers {
            self.outbox.reconnect(broker);
            out.extend(self.in_flight.take_to(broker));
        }
        out.sort_by_key(|(correlation_id, _)| *correlation_id);
        out
    }

    /// Sends a Metadata request, remembered as `pending`, if one is due.
    pub fn maybe_send_metadata(&mut self, now_ms: i64, pending: P) {
        if !self.metadata.should_send(now_ms) {
            return;
        }
        let broker = self.metadata.target();
        let request = Request::Cluster(ClusterRequest::Metadata {
            topics: Some(self.metadata.requested_topics()),
        });
        self.send_request(now_ms, broker, request, pending);
        self.metadata.on_sent();
    }

    /// The correlation id and request an incoming response answers, if it is still in flight
    /// and `accept` holds; anything else (a late answer, a request, an answer after a fatal
    /// error) is counted as ignored.
    pub fn receive(
        &mut self,
        envelope: Envelope,
        accept: bool,
    ) -> Option<(u64, InFlight<P>, Response)> {
        match envelope.message {
            Message::Response(correlation_id, response) => {
                match self.in_flight.take(correlation_id) {
                    Some(entry) if accept => return Some((correlation_id, entry, response)),
                    _ => self.ignored_responses += 1,
                }
            }
            // Clients serve no requests.
            Message::Request(..) => self.ignored_responses += 1,
        }
        None
    }

    /// The times the plumbing needs a wake-up: the first request deadline and the next
    /// metadata refresh.
    pub fn wakeups(&self) -> impl Iterator<Item = i64> {
        self.in_flight
            .next_deadline()
            .into_iter()
            .chain(self.metadata.next_wakeup())
    }
}

/// The earliest of the wake-ups given to it that is after `now_ms`: anything due by now was
/// done, or is blocked on an answer or a later timer. Folded as they come, since a client's
/// deadline is asked after every input and nothing needs collecting.
#[derive(Debug, Clone, Copy)]
pub(super) struct WakeupAfter {
    now_ms: i64,
    earliest: Option<i64>,
}

impl WakeupAfter {
    pub(super) fn new(now_ms: i64) -> Self {
        Self {
            now_ms,
            earliest: None,
        }
    }

    pub(super) fn push(&mut self, at_ms: i64) {
        if at_ms > self.now_ms {
            self.earliest = Some(self.earliest.map_or(at_ms, |earliest| earliest.min(at_ms)));
        }
    }

    /// The earliest wake-up after `now_ms`, if any was given.
    pub(super) fn earliest(self) -> Option<i64> {
        self.earliest
    }
}

impl Extend<i64> for WakeupAfter {
    fn extend<I: IntoIterator<Item = i64>>(&mut self, wakeups: I) {
        for at_ms in wakeups {
            self.push(at_ms);
        }
    }
}

/// Errors after which the cached leader is probably wrong (Java's `InvalidMetadataException`).
pub(super) fn invalidates_metadata(error: ErrorCode) -> bool {
    matches!(
        error,
        ErrorCode::NotLeaderOrFollower
            | ErrorCode::UnknownTopicOrPartition
            | ErrorCode::FencedLeaderEpoch
            | ErrorCode::UnknownLeaderEpoch
            | ErrorCode::KafkaStorageError
    )
}
