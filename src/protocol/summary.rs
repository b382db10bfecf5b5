//! One-line summaries of messages and metadata records, for traces (`mirrorsim replay`).
//!
//! Contract:
//! - [`Message::summary`] returns a value whose `Display` is a single line: the kind and the
//!   correlation id (`Produce#17`, `ProduceResponse#17`), then the fields a reader needs.
//! - Success is implied: an error code is shown only when it is not `None`.
//! - Nothing grows without bound: a list shows its first [`MAX_ITEMS`] items and then
//!   `+N more`, and a record batch shows its header ([`RecordBatch`]'s `Display`), never its
//!   bytes. Topic ids are cut to their first 8 hex digits (`id:1a2b3c4d`).
//! - A summary borrows the message and formats only when displayed, so building one is free;
//!   callers that may not print (a simulation run) pay nothing.
//!
//! The `Debug` forms stay as derived (complete, for tests and assertions); these summaries
//! leave out what a timeline reader does not need (e.g. record keys, group metadata strings).

use std::fmt;

use crate::metadata::{MetadataRecord, PartitionRecord};
use crate::record::{ControlRecordType, RecordBatch};

use super::parts::{FetchPartitionResponse, MirrorPartitionStatus};
use super::{Acks, BrokerId, ErrorCode, Message, ProducerId, Request, Response, TopicId};
use super::{
    ClusterRequest, ClusterResponse, ControllerRequest, ControllerResponse, CoordinatorRequest,
    CoordinatorResponse, MirrorRequest, MirrorResponse, ReplicaRequest, ReplicaResponse,
};

/// How many items of a list a summary shows before `+N more`.
pub const MAX_ITEMS: usize = 4;

impl Message {
    /// A one-line summary for traces; see the module doc.
    pub fn summary(&self) -> MessageSummary<'_> {
        MessageSummary(self)
    }
}

/// See [`Message::summary`].
pub struct MessageSummary<'a>(&'a Message);

impl fmt::Display for MessageSummary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Message::Request(correlation_id, request) => {
                write!(f, "{}#{correlation_id}", request.kind())?;
                request_fields(f, request)
            }
            Message::Response(correlation_id, response) => {
                write!(f, "{}#{correlation_id}", response.kind())?;
                response_fields(f, response)
            }
        }
    }
}

/// A partition record with its topic's name when the caller knows it (a metadata image
/// does; a FetchMetadata response carries only ids).
pub struct PartitionSummary<'a> {
    /// The record.
    pub record: &'a PartitionRecord,
    /// The topic's name, if known.
    pub topic: Option<&'a str>,
}

impl fmt::Display for PartitionSummary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let record = self.record;
        match self.topic {
            Some(name) => write!(f, "{name}-{}", record.partition)?,
            None => write!(f, "{}-{}", ShortId(record.topic_id), record.partition)?,
        }
        match record.leader {
            Some(leader) => write!(f, " leader={leader}")?,
            None => f.write_str(" leader=none")?,
        }
        write!(
            f,
            " leader_epoch={} isr={} replicas={} partition_epoch={}",
            record.leader_epoch,
            Brokers(&record.isr),
            Brokers(&record.replicas),
            record.partition_epoch
        )
    }
}

impl fmt::Display for MetadataRecord {
    /// One line per record, e.g. `FenceBroker 2 broker_epoch=14`; partitions as
    /// [`PartitionSummary`] without the topic's name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RegisterBroker {
                broker_id,
                broker_epoch,
                incarnation,
            } => write!(
                f,
                "RegisterBroker {broker_id} broker_epoch={broker_epoch} incarnation={incarnation}"
            ),
            Self::FenceBroker {
                broker_id,
                broker_epoch,
            } => write!(f, "FenceBroker {broker_id} broker_epoch={broker_epoch}"),
            Self::UnfenceBroker {
                broker_id,
                broker_epoch,
            } => write!(f, "UnfenceBroker {broker_id} broker_epoch={broker_epoch}"),
            Self::Topic { name, topic_id } => write!(f, "Topic {name} {}", ShortId(*topic_id)),
            Self::RemoveTopic { topic_id } => write!(f, "RemoveTopic {}", ShortId(*topic_id)),
            Self::Partition(record) => write!(
                f,
                "Partition {}",
                PartitionSummary {
                    record,
                    topic: None
                }
            ),
            Self::ProducerIds {
                broker_id,
                next_producer_id,
                ..
            } => write!(
                f,
                "ProducerIds broker={broker_id} next_producer_id={next_producer_id}"
            ),
            Self::Config {
                resource,
                name,
                value,
            } => write!(
                f,
                "Config {resource:?} {name}={}",
                value.as_deref().unwrap_or("<deleted>")
            ),
            Self::Acl(binding) => write!(f, "Acl {binding:?}"),
            Self::RemoveAcl(binding) => write!(f, "RemoveAcl {binding:?}"),
        }
    }
}

/// A topic id cut to its first 8 hex digits: enough to tell topics apart in one run.
struct ShortId(TopicId);

impl fmt::Display for ShortId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "id:{:08x}", (self.0 .0 >> 96) as u32)
    }
}

/// Broker ids as `[1,2,3]` (a replica set is never long, so it is shown whole).
struct Brokers<'a>(&'a [BrokerId]);

impl fmt::Display for Brokers<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (index, broker) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{broker}")?;
        }
        f.write_str("]")
    }
}

/// Writes ` name=[a, b, +N more]`, each item by `item`, at most [`MAX_ITEMS`] of them.
fn list<T>(
    f: &mut fmt::Formatter<'_>,
    name: &str,
    items: &[T],
    mut item: impl FnMut(&mut fmt::Formatter<'_>, &T) -> fmt::Result,
) -> fmt::Result {
    write!(f, " {name}=[")?;
    for (index, value) in items.iter().take(MAX_ITEMS).enumerate() {
        if index > 0 {
            f.write_str(", ")?;
        }
        item(f, value)?;
    }
    if items.len() > MAX_ITEMS {
        write!(f, ", +{} more", items.len() - MAX_ITEMS)?;
    }
    f.write_str("]")
}

/// Writes a list of displayable items.
fn display_list<T: fmt::Display>(
    f: &mut fmt::Formatter<'_>,
    name: &str,
    items: &[T],
) -> fmt::Result {
    list(f, name, items, |f, item| write!(f, "{item}"))
}

/// Writes ` error=X` unless `error` is success.
fn error(f: &mut fmt::Formatter<'_>, error: ErrorCode) -> fmt::Result {
    if error.is_none() {
        Ok(())
    } else {
        write!(f, " error={error:?}")
    }
}

/// Writes ` replica=N` for a follower or ` consumer` for a client.
fn fetcher(f: &mut fmt::Formatter<'_>, replica_id: Option<BrokerId>) -> fmt::Result {
    match replica_id {
        Some(replica) => write!(f, " replica={replica}"),
        None => f.write_str(" consumer"),
    }
}

fn request_fields(f: &mut fmt::Formatter<'_>, request: &Request) -> fmt::Result {
    match request {
        Request::Controller(request) => request_fields_controller(f, request),
        Request::Replica(request) => request_fields_replica(f, request),
        Request::Coordinator(request) => request_fields_coordinator(f, request),
        Request::Mirror(request) => request_fields_mirror(f, request),
        Request::Cluster(request) => request_fields_cluster(f, request),
    }
}

fn request_fields_controller(
    f: &mut fmt::Formatter<'_>,
    request: &ControllerRequest,
) -> fmt::Result {
    match request {
        ControllerRequest::BrokerRegistration {
            broker_id,
            incarnation,
        } => write!(f, " broker={broker_id} incarnation={incarnation}"),
        ControllerRequest::BrokerHeartbeat {
            broker_id,
            broker_epoch,
            metadata_offset,
        } => write!(
            f,
            " broker={broker_id} broker_epoch={broker_epoch} metadata_offset={metadata_offset}"
        ),
        ControllerRequest::FetchMetadata {
            from_offset,
            max_records,
            max_wait_ms,
        } => write!(
            f,
            " from={from_offset} max={max_records} max_wait={max_wait_ms}ms"
        ),
        ControllerRequest::AlterPartition {
            broker_id,
            topic_id,
            partition,
            leader_epoch,
            partition_epoch,
            new_isr,
            ..
        } => write!(
            f,
            " {}-{partition} leader={broker_id} leader_epoch={leader_epoch} partition_epoch={partition_epoch} isr={}",
            ShortId(*topic_id),
            Brokers(new_isr)
        ),
        ControllerRequest::BumpLeaderEpochs {
            broker_id,
            partitions,
            ..
        } => {
            write!(f, " broker={broker_id}")?;
            list(f, "above", partitions, |f, (id, partition, epoch)| {
                write!(f, "{}-{partition}>{epoch}", ShortId(*id))
            })
        }
        ControllerRequest::AllocateProducerIds {
            broker_id,
            broker_epoch,
        } => write!(f, " broker={broker_id} broker_epoch={broker_epoch}"),
        ControllerRequest::CreateTopics { topics } => list(f, "topics", topics, |f, topic| {
            write!(
                f,
                "{} partitions={} rf={}",
                topic.name, topic.partitions, topic.replication_factor
            )
        }),
        ControllerRequest::IncrementalAlterConfigs { resource, changes } => {
            write!(f, " {resource:?}")?;
            list(f, "changes", changes, |f, (name, value)| {
                write!(f, "{name}={}", value.as_deref().unwrap_or("<delete>"))
            })
        }
        ControllerRequest::CreateAcls { bindings } | ControllerRequest::DeleteAcls { bindings } => {
            write!(f, " bindings={}", bindings.len())
        }
        ControllerRequest::ListMirrors { filter } => {
            if !filter.names.is_empty() {
                write!(f, " names={}", filter.names.join(","))?;
            }
            if !filter.source_cluster_ids.is_empty() {
                write!(f, " sources={}", filter.source_cluster_ids.join(","))?;
            }
            if !filter.desired_states.is_empty() {
                write!(f, " states={:?}", filter.desired_states)?;
            }
            Ok(())
        }
        ControllerRequest::GrowMirrorTopics { mirror, topics } => {
            write!(f, " mirror={mirror}")?;
            list(f, "topics", topics, |f, (topic, count)| {
                write!(f, "{topic}:{count}")
            })
        }
        ControllerRequest::CreateMirror { name, configs } => {
            write!(f, " mirror={name}")?;
            list(f, "configs", configs, |f, (k, v)| write!(f, "{k}={v}"))
        }
        ControllerRequest::AlterMirrorTopics {
            mirror,
            operation,
            topics,
            checked_stopped,
            include_patterns,
        } => {
            write!(f, " {operation:?} mirror={mirror}")?;
            display_list(f, "topics", topics)?;
            if !include_patterns.is_empty() {
                display_list(f, "include", include_patterns)?;
            }
            if checked_stopped.is_empty() {
                return Ok(());
            }
            list(f, "checked_stopped", checked_stopped, |f, (topic, mirror)| {
                write!(f, "{topic}@{mirror}")
            })
        }
    }
}

fn request_fields_replica(f: &mut fmt::Formatter<'_>, request: &ReplicaRequest) -> fmt::Result {
    match request {
        ReplicaRequest::Produce {
            acks,
            timeout_ms,
            topic_partition,
            batch,
            transactional_id: _,
            topic_id: _,
        } => {
            let acks = match acks {
                Acks::Leader => "1",
                Acks::All => "all",
            };
            write!(
                f,
                " {topic_partition} acks={acks} timeout={timeout_ms}ms {batch}"
            )
        }
        ReplicaRequest::Fetch {
            replica_id,
            replica_epoch,
            isolation,
            max_wait_ms,
            partitions,
            ..
        } => {
            fetcher(f, *replica_id)?;
            if replica_id.is_some() {
                write!(f, " broker_epoch={replica_epoch}")?;
            }
            write!(f, " isolation={isolation:?} max_wait={max_wait_ms}ms")?;
            list(f, "partitions", partitions, |f, p| {
                write!(
                    f,
                    "{}@{} leader_epoch={} last_fetched_epoch={}",
                    p.topic_partition, p.fetch_offset, p.current_leader_epoch, p.last_fetched_epoch
                )
            })
        }
        ReplicaRequest::OffsetsForLeaderEpoch {
            replica_id,
            partitions,
        } => {
            fetcher(f, *replica_id)?;
            list(f, "partitions", partitions, |f, q| {
                write!(
                    f,
                    "{} epoch={} current_leader_epoch={}",
                    q.topic_partition, q.leader_epoch, q.current_leader_epoch
                )
            })
        }
        ReplicaRequest::ListOffsets {
            isolation,
            partitions,
        } => {
            write!(f, " isolation={isolation:?}")?;
            list(f, "partitions", partitions, |f, q| {
                write!(f, "{} {:?}", q.topic_partition, q.spec)
            })
        }
        ReplicaRequest::WriteTxnMarkers { markers } => list(f, "markers", markers, |f, marker| {
            write!(
                f,
                "{} pid={} epoch={} coordinator_epoch={} on {}",
                ControlRecordType::end_transaction(marker.committed).name(),
                marker.producer_id,
                marker.producer_epoch,
                marker.coordinator_epoch,
                marker.partitions.len()
            )?;
            f.write_str(if marker.partitions.len() == 1 {
                " partition"
            } else {
                " partitions"
            })
        }),
        ReplicaRequest::DeleteRecords { partitions } => {
            list(f, "partitions", partitions, |f, (tp, offset)| {
                write!(f, "{tp} before {offset}")
            })
        }
    }
}

fn request_fields_coordinator(
    f: &mut fmt::Formatter<'_>,
    request: &CoordinatorRequest,
) -> fmt::Result {
    match request {
        CoordinatorRequest::InitProducerId {
            transactional_id,
            producer_id,
            producer_epoch,
            ..
        } => {
            if let Some(id) = transactional_id {
                write!(f, " transactional_id={id}")?;
            }
            write!(f, " pid={producer_id} epoch={producer_epoch}")
        }
        CoordinatorRequest::FindCoordinator { key_type, key } => {
            write!(f, " {key_type:?} key={key}")
        }
        CoordinatorRequest::AddPartitionsToTxn {
            transactional_id,
            producer_id,
            producer_epoch,
            partitions,
            verify_only,
        } => {
            write!(
                f,
                " transactional_id={transactional_id} pid={producer_id} epoch={producer_epoch}"
            )?;
            if *verify_only {
                write!(f, " verify_only")?;
            }
            display_list(f, "partitions", partitions)
        }
        CoordinatorRequest::EndTxn {
            transactional_id,
            producer_id,
            producer_epoch,
            committed,
        } => write!(
            f,
            " {} transactional_id={transactional_id} pid={producer_id} epoch={producer_epoch}",
            ControlRecordType::end_transaction(*committed).name()
        ),
        CoordinatorRequest::ConsumerGroupHeartbeat {
            group_id,
            member_id,
            member_epoch,
            subscribed_topics,
        } => {
            write!(
                f,
                " group={group_id} member={member_id:?} member_epoch={member_epoch}"
            )?;
            match subscribed_topics {
                Some(topics) => display_list(f, "topics", topics),
                None => Ok(()),
            }
        }
        CoordinatorRequest::OffsetCommit {
            group_id,
            member_id,
            member_epoch,
            offsets,
        } => {
            write!(
                f,
                " group={group_id} member={member_id:?} member_epoch={member_epoch}"
            )?;
            list(f, "offsets", offsets, |f, entry| {
                write!(
                    f,
                    "{}={} leader_epoch={}",
                    entry.topic_partition, entry.offset, entry.leader_epoch
                )
            })
        }
        CoordinatorRequest::OffsetFetch {
            group_id,
            partitions,
        } => {
            write!(f, " group={group_id}")?;
            match partitions {
                Some(partitions) => display_list(f, "partitions", partitions),
                None => f.write_str(" partitions=all"),
            }
        }
        CoordinatorRequest::DescribeGroups { group_ids } => display_list(f, "groups", group_ids),
        CoordinatorRequest::ListGroups => Ok(()),
        CoordinatorRequest::ReadMirrorStates {
            coordinator_partition,
            mirror,
            partitions,
        } => {
            write!(
                f,
                " mirror={mirror} coordinator_partition={coordinator_partition}"
            )?;
            list(f, "partitions", partitions, |f, id| {
                write!(f, "{}-{}", ShortId(id.topic_id), id.partition)
            })
        }
        CoordinatorRequest::WriteMirrorStates {
            coordinator_partition,
            mirror,
            writes,
        } => {
            write!(
                f,
                " mirror={mirror} coordinator_partition={coordinator_partition}"
            )?;
            list(f, "writes", writes, |f, write| {
                write!(f, "{}-{}", ShortId(write.id.topic_id), write.id.partition)?;
                if let Some(state) = write.state {
                    write!(f, " {state}")?;
                }
                write!(
                    f,
                    " leader_epoch={} state_epoch={}",
                    write.leader_epoch, write.state_epoch
                )?;
                if let Some((epoch, offset)) = write.last_mirrored {
                    write!(f, " last_mirrored={epoch}@{offset}")?;
                }
                if let Some(message) = &write.error_message {
                    write!(f, " failure={message:?}")?;
                }
                Ok(())
            })
        }
        CoordinatorRequest::DeleteMirrorStates {
            coordinator_partition,
            mirror,
        } => write!(
            f,
            " mirror={mirror} coordinator_partition={coordinator_partition}"
        ),
    }
}

fn request_fields_mirror(f: &mut fmt::Formatter<'_>, request: &MirrorRequest) -> fmt::Result {
    match request {
        MirrorRequest::DeleteMirror { name } | MirrorRequest::DescribeMirror { name } => {
            write!(f, " mirror={name}")
        }
        MirrorRequest::AddTopicsToMirror {
            mirror,
            topics,
            include_patterns,
        } => {
            write!(f, " mirror={mirror}")?;
            display_list(f, "topics", topics)?;
            if include_patterns.is_empty() {
                return Ok(());
            }
            display_list(f, "include", include_patterns)
        }
        MirrorRequest::RecoverMirrorTopics { mirror, topics } => {
            write!(f, " mirror={mirror}")?;
            display_list(f, "topics", topics)
        }
        MirrorRequest::LastMirroredEpochLookup {
            requester,
            topic,
            partition,
            ..
        } => write!(f, " {topic}-{partition} requester={requester}"),
    }
}

fn request_fields_cluster(f: &mut fmt::Formatter<'_>, request: &ClusterRequest) -> fmt::Result {
    match request {
        ClusterRequest::Metadata { topics } => match topics {
            Some(topics) => display_list(f, "topics", topics),
            None => f.write_str(" topics=all"),
        },
        ClusterRequest::DescribeAcls => Ok(()),
        ClusterRequest::DescribeConfigs { resources } => {
            list(f, "resources", resources, |f, r| write!(f, "{r:?}"))
        }
        ClusterRequest::DeleteTopics { topics } => display_list(f, "topics", topics),
        ClusterRequest::CreatePartitions { topics } => {
            list(f, "topics", topics, |f, (topic, count)| {
                write!(f, "{topic} to {count}")
            })
        }
    }
}

fn response_fields(f: &mut fmt::Formatter<'_>, response: &Response) -> fmt::Result {
    match response {
        Response::Controller(response) => response_fields_controller(f, response),
        Response::Replica(response) => response_fields_replica(f, response),
        Response::Coordinator(response) => response_fields_coordinator(f, response),
        Response::Mirror(response) => response_fields_mirror(f, response),
        Response::Cluster(response) => response_fields_cluster(f, response),
    }
}

fn response_fields_controller(
    f: &mut fmt::Formatter<'_>,
    response: &ControllerResponse,
) -> fmt::Result {
    match response {
        ControllerResponse::BrokerRegistration {
            error: code,
            broker_epoch,
        } => {
            error(f, *code)?;
            write!(f, " broker_epoch={broker_epoch}")
        }
        ControllerResponse::BrokerHeartbeat {
            error: code,
            is_fenced,
        } => {
            error(f, *code)?;
            if *is_fenced {
                f.write_str(" fenced")?;
            }
            Ok(())
        }
        ControllerResponse::FetchMetadata {
            records,
            end_offset,
        } => {
            write!(f, " end_offset={end_offset}")?;
            list(f, "records", records, |f, (offset, record)| {
                write!(f, "{offset}: {record}")
            })
        }
        ControllerResponse::AlterPartition {
            error: code,
            partition,
        } => {
            error(f, *code)?;
            match partition {
                Some(record) => write!(
                    f,
                    " {}",
                    PartitionSummary {
                        record,
                        topic: None
                    }
                ),
                None => Ok(()),
            }
        }
        ControllerResponse::AllocateProducerIds {
            error: code,
            first_producer_id,
            count,
        } => {
            error(f, *code)?;
            write!(f, " first={first_producer_id} count={count}")
        }
        ControllerResponse::CreateTopics { results } => {
            list(f, "results", results, |f, (topic, code, _)| {
                write!(f, "{topic}={code:?}")
            })
        }
        ControllerResponse::IncrementalAlterConfigs { error: code }
        | ControllerResponse::CreateAcls { error: code }
        | ControllerResponse::DeleteAcls { error: code }
        | ControllerResponse::CreateMirror { error: code } => error(f, *code),
        ControllerResponse::BumpLeaderEpochs {
            error: code,
            partitions,
        } => {
            error(f, *code)?;
            list(
                f,
                "partitions",
                partitions,
                |f, (id, partition, code, epoch)| {
                    write!(f, "{}-{partition} leader_epoch={epoch}", ShortId(*id))?;
                    error(f, *code)
                },
            )
        }
        ControllerResponse::AlterMirrorTopics {
            error: code,
            results,
        }
        | ControllerResponse::GrowMirrorTopics {
            error: code,
            results,
        } => {
            error(f, *code)?;
            named_errors(f, results)
        }
        ControllerResponse::ListMirrors {
            error: code,
            mirrors,
        } => {
            error(f, *code)?;
            list(f, "mirrors", mirrors, |f, mirror| {
                write!(f, "{} topics={}", mirror.name, mirror.topics.len())
            })
        }
    }
}

fn response_fields_replica(f: &mut fmt::Formatter<'_>, response: &ReplicaResponse) -> fmt::Result {
    match response {
        ReplicaResponse::Produce {
            error: code,
            base_offset,
            log_start_offset,
            log_append_time_ms,
        } => {
            error(f, *code)?;
            write!(
                f,
                " base_offset={base_offset} log_start_offset={log_start_offset}"
            )?;
            match log_append_time_ms {
                Some(time) => write!(f, " log_append_time={time}"),
                None => Ok(()),
            }
        }
        ReplicaResponse::Fetch { partitions } => {
            list(f, "partitions", partitions, fetched_partition)
        }
        ReplicaResponse::OffsetsForLeaderEpoch { partitions } => {
            list(f, "partitions", partitions, |f, answer| {
                write!(f, "epoch={} end={}", answer.leader_epoch, answer.end_offset)?;
                error(f, answer.error)
            })
        }
        ReplicaResponse::ListOffsets { partitions } => {
            list(f, "partitions", partitions, |f, answer| {
                write!(
                    f,
                    "offset={} leader_epoch={}",
                    answer.offset, answer.leader_epoch
                )?;
                error(f, answer.error)
            })
        }
        ReplicaResponse::WriteTxnMarkers { results } => {
            list(f, "results", results, |f, (pid, errors)| {
                let failed = errors.iter().filter(|(_, code)| !code.is_none()).count();
                write!(f, "pid={pid} partitions={} failed={failed}", errors.len())
            })
        }
        ReplicaResponse::DeleteRecords { results } => {
            list(f, "results", results, |f, (tp, code, low)| {
                write!(f, "{tp} log_start={low}")?;
                error(f, *code)
            })
        }
    }
}

fn response_fields_coordinator(
    f: &mut fmt::Formatter<'_>,
    response: &CoordinatorResponse,
) -> fmt::Result {
    match response {
        CoordinatorResponse::InitProducerId {
            error: code,
            producer_id,
            producer_epoch,
        } => {
            error(f, *code)?;
            write!(f, " pid={producer_id} epoch={producer_epoch}")
        }
        CoordinatorResponse::FindCoordinator {
            error: code,
            coordinator,
        } => {
            error(f, *code)?;
            match coordinator {
                Some(node) => write!(f, " coordinator={node}"),
                None => Ok(()),
            }
        }
        CoordinatorResponse::AddPartitionsToTxn { results }
        | CoordinatorResponse::OffsetCommit { results } => partition_errors(f, results),
        CoordinatorResponse::EndTxn {
            error: code,
            producer_id,
            producer_epoch,
        } => {
            error(f, *code)?;
            // Only transaction version 2 answers with the producer's next id and epoch; a
            // version-1 answer reads as it always did.
            if *producer_id == ProducerId::NONE {
                return Ok(());
            }
            write!(f, " pid={producer_id} epoch={producer_epoch}")
        }
        CoordinatorResponse::DeleteMirrorStates { error: code } => error(f, *code),
        CoordinatorResponse::ConsumerGroupHeartbeat {
            error: code,
            member_id,
            member_epoch,
            assignment,
            ..
        } => {
            error(f, *code)?;
            write!(f, " member={member_id:?} member_epoch={member_epoch}")?;
            match assignment {
                Some(partitions) => display_list(f, "assignment", partitions),
                None => Ok(()),
            }
        }
        CoordinatorResponse::OffsetFetch {
            error: code,
            offsets,
        } => {
            error(f, *code)?;
            list(f, "offsets", offsets, |f, committed| {
                write!(
                    f,
                    "{}={} leader_epoch={}",
                    committed.topic_partition, committed.offset, committed.leader_epoch
                )?;
                error(f, committed.error)
            })
        }
        CoordinatorResponse::DescribeGroups {
            error: code,
            groups,
        } => {
            error(f, *code)?;
            list(f, "groups", groups, |f, group| {
                write!(
                    f,
                    "{} {} members={}",
                    group.group_id,
                    group.state,
                    group.members.len()
                )
            })
        }
        CoordinatorResponse::ListGroups {
            error: code,
            groups,
        } => {
            error(f, *code)?;
            display_list(f, "groups", groups)
        }
        CoordinatorResponse::ReadMirrorStates {
            error: code,
            coordinator_epoch,
            partitions,
        } => {
            error(f, *code)?;
            write!(f, " coordinator_epoch={coordinator_epoch}")?;
            list(f, "partitions", partitions, mirror_status)
        }
        CoordinatorResponse::WriteMirrorStates {
            error: code,
            partitions,
        } => {
            error(f, *code)?;
            list(f, "partitions", partitions, |f, (id, code, state_epoch)| {
                write!(
                    f,
                    "{}-{} state_epoch={state_epoch}",
                    ShortId(id.topic_id),
                    id.partition
                )?;
                error(f, *code)
            })
        }
    }
}

fn response_fields_mirror(f: &mut fmt::Formatter<'_>, response: &MirrorResponse) -> fmt::Result {
    match response {
        MirrorResponse::DeleteMirror { error: code } => error(f, *code),
        MirrorResponse::AddTopicsToMirror {
            error: code,
            results,
        } => {
            error(f, *code)?;
            named_errors(f, results)
        }
        MirrorResponse::RecoverMirrorTopics {
            error: code,
            results,
            recovered,
        } => {
            error(f, *code)?;
            named_errors(f, results)?;
            list(f, "recovered", recovered, |f, tp| write!(f, "{tp}"))
        }
        MirrorResponse::LastMirroredEpochLookup {
            error: code,
            last_mirrored_epoch,
            last_mirrored_offset,
            ..
        } => {
            error(f, *code)?;
            write!(
                f,
                " last_mirrored_epoch={last_mirrored_epoch} last_mirrored_offset={last_mirrored_offset}"
            )
        }
        MirrorResponse::DescribeMirror {
            error: code,
            partitions,
        } => {
            error(f, *code)?;
            list(f, "partitions", partitions, |f, description| {
                write!(
                    f,
                    "{} {}",
                    description.topic_partition, description.status.state
                )?;
                if let Some(lag) = description.lag {
                    write!(f, " lag={lag}")?;
                }
                error(f, description.status.error)
            })
        }
    }
}

fn response_fields_cluster(f: &mut fmt::Formatter<'_>, response: &ClusterResponse) -> fmt::Result {
    match response {
        ClusterResponse::Metadata { brokers, topics } => {
            write!(f, " brokers={}", Brokers(brokers))?;
            list(f, "topics", topics, |f, topic| {
                write!(f, "{}", topic.name)?;
                error(f, topic.error)?;
                for record in topic.partitions.iter().take(MAX_ITEMS) {
                    match record.leader {
                        Some(leader) => write!(
                            f,
                            " {}:leader={leader}@{}",
                            record.partition, record.leader_epoch
                        )?,
                        None => write!(f, " {}:leader=none", record.partition)?,
                    }
                }
                if topic.partitions.len() > MAX_ITEMS {
                    write!(f, " +{} more", topic.partitions.len() - MAX_ITEMS)?;
                }
                Ok(())
            })
        }
        ClusterResponse::DescribeAcls {
            error: code,
            bindings,
        } => {
            error(f, *code)?;
            write!(f, " bindings={}", bindings.len())
        }
        ClusterResponse::DescribeConfigs { results } => list(f, "results", results, |f, result| {
            write!(f, "{:?}", result.resource)?;
            error(f, result.error)?;
            write!(f, " configs={}", result.configs.len())
        }),
        ClusterResponse::DeleteTopics { results }
        | ClusterResponse::CreatePartitions { results } => named_errors(f, results),
    }
}

/// One partition of a fetch answer: offsets, a divergence, and the batches it carries.
fn fetched_partition(f: &mut fmt::Formatter<'_>, p: &FetchPartitionResponse) -> fmt::Result {
    write!(
        f,
        "{} hw={} lso={} log_start={}",
        p.topic_partition, p.high_watermark, p.last_stable_offset, p.log_start_offset
    )?;
    error(f, p.error)?;
    if let Some(diverging) = p.diverging_epoch {
        write!(
            f,
            " diverging_epoch={}@{}",
            diverging.epoch, diverging.end_offset
        )?;
    }
    if let Some(aborted) = &p.aborted_transactions {
        if !aborted.is_empty() {
            write!(f, " aborted_txns={}", aborted.len())?;
        }
    }
    batches(f, &p.batches)
}

/// Batches as their headers; the first and the last are what a reader needs to see the range,
/// so a long answer shows those two and how many lie between.
fn batches(f: &mut fmt::Formatter<'_>, batches: &[RecordBatch]) -> fmt::Result {
    match batches {
        [] => Ok(()),
        [one] => write!(f, " {one}"),
        [first, last] => write!(f, " {first} {last}"),
        [first, .., last] => write!(f, " {first} +{} batches {last}", batches.len() - 2),
    }
}

fn mirror_status(f: &mut fmt::Formatter<'_>, status: &MirrorPartitionStatus) -> fmt::Result {
    write!(
        f,
        "{}-{} {} leader_epoch={} state_epoch={}",
        ShortId(status.id.topic_id),
        status.id.partition,
        status.state,
        status.leader_epoch,
        status.state_epoch
    )?;
    if let Some((epoch, offset)) = status.last_mirrored {
        write!(f, " last_mirrored={epoch}@{offset}")?;
    }
    error(f, status.error)
}

/// `(partition, error)` pairs: only the failed ones are named.
fn partition_errors(
    f: &mut fmt::Formatter<'_>,
    results: &[(super::TopicPartition, ErrorCode)],
) -> fmt::Result {
    let failed: Vec<_> = results.iter().filter(|(_, code)| !code.is_none()).collect();
    write!(f, " partitions={}", results.len())?;
    if failed.is_empty() {
        return Ok(());
    }
    list(f, "failed", &failed, |f, (tp, code)| {
        write!(f, "{tp}={code:?}")
    })
}

/// `(topic, error)` pairs, each with its outcome.
fn named_errors(f: &mut fmt::Formatter<'_>, results: &[(String, ErrorCode)]) -> fmt::Result {
    list(f, "results", results, |f, (topic, code)| {
        write!(f, "{topic}={code:?}")
    })
}

#[cfg(test)]
#[path = "summary_tests.rs"]
mod tests;
