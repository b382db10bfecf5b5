//! Mirroring's liveness at the end of the heal phase, and the topic admin requests a broker
//! forwards.

use super::*;
use mirrorsim::common::Offset;

/// Liveness of mirroring after the heal phase (part of `liveness`): the leader of every
/// partition of a mirror topic is in the state the topic's `mirror.name` asks for (MIRRORING,
/// PAUSED or STOPPED), and a MIRRORING one has copied everything its source has committed
/// below the source's last stable offset. A partition whose source mirrors the topic back
/// from here (a mirror loop) may instead retry between PREPARING and FAILED; the second
/// value counts those (mark `liveness-mirror-loop-retrying`).
///
/// A partition FAILED (or retrying PREPARING's lookup, which the source refuses for a topic it
/// does not have) whose source cluster has no such topic at the end (an operator deleted it,
/// or it never existed there) has nothing to mirror and says so, as KIP-1279 wants
/// (non-retryable, spec §7 item 4): the third value counts those (mark
/// `liveness-source-topic-missing`). A partition failed as deleted whose source topic exists
/// is reported like any other FAILED one.
///
/// A partition FAILED after its source topic ended the life it mirrored (deleted and created
/// again under another topic id since this destination first appended from it: the checkers
/// saw the source's controller change the id, `checks::topics`) has nothing left to mirror
/// either, as KIP-1279 wants (non-retryable): counted in the fourth value (mark
/// `liveness-source-topic-recreated`).
///
/// A partition FAILED because its source lost records it had served (spec §4.7: the first set
/// of `source_losses`, partitions whose leader reported it) waits for an operator, reported,
/// as the KIP wants: it is counted (mark `liveness-source-lost-records`), not reported, if
/// the source's partition did lose records in the run (the second set: a lost committed tail
/// or a mirroring cut, by cluster); a FAILED on a source that lost nothing is a false alarm,
/// reported like any other FAILED partition.
///
/// A partition FAILED on a silent source, the silence begun while the faults ran, that then
/// ran out of attempts (`awaiting_operator`: the checkers saw it wait for an operator since)
/// waits for a RecoverMirrorTopics, as the KIP wants of an exhausted budget: counted (mark
/// `liveness-failed-awaiting-operator`), not reported. A silence begun in the heal phase, or
/// a partition with attempts left that has not retried, is reported.
pub fn check_mirror_liveness(
    time_ms: i64,
    controllers: &[ControllerView<'_>],
    brokers: &[BrokerView<'_>],
    source_losses: (&PartitionSet, &PartitionSet),
    awaiting_operator: &PartitionSet,
    source_life_ended: impl Fn(ClusterIndex, &TopicPartition, ClusterIndex) -> bool,
) -> (Vec<Violation>, LivenessExcuses) {
    let (failed_on_source_loss, lost_on) = source_losses;
    use mirrorsim::mirror::DesiredState;
    let mut out = Vec::new();
    let mut excused = LivenessExcuses::default();
    for controller in controllers {
        let image = controller.controller.image();
        for (tp, record) in image.all_partitions() {
            let Some(desired) = image.mirror_desired_state(&tp.topic) else {
                continue;
            };
            let Some(view) = record.leader.and_then(|leader| {
                crate::checks::view::broker_view(brokers, controller.cluster, leader)
            }) else {
                continue; // The general liveness check reports a partition without a leader.
            };
            let Some(partition) = view.partition(&tp) else {
                continue;
            };
            let expected = match desired {
                DesiredState::Mirror { .. } => MirrorState::Mirroring,
                DesiredState::Paused { .. } => MirrorState::Paused,
                DesiredState::Stopped { .. } => MirrorState::Stopped,
            };
            if expected == MirrorState::Mirroring
                && mirrors_back(controllers, controller.cluster, view, &tp.topic)
                && matches!(
                    partition.mirror_state,
                    MirrorState::Preparing | MirrorState::Failed
                )
            {
                // A mirror loop: the source mirrors this topic from here, so PREPARING's
                // last-mirrored-epoch lookup is refused ("the source still mirrors this
                // partition from here") and the partition retries between FAILED and
                // PREPARING for as long as both wishes stand, as the KIP wants. A generated
                // admin timeline can end with both in place.
                excused.loops += 1;
                continue;
            }
            if matches!(
                partition.mirror_state,
                MirrorState::Failed | MirrorState::Preparing
            ) && expected != MirrorState::Stopped
                && crate::checks::mirror::mirror_source_in(image, &tp.topic).is_some_and(|source| {
                    controllers.iter().any(|view| {
                        view.cluster == source
                            && !view
                                .controller
                                .image()
                                .topic_ids
                                .contains_key(tp.topic.as_str())
                    })
                })
            {
                excused.source_missing += 1;
                continue;
            }
            if partition.mirror_state == MirrorState::Failed
                && expected != MirrorState::Stopped
                && crate::checks::mirror::mirror_source_in(image, &tp.topic)
                    .is_some_and(|source| source_life_ended(controller.cluster, &tp, source))
            {
                excused.source_recreated += 1;
                continue;
            }
            if partition.mirror_state == MirrorState::Failed
                && expected != MirrorState::Stopped
                && failed_on_source_loss.contains(&(controller.cluster, tp.clone()))
                && crate::checks::mirror::mirror_source_in(image, &tp.topic)
                    .is_some_and(|source| lost_on.contains(&(source, tp.clone())))
            {
                excused.source_lost_records += 1;
                continue;
            }
            if partition.mirror_state == MirrorState::Failed
                && expected != MirrorState::Stopped
                && awaiting_operator.contains(&(controller.cluster, tp.clone()))
            {
                excused.awaiting_operator += 1;
                continue;
            }
            let problem = if partition.mirror_state != expected {
                Some(format!(
                    "{} is {} but mirror.name asks for {expected}",
                    view.broker.node_id(),
                    partition.mirror_state
                ))
            } else if expected == MirrorState::Mirroring {
                source_stable_end(controllers, brokers, view, &tp)
                    .filter(|stable| partition.log.log_end_offset() < Offset(*stable))
                    .map(|stable| {
                        format!(
                            "{} mirrored up to {} of the source's {stable}",
                            view.broker.node_id(),
                            partition.log.log_end_offset()
                        )
                    })
            } else {
                None
            };
            if let Some(problem) = problem {
                out.push(Violation {
                    invariant: Invariant::Liveness,
                    cluster: Some(controller.cluster),
                    topic_partition: Some(tp.clone()),
                    detail: problem,
                    time_ms,
                });
            }
        }
    }
    out.extend(topics_short_of_source_partitions(time_ms, controllers));
    (out, excused)
}

/// Spec §4.7 at the end of the heal phase (part of `liveness`): a mirror partition left
/// MIRRORING whose source lost committed data (an unclean election there, or its
/// only replica's power loss, on a topic that is not durable: `lost_from` gives the offset
/// from which the source lost it) holds only what the source holds now: the batches it had
/// fetched above that offset were cut (ULE_RECOVERY, where the topic supports unclean
/// elections) or the partition went FAILED keeping them (not judged here: the liveness rule
/// above accepts a FAILED one only where the source did lose records). `mirror-prefix` leaves
/// such batches unjudged while the fetcher has not met the loss yet; this rule ends that
/// excuse, so a destination that goes on mirroring over records its source no longer has is
/// caught. Returns the violations and how many partitions it judged.
pub fn check_source_loss_kept(
    time_ms: i64,
    design: mirrorsim::mirror::MirrorDesign,
    controllers: &[ControllerView<'_>],
    brokers: &[BrokerView<'_>],
    lost_from: impl Fn(ClusterIndex, &TopicPartition) -> Option<i64>,
) -> (Vec<Violation>, u64) {
    let mut out = Vec::new();
    let mut judged = 0;
    for controller in controllers {
        for (tp, record) in controller.controller.image().all_partitions() {
            let Some(view) = record.leader.and_then(|leader| {
                crate::checks::view::broker_view(brokers, controller.cluster, leader)
            }) else {
                continue;
            };
            let Some(partition) = view.partition(&tp) else {
                continue;
            };
            if partition.mirror_state != MirrorState::Mirroring {
                continue; // A paused partition fetches nothing: it meets the loss once resumed.
            }
            let Some(source) = source_cluster(view, &tp.topic) else {
                continue;
            };
            let Some(kept) = lost_from(source, &tp) else {
                continue;
            };
            let Some((_, source_log)) = current_leader(controllers, brokers, source, &tp) else {
                continue; // The general liveness check reports a partition without a leader.
            };
            judged += 1;
            let log = &partition.log;
            let from = kept
                .max(log.log_start_offset().0)
                .max(source_log.log_start_offset().0);
            let mut checked_to = from;
            if let Some(detail) =
                super::prefix::prefix_mismatch(design, log, source_log, from, &mut checked_to)
            {
                out.push(Violation {
                    invariant: Invariant::Liveness,
                    cluster: Some(controller.cluster),
                    topic_partition: Some(tp.clone()),
                    detail: format!(
                        "{} is MIRRORING after its source cluster {source} lost committed data \
                         from offset {kept}, and {detail}: it holds records its source no longer \
                         has without being FAILED or recovering (spec §4.7)",
                        NodeId::Broker(controller.cluster, view.broker.broker_id()),
                    ),
                    time_ms,
                });
            }
        }
    }
    (out, judged)
}

/// Partitions by cluster.
pub type PartitionSet = BTreeSet<(ClusterIndex, TopicPartition)>;

/// What mirroring's liveness accepted rather than reported, counted for the coverage marks.
#[derive(Debug, Default, Clone, Copy)]
pub struct LivenessExcuses {
    /// Partitions of a mirror loop retrying between PREPARING and FAILED.
    pub loops: u64,
    /// FAILED or PREPARING partitions whose source cluster has no such topic.
    pub source_missing: u64,
    /// Partitions FAILED because their source lost records it had served.
    pub source_lost_records: u64,
    /// FAILED partitions whose source topic ended the life they mirrored.
    pub source_recreated: u64,
    /// FAILED partitions out of attempts after a source silence the faults caused.
    pub awaiting_operator: u64,
}

/// Mirror topics (mirrored or paused) with fewer partitions than their source topic at the end:
/// what the source writes to the others is never mirrored (issue #17: the periodic sync grows
/// the destination).
fn topics_short_of_source_partitions(
    time_ms: i64,
    controllers: &[ControllerView<'_>],
) -> Vec<Violation> {
    use mirrorsim::coordinator::partition_count;
    use mirrorsim::mirror::DesiredState;
    let mut out = Vec::new();
    for controller in controllers {
        let image = controller.controller.image();
        for topic in image.topic_ids.keys() {
            let Some(DesiredState::Mirror { .. } | DesiredState::Paused { .. }) =
                image.mirror_desired_state(topic)
            else {
                continue;
            };
            let Some(source) = crate::checks::mirror::mirror_source_in(image, topic) else {
                continue;
            };
            let Some(source_image) = controllers
                .iter()
                .find(|view| view.cluster == source)
                .map(|view| view.controller.image())
            else {
                continue;
            };
            let (have, source_has) = (
                partition_count(image, topic),
                partition_count(source_image, topic),
            );
            if source_has > have {
                out.push(Violation {
                    invariant: Invariant::Liveness,
                    cluster: Some(controller.cluster),
                    topic_partition: None,
                    detail: format!(
                        "{topic} has {have} partitions, its source on {source} {source_has}: \
                         what the source writes to the others is never mirrored"
                    ),
                    time_ms,
                });
            }
        }
    }
    out
}

impl MirrorChecks {
    /// The stored state of `id` in `mirror` on `cluster` (`Unknown` without a record).
    pub(super) fn stored_state(
        &self,
        cluster: ClusterIndex,
        mirror: &str,
        id: &MirrorPartitionId,
    ) -> MirrorState {
        self.stored
            .iter()
            .find(|((c, _, m, i), _)| *c == cluster && m == mirror && i == id)
            .map_or(MirrorState::Unknown, |(_, (state, _, _))| *state)
    }

    /// Before this step's newly committed `__mirror_state` records are read: notes, for each
    /// AddTopicsToMirror forward waiting for its check, the partitions whose stored state in
    /// the mirror it was checked in is STOPPED or absent.
    pub(super) fn note_stopped_before_records(&mut self, controllers: &[ControllerView<'_>]) {
        let mut seen = Vec::new();
        for (cluster, topic, _, mirror) in &self.forwarded_topic_admin {
            let Some(mirror) = mirror else {
                continue;
            };
            let Some(controller) = controllers.iter().find(|view| view.cluster == *cluster) else {
                continue;
            };
            let image = controller.controller.image();
            let Some(topic_id) = image.topic_ids.get(topic) else {
                continue;
            };
            for partition in image.topics[topic_id].partitions.keys() {
                let id = MirrorPartitionId {
                    topic_id: *topic_id,
                    partition: *partition,
                };
                if matches!(
                    self.stored_state(*cluster, mirror, &id),
                    MirrorState::Stopped | MirrorState::Unknown
                ) {
                    seen.push((*cluster, mirror.clone(), id));
                }
            }
        }
        self.stopped_seen.extend(seen);
    }

    /// INV-1 for a DeleteTopics or CreatePartitions of mirror topic `topic` that `node`
    /// forwarded to the controller: every partition's committed state in `__mirror_state`
    /// (read by `check_state_records` this step) must be STOPPED, or absent (never mirrored).
    /// The committed state, not the leaders' own: a leader learns that its STOPPED was
    /// committed one answer later than the coordinator knows it.
    ///
    /// The same for an AddTopicsToMirror naming `topic` checked in the mirror `checked_in`
    /// that removed it, whose stop must have finished: until then the partition's log is
    /// still that mirror's. The forward's read came before this step's records, so a state
    /// that was STOPPED at any point of the step (before them or after one of them) is
    /// taken as the one read; and a topic added back to that same mirror since may have left
    /// STOPPED for PREPARING, as it should.
    pub(super) fn check_forwarded_topic_admin(
        &self,
        time_ms: i64,
        controllers: &[ControllerView<'_>],
        (cluster, topic, checked_in): (ClusterIndex, &str, Option<&str>),
        node: NodeId,
    ) -> Option<Violation> {
        let controller = controllers.iter().find(|view| view.cluster == cluster)?;
        let image = controller.controller.image();
        let current = image.mirror_desired_state(topic);
        let mirror = match checked_in {
            Some(mirror) => {
                let readded = current.as_ref().is_some_and(|desired| {
                    desired.mirror() == mirror
                        && !matches!(desired, mirrorsim::mirror::DesiredState::Stopped { .. })
                });
                if readded {
                    return None;
                }
                mirror.to_owned()
            }
            None => current?.mirror().to_owned(),
        };
        let topic_id = *image.topic_ids.get(topic)?;
        for partition in image.topics.get(&topic_id)?.partitions.keys() {
            let id = MirrorPartitionId {
                topic_id,
                partition: *partition,
            };
            let state = self.stored_state(cluster, &mirror, &id);
            let stopped_this_step =
                checked_in.is_some() && self.stopped_seen.contains(&(cluster, mirror.clone(), id));
            if !matches!(state, MirrorState::Stopped | MirrorState::Unknown) && !stopped_this_step {
                return Some(Violation {
                    invariant: Invariant::ReadOnlyUntilStopped,
                    cluster: Some(cluster),
                    topic_partition: Some(TopicPartition::new(topic, *partition)),
                    detail: match checked_in {
                        None => format!(
                            "{node} forwarded a DeleteTopics or CreatePartitions of mirror \
                             topic {topic} while the partition's committed state is {state}"
                        ),
                        Some(mirror) => format!(
                            "{node} forwarded an AddTopicsToMirror of topic {topic}, removed \
                             by mirror {mirror}, while the partition's committed state there \
                             is {state}"
                        ),
                    },
                    time_ms,
                });
            }
        }
        None
    }
}
