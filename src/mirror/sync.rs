//! The pure parts of KIP-1279's periodic sync (spec §7): the mirror properties that steer it,
//! the name filters, which topic configs are copied, which ACLs are added or deleted, and the
//! group offset clamp. The broker's sync round (`crate::broker`) does the I/O around them.
//!
//! Contract:
//! - Name filters (`mirror.topics.include`, `mirror.topics.exclude`, `mirror.groups.include`,
//!   `mirror.groups.exclude`) are comma-separated patterns. Kafka reads them as Java regular
//!   expressions; this model accepts the subset operators use for names: literal characters,
//!   `.` (any one character), `.*` (any sequence) and `\.` (a literal dot). Anything else
//!   (`[`, `(`, `|`, `+`, `?`, `^`, `$`, `{`, `*` without a `.`) is an invalid config, refused
//!   by CreateMirror with `InvalidConfig`, never silently read another way.
//! - Topic configs: a source topic's dynamic configs are copied unless their name is in
//!   `mirror.topic.properties.exclude` (default [`DEFAULT_TOPIC_PROPERTIES_EXCLUDE`]);
//!   `mirror.name` is never copied. Only SETs: a config the source lacks is left alone.
//! - ACLs: every source binding matching `mirror.acl.include` (default `*`: all) that the
//!   destination lacks is created; every destination binding absent on the source is deleted,
//!   except bindings on the mirror resources themselves (`cluster-mirror:*`), which belong to
//!   the destination.
//! - Group offsets: `synced = max(dest log start, min(source committed, dest log end))`, with
//!   the source's leader epoch when the offset is copied unchanged, else the destination's
//!   epoch at the clamped offset; no commit when that epoch is unknown (spec §7 item 6).

use std::collections::BTreeSet;

use crate::metadata::AclBinding;

/// `bootstrap.servers`: the mirror property that names the source cluster.
pub const BOOTSTRAP_SERVERS_CONFIG: &str = "bootstrap.servers";
/// `mirror.topics.include`: source topics the mirror adopts on its own (default: none).
pub const TOPICS_INCLUDE_CONFIG: &str = "mirror.topics.include";
/// `mirror.topics.exclude`: source topics never adopted (default `__.*`, internal topics).
pub const TOPICS_EXCLUDE_CONFIG: &str = "mirror.topics.exclude";
/// `mirror.groups.include` (default `.*`).
pub const GROUPS_INCLUDE_CONFIG: &str = "mirror.groups.include";
/// `mirror.groups.exclude` (default none).
pub const GROUPS_EXCLUDE_CONFIG: &str = "mirror.groups.exclude";
/// `mirror.topic.properties.exclude`.
pub const TOPIC_PROPERTIES_EXCLUDE_CONFIG: &str = "mirror.topic.properties.exclude";
/// `mirror.acl.include`: `resource;principal;operation;permission` rules, `*` matching
/// anything in a field, separated by commas (default `*`: every binding).
pub const ACL_INCLUDE_CONFIG: &str = "mirror.acl.include";

/// The topic configs never copied by default (spec §7 item 5); `mirror.name` is always excluded.
pub const DEFAULT_TOPIC_PROPERTIES_EXCLUDE: &[&str] = &[
    "follower.replication.throttled.replicas",
    "leader.replication.throttled.replicas",
    "message.timestamp.difference.max.ms",
    "log.message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms",
    "message.timestamp.type",
    "unclean.leader.election.enable",
    "min.insync.replicas",
    "mirror.name",
];

/// ACL resource prefix of the mirror resources, never deleted by the ACL sync.
pub const MIRROR_ACL_RESOURCE_PREFIX: &str = "cluster-mirror:";

/// One element of a name pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Atom {
    Literal(char),
    AnyOne,
    AnySequence,
}

/// A name pattern (see the module doc for the accepted subset).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamePattern {
    atoms: Vec<Atom>,
}

impl NamePattern {
    /// Parses one pattern.
    pub fn parse(pattern: &str) -> Result<Self, String> {
        let mut atoms = Vec::new();
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '.' if chars.peek() == Some(&'*') => {
                    chars.next();
                    atoms.push(Atom::AnySequence);
                }
                '.' => atoms.push(Atom::AnyOne),
                '\\' => match chars.next() {
                    Some('.') => atoms.push(Atom::Literal('.')),
                    other => {
                        return Err(format!(
                            "{pattern:?}: only \\. may be escaped, not {other:?}"
                        ))
                    }
                },
                '[' | ']' | '(' | ')' | '|' | '+' | '?' | '^' | '$' | '{' | '}' | '*' => {
                    return Err(format!(
                        "{pattern:?}: {c:?} is outside the supported pattern subset \
                         (literals, '.', '.*', '\\.')"
                    ))
                }
                c => atoms.push(Atom::Literal(c)),
            }
        }
        Ok(Self { atoms })
    }

    /// Whether the whole of `name` matches (Java's `Pattern.matches`).
    pub fn matches(&self, name: &str) -> bool {
        let name: Vec<char> = name.chars().collect();
        // Positions of `name` reachable after each atom; a set keeps it linear per atom.
        let mut positions = BTreeSet::from([0usize]);
        for atom in &self.atoms {
            let mut next = BTreeSet::new();
            for &at in &positions {
                match atom {
                    Atom::Literal(c) => {
                        if name.get(at) == Some(c) {
                            next.insert(at + 1);
                        }
                    }
                    Atom::AnyOne => {
                        if at < name.len() {
                            next.insert(at + 1);
                        }
                    }
                    Atom::AnySequence => next.extend(at..=name.len()),
                }
            }
            positions = next;
        }
        positions.contains(&name.len())
    }
}

/// A comma-separated list of patterns; an empty list matches nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NameFilter {
    patterns: Vec<NamePattern>,
}

impl NameFilter {
    /// Parses a list (blank entries are ignored).
    pub fn parse(value: &str) -> Result<Self, String> {
        let patterns = value
            .split(',')
            .map(str::trim)
            .filter(|pattern| !pattern.is_empty())
            .map(NamePattern::parse)
            .collect::<Result<_, _>>()?;
        Ok(Self { patterns })
    }

    /// Whether any pattern matches `name`.
    pub fn matches(&self, name: &str) -> bool {
        self.patterns.iter().any(|pattern| pattern.matches(name))
    }
}

/// One `mirror.acl.include` rule: `resource;principal;operation;permission`, `*` for any.
#[derive(Debug, Clone, PartialEq, Eq)]
struct AclRule {
    fields: [String; 4],
}

impl AclRule {
    fn parse(rule: &str) -> Result<Self, String> {
        if rule == "*" {
            return Ok(Self {
                fields: std::array::from_fn(|_| "*".to_owned()),
            });
        }
        let parts: Vec<&str> = rule.split(';').map(str::trim).collect();
        let fields: [String; 4] = parts
            .iter()
            .map(|part| (*part).to_owned())
            .collect::<Vec<_>>()
            .try_into()
            .map_err(|_| format!("{rule:?} is not resource;principal;operation;permission or *"))?;
        Ok(Self { fields })
    }

    fn matches(&self, binding: &AclBinding) -> bool {
        let values = [
            &binding.resource,
            &binding.principal,
            &binding.operation,
            &binding.permission,
        ];
        self.fields
            .iter()
            .zip(values)
            .all(|(field, value)| field == "*" || field == value)
    }
}

/// The periodic sync's settings of one mirror, read from its properties.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncSettings {
    /// Source topics adopted on their own.
    pub topics_include: NameFilter,
    /// Source topics never adopted.
    pub topics_exclude: NameFilter,
    /// Groups whose offsets are synced.
    pub groups_include: NameFilter,
    /// Groups never synced.
    pub groups_exclude: NameFilter,
    /// Topic configs never copied.
    pub topic_properties_exclude: BTreeSet<String>,
    acl_include: Vec<AclRule>,
}

impl SyncSettings {
    /// Reads the settings from a mirror's properties (absent ones take their defaults).
    pub fn from_properties<'a>(
        mut get: impl FnMut(&str) -> Option<&'a str>,
    ) -> Result<Self, String> {
        let filter = |value: Option<&str>, default: &str, name: &str| {
            NameFilter::parse(value.unwrap_or(default)).map_err(|error| format!("{name}: {error}"))
        };
        let topics_include = filter(get(TOPICS_INCLUDE_CONFIG), "", TOPICS_INCLUDE_CONFIG)?;
        let topics_exclude = filter(get(TOPICS_EXCLUDE_CONFIG), "__.*", TOPICS_EXCLUDE_CONFIG)?;
        let groups_include = filter(get(GROUPS_INCLUDE_CONFIG), ".*", GROUPS_INCLUDE_CONFIG)?;
        let groups_exclude = filter(get(GROUPS_EXCLUDE_CONFIG), "", GROUPS_EXCLUDE_CONFIG)?;
        let mut topic_properties_exclude: BTreeSet<String> =
            match get(TOPIC_PROPERTIES_EXCLUDE_CONFIG) {
                Some(value) => value
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
        topic_properties_exclude.insert(crate::mirror::state::MIRROR_NAME_CONFIG.to_owned());
        let acl_include = get(ACL_INCLUDE_CONFIG)
            .unwrap_or("*")
            .split(',')
            .map(str::trim)
            .filter(|rule| !rule.is_empty())
            .map(AclRule::parse)
            .collect::<Result<_, _>>()
            .map_err(|error| format!("{ACL_INCLUDE_CONFIG}: {error}"))?;
        Ok(Self {
            topics_include,
            topics_exclude,
            groups_include,
            groups_exclude,
            topic_properties_exclude,
            acl_include,
        })
    }

    /// Whether the mirror adopts source topic `name` on its own.
    pub fn adopts_topic(&self, name: &str) -> bool {
        self.topics_include.matches(name) && !self.topics_exclude.matches(name)
    }

    /// Whether group `name`'s offsets are synced.
    pub fn syncs_group(&self, name: &str) -> bool {
        self.groups_include.matches(name) && !self.groups_exclude.matches(name)
    }

    /// The config SETs that make a destination topic's configs match the source's.
    pub fn config_changes<'a>(
        &self,
        source: impl IntoIterator<Item = (&'a String, &'a String)>,
        destination: impl Fn(&str) -> Option<&'a str>,
    ) -> Vec<(String, Option<String>)> {
        source
            .into_iter()
            .filter(|(name, _)| !self.topic_properties_exclude.contains(name.as_str()))
            .filter(|(name, value)| destination(name) != Some(value.as_str()))
            .map(|(name, value)| (name.clone(), Some(value.clone())))
            .collect()
    }

    /// The bindings to create and to delete on the destination.
    pub fn acl_changes(
        &self,
        source: &BTreeSet<AclBinding>,
        destination: &BTreeSet<AclBinding>,
    ) -> (Vec<AclBinding>, Vec<AclBinding>) {
        let included = |binding: &AclBinding| self.acl_include.iter().any(|r| r.matches(binding));
        let wanted: BTreeSet<&AclBinding> = source.iter().filter(|b| included(b)).collect();
        let create = wanted
            .iter()
            .filter(|binding| !destination.contains(**binding))
            .map(|binding| (*binding).clone())
            .collect();
        let delete = destination
            .iter()
            .filter(|binding| !binding.resource.starts_with(MIRROR_ACL_RESOURCE_PREFIX))
            .filter(|binding| !source.contains(*binding))
            .cloned()
            .collect();
        (create, delete)
    }
}

/// Where a source group offset lands on the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetBounds {
    /// The destination's log start offset and the leader epoch there.
    pub log_start: (i64, i32),
    /// The destination's log end as clients see it (the high watermark) and its epoch.
    pub log_end: (i64, i32),
}

/// `include` (a `mirror.topics.include` value) with `patterns` appended, those it lacks, in
/// order: what AddTopicsToMirror's include patterns make of it (the prototype's
/// `startMirrorTopics` with `includePatterns`); `None` when it has them all.
pub fn include_with_patterns(include: &str, patterns: &[String]) -> Option<String> {
    let mut entries: Vec<&str> = include
        .split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .collect();
    let before = entries.len();
    for pattern in patterns {
        if !entries.contains(&pattern.as_str()) {
            entries.push(pattern);
        }
    }
    (entries.len() > before).then(|| entries.join(","))
}

/// The clamped offset and leader epoch to commit for a source commit `(offset, epoch)`; `None`
/// when the epoch to use is unknown (the spec skips the partition then), or when the source
/// commit's leader epoch is newer than the epoch at the destination's log end: the group read
/// records of a source leader the destination has not mirrored from yet, so where the two logs
/// still agree is unknown — after an unclean election in the source they part below the new
/// epoch's start, and the destination's records there are the deposed leader's, which the group
/// never read (generated seed 15200000000000574: a's group committed 55 in a's epoch 1, b still
/// held a's lost epoch-0 records 38..53, and a sync to b's end, 54, made b's group skip them).
/// The next round syncs once the destination has mirrored that epoch.
pub fn clamp_group_offset(source: (i64, i32), bounds: OffsetBounds) -> Option<(i64, i32)> {
    let (offset, epoch) = source;
    if epoch > bounds.log_end.1 {
        return None;
    }
    let synced = offset.min(bounds.log_end.0).max(bounds.log_start.0);
    let epoch = if synced == offset {
        epoch
    } else if synced == bounds.log_end.0 {
        bounds.log_end.1
    } else {
        bounds.log_start.1
    };
    (epoch >= 0).then_some((synced, epoch))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(p: &str) -> NamePattern {
        NamePattern::parse(p).unwrap()
    }

    #[test]
    fn patterns_match_whole_names() {
        assert!(pattern("orders").matches("orders"));
        assert!(!pattern("orders").matches("orders-2"));
        assert!(pattern("orders.*").matches("orders-2"));
        assert!(pattern("orders.*").matches("orders"));
        assert!(pattern("__.*").matches("__consumer_offsets"));
        assert!(!pattern("__.*").matches("_x"));
        assert!(pattern("a.c").matches("abc"));
        assert!(!pattern("a\\.c").matches("abc"));
        assert!(pattern("a\\.c").matches("a.c"));
        assert!(pattern(".*-eu-.*").matches("pay-eu-1"));
        assert!(!pattern(".*-eu-.*").matches("pay-us-1"));
        assert!(pattern("").matches(""));
    }

    #[test]
    fn patterns_outside_the_subset_are_refused() {
        for bad in [
            "a*", "[ab]", "(a)", "a|b", "a+", "a?", "^a", "a$", "a{2}", "\\d",
        ] {
            assert!(NamePattern::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn defaults_adopt_nothing_and_sync_every_group() {
        let settings = SyncSettings::from_properties(|_| None).unwrap();
        assert!(!settings.adopts_topic("orders"));
        assert!(settings.syncs_group("billing"));
        assert!(settings
            .topic_properties_exclude
            .contains("min.insync.replicas"));
        let adopting =
            SyncSettings::from_properties(|name| (name == TOPICS_INCLUDE_CONFIG).then_some(".*"))
                .unwrap();
        assert!(adopting.adopts_topic("orders"));
        assert!(
            !adopting.adopts_topic("__consumer_offsets"),
            "internal topics excluded"
        );
    }

    #[test]
    fn mirror_name_is_never_copied_even_with_an_empty_exclude_list() {
        let settings = SyncSettings::from_properties(|name| {
            (name == TOPIC_PROPERTIES_EXCLUDE_CONFIG).then_some("")
        })
        .unwrap();
        let source = [
            ("mirror.name".to_owned(), "m".to_owned()),
            ("retention.ms".to_owned(), "1000".to_owned()),
            ("min.insync.replicas".to_owned(), "2".to_owned()),
        ];
        let changes = settings.config_changes(source.iter().map(|(k, v)| (k, v)), |_| None::<&str>);
        assert_eq!(
            changes,
            vec![
                ("retention.ms".to_owned(), Some("1000".to_owned())),
                ("min.insync.replicas".to_owned(), Some("2".to_owned())),
            ]
        );
    }

    #[test]
    fn config_changes_skip_equal_and_excluded_values() {
        let settings = SyncSettings::from_properties(|_| None).unwrap();
        let source = [
            ("retention.ms".to_owned(), "1000".to_owned()),
            ("cleanup.policy".to_owned(), "compact".to_owned()),
            ("min.insync.replicas".to_owned(), "2".to_owned()),
        ];
        let changes = settings.config_changes(source.iter().map(|(k, v)| (k, v)), |name| {
            (name == "retention.ms").then_some("1000")
        });
        assert_eq!(
            changes,
            vec![("cleanup.policy".to_owned(), Some("compact".to_owned()))]
        );
    }

    fn acl(resource: &str, principal: &str) -> AclBinding {
        AclBinding {
            resource: resource.into(),
            principal: principal.into(),
            operation: "Read".into(),
            permission: "Allow".into(),
        }
    }

    #[test]
    fn acl_sync_adds_missing_deletes_extra_and_keeps_mirror_resources() {
        let settings = SyncSettings::from_properties(|name| {
            (name == ACL_INCLUDE_CONFIG).then_some("topic:orders;*;*;*")
        })
        .unwrap();
        let source = BTreeSet::from([acl("topic:orders", "User:a"), acl("topic:x", "User:b")]);
        let destination = BTreeSet::from([
            acl("topic:old", "User:c"),
            acl("cluster-mirror:m", "User:ops"),
        ]);
        let (create, delete) = settings.acl_changes(&source, &destination);
        assert_eq!(create, vec![acl("topic:orders", "User:a")]);
        assert_eq!(delete, vec![acl("topic:old", "User:c")]);
        assert!(SyncSettings::from_properties(|name| {
            (name == ACL_INCLUDE_CONFIG).then_some("topic:x;User:a")
        })
        .is_err());
    }

    #[test]
    fn group_offsets_are_clamped_into_the_destination_log() {
        let bounds = OffsetBounds {
            log_start: (10, 1),
            log_end: (50, 3),
        };
        assert_eq!(clamp_group_offset((30, 2), bounds), Some((30, 2)), "copied");
        assert_eq!(
            clamp_group_offset((80, 3), bounds),
            Some((50, 3)),
            "beyond the end"
        );
        assert_eq!(
            clamp_group_offset((5, 0), bounds),
            Some((10, 1)),
            "below the start"
        );
        assert_eq!(clamp_group_offset((50, 3), bounds), Some((50, 3)));
        assert_eq!(
            clamp_group_offset((45, 4), bounds),
            None,
            "an epoch the destination has not mirrored: where the logs agree is unknown"
        );
        let empty = OffsetBounds {
            log_start: (0, -1),
            log_end: (0, -1),
        };
        assert_eq!(
            clamp_group_offset((7, 0), empty),
            None,
            "epoch unknown: skipped"
        );
    }
}
