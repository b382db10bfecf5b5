//! The replica manager: Kafka's `ReplicaManager` and `LogManager` on one broker, without the
//! fetcher (the [`crate::replica::ReplicaFetcher`] is a component of its own).
//!
//! Contract:
//! - **Owns** the broker's data directories ([`BrokerStorage`]), every partition replica it
//!   hosts (its log, its leader or follower role), the logs recovered at start-up that no
//!   assignment claimed yet, the acks=all produces, fetches and marker writes waiting in
//!   purgatory, and the AlterPartition requests in flight.
//! - **Leader side**: client produce (acks=1 and acks=all with `min.insync.replicas`, the
//!   KIP-1279 read-only gate), follower and consumer fetch reads, OffsetsForLeaderEpoch,
//!   ListOffsets, transaction markers (WriteTxnMarkers) and DeleteRecords (both gated
//!   likewise), the ISR (expand on catch-up, shrink after `replica.lag.time.max.ms`, one
//!   AlterPartition at a time), and the periodic flush and high-watermark checkpoint.
//! - **Follows the image**: [`ReplicaManager::apply_partition_record`] makes a replica leader
//!   or follower as the metadata says and reports the change as a [`ReplicaChange`].
//! - **Does not** move work across components: a high watermark that moves completes produces
//!   waiting on it, transaction markers and coordinator writes, and fetches, in that order, and
//!   the coordinators are not the replica manager's. So every operation that may move a high
//!   watermark returns what it touched, and the broker runs that fan-out
//!   (`Broker::maybe_increment_high_watermark`); the replica manager only says whether the
//!   high watermark moved ([`ReplicaManager::increment_high_watermark`]).
//!
//! Each call borrows what it may touch of the broker as a [`ReplicaContext`].

mod delete_records;
mod fetch;
mod isr;
mod leadership;
mod markers;
mod produce;

use std::collections::BTreeMap;

pub use fetch::{
    check_leader_epoch, fetch_answer_ready, leader_end_offset_for_fetched_epoch, DelayedFetch,
    FetchRead,
};
pub use leadership::ReplicaChange;
pub use markers::MarkerGate;
pub use produce::{ProduceOutcome, ProduceRequest, WriteGate};

use crate::events::BrokerEvent;
use crate::log::{LogConfig, PartitionLog};
use crate::metadata::{MetadataImage, MIN_INSYNC_REPLICAS};
use crate::node::Outbox;
use crate::protocol::{BrokerId, NodeId, TopicPartition};
use crate::replica::storage::{parse_partition_dir_name, partition_dir_name, BrokerStorage};
use crate::replica::Partition;
use crate::switches::BrokenSwitch;
use markers::DelayedMarkers;
use produce::DelayedProduce;

/// The replica manager's settings (from the broker's configuration).
#[derive(Debug, Clone)]
pub struct ReplicaConfig {
    /// `replica.lag.time.max.ms`: a follower that has not caught up for this long leaves the
    /// ISR; the ISR is checked every half of it.
    pub replica_lag_time_max_ms: i64,
    /// `min.insync.replicas` of topics that do not set it.
    pub default_min_insync_replicas: usize,
    /// `log.flush.interval.ms`; `None` leaves flushing to replication (Kafka's default).
    pub log_flush_interval_ms: Option<i64>,
    /// How often high watermarks are checkpointed.
    pub high_watermark_checkpoint_interval_ms: i64,
    /// How long an AlterPartition waits for the controller before it is retried.
    pub controller_request_timeout_ms: i64,
    /// How each replica's log is opened.
    pub log: LogConfig,
    /// How a replica that becomes a follower finds where its log and the leader's part.
    pub follower_truncation: crate::replica::FollowerTruncation,
    /// KIP-966's strict min ISR (Kafka 3.7's KAFKA-15583): a leader's high watermark does not
    /// move while its ISR is below the topic's `min.insync.replicas`. `false` is Kafka before
    /// it (`pre-kip-966`), where a leader left alone in its ISR commits what it alone holds.
    pub high_watermark_waits_for_min_isr: bool,
    /// KAFKA-7128's fix (Kafka 2.0.1, 2.1): a follower joins the ISR only once it reached the
    /// leader's log end at the start of its leadership, not only its high watermark, which a
    /// new leader's lags. `false` is Kafka before it (`pre-kafka-7128`).
    pub isr_join_waits_for_epoch_start: bool,
    /// Test switches that break the replica layer on purpose.
    pub broken: Vec<BrokenSwitch>,
}

/// What a call of the replica manager may touch of its broker.
pub struct ReplicaContext<'a> {
    /// The broker's clock.
    pub now_ms: i64,
    /// This broker.
    pub broker_id: BrokerId,
    /// Its cluster's controller (AlterPartition goes there).
    pub controller: NodeId,
    /// The current registration epoch, once registered (AlterPartition carries it).
    pub broker_epoch: Option<i64>,
    /// The broker's metadata image.
    pub image: &'a MetadataImage,
    /// Requests and answers to send.
    pub outbox: &'a mut Outbox,
    /// Events for the checkers.
    pub events: &'a mut Vec<BrokerEvent>,
}

/// See the module doc.
pub struct ReplicaManager<S: BrokerStorage> {
    config: ReplicaConfig,
    storage: S,
    partitions: BTreeMap<TopicPartition, Partition<S::Disk>>,
    /// Logs recovered at start-up whose partition the image has not assigned here (yet).
    unassigned_logs: BTreeMap<TopicPartition, PartitionLog<S::Disk>>,
    delayed_produces: Vec<DelayedProduce>,
    delayed_fetches: Vec<DelayedFetch>,
    /// WriteTxnMarkers requests waiting for the ISR.
    delayed_markers: Vec<DelayedMarkers>,
    /// AlterPartition requests in flight: correlation id → (partition, sent at).
    alter_partitions: BTreeMap<u64, (TopicPartition, i64)>,
    next_isr_check_ms: i64,
    next_flush_ms: Option<i64>,
    next_high_watermark_checkpoint_ms: i64,
}

impl<S: BrokerStorage> ReplicaManager<S> {
    /// Recovers every partition directory in `storage`; the logs wait, unassigned, until the
    /// image assigns their partitions.
    pub fn new(
        config: ReplicaConfig,
        mut storage: S,
        now_ms: i64,
    ) -> Result<Self, crate::log::LogError> {
        let mut unassigned_logs = BTreeMap::new();
        for dir in storage.partition_dirs() {
            let Some(topic_partition) = parse_partition_dir_name(&dir) else {
                continue;
            };
            let disk = storage.open_dir(&dir);
            let (log, _report) = PartitionLog::open(disk, config.log.clone())?;
            unassigned_logs.insert(topic_partition, log);
        }
        Ok(Self {
            next_isr_check_ms: now_ms + config.replica_lag_time_max_ms / 2,
            next_flush_ms: config
                .log_flush_interval_ms
                .map(|interval| now_ms + interval),
            next_high_watermark_checkpoint_ms: now_ms
                + config.high_watermark_checkpoint_interval_ms,
            config,
            storage,
            partitions: BTreeMap::new(),
            unassigned_logs,
            delayed_produces: Vec::new(),
            delayed_fetches: Vec::new(),
            delayed_markers: Vec::new(),
            alter_partitions: BTreeMap::new(),
        })
    }

    /// The replicas hosted here, by partition.
    pub fn partitions(&self) -> &BTreeMap<TopicPartition, Partition<S::Disk>> {
        &self.partitions
    }

    /// The replicas, for the components the broker lends them to (the fetchers, the
    /// coordinators' host, topic administration).
    pub fn partitions_mut(&mut self) -> &mut BTreeMap<TopicPartition, Partition<S::Disk>> {
        &mut self.partitions
    }

    /// The data directories (for the simulator's disk faults).
    pub fn storage(&self) -> &S {
        &self.storage
    }

    /// The topic's `min.insync.replicas`; the broker default when unset or unparsable.
    pub fn min_insync_replicas(&self, image: &MetadataImage, topic: &str) -> usize {
        min_insync_replicas_of(image, topic, self.config.default_min_insync_replicas)
    }

    /// Moves `topic_partition`'s high watermark over its maximal ISR when this broker leads
    /// it; whether it moved (the broker then runs what waits on it, see the module doc). With
    /// [`ReplicaConfig::high_watermark_waits_for_min_isr`] it stays while the ISR is below the
    /// topic's `min.insync.replicas`.
    pub fn increment_high_watermark(
        &mut self,
        image: &MetadataImage,
        broker_id: BrokerId,
        topic_partition: &TopicPartition,
    ) -> bool {
        let strict = self.config.high_watermark_waits_for_min_isr;
        let default = self.config.default_min_insync_replicas;
        self.partitions
            .get_mut(topic_partition)
            .is_some_and(|partition| {
                // A full ISR meets any min ISR (it is at most the replica count): the topic's
                // config is read only when the ISR is short, off the path of every append.
                let short = partition
                    .leader_state()
                    .is_some_and(|state| state.isr.len() < state.replicas.len());
                let min_insync = if strict && short {
                    min_insync_replicas_of(image, &topic_partition.topic, default)
                } else {
                    1
                };
                partition.maybe_increment_high_watermark(broker_id, min_insync)
            })
    }

    /// Flushes every log (a clean shutdown, and the periodic flush).
    pub fn flush_all(&mut self) {
        for partition in self.partitions.values_mut() {
            // A disk error leaves the data unflushed, which a crash then models.
            let _ = partition.log.flush();
        }
    }

    /// Removes the replicas and leftover logs of topics the image no longer has, directories
    /// included; returns the replicas removed (their fetch sessions must forget them).
    pub fn drop_deleted_topics(&mut self, image: &MetadataImage) -> Vec<TopicPartition> {
        let deleted: Vec<TopicPartition> = self
            .partitions
            .iter()
            .filter(|(_, partition)| !image.topics.contains_key(&partition.topic_id))
            .map(|(tp, _)| tp.clone())
            .collect();
        for tp in &deleted {
            self.partitions.remove(tp);
            self.storage.remove_dir(&partition_dir_name(tp));
        }
        // Logs found on disk at start-up for a topic the (caught-up) image does not have were
        // deleted while this broker was down; a new topic of the same name must start empty.
        let stale: Vec<TopicPartition> = self
            .unassigned_logs
            .keys()
            .filter(|tp| !image.topic_ids.contains_key(tp.topic.as_str()))
            .cloned()
            .collect();
        for tp in stale {
            self.unassigned_logs.remove(&tp);
            self.storage.remove_dir(&partition_dir_name(&tp));
        }
        deleted
    }

    /// The periodic work due at `context.now_ms`: the ISR check, the flush and the
    /// high-watermark checkpoint.
    pub fn periodic(&mut self, context: &mut ReplicaContext<'_>) {
        let now_ms = context.now_ms;
        if now_ms >= self.next_isr_check_ms {
            self.maybe_shrink_isrs(context);
            self.next_isr_check_ms = now_ms + (self.config.replica_lag_time_max_ms / 2).max(1);
        }
        if let (Some(next), Some(interval)) =
            (self.next_flush_ms, self.config.log_flush_interval_ms)
        {
            if now_ms >= next {
                self.flush_all();
                self.next_flush_ms = Some(now_ms + interval);
            }
        }
        if now_ms >= self.next_high_watermark_checkpoint_ms {
            for partition in self.partitions.values_mut() {
                let _ = partition.log.checkpoint_high_watermark();
            }
            self.next_high_watermark_checkpoint_ms =
                now_ms + self.config.high_watermark_checkpoint_interval_ms;
        }
    }

    /// The earliest time this replica manager has work: periodic work, a purgatory deadline
    /// (produce, fetch, marker write), an AlterPartition to retry.
    pub fn deadline(&self) -> Option<i64> {
        let timeout = self.config.controller_request_timeout_ms;
        [
            self.next_isr_check_ms,
            self.next_high_watermark_checkpoint_ms,
        ]
        .into_iter()
        .chain(self.next_flush_ms)
        .chain(self.delayed_produces.iter().map(|p| p.deadline_ms))
        .chain(self.delayed_fetches.iter().map(|f| f.deadline_ms))
        .chain(self.delayed_markers.iter().map(|m| m.deadline_ms))
        .chain(
            self.alter_partitions
                .values()
                .map(|(_, sent)| sent + timeout),
        )
        .min()
    }

    /// Whether a waiting produce's deadline passed.
    pub fn produce_deadline_passed(&self, now_ms: i64) -> bool {
        self.delayed_produces
            .iter()
            .any(|produce| now_ms >= produce.deadline_ms)
    }

    /// Whether a waiting fetch's deadline passed.
    pub fn fetch_deadline_passed(&self, now_ms: i64) -> bool {
        self.delayed_fetches
            .iter()
            .any(|fetch| now_ms >= fetch.deadline_ms)
    }

    /// The log of a newly assigned replica: the one recovered at start-up, or a new one.
    fn take_or_create_log(
        &mut self,
        topic_partition: &TopicPartition,
    ) -> Option<PartitionLog<S::Disk>> {
        if let Some(log) = self.unassigned_logs.remove(topic_partition) {
            return Some(log);
        }
        let disk = self.storage.open_dir(&partition_dir_name(topic_partition));
        PartitionLog::open(disk, self.config.log.clone())
            .ok()
            .map(|(log, _)| log)
    }
}

/// `topic`'s `min.insync.replicas` in `image`; `default` when unset or unparsable.
fn min_insync_replicas_of(image: &MetadataImage, topic: &str, default: usize) -> usize {
    // The empty fallback fails to parse, so the default needs no string of its own (this runs
    // for every acks=all produce and coordinator write).
    image
        .topic_config(topic, MIN_INSYNC_REPLICAS, "")
        .parse()
        .unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use crate::protocol::Offset;
    use crate::protocol::{ProducerEpoch, ProducerId};
    use bytes::Bytes;

    use super::*;
    use crate::events::TruncationReason;
    use crate::log::FetchIsolation;
    use crate::metadata::PartitionRecord;
    use crate::protocol::{
        Acks, ClusterIndex, Envelope, ErrorCode, FetchPartition, Message, Request, Response,
        TopicId, TxnMarker,
    };
    use crate::protocol::{ControllerRequest, LeaderEpoch, ReplicaResponse};
    use crate::record::BatchBuilder;
    use crate::replica::storage::MemoryStorage;
    use crate::replica::FollowerTruncation;

    const ME: BrokerId = BrokerId(1);
    const FOLLOWER: BrokerId = BrokerId(2);
    const CLIENT: NodeId =
        NodeId::Client(ClusterIndex(0), crate::protocol::ClientKind::Producer, 1);

    fn config() -> ReplicaConfig {
        ReplicaConfig {
            replica_lag_time_max_ms: 1_000,
            default_min_insync_replicas: 1,
            log_flush_interval_ms: None,
            high_watermark_checkpoint_interval_ms: 5_000,
            controller_request_timeout_ms: 2_000,
            log: LogConfig::default(),
            follower_truncation: FollowerTruncation::LeaderEpoch,
            high_watermark_waits_for_min_isr: true,
            isr_join_waits_for_epoch_start: true,
            broken: Vec::new(),
        }
    }

    fn tp() -> TopicPartition {
        TopicPartition::new("orders", 0)
    }

    /// The record of orders-0 led by this broker in epoch 1 with `isr`.
    fn record(isr: &[BrokerId], partition_epoch: i32) -> PartitionRecord {
        PartitionRecord {
            topic_id: TopicId(7),
            partition: 0,
            replicas: vec![ME, FOLLOWER],
            isr: isr.to_vec(),
            leader: Some(ME),
            leader_epoch: 1,
            partition_epoch,
            eligible_leader_replicas: Vec::new(),
            last_known_elr: Vec::new(),
        }
    }

    /// A broker's parts a test lends the replica manager.
    struct Host {
        image: MetadataImage,
        outbox: Outbox,
        events: Vec<BrokerEvent>,
        now_ms: i64,
    }

    impl Host {
        fn new() -> Self {
            Self {
                image: MetadataImage::default(),
                outbox: Outbox::new(NodeId::Broker(ClusterIndex(0), ME)),
                events: Vec::new(),
                now_ms: 0,
            }
        }

        fn context(&mut self) -> ReplicaContext<'_> {
            ReplicaContext {
                now_ms: self.now_ms,
                broker_id: ME,
                controller: NodeId::Controller(ClusterIndex(0)),
                broker_epoch: Some(3),
                image: &self.image,
                outbox: &mut self.outbox,
                events: &mut self.events,
            }
        }

        fn sent(&mut self) -> Vec<Message> {
            self.outbox
                .take()
                .into_iter()
                .map(|Envelope { message, .. }| message)
                .collect()
        }
    }

    /// A replica manager leading orders-0 with an ISR of itself and FOLLOWER.
    fn leader(host: &mut Host) -> ReplicaManager<MemoryStorage> {
        let mut replicas = ReplicaManager::new(config(), MemoryStorage::new(), 0).unwrap();
        let record = record(&[ME, FOLLOWER], 0);
        assert!(replicas.ensure_replica(&tp(), &record));
        let change = replicas.apply_partition_record(&mut host.context(), &tp(), &record, false);
        assert_eq!(change, ReplicaChange::BecameLeader);
        replicas
    }

    fn produce(acks: Acks) -> ProduceRequest {
        let mut builder = BatchBuilder::default();
        builder.append(0, None, Some(Bytes::from_static(b"v")), vec![]);
        ProduceRequest {
            from: CLIENT,
            correlation_id: 9,
            acks,
            timeout_ms: 30_000,
            topic_partition: tp(),
            batch: builder.build(),
            topic_id: None,
        }
    }

    fn follower_fetch(fetch_offset: i64) -> Vec<FetchPartition> {
        vec![FetchPartition {
            topic_id: None,
            topic_partition: tp(),
            current_leader_epoch: LeaderEpoch(1),
            fetch_offset: Offset(fetch_offset),
            last_fetched_epoch: if fetch_offset > 0 {
                LeaderEpoch(1)
            } else {
                LeaderEpoch::NONE
            },
        }]
    }

    #[test]
    fn an_acks_all_produce_waits_until_the_follower_fetched_past_it() {
        let mut host = Host::new();
        let mut replicas = leader(&mut host);
        let outcome = replicas.handle_produce(
            &mut host.context(),
            produce(Acks::All),
            WriteGate::default(),
        );
        assert_eq!(outcome, ProduceOutcome::Appended);
        assert!(host.sent().is_empty(), "acks=all waits for the ISR");
        assert!(!replicas.increment_high_watermark(&host.image, ME, &tp()));

        // The follower fetches from 0 (gets the batch), then from 1: it has it.
        for offset in [0, 1] {
            let read = replicas.read_fetch_partitions(
                &mut host.context(),
                Some(FOLLOWER),
                FetchIsolation::LogEnd,
                1 << 20,
                &follower_fetch(offset),
            );
            assert_eq!(read.followed, vec![tp()]);
            assert_eq!(read.answers[0].error, ErrorCode::None);
        }
        assert!(replicas.increment_high_watermark(&host.image, ME, &tp()));
        replicas.complete_delayed_produces(&mut host.context());
        match host.sent().as_slice() {
            [Message::Response(
                9,
                Response::Replica(ReplicaResponse::Produce {
                    error, base_offset, ..
                }),
            )] => {
                assert_eq!((*error, base_offset.0), (ErrorCode::None, 0));
            }
            other => panic!("one produce answer expected: {other:?}"),
        }
        assert_eq!(replicas.deadline(), Some(500), "the next ISR check only");
    }

    #[test]
    fn a_produce_naming_another_topic_id_is_refused_and_one_naming_the_partitions_is_written() {
        // Produce v13: a producer whose batch belongs to a topic of this name deleted since
        // (orders-0 here is TopicId(7)).
        let mut host = Host::new();
        let mut replicas = leader(&mut host);
        let naming = |topic_id| ProduceRequest {
            topic_id: Some(topic_id),
            ..produce(Acks::Leader)
        };
        let outcome = replicas.handle_produce(
            &mut host.context(),
            naming(TopicId(6)),
            WriteGate::default(),
        );
        assert_eq!(outcome, ProduceOutcome::Refused);
        match host.sent().as_slice() {
            [Message::Response(9, Response::Replica(ReplicaResponse::Produce { error, .. }))] => {
                assert_eq!(*error, ErrorCode::UnknownTopicId);
            }
            other => panic!("one produce answer expected: {other:?}"),
        }
        let outcome = replicas.handle_produce(
            &mut host.context(),
            naming(TopicId(7)),
            WriteGate::default(),
        );
        assert_eq!(outcome, ProduceOutcome::Appended);
    }

    #[test]
    fn a_leader_deposed_above_its_high_watermark_keeps_its_tail_unless_it_predates_kip_101() {
        // Two records the follower never fetched: the high watermark stays at 0. Deposed, the
        // replica keeps them (its fetches find any divergence by epoch) since KIP-101; before,
        // becoming a follower cut the log to the high watermark.
        for (truncation, log_end_after) in [
            (FollowerTruncation::LeaderEpoch, Offset(2)),
            (FollowerTruncation::HighWatermark, Offset(0)),
        ] {
            let mut host = Host::new();
            let config = ReplicaConfig {
                follower_truncation: truncation,
                ..config()
            };
            let mut replicas = ReplicaManager::new(config, MemoryStorage::new(), 0).unwrap();
            let led = record(&[ME, FOLLOWER], 0);
            assert!(replicas.ensure_replica(&tp(), &led));
            replicas.apply_partition_record(&mut host.context(), &tp(), &led, false);
            for _ in 0..2 {
                let produce = produce(Acks::Leader);
                replicas.handle_produce(&mut host.context(), produce, WriteGate::default());
            }
            host.events.clear();
            let deposed = PartitionRecord {
                leader: Some(FOLLOWER),
                leader_epoch: 2,
                partition_epoch: 1,
                ..led
            };
            let change =
                replicas.apply_partition_record(&mut host.context(), &tp(), &deposed, false);
            assert_eq!(
                change,
                ReplicaChange::BecameFollower {
                    leader: Some(FOLLOWER)
                }
            );
            let log = &replicas.partitions()[&tp()].log;
            assert_eq!(log.log_end_offset(), log_end_after, "{truncation:?}");
            let cut = host.events.iter().any(|event| {
                matches!(
                    event,
                    BrokerEvent::Truncated {
                        reason: TruncationReason::HighWatermarkOnBecomingFollower,
                        ..
                    }
                )
            });
            assert_eq!(
                cut,
                truncation.truncates_to_high_watermark(),
                "{truncation:?}"
            );
            assert!(host.events.iter().any(|event| matches!(
                event,
                BrokerEvent::BecameFollower {
                    log_end_offset: Offset(2),
                    high_watermark: Offset(0),
                    ..
                }
            )));
        }
    }

    #[test]
    fn a_lagging_follower_is_proposed_out_of_the_isr_and_an_unanswered_proposal_is_retried() {
        let mut host = Host::new();
        let mut replicas = leader(&mut host);
        replicas.handle_produce(
            &mut host.context(),
            produce(Acks::Leader),
            WriteGate::default(),
        );
        host.sent();
        host.now_ms = 1_500;
        replicas.periodic(&mut host.context());
        let sent = host.sent();
        let [Message::Request(
            correlation_id,
            Request::Controller(ControllerRequest::AlterPartition { new_isr, .. }),
        )] = sent.as_slice()
        else {
            panic!("one AlterPartition expected: {sent:?}");
        };
        assert_eq!(new_isr, &vec![ME]);
        assert!(replicas.owns_alter_partition(*correlation_id));

        // Not before the controller timeout...
        host.now_ms = 1_500 + 1_999;
        replicas.expire_alter_partitions(&mut host.context());
        assert!(host.sent().is_empty());
        // ...but unanswered past it: sent again, the proposal kept.
        host.now_ms = 1_500 + 2_000;
        replicas.expire_alter_partitions(&mut host.context());
        let resent = host.sent();
        let [Message::Request(
            again,
            Request::Controller(ControllerRequest::AlterPartition { new_isr, .. }),
        )] = resent.as_slice()
        else {
            panic!("the proposal is sent again: {resent:?}");
        };
        assert_eq!(new_isr, &vec![ME]);
        assert!(matches!(
            host.events.last(),
            Some(BrokerEvent::AlterPartitionRetried { .. })
        ));

        // Accepted: the ISR shrinks and the broker is told which partition changed.
        let changed = replicas.handle_alter_partition_response(
            &mut host.context(),
            *again,
            ErrorCode::None,
            Some(record(&[ME], 1)),
        );
        assert_eq!(changed, Some(tp()));
        assert_eq!(
            replicas.partitions()[&tp()].leader_state().unwrap().isr,
            vec![ME]
        );
        assert!(!replicas.owns_alter_partition(*again));
    }

    #[test]
    fn a_marker_write_waits_for_the_isr_until_its_deadline_and_a_gated_one_is_refused() {
        let mut host = Host::new();
        let mut replicas = ReplicaManager::new(
            ReplicaConfig {
                replica_lag_time_max_ms: 20_000,
                ..config()
            },
            MemoryStorage::new(),
            0,
        )
        .unwrap();
        let record = record(&[ME, FOLLOWER], 0);
        assert!(replicas.ensure_replica(&tp(), &record));
        replicas.apply_partition_record(&mut host.context(), &tp(), &record, false);
        let marker = |producer_id| TxnMarker {
            producer_id,
            producer_epoch: ProducerEpoch(0),
            committed: true,
            coordinator_epoch: 0,
            partitions: vec![tp()],
        };
        replicas.append_txn_markers(
            &mut host.context(),
            CLIENT,
            4,
            vec![marker(ProducerId(7)), marker(ProducerId(8))],
            |marker, _, _| {
                if marker.producer_id == ProducerId(7) {
                    MarkerGate::Append {
                        admitted_before_cut: false,
                    }
                } else {
                    MarkerGate::Refuse
                }
            },
        );
        assert!(matches!(
            host.events.last(),
            Some(BrokerEvent::TxnMarkerRefused { .. })
        ));
        assert_eq!(replicas.partitions()[&tp()].log.log_end_offset(), Offset(1));
        // The follower has not fetched: the write waits, and wakes the broker at its deadline.
        replicas.complete_delayed_markers(&mut host.context());
        assert!(host.sent().is_empty());
        assert_eq!(replicas.deadline(), Some(1_000));
        host.now_ms = 1_000;
        assert!(replicas.marker_deadline_passed(host.now_ms));
        replicas.complete_delayed_markers(&mut host.context());
        match host.sent().as_slice() {
            [Message::Response(
                4,
                Response::Replica(ReplicaResponse::WriteTxnMarkers { results }),
            )] => assert_eq!(
                results,
                &vec![
                    (ProducerId(7), vec![(tp(), ErrorCode::RequestTimedOut)]),
                    (ProducerId(8), vec![(tp(), ErrorCode::ReadOnlyTopic)]),
                ]
            ),
            other => panic!("one WriteTxnMarkers answer expected: {other:?}"),
        }
    }

    /// A replica manager leading orders-0 in leader epoch 2 with an ISR of itself alone (its
    /// high watermark follows its log end) and FOLLOWER assigned.
    fn sole_leader(host: &mut Host) -> ReplicaManager<MemoryStorage> {
        let mut replicas = ReplicaManager::new(config(), MemoryStorage::new(), 0).unwrap();
        let record = PartitionRecord {
            leader_epoch: 2,
            ..record(&[ME], 0)
        };
        assert!(replicas.ensure_replica(&tp(), &record));
        replicas.apply_partition_record(&mut host.context(), &tp(), &record, false);
        replicas
    }

    #[test]
    fn a_caught_up_follower_is_proposed_into_the_isr() {
        let mut host = Host::new();
        let mut replicas = sole_leader(&mut host);
        replicas.handle_produce(
            &mut host.context(),
            produce(Acks::Leader),
            WriteGate::default(),
        );
        host.sent();
        let fetch = vec![FetchPartition {
            current_leader_epoch: LeaderEpoch(2),
            last_fetched_epoch: LeaderEpoch(2),
            ..follower_fetch(1)[0].clone()
        }];
        let read = replicas.read_fetch_partitions(
            &mut host.context(),
            Some(FOLLOWER),
            FetchIsolation::LogEnd,
            1 << 20,
            &fetch,
        );
        assert_eq!(read.followed, vec![tp()]);
        replicas.maybe_expand_isr(&mut host.context(), &tp(), FOLLOWER);
        let sent = host.sent();
        let [Message::Request(
            _,
            Request::Controller(ControllerRequest::AlterPartition { new_isr, .. }),
        )] = sent.as_slice()
        else {
            panic!("one AlterPartition expected: {sent:?}");
        };
        assert_eq!(new_isr, &vec![ME, FOLLOWER]);
    }

    #[test]
    fn delete_records_moves_the_log_start_within_the_high_watermark_unless_gated() {
        let mut host = Host::new();
        let mut replicas = sole_leader(&mut host);
        for _ in 0..3 {
            replicas.handle_produce(
                &mut host.context(),
                produce(Acks::Leader),
                WriteGate::default(),
            );
        }
        assert!(replicas.increment_high_watermark(&host.image, ME, &tp()));
        host.sent();
        let mut delete = |replicas: &mut ReplicaManager<MemoryStorage>,
                          partitions: Vec<(TopicPartition, i64)>,
                          refused: bool| {
            let partitions = partitions
                .into_iter()
                .map(|(tp, offset)| (tp, Offset(offset)))
                .collect();
            replicas.handle_delete_records(&mut host.context(), CLIENT, 3, partitions, |_, _| {
                WriteGate {
                    mirror_state: None,
                    refused_in: refused.then_some(crate::common::MirrorState::Mirroring),
                }
            });
            match host.sent().as_slice() {
                [Message::Response(
                    3,
                    Response::Replica(ReplicaResponse::DeleteRecords { results }),
                )] => results
                    .iter()
                    .map(|(tp, error, low_watermark)| (tp.clone(), *error, low_watermark.0))
                    .collect::<Vec<_>>(),
                other => panic!("one DeleteRecords answer expected: {other:?}"),
            }
        };
        let unknown = TopicPartition::new("payments", 0);
        assert_eq!(
            delete(&mut replicas, vec![(tp(), 2), (unknown.clone(), 0)], false),
            vec![
                (tp(), ErrorCode::None, 2),
                (unknown, ErrorCode::UnknownTopicOrPartition, -1)
            ]
        );
        assert_eq!(
            replicas.partitions()[&tp()].log.log_start_offset(),
            Offset(2)
        );
        for beyond in [4, -2] {
            assert_eq!(
                delete(&mut replicas, vec![(tp(), beyond)], false),
                vec![(tp(), ErrorCode::OffsetOutOfRange, -1)]
            );
        }
        assert_eq!(
            delete(&mut replicas, vec![(tp(), -1)], true),
            vec![(tp(), ErrorCode::MirrorTopicNotStopped, -1)]
        );
        // -1 means the high watermark.
        assert_eq!(
            delete(&mut replicas, vec![(tp(), -1)], false),
            vec![(tp(), ErrorCode::None, 3)]
        );
    }
}
