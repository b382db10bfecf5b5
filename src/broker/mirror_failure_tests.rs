//! FAILED, its retries and RecoverMirrorTopics end to end without the simulator (issue #17):
//! the source cut off, the partition failing on a silent source, running out of attempts,
//! and an operator's recovery; the recovery's refusals.

use super::*;
use crate::mirror::failure::{
    RETRY_INITIAL_BACKOFF_CONFIG, RETRY_MAX_ATTEMPTS_CONFIG, RETRY_MAX_BACKOFF_CONFIG,
    SOCKET_TIMEOUT_CONFIG,
};

/// Mirror `m` from a to b that fails a partition after 500 ms of silence and allows 2
/// attempts, 100 ms apart at first, and orders mirroring through it.
fn failing_mirror_world() -> World {
    let settings = [
        (SOCKET_TIMEOUT_CONFIG, "500"),
        (RETRY_MAX_ATTEMPTS_CONFIG, "2"),
        (RETRY_INITIAL_BACKOFF_CONFIG, "100"),
        (RETRY_MAX_BACKOFF_CONFIG, "300"),
    ];
    mirroring_orders(World::new(), &settings)
}

/// `world` with 5 records on a's orders and mirror `m` (with `properties`) from a to b
/// mirroring orders.
fn mirroring_orders(mut world: World, properties: &[(&str, &str)]) -> World {
    assert!(world.produce(A, 7, 0, 5).iter().all(|e| e.is_none()));
    create_mirror_with(&mut world, "m", (A, B), properties);
    alter_on(&mut world, B, "m", MirrorTopicOperation::Add);
    run_until(&mut world, B, MirrorState::Mirroring);
    world.run_for(300);
    world
}

/// Cuts every node of a off from everyone, or brings them back.
fn cut_source(world: &mut World, cut: bool) {
    let nodes = std::iter::once(NodeId::Controller(A))
        .chain((1..=BROKERS).map(|id| NodeId::Broker(A, BrokerId(id))));
    for node in nodes {
        if cut {
            world.cut.insert(node);
        } else {
            world.cut.remove(&node);
        }
    }
}

/// orders-0's stored state at b's mirror coordinator.
fn stored_status(world: &mut World) -> crate::protocol::MirrorPartitionStatus {
    let (_, partitions) = sync_tests::describe(world, "m");
    partitions
        .into_iter()
        .find(|description| description.topic_partition == orders())
        .expect("orders-0 is described")
        .status
}

/// orders-0 is FAILED for good: non-retryable (retry count −1) with `reason` in its stored
/// error, and still FAILED 3 s later.
fn assert_failed_for_good(world: &mut World, reason: &str) {
    let status = stored_status(world);
    assert_eq!(status.retry_attempt, -1, "{status:?}");
    assert!(
        status
            .error_message
            .as_deref()
            .is_some_and(|message| message.contains(reason)),
        "{status:?}"
    );
    world.run_for(3_000);
    assert_eq!(state_on(world, B), MirrorState::Failed, "not retried");
}

fn recover(world: &mut World, mirror: &str, topics: &[&str]) -> Response {
    let request = Request::Mirror(MirrorRequest::RecoverMirrorTopics {
        mirror: mirror.into(),
        topics: topics.iter().map(|topic| (*topic).to_owned()).collect(),
    });
    world.call(NodeId::Broker(B, BrokerId(2)), request)
}

#[test]
fn a_silent_source_fails_the_partition_until_its_attempts_run_out_and_recover_restarts_it() {
    let mut world = failing_mirror_world();
    cut_source(&mut world, true);
    run_until(&mut world, B, MirrorState::Failed);
    // Two attempts, each a PREPARING that hears nothing for 500 ms: then it waits.
    world.run_for(3_000);
    let status = stored_status(&mut world);
    assert_eq!(
        (status.state, status.retry_attempt),
        (MirrorState::Failed, 2),
        "{status:?}"
    );
    assert!(
        status
            .error_message
            .as_deref()
            .is_some_and(|message| message.contains("mirror.socket.timeout.ms 500")),
        "{status:?}"
    );
    assert!(world.brokers.values_mut().any(|broker| {
        broker.take_events().iter().any(|event| {
            matches!(
                event,
                BrokerEvent::MirrorAwaitsOperator {
                    retry_attempt: 2,
                    ..
                }
            )
        })
    }));
    // The source back, nothing moves until an operator recovers the partition.
    cut_source(&mut world, false);
    world.run_for(2_000);
    assert_eq!(state_on(&world, B), MirrorState::Failed);
    match recover(&mut world, "m", &["orders"]) {
        Response::Mirror(MirrorResponse::RecoverMirrorTopics {
            error: ErrorCode::None,
            results,
            recovered,
        }) => {
            assert_eq!(results, [("orders".to_owned(), ErrorCode::None)]);
            assert_eq!(recovered, [orders()]);
        }
        other => panic!("unexpected {other:?}"),
    }
    run_until(&mut world, B, MirrorState::Mirroring);
    world.run_for(500);
    let status = stored_status(&mut world);
    assert_eq!(
        (status.state, status.retry_attempt, status.error_message),
        (MirrorState::Mirroring, 0, None),
        "a fresh budget, the error cleared once mirroring again"
    );
    // A second recovery finds nothing FAILED.
    assert!(matches!(
        recover(&mut world, "m", &["orders"]),
        Response::Mirror(MirrorResponse::RecoverMirrorTopics { recovered, .. })
            if recovered.is_empty()
    ));
}

/// Generated seed 13600000000000283: the answer to the write of FAILED (the source silent) was
/// lost, so the leader learned FAILED from the stored state it read back; with no attempt
/// left it waited for an operator. The recovery's PREPARING must wait for the source afresh,
/// not fail at once on the silence clock of the MIRRORING before the failure.
#[test]
fn a_failed_learned_by_reading_back_starts_the_recovered_preparing_with_a_fresh_silence_clock() {
    let settings = [
        (SOCKET_TIMEOUT_CONFIG, "500"),
        (RETRY_MAX_ATTEMPTS_CONFIG, "1"),
    ];
    let mut world = mirroring_orders(World::new(), &settings);
    cut_source(&mut world, true);
    world.drop_if = Some(|envelope| {
        matches!(
            &envelope.message,
            Message::Response(
                _,
                Response::Coordinator(CoordinatorResponse::WriteMirrorStates { .. })
            )
        )
    });
    world.run_for(3_000);
    world.drop_if = None;
    cut_source(&mut world, false);
    world.run_for(1_000);
    assert_eq!(stored_status(&mut world).state, MirrorState::Failed);
    assert!(matches!(
        recover(&mut world, "m", &["orders"]),
        Response::Mirror(MirrorResponse::RecoverMirrorTopics { recovered, .. })
            if recovered == [orders()]
    ));
    run_until(&mut world, B, MirrorState::Mirroring);
}

#[test]
fn a_failover_from_failed_needs_nothing_from_the_source() {
    // L-2: the partition FAILED with no attempt left and the source still cut off; the
    // removal stops it.
    let mut world = failing_mirror_world();
    cut_source(&mut world, true);
    run_until(&mut world, B, MirrorState::Failed);
    world.run_for(3_000);
    alter_on(&mut world, B, "m", MirrorTopicOperation::Remove);
    run_until(&mut world, B, MirrorState::Stopped);
}

#[test]
fn recover_refuses_unknown_mirrors_unknown_topics_and_other_mirrors_topics() {
    let mut world = failing_mirror_world();
    assert!(matches!(
        recover(&mut world, "nope", &["orders"]),
        Response::Mirror(MirrorResponse::RecoverMirrorTopics {
            error: ErrorCode::ClusterMirrorNotFound,
            ..
        })
    ));
    create_mirror_between(&mut world, "n", A, B);
    match recover(&mut world, "n", &["ghost", "orders"]) {
        Response::Mirror(MirrorResponse::RecoverMirrorTopics {
            error: ErrorCode::None,
            results,
            recovered,
        }) => {
            assert_eq!(
                results,
                [
                    ("ghost".to_owned(), ErrorCode::UnknownTopicOrPartition),
                    ("orders".to_owned(), ErrorCode::InvalidClusterMirrorState),
                ]
            );
            assert!(recovered.is_empty());
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn unreadable_retry_settings_are_refused_at_create_and_alter() {
    let mut world = World::new();
    let answer = world.call(
        NodeId::Controller(B),
        Request::Controller(ControllerRequest::CreateMirror {
            name: "m".into(),
            configs: vec![
                ("bootstrap.servers".into(), "a-broker-1".into()),
                (RETRY_MAX_ATTEMPTS_CONFIG.into(), "many".into()),
            ],
        }),
    );
    assert!(
        matches!(
            answer,
            Response::Controller(ControllerResponse::CreateMirror {
                error: ErrorCode::InvalidConfig
            })
        ),
        "{answer:?}"
    );
    create_mirror_between(&mut world, "m", A, B);
    let alter = Request::Controller(ControllerRequest::IncrementalAlterConfigs {
        resource: ConfigResource::Mirror("m".into()),
        changes: vec![(SOCKET_TIMEOUT_CONFIG.into(), Some("-1".into()))],
    });
    let answer = world.call(NodeId::Controller(B), alter);
    assert!(
        format!("{answer:?}").contains("InvalidConfig"),
        "{answer:?}"
    );
}

/// Deletes orders on a through one of a's brokers.
fn delete_source_orders(world: &mut World) {
    let answer = world.call(
        NodeId::Broker(A, BrokerId(1)),
        Request::Cluster(ClusterRequest::DeleteTopics {
            topics: vec!["orders".into()],
        }),
    );
    assert!(format!("{answer:?}").contains("None"), "{answer:?}");
}

#[test]
fn a_source_topic_deleted_and_created_again_fails_the_partition_for_good() {
    // Another topic id under the same name is another history: nothing mirrored so far
    // belongs to it (spec §7 item 4; the prototype's check of the source topic id).
    let mut world = failing_mirror_world();
    delete_source_orders(&mut world);
    world.run_for(300);
    world.create_orders(A);
    run_until(&mut world, B, MirrorState::Failed);
    world.run_for(1_000);
    assert_failed_for_good(&mut world, "created again");
}

#[test]
fn a_partition_added_back_after_its_stop_mirrors_the_source_topic_created_again_meanwhile() {
    // Generated seed 14500000000000274: a stop ends the mirroring of a source topic; added
    // back after the source deleted and created orders again, the partition mirrors the new
    // topic instead of failing it as a replacement of the one it stopped mirroring.
    let mut world = failing_mirror_world();
    request_failover(&mut world);
    run_until(&mut world, B, MirrorState::Stopped);
    delete_source_orders(&mut world);
    world.run_for(300);
    world.create_orders(A);
    world.run_for(300);
    assert!(world.produce(A, 8, 0, 3).iter().all(|e| e.is_none()));
    alter_on(&mut world, B, "m", MirrorTopicOperation::Add);
    run_until(&mut world, B, MirrorState::Mirroring);
    world.run_for(1_000);
    assert_eq!(state_on(&world, B), MirrorState::Mirroring);
    let log_end = |cluster| world.partition(world.leader(cluster)).log.log_end_offset();
    assert_eq!(log_end(B), log_end(A), "b mirrors the new topic's records");
}

#[test]
fn a_deleted_source_topic_fails_the_partition_only_after_a_refresh_without_it() {
    let mut world = failing_mirror_world();
    let log_end = world.partition(world.leader(B)).log.log_end_offset();
    delete_source_orders(&mut world);
    // The first answers without the topic are not taken at their word: the partition fails
    // (retryably: no fetch is answered any more) and retries, but is not judged deleted yet.
    world.run_for(2_000);
    assert_ne!(stored_status(&mut world).retry_attempt, -1);
    world.run_for(6_000);
    let status = stored_status(&mut world);
    assert_eq!(
        (status.state, status.retry_attempt),
        (MirrorState::Failed, -1),
        "{status:?}"
    );
    assert!(
        status
            .error_message
            .as_deref()
            .is_some_and(|message| message.contains("the source topic is deleted")),
        "{status:?}"
    );
    // The retries in between asked the source for the last mirrored epoch of a topic it no
    // longer has: refused, not "mirror from scratch", so b kept its copy.
    assert_eq!(
        world.partition(world.leader(B)).log.log_end_offset(),
        log_end,
        "b's copy of the deleted topic's records is kept"
    );
}

/// The prototype's simulated unclean election (testUleRecoveryProcess): a's leader of orders-0
/// loses its log above `offset`, as an out-of-sync replica elected uncleanly would not have it.
/// b's orders at `mirror.support.unclean.leader.election=true`, seen by b's brokers.
fn support_unclean_elections_on_b(world: &mut World) {
    let request = Request::Controller(ControllerRequest::IncrementalAlterConfigs {
        resource: ConfigResource::Topic("orders".into()),
        changes: vec![(
            "mirror.support.unclean.leader.election".into(),
            Some("true".into()),
        )],
    });
    world.call(NodeId::Controller(B), request);
    world.run_for(300);
}

fn source_loses_records_above(world: &mut World, offset: i64) {
    let leader = world.leader(A);
    let partition = world
        .brokers
        .get_mut(&leader)
        .expect("a's leader")
        .partitions_mut_for_test()
        .get_mut(&orders())
        .expect("orders-0 on a's leader");
    partition
        .log
        .truncate_to(crate::common::Offset(offset))
        .expect("truncated");
}

#[test]
fn a_source_that_lost_records_it_served_fails_the_partition_keeping_them() {
    // Spec §4.7 with mirror.support.unclean.leader.election off: b mirrored offsets 0..5;
    // a's leader now ends at 3. b's next fetch meets the diverging epoch below what a had
    // shown it holds: FAILED, non-retryable, and nothing cut.
    let mut world = failing_mirror_world();
    assert_eq!(world.partition(world.leader(B)).log.log_end_offset().0, 5);
    source_loses_records_above(&mut world, 3);
    assert_failed_keeping_all_five(&mut world, "offsets 3..5");
}

/// b's orders-0 goes FAILED for good with `reason`, and its log keeps the 5 records it mirrored.
fn assert_failed_keeping_all_five(world: &mut World, reason: &str) {
    run_until(world, B, MirrorState::Failed);
    world.run_for(1_000);
    assert_eq!(
        world.partition(world.leader(B)).log.log_end_offset().0,
        5,
        "kept"
    );
    assert_failed_for_good(world, reason);
}

#[test]
fn a_source_loss_is_followed_where_the_topic_supports_unclean_elections() {
    // The same loss with b's orders at mirror.support.unclean.leader.election=true: b cuts
    // to 3 and mirrors on; what a writes next reaches b.
    let mut world = failing_mirror_world();
    support_unclean_elections_on_b(&mut world);
    source_loses_records_above(&mut world, 3);
    world.run_for(1_000);
    assert_eq!(state_on(&world, B), MirrorState::Mirroring);
    assert_eq!(world.partition(world.leader(B)).log.log_end_offset().0, 3);
    assert!(world.produce(A, 8, 0, 2).iter().all(|e| e.is_none()));
    world.run_for(1_000);
    assert_eq!(world.partition(world.leader(B)).log.log_end_offset().0, 5);
}

/// b's replicas hold no record of orders-0 and start at 5 (as after restarting at a source's
/// log start that DeleteRecords had moved to 5), and a's leader now ends at 3: b's fetch at 5
/// names no epoch, so a answers OffsetOutOfRange, not a diverging epoch. (a is cut only once
/// the fetches b sent before its own cut were answered.)
fn source_ends_below_an_epochless_fetch(world: &mut World) {
    for id in 1..=BROKERS {
        let replica = world
            .brokers
            .get_mut(&NodeId::Broker(B, BrokerId(id)))
            .and_then(|broker| broker.partitions_mut_for_test().get_mut(&orders()));
        if let Some(partition) = replica {
            partition
                .log
                .truncate_fully_and_start_at(crate::common::Offset(5))
                .expect("restarted at 5");
        }
    }
    world.run_for(1_500);
    assert_eq!(state_on(world, B), MirrorState::Mirroring);
    source_loses_records_above(world, 3);
}

#[test]
fn a_source_log_ending_below_a_served_offset_fails_the_partition_without_unclean_support() {
    let mut world = failing_mirror_world();
    source_ends_below_an_epochless_fetch(&mut world);
    run_until(&mut world, B, MirrorState::Failed);
    assert_failed_for_good(&mut world, "ends below 5");
}

#[test]
fn a_source_log_ending_below_a_served_offset_is_cut_to_where_the_topic_supports_it() {
    // Spec §4.7 on the OffsetOutOfRange path: cut to a's high watermark (3), ULE_RECOVERY until
    // every replica agrees, then mirroring on from there.
    let mut world = failing_mirror_world();
    support_unclean_elections_on_b(&mut world);
    source_ends_below_an_epochless_fetch(&mut world);
    run_until(&mut world, B, MirrorState::UleRecovery);
    assert_eq!(world.partition(world.leader(B)).log.log_end_offset().0, 3);
    run_until(&mut world, B, MirrorState::Mirroring);
    assert!(world.produce(A, 8, 0, 2).iter().all(|e| e.is_none()));
    world.run_for(1_000);
    assert_eq!(world.partition(world.leader(B)).log.log_end_offset().0, 5);
}

fn alter_mirror(world: &mut World, key: &str, value: &str) -> ErrorCode {
    let request = Request::Controller(ControllerRequest::IncrementalAlterConfigs {
        resource: ConfigResource::Mirror("m".into()),
        changes: vec![(key.into(), Some(value.into()))],
    });
    match world.call(NodeId::Controller(B), request) {
        Response::Controller(ControllerResponse::IncrementalAlterConfigs { error }) => error,
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_changed_bootstrap_drops_the_source_connection_and_mirroring_goes_on_over_the_new_one() {
    // The prototype's test_config_update: an unknown key is refused; bootstrap.servers
    // pointed at one broker of a resets the connection, and what a writes next reaches b.
    let mut world = failing_mirror_world();
    events_on(&mut world, B, |_| Some(()));
    assert_eq!(
        alter_mirror(&mut world, "invalid.config", "foo"),
        ErrorCode::InvalidConfig
    );
    assert_eq!(
        alter_mirror(&mut world, "bootstrap.servers", "a-broker-2"),
        ErrorCode::None
    );
    world.run_for(300);
    let resets = events_on(&mut world, B, |event| match event {
        BrokerEvent::MirrorSourceConnectionReset { mirror } => Some(mirror),
        _ => None,
    });
    assert!(resets.iter().all(|mirror| mirror == "m") && !resets.is_empty());
    assert!(world.produce(A, 8, 0, 2).iter().all(|e| e.is_none()));
    world.run_for(1_000);
    assert_eq!(state_on(&world, B), MirrorState::Mirroring);
    assert_eq!(world.partition(world.leader(B)).log.log_end_offset().0, 7);
}

#[test]
fn a_bootstrap_naming_another_cluster_fails_the_partition_for_good() {
    // Spec S-15: the controller accepts the change (it cannot tell a replaced source), the
    // leader refuses to mirror from it before any request goes there; a failover still works.
    let mut world = failing_mirror_world();
    assert_eq!(
        alter_mirror(&mut world, "bootstrap.servers", "c-broker-1"),
        ErrorCode::None
    );
    run_until(&mut world, B, MirrorState::Failed);
    assert_failed_for_good(&mut world, "created from cluster-a");
    assert_eq!(world.partition(world.leader(B)).log.log_end_offset().0, 5);
    request_failover(&mut world);
    run_until(&mut world, B, MirrorState::Stopped);
}

/// `cluster`'s controller creates (`create`) or deletes `binding`.
fn change_acl(world: &mut World, cluster: ClusterIndex, create: bool, binding: &[&str; 4]) {
    let bindings = vec![crate::metadata::AclBinding {
        resource: binding[0].into(),
        principal: binding[1].into(),
        operation: binding[2].into(),
        permission: binding[3].into(),
    }];
    let request = if create {
        ControllerRequest::CreateAcls { bindings }
    } else {
        ControllerRequest::DeleteAcls { bindings }
    };
    world.call(NodeId::Controller(cluster), Request::Controller(request));
}

#[test]
fn a_source_that_refuses_the_mirrors_principal_fails_the_partition_until_access_is_granted() {
    let mut world = World::with_source_authorizer(crate::metadata::authorizer::AuthorizerConfig {
        allow_everyone_if_no_acl_found: false,
    });
    let grant = ["topic:*", "User:m", "Read", "Allow"];
    change_acl(&mut world, A, true, &grant);
    let jaas = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                username=\"m\" password=\"secret\";";
    let settings = [
        ("sasl.jaas.config", jaas),
        (RETRY_MAX_ATTEMPTS_CONFIG, "50"),
        (RETRY_INITIAL_BACKOFF_CONFIG, "100"),
        (RETRY_MAX_BACKOFF_CONFIG, "200"),
    ];
    let mut world = mirroring_orders(world, &settings);
    // Denied Read: the fetch is refused, the partition fails (retryable) with the refusal.
    let deny = ["topic:orders", "User:m", "Read", "Deny"];
    change_acl(&mut world, A, true, &deny);
    run_until(&mut world, B, MirrorState::Failed);
    let status = stored_status(&mut world);
    assert!(status.retry_attempt > 0, "{status:?}");
    assert!(
        status
            .error_message
            .as_deref()
            .is_some_and(|message| message
                .contains("refuses User:m Read on topic orders (TopicAuthorizationFailed)")),
        "{status:?}"
    );
    // Deleted: a retry mirrors again, and what a wrote meanwhile arrives.
    change_acl(&mut world, A, false, &deny);
    assert!(world.produce(A, 8, 0, 3).iter().all(|e| e.is_none()));
    run_until(&mut world, B, MirrorState::Mirroring);
    world.run_for(1_000);
    assert_eq!(state_on(&world, B), MirrorState::Mirroring);
    let log_end = |cluster| world.partition(world.leader(cluster)).log.log_end_offset();
    let (a_end, b_end) = (log_end(A), log_end(B));
    assert_eq!(b_end, a_end, "b mirrored a's records written while refused");
    // With no grant at all (and no ACL found allowing), the metadata is refused too, which is
    // not a deleted topic: the partition fails retryably, never for good.
    change_acl(&mut world, A, false, &grant);
    run_until(&mut world, B, MirrorState::Failed);
    world.run_for(2_000);
    let status = stored_status(&mut world);
    assert!(status.retry_attempt > 0, "retryable: {status:?}");
}

#[test]
fn a_source_loss_at_the_tail_behind_an_open_transaction_is_found_by_a_probe_at_the_log_end() {
    // Generated seed 14000000000000043: b mirrored 0..5, its last batch at 4. a loses every
    // record from 4 on (its epoch 0 now ends at 4), goes on in a new epoch, and an open
    // transaction there holds its last stable offset at 4. The tail check fetches from 4 with
    // last fetched epoch 0: no divergence at 4, and nothing served below the LSO, so it can
    // never compare the tail. The probe at b's log end (5) is told epoch 0 ends at 4: the
    // source lost records it served, and the partition fails keeping them (spec §4.7).
    let mut world = failing_mirror_world();
    assert_eq!(world.partition(world.leader(B)).log.log_end_offset().0, 5);
    source_loses_records_above(&mut world, 4);
    bump_leader_epoch(&mut world, A);
    open_transaction(&mut world, A, 9);
    assert!(world.produce(A, 10, 0, 3).iter().all(|e| e.is_none()));
    assert_failed_keeping_all_five(&mut world, "offsets 4..5");
}

/// The binding that refuses a mirror without a SASL login (`User:ANONYMOUS`) Read on orders.
const DENY_ANONYMOUS_READ_ON_ORDERS: [&str; 4] = ["topic:orders", "User:ANONYMOUS", "Read", "Deny"];

#[test]
fn a_read_denial_that_lasts_runs_out_of_attempts_though_each_retry_reaches_mirroring() {
    // The source answers every LastMirroredEpochLookup (a deny of Read does not deny the
    // Describe a grant of Read implies) but refuses every fetch: each retry's PREPARING
    // reaches MIRRORING, which mirrors nothing. The failure record stays until a mirrored
    // append, so the attempts run out (the prototype clears it only in
    // `clearFailedStateAndPersist`, on a successful append).
    let mut world = World::with_source_authorizer(crate::metadata::authorizer::AuthorizerConfig {
        allow_everyone_if_no_acl_found: false,
    });
    change_acl(
        &mut world,
        A,
        true,
        &["topic:*", "User:ANONYMOUS", "Read", "Allow"],
    );
    let settings = [
        (RETRY_MAX_ATTEMPTS_CONFIG, "3"),
        (RETRY_INITIAL_BACKOFF_CONFIG, "100"),
        (RETRY_MAX_BACKOFF_CONFIG, "200"),
    ];
    let mut world = mirroring_orders(world, &settings);
    change_acl(&mut world, A, true, &DENY_ANONYMOUS_READ_ON_ORDERS);
    run_until(&mut world, B, MirrorState::Failed);
    world.run_for(5_000);
    let status = stored_status(&mut world);
    assert_eq!(
        (status.state, status.retry_attempt),
        (MirrorState::Failed, 3),
        "{status:?}"
    );
    let (mut mirroring, mut cleared, mut awaits) = (0, 0, false);
    for event in events_on(&mut world, B, Some) {
        match event {
            BrokerEvent::MirrorTransition {
                to: MirrorState::Mirroring,
                ..
            } => mirroring += 1,
            BrokerEvent::MirrorFailureRecordCleared { .. } => cleared += 1,
            BrokerEvent::MirrorAwaitsOperator { retry_attempt, .. } => awaits |= retry_attempt == 3,
            _ => {}
        }
    }
    assert!(
        mirroring >= 2,
        "the retries reached MIRRORING ({mirroring} times)"
    );
    assert_eq!(cleared, 0, "nothing mirrored, nothing cleared");
    assert!(awaits, "the partition waits for an operator");
    // Granted and recovered: a fresh budget.
    change_acl(&mut world, A, false, &DENY_ANONYMOUS_READ_ON_ORDERS);
    world.run_for(300);
    assert!(matches!(
        recover(&mut world, "m", &["orders"]),
        Response::Mirror(MirrorResponse::RecoverMirrorTopics { recovered, .. })
            if recovered == [orders()]
    ));
    run_until(&mut world, B, MirrorState::Mirroring);
    world.run_for(500);
    let status = stored_status(&mut world);
    assert_eq!(status.retry_attempt, 0, "{status:?}");
    // A retry's record is cleared by its first mirrored append (here the records its
    // PREPARING cut, mirrored again).
    change_acl(&mut world, A, true, &DENY_ANONYMOUS_READ_ON_ORDERS);
    run_until(&mut world, B, MirrorState::Failed);
    change_acl(&mut world, A, false, &DENY_ANONYMOUS_READ_ON_ORDERS);
    run_until(&mut world, B, MirrorState::Mirroring);
    world.run_for(1_000);
    let status = stored_status(&mut world);
    assert_eq!(
        (
            status.state,
            status.retry_attempt,
            status.error_message.as_deref()
        ),
        (MirrorState::Mirroring, 0, None),
        "cleared by the append: {status:?}"
    );
    let cleared = events_on(&mut world, B, |event| match event {
        BrokerEvent::MirrorFailureRecordCleared { retry_attempt, .. } => Some(retry_attempt),
        _ => None,
    });
    assert_eq!(cleared, [1]);
    assert_eq!(world.partition(world.leader(B)).log.log_end_offset().0, 5);
}
