//! The simulated world: every controller, broker and client as a madsim node, the message layer
//! between them, per-node clocks, world-owned disks and the shared trace.
//!
//! Each node has one clock ([`Shared::now_ms`]): its state machines stamp records with it and
//! compare their timer deadlines to it. A node's clock never steps backwards. Real Kafka
//! schedules its heartbeats, metadata fetches and request timeouts on the monotonic clock
//! (`System.nanoTime`, the `KafkaEventQueue` deadlines), which a wall-clock step back does not
//! freeze; a model whose one clock stepped back would stall every timer of the node for the
//! step (a broker missing its heartbeats and metadata while it answers from a stale image, seed
//! 2292223553896425 of the generated soak). So a clock skew jumps a clock forward and may make it
//! run fast or slow from then on ([`Shared::jump_clock`]), and the heal phase stops the drift
//! without stepping the clock back ([`Shared::stop_clock_drift`]).
//!
//! Node table (cluster `c` = 0 for `a`, 1 for `b`, …; every node listens on port 9092):
//!
//! | node | name | address |
//! |---|---|---|
//! | controller | `a-controller` | 10.c.1.1 |
//! | broker `i` | `a-broker-i` | 10.c.0.i |
//! | producer `i` | `a-producer-i` | 10.c.2.i |
//! | consumer `i` | `a-consumer-i` | 10.c.3.i |
//! | admin `i` | `a-admin-i` | 10.c.4.i |
//!
//! Each node is a madsim node (madsim kills, restarts and pauses it) running one driver task
//! that feeds its sans-IO state machine (messages and timeouts) and sends what it queues. The
//! state machine lives in a [`Slot`] shared with the supervisor so checkers can read it; a kill
//! drops the task and the restart builds a new state machine from the world-owned disk. A
//! client with a deferred start (a scenario's `start_ms`) has no state machine until that many
//! ms into the fault phase, and what is sent to it before is lost.
//!
//! The message layer is the world's own: packets in flight wait in a time-ordered queue per
//! receiving node ([`Network`]), and a node's driver sleeps until its next arrival or timer and
//! then takes every packet due at once, so a message costs no madsim endpoint, task or timer of
//! its own. It keeps every link — a (sender, receiver) connection: a client that gives up on a
//! request opens a new one, `Envelope::connection` — in order, as the TCP connections Kafka runs
//! on do (its idempotence relies on it): the sender stamps a link sequence number and chooses a
//! delivery time that never precedes the previous message's on the link, and the receiver puts
//! packets back in order, skipping a missing one after a short gap timeout (the connection
//! broke; what was on it is lost). Faults are applied at send time (loss, duplication — the
//! copy follows the original —, a latency spike and holding a message back for seconds; both
//! delay everything behind them on the link, so a held-back request lands after a leader
//! change) and at delivery (partitions and isolation cut links; what a process sent dies with
//! it; a node that is down receives nothing).
//!
//! Each node's driver runs in a `tracing` span naming the node and its incarnation, and, when
//! [`Shared::print_trace`] is set (replay), emits what a reader of the run needs: delivered
//! messages, messages the faults drop, duplicate or hold back, broker events and controller
//! metadata records (see [`crate::commands::replay`]). The trace hash is fed separately
//! ([`Shared::trace`]) and never depends on whether the trace is printed.
//!
//! Where each part lives: this file the node table, the shared state and each node's driver;
//! `clock.rs` the per-node clocks, `network.rs` the message layer, `workload.rs` the producers'
//! and consumers' workloads and the history, `admin.rs` the admin client's timeline, `trace.rs`
//! what a replay trace is handed.

pub mod admin;
mod clock;
mod network;
pub mod trace;
pub mod workload;

pub use clock::ClockSkew;
use network::{send, LinkReceiver, LinkSender};
pub use network::{NetFaults, NetStats, Network};

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use madsim::rand::Rng;
use mirrorsim::broker::{Broker, MemoryDirDisk, MemoryStorage};
use mirrorsim::controller::Controller;
use mirrorsim::node::Node;
use mirrorsim::protocol::{ClientKind, Envelope, Message, NodeId};

use tracing::Instrument;

use crate::world::workload::{fnv1a, ConsumerWorkload, History, ProducerWorkload, FNV_OFFSET};
use trace::Watermark;

/// The simulated wall clock starts here (2023-11-14), so record timestamps look real.
pub const EPOCH_MS: i64 = 1_700_000_000_000;

/// The address of a node; see the module's node table.
pub fn node_address(node: NodeId) -> SocketAddr {
    let (cluster, kind, index) = match node {
        NodeId::Controller(cluster) => (cluster.0, 1u8, 1u8),
        NodeId::Broker(cluster, id) => (cluster.0, 0, id.0 as u8),
        NodeId::Client(cluster, ClientKind::Producer, index) => (cluster.0, 2, index as u8),
        NodeId::Client(cluster, ClientKind::Consumer, index) => (cluster.0, 3, index as u8),
        NodeId::Client(cluster, ClientKind::Admin, index) => (cluster.0, 4, index as u8),
    };
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, cluster, kind, index)), 9092)
}

/// A running node's state machine.
pub enum NodeState {
    /// A controller.
    Controller(Box<Controller<MemoryDirDisk>>),
    /// A broker.
    Broker(Box<Broker<MemoryStorage>>),
    /// A producer workload.
    Producer(Box<ProducerWorkload>),
    /// A transactional producer workload.
    Transactional(Box<crate::world::workload::TransactionalWorkload>),
    /// A consumer workload.
    Consumer(Box<ConsumerWorkload>),
    /// An admin client.
    Admin(Box<crate::world::admin::AdminClient>),
}

impl NodeState {
    fn node(&mut self) -> &mut dyn Node {
        match self {
            Self::Controller(node) => node.as_mut(),
            Self::Broker(node) => node.as_mut(),
            Self::Producer(workload) => &mut workload.producer,
            Self::Transactional(workload) => &mut workload.producer,
            Self::Consumer(workload) => workload.node(),
            Self::Admin(node) => node.as_mut(),
        }
    }

    fn poll_deadline(&mut self) -> Option<i64> {
        let node = self.node().poll_timeout();
        let extra = match self {
            Self::Producer(workload) => workload.next_send_ms(),
            Self::Transactional(workload) => workload.next_transaction_ms(),
            _ => None,
        };
        match (node, extra) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Where a node's state machine lives while it runs; `None` while the node is down.
#[derive(Default)]
pub struct Slot {
    /// The state machine.
    pub state: Option<NodeState>,
    /// How many times the node has started.
    pub incarnation: u64,
}

/// Builds a node's state machine at start-up: `(now_ms, incarnation) -> state`.
pub type NodeFactory = Arc<dyn Fn(i64, u64) -> NodeState + Send + Sync>;

/// State shared by every node task and the supervisor.
pub struct Shared {
    /// The message layer: its faults, cut links and the packets in flight.
    pub network: Mutex<Network>,
    /// Message counters.
    pub stats: Mutex<NetStats>,
    /// Per-node clock skew (see [`Shared::now_ms`]); a node without one runs on the world's
    /// time.
    pub clocks: Mutex<BTreeMap<NodeId, ClockSkew>>,
    /// The running trace hash.
    pub trace: Mutex<u64>,
    /// Workload history.
    pub history: Mutex<History>,
    /// Whether producers create new records.
    pub load_enabled: Mutex<bool>,
    /// When the fault phase started, in ms since the world started (`None` before).
    pub fault_phase_start_ms: Mutex<Option<i64>>,
    /// Client nodes whose state machine is built only this many ms into the fault phase
    /// (a scenario's `start_ms`); filled while the nodes are built.
    pub deferred_starts: Mutex<BTreeMap<NodeId, u64>>,
    /// Producers that stop creating records this many ms into the fault phase (a scenario's
    /// `stop_ms`); filled while the nodes are built.
    pub load_stops: Mutex<BTreeMap<NodeId, u64>>,
    /// Emit the readable trace as `tracing` events (replay, see [`crate::commands::replay`]). Every
    /// emitting site tests this first, so a run without it formats nothing.
    pub print_trace: bool,
    start: madsim::time::Instant,
}

impl Shared {
    /// Fresh shared state; must be called inside the runtime.
    pub fn new() -> Self {
        Self {
            network: Mutex::new(Network::default()),
            stats: Mutex::new(NetStats::default()),
            clocks: Mutex::new(BTreeMap::new()),
            trace: Mutex::new(FNV_OFFSET),
            history: Mutex::new(History::default()),
            load_enabled: Mutex::new(false),
            fault_phase_start_ms: Mutex::new(None),
            deferred_starts: Mutex::new(BTreeMap::new()),
            load_stops: Mutex::new(BTreeMap::new()),
            print_trace: false,
            start: madsim::time::Instant::now(),
        }
    }

    /// Simulated milliseconds since the world started.
    pub fn elapsed_ms(&self) -> i64 {
        self.start.elapsed().as_millis() as i64
    }

    /// Simulated milliseconds since the fault phase started (`None` before it started).
    pub fn fault_phase_elapsed_ms(&self) -> Option<i64> {
        let start = (*lock(&self.fault_phase_start_ms))?;
        Some(self.elapsed_ms() - start)
    }

    /// Whether `node` creates new records now: the load is on and its `stop_ms`, if any, has
    /// not come.
    fn load_enabled_for(&self, node: NodeId) -> bool {
        if !*lock(&self.load_enabled) {
            return false;
        }
        let Some(stop) = lock(&self.load_stops).get(&node).copied() else {
            return true;
        };
        self.fault_phase_elapsed_ms()
            .is_some_and(|elapsed| elapsed < stop as i64)
    }

    /// Waits until `node` may be built: at once unless its start is deferred, else until that
    /// many ms into the fault phase.
    async fn wait_for_start(&self, node: NodeId) {
        let Some(offset) = lock(&self.deferred_starts).get(&node).copied() else {
            return;
        };
        loop {
            let remaining = self
                .fault_phase_elapsed_ms()
                .map(|elapsed| offset as i64 - elapsed);
            match remaining {
                Some(ms) if ms <= 0 => return,
                Some(ms) => madsim::time::sleep(Duration::from_millis(ms as u64)).await,
                // The fault phase's start is not known yet: look again shortly.
                None => madsim::time::sleep(Duration::from_millis(10)).await,
            }
        }
    }

    /// The node's one clock in ms: what its state machines stamp and compare their timer
    /// deadlines to. It never steps backwards (a skew only jumps it forward, see
    /// [`ClockSkew`]), as Kafka's timers, on the monotonic clock, never see time go back.
    pub fn now_ms(&self, node: NodeId) -> i64 {
        self.now_ms_at(node, madsim::time::Instant::now())
    }

    /// [`Shared::now_ms`] at `instant`, a reading of madsim's clock taken since the caller's
    /// last await: madsim's time stands still between two awaits, so a node's driver reads
    /// the clock once per wake and derives everything from that reading (each reading is a
    /// `clock_gettime` through madsim's time handle; three of them per wake cost 4 % of a run).
    pub fn now_ms_at(&self, node: NodeId, instant: madsim::time::Instant) -> i64 {
        let elapsed = (instant - self.start).as_millis() as i64;
        let skew = lock(&self.clocks).get(&node).copied().unwrap_or_default();
        EPOCH_MS + elapsed + skew.offset_at(elapsed)
    }

    /// Jumps `node`'s clock forward by `jump_ms` from its current reading; from now on it
    /// drifts by `drift_ppm` (replacing an earlier drift, whose accumulation it keeps).
    pub fn jump_clock(&self, node: NodeId, jump_ms: i64, drift_ppm: i64) {
        let elapsed = self.elapsed_ms();
        let mut clocks = lock(&self.clocks);
        let clock = clocks.entry(node).or_default();
        *clock = clock.jumped(elapsed, jump_ms, drift_ppm);
    }

    /// Stops every clock's drift (the heal phase): each skewed clock keeps its current reading,
    /// as a constant offset, instead of stepping back to the world's time.
    pub fn stop_clock_drift(&self) {
        let elapsed = self.elapsed_ms();
        for clock in lock(&self.clocks).values_mut() {
            *clock = clock.jumped(elapsed, 0, 0);
        }
    }

    /// Mixes an event into the trace hash. What a replay prints is emitted separately, at the
    /// call sites, so the hash's inputs do not depend on the trace.
    /// The event is hashed as it is formatted, byte by byte (FNV-1a is a stream hash), so it
    /// costs no allocation: the world traces every delivered message.
    pub fn trace(&self, event: std::fmt::Arguments<'_>) {
        self.trace_at(madsim::time::Instant::now(), event);
    }

    /// [`Shared::trace`] with a reading of the clock taken since the caller's last await (see
    /// [`Shared::now_ms_at`]).
    pub fn trace_at(&self, instant: madsim::time::Instant, event: std::fmt::Arguments<'_>) {
        let elapsed_ns = (instant - self.start).as_nanos() as u64;
        let mut hash = lock(&self.trace);
        let mut stream = FnvStream(fnv1a(*hash, &elapsed_ns.to_le_bytes()));
        std::fmt::Write::write_fmt(&mut stream, event).expect("hashing never fails");
        *hash = stream.0;
    }

    /// The current trace hash.
    pub fn trace_hash(&self) -> u64 {
        *lock(&self.trace)
    }
}

impl Default for Shared {
    fn default() -> Self {
        Self::new()
    }
}

/// An FNV-1a hash fed by `write!`: the same value as hashing the formatted string at once.
struct FnvStream(u64);

impl std::fmt::Write for FnvStream {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        self.0 = fnv1a(self.0, text.as_bytes());
        Ok(())
    }
}

/// Locks a mutex; a poisoned lock means a panic already ended the simulation.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().expect("simulation lock poisoned")
}

/// How long a receiver waits for a missing packet before treating it as lost (its connection
/// broke) and delivering what follows.
const GAP_TIMEOUT: Duration = Duration::from_millis(20);

/// The driver of one node; the `init` future of its madsim node. Never returns (madsim ends a
/// node whose init future returns).
pub async fn run_node(
    node: NodeId,
    shared: Arc<Shared>,
    slot: Arc<Mutex<Slot>>,
    factory: NodeFactory,
) {
    // A deferred client does not exist yet: anything sent to it is lost.
    shared.wait_for_start(node).await;
    let incarnation = {
        let mut slot = lock(&slot);
        slot.incarnation += 1;
        slot.incarnation
    };
    // Everything this incarnation does is attributed to it in a replay (instrumenting adds no
    // await and no scheduling decision, so runs are unchanged).
    drive(node, incarnation, shared, slot, factory)
        .instrument(trace::node_span(node, incarnation))
        .await;
}

/// The body of [`run_node`] for one incarnation; never returns.
async fn drive(
    node: NodeId,
    incarnation: u64,
    shared: Arc<Shared>,
    slot: Arc<Mutex<Slot>>,
    factory: NodeFactory,
) {
    let state = factory(shared.now_ms(node), incarnation);
    lock(&slot).state = Some(state);
    shared.trace(format_args!("start {node} #{incarnation}"));
    if shared.print_trace {
        tracing::info!("start");
    }
    let wake = lock(&shared.network).start(node, incarnation, madsim::time::Instant::now());
    // One ordered link per connection: (peer, the sender's connection number).
    let mut links_out: BTreeMap<(NodeId, u32), LinkSender> = BTreeMap::new();
    let mut links_in: BTreeMap<(NodeId, u32), LinkReceiver> = BTreeMap::new();
    // One clock reading per wake, used until the next await (see `Shared::now_ms_at`).
    let mut instant = madsim::time::Instant::now();
    let mut now = shared.now_ms_at(node, instant);
    loop {
        let (outbox, deadline) = step_outputs(node, &shared, &slot, now);
        for envelope in outbox {
            let link = links_out
                .entry((envelope.to, envelope.connection))
                .or_default();
            send(&shared, incarnation, link, envelope, instant);
        }
        let until = next_wake(node, &shared, deadline, &links_in, (instant, now));
        if until > instant {
            lock(&shared.network).sleep(node, until);
            // A send that lands before `until` wakes the driver early (see `Network`).
            let _ = madsim::time::timeout(until - instant, wake.notified()).await;
            instant = madsim::time::Instant::now();
            now = shared.now_ms_at(node, instant);
        }
        let arrived = lock(&shared.network).take_arrived(node, instant);
        let mut ready = Vec::new();
        for packet in arrived {
            let source = (packet.envelope.from, packet.envelope.connection);
            ready.extend(links_in.entry(source).or_default().accept(packet, instant));
        }
        for link in links_in.values_mut() {
            ready.extend(link.expire_gap(instant));
        }
        let mut slot = lock(&slot);
        let Some(state) = slot.state.as_mut() else {
            continue;
        };
        for envelope in ready {
            shared.trace_at(
                instant,
                format_args!(
                    "deliver {} -> {} {}",
                    envelope.from,
                    envelope.to,
                    envelope.message.kind()
                ),
            );
            lock(&shared.stats).delivered += 1;
            // A replay shows the message, then what handling it changed (broker events,
            // metadata records); a run skips both.
            let watermark = if shared.print_trace {
                tracing::debug!("<- {} {}", envelope.from, envelope.message.summary());
                Some(Watermark::of(state))
            } else {
                None
            };
            state.node().handle_message(now, envelope);
            if let Some(watermark) = watermark {
                watermark.trace_since(state);
            }
        }
        // Timers fire even while messages keep arriving, so a busy node never starves them.
        if state
            .poll_deadline()
            .is_some_and(|deadline| deadline <= now)
        {
            let watermark = shared.print_trace.then(|| Watermark::of(state));
            state.node().handle_timeout(now);
            if let Some(watermark) = watermark {
                watermark.trace_since(state);
            }
        }
    }
}

/// When a node's driver must next look: its state machine's deadline (at least every 100 ms
/// even without one, so workloads switched on by the supervisor start promptly, and at least
/// 1 ms ahead, madsim's shortest sleep), a link's gap timeout, or its next arrival, whichever
/// comes first.
fn next_wake(
    node: NodeId,
    shared: &Shared,
    deadline: Option<i64>,
    links_in: &BTreeMap<(NodeId, u32), LinkReceiver>,
    (instant, now): (madsim::time::Instant, i64),
) -> madsim::time::Instant {
    let timer_ms = deadline.map_or(100, |deadline| (deadline - now).clamp(1, 100));
    let mut until = instant + Duration::from_millis(timer_ms as u64);
    if let Some(gap) = links_in
        .values()
        .filter_map(LinkReceiver::gap_deadline)
        .min()
    {
        until = until.min(gap.max(instant + Duration::from_millis(1)));
    }
    match lock(&shared.network).next_arrival(node) {
        Some(arrival) => until.min(arrival),
        None => until,
    }
}

/// The workloads' history, its clock set to now: sends and polls are stamped on the checkers'
/// clock (see `History::clock_ms`). Only the workload steps take it.
fn stamped_history(shared: &Shared) -> std::sync::MutexGuard<'_, History> {
    let mut history = lock(&shared.history);
    history.clock_ms = shared.elapsed_ms();
    history
}

/// Runs the workload hooks and collects a node's outbox and next deadline.
fn step_outputs(
    node: NodeId,
    shared: &Shared,
    slot: &Mutex<Slot>,
    now: i64,
) -> (Vec<Envelope>, Option<i64>) {
    let mut slot = lock(slot);
    let Some(state) = slot.state.as_mut() else {
        return (Vec::new(), None);
    };
    match state {
        NodeState::Producer(workload) => {
            workload.enabled = shared.load_enabled_for(node);
            let mut history = stamped_history(shared);
            workload.send_due(now, &mut history);
            workload.record_events(&mut history);
        }
        NodeState::Transactional(workload) => {
            workload.enabled = shared.load_enabled_for(node);
            let mut history = stamped_history(shared);
            workload.record_events(&mut history);
            workload.send_due(now, &mut history);
            workload.record_events(&mut history);
        }
        NodeState::Consumer(workload) => workload.record_events(now, &mut stamped_history(shared)),
        NodeState::Admin(admin) => {
            admin.set_clock(now, shared.fault_phase_elapsed_ms());
            for mut finished in admin.take_finished() {
                if let Some(outcome) = finished.outcome.as_mut() {
                    outcome.answered_at_ms = shared.elapsed_ms();
                    let history = lock(&shared.history);
                    let duplicated = outcome
                        .requests
                        .iter()
                        .filter(|id| history.duplicated_admin_requests.contains(&(node, **id)));
                    outcome.duplicated = duplicated.count() as u32;
                }
                shared.trace(format_args!("admin {node} {finished}"));
                if shared.print_trace {
                    // The admin timeline is part of the scenario's script, like the faults: a
                    // `world` line, kept by every node filter.
                    tracing::info!(parent: None, "admin {node} {finished}");
                }
                lock(&shared.history).record_admin(finished);
            }
        }
        _ => {}
    }
    let outbox = state.node().take_outbox();
    (outbox, state.poll_deadline())
}

#[cfg(test)]
mod tests {
    use mirrorsim::protocol::{BrokerId, ClusterIndex};

    use super::*;

    /// Reads `node`'s clock every simulated ms for `ms` ms; panics if it ever steps back.
    async fn tick(shared: &Shared, node: NodeId, ms: u64, last: &mut i64) {
        for _ in 0..ms {
            madsim::time::sleep(Duration::from_millis(1)).await;
            let now = shared.now_ms(node);
            assert!(
                now >= *last,
                "{node}'s clock stepped back from {last} to {now}"
            );
            *last = now;
        }
    }

    /// Generated seed 2292223553896425: a −3365 ms clock step stalled every timer of
    /// b-broker-1 (no BrokerHeartbeat, no FetchMetadata) for 3.4 s, and the heal phase's reset
    /// stepped forward-skewed clocks back. A clock now only jumps forward, changing or stopping
    /// its drift keeps its reading, and a slow clock still moves forward.
    #[test]
    fn a_skewed_clock_never_steps_back_and_the_heal_keeps_its_reading() {
        let runtime = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
        runtime.block_on(async {
            let shared = Shared::new();
            let node = NodeId::Broker(ClusterIndex(1), BrokerId(1));
            let other = NodeId::Broker(ClusterIndex(1), BrokerId(2));
            let mut last = shared.now_ms(node);
            tick(&shared, node, 320, &mut last).await;
            // Applied 320 ms in, a drift counts from the jump: no step by what it would have
            // accumulated since the start of the run.
            let before = shared.now_ms(node);
            shared.jump_clock(node, 3_365, 1_264);
            assert_eq!(shared.now_ms(node), before + 3_365);
            tick(&shared, node, 1_000, &mut last).await;
            // A second skew jumps on from the current reading; its slow drift replaces the
            // fast one without giving back what that accumulated.
            let before = shared.now_ms(node);
            shared.jump_clock(node, 0, -2_000);
            assert_eq!(shared.now_ms(node), before);
            tick(&shared, node, 2_000, &mut last).await;
            // The heal phase stops the drift and keeps the reading: the clock then runs at the
            // world's rate, still ahead of it.
            let before = shared.now_ms(node);
            shared.stop_clock_drift();
            assert_eq!(shared.now_ms(node), before);
            let ahead = before - shared.now_ms(other);
            assert!(ahead > 3_000, "{ahead}");
            tick(&shared, node, 1_000, &mut last).await;
            assert_eq!(shared.now_ms(node) - shared.now_ms(other), ahead);
            // An unskewed node runs on the world's time throughout.
            assert_eq!(shared.now_ms(other), EPOCH_MS + shared.elapsed_ms());
        });
    }

    #[test]
    #[should_panic(expected = "a node's clock never steps back")]
    fn a_backward_clock_jump_is_a_bug() {
        let _ = ClockSkew::default().jumped(0, -1, 0);
    }
}
