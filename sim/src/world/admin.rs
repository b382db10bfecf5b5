//! The admin client of a cluster: it creates the scenario's topics during set-up, then runs the
//! cluster's admin timeline (KIP-1279 mirror operations, the `[[admin.OP]]` tables of the
//! scenario) against
//! the cluster's controller.
//!
//! Contract:
//! - **Set-up.** CreateTopics for every topic of its cluster, retried until each exists
//!   (`TopicAlreadyExists` counts: an earlier attempt's answer was lost).
//! - **Timeline.** Operations run in file order, one at a time, each no earlier than its
//!   `at_ms` after the start of the fault phase (the world's driver tells the client when that
//!   was, [`AdminClient::set_clock`]) and never before set-up is done. A late operation (its
//!   predecessor was still retrying) starts as soon as that one finishes.
//! - **Retries.** An attempt is retried when no answer comes within [`REQUEST_TIMEOUT_MS`] (the
//!   request or its answer was lost, or the controller was down), and after
//!   [`RETRY_BACKOFF_MS`] when the answer is a retriable error (see [`is_retriable`]): a
//!   request-level one resends the whole operation, per-topic ones resend only those topics,
//!   keeping the other topics' results. Any other answer is final, as in Kafka's admin client.
//! - **Outcomes.** Every operation ends with an [`AdminOutcome`]: the request-level error and
//!   the per-topic errors of the answers, taken as they are. A retry after an unanswered
//!   attempt may see that attempt's effect (e.g. `ClusterMirrorAlreadyExists` after a create
//!   whose answer was lost), so the outcome counts the unanswered attempts (an answer of
//!   `RequestTimedOut`, a broker that gave up on the controller, counts as none) to let a reader
//!   tell. Finished operations are handed out by [`AdminClient::take_finished`]; the world's
//!   driver records them in the history and the trace.
//!
//! The client is sans-IO like every node: time comes in as `now_ms` (its local clock), and the
//! timeline is a queue, so nothing depends on map iteration order.

use mirrorsim::protocol::{
    BrokerId, ClusterIndex, ClusterRequest, ClusterResponse, ControllerRequest, ControllerResponse,
    Envelope, ErrorCode, Message, MirrorRequest, MirrorResponse, MirrorTopicOperation, NewTopic,
    NodeId, Offset, ReplicaRequest, ReplicaResponse, Request, Response, TopicPartition,
};
use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use mirrorsim::metadata::{AclBinding, ConfigResource};
use mirrorsim::node::{Node, Outbox};

use mirrorsim::mirror::sync::BOOTSTRAP_SERVERS_CONFIG as BOOTSTRAP_SERVERS;

use crate::scenario::{
    cluster_index, AclSpec, AdminOpKind, AdminOpSpec, CreateMirrorOp, Scenario, TopicSpec,
};

/// Pause between CreateTopics attempts during set-up.
const RETRY_MS: i64 = 200;
/// An attempt with no answer after this long is given up and sent again (the producers'
/// simulated request timeout).
pub const REQUEST_TIMEOUT_MS: i64 = 1_000;
/// Pause before resending after a retriable error.
pub const RETRY_BACKOFF_MS: i64 = 200;
/// While the fault phase has not started, how often the client looks whether it has.
const PHASE_POLL_MS: i64 = 10;

/// Whether an admin answer asks to try again. `UnknownTopicOrPartition` is retriable for data
/// requests (a broker's metadata may lag) but final here: the controller is the authority on
/// which topics exist, and Kafka's admin client fails that topic's future too.
pub fn is_retriable(error: ErrorCode) -> bool {
    error == ErrorCode::NotController
        || (error.is_retriable() && error != ErrorCode::UnknownTopicOrPartition)
}

/// What a timeline operation sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminAction {
    /// CreateMirror with these properties (`bootstrap.servers` first).
    CreateMirror {
        /// The mirror's properties.
        configs: Vec<(String, String)>,
    },
    /// IncrementalAlterConfigs (SET) of the mirror's properties, to the controller.
    AlterMirror {
        /// The properties set, in key order.
        configs: Vec<(String, String)>,
    },
    /// AlterMirrorTopics.
    AlterTopics {
        /// Add, remove, pause or resume.
        operation: MirrorTopicOperation,
        /// The topics, in the scenario's order.
        topics: Vec<String>,
        /// Add only: patterns appended to the mirror's `mirror.topics.include`.
        include: Vec<String>,
    },
    /// RecoverMirrorTopics.
    RecoverTopics {
        /// The topics.
        topics: Vec<String>,
    },
    /// DeleteMirror.
    DeleteMirror,
    /// DescribeMirror.
    DescribeMirror,
    /// DeleteRecords up to the high watermark of every partition of the topics.
    DeleteRecords {
        /// The topics.
        topics: Vec<String>,
    },
    /// DeleteTopics.
    DeleteTopics {
        /// The topics.
        topics: Vec<String>,
    },
    /// CreatePartitions.
    CreatePartitions {
        /// The topics.
        topics: Vec<String>,
        /// Their new partition count.
        count: i32,
    },
    /// CreateTopics of deferred topics, to the controller.
    CreateTopics {
        /// The topics' names, in the scenario's order.
        topics: Vec<String>,
        /// Each topic as `[[topics]]` declares it.
        new_topics: Vec<NewTopic>,
    },
    /// IncrementalAlterConfigs (SET) of a topic's configs, to the controller.
    AlterTopicConfigs {
        /// The topic (one).
        topics: Vec<String>,
        /// The configs set, in key order.
        configs: Vec<(String, String)>,
    },
    /// CreateAcls (`create`) or DeleteAcls, to the controller.
    Acls {
        /// Whether the bindings are created (else deleted).
        create: bool,
        /// The bindings.
        bindings: Vec<AclBinding>,
    },
}

/// One operation of an admin timeline, resolved from the scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminOp {
    /// Its position in the scenario's admin timeline (file order, whatever the operation).
    pub index: usize,
    /// The cluster whose controller gets it (the mirror's destination).
    pub cluster: ClusterIndex,
    /// What it is, as the scenario names it.
    pub kind: AdminOpKind,
    /// Earliest start, in ms from the start of the fault phase.
    pub at_ms: i64,
    /// The mirror.
    pub mirror: String,
    /// The request it sends.
    pub action: AdminAction,
}

impl AdminOp {
    /// The topics of a topic operation (empty for the others).
    pub fn topics(&self) -> &[String] {
        match &self.action {
            AdminAction::AlterTopics { topics, .. }
            | AdminAction::RecoverTopics { topics }
            | AdminAction::DeleteRecords { topics }
            | AdminAction::DeleteTopics { topics }
            | AdminAction::CreatePartitions { topics, .. }
            | AdminAction::CreateTopics { topics, .. }
            | AdminAction::AlterTopicConfigs { topics, .. } => topics,
            _ => &[],
        }
    }

    /// The request for one attempt at a broker, for operations a broker checks before it
    /// forwards them (KIP-1279's admin entries); `None` for the others.
    fn broker_request(&self, topics: &[String]) -> Option<Request> {
        match &self.action {
            AdminAction::AlterTopics {
                operation: MirrorTopicOperation::Add,
                include,
                ..
            } => Some(Request::Mirror(MirrorRequest::AddTopicsToMirror {
                mirror: self.mirror.clone(),
                topics: topics.to_vec(),
                include_patterns: include.clone(),
            })),
            AdminAction::DeleteMirror
            | AdminAction::DescribeMirror
            | AdminAction::RecoverTopics { .. }
            | AdminAction::DeleteTopics { .. }
            | AdminAction::CreatePartitions { .. } => Some(self.request(topics)),
            _ => None,
        }
    }

    /// The request for one attempt; a topic operation sends only `topics` (those still
    /// without a final result).
    fn request(&self, topics: &[String]) -> Request {
        match &self.action {
            AdminAction::CreateMirror { configs } => {
                Request::Controller(ControllerRequest::CreateMirror {
                    name: self.mirror.clone(),
                    configs: configs.clone(),
                })
            }
            AdminAction::AlterMirror { configs } => {
                Request::Controller(ControllerRequest::IncrementalAlterConfigs {
                    resource: ConfigResource::Mirror(self.mirror.clone()),
                    changes: configs
                        .iter()
                        .map(|(key, value)| (key.clone(), Some(value.clone())))
                        .collect(),
                })
            }
            AdminAction::AlterTopics {
                operation, include, ..
            } => Request::Controller(ControllerRequest::AlterMirrorTopics {
                mirror: self.mirror.clone(),
                operation: *operation,
                topics: topics.to_vec(),
                checked_stopped: Vec::new(),
                include_patterns: include.clone(),
            }),
            AdminAction::RecoverTopics { .. } => {
                Request::Mirror(MirrorRequest::RecoverMirrorTopics {
                    mirror: self.mirror.clone(),
                    topics: topics.to_vec(),
                })
            }
            AdminAction::DeleteMirror => Request::Mirror(MirrorRequest::DeleteMirror {
                name: self.mirror.clone(),
            }),
            AdminAction::DescribeMirror => Request::Mirror(MirrorRequest::DescribeMirror {
                name: self.mirror.clone(),
            }),
            AdminAction::DeleteTopics { .. } => Request::Cluster(ClusterRequest::DeleteTopics {
                topics: topics.to_vec(),
            }),
            AdminAction::CreatePartitions { count, .. } => {
                Request::Cluster(ClusterRequest::CreatePartitions {
                    topics: topics.iter().map(|topic| (topic.clone(), *count)).collect(),
                })
            }
            AdminAction::CreateTopics { new_topics, .. } => {
                Request::Controller(ControllerRequest::CreateTopics {
                    topics: new_topics
                        .iter()
                        .filter(|new| topics.contains(&new.name))
                        .cloned()
                        .collect(),
                })
            }
            AdminAction::AlterTopicConfigs { configs, .. } => {
                Request::Controller(ControllerRequest::IncrementalAlterConfigs {
                    resource: ConfigResource::Topic(self.topics()[0].clone()),
                    changes: configs
                        .iter()
                        .map(|(key, value)| (key.clone(), Some(value.clone())))
                        .collect(),
                })
            }
            AdminAction::Acls { create, bindings } => {
                let bindings = bindings.clone();
                Request::Controller(if *create {
                    ControllerRequest::CreateAcls { bindings }
                } else {
                    ControllerRequest::DeleteAcls { bindings }
                })
            }
            // Sent partition by partition to the leaders (see `Running::next_records_request`).
            AdminAction::DeleteRecords { .. } => Request::Cluster(ClusterRequest::Metadata {
                topics: Some(topics.to_vec()),
            }),
        }
    }
}

impl fmt::Display for AdminOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{} {} {}", self.index, self.cluster, self.kind.name())?;
        if !self.mirror.is_empty() {
            write!(f, " mirror={}", self.mirror)?;
        }
        if !self.topics().is_empty() {
            write!(f, " topics={}", self.topics().join(","))?;
        }
        write!(f, " at={}ms", self.at_ms)
    }
}

/// How an operation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminOutcome {
    /// The final answer's request-level error (`None`: accepted, though per-topic errors may
    /// still refuse topics).
    pub error: ErrorCode,
    /// Per-topic errors, in the operation's topic order (topic operations only; empty when the
    /// whole request was refused).
    pub topics: Vec<(String, ErrorCode)>,
    /// When the first attempt was sent, in ms from the start of the fault phase.
    pub started_ms: i64,
    /// When the final answer arrived, in ms from the start of the fault phase.
    pub finished_ms: i64,
    /// Attempts sent.
    pub attempts: u32,
    /// Attempts given up without an answer, or answered `RequestTimedOut` (the answering
    /// broker gave up on the controller); each may still have taken effect.
    pub unanswered: u32,
    /// Of those, the attempts answered `RequestTimedOut`.
    pub timed_out_answers: u32,
    /// DescribeMirror only: one line per partition, `topic-partition=STATE(lag=L,lme=E@O)`,
    /// with `,retries=N,error="…"` inside the brackets while a failure is on record;
    /// RecoverMirrorTopics: `topic-partition=RECOVERED` per partition recovered.
    pub described: Vec<String>,
    /// DescribeMirror only: each partition the answer showed MIRRORING or PAUSED with lag 0,
    /// with the source's last stable offset it was measured against: an operator's "caught
    /// up", what a planned failover waits for (`stop-keeps-caught-up`).
    pub caught_up: Vec<(TopicPartition, i64)>,
    /// The node that sent the final answer (`None` for a DeleteRecords, which several
    /// leaders answer): a broker answers DescribeMirror and DeleteMirror from its own
    /// metadata image, so `admin-outcomes` looks at what that image held.
    pub answered_by: Option<NodeId>,
    /// How long the final attempt waited for its answer, on the admin's clock.
    pub final_attempt_ms: i64,
    /// When the final answer was taken in, on the checkers' clock (ms since the run
    /// started), stamped by the world as it hands the outcome to the history.
    pub answered_at_ms: i64,
    /// The correlation ids of the attempts' requests.
    pub requests: Vec<u64>,
    /// How many of those requests the network delivered twice (a `duplicate` fault), stamped
    /// by the world: the first copy may have taken effect and its answer been lost, and the
    /// copy's answer (the one taken) then says "already done", as a retry's would.
    pub duplicated: u32,
}

impl AdminOutcome {
    /// The error of `topic`, if the final answers named it.
    pub fn topic_error(&self, topic: &str) -> Option<ErrorCode> {
        self.topics
            .iter()
            .find(|(name, _)| name == topic)
            .map(|(_, error)| *error)
    }
}

#[cfg(test)]
impl AdminOutcome {
    /// An outcome of one answered attempt, finished at `finished_ms` (the checkers' tests).
    pub(crate) fn answered(
        error: ErrorCode,
        topics: Vec<(String, ErrorCode)>,
        finished_ms: i64,
    ) -> Self {
        Self {
            error,
            topics,
            started_ms: 0,
            finished_ms,
            attempts: 1,
            unanswered: 0,
            timed_out_answers: 0,
            described: Vec::new(),
            caught_up: Vec::new(),
            answered_by: None,
            final_attempt_ms: 0,
            answered_at_ms: 0,
            requests: Vec::new(),
            duplicated: 0,
        }
    }
}

/// An operation and, once it finished, its outcome: what the history keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminOpRecord {
    /// The operation.
    pub op: AdminOp,
    /// Its outcome; `None` while it has not finished.
    pub outcome: Option<AdminOutcome>,
}

impl fmt::Display for AdminOpRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} -> ", self.op)?;
        let Some(outcome) = &self.outcome else {
            return write!(f, "unfinished");
        };
        write!(f, "error={:?}", outcome.error)?;
        for (topic, error) in &outcome.topics {
            write!(f, " {topic}={error:?}")?;
        }
        for line in &outcome.described {
            write!(f, " {line}")?;
        }
        write!(
            f,
            " started={}ms finished={}ms attempts={} unanswered={}",
            outcome.started_ms, outcome.finished_ms, outcome.attempts, outcome.unanswered
        )
    }
}

/// Every admin operation of `scenario`, in file order.
pub fn timeline(scenario: &Scenario) -> Vec<AdminOp> {
    scenario
        .admin
        .iter()
        .enumerate()
        .map(|(index, spec)| AdminOp {
            index,
            cluster: letter_index(spec.cluster().get_ref()),
            kind: spec.kind(),
            at_ms: spec.at_ms() as i64,
            mirror: spec
                .mirror()
                .map(|mirror| mirror.get_ref().clone())
                .unwrap_or_default(),
            action: action(scenario, spec),
        })
        .collect()
}

/// The request an operation of the timeline sends.
fn action(scenario: &Scenario, spec: &AdminOpSpec) -> AdminAction {
    let topics: Vec<String> = spec
        .topics()
        .unwrap_or_default()
        .iter()
        .map(|t| t.get_ref().clone())
        .collect();
    let alter = |operation| AdminAction::AlterTopics {
        operation,
        topics: topics.clone(),
        include: Vec::new(),
    };
    match spec {
        AdminOpSpec::CreateMirror(create) => AdminAction::CreateMirror {
            configs: mirror_configs(scenario, create),
        },
        AdminOpSpec::AlterMirror(alter_mirror) => AdminAction::AlterMirror {
            configs: alter_mirror.configs.clone().into_iter().collect(),
        },
        AdminOpSpec::AddTopics(add) => AdminAction::AlterTopics {
            operation: MirrorTopicOperation::Add,
            topics: topics.clone(),
            include: add.include.iter().map(|p| p.get_ref().clone()).collect(),
        },
        AdminOpSpec::RemoveTopics(_) => alter(MirrorTopicOperation::Remove),
        AdminOpSpec::PauseTopics(_) => alter(MirrorTopicOperation::Pause),
        AdminOpSpec::ResumeTopics(_) => alter(MirrorTopicOperation::Resume),
        AdminOpSpec::RecoverTopics(_) => AdminAction::RecoverTopics { topics },
        AdminOpSpec::DeleteMirror(_) => AdminAction::DeleteMirror,
        AdminOpSpec::DescribeMirror(_) => AdminAction::DescribeMirror,
        AdminOpSpec::DeleteRecords(_) => AdminAction::DeleteRecords { topics },
        AdminOpSpec::DeleteTopics(_) => AdminAction::DeleteTopics { topics },
        AdminOpSpec::CreatePartitions(create) => AdminAction::CreatePartitions {
            topics,
            count: create.partitions,
        },
        AdminOpSpec::CreateTopics(create) => AdminAction::CreateTopics {
            new_topics: scenario
                .topics
                .iter()
                .filter(|t| t.cluster.get_ref() == create.cluster.get_ref())
                .filter(|t| topics.contains(&t.name))
                .map(TopicSpec::new_topic)
                .collect(),
            topics,
        },
        AdminOpSpec::AlterTopicConfigs(alter) => AdminAction::AlterTopicConfigs {
            topics,
            configs: alter.configs.clone().into_iter().collect(),
        },
        AdminOpSpec::CreateAcls(acls) | AdminOpSpec::DeleteAcls(acls) => AdminAction::Acls {
            create: matches!(spec, AdminOpSpec::CreateAcls(_)),
            bindings: acls.acls.iter().map(AclSpec::binding).collect(),
        },
    }
}

/// A create's properties: `bootstrap.servers` naming every broker of the source cluster, then
/// the scenario's extra configs in key order.
fn mirror_configs(scenario: &Scenario, create: &CreateMirrorOp) -> Vec<(String, String)> {
    let source = letter_index(create.source.get_ref());
    let brokers: Vec<String> = (1..=scenario.clusters[usize::from(source.0)].brokers)
        .map(|id| NodeId::Broker(source, BrokerId(i32::from(id))).to_string())
        .collect();
    std::iter::once((BOOTSTRAP_SERVERS.to_string(), brokers.join(",")))
        .chain(create.configs.clone())
        .collect()
}

/// One partition of a DescribeMirror answer as the outcome line shows it.
fn describe_line(description: &mirrorsim::protocol::MirrorPartitionDescription) -> String {
    let tp = &description.topic_partition;
    let lag = description
        .lag
        .map_or_else(|| "-".to_owned(), |lag| lag.to_string());
    let lme = description.status.last_mirrored.map_or_else(
        || "-".to_owned(),
        |(epoch, offset)| format!("{epoch}@{offset}"),
    );
    let state = if description.status.error.is_none() {
        description.status.state.to_string()
    } else {
        format!("{:?}", description.status.error)
    };
    let status = &description.status;
    // A failure's record (FAILED, or a retry under way): its count (−1: non-retryable) and
    // the last error, as the prototype's describe shows them.
    let failure = match (&status.error_message, status.retry_attempt) {
        (None, 0) => String::new(),
        (message, attempt) => format!(
            ",retries={attempt},error={:?}",
            message.as_deref().unwrap_or("")
        ),
    };
    format!(
        "{}-{}={state}(lag={lag},lme={lme}{failure})",
        tp.topic, tp.partition
    )
}

fn letter_index(letter: &str) -> ClusterIndex {
    ClusterIndex(cluster_index(letter).expect("validated") as u8)
}

/// The operation being worked on.
struct Running {
    op: AdminOp,
    /// Topics still without a final result (all of them at first).
    pending_topics: Vec<String>,
    /// Final per-topic results so far.
    results: BTreeMap<String, ErrorCode>,
    started_ms: i64,
    attempts: u32,
    unanswered: u32,
    timed_out_answers: u32,
    /// The correlation ids of every attempt's request.
    requests: Vec<u64>,
    /// (correlation id, local send time) of the attempt awaiting its answer.
    in_flight: Option<(u64, i64)>,
    /// No attempt before this local time (backoff after a retriable error).
    next_attempt_ms: i64,
    /// DeleteRecords: each partition's leader as the last Metadata answer said (`None`: ask
    /// again), and the final error of each partition done.
    record_leaders: BTreeMap<TopicPartition, Option<NodeId>>,
    records_done: BTreeMap<TopicPartition, ErrorCode>,
    /// DescribeMirror: the partitions the latest answer showed caught up (see
    /// [`AdminOutcome::caught_up`]).
    caught_up: Vec<(TopicPartition, i64)>,
}

impl Running {
    fn new(op: AdminOp, started_ms: i64, now_ms: i64) -> Self {
        Self {
            pending_topics: op.topics().to_vec(),
            op,
            results: BTreeMap::new(),
            started_ms,
            attempts: 0,
            unanswered: 0,
            timed_out_answers: 0,
            requests: Vec::new(),
            in_flight: None,
            next_attempt_ms: now_ms,
            record_leaders: BTreeMap::new(),
            records_done: BTreeMap::new(),
            caught_up: Vec::new(),
        }
    }

    /// DeleteRecords' next request: the first partition not done, to its leader, or a
    /// Metadata request (to `any_broker`) while a leader is unknown.
    fn next_records_request(&self, any_broker: NodeId) -> (NodeId, Request) {
        let next = self
            .record_leaders
            .iter()
            .find(|(tp, _)| !self.records_done.contains_key(*tp));
        match next {
            Some((tp, Some(leader))) => (
                *leader,
                Request::Replica(ReplicaRequest::DeleteRecords {
                    partitions: vec![(tp.clone(), Offset::NONE)],
                }),
            ),
            _ => (any_broker, self.op.request(&self.pending_topics)),
        }
    }

    /// A Metadata answer for DeleteRecords: the partitions and their leaders; a topic the
    /// cluster does not have is final.
    fn records_metadata(&mut self, now_ms: i64, topics: &[mirrorsim::protocol::TopicMetadata]) {
        self.in_flight = None;
        for topic in topics {
            if topic.error == ErrorCode::UnknownTopicOrPartition {
                self.results.insert(topic.name.clone(), topic.error);
                continue;
            }
            for record in &topic.partitions {
                let tp = TopicPartition::new(topic.name.clone(), record.partition);
                let leader = record.leader.map(|id| NodeId::Broker(self.op.cluster, id));
                self.record_leaders.insert(tp, leader);
            }
        }
        if self.record_leaders.values().any(Option::is_none) {
            self.next_attempt_ms = now_ms + RETRY_BACKOFF_MS;
        }
    }

    /// A DeleteRecords answer; the outcome once every partition is done.
    fn records_answer(
        &mut self,
        now_ms: i64,
        finished_ms: i64,
        results: Vec<(TopicPartition, ErrorCode, Offset)>,
    ) -> Option<AdminOutcome> {
        self.in_flight = None;
        for (tp, error, _) in results {
            if is_retriable(error) || error == ErrorCode::UnknownTopicOrPartition {
                // The leader moved (or this broker does not know the partition yet).
                self.record_leaders.insert(tp, None);
                self.next_attempt_ms = now_ms + RETRY_BACKOFF_MS;
            } else {
                self.records_done.insert(tp, error);
            }
        }
        let all_done = !self.record_leaders.is_empty()
            && self
                .record_leaders
                .keys()
                .all(|tp| self.records_done.contains_key(tp));
        if !all_done {
            return None;
        }
        for (tp, error) in &self.records_done {
            let entry = self.results.entry(tp.topic.to_string()).or_insert(*error);
            if entry.is_none() {
                *entry = *error;
            }
        }
        self.pending_topics.clear();
        Some(self.outcome(ErrorCode::None, finished_ms, Vec::new()))
    }

    fn outcome(&self, error: ErrorCode, finished_ms: i64, described: Vec<String>) -> AdminOutcome {
        AdminOutcome {
            error,
            topics: self
                .op
                .topics()
                .iter()
                .filter_map(|topic| self.results.get(topic).map(|e| (topic.clone(), *e)))
                .collect(),
            started_ms: self.started_ms,
            finished_ms,
            attempts: self.attempts,
            unanswered: self.unanswered,
            timed_out_answers: self.timed_out_answers,
            described,
            caught_up: self.caught_up.clone(),
            answered_by: None,
            final_attempt_ms: 0,
            answered_at_ms: 0,
            requests: self.requests.clone(),
            duplicated: 0,
        }
    }

    /// Takes an answer in; returns the outcome when it is final.
    fn answer(
        &mut self,
        now_ms: i64,
        finished_ms: i64,
        error: ErrorCode,
        results: Vec<(String, ErrorCode)>,
        described: Vec<String>,
    ) -> Option<AdminOutcome> {
        self.in_flight = None;
        let timed_out = |error: &ErrorCode| *error == ErrorCode::RequestTimedOut;
        if timed_out(&error) || results.iter().any(|(_, error)| timed_out(error)) {
            // The broker gave up waiting for the controller, which may still have applied the
            // change: as good as no answer (generated seed 15300000000000370, a broker whose
            // skewed clock expired its forward of an AddTopicsToMirror the controller had
            // accepted; the retry was refused as already in the mirror).
            self.unanswered += 1;
            self.timed_out_answers += 1;
        }
        if is_retriable(error) {
            self.next_attempt_ms = now_ms + RETRY_BACKOFF_MS;
            return None;
        }
        if error == ErrorCode::None {
            for (topic, topic_error) in results {
                if !is_retriable(topic_error) && self.pending_topics.contains(&topic) {
                    self.results.insert(topic, topic_error);
                }
            }
            let results = &self.results;
            self.pending_topics
                .retain(|topic| !results.contains_key(topic));
            if !self.pending_topics.is_empty() {
                self.next_attempt_ms = now_ms + RETRY_BACKOFF_MS;
                return None;
            }
        }
        Some(self.outcome(error, finished_ms, described))
    }
}

/// The admin client; see the module doc.
pub struct AdminClient {
    node_id: NodeId,
    controller: NodeId,
    /// The cluster's brokers: DeleteMirror goes to one of them (see [`AdminClient::with_brokers`]).
    brokers: Vec<NodeId>,
    outbox: Outbox,
    pending_topics: Vec<NewTopic>,
    in_flight: Option<(u64, i64)>,
    next_attempt_ms: i64,
    timeline: VecDeque<AdminOp>,
    running: Option<Running>,
    /// The start of the fault phase on this node's clock, once it has started.
    phase_origin_ms: Option<i64>,
    /// The latest local time the client was given.
    now_ms: i64,
    finished: Vec<AdminOpRecord>,
}

impl AdminClient {
    /// An admin client that will create `topics` on `controller`'s cluster, then run
    /// `timeline` (this cluster's operations, in order).
    pub fn new(
        node_id: NodeId,
        controller: NodeId,
        topics: Vec<NewTopic>,
        timeline: Vec<AdminOp>,
        now_ms: i64,
    ) -> Self {
        Self {
            node_id,
            controller,
            brokers: Vec::new(),
            outbox: Outbox::new(node_id),
            pending_topics: topics,
            in_flight: None,
            next_attempt_ms: now_ms,
            timeline: timeline.into(),
            running: None,
            phase_origin_ms: None,
            now_ms,
            finished: Vec::new(),
        }
    }

    /// Sends AddTopicsToMirror, DeleteMirror, DescribeMirror, DeleteTopics and
    /// CreatePartitions to these brokers (in turn, one per attempt) rather than to the
    /// controller: a broker is KIP-1279's admin entry that checks the mirror states of the
    /// partitions concerned before it forwards the request.
    pub fn with_brokers(mut self, brokers: Vec<NodeId>) -> Self {
        self.brokers = brokers;
        self
    }

    /// Whether every topic was created.
    pub fn is_done(&self) -> bool {
        self.pending_topics.is_empty()
    }

    /// Tells the client the time on its clock and how long ago the fault phase started
    /// (`None`: not yet), which places the timeline.
    pub fn set_clock(&mut self, now_ms: i64, fault_phase_elapsed_ms: Option<i64>) {
        self.now_ms = now_ms;
        self.phase_origin_ms = fault_phase_elapsed_ms.map(|elapsed| now_ms - elapsed);
    }

    /// Operations that finished since the last call, in the order they finished.
    pub fn take_finished(&mut self) -> Vec<AdminOpRecord> {
        std::mem::take(&mut self.finished)
    }

    fn maybe_send(&mut self, now_ms: i64) {
        self.now_ms = now_ms;
        self.maybe_send_topics(now_ms);
        self.maybe_start_op(now_ms);
        self.maybe_send_op(now_ms);
    }

    fn maybe_send_topics(&mut self, now_ms: i64) {
        if self.pending_topics.is_empty() || now_ms < self.next_attempt_ms {
            return;
        }
        if let Some((_, sent_ms)) = self.in_flight {
            if now_ms - sent_ms < RETRY_MS * 5 {
                return;
            }
        }
        let correlation_id = self.outbox.request(
            self.controller,
            Request::Controller(ControllerRequest::CreateTopics {
                topics: self.pending_topics.clone(),
            }),
        );
        self.in_flight = Some((correlation_id, now_ms));
        self.next_attempt_ms = now_ms + RETRY_MS;
    }

    /// Starts the next operation once set-up is done, the previous one finished and its time
    /// has come.
    fn maybe_start_op(&mut self, now_ms: i64) {
        if self.running.is_some() || !self.pending_topics.is_empty() {
            return;
        }
        let Some(origin) = self.phase_origin_ms else {
            return;
        };
        if self
            .timeline
            .front()
            .is_some_and(|op| now_ms >= origin + op.at_ms)
        {
            let op = self.timeline.pop_front().expect("checked above");
            self.running = Some(Running::new(op, now_ms - origin, now_ms));
        }
    }

    fn maybe_send_op(&mut self, now_ms: i64) {
        let Some(running) = self.running.as_mut() else {
            return;
        };
        match running.in_flight {
            Some((_, sent_ms)) if now_ms - sent_ms < REQUEST_TIMEOUT_MS => return,
            Some(_) => {
                // Given up: the request or its answer is lost, or the controller is down.
                running.unanswered += 1;
                running.in_flight = None;
            }
            None if now_ms < running.next_attempt_ms => return,
            None => {}
        }
        let any_broker = (!self.brokers.is_empty())
            .then(|| self.brokers[running.attempts as usize % self.brokers.len()]);
        let at_broker = any_broker
            .and_then(|broker| Some((broker, running.op.broker_request(&running.pending_topics)?)));
        let (to, request) = match (&running.op.action, any_broker) {
            (AdminAction::DeleteRecords { .. }, Some(broker)) => {
                running.next_records_request(broker)
            }
            _ => at_broker
                .unwrap_or_else(|| (self.controller, running.op.request(&running.pending_topics))),
        };
        let correlation_id = self.outbox.request(to, request);
        running.requests.push(correlation_id);
        running.in_flight = Some((correlation_id, now_ms));
        running.attempts += 1;
    }

    fn handle_create_topics(&mut self, correlation_id: u64, results: Vec<(String, ErrorCode)>) {
        if self.in_flight.map(|(id, _)| id) != Some(correlation_id) {
            return;
        }
        self.in_flight = None;
        for (name, error) in results {
            // Created now, or by an earlier attempt whose answer was lost.
            if error.is_none() || error == ErrorCode::TopicAlreadyExists {
                self.pending_topics.retain(|topic| topic.name != name);
            }
        }
    }

    /// An answer to the running operation's attempt (answers to attempts already given up
    /// are ignored, as a client that closed the request would).
    fn handle_op_answer(
        &mut self,
        now_ms: i64,
        from: NodeId,
        correlation_id: u64,
        error: ErrorCode,
        results: Vec<(String, ErrorCode)>,
        described: Vec<String>,
    ) {
        let Some(running) = self.running.as_mut() else {
            return;
        };
        let Some((id, sent_ms)) = running.in_flight else {
            return;
        };
        if id != correlation_id {
            return;
        }
        let finished_ms = now_ms - self.phase_origin_ms.unwrap_or(now_ms);
        if let Some(mut outcome) = running.answer(now_ms, finished_ms, error, results, described) {
            outcome.answered_by = Some(from);
            outcome.final_attempt_ms = now_ms - sent_ms;
            let running = self.running.take().expect("matched above");
            self.finished.push(AdminOpRecord {
                op: running.op,
                outcome: Some(outcome),
            });
        }
    }
}

impl AdminClient {
    /// The topic of the running operation when it is an `alter_topic_configs`.
    fn running_topic_configs(&self) -> Option<String> {
        let running = self.running.as_ref()?;
        match &running.op.action {
            AdminAction::AlterTopicConfigs { topics, .. } => topics.first().cloned(),
            _ => None,
        }
    }

    /// A Metadata (`Err`) or DeleteRecords (`Ok`) answer of a running DeleteRecords.
    fn handle_records_answer(
        &mut self,
        now_ms: i64,
        correlation_id: u64,
        answer: Result<
            Vec<(TopicPartition, ErrorCode, Offset)>,
            Vec<mirrorsim::protocol::TopicMetadata>,
        >,
    ) {
        let origin = self.phase_origin_ms.unwrap_or(now_ms);
        let Some(running) = self.running.as_mut() else {
            return;
        };
        if running.in_flight.map(|(id, _)| id) != Some(correlation_id) {
            return;
        }
        let outcome = match answer {
            Err(topics) => {
                running.records_metadata(now_ms, &topics);
                // Every topic unknown: nothing left to do.
                if running.record_leaders.is_empty()
                    && running.results.len() == running.op.topics().len()
                {
                    running.pending_topics.clear();
                    Some(running.outcome(ErrorCode::None, now_ms - origin, Vec::new()))
                } else {
                    None
                }
            }
            Ok(results) => running.records_answer(now_ms, now_ms - origin, results),
        };
        if let Some(outcome) = outcome {
            let running = self.running.take().expect("matched above");
            self.finished.push(AdminOpRecord {
                op: running.op,
                outcome: Some(outcome),
            });
        }
    }
}

impl Node for AdminClient {
    fn node_id(&self) -> NodeId {
        self.node_id
    }

    fn handle_message(&mut self, now_ms: i64, envelope: Envelope) {
        let from = envelope.from;
        if let Message::Response(correlation_id, response) = envelope.message {
            match response {
                Response::Controller(ControllerResponse::CreateTopics { results }) => {
                    // The topics declared at the start, or a `create_topics` operation's.
                    let results: Vec<(String, ErrorCode)> = results
                        .into_iter()
                        .map(|(name, error, _)| (name, error))
                        .collect();
                    self.handle_create_topics(correlation_id, results.clone());
                    self.handle_op_answer(
                        now_ms,
                        from,
                        correlation_id,
                        ErrorCode::None,
                        results,
                        Vec::new(),
                    );
                }
                Response::Controller(ControllerResponse::IncrementalAlterConfigs { error })
                    if self.running_topic_configs().is_some() =>
                {
                    // A topic's configs: the error is the topic's (retried while retriable).
                    let topic = self.running_topic_configs().expect("guarded");
                    self.handle_op_answer(
                        now_ms,
                        from,
                        correlation_id,
                        ErrorCode::None,
                        vec![(topic, error)],
                        Vec::new(),
                    );
                }
                Response::Controller(ControllerResponse::CreateMirror { error })
                | Response::Controller(ControllerResponse::IncrementalAlterConfigs { error })
                | Response::Controller(ControllerResponse::CreateAcls { error })
                | Response::Controller(ControllerResponse::DeleteAcls { error })
                | Response::Mirror(MirrorResponse::DeleteMirror { error }) => {
                    self.handle_op_answer(
                        now_ms,
                        from,
                        correlation_id,
                        error,
                        Vec::new(),
                        Vec::new(),
                    );
                }
                Response::Controller(ControllerResponse::AlterMirrorTopics { error, results })
                | Response::Mirror(MirrorResponse::AddTopicsToMirror { error, results }) => {
                    self.handle_op_answer(now_ms, from, correlation_id, error, results, Vec::new());
                }
                Response::Mirror(MirrorResponse::RecoverMirrorTopics {
                    error,
                    results,
                    recovered,
                }) => {
                    let described = recovered
                        .iter()
                        .map(|tp| format!("{tp}=RECOVERED"))
                        .collect();
                    self.handle_op_answer(now_ms, from, correlation_id, error, results, described);
                }
                Response::Mirror(MirrorResponse::DescribeMirror { error, partitions }) => {
                    let described = partitions.iter().map(describe_line).collect();
                    if let Some(running) = self.running.as_mut() {
                        running.caught_up = partitions
                            .iter()
                            .filter(|description| description.lag == Some(0))
                            .map(|description| {
                                (
                                    description.topic_partition.clone(),
                                    description.source_last_stable_offset.0,
                                )
                            })
                            .collect();
                    }
                    self.handle_op_answer(
                        now_ms,
                        from,
                        correlation_id,
                        error,
                        Vec::new(),
                        described,
                    );
                }
                Response::Cluster(ClusterResponse::DeleteTopics { results })
                | Response::Cluster(ClusterResponse::CreatePartitions { results }) => {
                    self.handle_op_answer(
                        now_ms,
                        from,
                        correlation_id,
                        ErrorCode::None,
                        results,
                        Vec::new(),
                    );
                }
                Response::Cluster(ClusterResponse::Metadata { topics, .. }) => {
                    self.handle_records_answer(now_ms, correlation_id, Err(topics));
                }
                Response::Replica(ReplicaResponse::DeleteRecords { results }) => {
                    self.handle_records_answer(now_ms, correlation_id, Ok(results));
                }
                _ => {}
            }
        }
        self.maybe_send(now_ms);
    }

    fn handle_timeout(&mut self, now_ms: i64) {
        self.maybe_send(now_ms);
    }

    fn poll_timeout(&self) -> Option<i64> {
        if !self.pending_topics.is_empty() {
            return Some(self.next_attempt_ms);
        }
        if let Some(running) = &self.running {
            return Some(match running.in_flight {
                Some((_, sent_ms)) => sent_ms + REQUEST_TIMEOUT_MS,
                None => running.next_attempt_ms,
            });
        }
        let next = self.timeline.front()?;
        Some(match self.phase_origin_ms {
            Some(origin) => origin + next.at_ms,
            None => self.now_ms + PHASE_POLL_MS,
        })
    }

    fn take_outbox(&mut self) -> Vec<Envelope> {
        self.outbox.take()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use mirrorsim::protocol::ClientKind;

    const B: ClusterIndex = ClusterIndex(1);
    const ADMIN: NodeId = NodeId::Client(B, ClientKind::Admin, 1);
    const CONTROLLER: NodeId = NodeId::Controller(B);

    fn op(index: usize, at_ms: i64, action: AdminAction) -> AdminOp {
        let kind = match &action {
            AdminAction::CreateMirror { .. } => AdminOpKind::CreateMirror,
            AdminAction::AlterMirror { .. } => AdminOpKind::AlterMirror,
            AdminAction::AlterTopics { .. } => AdminOpKind::AddTopics,
            AdminAction::RecoverTopics { .. } => AdminOpKind::RecoverTopics,
            AdminAction::DeleteMirror => AdminOpKind::DeleteMirror,
            AdminAction::DescribeMirror => AdminOpKind::DescribeMirror,
            AdminAction::DeleteRecords { .. } => AdminOpKind::DeleteRecords,
            AdminAction::DeleteTopics { .. } => AdminOpKind::DeleteTopics,
            AdminAction::CreatePartitions { .. } => AdminOpKind::CreatePartitions,
            AdminAction::CreateTopics { .. } => AdminOpKind::CreateTopics,
            AdminAction::AlterTopicConfigs { .. } => AdminOpKind::AlterTopicConfigs,
            AdminAction::Acls { .. } => AdminOpKind::CreateAcls,
        };
        AdminOp {
            index,
            cluster: B,
            kind,
            at_ms,
            mirror: "m".into(),
            action,
        }
    }

    fn add(topics: &[&str]) -> AdminAction {
        AdminAction::AlterTopics {
            operation: MirrorTopicOperation::Add,
            topics: topics.iter().map(|t| t.to_string()).collect(),
            include: Vec::new(),
        }
    }

    /// A client past set-up whose fault phase started at local time 1000.
    fn client(timeline: Vec<AdminOp>) -> AdminClient {
        let mut client = AdminClient::new(ADMIN, CONTROLLER, Vec::new(), timeline, 1_000);
        client.set_clock(1_000, Some(0));
        client
    }

    /// Every request the client queued, with its correlation id.
    fn sent(client: &mut AdminClient) -> Vec<(u64, Request)> {
        client
            .take_outbox()
            .into_iter()
            .map(|envelope| {
                assert_eq!(envelope.to, CONTROLLER);
                match envelope.message {
                    Message::Request(id, request) => (id, request),
                    Message::Response(..) => panic!("an admin client only sends requests"),
                }
            })
            .collect()
    }

    fn answer(client: &mut AdminClient, now_ms: i64, correlation_id: u64, response: Response) {
        client.handle_message(
            now_ms,
            Envelope {
                from: CONTROLLER,
                principal: None,
                connection: 0,
                to: ADMIN,
                message: Message::Response(correlation_id, response),
            },
        );
    }

    fn finished_outcome(client: &mut AdminClient) -> AdminOutcome {
        let mut finished = client.take_finished();
        assert_eq!(finished.len(), 1, "one operation finished");
        finished
            .remove(0)
            .outcome
            .expect("finished with an outcome")
    }

    #[test]
    fn admin_op_waits_for_the_fault_phase_and_its_time() {
        let mut client = AdminClient::new(
            ADMIN,
            CONTROLLER,
            Vec::new(),
            vec![op(0, 100, AdminAction::DeleteMirror)],
            500,
        );
        // Before the fault phase the client only looks again shortly.
        assert_eq!(client.poll_timeout(), Some(510));
        client.handle_timeout(510);
        assert!(sent(&mut client).is_empty());
        client.set_clock(1_000, Some(0));
        assert_eq!(client.poll_timeout(), Some(1_100));
        client.handle_timeout(1_099);
        assert!(sent(&mut client).is_empty());
        client.handle_timeout(1_100);
        let requests = sent(&mut client);
        assert!(matches!(
            requests.as_slice(),
            [(_, Request::Mirror(MirrorRequest::DeleteMirror { name }))] if name == "m"
        ));
    }

    #[test]
    fn admin_retries_unanswered_and_not_controller_attempts_then_keeps_a_final_refusal() {
        let mut client = client(vec![op(
            0,
            0,
            AdminAction::CreateMirror {
                configs: vec![(BOOTSTRAP_SERVERS.into(), "a-broker-1".into())],
            },
        )]);
        client.handle_timeout(1_000);
        let [(first, _)] = sent(&mut client)[..] else {
            panic!("one attempt")
        };
        // No answer within the request timeout: sent again.
        assert_eq!(client.poll_timeout(), Some(1_000 + REQUEST_TIMEOUT_MS));
        client.handle_timeout(2_000);
        let [(second, _)] = sent(&mut client)[..] else {
            panic!("a second attempt")
        };
        // The abandoned attempt's late answer is ignored.
        answer(
            &mut client,
            2_001,
            first,
            Response::Controller(ControllerResponse::CreateMirror {
                error: ErrorCode::None,
            }),
        );
        assert!(client.take_finished().is_empty());
        answer(
            &mut client,
            2_005,
            second,
            Response::Controller(ControllerResponse::CreateMirror {
                error: ErrorCode::NotController,
            }),
        );
        assert!(sent(&mut client).is_empty(), "backs off first");
        assert_eq!(client.poll_timeout(), Some(2_005 + RETRY_BACKOFF_MS));
        client.handle_timeout(2_205);
        let [(third, _)] = sent(&mut client)[..] else {
            panic!("a third attempt")
        };
        answer(
            &mut client,
            2_210,
            third,
            Response::Controller(ControllerResponse::CreateMirror {
                error: ErrorCode::ClusterMirrorAlreadyExists,
            }),
        );
        let outcome = finished_outcome(&mut client);
        assert_eq!(outcome.error, ErrorCode::ClusterMirrorAlreadyExists);
        assert_eq!(
            (outcome.started_ms, outcome.finished_ms),
            (0, 1_210),
            "times from the start of the fault phase"
        );
        assert_eq!((outcome.attempts, outcome.unanswered), (3, 1));
        assert_eq!(client.poll_timeout(), None, "nothing left to do");
    }

    #[test]
    fn admin_resends_only_topics_with_retriable_errors() {
        let mut client = client(vec![op(0, 0, add(&["x", "y", "z"]))]);
        client.handle_timeout(1_000);
        let [(first, _)] = sent(&mut client)[..] else {
            panic!("one attempt")
        };
        answer(
            &mut client,
            1_010,
            first,
            Response::Controller(ControllerResponse::AlterMirrorTopics {
                error: ErrorCode::None,
                results: vec![
                    ("x".into(), ErrorCode::None),
                    ("y".into(), ErrorCode::RequestTimedOut),
                    // Final: the controller knows which topics exist.
                    ("z".into(), ErrorCode::UnknownTopicOrPartition),
                ],
            }),
        );
        assert!(client.take_finished().is_empty());
        client.handle_timeout(1_010 + RETRY_BACKOFF_MS);
        let requests = sent(&mut client);
        let [(second, Request::Controller(ControllerRequest::AlterMirrorTopics { topics, .. }))] =
            &requests[..]
        else {
            panic!("a second AlterMirrorTopics: {requests:?}")
        };
        assert_eq!(topics, &["y".to_string()]);
        answer(
            &mut client,
            1_300,
            *second,
            Response::Controller(ControllerResponse::AlterMirrorTopics {
                error: ErrorCode::None,
                results: vec![("y".into(), ErrorCode::InvalidClusterMirrorState)],
            }),
        );
        let outcome = finished_outcome(&mut client);
        assert_eq!(outcome.error, ErrorCode::None);
        assert_eq!(
            outcome.topics,
            vec![
                ("x".to_string(), ErrorCode::None),
                ("y".to_string(), ErrorCode::InvalidClusterMirrorState),
                ("z".to_string(), ErrorCode::UnknownTopicOrPartition),
            ],
            "in the operation's topic order"
        );
        assert_eq!(
            outcome.topic_error("z"),
            Some(ErrorCode::UnknownTopicOrPartition)
        );
        // y's RequestTimedOut may hide its addition: the refusal that followed may be the
        // first attempt's own effect, and the outcome says so.
        assert_eq!((outcome.attempts, outcome.unanswered), (2, 1));
        assert_eq!(outcome.timed_out_answers, 1);
    }

    #[test]
    fn admin_runs_one_operation_at_a_time_in_order() {
        let mut client = client(vec![
            op(0, 0, add(&["x"])),
            op(1, 0, AdminAction::DeleteMirror),
        ]);
        client.handle_timeout(1_000);
        let requests = sent(&mut client);
        let [(first, Request::Controller(ControllerRequest::AlterMirrorTopics { .. }))] =
            requests[..]
        else {
            panic!("only the first operation: {requests:?}")
        };
        client.handle_timeout(1_500);
        assert!(sent(&mut client).is_empty(), "the second waits");
        answer(
            &mut client,
            1_600,
            first,
            Response::Controller(ControllerResponse::AlterMirrorTopics {
                error: ErrorCode::ClusterMirrorNotFound,
                results: Vec::new(),
            }),
        );
        let outcome = finished_outcome(&mut client);
        assert_eq!(outcome.error, ErrorCode::ClusterMirrorNotFound);
        assert!(outcome.topics.is_empty());
        let requests = sent(&mut client);
        assert!(
            matches!(
                requests[..],
                [(_, Request::Mirror(MirrorRequest::DeleteMirror { .. }))]
            ),
            "the second starts as the first finishes: {requests:?}"
        );
    }

    #[test]
    fn admin_timeline_names_the_source_brokers_in_bootstrap_servers() {
        let text = r#"
duration_ms = 1000
[[clusters]]
brokers = 3
[[clusters]]
brokers = 1
[[admin.create_mirror]]
at_ms = 10
cluster = "b"
mirror = "m"
source = "a"
configs = { "request.timeout.ms" = "2", "mirror.fetch.wait.max.ms" = "1" }
"#;
        let scenario = Scenario::parse(Path::new("t.toml"), text).unwrap();
        let ops = timeline(&scenario);
        assert_eq!(ops.len(), 1);
        assert_eq!((ops[0].cluster, ops[0].at_ms), (B, 10));
        assert_eq!(
            ops[0].action,
            AdminAction::CreateMirror {
                configs: vec![
                    (
                        "bootstrap.servers".into(),
                        "a-broker-1,a-broker-2,a-broker-3".into()
                    ),
                    ("mirror.fetch.wait.max.ms".into(), "1".into()),
                    ("request.timeout.ms".into(), "2".into()),
                ]
            }
        );
    }
}
