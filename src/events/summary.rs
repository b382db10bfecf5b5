//! One-line forms of [`BrokerEvent`]s for traces (`mirrorsim replay`): the event's name, the
//! partition, then its fields, e.g. `Truncated orders-0 log_end 42->37 hw_before=37
//! reason=DivergingEpoch`.

use std::fmt;

use super::BrokerEvent;
use crate::record::ControlRecordType;

impl BrokerEvent {
    /// Whether the event is a state change a timeline reader wants (leadership, truncation,
    /// mirror state, admin effects) rather than per-batch detail (appends, duplicates answered,
    /// writes refused).
    pub fn is_state_change(&self) -> bool {
        !matches!(
            self,
            Self::LeaderAppend { .. }
                | Self::MirrorAppend { .. }
                | Self::DuplicateBatch { .. }
                | Self::MirrorWriteRefused { .. }
        )
    }
}

impl fmt::Display for BrokerEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BecameLeader {
                topic_partition,
                leader_epoch,
                start_offset,
                high_watermark,
            } => write!(
                f,
                "BecameLeader {topic_partition} leader_epoch={leader_epoch} start_offset={start_offset} hw={high_watermark}"
            ),
            Self::BecameFollower {
                topic_partition,
                leader,
                leader_epoch,
                log_end_offset,
                high_watermark,
            } => {
                write!(f, "BecameFollower {topic_partition} leader=")?;
                match leader {
                    Some(leader) => write!(f, "{leader}")?,
                    None => f.write_str("none")?,
                }
                write!(
                    f,
                    " leader_epoch={leader_epoch} log_end={log_end_offset} hw={high_watermark}"
                )
            }
            Self::Truncated {
                topic_partition,
                from_log_end_offset,
                to_log_end_offset,
                high_watermark_before,
                reason,
            } => write!(
                f,
                "Truncated {topic_partition} log_end {from_log_end_offset}->{to_log_end_offset} hw_before={high_watermark_before} reason={reason:?}"
            ),
            Self::LeaderAppend {
                topic_partition,
                first_offset,
                last_offset,
                leader_epoch,
                mirror_state,
                // Not printed: the trace (and its hash) stays as it was.
                control: _,
            } => {
                write!(
                    f,
                    "LeaderAppend {topic_partition} {first_offset}..={last_offset} leader_epoch={leader_epoch}"
                )?;
                match mirror_state {
                    Some(state) => write!(f, " mirror_state={state}"),
                    None => Ok(()),
                }
            }
            Self::MirrorAppend {
                topic_partition,
                first_offset,
                last_offset,
            } => write!(
                f,
                "MirrorAppend {topic_partition} {first_offset}..={last_offset}"
            ),
            Self::RecordsDeleted {
                topic_partition,
                log_start_offset,
                mirror_state,
            } => {
                write!(
                    f,
                    "RecordsDeleted {topic_partition} log_start={log_start_offset}"
                )?;
                match mirror_state {
                    Some(state) => write!(f, " mirror_state={state}"),
                    None => Ok(()),
                }
            }
            Self::TopicAdminForwarded { topics } => {
                write!(f, "TopicAdminForwarded topics={}", topics.join(","))
            }
            Self::AddTopicsForwarded {
                topics,
                checked_stopped,
            } => {
                write!(f, "AddTopicsForwarded topics={}", topics.join(","))?;
                for (topic, mirror) in checked_stopped {
                    write!(f, " checked={topic}@{mirror}")?;
                }
                Ok(())
            }
            Self::MirrorTransition {
                topic_partition,
                from,
                to,
            } => write!(f, "MirrorTransition {topic_partition} {from}->{to}"),
            Self::MirrorOffsetSynced {
                group_id,
                topic_partition,
                offset,
                source_offset,
                ..
            } => write!(
                f,
                "MirrorOffsetSynced group={group_id} {topic_partition} offset={offset} source_offset={source_offset}"
            ),
            Self::MirrorOffsetSyncDeferred {
                group_id,
                topic_partition,
                source_offset,
                source_epoch,
                destination_epoch,
            } => write!(
                f,
                "MirrorOffsetSyncDeferred group={group_id} {topic_partition} source_offset={source_offset} source_epoch={source_epoch} destination_epoch={destination_epoch}"
            ),
            Self::CoordinatorLoaded {
                topic_partition,
                leader_epoch,
            } => write!(
                f,
                "CoordinatorLoaded {topic_partition} leader_epoch={leader_epoch}"
            ),
            Self::FollowerHighWatermarkLowered {
                topic_partition,
                from,
                to,
                leader,
            } => write!(
                f,
                "FollowerHighWatermarkLowered {topic_partition} hw {from}->{to} leader={leader}"
            ),
            Self::TxnMarkerRefused {
                topic_partition,
                committed,
                mirror_state,
            } => {
                let marker = ControlRecordType::end_transaction(*committed).name();
                write!(
                    f,
                    "TxnMarkerRefused {topic_partition} {marker} error=ReadOnlyTopic mirror_state={mirror_state}"
                )
            }
            Self::TxnMarkerAdmittedBeforeCut {
                topic_partition,
                committed,
                mirror_state,
            } => {
                let marker = ControlRecordType::end_transaction(*committed).name();
                write!(
                    f,
                    "TxnMarkerAdmittedBeforeCut {topic_partition} {marker} appended, the log holds only local writes mirror_state={mirror_state}"
                )
            }
            Self::TxnMarkerMoot {
                topic_partition,
                committed,
                mirror_state,
            } => {
                let marker = ControlRecordType::end_transaction(*committed).name();
                write!(
                    f,
                    "TxnMarkerMoot {topic_partition} {marker} acknowledged without an append mirror_state={mirror_state}"
                )
            }
            Self::MirrorEpochBelowLocal {
                topic_partition,
                offset,
                truncated_to,
            } => write!(
                f,
                "MirrorEpochBelowLocal {topic_partition} fetch_offset={offset} truncated_to={truncated_to}"
            ),
            Self::MirrorTombstonesRefused { delete_id } => write!(
                f,
                "MirrorTombstonesRefused delete={delete_id} (the controller's answer stands)"
            ),
            Self::StopOfOwnWrites {
                topic_partition,
                after_cut_decided,
            } => write!(
                f,
                "StopOfOwnWrites {topic_partition} (nothing removed or mirrored: no LSO cut, no \
                 reset{})",
                if *after_cut_decided {
                    "; PREPARING's cut had removed nothing"
                } else {
                    ""
                }
            ),
            Self::StopMarkerRestored {
                topic_partition,
                producer_id,
                committed,
                cut_from,
                offset,
            } => write!(
                f,
                "StopMarkerRestored {topic_partition} producer={producer_id} {} {cut_from}->{offset} (cut from above the LSO)",
                if *committed { "COMMIT" } else { "ABORT" }
            ),
            Self::AlterPartitionRetried {
                topic_partition,
                isr,
            } => write!(
                f,
                "AlterPartitionRetried {topic_partition} isr={isr:?} (unanswered, still pending)"
            ),
            Self::MirrorEpochFenced {
                topic_partition,
                batch_epoch,
                leader_epoch,
                minimum,
            } => write!(
                f,
                "MirrorEpochFenced {topic_partition} batch_epoch={batch_epoch} leader_epoch={leader_epoch} bump_above={minimum}"
            ),
            Self::MirrorCutEpochBump {
                topic_partition,
                leader_epoch,
            } => write!(
                f,
                "MirrorCutEpochBump {topic_partition} bump_above={leader_epoch} (a cut removed records)"
            ),
            Self::MirrorTailChecked {
                topic_partition,
                base_offset,
                source_epoch,
            } => write!(
                f,
                "MirrorTailChecked {topic_partition} batch@{base_offset} source_epoch={source_epoch} (equal)"
            ),
            Self::MirrorTailDiverged {
                topic_partition,
                base_offset,
                source_epoch,
            } => write!(
                f,
                "MirrorTailDiverged {topic_partition} batch@{base_offset} source_epoch={source_epoch} (differs; cut)"
            ),
            Self::MirrorTailSearchedBack {
                topic_partition,
                base_offset,
                next_check,
                source_epoch,
            } => write!(
                f,
                "MirrorTailSearchedBack {topic_partition} batch@{base_offset} source_epoch={source_epoch} (differs; next check from {next_check})"
            ),
            Self::MirrorSourceLostRecords {
                topic_partition,
                cut_to,
                confirmed_end,
                followed,
            } => write!(
                f,
                "MirrorSourceLostRecords {topic_partition} cut_to={cut_to} confirmed_end={confirmed_end} ({})",
                if *followed { "followed: unclean elections supported" } else { "FAILED" }
            ),
            Self::MirrorTakeoverCutChecked {
                topic_partition,
                cut_to,
                last_mirrored_offset,
                own_history,
            } => write!(
                f,
                "MirrorTakeoverCutChecked {topic_partition} cut_to={cut_to} last_mirrored_offset={last_mirrored_offset} ({})",
                if *own_history { "own history: followed" } else { "a loss at the source" }
            ),
            Self::MirrorSourceConnectionReset { mirror } => {
                write!(f, "MirrorSourceConnectionReset mirror={mirror}")
            }
            Self::MirrorSourceClusterChanged {
                topic_partition,
                recorded,
                named,
            } => write!(
                f,
                "MirrorSourceClusterChanged {topic_partition} recorded={recorded} named={}",
                named.cluster_id()
            ),
            Self::MirrorCutFencedFollower {
                topic_partition,
                follower,
                fetch_offset,
                cut,
            } => {
                write!(
                    f,
                    "MirrorCutFencedFollower {topic_partition} follower={follower} fetch_offset={fetch_offset} cut={cut}"
                )
            }
            Self::FetchedEpochAboveLatest {
                topic_partition,
                follower,
                last_fetched_epoch,
                latest,
            } => {
                let fetcher = match follower {
                    Some(follower) => format!("follower={follower}"),
                    None => "consumer".to_owned(),
                };
                write!(
                    f,
                    "FetchedEpochAboveLatest {topic_partition} {fetcher} last_fetched_epoch={last_fetched_epoch} diverging={}@{}",
                    latest.epoch, latest.end_offset
                )
            }
            Self::IsrJoinBelowEpochStart {
                topic_partition,
                follower,
                follower_end,
                high_watermark,
                epoch_start,
                joined,
            } => write!(
                f,
                "IsrJoinBelowEpochStart {topic_partition} follower={follower} follower_end={follower_end} hw={high_watermark} epoch_start={epoch_start} joined={joined}"
            ),
            Self::PreparingAwaitsReplicaOutsideIsr {
                topic_partition,
                offset,
                cut_removed_records,
            } => write!(
                f,
                "PreparingAwaitsReplicaOutsideIsr {topic_partition} cut_at={offset} removed={cut_removed_records}"
            ),
            Self::RequestHeldBeforeListening { from, request } => {
                write!(f, "RequestHeldBeforeListening {request} from={from}")
            }
            Self::TxnEnlistRefused {
                transactional_id,
                partitions,
            } => {
                let partitions: Vec<String> = partitions.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "TxnEnlistRefused transactional_id={transactional_id} partitions=[{}] error=ReadOnlyTopic",
                    partitions.join(",")
                )
            }
            Self::PartitionRemoved { topic_partition } => {
                write!(f, "PartitionRemoved {topic_partition}")
            }
            Self::CoordinatorMark { mark } => write!(f, "CoordinatorMark {mark}"),
            Self::IsrChanged {
                topic_partition,
                isr,
            } => {
                let isr: Vec<String> = isr.iter().map(ToString::to_string).collect();
                write!(f, "IsrChanged {topic_partition} isr=[{}]", isr.join(","))
            }
            Self::DuplicateBatch {
                topic_partition,
                first_offset,
            } => write!(
                f,
                "DuplicateBatch {topic_partition} first_offset={first_offset}"
            ),
            Self::MirrorWriteRefused {
                topic_partition,
                mirror_state,
            } => write!(f, "MirrorWriteRefused {topic_partition} state={mirror_state}"),
            Self::MirrorStateWriteRefused {
                topic_partition,
                error,
            } => write!(f, "MirrorStateWriteRefused {topic_partition} error={error:?}"),
            Self::MirrorTopicGrowing { topic, partitions } => {
                write!(f, "MirrorTopicGrowing {topic} partitions={partitions}")
            }
            Self::MirrorTopicExcluded { topic } => write!(f, "MirrorTopicExcluded {topic}"),
            Self::MirrorEpochBumpFailed {
                topic_partition,
                mirror_state,
                error,
            } => write!(
                f,
                "MirrorEpochBumpFailed {topic_partition} state={mirror_state} error={error:?}"
            ),
            Self::ClientEpochValidated {
                topic_partition,
                mirror_state,
            } => write!(
                f,
                "ClientEpochValidated {topic_partition} state={mirror_state}"
            ),
            Self::MirrorSourceTopicGone {
                topic_partition,
                recreated,
            } => write!(
                f,
                "MirrorSourceTopicGone {topic_partition} recreated={recreated}"
            ),
            Self::MirrorPartitionRecovered { topic_partition } => {
                write!(f, "MirrorPartitionRecovered {topic_partition}")
            }
            Self::MirrorAwaitsOperator {
                topic_partition,
                retry_attempt,
            } => write!(
                f,
                "MirrorAwaitsOperator {topic_partition} retry_attempt={retry_attempt}"
            ),
            Self::MirrorTailProbed {
                topic_partition,
                base_offset,
            } => write!(f, "MirrorTailProbed {topic_partition} tail@{base_offset}"),
            Self::TxnVerified {
                topic_partition,
                producer_id,
                coordinator_error,
                error,
            } => write!(
                f,
                "TxnVerified {topic_partition} pid={producer_id} coordinator={coordinator_error:?} produce={error:?}"
            ),
            Self::MirrorFailureRecordCleared {
                topic_partition,
                retry_attempt,
            } => write!(
                f,
                "MirrorFailureRecordCleared {topic_partition} retry_attempt={retry_attempt}"
            ),
            Self::AuthorizationDenied {
                principal,
                operation,
                topic,
            } => write!(f, "AuthorizationDenied {principal} {operation} topic:{topic}"),
            Self::MirrorSourceSilent {
                topic_partition,
                since_ms,
                silent_for_ms,
            } => write!(
                f,
                "MirrorSourceSilent {topic_partition} since_ms={since_ms} silent_for_ms={silent_for_ms}"
            ),
            Self::MirrorStateOfNewerLeader {
                topic_partition,
                leader_epoch,
                stored_leader_epoch,
            } => write!(
                f,
                "MirrorStateOfNewerLeader {topic_partition} leader_epoch={leader_epoch} \
                 stored_leader_epoch={stored_leader_epoch}"
            ),
        }
    }
}
