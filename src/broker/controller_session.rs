//! The broker's session with its cluster's controller: registration, heartbeats, the fetch of
//! the metadata log that feeds the broker's image, and the blocks of producer ids the broker
//! hands out in InitProducerId. A component of the broker: it owns this state, and each call
//! gets the image and the outbox it may use.
//!
//! Contract:
//! - **Registration.** Until it holds a broker epoch the session registers (BrokerRegistration
//!   with this incarnation), at most one request per `controller_request_timeout_ms`; an
//!   error is retried after that timeout.
//! - **Heartbeats.** With a broker epoch it heartbeats every `heartbeat_interval_ms` (one in
//!   flight, retried after the timeout), reporting how far its image has read the metadata log.
//!   A heartbeat answered StaleBrokerEpoch or BrokerIdNotRegistered means the controller lost
//!   or replaced the registration: the session drops its epoch, is no longer ready, and
//!   registers again at once.
//! - **Metadata.** It fetches the metadata log from the image's next offset, and again at once
//!   after every answer: the controller holds a fetch it has nothing for up to
//!   `metadata_fetch_wait_max_ms` (a long poll, as KRaft's), so a new record reaches the
//!   broker one round trip after it is committed. Records are
//!   applied in offset order; a stale or overlapping answer contributes only what follows the
//!   image. The session becomes *ready* the first time its image shows its current
//!   registration (the broker acts on leadership and opens its listeners only then), and
//!   stays ready until it must register again.
//! - **Producer ids.** InitProducerId requests wait in arrival order and are answered from the
//!   current block (epoch 0); an empty block asks the controller for the next one
//!   (AllocateProducerIds, one in flight, retried after the timeout), and only with a broker
//!   epoch.

use super::config::BrokerConfig;
use crate::metadata::{MetadataImage, MetadataRecord};
use crate::node::Outbox;
use crate::protocol::{
    BrokerId, ControllerRequest, ControllerResponse, CoordinatorResponse, ErrorCode, NodeId,
    Offset, ProducerEpoch, ProducerId, Request, Response,
};

/// A request to the controller in flight.
#[derive(Debug, Clone, Copy)]
struct PendingRequest {
    correlation_id: u64,
    sent_ms: i64,
}

/// What a response meant to the session.
#[derive(Debug)]
pub(super) enum SessionAnswer {
    /// Not a session's response: the broker routes it on.
    NotMine(Response),
    /// Taken (or ignored as stale).
    Handled,
    /// A metadata fetch was answered; `applied`: it added records to the image, or made the
    /// session ready.
    Metadata { applied: bool },
}

/// The session's settings, from the broker config.
#[derive(Debug, Clone, Copy)]
struct SessionConfig {
    request_timeout_ms: i64,
    heartbeat_interval_ms: i64,
    metadata_fetch_wait_max_ms: i64,
    metadata_fetch_max_records: usize,
}

/// See the module doc.
#[derive(Debug)]
pub(super) struct ControllerSession {
    controller: NodeId,
    broker_id: BrokerId,
    incarnation: u64,
    config: SessionConfig,
    broker_epoch: Option<i64>,
    registration: Option<PendingRequest>,
    next_registration_ms: i64,
    heartbeat: Option<PendingRequest>,
    next_heartbeat_ms: i64,
    metadata_fetch: Option<PendingRequest>,
    next_metadata_fetch_ms: i64,
    metadata_ready: bool,
    /// The producer ids left to hand out: [next, end).
    producer_id_block: Option<(i64, i64)>,
    allocate_producer_ids: Option<PendingRequest>,
    /// InitProducerId requests waiting for an id: (client, correlation id), in arrival order.
    waiting_for_producer_id: Vec<(NodeId, u64)>,
}

impl ControllerSession {
    /// A session of broker `broker_id` (started as `incarnation`) with `controller`, to start
    /// at `now_ms`.
    pub(super) fn new(
        controller: NodeId,
        broker_id: BrokerId,
        incarnation: u64,
        config: &BrokerConfig,
        now_ms: i64,
    ) -> Self {
        Self {
            controller,
            broker_id,
            incarnation,
            config: SessionConfig {
                request_timeout_ms: config.controller_request_timeout_ms,
                heartbeat_interval_ms: config.heartbeat_interval_ms,
                metadata_fetch_wait_max_ms: config.metadata_fetch_wait_max_ms,
                metadata_fetch_max_records: config.metadata_fetch_max_records,
            },
            broker_epoch: None,
            registration: None,
            next_registration_ms: now_ms,
            heartbeat: None,
            next_heartbeat_ms: now_ms,
            metadata_fetch: None,
            next_metadata_fetch_ms: now_ms,
            metadata_ready: false,
            producer_id_block: None,
            allocate_producer_ids: None,
            waiting_for_producer_id: Vec::new(),
        }
    }

    /// The broker epoch of the current registration, once the controller granted it.
    pub(super) fn broker_epoch(&self) -> Option<i64> {
        self.broker_epoch
    }

    /// Whether the image shows the current registration (see the module doc).
    pub(super) fn metadata_ready(&self) -> bool {
        self.metadata_ready
    }

    /// Sends what is due: a registration or a heartbeat, and a metadata fetch.
    pub(super) fn poll(&mut self, now_ms: i64, image: &MetadataImage, outbox: &mut Outbox) {
        self.maybe_register(now_ms, outbox);
        self.maybe_heartbeat(now_ms, image, outbox);
        self.maybe_fetch_metadata(now_ms, image, outbox);
    }

    /// The periodic check: InitProducerId requests still waiting ask for a block again.
    pub(super) fn periodic(&mut self, now_ms: i64, outbox: &mut Outbox) {
        if !self.waiting_for_producer_id.is_empty() {
            self.maybe_allocate_producer_ids(now_ms, outbox);
        }
    }

    /// The earliest time the session wants to be polled.
    pub(super) fn deadline(&self) -> i64 {
        let timeout = self.config.request_timeout_ms;
        let retry_at = |next_ms: i64, pending: Option<PendingRequest>| {
            next_ms.max(pending.map_or(i64::MIN, |pending| pending.sent_ms + timeout))
        };
        let membership = if self.broker_epoch.is_none() {
            retry_at(self.next_registration_ms, self.registration)
        } else {
            retry_at(self.next_heartbeat_ms, self.heartbeat)
        };
        let allocation = self
            .allocate_producer_ids
            .map_or(i64::MAX, |pending| pending.sent_ms + timeout);
        membership
            .min(retry_at(self.next_metadata_fetch_ms, self.metadata_fetch))
            .min(allocation)
    }

    fn maybe_register(&mut self, now_ms: i64, outbox: &mut Outbox) {
        if self.broker_epoch.is_some() || now_ms < self.next_registration_ms {
            return;
        }
        if self.in_flight(self.registration, now_ms) {
            return;
        }
        let correlation_id = outbox.request(
            self.controller,
            Request::Controller(ControllerRequest::BrokerRegistration {
                broker_id: self.broker_id,
                incarnation: self.incarnation,
            }),
        );
        self.registration = Some(PendingRequest {
            correlation_id,
            sent_ms: now_ms,
        });
        self.next_registration_ms = now_ms + self.config.request_timeout_ms;
    }

    fn maybe_heartbeat(&mut self, now_ms: i64, image: &MetadataImage, outbox: &mut Outbox) {
        let Some(broker_epoch) = self.broker_epoch else {
            return;
        };
        if now_ms < self.next_heartbeat_ms || self.in_flight(self.heartbeat, now_ms) {
            return;
        }
        let correlation_id = outbox.request(
            self.controller,
            Request::Controller(ControllerRequest::BrokerHeartbeat {
                broker_id: self.broker_id,
                broker_epoch,
                metadata_offset: Offset(image.next_offset),
            }),
        );
        self.heartbeat = Some(PendingRequest {
            correlation_id,
            sent_ms: now_ms,
        });
        self.next_heartbeat_ms = now_ms + self.config.heartbeat_interval_ms;
    }

    fn maybe_fetch_metadata(&mut self, now_ms: i64, image: &MetadataImage, outbox: &mut Outbox) {
        if now_ms < self.next_metadata_fetch_ms || self.in_flight(self.metadata_fetch, now_ms) {
            return;
        }
        let correlation_id = outbox.request(
            self.controller,
            Request::Controller(ControllerRequest::FetchMetadata {
                from_offset: Offset(image.next_offset),
                max_records: self.config.metadata_fetch_max_records,
                max_wait_ms: self.config.metadata_fetch_wait_max_ms,
            }),
        );
        self.metadata_fetch = Some(PendingRequest {
            correlation_id,
            sent_ms: now_ms,
        });
    }

    /// Whether `pending` was sent less than a request timeout before `now_ms`.
    fn in_flight(&self, pending: Option<PendingRequest>, now_ms: i64) -> bool {
        pending.is_some_and(|pending| now_ms - pending.sent_ms < self.config.request_timeout_ms)
    }

    /// Takes a response if it is one of the session's kinds; see [`SessionAnswer`].
    pub(super) fn handle_response(
        &mut self,
        now_ms: i64,
        correlation_id: u64,
        response: Response,
        image: &mut MetadataImage,
        outbox: &mut Outbox,
    ) -> SessionAnswer {
        let answers = |pending: Option<PendingRequest>| {
            pending.map(|p| p.correlation_id) == Some(correlation_id)
        };
        match response {
            Response::Controller(ControllerResponse::BrokerRegistration {
                error,
                broker_epoch,
            }) => {
                if answers(self.registration) {
                    self.registration = None;
                    if error.is_none() {
                        self.broker_epoch = Some(broker_epoch);
                        self.next_heartbeat_ms = now_ms;
                    } else {
                        self.next_registration_ms = now_ms + self.config.request_timeout_ms;
                    }
                }
            }
            Response::Controller(ControllerResponse::BrokerHeartbeat { error, .. }) => {
                if answers(self.heartbeat) {
                    self.heartbeat = None;
                    if matches!(
                        error,
                        ErrorCode::StaleBrokerEpoch | ErrorCode::BrokerIdNotRegistered
                    ) {
                        // The controller lost or replaced our registration: register again.
                        self.broker_epoch = None;
                        self.metadata_ready = false;
                        self.next_registration_ms = now_ms;
                    }
                }
            }
            Response::Controller(ControllerResponse::FetchMetadata { records, .. }) => {
                if answers(self.metadata_fetch) {
                    let applied = self.apply_metadata(now_ms, image, records);
                    return SessionAnswer::Metadata { applied };
                }
            }
            Response::Controller(ControllerResponse::AllocateProducerIds {
                error,
                first_producer_id,
                count,
            }) => {
                if answers(self.allocate_producer_ids) {
                    self.allocate_producer_ids = None;
                    if error.is_none() && count > 0 {
                        let first = first_producer_id.0;
                        self.producer_id_block = Some((first, first + count));
                    }
                    self.serve_producer_ids(now_ms, outbox);
                }
            }
            response => return SessionAnswer::NotMine(response),
        }
        SessionAnswer::Handled
    }

    /// Applies fetched metadata `records` to `image`; whether it added any or made the session
    /// ready.
    fn apply_metadata(
        &mut self,
        now_ms: i64,
        image: &mut MetadataImage,
        records: Vec<(Offset, MetadataRecord)>,
    ) -> bool {
        self.metadata_fetch = None;
        let mut applied = false;
        for (Offset(offset), record) in records {
            if offset != image.next_offset {
                // A stale or overlapping answer (e.g. after a retry); take only what follows.
                continue;
            }
            image.apply(offset, &record);
            applied = true;
        }
        // The controller held the fetch while it had nothing: fetch again at once either way.
        self.next_metadata_fetch_ms = now_ms;
        if !self.metadata_ready {
            self.metadata_ready = self.broker_epoch.is_some_and(|epoch| {
                image
                    .brokers
                    .get(&self.broker_id)
                    .is_some_and(|registration| registration.broker_epoch == epoch)
            });
            applied |= self.metadata_ready;
        }
        applied
    }

    /// An InitProducerId from `from`: answered from the current block, or once a block comes.
    pub(super) fn handle_init_producer_id(
        &mut self,
        now_ms: i64,
        from: NodeId,
        correlation_id: u64,
        outbox: &mut Outbox,
    ) {
        self.waiting_for_producer_id.push((from, correlation_id));
        self.serve_producer_ids(now_ms, outbox);
    }

    fn serve_producer_ids(&mut self, now_ms: i64, outbox: &mut Outbox) {
        while !self.waiting_for_producer_id.is_empty() {
            let Some((next, end)) = self.producer_id_block else {
                break;
            };
            if next >= end {
                self.producer_id_block = None;
                break;
            }
            self.producer_id_block = Some((next + 1, end));
            let (to, correlation_id) = self.waiting_for_producer_id.remove(0);
            outbox.respond(
                to,
                correlation_id,
                Response::Coordinator(CoordinatorResponse::InitProducerId {
                    error: ErrorCode::None,
                    producer_id: ProducerId(next),
                    producer_epoch: ProducerEpoch(0),
                }),
            );
        }
        if !self.waiting_for_producer_id.is_empty() {
            self.maybe_allocate_producer_ids(now_ms, outbox);
        }
    }

    fn maybe_allocate_producer_ids(&mut self, now_ms: i64, outbox: &mut Outbox) {
        let Some(broker_epoch) = self.broker_epoch else {
            return;
        };
        if self.in_flight(self.allocate_producer_ids, now_ms) {
            return;
        }
        let correlation_id = outbox.request(
            self.controller,
            Request::Controller(ControllerRequest::AllocateProducerIds {
                broker_id: self.broker_id,
                broker_epoch,
            }),
        );
        self.allocate_producer_ids = Some(PendingRequest {
            correlation_id,
            sent_ms: now_ms,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ClusterIndex, Envelope, Message, Offset};

    const CONTROLLER: NodeId = NodeId::Controller(ClusterIndex(0));
    const ME: BrokerId = BrokerId(1);

    fn session(config: &BrokerConfig) -> (ControllerSession, MetadataImage, Outbox) {
        let session = ControllerSession::new(CONTROLLER, ME, 7, config, 0);
        let outbox = Outbox::new(NodeId::Broker(ClusterIndex(0), ME));
        (session, MetadataImage::default(), outbox)
    }

    fn requests(outbox: &mut Outbox) -> Vec<(u64, Request)> {
        outbox
            .take()
            .into_iter()
            .map(|Envelope { to, message, .. }| {
                assert_eq!(to, CONTROLLER);
                match message {
                    Message::Request(correlation_id, request) => (correlation_id, request),
                    Message::Response(..) => panic!("the session answers only clients"),
                }
            })
            .collect()
    }

    #[test]
    fn registers_until_granted_then_heartbeats_and_is_ready_once_the_image_shows_it() {
        let config = BrokerConfig::default();
        let timeout = config.controller_request_timeout_ms;
        let (mut session, mut image, mut outbox) = session(&config);
        session.poll(0, &image, &mut outbox);
        let sent = requests(&mut outbox);
        assert!(matches!(
            sent[0].1,
            Request::Controller(ControllerRequest::BrokerRegistration { incarnation: 7, .. })
        ));
        assert!(matches!(
            sent[1].1,
            Request::Controller(ControllerRequest::FetchMetadata {
                from_offset: Offset(0),
                ..
            })
        ));
        // Unanswered: nothing new before the timeout, a second registration after it.
        session.poll(timeout - 1, &image, &mut outbox);
        assert!(requests(&mut outbox).is_empty());
        assert_eq!(session.deadline(), timeout);
        session.poll(timeout, &image, &mut outbox);
        let retry = requests(&mut outbox);
        let registration = retry[0].0;
        assert!(matches!(
            retry[0].1,
            Request::Controller(ControllerRequest::BrokerRegistration { .. })
        ));
        let granted = Response::Controller(ControllerResponse::BrokerRegistration {
            error: ErrorCode::None,
            broker_epoch: 3,
        });
        let answer =
            session.handle_response(timeout, registration, granted, &mut image, &mut outbox);
        assert!(matches!(answer, SessionAnswer::Handled));
        assert_eq!(session.broker_epoch(), Some(3));
        assert!(!session.metadata_ready());
        session.poll(timeout, &image, &mut outbox);
        let heartbeat = requests(&mut outbox);
        assert!(matches!(
            heartbeat[0].1,
            Request::Controller(ControllerRequest::BrokerHeartbeat {
                broker_epoch: 3,
                ..
            })
        ));
        // The metadata fetch in flight comes back with this registration: ready.
        let fetch = retry[1].0;
        let records = vec![(
            Offset(0),
            MetadataRecord::RegisterBroker {
                broker_id: ME,
                broker_epoch: 3,
                incarnation: 7,
            },
        )];
        let fetched = Response::Controller(ControllerResponse::FetchMetadata {
            records,
            end_offset: Offset(1),
        });
        let answer = session.handle_response(timeout, fetch, fetched, &mut image, &mut outbox);
        assert!(matches!(answer, SessionAnswer::Metadata { applied: true }));
        assert!(session.metadata_ready());
        assert_eq!(image.next_offset, 1);
    }

    #[test]
    fn a_stale_epoch_heartbeat_registers_again_and_is_no_longer_ready() {
        let config = BrokerConfig::default();
        let (mut session, mut image, mut outbox) = session(&config);
        session.poll(0, &image, &mut outbox);
        let registration = requests(&mut outbox)[0].0;
        let granted = Response::Controller(ControllerResponse::BrokerRegistration {
            error: ErrorCode::None,
            broker_epoch: 0,
        });
        session.handle_response(0, registration, granted, &mut image, &mut outbox);
        session.metadata_ready = true;
        session.poll(0, &image, &mut outbox);
        let heartbeat = requests(&mut outbox)[0].0;
        let stale = Response::Controller(ControllerResponse::BrokerHeartbeat {
            error: ErrorCode::StaleBrokerEpoch,
            is_fenced: true,
        });
        session.handle_response(5, heartbeat, stale, &mut image, &mut outbox);
        assert_eq!(session.broker_epoch(), None);
        assert!(!session.metadata_ready());
        session.poll(5, &image, &mut outbox);
        assert!(requests(&mut outbox).iter().any(|(_, request)| matches!(
            request,
            Request::Controller(ControllerRequest::BrokerRegistration { .. })
        )));
    }

    #[test]
    fn producer_ids_are_served_in_arrival_order_from_blocks_the_controller_grants() {
        let config = BrokerConfig::default();
        let (mut session, mut image, mut outbox) = session(&config);
        let client = |index| {
            NodeId::Client(
                ClusterIndex(0),
                crate::protocol::ClientKind::Producer,
                index,
            )
        };
        // No broker epoch yet: the requests wait, and no block is asked for.
        session.handle_init_producer_id(0, client(0), 10, &mut outbox);
        assert!(outbox.take().is_empty());
        session.poll(0, &image, &mut outbox);
        let registration = requests(&mut outbox)[0].0;
        let granted = Response::Controller(ControllerResponse::BrokerRegistration {
            error: ErrorCode::None,
            broker_epoch: 0,
        });
        session.handle_response(0, registration, granted, &mut image, &mut outbox);
        session.handle_init_producer_id(1, client(1), 11, &mut outbox);
        let allocation = requests(&mut outbox);
        assert!(matches!(
            allocation[0].1,
            Request::Controller(ControllerRequest::AllocateProducerIds { .. })
        ));
        let block = Response::Controller(ControllerResponse::AllocateProducerIds {
            error: ErrorCode::None,
            first_producer_id: ProducerId(1000),
            count: 1,
        });
        session.handle_response(2, allocation[0].0, block, &mut image, &mut outbox);
        let sent = outbox.take();
        // One id for the first waiter; the block is spent, so the next one is asked for.
        let Message::Response(
            10,
            Response::Coordinator(CoordinatorResponse::InitProducerId { producer_id, .. }),
        ) = &sent[0].message
        else {
            panic!("the first waiter is answered first: {sent:?}");
        };
        assert_eq!(*producer_id, ProducerId(1000));
        assert!(matches!(
            sent[1].message,
            Message::Request(
                _,
                Request::Controller(ControllerRequest::AllocateProducerIds { .. })
            )
        ));
    }
}
