//! `[faults]`: swarm mode and the scripted faults, one table type per fault kind.
//!
//! Contract: a scripted fault is written as a table of its kind's array (`[[faults.kill]]`,
//! `[[faults.packet_loss]]`, …) whose type holds exactly the keys that kind uses, named for
//! what they mean (a `packet_loss` has a `probability`, a `latency_spike` its `extra_ms`), so
//! serde refuses a key of another kind as unknown and a missing required key at its table. In
//! memory the faults of every kind form one list, [`FaultSpec::scripted`], in file order
//! (faults starting at the same time start in that order). Kinds keep the names coverage marks
//! (`fault:KIND`) and reports use ([`FAULT_KINDS`]). Ranges and cross-references (node names,
//! delays within the heal phase) are checked by `validate`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use toml::Spanned;

use super::entries::{in_file_order, positioned, serialize_entry, tables_only};
use super::is_false;

/// Every fault kind name, as scenario files and swarm output spell it, in the order swarm mode
/// draws their rates.
pub const FAULT_KINDS: &[&str] = &[
    "kill",
    "pause",
    "partition",
    "isolate",
    "packet_loss",
    "latency_spike",
    "duplicate",
    "hold_back",
    "clock_skew",
    "disk_tear",
];

/// How long a scripted fault lasts when the file names no `duration_ms`.
pub const DEFAULT_FAULT_DURATION_MS: u64 = 2_000;

/// A scripted `hold_back`'s probability per message when the file names none.
pub const DEFAULT_HOLD_BACK_PROBABILITY: f64 = 0.05;

/// How long after a broker fault ends the fault plans keep the next one away from that
/// cluster, for the broker to rejoin the ISR (swarm mode in `crate::faults`, the generator's
/// aimed episodes in [`crate::scenario::generate`]).
pub const RECOVERY_MARGIN_MS: u64 = 3_000;

/// Faults of the fault phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FaultSpec {
    /// Let the seed choose fault kinds and rates (swarm testing).
    #[serde(skip_serializing_if = "is_false")]
    pub swarm: bool,
    /// Fault kinds swarm mode may choose from (default: all).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub swarm_kinds: Vec<Spanned<String>>,
    /// How many brokers of a cluster swarm mode may impair at once, 1 or 2 (`None`: 1). With
    /// 1 no power loss meets a cluster-wide ISR-shrinking fault either (the model before
    /// KIP-966 loses acknowledged writes there); with 2 both go, which KIP-966's eligible
    /// leader replicas survive (`crate::faults`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swarm_impaired_brokers: Option<Spanned<u64>>,
    /// Faults at fixed times, in file order. Not serialised with the settings above:
    /// `Scenario::to_toml` writes them one table each, to keep their order across kinds.
    #[serde(skip_serializing)]
    pub scripted: Vec<ScriptedFault>,
}

impl FaultSpec {
    /// No swarm setting (what the `[faults]` table itself would hold).
    pub(super) fn has_no_settings(&self) -> bool {
        !self.swarm && self.swarm_kinds.is_empty() && self.swarm_impaired_brokers.is_none()
    }

    /// How many brokers of a cluster swarm mode may impair at once (see
    /// [`FaultSpec::swarm_impaired_brokers`]; validated to 1 or 2).
    pub fn impaired_brokers_max(&self) -> usize {
        self.swarm_impaired_brokers
            .as_ref()
            .map_or(1, |max| usize::try_from(*max.get_ref()).unwrap_or(1))
    }
}

impl<'de> Deserialize<'de> for FaultSpec {
    /// Reads the `[faults]` table: its settings and every kind's array, merged in file order.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let tables: FaultTables = tables_only(
            deserializer,
            "a table of swarm settings and scripted faults by kind, e.g. `[[faults.kill]]`",
        )?;
        Ok(tables.into())
    }
}

/// The `[faults]` table as the file holds it: one array of tables per kind.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultTables {
    #[serde(default)]
    swarm: bool,
    #[serde(default)]
    swarm_kinds: Vec<Spanned<String>>,
    #[serde(default)]
    swarm_impaired_brokers: Option<Spanned<u64>>,
    #[serde(default)]
    kill: Vec<Spanned<KillFault>>,
    #[serde(default)]
    pause: Vec<Spanned<NodeFault>>,
    #[serde(default)]
    partition: Vec<Spanned<PartitionFault>>,
    #[serde(default)]
    isolate: Vec<Spanned<NodeFault>>,
    #[serde(default)]
    packet_loss: Vec<Spanned<ProbabilityFault>>,
    #[serde(default)]
    latency_spike: Vec<Spanned<LatencySpikeFault>>,
    #[serde(default)]
    duplicate: Vec<Spanned<ProbabilityFault>>,
    #[serde(default)]
    hold_back: Vec<Spanned<HoldBackFault>>,
    #[serde(default)]
    clock_skew: Vec<Spanned<ClockSkewFault>>,
    #[serde(default)]
    disk_tear: Vec<Spanned<NodeFault>>,
}

impl From<FaultTables> for FaultSpec {
    fn from(tables: FaultTables) -> Self {
        let scripted = in_file_order([
            positioned(tables.kill, ScriptedFault::Kill),
            positioned(tables.pause, ScriptedFault::Pause),
            positioned(tables.partition, ScriptedFault::Partition),
            positioned(tables.isolate, ScriptedFault::Isolate),
            positioned(tables.packet_loss, ScriptedFault::PacketLoss),
            positioned(tables.latency_spike, ScriptedFault::LatencySpike),
            positioned(tables.duplicate, ScriptedFault::Duplicate),
            positioned(tables.hold_back, ScriptedFault::HoldBack),
            positioned(tables.clock_skew, ScriptedFault::ClockSkew),
            positioned(tables.disk_tear, ScriptedFault::DiskTear),
        ]);
        Self {
            swarm: tables.swarm,
            swarm_kinds: tables.swarm_kinds,
            swarm_impaired_brokers: tables.swarm_impaired_brokers,
            scripted,
        }
    }
}

/// One scripted fault: its kind and that kind's table. Serialises as the file holds it,
/// `{KIND: [TABLE]}`.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptedFault {
    /// `kill`: the nodes crash (a power loss with `lose_unflushed`) and restart after
    /// `duration_ms`.
    Kill(KillFault),
    /// `disk_tear`: a power loss of the nodes that loses their disks' unflushed tails and
    /// tears what survives, then a restart after `duration_ms`.
    DiskTear(NodeFault),
    /// `pause`: the nodes stall (a GC or VM pause).
    Pause(NodeFault),
    /// `partition`: `nodes` cut from `other`.
    Partition(PartitionFault),
    /// `isolate`: the nodes cut from everyone.
    Isolate(NodeFault),
    /// `packet_loss`: every link drops messages.
    PacketLoss(ProbabilityFault),
    /// `latency_spike`: every message takes longer.
    LatencySpike(LatencySpikeFault),
    /// `duplicate`: every link delivers messages twice.
    Duplicate(ProbabilityFault),
    /// `hold_back`: messages held back, everything behind them on their link waiting too.
    HoldBack(HoldBackFault),
    /// `clock_skew`: the nodes' clocks jump forward and drift, until the heal phase.
    ClockSkew(ClockSkewFault),
}

impl ScriptedFault {
    /// The kind, one of [`FAULT_KINDS`] (the name of its table in the file).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Kill(_) => "kill",
            Self::DiskTear(_) => "disk_tear",
            Self::Pause(_) => "pause",
            Self::Partition(_) => "partition",
            Self::Isolate(_) => "isolate",
            Self::PacketLoss(_) => "packet_loss",
            Self::LatencySpike(_) => "latency_spike",
            Self::Duplicate(_) => "duplicate",
            Self::HoldBack(_) => "hold_back",
            Self::ClockSkew(_) => "clock_skew",
        }
    }

    /// When it starts, in ms from the start of the fault phase.
    pub fn at_ms(&self) -> u64 {
        match self {
            Self::Kill(KillFault { at_ms, .. })
            | Self::DiskTear(NodeFault { at_ms, .. })
            | Self::Pause(NodeFault { at_ms, .. })
            | Self::Partition(PartitionFault { at_ms, .. })
            | Self::Isolate(NodeFault { at_ms, .. })
            | Self::PacketLoss(ProbabilityFault { at_ms, .. })
            | Self::LatencySpike(LatencySpikeFault { at_ms, .. })
            | Self::Duplicate(ProbabilityFault { at_ms, .. })
            | Self::HoldBack(HoldBackFault { at_ms, .. })
            | Self::ClockSkew(ClockSkewFault { at_ms, .. }) => *at_ms,
        }
    }

    /// Its start, to move it (`mirrorsim shrink`).
    pub fn at_ms_mut(&mut self) -> &mut u64 {
        match self {
            Self::Kill(KillFault { at_ms, .. })
            | Self::DiskTear(NodeFault { at_ms, .. })
            | Self::Pause(NodeFault { at_ms, .. })
            | Self::Partition(PartitionFault { at_ms, .. })
            | Self::Isolate(NodeFault { at_ms, .. })
            | Self::PacketLoss(ProbabilityFault { at_ms, .. })
            | Self::LatencySpike(LatencySpikeFault { at_ms, .. })
            | Self::Duplicate(ProbabilityFault { at_ms, .. })
            | Self::HoldBack(HoldBackFault { at_ms, .. })
            | Self::ClockSkew(ClockSkewFault { at_ms, .. }) => at_ms,
        }
    }

    /// Its `duration_ms` key as the file gives it (`None`: left out); `None` for a clock skew,
    /// which takes none (it lasts until the heal phase).
    pub fn duration_ms_mut(&mut self) -> Option<&mut Option<u64>> {
        match self {
            Self::Kill(KillFault { duration_ms, .. })
            | Self::DiskTear(NodeFault { duration_ms, .. })
            | Self::Pause(NodeFault { duration_ms, .. })
            | Self::Partition(PartitionFault { duration_ms, .. })
            | Self::Isolate(NodeFault { duration_ms, .. })
            | Self::PacketLoss(ProbabilityFault { duration_ms, .. })
            | Self::LatencySpike(LatencySpikeFault { duration_ms, .. })
            | Self::Duplicate(ProbabilityFault { duration_ms, .. })
            | Self::HoldBack(HoldBackFault { duration_ms, .. }) => Some(duration_ms),
            Self::ClockSkew(_) => None,
        }
    }

    /// Its `duration_ms` key as the file gives it (`None`: left out, and always for a clock
    /// skew).
    pub fn given_duration_ms(&self) -> Option<u64> {
        match self {
            Self::Kill(KillFault { duration_ms, .. })
            | Self::DiskTear(NodeFault { duration_ms, .. })
            | Self::Pause(NodeFault { duration_ms, .. })
            | Self::Partition(PartitionFault { duration_ms, .. })
            | Self::Isolate(NodeFault { duration_ms, .. })
            | Self::PacketLoss(ProbabilityFault { duration_ms, .. })
            | Self::LatencySpike(LatencySpikeFault { duration_ms, .. })
            | Self::Duplicate(ProbabilityFault { duration_ms, .. })
            | Self::HoldBack(HoldBackFault { duration_ms, .. }) => *duration_ms,
            Self::ClockSkew(_) => None,
        }
    }

    /// How long it lasts: its `duration_ms`, else [`DEFAULT_FAULT_DURATION_MS`] (for a clock
    /// skew, the window its jump is given in the plan; the skew itself stays until the heal
    /// phase).
    pub fn duration_ms(&self) -> u64 {
        self.given_duration_ms()
            .unwrap_or(DEFAULT_FAULT_DURATION_MS)
    }

    /// Its targets (`nodes`; for a partition, the side whose messages to `other` are cut);
    /// empty for the kinds that hit every link, and for a `hold_back` of every node.
    pub fn nodes(&self) -> &[Spanned<String>] {
        match self {
            Self::Kill(KillFault { nodes, .. })
            | Self::DiskTear(NodeFault { nodes, .. })
            | Self::Pause(NodeFault { nodes, .. })
            | Self::Partition(PartitionFault { nodes, .. })
            | Self::Isolate(NodeFault { nodes, .. })
            | Self::HoldBack(HoldBackFault { nodes, .. })
            | Self::ClockSkew(ClockSkewFault { nodes, .. }) => nodes,
            Self::PacketLoss(_) | Self::LatencySpike(_) | Self::Duplicate(_) => &[],
        }
    }
}

impl Serialize for ScriptedFault {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let kind = self.kind();
        match self {
            Self::Kill(table) => serialize_entry(serializer, kind, table),
            Self::DiskTear(table) | Self::Pause(table) | Self::Isolate(table) => {
                serialize_entry(serializer, kind, table)
            }
            Self::Partition(table) => serialize_entry(serializer, kind, table),
            Self::PacketLoss(table) | Self::Duplicate(table) => {
                serialize_entry(serializer, kind, table)
            }
            Self::LatencySpike(table) => serialize_entry(serializer, kind, table),
            Self::HoldBack(table) => serialize_entry(serializer, kind, table),
            Self::ClockSkew(table) => serialize_entry(serializer, kind, table),
        }
    }
}

// The kinds' tables. Every kind but `clock_skew` takes an optional `duration_ms` (`None`:
// [`DEFAULT_FAULT_DURATION_MS`]); targets are node names as `validate` checks them
// (`a-broker-1`, `a-controller`, `a-producer-1`, `a-consumer-2`, `a-leader:TOPIC:P` for the
// leader of a partition when the fault starts, or `a-follower:TOPIC:P` for its first replica
// other than that leader).

/// `kill`: a crash of the nodes, restarted after `duration_ms`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KillFault {
    /// When, in ms from the start of the fault phase (before `duration_ms`).
    pub at_ms: u64,
    /// The nodes killed.
    pub nodes: Vec<Spanned<String>>,
    /// The downtime before the restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// A power loss: the unflushed tail of the nodes' disks is lost.
    #[serde(default, skip_serializing_if = "is_false")]
    pub lose_unflushed: bool,
}

/// `disk_tear`, `pause` or `isolate`: a fault of the nodes for a while.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NodeFault {
    /// When, in ms from the start of the fault phase (before `duration_ms`).
    pub at_ms: u64,
    /// The nodes.
    pub nodes: Vec<Spanned<String>>,
    /// How long it lasts (a disk tear: the downtime before the restart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// `partition`: `nodes` cut from `other`, both ways unless `asymmetric`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionFault {
    /// When, in ms from the start of the fault phase (before `duration_ms`).
    pub at_ms: u64,
    /// One side.
    pub nodes: Vec<Spanned<String>>,
    /// The other side.
    pub other: Vec<Spanned<String>>,
    /// How long it lasts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Only `nodes` → `other` is cut.
    #[serde(default, skip_serializing_if = "is_false")]
    pub asymmetric: bool,
}

/// `packet_loss` or `duplicate`: every link drops (or duplicates) each message with
/// `probability`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProbabilityFault {
    /// When, in ms from the start of the fault phase (before `duration_ms`).
    pub at_ms: u64,
    /// How long it lasts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The probability per message, in (0, 1].
    pub probability: f64,
}

/// `latency_spike`: every message takes `extra_ms` longer.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LatencySpikeFault {
    /// When, in ms from the start of the fault phase (before `duration_ms`).
    pub at_ms: u64,
    /// How long it lasts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The latency added to every message, in ms (1 to `heal_ms`).
    pub extra_ms: u64,
}

/// `hold_back`: each message of `nodes` (of every node when empty) is held back by `hold_ms`
/// with `probability`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HoldBackFault {
    /// When, in ms from the start of the fault phase (before `duration_ms`).
    pub at_ms: u64,
    /// The senders whose messages are held back; empty for every node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<Spanned<String>>,
    /// How long it lasts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// How long a held message waits, in ms (1 to `heal_ms`).
    pub hold_ms: u64,
    /// The probability per message (`None`: [`DEFAULT_HOLD_BACK_PROBABILITY`]); swarm mode
    /// draws it per fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
}

/// `clock_skew`: the nodes' clocks jump forward by `jump_ms`, then drift by `drift_ppm`; it
/// takes no duration (the jump stays, the drift stops at the heal phase), and needs a jump or
/// a drift.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClockSkewFault {
    /// When, in ms from the start of the fault phase (before `duration_ms`).
    pub at_ms: u64,
    /// The nodes whose clocks are skewed.
    pub nodes: Vec<Spanned<String>>,
    /// How far the clocks jump forward, in ms (`None`: not at all). Never back: a node has
    /// one clock, which its timers read too, and Kafka's timers (on the monotonic clock)
    /// never see it step back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jump_ms: Option<u64>,
    /// Clock drift in parts per million, counted from the jump (`None`: none); swarm mode
    /// draws it per fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_ppm: Option<i64>,
}
