//! `mirrorsim replay`: one run shown as a timeline a person can read (design.md §8).
//!
//! Contract:
//! - **Lines.** Every line is `<time> <node> <event>`. The time is the simulation's clock
//!   (madsim's, seconds since the run started, to the microsecond: `   12.345678s`), never wall
//!   time. The node is the simulated node whose task emitted the line, with its incarnation
//!   (`b-broker-2#2`: the second start of that process), or `world` for the supervisor: phases,
//!   faults, the admin timeline, and at the end the verdict and every violation.
//! - **Spans.** Each node's driver runs inside a [`crate::world::trace::node_span`] (set where the world starts the
//!   node), so a `tracing` event emitted anywhere while a node handles an input, including in
//!   the model's state machines, is attributed to that node. Supervisor lines about one node
//!   (killed, paused, resumed) are emitted in a span of that node too.
//! - **Levels** ([`TraceLevel`]). `timeline` keeps INFO and above: node starts, kills, pauses,
//!   phases, faults, admin operations, the metadata records controllers write (leader and ISR
//!   changes, fencing, topics, configs), broker state changes (leadership, truncations, mirror
//!   transitions, deleted records, forwarded topic admin, offset syncs, coordinator loads) and
//!   the verdict. `messages` (the default) adds DEBUG: every delivered message with a one-line
//!   summary of its fields ([`mirrorsim::protocol::Message::summary`]), messages the injected
//!   faults drop, duplicate or hold back, and every append.
//! - **Node filter.** With nodes given, only lines of those nodes' spans and `world` lines are
//!   kept; names the run never started are reported back ([`Replay::unmatched_nodes`]).
//! - **Only events of this project** (targets `mirrorsim…`) are shown; madsim's own are not.
//! - **Determinism.** The trace only observes: it draws no random numbers, awaits nothing and
//!   changes no scheduling, and the trace hash's inputs are the same with and without it, so
//!   `replay` and `run` of a seed give the same `trace_hash`. The world emits trace events only
//!   when [`crate::world::Shared::print_trace`] is set (replay), so `run` and soaks pay one flag
//!   test per event and never format anything.
//!
//! The subscriber is installed for the calling thread only (the simulation runs on it), so
//! replays and plain runs on other threads do not see each other's lines. It is
//! `tracing-subscriber`'s registry, whose maps use a fixed hasher: it never touches std's
//! `RandomState`, which madsim seeds from the run's seed (madsim-notes §5).

use std::collections::BTreeSet;
use std::fmt::{self, Write as _};
use std::io::Write;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;
use tracing_subscriber::registry::LookupSpan;

use crate::commands::runner::{run_keeping_disks, BrokerDisks, RunOptions, RunReport};
use crate::scenario::Scenario;
use crate::world::lock;
use crate::world::trace::NODE_SPAN;

/// Width of the node column, enough for `a-consumer-12#3`.
const NODE_COLUMN: usize = 15;
/// The label of lines emitted outside every node (the supervisor).
const WORLD: &str = "world";

/// How much a replay shows; see the module doc.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TraceLevel {
    /// State changes, faults, admin operations and the verdict (INFO and above).
    Timeline,
    /// The timeline plus every message (DEBUG and above).
    #[default]
    Messages,
}

impl TraceLevel {
    /// Parses `timeline` or `messages`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "timeline" => Some(Self::Timeline),
            "messages" => Some(Self::Messages),
            _ => None,
        }
    }

    fn max_level(self) -> Level {
        match self {
            Self::Timeline => Level::INFO,
            Self::Messages => Level::TRACE,
        }
    }
}

/// What a replay shows.
#[derive(Debug, Clone, Default)]
pub struct TraceOptions {
    /// How much.
    pub level: TraceLevel,
    /// Only these nodes' lines (and `world` lines); empty for every node.
    pub nodes: Vec<String>,
}

/// What a replay found.
#[derive(Debug)]
pub struct Replay {
    /// The run's report, exactly as `run` gives it for the same seed.
    pub report: RunReport,
    /// Names given in [`TraceOptions::nodes`] that no node of the run has.
    pub unmatched_nodes: Vec<String>,
    /// Writing the trace failed (e.g. its reader, `| head`, went away); the rest was dropped.
    pub output_failed: bool,
    /// Every broker's storage as the run left it (for `--logs`).
    pub disks: BrokerDisks,
}

/// Runs `scenario` like [`run`] and writes its trace to `out` as the run goes.
pub fn replay(
    scenario: &Scenario,
    options: &RunOptions,
    trace: &TraceOptions,
    out: Box<dyn Write + Send>,
) -> Replay {
    let output = Arc::new(Mutex::new(Output {
        writer: out,
        failed: false,
    }));
    let seen = Arc::new(Mutex::new(BTreeSet::new()));
    let layer = TraceLayer {
        max_level: trace.level.max_level(),
        nodes: trace.nodes.iter().cloned().collect(),
        output: Arc::clone(&output),
        seen: Arc::clone(&seen),
    };
    let subscriber = tracing_subscriber::registry().with(layer);
    let options = RunOptions {
        trace: true,
        ..options.clone()
    };
    let (report, disks) =
        tracing::subscriber::with_default(subscriber, || run_keeping_disks(scenario, &options));
    let output_failed = {
        let mut output = lock(&output);
        output.flush();
        output.failed
    };
    let seen = lock(&seen);
    let unmatched_nodes = trace
        .nodes
        .iter()
        .filter(|name| !seen.contains(*name))
        .cloned()
        .collect();
    Replay {
        report,
        unmatched_nodes,
        output_failed,
        disks,
    }
}

/// The trace's writer; after a failed write (a closed pipe) the rest is dropped quietly so the
/// run still finishes and reports.
struct Output {
    writer: Box<dyn Write + Send>,
    failed: bool,
}

impl Output {
    fn line(&mut self, line: &str) {
        if !self.failed && writeln!(self.writer, "{line}").is_err() {
            self.failed = true;
        }
    }

    fn flush(&mut self) {
        if !self.failed && self.writer.flush().is_err() {
            self.failed = true;
        }
    }
}

/// The `tracing` layer that prints replay lines; see the module doc.
struct TraceLayer {
    max_level: Level,
    nodes: BTreeSet<String>,
    output: Arc<Mutex<Output>>,
    /// Every node name a node span was opened for.
    seen: Arc<Mutex<BTreeSet<String>>>,
}

/// Stored with a node span: the node's name and the label lines show.
#[derive(Clone)]
struct NodeLabel {
    node: String,
    label: String,
}

impl<S> Layer<S> for TraceLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn enabled(&self, metadata: &Metadata<'_>, _: Context<'_, S>) -> bool {
        // madsim's own spans and events (tasks, node kills) are not part of the timeline, and
        // disabling them here also spares creating a span per spawned task.
        metadata.target().starts_with("mirrorsim")
            && (metadata.is_span() || *metadata.level() <= self.max_level)
    }

    fn on_new_span(&self, attributes: &Attributes<'_>, id: &Id, context: Context<'_, S>) {
        if attributes.metadata().name() != NODE_SPAN {
            return;
        }
        let mut fields = SpanFields::default();
        attributes.record(&mut fields);
        let Some(node) = fields.node else {
            return;
        };
        let label = match fields.incarnation {
            Some(incarnation) => format!("{node}#{incarnation}"),
            None => node.clone(),
        };
        lock(&self.seen).insert(node.clone());
        if let Some(span) = context.span(id) {
            span.extensions_mut().insert(NodeLabel { node, label });
        }
    }

    fn on_event(&self, event: &Event<'_>, context: Context<'_, S>) {
        // The innermost node span the event was emitted in; none for the supervisor.
        let node = context.event_scope(event).and_then(|scope| {
            scope
                .into_iter()
                .find_map(|span| span.extensions().get::<NodeLabel>().cloned())
        });
        let filtered_out =
            |node: &NodeLabel| !self.nodes.is_empty() && !self.nodes.contains(&node.node);
        if node.as_ref().is_some_and(filtered_out) {
            return;
        }
        let label = node.as_ref().map_or(WORLD, |node| node.label.as_str());
        let mut line = String::with_capacity(160);
        let _ = write!(line, "{} {label:<NODE_COLUMN$} ", SimTime::now());
        let mut fields = EventFields::default();
        event.record(&mut fields);
        line.push_str(&fields.message);
        line.push_str(&fields.rest);
        lock(&self.output).line(&line);
    }
}

/// The simulated time now, as `   12.345678s`.
struct SimTime(Option<std::time::Duration>);

impl SimTime {
    /// madsim's clock; `None` outside a runtime (no line is emitted there, but a line must
    /// never read wall time).
    fn now() -> Self {
        Self(madsim::time::TimeHandle::try_current().map(|time| time.elapsed()))
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(elapsed) => write!(
                f,
                "{:>5}.{:06}s",
                elapsed.as_secs(),
                elapsed.subsec_micros()
            ),
            None => write!(f, "{:>12}", "-"),
        }
    }
}

/// The fields of a node span.
#[derive(Default)]
struct SpanFields {
    node: Option<String>,
    incarnation: Option<u64>,
}

impl Visit for SpanFields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "incarnation" {
            self.incarnation = Some(value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "node" {
            self.node = Some(format!("{value:?}"));
        }
    }
}

/// An event's message, then its other fields as ` name=value`.
#[derive(Default)]
struct EventFields {
    message: String,
    rest: String,
}

impl Visit for EventFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.rest, " {}={value}", field.name());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.rest, " {}={value:?}", field.name());
        }
    }
}
