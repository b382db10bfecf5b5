//! A minimal admin client for scenario set-up: it creates the scenario's topics on its cluster
//! through CreateTopics to the controller, retrying until every topic exists.

use mirrorsim::node::{Node, Outbox};
use mirrorsim::protocol::{Envelope, ErrorCode, Message, NewTopic, NodeId, Request, Response};

const RETRY_MS: i64 = 200;

/// The admin client; see the module doc.
pub struct AdminClient {
    node_id: NodeId,
    controller: NodeId,
    outbox: Outbox,
    pending_topics: Vec<NewTopic>,
    in_flight: Option<(u64, i64)>,
    next_attempt_ms: i64,
}

impl AdminClient {
    /// An admin client that will create `topics` on `controller`'s cluster.
    pub fn new(node_id: NodeId, controller: NodeId, topics: Vec<NewTopic>, now_ms: i64) -> Self {
        Self {
            node_id,
            controller,
            outbox: Outbox::new(node_id),
            pending_topics: topics,
            in_flight: None,
            next_attempt_ms: now_ms,
        }
    }

    /// Whether every topic was created.
    pub fn is_done(&self) -> bool {
        self.pending_topics.is_empty()
    }

    fn maybe_send(&mut self, now_ms: i64) {
        if self.pending_topics.is_empty() || now_ms < self.next_attempt_ms {
            return;
        }
        if let Some((_, sent_ms)) = self.in_flight {
            if now_ms - sent_ms < RETRY_MS * 5 {
                return;
            }
        }
        let correlation_id = self.outbox.request(
            self.controller,
            Request::CreateTopics {
                topics: self.pending_topics.clone(),
            },
        );
        self.in_flight = Some((correlation_id, now_ms));
        self.next_attempt_ms = now_ms + RETRY_MS;
    }
}

impl Node for AdminClient {
    fn node_id(&self) -> NodeId {
        self.node_id
    }

    fn handle_message(&mut self, now_ms: i64, envelope: Envelope) {
        if let Message::Response(correlation_id, Response::CreateTopics { results }) =
            envelope.message
        {
            if self.in_flight.map(|(id, _)| id) != Some(correlation_id) {
                return;
            }
            self.in_flight = None;
            for (name, error, _) in results {
                // Created now, or by an earlier attempt whose answer was lost.
                if error.is_none() || error == ErrorCode::TopicAlreadyExists {
                    self.pending_topics.retain(|topic| topic.name != name);
                }
            }
        }
        self.maybe_send(now_ms);
    }

    fn handle_timeout(&mut self, now_ms: i64) {
        self.maybe_send(now_ms);
    }

    fn poll_timeout(&self) -> Option<i64> {
        (!self.pending_topics.is_empty()).then_some(self.next_attempt_ms)
    }

    fn take_outbox(&mut self) -> Vec<Envelope> {
        self.outbox.take()
    }
}
