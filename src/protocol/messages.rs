//! The wire vocabulary between simulated nodes: an envelope carries a message, a request or a
//! response ([`super::requests`], [`super::responses`]) with its correlation id. Messages are
//! passed as typed values (no serialization), so they hold cheap clones of batch bytes.
//!
//! Every request carries a correlation id chosen by the sender; the response echoes it.

use super::requests::Request;
use super::responses::Response;
use crate::common::NodeId;

/// A message in flight.
#[derive(Debug, Clone)]
pub struct Envelope {
    /// Sender.
    pub from: NodeId,
    /// Receiver.
    pub to: NodeId,
    /// Content.
    pub message: Message,
    /// The principal the sender's connection authenticated as (SASL), on requests a KIP-1279
    /// mirror sends to its source cluster; `None` for everything else, which the model's
    /// authorizer lets through as a super user's (`crate::metadata::authorizer`).
    pub principal: Option<String>,
    /// Which of the sender's connections to `to` carries it, counted from 0. A client that
    /// gives up on a request closes its connection to that broker and opens a new one
    /// ([`crate::node::Outbox::reconnect`]); the network keeps each connection in order, but
    /// not one connection relative to another, so what the old one still carried may arrive
    /// after what the new one carries. Responses go back on connection 0.
    pub connection: u32,
}

/// A request or a response.
#[derive(Debug, Clone)]
pub enum Message {
    /// A request with its correlation id.
    Request(u64, Request),
    /// A response to the request with this correlation id.
    Response(u64, Response),
}

impl Message {
    /// A short name for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Request(_, request) => request.kind(),
            Self::Response(_, response) => response.kind(),
        }
    }
}
