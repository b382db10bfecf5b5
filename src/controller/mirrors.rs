//! KIP-1279's mirror admin workflows on the controller (seed design, spec §3).
//!
//! Contract:
//! - **CreateMirror** stores the properties as configs of [`ConfigResource::Mirror`]. The name
//!   must be a legal topic-style name that does not end in `.removed` or `.paused` (those
//!   suffixes carry the desired state in `mirror.name`), must not exist
//!   (`ClusterMirrorAlreadyExists`), and the properties must be a mirror's
//!   (`crate::mirror::properties::validate`: known keys, a usable `bootstrap.servers`, readable
//!   filters and retry settings; else `InvalidConfig`). The source cluster id is recorded with
//!   them (`mirror.source.cluster.id`, which a request may not carry).
//!   The first mirror also creates `__mirror_state` with
//!   [`super::ControllerConfig::mirror_state_partitions`] partitions and
//!   [`super::ControllerConfig::mirror_state_replication_factor`] replicas, in the same batch; while
//!   fewer brokers are alive than that factor, the whole request fails with
//!   `InvalidReplicationFactor` and nothing is written.
//! - **AlterMirrorTopics** changes each topic's `mirror.name`, topic by topic (one batch, per
//!   topic results; a refused topic changes nothing): Add needs a topic that is in no mirror
//!   or whose mirror removed it (a stopped topic may be mirrored again, the failback path),
//!   and then one the sending broker checked in that mirror (`checked_stopped`: its
//!   partitions read STOPPED or UNKNOWN there, `mirror::topic_admin`; else
//!   `MirrorTopicNotStopped`);
//!   Remove needs the topic mirrored or paused by this mirror; Pause needs it mirrored by this
//!   mirror; Resume needs it paused by this mirror. Anything else is
//!   `InvalidClusterMirrorState`; a missing topic `UnknownTopicOrPartition`; an unknown mirror
//!   fails the whole request with `ClusterMirrorNotFound`.
//! - **DeleteMirror** needs every topic of the mirror removed (`mirror.name = <m>.removed`),
//!   else `InvalidClusterMirrorState`. It deletes the mirror's configs and the removed topics'
//!   `mirror.name`, so the name can be reused without old members. (The seed also requires
//!   every partition to be STOPPED: the coordinator knows that, not the controller, so the
//!   admin client checks it with ReadMirrorStates before it asks, as the prototype's broker
//!   does. Tombstoning `__mirror_state` is the brokers' part.)
//! - **ListMirrors** answers from the image.
//! - **BumpLeaderEpochs** (from a partition's leader, with its current broker epoch, else
//!   `StaleBrokerEpoch` for the whole request): for each partition the sender leads, a leader
//!   epoch already above the asked minimum is left alone; otherwise it becomes
//!   `max(epoch + 1, minimum + 1)` with the same leader and ISR (the spec's model of the
//!   prototype, §4.4). A partition the sender does not lead gets `NotLeaderOrFollower`, an
//!   unknown one `UnknownTopicOrPartition`.
//! - A user's IncrementalAlterConfigs may not touch `mirror.name` (only these workflows set
//!   it), and may alter a mirror's properties only if the mirror exists, the change leaves a
//!   valid property set (as CreateMirror's), and it does not touch the recorded source
//!   cluster id. A `bootstrap.servers` naming another cluster is accepted (the controller
//!   cannot know the source was not replaced); the brokers refuse to mirror from it.
//!
//! Brokers do not forward these requests; admin clients send them to the controller.

use std::collections::BTreeMap;

use super::placement::topic_name_problem;
use super::{Controller, ControllerError};
use crate::log::LogDisk;
use crate::metadata::{ConfigResource, MetadataRecord, PartitionRecord, MIN_INSYNC_REPLICAS};
use crate::mirror::coordinator::MIRROR_STATE_TOPIC;
use crate::mirror::properties::{self, SOURCE_CLUSTER_ID_CONFIG};
use crate::mirror::state::{DesiredState, MIRROR_NAME_CONFIG, PAUSED_SUFFIX, REMOVED_SUFFIX};
use crate::mirror::sync::{include_with_patterns, BOOTSTRAP_SERVERS_CONFIG, TOPICS_INCLUDE_CONFIG};
use crate::mirror::TopicMirrorConfig;
use crate::protocol::{
    BrokerId, ControllerResponse, ErrorCode, LeaderEpoch, ListMirrorsFilter, ListedState,
    MirrorListing, MirrorResponse, MirrorTopicOperation, NewTopic, NodeId, Response, TopicId,
};

/// Whether `name` may name a mirror.
pub fn is_valid_mirror_name(name: &str) -> bool {
    mirror_name_problem(name).is_none()
}

/// Why `name` may not name a mirror, `None` if it may: the KIP authors' prototype gives mirror
/// names Kafka's topic-name rules (`ClusterMirrorRecordKey`), and the seed design carries the
/// desired state as a `.removed` / `.paused` suffix of `mirror.name`, so a name ending in one
/// would read as another mirror's desired state.
pub fn mirror_name_problem(name: &str) -> Option<String> {
    if let Some(problem) = topic_name_problem(name) {
        return Some(problem);
    }
    [REMOVED_SUFFIX, PAUSED_SUFFIX]
        .into_iter()
        .find(|suffix| name.ends_with(suffix))
        .map(|suffix| format!("ends in `{suffix}`, which `mirror.name` uses for a desired state"))
}

/// The `mirror.name` a topic gets from `operation`, given its current desired state; `Err` if
/// the operation does not apply to it.
pub fn next_mirror_name(
    mirror: &str,
    operation: MirrorTopicOperation,
    current: Option<&DesiredState>,
) -> Result<DesiredState, ErrorCode> {
    let mirror_owned = || mirror.to_owned();
    let ours = current.is_some_and(|desired| desired.mirror() == mirror);
    match (operation, current) {
        (MirrorTopicOperation::Add, None | Some(DesiredState::Stopped { .. })) => {
            Ok(DesiredState::Mirror {
                mirror: mirror_owned(),
            })
        }
        (
            MirrorTopicOperation::Remove,
            Some(DesiredState::Mirror { .. } | DesiredState::Paused { .. }),
        ) if ours => Ok(DesiredState::Stopped {
            mirror: mirror_owned(),
        }),
        (MirrorTopicOperation::Pause, Some(DesiredState::Mirror { .. })) if ours => {
            Ok(DesiredState::Paused {
                mirror: mirror_owned(),
            })
        }
        (MirrorTopicOperation::Resume, Some(DesiredState::Paused { .. })) if ours => {
            Ok(DesiredState::Mirror {
                mirror: mirror_owned(),
            })
        }
        _ => Err(ErrorCode::InvalidClusterMirrorState),
    }
}

impl<D: LogDisk> Controller<D> {
    fn mirror_exists(&self, name: &str) -> bool {
        self.image
            .configs
            .contains_key(&ConfigResource::Mirror(name.to_owned()))
    }

    /// The desired state of `topic` from its `mirror.name`.
    fn desired_mirror_state(&self, topic: &str) -> Option<DesiredState> {
        self.image.mirror_desired_state(topic)
    }

    /// Topics whose `mirror.name` names `mirror`, with their desired states.
    fn mirror_topics(&self, mirror: &str) -> Vec<(String, DesiredState)> {
        self.image
            .topic_ids
            .keys()
            .filter_map(|topic| {
                let desired = self.desired_mirror_state(topic)?;
                (desired.mirror() == mirror).then(|| (topic.clone(), desired))
            })
            .collect()
    }

    pub(super) fn handle_create_mirror(
        &mut self,
        name: &str,
        configs: Vec<(String, String)>,
    ) -> Result<Response, ControllerError> {
        let error = |error| {
            Ok(Response::Controller(ControllerResponse::CreateMirror {
                error,
            }))
        };
        if !is_valid_mirror_name(name) {
            return error(ErrorCode::InvalidRequest);
        }
        if self.mirror_exists(name) {
            return error(ErrorCode::ClusterMirrorAlreadyExists);
        }
        let mut properties = BTreeMap::new();
        for (key, value) in configs {
            if key.is_empty() || properties.insert(key, value).is_some() {
                return error(ErrorCode::InvalidConfig);
            }
        }
        // Known keys, a usable bootstrap.servers, readable filters and retry settings: now,
        // not found broken by every broker later. The source cluster id is recorded here.
        if properties.contains_key(SOURCE_CLUSTER_ID_CONFIG)
            || properties::validate(&properties).is_err()
        {
            return error(ErrorCode::InvalidConfig);
        }
        let source_cluster_id = properties
            .get(BOOTSTRAP_SERVERS_CONFIG)
            .and_then(|bootstrap| properties::cluster_id_of_bootstrap(bootstrap))
            .expect("validated");
        properties.insert(SOURCE_CLUSTER_ID_CONFIG.to_owned(), source_cluster_id);
        if !self.image.topic_ids.contains_key(MIRROR_STATE_TOPIC) {
            let replication_factor = self.config.mirror_state_replication_factor;
            let topic = NewTopic {
                name: MIRROR_STATE_TOPIC.to_owned(),
                partitions: self.config.mirror_state_partitions,
                replication_factor,
                configs: vec![(
                    MIN_INSYNC_REPLICAS.to_owned(),
                    replication_factor.min(2).to_string(),
                )],
                topic_id: None,
            };
            // Validation comes before any record is staged, so a refusal leaves nothing.
            if let Err(code) = self.stage_create_topic(&topic) {
                return error(code);
            }
        }
        let resource = ConfigResource::Mirror(name.to_owned());
        for (key, value) in properties {
            self.stage(MetadataRecord::Config {
                resource: resource.clone(),
                name: key,
                value: Some(value),
            });
        }
        self.commit()?;
        error(ErrorCode::None)
    }

    pub(super) fn handle_delete_mirror(&mut self, name: &str) -> Result<Response, ControllerError> {
        let error = |error| Ok(Response::Mirror(MirrorResponse::DeleteMirror { error }));
        if !self.mirror_exists(name) {
            return error(ErrorCode::ClusterMirrorNotFound);
        }
        let topics = self.mirror_topics(name);
        if topics
            .iter()
            .any(|(_, desired)| !matches!(desired, DesiredState::Stopped { .. }))
        {
            return error(ErrorCode::InvalidClusterMirrorState);
        }
        for (topic, _) in topics {
            self.stage(MetadataRecord::Config {
                resource: ConfigResource::Topic(topic),
                name: MIRROR_NAME_CONFIG.to_owned(),
                value: None,
            });
        }
        let resource = ConfigResource::Mirror(name.to_owned());
        let keys: Vec<String> = self.image.configs[&resource].keys().cloned().collect();
        for key in keys {
            self.stage(MetadataRecord::Config {
                resource: resource.clone(),
                name: key,
                value: None,
            });
        }
        self.commit()?;
        error(ErrorCode::None)
    }

    pub(super) fn handle_alter_mirror_topics(
        &mut self,
        mirror: &str,
        operation: MirrorTopicOperation,
        topics: &[String],
        checked_stopped: &[(String, String)],
        include_patterns: &[String],
    ) -> Result<Response, ControllerError> {
        let refuse = |error| {
            Ok(Response::Controller(
                ControllerResponse::AlterMirrorTopics {
                    error,
                    results: Vec::new(),
                },
            ))
        };
        if !self.mirror_exists(mirror) {
            return refuse(ErrorCode::ClusterMirrorNotFound);
        }
        if !include_patterns.is_empty() {
            if operation != MirrorTopicOperation::Add {
                return refuse(ErrorCode::InvalidRequest);
            }
            match self.include_with(mirror, include_patterns) {
                Ok(Some(include)) => self.stage(MetadataRecord::Config {
                    resource: ConfigResource::Mirror(mirror.to_owned()),
                    name: TOPICS_INCLUDE_CONFIG.to_owned(),
                    value: Some(include),
                }),
                Ok(None) => {}
                Err(code) => return refuse(code),
            }
        }
        let mut results = Vec::with_capacity(topics.len());
        for topic in topics {
            let result = if self.image.topic_ids.contains_key(topic) {
                let current = self.desired_mirror_state(topic);
                match &current {
                    // A topic another mirror removed joins only after a broker found its
                    // partitions STOPPED in that mirror's state (see `mirror::topic_admin`).
                    Some(DesiredState::Stopped { mirror: removed_by })
                        if operation == MirrorTopicOperation::Add
                            && !checked_stopped
                                .iter()
                                .any(|(t, m)| t == topic && m == removed_by) =>
                    {
                        Err(ErrorCode::MirrorTopicNotStopped)
                    }
                    _ => next_mirror_name(mirror, operation, current.as_ref()),
                }
            } else {
                Err(ErrorCode::UnknownTopicOrPartition)
            };
            match result {
                Ok(desired) => {
                    // A later entry for the same topic sees this one (staged records apply).
                    self.stage(MetadataRecord::Config {
                        resource: ConfigResource::Topic(topic.clone()),
                        name: MIRROR_NAME_CONFIG.to_owned(),
                        value: Some(desired.config_value()),
                    });
                    results.push((topic.clone(), ErrorCode::None));
                }
                Err(error) => results.push((topic.clone(), error)),
            }
        }
        self.commit()?;
        Ok(Response::Controller(
            ControllerResponse::AlterMirrorTopics {
                error: ErrorCode::None,
                results,
            },
        ))
    }

    pub(super) fn handle_bump_leader_epochs(
        &mut self,
        from: NodeId,
        broker_id: BrokerId,
        broker_epoch: i64,
        partitions: &[(TopicId, i32, LeaderEpoch)],
    ) -> Result<Response, ControllerError> {
        let refuse = |error| {
            Ok(Response::Controller(ControllerResponse::BumpLeaderEpochs {
                error,
                partitions: Vec::new(),
            }))
        };
        if let Err(error) = self.check_broker_request(from, broker_id, broker_epoch) {
            return refuse(error);
        }
        let mut results = Vec::with_capacity(partitions.len());
        for &(topic_id, partition, LeaderEpoch(min_leader_epoch)) in partitions {
            let current = self
                .image
                .topics
                .get(&topic_id)
                .and_then(|topic| topic.partitions.get(&partition))
                .cloned();
            let (error, leader_epoch) = match current {
                None => (ErrorCode::UnknownTopicOrPartition, -1),
                Some(current) if current.leader != Some(broker_id) => {
                    (ErrorCode::NotLeaderOrFollower, current.leader_epoch)
                }
                Some(current) if current.leader_epoch > min_leader_epoch => {
                    (ErrorCode::None, current.leader_epoch)
                }
                Some(current) => {
                    let leader_epoch = (current.leader_epoch + 1).max(min_leader_epoch + 1);
                    self.stage(MetadataRecord::Partition(PartitionRecord {
                        leader_epoch,
                        partition_epoch: current.partition_epoch + 1,
                        ..current
                    }));
                    (ErrorCode::None, leader_epoch)
                }
            };
            // A granted bump leaves the partition led above the asked minimum.
            assert!(
                error != ErrorCode::None || leader_epoch > min_leader_epoch,
                "bump of {topic_id}-{partition} to {leader_epoch}, not above {min_leader_epoch}"
            );
            results.push((topic_id, partition, error, LeaderEpoch(leader_epoch)));
        }
        self.commit()?;
        Ok(Response::Controller(ControllerResponse::BumpLeaderEpochs {
            error: ErrorCode::None,
            partitions: results,
        }))
    }

    /// ListMirrors: the mirrors `filter` admits, each with its properties and the member topics
    /// whose desired state it admits (the prototype's ListClusterMirrors).
    pub(super) fn handle_list_mirrors(&self, filter: &ListMirrorsFilter) -> Response {
        let mirrors = self
            .image
            .configs
            .iter()
            .filter_map(|(resource, configs)| match resource {
                ConfigResource::Mirror(name) => Some((name, configs)),
                _ => None,
            })
            .filter(|(name, configs)| {
                let source = configs.get(SOURCE_CLUSTER_ID_CONFIG).map(String::as_str);
                filter.lists_mirror(name, source)
            })
            .map(|(name, configs)| MirrorListing {
                name: name.clone(),
                configs: configs
                    .iter()
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect(),
                topics: self
                    .mirror_topics(name)
                    .into_iter()
                    .filter(|(_, desired)| filter.lists_state(listed_state(desired)))
                    .map(|(topic, desired)| (topic, desired.config_value()))
                    .collect(),
            })
            .collect();
        Response::Controller(ControllerResponse::ListMirrors {
            error: ErrorCode::None,
            mirrors,
        })
    }

    /// `mirror`'s `mirror.topics.include` with `patterns` appended (those it lacks, in order),
    /// as AddTopicsToMirror's include patterns ask (the prototype's `startMirrorTopics` with
    /// `includePatterns`); `None` when it has them all; `InvalidConfig` when the result is not
    /// a valid filter.
    fn include_with(&self, mirror: &str, patterns: &[String]) -> Result<Option<String>, ErrorCode> {
        let resource = ConfigResource::Mirror(mirror.to_owned());
        let mut properties = self
            .image
            .configs
            .get(&resource)
            .cloned()
            .unwrap_or_default();
        let current = properties
            .get(TOPICS_INCLUDE_CONFIG)
            .map_or("", String::as_str);
        let Some(include) = include_with_patterns(current, patterns) else {
            return Ok(None);
        };
        properties.insert(TOPICS_INCLUDE_CONFIG.to_owned(), include.clone());
        properties::validate(&properties).map_err(|_| ErrorCode::InvalidConfig)?;
        Ok(Some(include))
    }

    /// The mirror rules for a user's IncrementalAlterConfigs (see the module doc).
    pub(super) fn check_mirror_config_change(
        &self,
        resource: &ConfigResource,
        changes: &[(String, Option<String>)],
    ) -> Result<(), ErrorCode> {
        match resource {
            ConfigResource::Topic(_)
                if changes.iter().any(|(name, _)| name == MIRROR_NAME_CONFIG) =>
            {
                Err(ErrorCode::InvalidConfig)
            }
            ConfigResource::Mirror(name) if !self.mirror_exists(name) => {
                Err(ErrorCode::ClusterMirrorNotFound)
            }
            // No user sets the recorded source cluster id; the result must be a mirror's.
            ConfigResource::Mirror(_)
                if changes
                    .iter()
                    .any(|(name, _)| name == SOURCE_CLUSTER_ID_CONFIG) =>
            {
                Err(ErrorCode::InvalidConfig)
            }
            ConfigResource::Mirror(_) => {
                let mut properties = self
                    .image
                    .configs
                    .get(resource)
                    .cloned()
                    .unwrap_or_default();
                for (name, value) in changes {
                    match value {
                        Some(value) => properties.insert(name.clone(), value.clone()),
                        None => properties.remove(name),
                    };
                }
                properties::validate(&properties).map_err(|_| ErrorCode::InvalidConfig)
            }
            _ => Ok(()),
        }
    }
}

/// What ListMirrors' desired-state filter calls a topic's `mirror.name` request.
fn listed_state(desired: &DesiredState) -> ListedState {
    match desired {
        DesiredState::Mirror { .. } => ListedState::Mirroring,
        DesiredState::Paused { .. } => ListedState::Paused,
        DesiredState::Stopped { .. } => ListedState::Stopped,
    }
}
