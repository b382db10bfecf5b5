//! Fetch on a leader (followers' and consumers', with the diverging-epoch check and a bounded
//! wait when there is no data), OffsetsForLeaderEpoch and ListOffsets.

use super::{ReplicaContext, ReplicaManager};
use crate::common::MirrorState;
use crate::events::BrokerEvent;
use crate::log::{EpochEndOffset, FetchIsolation, LogDisk, PartitionLog};
use crate::protocol::{
    BrokerId, EpochAnswer, EpochQuery, ErrorCode, FetchPartition, FetchPartitionResponse,
    LeaderEpoch, ListOffsetsAnswer, ListOffsetsQuery, NodeId, Offset, OffsetSpec, ReplicaResponse,
    Response, TopicPartition,
};
use crate::replica::storage::BrokerStorage;
use crate::replica::{LeaderState, Partition};

/// A fetch waiting in purgatory for data (Kafka's `DelayedFetch`): answered once a read of its
/// partitions has something to say, or at its deadline.
#[derive(Debug, Clone)]
pub struct DelayedFetch {
    /// Who asked.
    pub reply_to: NodeId,
    /// Its correlation id.
    pub correlation_id: u64,
    /// The follower fetching; `None` for a consumer.
    pub replica_id: Option<BrokerId>,
    /// How far a consumer may read.
    pub isolation: FetchIsolation,
    /// The answer's size bound.
    pub max_bytes: usize,
    /// The partitions asked for.
    pub partitions: Vec<FetchPartition>,
    /// When it is answered whatever it finds.
    pub deadline_ms: i64,
}

/// A read of a Fetch's partitions.
#[derive(Debug, Clone)]
pub struct FetchRead {
    /// One answer per partition asked, in order.
    pub answers: Vec<FetchPartitionResponse>,
    /// The partitions a follower read from without error or divergence: its progress was
    /// recorded there, so the ISR may grow and the high watermark move.
    pub followed: Vec<TopicPartition>,
}

/// Kafka's current-leader-epoch fencing (kafka-storage.md §4.4).
pub fn check_leader_epoch(requested: LeaderEpoch, local: LeaderEpoch) -> Option<ErrorCode> {
    if requested.is_none() {
        None
    } else if requested < local {
        Some(ErrorCode::FencedLeaderEpoch)
    } else if requested > local {
        Some(ErrorCode::UnknownLeaderEpoch)
    } else {
        None
    }
}

fn error_answer(topic_partition: &TopicPartition, error: ErrorCode) -> FetchPartitionResponse {
    FetchPartitionResponse::error(topic_partition, error)
}

/// A successful read's answer.
fn data_answer(
    topic_partition: &TopicPartition,
    data: crate::log::FetchDataInfo,
) -> FetchPartitionResponse {
    FetchPartitionResponse {
        topic_partition: topic_partition.clone(),
        error: ErrorCode::None,
        high_watermark: data.high_watermark,
        last_stable_offset: data.last_stable_offset,
        log_start_offset: data.log_start_offset,
        diverging_epoch: None,
        aborted_transactions: data.aborted_transactions,
        batches: data.batches,
    }
}

/// Whether a fetch has something to answer now (data, an error or a divergence) rather than
/// waiting in purgatory for data.
pub fn fetch_answer_ready(answers: &[FetchPartitionResponse]) -> bool {
    answers.iter().any(|answer| {
        !answer.batches.is_empty() || !answer.error.is_none() || answer.diverging_epoch.is_some()
    })
}

fn offsets_answer<D: LogDisk>(
    topic_partition: &TopicPartition,
    log: &PartitionLog<D>,
    error: ErrorCode,
) -> FetchPartitionResponse {
    FetchPartitionResponse {
        topic_partition: topic_partition.clone(),
        error,
        high_watermark: log.high_watermark(),
        last_stable_offset: log.last_stable_offset(),
        log_start_offset: log.log_start_offset(),
        diverging_epoch: None,
        aborted_transactions: None,
        batches: Vec::new(),
    }
}

/// The leader's end offset for a fetcher's last fetched epoch (a follower's, or a downstream
/// cluster's mirror fetcher's), for the fetch's divergence check (kafka-storage.md §4.6).
///
/// Kafka's leader always finds the epoch: its own leader epoch enters the cache at the log end
/// when it takes over, and no follower can hold a batch of a later epoch. A KIP-1279 mirror
/// leader keeps no such entry (its cache holds the source's epochs, spec §4.2), and PREPARING
/// truncates the leader's own log, so a follower that missed the truncation (out of the ISR
/// then) can come back with a tail in a local epoch above every epoch left here, e.g. the
/// MIRROR_PID_RESET of an earlier STOPPING. Kafka's cache answers undefined above its latest
/// epoch, and the OFFSET_OUT_OF_RANGE that follows leaves the follower's log as it is once the
/// leader's has grown past it (§4.8): the follower would ask again for ever, or append the
/// source's older epochs onto that tail once the source reaches its epoch. The answer is the one
/// Kafka gives when the leader's epoch starts at its log end: the latest epoch here, ending at
/// the log end, so the follower cuts its tail back to the end of that epoch in its own log.
///
/// A chain's next hop meets the same: it mirrored this cluster's own writes (a local epoch),
/// and this cluster's re-add cut them; an undefined answer made it cut its whole log, records
/// this log still holds among them, and a stop before the refill lost them on that cluster
/// (generated seed 10300000000000916).
pub fn leader_end_offset_for_fetched_epoch<D: LogDisk>(
    log: &PartitionLog<D>,
    last_fetched_epoch: i32,
) -> EpochEndOffset {
    match log.latest_epoch() {
        Some(latest) if latest < LeaderEpoch(last_fetched_epoch) => EpochEndOffset {
            epoch: latest,
            end_offset: log.log_end_offset(),
        },
        _ => log.end_offset_for_epoch(LeaderEpoch(last_fetched_epoch)),
    }
}

impl<S: BrokerStorage> ReplicaManager<S> {
    /// Reads each partition of a Fetch as its leader (see `read_partition`).
    pub fn read_fetch_partitions(
        &mut self,
        context: &mut ReplicaContext<'_>,
        replica_id: Option<BrokerId>,
        isolation: FetchIsolation,
        max_bytes: usize,
        partitions: &[FetchPartition],
    ) -> FetchRead {
        let mut answers = Vec::with_capacity(partitions.len());
        let mut followed = Vec::new();
        for request in partitions {
            let answer = self.read_partition(context, replica_id, isolation, max_bytes, request);
            if replica_id.is_some() && answer.error.is_none() && answer.diverging_epoch.is_none() {
                followed.push(request.topic_partition.clone());
            }
            answers.push(answer);
        }
        FetchRead { answers, followed }
    }

    /// Puts a fetch that found nothing in purgatory.
    pub fn delay_fetch(&mut self, fetch: DelayedFetch) {
        self.delayed_fetches.push(fetch);
    }

    /// Takes every fetch out of purgatory (to read them again).
    pub fn take_delayed_fetches(&mut self) -> Vec<DelayedFetch> {
        std::mem::take(&mut self.delayed_fetches)
    }

    /// One partition of a Fetch, for a follower (`follower` names it) or a consumer (a client,
    /// or a downstream cluster's KIP-1279 mirror fetcher): the leader-epoch check, the
    /// divergence check on the last fetched epoch (KIP-320, kafka-storage.md §4.6; a plain
    /// consumer sends none), then the read. Where the two kinds of fetcher differ, and why:
    /// - a fetched epoch the log cannot place (its epoch cache is empty) is OFFSET_OUT_OF_RANGE
    ///   for a follower, as Kafka answers; a consumer is told it as an undefined diverging
    ///   epoch, which a mirror fetcher takes for "nothing here is the source's history" and
    ///   truncates fully (`mirror::manager`);
    /// - only a follower is fenced at a mirror cut it has not truncated to yet, reads up to
    ///   the log end and has its fetch recorded for the ISR; a consumer reads up to the bound
    ///   its isolation sets;
    /// - a fetch naming a topic id other than its replica's is refused (`UnknownTopicId`).
    fn read_partition(
        &mut self,
        context: &mut ReplicaContext<'_>,
        follower: Option<BrokerId>,
        isolation: FetchIsolation,
        max_bytes: usize,
        request: &FetchPartition,
    ) -> FetchPartitionResponse {
        let topic_partition = &request.topic_partition;
        let (partition, _) = match self.led_partition(topic_partition, request.current_leader_epoch)
        {
            Ok(led) => led,
            Err(error) => return error_answer(topic_partition, error),
        };
        if request.topic_id.is_some_and(|id| id != partition.topic_id) {
            // Fetch v13+: the fetcher means another topic of this name (deleted and created
            // again since it learned the id): nothing here is its history.
            return error_answer(topic_partition, ErrorCode::UnknownTopicId);
        }
        let log = &partition.log;
        if request.last_fetched_epoch.is_some() {
            let end = leader_end_offset_for_fetched_epoch(log, request.last_fetched_epoch.0);
            if end == EpochEndOffset::UNDEFINED && follower.is_some() {
                return offsets_answer(topic_partition, log, ErrorCode::OffsetOutOfRange);
            }
            if end == EpochEndOffset::UNDEFINED
                || end.epoch < request.last_fetched_epoch
                || end.end_offset < request.fetch_offset
            {
                let mut answer = offsets_answer(topic_partition, log, ErrorCode::None);
                answer.diverging_epoch = Some(end);
                self.note_fetched_epoch_above_latest(context, request, follower, end);
                return answer;
            }
        }
        let Some(follower) = follower else {
            return match log.read(request.fetch_offset, max_bytes, isolation, true) {
                Err(_) => offsets_answer(topic_partition, log, ErrorCode::OffsetOutOfRange),
                Ok(data) => data_answer(topic_partition, data),
            };
        };
        if let Some(cut) = partition.mirror_cut_fence(follower, request.fetch_offset) {
            // The epoch check passed, but a mirror cut since this follower's last fetch at
            // or below it may have removed records it holds (Partition::fence_after_mirror_cut).
            let mut answer = offsets_answer(topic_partition, log, ErrorCode::None);
            answer.diverging_epoch = Some(EpochEndOffset {
                epoch: request.last_fetched_epoch,
                end_offset: cut,
            });
            context.events.push(BrokerEvent::MirrorCutFencedFollower {
                topic_partition: topic_partition.clone(),
                follower,
                fetch_offset: request.fetch_offset,
                cut,
            });
            return answer;
        }
        let read = log.read(
            request.fetch_offset,
            max_bytes,
            FetchIsolation::LogEnd,
            true,
        );
        let Ok(data) = read else {
            return offsets_answer(topic_partition, log, ErrorCode::OffsetOutOfRange);
        };
        self.partitions
            .get_mut(topic_partition)
            .expect("led above")
            .record_follower_fetch(follower, request.fetch_offset, context.now_ms);
        data_answer(topic_partition, data)
    }

    /// Notes a fetch answered as diverging at `end`, when `end` is this log's latest epoch
    /// below the one the fetch named ([`BrokerEvent::FetchedEpochAboveLatest`]).
    fn note_fetched_epoch_above_latest(
        &self,
        context: &mut ReplicaContext<'_>,
        request: &FetchPartition,
        follower: Option<BrokerId>,
        end: EpochEndOffset,
    ) {
        if end.epoch.is_some() && end.epoch < request.last_fetched_epoch {
            let latest = self
                .partitions
                .get(&request.topic_partition)
                .and_then(|partition| partition.log.latest_epoch());
            if latest == Some(end.epoch) {
                context.events.push(BrokerEvent::FetchedEpochAboveLatest {
                    topic_partition: request.topic_partition.clone(),
                    follower,
                    last_fetched_epoch: request.last_fetched_epoch,
                    latest: end,
                });
            }
        }
    }

    /// The partition and its leader state when this broker leads it in the epoch a request
    /// names (a negative epoch names none); otherwise the error to answer with.
    pub fn led_partition(
        &self,
        topic_partition: &TopicPartition,
        current_leader_epoch: LeaderEpoch,
    ) -> Result<(&Partition<S::Disk>, &LeaderState), ErrorCode> {
        let partition = self
            .partitions
            .get(topic_partition)
            .ok_or(ErrorCode::UnknownTopicOrPartition)?;
        let state = partition
            .leader_state()
            .ok_or(ErrorCode::NotLeaderOrFollower)?;
        match check_leader_epoch(current_leader_epoch, state.leader_epoch) {
            Some(error) => Err(error),
            None => Ok((partition, state)),
        }
    }

    /// Answers OffsetsForLeaderEpoch as the leader: each epoch's end offset in its log.
    pub fn handle_offsets_for_leader_epoch(
        &self,
        context: &mut ReplicaContext<'_>,
        from: NodeId,
        correlation_id: u64,
        queries: Vec<EpochQuery>,
    ) {
        let partitions = queries
            .iter()
            .map(|query| {
                let undefined = |error| EpochAnswer {
                    error,
                    leader_epoch: LeaderEpoch::NONE,
                    end_offset: Offset::NONE,
                };
                let partition =
                    match self.led_partition(&query.topic_partition, query.current_leader_epoch) {
                        Ok((partition, _)) => partition,
                        Err(error) => return undefined(error),
                    };
                let end = partition.log.end_offset_for_epoch(query.leader_epoch);
                // A consumer validating its position (KIP-320) on a partition that mirrors:
                // the epochs it validates against are the source's.
                let mirroring = matches!(
                    partition.mirror_state,
                    MirrorState::Mirroring | MirrorState::Paused | MirrorState::UleRecovery
                );
                if matches!(from, NodeId::Client(..)) && mirroring {
                    context.events.push(BrokerEvent::ClientEpochValidated {
                        topic_partition: query.topic_partition.clone(),
                        mirror_state: partition.mirror_state,
                    });
                }
                EpochAnswer {
                    error: ErrorCode::None,
                    leader_epoch: end.epoch,
                    end_offset: end.end_offset,
                }
            })
            .collect();
        context.outbox.respond(
            from,
            correlation_id,
            Response::Replica(ReplicaResponse::OffsetsForLeaderEpoch { partitions }),
        );
    }

    /// Answers ListOffsets as the leader (earliest, or latest under the isolation asked).
    pub fn handle_list_offsets(
        &self,
        context: &mut ReplicaContext<'_>,
        from: NodeId,
        correlation_id: u64,
        isolation: FetchIsolation,
        queries: Vec<ListOffsetsQuery>,
    ) {
        let partitions = queries
            .iter()
            .map(|query| self.list_offset(isolation, query))
            .collect();
        context.outbox.respond(
            from,
            correlation_id,
            Response::Replica(ReplicaResponse::ListOffsets { partitions }),
        );
    }

    fn list_offset(
        &self,
        isolation: FetchIsolation,
        query: &ListOffsetsQuery,
    ) -> ListOffsetsAnswer {
        let failed = |error| ListOffsetsAnswer {
            error,
            offset: Offset::NONE,
            leader_epoch: LeaderEpoch::NONE,
        };
        let (partition, state) =
            match self.led_partition(&query.topic_partition, query.current_leader_epoch) {
                Ok(led) => led,
                Err(error) => return failed(error),
            };
        let log = &partition.log;
        let offset = match (query.spec, isolation) {
            (OffsetSpec::Earliest, _) => log.log_start_offset(),
            (OffsetSpec::Latest, FetchIsolation::LogEnd) => log.log_end_offset(),
            (OffsetSpec::Latest, _) if log.high_watermark() < state.leader_epoch_start_offset => {
                // Kafka refuses until the new leader's HW reaches its epoch start (§4.2).
                return failed(ErrorCode::OffsetNotAvailable);
            }
            (OffsetSpec::Latest, FetchIsolation::HighWatermark) => log.high_watermark(),
            (OffsetSpec::Latest, FetchIsolation::TxnCommitted) => log.last_stable_offset(),
        };
        ListOffsetsAnswer {
            error: ErrorCode::None,
            offset,
            leader_epoch: log
                .epoch_cache()
                .epoch_for_offset(offset.max(Offset(0)))
                .unwrap_or(LeaderEpoch::NONE),
        }
    }
}
