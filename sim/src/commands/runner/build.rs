//! How a run's nodes are built from its scenario: the clusters' controllers and brokers with
//! their configs and disks, the clients with the workload's configs, and the admin client with
//! its timeline.

use super::*;
use crate::scenario::{CompressionSpec, TopicSpec};
use mirrorsim::record::CompressionType;

/// The clusters' topics at the start, and those a mirror may adopt, for `admin-outcomes`; the
/// phases' lengths and the clusters' sync intervals, for the sync's liveness.
pub(super) fn admin_world(scenario: &Scenario) -> crate::checks::admin::AdminWorld {
    use crate::scenario::{cluster_index, AdminOpSpec};
    let cluster_of = |letter: &str| ClusterIndex(cluster_index(letter).expect("validated") as u8);
    let mut world = crate::checks::admin::AdminWorld {
        fault_phase_ms: scenario.duration_ms as i64,
        heal_ms: scenario.heal_ms as i64,
        ..Default::default()
    };
    for (index, cluster) in scenario.clusters.iter().enumerate() {
        world.refresh_ms.insert(
            ClusterIndex(index as u8),
            cluster.mirror_metadata_refresh_interval_ms,
        );
    }
    for spec in &scenario.admin {
        if let Some(mirror) = spec.mirror() {
            world.mirrors.insert((
                cluster_of(spec.cluster().get_ref()),
                mirror.get_ref().clone(),
            ));
        }
    }
    for topic in scenario.topics.iter().filter(|topic| !topic.deferred) {
        world.topics.insert(
            (cluster_of(topic.cluster.get_ref()), topic.name.clone()),
            topic.partitions,
        );
    }
    for spec in &scenario.admin {
        let AdminOpSpec::CreateMirror(create) = spec else {
            continue;
        };
        let Some(include) = create
            .configs
            .get(mirrorsim::mirror::sync::TOPICS_INCLUDE_CONFIG)
            .and_then(|value| mirrorsim::mirror::sync::NameFilter::parse(value).ok())
        else {
            continue;
        };
        let destination = cluster_of(create.cluster.get_ref());
        for topic in scenario
            .topics
            .iter()
            .filter(|t| t.cluster.get_ref() == create.source.get_ref())
        {
            if include.matches(&topic.name)
                && !world
                    .topics
                    .contains_key(&(destination, topic.name.clone()))
            {
                world.adoptable.insert((destination, topic.name.clone()));
            }
        }
    }
    world
}

pub(super) fn build_nodes(
    scenario: &Scenario,
    options: &RunOptions,
    shared: &Arc<Shared>,
) -> BTreeMap<NodeId, Node> {
    let handle = Handle::current();
    // The scenario's own switches (validated at load) join the command line's.
    let mut broken = options.broken.clone();
    for switch in scenario
        .broken
        .iter()
        .filter_map(|name| BrokenSwitch::from_name(name))
    {
        if !broken.contains(&switch) {
            broken.push(switch);
        }
    }
    let design = options.design.unwrap_or_else(|| scenario.mirror_design());
    let mut nodes = BTreeMap::new();
    let mut add = |id: NodeId, factory: NodeFactory, storage: MemoryStorage| {
        let slot = Arc::new(Mutex::new(Slot::default()));
        let init_shared = Arc::clone(shared);
        let init_slot = Arc::clone(&slot);
        let node_handle = handle
            .create_node()
            .name(id.to_string())
            .ip(node_address(id).ip())
            .init(move || {
                run_node(
                    id,
                    Arc::clone(&init_shared),
                    Arc::clone(&init_slot),
                    Arc::clone(&factory),
                )
            })
            .build();
        nodes.insert(
            id,
            Node {
                id,
                handle: node_handle,
                slot,
                storage,
                down: false,
                paused: false,
            },
        );
    };
    let timeline = admin::timeline(scenario);
    lock(&shared.history).admin_ops = timeline
        .iter()
        .map(|op| AdminOpRecord {
            op: op.clone(),
            outcome: None,
        })
        .collect();
    for (index, cluster_spec) in scenario.clusters.iter().enumerate() {
        let cluster = ClusterIndex(index as u8);
        let brokers: Vec<NodeId> = (1..=cluster_spec.brokers)
            .map(|id| NodeId::Broker(cluster, BrokerId(i32::from(id))))
            .collect();
        let controller_storage = MemoryStorage::new();
        let controller_config = cluster_spec.controller_config(design);
        let disk_storage = controller_storage.clone();
        add(
            NodeId::Controller(cluster),
            Arc::new(move |now_ms, _| {
                let disk = disk_storage.clone().open_dir("metadata");
                let controller = Controller::new(
                    NodeId::Controller(cluster),
                    controller_config.clone(),
                    disk,
                    now_ms,
                )
                .expect("controller recovers from its disk");
                NodeState::Controller(Box::new(controller))
            }),
            controller_storage,
        );
        for broker in &brokers {
            let NodeId::Broker(_, broker_id) = *broker else {
                unreachable!()
            };
            let storage = MemoryStorage::new();
            let config = cluster_spec.broker_config(design, broken.clone());
            let broker_storage = storage.clone();
            add(
                *broker,
                Arc::new(move |now_ms, incarnation| {
                    let broker = Broker::new(
                        cluster,
                        broker_id,
                        config.clone(),
                        broker_storage.clone(),
                        incarnation,
                        now_ms,
                    )
                    .expect("broker recovers from its disk");
                    NodeState::Broker(Box::new(broker))
                }),
                storage,
            );
        }
        let letter = cluster.name().to_string();
        let topics: Vec<NewTopic> = scenario
            .topics
            .iter()
            .filter(|topic| *topic.cluster.get_ref() == letter && !topic.deferred)
            .map(TopicSpec::new_topic)
            .collect();
        let ops: Vec<AdminOp> = timeline
            .iter()
            .filter(|op| op.cluster == cluster)
            .cloned()
            .collect();
        if !topics.is_empty() || !ops.is_empty() {
            let admin = NodeId::Client(cluster, ClientKind::Admin, 1);
            add(
                admin,
                admin_factory(admin, topics, ops, brokers.clone(), Arc::clone(shared)),
                MemoryStorage::new(),
            );
        }
        let mut producer_index = 0u16;
        for spec in scenario
            .producers
            .iter()
            .filter(|p| *p.cluster.get_ref() == letter)
        {
            let partitions = partitions_of(scenario, &letter, spec.topic.get_ref());
            for _ in 0..spec.count {
                producer_index += 1;
                let id = NodeId::Client(cluster, ClientKind::Producer, producer_index);
                // A producer is idle until the load starts anyway, so only a later start is
                // deferred (keeping runs without `start_ms` as they were).
                let start_ms = spec.start_ms.as_ref().map_or(0, |start| *start.get_ref());
                if start_ms > 0 {
                    lock(&shared.deferred_starts).insert(id, start_ms);
                }
                if let Some(stop) = &spec.stop_ms {
                    lock(&shared.load_stops).insert(id, *stop.get_ref());
                }
                let (topic, interval, bootstrap) = (
                    spec.topic.get_ref().clone(),
                    spec.interval_ms as i64,
                    brokers.clone(),
                );
                let acks = match spec.acks {
                    AcksSpec::All => Acks::All,
                    AcksSpec::Leader => Acks::Leader,
                };
                let compression = match spec.compression {
                    CompressionSpec::None => CompressionType::None,
                    CompressionSpec::Gzip => CompressionType::Gzip,
                    CompressionSpec::Snappy => CompressionType::Snappy,
                    CompressionSpec::Lz4 => CompressionType::Lz4,
                    CompressionSpec::Zstd => CompressionType::Zstd,
                };
                if spec.transactional {
                    let timeout = spec.transaction_timeout_ms;
                    add(
                        id,
                        Arc::new(move |now_ms, incarnation| {
                            let mut config = TransactionalProducerConfig::simulated(
                                crate::world::workload::transactional_id(id),
                            );
                            if let Some(timeout) = timeout {
                                config.transaction_timeout_ms = timeout;
                            }
                            config.compression = compression;
                            let producer =
                                TransactionalProducer::new(id, bootstrap.clone(), config)
                                    .expect("valid transactional producer config");
                            NodeState::Transactional(Box::new(TransactionalWorkload::new(
                                producer,
                                incarnation,
                                topic.clone(),
                                partitions,
                                interval,
                                now_ms,
                            )))
                        }),
                        MemoryStorage::new(),
                    );
                    continue;
                }
                add(
                    id,
                    Arc::new(move |now_ms, incarnation| {
                        let config = ProducerConfig {
                            compression,
                            ..simulated_producer_config(acks)
                        };
                        let producer = IdempotentProducer::new(id, bootstrap.clone(), config)
                            .expect("valid producer config");
                        NodeState::Producer(Box::new(ProducerWorkload::new(
                            producer,
                            incarnation,
                            topic.clone(),
                            partitions,
                            interval,
                            now_ms,
                        )))
                    }),
                    MemoryStorage::new(),
                );
            }
        }
        let mut consumer_index = 0u16;
        for spec in scenario
            .consumers
            .iter()
            .filter(|c| *c.cluster.get_ref() == letter)
        {
            let partitions = partitions_of(scenario, &letter, spec.topic.get_ref());
            for _ in 0..spec.count {
                consumer_index += 1;
                let id = NodeId::Client(cluster, ClientKind::Consumer, consumer_index);
                if let Some(start) = &spec.start_ms {
                    lock(&shared.deferred_starts).insert(id, *start.get_ref());
                }
                lock(&shared.history)
                    .subscriptions
                    .entry(id)
                    .or_default()
                    .push(spec.topic.get_ref().clone());
                let assignment: Vec<TopicPartition> = (0..partitions)
                    .map(|p| TopicPartition::new(spec.topic.get_ref().clone(), p))
                    .collect();
                let isolation = match spec.isolation {
                    IsolationSpec::ReadUncommitted => IsolationLevel::ReadUncommitted,
                    IsolationSpec::ReadCommitted => IsolationLevel::ReadCommitted,
                };
                if isolation == IsolationLevel::ReadCommitted {
                    lock(&shared.history).read_committed.insert(id);
                }
                let bootstrap = brokers.clone();
                let group = spec.group.clone();
                if let Some(group) = &group {
                    lock(&shared.history).groups.insert(id, group.clone());
                }
                let topic = spec.topic.get_ref().clone();
                add(
                    id,
                    Arc::new(move |_, incarnation| {
                        let config = simulated_consumer_config(isolation, design);
                        let client = match &group {
                            Some(group) => {
                                let mut group_config =
                                    GroupConsumerConfig::new(group.clone(), vec![topic.clone()]);
                                group_config.consumer = config;
                                group_config.auto_commit_interval_ms = 500;
                                ConsumerClient::Group(Box::new(
                                    GroupConsumer::new(id, bootstrap.clone(), group_config)
                                        .expect("valid group consumer config"),
                                ))
                            }
                            None => {
                                let mut consumer = Consumer::new(
                                    id,
                                    bootstrap.clone(),
                                    config,
                                    assignment.clone(),
                                )
                                .expect("valid consumer config");
                                // A source topic's growth reaches a mirror topic too.
                                consumer.follow_whole_topic(&topic);
                                ConsumerClient::Plain(Box::new(consumer))
                            }
                        };
                        NodeState::Consumer(Box::new(ConsumerWorkload::new(client, incarnation)))
                    }),
                    MemoryStorage::new(),
                );
            }
        }
    }
    nodes
}

/// The admin client of a cluster. A restarted one resumes after the operations the history
/// shows finished, as an operator's script would; an operation it was running starts over.
pub(super) fn admin_factory(
    id: NodeId,
    topics: Vec<NewTopic>,
    ops: Vec<AdminOp>,
    brokers: Vec<NodeId>,
    shared: Arc<Shared>,
) -> NodeFactory {
    Arc::new(move |now_ms, _| {
        let remaining: Vec<AdminOp> = {
            let history = lock(&shared.history);
            ops.iter()
                .filter(|op| {
                    history
                        .admin_ops
                        .iter()
                        .all(|record| record.op.index != op.index || record.outcome.is_none())
                })
                .cloned()
                .collect()
        };
        NodeState::Admin(Box::new(
            AdminClient::new(
                id,
                NodeId::Controller(id.cluster()),
                topics.clone(),
                remaining,
                now_ms,
            )
            .with_brokers(brokers.clone()),
        ))
    })
}

/// Kafka's client defaults scaled to simulated runs of seconds: a request times out after 1 s
/// (Kafka: 30 s) and a record fails after 8 s (Kafka: 120 s), so every send resolves within
/// the heal phase.
pub(super) fn simulated_producer_config(acks: Acks) -> ProducerConfig {
    ProducerConfig {
        acks,
        request_timeout_ms: 1_000,
        retry_backoff_ms: 50,
        delivery_timeout_ms: 8_000,
        metadata_max_age_ms: 5_000,
        ..ProducerConfig::default()
    }
}

/// Consumers read every partition from the earliest offset (the history's `unseen` check
/// relies on it), with timeouts scaled like the producer's, and fence by leader epoch unless
/// the design predates KIP-320.
pub(super) fn simulated_consumer_config(
    isolation: IsolationLevel,
    design: MirrorDesign,
) -> ConsumerConfig {
    ConsumerConfig {
        isolation,
        fences_by_leader_epoch: design.fences_by_leader_epoch(),
        auto_offset_reset: AutoOffsetReset::Earliest,
        request_timeout_ms: 1_000,
        fetch_max_wait_ms: 100,
        retry_backoff_ms: 50,
        metadata_max_age_ms: 5_000,
        ..ConsumerConfig::default()
    }
}

pub(super) fn partitions_of(scenario: &Scenario, cluster: &str, topic: &str) -> i32 {
    scenario
        .topics
        .iter()
        .find(|t| t.cluster.get_ref() == cluster && t.name == topic)
        .map_or(1, |t| t.partitions)
}
