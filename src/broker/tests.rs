//! Broker unit tests: brokers wired to each other through a deterministic in-test router and to
//! a scripted controller that serves a hand-written metadata log.

use crate::protocol::{
    Acks, ClusterRequest, ClusterResponse, ControllerRequest, ControllerResponse,
    CoordinatorRequest, CoordinatorResponse, Envelope, LeaderEpoch, Offset, ProducerEpoch,
    ProducerId, ReplicaRequest, ReplicaResponse, TopicId,
};
use bytes::Bytes;

use super::*;
use crate::client::{completed_fetch, IsolationLevel};
use crate::log::EpochEndOffset;
use crate::metadata::{ConfigResource, MetadataRecord};
use crate::record::BatchBuilder;
use crate::record::RecordBatch;
use crate::replica::leader_end_offset_for_fetched_epoch;

const CLUSTER: ClusterIndex = ClusterIndex(0);
const TOPIC_ID: TopicId = TopicId(7);
const CLIENT: NodeId = NodeId::Client(CLUSTER, crate::protocol::ClientKind::Producer, 1);

fn tp() -> TopicPartition {
    TopicPartition::new("orders", 0)
}

/// Serves a metadata log the test writes, and answers the other controller requests.
struct ScriptedController {
    records: Vec<MetadataRecord>,
    /// CreateTopics requests received (answered, not applied).
    created_topics: Vec<crate::protocol::NewTopic>,
    next_producer_id: i64,
    partition: PartitionRecord,
    /// Trailing records written but not yet served by FetchMetadata.
    unpublished: usize,
}

impl ScriptedController {
    fn new(brokers: &[i32], isr: &[i32], min_insync: usize) -> Self {
        let mut records = Vec::new();
        for (index, id) in brokers.iter().enumerate() {
            records.push(MetadataRecord::RegisterBroker {
                broker_id: BrokerId(*id),
                broker_epoch: index as i64 + 100,
                incarnation: 1,
            });
            records.push(MetadataRecord::UnfenceBroker {
                broker_id: BrokerId(*id),
                broker_epoch: index as i64 + 100,
            });
        }
        records.push(MetadataRecord::Topic {
            name: "orders".into(),
            topic_id: TOPIC_ID,
        });
        records.push(MetadataRecord::Config {
            resource: ConfigResource::Topic("orders".into()),
            name: "min.insync.replicas".into(),
            value: Some(min_insync.to_string()),
        });
        let partition = PartitionRecord {
            topic_id: TOPIC_ID,
            partition: 0,
            replicas: brokers.iter().map(|id| BrokerId(*id)).collect(),
            isr: isr.iter().map(|id| BrokerId(*id)).collect(),
            leader: Some(BrokerId(brokers[0])),
            leader_epoch: 0,
            partition_epoch: 0,
            eligible_leader_replicas: Vec::new(),
            last_known_elr: Vec::new(),
        };
        records.push(MetadataRecord::Partition(partition.clone()));
        Self {
            records,
            created_topics: Vec::new(),
            next_producer_id: 0,
            partition,
            unpublished: 0,
        }
    }

    /// The end of the metadata log FetchMetadata serves.
    fn published_end(&self) -> i64 {
        (self.records.len() - self.unpublished) as i64
    }

    /// The epoch of the broker's latest registration.
    fn epoch_of(&self, broker_id: BrokerId) -> i64 {
        self.records
            .iter()
            .rev()
            .find_map(|record| match record {
                MetadataRecord::RegisterBroker {
                    broker_id: id,
                    broker_epoch,
                    ..
                } if *id == broker_id => Some(*broker_epoch),
                _ => None,
            })
            .expect("registered")
    }

    fn change_partition(&mut self, change: impl FnOnce(&mut PartitionRecord)) {
        change(&mut self.partition);
        self.partition.partition_epoch += 1;
        self.records
            .push(MetadataRecord::Partition(self.partition.clone()));
    }

    fn answer(&mut self, request: Request) -> Response {
        match request {
            Request::Controller(ControllerRequest::BrokerRegistration { broker_id, .. }) => {
                Response::Controller(ControllerResponse::BrokerRegistration {
                    error: ErrorCode::None,
                    broker_epoch: self.epoch_of(broker_id),
                })
            }
            Request::Controller(ControllerRequest::BrokerHeartbeat { .. }) => {
                Response::Controller(ControllerResponse::BrokerHeartbeat {
                    error: ErrorCode::None,
                    is_fenced: false,
                })
            }
            Request::Controller(ControllerRequest::FetchMetadata { from_offset, .. }) => {
                let published = &self.records[..self.records.len() - self.unpublished];
                Response::Controller(ControllerResponse::FetchMetadata {
                    records: published
                        .iter()
                        .enumerate()
                        .skip(from_offset.0 as usize)
                        .map(|(offset, record)| (Offset(offset as i64), record.clone()))
                        .collect(),
                    end_offset: Offset(published.len() as i64),
                })
            }
            Request::Controller(ControllerRequest::AlterPartition {
                new_isr,
                partition_epoch,
                ..
            }) => {
                if partition_epoch != self.partition.partition_epoch {
                    return Response::Controller(ControllerResponse::AlterPartition {
                        error: ErrorCode::InvalidUpdateVersion,
                        partition: None,
                    });
                }
                self.change_partition(|p| p.isr = new_isr);
                Response::Controller(ControllerResponse::AlterPartition {
                    error: ErrorCode::None,
                    partition: Some(self.partition.clone()),
                })
            }
            Request::Controller(ControllerRequest::AllocateProducerIds { .. }) => {
                let first = self.next_producer_id;
                self.next_producer_id += 1000;
                Response::Controller(ControllerResponse::AllocateProducerIds {
                    error: ErrorCode::None,
                    first_producer_id: ProducerId(first),
                    count: 1000,
                })
            }
            Request::Controller(ControllerRequest::CreateTopics { topics }) => {
                let results = topics
                    .iter()
                    .map(|t| (t.name.clone(), ErrorCode::None, None))
                    .collect();
                self.created_topics.extend(topics);
                Response::Controller(ControllerResponse::CreateTopics { results })
            }
            other => panic!("unexpected controller request {other:?}"),
        }
    }
}

/// Brokers plus the scripted controller, with a FIFO of envelopes and a manual clock.
struct Cluster {
    now_ms: i64,
    controller: ScriptedController,
    brokers: BTreeMap<BrokerId, Broker<MemoryStorage>>,
    storages: BTreeMap<BrokerId, MemoryStorage>,
    queue: std::collections::VecDeque<Envelope>,
    to_client: Vec<Envelope>,
    /// Links that drop everything (from, to).
    cut: Vec<(NodeId, NodeId)>,
    /// FetchMetadata requests the scripted controller holds, as a real one does while it has
    /// nothing to return (from, correlation id, the request, until when).
    held_fetches: Vec<(NodeId, u64, Request, i64)>,
}

impl Cluster {
    fn new(brokers: &[i32], isr: &[i32], min_insync: usize) -> Self {
        let mut cluster = Self {
            now_ms: 0,
            controller: ScriptedController::new(brokers, isr, min_insync),
            brokers: BTreeMap::new(),
            storages: BTreeMap::new(),
            queue: Default::default(),
            to_client: Vec::new(),
            cut: Vec::new(),
            held_fetches: Vec::new(),
        };
        for id in brokers {
            cluster.start(BrokerId(*id), 1);
        }
        cluster.run_for(200);
        cluster
    }

    fn start(&mut self, id: BrokerId, incarnation: u64) {
        let storage = self.storages.entry(id).or_default().clone();
        let broker = Broker::new(
            CLUSTER,
            id,
            BrokerConfig::default(),
            storage,
            incarnation,
            self.now_ms,
        )
        .expect("broker starts");
        self.brokers.insert(id, broker);
    }

    fn broker(&self, id: i32) -> &Broker<MemoryStorage> {
        &self.brokers[&BrokerId(id)]
    }

    fn partition(&self, id: i32) -> &Partition<MemoryDirDisk> {
        &self.broker(id).partitions()[&tp()]
    }

    fn send(&mut self, envelope: Envelope) {
        self.queue.push_back(envelope);
    }

    /// Sends `request` from the client to broker `to`.
    fn client_request(&mut self, to: i32, correlation_id: u64, request: Request) {
        self.send(Envelope {
            from: CLIENT,
            principal: None,
            connection: 0,
            to: NodeId::Broker(CLUSTER, BrokerId(to)),
            message: Message::Request(correlation_id, request),
        });
    }

    fn collect_outboxes(&mut self) {
        for broker in self.brokers.values_mut() {
            self.queue.extend(broker.take_outbox());
        }
    }

    /// Delivers messages and fires timers, 1 ms at a time, for `duration_ms`.
    fn run_for(&mut self, duration_ms: i64) {
        let end = self.now_ms + duration_ms;
        while self.now_ms < end {
            self.answer_held_fetches();
            self.collect_outboxes();
            while let Some(envelope) = self.queue.pop_front() {
                if self.cut.contains(&(envelope.from, envelope.to)) {
                    continue;
                }
                self.deliver(envelope);
                self.collect_outboxes();
            }
            self.now_ms += 1;
            let now = self.now_ms;
            for broker in self.brokers.values_mut() {
                if broker
                    .poll_timeout()
                    .is_some_and(|deadline| deadline <= now)
                {
                    broker.handle_timeout(now);
                }
            }
        }
    }

    fn deliver(&mut self, envelope: Envelope) {
        match envelope.to {
            NodeId::Controller(_) => {
                let Message::Request(correlation_id, request) = envelope.message else {
                    panic!("controller got a response");
                };
                if let Request::Controller(ControllerRequest::FetchMetadata {
                    from_offset,
                    max_wait_ms,
                    ..
                }) = &request
                {
                    if *max_wait_ms > 0 && from_offset.0 >= self.controller.published_end() {
                        let until = self.now_ms + max_wait_ms;
                        self.held_fetches
                            .push((envelope.from, correlation_id, request, until));
                        return;
                    }
                }
                let response = self.controller.answer(request);
                self.queue.push_back(Envelope {
                    from: envelope.to,
                    principal: None,
                    connection: 0,
                    to: envelope.from,
                    message: Message::Response(correlation_id, response),
                });
            }
            NodeId::Broker(_, id) => {
                if let Some(broker) = self.brokers.get_mut(&id) {
                    broker.handle_message(self.now_ms, envelope);
                }
            }
            NodeId::Client(..) => self.to_client.push(envelope),
        }
    }

    /// Answers the held fetches that now have records or waited long enough.
    fn answer_held_fetches(&mut self) {
        let end = self.controller.published_end();
        let now = self.now_ms;
        let (due, held): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held_fetches)
            .into_iter()
            .partition(|(_, _, request, until)| {
                *until <= now
                    || matches!(request, Request::Controller(ControllerRequest::FetchMetadata {
                        from_offset, ..
                    }) if from_offset.0 < end)
            });
        self.held_fetches = held;
        for (from, correlation_id, request, _) in due {
            let response = self.controller.answer(request);
            self.queue.push_back(Envelope {
                from: NodeId::Controller(CLUSTER),
                principal: None,
                connection: 0,
                to: from,
                message: Message::Response(correlation_id, response),
            });
        }
    }

    fn produce(&mut self, leader: i32, acks: Acks, sequence: i32) -> u64 {
        let mut builder = BatchBuilder::idempotent(1, 0, sequence);
        builder.append(0, None, Some(Bytes::from(format!("v{sequence}"))), vec![]);
        let correlation_id = 1000 + sequence as u64;
        self.client_request(
            leader,
            correlation_id,
            Request::Replica(ReplicaRequest::Produce {
                acks,
                timeout_ms: 500,
                topic_partition: tp(),
                batch: builder.build(),
                transactional_id: None,
                topic_id: None,
            }),
        );
        correlation_id
    }

    fn client_response(&mut self, correlation_id: u64) -> Option<Response> {
        let index = self.to_client.iter().position(
            |e| matches!(&e.message, Message::Response(id, _) if *id == correlation_id),
        )?;
        match self.to_client.remove(index).message {
            Message::Response(_, response) => Some(response),
            Message::Request(..) => unreachable!(),
        }
    }
}

fn produce_error(response: Option<Response>) -> (ErrorCode, i64) {
    match response {
        Some(Response::Replica(ReplicaResponse::Produce {
            error, base_offset, ..
        })) => (error, base_offset.0),
        other => panic!("expected a produce response, got {other:?}"),
    }
}

#[test]
fn broker_takes_leadership_and_answers_requests_only_after_seeing_its_registration() {
    let mut cluster = Cluster::new(&[1, 2, 3], &[1, 2, 3], 2);
    assert!(cluster.broker(1).is_metadata_ready());
    assert!(cluster.partition(1).leader_state().is_some());
    assert!(
        matches!(&cluster.partition(2).role, Role::Follower(r) if r.leader == Some(BrokerId(1)))
    );
    assert_eq!(cluster.broker(2).broker_epoch(), Some(101));

    // Broker 1 restarts and registers anew, but its new RegisterBroker record is not in the
    // metadata it fetches yet: the leadership there belongs to its previous incarnation, so it
    // takes no role at all.
    cluster.brokers.remove(&BrokerId(1));
    cluster
        .controller
        .records
        .push(MetadataRecord::RegisterBroker {
            broker_id: BrokerId(1),
            broker_epoch: 200,
            incarnation: 2,
        });
    cluster.controller.unpublished = 1;
    cluster.start(BrokerId(1), 2);
    cluster.run_for(200);
    assert_eq!(cluster.broker(1).broker_epoch(), Some(200));
    assert!(!cluster.broker(1).is_metadata_ready());
    assert!(cluster.broker(1).partitions().is_empty());
    // Its listeners are not open yet: a client's Metadata request is held rather than
    // answered from an image that knows no topic.
    cluster.client_request(
        1,
        7,
        Request::Cluster(ClusterRequest::Metadata { topics: None }),
    );
    cluster.run_for(50);
    assert!(cluster.client_response(7).is_none());
    // Once the record is served, it acts on the leadership the metadata shows, and answers
    // the held request from the image that has it.
    cluster.controller.unpublished = 0;
    cluster.run_for(200);
    assert!(cluster.broker(1).is_metadata_ready());
    assert!(cluster.partition(1).leader_state().is_some());
    assert!(matches!(
        cluster.client_response(7),
        Some(Response::Cluster(ClusterResponse::Metadata { topics, .. })) if topics.iter().any(|t| t.name == tp().topic)
    ));
}

#[test]
fn acks_all_produce_completes_when_followers_replicate() {
    let mut cluster = Cluster::new(&[1, 2, 3], &[1, 2, 3], 2);
    let request = cluster.produce(1, Acks::All, 0);
    cluster.run_for(5);
    let (error, base_offset) = produce_error(cluster.client_response(request));
    assert_eq!((error, base_offset), (ErrorCode::None, 0));
    cluster.run_for(300);
    for id in [1, 2, 3] {
        let log = &cluster.partition(id).log;
        assert_eq!(log.log_end_offset(), Offset(1), "broker {id}");
        assert_eq!(log.high_watermark(), Offset(1), "broker {id}");
        assert_eq!(
            log.to_segment_bytes(),
            cluster.partition(1).log.to_segment_bytes()
        );
    }
}

#[test]
fn acks_all_waits_while_a_follower_is_cut_off_then_isr_shrinks() {
    let mut cluster = Cluster::new(&[1, 2, 3], &[1, 2, 3], 2);
    let follower = NodeId::Broker(CLUSTER, BrokerId(3));
    let leader = NodeId::Broker(CLUSTER, BrokerId(1));
    cluster.cut.push((follower, leader));
    let request = cluster.produce(1, Acks::All, 0);
    cluster.run_for(100);
    assert!(
        cluster.client_response(request).is_none(),
        "held until the ISR has it"
    );
    // After replica.lag.time.max.ms the leader drops broker 3 and the HW moves.
    cluster.run_for(1500);
    let state = cluster.partition(1).leader_state().unwrap();
    assert_eq!(state.isr, vec![BrokerId(1), BrokerId(2)]);
    let (error, _) = produce_error(cluster.client_response(request));
    assert!(
        error == ErrorCode::None || error == ErrorCode::RequestTimedOut,
        "{error}"
    );
    // Healing lets broker 3 catch up and rejoin.
    cluster.cut.clear();
    cluster.run_for(500);
    assert_eq!(
        cluster.partition(1).leader_state().unwrap().isr,
        vec![BrokerId(1), BrokerId(2), BrokerId(3)]
    );
}

#[test]
fn acks_all_is_refused_below_min_insync_replicas() {
    // A single-replica partition can never reach min.insync.replicas = 2.
    let mut cluster = Cluster::new(&[1], &[1], 2);
    let request = cluster.produce(1, Acks::All, 0);
    cluster.run_for(2);
    assert_eq!(
        produce_error(cluster.client_response(request)).0,
        ErrorCode::NotEnoughReplicas
    );
    assert_eq!(
        cluster.partition(1).log.log_end_offset(),
        Offset(0),
        "nothing appended"
    );
}

#[test]
fn produce_to_a_follower_is_not_leader() {
    let mut cluster = Cluster::new(&[1, 2, 3], &[1, 2, 3], 1);
    let request = cluster.produce(2, Acks::Leader, 0);
    cluster.run_for(2);
    assert_eq!(
        produce_error(cluster.client_response(request)).0,
        ErrorCode::NotLeaderOrFollower
    );
}

#[test]
fn follower_truncates_divergent_suffix_after_leader_change() {
    // Broker 1 leads epoch 0 and writes two acks=1 batches that only it has.
    let mut cluster = Cluster::new(&[1, 2], &[1, 2], 1);
    let request = cluster.produce(1, Acks::All, 0);
    cluster.run_for(50);
    assert_eq!(
        produce_error(cluster.client_response(request)).0,
        ErrorCode::None
    );
    let leader = NodeId::Broker(CLUSTER, BrokerId(1));
    let follower = NodeId::Broker(CLUSTER, BrokerId(2));
    cluster.cut.push((follower, leader));
    cluster.produce(1, Acks::Leader, 1);
    cluster.produce(1, Acks::Leader, 2);
    cluster.run_for(5);
    assert_eq!(cluster.partition(1).log.log_end_offset(), Offset(3));
    // The controller moves leadership to broker 2 (epoch 1), which writes its own batch.
    cluster.controller.change_partition(|p| {
        p.leader = Some(BrokerId(2));
        p.leader_epoch = 1;
        p.isr = vec![BrokerId(2)];
    });
    cluster.run_for(100);
    let request = cluster.produce(2, Acks::Leader, 1);
    cluster.run_for(5);
    // Broker 2 replicated offset 1 through a fetch answered before the cut took effect, so the
    // retry of sequence 1 is a duplicate of it; the divergent suffix on broker 1 is offset 2.
    assert_eq!(
        produce_error(cluster.client_response(request)),
        (ErrorCode::None, 1)
    );
    // Broker 1 becomes a follower, learns the divergence and truncates. Its first fetch to the
    // new leader went out while the link back was cut, so it is re-sent after the fetch timeout.
    cluster.cut.clear();
    cluster.run_for(1500);
    let old_leader = &cluster.partition(1).log;
    let new_leader = &cluster.partition(2).log;
    assert_eq!(old_leader.to_segment_bytes(), new_leader.to_segment_bytes());
    assert_eq!(old_leader.log_end_offset(), Offset(2));
    assert_eq!(
        new_leader.epoch_cache().latest_epoch(),
        Some(LeaderEpoch(1))
    );
    assert!(cluster
        .brokers
        .get_mut(&BrokerId(1))
        .unwrap()
        .take_events()
        .iter()
        .any(|event| matches!(
            event,
            BrokerEvent::Truncated {
                reason: TruncationReason::DivergingEpoch,
                from_log_end_offset: Offset(3),
                ..
            }
        )));
}

/// A consumer's fetch of `tp()` from offset 0 (READ_UNCOMMITTED up to the high watermark) in
/// leader epoch `epoch`, naming `topic_id` if given (Fetch v13+).
fn consumer_fetch(epoch: LeaderEpoch, topic_id: Option<TopicId>) -> Request {
    Request::Replica(ReplicaRequest::Fetch {
        replica_id: None,
        replica_epoch: -1,
        isolation: FetchIsolation::HighWatermark,
        max_wait_ms: 0,
        max_bytes: 1 << 20,
        partitions: vec![FetchPartition {
            topic_id,
            topic_partition: tp(),
            current_leader_epoch: epoch,
            fetch_offset: Offset(0),
            last_fetched_epoch: LeaderEpoch::NONE,
        }],
    })
}

#[test]
fn consumer_fetch_is_bounded_by_high_watermark_and_leader_epoch_is_checked() {
    let mut cluster = Cluster::new(&[1, 2], &[1, 2], 1);
    cluster.cut.push((
        NodeId::Broker(CLUSTER, BrokerId(2)),
        NodeId::Broker(CLUSTER, BrokerId(1)),
    ));
    cluster.produce(1, Acks::Leader, 0);
    cluster.run_for(5);
    let fetch = |epoch| consumer_fetch(epoch, None);
    cluster.client_request(1, 1, fetch(LeaderEpoch(0)));
    cluster.client_request(1, 2, fetch(LeaderEpoch(5)));
    cluster.run_for(2);
    let Some(Response::Replica(ReplicaResponse::Fetch { partitions })) = cluster.client_response(1)
    else {
        panic!()
    };
    assert!(
        partitions[0].batches.is_empty(),
        "the follower has not replicated: HW is 0"
    );
    assert_eq!(partitions[0].high_watermark, Offset(0));
    let Some(Response::Replica(ReplicaResponse::Fetch { partitions })) = cluster.client_response(2)
    else {
        panic!()
    };
    assert_eq!(partitions[0].error, ErrorCode::UnknownLeaderEpoch);
    // The follower's fetch in flight during the cut is re-sent after its timeout.
    cluster.cut.clear();
    cluster.run_for(1500);
    cluster.client_request(1, 3, fetch(LeaderEpoch(0)));
    cluster.run_for(2);
    let Some(Response::Replica(ReplicaResponse::Fetch { partitions })) = cluster.client_response(3)
    else {
        panic!()
    };
    let fetched = completed_fetch(
        0,
        &partitions[0].batches,
        &[],
        IsolationLevel::ReadUncommitted,
    )
    .unwrap();
    assert_eq!(fetched.records.len(), 1);
}

#[test]
fn a_fetch_naming_another_topic_id_is_refused_and_one_naming_the_replicas_is_served() {
    // Fetch v13+: a fetcher that names the topic id it means is not served another topic of
    // the same name (deleted and created again since it learned the id): the KIP-1279 mirror
    // fetcher relies on it, so a re-created source topic is never appended after the old one.
    let mut cluster = Cluster::new(&[1], &[1], 1);
    cluster.produce(1, Acks::Leader, 0);
    cluster.run_for(5);
    let fetch = |topic_id| consumer_fetch(LeaderEpoch(0), topic_id);
    assert_eq!(cluster.partition(1).topic_id, TOPIC_ID);
    cluster.client_request(1, 1, fetch(Some(TopicId(TOPIC_ID.0 + 1))));
    cluster.client_request(1, 2, fetch(Some(TOPIC_ID)));
    cluster.client_request(1, 3, fetch(None));
    cluster.run_for(2);
    let answer = |cluster: &mut Cluster, correlation_id| {
        let Some(Response::Replica(ReplicaResponse::Fetch { partitions })) =
            cluster.client_response(correlation_id)
        else {
            panic!("no fetch answer {correlation_id}")
        };
        partitions.into_iter().next().expect("one partition")
    };
    let refused = answer(&mut cluster, 1);
    assert_eq!(refused.error, ErrorCode::UnknownTopicId);
    assert!(refused.batches.is_empty());
    for correlation_id in [2, 3] {
        let served = answer(&mut cluster, correlation_id);
        assert_eq!(served.error, ErrorCode::None, "{correlation_id}");
        assert_eq!(served.batches.len(), 1, "{correlation_id}");
    }
}

#[test]
fn a_mirror_fetch_naming_an_epoch_above_the_leaders_latest_diverges_at_its_log_end() {
    // A chain's next hop fetching with the epoch of records this leader's PREPARING cut (a
    // local epoch above every epoch left here) learns where the logs part, not "undefined":
    // on an undefined answer it cut its whole log (generated seed 10300000000000916).
    let mut cluster = Cluster::new(&[1], &[1], 1);
    cluster.produce(1, Acks::Leader, 0);
    cluster.produce(1, Acks::Leader, 1);
    cluster.run_for(5);
    cluster.client_request(
        1,
        1,
        Request::Replica(ReplicaRequest::Fetch {
            replica_id: None,
            replica_epoch: -1,
            isolation: FetchIsolation::TxnCommitted,
            max_wait_ms: 0,
            max_bytes: 1 << 20,
            partitions: vec![FetchPartition {
                topic_id: None,
                topic_partition: tp(),
                current_leader_epoch: LeaderEpoch(0),
                fetch_offset: Offset(9),
                last_fetched_epoch: LeaderEpoch(3),
            }],
        }),
    );
    cluster.run_for(2);
    let Some(Response::Replica(ReplicaResponse::Fetch { partitions })) = cluster.client_response(1)
    else {
        panic!()
    };
    assert_eq!(partitions[0].error, ErrorCode::None);
    assert_eq!(
        partitions[0].diverging_epoch,
        Some(EpochEndOffset {
            epoch: LeaderEpoch(0),
            end_offset: Offset(2)
        })
    );
    assert!(partitions[0].batches.is_empty());
}

#[test]
fn init_producer_id_hands_out_ids_from_controller_blocks_starting_at_zero() {
    let mut cluster = Cluster::new(&[1, 2], &[1, 2], 1);
    for (correlation_id, broker) in [(1, 1), (2, 1), (3, 2)] {
        cluster.client_request(
            broker,
            correlation_id,
            Request::Coordinator(CoordinatorRequest::InitProducerId {
                transactional_id: None,
                transaction_timeout_ms: -1,
                producer_id: ProducerId::NONE,
                producer_epoch: ProducerEpoch::NONE,
            }),
        );
    }
    cluster.run_for(5);
    let ids: Vec<i64> = (1..=3)
        .map(|id| match cluster.client_response(id) {
            Some(Response::Coordinator(CoordinatorResponse::InitProducerId {
                producer_id,
                error: ErrorCode::None,
                ..
            })) => producer_id.0,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        ids,
        vec![0, 1, 1000],
        "each broker draws from its own block"
    );
}

#[test]
fn restarted_broker_recovers_its_log_from_disk() {
    let mut cluster = Cluster::new(&[1, 2], &[1, 2], 1);
    cluster.produce(1, Acks::All, 0);
    cluster.run_for(100);
    cluster.brokers.get_mut(&BrokerId(2)).unwrap().flush_all();
    cluster.brokers.remove(&BrokerId(2));
    cluster.start(BrokerId(2), 2);
    assert_eq!(
        cluster.broker(2).partitions().len(),
        0,
        "no role before metadata"
    );
    cluster.run_for(100);
    assert_eq!(cluster.partition(2).log.log_end_offset(), Offset(1));
}

#[test]
fn write_txn_markers_appends_markers_and_answers_once_the_isr_has_them() {
    let mut cluster = Cluster::new(&[1, 2, 3], &[1, 2, 3], 2);
    let mut builder = BatchBuilder::idempotent(7, 0, 0);
    builder.transactional = true;
    builder.append(0, None, Some(Bytes::from_static(b"in-txn")), vec![]);
    cluster.client_request(
        1,
        1,
        Request::Replica(ReplicaRequest::Produce {
            acks: Acks::All,
            timeout_ms: 500,
            topic_partition: tp(),
            batch: builder.build(),
            transactional_id: None,
            topic_id: None,
        }),
    );
    cluster.run_for(50);
    assert_eq!(
        cluster.partition(1).log.last_stable_offset(),
        Offset(0),
        "the open transaction holds the LSO"
    );
    let marker = crate::protocol::TxnMarker {
        producer_id: ProducerId(7),
        producer_epoch: ProducerEpoch(0),
        committed: true,
        coordinator_epoch: 4,
        partitions: vec![tp(), TopicPartition::new("missing", 0)],
    };
    // With the followers cut off the marker is appended but not answered.
    let leader = NodeId::Broker(CLUSTER, BrokerId(1));
    for follower in [2, 3] {
        cluster
            .cut
            .push((NodeId::Broker(CLUSTER, BrokerId(follower)), leader));
    }
    cluster.client_request(
        1,
        2,
        Request::Replica(ReplicaRequest::WriteTxnMarkers {
            markers: vec![marker],
        }),
    );
    cluster.run_for(50);
    assert_eq!(cluster.partition(1).log.log_end_offset(), Offset(2));
    assert!(
        cluster.client_response(2).is_none(),
        "answered only after replication"
    );
    // The marker waits at most a second for the ISR, then times out (the coordinator retries).
    cluster.run_for(1000);
    match cluster.client_response(2) {
        Some(Response::Replica(ReplicaResponse::WriteTxnMarkers { results })) => {
            assert_eq!(results.len(), 1);
            assert_eq!(results[0].0, ProducerId(7));
            assert_eq!(
                results[0].1,
                vec![
                    (tp(), ErrorCode::RequestTimedOut),
                    (
                        TopicPartition::new("missing", 0),
                        ErrorCode::UnknownTopicOrPartition
                    )
                ]
            );
        }
        other => panic!("{other:?}"),
    }
    // Healed, a retry writes a second (harmless) COMMIT and is answered once replicated.
    cluster.cut.clear();
    cluster.run_for(1500);
    let retry = crate::protocol::TxnMarker {
        producer_id: ProducerId(7),
        producer_epoch: ProducerEpoch(0),
        committed: true,
        coordinator_epoch: 4,
        partitions: vec![tp()],
    };
    cluster.client_request(
        1,
        4,
        Request::Replica(ReplicaRequest::WriteTxnMarkers {
            markers: vec![retry],
        }),
    );
    cluster.run_for(100);
    assert!(matches!(
        cluster.client_response(4),
        Some(Response::Replica(ReplicaResponse::WriteTxnMarkers { results })) if results[0].1 == vec![(tp(), ErrorCode::None)]
    ));
    // Followers learn the new high watermark on their next fetch.
    cluster.run_for(300);
    for id in [1, 2, 3] {
        let log = &cluster.partition(id).log;
        assert_eq!(
            log.log_end_offset(),
            Offset(3),
            "broker {id} has both markers"
        );
        assert_eq!(
            log.last_stable_offset(),
            Offset(3),
            "broker {id}: the commit released the LSO"
        );
    }
    // A marker to a follower is refused.
    let marker = crate::protocol::TxnMarker {
        producer_id: ProducerId(7),
        producer_epoch: ProducerEpoch(0),
        committed: false,
        coordinator_epoch: 4,
        partitions: vec![tp()],
    };
    cluster.client_request(
        2,
        3,
        Request::Replica(ReplicaRequest::WriteTxnMarkers {
            markers: vec![marker],
        }),
    );
    cluster.run_for(2);
    assert!(matches!(
        cluster.client_response(3),
        Some(Response::Replica(ReplicaResponse::WriteTxnMarkers { results })) if results[0].1[0].1 == ErrorCode::NotLeaderOrFollower
    ));
}

#[test]
fn find_coordinator_asks_the_controller_for_the_internal_topic_first() {
    let mut cluster = Cluster::new(&[1, 2, 3], &[1, 2, 3], 2);
    cluster.client_request(
        2,
        1,
        Request::Coordinator(CoordinatorRequest::FindCoordinator {
            key_type: crate::protocol::CoordinatorType::Group,
            key: "orders-app".into(),
        }),
    );
    cluster.run_for(5);
    assert!(matches!(
        cluster.client_response(1),
        Some(Response::Coordinator(
            CoordinatorResponse::FindCoordinator {
                error: ErrorCode::CoordinatorNotAvailable,
                coordinator: None
            }
        ))
    ));
    let created = cluster.controller.created_topics.iter().any(|topic| {
        topic.name == crate::coordinator::CONSUMER_OFFSETS_TOPIC
            && topic.partitions == 4
            && topic.replication_factor == 3
    });
    assert!(
        created,
        "the broker asked the controller to create __consumer_offsets"
    );
}

#[test]
fn acls_and_topic_configs_from_the_metadata_log_are_visible_to_brokers() {
    let mut cluster = Cluster::new(&[1, 2], &[1, 2], 1);
    let binding = crate::metadata::AclBinding {
        resource: "topic:orders".into(),
        principal: "User:alice".into(),
        operation: "Write".into(),
        permission: "Allow".into(),
    };
    cluster
        .controller
        .records
        .push(MetadataRecord::Acl(binding.clone()));
    cluster.controller.records.push(MetadataRecord::Config {
        resource: ConfigResource::Topic("orders".into()),
        name: "retention.ms".into(),
        value: Some("60000".into()),
    });
    cluster.run_for(100);
    cluster.client_request(2, 1, Request::Cluster(ClusterRequest::DescribeAcls));
    cluster.run_for(2);
    assert!(matches!(
        cluster.client_response(1),
        Some(Response::Cluster(ClusterResponse::DescribeAcls { error: ErrorCode::None, bindings })) if bindings == vec![binding.clone()]
    ));
    assert_eq!(
        cluster
            .broker(2)
            .image()
            .topic_config("orders", "retention.ms", ""),
        "60000"
    );
    // Changes go to the controller: a broker refuses them.
    cluster.client_request(
        1,
        2,
        Request::Controller(ControllerRequest::CreateAcls {
            bindings: vec![binding],
        }),
    );
    cluster.run_for(2);
    assert!(matches!(
        cluster.client_response(2),
        Some(Response::Controller(ControllerResponse::CreateAcls {
            error: ErrorCode::NotController
        }))
    ));
}

#[test]
fn new_leader_alone_in_the_isr_commits_its_log_at_once() {
    // Broker 2 replicated offset 0 but has not learnt the high watermark that covers it when
    // leadership moves to it with ISR = [2]: it commits its log on becoming leader, as Kafka's
    // `makeLeader` does, rather than on the next produce.
    let mut cluster = Cluster::new(&[1, 2], &[1, 2], 1);
    cluster.produce(1, Acks::Leader, 0);
    cluster.run_for(5);
    assert_eq!(cluster.partition(1).log.high_watermark(), Offset(1));
    assert_eq!(cluster.partition(2).log.log_end_offset(), Offset(1));
    assert_eq!(cluster.partition(2).log.high_watermark(), Offset(0));
    let leader = NodeId::Broker(CLUSTER, BrokerId(1));
    cluster
        .cut
        .push((leader, NodeId::Broker(CLUSTER, BrokerId(2))));
    cluster.controller.change_partition(|p| {
        p.leader = Some(BrokerId(2));
        p.leader_epoch = 1;
        p.isr = vec![BrokerId(2)];
    });
    cluster.run_for(100);
    assert!(cluster.partition(2).leader_state().is_some());
    assert_eq!(cluster.partition(2).log.high_watermark(), Offset(1));
}

#[test]
fn a_mirror_topic_is_read_only_until_its_partition_is_stopped() {
    let mut cluster = Cluster::new(&[1, 2, 3], &[1, 2, 3], 1);
    let set_mirror_name = |cluster: &mut Cluster, value: Option<&str>| {
        cluster.controller.records.push(MetadataRecord::Config {
            resource: ConfigResource::Topic("orders".into()),
            name: "mirror.name".into(),
            value: value.map(str::to_string),
        });
        cluster.run_for(100);
    };
    // Mirrored, paused and removed-but-not-yet-stopped all refuse client writes.
    for (sequence, value) in [(0, "m"), (1, "m.paused"), (2, "m.removed")] {
        set_mirror_name(&mut cluster, Some(value));
        let request = cluster.produce(1, Acks::Leader, sequence);
        cluster.run_for(2);
        assert_eq!(
            produce_error(cluster.client_response(request)).0,
            ErrorCode::ReadOnlyTopic,
            "mirror.name = {value}"
        );
    }
    assert_eq!(
        cluster.partition(1).log.log_end_offset(),
        Offset(0),
        "nothing appended"
    );
    assert_eq!(cluster.partition(1).mirror_state, MirrorState::Unknown);
    // Out of every mirror (DeleteMirror clears mirror.name): writable again.
    set_mirror_name(&mut cluster, None);
    let request = cluster.produce(1, Acks::Leader, 0);
    cluster.run_for(2);
    assert_eq!(
        produce_error(cluster.client_response(request)),
        (ErrorCode::None, 0)
    );
}

#[test]
fn a_mirror_partition_takes_no_transaction_marker_until_it_is_stopped() {
    // Issue #14: the local transaction coordinator's markers went into mirror partitions. Every
    // mirror state but STOPPED refuses them (COMMIT and ABORT alike, STOPPING included: what
    // STOPPING writes itself does not come through WriteTxnMarkers).
    let mut cluster = Cluster::new(&[1, 2, 3], &[1, 2, 3], 1);
    let marker = |committed| crate::protocol::TxnMarker {
        producer_id: ProducerId(7),
        producer_epoch: ProducerEpoch(0),
        committed,
        coordinator_epoch: 4,
        partitions: vec![tp()],
    };
    let mut correlation_id = 0;
    let mut write_marker = |cluster: &mut Cluster, committed| {
        correlation_id += 1;
        cluster.client_request(
            1,
            correlation_id,
            Request::Replica(ReplicaRequest::WriteTxnMarkers {
                markers: vec![marker(committed)],
            }),
        );
        cluster.run_for(50);
        match cluster.client_response(correlation_id) {
            Some(Response::Replica(ReplicaResponse::WriteTxnMarkers { results })) => {
                results[0].1[0].1
            }
            other => panic!("{other:?}"),
        }
    };
    let set_mirror_name = |cluster: &mut Cluster, value: Option<&str>| {
        cluster.controller.records.push(MetadataRecord::Config {
            resource: ConfigResource::Topic("orders".into()),
            name: "mirror.name".into(),
            value: value.map(str::to_string),
        });
        cluster.run_for(100);
    };
    let leader = BrokerId(1);
    // Producer 7 has an open transaction in the log (written while orders was not mirrored):
    // its markers would close it, so they wait.
    let mut open = BatchBuilder::idempotent(7, 0, 0);
    open.transactional = true;
    open.append(0, None, Some(Bytes::from("open")), vec![]);
    cluster.client_request(
        1,
        900,
        Request::Replica(ReplicaRequest::Produce {
            acks: Acks::All,
            timeout_ms: 500,
            topic_partition: tp(),
            batch: open.build(),
            transactional_id: None,
            topic_id: None,
        }),
    );
    cluster.run_for(50);
    assert_eq!(
        produce_error(cluster.client_response(900)),
        (ErrorCode::None, 0)
    );
    for value in ["m", "m.paused", "m.removed"] {
        set_mirror_name(&mut cluster, Some(value));
        for committed in [true, false] {
            assert_eq!(
                write_marker(&mut cluster, committed),
                ErrorCode::ReadOnlyTopic,
                "mirror.name = {value}, committed = {committed}"
            );
        }
    }
    // STOPPING (set by hand: this cluster has no mirror coordinator) refuses an ABORT too.
    let set_mirror_state = |cluster: &mut Cluster, state: MirrorState| {
        cluster
            .brokers
            .get_mut(&leader)
            .and_then(|broker| broker.replicas.partitions_mut().get_mut(&tp()))
            .expect("the leader's replica")
            .mirror_state = state;
    };
    set_mirror_state(&mut cluster, MirrorState::Stopping);
    assert_eq!(write_marker(&mut cluster, false), ErrorCode::ReadOnlyTopic);
    assert_eq!(
        cluster.partition(1).log.log_end_offset(),
        Offset(1),
        "nothing appended"
    );
    let refused: Vec<(bool, MirrorState)> = cluster
        .brokers
        .get_mut(&leader)
        .expect("the leader")
        .take_events()
        .into_iter()
        .filter_map(|event| match event {
            BrokerEvent::TxnMarkerRefused {
                committed,
                mirror_state,
                ..
            } => Some((committed, mirror_state)),
            _ => None,
        })
        .collect();
    assert_eq!(refused.len(), 7, "{refused:?}");
    assert_eq!(refused[6], (false, MirrorState::Stopping));
    // A marker of a producer with nothing open in the log closes nothing: acknowledged,
    // nothing appended (the seed's choice; the prototype's two rules refuse it) — but not in
    // STOPPING, writable within moments, where the producer's late produce would land after it.
    let moot = crate::protocol::TxnMarker {
        producer_id: ProducerId(8),
        ..marker(true)
    };
    cluster.client_request(
        1,
        902,
        Request::Replica(ReplicaRequest::WriteTxnMarkers {
            markers: vec![moot.clone()],
        }),
    );
    cluster.run_for(50);
    match cluster.client_response(902) {
        Some(Response::Replica(ReplicaResponse::WriteTxnMarkers { results })) => {
            assert_eq!(results[0].1[0].1, ErrorCode::ReadOnlyTopic);
        }
        other => panic!("{other:?}"),
    }
    set_mirror_state(&mut cluster, MirrorState::Mirroring);
    cluster.client_request(
        1,
        901,
        Request::Replica(ReplicaRequest::WriteTxnMarkers {
            markers: vec![moot],
        }),
    );
    cluster.run_for(50);
    match cluster.client_response(901) {
        Some(Response::Replica(ReplicaResponse::WriteTxnMarkers { results })) => {
            assert_eq!(results[0].1[0].1, ErrorCode::None);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        cluster.partition(1).log.log_end_offset(),
        Offset(1),
        "nothing appended"
    );
    assert!(cluster
        .brokers
        .get_mut(&leader)
        .expect("the leader")
        .take_events()
        .iter()
        .any(|event| matches!(
            event,
            BrokerEvent::TxnMarkerMoot {
                committed: true,
                ..
            }
        )));
    // Out of every mirror: the marker is written.
    set_mirror_name(&mut cluster, None);
    assert_eq!(write_marker(&mut cluster, false), ErrorCode::None);
    assert_eq!(cluster.partition(1).log.log_end_offset(), Offset(2));
}

#[test]
fn a_leader_epoch_bump_keeps_the_leader_and_starts_the_new_epoch_at_the_log_end() {
    // KIP-1279's BumpLeaderEpochs raises the epoch without a leader change; the leader takes
    // the new epoch as Kafka's makeLeader does, so the next batch carries it.
    let mut cluster = Cluster::new(&[1, 2, 3], &[1, 2, 3], 1);
    let request = cluster.produce(1, Acks::All, 0);
    cluster.run_for(50);
    assert_eq!(
        produce_error(cluster.client_response(request)).0,
        ErrorCode::None
    );
    cluster.controller.change_partition(|p| p.leader_epoch = 12);
    cluster.run_for(100);
    assert_eq!(cluster.partition(1).leader_epoch(), LeaderEpoch(12));
    assert!(
        cluster.partition(1).leader_state().is_some(),
        "still the leader"
    );
    let request = cluster.produce(1, Acks::All, 1);
    cluster.run_for(50);
    assert_eq!(
        produce_error(cluster.client_response(request)),
        (ErrorCode::None, 1)
    );
    for broker in [1, 2, 3] {
        let log = &cluster.partition(broker).log;
        assert_eq!(log.latest_epoch(), Some(LeaderEpoch(12)), "broker {broker}");
        assert_eq!(
            log.end_offset_for_epoch(LeaderEpoch(0)).end_offset,
            Offset(1),
            "broker {broker}"
        );
    }
}

/// A follower log of one-record batches with these leader epochs, from offset 0.
fn follower_log_with_epochs(epochs: &[i32]) -> crate::log::PartitionLog<crate::log::MemoryDisk> {
    let mut log = crate::log::PartitionLog::open(
        crate::log::MemoryDisk::new(),
        crate::log::LogConfig::default(),
    )
    .unwrap()
    .0;
    for (offset, epoch) in epochs.iter().enumerate() {
        log.append_as_follower(&[one_record_batch(offset as i64, *epoch)])
            .unwrap();
    }
    log
}

fn one_record_batch(offset: i64, epoch: i32) -> RecordBatch {
    let mut builder = BatchBuilder::default();
    builder.append(0, None, Some(Bytes::from_static(b"v")), Vec::new());
    builder
        .build()
        .with_base_offset(offset)
        .with_partition_leader_epoch(epoch)
}

#[test]
fn a_follower_cuts_a_tail_whose_epoch_is_above_the_fetched_batches() {
    // Seed 3307716073686179: offsets 0..=2 mirrored in epoch 0, offset 3 the destination's own
    // epoch 1 (a follower that missed PREPARING's truncation); the leader's offset 4 is epoch 0
    // again (re-mirrored), so the follower's offset 3 is not the leader's.
    let log = follower_log_with_epochs(&[0, 0, 0, 1]);
    assert_eq!(
        follower_truncation_for_batches(&log, &[one_record_batch(4, 0)]),
        Some(Offset(3))
    );
    // A lower epoch the follower never had: back to the end of its closest lower epoch.
    let log = follower_log_with_epochs(&[0, 0, 2, 4]);
    assert_eq!(
        follower_truncation_for_batches(&log, &[one_record_batch(4, 3)]),
        Some(Offset(3))
    );
    // Same or later epochs fit, and so does a log without epochs.
    let log = follower_log_with_epochs(&[0, 0, 0, 1]);
    assert_eq!(
        follower_truncation_for_batches(&log, &[one_record_batch(4, 1)]),
        None
    );
    assert_eq!(
        follower_truncation_for_batches(&log, &[one_record_batch(4, 5)]),
        None
    );
    assert_eq!(follower_truncation_for_batches(&log, &[]), None);
    let log = follower_log_with_epochs(&[]);
    assert_eq!(
        follower_truncation_for_batches(&log, &[one_record_batch(0, 0)]),
        None
    );
}

#[test]
fn a_leader_answers_a_follower_epoch_above_its_own_with_its_latest_epoch() {
    // A mirror leader that truncated in PREPARING and re-mirrored epoch 0 up to offset 6; a
    // follower that missed the truncation asks with its own epoch 1 (or later).
    let log = follower_log_with_epochs(&[0, 0, 0, 0, 0, 0]);
    for asked in [1, 7] {
        assert_eq!(
            leader_end_offset_for_fetched_epoch(&log, asked),
            EpochEndOffset {
                epoch: LeaderEpoch(0),
                end_offset: Offset(6)
            }
        );
    }
    // Known epochs are answered as Kafka's cache does.
    let log = follower_log_with_epochs(&[0, 0, 2, 2]);
    assert_eq!(
        leader_end_offset_for_fetched_epoch(&log, 1),
        EpochEndOffset {
            epoch: LeaderEpoch(0),
            end_offset: Offset(2)
        }
    );
    assert_eq!(
        leader_end_offset_for_fetched_epoch(&log, 2),
        EpochEndOffset {
            epoch: LeaderEpoch(2),
            end_offset: Offset(4)
        }
    );
    assert_eq!(
        leader_end_offset_for_fetched_epoch(&follower_log_with_epochs(&[]), 1),
        EpochEndOffset::UNDEFINED
    );
}
