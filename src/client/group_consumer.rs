//! A consumer-group member (KIP-848 protocol, Kafka's `AsyncKafkaConsumer` with
//! `group.protocol=consumer`), as a sans-IO [`Node`] built around the fixed-assignment
//! [`Consumer`].
//!
//! Contract:
//! - **Composition.** The fetching is the embedded [`Consumer`]'s, unchanged: this type only
//!   changes its assignment ([`Consumer::assign_partition`], [`Consumer::unassign_partition`])
//!   and forwards its events as [`GroupConsumerEvent::Consumer`]. Both halves send from the
//!   same node; the group requests take correlation ids from [`GROUP_CORRELATION_ID_BASE`] up,
//!   the consumer's stay below it, so every answer finds its half by its id.
//! - **Coordinator.** FindCoordinator (group key) goes to a bootstrap broker, rotating in sorted
//!   order after any failure or timeout, retried after `retry_backoff_ms`. The coordinator is
//!   forgotten and looked up again (after `retry_backoff_ms`) when one of its answers says
//!   `NotCoordinator` or `CoordinatorNotAvailable`, or a request to it times out
//!   (`group_request_timeout_ms`).
//! - **Membership.** Once the coordinator is known the member joins (heartbeat, epoch 0, the
//!   subscribed topics), then heartbeats with its epoch at the interval the coordinator returns,
//!   one heartbeat in flight at a time. `UnknownMemberId` loses the membership and rejoins with a
//!   new id; `FencedMemberEpoch` loses it and rejoins with the same id (as Kafka's client
//!   does). Losing the membership drops every partition without committing (Kafka's "partitions
//!   lost"). `CoordinatorLoadInProgress` and other errors retry after `retry_backoff_ms`.
//! - **Assignment.** An answer with an assignment replaces the current one. Partitions taken
//!   away are committed at their positions first, then dropped; the heartbeat that acknowledges
//!   the new epoch goes out when that commit is answered (at once when there is nothing to
//!   commit), so the next owner reads the commit. Partitions added wait for an OffsetFetch of
//!   the coordinator and start at the committed offset, or by the consumer's reset policy when
//!   there is none.
//! - **Commits.** Every `auto_commit_interval_ms` the member commits, for every positioned
//!   partition whose position is not what it last committed, that position with its leader
//!   epoch ([`Consumer::position_epoch`]: of the last batch consumed below it, control
//!   batches included, or of the committed offset it started from; −1 after a reset). One automatic commit is in flight at a time; a failed one is simply
//!   retried by the next (positions are commit candidates until committed). A failed commit
//!   of revoked partitions is not retried (they belong to another member now).
//! - **Leaving.** [`GroupConsumer::leave`] stops fetching, commits every position, then sends
//!   the leave heartbeat (epoch −1); its answer or timeout ends the member ([`GroupConsumerEvent::Left`]
//!   with `None`). A member that left does nothing more.
//!
//! Not modelled: client-side rebalance callbacks, manual commits and seeks, the client-side
//! poll timeout (`max.poll.interval.ms`) and pattern subscriptions. Positions, committed
//! offsets included, are validated after a leader change by the embedded consumer (KIP-320).

mod answers;

use crate::protocol::{
    CommittedOffset, CoordinatorRequest, CoordinatorType, Envelope, ErrorCode, LeaderEpoch,
    Message, NodeId, Offset, OffsetCommitEntry, Request, Response, TopicPartition,
};
use std::collections::{BTreeMap, BTreeSet};

use super::consumer::{Consumer, ConsumerConfig, ConsumerEvent};
use super::error::{require_positive_ms, ClientConfigError};
use super::in_flight::InFlightRequests;
use super::io::WakeupAfter;
use crate::node::Node;

/// The group half's first correlation id (the embedded consumer counts from 1).
pub const GROUP_CORRELATION_ID_BASE: u64 = 1 << 48;

/// Group member settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConsumerConfig {
    /// `group.id`.
    pub group_id: String,
    /// The subscribed topics.
    pub topics: Vec<String>,
    /// The embedded consumer's settings (its `retry_backoff_ms` is also the group backoff).
    pub consumer: ConsumerConfig,
    /// `auto.commit.interval.ms`. Default 5 000, as in Kafka.
    pub auto_commit_interval_ms: i64,
    /// How long a FindCoordinator, heartbeat, OffsetFetch or OffsetCommit may stay unanswered.
    /// Kafka uses `request.timeout.ms` (30 000) against a 45 000 ms session; the model's session
    /// is far shorter, so this must stay below the coordinator's session timeout. Default 500.
    pub group_request_timeout_ms: i64,
}

impl GroupConsumerConfig {
    /// Defaults for a member of `group_id` subscribed to `topics`.
    pub fn new(group_id: impl Into<String>, topics: Vec<String>) -> Self {
        Self {
            group_id: group_id.into(),
            topics,
            consumer: ConsumerConfig::default(),
            auto_commit_interval_ms: 5_000,
            group_request_timeout_ms: 500,
        }
    }

    /// Checks every field's range.
    pub fn validate(&self) -> Result<(), ClientConfigError> {
        self.consumer.validate()?;
        if self.group_id.is_empty() {
            return Err(ClientConfigError::field("group_id", "must not be empty"));
        }
        if self.topics.is_empty() {
            return Err(ClientConfigError::field("topics", "must not be empty"));
        }
        require_positive_ms("auto_commit_interval_ms", self.auto_commit_interval_ms)?;
        require_positive_ms("group_request_timeout_ms", self.group_request_timeout_ms)
    }
}

/// What the group member reports; see [`GroupConsumer::take_events`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupConsumerEvent {
    /// An event of the embedded consumer (records, resets, fetch failures, metadata).
    Consumer(ConsumerEvent),
    /// FindCoordinator answered.
    CoordinatorFound {
        /// The coordinator broker.
        coordinator: NodeId,
    },
    /// The coordinator was forgotten; it is looked up again.
    CoordinatorLost {
        /// The forgotten coordinator.
        coordinator: NodeId,
        /// Why (`RequestTimedOut` for a timeout).
        error: ErrorCode,
    },
    /// The join was answered.
    Joined {
        /// The member id the coordinator gave.
        member_id: String,
        /// The member epoch.
        member_epoch: i32,
    },
    /// The coordinator gave a new assignment (on every join, and on every change).
    Assigned {
        /// The member epoch that came with it.
        member_epoch: i32,
        /// The whole assignment, sorted.
        assignment: Vec<TopicPartition>,
        /// Partitions new in it.
        added: Vec<TopicPartition>,
        /// Partitions no longer in it (committed, then dropped).
        revoked: Vec<TopicPartition>,
    },
    /// An added partition got its start from OffsetFetch.
    Started {
        /// The partition.
        topic_partition: TopicPartition,
        /// The committed offset it starts at, or `None` (the reset policy decides).
        committed: Option<i64>,
    },
    /// Offsets the coordinator accepted: (partition, offset, leader epoch).
    Committed {
        /// The offsets.
        offsets: Vec<(TopicPartition, i64, i32)>,
    },
    /// Offsets the coordinator refused, or whose commit timed out.
    CommitFailed {
        /// (partition, error).
        errors: Vec<(TopicPartition, ErrorCode)>,
    },
    /// The membership ended: `None` after [`GroupConsumer::leave`]; otherwise the error that
    /// lost it (every partition dropped uncommitted; the member rejoins).
    Left {
        /// The member id that ended.
        member_id: String,
        /// `None`, `UnknownMemberId` or `FencedMemberEpoch`.
        error: ErrorCode,
    },
}

/// Where the member is in the group protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not a member: join once the coordinator is known and `next_heartbeat_ms` passed.
    Unjoined,
    /// The join heartbeat is in flight.
    Joining,
    /// A member.
    Stable,
    /// Leaving: the final commit, then the leave heartbeat.
    Leaving,
    /// Left for good.
    Left,
}

/// Why a commit was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CommitPurpose {
    Auto,
    /// Of partitions taken away: the acknowledging heartbeat follows its answer.
    Revocation,
    /// Before the leave heartbeat.
    Leave,
}

/// What the member remembers about a group request in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
enum GroupRequest {
    FindCoordinator,
    Heartbeat {
        member_epoch: i32,
    },
    OffsetFetch,
    OffsetCommit {
        offsets: Vec<(TopicPartition, i64, i32)>,
        purpose: CommitPurpose,
    },
}

/// A consumer-group member; see the module doc.
#[derive(Debug, Clone)]
pub struct GroupConsumer {
    node_id: NodeId,
    config: GroupConsumerConfig,
    consumer: Consumer,
    /// Whether the embedded consumer has been driven yet (it starts with its first partition).
    consumer_started: bool,
    bootstrap: Vec<NodeId>,
    bootstrap_index: usize,
    next_correlation_id: u64,
    outbox: Vec<Envelope>,
    in_flight: InFlightRequests<GroupRequest>,
    now_ms: Option<i64>,
    coordinator: Option<NodeId>,
    find_not_before_ms: i64,
    phase: Phase,
    member_id: String,
    member_epoch: i32,
    heartbeat_interval_ms: i64,
    next_heartbeat_ms: i64,
    /// The last heartbeat failed: its lost answer may have carried an assignment change, so
    /// the next one is a full heartbeat (with the subscription) that the coordinator answers
    /// with the whole assignment (KIP-848's full request after an error).
    full_heartbeat_due: bool,
    next_auto_commit_ms: i64,
    /// The coordinator's assignment.
    assignment: BTreeSet<TopicPartition>,
    /// Assigned partitions waiting for their committed offset.
    awaiting_offsets: BTreeSet<TopicPartition>,
    offset_fetch_not_before_ms: i64,
    /// What this member last committed successfully: (offset, leader epoch).
    committed: BTreeMap<TopicPartition, (i64, i32)>,
    /// The final commit of a leave, until the coordinator is known to send it.
    leave_commit: Option<Vec<(TopicPartition, i64, i32)>>,
    ignored_responses: u64,
    events: Vec<GroupConsumerEvent>,
}

impl GroupConsumer {
    /// A member of `config.group_id` that bootstraps from `bootstrap` (brokers of one cluster).
    pub fn new(
        node_id: NodeId,
        bootstrap: Vec<NodeId>,
        config: GroupConsumerConfig,
    ) -> Result<Self, ClientConfigError> {
        config.validate()?;
        let consumer = Consumer::new(node_id, bootstrap.clone(), config.consumer.clone(), vec![])?;
        let mut bootstrap = bootstrap;
        bootstrap.sort();
        bootstrap.dedup();
        Ok(Self {
            node_id,
            consumer,
            consumer_started: false,
            bootstrap,
            bootstrap_index: 0,
            next_correlation_id: GROUP_CORRELATION_ID_BASE,
            outbox: Vec::new(),
            in_flight: InFlightRequests::default(),
            now_ms: None,
            coordinator: None,
            find_not_before_ms: i64::MIN,
            phase: Phase::Unjoined,
            member_id: String::new(),
            member_epoch: 0,
            heartbeat_interval_ms: config.consumer.retry_backoff_ms,
            next_heartbeat_ms: i64::MIN,
            full_heartbeat_due: false,
            next_auto_commit_ms: i64::MAX,
            assignment: BTreeSet::new(),
            awaiting_offsets: BTreeSet::new(),
            offset_fetch_not_before_ms: i64::MIN,
            committed: BTreeMap::new(),
            leave_commit: None,
            ignored_responses: 0,
            events: Vec::new(),
            config,
        })
    }

    /// Events since the last call, in order.
    pub fn take_events(&mut self) -> Vec<GroupConsumerEvent> {
        std::mem::take(&mut self.events)
    }

    /// Leaves the group: stop fetching, commit every position, send the leave heartbeat.
    pub fn leave(&mut self, now_ms: i64) {
        self.now_ms = Some(now_ms);
        match self.phase {
            Phase::Stable => {
                let partitions: Vec<TopicPartition> = self.assignment.iter().cloned().collect();
                let offsets = self.consumed_offsets(&partitions);
                self.drop_partitions();
                self.phase = Phase::Leaving;
                self.leave_commit = Some(offsets);
            }
            Phase::Unjoined | Phase::Joining => {
                // A join in flight may still make us a member; its session will end it.
                self.drop_partitions();
                self.finish_leaving(ErrorCode::None);
            }
            Phase::Leaving | Phase::Left => {}
        }
        self.step(now_ms);
    }

    // ----- getters -----

    /// The configuration.
    pub fn config(&self) -> &GroupConsumerConfig {
        &self.config
    }

    /// The embedded consumer (positions, high watermarks, …).
    pub fn consumer(&self) -> &Consumer {
        &self.consumer
    }

    /// The member id while a member (or leaving).
    pub fn member_id(&self) -> Option<&str> {
        matches!(self.phase, Phase::Stable | Phase::Leaving).then_some(self.member_id.as_str())
    }

    /// The member epoch (0 when not a member).
    pub fn member_epoch(&self) -> i32 {
        self.member_epoch
    }

    /// Whether the member is in the group now.
    pub fn is_member(&self) -> bool {
        self.phase == Phase::Stable
    }

    /// Whether [`GroupConsumer::leave`] completed.
    pub fn has_left(&self) -> bool {
        self.phase == Phase::Left
    }

    /// The known coordinator.
    pub fn coordinator(&self) -> Option<NodeId> {
        self.coordinator
    }

    /// The coordinator's assignment, sorted.
    pub fn assignment(&self) -> Vec<TopicPartition> {
        self.assignment.iter().cloned().collect()
    }

    /// Every assigned partition's position (`None` while waiting for OffsetFetch or ListOffsets).
    pub fn positions(&self) -> BTreeMap<TopicPartition, Option<i64>> {
        self.assignment
            .iter()
            .map(|tp| (tp.clone(), self.consumer.position(tp)))
            .collect()
    }

    /// The next offset the member will fetch from `topic_partition`, if positioned.
    pub fn position(&self, topic_partition: &TopicPartition) -> Option<i64> {
        self.consumer.position(topic_partition)
    }

    /// What this member last committed successfully for `topic_partition` (or read from the
    /// coordinator when it started the partition): (offset, leader epoch).
    pub fn committed(&self, topic_partition: &TopicPartition) -> Option<(i64, i32)> {
        self.committed.get(topic_partition).copied()
    }

    /// Every committed offset this member knows, as in [`GroupConsumer::committed`].
    pub fn committed_offsets(&self) -> BTreeMap<TopicPartition, i64> {
        self.committed
            .iter()
            .map(|(tp, (offset, _))| (tp.clone(), *offset))
            .collect()
    }

    /// Group answers ignored because their request had timed out (or was unknown).
    pub fn ignored_responses(&self) -> u64 {
        self.ignored_responses
    }

    // ----- the step function -----

    fn step(&mut self, now_ms: i64) {
        self.drain_consumer();
        self.pump(now_ms);
        if self.consumer_started && self.phase != Phase::Left {
            self.consumer.handle_timeout(now_ms);
        }
        self.drain_consumer();
    }

    fn pump(&mut self, now_ms: i64) {
        if self.phase == Phase::Left {
            return;
        }
        self.maybe_find_coordinator(now_ms);
        let Some(coordinator) = self.coordinator else {
            return;
        };
        // Commits first: a leave sends its final commit before the leave heartbeat.
        self.maybe_commit(now_ms, coordinator);
        self.maybe_heartbeat(now_ms, coordinator);
        self.maybe_fetch_offsets(now_ms, coordinator);
    }

    /// Takes the embedded consumer's events and requests.
    fn drain_consumer(&mut self) {
        for event in self.consumer.take_events() {
            self.events.push(GroupConsumerEvent::Consumer(event));
        }
        self.outbox.extend(self.consumer.take_outbox());
    }

    fn send(&mut self, now_ms: i64, to: NodeId, request: Request, pending: GroupRequest) {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        self.outbox.push(Envelope {
            from: self.node_id,
            principal: None,
            connection: 0,
            to,
            message: Message::Request(correlation_id, request),
        });
        let deadline_ms = now_ms + self.config.group_request_timeout_ms;
        self.in_flight
            .insert(correlation_id, to, deadline_ms, pending);
    }

    fn in_flight_matches(&self, predicate: impl Fn(&GroupRequest) -> bool) -> bool {
        self.in_flight
            .iter()
            .any(|(_, entry)| predicate(&entry.request))
    }

    fn maybe_find_coordinator(&mut self, now_ms: i64) {
        if self.coordinator.is_some()
            || now_ms < self.find_not_before_ms
            || self.in_flight_matches(|request| *request == GroupRequest::FindCoordinator)
        {
            return;
        }
        let broker = self.bootstrap[self.bootstrap_index];
        let request = Request::Coordinator(CoordinatorRequest::FindCoordinator {
            key_type: CoordinatorType::Group,
            key: self.config.group_id.clone(),
        });
        self.send(now_ms, broker, request, GroupRequest::FindCoordinator);
    }

    fn maybe_heartbeat(&mut self, now_ms: i64, coordinator: NodeId) {
        if self.in_flight_matches(|request| matches!(request, GroupRequest::Heartbeat { .. })) {
            return;
        }
        let (member_epoch, subscribed_topics) = match self.phase {
            Phase::Unjoined if now_ms >= self.next_heartbeat_ms => {
                self.phase = Phase::Joining;
                (0, Some(self.config.topics.clone()))
            }
            Phase::Stable if now_ms >= self.next_heartbeat_ms => {
                let topics = self.full_heartbeat_due.then(|| self.config.topics.clone());
                (self.member_epoch, topics)
            }
            Phase::Leaving
                if self.leave_commit.is_none()
                    && !self.in_flight_matches(|request| {
                        matches!(
                            request,
                            GroupRequest::OffsetCommit {
                                purpose: CommitPurpose::Leave,
                                ..
                            }
                        )
                    }) =>
            {
                (-1, None)
            }
            _ => return,
        };
        let request = Request::Coordinator(CoordinatorRequest::ConsumerGroupHeartbeat {
            group_id: self.config.group_id.clone(),
            member_id: self.member_id.clone(),
            member_epoch,
            subscribed_topics,
        });
        self.send(
            now_ms,
            coordinator,
            request,
            GroupRequest::Heartbeat { member_epoch },
        );
    }

    fn maybe_fetch_offsets(&mut self, now_ms: i64, coordinator: NodeId) {
        if self.phase != Phase::Stable
            || self.awaiting_offsets.is_empty()
            || now_ms < self.offset_fetch_not_before_ms
            || self.in_flight_matches(|request| *request == GroupRequest::OffsetFetch)
        {
            return;
        }
        let request = Request::Coordinator(CoordinatorRequest::OffsetFetch {
            group_id: self.config.group_id.clone(),
            partitions: Some(self.awaiting_offsets.iter().cloned().collect()),
        });
        self.send(now_ms, coordinator, request, GroupRequest::OffsetFetch);
    }

    fn maybe_commit(&mut self, now_ms: i64, coordinator: NodeId) {
        if self.phase == Phase::Leaving {
            if let Some(offsets) = self.leave_commit.take() {
                if !offsets.is_empty() {
                    self.send_commit(now_ms, coordinator, offsets, CommitPurpose::Leave);
                }
            }
            return;
        }
        let auto_in_flight = self.in_flight_matches(|request| {
            matches!(
                request,
                GroupRequest::OffsetCommit {
                    purpose: CommitPurpose::Auto,
                    ..
                }
            )
        });
        if self.phase != Phase::Stable || now_ms < self.next_auto_commit_ms || auto_in_flight {
            return;
        }
        self.next_auto_commit_ms = now_ms + self.config.auto_commit_interval_ms;
        let partitions: Vec<TopicPartition> = self.assignment.iter().cloned().collect();
        let offsets = self.consumed_offsets(&partitions);
        if !offsets.is_empty() {
            self.send_commit(now_ms, coordinator, offsets, CommitPurpose::Auto);
        }
    }

    /// (partition, position, leader epoch) for each of `partitions` whose position differs
    /// from what was last committed.
    fn consumed_offsets(&self, partitions: &[TopicPartition]) -> Vec<(TopicPartition, i64, i32)> {
        partitions
            .iter()
            .filter_map(|tp| {
                // Only a valid position: one awaiting validation may lie past where the log
                // was truncated. Its epoch is the position's own, the one it is validated with
                // (KIP-320).
                let (position, epoch) = self.consumer.committable_position(tp)?;
                if self.committed.get(tp).map(|(offset, _)| *offset) == Some(position) {
                    return None;
                }
                Some((tp.clone(), position, epoch))
            })
            .collect()
    }

    fn send_commit(
        &mut self,
        now_ms: i64,
        coordinator: NodeId,
        offsets: Vec<(TopicPartition, i64, i32)>,
        purpose: CommitPurpose,
    ) {
        let entries = offsets
            .iter()
            .map(|(tp, offset, leader_epoch)| OffsetCommitEntry {
                topic_partition: tp.clone(),
                offset: Offset(*offset),
                leader_epoch: LeaderEpoch(*leader_epoch),
                metadata: String::new(),
                // OffsetCommit v10 names the topic by id: a commit for a topic since deleted
                // is refused rather than applied to one created again under its name.
                topic_id: self.consumer.position_topic_id(tp),
            })
            .collect();
        let request = Request::Coordinator(CoordinatorRequest::OffsetCommit {
            group_id: self.config.group_id.clone(),
            member_id: self.member_id.clone(),
            member_epoch: self.member_epoch,
            offsets: entries,
        });
        self.send(
            now_ms,
            coordinator,
            request,
            GroupRequest::OffsetCommit { offsets, purpose },
        );
    }

    // ----- membership changes -----

    /// Unassigns every partition from the embedded consumer, without committing.
    fn drop_partitions(&mut self) {
        for tp in std::mem::take(&mut self.assignment) {
            self.consumer.unassign_partition(&tp);
        }
        self.awaiting_offsets.clear();
    }

    fn finish_leaving(&mut self, error: ErrorCode) {
        self.phase = Phase::Left;
        self.member_epoch = 0;
        self.events.push(GroupConsumerEvent::Left {
            member_id: std::mem::take(&mut self.member_id),
            error,
        });
    }

    /// The coordinator no longer knows us as we are: drop everything and join again.
    fn lose_membership(&mut self, now_ms: i64, error: ErrorCode) {
        if self.phase == Phase::Leaving {
            self.finish_leaving(ErrorCode::None);
            return;
        }
        self.drop_partitions();
        let member_id = self.member_id.clone();
        self.events.push(GroupConsumerEvent::Left {
            member_id: member_id.clone(),
            error,
        });
        // A fenced member rejoins under its id (Kafka's client); an unknown one gets a new id.
        self.member_id = if error == ErrorCode::FencedMemberEpoch {
            member_id
        } else {
            String::new()
        };
        self.member_epoch = 0;
        self.phase = Phase::Unjoined;
        self.next_heartbeat_ms = now_ms;
    }

    fn lose_coordinator(&mut self, now_ms: i64, broker: NodeId, error: ErrorCode) {
        if self.coordinator != Some(broker) {
            return; // An answer from a coordinator already forgotten.
        }
        self.coordinator = None;
        self.find_not_before_ms = now_ms + self.config.consumer.retry_backoff_ms;
        self.events.push(GroupConsumerEvent::CoordinatorLost {
            coordinator: broker,
            error,
        });
    }

    fn apply_assignment(&mut self, now_ms: i64, assignment: Vec<TopicPartition>, joined: bool) {
        let assignment: BTreeSet<TopicPartition> = assignment.into_iter().collect();
        let revoked: Vec<TopicPartition> =
            self.assignment.difference(&assignment).cloned().collect();
        let added: Vec<TopicPartition> = assignment.difference(&self.assignment).cloned().collect();
        if revoked.is_empty() && added.is_empty() && !joined {
            return;
        }
        let offsets = self.consumed_offsets(&revoked);
        for tp in &revoked {
            self.awaiting_offsets.remove(tp);
            self.consumer.unassign_partition(tp);
        }
        self.awaiting_offsets.extend(added.iter().cloned());
        self.offset_fetch_not_before_ms = now_ms;
        self.assignment = assignment;
        self.events.push(GroupConsumerEvent::Assigned {
            member_epoch: self.member_epoch,
            assignment: self.assignment.iter().cloned().collect(),
            added,
            revoked: revoked.clone(),
        });
        if revoked.is_empty() {
            return;
        }
        // The next heartbeat acknowledges the revocation: after its commit, if any.
        match self.coordinator {
            Some(coordinator) if !offsets.is_empty() => {
                self.send_commit(now_ms, coordinator, offsets, CommitPurpose::Revocation);
            }
            _ => self.next_heartbeat_ms = now_ms,
        }
    }

    // ----- answers -----

    fn expire_requests(&mut self, now_ms: i64) {
        for (_, entry) in self.in_flight.take_expired(now_ms) {
            self.handle_answer(
                now_ms,
                entry.broker,
                entry.request,
                Err(ErrorCode::RequestTimedOut),
            );
        }
    }
}

impl Node for GroupConsumer {
    fn node_id(&self) -> NodeId {
        self.node_id
    }

    fn handle_message(&mut self, now_ms: i64, envelope: Envelope) {
        self.now_ms = Some(now_ms);
        self.expire_requests(now_ms);
        match envelope.message {
            Message::Response(correlation_id, response)
                if correlation_id >= GROUP_CORRELATION_ID_BASE =>
            {
                match self.in_flight.take(correlation_id) {
                    Some(entry) => {
                        self.handle_answer(now_ms, entry.broker, entry.request, Ok(response));
                    }
                    None => self.ignored_responses += 1,
                }
            }
            message if self.consumer_started => {
                self.consumer.handle_message(
                    now_ms,
                    Envelope {
                        from: envelope.from,
                        principal: None,
                        connection: 0,
                        to: envelope.to,
                        message,
                    },
                );
            }
            _ => self.ignored_responses += 1,
        }
        self.step(now_ms);
    }

    fn handle_timeout(&mut self, now_ms: i64) {
        self.now_ms = Some(now_ms);
        self.expire_requests(now_ms);
        self.step(now_ms);
    }

    fn poll_timeout(&self) -> Option<i64> {
        let Some(now_ms) = self.now_ms else {
            return Some(0); // Not started: wake at once.
        };
        if self.phase == Phase::Left {
            return self.in_flight.next_deadline();
        }
        let mut wakeups = WakeupAfter::new(now_ms);
        wakeups.extend(self.in_flight.next_deadline());
        match self.coordinator {
            None => wakeups.push(self.find_not_before_ms),
            Some(_) => {
                if matches!(self.phase, Phase::Unjoined | Phase::Stable) {
                    wakeups.push(self.next_heartbeat_ms);
                }
                if self.phase == Phase::Stable {
                    wakeups.push(self.next_auto_commit_ms);
                    if !self.awaiting_offsets.is_empty() {
                        wakeups.push(self.offset_fetch_not_before_ms);
                    }
                }
            }
        }
        if self.consumer_started {
            wakeups.extend(self.consumer.poll_timeout());
        }
        wakeups.earliest()
    }

    fn take_outbox(&mut self) -> Vec<Envelope> {
        std::mem::take(&mut self.outbox)
    }
}

#[cfg(test)]
#[path = "group_consumer_tests.rs"]
mod tests;
