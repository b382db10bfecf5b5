//! One run of a scenario with one seed: build the world, create topics, run the load under the
//! fault plan while checking safety after every step, heal, check liveness, compare the history
//! with the final logs, and report.
//!
//! Phases: set-up (topics created, no load, no faults) → fault phase (`duration_ms`) → heal
//! phase (all faults lifted, load stopped, up to `heal_ms` for the cluster to converge). The run
//! stops at the first safety violation. Wall-clock time is never read inside the simulation.
//!
//! Times in a scenario count from the start of the fault phase: faults, the admin timeline
//! (each cluster's admin client runs its operations, see [`crate::world::admin`]) and deferred
//! workloads (`start_ms`: the client node is built only then, see
//! [`crate::world::Shared::deferred_starts`]). Admin operations may still be finishing in the
//! heal phase; liveness requires every one to have finished.

mod build;
mod logs;

pub use logs::BrokerDisks;

use build::{admin_world, build_nodes};

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use madsim::runtime::{Handle, NodeHandle, Runtime};
use mirrorsim::broker::{Broker, BrokerEvent, BrokerStorage, MemoryStorage};
use mirrorsim::client::{
    AutoOffsetReset, Consumer, ConsumerConfig, GroupConsumer, GroupConsumerConfig,
    IdempotentProducer, IsolationLevel, ProducerConfig, TransactionalProducer,
    TransactionalProducerConfig,
};
use mirrorsim::controller::Controller;
use mirrorsim::log::TailFate;
use mirrorsim::mirror::MirrorDesign;
use mirrorsim::protocol::{
    Acks, BrokerId, ClientKind, ClusterIndex, ErrorCode, MirrorTopicOperation, NewTopic, NodeId,
    TopicPartition,
};
use mirrorsim::switches::BrokenSwitch;

use crate::checks::Invariant;
use crate::checks::{BrokerView, Checkers, ControllerView, Step, Violation};
use crate::faults::{plan, FaultAction, FaultPlan, PlannedFault, Target};
use crate::scenario::{AcksSpec, IsolationSpec, Scenario};
use crate::world::admin::{self, AdminAction, AdminClient, AdminOp, AdminOpRecord};
use crate::world::workload::History;
use crate::world::workload::{
    ConsumerClient, ConsumerWorkload, ProducerWorkload, TransactionalWorkload,
};
use crate::world::{lock, node_address, run_node, NetStats, NodeFactory, NodeState, Shared, Slot};

/// How often safety is checked, in simulated ms.
const CHECK_INTERVAL_MS: u64 = 10;
/// Longest the set-up may take.
const SETUP_LIMIT_MS: u64 = 30_000;

/// What to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The seed.
    pub seed: u64,
    /// The KIP-1279 design variant; `None` runs the one the scenario names (else `seed`).
    pub design: Option<MirrorDesign>,
    /// Test-only broken switches (by name, see [`BrokenSwitch`]).
    pub broken: Vec<BrokenSwitch>,
    /// Emit the readable trace as `tracing` events (see [`crate::commands::replay`], whose
    /// [`crate::commands::replay::replay`] sets this and prints them); the run itself is unchanged.
    pub trace: bool,
}

impl RunOptions {
    /// A plain run of `seed`: the scenario's design, no broken switch, no trace.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            design: None,
            broken: Vec::new(),
            trace: false,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every check passed.
    Pass,
    /// A safety invariant broke (exit 1).
    Safety,
    /// Liveness failed after healing (exit 2).
    Liveness,
}

impl Verdict {
    /// The process exit code (design.md §6).
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Pass => crate::exit::PASS,
            Self::Safety => crate::exit::SAFETY,
            Self::Liveness => crate::exit::LIVENESS,
        }
    }
}

/// What a run found.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The seed.
    pub seed: u64,
    /// The fault plan that ran.
    pub plan: FaultPlan,
    /// The verdict.
    pub verdict: Verdict,
    /// Every violation found (safety first).
    pub violations: Vec<Violation>,
    /// The trace hash.
    pub trace_hash: u64,
    /// Simulated milliseconds the run covered.
    pub simulated_ms: i64,
    /// Message-layer counters.
    pub net: NetStats,
    /// Records sent, acknowledged, failed.
    pub records: (usize, usize, usize),
    /// Coverage marks reached and how often.
    pub marks: BTreeMap<String, u64>,
    /// When the checkers first saw each event-driven mark, in ms from the start of the fault
    /// phase (negative: during set-up).
    pub marks_first_ms: BTreeMap<String, i64>,
    /// Every admin timeline operation with its outcome (`None`: it never finished), in file
    /// order.
    pub admin: Vec<AdminOpRecord>,
}

/// Runs `scenario` with `options` in a fresh madsim runtime.
pub fn run(scenario: &Scenario, options: &RunOptions) -> RunReport {
    run_keeping_disks(scenario, options).0
}

/// Runs like [`run`] and also hands back every broker's storage as the run left it (for
/// `--logs`; the run is the same).
pub fn run_keeping_disks(scenario: &Scenario, options: &RunOptions) -> (RunReport, BrokerDisks) {
    let plan = plan(scenario, options.seed);
    let runtime = Runtime::with_seed_and_config(options.seed, simulation_config());
    let scenario = Arc::new(scenario.clone());
    let options = options.clone();
    runtime.block_on(async move { supervise(scenario, options, plan).await })
}

/// madsim's configuration. The world's message layer carries every message (madsim's network
/// is not used; its send latency is set near zero for the benchmark's bare madsim loop, which
/// shares this configuration).
pub fn simulation_config() -> madsim::Config {
    let mut config = madsim::Config::default();
    config.net.send_latency = Duration::from_nanos(1)..Duration::from_nanos(2);
    config
}

/// Runs a scenario inside an already running madsim runtime (for madsim's own determinism
/// check, which creates the runtimes itself).
pub async fn supervise_for_test(scenario: Scenario, seed: u64) -> RunReport {
    let plan = plan(&scenario, seed);
    let options = RunOptions::new(seed);
    supervise(Arc::new(scenario), options, plan).await.0
}

struct Node {
    id: NodeId,
    handle: NodeHandle,
    slot: Arc<Mutex<Slot>>,
    storage: MemoryStorage,
    down: bool,
    paused: bool,
}

struct World {
    shared: Arc<Shared>,
    nodes: BTreeMap<NodeId, Node>,
    checkers: Checkers,
    violations: Vec<Violation>,
    /// The set-up never finished (topics not ready): the run is a liveness failure, and
    /// nothing after the set-up ran.
    setup_failed: bool,
}

async fn supervise(
    scenario: Arc<Scenario>,
    options: RunOptions,
    plan: FaultPlan,
) -> (RunReport, BrokerDisks) {
    let mut shared = Shared::new();
    shared.print_trace = options.trace;
    let shared = Arc::new(shared);
    let mut world = World {
        nodes: build_nodes(&scenario, &options, &shared),
        shared,
        checkers: Checkers::default(),
        violations: Vec::new(),
        setup_failed: false,
    };
    world
        .checkers
        .set_mirror_design(options.design.unwrap_or_else(|| scenario.mirror_design()));
    for topic in &scenario.topics {
        let cluster = ClusterIndex(
            crate::scenario::cluster_index(topic.cluster.get_ref()).unwrap_or(0) as u8,
        );
        let acks_all = scenario.producers.iter().all(|p| p.acks == AcksSpec::All);
        if acks_all && !topic.unclean_leader_election && topic.min_insync_replicas >= 2 {
            world
                .checkers
                .durable_topics
                .insert((cluster, topic.name.as_str().into()));
        }
    }
    world.checkers.admin_world = admin_world(&scenario);
    world.checkers.admin_world.held_request_ms = plan.longest_request_hold_ms();
    world.setup(&scenario).await;
    *lock(&world.shared.fault_phase_start_ms) = Some(world.now_ms());
    *lock(&world.shared.load_enabled) = true;
    world.say(format_args!(
        "fault phase starts, load on (scenario times count from here)"
    ));
    world.fault_phase(&scenario, &plan).await;
    if world.violations.is_empty() {
        world.heal_phase(&scenario).await;
    }
    let disks = world.broker_disks();
    (world.finish(options.seed, plan), disks)
}

impl World {
    fn now_ms(&self) -> i64 {
        self.shared.elapsed_ms()
    }

    /// Every broker's storage (shared handles: the disks as they are now).
    fn broker_disks(&self) -> BrokerDisks {
        BrokerDisks {
            brokers: self
                .nodes
                .values()
                .filter(|node| matches!(node.id, NodeId::Broker(..)))
                .map(|node| (node.id, node.storage.clone()))
                .collect(),
        }
    }

    /// Waits until every topic exists with a leader and a full ISR.
    async fn setup(&mut self, scenario: &Scenario) {
        let expected: usize = scenario
            .topics
            .iter()
            .filter(|t| !t.deferred)
            .map(|t| t.partitions as usize)
            .sum();
        let mut waited = 0;
        while waited < SETUP_LIMIT_MS {
            madsim::time::sleep(Duration::from_millis(50)).await;
            waited += 50;
            if self.ready_partitions() >= expected {
                return;
            }
        }
        self.setup_failed = true;
        self.violations.push(Violation {
            invariant: Invariant::Liveness,
            cluster: None,
            topic_partition: None,
            detail: format!("set-up: topics not ready after {SETUP_LIMIT_MS} ms"),
            time_ms: self.now_ms(),
        });
    }

    fn ready_partitions(&self) -> usize {
        let mut ready = 0;
        for node in self.nodes.values() {
            let slot = lock(&node.slot);
            if let Some(NodeState::Controller(controller)) = &slot.state {
                ready += controller
                    .image()
                    .all_partitions()
                    .filter(|(_, record)| {
                        record.leader.is_some() && record.isr.len() == record.replicas.len()
                    })
                    .count();
            }
        }
        ready
    }

    async fn fault_phase(&mut self, scenario: &Scenario, plan: &FaultPlan) {
        if !self.violations.is_empty() {
            return;
        }
        let start = self.now_ms();
        let mut pending: Vec<(u64, bool, PlannedFault)> = plan
            .faults
            .iter()
            .flat_map(|fault| {
                // A clock skew has no end of its own: it is lifted with the fault phase.
                let ends = !matches!(fault.action, FaultAction::ClockSkew { .. });
                [
                    Some((fault.at_ms, true, fault.clone())),
                    ends.then(|| (fault.at_ms + fault.duration_ms, false, fault.clone())),
                ]
                .into_iter()
                .flatten()
            })
            .collect();
        pending.sort_by_key(|(at, starting, _)| (*at, *starting));
        pending.reverse();
        let mut active: Vec<(PlannedFault, Vec<NodeId>)> = Vec::new();
        while (self.now_ms() - start) < scenario.duration_ms as i64 {
            madsim::time::sleep(Duration::from_millis(CHECK_INTERVAL_MS)).await;
            let elapsed = (self.now_ms() - start) as u64;
            while pending.last().is_some_and(|(at, _, _)| *at <= elapsed) {
                let (_, starting, fault) = pending.pop().expect("checked above");
                if starting {
                    self.check_step();
                    let nodes = self.start_fault(&fault);
                    active.push((fault, nodes));
                } else if let Some(index) = active.iter().position(|(f, _)| *f == fault) {
                    let (fault, nodes) = active.remove(index);
                    self.end_fault(&fault, &nodes);
                }
            }
            self.check_step();
            if !self.violations.is_empty() {
                return;
            }
        }
        for (fault, nodes) in active {
            self.end_fault(&fault, &nodes);
        }
    }

    async fn heal_phase(&mut self, scenario: &Scenario) {
        self.heal_everything();
        let now = self.now_ms();
        self.checkers.heal_started(now);
        *lock(&self.shared.load_enabled) = false;
        // Liveness tests something only if the system still has to converge.
        if !self.liveness().is_empty() {
            self.checkers.precondition(Invariant::Liveness);
        }
        let start = self.now_ms();
        while (self.now_ms() - start) < scenario.heal_ms as i64 {
            madsim::time::sleep(Duration::from_millis(100)).await;
            self.check_step();
            if !self.violations.is_empty() {
                return;
            }
            if self.liveness().is_empty() {
                return;
            }
        }
    }

    fn heal_everything(&mut self) {
        let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
        lock(&self.shared.network).heal();
        // A skewed clock stops drifting but keeps its reading: a node's clock never steps
        // back (see `world`).
        self.shared.stop_clock_drift();
        self.say(format_args!(
            "heal phase starts: every fault lifted (skewed clocks keep their reading), load off"
        ));
        for id in ids {
            let node = self.nodes.get_mut(&id).expect("listed");
            let resumed = node.paused;
            if node.paused {
                Handle::current().resume(node.handle.id());
                node.paused = false;
            }
            if node.down {
                Handle::current().restart(node.handle.id());
                node.down = false;
            }
            if resumed {
                self.say_about(id, format_args!("resumed"));
            }
        }
        self.shared.trace(format_args!("heal"));
    }

    fn resolve(&self, targets: &[Target]) -> Vec<NodeId> {
        targets
            .iter()
            .filter_map(|target| self.resolve_one(target))
            .collect()
    }

    fn resolve_one(&self, target: &Target) -> Option<NodeId> {
        match target {
            Target::Node(name) => self
                .nodes
                .keys()
                .find(|id| id.to_string() == *name)
                .copied(),
            Target::Leader(cluster, topic, partition) => {
                self.partition_broker(cluster, topic, *partition, |record| record.leader)
            }
            Target::Follower(cluster, topic, partition) => {
                self.partition_broker(cluster, topic, *partition, |record| {
                    let leader = record.leader;
                    record.replicas.iter().copied().find(|r| Some(*r) != leader)
                })
            }
            Target::Replica(cluster, topic, partition, position) => {
                self.partition_broker(cluster, topic, *partition, |record| {
                    record.replicas.get(position.checked_sub(1)?).copied()
                })
            }
        }
    }

    /// The broker `pick` chooses from a partition's record in its cluster's controller image
    /// now (none while the controller is down or the partition unknown).
    fn partition_broker(
        &self,
        cluster: &str,
        topic: &str,
        partition: i32,
        pick: impl Fn(&mirrorsim::metadata::PartitionRecord) -> Option<BrokerId>,
    ) -> Option<NodeId> {
        let index = ClusterIndex(crate::scenario::cluster_index(cluster)? as u8);
        let slot = lock(&self.nodes.get(&NodeId::Controller(index))?.slot);
        let Some(NodeState::Controller(controller)) = &slot.state else {
            return None;
        };
        let record = controller
            .image()
            .partition(&TopicPartition::new(topic.to_owned(), partition))?;
        Some(NodeId::Broker(index, pick(record)?))
    }

    /// Applies a fault; returns the nodes it resolved to. A replay shows the fault, then what
    /// it did to each node (in that node's span).
    fn start_fault(&mut self, fault: &PlannedFault) -> Vec<NodeId> {
        self.shared.trace(format_args!("fault start {fault}"));
        self.say(format_args!("fault start {fault}"));
        // One mark per fault kind started, for the soak's coverage report.
        self.checkers
            .mark(&format!("fault:{}", fault.action.kind()));
        match &fault.action {
            FaultAction::Kill {
                nodes,
                lose_unflushed,
                tear,
            } => {
                let targets = self.resolve(nodes);
                for id in &targets {
                    self.kill(*id, *lose_unflushed, *tear);
                }
                targets
            }
            FaultAction::Pause { nodes } => {
                let targets = self.resolve(nodes);
                for id in &targets {
                    let node = self.nodes.get_mut(id).expect("resolved");
                    if !node.down && !node.paused {
                        Handle::current().pause(node.handle.id());
                        node.paused = true;
                        self.checkers.mark("node-paused");
                        self.say_about(*id, format_args!("paused"));
                    }
                }
                targets
            }
            FaultAction::Partition {
                side_a,
                side_b,
                asymmetric,
            } => {
                let a = self.resolve(side_a);
                let b = self.resolve(side_b);
                let mut network = lock(&self.shared.network);
                for x in &a {
                    for y in &b {
                        network.cut_link(*x, *y);
                        if !asymmetric {
                            network.cut_link(*y, *x);
                        }
                    }
                }
                drop(network);
                self.checkers.mark("network-partitioned");
                for x in &a {
                    if *asymmetric {
                        self.say_about(*x, format_args!("cannot send to {}", NodeList(&b)));
                    } else {
                        self.say_about(*x, format_args!("cut off from {}", NodeList(&b)));
                    }
                }
                if !asymmetric {
                    for y in &b {
                        self.say_about(*y, format_args!("cut off from {}", NodeList(&a)));
                    }
                }
                a.into_iter().chain(b).collect()
            }
            FaultAction::Isolate { nodes } => {
                let targets = self.resolve(nodes);
                for id in &targets {
                    lock(&self.shared.network).isolate(*id);
                    self.say_about(*id, format_args!("isolated from every node"));
                }
                self.checkers.mark("node-isolated");
                targets
            }
            FaultAction::PacketLoss(p) => {
                lock(&self.shared.network).faults.loss = *p;
                Vec::new()
            }
            FaultAction::LatencySpike(ms) => {
                lock(&self.shared.network).faults.extra_latency_ms = *ms;
                Vec::new()
            }
            FaultAction::Duplicate(p) => {
                lock(&self.shared.network).faults.duplicate = *p;
                Vec::new()
            }
            FaultAction::HoldBack {
                nodes,
                probability,
                hold_ms,
            } => {
                let targets = self.resolve(nodes);
                let mut network = lock(&self.shared.network);
                let net = &mut network.faults;
                if nodes.is_empty() {
                    net.hold_back = *probability;
                    net.hold_back_ms = *hold_ms;
                } else {
                    for id in &targets {
                        net.hold_back_from.insert(*id, (*probability, *hold_ms));
                    }
                }
                targets
            }
            FaultAction::ClockSkew {
                nodes,
                offset_ms,
                drift_ppm,
            } => {
                let targets = self.resolve(nodes);
                for id in &targets {
                    self.shared.jump_clock(*id, *offset_ms, *drift_ppm);
                    self.say_about(
                        *id,
                        format_args!(
                            "clock jumps forward by {offset_ms} ms, drift {drift_ppm} ppm"
                        ),
                    );
                }
                targets
            }
        }
    }

    fn end_fault(&mut self, fault: &PlannedFault, nodes: &[NodeId]) {
        self.shared.trace(format_args!("fault end {fault}"));
        self.say(format_args!("fault end {fault}"));
        match &fault.action {
            FaultAction::Kill { .. } => {
                for id in nodes {
                    let node = self.nodes.get_mut(id).expect("resolved");
                    if node.down {
                        Handle::current().restart(node.handle.id());
                        node.down = false;
                        self.checkers.mark("node-restarted");
                    }
                }
            }
            FaultAction::Pause { .. } => {
                for id in nodes {
                    let node = self.nodes.get_mut(id).expect("resolved");
                    if node.paused {
                        Handle::current().resume(node.handle.id());
                        node.paused = false;
                        self.say_about(*id, format_args!("resumed"));
                    }
                }
            }
            FaultAction::Partition { .. } => {
                for x in nodes {
                    for y in nodes {
                        lock(&self.shared.network).mend_link(*x, *y);
                    }
                    self.say_about(*x, format_args!("reconnected"));
                }
            }
            FaultAction::Isolate { .. } => {
                for id in nodes {
                    lock(&self.shared.network).reconnect(*id);
                    self.say_about(*id, format_args!("reconnected"));
                }
            }
            FaultAction::PacketLoss(_) => lock(&self.shared.network).faults.loss = 0.0,
            FaultAction::LatencySpike(_) => lock(&self.shared.network).faults.extra_latency_ms = 0,
            FaultAction::Duplicate(_) => lock(&self.shared.network).faults.duplicate = 0.0,
            FaultAction::HoldBack { .. } => {
                let mut network = lock(&self.shared.network);
                let net = &mut network.faults;
                net.hold_back = 0.0;
                for id in nodes {
                    net.hold_back_from.remove(id);
                }
            }
            FaultAction::ClockSkew { .. } => {}
        }
    }

    /// Kills a node (always before any restart, madsim-notes §3); a power loss also crashes
    /// its disk, losing or tearing the unflushed tail.
    fn kill(&mut self, id: NodeId, lose_unflushed: bool, tear: bool) {
        let node = self.nodes.get_mut(&id).expect("resolved");
        if node.down {
            return;
        }
        if node.paused {
            Handle::current().resume(node.handle.id());
            node.paused = false;
        }
        Handle::current().kill(node.handle.id());
        lock(&self.shared.network).stop(id);
        node.down = true;
        let incarnation = {
            let mut slot = lock(&node.slot);
            slot.state = None;
            slot.incarnation
        };
        lock(&self.shared.history)
            .dead_incarnations
            .insert((id, incarnation));
        if lose_unflushed {
            use madsim::rand::Rng;
            let mut rng = madsim::rand::thread_rng();
            node.storage.crash(|_, _, tail| {
                if tail == 0 || !tear {
                    return TailFate::LOST;
                }
                // A torn write keeps part of the unflushed tail and leaves garbage where the
                // write stopped (the last kept byte). Garbage never lands inside an earlier,
                // completely written batch: bit rot in fields the CRC does not cover (the leader
                // epoch) is outside the fault model, as it is outside Kafka's.
                let kept = rng.gen_range(0..tail);
                let corruption = (kept > 0).then(|| (kept - 1, 1u8 << rng.gen_range(0..8)));
                TailFate {
                    kept_bytes: kept,
                    corruption,
                }
            });
            self.checkers
                .mark(if tear { "disk-torn" } else { "unflushed-lost" });
        }
        self.checkers.mark("node-killed");
        let how = match (lose_unflushed, tear) {
            (false, _) => "process crash, disk intact",
            (true, false) => "power loss: unflushed writes lost",
            (true, true) => "power loss: unflushed tail torn",
        };
        self.say_about(id, format_args!("killed ({how})"));
    }

    /// A `world` line of a replay's trace; nothing unless the run is traced.
    fn say(&self, line: std::fmt::Arguments<'_>) {
        if self.shared.print_trace {
            tracing::info!("{line}");
        }
    }

    /// A replay line about one node, in a span of that node (so a node filter keeps it).
    fn say_about(&self, id: NodeId, line: std::fmt::Arguments<'_>) {
        if self.shared.print_trace {
            let incarnation = lock(&self.nodes[&id].slot).incarnation;
            crate::world::trace::node_span(id, incarnation).in_scope(|| tracing::info!("{line}"));
        }
    }

    /// The verdict and every violation as the trace's last lines.
    fn say_verdict(&self, seed: u64, verdict: Verdict) {
        self.say(format_args!(
            "verdict {verdict:?}: {} violation(s)",
            self.violations.len()
        ));
        if self.shared.print_trace {
            for violation in &self.violations {
                tracing::warn!("{}", violation.report_line(seed));
            }
        }
    }

    /// Lends the checkers read-only views of every live node and the history; with
    /// `drain_events`, each broker's events since the last step are taken out of it first and
    /// handed over in its view (see `checks::observer`).
    fn with_views<T>(
        &mut self,
        drain_events: bool,
        check: impl FnOnce(&mut Checkers, &[ControllerView<'_>], &[BrokerView<'_>], &History) -> T,
    ) -> T {
        let mut guards: Vec<(NodeId, std::sync::MutexGuard<'_, Slot>)> = self
            .nodes
            .values()
            .map(|node| (node.id, lock(&node.slot)))
            .collect();
        let history = lock(&self.shared.history);
        // Events are drained first (that needs each broker mutably); the views then borrow
        // every node at once, a broker's view its cluster's controller too.
        let mut drained: Vec<Vec<BrokerEvent>> = guards
            .iter_mut()
            .map(|(_, guard)| match guard.state.as_mut() {
                Some(NodeState::Broker(broker)) if drain_events => broker.take_events(),
                _ => Vec::new(),
            })
            .collect();
        let mut controllers = Vec::new();
        for (id, guard) in &guards {
            if let Some(NodeState::Controller(controller)) = guard.state.as_ref() {
                controllers.push(ControllerView {
                    cluster: id.cluster(),
                    controller,
                });
            }
        }
        let mut brokers = Vec::new();
        for ((id, guard), events) in guards.iter().zip(drained.iter_mut()) {
            if let Some(NodeState::Broker(broker)) = guard.state.as_ref() {
                let controller = controllers
                    .iter()
                    .find(|view| view.cluster == id.cluster())
                    .map(|view| view.controller);
                brokers.push(BrokerView::new(
                    id.cluster(),
                    guard.incarnation,
                    broker,
                    std::mem::take(events),
                    controller,
                ));
            }
        }
        check(&mut self.checkers, &controllers, &brokers, &history)
    }

    fn check_step(&mut self) {
        let time_ms = self.now_ms();
        let found = self.with_views(true, |checkers, controllers, brokers, history| {
            checkers.run_step(&Step {
                time_ms,
                controllers,
                brokers,
                history,
            })
        });
        self.violations.extend(found);
    }

    fn check_deep(&mut self) {
        let now = self.now_ms();
        let found = self.with_views(false, |checkers, controllers, brokers, _| {
            checkers.check_logs_deep(now, controllers, brokers)
        });
        self.violations.extend(found);
    }

    fn liveness(&mut self) -> Vec<Violation> {
        let now = self.now_ms();
        self.with_views(false, |checkers, controllers, brokers, history| {
            checkers.check_liveness(now, controllers, brokers, history)
        })
    }

    /// After a full run: the deep and history checks (safety) unless a step check already
    /// failed, then liveness if safety held.
    fn final_verdict(&mut self, now: i64) -> Verdict {
        if self.violations.is_empty() {
            self.check_deep();
            let found = self.with_views(false, |checkers, controllers, brokers, history| {
                checkers.check_history(now, controllers, brokers, history)
            });
            self.violations.extend(found);
        }
        if !self.violations.is_empty() {
            return Verdict::Safety;
        }
        let liveness = self.liveness();
        if liveness.is_empty() {
            return Verdict::Pass;
        }
        self.violations.extend(liveness);
        Verdict::Liveness
    }

    fn finish(mut self, seed: u64, plan: FaultPlan) -> RunReport {
        let now = self.now_ms();
        let verdict = if self.setup_failed {
            // No load ran, so the history has nothing to check: a liveness failure.
            Verdict::Liveness
        } else {
            self.final_verdict(now)
        };
        self.say_verdict(seed, verdict);
        let (records, counted, admin) = {
            let history = lock(&self.shared.history);
            let sends = history.sends.values();
            let acked = sends.clone().filter(|s| s.acked_offset.is_some()).count();
            let failed = sends.filter(|s| s.failed.is_some()).count();
            (
                (history.sends.len(), acked, failed),
                // Client outcomes counted in the history, as coverage marks.
                [
                    ("producer-epoch-bumped", history.producer_epoch_bumps),
                    (
                        "txn-producer-fenced-by-timeout",
                        history.transactional_fenced,
                    ),
                    (
                        "consumer-position-dropped-with-topic",
                        history.consumer_positions_dropped_with_topic,
                    ),
                    // A consumer's position went back: validation found the log truncated
                    // below it (KIP-320), or a reset placed it lower.
                    (
                        "consumer-position-moved-back",
                        history.position_resets.len() as u64,
                    ),
                    (
                        "producer-sequences-restarted-with-topic",
                        history.producer_sequences_restarted_with_topic,
                    ),
                ],
                history.admin_ops.clone(),
            )
        };
        self.checkers.take_preconditions();
        for (mark, count) in admin_marks(&admin) {
            *self.checkers.marks.entry(mark.into()).or_default() += count;
        }
        for (mark, count) in counted.into_iter().filter(|(_, count)| *count > 0) {
            *self.checkers.marks.entry(mark.into()).or_default() += count;
        }
        let report = RunReport {
            seed,
            plan,
            verdict,
            violations: self.violations.clone(),
            trace_hash: self.shared.trace_hash(),
            simulated_ms: now,
            net: *lock(&self.shared.stats),
            records,
            marks: self.checkers.marks.clone(),
            marks_first_ms: {
                let start = lock(&self.shared.fault_phase_start_ms).unwrap_or(0);
                let first = &self.checkers.marks_first_ms;
                first
                    .iter()
                    .map(|(m, at)| (m.clone(), at - start))
                    .collect()
            },
            admin,
        };
        // Kill every node before leaving the runtime so their tasks and memory go (madsim-notes §4).
        for node in self.nodes.values() {
            Handle::current().kill(node.handle.id());
            lock(&node.slot).state = None;
        }
        report
    }
}

/// Nodes as `a-broker-1,a-broker-2` in a replay line (formatted only if a trace prints it).
struct NodeList<'a>(&'a [NodeId]);

impl std::fmt::Display for NodeList<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (index, node) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{node}")?;
        }
        Ok(())
    }
}

/// Coverage marks of the admin timeline: operations fully accepted, refused (by the request
/// or for a topic) and retried; an add_topics refused for a topic whose stop in the mirror
/// that removed it had not finished (`add-refused-until-stopped`).
fn admin_marks(admin: &[AdminOpRecord]) -> BTreeMap<&'static str, u64> {
    let mut marks = BTreeMap::new();
    for record in admin {
        let Some(outcome) = &record.outcome else {
            continue;
        };
        let add = matches!(
            record.op.action,
            AdminAction::AlterTopics {
                operation: MirrorTopicOperation::Add,
                ..
            }
        );
        if add
            && outcome
                .topics
                .iter()
                .any(|(_, e)| *e == ErrorCode::MirrorTopicNotStopped)
        {
            *marks.entry("add-refused-until-stopped").or_default() += 1;
        }
        let accepted = outcome.error.is_none() && outcome.topics.iter().all(|(_, e)| e.is_none());
        *marks
            .entry(if accepted {
                "admin-op-accepted"
            } else {
                "admin-op-refused"
            })
            .or_default() += 1;
        if outcome.attempts > 1 {
            *marks.entry("admin-op-retried").or_default() += 1;
        }
        if outcome.timed_out_answers > 0 {
            *marks.entry("admin-answer-timed-out").or_default() += 1;
        }
    }
    marks
}
