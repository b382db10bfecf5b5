//! PREPARING: the last-mirrored-epoch lookup at the source and the cut of the local log
//! to it, then the wait for the replicas to truncate before MIRRORING is persisted.

use super::*;
use crate::protocol::MirrorRequest;

impl MirrorManager {
    // ----- PREPARING -----

    /// The mirror's source cluster view, created on first use.
    pub(super) fn source_cluster(
        &mut self,
        host: &mut impl MirrorHost,
        mirror: &str,
    ) -> Option<&mut SourceCluster> {
        if !self.sources.contains_key(mirror) {
            let bootstrap =
                MirrorDirectory::new(host.image(), host.node_id().cluster()).source_of(mirror)?;
            let metadata = MetadataCache::new(
                &bootstrap,
                SOURCE_METADATA_MAX_AGE_MS,
                MIRROR_RETRY_BACKOFF_MS,
            )
            .ok()?;
            let connection = self.next_connection;
            self.next_connection += 1;
            let source = SourceCluster {
                metadata,
                bootstrap,
                connection,
            };
            self.sources.insert(mirror.to_owned(), source);
        }
        self.sources.get_mut(mirror)
    }

    /// Drops every source connection whose mirror's `bootstrap.servers` changed (or whose
    /// mirror is gone): the next contact makes a new one over the new brokers (spec §3.1,
    /// "connection config changed"; the prototype also removes and re-creates the fetchers,
    /// which here are one request at a time and pick the new connection for the next). A
    /// metadata answer of a dropped connection is ignored; a fetch or lookup answer already
    /// on its way is taken, as the prototype's fetcher thread finishes the fetch it is in.
    pub(super) fn drop_changed_source_connections(&mut self, host: &mut impl MirrorHost) {
        let directory = MirrorDirectory::new(host.image(), host.node_id().cluster());
        let changed: Vec<String> = self
            .sources
            .iter()
            .filter(|(mirror, source)| {
                directory.source_of(mirror).as_ref() != Some(&source.bootstrap)
            })
            .map(|(mirror, _)| mirror.clone())
            .collect();
        for mirror in changed {
            self.sources.remove(&mirror);
            host.lend()
                .events
                .push(BrokerEvent::MirrorSourceConnectionReset { mirror });
        }
    }

    /// The source cluster view of a task's mirror, asked about the task's topic. Without a
    /// usable `bootstrap.servers` the partition fails; with one that names another cluster
    /// than the mirror was created from, it fails for good (spec S-15: the records there are
    /// another history, and only an operator can say the source was meant to move).
    pub(super) fn task_source(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
    ) -> Option<&mut SourceCluster> {
        let mirror = self.tasks[topic_partition].mirror.clone();
        // Checked when a connection is made: one is dropped as soon as `bootstrap.servers`
        // changes, and the recorded id never does (no parsing on every fetch).
        let changed = (!self.sources.contains_key(&mirror))
            .then(|| {
                MirrorDirectory::new(host.image(), host.node_id().cluster())
                    .source_cluster_changed(&mirror)
            })
            .flatten()
            .filter(|_| self.design.checks_source_cluster());
        if let Some((recorded, named)) = changed {
            host.lend()
                .events
                .push(BrokerEvent::MirrorSourceClusterChanged {
                    topic_partition: topic_partition.clone(),
                    recorded: recorded.clone(),
                    named,
                });
            let reason = format!(
                "the source cluster id changed: bootstrap.servers names {}, the mirror was \
                 created from {recorded}",
                named.cluster_id()
            );
            self.fail_mirror_partition(host, now_ms, topic_partition, reason, true);
            return None;
        }
        if self.source_cluster(host, &mirror).is_none() {
            let reason = "the mirror's bootstrap.servers is unusable".to_string();
            self.fail_mirror_partition(host, now_ms, topic_partition, reason, false);
            return None;
        }
        let source = self.sources.get_mut(&mirror).expect("created above");
        source.metadata.add_topic(&topic_partition.topic);
        Some(source)
    }

    pub(super) fn send_lme_lookup(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
    ) {
        if self.fail_if_source_silent(host, now_ms, topic_partition) {
            return;
        }
        self.send_lookup_to_source(host, now_ms, topic_partition, None);
    }

    /// Asks a source broker for this cluster's last mirrored epoch of the task's partition
    /// (for PREPARING, or with `verifies_cut` for `verify_takeover_loss`); the task waits.
    pub(super) fn send_lookup_to_source(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        verifies_cut: Option<Offset>,
    ) {
        let Some(source) = self.task_source(host, now_ms, topic_partition) else {
            return;
        };
        let to = source.metadata.target();
        let request = Request::Mirror(MirrorRequest::LastMirroredEpochLookup {
            requester: host.node_id().cluster(),
            topic: topic_partition.topic.to_string(),
            partition: topic_partition.partition,
            topic_id: self.named_source_topic_id(topic_partition),
        });
        self.task_mut(topic_partition).step = Step::Waiting;
        let what = SentRequest::LmeLookup {
            partition: topic_partition.clone(),
            to,
            verifies_cut,
        };
        self.send_mirror_request(host, now_ms, to, request, what);
    }

    pub(super) fn apply_lme(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        topic_partition: &TopicPartition,
        result: Result<(ErrorCode, (LeaderEpoch, Offset)), ErrorCode>,
        from: NodeId,
    ) {
        self.note_source_answered(now_ms, topic_partition, result.is_ok());
        let (last_mirrored_epoch, last_mirrored_offset) = match result {
            Ok((ErrorCode::None, last_mirrored)) => last_mirrored,
            Ok((ErrorCode::InvalidClusterMirrorState, _)) => {
                let reason = "the source still mirrors this partition from here".to_string();
                self.fail_mirror_partition(host, now_ms, topic_partition, reason, false);
                return;
            }
            Ok((ErrorCode::TopicAuthorizationFailed, _)) => {
                // The lookup's failure is retryable (spec §2.6): access may be granted.
                let reason = self.refused_by_source(host, topic_partition, "Describe");
                self.fail_mirror_partition(host, now_ms, topic_partition, reason, false);
                return;
            }
            Ok(_) | Err(_) => {
                let mirror = self.tasks[topic_partition].mirror.clone();
                if let Some(source) = self.sources.get_mut(&mirror) {
                    source.metadata.rotate_away_from(from);
                }
                self.retry_step_later(now_ms, topic_partition, Step::Act);
                return;
            }
        };
        // From the cut on, the log is to be a prefix of the source's: no more local markers.
        self.task_mut(topic_partition).cut_decided = true;
        let Some(partition) = host.lend().partitions.get_mut(topic_partition) else {
            return;
        };
        let log_end_before = partition.log.log_end_offset();
        let offset_alignment = self.design == MirrorDesign::OffsetAlignment;
        let truncated = if last_mirrored_epoch.is_none() {
            partition
                .log
                .truncate_fully_and_start_at(Offset(0))
                .map(|()| Offset(0))
        } else if offset_alignment {
            // The early KIP's alignment: keep everything below the last mirrored offset,
            // whatever epoch wrote it here.
            let target = last_mirrored_offset.clamp(Offset(0), log_end_before);
            partition.log.truncate_to(target).map(|_| target)
        } else {
            let end = partition.log.end_offset_for_epoch(last_mirrored_epoch);
            let off_by_one = i64::from(
                self.broken
                    .contains(&BrokenSwitch::MirrorLmeTruncationOffByOne),
            );
            let target = if end.end_offset.is_none() {
                Offset(0)
            } else {
                (end.end_offset + off_by_one).min(log_end_before)
            };
            partition.log.truncate_to(target).map(|_| target)
        };
        match truncated {
            Ok(offset) => {
                host.lend().push_truncation(
                    topic_partition,
                    log_end_before,
                    TruncationReason::MirrorLastMirroredEpoch,
                );
                let design = self.design;
                let removed = offset < log_end_before;
                if removed {
                    self.task_mut(topic_partition).own_writes_only = false;
                }
                self.note_cut_removed(topic_partition, removed);
                if design.fences_followers_after_mirror_cut()
                    && (!removed || design.prepare_awaits_every_replica_after_cut())
                {
                    // (`prepare-awaits-isr` keeps the KIP's PREPARING whole: no fence after a
                    // cut that removed records either.)
                    // A cut that removed nothing waits for the ISR only, yet a replica outside
                    // it may hold records the leader never had (a zombie leader's queued
                    // produce, generator seed 169) in an epoch number the mirrored batches
                    // reuse; and the wait after a cut that removed records judges a follower
                    // by its last fetch offset, while the answer to that fetch may carry
                    // records above the cut (generated seed 9970000000000940: the follower
                    // appended them, was paused, and fetched past the cut forever). Fence every
                    // follower at the cut so none rejoins past it.
                    if let Some(partition) = host.lend().partitions.get_mut(topic_partition) {
                        partition.fence_after_mirror_cut();
                    }
                }
                let task = self.task_mut(topic_partition);
                let every_replica = design.prepare_awaits_every_replica_after_cut()
                    && (removed || task.preparing_resumed);
                // A later run of this act (a re-evaluation) cuts nothing: it must still wait
                // for the replicas this cut did not reach.
                task.preparing_resumed |= removed;
                task.step = Step::AwaitTruncation {
                    offset,
                    every_replica,
                    removed,
                    reported: false,
                };
                task.not_before_ms = now_ms;
            }
            Err(error) => {
                self.fail_mirror_partition(
                    host,
                    now_ms,
                    topic_partition,
                    format!("truncation failed: {error}"),
                    false,
                );
            }
        }
    }

    /// Whether every ISR follower's log ends at or below `offset` (they truncated too); every
    /// replica's, not only the ISR's, with `mirror.support.unclean.leader.election=true` or
    /// when `every_replica` (the cut removed records, see
    /// [`MirrorDesign::prepare_awaits_every_replica_after_cut`]).
    pub(super) fn replicas_truncated_to(
        &self,
        host: &impl MirrorHost,
        topic_partition: &TopicPartition,
        offset: Offset,
        every_replica: bool,
    ) -> bool {
        let Some(partition) = host.partitions().get(topic_partition) else {
            return false;
        };
        let Role::Leader(state) = &partition.role else {
            return false;
        };
        let every_replica = every_replica
            || crate::mirror::supports_unclean_mirroring(host.image(), &topic_partition.topic);
        let members = if every_replica {
            &state.replicas
        } else {
            &state.isr
        };
        members
            .iter()
            .filter(|member| **member != host.broker_id())
            .all(|member| {
                state
                    .followers
                    .get(member)
                    .is_some_and(|f| f.log_end_offset.is_some() && f.log_end_offset <= offset)
            })
    }
}
