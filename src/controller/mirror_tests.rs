//! The controller's KIP-1279 mirror workflows, driven through the `Node` trait.

use super::*;
use crate::mirror::coordinator::MIRROR_STATE_TOPIC;
use crate::protocol::{
    ControllerRequest, ControllerResponse, ListMirrorsFilter, ListedState, MirrorListing,
    MirrorRequest, MirrorResponse, MirrorTopicOperation,
};
use MirrorTopicOperation::*;

fn create_mirror<D: LogDisk>(
    controller: &mut Controller<D>,
    name: &str,
    configs: &[(&str, &str)],
) -> ErrorCode {
    let configs = configs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect();
    let request = Request::Controller(ControllerRequest::CreateMirror {
        name: name.into(),
        configs,
    });
    match send(controller, 0, admin_node(), request) {
        Response::Controller(ControllerResponse::CreateMirror { error }) => error,
        other => panic!("unexpected {other:?}"),
    }
}

fn alter<D: LogDisk>(
    controller: &mut Controller<D>,
    mirror: &str,
    operation: MirrorTopicOperation,
    topics: &[&str],
) -> (ErrorCode, Vec<ErrorCode>) {
    alter_checked(controller, mirror, operation, topics, &[])
}

/// [`alter`] from a broker that checked `checked_stopped` (topic, mirror that removed it).
fn alter_checked<D: LogDisk>(
    controller: &mut Controller<D>,
    mirror: &str,
    operation: MirrorTopicOperation,
    topics: &[&str],
    checked_stopped: &[(&str, &str)],
) -> (ErrorCode, Vec<ErrorCode>) {
    let request = Request::Controller(ControllerRequest::AlterMirrorTopics {
        mirror: mirror.into(),
        operation,
        topics: topics.iter().map(|t| t.to_string()).collect(),
        checked_stopped: checked_stopped
            .iter()
            .map(|(t, m)| (t.to_string(), m.to_string()))
            .collect(),
        include_patterns: Vec::new(),
    });
    match send(controller, 0, admin_node(), request) {
        Response::Controller(ControllerResponse::AlterMirrorTopics { error, results }) => {
            (error, results.into_iter().map(|(_, e)| e).collect())
        }
        other => panic!("unexpected {other:?}"),
    }
}

fn delete_mirror<D: LogDisk>(controller: &mut Controller<D>, name: &str) -> ErrorCode {
    match send(
        controller,
        0,
        admin_node(),
        Request::Mirror(MirrorRequest::DeleteMirror { name: name.into() }),
    ) {
        Response::Mirror(MirrorResponse::DeleteMirror { error }) => error,
        other => panic!("unexpected {other:?}"),
    }
}

fn list<D: LogDisk>(controller: &mut Controller<D>) -> Vec<MirrorListing> {
    list_with(controller, ListMirrorsFilter::everything())
}

fn list_with<D: LogDisk>(
    controller: &mut Controller<D>,
    filter: ListMirrorsFilter,
) -> Vec<MirrorListing> {
    match send(
        controller,
        0,
        admin_node(),
        Request::Controller(ControllerRequest::ListMirrors { filter }),
    ) {
        Response::Controller(ControllerResponse::ListMirrors { error, mirrors }) => {
            assert_eq!(error, ErrorCode::None);
            mirrors
        }
        other => panic!("unexpected {other:?}"),
    }
}

fn mirror_name<D: LogDisk>(controller: &Controller<D>, topic: &str) -> String {
    controller
        .image()
        .topic_config(topic, "mirror.name", "")
        .to_string()
}

/// Three live brokers, topics `orders` and `payments`, and mirror `m` from cluster a.
fn with_mirror() -> Controller<MemoryDisk> {
    let mut controller = new_controller();
    start_brokers(&mut controller, 0, &[1, 2, 3]);
    create_topic(&mut controller, 0, new_topic("orders", 2, 3));
    create_topic(&mut controller, 0, new_topic("payments", 1, 3));
    assert_eq!(
        create_mirror(&mut controller, "m", &[("bootstrap.servers", "a-broker-1")]),
        ErrorCode::None
    );
    controller
}

#[test]
fn the_first_mirror_creates_mirror_state_and_stores_its_properties() {
    let mut controller = with_mirror();
    let topic_id = controller.image().topic_ids[MIRROR_STATE_TOPIC];
    let topic = &controller.image().topics[&topic_id];
    assert_eq!(topic.partitions.len(), 50, "the default partition count");
    assert!(topic.partitions.values().all(|p| p.replicas.len() == 3));
    assert_eq!(
        controller
            .image()
            .topic_config(MIRROR_STATE_TOPIC, "min.insync.replicas", ""),
        "2"
    );
    let end = controller.log_end_offset();
    assert_eq!(
        create_mirror(&mut controller, "n", &[("bootstrap.servers", "b-broker-1")]),
        ErrorCode::None
    );
    assert_eq!(
        controller.log_end_offset(),
        end + 2,
        "the second mirror writes only its configs: bootstrap.servers and the source's id"
    );
    let listed = list(&mut controller);
    assert_eq!(
        listed
            .iter()
            .map(|m| (m.name.as_str(), m.configs.clone()))
            .collect::<Vec<_>>(),
        vec![
            (
                "m",
                vec![
                    ("bootstrap.servers".into(), "a-broker-1".into()),
                    ("mirror.source.cluster.id".into(), "cluster-a".into())
                ]
            ),
            (
                "n",
                vec![
                    ("bootstrap.servers".into(), "b-broker-1".into()),
                    ("mirror.source.cluster.id".into(), "cluster-b".into())
                ]
            ),
        ]
    );
}

#[test]
fn create_mirror_refuses_bad_names_duplicates_and_missing_bootstrap() {
    let mut controller = with_mirror();
    let end = controller.log_end_offset();
    let bootstrap = [("bootstrap.servers", "a-broker-1")];
    assert_eq!(
        create_mirror(&mut controller, "m", &bootstrap),
        ErrorCode::ClusterMirrorAlreadyExists
    );
    for name in ["", "x.removed", "x.paused", "a b", ".."] {
        assert_eq!(
            create_mirror(&mut controller, name, &bootstrap),
            ErrorCode::InvalidRequest,
            "{name:?}"
        );
    }
    assert_eq!(
        create_mirror(&mut controller, "n", &[]),
        ErrorCode::InvalidConfig
    );
    assert_eq!(
        create_mirror(&mut controller, "n", &[("bootstrap.servers", " ")]),
        ErrorCode::InvalidConfig
    );
    assert_eq!(
        create_mirror(
            &mut controller,
            "n",
            &[
                ("bootstrap.servers", "a-broker-1"),
                ("bootstrap.servers", "b-broker-1")
            ]
        ),
        ErrorCode::InvalidConfig
    );
    for (key, bad) in [
        ("invalid.config", "foo"),
        ("mirror.source.cluster.id", "cluster-a"),
        ("mirror.topics.include", "orders[0-9]"),
        ("mirror.groups.exclude", "a|b"),
        ("mirror.acl.include", "topic:x;User:a"),
    ] {
        assert_eq!(
            create_mirror(
                &mut controller,
                "n",
                &[("bootstrap.servers", "a-broker-1"), (key, bad)]
            ),
            ErrorCode::InvalidConfig,
            "{key}={bad}"
        );
    }
    assert_eq!(controller.log_end_offset(), end, "nothing written");
}

#[test]
fn create_mirror_fails_whole_while_mirror_state_cannot_be_replicated() {
    let mut controller = new_controller();
    start_brokers(&mut controller, 0, &[1, 2]);
    let end = controller.log_end_offset();
    assert_eq!(
        create_mirror(&mut controller, "m", &[("bootstrap.servers", "a-broker-1")]),
        ErrorCode::InvalidReplicationFactor
    );
    assert_eq!(controller.log_end_offset(), end);
    assert!(list(&mut controller).is_empty());
}

#[test]
fn topic_membership_follows_the_seed_workflows() {
    let mut controller = with_mirror();
    let ok = ErrorCode::None;
    let invalid = ErrorCode::InvalidClusterMirrorState;
    assert_eq!(
        alter(&mut controller, "m", Add, &["orders"]),
        (ok, vec![ok])
    );
    assert_eq!(mirror_name(&controller, "orders"), "m");
    assert_eq!(
        alter(&mut controller, "m", Add, &["orders", "nope", "payments"]),
        (ok, vec![invalid, ErrorCode::UnknownTopicOrPartition, ok]),
        "per-topic results"
    );
    assert_eq!(
        alter(&mut controller, "m", Resume, &["orders"]).1,
        vec![invalid]
    );
    assert_eq!(alter(&mut controller, "m", Pause, &["orders"]).1, vec![ok]);
    assert_eq!(mirror_name(&controller, "orders"), "m.paused");
    assert_eq!(
        alter(&mut controller, "m", Pause, &["orders"]).1,
        vec![invalid]
    );
    assert_eq!(alter(&mut controller, "m", Resume, &["orders"]).1, vec![ok]);
    assert_eq!(mirror_name(&controller, "orders"), "m");
    assert_eq!(alter(&mut controller, "m", Pause, &["orders"]).1, vec![ok]);
    assert_eq!(
        alter(&mut controller, "m", Remove, &["orders"]).1,
        vec![ok],
        "a paused topic can fail over"
    );
    assert_eq!(mirror_name(&controller, "orders"), "m.removed");
    assert_eq!(
        alter(&mut controller, "m", Remove, &["orders"]).1,
        vec![invalid]
    );

    // Another mirror cannot take or touch a member topic; a removed one it may take once a
    // broker found it STOPPED in the mirror that removed it.
    create_mirror(&mut controller, "n", &[("bootstrap.servers", "b-broker-1")]);
    assert_eq!(
        alter(&mut controller, "n", Add, &["payments"]).1,
        vec![invalid]
    );
    assert_eq!(
        alter(&mut controller, "n", Pause, &["payments"]).1,
        vec![invalid]
    );
    let not_stopped = ErrorCode::MirrorTopicNotStopped;
    assert_eq!(
        alter(&mut controller, "n", Add, &["orders"]).1,
        vec![not_stopped],
        "unchecked"
    );
    assert_eq!(
        alter_checked(&mut controller, "n", Add, &["orders"], &[("orders", "n")]).1,
        vec![not_stopped],
        "checked in a mirror that did not remove it"
    );
    assert_eq!(mirror_name(&controller, "orders"), "m.removed");
    assert_eq!(
        alter_checked(&mut controller, "n", Add, &["orders"], &[("orders", "m")]).1,
        vec![ok]
    );
    assert_eq!(mirror_name(&controller, "orders"), "n");
    assert_eq!(
        alter(&mut controller, "x", Add, &["orders"]),
        (ErrorCode::ClusterMirrorNotFound, vec![])
    );
}

#[test]
fn delete_mirror_needs_every_topic_removed_and_frees_the_name() {
    let mut controller = with_mirror();
    alter(&mut controller, "m", Add, &["orders", "payments"]);
    assert_eq!(
        delete_mirror(&mut controller, "m"),
        ErrorCode::InvalidClusterMirrorState
    );
    alter(&mut controller, "m", Remove, &["orders"]);
    assert_eq!(
        delete_mirror(&mut controller, "m"),
        ErrorCode::InvalidClusterMirrorState,
        "payments is still mirrored"
    );
    alter(&mut controller, "m", Remove, &["payments"]);
    assert_eq!(delete_mirror(&mut controller, "m"), ErrorCode::None);
    assert!(list(&mut controller).is_empty());
    assert_eq!(mirror_name(&controller, "orders"), "");
    assert_eq!(
        delete_mirror(&mut controller, "m"),
        ErrorCode::ClusterMirrorNotFound
    );
    assert_eq!(
        create_mirror(&mut controller, "m", &[("bootstrap.servers", "c-broker-1")]),
        ErrorCode::None,
        "the name is reusable"
    );
    assert!(
        list(&mut controller)[0].topics.is_empty(),
        "without old members"
    );
}

#[test]
fn users_cannot_set_mirror_name_or_leave_a_mirror_invalid_or_change_its_recorded_source() {
    let mut controller = with_mirror();
    let alter_configs = |controller: &mut Controller<MemoryDisk>,
                         resource,
                         name: &str,
                         value: Option<&str>| {
        let request = Request::Controller(ControllerRequest::IncrementalAlterConfigs {
            resource,
            changes: vec![(name.to_string(), value.map(str::to_string))],
        });
        match send(controller, 0, admin_node(), request) {
            Response::Controller(ControllerResponse::IncrementalAlterConfigs { error }) => error,
            other => panic!("unexpected {other:?}"),
        }
    };
    let topic = || ConfigResource::Topic("orders".into());
    let mirror = |name: &str| ConfigResource::Mirror(name.into());
    assert_eq!(
        alter_configs(&mut controller, topic(), "mirror.name", Some("m")),
        ErrorCode::InvalidConfig
    );
    assert_eq!(
        alter_configs(&mut controller, mirror("m"), "bootstrap.servers", None),
        ErrorCode::InvalidConfig
    );
    assert_eq!(
        alter_configs(
            &mut controller,
            mirror("x"),
            "request.timeout.ms",
            Some("5")
        ),
        ErrorCode::ClusterMirrorNotFound
    );
    // The result must still be a mirror's properties; the recorded source is not a user's.
    for (name, value) in [
        ("invalid.config", Some("foo")),
        ("bootstrap.servers", Some("a")),
        ("mirror.failed.retry.max.attempts", Some("many")),
        ("mirror.source.cluster.id", Some("cluster-b")),
        ("mirror.source.cluster.id", None),
    ] {
        assert_eq!(
            alter_configs(&mut controller, mirror("m"), name, value),
            ErrorCode::InvalidConfig,
            "{name}={value:?}"
        );
    }
    // Another cluster is accepted here: the brokers refuse to mirror from it.
    assert_eq!(
        alter_configs(
            &mut controller,
            mirror("m"),
            "bootstrap.servers",
            Some("b-broker-1")
        ),
        ErrorCode::None
    );
    assert_eq!(list(&mut controller)[0].configs[0].1, "b-broker-1");
    assert_eq!(list(&mut controller)[0].configs[1].1, "cluster-a", "kept");
}

#[test]
fn an_add_with_include_patterns_appends_them_to_the_mirrors_include() {
    // The prototype's testStartMirrorTopicsWithInclude: startMirrorTopics with
    // `includePatterns` persists them into `mirror.topics.include` (appended, each once), in
    // the batch that adds the topics; an invalid result or a pattern on another operation is
    // refused whole.
    let mut controller = with_mirror();
    let add = |controller: &mut Controller<MemoryDisk>, op, patterns: &[&str]| {
        let request = Request::Controller(ControllerRequest::AlterMirrorTopics {
            mirror: "m".into(),
            operation: op,
            topics: vec!["orders".into()],
            checked_stopped: Vec::new(),
            include_patterns: patterns.iter().map(|p| p.to_string()).collect(),
        });
        match send(controller, 0, admin_node(), request) {
            Response::Controller(ControllerResponse::AlterMirrorTopics { error, .. }) => error,
            other => panic!("unexpected {other:?}"),
        }
    };
    let include = |controller: &Controller<MemoryDisk>| {
        controller
            .image()
            .configs
            .get(&ConfigResource::Mirror("m".into()))
            .and_then(|configs| configs.get("mirror.topics.include").cloned())
    };
    assert_eq!(include(&controller), None, "no include at creation");
    assert_eq!(add(&mut controller, Add, &["orders-.*"]), ErrorCode::None);
    assert_eq!(include(&controller).as_deref(), Some("orders-.*"));
    assert_eq!(
        mirror_name(&controller, "orders"),
        "m",
        "the topic is added too"
    );
    assert_eq!(
        add(&mut controller, Pause, &["payments"]),
        ErrorCode::InvalidRequest
    );
    assert_eq!(add(&mut controller, Remove, &[]), ErrorCode::None);
    assert_eq!(
        add(&mut controller, Add, &["orders-.*", "events-.*"]),
        ErrorCode::None
    );
    assert_eq!(
        include(&controller).as_deref(),
        Some("orders-.*,events-.*"),
        "appended once each"
    );
    let end = controller.log_end_offset();
    assert_eq!(add(&mut controller, Add, &["("]), ErrorCode::InvalidConfig);
    assert_eq!(
        controller.log_end_offset(),
        end,
        "refused whole: nothing written"
    );
}

#[test]
fn list_mirrors_filters_by_name_source_cluster_and_desired_state() {
    // The prototype's testListClusterMirrorsFilters: "m" mirrors orders, "n" (same source)
    // mirrored payments and failed it over. A mirror that passes the name and source filters
    // is listed with its topics whose desired state passes the third, none maybe; that filter
    // defaults to MIRRORING and PAUSED.
    let mut controller = with_mirror();
    assert_eq!(
        create_mirror(&mut controller, "n", &[("bootstrap.servers", "a-broker-2")]),
        ErrorCode::None
    );
    alter(&mut controller, "m", Add, &["orders"]);
    alter(&mut controller, "n", Add, &["payments"]);
    alter(&mut controller, "n", Remove, &["payments"]);
    let mut listing = |filter: ListMirrorsFilter| -> Vec<(String, Vec<String>)> {
        list_with(&mut controller, filter)
            .into_iter()
            .map(|m| (m.name, m.topics.into_iter().map(|(t, _)| t).collect()))
            .collect()
    };
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let both = vec![
        ("m".to_string(), names(&["orders"])),
        ("n".to_string(), Vec::new()),
    ];
    assert_eq!(listing(ListMirrorsFilter::default()), both, "no filter");
    let by_name = |list: &[&str]| ListMirrorsFilter {
        names: names(list),
        ..ListMirrorsFilter::default()
    };
    assert_eq!(listing(by_name(&["m"])), both[..1].to_vec());
    assert!(listing(by_name(&["nonexistent"])).is_empty());
    let by_source = |list: &[&str]| ListMirrorsFilter {
        source_cluster_ids: names(list),
        ..ListMirrorsFilter::default()
    };
    assert_eq!(listing(by_source(&["cluster-a"])), both);
    assert!(listing(by_source(&["unknown-cluster-id"])).is_empty());
    let by_state = |states: &[ListedState]| ListMirrorsFilter {
        desired_states: states.to_vec(),
        ..ListMirrorsFilter::default()
    };
    assert_eq!(listing(by_state(&[ListedState::Mirroring])), both);
    assert_eq!(
        listing(by_state(&[ListedState::Stopped])),
        vec![
            ("m".to_string(), Vec::new()),
            ("n".to_string(), names(&["payments"]))
        ]
    );
    // A paused topic is listed by default, not under MIRRORING.
    alter(&mut controller, "m", Pause, &["orders"]);
    let mut listing = |filter| list_with(&mut controller, filter)[0].topics.len();
    assert_eq!(listing(ListMirrorsFilter::default()), 1);
    assert_eq!(listing(by_state(&[ListedState::Mirroring])), 0);
    assert_eq!(listing(by_state(&[ListedState::Paused])), 1);
}

#[test]
fn mirror_state_survives_a_controller_restart() {
    let mut controller = with_mirror();
    alter(&mut controller, "m", Add, &["orders"]);
    alter(&mut controller, "m", Pause, &["orders"]);
    let before = list(&mut controller);
    let disk = controller.into_disk();
    let mut controller = open(disk, 0);
    assert_eq!(list(&mut controller), before);
}

fn bump<D: LogDisk>(
    controller: &mut Controller<D>,
    broker: i32,
    broker_epoch: i64,
    partitions: Vec<(TopicId, i32, i32)>,
) -> (ErrorCode, Vec<(ErrorCode, i32)>) {
    let request = Request::Controller(ControllerRequest::BumpLeaderEpochs {
        broker_id: BrokerId(broker),
        broker_epoch,
        partitions: partitions
            .into_iter()
            .map(|(topic_id, partition, epoch)| (topic_id, partition, LeaderEpoch(epoch)))
            .collect(),
    });
    match send(controller, 0, broker_node(broker), request) {
        Response::Controller(ControllerResponse::BumpLeaderEpochs { error, partitions }) => (
            error,
            partitions
                .into_iter()
                .map(|(_, _, e, epoch)| (e, epoch.0))
                .collect(),
        ),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn bump_leader_epochs_raises_the_epoch_above_the_minimum_without_moving_leadership() {
    let mut controller = new_controller();
    let epochs = start_brokers(&mut controller, 0, &[1, 2]);
    let topic_id = create_topic(&mut controller, 0, new_topic("orders", 1, 2));
    let before = partition(&controller, topic_id, 0);
    let leader = before.leader.expect("a leader").0;
    let epoch_of = |broker: i32| epochs[broker as usize - 1];
    let other = 3 - leader;

    assert_eq!(
        bump(
            &mut controller,
            leader,
            epoch_of(leader),
            vec![(topic_id, 0, 7)]
        ),
        (ErrorCode::None, vec![(ErrorCode::None, 8)])
    );
    let after = partition(&controller, topic_id, 0);
    assert_eq!(after.leader, before.leader);
    assert_eq!(after.isr, before.isr);
    assert_eq!(
        (after.leader_epoch, after.partition_epoch),
        (8, before.partition_epoch + 1)
    );

    let end = controller.log_end_offset();
    assert_eq!(
        bump(
            &mut controller,
            leader,
            epoch_of(leader),
            vec![(topic_id, 0, 3)]
        ),
        (ErrorCode::None, vec![(ErrorCode::None, 8)]),
        "already above the minimum: nothing written"
    );
    assert_eq!(controller.log_end_offset(), end);
    assert_eq!(
        bump(
            &mut controller,
            leader,
            epoch_of(leader),
            vec![(topic_id, 0, 8)]
        )
        .1,
        vec![(ErrorCode::None, 9)],
        "the epoch must exceed the minimum"
    );
    assert_eq!(
        bump(
            &mut controller,
            other,
            epoch_of(other),
            vec![(topic_id, 0, 20)]
        )
        .1,
        vec![(ErrorCode::NotLeaderOrFollower, 9)]
    );
    assert_eq!(
        bump(
            &mut controller,
            leader,
            epoch_of(leader) + 1,
            vec![(topic_id, 0, 20)]
        )
        .0,
        ErrorCode::StaleBrokerEpoch
    );
    assert_eq!(
        bump(
            &mut controller,
            leader,
            epoch_of(leader),
            vec![(TopicId(5), 0, 1)]
        )
        .1,
        vec![(ErrorCode::UnknownTopicOrPartition, -1)]
    );
}

/// GrowMirrorTopics from mirror `mirror`'s sync: each topic's error.
fn grow<D: LogDisk>(
    controller: &mut Controller<D>,
    mirror: &str,
    topics: &[(&str, i32)],
) -> Vec<ErrorCode> {
    let request = Request::Controller(ControllerRequest::GrowMirrorTopics {
        mirror: mirror.into(),
        topics: topics.iter().map(|(t, n)| (t.to_string(), *n)).collect(),
    });
    match send(controller, 0, admin_node(), request) {
        Response::Controller(ControllerResponse::GrowMirrorTopics { error, results }) => {
            assert_eq!(error, ErrorCode::None);
            results.into_iter().map(|(_, e)| e).collect()
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_mirrors_sync_grows_its_own_topics_which_an_admin_may_not() {
    let mut controller = with_mirror();
    assert_eq!(
        create_mirror(&mut controller, "n", &[("bootstrap.servers", "a-broker-1")]),
        ErrorCode::None
    );
    alter(&mut controller, "m", Add, &["orders"]);
    alter(&mut controller, "n", Add, &["payments"]);
    let partitions = |controller: &Controller<MemoryDisk>, topic: &str| {
        crate::coordinator::partition_count(controller.image(), topic)
    };
    // An admin's CreatePartitions of a mirror topic is refused until STOPPED.
    let request = Request::Cluster(ClusterRequest::CreatePartitions {
        topics: vec![("orders".into(), 4)],
    });
    assert!(matches!(
        send(&mut controller, 0, admin_node(), request),
        Response::Cluster(ClusterResponse::CreatePartitions { results })
            if results[0].1 == ErrorCode::MirrorTopicNotStopped
    ));
    // The mirror's sync grows its own topic; another mirror's topic and a count not above the
    // current one are refused.
    assert_eq!(
        grow(&mut controller, "m", &[("orders", 4), ("payments", 3)]),
        [ErrorCode::None, ErrorCode::InvalidClusterMirrorState]
    );
    assert_eq!(partitions(&controller, "orders"), 4);
    assert_eq!(partitions(&controller, "payments"), 1);
    assert_eq!(
        grow(&mut controller, "m", &[("orders", 4)]),
        [ErrorCode::InvalidPartitions]
    );
    // A removed topic is no longer the mirror's to grow.
    alter(&mut controller, "m", Remove, &["orders"]);
    assert_eq!(
        grow(&mut controller, "m", &[("orders", 6)]),
        [ErrorCode::InvalidClusterMirrorState]
    );
}
