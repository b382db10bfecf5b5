//! Scenario files: what a run builds, what load it drives, which faults it injects and for how
//! long. TOML; the reference is `scenarios/README.md`.
//!
//! Contract: [`Scenario::load`] either returns a fully validated scenario or a
//! [`ScenarioError`] naming the file, the line and the field path (exit code 64), for a syntax
//! error, a type or range error of a value, an unknown or missing key, and every rule of
//! [`validate`]. Nothing later in a run re-validates, so every cross-reference (cluster
//! letters, topic names, node names) and every bound a run relies on is checked here.
//! [`Scenario::to_toml`] writes a scenario back: parsing its output gives an equal scenario,
//! its scripted faults and admin operations in the same order (the round trip `mirrorsim
//! shrink` relies on).
//!
//! | module | holds |
//! |---|---|
//! | [`schema`] | the serde types, one per table of the file, one per fault kind and admin operation |
//! | `locate` | field paths ↔ lines: every error's file, line and field |
//! | [`validate`] | the rules beyond types: bounds, Kafka's naming rules, cross-references |

use std::fmt;
use std::path::{Path, PathBuf};

use mirrorsim::mirror::MirrorDesign;

pub mod generate;
mod locate;
pub mod schema;
pub mod validate;

pub use schema::{
    AcksSpec, AclSpec, AclsOp, AddTopicsOp, AdminOpKind, AdminOpSpec, AlterMirrorOp,
    ClockSkewFault, ClusterSpec, CompressionSpec, ConsumerSpec, CreateMirrorOp, CreatePartitionsOp,
    FaultSpec, HoldBackFault, IsolationSpec, KillFault, LatencySpikeFault, MirrorOp,
    MirrorTopicsOp, NodeFault, PartitionFault, ProbabilityFault, ProducerSpec, Scenario,
    ScriptedFault, TopicConfigsOp, TopicSpec, TopicsOp, DEFAULT_FAULT_DURATION_MS,
    DEFAULT_HOLD_BACK_PROBABILITY, FAULT_KINDS, RECOVERY_MARGIN_MS,
};
pub use validate::{MAX_DRIFT_PPM, MAX_PHASE_MS};

/// A scenario that could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line (`None` only when the file could not be read).
    pub line: Option<usize>,
    /// The field path, e.g. `faults.kill[2].nodes[0]`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    /// One line: `FILE:LINE: field `PATH`: message`, with any control character of the file
    /// name, the path or the message escaped (a value echoed by TOML's own messages may hold
    /// a newline).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", one_line(&self.file.display().to_string()))?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(
            f,
            ": field `{}`: {}",
            one_line(&self.field),
            one_line(&self.message)
        )
    }
}

/// `text` with control characters escaped as Rust writes them (`\n`, `\u{0}`).
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

impl std::error::Error for ScenarioError {}

impl Scenario {
    /// Reads, parses and validates a scenario file.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|error| ScenarioError {
            file: path.to_path_buf(),
            line: None,
            field: "(file)".into(),
            message: format!("cannot read: {error}"),
        })?;
        Self::parse(path, &text)
    }

    /// The scenario as TOML that [`Scenario::parse`] reads back as an equal scenario: every
    /// field that differs from "absent" is written, defaults with a value included, so the
    /// file says what runs (used by `mirrorsim shrink`). The scripted faults and admin
    /// operations come last, one table each in list order, which is the order they read back
    /// in.
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        let mut text = toml::to_string(self)?;
        schema::write_entries("faults", &self.faults.scripted, &mut text)?;
        schema::write_entries("admin", &self.admin, &mut text)?;
        Ok(text)
    }

    /// Parses and validates scenario text; `path` is used in errors and for the default name.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ScenarioError> {
        let source = locate::Source::new(path, text)?;
        let mut scenario: Scenario =
            toml::from_str(text).map_err(|error| source.deserialize_error(&error))?;
        if scenario.name.is_empty() && !source.has("name") {
            scenario.name = default_name(path);
        }
        scenario.validate(&source)?;
        Ok(scenario)
    }
}

/// The name of a scenario whose file gives none: the file stem, with every character a
/// scenario name may not hold (Kafka's topic-name rules) replaced by `_`, since the name is
/// printed and becomes part of file names (`mirrorsim shrink`'s output).
fn default_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map_or_else(String::new, |stem| stem.to_string_lossy().into_owned());
    let name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(mirrorsim::controller::TOPIC_NAME_LENGTH_MAX)
        .collect();
    if name.is_empty() || name == "." || name == ".." {
        "scenario".to_owned()
    } else {
        name
    }
}

impl Scenario {
    /// The design variant the file asks for (`seed` when it names none; names are validated
    /// at load).
    pub fn mirror_design(&self) -> MirrorDesign {
        self.design
            .as_ref()
            .and_then(|name| MirrorDesign::from_name(name.get_ref()))
            .unwrap_or_default()
    }

    /// The partition count of a topic on a cluster: a declared topic's, or that of a source
    /// topic a mirror created on the cluster adopts (`mirror.topics.include`), which the
    /// mirror's periodic sync creates with the source's partition count.
    pub(super) fn topic_partitions(&self, cluster: &str, topic: &str) -> Option<i32> {
        let declared = |cluster: &str| {
            self.topics
                .iter()
                .find(|t| t.cluster.get_ref() == cluster && t.name == topic)
                .map(|t| t.partitions)
        };
        declared(cluster).or_else(|| {
            self.admin
                .iter()
                .filter_map(|spec| match spec {
                    AdminOpSpec::CreateMirror(create) if create.cluster.get_ref() == cluster => {
                        Some(create)
                    }
                    _ => None,
                })
                .filter(|create| {
                    create
                        .configs
                        .get(mirrorsim::mirror::sync::TOPICS_INCLUDE_CONFIG)
                        .and_then(|value| mirrorsim::mirror::sync::NameFilter::parse(value).ok())
                        .is_some_and(|include| include.matches(topic))
                })
                .find_map(|create| declared(create.source.get_ref()))
        })
    }

    /// How many producer (or consumer) nodes a cluster has (at most
    /// [`validate::MAX_CLIENTS_PER_KIND`] in a loaded scenario).
    pub(super) fn client_count(&self, cluster: &str, producers: bool) -> u32 {
        if producers {
            self.producers
                .iter()
                .filter(|p| p.cluster.get_ref() == cluster)
                .map(|p| u32::from(p.count))
                .sum()
        } else {
            self.consumers
                .iter()
                .filter(|c| c.cluster.get_ref() == cluster)
                .map(|c| u32::from(c.count))
                .sum()
        }
    }
}

/// `a` → 0, `b` → 1, …
pub fn cluster_index(letter: &str) -> Option<usize> {
    let mut chars = letter.chars();
    let first = chars.next()?;
    if chars.next().is_some() || !first.is_ascii_lowercase() {
        return None;
    }
    Some(first as usize - 'a' as usize)
}

#[cfg(test)]
mod tests;
