//! The message layer between nodes: one ordered link per (sender, receiver) as Kafka's TCP
//! connections are, with the faults madsim lacks applied at send time (loss, duplication, a
//! latency spike, holding a message back) and the receiver putting packets back in order (see the
//! world's module doc).

use super::*;

/// The endpoint tag all messages use.
pub(super) const MESSAGE_TAG: u64 = 1;

/// One-way latency of a message, drawn per message from `[MIN, MAX)` ms (madsim's own send and
/// receive add about 2 ms on top).
pub(super) const LATENCY_MS_MIN: u64 = 1;

/// See [`LATENCY_MS_MIN`].
pub(super) const LATENCY_MS_MAX: u64 = 8;

/// Message-layer fault settings, changed by the fault injector.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NetFaults {
    /// Probability that a message is dropped.
    pub loss: f64,
    /// Probability that a message is delivered twice.
    pub duplicate: f64,
    /// Extra delay added to every message, in ms (a latency spike).
    pub extra_latency_ms: u64,
    /// Probability that a message is held back.
    pub hold_back: f64,
    /// How long a held-back message waits, in ms.
    pub hold_back_ms: u64,
    /// Hold-back applied only to messages sent by these nodes: (probability, ms).
    pub hold_back_from: BTreeMap<NodeId, (f64, u64)>,
}

/// Counters of what the message layer did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetStats {
    /// Messages handed to the network.
    pub sent: u64,
    /// Messages handed to a state machine.
    pub delivered: u64,
    /// Dropped by injected loss.
    pub dropped: u64,
    /// Extra copies sent.
    pub duplicated: u64,
    /// Held back.
    pub held_back: u64,
}

/// What travels over madsim: an envelope stamped with its link position.
pub(super) struct Packet {
    /// Incarnation of the sending process (a restart opens new connections).
    sender_incarnation: u64,
    /// Position on the (sender, receiver) link.
    link_sequence: u64,
    pub(super) envelope: Envelope,
}

/// Sending side of one link (one destination).
#[derive(Default)]
pub(super) struct LinkSender {
    next_sequence: u64,
    last_delivery: Option<madsim::time::Instant>,
}

/// Receiving side of one link (one source): puts packets back in order, as TCP would.
#[derive(Default)]
pub(super) struct LinkReceiver {
    sender_incarnation: u64,
    expected: Option<u64>,
    buffered: BTreeMap<u64, Envelope>,
    gap_since: Option<madsim::time::Instant>,
}

impl LinkReceiver {
    /// Accepts a packet; returns the envelopes now deliverable in order.
    pub(super) fn accept(&mut self, packet: Packet, now: madsim::time::Instant) -> Vec<Envelope> {
        if packet.sender_incarnation < self.sender_incarnation {
            return Vec::new(); // From a dead process: its connections are gone.
        }
        if packet.sender_incarnation > self.sender_incarnation {
            *self = Self {
                sender_incarnation: packet.sender_incarnation,
                ..Self::default()
            };
        }
        let expected = *self.expected.get_or_insert(packet.link_sequence);
        if packet.link_sequence < expected {
            return Vec::new(); // Already skipped as lost.
        }
        self.buffered.insert(packet.link_sequence, packet.envelope);
        let ready = self.drain();
        self.gap_since = if self.buffered.is_empty() {
            None
        } else {
            self.gap_since.or(Some(now))
        };
        ready
    }

    pub(super) fn drain(&mut self) -> Vec<Envelope> {
        let mut ready = Vec::new();
        while let Some(expected) = self.expected {
            match self.buffered.remove(&expected) {
                Some(envelope) => {
                    ready.push(envelope);
                    self.expected = Some(expected + 1);
                }
                None => break,
            }
        }
        ready
    }

    /// After a gap outlived [`GAP_TIMEOUT`], skips the missing packets.
    pub(super) fn expire_gap(&mut self, now: madsim::time::Instant) -> Vec<Envelope> {
        match (self.gap_since, self.buffered.keys().next().copied()) {
            (Some(since), Some(first)) if now.duration_since(since) >= GAP_TIMEOUT => {
                self.expected = Some(first);
                let ready = self.drain();
                self.gap_since = if self.buffered.is_empty() {
                    None
                } else {
                    Some(now)
                };
                ready
            }
            _ => Vec::new(),
        }
    }

    pub(super) fn gap_deadline(&self) -> Option<madsim::time::Instant> {
        self.gap_since.map(|since| since + GAP_TIMEOUT)
    }
}

/// Hands one envelope to the network, applying the message-layer faults. Each link delivers
/// in order, like a TCP connection: a latency spike or a held-back message delays everything
/// behind it on that link, a lost message leaves a gap its receiver skips after
/// [`GAP_TIMEOUT`], and a duplicated message arrives twice in a row.
pub(super) fn send(
    endpoint: &Arc<Endpoint>,
    shared: &Arc<Shared>,
    incarnation: u64,
    link: &mut LinkSender,
    envelope: Envelope,
) {
    let mut rng = madsim::rand::thread_rng();
    lock(&shared.stats).sent += 1;
    let link_sequence = link.next_sequence;
    link.next_sequence += 1;
    // Read under the lock rather than cloning the settings for every message.
    let (loss, extra_latency_ms, (hold_probability, hold_ms), duplicate) = {
        let faults = lock(&shared.net);
        let hold = faults.hold_back_from.get(&envelope.from).copied();
        (
            faults.loss,
            faults.extra_latency_ms,
            hold.unwrap_or((faults.hold_back, faults.hold_back_ms)),
            faults.duplicate,
        )
    };
    if loss > 0.0 && rng.gen_bool(loss.min(1.0)) {
        lock(&shared.stats).dropped += 1;
        if shared.print_trace {
            tracing::debug!("-> {} lost {}", envelope.to, envelope.message.summary());
        }
        return;
    }
    let mut delay_ms = rng.gen_range(LATENCY_MS_MIN..LATENCY_MS_MAX) + extra_latency_ms;
    if hold_probability > 0.0 && rng.gen_bool(hold_probability.min(1.0)) {
        delay_ms += hold_ms;
        lock(&shared.stats).held_back += 1;
        if shared.print_trace {
            tracing::debug!(
                "-> {} held back {hold_ms} ms {}",
                envelope.to,
                envelope.message.summary()
            );
        }
    }
    let now = madsim::time::Instant::now();
    let delivery = link
        .last_delivery
        .map_or(now + Duration::from_millis(delay_ms), |last| {
            last.max(now + Duration::from_millis(delay_ms))
        });
    link.last_delivery = Some(delivery);
    let packet = |link_sequence, envelope| Packet {
        sender_incarnation: incarnation,
        link_sequence,
        envelope,
    };
    let mut packets = Vec::with_capacity(2);
    if duplicate > 0.0 && rng.gen_bool(duplicate.min(1.0)) {
        // The copy follows the original on the link; only a duplicate clones the envelope.
        lock(&shared.stats).duplicated += 1;
        if let (NodeId::Client(_, ClientKind::Admin, _), Message::Request(correlation_id, _)) =
            (envelope.from, &envelope.message)
        {
            // `admin-outcomes` judges the operation as retried (see `AdminOutcome::duplicated`).
            lock(&shared.history)
                .duplicated_admin_requests
                .insert((envelope.from, *correlation_id));
        }
        if shared.print_trace {
            tracing::debug!(
                "-> {} duplicated {}",
                envelope.to,
                envelope.message.summary()
            );
        }
        packets.push(packet(link_sequence, envelope.clone()));
        packets.push(packet(link.next_sequence, envelope));
        link.next_sequence += 1;
    } else {
        packets.push(packet(link_sequence, envelope));
    }
    for packet in packets {
        let endpoint = Arc::clone(endpoint);
        let to = node_address(packet.envelope.to);
        // Each send is its own task: a madsim send costs at least 1 ms of simulated time, and
        // sending in sequence would serialise a node's whole outbox.
        madsim::task::spawn(async move {
            madsim::time::sleep_until(delivery).await;
            // A send to a node that is down (or across a clogged link) is lost.
            let _ = endpoint
                .send_to_raw(to, MESSAGE_TAG, Box::new(packet))
                .await;
        });
    }
}
