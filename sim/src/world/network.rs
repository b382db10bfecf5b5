//! The message layer between nodes: one ordered link per connection (sender, receiver, the
//! sender's connection number: `Envelope::connection`) as Kafka's TCP connections are, with
//! the faults applied at send time (loss, duplication, a latency spike,
//! holding a message back) and at delivery (a partition or an isolated node cuts what crosses
//! it, a node that is down receives nothing), and the receiver putting packets back in order
//! (see the world's module doc).
//!
//! Contract of [`Network`]: the world's own time-ordered queue of packets in flight, one per
//! receiving node. A send costs a heap push, no madsim endpoint, task or timer; the receiving
//! node's driver sleeps until its earliest arrival (woken early by a [`Notify`] when a send
//! lands before the time it chose) and takes every packet due at once. Packets due at the same
//! instant leave in the order they were sent. A packet is lost at delivery when its link is cut
//! (partition, isolation), or when the process that sent it is no longer running (its
//! connections died with it); a node that starts forgets what arrived while it was down.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use tokio::sync::Notify;

use super::*;

/// One-way latency of a message, drawn per message from `[MIN, MAX)` ms.
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

/// What travels between nodes: an envelope stamped with its link position.
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

/// A packet in flight, ordered by arrival time, then by the order it was sent in.
struct InFlight {
    arrival: madsim::time::Instant,
    sent: u64,
    packet: Packet,
}

impl InFlight {
    fn key(&self) -> (madsim::time::Instant, u64) {
        (self.arrival, self.sent)
    }
}

impl PartialEq for InFlight {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for InFlight {}

impl PartialOrd for InFlight {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for InFlight {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// A node's side of the network: what is in flight to it and how to wake its driver.
#[derive(Default)]
struct Mailbox {
    in_flight: BinaryHeap<Reverse<InFlight>>,
    wake: Arc<Notify>,
    /// When the node's driver wakes by itself; `None` while it runs (it looks at its mailbox
    /// before it sleeps again).
    sleeps_until: Option<madsim::time::Instant>,
}

/// The world's message queue, the faults drawn at send time and the cuts the fault injector
/// makes; see the module doc.
#[derive(Default)]
pub struct Network {
    /// Faults drawn for every message sent.
    pub faults: NetFaults,
    mailboxes: BTreeMap<NodeId, Mailbox>,
    /// The incarnation of every running process; what a dead one sent is lost.
    running: BTreeMap<NodeId, u64>,
    /// Directed links that lose everything sent over them: (from, to).
    cut: BTreeSet<(NodeId, NodeId)>,
    /// Nodes that lose everything they send and everything sent to them.
    isolated: BTreeSet<NodeId>,
    sent: u64,
}

impl Network {
    /// A process of `node` starts: what arrived for it before `now` is gone (nothing was
    /// listening), and what it sends from now on counts as sent by `incarnation`. Returns the
    /// notifier that wakes its driver.
    pub(super) fn start(
        &mut self,
        node: NodeId,
        incarnation: u64,
        now: madsim::time::Instant,
    ) -> Arc<Notify> {
        self.running.insert(node, incarnation);
        let mailbox = self.mailboxes.entry(node).or_default();
        mailbox
            .in_flight
            .retain(|Reverse(in_flight)| in_flight.arrival > now);
        mailbox.sleeps_until = None;
        Arc::clone(&mailbox.wake)
    }

    /// `node`'s process died: nothing it sent that is still in flight arrives.
    pub fn stop(&mut self, node: NodeId) {
        self.running.remove(&node);
    }

    /// Cuts the link from `from` to `to` (one direction).
    pub fn cut_link(&mut self, from: NodeId, to: NodeId) {
        self.cut.insert((from, to));
    }

    /// Mends the link from `from` to `to`.
    pub fn mend_link(&mut self, from: NodeId, to: NodeId) {
        self.cut.remove(&(from, to));
    }

    /// Cuts `node` off from every other node, both ways.
    pub fn isolate(&mut self, node: NodeId) {
        self.isolated.insert(node);
    }

    /// Ends `node`'s isolation.
    pub fn reconnect(&mut self, node: NodeId) {
        self.isolated.remove(&node);
    }

    /// Lifts every message-layer fault, cut link and isolation (the heal phase); what is
    /// already in flight still arrives.
    pub fn heal(&mut self) {
        self.faults = NetFaults::default();
        self.cut.clear();
        self.isolated.clear();
    }

    /// Queues `packet` to arrive at `arrival`; wakes the receiver's driver if it sleeps past
    /// that.
    fn post(&mut self, arrival: madsim::time::Instant, packet: Packet) {
        self.sent += 1;
        let mailbox = self.mailboxes.entry(packet.envelope.to).or_default();
        if mailbox.sleeps_until.is_some_and(|until| arrival < until) {
            mailbox.sleeps_until = Some(arrival);
            mailbox.wake.notify_one();
        }
        mailbox.in_flight.push(Reverse(InFlight {
            arrival,
            sent: self.sent,
            packet,
        }));
    }

    /// When the next packet for `node` arrives.
    pub(super) fn next_arrival(&self, node: NodeId) -> Option<madsim::time::Instant> {
        let mailbox = self.mailboxes.get(&node)?;
        mailbox.in_flight.peek().map(|Reverse(next)| next.arrival)
    }

    /// `node`'s driver sleeps until `until` unless a packet arrives earlier.
    pub(super) fn sleep(&mut self, node: NodeId, until: madsim::time::Instant) {
        self.mailboxes.entry(node).or_default().sleeps_until = Some(until);
    }

    /// Takes every packet that arrived for `node` by `now`, in arrival order, without those
    /// a cut link lost or whose sender died; marks the driver as running.
    pub(super) fn take_arrived(&mut self, node: NodeId, now: madsim::time::Instant) -> Vec<Packet> {
        let Some(mailbox) = self.mailboxes.get_mut(&node) else {
            return Vec::new();
        };
        mailbox.sleeps_until = None;
        let mut arrived = Vec::new();
        while mailbox
            .in_flight
            .peek()
            .is_some_and(|Reverse(next)| next.arrival <= now)
        {
            let Reverse(in_flight) = mailbox.in_flight.pop().expect("peeked");
            arrived.push(in_flight.packet);
        }
        arrived.retain(|packet| {
            let from = packet.envelope.from;
            self.running.get(&from) == Some(&packet.sender_incarnation)
                && !self.cut.contains(&(from, node))
                && !self.isolated.contains(&from)
                && !self.isolated.contains(&node)
        });
        arrived
    }
}

/// Hands one envelope to the network, applying the message-layer faults. Each link delivers
/// in order, like a TCP connection: a latency spike or a held-back message delays everything
/// behind it on that link (not on the sender's next connection to the same node, which a
/// client opens when it gives up on a request), a lost message leaves a gap its receiver skips after
/// [`GAP_TIMEOUT`], and a duplicated message arrives twice in a row.
pub(super) fn send(
    shared: &Shared,
    incarnation: u64,
    link: &mut LinkSender,
    envelope: Envelope,
    now: madsim::time::Instant,
) {
    let mut rng = madsim::rand::thread_rng();
    lock(&shared.stats).sent += 1;
    let link_sequence = link.next_sequence;
    link.next_sequence += 1;
    let mut network = lock(&shared.network);
    // Read under the lock rather than cloning the settings for every message.
    let (loss, extra_latency_ms, (hold_probability, hold_ms), duplicate) = {
        let faults = &network.faults;
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
    let copy = if duplicate > 0.0 && rng.gen_bool(duplicate.min(1.0)) {
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
        let copy = packet(link.next_sequence, envelope.clone());
        link.next_sequence += 1;
        Some(copy)
    } else {
        None
    };
    network.post(delivery, packet(link_sequence, envelope));
    if let Some(copy) = copy {
        network.post(delivery, copy);
    }
}

#[cfg(test)]
mod tests {
    //! Each fault of the message layer, shown acting on the world's queue directly: sends go
    //! through [`send`] (so the faults are drawn as in a run) and arrivals are taken as a
    //! driver takes them.

    use std::time::Duration;

    use madsim::time::{sleep, Instant};
    use mirrorsim::protocol::{
        BrokerId, ClusterIndex, CoordinatorRequest, Envelope, Message, NodeId, Request,
    };

    use super::*;

    const A: NodeId = NodeId::Broker(ClusterIndex(0), BrokerId(1));
    const B: NodeId = NodeId::Broker(ClusterIndex(0), BrokerId(2));
    const C: NodeId = NodeId::Broker(ClusterIndex(0), BrokerId(3));

    /// A request from `from` to `to` whose correlation id tells the messages apart.
    fn envelope(from: NodeId, to: NodeId, id: u64) -> Envelope {
        Envelope {
            from,
            principal: None,
            connection: 0,
            to,
            message: Message::Request(id, Request::Coordinator(CoordinatorRequest::ListGroups)),
        }
    }

    fn id(packet: &Packet) -> u64 {
        match packet.envelope.message {
            Message::Request(id, _) => id,
            Message::Response(id, _) => id,
        }
    }

    /// Each sender's side of its links, by (from, to).
    type Links = BTreeMap<(NodeId, NodeId), LinkSender>;

    /// A world of three running nodes (incarnation 1), with `faults` applied at send time.
    fn world(faults: NetFaults) -> (Shared, Links) {
        let shared = Shared::new();
        lock(&shared.network).faults = faults;
        for node in [A, B, C] {
            lock(&shared.network).start(node, 1, Instant::now());
        }
        (shared, BTreeMap::new())
    }

    fn send_n(
        shared: &Shared,
        links: &mut Links,
        from: NodeId,
        to: NodeId,
        ids: std::ops::Range<u64>,
    ) {
        for id in ids {
            let link = links.entry((from, to)).or_default();
            send(shared, 1, link, envelope(from, to, id), Instant::now());
        }
    }

    /// Everything that arrived for `node` within `ms` simulated ms from now, as correlation
    /// ids with their arrival time in ms from now.
    async fn arrivals(shared: &Shared, node: NodeId, ms: u64) -> Vec<(u64, u64)> {
        let start = Instant::now();
        let mut seen = Vec::new();
        for _ in 0..ms {
            sleep(Duration::from_millis(1)).await;
            let now = Instant::now();
            for packet in lock(&shared.network).take_arrived(node, now) {
                seen.push((id(&packet), (now - start).as_millis() as u64));
            }
        }
        seen
    }

    fn run(test: impl std::future::Future<Output = ()> + 'static) {
        madsim::runtime::Runtime::with_seed_and_config(7, madsim::Config::default()).block_on(test);
    }

    #[test]
    fn a_link_delivers_in_order_within_the_drawn_latency() {
        run(async {
            let (shared, mut links) = world(NetFaults::default());
            send_n(&shared, &mut links, A, B, 0..200);
            let seen = arrivals(&shared, B, 50).await;
            let ids: Vec<u64> = seen.iter().map(|(id, _)| *id).collect();
            assert_eq!(ids, (0..200).collect::<Vec<_>>());
            assert!(
                seen.iter().all(|(_, at)| (1..=LATENCY_MS_MAX).contains(at)),
                "{seen:?}"
            );
            assert_eq!(lock(&shared.stats).sent, 200);
        });
    }

    #[test]
    fn loss_drops_messages_and_counts_them() {
        run(async {
            let faults = NetFaults {
                loss: 1.0,
                ..NetFaults::default()
            };
            let (shared, mut links) = world(faults);
            send_n(&shared, &mut links, A, B, 0..20);
            assert!(arrivals(&shared, B, 50).await.is_empty());
            assert_eq!(lock(&shared.stats).dropped, 20);
        });
    }

    #[test]
    fn a_duplicate_arrives_right_after_its_original() {
        run(async {
            let faults = NetFaults {
                duplicate: 1.0,
                ..NetFaults::default()
            };
            let (shared, mut links) = world(faults);
            send_n(&shared, &mut links, A, B, 0..3);
            let ids: Vec<u64> = arrivals(&shared, B, 50)
                .await
                .iter()
                .map(|(id, _)| *id)
                .collect();
            assert_eq!(ids, [0, 0, 1, 1, 2, 2]);
            assert_eq!(lock(&shared.stats).duplicated, 3);
        });
    }

    #[test]
    fn a_latency_spike_delays_every_message() {
        run(async {
            let faults = NetFaults {
                extra_latency_ms: 300,
                ..NetFaults::default()
            };
            let (shared, mut links) = world(faults);
            send_n(&shared, &mut links, A, B, 0..10);
            let seen = arrivals(&shared, B, 400).await;
            assert_eq!(seen.len(), 10);
            assert!(seen.iter().all(|(_, at)| *at > 300), "{seen:?}");
        });
    }

    #[test]
    fn a_held_back_message_holds_back_what_follows_it_on_the_link_only() {
        run(async {
            let mut faults = NetFaults::default();
            faults.hold_back_from.insert(A, (1.0, 2_000));
            let (shared, mut links) = world(faults);
            send_n(&shared, &mut links, A, B, 0..1);
            // Only A's messages are held: C's reach B at once.
            lock(&shared.network).faults.hold_back_from.clear();
            send_n(&shared, &mut links, A, B, 1..2);
            send_n(&shared, &mut links, C, B, 10..11);
            let seen = arrivals(&shared, B, 2_100).await;
            assert_eq!(
                seen.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
                [10, 0, 1]
            );
            assert!(seen[0].1 <= LATENCY_MS_MAX, "{seen:?}");
            assert!(seen[1].1 >= 2_000 && seen[2].1 >= 2_000, "{seen:?}");
            assert_eq!(lock(&shared.stats).held_back, 1);
        });
    }

    #[test]
    fn a_cut_link_loses_what_crosses_it_in_its_direction_until_mended() {
        run(async {
            let (shared, mut links) = world(NetFaults::default());
            lock(&shared.network).cut_link(A, B);
            send_n(&shared, &mut links, A, B, 0..5);
            send_n(&shared, &mut links, B, A, 5..10);
            assert!(arrivals(&shared, B, 20).await.is_empty());
            assert_eq!(arrivals(&shared, A, 20).await.len(), 5);
            // The cut acts at delivery: a packet sent across it that arrives after it is mended
            // arrives.
            send_n(&shared, &mut links, A, B, 10..11);
            lock(&shared.network).mend_link(A, B);
            send_n(&shared, &mut links, A, B, 11..12);
            let ids: Vec<u64> = arrivals(&shared, B, 20)
                .await
                .iter()
                .map(|(id, _)| *id)
                .collect();
            assert_eq!(ids, [10, 11]);
        });
    }

    #[test]
    fn an_isolated_node_neither_sends_nor_receives_until_reconnected() {
        run(async {
            let (shared, mut links) = world(NetFaults::default());
            lock(&shared.network).isolate(B);
            send_n(&shared, &mut links, A, B, 0..3);
            send_n(&shared, &mut links, B, C, 3..6);
            send_n(&shared, &mut links, A, C, 6..7);
            assert!(arrivals(&shared, B, 20).await.is_empty());
            let ids: Vec<u64> = arrivals(&shared, C, 20)
                .await
                .iter()
                .map(|(id, _)| *id)
                .collect();
            assert_eq!(ids, [6]);
            lock(&shared.network).reconnect(B);
            send_n(&shared, &mut links, B, C, 7..8);
            assert_eq!(arrivals(&shared, C, 20).await.len(), 1);
        });
    }

    #[test]
    fn what_a_dead_process_sent_is_lost_and_a_starting_one_forgets_what_arrived_before() {
        run(async {
            let (shared, mut links) = world(NetFaults::default());
            send_n(&shared, &mut links, A, B, 0..3);
            lock(&shared.network).stop(A);
            assert!(arrivals(&shared, B, 20).await.is_empty());
            // C sends to B while B is down; B starts after they arrived and never sees them.
            lock(&shared.network).stop(B);
            send_n(&shared, &mut links, C, B, 3..6);
            sleep(Duration::from_millis(20)).await;
            lock(&shared.network).start(B, 2, Instant::now());
            send_n(&shared, &mut links, C, B, 6..7);
            let ids: Vec<u64> = arrivals(&shared, B, 20)
                .await
                .iter()
                .map(|(id, _)| *id)
                .collect();
            assert_eq!(ids, [6]);
        });
    }

    #[test]
    fn a_send_landing_before_the_receivers_wake_notifies_it_once() {
        run(async {
            let (shared, mut links) = world(NetFaults::default());
            let wake = lock(&shared.network).start(B, 1, Instant::now());
            let until = Instant::now() + Duration::from_secs(1);
            lock(&shared.network).sleep(B, until);
            send_n(&shared, &mut links, A, B, 0..3);
            let arrival = lock(&shared.network).next_arrival(B).expect("in flight");
            assert!(arrival < until);
            // The permit is there: the driver's wait ends at once.
            let woke = madsim::time::timeout(Duration::from_millis(1), wake.notified()).await;
            assert!(woke.is_ok());
            // Only the first send notified (the wake time moved to its arrival).
            let again = madsim::time::timeout(Duration::from_millis(1), wake.notified()).await;
            assert!(again.is_err());
        });
    }
}
