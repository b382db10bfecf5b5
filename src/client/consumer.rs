//! A Kafka consumer with a fixed partition assignment, as a sans-IO [`Node`].
//!
//! Contract (kafka-storage.md §5; Java's `Fetcher`, `FetchCollector`, `OffsetFetcher`):
//! - **Start.** On its first input the consumer sends Metadata for its assigned topics to the
//!   rotation target (a bootstrap broker at first). Each partition starts without a position;
//!   once its leader is known it is positioned by ListOffsets at the earliest or latest offset
//!   (`auto_offset_reset`). "Latest" is the high watermark for READ_UNCOMMITTED and the last
//!   stable offset for READ_COMMITTED, since ListOffsets carries the isolation.
//! - **Fetch loop.** Partitions with a position are fetched from their leader, one Fetch in
//!   flight per leader, carrying every partition of that leader that is ready: consumer
//!   isolation (HighWatermark or TxnCommitted), `fetch_max_wait_ms` for the leader to hold it
//!   when there is no data, `current_leader_epoch` from metadata, `last_fetched_epoch` −1. An answer becomes records through [`completed_fetch`] (control
//!   records never reach the application; READ_COMMITTED hides aborted transactions) and the
//!   position moves to `next_fetch_offset`. An answer that made no progress makes the
//!   partition wait `fetch_backoff_ms`; one that did is followed by the next fetch at once.
//! - **Errors.** NotLeaderOrFollower, FencedLeaderEpoch, UnknownLeaderEpoch,
//!   UnknownTopicOrPartition, KafkaStorageError and request timeouts refresh metadata and retry
//!   after `retry_backoff_ms`. OffsetOutOfRange resets the position by ListOffsets under the
//!   reset policy, but only if the answer is for the current position (a stale answer is
//!   dropped). Every other error is retried after the backoff.
//! - **Outputs.** Requests through [`Node::take_outbox`]; records and resets through
//!   [`Consumer::take_events`].
//! - **Assignment changes.** The assignment is fixed unless a caller (the group member
//!   `GroupConsumer`) changes it with [`Consumer::assign_partition`] and
//!   [`Consumer::unassign_partition`], or the consumer follows whole topics
//!   ([`Consumer::follow_whole_topic`]): every partition a Metadata answer shows for such a
//!   topic is assigned, without a position, as an application that assigns
//!   `partitionsFor(topic)` again after each refresh does; so a topic that grows is read in
//!   its new partitions too, from where `auto_offset_reset` says.
//!
//! - **Known epochs.** A leader epoch learned elsewhere (a committed offset's) goes to the
//!   metadata cache through [`Consumer::update_last_seen_epoch_if_newer`]; a partition whose
//!   cached leader is older is not fetched until metadata catches up (Kafka's last-seen epochs).
//! - **Position validation (KIP-320).** A position knows the leader epoch of the last batch
//!   consumed below it (or the committed offset's, [`Consumer::assign_partition_at`]) and the
//!   leader epoch it was fetched under. When metadata shows another leader epoch, the partition
//!   is not fetched until an OffsetsForLeaderEpoch of its epoch answers (Kafka's
//!   `AWAIT_VALIDATION`): an end offset below the position means the log was truncated below it
//!   (an unclean election, or a lone replica's power loss), and the position moves to that end
//!   offset with an [`ConsumerEvent::OffsetReset`] (Kafka's "Truncation detected … resetting
//!   offset to the first offset known to diverge", as with a reset policy); an undefined epoch
//!   resets the position under `auto_offset_reset`. A position without an epoch (after a
//!   ListOffsets reset) is not validated. Only a valid position (not awaiting validation) is
//!   committable ([`Consumer::committable_position`], Kafka's `allConsumed`). A client from
//!   before KIP-320 (`fences_by_leader_epoch: false`) sends no current leader epoch, keeps no
//!   position epoch and validates nothing.
//! - **A topic created again.** A position records the topic id it belongs to; a Metadata
//!   answer giving the name another id drops it ([`ConsumerEvent::TopicRecreated`]) and the
//!   partition starts over under `auto_offset_reset`.
//!
//! Not modelled: group membership and offset commits (see `GroupConsumer`) and preferred read
//! replicas.

mod answers;

use crate::common::TopicId;
use crate::protocol::{
    Envelope, EpochAnswer, EpochQuery, ErrorCode, FetchPartition, FetchPartitionResponse,
    LeaderEpoch, ListOffsetsAnswer, ListOffsetsQuery, NodeId, Offset, OffsetSpec, ReplicaRequest,
    Request, Response, TopicPartition,
};
use std::collections::{BTreeMap, BTreeSet};

use super::error::{require_positive_ms, ClientConfigError};
use super::fetch::{completed_fetch, ConsumerRecord, IsolationLevel};
use super::io::{invalidates_metadata, ClientIo, WakeupAfter};
use crate::log::FetchIsolation;
use crate::node::Node;
use crate::record::{RecordBatch, RecordError};

/// Where a partition without a valid position starts (`auto.offset.reset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum AutoOffsetReset {
    /// The log start offset.
    Earliest,
    /// The end of what the isolation level may read (high watermark or last stable offset).
    Latest,
}

impl AutoOffsetReset {
    fn spec(self) -> OffsetSpec {
        match self {
            Self::Earliest => OffsetSpec::Earliest,
            Self::Latest => OffsetSpec::Latest,
        }
    }
}

/// Consumer settings (Kafka consumer configs of similar names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerConfig {
    /// `isolation.level`. Default [`IsolationLevel::ReadUncommitted`], as in Kafka.
    pub isolation: IsolationLevel,
    /// `max.partition.fetch.bytes`: bytes per partition per fetch (the first batch is returned
    /// even if larger). Default 1 048 576.
    pub max_bytes: usize,
    /// `fetch.max.wait.ms`: how long the leader may hold a fetch that finds no data. Must be
    /// below `request_timeout_ms`. Default 500.
    pub fetch_max_wait_ms: i64,
    /// Wait after an answer that brought nothing new before fetching the partition again.
    /// Default 100.
    pub fetch_backoff_ms: i64,
    /// `request.timeout.ms`. Default 30 000.
    pub request_timeout_ms: i64,
    /// `auto.offset.reset`. Default [`AutoOffsetReset::Latest`], as in Kafka.
    pub auto_offset_reset: AutoOffsetReset,
    /// `retry.backoff.ms`: wait after an error and between metadata refreshes. Default 100.
    pub retry_backoff_ms: i64,
    /// `metadata.max.age.ms`. Default 300 000.
    pub metadata_max_age_ms: i64,
    /// KIP-320: Fetch and ListOffsets carry the cached leader epoch (a leader in another
    /// epoch refuses them), a position carries the leader epoch of the last batch consumed
    /// below it and is validated after a leader change, and a committed offset's epoch is
    /// known to exist. `false` is a client from before KIP-320 (Kafka 2.0 and older): none of
    /// it. Default `true`.
    pub fences_by_leader_epoch: bool,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        Self {
            isolation: IsolationLevel::ReadUncommitted,
            max_bytes: 1_048_576,
            fetch_max_wait_ms: 500,
            fetch_backoff_ms: 100,
            request_timeout_ms: 30_000,
            auto_offset_reset: AutoOffsetReset::Latest,
            retry_backoff_ms: 100,
            metadata_max_age_ms: 300_000,
            fences_by_leader_epoch: true,
        }
    }
}

impl ConsumerConfig {
    /// Checks every field's range.
    pub fn validate(&self) -> Result<(), ClientConfigError> {
        require_positive_ms("fetch_backoff_ms", self.fetch_backoff_ms)?;
        require_positive_ms("request_timeout_ms", self.request_timeout_ms)?;
        require_positive_ms("retry_backoff_ms", self.retry_backoff_ms)?;
        require_positive_ms("metadata_max_age_ms", self.metadata_max_age_ms)?;
        if self.fetch_max_wait_ms < 0 || self.fetch_max_wait_ms >= self.request_timeout_ms {
            // A held fetch must be answered before the client gives up on it.
            return Err(ClientConfigError::field(
                "fetch_max_wait_ms",
                "must be in 0..request_timeout_ms",
            ));
        }
        if self.max_bytes == 0 {
            return Err(ClientConfigError::field("max_bytes", "must be > 0"));
        }
        Ok(())
    }

    fn fetch_isolation(&self) -> FetchIsolation {
        match self.isolation {
            IsolationLevel::ReadUncommitted => FetchIsolation::HighWatermark,
            IsolationLevel::ReadCommitted => FetchIsolation::TxnCommitted,
        }
    }
}

/// Why a fetch of one partition brought no records (informational; the consumer retries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchError {
    /// The leader answered with this error.
    Broker(ErrorCode),
    /// No answer within `request_timeout_ms`.
    RequestTimeout,
    /// A fetched batch's records could not be decoded; the position stays put.
    CorruptRecords(RecordError),
    /// The answer was of the wrong kind or lacked this partition (a broker-model bug).
    MalformedAnswer,
}

/// What the consumer reports; see [`Consumer::take_events`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumerEvent {
    /// Records for the application, in offset order, never control records.
    Records {
        /// Their partition.
        topic_partition: TopicPartition,
        /// The records.
        records: Vec<ConsumerRecord>,
        /// When the fetch that brought them was sent (the consumer's clock): the broker read
        /// its log between then and their arrival.
        fetch_sent_ms: i64,
    },
    /// The partition was (re)positioned by ListOffsets, or moved back to where its log was
    /// truncated below the position (position validation, KIP-320).
    OffsetReset {
        /// The partition.
        topic_partition: TopicPartition,
        /// The position before, `None` at the start.
        previous: Option<i64>,
        /// The new position.
        offset: i64,
        /// The policy used.
        policy: AutoOffsetReset,
    },
    /// Metadata named another topic id for the partition's topic than the one its position
    /// belonged to (deleted and created again): the position was dropped and the partition
    /// starts over under `auto_offset_reset`.
    TopicRecreated {
        /// The partition.
        topic_partition: TopicPartition,
        /// The dropped position.
        previous: Option<i64>,
    },
    /// A fetch or ListOffsets failed for the partition; it will be retried.
    FetchFailed {
        /// The partition.
        topic_partition: TopicPartition,
        /// Why.
        error: FetchError,
    },
    /// A Metadata answer was applied.
    MetadataRefreshed {
        /// The broker that answered.
        broker: NodeId,
        /// Partitions whose cached leader changed.
        leaders_changed: Vec<TopicPartition>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing in flight; act (fetch, or ListOffsets without a position) not before this time.
    Idle { not_before_ms: i64 },
    /// A ListOffsets with this correlation id is in flight.
    ListingOffsets { correlation_id: u64 },
    /// A Fetch with this correlation id is in flight.
    Fetching { correlation_id: u64 },
    /// An OffsetsForLeaderEpoch validating the position is in flight.
    Validating { correlation_id: u64 },
}

/// One assigned partition's fetch state.
#[derive(Debug, Clone)]
struct AssignedPartition {
    /// The next offset to fetch; `None` until ListOffsets answers.
    position: Option<i64>,
    /// The position an OffsetOutOfRange reset started from, for the reset event.
    reset_from: Option<i64>,
    /// The leader epoch of the last batch consumed below the position (or of the committed
    /// offset it started from); `None` after a ListOffsets reset: such a position is not
    /// validated (Kafka's `FetchPosition.offsetEpoch`).
    offset_epoch: Option<i32>,
    /// The leader epoch (from metadata) the position was last fetched under or validated
    /// against; another one in metadata means validating first (Kafka's
    /// `FetchPosition.currentLeader`).
    validated_leader_epoch: Option<i32>,
    phase: Phase,
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
    /// The topic id the position belongs to, once a Metadata answer named one: a position in
    /// a topic that was deleted and created again under the same name means nothing in the
    /// new one.
    topic_id: Option<TopicId>,
}

impl AssignedPartition {
    fn new() -> Self {
        Self {
            position: None,
            reset_from: None,
            offset_epoch: None,
            validated_leader_epoch: None,
            phase: Phase::Idle {
                not_before_ms: i64::MIN,
            },
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            topic_id: None,
        }
    }

    /// Whether the position waits for an OffsetsForLeaderEpoch answer before it may be
    /// fetched from (Kafka's `AWAIT_VALIDATION`), given the cached leader's epoch: one from a
    /// committed offset never validated, or one validated under another leader epoch than the
    /// cached one. Without a cached leader the state stays as it was (Kafka validates only
    /// against a known leader).
    fn awaits_validation(&self, leader_epoch: Option<i32>) -> bool {
        if matches!(self.phase, Phase::Validating { .. }) {
            return true;
        }
        if self.offset_epoch.is_none() {
            return false;
        }
        match (self.validated_leader_epoch, leader_epoch) {
            (None, _) => true,
            (Some(validated), Some(current)) => validated != current,
            (Some(_), None) => false,
        }
    }

    fn is_due(&self, now_ms: i64) -> bool {
        matches!(self.phase, Phase::Idle { not_before_ms } if not_before_ms <= now_ms)
    }

    fn wait(&mut self, until_ms: i64) {
        self.phase = Phase::Idle {
            not_before_ms: until_ms,
        };
    }
}

/// What the consumer remembers about a request in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PendingRequest {
    Metadata,
    ListOffsets {
        partitions: Vec<TopicPartition>,
    },
    Fetch {
        partitions: Vec<(TopicPartition, i64)>,
        sent_ms: i64,
    },
    /// Position validation: (partition, position, the leader epoch asked under).
    Validate {
        partitions: Vec<(TopicPartition, i64, i32)>,
    },
}

/// A consumer; see the module doc.
#[derive(Debug, Clone)]
pub struct Consumer {
    node_id: NodeId,
    config: ConsumerConfig,
    io: ClientIo<PendingRequest>,
    now_ms: Option<i64>,
    partitions: BTreeMap<TopicPartition, AssignedPartition>,
    /// Topics whose every partition (as metadata shows them) is assigned.
    whole_topics: BTreeSet<String>,
    events: Vec<ConsumerEvent>,
}

impl Consumer {
    /// A consumer of `assignment` that bootstraps from `bootstrap` (brokers of one cluster).
    pub fn new(
        node_id: NodeId,
        bootstrap: Vec<NodeId>,
        config: ConsumerConfig,
        assignment: Vec<TopicPartition>,
    ) -> Result<Self, ClientConfigError> {
        config.validate()?;
        let mut io = ClientIo::new(
            node_id,
            &bootstrap,
            config.metadata_max_age_ms,
            config.retry_backoff_ms,
            config.request_timeout_ms,
        )?;
        let mut partitions = BTreeMap::new();
        for topic_partition in assignment {
            io.metadata.add_topic(&topic_partition.topic);
            partitions.insert(topic_partition, AssignedPartition::new());
        }
        Ok(Self {
            node_id,
            config,
            io,
            now_ms: None,
            partitions,
            whole_topics: BTreeSet::new(),
            events: Vec::new(),
        })
    }

    /// Records, resets and informational events since the last call, in order.
    pub fn take_events(&mut self) -> Vec<ConsumerEvent> {
        std::mem::take(&mut self.events)
    }

    // ----- assignment changes (for a group member, see `GroupConsumer`) -----

    /// Adds `topic_partition` to the assignment, or re-positions it if assigned: fetching
    /// starts at `position`, or, when `None`, at the offset ListOffsets gives under
    /// `auto_offset_reset`. Answers to requests already in flight for the partition are
    /// dropped as stale.
    pub fn assign_partition(&mut self, topic_partition: TopicPartition, position: Option<i64>) {
        self.io.metadata.add_topic(&topic_partition.topic);
        let mut partition = AssignedPartition::new();
        partition.position = position;
        if position.is_some() {
            partition.topic_id = self.io.metadata.topic_id(&topic_partition.topic);
        }
        self.partitions.insert(topic_partition, partition);
    }

    /// As [`Consumer::assign_partition`] at `position`, a committed offset whose leader epoch
    /// is `leader_epoch` (−1: unknown): the position is validated before the first fetch
    /// (Kafka's `seekUnvalidated` from a committed offset).
    pub fn assign_partition_at(
        &mut self,
        topic_partition: TopicPartition,
        position: i64,
        leader_epoch: i32,
    ) {
        self.assign_partition(topic_partition.clone(), Some(position));
        let fences = self.config.fences_by_leader_epoch;
        let partition = self.partitions.get_mut(&topic_partition).expect("assigned");
        partition.offset_epoch = (fences && leader_epoch >= 0).then_some(leader_epoch);
    }

    /// Records a leader epoch known to exist for `topic_partition` (a committed offset's
    /// epoch): until metadata shows a leader at least that new, the partition is not fetched
    /// (Kafka's `Metadata.updateLastSeenEpochIfNewer`).
    pub fn update_last_seen_epoch_if_newer(
        &mut self,
        topic_partition: &TopicPartition,
        leader_epoch: i32,
    ) {
        if self.config.fences_by_leader_epoch {
            self.io
                .metadata
                .update_last_seen_epoch_if_newer(topic_partition, leader_epoch);
        }
    }

    /// The leader epoch a request about `topic_partition` carries: the cached leader's, or −1
    /// (no check) for a client from before KIP-320.
    fn current_leader_epoch(&self, topic_partition: &TopicPartition) -> LeaderEpoch {
        if self.config.fences_by_leader_epoch {
            LeaderEpoch(self.io.metadata.leader_epoch(topic_partition))
        } else {
            LeaderEpoch::NONE
        }
    }

    /// Assigns every partition of `topic` that metadata shows, now and after every Metadata
    /// answer (see the module doc); partitions already assigned keep their positions.
    pub fn follow_whole_topic(&mut self, topic: &str) {
        self.io.metadata.add_topic(topic);
        self.whole_topics.insert(topic.to_owned());
        self.assign_new_partitions_of_whole_topics();
    }

    /// Assigns the partitions of the followed topics that metadata shows and the assignment
    /// lacks.
    fn assign_new_partitions_of_whole_topics(&mut self) {
        for topic in &self.whole_topics {
            for partition in 0..self.io.metadata.partition_count(topic) {
                let topic_partition = TopicPartition::new(topic.clone(), partition);
                self.partitions
                    .entry(topic_partition)
                    .or_insert_with(AssignedPartition::new);
            }
        }
    }

    /// After a Metadata answer: a positioned partition takes the id the answer gave its
    /// topic, and one positioned under another id (its topic was deleted and created again)
    /// loses its position, which starts over under `auto_offset_reset` in the new topic, as
    /// for a partition newly assigned (the KIP-848 consumer revokes the old topic id's
    /// partition and is assigned the new one's). Answers in flight for it are dropped.
    fn forget_positions_in_deleted_topics(&mut self) {
        for (topic_partition, partition) in self.partitions.iter_mut() {
            let Some(current) = self.io.metadata.topic_id(&topic_partition.topic) else {
                continue;
            };
            match partition.topic_id {
                Some(previous) if previous != current => {
                    let previous_position = partition.position;
                    *partition = AssignedPartition::new();
                    self.events.push(ConsumerEvent::TopicRecreated {
                        topic_partition: topic_partition.clone(),
                        previous: previous_position,
                    });
                }
                None if partition.position.is_some() => partition.topic_id = Some(current),
                _ => {}
            }
        }
    }

    /// Removes `topic_partition` from the assignment; returns its last position. Answers to
    /// requests in flight for it are dropped.
    pub fn unassign_partition(&mut self, topic_partition: &TopicPartition) -> Option<i64> {
        self.partitions.remove(topic_partition)?.position
    }

    // ----- getters -----

    /// The configuration.
    pub fn config(&self) -> &ConsumerConfig {
        &self.config
    }

    /// The assigned partitions, sorted.
    pub fn assignment(&self) -> Vec<TopicPartition> {
        self.partitions.keys().cloned().collect()
    }

    /// The next offset the consumer will fetch from `topic_partition`, if positioned.
    pub fn position(&self, topic_partition: &TopicPartition) -> Option<i64> {
        self.partitions.get(topic_partition)?.position
    }

    /// The leader epoch of `topic_partition`'s position: of the last batch consumed below it
    /// (a control batch included: the batch right below the position is what validation must
    /// find in that epoch), or of the committed offset it started from; `None` after a
    /// ListOffsets reset or when not positioned.
    pub fn position_epoch(&self, topic_partition: &TopicPartition) -> Option<i32> {
        let partition = self.partitions.get(topic_partition)?;
        partition.position.and(partition.offset_epoch)
    }

    /// The position of `topic_partition` as a commit may record it: (offset, the position's
    /// leader epoch or −1; its topic id is [`Consumer::position_topic_id`]), or `None` while
    /// the position is not valid — unknown, or awaiting validation (Kafka's `allConsumed` takes only positions
    /// with `hasValidPosition`; committing one that the log may have truncated below would
    /// make the next member resume past records nobody read).
    pub fn committable_position(&self, topic_partition: &TopicPartition) -> Option<(i64, i32)> {
        let partition = self.partitions.get(topic_partition)?;
        let position = partition.position?;
        let leader_epoch = self
            .io
            .metadata
            .leader(topic_partition)
            .map(|(_, leader_epoch)| leader_epoch);
        if partition.awaits_validation(leader_epoch) {
            return None;
        }
        Some((position, partition.offset_epoch.unwrap_or(-1)))
    }

    /// The topic id `topic_partition`'s position belongs to, or, when not assigned or not
    /// yet known, the id metadata last gave its topic.
    pub fn position_topic_id(&self, topic_partition: &TopicPartition) -> Option<TopicId> {
        self.partitions
            .get(topic_partition)
            .and_then(|partition| partition.topic_id)
            .or_else(|| self.io.metadata.topic_id(&topic_partition.topic))
    }

    /// Every assigned partition's position.
    pub fn positions(&self) -> BTreeMap<TopicPartition, Option<i64>> {
        self.partitions
            .iter()
            .map(|(topic_partition, partition)| (topic_partition.clone(), partition.position))
            .collect()
    }

    /// The leader's high watermark from the last successful fetch, −1 if none yet.
    pub fn high_watermark(&self, topic_partition: &TopicPartition) -> i64 {
        self.partitions
            .get(topic_partition)
            .map_or(-1, |partition| partition.high_watermark)
    }

    /// The leader's last stable offset from the last successful fetch, −1 if none yet.
    pub fn last_stable_offset(&self, topic_partition: &TopicPartition) -> i64 {
        self.partitions
            .get(topic_partition)
            .map_or(-1, |partition| partition.last_stable_offset)
    }

    /// The leader's log start offset from the last successful fetch, −1 if none yet.
    pub fn log_start_offset(&self, topic_partition: &TopicPartition) -> i64 {
        self.partitions
            .get(topic_partition)
            .map_or(-1, |partition| partition.log_start_offset)
    }

    /// Requests in flight now.
    pub fn in_flight_requests(&self) -> usize {
        self.io.in_flight.len()
    }

    /// Responses ignored because their request had timed out (or was unknown).
    pub fn ignored_responses(&self) -> u64 {
        self.io.ignored_responses
    }

    // ----- the step function -----

    fn pump(&mut self, now_ms: i64) {
        self.now_ms = Some(now_ms);
        self.expire_requests(now_ms);
        self.maybe_send_metadata(now_ms);
        self.send_list_offsets(now_ms);
        self.send_validations(now_ms);
        self.send_fetches(now_ms);
    }

    fn expire_requests(&mut self, now_ms: i64) {
        for (_, entry) in self.io.in_flight.take_expired(now_ms) {
            self.fail_request(
                now_ms,
                entry.broker,
                entry.request,
                FetchError::RequestTimeout,
            );
        }
    }

    /// No usable answer: refresh metadata and retry every partition of the request later.
    fn fail_request(
        &mut self,
        now_ms: i64,
        broker: NodeId,
        request: PendingRequest,
        error: FetchError,
    ) {
        let topic_partitions: Vec<TopicPartition> = match request {
            PendingRequest::Metadata => {
                self.io.metadata.on_failed(now_ms, broker);
                return;
            }
            PendingRequest::ListOffsets { partitions } => partitions,
            PendingRequest::Fetch { partitions, .. } => {
                partitions.into_iter().map(|(tp, _)| tp).collect()
            }
            PendingRequest::Validate { partitions } => {
                partitions.into_iter().map(|(tp, _, _)| tp).collect()
            }
        };
        self.io.metadata.request_update();
        for topic_partition in topic_partitions {
            self.retry_later(now_ms, &topic_partition, error.clone());
        }
    }

    fn retry_later(&mut self, now_ms: i64, topic_partition: &TopicPartition, error: FetchError) {
        let backoff_ms = self.config.retry_backoff_ms;
        if let Some(partition) = self.partitions.get_mut(topic_partition) {
            partition.wait(now_ms + backoff_ms);
        }
        self.events.push(ConsumerEvent::FetchFailed {
            topic_partition: topic_partition.clone(),
            error,
        });
    }

    fn maybe_send_metadata(&mut self, now_ms: i64) {
        let leaderless = self
            .partitions
            .keys()
            .any(|topic_partition| self.io.metadata.leader(topic_partition).is_none());
        if leaderless {
            self.io.metadata.request_update();
        }
        self.io
            .maybe_send_metadata(now_ms, PendingRequest::Metadata);
    }

    /// Partitions that are due and whose position is (`positioned`) or is not known, grouped
    /// by leader; positioned ones only if they need validation under the cached leader's
    /// epoch (`validating`) or do not.
    fn due_by_leader(
        &self,
        now_ms: i64,
        positioned: bool,
        validating: bool,
    ) -> BTreeMap<NodeId, Vec<TopicPartition>> {
        let mut by_leader: BTreeMap<NodeId, Vec<TopicPartition>> = BTreeMap::new();
        for (topic_partition, partition) in &self.partitions {
            if partition.position.is_some() != positioned || !partition.is_due(now_ms) {
                continue;
            }
            if let Some((leader, leader_epoch)) = self.io.metadata.leader(topic_partition) {
                let needs_validation = partition.awaits_validation(Some(leader_epoch));
                if positioned && needs_validation != validating {
                    continue;
                }
                by_leader
                    .entry(leader)
                    .or_default()
                    .push(topic_partition.clone());
            }
        }
        by_leader
    }

    fn send_list_offsets(&mut self, now_ms: i64) {
        let spec = self.config.auto_offset_reset.spec();
        for (leader, topic_partitions) in self.due_by_leader(now_ms, false, false) {
            let queries = topic_partitions
                .iter()
                .map(|topic_partition| ListOffsetsQuery {
                    topic_partition: topic_partition.clone(),
                    current_leader_epoch: self.current_leader_epoch(topic_partition),
                    spec,
                })
                .collect();
            let request = Request::Replica(ReplicaRequest::ListOffsets {
                isolation: self.config.fetch_isolation(),
                partitions: queries,
            });
            let pending = PendingRequest::ListOffsets {
                partitions: topic_partitions.clone(),
            };
            let correlation_id = self.io.send_request(now_ms, leader, request, pending);
            for topic_partition in &topic_partitions {
                let partition = self.partitions.get_mut(topic_partition).expect("assigned");
                partition.phase = Phase::ListingOffsets { correlation_id };
            }
        }
    }

    fn send_fetches(&mut self, now_ms: i64) {
        // Java sends no new fetch to a node that still has one pending.
        let busy: BTreeSet<NodeId> = self
            .io
            .in_flight
            .iter()
            .filter(|(_, entry)| matches!(entry.request, PendingRequest::Fetch { .. }))
            .map(|(_, entry)| entry.broker)
            .collect();
        for (leader, topic_partitions) in self.due_by_leader(now_ms, true, false) {
            if busy.contains(&leader) {
                continue;
            }
            self.send_fetch(now_ms, leader, topic_partitions);
        }
    }

    /// OffsetsForLeaderEpoch for positions whose leader epoch changed since they were fetched
    /// (Kafka's `OffsetsForLeaderEpochUtils` from `validatePositionsIfNeeded`).
    fn send_validations(&mut self, now_ms: i64) {
        for (leader, topic_partitions) in self.due_by_leader(now_ms, true, true) {
            let mut queries = Vec::new();
            let mut pending = Vec::new();
            for topic_partition in topic_partitions {
                let partition = &self.partitions[&topic_partition];
                let (position, offset_epoch) = (
                    partition.position.expect("positioned"),
                    partition
                        .offset_epoch
                        .expect("validated positions have an epoch"),
                );
                let current_leader_epoch = self.io.metadata.leader_epoch(&topic_partition);
                queries.push(EpochQuery {
                    topic_partition: topic_partition.clone(),
                    current_leader_epoch: LeaderEpoch(current_leader_epoch),
                    leader_epoch: LeaderEpoch(offset_epoch),
                });
                pending.push((topic_partition, position, current_leader_epoch));
            }
            let request = Request::Replica(ReplicaRequest::OffsetsForLeaderEpoch {
                replica_id: None,
                partitions: queries,
            });
            let topic_partitions: Vec<TopicPartition> =
                pending.iter().map(|(tp, _, _)| tp.clone()).collect();
            let pending = PendingRequest::Validate {
                partitions: pending,
            };
            let correlation_id = self.io.send_request(now_ms, leader, request, pending);
            for topic_partition in &topic_partitions {
                let partition = self.partitions.get_mut(topic_partition).expect("assigned");
                partition.phase = Phase::Validating { correlation_id };
            }
        }
    }

    fn send_fetch(&mut self, now_ms: i64, leader: NodeId, topic_partitions: Vec<TopicPartition>) {
        let positions: Vec<(TopicPartition, i64)> = topic_partitions
            .into_iter()
            .map(|topic_partition| {
                let position = self.partitions[&topic_partition]
                    .position
                    .expect("positioned partitions only");
                (topic_partition, position)
            })
            .collect();
        let fetch_partitions = positions
            .iter()
            .map(|(topic_partition, position)| FetchPartition {
                topic_id: None,
                topic_partition: topic_partition.clone(),
                current_leader_epoch: self.current_leader_epoch(topic_partition),
                fetch_offset: Offset(*position),
                // Consumers detect truncation by validation, not by diverging epochs.
                last_fetched_epoch: LeaderEpoch::NONE,
            })
            .collect();
        let request = Request::Replica(ReplicaRequest::Fetch {
            replica_id: None,
            replica_epoch: -1,
            isolation: self.config.fetch_isolation(),
            max_wait_ms: self.config.fetch_max_wait_ms,
            max_bytes: self.config.max_bytes,
            partitions: fetch_partitions,
        });
        let pending = PendingRequest::Fetch {
            partitions: positions.clone(),
            sent_ms: now_ms,
        };
        let correlation_id = self.io.send_request(now_ms, leader, request, pending);
        for (topic_partition, _) in &positions {
            let leader_epoch = self.io.metadata.leader_epoch(topic_partition);
            let partition = self.partitions.get_mut(topic_partition).expect("assigned");
            partition.phase = Phase::Fetching { correlation_id };
            // The leader checks the epoch: what it answers is valid under it.
            partition.validated_leader_epoch = Some(leader_epoch);
        }
    }

    // ----- answers -----
}

impl Node for Consumer {
    fn node_id(&self) -> NodeId {
        self.node_id
    }

    fn handle_message(&mut self, now_ms: i64, envelope: Envelope) {
        // Deadlines that passed first, so an answer after its timeout is ignored.
        self.expire_requests(now_ms);
        if let Some((correlation_id, entry, response)) = self.io.receive(envelope, true) {
            self.handle_response(
                now_ms,
                correlation_id,
                entry.broker,
                entry.request,
                response,
            );
        }
        self.pump(now_ms);
    }

    fn handle_timeout(&mut self, now_ms: i64) {
        self.pump(now_ms);
    }

    fn poll_timeout(&self) -> Option<i64> {
        let Some(now_ms) = self.now_ms else {
            return Some(0); // Not started: wake at once (0 is never after a simulated clock).
        };
        let mut wakeups = WakeupAfter::new(now_ms);
        wakeups.extend(self.io.wakeups());
        for partition in self.partitions.values() {
            if let Phase::Idle { not_before_ms } = partition.phase {
                wakeups.push(not_before_ms);
            }
        }
        wakeups.earliest()
    }

    fn take_outbox(&mut self) -> Vec<Envelope> {
        self.io.outbox.take()
    }
}

#[cfg(test)]
#[path = "consumer_tests.rs"]
mod tests;
