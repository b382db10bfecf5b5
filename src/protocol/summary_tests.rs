//! Tests of the one-line message summaries.

use bytes::Bytes;

use super::*;
use crate::protocol::{ProducerEpoch, TopicPartition};
use crate::record::BatchBuilder;

fn produce() -> Message {
    let mut builder = BatchBuilder::idempotent(4711, 2, 30);
    for value in ["a", "b", "c"] {
        builder.append(1_700_000_000_000, None, Some(Bytes::from(value)), vec![]);
    }
    Message::Request(
        17,
        Request::Replica(ReplicaRequest::Produce {
            acks: Acks::All,
            timeout_ms: 1_000,
            topic_partition: TopicPartition::new("orders", 1),
            batch: builder.build(),
            transactional_id: None,
            topic_id: None,
        }),
    )
}

#[test]
fn a_produce_summary_shows_the_batch_header_not_its_bytes() {
    let line = produce().summary().to_string();
    assert!(
        line.starts_with("Produce#17 orders-1 acks=all timeout=1000ms batch[0..=2 n=3 pid=4711 epoch=2 seq=30 leader_epoch=-1"),
        "{line}"
    );
    assert!(!line.contains('\n'), "{line}");
    assert!(line.ends_with("B]"), "{line}");
}

#[test]
fn long_lists_are_cut_and_successful_errors_left_out() {
    let topics: Vec<String> = (0..10).map(|i| format!("t{i}")).collect();
    let line = Message::Request(3, Request::Cluster(ClusterRequest::DeleteTopics { topics }))
        .summary()
        .to_string();
    assert_eq!(line, "DeleteTopics#3 topics=[t0, t1, t2, t3, +6 more]");
    let line = Message::Response(
        3,
        Response::Cluster(ClusterResponse::DeleteTopics {
            results: vec![
                ("t0".into(), ErrorCode::None),
                ("t1".into(), ErrorCode::UnknownTopicOrPartition),
            ],
        }),
    )
    .summary()
    .to_string();
    assert_eq!(
        line,
        "DeleteTopicsResponse#3 results=[t0=None, t1=UnknownTopicOrPartition]"
    );
    let line = Message::Response(
        9,
        Response::Coordinator(CoordinatorResponse::EndTxn {
            error: ErrorCode::None,
            producer_id: ProducerId::NONE,
            producer_epoch: ProducerEpoch::NONE,
        }),
    )
    .summary()
    .to_string();
    assert_eq!(line, "EndTxnResponse#9");
}
