//! Cluster metadata as KRaft keeps it: a log of [`MetadataRecord`]s written by the controller,
//! and the [`MetadataImage`] built by applying them in order.
//!
//! The controller appends records and applies them to its own image; brokers fetch the records
//! (late, as in KRaft) and apply them to their copies. Applying the same records in the same
//! order gives the same image everywhere; [`MetadataImage::apply`] asserts the ordering rules
//! that keep that true (offsets are consecutive, leader and partition epochs never go back).
//! Partition changes carry the whole new partition state, which keeps replay trivial.
//!
//! `cache` is the other view of metadata: what a client learns from Metadata answers (the
//! simulated clients', and a destination broker's view of each source cluster it mirrors).

pub mod authorizer;
pub(crate) mod cache;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::common::{BrokerId, ErrorCode, TopicId, TopicName, TopicPartition};

/// One topic as a Metadata answer describes it (a view of the image, [`MetadataImage::describe_topics`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMetadata {
    /// Topic name.
    pub name: String,
    /// `UnknownTopicOrPartition` if it does not exist.
    pub error: ErrorCode,
    /// Topic id.
    pub topic_id: Option<TopicId>,
    /// Partitions.
    pub partitions: Vec<PartitionRecord>,
}

/// Topic config: whether a partition may elect a leader outside the ISR (`"true"`/`"false"`,
/// default `"false"`).
pub const UNCLEAN_LEADER_ELECTION_ENABLE: &str = "unclean.leader.election.enable";

/// Topic config: the ISR size an acks=all produce needs (a positive integer).
pub const MIN_INSYNC_REPLICAS: &str = "min.insync.replicas";

/// Which object a configuration entry belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ConfigResource {
    /// A topic, by name.
    Topic(String),
    /// Cluster-wide broker defaults.
    Broker,
    /// A KIP-1279 mirror, by name: its properties (`bootstrap.servers`, …).
    Mirror(String),
}

/// One replica set entry: the full state of a partition after a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionRecord {
    /// Topic id.
    pub topic_id: TopicId,
    /// Partition index.
    pub partition: i32,
    /// Assigned replicas, preferred leader first.
    pub replicas: Vec<BrokerId>,
    /// In-sync replicas.
    pub isr: Vec<BrokerId>,
    /// Current leader, `None` when no eligible replica is available.
    pub leader: Option<BrokerId>,
    /// Bumped on every leader change (and on explicit bumps).
    pub leader_epoch: i32,
    /// Bumped on every change of this record.
    pub partition_epoch: i32,
    /// KIP-966's eligible leader replicas: replicas that were in the ISR when a change left it
    /// below `min.insync.replicas`, and so hold every record the high watermark covered
    /// (a leader does not move it while its ISR is below min ISR). With an empty ISR the
    /// controller elects from them. Always empty without eligible leader replicas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub eligible_leader_replicas: Vec<BrokerId>,
    /// KIP-966's last known ELR, as Kafka uses it: the leader of the change that left the
    /// partition without one, while the ISR and ELR are empty; the controller elects it again
    /// once it is unfenced, unclean-election config or not (it may have lost records).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub last_known_elr: Vec<BrokerId>,
}

/// An access-control entry, as CreateAcls gives it (a cluster with an authorizer evaluates
/// them: [`authorizer`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct AclBinding {
    /// Resource type and name, e.g. `topic:orders`.
    pub resource: String,
    /// Principal, e.g. `User:alice`.
    pub principal: String,
    /// Operation, e.g. `Read`.
    pub operation: String,
    /// `Allow` or `Deny`.
    pub permission: String,
}

/// One record of the metadata log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MetadataRecord {
    /// A broker (re)registered; it starts fenced.
    RegisterBroker {
        /// The broker.
        broker_id: BrokerId,
        /// Epoch of this registration (the record's offset, as in KRaft).
        broker_epoch: i64,
        /// Identifies the broker process incarnation.
        incarnation: u64,
    },
    /// The controller fenced a broker (missed heartbeats or shut down).
    FenceBroker {
        /// The broker.
        broker_id: BrokerId,
        /// Its registration epoch.
        broker_epoch: i64,
    },
    /// A broker caught up with the metadata log and may lead partitions.
    UnfenceBroker {
        /// The broker.
        broker_id: BrokerId,
        /// Its registration epoch.
        broker_epoch: i64,
    },
    /// A topic was created.
    Topic {
        /// Topic name.
        name: String,
        /// Topic id.
        topic_id: TopicId,
    },
    /// A topic was deleted, with its partitions and configs.
    RemoveTopic {
        /// The topic.
        topic_id: TopicId,
    },
    /// A partition was created or changed (full new state).
    Partition(PartitionRecord),
    /// A block of producer ids was handed to a broker; the next block starts at
    /// `next_producer_id`.
    ProducerIds {
        /// The broker that got the block.
        broker_id: BrokerId,
        /// Its registration epoch.
        broker_epoch: i64,
        /// First id of the next block.
        next_producer_id: i64,
    },
    /// A configuration entry was set (`Some`) or removed (`None`).
    Config {
        /// The object configured.
        resource: ConfigResource,
        /// Config name.
        name: String,
        /// New value.
        value: Option<String>,
    },
    /// An ACL was created.
    Acl(AclBinding),
    /// An ACL was deleted.
    RemoveAcl(AclBinding),
}

/// A broker as the metadata image knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerRegistration {
    /// Epoch of the current registration.
    pub broker_epoch: i64,
    /// Process incarnation that registered.
    pub incarnation: u64,
    /// Fenced brokers lead nothing and are not in any ISR.
    pub fenced: bool,
}

/// A topic as the metadata image knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicImage {
    /// Topic name.
    pub name: TopicName,
    /// Topic id.
    pub topic_id: TopicId,
    /// Partitions by index.
    pub partitions: BTreeMap<i32, PartitionRecord>,
}

/// The state built by applying the metadata log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetadataImage {
    /// Offset of the next record to apply (records `[0, next_offset)` are applied).
    pub next_offset: i64,
    /// Registered brokers.
    pub brokers: BTreeMap<BrokerId, BrokerRegistration>,
    /// Topics by id.
    pub topics: BTreeMap<TopicId, TopicImage>,
    /// Topic ids by name.
    pub topic_ids: BTreeMap<String, TopicId>,
    /// First producer id of the next block to hand out.
    pub next_producer_id: i64,
    /// Configuration entries per resource.
    pub configs: BTreeMap<ConfigResource, BTreeMap<String, String>>,
    /// ACLs.
    pub acls: BTreeSet<AclBinding>,
}

impl MetadataImage {
    /// Applies the record at `offset`, which must be the next one.
    pub fn apply(&mut self, offset: i64, record: &MetadataRecord) {
        assert_eq!(
            offset, self.next_offset,
            "metadata records applied out of order"
        );
        match record {
            MetadataRecord::RegisterBroker {
                broker_id,
                broker_epoch,
                incarnation,
            } => {
                self.brokers.insert(
                    *broker_id,
                    BrokerRegistration {
                        broker_epoch: *broker_epoch,
                        incarnation: *incarnation,
                        fenced: true,
                    },
                );
            }
            MetadataRecord::FenceBroker {
                broker_id,
                broker_epoch,
            } => self.set_fenced(*broker_id, *broker_epoch, true),
            MetadataRecord::UnfenceBroker {
                broker_id,
                broker_epoch,
            } => self.set_fenced(*broker_id, *broker_epoch, false),
            MetadataRecord::RemoveTopic { topic_id } => {
                if let Some(topic) = self.topics.remove(topic_id) {
                    self.topic_ids.remove(topic.name.as_str());
                    self.configs
                        .remove(&ConfigResource::Topic(topic.name.into()));
                }
            }
            MetadataRecord::Topic { name, topic_id } => {
                self.topic_ids.insert(name.clone(), *topic_id);
                self.topics.insert(
                    *topic_id,
                    TopicImage {
                        name: name.as_str().into(),
                        topic_id: *topic_id,
                        partitions: BTreeMap::new(),
                    },
                );
            }
            MetadataRecord::Partition(partition) => self.apply_partition(partition),
            MetadataRecord::ProducerIds {
                next_producer_id, ..
            } => {
                assert!(
                    *next_producer_id > self.next_producer_id,
                    "producer id blocks must move forward"
                );
                self.next_producer_id = *next_producer_id;
            }
            MetadataRecord::Config {
                resource,
                name,
                value,
            } => {
                let entries = self.configs.entry(resource.clone()).or_default();
                match value {
                    Some(value) => {
                        entries.insert(name.clone(), value.clone());
                    }
                    None => {
                        entries.remove(name);
                        // A resource without entries is gone (a deleted mirror is not listed).
                        if entries.is_empty() {
                            self.configs.remove(resource);
                        }
                    }
                }
            }
            MetadataRecord::Acl(binding) => {
                self.acls.insert(binding.clone());
            }
            MetadataRecord::RemoveAcl(binding) => {
                self.acls.remove(binding);
            }
        }
        self.next_offset += 1;
    }

    fn set_fenced(&mut self, broker_id: BrokerId, broker_epoch: i64, fenced: bool) {
        let registration = self
            .brokers
            .get_mut(&broker_id)
            .unwrap_or_else(|| panic!("fence change for unregistered broker {broker_id}"));
        assert_eq!(
            registration.broker_epoch, broker_epoch,
            "fence change for a stale registration of broker {broker_id}"
        );
        registration.fenced = fenced;
    }

    fn apply_partition(&mut self, partition: &PartitionRecord) {
        let topic = self
            .topics
            .get_mut(&partition.topic_id)
            .unwrap_or_else(|| panic!("partition of unknown topic {}", partition.topic_id));
        if let Some(previous) = topic.partitions.get(&partition.partition) {
            assert!(
                partition.leader_epoch >= previous.leader_epoch,
                "leader epoch went back"
            );
            assert!(
                partition.partition_epoch > previous.partition_epoch,
                "partition epoch did not move forward"
            );
        }
        topic
            .partitions
            .insert(partition.partition, partition.clone());
    }

    /// The partition record for a topic partition by name.
    pub fn partition(&self, topic_partition: &TopicPartition) -> Option<&PartitionRecord> {
        let topic_id = self.topic_ids.get(topic_partition.topic.as_str())?;
        self.topics
            .get(topic_id)?
            .partitions
            .get(&topic_partition.partition)
    }

    /// The topic name of a topic id.
    pub fn topic_name(&self, topic_id: TopicId) -> Option<&str> {
        self.topics.get(&topic_id).map(|topic| topic.name.as_str())
    }

    /// A topic config value, falling back to the broker default, then to `default`.
    pub fn topic_config<'a>(&'a self, topic: &str, name: &str, default: &'a str) -> &'a str {
        self.configs
            .get(&ConfigResource::Topic(topic.to_string()))
            .and_then(|entries| entries.get(name))
            .or_else(|| {
                self.configs
                    .get(&ConfigResource::Broker)
                    .and_then(|entries| entries.get(name))
            })
            .map_or(default, String::as_str)
    }

    /// Every partition with its topic name, in (topic id, partition) order.
    pub fn all_partitions(&self) -> impl Iterator<Item = (TopicPartition, &PartitionRecord)> {
        self.topics.values().flat_map(|topic| {
            topic.partitions.values().map(move |partition| {
                (
                    TopicPartition::new(topic.name.clone(), partition.partition),
                    partition,
                )
            })
        })
    }

    /// Whether a broker is registered and not fenced.
    pub fn is_broker_alive(&self, broker_id: BrokerId) -> bool {
        self.brokers
            .get(&broker_id)
            .is_some_and(|registration| !registration.fenced)
    }

    /// Registered, unfenced brokers, in id order.
    pub fn live_brokers(&self) -> Vec<BrokerId> {
        self.brokers
            .iter()
            .filter(|(_, registration)| !registration.fenced)
            .map(|(broker_id, _)| *broker_id)
            .collect()
    }

    /// A Metadata answer's topics: the named ones (`None`: every topic, in name order), each
    /// with its partitions, or `UnknownTopicOrPartition` for a name the image lacks.
    pub fn describe_topics(&self, names: Option<&[String]>) -> Vec<TopicMetadata> {
        let describe = |name: &String| match self.topic_ids.get(name) {
            Some(topic_id) => TopicMetadata {
                name: name.clone(),
                error: ErrorCode::None,
                topic_id: Some(*topic_id),
                partitions: self.topics[topic_id].partitions.values().cloned().collect(),
            },
            None => TopicMetadata {
                name: name.clone(),
                error: ErrorCode::UnknownTopicOrPartition,
                topic_id: None,
                partitions: Vec::new(),
            },
        };
        match names {
            Some(names) => names.iter().map(describe).collect(),
            None => self.topic_ids.keys().map(describe).collect(),
        }
    }
}
