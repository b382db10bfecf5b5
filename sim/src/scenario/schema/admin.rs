//! The admin timeline: KIP-1279 mirror operations and topic operations at fixed times, one
//! table type per operation.
//!
//! Contract: an operation is written as a table of its operation's array
//! (`[[admin.create_mirror]]`, `[[admin.add_topics]]`, …) whose type holds exactly the keys that
//! operation uses, so serde refuses a key of another operation as unknown and a missing
//! required key (a mirror operation's `mirror`, `create_mirror`'s `source`,
//! `create_partitions`' `partitions`) at its table. In memory the operations form one list,
//! `Scenario::admin`, in file order: each cluster's operations run in that order, and an
//! operation is numbered by its place in it. Operations keep the names reports use
//! ([`AdminOpKind::name`]). Clusters, topics, names and ranges are checked by `validate`.

use std::collections::BTreeMap;

use mirrorsim::protocol::MirrorTopicOperation;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use toml::Spanned;

use super::entries::{in_file_order, positioned, serialize_entry, tables_only};

/// One operation of the admin timeline, sent for the destination cluster `cluster`: its
/// operation and that operation's table. Serialises as the file holds it, `{OP: [TABLE]}`.
#[derive(Debug, Clone, PartialEq)]
pub enum AdminOpSpec {
    /// `create_mirror`.
    CreateMirror(CreateMirrorOp),
    /// `alter_mirror`.
    AlterMirror(AlterMirrorOp),
    /// `add_topics`.
    AddTopics(AddTopicsOp),
    /// `remove_topics` (a failover).
    RemoveTopics(MirrorTopicsOp),
    /// `pause_topics`.
    PauseTopics(MirrorTopicsOp),
    /// `resume_topics`.
    ResumeTopics(MirrorTopicsOp),
    /// `recover_topics`.
    RecoverTopics(MirrorTopicsOp),
    /// `delete_mirror`.
    DeleteMirror(MirrorOp),
    /// `describe_mirror`.
    DescribeMirror(MirrorOp),
    /// `delete_records`.
    DeleteRecords(TopicsOp),
    /// `delete_topics`.
    DeleteTopics(TopicsOp),
    /// `create_partitions`.
    CreatePartitions(CreatePartitionsOp),
    /// `create_topics` (deferred topics of `[[topics]]`).
    CreateTopics(TopicsOp),
    /// `alter_topic_configs`.
    AlterTopicConfigs(TopicConfigsOp),
    /// `create_acls`.
    CreateAcls(AclsOp),
    /// `delete_acls`.
    DeleteAcls(AclsOp),
}

impl AdminOpSpec {
    /// The operation.
    pub fn kind(&self) -> AdminOpKind {
        match self {
            Self::CreateMirror(_) => AdminOpKind::CreateMirror,
            Self::AlterMirror(_) => AdminOpKind::AlterMirror,
            Self::AddTopics(_) => AdminOpKind::AddTopics,
            Self::RemoveTopics(_) => AdminOpKind::RemoveTopics,
            Self::PauseTopics(_) => AdminOpKind::PauseTopics,
            Self::ResumeTopics(_) => AdminOpKind::ResumeTopics,
            Self::RecoverTopics(_) => AdminOpKind::RecoverTopics,
            Self::DeleteMirror(_) => AdminOpKind::DeleteMirror,
            Self::DescribeMirror(_) => AdminOpKind::DescribeMirror,
            Self::DeleteRecords(_) => AdminOpKind::DeleteRecords,
            Self::DeleteTopics(_) => AdminOpKind::DeleteTopics,
            Self::CreatePartitions(_) => AdminOpKind::CreatePartitions,
            Self::CreateTopics(_) => AdminOpKind::CreateTopics,
            Self::AlterTopicConfigs(_) => AdminOpKind::AlterTopicConfigs,
            Self::CreateAcls(_) => AdminOpKind::CreateAcls,
            Self::DeleteAcls(_) => AdminOpKind::DeleteAcls,
        }
    }

    /// The earliest start, in ms from the start of the fault phase.
    pub fn at_ms(&self) -> u64 {
        match self {
            Self::CreateMirror(CreateMirrorOp { at_ms, .. })
            | Self::AlterMirror(AlterMirrorOp { at_ms, .. })
            | Self::AddTopics(AddTopicsOp { at_ms, .. })
            | Self::RemoveTopics(MirrorTopicsOp { at_ms, .. })
            | Self::PauseTopics(MirrorTopicsOp { at_ms, .. })
            | Self::ResumeTopics(MirrorTopicsOp { at_ms, .. })
            | Self::RecoverTopics(MirrorTopicsOp { at_ms, .. })
            | Self::DeleteMirror(MirrorOp { at_ms, .. })
            | Self::DescribeMirror(MirrorOp { at_ms, .. })
            | Self::DeleteRecords(TopicsOp { at_ms, .. })
            | Self::DeleteTopics(TopicsOp { at_ms, .. })
            | Self::CreatePartitions(CreatePartitionsOp { at_ms, .. })
            | Self::CreateTopics(TopicsOp { at_ms, .. })
            | Self::AlterTopicConfigs(TopicConfigsOp { at_ms, .. })
            | Self::CreateAcls(AclsOp { at_ms, .. })
            | Self::DeleteAcls(AclsOp { at_ms, .. }) => *at_ms,
        }
    }

    /// The destination cluster letter: its controller (or a broker) gets the request.
    pub fn cluster(&self) -> &Spanned<String> {
        match self {
            Self::CreateMirror(CreateMirrorOp { cluster, .. })
            | Self::AlterMirror(AlterMirrorOp { cluster, .. })
            | Self::AddTopics(AddTopicsOp { cluster, .. })
            | Self::RemoveTopics(MirrorTopicsOp { cluster, .. })
            | Self::PauseTopics(MirrorTopicsOp { cluster, .. })
            | Self::ResumeTopics(MirrorTopicsOp { cluster, .. })
            | Self::RecoverTopics(MirrorTopicsOp { cluster, .. })
            | Self::DeleteMirror(MirrorOp { cluster, .. })
            | Self::DescribeMirror(MirrorOp { cluster, .. })
            | Self::DeleteRecords(TopicsOp { cluster, .. })
            | Self::DeleteTopics(TopicsOp { cluster, .. })
            | Self::CreatePartitions(CreatePartitionsOp { cluster, .. })
            | Self::CreateTopics(TopicsOp { cluster, .. })
            | Self::AlterTopicConfigs(TopicConfigsOp { cluster, .. })
            | Self::CreateAcls(AclsOp { cluster, .. })
            | Self::DeleteAcls(AclsOp { cluster, .. }) => cluster,
        }
    }

    /// The mirror a mirror operation is about; `None` for a topic operation.
    pub fn mirror(&self) -> Option<&Spanned<String>> {
        match self {
            Self::CreateMirror(CreateMirrorOp { mirror, .. })
            | Self::AlterMirror(AlterMirrorOp { mirror, .. })
            | Self::AddTopics(AddTopicsOp { mirror, .. })
            | Self::RemoveTopics(MirrorTopicsOp { mirror, .. })
            | Self::PauseTopics(MirrorTopicsOp { mirror, .. })
            | Self::ResumeTopics(MirrorTopicsOp { mirror, .. })
            | Self::RecoverTopics(MirrorTopicsOp { mirror, .. })
            | Self::DeleteMirror(MirrorOp { mirror, .. })
            | Self::DescribeMirror(MirrorOp { mirror, .. }) => Some(mirror),
            Self::DeleteRecords(_)
            | Self::DeleteTopics(_)
            | Self::CreatePartitions(_)
            | Self::CreateTopics(_)
            | Self::AlterTopicConfigs(_)
            | Self::CreateAcls(_)
            | Self::DeleteAcls(_) => None,
        }
    }

    /// The topics an operation on topics names; `None` for the operations that take none
    /// (`create_mirror`, `alter_mirror`, `delete_mirror`, `describe_mirror`).
    pub fn topics(&self) -> Option<&[Spanned<String>]> {
        match self {
            Self::AddTopics(AddTopicsOp { topics, .. })
            | Self::RemoveTopics(MirrorTopicsOp { topics, .. })
            | Self::PauseTopics(MirrorTopicsOp { topics, .. })
            | Self::ResumeTopics(MirrorTopicsOp { topics, .. })
            | Self::RecoverTopics(MirrorTopicsOp { topics, .. })
            | Self::DeleteRecords(TopicsOp { topics, .. })
            | Self::DeleteTopics(TopicsOp { topics, .. })
            | Self::CreatePartitions(CreatePartitionsOp { topics, .. })
            | Self::CreateTopics(TopicsOp { topics, .. }) => Some(topics),
            Self::AlterTopicConfigs(TopicConfigsOp { topic, .. }) => {
                Some(std::slice::from_ref(topic))
            }
            Self::CreateMirror(_)
            | Self::AlterMirror(_)
            | Self::DeleteMirror(_)
            | Self::DescribeMirror(_)
            | Self::CreateAcls(_)
            | Self::DeleteAcls(_) => None,
        }
    }
}

impl Serialize for AdminOpSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let name = self.kind().name();
        match self {
            Self::CreateMirror(table) => serialize_entry(serializer, name, table),
            Self::AlterMirror(table) => serialize_entry(serializer, name, table),
            Self::AddTopics(table) => serialize_entry(serializer, name, table),
            Self::RemoveTopics(table)
            | Self::PauseTopics(table)
            | Self::ResumeTopics(table)
            | Self::RecoverTopics(table) => serialize_entry(serializer, name, table),
            Self::DeleteMirror(table) | Self::DescribeMirror(table) => {
                serialize_entry(serializer, name, table)
            }
            Self::DeleteRecords(table) | Self::DeleteTopics(table) => {
                serialize_entry(serializer, name, table)
            }
            Self::CreatePartitions(table) => serialize_entry(serializer, name, table),
            Self::CreateTopics(table) => serialize_entry(serializer, name, table),
            Self::AlterTopicConfigs(table) => serialize_entry(serializer, name, table),
            Self::CreateAcls(table) | Self::DeleteAcls(table) => {
                serialize_entry(serializer, name, table)
            }
        }
    }
}

/// Reads the `admin` table, every operation's array merged into one list in file order (the
/// `deserialize_with` of `Scenario::admin`).
pub(super) fn deserialize_in_file_order<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<AdminOpSpec>, D::Error> {
    let tables: AdminTables = tables_only(
        deserializer,
        "a table of admin operations by operation, e.g. `[[admin.create_mirror]]`",
    )?;
    Ok(in_file_order([
        positioned(tables.create_mirror, AdminOpSpec::CreateMirror),
        positioned(tables.alter_mirror, AdminOpSpec::AlterMirror),
        positioned(tables.add_topics, AdminOpSpec::AddTopics),
        positioned(tables.remove_topics, AdminOpSpec::RemoveTopics),
        positioned(tables.pause_topics, AdminOpSpec::PauseTopics),
        positioned(tables.resume_topics, AdminOpSpec::ResumeTopics),
        positioned(tables.recover_topics, AdminOpSpec::RecoverTopics),
        positioned(tables.delete_mirror, AdminOpSpec::DeleteMirror),
        positioned(tables.describe_mirror, AdminOpSpec::DescribeMirror),
        positioned(tables.delete_records, AdminOpSpec::DeleteRecords),
        positioned(tables.delete_topics, AdminOpSpec::DeleteTopics),
        positioned(tables.create_partitions, AdminOpSpec::CreatePartitions),
        positioned(tables.create_topics, AdminOpSpec::CreateTopics),
        positioned(tables.alter_topic_configs, AdminOpSpec::AlterTopicConfigs),
        positioned(tables.create_acls, AdminOpSpec::CreateAcls),
        positioned(tables.delete_acls, AdminOpSpec::DeleteAcls),
    ]))
}

/// The `admin` table as the file holds it: one array of tables per operation.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AdminTables {
    #[serde(default)]
    create_mirror: Vec<Spanned<CreateMirrorOp>>,
    #[serde(default)]
    alter_mirror: Vec<Spanned<AlterMirrorOp>>,
    #[serde(default)]
    add_topics: Vec<Spanned<AddTopicsOp>>,
    #[serde(default)]
    remove_topics: Vec<Spanned<MirrorTopicsOp>>,
    #[serde(default)]
    pause_topics: Vec<Spanned<MirrorTopicsOp>>,
    #[serde(default)]
    resume_topics: Vec<Spanned<MirrorTopicsOp>>,
    #[serde(default)]
    recover_topics: Vec<Spanned<MirrorTopicsOp>>,
    #[serde(default)]
    delete_mirror: Vec<Spanned<MirrorOp>>,
    #[serde(default)]
    describe_mirror: Vec<Spanned<MirrorOp>>,
    #[serde(default)]
    delete_records: Vec<Spanned<TopicsOp>>,
    #[serde(default)]
    delete_topics: Vec<Spanned<TopicsOp>>,
    #[serde(default)]
    create_partitions: Vec<Spanned<CreatePartitionsOp>>,
    #[serde(default)]
    create_topics: Vec<Spanned<TopicsOp>>,
    #[serde(default)]
    alter_topic_configs: Vec<Spanned<TopicConfigsOp>>,
    #[serde(default)]
    create_acls: Vec<Spanned<AclsOp>>,
    #[serde(default)]
    delete_acls: Vec<Spanned<AclsOp>>,
}

// The operations' tables. `at_ms` is the earliest start, in ms from the start of the fault
// phase (a cluster's operations run one at a time in list order); `cluster` the destination
// cluster letter.

/// `create_mirror`: a mirror on `cluster` from `source`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CreateMirrorOp {
    /// The earliest start.
    pub at_ms: u64,
    /// The destination cluster letter.
    pub cluster: Spanned<String>,
    /// The mirror's name.
    pub mirror: Spanned<String>,
    /// The source cluster letter: `bootstrap.servers` lists its brokers.
    pub source: Spanned<String>,
    /// Further mirror properties, in key order.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub configs: BTreeMap<String, String>,
}

/// `alter_mirror`: IncrementalAlterConfigs (SET) of the mirror's properties, to the
/// controller: `bootstrap.servers` may name other brokers of the source (the brokers then
/// re-connect) or another cluster's (they refuse it, spec S-15); an unknown key is refused.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AlterMirrorOp {
    /// The earliest start.
    pub at_ms: u64,
    /// The destination cluster letter.
    pub cluster: Spanned<String>,
    /// The mirror.
    pub mirror: Spanned<String>,
    /// The properties set, in key order (at least one).
    pub configs: BTreeMap<String, String>,
}

/// `add_topics`, `remove_topics`, `pause_topics` or `resume_topics` (AlterMirrorTopics), or
/// `recover_topics` (RecoverMirrorTopics, to a broker).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MirrorTopicsOp {
    /// The earliest start.
    pub at_ms: u64,
    /// The destination cluster letter.
    pub cluster: Spanned<String>,
    /// The mirror.
    pub mirror: Spanned<String>,
    /// The topics, in the order the request lists them.
    pub topics: Vec<Spanned<String>>,
}

/// `add_topics` (AddTopicsToMirror, to a broker): [`MirrorTopicsOp`]'s keys and `include`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AddTopicsOp {
    /// The earliest start.
    pub at_ms: u64,
    /// The destination cluster letter.
    pub cluster: Spanned<String>,
    /// The mirror.
    pub mirror: Spanned<String>,
    /// The topics, in the order the request lists them.
    pub topics: Vec<Spanned<String>>,
    /// Patterns appended to the mirror's `mirror.topics.include` with the add (the
    /// prototype's `StartMirrorTopicsOptions.includePatterns`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<Spanned<String>>,
}

impl AddTopicsOp {
    /// An add of `topics` without include patterns (`op`'s time, cluster and mirror).
    pub fn of(op: MirrorTopicsOp) -> AdminOpSpec {
        AdminOpSpec::AddTopics(Self {
            at_ms: op.at_ms,
            cluster: op.cluster,
            mirror: op.mirror,
            topics: op.topics,
            include: Vec::new(),
        })
    }
}

/// `delete_mirror` or `describe_mirror` (both sent to a broker of `cluster`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MirrorOp {
    /// The earliest start.
    pub at_ms: u64,
    /// The destination cluster letter.
    pub cluster: Spanned<String>,
    /// The mirror.
    pub mirror: Spanned<String>,
}

/// `delete_records` (up to the high watermark of every partition, sent to the leaders) or
/// `delete_topics` (to a broker, which checks mirror topics before forwarding).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TopicsOp {
    /// The earliest start.
    pub at_ms: u64,
    /// The cluster letter.
    pub cluster: Spanned<String>,
    /// The topics.
    pub topics: Vec<Spanned<String>>,
}

/// `create_partitions`: the topics grown to `partitions` (sent to a broker, as
/// `delete_topics`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CreatePartitionsOp {
    /// The earliest start.
    pub at_ms: u64,
    /// The cluster letter.
    pub cluster: Spanned<String>,
    /// The topics.
    pub topics: Vec<Spanned<String>>,
    /// Their new partition count.
    pub partitions: i32,
}

/// `alter_topic_configs`: IncrementalAlterConfigs (SET) of one topic's configs, to the
/// controller.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TopicConfigsOp {
    /// The earliest start.
    pub at_ms: u64,
    /// The cluster letter.
    pub cluster: Spanned<String>,
    /// The topic.
    pub topic: Spanned<String>,
    /// The configs set, in key order (at least one).
    pub configs: BTreeMap<String, String>,
}

/// `create_acls` or `delete_acls`: CreateAcls or DeleteAcls of these bindings, to the
/// controller.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AclsOp {
    /// The earliest start.
    pub at_ms: u64,
    /// The cluster letter.
    pub cluster: Spanned<String>,
    /// The bindings (at least one).
    pub acls: Vec<AclSpec>,
}

/// One access-control binding as a scenario writes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AclSpec {
    /// `TYPE:NAME`, e.g. `topic:orders` or `group:billing`.
    pub resource: String,
    /// e.g. `User:alice`.
    pub principal: String,
    /// e.g. `Read`.
    pub operation: String,
    /// `Allow` or `Deny`.
    pub permission: String,
}

impl AclSpec {
    /// The binding the request carries.
    pub fn binding(&self) -> mirrorsim::metadata::AclBinding {
        mirrorsim::metadata::AclBinding {
            resource: self.resource.clone(),
            principal: self.principal.clone(),
            operation: self.operation.clone(),
            permission: self.permission.clone(),
        }
    }
}

/// The operations an admin timeline may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AdminOpKind {
    /// CreateMirror.
    CreateMirror,
    /// IncrementalAlterConfigs of the mirror's properties.
    AlterMirror,
    /// AddTopicsToMirror.
    AddTopics,
    /// RemoveTopicsFromMirror (failover).
    RemoveTopics,
    /// PauseMirrorTopics.
    PauseTopics,
    /// ResumeMirrorTopics.
    ResumeTopics,
    /// RecoverMirrorTopics (to a broker): FAILED partitions retry with a fresh budget.
    RecoverTopics,
    /// DeleteMirror.
    DeleteMirror,
    /// DescribeMirror: every partition's state, lag and last mirrored epoch, printed with the
    /// outcome.
    DescribeMirror,
    /// DeleteRecords up to the high watermark of every partition of the topics (to their
    /// leaders, found with a Metadata request).
    DeleteRecords,
    /// DeleteTopics (to a broker, which checks mirror topics before forwarding).
    DeleteTopics,
    /// CreatePartitions to `partitions` (to a broker, as DeleteTopics).
    CreatePartitions,
    /// CreateTopics of deferred topics (to the controller).
    CreateTopics,
    /// IncrementalAlterConfigs of a topic's configs (to the controller).
    AlterTopicConfigs,
    /// CreateAcls (to the controller).
    CreateAcls,
    /// DeleteAcls (to the controller).
    DeleteAcls,
}

impl AdminOpKind {
    /// Every operation.
    pub const ALL: [Self; 16] = [
        Self::CreateMirror,
        Self::AlterMirror,
        Self::AddTopics,
        Self::RemoveTopics,
        Self::PauseTopics,
        Self::ResumeTopics,
        Self::RecoverTopics,
        Self::DeleteMirror,
        Self::DescribeMirror,
        Self::DeleteRecords,
        Self::DeleteTopics,
        Self::CreatePartitions,
        Self::CreateTopics,
        Self::AlterTopicConfigs,
        Self::CreateAcls,
        Self::DeleteAcls,
    ];

    /// The name scenario files (the operation's table, `[[admin.NAME]]`) and reports use.
    pub fn name(self) -> &'static str {
        match self {
            Self::CreateMirror => "create_mirror",
            Self::AlterMirror => "alter_mirror",
            Self::AddTopics => "add_topics",
            Self::RemoveTopics => "remove_topics",
            Self::PauseTopics => "pause_topics",
            Self::ResumeTopics => "resume_topics",
            Self::RecoverTopics => "recover_topics",
            Self::DeleteMirror => "delete_mirror",
            Self::DescribeMirror => "describe_mirror",
            Self::DeleteRecords => "delete_records",
            Self::DeleteTopics => "delete_topics",
            Self::CreatePartitions => "create_partitions",
            Self::CreateTopics => "create_topics",
            Self::AlterTopicConfigs => "alter_topic_configs",
            Self::CreateAcls => "create_acls",
            Self::DeleteAcls => "delete_acls",
        }
    }

    /// The AlterMirrorTopics operation of a mirror topic operation; `None` for the others.
    pub fn topic_operation(self) -> Option<MirrorTopicOperation> {
        match self {
            Self::AddTopics => Some(MirrorTopicOperation::Add),
            Self::RemoveTopics => Some(MirrorTopicOperation::Remove),
            Self::PauseTopics => Some(MirrorTopicOperation::Pause),
            Self::ResumeTopics => Some(MirrorTopicOperation::Resume),
            Self::CreateMirror
            | Self::AlterMirror
            | Self::RecoverTopics
            | Self::DeleteMirror
            | Self::DescribeMirror
            | Self::DeleteRecords
            | Self::DeleteTopics
            | Self::CreatePartitions
            | Self::CreateTopics
            | Self::AlterTopicConfigs
            | Self::CreateAcls
            | Self::DeleteAcls => None,
        }
    }
}
