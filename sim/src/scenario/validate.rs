//! Everything a scenario file must satisfy beyond its types, checked once at load so that a run
//! never meets a value it cannot work with (no panic, no hang, no fault or workload that
//! silently never acts).
//!
//! Contract: `Scenario::validate` refuses, with the field path of the offending value:
//! - times and rates a run cannot hold: every time is below [`MAX_PHASE_MS`], so no sum of two
//!   of them overflows; Kafka's millisecond configs are Java ints;
//! - names Kafka refuses, with Kafka's rules (topics: `Topic.validate` and the `.`/`_`
//!   collision rule; mirrors: the KIP authors' prototype's rule plus the seed's desired-state
//!   suffixes; group ids: not empty), topic names the clusters use for themselves, and text with
//!   control characters anywhere the run prints it (a newline in a name could forge a report
//!   line);
//! - faults that start after the fault phase, and faults whose probability, delay, jump or
//!   drift makes them no-ops or outlive the heal phase (which keys a fault kind or an admin
//!   operation takes is its table type's, checked by serde);
//! - more client nodes of one kind on a cluster than node addresses ([`MAX_CLIENTS_PER_KIND`]);
//! - and, as a last net, any cluster whose controller or broker configuration the model's own
//!   `validate` refuses.

use std::collections::{BTreeMap, BTreeSet};

use mirrorsim::controller::mirrors::mirror_name_problem;
use mirrorsim::controller::{topic_collision_key, topic_name_problem};
use mirrorsim::mirror::coordinator::MIRROR_STATE_TOPIC;
use mirrorsim::mirror::properties;
use mirrorsim::mirror::sync::BOOTSTRAP_SERVERS_CONFIG;
use mirrorsim::mirror::MirrorDesign;
use toml::Spanned;

use super::locate::Source;
use super::schema::{
    entry_paths, AcksSpec, AclSpec, AdminOpSpec, ClockSkewFault, ClusterSpec, CreateMirrorOp,
    ProducerSpec, ScriptedFault, TopicsOp, COORDINATOR_TOPICS, FAULT_KINDS,
};
use super::{cluster_index, Scenario, ScenarioError};

/// The longest fault or heal phase, and the bound of every time and interval in a file: a
/// simulated week. Any two such times add up without overflow (a fault's end, a producer's
/// next send, a phase's end on the world's clock).
pub const MAX_PHASE_MS: u64 = 7 * 24 * 3_600_000;

/// Kafka's millisecond configs (`broker.session.timeout.ms`, …) are Java ints.
pub const MAX_CONFIG_MS: i64 = i32::MAX as i64;

/// Client nodes of one kind (producers, consumers) on one cluster: the last octet of a node's
/// address numbers them from 1.
pub const MAX_CLIENTS_PER_KIND: u32 = 255;

/// Kafka's `transaction.max.timeout.ms` default: the longest transaction timeout a producer
/// may ask for.
pub const TRANSACTION_MAX_TIMEOUT_MS: i64 = 900_000;

/// The largest clock jump a `clock_skew` may name: a year (forward; it may not step back).
pub const MAX_CLOCK_JUMP_MS: u64 = 365 * 24 * 3_600_000;

/// The largest clock drift a scripted `clock_skew` may name, in ppm: beyond a million the
/// clock would run backwards.
pub const MAX_DRIFT_PPM: i64 = 999_999;

/// The broker heartbeat interval the model uses; a session must outlast two of them.
fn heartbeat_interval_ms() -> i64 {
    mirrorsim::broker::BrokerConfig::default().heartbeat_interval_ms
}

/// The topics a cluster creates for itself: a scenario may not declare them.
const INTERNAL_TOPICS: &[&str] = &[
    "__consumer_offsets",
    "__transaction_state",
    MIRROR_STATE_TOPIC,
    "__cluster_metadata",
];

type Check = Result<(), ScenarioError>;

impl Scenario {
    pub(super) fn validate(&self, source: &Source<'_>) -> Check {
        self.validate_top_level(source)?;
        self.validate_clusters(source)?;
        self.validate_topics(source)?;
        self.validate_workloads(source)?;
        self.validate_faults(source)?;
        self.validate_admin_timeline(source)
    }

    fn validate_top_level(&self, source: &Source<'_>) -> Check {
        if source.has("name") {
            if let Some(problem) = topic_name_problem(&self.name) {
                return Err(source.error(
                    "name",
                    format!("{problem} (scenario names follow Kafka's topic-name rules)"),
                ));
            }
        }
        check_phase_ms(source, "duration_ms", self.duration_ms, 1)?;
        check_phase_ms(source, "heal_ms", self.heal_ms, 0)?;
        for (index, mark) in self.coverage.iter().enumerate() {
            check_printable(source, &format!("coverage[{index}]"), mark)?;
        }
        for (index, name) in self.broken.iter().enumerate() {
            if mirrorsim::switches::BrokenSwitch::from_name(name).is_none() {
                return Err(source.error(
                    &format!("broken[{index}]"),
                    format!("unknown broken switch {name:?}"),
                ));
            }
        }
        if let Some(design) = &self.design {
            if MirrorDesign::from_name(design.get_ref()).is_none() {
                return Err(source.error_at(
                    design,
                    "design".into(),
                    format!(
                        "unknown design {:?} (known: {})",
                        design.get_ref(),
                        MirrorDesign::names()
                    ),
                ));
            }
        }
        Ok(())
    }

    fn validate_clusters(&self, source: &Source<'_>) -> Check {
        if self.clusters.is_empty() {
            return Err(source.error("clusters", "at least one cluster".into()));
        }
        if self.clusters.len() > 26 {
            return Err(source.error(
                "clusters[26]",
                format!(
                    "at most 26 clusters (`a` to `z`), this file has {}",
                    self.clusters.len()
                ),
            ));
        }
        for (index, cluster) in self.clusters.iter().enumerate() {
            validate_cluster(source, &format!("clusters[{index}]"), cluster)?;
        }
        Ok(())
    }

    fn validate_topics(&self, source: &Source<'_>) -> Check {
        // (cluster, collision key) → the first topic's index and name.
        let mut seen: BTreeMap<(usize, String), (usize, &str)> = BTreeMap::new();
        for (index, topic) in self.topics.iter().enumerate() {
            let field = format!("topics[{index}]");
            let cluster =
                self.check_cluster(source, &topic.cluster, &format!("{field}.cluster"))?;
            let name_field = format!("{field}.name");
            if let Some(problem) = topic_name_problem(&topic.name) {
                return Err(source.error(&name_field, format!("invalid topic name: {problem}")));
            }
            if INTERNAL_TOPICS.contains(&topic.name.as_str()) {
                return Err(source.error(
                    &name_field,
                    format!(
                        "{:?} is an internal topic the cluster creates itself",
                        topic.name
                    ),
                ));
            }
            let key = (cluster, topic_collision_key(&topic.name));
            if let Some((first, first_name)) = seen.get(&key) {
                let why = if *first_name == topic.name {
                    format!("topic {first_name:?} is declared twice on cluster")
                } else {
                    format!(
                        "topic {:?} collides with {first_name:?} (Kafka treats `.` and `_` \
                         alike in topic names) on cluster",
                        topic.name
                    )
                };
                return Err(source.error(
                    &name_field,
                    format!(
                        "{why} `{}` (first at topics[{first}])",
                        topic.cluster.get_ref()
                    ),
                ));
            }
            seen.insert(key, (index, &topic.name));
            let brokers = i16::from(self.clusters[cluster].brokers);
            if topic.replication_factor < 1 || topic.replication_factor > brokers {
                return Err(source.error(
                    &format!("{field}.replication_factor"),
                    format!("must be between 1 and the cluster's {brokers} brokers"),
                ));
            }
            if topic.min_insync_replicas < 1 || topic.min_insync_replicas > topic.replication_factor
            {
                return Err(source.error(
                    &format!("{field}.min_insync_replicas"),
                    "must be between 1 and the replication factor".into(),
                ));
            }
            if !(1..=64).contains(&topic.partitions) {
                return Err(source.error(
                    &format!("{field}.partitions"),
                    "must be between 1 and 64".into(),
                ));
            }
        }
        Ok(())
    }

    fn validate_workloads(&self, source: &Source<'_>) -> Check {
        // (cluster, producers?) → client nodes so far.
        let mut clients: BTreeMap<(usize, bool), u32> = BTreeMap::new();
        for (index, producer) in self.producers.iter().enumerate() {
            let field = format!("producers[{index}]");
            let cluster =
                self.check_cluster(source, &producer.cluster, &format!("{field}.cluster"))?;
            self.check_topic(
                source,
                &producer.cluster,
                &producer.topic,
                &format!("{field}.topic"),
            )?;
            count_clients(source, &field, cluster, true, producer.count, &mut clients)?;
            check_phase_ms(
                source,
                &format!("{field}.interval_ms"),
                producer.interval_ms,
                1,
            )?;
            if let Some(timeout) = producer.transaction_timeout_ms {
                let timeout_field = format!("{field}.transaction_timeout_ms");
                if !producer.transactional {
                    return Err(source.error(
                        &timeout_field,
                        "only a transactional producer has a transaction timeout".into(),
                    ));
                }
                check_config_ms(
                    source,
                    &timeout_field,
                    timeout,
                    1,
                    "Kafka's transaction.max.timeout.ms is 900000",
                )?;
                if timeout > TRANSACTION_MAX_TIMEOUT_MS {
                    return Err(source.error(
                        &timeout_field,
                        format!(
                            "at most {TRANSACTION_MAX_TIMEOUT_MS} ms (the coordinator's \
                             transaction.max.timeout.ms), not {timeout}"
                        ),
                    ));
                }
            }
            if producer.transactional && producer.acks != AcksSpec::All {
                return Err(source.error(
                    &format!("{field}.acks"),
                    "a transactional producer needs acks = \"all\" (Kafka refuses a \
                     transactional.id with other acks)"
                        .into(),
                ));
            }
            self.check_start_ms(source, producer.start_ms.as_ref(), &field)?;
            self.check_stop_ms(source, producer, &field)?;
        }
        for (index, consumer) in self.consumers.iter().enumerate() {
            let field = format!("consumers[{index}]");
            let cluster =
                self.check_cluster(source, &consumer.cluster, &format!("{field}.cluster"))?;
            self.check_topic(
                source,
                &consumer.cluster,
                &consumer.topic,
                &format!("{field}.topic"),
            )?;
            count_clients(source, &field, cluster, false, consumer.count, &mut clients)?;
            if let Some(group) = &consumer.group {
                let group_field = format!("{field}.group");
                if group.is_empty() {
                    return Err(source.error(
                        &group_field,
                        "an empty group id is not allowed (Kafka: InvalidGroupId); leave \
                         `group` out for a consumer without a group"
                            .into(),
                    ));
                }
                check_printable(source, &group_field, group)?;
            }
            self.check_start_ms(source, consumer.start_ms.as_ref(), &field)?;
        }
        Ok(())
    }

    fn validate_faults(&self, source: &Source<'_>) -> Check {
        if !self.faults.swarm && !self.faults.swarm_kinds.is_empty() {
            return Err(source.error(
                "faults.swarm_kinds",
                "swarm kinds need `swarm = true` (without it they choose nothing)".into(),
            ));
        }
        if let Some(max) = &self.faults.swarm_impaired_brokers {
            if !self.faults.swarm {
                return Err(source.error(
                    "faults.swarm_impaired_brokers",
                    "needs `swarm = true` (without it nothing is impaired by the swarm)".into(),
                ));
            }
            if !(1..=2).contains(max.get_ref()) {
                return Err(source.error(
                    "faults.swarm_impaired_brokers",
                    format!("must be 1 or 2, not {}", max.get_ref()),
                ));
            }
        }
        for (index, kind) in self.faults.swarm_kinds.iter().enumerate() {
            if !FAULT_KINDS.contains(&kind.get_ref().as_str()) {
                return Err(source.error(
                    &format!("faults.swarm_kinds[{index}]"),
                    format!(
                        "unknown fault kind {:?} (known: {})",
                        kind.get_ref(),
                        FAULT_KINDS.join(", ")
                    ),
                ));
            }
        }
        let fields = entry_paths(
            "faults",
            self.faults.scripted.iter().map(ScriptedFault::kind),
        );
        for (fault, field) in self.faults.scripted.iter().zip(fields) {
            self.validate_fault(source, &field, fault)?;
        }
        Ok(())
    }

    fn validate_fault(&self, source: &Source<'_>, field: &str, fault: &ScriptedFault) -> Check {
        if fault.at_ms() >= self.duration_ms {
            return Err(source.error(
                &format!("{field}.at_ms"),
                format!(
                    "must be before the end of the fault phase (duration_ms = {}): a later \
                     fault would never fire",
                    self.duration_ms
                ),
            ));
        }
        if let Some(duration) = fault.given_duration_ms() {
            check_phase_ms(source, &format!("{field}.duration_ms"), duration, 1)?;
        }
        let mut targets = vec![("nodes", fault.nodes())];
        if let ScriptedFault::Partition(partition) = fault {
            targets.push(("other", &partition.other));
        }
        for (name, list) in targets {
            for (position, node) in list.iter().enumerate() {
                if let Err(message) = self.check_node_name(node.get_ref()) {
                    return Err(source.error(&format!("{field}.{name}[{position}]"), message));
                }
            }
        }
        self.validate_fault_values(source, field, fault)
    }

    /// The kind's numbers: probabilities in (0, 1] (0 would be a fault that never acts),
    /// delays positive and inside the heal phase (a message still held after it would fail
    /// liveness by construction), clock skews that jump or drift, by a bounded amount.
    fn validate_fault_values(
        &self,
        source: &Source<'_>,
        field: &str,
        fault: &ScriptedFault,
    ) -> Check {
        match fault {
            ScriptedFault::PacketLoss(loss) | ScriptedFault::Duplicate(loss) => {
                check_probability(source, &format!("{field}.probability"), loss.probability)
            }
            ScriptedFault::LatencySpike(spike) => {
                self.check_delay(source, &format!("{field}.extra_ms"), spike.extra_ms)
            }
            ScriptedFault::HoldBack(hold) => {
                self.check_delay(source, &format!("{field}.hold_ms"), hold.hold_ms)?;
                match hold.probability {
                    Some(probability) => {
                        check_probability(source, &format!("{field}.probability"), probability)
                    }
                    None => Ok(()),
                }
            }
            ScriptedFault::ClockSkew(skew) => validate_clock_skew(source, field, skew),
            ScriptedFault::Kill(_)
            | ScriptedFault::DiskTear(_)
            | ScriptedFault::Pause(_)
            | ScriptedFault::Partition(_)
            | ScriptedFault::Isolate(_) => Ok(()),
        }
    }

    /// A message delay: from 1 ms to the heal phase's length.
    fn check_delay(&self, source: &Source<'_>, field: &str, delay_ms: u64) -> Check {
        if (1..=self.heal_ms).contains(&delay_ms) {
            return Ok(());
        }
        Err(source.error(
            field,
            format!(
                "a delay in ms from 1 to the heal phase's {} ms (a message delayed past the \
                 heal phase would fail liveness by construction), not {delay_ms}",
                self.heal_ms
            ),
        ))
    }

    /// Admin ops' clusters, times, mirrors, sources, topics and partition counts.
    fn validate_admin_timeline(&self, source: &Source<'_>) -> Check {
        // A cluster's operations run one at a time in list order, so their times must not go
        // backwards; this keeps each cluster's latest time.
        let mut latest: BTreeMap<usize, u64> = BTreeMap::new();
        let fields = entry_paths("admin", self.admin.iter().map(|op| op.kind().name()));
        for (spec, field) in self.admin.iter().zip(fields) {
            let cluster =
                self.check_cluster(source, spec.cluster(), &format!("{field}.cluster"))?;
            let at_ms = spec.at_ms();
            if at_ms >= self.duration_ms {
                return Err(source.error(
                    &format!("{field}.at_ms"),
                    format!(
                        "must be before the end of the fault phase (duration_ms = {})",
                        self.duration_ms
                    ),
                ));
            }
            if let Some(previous) = latest.insert(cluster, at_ms).filter(|p| *p > at_ms) {
                return Err(source.error(
                    &format!("{field}.at_ms"),
                    format!(
                        "earlier than cluster `{}`'s previous admin op (at_ms = {previous}); a \
                         cluster's ops run in list order (the order of their tables in the file)",
                        spec.cluster().get_ref()
                    ),
                ));
            }
            self.validate_admin_op(source, &field, spec)?;
        }
        Ok(())
    }

    /// One operation's own keys: a create's source and configs, the topics, the mirror's name
    /// and a partition count.
    fn validate_admin_op(&self, source: &Source<'_>, field: &str, spec: &AdminOpSpec) -> Check {
        if let AdminOpSpec::CreateMirror(create) = spec {
            self.validate_create_mirror(source, field, create)?;
        }
        if let AdminOpSpec::AlterMirror(alter) = spec {
            validate_alter_mirror(source, field, &alter.configs)?;
        }
        self.check_include_patterns(source, field, spec)?;
        match spec {
            AdminOpSpec::CreateTopics(create) => self.check_deferred(source, field, create)?,
            AdminOpSpec::AlterTopicConfigs(alter) => {
                validate_topic_configs(source, field, &alter.configs)?;
            }
            AdminOpSpec::CreateAcls(acls) | AdminOpSpec::DeleteAcls(acls) => {
                validate_acls(source, field, spec, &acls.acls)?;
            }
            _ => {}
        }
        if let Some(topics) = spec.topics() {
            self.validate_admin_topics(source, field, spec, topics)?;
        }
        if let Some(mirror) = spec.mirror() {
            if let Some(problem) = mirror_name_problem(mirror.get_ref()) {
                return Err(source.error(
                    &format!("{field}.mirror"),
                    format!("invalid mirror name: {problem}"),
                ));
            }
        }
        match spec {
            AdminOpSpec::CreatePartitions(create) if !(1..=64).contains(&create.partitions) => {
                Err(source.error(
                    &format!("{field}.partitions"),
                    "must be between 1 and 64".into(),
                ))
            }
            _ => Ok(()),
        }
    }

    /// `add_topics`' `include` (patterns appended to the mirror's `mirror.topics.include`):
    /// each one name filter a mirror accepts.
    fn check_include_patterns(
        &self,
        source: &Source<'_>,
        field: &str,
        spec: &AdminOpSpec,
    ) -> Check {
        let AdminOpSpec::AddTopics(op) = spec else {
            return Ok(());
        };
        for (position, pattern) in op.include.iter().enumerate() {
            let path = format!("{field}.include[{position}]");
            if let Err(problem) = mirrorsim::mirror::sync::NameFilter::parse(pattern.get_ref()) {
                return Err(source.error(&path, format!("not a topic filter: {problem}")));
            }
            if pattern.get_ref().contains(',') || pattern.get_ref().trim().is_empty() {
                return Err(source.error(&path, "one non-empty pattern per entry".into()));
            }
        }
        Ok(())
    }

    /// `create_topics` creates topics `[[topics]]` declares `deferred`, or creates again a
    /// declared topic a `delete_topics` of its cluster deleted earlier (a new topic id, the
    /// same declaration); the others exist from the start.
    fn check_deferred(&self, source: &Source<'_>, field: &str, create: &TopicsOp) -> Check {
        for (position, topic) in create.topics.iter().enumerate() {
            let declared = self.topics.iter().find(|t| {
                t.cluster.get_ref() == create.cluster.get_ref() && t.name == *topic.get_ref()
            });
            let deleted_before = self.admin.iter().any(|op| match op {
                AdminOpSpec::DeleteTopics(delete) => {
                    delete.cluster.get_ref() == create.cluster.get_ref()
                        && delete.at_ms < create.at_ms
                        && delete.topics.iter().any(|t| t.get_ref() == topic.get_ref())
                }
                _ => false,
            });
            let created_later = declared.is_some_and(|t| t.deferred || deleted_before);
            if !created_later {
                return Err(source.error(
                    &format!("{field}.topics[{position}]"),
                    format!(
                        "topic {:?} is created at the start; a topic `create_topics` creates is \
                         declared with `deferred = true`, or deleted by an earlier `delete_topics`",
                        topic.get_ref()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `create_mirror` needs a source cluster other than its own, and configs other than the
    /// `bootstrap.servers` its source gives.
    fn validate_create_mirror(
        &self,
        source: &Source<'_>,
        field: &str,
        create: &CreateMirrorOp,
    ) -> Check {
        let source_field = format!("{field}.source");
        self.check_cluster(source, &create.source, &source_field)?;
        if create.source.get_ref() == create.cluster.get_ref() {
            return Err(source.error(
                &source_field,
                format!(
                    "the source must differ from the destination cluster `{}`",
                    create.cluster.get_ref()
                ),
            ));
        }
        for (key, value) in &create.configs {
            let key_field = format!("{field}.configs.{}", quoted_key(key));
            if key == BOOTSTRAP_SERVERS_CONFIG {
                return Err(source.error(
                    &key_field,
                    format!("`{BOOTSTRAP_SERVERS_CONFIG}` comes from `source`"),
                ));
            }
            if key.is_empty() {
                return Err(source.error(&key_field, "a config needs a name".into()));
            }
            check_printable(source, &key_field, key)?;
            check_printable(source, &key_field, value)?;
            // The mirror every later operation needs: a key the controller would refuse is a
            // mistake here (`alter_mirror` may send one on purpose).
            if !properties::is_known_key(key) || key == properties::SOURCE_CLUSTER_ID_CONFIG {
                return Err(source.error(
                    &key_field,
                    format!(
                        "{key:?} is not a property a mirror takes (see the README's mirroring \
                         section; the controller would refuse the create)"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// An operation on topics needs distinct topics declared on its cluster.
    fn validate_admin_topics(
        &self,
        source: &Source<'_>,
        field: &str,
        spec: &AdminOpSpec,
        topics: &[Spanned<String>],
    ) -> Check {
        if topics.is_empty() {
            return Err(source.error(
                &format!("{field}.topics"),
                format!("`{}` needs topics", spec.kind().name()),
            ));
        }
        let mut seen = BTreeSet::new();
        for (position, topic) in topics.iter().enumerate() {
            let topic_field = match spec {
                AdminOpSpec::AlterTopicConfigs(_) => format!("{field}.topic"),
                _ => format!("{field}.topics[{position}]"),
            };
            self.check_topic(source, spec.cluster(), topic, &topic_field)?;
            if !seen.insert(topic.get_ref()) {
                return Err(source.error(
                    &topic_field,
                    format!("topic {:?} is listed twice", topic.get_ref()),
                ));
            }
        }
        Ok(())
    }

    /// A workload's `start_ms` must fall inside the fault phase, where load runs.
    fn check_start_ms(
        &self,
        source: &Source<'_>,
        start_ms: Option<&Spanned<u64>>,
        field: &str,
    ) -> Check {
        match start_ms {
            Some(start) if *start.get_ref() >= self.duration_ms => Err(source.error(
                &format!("{field}.start_ms"),
                format!(
                    "must be before the end of the fault phase (duration_ms = {})",
                    self.duration_ms
                ),
            )),
            _ => Ok(()),
        }
    }

    /// A producer's `stop_ms` must fall inside the fault phase, after its `start_ms`.
    fn check_stop_ms(&self, source: &Source<'_>, producer: &ProducerSpec, field: &str) -> Check {
        let Some(stop) = &producer.stop_ms else {
            return Ok(());
        };
        let start = producer
            .start_ms
            .as_ref()
            .map_or(0, |start| *start.get_ref());
        let stop = *stop.get_ref();
        let problem = if stop >= self.duration_ms {
            format!(
                "must be before the end of the fault phase (duration_ms = {}), where every \
                 producer stops anyway",
                self.duration_ms
            )
        } else if stop <= start {
            format!("must be after start_ms ({start})")
        } else {
            return Ok(());
        };
        Err(source.error(&format!("{field}.stop_ms"), problem))
    }

    fn check_cluster(
        &self,
        source: &Source<'_>,
        cluster: &Spanned<String>,
        field: &str,
    ) -> Result<usize, ScenarioError> {
        cluster_index(cluster.get_ref())
            .filter(|index| *index < self.clusters.len())
            .ok_or_else(|| {
                source.error(
                    field,
                    format!(
                        "unknown cluster {:?} (this scenario has {} cluster(s): a..)",
                        cluster.get_ref(),
                        self.clusters.len()
                    ),
                )
            })
    }

    fn check_topic(
        &self,
        source: &Source<'_>,
        cluster: &Spanned<String>,
        topic: &Spanned<String>,
        field: &str,
    ) -> Check {
        if self
            .topic_partitions(cluster.get_ref(), topic.get_ref())
            .is_some()
        {
            return Ok(());
        }
        Err(source.error(
            field,
            format!(
                "topic {:?} is not declared on cluster `{}`",
                topic.get_ref(),
                cluster.get_ref()
            ),
        ))
    }

    /// Checks a node name such as `a-broker-2`, `b-controller`, `a-leader:orders:0`,
    /// `a-follower:orders:0` or `a-replica:orders:0:3`; numbers
    /// are written as the node table names them (no sign, no leading zero), so one node has
    /// one name.
    fn check_node_name(&self, name: &str) -> Result<(), String> {
        let (cluster, rest) = name
            .split_once('-')
            .ok_or_else(|| format!("{name:?} is not a node name like `a-broker-1`"))?;
        let index = cluster_index(cluster)
            .filter(|index| *index < self.clusters.len())
            .ok_or_else(|| format!("{name:?}: unknown cluster {cluster:?}"))?;
        if rest == "controller" {
            return Ok(());
        }
        if let Some(id) = rest.strip_prefix("broker-") {
            let brokers = self.clusters[index].brokers;
            return match canonical_number(id) {
                Some(id) if (1..=u64::from(brokers)).contains(&id) => Ok(()),
                Some(_) => Err(format!(
                    "{name:?}: cluster `{cluster}` has brokers 1..={brokers}"
                )),
                None => Err(format!(
                    "{name:?}: bad broker id {id:?} (write it like `2`)"
                )),
            };
        }
        for (kind, producers) in [("producer-", true), ("consumer-", false)] {
            if let Some(number) = rest.strip_prefix(kind) {
                let count = self.client_count(cluster, producers);
                return match canonical_number(number) {
                    Some(n) if n >= 1 && n <= u64::from(count) => Ok(()),
                    Some(_) => Err(format!(
                        "{name:?}: cluster `{cluster}` has {kind}1..={count}"
                    )),
                    None => Err(format!("{name:?}: bad client index {number:?}")),
                };
            }
        }
        let role_target = ["leader:", "follower:", "replica:"]
            .into_iter()
            .find_map(|role| Some((role, rest.strip_prefix(role)?)));
        if let Some((role, target)) = role_target {
            let target = if role == "replica:" {
                let usage = || format!("{name:?}: use `{cluster}-replica:TOPIC:PARTITION:N`");
                let (target, position) = target.rsplit_once(':').ok_or_else(usage)?;
                let brokers = self.clusters[index].brokers;
                match canonical_number(position) {
                    Some(n) if (1..=u64::from(brokers)).contains(&n) => target,
                    _ => {
                        return Err(format!(
                            "{name:?}: the replica's position in the assignment is 1..={brokers}"
                        ))
                    }
                }
            } else {
                target
            };
            let (topic, partition) = target
                .rsplit_once(':')
                .ok_or_else(|| format!("{name:?}: use `{cluster}-{role}TOPIC:PARTITION`"))?;
            let partition = canonical_number(partition)
                .and_then(|p| i32::try_from(p).ok())
                .ok_or_else(|| format!("{name:?}: bad partition {partition:?}"))?;
            // Internal topics exist once a coordinator is first used (4 partitions each), and
            // `__mirror_state` once the cluster's first mirror is created.
            let internal = (COORDINATOR_TOPICS.contains(&topic) && (0..4).contains(&partition))
                || (topic == MIRROR_STATE_TOPIC
                    && (0..self.clusters[index].mirror_state_partitions).contains(&partition));
            let declared = internal
                || self
                    .topic_partitions(cluster, topic)
                    .is_some_and(|partitions| (0..partitions).contains(&partition));
            return if declared {
                Ok(())
            } else {
                Err(format!(
                    "{name:?}: no such topic partition on cluster `{cluster}`"
                ))
            };
        }
        Err(format!(
            "{name:?} is not a controller, broker, producer, consumer, `leader:`, `follower:` or `replica:` target"
        ))
    }
}

fn validate_cluster(source: &Source<'_>, field: &str, cluster: &ClusterSpec) -> Check {
    if cluster.brokers == 0 || cluster.brokers > 50 {
        return Err(source.error(
            &format!("{field}.brokers"),
            "between 1 and 50 brokers".into(),
        ));
    }
    let minimum_session = 2 * heartbeat_interval_ms() + 1;
    check_config_ms(
        source,
        &format!("{field}.broker_session_timeout_ms"),
        cluster.broker_session_timeout_ms,
        minimum_session,
        "it must outlast two broker heartbeats (100 ms each)",
    )?;
    check_config_ms(
        source,
        &format!("{field}.replica_lag_time_max_ms"),
        cluster.replica_lag_time_max_ms,
        1,
        "",
    )?;
    if cluster.replica_fetch_max_bytes == Some(0) {
        return Err(source.error(
            &format!("{field}.replica_fetch_max_bytes"),
            "must be at least 1 byte (leave it out for Kafka's 1 MiB)".into(),
        ));
    }
    if let Some(interval) = cluster.log_flush_interval_ms {
        check_config_ms(
            source,
            &format!("{field}.log_flush_interval_ms"),
            interval,
            1,
            "leave it out to never flush",
        )?;
    }
    if !(1..=64).contains(&cluster.mirror_state_partitions) {
        return Err(source.error(
            &format!("{field}.mirror_state_partitions"),
            "must be between 1 and 64".into(),
        ));
    }
    let replication_factor = cluster.mirror_state_replication_factor();
    if replication_factor < 1 || replication_factor > i16::from(cluster.brokers) {
        return Err(source.error(
            &format!("{field}.mirror_state_replication_factor"),
            format!(
                "must be between 1 and the cluster's {} brokers",
                cluster.brokers
            ),
        ));
    }
    if !(100..=600_000).contains(&cluster.mirror_metadata_refresh_interval_ms) {
        return Err(source.error(
            &format!("{field}.mirror_metadata_refresh_interval_ms"),
            "must be between 100 and 600000 ms".into(),
        ));
    }
    if cluster.allow_everyone_if_no_acl_found.is_some() && !cluster.authorizer {
        return Err(source.error(
            &format!("{field}.allow_everyone_if_no_acl_found"),
            "needs `authorizer = true` (it is a setting of the authorizer)".into(),
        ));
    }
    // The last net: what the model itself refuses (the checks above name the field first).
    if let Err(error) = cluster.controller_config(MirrorDesign::Seed).validate() {
        return Err(source.error(field, error.to_string()));
    }
    if let Err(error) = cluster
        .broker_config(MirrorDesign::default(), Vec::new())
        .validate()
    {
        return Err(source.error(field, error.to_string()));
    }
    Ok(())
}

/// Counts an entry's client nodes against [`MAX_CLIENTS_PER_KIND`] for its cluster.
fn count_clients(
    source: &Source<'_>,
    field: &str,
    cluster: usize,
    producers: bool,
    count: u16,
    clients: &mut BTreeMap<(usize, bool), u32>,
) -> Check {
    if count == 0 {
        return Err(source.error(
            &format!("{field}.count"),
            "at least 1 (leave the entry out for none)".into(),
        ));
    }
    let total = clients.entry((cluster, producers)).or_insert(0);
    *total += u32::from(count);
    if *total > MAX_CLIENTS_PER_KIND {
        let kind = if producers { "producer" } else { "consumer" };
        return Err(source.error(
            &format!("{field}.count"),
            format!(
                "a cluster has at most {MAX_CLIENTS_PER_KIND} {kind} nodes (counted over every \
                 entry of the cluster; this one brings it to {total})"
            ),
        ));
    }
    Ok(())
}

/// A time of the file: at least `minimum`, at most [`MAX_PHASE_MS`].
fn check_phase_ms(source: &Source<'_>, field: &str, value: u64, minimum: u64) -> Check {
    if (minimum..=MAX_PHASE_MS).contains(&value) {
        return Ok(());
    }
    Err(source.error(
        field,
        format!("must be between {minimum} and {MAX_PHASE_MS} ms (a week), not {value}"),
    ))
}

/// A Kafka millisecond config: at least `minimum`, at most [`MAX_CONFIG_MS`].
fn check_config_ms(source: &Source<'_>, field: &str, value: i64, minimum: i64, why: &str) -> Check {
    if (minimum..=MAX_CONFIG_MS).contains(&value) {
        return Ok(());
    }
    let why = if why.is_empty() {
        String::new()
    } else {
        format!("; {why}")
    };
    Err(source.error(
        field,
        format!("must be between {minimum} and {MAX_CONFIG_MS} ms, not {value}{why}"),
    ))
}

fn check_probability(source: &Source<'_>, field: &str, value: f64) -> Check {
    if value > 0.0 && value <= 1.0 {
        return Ok(());
    }
    Err(source.error(
        field,
        format!("a probability in (0, 1] (0 never acts), not {value}"),
    ))
}

/// `alter_mirror` sets at least one property, each with a printable name and value. Whether
/// the key is a mirror's is the controller's to judge (a refusal is an outcome to test, as
/// the prototype's `test_config_update` does with `invalid.config`).
fn validate_alter_mirror(
    source: &Source<'_>,
    field: &str,
    configs: &BTreeMap<String, String>,
) -> Check {
    validate_configs(source, field, "alter_mirror", configs, &[])
}

/// An operation's `configs`: at least one, each named and printable, none of `fixed`.
fn validate_configs(
    source: &Source<'_>,
    field: &str,
    operation: &str,
    configs: &BTreeMap<String, String>,
    fixed: &[&str],
) -> Check {
    if configs.is_empty() {
        return Err(source.error(
            &format!("{field}.configs"),
            format!("`{operation}` needs at least one config"),
        ));
    }
    for (key, value) in configs {
        let key_field = format!("{field}.configs.{}", quoted_key(key));
        if key.is_empty() {
            return Err(source.error(&key_field, "a config needs a name".into()));
        }
        if fixed.contains(&key.as_str()) {
            return Err(source.error(
                &key_field,
                format!(
                    "{key:?} is fixed for the run: set it in `[[topics]]` (or, for \
                     `mirror.name`, with the mirror operations)"
                ),
            ));
        }
        check_printable(source, &key_field, key)?;
        check_printable(source, &key_field, value)?;
    }
    Ok(())
}

/// Topic configs the model acts on, which `[[topics]]` sets for the whole run (the checkers
/// read them from there), and the desired mirror state, which the mirror operations set.
const FIXED_TOPIC_CONFIGS: &[&str] = &[
    "min.insync.replicas",
    "unclean.leader.election.enable",
    mirrorsim::mirror::state::MIRROR_SUPPORT_UNCLEAN_CONFIG,
    mirrorsim::mirror::state::MIRROR_NAME_CONFIG,
];

/// `alter_topic_configs` sets at least one config, none the model acts on.
fn validate_topic_configs(
    source: &Source<'_>,
    field: &str,
    configs: &BTreeMap<String, String>,
) -> Check {
    validate_configs(
        source,
        field,
        "alter_topic_configs",
        configs,
        FIXED_TOPIC_CONFIGS,
    )
}

/// `create_acls`/`delete_acls` name at least one binding, each with a `TYPE:NAME` resource,
/// a permission `Allow` or `Deny`, and no empty or unprintable field.
fn validate_acls(source: &Source<'_>, field: &str, spec: &AdminOpSpec, acls: &[AclSpec]) -> Check {
    if acls.is_empty() {
        return Err(source.error(
            &format!("{field}.acls"),
            format!("`{}` needs at least one binding", spec.kind().name()),
        ));
    }
    for (position, acl) in acls.iter().enumerate() {
        let acl_field = format!("{field}.acls[{position}]");
        for (name, value) in [
            ("resource", &acl.resource),
            ("principal", &acl.principal),
            ("operation", &acl.operation),
            ("permission", &acl.permission),
        ] {
            if value.is_empty() {
                return Err(
                    source.error(&format!("{acl_field}.{name}"), "must not be empty".into())
                );
            }
            check_printable(source, &format!("{acl_field}.{name}"), value)?;
        }
        if !matches!(acl.resource.split_once(':'), Some((kind, name)) if !kind.is_empty() && !name.is_empty())
        {
            return Err(source.error(
                &format!("{acl_field}.resource"),
                format!(
                    "{:?} is not `TYPE:NAME` (e.g. `topic:orders`)",
                    acl.resource
                ),
            ));
        }
        if !matches!(acl.permission.as_str(), "Allow" | "Deny") {
            return Err(source.error(
                &format!("{acl_field}.permission"),
                format!("{:?} is neither `Allow` nor `Deny`", acl.permission),
            ));
        }
    }
    Ok(())
}

/// Text the run prints: no control characters (a newline could forge a report line).
fn check_printable(source: &Source<'_>, field: &str, text: &str) -> Check {
    match text.chars().find(|c| c.is_control()) {
        None => Ok(()),
        Some(c) => Err(source.error(
            field,
            format!("control character {c:?} in {text:?} (the run prints this text)"),
        )),
    }
}

/// A decimal number as the node table writes it: digits only, no leading zero.
fn canonical_number(text: &str) -> Option<u64> {
    let canonical = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    canonical.then(|| text.parse().ok()).flatten()
}

/// A config key as a field path segment (quoted unless bare).
fn quoted_key(key: &str) -> String {
    if !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        key.to_owned()
    } else {
        format!("{key:?}")
    }
}

/// A clock skew jumps forward or drifts (or both), by at most a year and less than a million
/// ppm.
fn validate_clock_skew(source: &Source<'_>, field: &str, skew: &ClockSkewFault) -> Check {
    let jump_field = format!("{field}.jump_ms");
    match (skew.jump_ms, skew.drift_ppm) {
        (None, None) => {
            return Err(source.error(
                &jump_field,
                "`clock_skew` needs a forward jump (`jump_ms`) or a `drift_ppm`".into(),
            ))
        }
        (Some(jump), _) if jump > MAX_CLOCK_JUMP_MS => {
            return Err(source.error(
                &jump_field,
                format!("a clock jump in ms of at most a year, not {jump}"),
            ))
        }
        _ => {}
    }
    match skew.drift_ppm {
        Some(drift) if drift.unsigned_abs() > MAX_DRIFT_PPM.unsigned_abs() => Err(source.error(
            &format!("{field}.drift_ppm"),
            format!("must be between -{MAX_DRIFT_PPM} and {MAX_DRIFT_PPM} ppm"),
        )),
        _ => Ok(()),
    }
}
