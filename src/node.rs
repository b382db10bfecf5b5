//! The contract every modelled node (controller, broker, client) follows, so that one driver in
//! the simulator can run any of them.
//!
//! A node is a deterministic state machine. Inputs arrive through [`Node::handle_message`] and
//! [`Node::handle_timeout`], each with the node's current time in milliseconds (its own clock,
//! which the simulator may skew). Outputs are the envelopes it queues, taken with
//! [`Node::take_outbox`], and the next time it wants to be woken, [`Node::poll_timeout`].
//! A node never sleeps, never reads a clock and never draws random numbers.
//!
//! Driver loop, in this order after every input: take the outbox and send it; then ask
//! `poll_timeout` and arm one timer for it.

use crate::protocol::{Envelope, NodeId};

/// A modelled node; see the module doc.
pub trait Node {
    /// This node's id.
    fn node_id(&self) -> NodeId;
    /// A message arrived.
    fn handle_message(&mut self, now_ms: i64, envelope: Envelope);
    /// The deadline from [`Node::poll_timeout`] passed (it may be called late or spuriously;
    /// the node checks its own deadlines against `now_ms`).
    fn handle_timeout(&mut self, now_ms: i64);
    /// The earliest time the node wants `handle_timeout`, if any.
    fn poll_timeout(&self) -> Option<i64>;
    /// Messages to send, in order.
    fn take_outbox(&mut self) -> Vec<Envelope>;
}

/// A queue of outgoing envelopes with the sender filled in, and a correlation-id counter.
#[derive(Debug, Clone)]
pub struct Outbox {
    from: NodeId,
    next_correlation_id: u64,
    queued: Vec<Envelope>,
    /// The connection requests to each destination use now (0 when absent).
    connections: std::collections::BTreeMap<NodeId, u32>,
}

impl Outbox {
    /// An empty outbox for `from`.
    pub fn new(from: NodeId) -> Self {
        Self {
            from,
            next_correlation_id: 1,
            queued: Vec::new(),
            connections: std::collections::BTreeMap::new(),
        }
    }

    /// Closes the connection to `to`: later requests travel on a new one (see
    /// [`Envelope::connection`]), as Java's `NetworkClient` disconnects from a node when a
    /// request to it times out. What the old connection already carries may still arrive.
    pub fn reconnect(&mut self, to: NodeId) {
        *self.connections.entry(to).or_insert(0) += 1;
    }

    /// Queues a request to `to`; returns its correlation id.
    pub fn request(&mut self, to: NodeId, request: crate::protocol::Request) -> u64 {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        self.queued.push(Envelope {
            from: self.from,
            principal: None,
            connection: self.connections.get(&to).copied().unwrap_or(0),
            to,
            message: crate::protocol::Message::Request(correlation_id, request),
        });
        correlation_id
    }

    /// Queues a request to `to` over a connection authenticated as `principal` (none: as
    /// [`Self::request`]); returns its correlation id.
    pub fn request_as(
        &mut self,
        to: NodeId,
        request: crate::protocol::Request,
        principal: Option<String>,
    ) -> u64 {
        let correlation_id = self.request(to, request);
        self.queued.last_mut().expect("queued just above").principal = principal;
        correlation_id
    }

    /// Queues a response to `to` for `correlation_id`.
    pub fn respond(
        &mut self,
        to: NodeId,
        correlation_id: u64,
        response: crate::protocol::Response,
    ) {
        self.queued.push(Envelope {
            from: self.from,
            principal: None,
            connection: 0,
            to,
            message: crate::protocol::Message::Response(correlation_id, response),
        });
    }

    /// Takes the queued envelopes.
    pub fn take(&mut self) -> Vec<Envelope> {
        std::mem::take(&mut self.queued)
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.queued.is_empty()
    }
}
