//! What a mirror's periodic sync must have carried to its destination by the end of the heal
//! phase (issue #17 part 2; spec §7 items 5, 7, 9 and 10), judged as part of `liveness`:
//!
//! - **adoption**: every topic of a mirror's source that its `mirror.topics.include` admits and
//!   its `mirror.topics.exclude` does not exists on the destination (the sync creates it with
//!   the source's topic id and adds it; a name the destination already has is the operator's);
//! - **exclusion**: no topic the mirror mirrors (`mirror.name` without a suffix) is one its
//!   `mirror.topics.exclude` matches (the sync removes it);
//! - **no rediscovery** (the prototype's `testStopMirrorTopicPreventsRediscovery`): a topic
//!   the timeline removed from a mirror and never added back is not in that mirror at the end,
//!   though its `mirror.topics.include` admits it (judged at once: nothing is to wait for;
//!   not where an add of the topic had an attempt that went unanswered, which may land late);
//! - **topic configs**: a config the admin timeline set on a source topic
//!   (`alter_topic_configs`), still the source's value, is the destination's value of every
//!   topic mirroring it, unless the mirror's `mirror.topic.properties.exclude` names it;
//! - **ACLs**: a binding the timeline created on a source (`create_acls`) is on every
//!   destination of a mirror from it, and one it deleted (`delete_acls`) is gone there again,
//!   while the source still agrees (a source that is itself a mirror's destination, in a
//!   failback or a loop, may have lost the binding to that mirror's sync: counted, not judged).
//!   Judged only where every mirror of the destination has that one source and takes every
//!   binding (`mirror.acl.include` unset or `*`): the sync deletes a destination binding
//!   its source lacks, so two sources with different bindings overwrite each other (spec §7
//!   item 7: "multi-mirror disambiguation is an open TODO"), and the timeline's own
//!   bindings on the destination are overwritten the same way.
//!
//! The rules are written here from the spec rather than taken from the sync. A change is
//! judged only when the sync had time to act on it without faults: at the end, at least the
//! destination's refresh interval plus [`SYNC_SETTLE_MARGIN_MS`] have passed since the later
//! of the change's answer (and the answers of the operations on the mirror and the topic
//! since) and the start of the heal phase. A mirror whose `bootstrap.servers` names another
//! cluster than its recorded source is not judged (its sync does not run, spec S-15); nor is
//! a source topic whose creation time the timeline does not say (one a chain's middle
//! cluster adopted itself), nor a config the source no longer has.

use std::collections::{BTreeMap, BTreeSet};

use mirrorsim::metadata::{AclBinding, ConfigResource, MetadataImage};
use mirrorsim::mirror::properties::source_cluster_changed;
use mirrorsim::mirror::state::MIRROR_NAME_CONFIG;
use mirrorsim::mirror::sync::{
    NameFilter, ACL_INCLUDE_CONFIG, DEFAULT_TOPIC_PROPERTIES_EXCLUDE, TOPICS_EXCLUDE_CONFIG,
    TOPICS_INCLUDE_CONFIG, TOPIC_PROPERTIES_EXCLUDE_CONFIG,
};
use mirrorsim::mirror::{DesiredState, TopicMirrorConfig};
use mirrorsim::protocol::{ClusterIndex, ErrorCode, MirrorTopicOperation};

use super::lineage::{mirror_source_in, mirror_source_of};
use crate::checks::admin::AdminWorld;
use crate::checks::invariants::{Invariant, Violation};
use crate::checks::view::ControllerView;
use crate::world::admin::{AdminAction, AdminOpRecord};

/// How long past its refresh interval a sync may take to act on a change once faults stop: a
/// round under way when the heal phase begins may wait out a lost request in each of its
/// phases (1 s each) before the next round starts.
pub const SYNC_SETTLE_MARGIN_MS: i64 = 5_000;

/// How many changes each rule judged (the preconditions' coverage marks), and the ACL
/// changes left unjudged because their destination has mirrors from several sources.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SyncJudged {
    /// `liveness-adoption-judged`.
    pub adoptions: u64,
    /// `liveness-exclusion-judged`.
    pub exclusions: u64,
    /// `liveness-topic-config-sync-judged`.
    pub configs: u64,
    /// `liveness-acl-sync-judged`.
    pub acls: u64,
    /// `acl-sync-several-sources-unjudged`.
    pub acls_several_sources: u64,
    /// `liveness-rediscovery-judged`: a topic removed from a mirror whose include admits it.
    pub rediscoveries: u64,
    /// `acl-overwritten-at-source`: a binding the timeline created on a source, gone from
    /// it at the end without a `delete_acls` there: the source is itself the destination of
    /// a mirror (a failback, a loop) whose sync deleted it, its own source lacking it (the
    /// prototype's sync "overwrites local ACL changes"). Not judged further.
    pub acls_overwritten_at_source: u64,
}

/// The end of the run and what the timeline did, for the rules.
struct Timeline<'a> {
    world: &'a AdminWorld,
    ops: &'a [AdminOpRecord],
}

impl Timeline<'_> {
    /// Whether the sync on `destination` had time for a change answered at `changed_ms`
    /// (fault-phase ms).
    fn settled(&self, destination: ClusterIndex, changed_ms: i64) -> bool {
        let end = self.world.fault_phase_ms + self.world.heal_ms;
        let refresh = self.world.refresh_ms.get(&destination).copied().unwrap_or(
            mirrorsim::broker::BrokerConfig::default().mirror_metadata_refresh_interval_ms,
        );
        end - changed_ms.max(self.world.fault_phase_ms) >= refresh + SYNC_SETTLE_MARGIN_MS
    }

    /// The operations that finished, with their outcomes.
    fn finished(&self) -> impl Iterator<Item = (&AdminOpRecord, i64)> {
        self.ops.iter().filter_map(|record| {
            record
                .outcome
                .as_ref()
                .map(|outcome| (record, outcome.finished_ms))
        })
    }

    /// The latest answer of an operation on `cluster` about `mirror` (its create and alters)
    /// or naming `topic`; 0 without one.
    fn last_touched_ms(&self, cluster: ClusterIndex, mirror: Option<&str>, topic: &str) -> i64 {
        self.finished()
            .filter(|(record, _)| record.op.cluster == cluster)
            .filter(|(record, _)| {
                let about_mirror = mirror == Some(record.op.mirror.as_str())
                    && matches!(
                        record.op.action,
                        AdminAction::CreateMirror { .. } | AdminAction::AlterMirror { .. }
                    );
                about_mirror || record.op.topics().iter().any(|t| t == topic)
            })
            .map(|(_, finished)| finished)
            .max()
            .unwrap_or(0)
    }

    /// When `topic` came to exist on `cluster`: 0 for one declared at the start, a
    /// `create_topics`' answer; `None` when the timeline does not say (a mirror adopted it).
    fn created_ms(&self, cluster: ClusterIndex, topic: &str) -> Option<i64> {
        if self.world.topics.contains_key(&(cluster, topic.to_owned())) {
            return Some(0);
        }
        self.finished()
            .filter(|(record, _)| record.op.cluster == cluster)
            .filter(|(record, _)| matches!(record.op.action, AdminAction::CreateTopics { .. }))
            .filter(|(record, _)| {
                let error = record.outcome.as_ref().and_then(|o| o.topic_error(topic));
                matches!(error, Some(ErrorCode::None | ErrorCode::TopicAlreadyExists))
            })
            .map(|(_, finished)| finished)
            .last()
    }
}

/// The mirrors of `image` with their properties.
fn mirrors(image: &MetadataImage) -> impl Iterator<Item = (&str, &BTreeMap<String, String>)> {
    image
        .configs
        .iter()
        .filter_map(|(resource, properties)| match resource {
            ConfigResource::Mirror(name) => Some((name.as_str(), properties)),
            _ => None,
        })
}

/// `mirror.topics.exclude` when a mirror's properties do not set it (spec §8: internal topics).
pub(crate) const DEFAULT_TOPICS_EXCLUDE: &str = "__.*";

/// A mirror's topic filters (`mirror.topics.include`, default none; `mirror.topics.exclude`,
/// default [`DEFAULT_TOPICS_EXCLUDE`]), read from its properties.
pub(crate) struct TopicFilters {
    include: NameFilter,
    exclude: NameFilter,
}

impl TopicFilters {
    /// The filters of a mirror with `properties`; `None` if one does not parse (the
    /// controller refuses such a value, so a mirror never holds one).
    pub(crate) fn of(properties: &BTreeMap<String, String>) -> Option<Self> {
        let filter = |key: &str, default: &str| {
            NameFilter::parse(properties.get(key).map_or(default, String::as_str)).ok()
        };
        Some(Self {
            include: filter(TOPICS_INCLUDE_CONFIG, "")?,
            exclude: filter(TOPICS_EXCLUDE_CONFIG, DEFAULT_TOPICS_EXCLUDE)?,
        })
    }

    /// Whether the mirror adopts `topic` on its own (included, not excluded).
    pub(crate) fn adopts(&self, topic: &str) -> bool {
        self.include.matches(topic) && !self.exclude.matches(topic)
    }

    /// Whether the exclude matches `topic`.
    pub(crate) fn excludes(&self, topic: &str) -> bool {
        self.exclude.matches(topic)
    }
}

/// The configs a mirror never copies (spec §7.5: its exclude list, `mirror.name` always).
fn excluded_configs(properties: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut excluded: BTreeSet<String> = match properties.get(TOPIC_PROPERTIES_EXCLUDE_CONFIG) {
        Some(list) => list
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(str::to_owned)
            .collect(),
        None => DEFAULT_TOPIC_PROPERTIES_EXCLUDE
            .iter()
            .map(|name| (*name).to_owned())
            .collect(),
    };
    excluded.insert(MIRROR_NAME_CONFIG.to_owned());
    excluded
}

/// Each cluster's metadata image, as its controller holds it.
type Images<'a> = BTreeMap<ClusterIndex, &'a MetadataImage>;

/// Checks the four rules at the end of the heal phase (`time_ms`).
pub fn check_source_sync(
    time_ms: i64,
    controllers: &[ControllerView<'_>],
    world: &AdminWorld,
    ops: &[AdminOpRecord],
) -> (Vec<Violation>, SyncJudged) {
    let images: Images<'_> = controllers
        .iter()
        .map(|view| (view.cluster, view.controller.image()))
        .collect();
    check_images(time_ms, &images, world, ops)
}

/// [`check_source_sync`] over `images`.
fn check_images(
    time_ms: i64,
    images: &Images<'_>,
    world: &AdminWorld,
    ops: &[AdminOpRecord],
) -> (Vec<Violation>, SyncJudged) {
    let timeline = Timeline { world, ops };
    let mut judged = SyncJudged::default();
    let mut out = Vec::new();
    let mut report = |cluster: ClusterIndex, detail: String| {
        out.push(Violation {
            invariant: Invariant::Liveness,
            cluster: Some(cluster),
            topic_partition: None,
            detail,
            time_ms,
        });
    };
    for (&destination, &image) in images {
        for problem in adoptions(&timeline, images, destination, image, &mut judged) {
            report(destination, problem);
        }
        for problem in exclusions(&timeline, destination, image, &mut judged) {
            report(destination, problem);
        }
        for problem in rediscoveries(&timeline, destination, image, &mut judged) {
            report(destination, problem);
        }
        for problem in topic_configs(&timeline, images, destination, image, &mut judged) {
            report(destination, problem);
        }
        for problem in acls(&timeline, images, destination, image, &mut judged) {
            report(destination, problem);
        }
    }
    (out, judged)
}

/// Adoption: a settled source topic a mirror's include admits (and its exclude does not) that
/// the destination lacks is a problem.
fn adoptions(
    timeline: &Timeline<'_>,
    images: &Images<'_>,
    destination: ClusterIndex,
    image: &MetadataImage,
    judged: &mut SyncJudged,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (mirror, properties) in mirrors(image) {
        if source_cluster_changed(properties).is_some() {
            continue;
        }
        let (Some(filters), Some(source)) = (
            TopicFilters::of(properties),
            mirror_source_of(image, mirror),
        ) else {
            continue;
        };
        let Some(source_image) = images.get(&source) else {
            continue;
        };
        for topic in source_image.topic_ids.keys() {
            if !filters.adopts(topic) {
                continue;
            }
            let Some(created) = timeline.created_ms(source, topic) else {
                continue;
            };
            let changed = created.max(timeline.last_touched_ms(destination, Some(mirror), topic));
            if !timeline.settled(destination, changed) {
                continue;
            }
            judged.adoptions += 1;
            if !image.topic_ids.contains_key(topic) {
                problems.push(format!(
                    "{mirror} never adopted {source}'s {topic}: its mirror.topics.include \
                     admits it, and the destination has no such topic"
                ));
            }
        }
    }
    problems
}

/// Exclusion: a mirrored topic its mirror's exclude matches, settled, is a problem (one the
/// mirror removed counts as judged).
fn exclusions(
    timeline: &Timeline<'_>,
    destination: ClusterIndex,
    image: &MetadataImage,
    judged: &mut SyncJudged,
) -> Vec<String> {
    let mut problems = Vec::new();
    for topic in image.topic_ids.keys() {
        let (mirror, mirrored) = match image.mirror_desired_state(topic) {
            Some(DesiredState::Mirror { mirror }) => (mirror, true),
            Some(DesiredState::Stopped { mirror }) => (mirror, false),
            _ => continue,
        };
        let Some(properties) = image.configs.get(&ConfigResource::Mirror(mirror.clone())) else {
            continue;
        };
        let excluded = TopicFilters::of(properties).is_some_and(|f| f.excludes(topic));
        if !excluded
            || source_cluster_changed(properties).is_some()
            || !timeline.settled(
                destination,
                timeline.last_touched_ms(destination, Some(&mirror), topic),
            )
        {
            continue;
        }
        judged.exclusions += 1;
        if !mirrored {
            continue;
        }
        problems.push(format!(
            "{topic} is still mirrored by {mirror}, whose mirror.topics.exclude matches it"
        ));
    }
    problems
}

/// No rediscovery: a topic the timeline removed last from a mirror (no add of it after, and
/// no add of it with an attempt that went unanswered) is not in that mirror at the end.
fn rediscoveries(
    timeline: &Timeline<'_>,
    destination: ClusterIndex,
    image: &MetadataImage,
    judged: &mut SyncJudged,
) -> Vec<String> {
    // topic → (mirror, answered at) of its last accepted removal; `None` once added again.
    let mut removed: BTreeMap<&str, Option<(&str, i64)>> = BTreeMap::new();
    let mut unsure: BTreeSet<&str> = BTreeSet::new();
    for (record, finished) in timeline.finished() {
        let AdminAction::AlterTopics {
            operation, topics, ..
        } = &record.op.action
        else {
            continue;
        };
        if record.op.cluster != destination {
            continue;
        }
        let outcome = record.outcome.as_ref().expect("finished");
        for topic in topics {
            let accepted = outcome.topic_error(topic) == Some(ErrorCode::None);
            match operation {
                MirrorTopicOperation::Remove if accepted => {
                    removed.insert(topic, Some((record.op.mirror.as_str(), finished)));
                }
                MirrorTopicOperation::Add => {
                    if outcome.unanswered > 0 || outcome.duplicated > 0 {
                        unsure.insert(topic);
                    }
                    if accepted {
                        removed.insert(topic, None);
                    }
                }
                _ => {}
            }
        }
    }
    let mut problems = Vec::new();
    for (topic, last) in removed {
        let Some((mirror, removed_ms)) = last else {
            continue;
        };
        if unsure.contains(topic) {
            continue;
        }
        let properties = image
            .configs
            .get(&ConfigResource::Mirror(mirror.to_owned()));
        let admitted = properties
            .and_then(TopicFilters::of)
            .is_some_and(|filters| filters.adopts(topic));
        if admitted {
            judged.rediscoveries += 1;
        }
        let back = matches!(
            image.mirror_desired_state(topic),
            Some(DesiredState::Mirror { mirror: m } | DesiredState::Paused { mirror: m }) if m == mirror
        );
        if back {
            problems.push(format!(
                "{topic} was removed from {mirror} at {removed_ms} ms and never added back, but \
                 {mirror} holds it again: its sync adopted a topic its operator stopped"
            ));
        }
    }
    problems
}

/// Topic configs: each config the timeline set last on a source topic, still the source's,
/// must be the value of every destination topic mirroring it.
fn topic_configs(
    timeline: &Timeline<'_>,
    images: &Images<'_>,
    destination: ClusterIndex,
    image: &MetadataImage,
    judged: &mut SyncJudged,
) -> Vec<String> {
    // (source, topic, key) → (value, answered at), the timeline's last accepted SET.
    let mut set: BTreeMap<(ClusterIndex, String, String), (String, i64)> = BTreeMap::new();
    for (record, finished) in timeline.finished() {
        let AdminAction::AlterTopicConfigs { topics, configs } = &record.op.action else {
            continue;
        };
        let outcome = record.outcome.as_ref().expect("finished");
        for topic in topics {
            if outcome.topic_error(topic) != Some(ErrorCode::None) {
                continue;
            }
            for (key, value) in configs {
                let at = (record.op.cluster, topic.clone(), key.clone());
                set.insert(at, (value.clone(), finished));
            }
        }
    }
    let mut problems = Vec::new();
    for ((source, topic, key), (value, finished)) in set {
        let Some(DesiredState::Mirror { mirror }) = image.mirror_desired_state(&topic) else {
            continue;
        };
        if source == destination || mirror_source_in(image, &topic) != Some(source) {
            continue;
        }
        let still = images
            .get(&source)
            .and_then(|source_image| {
                source_image
                    .configs
                    .get(&ConfigResource::Topic(topic.clone()))
            })
            .and_then(|configs| configs.get(&key))
            == Some(&value);
        let Some(properties) = image.configs.get(&ConfigResource::Mirror(mirror.clone())) else {
            continue;
        };
        let changed = finished.max(timeline.last_touched_ms(destination, Some(&mirror), &topic));
        if !still
            || excluded_configs(properties).contains(&key)
            || source_cluster_changed(properties).is_some()
            || !timeline.settled(destination, changed)
        {
            continue;
        }
        judged.configs += 1;
        let here = image
            .configs
            .get(&ConfigResource::Topic(topic.clone()))
            .and_then(|configs| configs.get(&key));
        if here != Some(&value) {
            problems.push(format!(
                "{topic}'s {key} is {here:?} here, {value:?} on its source {source}: the sync \
                 never copied it"
            ));
        }
    }
    problems
}

/// ACLs: each binding the timeline created or deleted last on the single source of every
/// mirror of `destination` is there, or gone, too.
fn acls(
    timeline: &Timeline<'_>,
    images: &Images<'_>,
    destination: ClusterIndex,
    image: &MetadataImage,
    judged: &mut SyncJudged,
) -> Vec<String> {
    // (source, binding) → (created?, answered at), the timeline's last accepted change.
    // Judged only where the source still agrees with it (see `acls_overwritten_at_source`).
    let mut changed: BTreeMap<(ClusterIndex, AclBinding), (bool, i64)> = BTreeMap::new();
    for (record, finished) in timeline.finished() {
        let AdminAction::Acls { create, bindings } = &record.op.action else {
            continue;
        };
        if record.outcome.as_ref().expect("finished").error != ErrorCode::None {
            continue;
        }
        for binding in bindings {
            changed.insert((record.op.cluster, binding.clone()), (*create, finished));
        }
    }
    let live: Vec<(&str, &BTreeMap<String, String>)> = mirrors(image)
        .filter(|(_, properties)| source_cluster_changed(properties).is_none())
        .collect();
    let sources: BTreeSet<ClusterIndex> = live
        .iter()
        .filter_map(|(mirror, _)| mirror_source_of(image, mirror))
        .collect();
    let takes_all = live.iter().all(|(_, properties)| {
        properties
            .get(ACL_INCLUDE_CONFIG)
            .is_none_or(|rules| rules.trim() == "*")
    });
    let mut problems = Vec::new();
    for ((source, binding), (created, finished)) in changed {
        if !sources.contains(&source) || !takes_all {
            continue;
        }
        let at_source = images
            .get(&source)
            .is_some_and(|source_image| source_image.acls.contains(&binding));
        if at_source != created {
            judged.acls_overwritten_at_source += 1;
            continue;
        }
        let mirror_changed = live
            .iter()
            .map(|(mirror, _)| timeline.last_touched_ms(destination, Some(mirror), ""))
            .max()
            .unwrap_or(0);
        let touched_here = changed_here(timeline, destination, &binding);
        if !timeline.settled(destination, finished.max(mirror_changed)) || touched_here {
            continue;
        }
        if sources.len() > 1 {
            judged.acls_several_sources += 1;
            continue;
        }
        judged.acls += 1;
        let held = image.acls.contains(&binding);
        if held != created {
            problems.push(format!(
                "ACL {binding:?} {} on the source {source} but {} here: the sync never {}",
                if created { "created" } else { "deleted" },
                if held { "still held" } else { "missing" },
                if created { "copied it" } else { "deleted it" },
            ));
        }
    }
    problems
}

/// Whether the timeline changed `binding` on `cluster` itself.
fn changed_here(timeline: &Timeline<'_>, cluster: ClusterIndex, binding: &AclBinding) -> bool {
    timeline.finished().any(|(record, _)| {
        record.op.cluster == cluster
            && matches!(&record.op.action, AdminAction::Acls { bindings, .. } if bindings.contains(binding))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::AdminOpKind;
    use crate::world::admin::{AdminOp, AdminOutcome};
    use mirrorsim::mirror::properties::SOURCE_CLUSTER_ID_CONFIG;
    use mirrorsim::mirror::sync::BOOTSTRAP_SERVERS_CONFIG;
    use mirrorsim::protocol::TopicId;

    const A: ClusterIndex = ClusterIndex(0);
    const B: ClusterIndex = ClusterIndex(1);
    const C: ClusterIndex = ClusterIndex(2);

    /// A 16 s fault phase, a 10 s heal phase, syncs every 2 s: a change answered before
    /// 19 s (fault-phase time) is judged.
    fn world() -> AdminWorld {
        AdminWorld {
            topics: [((A, "orders".to_owned()), 2), ((C, "orders".to_owned()), 2)]
                .into_iter()
                .collect(),
            fault_phase_ms: 16_000,
            heal_ms: 10_000,
            refresh_ms: [(B, 2_000)].into_iter().collect(),
            ..AdminWorld::default()
        }
    }

    fn with_topic(image: &mut MetadataImage, name: &str, id: u128) {
        image.topic_ids.insert(name.to_owned(), TopicId(id));
    }

    /// b's image with mirror `m` from `source` and its extra `properties`.
    fn destination(source: ClusterIndex, properties: &[(&str, &str)]) -> MetadataImage {
        let mut image = MetadataImage::default();
        let mut configs: BTreeMap<String, String> = properties
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        configs.insert(
            BOOTSTRAP_SERVERS_CONFIG.to_owned(),
            format!("{}-broker-1", source.name()),
        );
        configs.insert(SOURCE_CLUSTER_ID_CONFIG.to_owned(), source.cluster_id());
        image
            .configs
            .insert(ConfigResource::Mirror("m".to_owned()), configs);
        image
    }

    fn set_config(image: &mut MetadataImage, resource: ConfigResource, key: &str, value: &str) {
        image
            .configs
            .entry(resource)
            .or_default()
            .insert(key.to_owned(), value.to_owned());
    }

    fn mirrored(image: &mut MetadataImage, topic: &str, desired: &str) {
        with_topic(image, topic, 7);
        let resource = ConfigResource::Topic(topic.to_owned());
        set_config(image, resource, MIRROR_NAME_CONFIG, desired);
    }

    fn record(cluster: ClusterIndex, finished_ms: i64, action: AdminAction) -> AdminOpRecord {
        let topics: Vec<(String, ErrorCode)> = match &action {
            AdminAction::AlterTopicConfigs { topics, .. } => topics
                .iter()
                .map(|t| (t.clone(), ErrorCode::None))
                .collect(),
            _ => Vec::new(),
        };
        AdminOpRecord {
            op: AdminOp {
                index: 0,
                cluster,
                kind: AdminOpKind::AlterTopicConfigs,
                at_ms: 0,
                mirror: String::new(),
                action,
            },
            outcome: Some(AdminOutcome::answered(ErrorCode::None, topics, finished_ms)),
        }
    }

    fn check(
        a: &MetadataImage,
        b: &MetadataImage,
        ops: &[AdminOpRecord],
    ) -> (Vec<String>, SyncJudged) {
        let images: Images<'_> = [(A, a), (B, b)].into_iter().collect();
        let (violations, judged) = check_images(26_250, &images, &world(), ops);
        (violations.into_iter().map(|v| v.detail).collect(), judged)
    }

    #[test]
    fn a_source_topic_the_include_admits_must_be_adopted() {
        let mut a = MetadataImage::default();
        with_topic(&mut a, "orders", 1);
        with_topic(&mut a, "audit", 2);
        let mut b = destination(A, &[(TOPICS_INCLUDE_CONFIG, "orders.*")]);
        let (problems, judged) = check(&a, &b, &[]);
        assert_eq!(judged.adoptions, 1, "audit is not admitted");
        assert!(
            problems[0].contains("never adopted a's orders"),
            "{problems:?}"
        );
        with_topic(&mut b, "orders", 1);
        assert_eq!(
            check(&a, &b, &[]),
            (
                Vec::new(),
                SyncJudged {
                    adoptions: 1,
                    ..SyncJudged::default()
                }
            )
        );
        // Excluded, or created on the source too late for the sync: not judged.
        let b = destination(
            A,
            &[
                (TOPICS_INCLUDE_CONFIG, ".*"),
                (TOPICS_EXCLUDE_CONFIG, "orders"),
            ],
        );
        assert_eq!(check(&a, &b, &[]).1.adoptions, 0);
    }

    #[test]
    fn a_mirrored_topic_the_exclude_matches_must_leave_the_mirror() {
        let a = MetadataImage::default();
        let mut b = destination(A, &[(TOPICS_EXCLUDE_CONFIG, "orders")]);
        mirrored(&mut b, "orders", "m");
        let (problems, judged) = check(&a, &b, &[]);
        assert_eq!(judged.exclusions, 1);
        assert!(problems[0].contains("still mirrored by m"), "{problems:?}");
        let mut b = destination(A, &[(TOPICS_EXCLUDE_CONFIG, "orders")]);
        mirrored(&mut b, "orders", "m.removed");
        assert_eq!(
            check(&a, &b, &[]),
            (
                Vec::new(),
                SyncJudged {
                    exclusions: 1,
                    ..SyncJudged::default()
                }
            )
        );
        // An alter answered at 24 s left the sync too little time.
        let late = record(
            B,
            24_000,
            AdminAction::AlterMirror {
                configs: Vec::new(),
            },
        );
        let mut late = late;
        late.op.mirror = "m".to_owned();
        let mut b = destination(A, &[(TOPICS_EXCLUDE_CONFIG, "orders")]);
        mirrored(&mut b, "orders", "m");
        assert_eq!(check(&a, &b, &[late]), (Vec::new(), SyncJudged::default()));
    }

    #[test]
    fn a_config_set_on_the_source_must_reach_the_mirror_unless_excluded() {
        let set = |key: &str, value: &str, at| {
            record(
                A,
                at,
                AdminAction::AlterTopicConfigs {
                    topics: vec!["orders".to_owned()],
                    configs: vec![(key.to_owned(), value.to_owned())],
                },
            )
        };
        let orders = || ConfigResource::Topic("orders".to_owned());
        let mut a = MetadataImage::default();
        with_topic(&mut a, "orders", 1);
        set_config(&mut a, orders(), "retention.ms", "1000");
        set_config(&mut a, orders(), "segment.bytes", "4096");
        let mut b = destination(A, &[(TOPIC_PROPERTIES_EXCLUDE_CONFIG, "segment.bytes")]);
        mirrored(&mut b, "orders", "m");
        let ops = [
            set("retention.ms", "1000", 5_000),
            set("segment.bytes", "4096", 5_000),
        ];
        let (problems, judged) = check(&a, &b, &ops);
        assert_eq!(judged.configs, 1, "segment.bytes is excluded");
        assert!(
            problems[0].contains("retention.ms is None here"),
            "{problems:?}"
        );
        set_config(&mut b, orders(), "retention.ms", "1000");
        assert!(check(&a, &b, &ops).0.is_empty());
        // The source's value changed since (by something else): not judged.
        set_config(&mut a, orders(), "retention.ms", "2000");
        assert_eq!(check(&a, &b, &ops).1.configs, 0);
    }

    #[test]
    fn acls_follow_a_single_source_and_several_sources_are_not_judged() {
        let binding = AclBinding {
            resource: "topic:orders".into(),
            principal: "User:billing".into(),
            operation: "Read".into(),
            permission: "Allow".into(),
        };
        let acl = |create, at| {
            record(
                A,
                at,
                AdminAction::Acls {
                    create,
                    bindings: vec![binding.clone()],
                },
            )
        };
        let mut a = MetadataImage::default();
        a.acls.insert(binding.clone());
        let mut b = destination(A, &[]);
        let (problems, judged) = check(&a, &b, &[acl(true, 3_000)]);
        assert_eq!(judged.acls, 1);
        assert!(problems[0].contains("missing here"), "{problems:?}");
        // Gone from the source without a delete there: another mirror's sync took it.
        let (problems, judged) = check(&MetadataImage::default(), &b, &[acl(true, 3_000)]);
        assert!(problems.is_empty());
        assert_eq!((judged.acls, judged.acls_overwritten_at_source), (0, 1));
        b.acls.insert(binding.clone());
        a.acls.clear();
        let (problems, _) = check(&a, &b, &[acl(true, 3_000), acl(false, 6_000)]);
        assert!(problems[0].contains("still held"), "{problems:?}");
        // A second mirror from c: the two syncs overwrite each other's bindings.
        let mut c_properties = destination(C, &[]).configs;
        let second = c_properties
            .remove(&ConfigResource::Mirror("m".to_owned()))
            .expect("made above");
        b.configs
            .insert(ConfigResource::Mirror("m2".to_owned()), second);
        let (problems, judged) = check(&a, &b, &[acl(true, 3_000), acl(false, 6_000)]);
        assert!(problems.is_empty());
        assert_eq!((judged.acls, judged.acls_several_sources), (0, 1));
    }

    #[test]
    fn a_topic_the_operator_removed_is_not_adopted_again() {
        let alter = |operation, unanswered, at| {
            let mut op = record(
                B,
                at,
                AdminAction::AlterTopics {
                    operation,
                    topics: vec!["orders".to_owned()],
                    include: Vec::new(),
                },
            );
            op.op.mirror = "m".to_owned();
            let outcome = op.outcome.as_mut().expect("made finished");
            outcome.topics = vec![("orders".to_owned(), ErrorCode::None)];
            outcome.unanswered = unanswered;
            op
        };
        let a = MetadataImage::default();
        let mut b = destination(A, &[(TOPICS_INCLUDE_CONFIG, "orders")]);
        mirrored(&mut b, "orders", "m");
        let removed = [alter(MirrorTopicOperation::Remove, 0, 5_000)];
        let (problems, judged) = check(&a, &b, &removed);
        assert_eq!(judged.rediscoveries, 1);
        assert!(
            problems[0].contains("adopted a topic its operator stopped"),
            "{problems:?}"
        );
        // Added back by the operator, or by an add whose attempt may land late: not judged.
        let readded = [
            removed[0].clone(),
            alter(MirrorTopicOperation::Add, 0, 6_000),
        ];
        assert!(check(&a, &b, &readded).0.is_empty());
        let late = [
            alter(MirrorTopicOperation::Add, 1, 1_000),
            removed[0].clone(),
        ];
        assert!(check(&a, &b, &late).0.is_empty());
        // Stopped, as it should be.
        let mut b = destination(A, &[(TOPICS_INCLUDE_CONFIG, "orders")]);
        mirrored(&mut b, "orders", "m.removed");
        assert!(check(&a, &b, &removed).0.is_empty());
    }
}
